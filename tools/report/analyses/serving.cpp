// The serving section: decode's latency-throughput frontier per model and device, its knee, the
// batches within time-per-token budgets, CPU against GPU at batch 1, memory roof and energy.
#include "tools/report/analyses/serving.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"

namespace dlb::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The backend the PyTorch peer writes its cases under (tools/peers).
constexpr std::string_view kPeerBackend = "pytorch";
constexpr std::string_view kDecode = "decode";

double Positive(double v) { return std::isfinite(v) && v > 0 ? v : kNaN; }

// The harness's reason in a case's label (" | no energy: <why>", up to the label's next part);
// empty when the label has none.
std::string LabelEnergyWhy(const std::string& label) {
  constexpr std::string_view kMark = "| no energy: ";
  const size_t at = label.find(kMark);
  if (at == std::string::npos) return "";
  const size_t from = at + kMark.size();
  return label.substr(from, label.find(" | ", from) - from);
}

// Why a case of `device` carries no energy per token: the case's own reason where its label has
// one (a window too short for the counter, on a machine whose counters work), else the context of
// the file it came from: the CPU's RAPL status, the GPU's monitor status.
std::string EnergyWhy(const MergedRuns& runs, const Bench& b) {
  if (std::string why = LabelEnergyWhy(b.label); !why.empty()) return why;
  const std::map<std::string, std::string>* ctx = &runs.context;
  if (!b.files.empty())
    if (auto it = runs.file_contexts.find(b.files.front()); it != runs.file_contexts.end())
      ctx = &it->second;
  if (b.parsed->device == "cpu") {
    const std::string s = ContextValue(*ctx, schema::kCtxCpuEnergy);
    return s.empty() ? "the run read no CPU energy (no cpu_energy in its context)" : s;
  }
  const std::string s = ContextValue(*ctx, schema::kCtxMonitor);
  return s.empty() ? "the run had no device monitor" : "device monitor " + s;
}

std::string ModelOf(const Bench& b) { return b.network.empty() ? b.parsed->workload : b.network; }

bool IsDecode(const Bench& b) {
  return b.parsed && b.family == kInferFamily && b.parsed->Get(key::kPhase) == kDecode;
}

std::string DeviceWord(const std::string& device) { return device == "cpu" ? "CPU" : "GPU"; }

// A batch size as a key's part: "8".
std::string BsKey(double bs) { return std::to_string(static_cast<long long>(bs)); }

}  // namespace

double ComputeBoundBatch(const std::vector<DecodePoint>& points, double ridge, KneeRule* rule) {
  const bool intensity = std::all_of(points.begin(), points.end(), [](const DecodePoint& p) {
    return std::isfinite(p.flop_per_byte);
  });
  if (std::isfinite(ridge) && ridge > 0 && intensity && !points.empty()) {
    *rule = KneeRule::kRidge;
    for (const DecodePoint& p : points)
      if (p.flop_per_byte >= ridge) return p.bs;
    return kNaN;
  }
  if (points.size() < 2) {
    *rule = KneeRule::kNone;
    return kNaN;
  }
  *rule = KneeRule::kScaling;
  for (size_t i = 1; i < points.size(); ++i) {
    const double grew = points[i].tokens_per_s / points[i - 1].tokens_per_s;
    const double batch_grew = points[i].bs / points[i - 1].bs;
    if (grew - 1 < kNearLinearShare * (batch_grew - 1)) return points[i].bs;
  }
  return kNaN;
}

