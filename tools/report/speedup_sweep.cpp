// CPU-vs-GPU speedups (pairs by dlb::PairKey) and batch-size sweeps (groups by dlb::SweepKey).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses.h"
#include "tools/report/stats.h"

namespace dlb::report {

namespace {

Cell SpeedupCell(double x, bool doubtful) {
  if (!doubtful) return Cell(FormatNumber(x, 3) + "x", x);
  return Cell("⚠ " + FormatNumber(x, 3) + "x", x).With(Tone::kWarn);
}

std::string Join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// Keys other than bs and dt, "fmt:nhwc/pass:fwd".
std::string OtherKeys(const BenchName& n) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : n.keys)
    if (k != name_key::kBs && k != name_key::kDt) parts.push_back(k + ":" + v);
  return Join(parts, "/");
}

// Repetitions when there are some, else the single center value.
std::vector<double> Samples(const Bench& b) {
  if (!b.real_ns.empty()) return b.real_ns;
  return {b.MedianNs()};
}

std::string Inputs(const std::vector<std::string>& inputs) {
  return "Inputs: " + Join(inputs, ", ");
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
      r.dt = n.Get(name_key::kDt);
      r.bs = n.Get(name_key::kBs);
      r.config = OtherKeys(n);
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
    if (r->network.empty()) continue;
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
    t.columns = {{"workload", "workload"},    {"dt", "dt"},           {"bs", "bs"},
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
          r->has_interval ? "[" + FormatNumber(r->lo, 3) + ", " + FormatNumber(r->hi, 3) + "]"
                          : "-";
      t.rows.push_back({Cell(r->workload), Cell(r->dt.empty() ? "-" : r->dt),
                        r->bs.empty() ? Cell("-") : Cell(r->bs, std::atof(r->bs.c_str())),
                        Cell(r->config.empty() ? "-" : r->config),
                        Cell(r->best ? "best: " + r->cpu_backend : r->cpu_backend),
                        Cell(r->best ? "best: " + r->gpu_backend : r->gpu_backend),
                        Cell(FormatTime(r->cpu_ns), r->cpu_ns),
                        Cell(FormatTime(r->gpu_ns), r->gpu_ns),
                        SpeedupCell(r->speedup, r->doubtful), Cell(interval)});
      doubtful = doubtful || r->doubtful;
      if (!chart_rows.count(r->pair_key)) chart_order.push_back(r->pair_key);
      if (r->best || !chart_rows.count(r->pair_key)) chart_rows[r->pair_key] = r;
    }
    for (const auto& k : chart_order) {
      const SpeedupRow* r = chart_rows[k];
      std::string label = k.substr(k.find('/') + 1);
      chart.bars.emplace_back(label, r->speedup);
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
                         Cell(std::to_string(n.layers), n.layers),
                         Cell(FormatTime(n.cpu_ns), n.cpu_ns), Cell(FormatTime(n.gpu_ns), n.gpu_ns),
                         SpeedupCell(n.speedup, n.doubtful)});
    }
    if (doubtful)
      s.notes.push_back(
          "⚠: the CPU or the GPU result was not verified or was mistrusted (see the summary).");
    if (!nt.rows.empty()) {
      s.tables.push_back(std::move(nt));
    } else {
      s.notes.push_back(
          "No network sums: no result of this family names its network (the workload files "
          "say which network a layer belongs to; a name is never parsed for it).");
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<SweepCurve> SweepCurves(const MergedRuns& runs) {
  std::vector<std::string> order;
  std::map<std::string, SweepCurve> curves;
  for (const Bench& b : runs.benches) {
    if (!b.parsed || !b.measured()) continue;
    std::string bs = b.parsed->Get(name_key::kBs);
    double bsv = std::atof(bs.c_str());
    double t = b.MedianNs();
    if (!(bsv > 0) || !(t > 0)) continue;
    std::string sk = SweepKey(*b.parsed);
    std::string curve = b.parsed->family + "/" + b.parsed->device + "/" + b.parsed->backend +
                        sk.substr(sk.find('/'));
    auto [it, inserted] = curves.emplace(curve, SweepCurve());
    SweepCurve& c = it->second;
    if (inserted) {
      order.push_back(curve);
      c.sweep_key = sk;
      c.curve = curve;
      c.family = b.parsed->family;
      c.device = b.parsed->device;
      c.backend = b.parsed->backend;
      c.network = b.network;
    }
    c.points.push_back({bsv, t, t / bsv, bsv / t * 1e9});
  }
  std::vector<SweepCurve> out;
  for (const auto& k : order) {
    SweepCurve c = std::move(curves[k]);
    std::sort(c.points.begin(), c.points.end(),
              [](const auto& a, const auto& b) { return a.bs < b.bs; });
    if (c.points.size() < 2) continue;
    for (const auto& p : c.points)
      if (p.throughput > c.best_throughput) {
        c.best_throughput = p.throughput;
        c.best_bs = p.bs;
      }
    std::vector<double> bs, ts;
    for (const auto& p : c.points) {
      bs.push_back(p.bs);
      ts.push_back(p.per_sample_ns);
    }
    BatchFit f = FitBatchCurve(bs, ts);
    c.fit_ok = f.ok;
    c.c = f.c;
    c.alpha = f.alpha;
    c.t_min = f.t_min;
    c.r2 = f.r2;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Section> SweepSections(const std::vector<SweepCurve>& all, size_t min_points) {
  std::vector<Section> out;
  Section head;
  head.title = "Batch-size sweeps";
  std::vector<SweepCurve> curves;
  for (const SweepCurve& c : all)
    if (c.points.size() >= min_points) curves.push_back(c);
  if (curves.size() < all.size())
    head.notes.push_back(std::to_string(all.size() - curves.size()) + " curve(s) with fewer than " +
                         std::to_string(min_points) +
                         " batch sizes left out here (`dlbench-report sweep` lists them).");
  if (curves.empty()) {
    if (all.empty())
      head.notes.push_back(
          "No sweeps: a sweep needs one workload measured at two or more bs values.");
    out.push_back(std::move(head));
    return out;
  }
  head.notes.push_back(
      "Per workload, device and backend: time per batch T, time per sample T/b, throughput b/T, "
      "and the least-squares fit of the time per sample t(b) = c/b^α + t_min (three or more "
      "batch sizes), with c >= 0, t_min >= 0 and α in [0.05, 3]; α at a bound and a low R² mean "
      "the "
      "time per sample does not follow that shape (e.g. flat on a CPU).");
  Table fits;
  fits.columns = {{"curve", "curve"},
                  {"batch sizes", "points"},
                  {"best bs", "best_bs"},
                  {"best throughput /s", "best_throughput"},
                  {"α", "alpha"},
                  {"t_min per sample", "t_min_ns"},
                  {"c", "c"},
                  {"R²", "r2"}};
  for (const auto& c : curves) {
    fits.rows.push_back(
        {Cell(c.curve), Cell(std::to_string(c.points.size()), static_cast<double>(c.points.size())),
         Cell(FormatNumber(c.best_bs, 6), c.best_bs),
         Cell(FormatRate(c.best_throughput), c.best_throughput),
         c.fit_ok ? Cell(FormatNumber(c.alpha, 3), c.alpha) : Cell("-"),
         c.fit_ok ? Cell(FormatTime(c.t_min), c.t_min) : Cell("-"),
         c.fit_ok ? Cell(FormatNumber(c.c, 4), c.c) : Cell("-"),
         c.fit_ok ? Cell(FormatNumber(c.r2, 4), c.r2) : Cell("-")});
  }
  head.tables.push_back(std::move(fits));
  out.push_back(std::move(head));

  // One section per sweep key: every device/backend on one chart.
  std::vector<std::string> keys;
  std::map<std::string, std::vector<const SweepCurve*>> by_key;
  for (const auto& c : curves) {
    if (!by_key.count(c.sweep_key)) keys.push_back(c.sweep_key);
    by_key[c.sweep_key].push_back(&c);
  }
  for (const auto& k : keys) {
    Section s;
    s.title = "Sweep: " + k;
    Chart tp, ts;
    tp.title = k + ": throughput";
    tp.x_label = "batch size";
    tp.y_label = "samples/s";
    tp.log_x = true;
    ts.title = k + ": time per sample, with fit";
    ts.x_label = "batch size";
    ts.y_label = "time per sample (ns)";
    ts.log_x = true;
    Table t;
    t.columns = {{"curve", "curve"},
                 {"bs", "bs"},
                 {"time per batch", "time_ns"},
                 {"time per sample", "per_sample_ns"},
                 {"throughput /s", "throughput"},
                 {"fit", "fit_ns"}};
    double lo = INFINITY, hi = 0;
    int color = 0;
    for (const SweepCurve* c : by_key[k]) {
      std::string name = c->device + "/" + c->backend;
      Series thr{name, {}, true, true, color}, per{name, {}, true, true, color},
          fit{name + " fit", {}, true, false, color};
      ++color;
      for (const auto& p : c->points) {
        thr.points.emplace_back(p.bs, p.throughput);
        per.points.emplace_back(p.bs, p.per_sample_ns);
        lo = std::min(lo, p.per_sample_ns);
        hi = std::max(hi, p.per_sample_ns);
        double f = c->fit_ok ? c->c / std::pow(p.bs, c->alpha) + c->t_min : NAN;
        t.rows.push_back({Cell(c->curve), Cell(FormatNumber(p.bs, 6), p.bs),
                          Cell(FormatTime(p.time_ns), p.time_ns),
                          Cell(FormatTime(p.per_sample_ns), p.per_sample_ns),
                          Cell(FormatRate(p.throughput), p.throughput),
                          std::isfinite(f) ? Cell(FormatTime(f), f) : Cell("-")});
      }
      if (c->fit_ok) {
        double b0 = c->points.front().bs, b1 = c->points.back().bs;
        for (int i = 0; i <= 40; ++i) {
          double b = b0 * std::pow(b1 / b0, i / 40.0);
          fit.points.emplace_back(b, c->c / std::pow(b, c->alpha) + c->t_min);
        }
      }
      tp.series.push_back(std::move(thr));
      ts.series.push_back(std::move(per));
      if (c->fit_ok) ts.series.push_back(std::move(fit));
    }
    tp.log_y = ts.log_y = lo > 0 && hi / lo > 20;
    double tlo = INFINITY, thi = 0;
    for (const auto& se : tp.series)
      for (auto [x, y] : se.points) {
        tlo = std::min(tlo, y);
        thi = std::max(thi, y);
      }
    tp.log_y = tlo > 0 && thi / tlo > 20;
    s.charts.push_back(std::move(tp));
    s.charts.push_back(std::move(ts));
    s.tables.push_back(std::move(t));
    out.push_back(std::move(s));
  }
  return out;
}

Document SpeedupDocument(const MergedRuns& runs, const std::vector<std::string>& inputs) {
  Document d;
  d.title = "dlbench CPU vs GPU speedups";
  d.notes.push_back(Inputs(inputs));
  d.sections = SpeedupSections(ComputeSpeedup(runs));
  return d;
}

std::vector<WorkerCurve> WorkerCurves(const MergedRuns& runs) {
  std::vector<std::string> order;
  std::map<std::string, WorkerCurve> curves;
  for (const Bench& b : runs.benches) {
    if (!b.parsed || !b.measured()) continue;
    const double w = std::atof(b.parsed->Get(name_key::kWorkers).c_str());
    const double t = b.MedianNs();
    if (!(w > 0) || !(t > 0)) continue;
    std::string key = b.parsed->family + "/" + b.parsed->workload;
    for (const auto& [k, v] : b.parsed->keys)
      if (k != name_key::kWorkers) key += "/" + k + ":" + v;
    const std::string curve = b.parsed->family + "/" + b.parsed->device + "/" +
                              b.parsed->backend + key.substr(key.find('/'));
    auto [it, inserted] = curves.emplace(curve, WorkerCurve());
    WorkerCurve& c = it->second;
    if (inserted) {
      order.push_back(curve);
      c.key = key;
      c.curve = curve;
      c.device = b.parsed->device;
      c.backend = b.parsed->backend;
    }
    // items/s as measured (a skipped image makes a batch short); else the batch over the time.
    double thr = b.Counter(schema::kItemsPerS);
    if (!(thr > 0)) thr = std::atof(b.parsed->Get(name_key::kBs).c_str()) / t * 1e9;
    c.points.push_back({w, t, thr, 0});
  }
  std::vector<WorkerCurve> out;
  for (const auto& k : order) {
    WorkerCurve c = std::move(curves[k]);
    std::sort(c.points.begin(), c.points.end(),
              [](const auto& a, const auto& b) { return a.workers < b.workers; });
    if (c.points.size() < 2) continue;
    const WorkerPoint base = c.points.front();
    for (auto& p : c.points) {
      p.efficiency = base.throughput > 0 ? (p.throughput / base.throughput) /
                                               (p.workers / base.workers)
                                         : 0;
      if (p.throughput > c.best_throughput) {
        c.best_throughput = p.throughput;
        c.best_workers = p.workers;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Section> WorkerSections(const std::vector<WorkerCurve>& curves) {
  std::vector<Section> out;
  Section head;
  head.title = "Worker sweeps";
  if (curves.empty()) {
    head.notes.push_back(
        "No worker sweeps: a sweep needs one case measured at two or more workers values.");
    out.push_back(std::move(head));
    return out;
  }
  head.notes.push_back(
      "Per case, throughput at each worker count and the scaling efficiency against the fewest "
      "workers measured, (thr(w) / thr(w0)) / (w / w0): 1 is linear scaling.");
  Table best;
  best.columns = {{"curve", "curve"},
                  {"workers measured", "points"},
                  {"best workers", "best_workers"},
                  {"best throughput /s", "best_throughput"},
                  {"efficiency at the most workers", "efficiency"}};
  for (const auto& c : curves)
    best.rows.push_back({Cell(c.curve),
                         Cell(std::to_string(c.points.size()), double(c.points.size())),
                         Cell(FormatNumber(c.best_workers, 6), c.best_workers),
                         Cell(FormatRate(c.best_throughput), c.best_throughput),
                         Cell(FormatNumber(c.points.back().efficiency, 3),
                              c.points.back().efficiency)});
  head.tables.push_back(std::move(best));
  out.push_back(std::move(head));
  std::vector<std::string> keys;
  std::map<std::string, std::vector<const WorkerCurve*>> by_key;
  for (const auto& c : curves) {
    if (!by_key.count(c.key)) keys.push_back(c.key);
    by_key[c.key].push_back(&c);
  }
  for (const auto& k : keys) {
    Section s;
    s.title = "Workers: " + k;
    Chart tp;
    tp.title = k + ": throughput over workers";
    tp.x_label = "workers";
    tp.y_label = "samples/s";
    tp.log_x = true;
    Table t;
    t.columns = {{"curve", "curve"},
                 {"workers", "workers"},
                 {"time per batch", "time_ns"},
                 {"throughput /s", "throughput"},
                 {"efficiency", "efficiency"}};
    int color = 0;
    for (const WorkerCurve* c : by_key[k]) {
      Series thr{c->device + "/" + c->backend, {}, true, true, color++};
      for (const auto& p : c->points) {
        thr.points.emplace_back(p.workers, p.throughput);
        t.rows.push_back({Cell(c->curve), Cell(FormatNumber(p.workers, 6), p.workers),
                          Cell(FormatTime(p.time_ns), p.time_ns),
                          Cell(FormatRate(p.throughput), p.throughput),
                          Cell(FormatNumber(p.efficiency, 3), p.efficiency)});
      }
      tp.series.push_back(std::move(thr));
    }
    s.charts.push_back(std::move(tp));
    s.tables.push_back(std::move(t));
    out.push_back(std::move(s));
  }
  return out;
}

Document SweepDocument(const MergedRuns& runs, const std::vector<std::string>& inputs,
                       const std::string& axis) {
  Document d;
  d.notes.push_back(Inputs(inputs));
  if (axis == "gpus") {
    d.title = "dlbench GPU scaling";
    d.sections = GpuScalingSections(ComputeGpuScaling(runs));
  } else if (axis == "workers") {
    d.title = "dlbench worker sweeps";
    d.sections = WorkerSections(WorkerCurves(runs));
  } else {
    d.title = "dlbench batch-size sweeps";
    d.sections = SweepSections(SweepCurves(runs));
  }
  return d;
}

}  // namespace dlb::report
