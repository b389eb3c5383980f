// Tokens/s and MFU of transformer steps, attention over sequence length, GEMM dtypes side by side.
#include "tools/report/analyses/transformer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/peaks.h"
#include "tools/report/analyses/train.h"

namespace dlb::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool Usable(const Bench& b) { return b.parsed && b.measured() && b.MedianNs() > 0; }

double Finite(double v) { return std::isfinite(v) && v > 0 ? v : kNaN; }

// Which dtypes a GEMM table has columns for, in this order; a dtype not listed goes last.
const std::vector<std::string>& DtypeOrder() {
  static const std::vector<std::string> order = {"f32", "tf32",     "f16", "bf16",
                                                 "fp8", "fp8_e5m2", "int8"};
  return order;
}

// The backend the PyTorch peer's entries carry (tools/peers/pytorch).
constexpr std::string_view kPeerBackend = "pytorch";

}  // namespace

std::vector<TokenStep> TokenSteps(const MergedRuns& runs) {
  std::vector<std::string> order;
  std::map<std::string, TokenStep> best;  // model|device
  for (const Bench& b : runs.benches) {
    if (!Usable(b) || b.family != kTrainFamily) continue;
    const BenchName& n = *b.parsed;
    if (n.Get(key::kPass) == value::kInfer) continue;
    const double tokens = Finite(b.Counter(schema::kTokensPerS));
    if (!std::isfinite(tokens)) continue;
    // bs is per GPU on several GPUs: the GPU scaling section has those.
    if (std::atof(n.Get(key::kGpus).c_str()) > 1) continue;
    TokenStep s;
    s.model = b.network.empty() ? n.workload : b.network;
    s.device = n.device;
    s.name = b.name;
    // A peer's step (tools/peers: backend pytorch) is shown beside dlbench's as the peer, never
    // as dlbench's fastest configuration.
    const bool peer = n.backend == kPeerBackend;
    s.config = (peer ? "peer: " : "") + n.backend + " " + KeysExcept(n, {key::kPass});
    s.dt = n.Get(key::kDType);
    s.tokens_per_s = tokens;
    s.mfu = b.Counter(schema::kMfu);
    if (!std::isfinite(s.mfu)) s.mfu = kNaN;
    // The peak behind this row's MFU, which may not be the run's spec peak (a user's
    // --dlb_peak_gpu_tflops): each row names its own.
    if (std::isfinite(s.mfu))
      s.mfu_peak = PeakShareOf(b, b.Counter(schema::kFlopPerS), FlopUnit(s.dt), runs.context).peak;
    s.epoch_s = Finite(b.Counter(schema::kEpochS));
    // As the train analysis does without epoch_s: the epoch's items (sequences) at this rate.
    const double bs = std::atof(n.Get(key::kBatch).c_str());
    if (!std::isfinite(s.epoch_s) && bs > 0)
      s.epoch_s = Finite(b.Counter(schema::kEpochItems) / bs * b.MedianNs() * 1e-9);
    s.peak_mem_bytes = Finite(b.Counter(schema::kPeakMemBytes));
    s.doubtful = b.verification.doubtful();
    const std::string key = s.model + "|" + s.device + (peer ? "|peer" : "");
    auto it = best.find(key);
    if (it == best.end()) {
      order.push_back(key);
      best.emplace(key, s);
    } else if (s.tokens_per_s > it->second.tokens_per_s) {
      it->second = s;
    }
  }
  // Model by model as they came, the CPU before the GPU.
  std::vector<std::string> models;
  for (const std::string& key : order) {
    std::string model = key.substr(0, key.find('|'));
    if (std::find(models.begin(), models.end(), model) == models.end()) models.push_back(model);
  }
  std::vector<TokenStep> out;
  for (const std::string& model : models)
    for (const char* device : {"|cpu", "|cpu|peer", "|gpu", "|gpu|peer"})
      if (auto it = best.find(model + device); it != best.end()) out.push_back(it->second);
  return out;
}

Table TokenTable(const std::vector<TokenStep>& steps,
                 const std::map<std::string, std::string>& context) {
  Table t;
  t.title =
      "Transformer training: tokens/s and MFU at each device's fastest configuration (MFU: the "
      "model's FLOPs per token x tokens/s over the peak of the step's dtype, as each case's label "
      "states)";
  t.columns = {{"model", "model"},
               {"device", "device"},
               {"configuration", "config"},
               {"tokens/s", std::string(schema::kTokensPerS)},
               {"MFU", std::string(schema::kMfu)},
               {"MFU's peak (the row's own)", "mfu_peak"},
               {"epoch", std::string(schema::kEpochS)},
               {"peak memory", std::string(schema::kPeakMemBytes)}};
  for (const TokenStep& s : steps) {
    Cell tokens = Cell::Rate(s.tokens_per_s, "tokens/s");
    if (s.doubtful) tokens.Doubtful().With(Tone::kWarn);
    t.rows.push_back(
        {Cell(s.model), Cell(s.device == "cpu" ? "CPU" : "GPU"), Cell(s.config), tokens,
         Cell::Number(s.mfu, 3).After("%"),
         Cell(!s.mfu_peak.empty() ? s.mfu_peak
              : s.device == "gpu" && std::isfinite(s.mfu) && !GpuPeakOf(context, s.dt).empty()
                  ? GpuPeakOf(context, s.dt)
                  : std::string("-")),
         std::isfinite(s.epoch_s) ? Cell::Duration(s.epoch_s) : Cell("-"),
         std::isfinite(s.peak_mem_bytes) ? Cell::Bytes(s.peak_mem_bytes) : Cell("-")});
  }
  return t;
}

