// The report's first screen as data: per family, network (or workload) and batch size, the CPU
// and GPU time of the fastest backends, speedup and throughput (ComputeOverview), and the
// networks' line of the findings (NetworkFindings). overview_sections.cpp lays them out.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/findings.h"
#include "tools/report/analyses/gpu_scaling.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/train.h"
#include "tools/report/analyses/transformer.h"

namespace dlb::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

std::pair<Cell, Cell> PeakCells(const OverviewRow* r, bool gpu) {
  if (!r) return {Cell("-"), Cell("-")};
  const double pct = gpu ? r->gpu_pct_peak : r->cpu_pct_peak;
  const std::string& peak = gpu ? r->gpu_peak : r->cpu_peak;
  if (peak.empty()) return {Cell("-"), Cell(kNoPeakKnown)};
  Cell p = Cell::Number(pct, 3).After("%");
  if (pct > 100) p.Doubtful().With(Tone::kWarn);
  return {p, Cell(peak)};
}

bool OverviewByWorkload(const std::string& family) {
  return family == "dataload" || family == kCommFamily || family == kAttnFamily ||
         family == "infer";
}

Overview ComputeOverview(const MergedRuns& runs) {
  // The fastest backend of each device per layer (pair key), at each batch size.
  struct Layer {
    double ns = INFINITY;
    double weight = 1;
    bool doubtful = false;  // the fastest backend's result was not verified or was mistrusted
    double flop = kNaN;     // per run, of the fastest backend
    PeakShare peak;         // of the fastest backend's FLOP/s
    double busbw = kNaN, algbw = kNaN;
  };
  using RowKey = std::tuple<std::string, std::string, std::string, std::string, double>;
  struct Acc {
    bool network = false;
    std::vector<std::pair<std::string, std::string>> keys;  // but bs
    std::map<std::string, Layer> cpu, gpu;                  // by pair key
  };
  std::map<RowKey, Acc> acc;
  std::map<std::string, size_t> family_order, subject_order, group_order;
  Overview out;
  // A network of one layer (an MLP's single FC GEMM) is no network: its samples/s would read as
  // a whole model's. Such cases stand by their workload.
  std::map<std::string, std::set<std::string>> layers_of;  // family|network -> workloads
  for (const Bench& b : runs.benches)
    if (b.parsed && !b.network.empty())
      layers_of[b.family + "|" + b.network].insert(b.parsed->workload);
  for (const Bench& b : runs.benches) {
    if (!b.parsed || !b.measured() || !(b.MedianNs() > 0)) continue;
    const BenchName& n = *b.parsed;
    if (n.device != "cpu" && n.device != "gpu") continue;
    bool network = !b.network.empty() && !OverviewByWorkload(b.family) &&
                   layers_of[b.family + "|" + b.network].size() > 1;
    std::string subject = network ? b.network : n.workload;
    std::string dt = n.Get(key::kDType), config = ConfigKeys(n);
    double bs = std::atof(n.Get(key::kBatch).c_str());
    if (!(bs > 0)) bs = 0;
    if (family_order.emplace(b.family, family_order.size()).second)
      out.families.push_back(b.family);
    subject_order.emplace(b.family + "|" + subject, subject_order.size());
    group_order.emplace(b.family + "|" + subject + "|" + dt + "|" + config, group_order.size());
    Acc& a = acc[{b.family, subject, dt, config, bs}];
    a.network = network;
    if (a.keys.empty())
      for (const auto& kv : n.keys)
        if (kv.first != key::kBatch) a.keys.push_back(kv);
    Layer& l = (n.device == "cpu" ? a.cpu : a.gpu)[PairKey(n)];
    double count = b.Counter(schema::kCount);
    if (b.MedianNs() < l.ns) {
      l.ns = b.MedianNs();
      l.doubtful = b.verification.doubtful();
      l.flop = b.Counter(schema::kFlopPerS) * l.ns * 1e-9;
      l.peak = PeakShareOf(b, b.Counter(schema::kFlopPerS), FlopUnit(dt), runs.context);
      l.busbw = b.Counter(schema::kBusBw);
      l.algbw = b.Counter(schema::kAlgBw);
    }
    l.weight = network && std::isfinite(count) && count > 0 ? count : 1;
  }
  for (const auto& [key, a] : acc) {
    OverviewRow r;
    std::tie(r.family, r.subject, r.dt, r.config, r.bs) = key;
    r.network = a.network;
    r.keys = a.keys;
    auto sum = [](const std::map<std::string, Layer>& layers) {
      double t = 0;
      for (const auto& [k, l] : layers) t += l.weight * l.ns;
      return layers.empty() ? kNaN : t;
    };
    r.cpu_layers = static_cast<int>(a.cpu.size());
    r.gpu_layers = static_cast<int>(a.gpu.size());
    r.cpu_ns = sum(a.cpu);
    r.gpu_ns = sum(a.gpu);
    // A speedup only over the same layers on both devices.
    bool same = a.cpu.size() == a.gpu.size() &&
                std::equal(a.cpu.begin(), a.cpu.end(), a.gpu.begin(),
                           [](const auto& x, const auto& y) { return x.first == y.first; });
    r.speedup = same ? r.cpu_ns / r.gpu_ns : kNaN;
    for (const auto* layers : {&a.cpu, &a.gpu})
      for (const auto& [k, l] : *layers) r.doubtful = r.doubtful || l.doubtful;
    r.cpu_per_s = r.bs > 0 ? r.bs / r.cpu_ns * 1e9 : kNaN;
    r.gpu_per_s = r.bs > 0 ? r.bs / r.gpu_ns * 1e9 : kNaN;
    auto flop_rate = [](const std::map<std::string, Layer>& layers) {
      double flop = 0, ns = 0;
      for (const auto& [k, l] : layers) {
        if (!(l.flop > 0)) return kNaN;
        flop += l.weight * l.flop;
        ns += l.weight * l.ns;
      }
      return layers.empty() ? kNaN : flop / ns * 1e9;
    };
    r.cpu_flop_per_s = flop_rate(a.cpu);
    r.gpu_flop_per_s = flop_rate(a.gpu);
    // Each layer's share of its peak weighted by its time; the peaks named, once each.
    auto peak_share = [](const std::map<std::string, Layer>& layers, double* pct,
                         std::string* peak) {
      double at_peak = 0, ns = 0;
      std::vector<std::string> names;
      for (const auto& [k, l] : layers) {
        if (!(l.peak.pct > 0)) {
          *pct = kNaN;
          peak->clear();
          return;
        }
        at_peak += l.weight * l.ns * l.peak.pct;
        ns += l.weight * l.ns;
        if (std::find(names.begin(), names.end(), l.peak.peak) == names.end())
          names.push_back(l.peak.peak);
      }
      *pct = layers.empty() ? kNaN : at_peak / ns;
      *peak = Join(names, "; ");
    };
    peak_share(a.cpu, &r.cpu_pct_peak, &r.cpu_peak);
    peak_share(a.gpu, &r.gpu_pct_peak, &r.gpu_peak);
    r.busbw = a.gpu.size() == 1 && a.cpu.empty() ? a.gpu.begin()->second.busbw : kNaN;
    r.algbw = a.gpu.size() == 1 && a.cpu.empty() ? a.gpu.begin()->second.algbw : kNaN;
    out.rows.push_back(r);
  }
  auto order = [&](const OverviewRow& r) {
    return std::make_tuple(family_order[r.family], subject_order[r.family + "|" + r.subject],
                           group_order[r.family + "|" + r.subject + "|" + r.dt + "|" + r.config],
                           r.bs);
  };
  std::sort(out.rows.begin(), out.rows.end(),
            [&](const OverviewRow& a, const OverviewRow& b) { return order(a) < order(b); });
  // The best batch size per device: the most samples/s, when there are at least two to choose.
  for (size_t i = 0; i < out.rows.size();) {
    size_t j = i;
    while (j < out.rows.size() && out.rows[j].family == out.rows[i].family &&
           out.rows[j].subject == out.rows[i].subject && out.rows[j].dt == out.rows[i].dt &&
           out.rows[j].config == out.rows[i].config)
      ++j;
    for (bool gpu : {false, true}) {
      size_t best = j, points = 0;
      for (size_t k = i; k < j; ++k) {
        double v = gpu ? out.rows[k].gpu_per_s : out.rows[k].cpu_per_s;
        if (!std::isfinite(v)) continue;
        ++points;
        if (best == j || v > (gpu ? out.rows[best].gpu_per_s : out.rows[best].cpu_per_s)) best = k;
      }
      if (points >= 2) (gpu ? out.rows[best].gpu_best : out.rows[best].cpu_best) = true;
    }
    i = j;
  }
  return out;
}

