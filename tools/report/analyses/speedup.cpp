// CPU-vs-GPU speedups: pairs by dlb::PairKey, summed per network.
#include "tools/report/analyses/speedup.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/gpu_scaling.h"
#include "tools/report/analyses/stats.h"

namespace dlb::report {

namespace {

// Repetitions when there are some, else the single center value.
std::vector<double> Samples(const Bench& b) {
  if (!b.real_ns.empty()) return b.real_ns;
  return {b.MedianNs()};
}

}  // namespace

SpeedupResult ComputeSpeedup(const MergedRuns& runs) {
  struct Group {
    std::vector<const Bench*> cpu, gpu;
  };
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  for (const Bench& b : runs.benches) {
    if (!b.parsed || !b.measured() || !(b.MedianNs() > 0)) continue;
    std::string key = PairKey(*b.parsed);
    auto [it, inserted] = groups.emplace(key, Group());
    if (inserted) order.push_back(key);
    (b.parsed->device == "cpu" ? it->second.cpu : it->second.gpu).push_back(&b);
  }
  std::vector<SpeedupRow> rows;
  for (const auto& key : order) {
    const Group& g = groups[key];
    if (g.cpu.empty() || g.gpu.empty()) continue;
    auto make = [&](const Bench* c, const Bench* gp, bool best) {
      SpeedupRow r;
      const BenchName& n = *c->parsed;
      r.family = n.family;
      r.pair_key = key;
      r.workload = n.workload;
      r.network = !c->network.empty() ? c->network : gp->network;
      r.dt = n.Get(key::kDType);
      r.bs = n.Get(key::kBatch);
      r.config = ConfigKeys(n);
      r.cpu_backend = c->parsed->backend;
      r.gpu_backend = gp->parsed->backend;
      r.best = best;
      r.cpu_ns = c->MedianNs();
      r.gpu_ns = gp->MedianNs();
      r.doubtful = c->verification.doubtful() || gp->verification.doubtful();
      r.speedup = r.cpu_ns / r.gpu_ns;
      double count = c->Counter(schema::kCount);
      r.count = std::isfinite(count) && count > 0 ? count : 0;
      if (c->real_ns.size() >= 2 && gp->real_ns.size() >= 2) {
        RatioInterval ri = RatioOfSamples(Samples(*c), Samples(*gp));
        r.has_interval = ri.has_interval;
        r.lo = ri.lo;
        r.hi = ri.hi;
      }
      return r;
    };
    for (const Bench* c : g.cpu)
      for (const Bench* gp : g.gpu) rows.push_back(make(c, gp, false));
    if (g.cpu.size() > 1 || g.gpu.size() > 1) {
      auto by_time = [](const Bench* a, const Bench* b) { return a->MedianNs() < b->MedianNs(); };
      rows.push_back(make(*std::min_element(g.cpu.begin(), g.cpu.end(), by_time),
                          *std::min_element(g.gpu.begin(), g.gpu.end(), by_time), true));
    }
  }
  SpeedupResult out;
  out.rows = std::move(rows);
  // Network sums over each pair key's best row (the only one when there is no choice). Only the
  // network field of the results decides: a workload without one is never summed into one.
  std::map<std::string, const SpeedupRow*> best;
  std::vector<std::string> best_order;
  for (const SpeedupRow& r : out.rows) {
    if (!best.count(r.pair_key)) best_order.push_back(r.pair_key);
    if (r.best || !best.count(r.pair_key)) best[r.pair_key] = &r;
  }
  std::map<std::string, size_t> index;
  for (const auto& k : best_order) {
    const SpeedupRow* r = best[k];
    // A data-loading pipeline names the dataset it reads as its network, and collectives are no
    // layers: neither adds up into a network.
    if (r->network.empty() || r->family == "dataload" || r->family == kCommFamily) continue;
    double weight = r->count > 0 ? r->count : 1;
    std::string key = r->family + "|" + r->network + "|" + r->dt + "|" + r->bs + "|" + r->config;
    auto [it, inserted] = index.emplace(key, out.networks.size());
    if (inserted) out.networks.push_back({r->family, r->network, r->dt, r->bs, r->config});
    NetworkRow& n = out.networks[it->second];
    n.layers += 1;
    n.doubtful = n.doubtful || r->doubtful;
    n.cpu_ns += weight * r->cpu_ns;
    n.gpu_ns += weight * r->gpu_ns;
  }
  for (NetworkRow& n : out.networks) n.speedup = n.cpu_ns / n.gpu_ns;
  return out;
}

std::vector<SpeedupRow> SpeedupRows(const MergedRuns& runs) { return ComputeSpeedup(runs).rows; }

std::vector<Section> SpeedupSections(const SpeedupResult& speedup) {
  const std::vector<SpeedupRow>& rows = speedup.rows;
  std::vector<Section> out;
  if (rows.empty()) {
    Section s;
    s.title = "CPU vs GPU speedups";
    s.notes.push_back(
        "No CPU/GPU pairs: speedups need results whose names differ only in <device>/<backend>.");
    out.push_back(std::move(s));
    return out;
  }
  std::vector<std::string> families;
  std::map<std::string, std::vector<const SpeedupRow*>> by_family;
  for (const auto& r : rows) {
    if (!by_family.count(r.family)) families.push_back(r.family);
    by_family[r.family].push_back(&r);
  }
  for (const auto& fam : families) {
    Section s;
    s.title = "CPU vs GPU speedups: " + fam;
    s.notes.push_back(
        "Speedup = CPU median time / GPU median time; \"best\" pairs the fastest CPU backend with "
        "the fastest GPU backend. The 95% interval (with repetitions) is the Hodges-Lehmann ratio "
        "interval.");
    Table t;
    // Each family's rows in its own word: GEMM shapes, conv layers, data-loading pipelines.
    std::string item = fam == "gemm"       ? "shape"
                       : fam == "conv"     ? "layer"
                       : fam == "dataload" ? "pipeline"
                       : fam == "infer"    ? "model"
                                           : "workload";
    t.columns = {{item, "workload"},          {"dt", "dt"},           {"bs", "bs"},
                 {"config", "config"},        {"CPU", "cpu_backend"}, {"GPU", "gpu_backend"},
                 {"CPU time", "cpu_ns"},      {"GPU time", "gpu_ns"}, {"speedup", "speedup"},
                 {"95% interval", "interval"}};
    Chart chart;
    chart.kind = Chart::Kind::kBars;
    chart.title = fam + ": GPU speedup over CPU (best backends, x)";
    chart.x_label = "speedup (CPU time / GPU time)";
    chart.bar_reference = 1;
    double lo = INFINITY, hi = 0;
    bool doubtful = false;
    // Per pair key the best row (or the only one) goes into the chart.
    std::map<std::string, const SpeedupRow*> chart_rows;
    std::vector<std::string> chart_order;
    for (const SpeedupRow* r : by_family[fam]) {
      std::string interval =
          r->has_interval ? Prose({"[", Cell::Number(r->lo, 3), ", ", Cell::Number(r->hi, 3), "]"})
                          : "-";
      t.rows.push_back({Cell(r->workload), Cell(r->dt.empty() ? "-" : r->dt),
                        r->bs.empty() ? Cell("-") : Cell(r->bs, std::atof(r->bs.c_str())),
                        Cell(r->config.empty() ? "-" : r->config),
                        Cell(r->best ? "best: " + r->cpu_backend : r->cpu_backend),
                        Cell(r->best ? "best: " + r->gpu_backend : r->gpu_backend),
                        Cell::Time(r->cpu_ns), Cell::Time(r->gpu_ns),
                        SpeedupCell(r->speedup, r->doubtful), Cell(interval)});
      doubtful = doubtful || r->doubtful;
      if (!chart_rows.count(r->pair_key)) chart_order.push_back(r->pair_key);
      if (r->best || !chart_rows.count(r->pair_key)) chart_rows[r->pair_key] = r;
    }
    for (const auto& k : chart_order) {
      const SpeedupRow* r = chart_rows[k];
      std::string label = k.substr(k.find('/') + 1);
      chart.bars.emplace_back(label, r->speedup);
      chart.bar_dtypes.push_back(r->dt);
      lo = std::min(lo, r->speedup);
      hi = std::max(hi, r->speedup);
    }
    chart.log_x = lo > 0 && (hi / lo > 20 || lo < 1);
    s.tables.push_back(std::move(t));
    s.charts.push_back(std::move(chart));
    Table nt;
    nt.title = "Networks: layers weighted by their repeat count (best backends)";
    nt.columns = {{"network", "network"}, {"dt", "dt"},          {"bs", "bs"},
                  {"config", "config"},   {"layers", "layers"},  {"CPU time", "cpu_ns"},
                  {"GPU time", "gpu_ns"}, {"speedup", "speedup"}};
    for (const NetworkRow& n : speedup.networks) {
      if (n.family != fam) continue;
      nt.rows.push_back({Cell(n.network), Cell(n.dt.empty() ? "-" : n.dt),
                         n.bs.empty() ? Cell("-") : Cell(n.bs, std::atof(n.bs.c_str())),
                         Cell(n.config.empty() ? "-" : n.config),
                         Cell(std::to_string(n.layers), n.layers), Cell::Time(n.cpu_ns),
                         Cell::Time(n.gpu_ns), SpeedupCell(n.speedup, n.doubtful)});
    }
    if (doubtful)
      s.notes.push_back(
          "⚠: the CPU or the GPU result was not verified or was mistrusted (see the summary).");
    if (!nt.rows.empty()) {
      s.tables.push_back(std::move(nt));
    } else {
      if (fam != "dataload")
        s.notes.push_back(
            "No network sums: no result of this family names its network (the workload files "
            "say which network a layer belongs to; a name is never parsed for it).");
    }
    out.push_back(std::move(s));
  }
  return out;
}

Document SpeedupDocument(const MergedRuns& runs, const std::vector<std::string>& inputs) {
  Document d;
  d.title = "dlbench CPU vs GPU speedups";
  d.notes.push_back(InputsNote(inputs));
  d.sections = SpeedupSections(ComputeSpeedup(runs));
  return d;
}

}  // namespace dlb::report