std::vector<Chart> AttnSeqCharts(const MergedRuns& runs) {
  struct Line {
    std::string name;
    std::vector<std::pair<double, double>> points;
  };
  struct Group {
    std::string title;
    std::vector<Line> lines;
  };
  std::vector<Group> groups;
  std::map<std::string, size_t> group_at;
  // Whether a (device, backend, dt, pass) group holds causal and non-causal lines both: then the
  // legend says which.
  for (const Bench& b : runs.benches) {
    if (!Usable(b) || b.family != kAttnFamily) continue;
    const BenchName& n = *b.parsed;
    const double seq = std::atof(n.Get(key::kSeq).c_str());
    const double flops = Finite(b.Counter(schema::kFlopPerS));
    if (!(seq > 0) || !std::isfinite(flops)) continue;
    const std::string title = n.device + " " + n.backend + " " + n.Get(key::kDType) + " " +
                              n.Get(key::kPass) + ": FLOP/s over sequence length";
    auto [it, fresh] = group_at.emplace(title, groups.size());
    if (fresh) groups.push_back({title, {}});
    Group& g = groups[it->second];
    const std::string line = JoinNonEmpty(
        {b.network.empty() ? n.workload : b.network, n.Get(key::kCausal) == "1" ? "causal" : ""},
        " ");
    auto l =
        std::find_if(g.lines.begin(), g.lines.end(), [&](const Line& x) { return x.name == line; });
    if (l == g.lines.end()) l = g.lines.insert(g.lines.end(), Line{line, {}});
    l->points.emplace_back(seq, flops);
  }
  std::vector<Chart> out;
  for (Group& g : groups) {
    Chart c;
    c.title = "attn " + g.title;
    c.x_label = "sequence length";
    c.y_label = "FLOP/s";
    c.log_x = true;
    c.width = 560;
    for (Line& l : g.lines) {
      if (l.points.size() < 2) continue;
      std::sort(l.points.begin(), l.points.end());
      c.series.push_back(Series{l.name, l.points, true, true, -1});
    }
    if (c.series.empty()) continue;
    c.log_y = WideY(c);
    out.push_back(std::move(c));
  }
  return out;
}

Table GemmDtypeTable(const MergedRuns& runs) {
  struct Row {
    std::string shape, bs, device;
    std::map<std::string, std::pair<double, const Bench*>> by_dt;  // the fastest backend's
  };
  std::vector<Row> rows;
  std::map<std::string, size_t> row_at;
  std::vector<std::string> dts;
  for (const Bench& b : runs.benches) {
    if (!Usable(b) || b.family != kGemmFamily) continue;
    const BenchName& n = *b.parsed;
    const double v = Finite(b.Counter(schema::kFlopPerS));
    const std::string dt = n.Get(key::kDType);
    if (!std::isfinite(v) || dt.empty()) continue;
    const std::string bs = n.Get(key::kBatch);
    const std::string key = n.workload + "|" + bs + "|" + n.device;
    auto [it, fresh] = row_at.emplace(key, rows.size());
    if (fresh) rows.push_back({n.workload, bs, n.device, {}});
    auto& cell = rows[it->second].by_dt[dt];
    if (v > cell.first) cell = {v, &b};
    if (std::find(dts.begin(), dts.end(), dt) == dts.end()) dts.push_back(dt);
  }
  Table t;
  t.title =
      "GEMM by dtype: FLOP/s of the fastest backend per shape and device (int8: integer "
      "multiply-adds x 2 per second, OP/s)";
  const bool several =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.by_dt.size() >= 2; });
  if (!several) return t;
  std::vector<std::string> cols;
  for (const std::string& dt : DtypeOrder())
    if (std::find(dts.begin(), dts.end(), dt) != dts.end()) cols.push_back(dt);
  for (const std::string& dt : dts)
    if (std::find(cols.begin(), cols.end(), dt) == cols.end()) cols.push_back(dt);
  const bool any_bs =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return !r.bs.empty(); });
  t.columns = {{"shape", "workload"}};
  if (any_bs) t.columns.push_back({"bs", "bs"});
  t.columns.push_back({"device", "device"});
  for (const std::string& dt : cols)
    t.columns.push_back({dt == "int8" ? "int8 (OP/s)" : dt, dt + "_flop_per_s"});
  for (const Row& r : rows) {
    if (r.by_dt.size() < 2) continue;
    std::vector<Cell> cells{Cell(r.shape)};
    if (any_bs) cells.push_back(r.bs.empty() ? Cell("-") : Cell(r.bs, std::atof(r.bs.c_str())));
    cells.emplace_back(r.device == "cpu" ? "CPU" : "GPU");
    for (const std::string& dt : cols) {
      auto it = r.by_dt.find(dt);
      if (it == r.by_dt.end()) {
        cells.emplace_back("-");
        continue;
      }
      const auto& [v, b] = it->second;
      Cell c =
          Cell::Rate(v, dt == "int8" ? "OP/s" : "FLOP/s").After(" (" + b->parsed->backend + ")");
      if (b->verification.doubtful()) c.Doubtful().With(Tone::kWarn);
      cells.push_back(std::move(c));
    }
    t.rows.push_back(std::move(cells));
  }
  return t;
}

}  // namespace dlb::report