Serving ComputeServing(const MergedRuns& runs) {
  Serving out;
  std::vector<std::string> order;  // curve keys, first seen
  std::map<std::string, DecodeCurve> curves;
  std::map<std::string, const Bench*> peers;  // model|device|dt|ctx|bs
  for (const Bench& b : runs.benches) {
    if (b.family == kInferFamily) out.any = true;
    if (!IsDecode(b) || !b.measured() || !(b.MedianNs() > 0)) continue;
    const BenchName& n = *b.parsed;
    const std::string tail = "|" + n.device + "|" + n.Get(key::kDType) + "|" + n.Get(key::kCtx);
    if (n.backend == kPeerBackend) {
      out.peer = true;
      peers[ModelOf(b) + tail + "|" + BsKey(std::atof(n.Get(key::kBatch).c_str()))] = &b;
      continue;
    }
    const double bs = std::atof(n.Get(key::kBatch).c_str());
    if (!(bs > 0)) continue;
    // Two setups of one case (analyses/setup.h) are two curves, never one pooled.
    const std::string key = ModelOf(b) + "|" + n.backend + tail + "|" + b.setup;
    auto [it, fresh] = curves.try_emplace(key);
    DecodeCurve& c = it->second;
    if (fresh) {
      order.push_back(key);
      c.model = ModelOf(b);
      c.device = n.device;
      c.backend = n.backend;
      c.dt = n.Get(key::kDType);
      c.ctx = n.Get(key::kCtx);
      c.setup = b.setup;
    }
    DecodePoint p;
    p.bs = bs;
    p.name = b.name;
    p.tpot_s = b.MedianNs() * 1e-9;
    p.tokens_per_s = Positive(RateAtMedianTime(b, schema::kTokensPerS));
    if (!std::isfinite(p.tokens_per_s)) p.tokens_per_s = bs / p.tpot_s;
    p.flop_per_byte = Positive(b.Counter(schema::kFlopPerByte));
    p.pct_mem_bw = Positive(b.Counter(schema::kPctMemBw));
    p.energy_per_token_j = Positive(b.Counter(schema::kEnergyPerItemJ));
    p.doubtful = b.verification.doubtful();
    if (!std::isfinite(p.energy_per_token_j) && c.energy_why.empty())
      c.energy_why = EnergyWhy(runs, b);
    if (b.roofline && !std::isfinite(c.ridge))
      c.ridge = Positive(b.roofline->compute_peak_flop_per_s / b.roofline->mem_bw_bytes_per_s);
    c.points.push_back(std::move(p));
  }
  for (const std::string& key : order) {
    DecodeCurve& c = curves[key];
    std::sort(c.points.begin(), c.points.end(),
              [](const DecodePoint& a, const DecodePoint& b) { return a.bs < b.bs; });
    for (DecodePoint& p : c.points) {
      const std::string peer_key =
          c.model + "|" + c.device + "|" + c.dt + "|" + c.ctx + "|" + BsKey(p.bs);
      if (auto it = peers.find(peer_key); it != peers.end()) {
        p.peer_tpot_s = it->second->MedianNs() * 1e-9;
        p.peer_tokens_per_s = Positive(RateAtMedianTime(*it->second, schema::kTokensPerS));
        if (!std::isfinite(p.peer_tokens_per_s)) p.peer_tokens_per_s = p.bs / p.peer_tpot_s;
      }
    }
    c.knee_bs = ComputeBoundBatch(c.points, c.ridge, &c.rule);
    for (size_t i = 0; i < kTpotBudgetsS.size(); ++i)
      for (const DecodePoint& p : c.points)
        if (p.tpot_s <= kTpotBudgetsS[i]) c.budget_bs[i] = p.bs;
  }
  // Model by model as they came, the CPU's curves before the GPU's.
  std::vector<std::string> models;
  for (const std::string& key : order)
    if (const std::string& m = curves[key].model;
        std::find(models.begin(), models.end(), m) == models.end())
      models.push_back(m);
  for (const std::string& m : models)
    for (const char* device : {"cpu", "gpu"})
      for (const std::string& key : order)
        if (curves[key].model == m && curves[key].device == device)
          out.curves.push_back(curves[key]);
  // Batch 1 on both devices: per model, dtype and context, each device's fastest backend.
  std::map<std::string, std::pair<const DecodeCurve*, const DecodeCurve*>> ones;  // CPU, GPU
  std::vector<std::string> one_order;
  for (const DecodeCurve& c : out.curves) {
    if (c.points.empty() || c.points.front().bs != 1) continue;
    const std::string key = c.model + "|" + c.dt + "|" + c.ctx;
    auto [it, fresh] = ones.try_emplace(key);
    if (fresh) one_order.push_back(key);
    const DecodeCurve*& fastest = c.device == "cpu" ? it->second.first : it->second.second;
    if (!fastest || c.points.front().tpot_s < fastest->points.front().tpot_s) fastest = &c;
  }
  for (const std::string& key : one_order) {
    const auto [cpu, gpu] = ones[key];
    if (!cpu || !gpu) continue;
    const DecodePoint &c1 = cpu->points.front(), &g1 = gpu->points.front();
    out.batch_one.push_back({cpu->model, cpu->dt, cpu->ctx, c1.tpot_s, g1.tpot_s, cpu->backend,
                             gpu->backend, c1.doubtful || g1.doubtful});
  }
  return out;
}

