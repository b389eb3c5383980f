// The findings a person reads first: short tables built from what the train, GPU-scaling and
// per-case analyses compute, and the throughput cliffs over batch size.
#include "tools/report/analyses/findings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "fixtures/schema/families.h"
#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/peaks.h"
#include "tools/report/analyses/transformer.h"

namespace dlb::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool Usable(const Bench& b) { return b.parsed && b.measured() && b.MedianNs() > 0; }

double BsOf(const BenchName& n) {
  double bs = std::atof(n.Get(key::kBatch).c_str());
  return bs > 0 ? bs : 0;
}

// The name with bs written as "bs:*": one curve over batch size.
std::string CurveName(const BenchName& n) {
  std::string out = n.family + "/" + n.device + "/" + n.backend + "/" + n.workload;
  for (const auto& [k, v] : n.keys) out += "/" + k + ":" + (k == key::kBatch ? "*" : v);
  return out;
}

// "bs 256 · 50.8 k images/s" at a case: the best batch size of a device, by throughput; a
// transformer step's in tokens/s.
// `sizes`: the batch sizes measured on that curve; a "best" of one measured size says so.
Cell BestBsCell(const std::optional<TrainCase>& c, size_t sizes) {
  if (!c || !(c->step_ns > 0)) return Cell("-");
  const std::string only = sizes == 1 ? " (only size measured)" : "";
  if (std::isfinite(c->tokens_per_s) && c->tokens_per_s > 0)
    return Cell(
        Prose({BatchSizeLabel(c->bs), " · ", Cell::Rate(c->tokens_per_s, "tokens/s"), only}),
        c->bs);
  double per_s = c->bs / c->step_ns * 1e9;
  return Cell(Prose({BatchSizeLabel(c->bs), " · ",
                     Cell::Rate(per_s, ItemsPerSecond(std::string(kTrainFamily), c->model)), only}),
              c->bs);
}

// The batch sizes measured on the curve `c` lies on (its configuration but the batch size).
size_t SizesMeasured(const TrainResult& train, const std::optional<TrainCase>& c) {
  if (!c) return 0;
  std::set<double> sizes;
  for (const TrainCase& t : train.cases)
    if (t.curve == c->curve) sizes.insert(t.bs);
  return sizes.size();
}

Cell EpochCell(const std::optional<TrainCase>& c) {
  if (!c || !std::isfinite(c->epoch_s)) return Cell("-");
  return Cell::Duration(c->epoch_s);
}

// The % of peak of a device's best training step, and the peak named ("23.1%", "spec bf16 ...").
std::pair<Cell, Cell> StepPeakCells(const MergedRuns& runs, const std::optional<TrainCase>& c) {
  if (!c) return {Cell("-"), Cell("-")};
  auto b = std::find_if(runs.benches.begin(), runs.benches.end(),
                        [&](const Bench& x) { return x.name == c->name; });
  if (b == runs.benches.end() || !b->parsed) return {Cell("-"), Cell("-")};
  if (!(b->Counter(schema::kPctPeak) > 0)) return {Cell("-"), Cell("-")};
  const PeakShare share = PeakShareOf(*b, b->Counter(schema::kFlopPerS),
                                      FlopUnit(b->parsed->Get(key::kDType)), runs.context);
  if (share.peak.empty()) return {Cell("-"), Cell("-")};
  const double pct = share.pct;
  const std::string& peak = share.peak;
  Cell p = Cell::Number(pct, 3).After("%");
  if (pct > 100) p.Doubtful().With(Tone::kWarn);
  return {p, Cell(peak)};
}

