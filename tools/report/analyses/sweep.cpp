// Batch-size sweeps (groups by dlb::SweepKey) with the fit of the time per sample, and
// worker-thread sweeps.
#include "tools/report/analyses/sweep.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/gpu_scaling.h"
#include "tools/report/analyses/stats.h"

namespace dlb::report {

std::vector<SweepCurve> SweepCurves(const MergedRuns& runs) {
  std::vector<std::string> order;
  std::map<std::string, SweepCurve> curves;
  for (const Bench& b : runs.benches) {
    if (!b.parsed || !b.measured()) continue;
    std::string bs = b.parsed->Get(key::kBatch);
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
         Cell::Count(c.best_bs), Cell::Rate(c.best_throughput),
         c.fit_ok ? Cell::Number(c.alpha, 3) : Cell("-"),
         c.fit_ok ? Cell::Time(c.t_min) : Cell("-"), c.fit_ok ? Cell::Number(c.c, 4) : Cell("-"),
         c.fit_ok ? Cell::Number(c.r2, 4) : Cell("-")});
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
        t.rows.push_back({Cell(c->curve), Cell::Count(p.bs), Cell::Time(p.time_ns),
                          Cell::Time(p.per_sample_ns), Cell::Rate(p.throughput),
                          std::isfinite(f) ? Cell::Time(f) : Cell("-")});
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
    tp.log_y = WideY(tp);
    s.charts.push_back(std::move(tp));
    s.charts.push_back(std::move(ts));
    s.tables.push_back(std::move(t));
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<WorkerCurve> WorkerCurves(const MergedRuns& runs) {
  std::vector<std::string> order;
  std::map<std::string, WorkerCurve> curves;
  for (const Bench& b : runs.benches) {
    if (!b.parsed || !b.measured()) continue;
    const double w = std::atof(b.parsed->Get(key::kWorkers).c_str());
    const double t = b.MedianNs();
    if (!(w > 0) || !(t > 0)) continue;
    std::string key = b.parsed->family + "/" + b.parsed->workload;
    for (const auto& [k, v] : b.parsed->keys)
      if (k != key::kWorkers) key += "/" + k + ":" + v;
    const std::string curve = b.parsed->family + "/" + b.parsed->device + "/" + b.parsed->backend +
                              key.substr(key.find('/'));
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
    if (!(thr > 0)) thr = std::atof(b.parsed->Get(key::kBatch).c_str()) / t * 1e9;
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
      p.efficiency =
          base.throughput > 0 ? (p.throughput / base.throughput) / (p.workers / base.workers) : 0;
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
                         Cell::Count(c.best_workers), Cell::Rate(c.best_throughput),
                         Cell::Number(c.points.back().efficiency, 3)});
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
        t.rows.push_back({Cell(c->curve), Cell::Count(p.workers), Cell::Time(p.time_ns),
                          Cell::Rate(p.throughput), Cell::Number(p.efficiency, 3)});
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
  d.notes.push_back(InputsNote(inputs));
  if (axis == key::kGpus) {
    d.title = "dlbench GPU scaling";
    d.sections = GpuScalingSections(ComputeGpuScaling(runs));
  } else if (axis == key::kWorkers) {
    d.title = "dlbench worker sweeps";
    d.sections = WorkerSections(WorkerCurves(runs));
  } else {
    d.title = "dlbench batch-size sweeps";
    d.sections = SweepSections(SweepCurves(runs));
  }
  return d;
}

}  // namespace dlb::report