namespace {

std::string CurveName(const DecodeCurve& c) {
  return JoinNonEmpty({DeviceWord(c.device), c.backend, c.dt, c.ctx.empty() ? "" : "L " + c.ctx,
                       c.setup.empty() ? "" : "(" + c.setup + ")"},
                      " ");
}

// Joules a token took: "2.5 J", "13.2 mJ".
Cell EnergyCell(double j) {
  if (!std::isfinite(j)) return Cell("-");
  return j >= 1 ? Cell::Number(j, 3, "J") : Cell::Number(j * 1e3, 3, "mJ");
}

// FLOP per byte: whole above 100 ("1199", never "1.2e+03"), three digits below.
Cell IntensityCell(double v, std::string unit = "") {
  return v >= 100 ? Cell::Count(std::round(v), std::move(unit))
                  : Cell::Number(v, 3, std::move(unit));
}

// Time per output token against tokens/s, a row per batch, for one model on one device.
Table FrontierTable(const std::vector<const DecodeCurve*>& curves, bool peer) {
  const DecodeCurve& first = *curves.front();
  Table t;
  t.title = first.model + " on the " + DeviceWord(first.device) +
            ": decode, time per output token against tokens/s as the batch grows";
  t.columns = {{"backend", "backend"},
               {"dt", "dt"},
               {"L", "ctx"},
               {"B", "bs"},
               {"time per output token", std::string(schema::kTpotS)},
               {"tokens/s", std::string(schema::kTokensPerS)},
               {"FLOP/byte", std::string(schema::kFlopPerByte)},
               {"% of memory roof", std::string(schema::kPctMemBw)},
               {"energy per token", std::string(schema::kEnergyPerItemJ)}};
  if (peer) {
    t.columns.push_back({"PyTorch tokens/s", "peer_tokens_per_s"});
    t.columns.push_back({"vs PyTorch", "vs_peer"});
  }
  t.columns.push_back({"name", "name", true});
  for (const DecodeCurve* c : curves)
    for (const DecodePoint& p : c->points) {
      Cell tokens = Cell::Rate(p.tokens_per_s, "tokens/s");
      if (p.doubtful) tokens.Doubtful().With(Tone::kWarn);
      Cell mem = Cell::Percent(p.pct_mem_bw / 100);
      // Past 100%: the step read from caches, not memory (a model that fits in them).
      if (p.pct_mem_bw > 100) mem.With(Tone::kWarn);
      Cell backend = Cell::Key(c->backend);
      if (!c->setup.empty()) backend.After(" (" + c->setup + ")");
      std::vector<Cell> row{backend,
                            Cell::Key(c->dt),
                            c->ctx.empty() ? Cell("-") : Cell::Count(std::atof(c->ctx.c_str())),
                            Cell::Count(p.bs),
                            Cell::Time(p.tpot_s * 1e9),
                            tokens,
                            IntensityCell(p.flop_per_byte),
                            mem,
                            EnergyCell(p.energy_per_token_j)};
      if (peer) {
        row.push_back(Cell::Rate(p.peer_tokens_per_s, "tokens/s"));
        row.push_back(SpeedupCell(p.tokens_per_s / p.peer_tokens_per_s, p.doubtful));
      }
      row.emplace_back(p.name);
      t.rows.push_back(std::move(row));
    }
  return t;
}

// A budget's cell: the largest batch within it ("32"; "128+" where the largest batch measured is
// within it, so a larger one may be too), or "none".
Cell BudgetCell(const DecodeCurve& c, double bs) {
  if (!std::isfinite(bs)) return Cell("none").With(Tone::kBad);
  Cell cell = Cell::Count(bs);
  if (bs == c.points.back().bs) cell.After("+");
  return cell;
}

Table KneeTable(const std::vector<DecodeCurve>& curves) {
  Table t;
  t.title =
      "Where decode turns compute-bound, and the largest batch within a time-per-token budget";
  t.columns = {{"model", "model"},
               {"device", "device"},
               {"backend", "backend"},
               {"dt", "dt"},
               {"L", "ctx"},
               {"batches", "batches"},
               {"compute-bound from B", "compute_bound_bs"},
               {"by", "knee_rule"}};
  for (double budget : kTpotBudgetsS)
    t.columns.push_back({Prose({"≤ ", Cell::Time(budget * 1e9)}),
                         "budget_" + std::to_string(static_cast<int>(budget * 1e3)) + "ms_bs"});
  t.columns.push_back({"most tokens/s", "best_tokens_per_s"});
  for (const DecodeCurve& c : curves) {
    std::vector<std::string> batches;
    for (const DecodePoint& p : c.points) batches.push_back(BsKey(p.bs));
    Cell knee = std::isfinite(c.knee_bs) ? Cell::Count(c.knee_bs)
                : c.rule == KneeRule::kNone
                    ? Cell("-")
                    : Cell("not at B ≤ " + BsKey(c.points.back().bs)).With(Tone::kGood);
    const std::string rule =
        c.rule == KneeRule::kRidge     ? Prose({"the ridge, ", IntensityCell(c.ridge, "FLOP/byte")})
        : c.rule == KneeRule::kScaling ? std::string("tokens/s growth (no roofline)")
                                       : std::string("one batch, no roofline");
    double best = kNaN;
    for (const DecodePoint& p : c.points)
      if (!(p.tokens_per_s <= best)) best = p.tokens_per_s;
    std::vector<Cell> row{Cell(c.model),
                          Cell(DeviceWord(c.device)),
                          Cell::Key(c.backend),
                          Cell::Key(c.dt),
                          c.ctx.empty() ? Cell("-") : Cell::Count(std::atof(c.ctx.c_str())),
                          Cell(Join(batches, ", ")),
                          knee,
                          Cell(rule)};
    for (double bs : c.budget_bs) row.push_back(BudgetCell(c, bs));
    row.push_back(Cell::Rate(best, "tokens/s"));
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table BatchOneTable(const std::vector<BatchOneRow>& rows) {
  Table t;
  t.title = "CPU against GPU at batch 1: time per output token, each device's fastest backend";
  t.columns = {{"model", "model"},
               {"dt", "dt"},
               {"L", "ctx"},
               {"CPU", "cpu_tpot_s"},
               {"CPU backend", "cpu_backend"},
               {"GPU", "gpu_tpot_s"},
               {"GPU backend", "gpu_backend"},
               {"GPU speedup", "speedup"}};
  for (const BatchOneRow& r : rows)
    t.rows.push_back({Cell(r.model), Cell::Key(r.dt),
                      r.ctx.empty() ? Cell("-") : Cell::Count(std::atof(r.ctx.c_str())),
                      Cell::Time(r.cpu_tpot_s * 1e9), Cell::Key(r.cpu_backend),
                      Cell::Time(r.gpu_tpot_s * 1e9), Cell::Key(r.gpu_backend),
                      SpeedupCell(r.cpu_tpot_s / r.gpu_tpot_s, r.doubtful)});
  return t;
}

// Per model and device: a line per curve of two batches or more, time per output token over
// tokens/s. A device apiece: the CPU's tokens/s would sit squashed at the GPU's axis' zero.
Chart FrontierChart(const std::string& model, const std::string& device,
                    const std::vector<DecodeCurve>& curves) {
  Chart chart;
  // Short: the chart is 560 pixels wide. The points run in batch order.
  chart.title = model + ", " + DeviceWord(device) + ": time per token over tokens/s";
  chart.x_label = "tokens/s";
  chart.y_label = "time per output token (ms)";
  chart.width = 560;
  for (const DecodeCurve& c : curves) {
    if (c.model != model || c.device != device || c.points.size() < 2) continue;
    Series s{CurveName(c), {}, true, true, -1};
    s.dtype = c.dt;
    for (const DecodePoint& p : c.points) s.points.emplace_back(p.tokens_per_s, p.tpot_s * 1e3);
    chart.series.push_back(std::move(s));
  }
  if (!chart.series.empty()) chart.log_y = WideY(chart);
  return chart;
}

}  // namespace

std::vector<Section> ServingSections(const Serving& serving) {
  if (!serving.any) return {};
  Section s;
  s.title = "Serving: decode latency and throughput as the batch grows";
  if (serving.curves.empty()) {
    s.notes.push_back(
        "No decode case was measured: the latency-throughput frontier needs the inference "
        "family's phase:decode cases.");
    return {std::move(s)};
  }
  s.notes.push_back(
      "A row is one decode step: one new token for each of B sequences whose KV cache holds L "
      "positions; time per output token is the step's median time, tokens/s B over it. "
      "Compute-bound from: the first batch whose FLOP per byte reaches the device's ridge point "
      "(its compute roof over its memory bandwidth, as the roofline measured them); where the "
      "cases carry no roofline, the first batch whose tokens/s grew by less than half as much as "
      "the batch did. A budget's column: the largest batch whose time per output token is within "
      "it (+: the largest batch measured, so larger ones may be too).");
  std::vector<std::string> models;
  for (const DecodeCurve& c : serving.curves)
    if (std::find(models.begin(), models.end(), c.model) == models.end()) models.push_back(c.model);
  for (const std::string& m : models)
    for (const char* device : {"cpu", "gpu"}) {
      std::vector<const DecodeCurve*> group;
      for (const DecodeCurve& c : serving.curves)
        if (c.model == m && c.device == device) group.push_back(&c);
      if (!group.empty()) s.tables.push_back(FrontierTable(group, serving.peer));
    }
  s.tables.push_back(KneeTable(serving.curves));
  if (!serving.batch_one.empty()) {
    s.tables.push_back(BatchOneTable(serving.batch_one));
  } else {
    bool cpu = false, gpu = false;
    for (const DecodeCurve& c : serving.curves) (c.device == "cpu" ? cpu : gpu) = true;
    s.notes.push_back(std::string("CPU against GPU at batch 1: no model decodes at batch 1 on both "
                                  "devices in this run (") +
                      (cpu && gpu ? "not at the same dtype and context"
                       : cpu      ? "CPU only"
                                  : "GPU only") +
                      ").");
  }
  // Why a device's rows have no energy per token, once per device and reason.
  std::vector<std::string> why;
  for (const DecodeCurve& c : serving.curves)
    if (!c.energy_why.empty()) {
      const std::string line = DeviceWord(c.device) + ": " + c.energy_why;
      if (std::find(why.begin(), why.end(), line) == why.end()) why.push_back(line);
    }
  if (!why.empty())
    s.notes.push_back("Energy per token, where a row has none: " + Join(why, "; ") + ".");
  if (serving.peer)
    s.notes.push_back(
        "PyTorch: the peer's decode at the same model, device, dtype, context and batch "
        "(tools/peers, backend pytorch); vs PyTorch: tokens/s over the peer's.");
  for (const std::string& m : models)
    for (const char* device : {"cpu", "gpu"})
      if (Chart c = FrontierChart(m, device, serving.curves); !c.series.empty())
        s.charts.push_back(std::move(c));
  return {std::move(s)};
}

}  // namespace dlb::report
