// Scaling over the GPU count (a name key "gpus"): multi-GPU training steps (throughput, scaling
// efficiency, exposed communication) and collectives (busbw over size, one series per count).
#include "tools/report/analyses/gpu_scaling.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "fixtures/schema/families.h"
#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/compare.h"

namespace dlb::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Positive(double v) { return std::isfinite(v) && v > 0 ? v : kNaN; }
double NonNegative(double v) { return std::isfinite(v) && v >= 0 ? v : kNaN; }

const char* SourceName(EfficiencySource s) {
  switch (s) {
    case EfficiencySource::kOneGpuPoint:
      return "gpus:1 point";
    case EfficiencySource::kOneGpuStep:
      return "one-GPU step";
    case EfficiencySource::kCounter:
      return "case's counter";
    case EfficiencySource::kNone:
      return "-";
  }
  return "-";
}

Cell EfficiencyCell(double e, bool doubtful) {
  if (!std::isfinite(e)) return Cell("-");
  if (!doubtful) return Cell::Number(e, 3);
  return Cell::Number(e, 3).Doubtful().With(Tone::kWarn);
}

std::string Gpus(double n) { return Prose({Cell::Count(n, n == 1 ? "GPU" : "GPUs")}); }

// A column's key per GPU count: "efficiency_4".
std::string PerGpus(const std::string& stem, double n) { return stem + Prose({Cell::Count(n)}); }

// Sections merged into one: each table titled by its section, charts after.
void Append(Section* into, Section&& from) {
  for (std::string& n : from.notes) into->notes.push_back(std::move(n));
  for (Table& t : from.tables) {
    if (t.title.empty()) t.title = from.title;
    into->tables.push_back(std::move(t));
  }
  for (Chart& c : from.charts) into->charts.push_back(std::move(c));
}

// A step's curve: the name without the gpus key (and without the time suffix).
std::string CurveKey(const BenchName& n) {
  const std::string config = KeysExcept(n, {key::kBatch, key::kGpus});
  const std::string bs = n.Get(key::kBatch);
  return n.family + "/" + n.device + "/" + n.backend + "/" + n.workload +
         (bs.empty() ? "" : "/" + std::string(key::kBatch) + ":" + bs) +
         (config.empty() ? "" : "/" + config);
}

// A step's point at `gpus` GPUs (bs: per GPU, 0 when unknown).
GpuPoint StepPoint(const Bench& b, double gpus, double t, double bs) {
  GpuPoint p;
  p.name = b.name;
  p.gpus = gpus;
  p.time_ns = t;
  // items/s over all GPUs as measured; else every GPU's batch over the step.
  p.throughput = Positive(b.Counter(schema::kItemsPerS));
  if (!std::isfinite(p.throughput) && bs > 0) p.throughput = bs * gpus / t * 1e9;
  p.per_gpu = Positive(b.Counter(schema::kPerGpuItemsPerS));
  if (!std::isfinite(p.per_gpu)) p.per_gpu = p.throughput / gpus;
  p.efficiency = Positive(b.Counter(schema::kScalingEfficiency));
  p.source = std::isfinite(p.efficiency) ? EfficiencySource::kCounter : EfficiencySource::kNone;
  p.single_gpu = Positive(b.Counter(schema::kSingleGpuItemsPerS));
  p.exposed_comm_s = NonNegative(b.Counter(schema::kExposedCommS));
  p.doubtful = b.verification.doubtful();
  return p;
}

}  // namespace

bool Collectives(std::string_view family) {
  return families::Of(family).rate == families::Rate::kBusBandwidth;
}

