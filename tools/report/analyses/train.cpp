// Training steps per model: one epoch on the CPU and on the GPU, the batch-size curve with its
// fit, where a step goes, peak memory, eager against CUDA graph and backend against backend.
#include "tools/report/analyses/train.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/summary.h"

namespace dlb::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Values of the train family's names (benchmarks/train): pass, dtype, layout, graph and the
// backends whose pairs are worth a figure.
constexpr std::string_view kInfer = "infer";
constexpr std::string_view kF32 = "f32";
constexpr std::string_view kNchw = "nchw";
constexpr std::string_view kEager = "0";
constexpr std::string_view kGraphed = "1";
constexpr std::string_view kNative = "native";
constexpr std::string_view kLibtorch = "libtorch";
constexpr std::string_view kPytorch = "pytorch";

double Positive(double v) { return std::isfinite(v) && v > 0 ? v : kNaN; }
double NonNegative(double v) { return std::isfinite(v) && v >= 0 ? v : kNaN; }

bool Training(const TrainCase& c) { return c.pass != kInfer; }
double PerImageNs(const TrainCase& c) { return c.step_ns / c.bs; }
bool HasPhases(const TrainCase& c) {
  return std::isfinite(c.fwd_s) && std::isfinite(c.bwd_s) && std::isfinite(c.opt_s) &&
         c.fwd_s + c.bwd_s + c.opt_s > 0;
}

std::string Key(std::string_view k, const std::string& v) {
  return v.empty() ? std::string() : std::string(k) + ":" + v;
}

// The name's keys of a case; bs, pass and graph as asked.
std::string Keys(const TrainCase& c, bool bs, bool pass, bool graph) {
  return JoinNonEmpty({bs ? Key(key::kBatch, FormatNumber(c.bs, 6)) : "", Key(key::kDType, c.dt),
                       Key(key::kLayout, c.fmt), pass ? Key(key::kPass, c.pass) : "",
                       graph ? Key(key::kGraph, c.graph) : ""},
                      "/");
}

// Left-out cases, one line per reason: how many, and the first one's name.
class Reasons {
 public:
  void Add(const std::string& why, const std::string& name) {
    auto [it, inserted] = seen_.emplace(why, order_.size());
    if (inserted) order_.push_back({why, name, 0});
    ++order_[it->second].n;
  }
  std::vector<std::string> Lines() const {
    std::vector<std::string> out;
    for (const auto& r : order_)
      out.push_back(std::to_string(r.n) + " case(s) " + r.why + " (first: " + r.first + ").");
    return out;
  }

 private:
  struct Reason {
    std::string why, first;
    size_t n;
  };
  std::map<std::string, size_t> seen_;
  std::vector<Reason> order_;
};

// The case of `cases` that `better` prefers; nullopt when none passes `want`.
template <typename Want, typename Better>
std::optional<TrainCase> Pick(const std::vector<const TrainCase*>& cases, Want want,
                              Better better) {
  const TrainCase* pick = nullptr;
  for (const TrainCase* c : cases)
    if (want(*c) && (!pick || better(*c, *pick))) pick = c;
  return pick ? std::optional<TrainCase>(*pick) : std::nullopt;
}

std::vector<TrainPairSummary> Summarize(const std::vector<TrainPair>& pairs) {
  std::vector<TrainPairSummary> out;
  std::map<std::string, size_t> index;
  std::vector<double> logs;
  for (const TrainPair& p : pairs) {
    std::string key =
        p.model + "|" + p.device + "|" + p.a.pass + "|" + p.a.backend + "|" + p.b.backend;
    auto [it, inserted] = index.emplace(key, out.size());
    if (inserted) {
      out.push_back({p.model, p.device, p.a.pass, p.a.backend, p.b.backend, 0, 0, p, p});
      logs.push_back(0);
    }
    TrainPairSummary& s = out[it->second];
    ++s.n;
    logs[it->second] += std::log(p.speedup);
    if (p.speedup < s.lo.speedup) s.lo = p;
    if (p.speedup > s.hi.speedup) s.hi = p;
  }
  for (size_t i = 0; i < out.size(); ++i)
    out[i].geomean = std::exp(logs[i] / static_cast<double>(out[i].n));
  return out;
}

}  // namespace