Table EpochTable(const MergedRuns& runs, const TrainResult& train) {
  Table t;
  t.title =
      "Training: one epoch per model at each device's best batch size (the most items/s: "
      "images, samples or tokens, as the model counts them)";
  t.columns = {{"model", "model"},
               {"CPU epoch", "cpu_epoch_s"},
               {"GPU epoch", "gpu_epoch_s"},
               {"speedup", "speedup"},
               {"CPU best batch size", "cpu_best_bs"},
               {"GPU best batch size", "gpu_best_bs"},
               {"CPU % of peak", "cpu_pct_peak"},
               {"GPU % of peak", "gpu_pct_peak"},
               {"CPU peak", "cpu_peak"},
               {"GPU peak", "gpu_peak"}};
  for (const TrainEpoch& e : train.epochs) {
    if (!e.cpu && !e.gpu) continue;
    bool doubtful = (e.cpu && e.cpu->doubtful) || (e.gpu && e.gpu->doubtful);
    t.rows.push_back({Cell(e.model), EpochCell(e.cpu), EpochCell(e.gpu),
                      SpeedupCell(e.speedup, doubtful),
                      BestBsCell(e.cpu, SizesMeasured(train, e.cpu)),
                      BestBsCell(e.gpu, SizesMeasured(train, e.gpu))});
    auto [cpu_pct, cpu_peak] = StepPeakCells(runs, e.cpu);
    auto [gpu_pct, gpu_peak] = StepPeakCells(runs, e.gpu);
    for (Cell c : {cpu_pct, gpu_pct, cpu_peak, gpu_peak}) t.rows.back().push_back(std::move(c));
  }
  DropEmptyColumns(&t);
  // A peak every row names alike is said once, in the title, and its column leaves the table.
  SayOnceInTitle(&t, "cpu_peak", "CPU peak");
  SayOnceInTitle(&t, "gpu_peak", "GPU peak");
  return t;
}

Table StarvationTable(const std::vector<FedStep>& fed) {
  Table t;
  t.title =
      "Loader starvation of training steps fed by a data loader: 1 - fed / alone images/s "
      "(0%: the loader keeps up), at the worker count with the least";
  t.columns = {{"model", "model"},
               {"bs", "bs"},
               {"loader", "loader"},
               {"workers", "workers"},
               {"fed images/s", "fed_items_per_s"},
               {"step alone images/s", std::string(schema::kAloneItemsPerS)},
               {"starvation", "starvation"},
               {"at the fewest workers", "fewest_starvation"}};
  for (const FedStep& f : fed) {
    Tone tone = f.starvation > 0.5 ? Tone::kBad : f.starvation < 0.1 ? Tone::kGood : Tone::kNone;
    std::string fewest =
        f.counts > 1
            ? Prose({Cell::Percent(f.fewest_starvation, 0), " (",
                     Cell::Count(f.fewest_workers, f.fewest_workers == 1 ? "worker)" : "workers)")})
            : "-";
    t.rows.push_back({Cell(f.model), Cell::Count(f.bs), Cell(f.loader),
                      f.workers > 0 ? Cell::Number(f.workers, 4) : Cell("-"), Cell::Rate(f.fed),
                      Cell::Rate(f.alone), Cell::Percent(f.starvation, 0).With(tone),
                      f.counts > 1 ? Cell(fewest, f.fewest_starvation) : Cell("-")});
  }
  DropEmptyColumns(&t);
  return t;
}