GpuScaling ComputeGpuScaling(const MergedRuns& runs) {
  GpuScaling out;
  std::vector<std::string> step_order, comm_order;
  std::map<std::string, GpuCurve> steps;
  std::map<std::string, CollectiveCurve> comms;
  // Steps without a gpus key (any family but comm), by curve: the first measured wins.
  std::map<std::string, const Bench*> one_gpu_steps;
  for (const Bench& b : runs.benches) {
    if (!b.parsed || !b.measured()) continue;
    const BenchName& n = *b.parsed;
    const double t = b.MedianNs();
    if (!(t > 0)) continue;
    if (n.Get(key::kGpus).empty()) {
      if (!Collectives(n.family)) one_gpu_steps.emplace(CurveKey(n), &b);
      continue;
    }
    const double gpus = Positive(std::atof(n.Get(key::kGpus).c_str()));
    if (!std::isfinite(gpus)) continue;
    if (Collectives(n.family)) {
      const std::string head = n.family + "/" + n.device + "/" + n.backend + "/";
      // <collective>.<bytes>: the size is the workload's last part.
      const size_t dot = n.workload.rfind('.');
      if (dot == std::string::npos) continue;
      const double bytes = Positive(std::atof(n.workload.c_str() + dot + 1));
      if (!std::isfinite(bytes)) continue;
      const std::string collective = n.workload.substr(0, dot);
      const std::string config = KeysExcept(n, {key::kGpus});
      const std::string key = head + collective + (config.empty() ? "" : "/" + config);
      auto [it, inserted] = comms.emplace(key, CollectiveCurve());
      CollectiveCurve& c = it->second;
      if (inserted) {
        comm_order.push_back(key);
        c.key = key;
        c.collective = collective;
        c.config = config;
      }
      auto p = std::find_if(c.points.begin(), c.points.end(),
                            [&](const CollectivePoint& q) { return q.bytes == bytes; });
      if (p == c.points.end())
        p = c.points.insert(c.points.end(), CollectivePoint{bytes, {}, {}, {}});
      p->busbw[gpus] = NonNegative(b.Counter(schema::kBusBw));
      p->algbw[gpus] = NonNegative(b.Counter(schema::kAlgBw));
      p->doubtful[gpus] = b.verification.doubtful();
      if (std::find(c.gpus.begin(), c.gpus.end(), gpus) == c.gpus.end()) c.gpus.push_back(gpus);
      continue;
    }
    const std::string curve = CurveKey(n);
    const std::string bs = n.Get(key::kBatch);
    auto [it, inserted] = steps.emplace(curve, GpuCurve());
    GpuCurve& c = it->second;
    if (inserted) {
      step_order.push_back(curve);
      c.curve = curve;
      c.family = n.family;
      c.device = n.device;
      c.backend = n.backend;
      c.model = !b.network.empty() ? b.network : n.workload;
      c.config = KeysExcept(n, {key::kBatch, key::kGpus});
      c.bs = std::isfinite(Positive(std::atof(bs.c_str()))) ? std::atof(bs.c_str()) : 0;
    }
    c.points.push_back(StepPoint(b, gpus, t, c.bs));
  }
  for (const auto& k : step_order) {
    GpuCurve c = std::move(steps[k]);
    std::sort(c.points.begin(), c.points.end(),
              [](const GpuPoint& a, const GpuPoint& b) { return a.gpus < b.gpus; });
    // No gpus:1 point of its own: the one-GPU step of the same name without a gpus key is.
    auto single = one_gpu_steps.find(k);
    if (c.points.front().gpus != 1 && single != one_gpu_steps.end()) {
      const Bench& b = *single->second;
      GpuPoint p = StepPoint(b, 1, b.MedianNs(), c.bs);
      if (p.throughput > 0) {
        c.points.insert(c.points.begin(), std::move(p));
        c.one_gpu_step = b.name;
      }
    }
    const GpuPoint& first = c.points.front();
    c.one_gpu = first.gpus == 1 && first.throughput > 0;
    if (c.one_gpu) {
      const double one = first.throughput;
      const EfficiencySource from =
          c.one_gpu_step.empty() ? EfficiencySource::kOneGpuPoint : EfficiencySource::kOneGpuStep;
      for (GpuPoint& p : c.points) {
        p.efficiency = p.throughput / p.gpus / one;
        p.source = std::isfinite(p.efficiency) ? from : EfficiencySource::kNone;
      }
    }
    out.steps.push_back(std::move(c));
  }
  for (const auto& k : comm_order) {
    CollectiveCurve c = std::move(comms[k]);
    std::sort(c.gpus.begin(), c.gpus.end());
    std::sort(c.points.begin(), c.points.end(),
              [](const CollectivePoint& a, const CollectivePoint& b) { return a.bytes < b.bytes; });
    out.collectives.push_back(std::move(c));
  }
  return out;
}