std::string TrainCase::Config() const { return backend + " " + Keys(*this, true, false, true); }

namespace {

// One measured case of the train family as a TrainCase; nothing (and the reason in `left_out`)
// when it cannot be one.
std::optional<TrainCase> CaseOf(const Bench& b, Reasons* left_out) {
  if (!b.parsed) {
    left_out->Add("whose name is not train/<cpu|gpu>/<backend>/<model>/<key:value>...: left out",
                  b.name);
    return std::nullopt;
  }
  const BenchName& n = *b.parsed;
  TrainCase c;
  c.name = b.name;
  c.model = !b.network.empty() ? b.network : n.workload;
  c.device = n.device;
  c.backend = n.backend;
  c.dt = n.Get(key::kDType);
  c.fmt = n.Get(key::kLayout);
  c.pass = n.Get(key::kPass);
  c.graph = n.Get(key::kGraph);
  c.step_ns = b.MedianNs();
  c.bs = Positive(std::atof(n.Get(key::kBatch).c_str()));
  if (!std::isfinite(c.bs)) c.bs = Positive(b.Counter(schema::kBatch));
  if (!(c.step_ns > 0) || !std::isfinite(c.step_ns)) {
    left_out->Add("without a positive time: left out", b.name);
    return std::nullopt;
  }
  if (!std::isfinite(c.bs)) {
    left_out->Add("without a batch size (bs key or counter): left out", b.name);
    return std::nullopt;
  }
  // bs is per GPU there: a step on several GPUs is no one-device figure (the GPU scaling
  // section shows it).
  if (std::atof(n.Get(key::kGpus).c_str()) > 1) {
    left_out->Add("on more than one GPU (gpus key): in the GPU scaling section instead", b.name);
    return std::nullopt;
  }
  c.epoch_items = Positive(b.Counter(schema::kEpochItems));
  c.epoch_s = Positive(b.Counter(schema::kEpochS));
  if (!std::isfinite(c.epoch_s) && std::isfinite(c.epoch_items))
    c.epoch_s = c.epoch_items * c.step_ns / c.bs / 1e9;
  c.fwd_s = NonNegative(b.Counter(schema::kFwdS));
  c.bwd_s = NonNegative(b.Counter(schema::kBwdS));
  c.opt_s = NonNegative(b.Counter(schema::kOptS));
  c.peak_mem_bytes = Positive(b.Counter(schema::kPeakMemBytes));
  c.tokens_per_s = Positive(b.Counter(schema::kTokensPerS));
  c.doubtful = b.verification.doubtful();
  std::string sk = SweepKey(n);
  c.curve = n.family + "/" + n.device + "/" + n.backend + sk.substr(sk.find('/'));
  if (Training(c) && !std::isfinite(c.epoch_s))
    left_out->Add("with neither epoch_s nor epoch_items: not in the epoch figures", b.name);
  if (Training(c) && !HasPhases(c))
    left_out->Add("without valid fwd_s, bwd_s and opt_s: no phase bar", b.name);
  if (!std::isfinite(c.peak_mem_bytes))
    left_out->Add("without peak_mem_bytes: not in the memory figures", b.name);
  return c;
}

// One model: its epoch on each device, and per device the batch-size curve, the phases and the
// memory of the best configuration.
void AddModel(const std::string& model, const std::map<std::string, const SweepCurve*>& curve_of,
              TrainResult* result) {
  TrainResult& out = *result;
  auto shorter_epoch = [](const TrainCase& a, const TrainCase& b) { return a.epoch_s < b.epoch_s; };
  auto faster = [](const TrainCase& a, const TrainCase& b) {
    return PerImageNs(a) < PerImageNs(b);
  };
  auto same_config = [](const TrainCase& c) {
    return Training(c) && c.dt == kF32 && (c.fmt.empty() || c.fmt == kNchw) &&
           (c.graph.empty() || c.graph == kEager) && std::isfinite(c.epoch_s);
  };
  std::map<std::string, std::vector<const TrainCase*>> on;  // by device
  for (const TrainCase& c : out.cases)
    if (c.model == model) on[c.device].push_back(&c);
  TrainEpoch e;
  e.model = model;
  e.epoch_items = kNaN;
  for (const auto& [device, cases] : on)
    for (const TrainCase* c : cases)
      if (!std::isfinite(e.epoch_items)) e.epoch_items = c->epoch_items;
  auto has_epoch = [](const TrainCase& c) { return Training(c) && std::isfinite(c.epoch_s); };
  e.cpu = Pick(on["cpu"], has_epoch, shorter_epoch);
  e.gpu = Pick(on["gpu"], has_epoch, shorter_epoch);
  e.speedup = e.cpu && e.gpu ? e.cpu->epoch_s / e.gpu->epoch_s : kNaN;
  double common = 0;
  for (const TrainCase* c : on["cpu"])
    if (same_config(*c))
      for (const TrainCase* g : on["gpu"])
        if (same_config(*g) && g->bs == c->bs) common = std::max(common, c->bs);
  auto at_common = [&](const TrainCase& c) { return same_config(c) && c.bs == common; };
  if (common > 0) {
    e.same_cpu = Pick(on["cpu"], at_common, shorter_epoch);
    e.same_gpu = Pick(on["gpu"], at_common, shorter_epoch);
  }
  e.same_speedup = e.same_cpu && e.same_gpu ? e.same_cpu->epoch_s / e.same_gpu->epoch_s : kNaN;
  if (e.cpu || e.gpu) out.epochs.push_back(e);

  for (const char* device : {"cpu", "gpu"}) {
    const std::optional<TrainCase>& best = std::string(device) == "cpu" ? e.cpu : e.gpu;
    if (best) {
      auto it = curve_of.find(best->curve);
      if (it != curve_of.end()) out.curves.push_back({model, device, *best, *it->second});
    }
    if (auto p = Pick(
            on[device], [](const TrainCase& c) { return Training(c) && HasPhases(c); }, faster)) {
      TrainPhases ph{model, device, *p};
      double step_s = p->step_ns / 1e9, sum = p->fwd_s + p->bwd_s + p->opt_s;
      double total = std::max(step_s, sum);
      ph.fwd = p->fwd_s / total;
      ph.bwd = p->bwd_s / total;
      ph.opt = p->opt_s / total;
      ph.other = (total - sum) / total;
      ph.over_step = sum > step_s;
      out.phases.push_back(ph);
    }
    auto with_mem = [](const TrainCase& c) {
      return Training(c) && std::isfinite(c.peak_mem_bytes);
    };
    if (auto m = Pick(on[device], with_mem, faster)) {
      TrainMemory mem{model, device, *m, {}};
      for (const TrainCase* c : on[device])
        if (c->curve == m->curve && std::isfinite(c->peak_mem_bytes))
          mem.points.emplace_back(c->bs, c->peak_mem_bytes);
      std::sort(mem.points.begin(), mem.points.end());
      out.memory.push_back(std::move(mem));
    }
  }
}

// The graph pairs and the backend pairs of every case.
void AddPairs(TrainResult* result) {
  TrainResult& out = *result;
  // Twins: every key of the name but the one the pair is about.
  auto twin_key = [](const TrainCase& c, const std::string& backend, const std::string& graph) {
    return c.model + "|" + c.device + "|" + backend + "|" + Keys(c, true, true, false) + "|" +
           graph;
  };
  std::map<std::string, const TrainCase*> by_key;
  for (const TrainCase& c : out.cases) by_key.emplace(twin_key(c, c.backend, c.graph), &c);
  auto pair = [](const TrainCase& a, const TrainCase& b) {
    return TrainPair{a.model, a.device, a, b, b.step_ns / a.step_ns};
  };
  for (const TrainCase& c : out.cases) {
    if (c.graph == kGraphed) {
      auto it = by_key.find(twin_key(c, c.backend, std::string(kEager)));
      if (it != by_key.end()) out.graphs.push_back(pair(c, *it->second));
    }
    std::string other = c.backend == kNative     ? std::string(kLibtorch)
                        : c.backend == kLibtorch ? std::string(kPytorch)
                                                 : std::string();
    if (!other.empty()) {
      auto it = by_key.find(twin_key(c, other, c.graph));
      if (it != by_key.end()) out.backends.push_back(pair(c, *it->second));
    }
  }
}

}  // namespace