Table ScalingTable(const GpuScaling& scaling) {
  Table t;
  t.title =
      "GPU scaling of data-parallel training steps at the most GPUs: efficiency = per-GPU "
      "items/s / one GPU's (100%: linear)";
  t.columns = {{"model", "model"},
               {"backend", "backend"},
               {"per-GPU bs", "bs"},
               {"GPUs", "gpus"},
               {"items/s", std::string(schema::kItemsPerS)},
               {"efficiency", "efficiency"},
               {"exposed comm per step", std::string(schema::kExposedCommS)}};
  for (const GpuCurve& c : scaling.steps) {
    if (c.points.empty() || c.points.back().gpus <= 1) continue;
    const GpuPoint& p = c.points.back();
    Tone tone = !std::isfinite(p.efficiency) ? Tone::kNone
                : p.efficiency < 0.8         ? Tone::kBad
                : p.efficiency >= 0.95       ? Tone::kGood
                                             : Tone::kNone;
    t.rows.push_back(
        {Cell(c.model), Cell(c.backend), c.bs > 0 ? Cell::Count(c.bs) : Cell("-"),
         Cell::Number(p.gpus, 4),
         Cell::Rate(p.throughput, ItemsPerSecond(std::string(kTrainFamily), c.model)),
         std::isfinite(p.efficiency) ? Cell::Percent(p.efficiency, 0).With(tone) : Cell("-"),
         std::isfinite(p.exposed_comm_s) ? Cell::Duration(p.exposed_comm_s) : Cell("-")});
  }
  DropEmptyColumns(&t);
  return t;
}

// The best figure of each family but train (which has its own table), per device: GEMM and conv
// in FLOP/s, data loading in images/s, collectives in bus bandwidth.
struct Best {
  double value = 0;
  const Bench* at = nullptr;
};

Table BestTable(const MergedRuns& runs) {
  Table t;
  t.title = "Best of each family";
  t.columns = {{"family", "family"}, {"device", "device"},
               {"best", "best"},     {"% of peak", std::string(schema::kPctPeak)},
               {"peak", "peak"},     {"case", "name"}};
  std::vector<std::string> order;
  std::map<std::string, Best> best;  // family|device
  for (const Bench& b : runs.benches) {
    if (!Usable(b) || b.family == kTrainFamily) continue;
    // FLOP/s where the family has a FLOP peak, else what it moves: bytes or items.
    const bool flops = families::Of(b.family).flop_peak;
    std::string_view counter = flops                   ? schema::kFlopPerS
                               : Collectives(b.family) ? schema::kBusBw
                                                       : schema::kItemsPerS;
    const double v = RateAtMedianTime(b, counter);
    if (!std::isfinite(v) || v <= 0) continue;
    std::string key = b.family + "|" + b.parsed->device;
    if (!best.count(key)) order.push_back(key);
    Best& x = best[key];
    if (v > x.value) x = {v, &b};
  }
  // Family by family as they came, the CPU before the GPU.
  std::vector<std::string> families;
  for (const std::string& key : order) {
    std::string fam = key.substr(0, key.find('|'));
    if (std::find(families.begin(), families.end(), fam) == families.end()) families.push_back(fam);
  }
  std::vector<std::string> sorted;
  for (const std::string& fam : families)
    for (const char* device : {"|cpu", "|gpu"})
      if (best.count(fam + device)) sorted.push_back(fam + device);
  for (const std::string& key : sorted) {
    const Best& x = best[key];
    const BenchName& n = *x.at->parsed;
    const std::string dt = n.Get(key::kDType);
    const bool flops = families::Of(n.family).flop_peak;
    std::string unit = flops                   ? FlopUnit(dt)
                       : Collectives(n.family) ? "B/s bus bandwidth"
                                               : ItemsPerSecond(n.family, n.workload);
    // The % beside a FLOP rate and the peak it is of, named; a bandwidth or images/s has none.
    const PeakShare share = flops ? PeakShareOf(*x.at, x.value, unit, runs.context) : PeakShare{};
    const std::string peak = share.peak.empty() ? kNoPeakKnown : share.peak;
    Cell pct_cell = Cell::Number(share.pct, 3).After("%");
    if (share.pct > 100) pct_cell.Doubtful().With(Tone::kWarn);
    std::string workload = n.workload;
    if (Collectives(n.family)) {
      // "all_reduce.1073741824" reads as "all_reduce 1 GiB".
      size_t dot = workload.rfind('.');
      double bytes = dot == std::string::npos ? 0 : std::atof(workload.c_str() + dot + 1);
      if (bytes > 0) workload = Prose({workload.substr(0, dot), " ", Cell::Bytes(bytes)});
    }
    std::string where = workload + (n.keys.empty() ? "" : " " + KeysExcept(n, {}));
    // A best that rests on noise says so beside its figure.
    Cell value = Cell::Rate(x.value, unit);
    std::string name = n.backend + " " + where;
    // A rate of the direct count where the engine did less work reads as at or past the peak.
    if (const std::string engine = FewerFlopsEngine(*x.at); !engine.empty())
      name += " (" + engine + " engine: fewer FLOPs than the direct count its rate is of)";
    if (const double cv = x.at->Cv(); cv > kNoisyCv) {
      value.Doubtful().With(Tone::kWarn);
      name += Prose({" (noisy: CV ", Cell::Number(cv * 100, 3).After("%"), ")"});
    }
    t.rows.push_back({Cell(n.family), Cell(n.device == "cpu" ? "CPU" : "GPU"), value, pct_cell,
                      Cell(peak), Cell(name)});
  }
  return t;
}