namespace {

// The first section: what the figures mean, and the efficiency of every step curve at each count.
void AddStepSummary(const GpuScaling& scaling, Section* head) {
  std::set<double> counts;
  for (const GpuCurve& c : scaling.steps)
    for (const GpuPoint& p : c.points) counts.insert(p.gpus);
  if (!scaling.steps.empty()) {
    head->notes.push_back(
        "Per step (the name without its gpus key; points may come from several files): items/s "
        "over all GPUs, and the scaling efficiency at n GPUs: (thr(n) / n) / thr(1) where the "
        "curve has a 1-GPU point (its own gpus:1, else the one-GPU step: the same name without "
        "a gpus key), else the case's own scaling_efficiency (measured in its process against "
        "the one-GPU step at the same per-GPU batch); 1 is linear scaling. Exposed "
        "communication: the seconds per step that compute does not hide.");
    Table t;
    t.columns = {
        {"model", "model"}, {"backend", "backend"}, {"per-GPU bs", "bs"}, {"config", "config"}};
    for (double n : counts)
      t.columns.push_back({"efficiency at " + Gpus(n), PerGpus("efficiency_", n)});
    t.columns.push_back({"exposed comm per step (most GPUs)", "exposed_comm_ns"});
    t.columns.push_back({"efficiency from", "source"});
    bool doubtful = false;
    for (const GpuCurve& c : scaling.steps) {
      std::vector<Cell> row = {Cell(c.model), Cell(c.device + "/" + c.backend),
                               c.bs > 0 ? Cell::Count(c.bs) : Cell("-"),
                               Cell(c.config.empty() ? "-" : c.config)};
      for (double n : counts) {
        auto p = std::find_if(c.points.begin(), c.points.end(),
                              [&](const GpuPoint& q) { return q.gpus == n; });
        row.push_back(p == c.points.end() ? Cell("") : EfficiencyCell(p->efficiency, p->doubtful));
        if (p != c.points.end()) doubtful = doubtful || p->doubtful;
      }
      const GpuPoint& last = c.points.back();
      row.push_back(Cell::Time(last.exposed_comm_s * 1e9));
      row.emplace_back(SourceName(c.one_gpu ? c.points.front().source : last.source));
      t.rows.push_back(std::move(row));
    }
    if (doubtful)
      head->notes.push_back("⚠: the case was not verified or was mistrusted (see the summary).");
    head->tables.push_back(std::move(t));
  }
  if (!scaling.collectives.empty())
    head->notes.push_back(
        "Collectives: bus bandwidth (nccl-tests' busbw = algbw x 2(n-1)/n for all_reduce, "
        "(n-1)/n for all_gather, reduce_scatter and all_to_all, 1 for broadcast) over the message "
        "size, one column and one series per GPU count, in GB/s (1e9 bytes/s).");
}

// What a step's items/s count: a transformer's (a seq key) sequences, as its items_per_s counter
// does, with its tokens a sequence; every other model's as the report names them (images/s,
// samples/s). The rate's unit, e.g. "sequences/s".
struct StepItems {
  std::string rate = "images/s";
  double tokens_per_item = 0;  // 0: not a transformer
};
StepItems StepItemsOf(const GpuCurve& c) {
  StepItems out;
  const std::optional<BenchName> n = ParseName(c.curve);
  if (!n) return out;
  if (const std::string seq = n->Get(key::kSeq); !seq.empty()) {
    out.rate = "sequences/s";
    out.tokens_per_item = std::atof(seq.c_str());
  } else {
    out.rate = ItemsPerSecond(n->family, n->workload);
  }
  return out;
}

// One step curve: its points (time, throughput, efficiency, exposed communication) and a chart
// of the throughput against linear scaling.
Section StepCurveSection(const GpuCurve& c) {
  Section s;
  s.title = "GPU scaling: " + c.curve;
  if (!c.one_gpu_step.empty())
    s.notes.push_back("The 1-GPU point is the one-GPU step " + c.one_gpu_step +
                      " (no gpus key); the efficiencies are against it.");
  const StepItems items = StepItemsOf(c);
  const std::string& rate = items.rate;
  Table t;
  t.columns = {
      {"gpus", "gpus"},
      {"time per step", "time_ns"},
      {rate + " (all GPUs)", std::string(schema::kItemsPerS)},
      {rate + " per GPU", std::string(schema::kPerGpuItemsPerS)},
      {"efficiency", "efficiency"},
      {"efficiency from", "source"},
      {"one-GPU " + rate + " (measured with it)", std::string(schema::kSingleGpuItemsPerS)},
      {"exposed comm per step", "exposed_comm_ns"},
      {"exposed comm / step", "exposed_comm_share"}};
  if (items.tokens_per_item > 0)
    t.columns.insert(t.columns.begin() + 4,
                     Column{"tokens/s per GPU", std::string(schema::kPerGpuTokensPerS)});
  Chart chart;
  chart.title = c.curve + ": " + rate + " over GPUs";
  chart.x_label = "GPUs";
  chart.y_label = rate + " (all GPUs)";
  chart.log_x = true;
  Series measured{"measured", {}, true, true, 0}, linear{"linear", {}, true, false, 1};
  // Linear scaling from the curve's 1-GPU point, else from the one-GPU step a case measured.
  double one = c.one_gpu ? c.points.front().throughput : kNaN;
  for (const GpuPoint& p : c.points)
    if (!std::isfinite(one) && std::isfinite(p.single_gpu)) one = p.single_gpu;
  for (const GpuPoint& p : c.points) {
    const double comm_ns = p.exposed_comm_s * 1e9;
    std::vector<Cell> row = {Cell::Count(p.gpus),
                             Cell::Time(p.time_ns),
                             Cell::Rate(p.throughput),
                             Cell::Rate(p.per_gpu),
                             EfficiencyCell(p.efficiency, p.doubtful),
                             Cell(SourceName(p.source)),
                             Cell::Rate(p.single_gpu),
                             Cell::Time(comm_ns),
                             Cell::Percent(comm_ns / p.time_ns)};
    if (items.tokens_per_item > 0)
      row.insert(row.begin() + 4, Cell::Rate(p.per_gpu * items.tokens_per_item));
    t.rows.push_back(std::move(row));
    if (std::isfinite(p.throughput)) measured.points.emplace_back(p.gpus, p.throughput);
    if (std::isfinite(one)) linear.points.emplace_back(p.gpus, one * p.gpus);
  }
  if (std::isfinite(one) && c.points.front().gpus > 1)
    linear.points.insert(linear.points.begin(), {1.0, one});
  s.tables.push_back(std::move(t));
  chart.series.push_back(std::move(measured));
  if (!linear.points.empty()) chart.series.push_back(std::move(linear));
  s.charts.push_back(std::move(chart));
  return s;
}

// One collective: busbw and algbw over size per GPU count, and a chart of busbw.
Section CollectiveSection(const CollectiveCurve& c) {
  Section s;
  s.title = "Collective: " + c.key;
  Table bus, alg;
  bus.title = c.key + ": busbw (GB/s)";
  alg.title = c.key + ": algbw (GB/s)";
  bus.columns = alg.columns = {{"size", "bytes"}};
  for (double n : c.gpus) {
    bus.columns.push_back({Gpus(n), PerGpus("busbw_gbps_", n)});
    alg.columns.push_back({Gpus(n), PerGpus("algbw_gbps_", n)});
  }
  Chart chart;
  chart.title = c.key + ": busbw over size";
  chart.x_label = "message size (bytes)";
  chart.y_label = "busbw (GB/s)";
  chart.log_x = true;
  std::map<double, Series> series;
  int color = 0;
  for (double n : c.gpus) series[n] = Series{Gpus(n), {}, true, true, color++};
  bool doubtful = false;
  for (const CollectivePoint& p : c.points) {
    std::vector<Cell> brow = {Cell::Bytes(p.bytes)};
    std::vector<Cell> arow = brow;
    for (double n : c.gpus) {
      auto cell = [&](const std::map<double, double>& m) {
        auto it = m.find(n);
        if (it == m.end()) return Cell("");
        const double v = it->second / 1e9;
        if (!std::isfinite(v)) return Cell("-");
        auto d = p.doubtful.find(n);
        if (d == p.doubtful.end() || !d->second) return Cell::Number(v, 4);
        doubtful = true;
        return Cell::Number(v, 4).Doubtful().With(Tone::kWarn);
      };
      brow.push_back(cell(p.busbw));
      arow.push_back(cell(p.algbw));
      auto it = p.busbw.find(n);
      if (it != p.busbw.end() && it->second > 0)
        series[n].points.emplace_back(p.bytes, it->second / 1e9);
    }
    bus.rows.push_back(std::move(brow));
    alg.rows.push_back(std::move(arow));
  }
  if (doubtful)
    s.notes.push_back("⚠: the case was not verified or was mistrusted (see the summary).");
  s.tables.push_back(std::move(bus));
  s.tables.push_back(std::move(alg));
  for (double n : c.gpus)
    if (!series[n].points.empty()) chart.series.push_back(std::move(series[n]));
  if (!chart.series.empty()) s.charts.push_back(std::move(chart));
  return s;
}

}  // namespace