// Networks of layers (conv, GEMM; train has its epoch table): per network the speedup at the
// GPU's best batch size over its dtypes and configs, and per device the best batch size of its
// fastest configuration.
Table NetworkFindings(const Overview& ov) {
  Table t;
  t.title =
      "Networks of layers: speedup at the GPU's best batch size, and each device's best batch "
      "size (most samples/s)";
  // A row per network and device, so that each best batch size has its % of peak and the peak
  // named beside it within a terminal's width.
  t.columns = {{"family", "family"},
               {"network", "network"},
               {"speedup", "speedup"},
               {"device", "device"},
               {"best batch size", "best_bs"},
               {"% of peak", std::string(schema::kPctPeak)},
               {"peak", "peak"}};
  struct Acc {
    double lo = INFINITY, hi = 0;
    bool doubtful = false;
    const OverviewRow *cpu = nullptr, *gpu = nullptr;    // the most samples/s of each device
    std::map<std::string, const OverviewRow*> headline;  // per dt|config
  };
  std::vector<std::string> order;
  std::map<std::string, Acc> acc;
  for (const OverviewRow& r : ov.rows) {
    if (!r.network || r.family == kTrainFamily) continue;
    std::string key = r.family + "|" + r.subject;
    if (!acc.count(key)) order.push_back(key);
    Acc& a = acc[key];
    if (std::isfinite(r.cpu_per_s) && (!a.cpu || r.cpu_per_s > a.cpu->cpu_per_s)) a.cpu = &r;
    if (std::isfinite(r.gpu_per_s) && (!a.gpu || r.gpu_per_s > a.gpu->gpu_per_s)) a.gpu = &r;
    // The group's headline: its GPU's best batch size, else its largest with a speedup.
    const OverviewRow*& h = a.headline[r.dt + "|" + r.config];
    if (std::isfinite(r.speedup) && (!h || !h->gpu_best)) h = &r;
  }
  auto best = [](const OverviewRow* r, bool gpu) {
    if (!r) return Cell("-");
    double v = gpu ? r->gpu_per_s : r->cpu_per_s;
    // "bf16", "fmt:nhwc/pass:fwd" read "bf16 nhwc fwd" here: the table's title says what it is.
    std::string config = ConfigValues(r->dt + "/" + r->config);
    return Cell(
        Prose({BatchSizeLabel(r->bs), " · ", Cell::Rate(v, ItemsPerSecond(r->family, r->subject)),
               config.empty() ? "" : " (" + config + ")"}),
        r->bs);
  };
  for (const std::string& key : order) {
    Acc& a = acc[key];
    for (const auto& [g, h] : a.headline) {
      if (!h) continue;
      a.lo = std::min(a.lo, h->speedup);
      a.hi = std::max(a.hi, h->speedup);
      a.doubtful |= h->doubtful;
    }
    Cell speedup("-");
    if (a.hi > 0)
      speedup =
          a.lo == a.hi
              ? SpeedupCell(a.hi, a.doubtful)
              : Cell(Prose({a.doubtful ? "⚠ " : "", Cell::Ratio(a.lo), " to ", Cell::Ratio(a.hi)}),
                     a.hi);
    size_t bar = key.find('|');
    for (bool gpu : {false, true}) {
      const OverviewRow* r = gpu ? a.gpu : a.cpu;
      if (!r) continue;
      auto [pct, peak] = PeakCells(r, gpu);
      t.rows.push_back({Cell(key.substr(0, bar)), Cell(key.substr(bar + 1)), speedup,
                        Cell(gpu ? "GPU" : "CPU"), best(r, gpu), pct, peak});
    }
  }
  DropEmptyColumns(&t);
  if (std::none_of(t.columns.begin(), t.columns.end(),
                   [](const Column& c) { return c.key == "speedup"; }))
    t.title = "Networks of layers: the best batch size (most samples/s)";
  return t;
}

}  // namespace dlb::report