Table CliffTable(const std::vector<Cliff>& cliffs) {
  Table t;
  t.title = Prose({"Throughput cliffs: more than ", Cell::Ratio(kCliffFactor, 2),
                   " fewer items/s at the next batch size"});
  t.columns = {{"curve", "curve"},
               {"batch sizes", "bs"},
               {"items/s", std::string(schema::kItemsPerS)},
               {"drop", "drop"},
               {"phase that grew most (seconds per item)", "phase"}};
  for (const Cliff& c : cliffs) {
    std::string phase = "-";
    if (!c.phase.empty())
      phase = Prose({c.phase, ": ", Cell::Duration(c.phase_from), " → ", Cell::Duration(c.phase_to),
                     " per item"});
    t.rows.push_back({Cell(c.curve),
                      Cell(Prose({Cell::Count(c.bs_from), " → ", Cell::Count(c.bs_to)})),
                      Cell(Prose({Cell::Rate(c.thr_from), " → ", Cell::Rate(c.thr_to)}), c.thr_to),
                      Cell::Ratio(c.thr_from / c.thr_to).With(Tone::kBad), Cell(phase)});
  }
  DropEmptyColumns(&t);
  return t;
}

}  // namespace

Devices DevicesOf(const MergedRuns& runs) {
  Devices d;
  for (const Bench& b : runs.benches) {
    if (!b.parsed || !b.measured()) continue;
    d.cpu |= b.parsed->device == "cpu";
    d.gpu |= b.parsed->device == "gpu";
  }
  d.gpu_context = ContextValue(runs.context, schema::kCtxGpuName);
  return d;
}

std::string DevicesLine(const Devices& d) {
  if (d.cpu && !d.gpu)
    return "CPU only: no GPU in this run" +
           (d.gpu_context.empty() ? std::string() : " (" + d.gpu_context + ")") + ".";
  if (d.gpu && !d.cpu) return "GPU only: no CPU case in this run.";
  return "";
}