std::vector<Section> GpuScalingSections(const GpuScaling& scaling) {
  std::vector<Section> out;
  Section head;
  head.title = "GPU scaling";
  if (scaling.empty()) {
    head.notes.push_back(
        "No GPU scaling: no measured case's name carries a gpus key (train/.../gpus:<n>, "
        "comm/.../gpus:<n>).");
    out.push_back(std::move(head));
    return out;
  }
  AddStepSummary(scaling, &head);
  out.push_back(std::move(head));
  for (const GpuCurve& c : scaling.steps) out.push_back(StepCurveSection(c));
  for (const CollectiveCurve& c : scaling.collectives) out.push_back(CollectiveSection(c));
  return out;
}

// The full report's part: the summary on the first screen, the curves and collectives collapsed.
std::vector<Section> GpuScalingReportSections(const GpuScaling& scaling) {
  if (scaling.empty()) return {};
  std::vector<Section> all = GpuScalingSections(scaling);
  std::vector<Section> out;
  Section details;
  details.title = "GPU scaling details";
  details.details = true;
  for (size_t i = 1; i < all.size(); ++i) Append(&details, std::move(all[i]));
  if (!scaling.steps.empty()) {
    out.push_back(std::move(all.front()));
  } else {
    Append(&details, std::move(all.front()));
    details.title = "GPU scaling";
  }
  if (!details.tables.empty() || !details.notes.empty()) out.push_back(std::move(details));
  return out;
}

}  // namespace dlb::report
