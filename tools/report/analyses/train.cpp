// Training steps per model as data (ComputeTrain): the cases, one epoch on the CPU and on the GPU,
// the batch-size curve with its fit, where a step goes, peak memory, eager against CUDA graph and
// backend against backend. train_sections.cpp lays them out.
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

// Values of the train family's names (benchmarks/train): dtype, layout, graph and the backends
// whose pairs are worth a figure.
constexpr std::string_view kF32 = "f32";
constexpr std::string_view kNchw = "nchw";
constexpr std::string_view kEager = "0";
constexpr std::string_view kGraphed = "1";
constexpr std::string_view kNative = "native";
constexpr std::string_view kLibtorch = "libtorch";
constexpr std::string_view kPytorch = "pytorch";

double Positive(double v) { return std::isfinite(v) && v > 0 ? v : kNaN; }
double NonNegative(double v) { return std::isfinite(v) && v >= 0 ? v : kNaN; }

bool Training(const TrainCase& c) { return c.pass != value::kInfer; }
double PerImageNs(const TrainCase& c) { return c.step_ns / c.bs; }
bool HasPhases(const TrainCase& c) {
  return std::isfinite(c.fwd_s) && std::isfinite(c.bwd_s) && std::isfinite(c.opt_s) &&
         c.fwd_s + c.bwd_s + c.opt_s > 0;
}

// "dt:f32", a key of a name with its value; empty where the value is.
std::string KeyValue(std::string_view k, const std::string& v) {
  return v.empty() ? std::string() : std::string(k) + ":" + v;
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

std::string TrainCase::NameKeys(bool with_bs, bool with_pass, bool with_graph) const {
  return JoinNonEmpty(
      {with_bs ? KeyValue(key::kBatch, Prose({Cell::Count(bs)})) : "", KeyValue(key::kDType, dt),
       KeyValue(key::kLayout, fmt), with_pass ? KeyValue(key::kPass, pass) : "",
       with_graph ? KeyValue(key::kGraph, graph) : ""},
      "/");
}

std::string TrainCase::Config() const { return backend + " " + NameKeys(true, false, true); }

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
  // dlbench's own configurations: a peer's step (backend pytorch, tools/peers) is compared in the
  // backend pairs, never picked as the model's best or same configuration.
  auto same_config = [](const TrainCase& c) {
    return Training(c) && c.backend != kPytorch && c.dt == kF32 &&
           (c.fmt.empty() || c.fmt == kNchw) && (c.graph.empty() || c.graph == kEager) &&
           std::isfinite(c.epoch_s);
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
  auto has_epoch = [](const TrainCase& c) {
    return Training(c) && c.backend != kPytorch && std::isfinite(c.epoch_s);
  };
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
    return c.model + "|" + c.device + "|" + backend + "|" + c.NameKeys(true, true, false) + "|" +
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

}  // namespace dlb::report