std::vector<Cliff> FindCliffs(const MergedRuns& runs, double factor) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::pair<double, const Bench*>>> curves;
  for (const Bench& b : runs.benches) {
    if (!Usable(b)) continue;
    double bs = BsOf(*b.parsed);
    if (bs <= 0) continue;
    std::string curve = CurveName(*b.parsed);
    if (!curves.count(curve)) order.push_back(curve);
    curves[curve].emplace_back(bs, &b);
  }
  std::vector<Cliff> out;
  for (const std::string& curve : order) {
    auto& points = curves[curve];
    std::sort(points.begin(), points.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i + 1 < points.size(); ++i) {
      const auto& [bs0, b0] = points[i];
      const auto& [bs1, b1] = points[i + 1];
      double thr0 = bs0 / b0->MedianNs() * 1e9, thr1 = bs1 / b1->MedianNs() * 1e9;
      if (!(thr0 > factor * thr1)) continue;
      Cliff c;
      c.family = b0->family;
      c.curve = curve;
      c.from_name = b0->name;
      c.to_name = b1->name;
      c.bs_from = bs0;
      c.bs_to = bs1;
      c.thr_from = thr0;
      c.thr_to = thr1;
      double most = 0;
      for (std::string_view phase : {schema::kFwdS, schema::kBwdS, schema::kOptS}) {
        double a = b0->Counter(phase) / bs0, z = b1->Counter(phase) / bs1;
        if (!std::isfinite(a) || !std::isfinite(z) || a < 0 || z < 0) continue;
        if (z - a > most) {
          most = z - a;
          c.phase = std::string(phase);
          c.phase_from = a;
          c.phase_to = z;
        }
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<FedStep> FedSteps(const MergedRuns& runs) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<FedStep>> groups;
  for (const Bench& b : runs.benches) {
    if (!Usable(b) || b.family != kTrainFamily) continue;
    const BenchName& n = *b.parsed;
    std::string loader = n.Get(key::kLoader);
    if (loader.empty()) continue;
    FedStep f;
    f.model = b.network.empty() ? n.workload : b.network;
    f.loader = loader;
    f.config = KeysExcept(n, {key::kBatch, key::kWorkers, key::kLoader});
    f.bs = BsOf(n);
    f.workers = std::atof(n.Get(key::kWorkers).c_str());
    f.fed = b.Counter(schema::kItemsPerS);
    if (!(f.fed > 0) && f.bs > 0) f.fed = f.bs / b.MedianNs() * 1e9;
    f.alone = b.Counter(schema::kAloneItemsPerS);
    f.starvation = b.Counter(schema::kStarvation);
    if (!std::isfinite(f.starvation) && f.alone > 0) f.starvation = 1 - f.fed / f.alone;
    if (!std::isfinite(f.starvation)) continue;
    std::string key = f.model + "|" + std::to_string(f.bs) + "|" + f.loader + "|" + f.config;
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(f);
  }
  std::vector<FedStep> out;
  for (const std::string& key : order) {
    const auto& g = groups[key];
    auto least = std::min_element(g.begin(), g.end(), [](const FedStep& a, const FedStep& b) {
      return a.starvation < b.starvation;
    });
    auto fewest = std::min_element(g.begin(), g.end(), [](const FedStep& a, const FedStep& b) {
      return a.workers < b.workers;
    });
    FedStep f = *least;
    f.fewest_workers = fewest->workers;
    f.fewest_starvation = fewest->starvation;
    f.counts = g.size();
    out.push_back(f);
  }
  return out;
}

Section FindingsSection(const MergedRuns& runs, const TrainResult& train, const GpuScaling& scaling,
                        Table networks) {
  Section s;
  s.title = "Findings";
  if (std::string line = DevicesLine(DevicesOf(runs)); !line.empty()) s.notes.push_back(line);
  if (Table t = EpochTable(runs, train); !t.rows.empty()) s.tables.push_back(std::move(t));
  if (Table t = TokenTable(TokenSteps(runs), runs.context); !t.rows.empty())
    s.tables.push_back(std::move(t));
  if (Table t = StarvationTable(FedSteps(runs)); !t.rows.empty()) s.tables.push_back(std::move(t));
  if (Table t = ScalingTable(scaling); !t.rows.empty()) s.tables.push_back(std::move(t));
  if (!networks.rows.empty()) s.tables.push_back(std::move(networks));
  if (Table t = BestTable(runs); !t.rows.empty()) s.tables.push_back(std::move(t));
  std::vector<Cliff> cliffs = FindCliffs(runs);
  if (cliffs.empty()) {
    s.notes.push_back(
        Prose({"No throughput cliff: no curve loses more than ", Cell::Ratio(kCliffFactor, 2),
               " of its items/s from one batch size to the next."}));
  } else {
    s.tables.push_back(CliffTable(cliffs));
  }
  return s;
}

}  // namespace dlb::report