TrainResult ComputeTrain(const MergedRuns& runs) {
  TrainResult out;
  Reasons left_out;
  for (const Bench& b : runs.benches) {
    if (b.family != kTrainFamily || !b.measured()) continue;
    std::optional<TrainCase> c = CaseOf(b, &left_out);
    if (!c) continue;
    if (std::find(out.models.begin(), out.models.end(), c->model) == out.models.end())
      out.models.push_back(c->model);
    out.cases.push_back(std::move(*c));
  }
  std::map<std::string, const SweepCurve*> curve_of;
  std::vector<SweepCurve> sweeps = SweepCurves(runs);
  for (const SweepCurve& s : sweeps) curve_of[s.curve] = &s;
  for (const std::string& model : out.models) AddModel(model, curve_of, &out);
  AddPairs(&out);
  out.graph_summary = Summarize(out.graphs);
  out.backend_summary = Summarize(out.backends);
  out.notes = left_out.Lines();
  return out;
}

namespace {

Cell DurationCell(double s) { return std::isfinite(s) ? Cell(FormatDuration(s), s) : Cell("-"); }
Cell TimeCell(double ns) { return std::isfinite(ns) ? Cell(FormatTime(ns), ns) : Cell("-"); }
Cell NumberCell(double v, int digits = 6) {
  return std::isfinite(v) ? Cell(FormatNumber(v, digits), v) : Cell("-");
}
Cell ShareCell(double f) { return Cell(FormatPercent(f), f); }

std::string Items(double n) {
  if (!std::isfinite(n)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", n);
  std::string s = buf, out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

std::string DeviceName(const std::string& d) { return d == "cpu" ? "CPU" : "GPU"; }

std::string PairConfig(const TrainPair& p) { return Keys(p.a, true, false, false); }

Section EpochSection(const TrainResult& t) {
  Section s;
  s.title = "train: one epoch, CPU vs GPU";
  bool cpu = false, gpu = false;
  for (const TrainEpoch& e : t.epochs) {
    cpu |= e.cpu.has_value();
    gpu |= e.gpu.has_value();
  }
  std::string note =
      "One epoch = the model's dataset (epoch items) at the measured step time (epoch_s, else "
      "epoch_items x step time / bs). Best: per device the training configuration (backend, batch "
      "size, dtype, layout, graph) with the shortest epoch.";
  // A run on one device compares nothing: the comparison's terms would only be noise there.
  if (cpu && gpu)
    note +=
        " Same configuration: f32, nchw, eager, at the largest batch size both devices ran, the "
        "fastest backend of each. Speedup = CPU epoch / GPU epoch.";
  s.notes.push_back(note);
  Table best;
  best.title = "Best configuration of each device";
  best.columns = {{"model", "model"},           {"epoch items", std::string(schema::kEpochItems)},
                  {"CPU epoch", "cpu_epoch_s"}, {"CPU configuration", "cpu_config"},
                  {"GPU epoch", "gpu_epoch_s"}, {"GPU configuration", "gpu_config"},
                  {"speedup", "speedup"}};
  Table same;
  same.title = "Same configuration: f32, nchw, eager, training";
  same.columns = {{"model", "model"},           {"bs", "bs"},
                  {"CPU", "cpu_backend"},       {"GPU", "gpu_backend"},
                  {"CPU epoch", "cpu_epoch_s"}, {"GPU epoch", "gpu_epoch_s"},
                  {"speedup", "speedup"}};
  Chart bars;
  bars.kind = Chart::Kind::kBars;
  bars.title = "train: one epoch, GPU speedup over CPU";
  bars.x_label = "speedup (CPU epoch / GPU epoch)";
  bars.bar_reference = 1;
  double lo = INFINITY, hi = 0;
  bool doubtful = false;
  for (const TrainEpoch& e : t.epochs) {
    bool d = (e.cpu && e.cpu->doubtful) || (e.gpu && e.gpu->doubtful);
    doubtful |= d;
    best.rows.push_back(
        {Cell(e.model),
         std::isfinite(e.epoch_items) ? Cell(Items(e.epoch_items), e.epoch_items) : Cell("-"),
         DurationCell(e.cpu ? e.cpu->epoch_s : kNaN), Cell(e.cpu ? e.cpu->Config() : "-"),
         DurationCell(e.gpu ? e.gpu->epoch_s : kNaN), Cell(e.gpu ? e.gpu->Config() : "-"),
         SpeedupCell(e.speedup, d)});
    if (std::isfinite(e.speedup)) {
      bars.bars.emplace_back(e.model + " best", e.speedup);
      lo = std::min(lo, e.speedup);
      hi = std::max(hi, e.speedup);
    }
    if (e.same_cpu && e.same_gpu) {
      bool ds = e.same_cpu->doubtful || e.same_gpu->doubtful;
      doubtful |= ds;
      same.rows.push_back({Cell(e.model), NumberCell(e.same_cpu->bs), Cell(e.same_cpu->backend),
                           Cell(e.same_gpu->backend), DurationCell(e.same_cpu->epoch_s),
                           DurationCell(e.same_gpu->epoch_s), SpeedupCell(e.same_speedup, ds)});
      bars.bars.emplace_back(e.model + " f32 bs " + FormatNumber(e.same_cpu->bs, 6),
                             e.same_speedup);
      lo = std::min(lo, e.same_speedup);
      hi = std::max(hi, e.same_speedup);
    }
  }
  if (doubtful)
    s.notes.push_back(
        "⚠: a result of the row was not verified or was mistrusted (see the summary).");
  for (const std::string& n : t.notes) s.notes.push_back("Left out: " + n);
  if (best.rows.empty())
    s.notes.push_back("No training case with an epoch: epochs need epoch_s or epoch_items.");
  else
    s.tables.push_back(std::move(best));
  if (!same.rows.empty()) s.tables.push_back(std::move(same));
  if (!bars.bars.empty()) {
    bars.log_x = lo > 0 && (hi / lo > 20 || lo < 1);
    s.charts.push_back(std::move(bars));
  }
  return s;
}

// CPU and GPU in their overview colours.
int DeviceColor(const std::string& device) { return device == "cpu" ? 0 : 1; }

// The batch-size table; per model a chart of each device's best curve and its fit.
void AddBatchSizes(const TrainResult& t, Section* s, std::map<std::string, Chart>* charts) {
  Table fits;
  fits.title = "Batch size";
  fits.columns = {{"model", "model"},
                  {"device", "device"},
                  {"configuration", "config"},
                  {"batch sizes", "points"},
                  {"best bs", "best_bs"},
                  {"images/s", "best_items_per_s"},
                  {"epoch at best bs", "best_epoch_s"},
                  {"α", "alpha"},
                  {"t_min per image", "t_min_ns"},
                  {"T_min epoch", "t_min_epoch_s"},
                  {"R²", "r2"}};
  for (const TrainCurve& c : t.curves) {
    const SweepCurve& sw = c.sweep;
    double items = c.at.epoch_items;
    double best_epoch = std::isfinite(items) ? items / sw.best_throughput : kNaN;
    fits.rows.push_back({Cell(c.model), Cell(DeviceName(c.device)),
                         Cell(c.at.backend + " " + Keys(c.at, false, false, true)),
                         NumberCell(static_cast<double>(sw.points.size())), NumberCell(sw.best_bs),
                         Cell(FormatRate(sw.best_throughput), sw.best_throughput),
                         DurationCell(best_epoch), sw.fit_ok ? NumberCell(sw.alpha, 3) : Cell("-"),
                         sw.fit_ok ? TimeCell(sw.t_min) : Cell("-"),
                         sw.fit_ok ? DurationCell(items * sw.t_min / 1e9) : Cell("-"),
                         sw.fit_ok ? NumberCell(sw.r2, 4) : Cell("-")});
    // One chart per model: each device's best curve in epoch seconds (time per image without
    // epoch items), with its fit.
    bool epoch = std::isfinite(items);
    double scale = epoch ? items / 1e9 : 1;
    Chart& ch = (*charts)[c.model];
    if (ch.series.empty()) {
      ch.width = 560;
      ch.title = c.model + (epoch ? ": epoch time over batch size" : ": time per image");
      ch.x_label = "batch size";
      ch.y_label = epoch ? "epoch (s)" : "time per image (ns)";
      ch.log_x = true;
    }
    Series pts{DeviceName(c.device) + " " + c.at.backend, {}, true, true, DeviceColor(c.device)};
    for (const SweepPoint& p : sw.points) pts.points.emplace_back(p.bs, p.per_sample_ns * scale);
    ch.series.push_back(std::move(pts));
    if (sw.fit_ok) {
      Series fit{DeviceName(c.device) + " fit", {}, true, false, DeviceColor(c.device)};
      double b0 = sw.points.front().bs, b1 = sw.points.back().bs;
      for (int i = 0; i <= 40; ++i) {
        double b = b0 * std::pow(b1 / b0, i / 40.0);
        fit.points.emplace_back(b, (sw.c / std::pow(b, sw.alpha) + sw.t_min) * scale);
      }
      ch.series.push_back(std::move(fit));
    }
  }
  if (fits.rows.empty())
    s->notes.push_back("No batch-size curve: a curve needs a configuration at two or more bs.");
  else
    s->tables.push_back(std::move(fits));
}

// The phase table; the stacked bars it returns go after the model charts.
Chart AddPhases(const TrainResult& t, Section* s) {
  Table ph;
  ph.title = "Where a step goes";
  ph.columns = {{"model", "model"},  {"device", "device"}, {"configuration", "config"},
                {"step", "step_ns"}, {"fwd", "fwd"},       {"bwd", "bwd"},
                {"opt", "opt"},      {"other", "other"}};
  Chart stacked;
  stacked.kind = Chart::Kind::kStacked;
  stacked.title = "train: share of a step (%)";
  stacked.x_label = "% of the step";
  stacked.segments = {"fwd", "bwd", "opt", "other"};
  bool over = false;
  for (const TrainPhases& p : t.phases) {
    over |= p.over_step;
    ph.rows.push_back({Cell(p.model), Cell(DeviceName(p.device)),
                       Cell(p.at.Config() + (p.over_step ? " †" : "")), TimeCell(p.at.step_ns),
                       ShareCell(p.fwd), ShareCell(p.bwd), ShareCell(p.opt), ShareCell(p.other)});
    stacked.stacks.push_back({p.model + " " + DeviceName(p.device),
                              {100 * p.fwd, 100 * p.bwd, 100 * p.opt, 100 * p.other}});
  }
  if (ph.rows.empty()) {
    s->notes.push_back("No phase bars: no training case carries fwd_s, bwd_s and opt_s.");
  } else {
    s->notes.push_back(
        "Where a step goes: forward, backward and optimizer (timed in a separate un-graphed pass) "
        "as shares of the step time, at each device's fastest configuration that has them; "
        "other: the rest of the step (loss, zero_grad, launch gaps)." +
        std::string(over ? " †: the phases add up to more than the (graphed) step; shares of "
                           "their sum."
                         : ""));
    s->tables.push_back(std::move(ph));
  }

  return stacked;
}

// The peak memory table; per model a chart of each device's curve.
void AddMemory(const TrainResult& t, Section* s, std::map<std::string, Chart>* charts) {
  Table mem;
  mem.title = "Peak memory over batch size";
  mem.columns = {{"model", "model"},
                 {"device", "device"},
                 {"configuration", "config"},
                 {"bs", "bs"},
                 {"peak memory", std::string(schema::kPeakMemBytes)}};
  for (const TrainMemory& m : t.memory) {
    for (auto [bs, bytes] : m.points)
      mem.rows.push_back({Cell(m.model), Cell(DeviceName(m.device)),
                          Cell(m.at.backend + " " + Keys(m.at, false, false, true)), NumberCell(bs),
                          Cell(FormatBytes(bytes, 3), bytes)});
    if (m.points.size() < 2) continue;
    Chart& ch = (*charts)[m.model];
    if (ch.series.empty()) {
      ch.width = 560;
      ch.title = m.model + ": peak memory over batch size";
      ch.x_label = "batch size";
      ch.y_label = "GiB";
      ch.log_x = true;
    }
    Series se{DeviceName(m.device) + " " + m.at.backend, {}, true, true, DeviceColor(m.device)};
    for (auto [bs, bytes] : m.points) se.points.emplace_back(bs, bytes / (1024.0 * 1024 * 1024));
    ch.series.push_back(std::move(se));
  }
  if (mem.rows.empty()) {
    s->notes.push_back("No peak memory: no training case carries peak_mem_bytes.");
  } else {
    s->notes.push_back(
        "Peak memory: GPU, the device's peak (caching allocator); CPU, the process's peak host "
        "RSS, which only grows over a run, so a case's figure may hold an earlier case's peak.");
    s->tables.push_back(std::move(mem));
  }
}

// Per model its epoch chart, then its memory chart, log-scaled where the values span much.
void AddModelCharts(const TrainResult& t, std::map<std::string, Chart>* epoch_charts,
                    std::map<std::string, Chart>* memory_charts, Section* s) {
  for (const std::string& model : t.models)
    for (auto* charts : {epoch_charts, memory_charts}) {
      auto it = charts->find(model);
      if (it == charts->end()) continue;
      Chart& ch = it->second;
      ch.log_y = WideY(ch);
      s->charts.push_back(std::move(ch));
    }
}

Section StepSection(const TrainResult& t) {
  Section s;
  s.title = "train: batch size, phases, memory";
  s.notes.push_back(
      "Batch size: the curve of each device's best configuration (every curve: the details or "
      "`dlbench-report sweep`), fitted as the time per image t(b) = c/b^α + t_min over three or "
      "more batch sizes; the epoch time is T(b) = epoch items x t(b), its floor T_min = epoch "
      "items x t_min. Best bs: the most images/s.");
  std::map<std::string, Chart> epoch_charts, memory_charts;
  AddBatchSizes(t, &s, &epoch_charts);
  Chart stacked = AddPhases(t, &s);
  AddMemory(t, &s, &memory_charts);
  AddModelCharts(t, &epoch_charts, &memory_charts, &s);
  if (!stacked.stacks.empty()) s.charts.push_back(std::move(stacked));
  return s;
}

Table SummaryTable(const std::vector<TrainPairSummary>& rows, bool graph) {
  Table t;
  t.title = graph ? "Eager vs CUDA graph" : "Backends";
  t.columns = {{"model", "model"}};
  if (graph) {
    t.columns.push_back({"backend", "backend"});
  } else {
    t.columns.push_back({"device", "device"});
    t.columns.push_back({"A", "a_backend"});
    t.columns.push_back({"B", "b_backend"});
  }
  for (Column c : std::vector<Column>{{"pass", "pass"},
                                      {"pairs", "pairs"},
                                      {"geomean", "geomean"},
                                      {"lowest", "lowest"},
                                      {"at", "lowest_at"},
                                      {"highest", "highest"},
                                      {"at", "highest_at"}})
    t.columns.push_back(c);
  for (const TrainPairSummary& s : rows) {
    std::vector<Cell> r{Cell(s.model)};
    if (graph) {
      r.emplace_back(s.a);
    } else {
      r.emplace_back(DeviceName(s.device));
      r.emplace_back(s.a);
      r.emplace_back(s.b);
    }
    bool d = s.lo.a.doubtful || s.lo.b.doubtful || s.hi.a.doubtful || s.hi.b.doubtful;
    r.emplace_back(s.pass.empty() ? "-" : s.pass);
    r.push_back(NumberCell(static_cast<double>(s.n)));
    r.push_back(SpeedupCell(s.geomean, false));
    r.push_back(SpeedupCell(s.lo.speedup, d));
    r.emplace_back(PairConfig(s.lo));
    r.push_back(SpeedupCell(s.hi.speedup, d));
    r.emplace_back(PairConfig(s.hi));
    t.rows.push_back(std::move(r));
  }
  return t;
}

Section PairsSection(const TrainResult& t) {
  Section s;
  bool any_gpu = std::any_of(t.cases.begin(), t.cases.end(),
                             [](const TrainCase& c) { return c.device == "gpu"; });
  // CUDA graphs are a GPU's: a CPU-only run's title names only what it can hold.
  s.title = any_gpu ? "train: eager vs CUDA graph, backends" : "train: backends";
  if (t.graph_summary.empty()) {
    // Without any GPU case there is nothing to pair, and the report said so once already.
    if (any_gpu)
      s.notes.push_back(
          "No eager/graph pairs: they need GPU cases at graph:1 and graph:0 of one "
          "configuration.");
  } else {
    s.notes.push_back(
        "Eager vs CUDA graph: speedup = eager step time (graph:0) / graph step time (graph:1, the "
        "whole step captured once and replayed) at the same backend, model, batch size, dtype, "
        "layout and pass; geomean over those pairs, the lowest and the highest with where.");
    s.tables.push_back(SummaryTable(t.graph_summary, true));
  }
  if (t.backend_summary.empty()) {
    s.notes.push_back(
        "No backend pairs: native vs libtorch and libtorch vs pytorch need both at one "
        "configuration.");
  } else {
    s.notes.push_back(
        "Backends: speedup of A over B = B's step time / A's at the same configuration (native "
        "vs libtorch: dlbench's own MLP against LibTorch's; libtorch vs pytorch: the C++ step "
        "against the Python peer).");
    s.tables.push_back(SummaryTable(t.backend_summary, false));
  }
  return s;
}

Section AllPairsSection(const TrainResult& t) {
  Section s;
  s.title = "train: every eager/graph and backend pair";
  s.details = true;
  Table g;
  g.title = "Eager vs CUDA graph";
  g.columns = {{"model", "model"},    {"backend", "backend"}, {"configuration", "config"},
               {"pass", "pass"},      {"eager", "eager_ns"},  {"graph", "graph_ns"},
               {"speedup", "speedup"}};
  for (const TrainPair& p : t.graphs)
    g.rows.push_back({Cell(p.model), Cell(p.a.backend), Cell(PairConfig(p)),
                      Cell(p.a.pass.empty() ? "-" : p.a.pass), TimeCell(p.b.step_ns),
                      TimeCell(p.a.step_ns), SpeedupCell(p.speedup, p.a.doubtful || p.b.doubtful)});
  Table b;
  b.title = "Backends";
  b.columns = {{"model", "model"},    {"device", "device"}, {"configuration", "config"},
               {"pass", "pass"},      {"graph", "graph"},   {"A", "a_backend"},
               {"B", "b_backend"},    {"A time", "a_ns"},   {"B time", "b_ns"},
               {"speedup", "speedup"}};
  for (const TrainPair& p : t.backends)
    b.rows.push_back({Cell(p.model), Cell(DeviceName(p.device)), Cell(PairConfig(p)),
                      Cell(p.a.pass.empty() ? "-" : p.a.pass),
                      Cell(p.a.graph.empty() ? "-" : p.a.graph), Cell(p.a.backend),
                      Cell(p.b.backend), TimeCell(p.a.step_ns), TimeCell(p.b.step_ns),
                      SpeedupCell(p.speedup, p.a.doubtful || p.b.doubtful)});
  if (!g.rows.empty()) s.tables.push_back(std::move(g));
  if (!b.rows.empty()) s.tables.push_back(std::move(b));
  if (s.tables.empty()) s.notes.push_back("No pairs.");
  return s;
}

}  // namespace

std::vector<Section> TrainSections(const TrainResult& train) {
  if (train.cases.empty()) {
    Section s;
    s.title = "train";
    s.notes.push_back("No train results: names train/<cpu|gpu>/<backend>/<model>/bs:.../...");
    for (const std::string& n : train.notes) s.notes.push_back("Left out: " + n);
    return {s};
  }
  return {EpochSection(train), StepSection(train), PairsSection(train), AllPairsSection(train)};
}

Document TrainDocument(const MergedRuns& runs, const std::vector<std::string>& inputs) {
  Document d;
  d.title = "dlbench training steps";
  d.notes.push_back(InputsNote(inputs));
  if (auto c = ContextLine(runs.context); !c.empty()) d.notes.push_back("Context: " + c);
  d.sections = TrainSections(ComputeTrain(runs));
  return d;
}

}  // namespace dlb::report
