#include "tools/report/analyses/roofline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/peaks.h"

namespace dlb::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool Positive(double v) { return std::isfinite(v) && v > 0; }

std::string DeviceName(const std::map<std::string, std::string>& ctx, const std::string& device) {
  std::string model =
      ContextValue(ctx, device == "gpu" ? schema::kCtxGpuName : schema::kCtxCpuModel);
  return std::string(device == "gpu" ? "GPU" : "CPU") + (model.empty() ? "" : ": " + model);
}

}  // namespace

RooflineResult ComputeRoofline(const MergedRuns& runs) {
  RooflineResult r;
  for (const Bench& b : runs.benches) {
    if (!b.measured()) continue;
    RooflinePoint p;
    p.intensity = b.Counter(schema::kFlopPerByte);
    p.achieved = b.Counter(schema::kFlopPerS);
    if (!Positive(p.intensity) || !Positive(p.achieved)) continue;
    p.pct = b.Counter(schema::kPctRoofline);
    p.roof = b.roofline ? b.roofline->roof_flop_per_s : kNaN;
    p.compute_peak = b.roofline ? b.roofline->compute_peak_flop_per_s : kNaN;
    p.mem_bw = b.roofline ? b.roofline->mem_bw_bytes_per_s : kNaN;
    // Either figure gives the other; with the peaks alone, the roof is their minimum.
    if (!Positive(p.roof) && Positive(p.compute_peak) && Positive(p.mem_bw))
      p.roof = std::min(p.compute_peak, p.intensity * p.mem_bw);
    if (!Positive(p.roof) && Positive(p.pct)) p.roof = p.achieved / (p.pct / 100);
    if (!Positive(p.roof)) continue;
    if (!std::isfinite(p.pct)) p.pct = p.achieved / p.roof * 100;
    // The GPUs' aggregate against one GPU's roof: read per GPU.
    if (const int gpus = AggregateOverOneGpu(b, schema::kPctRoofline, runs.context); gpus > 1) {
      p.achieved /= gpus;
      p.pct /= gpus;
    }
    p.bound = b.roofline ? b.roofline->bound : std::string();
    if (p.bound.empty() && Positive(p.compute_peak) && Positive(p.mem_bw))
      p.bound = std::string(p.intensity * p.mem_bw < p.compute_peak ? schema::kBoundMemory
                                                                    : schema::kBoundCompute);
    p.name = b.name;
    p.family = b.family;
    p.time_ns = b.MedianNs();
    if (const double count = b.Counter(schema::kCount); Positive(count)) p.count = count;
    p.lost_ns =
        Positive(p.time_ns) ? p.count * p.time_ns * std::max(0.0, 1 - p.achieved / p.roof) : 0;
    p.device = b.parsed ? b.parsed->device : std::string("other");
    p.dt = b.parsed ? b.parsed->Get(key::kDType) : std::string();
    p.launch_bound = p.device == "gpu" && Positive(p.time_ns) && p.time_ns < kLaunchBoundNs;
    if (std::find(r.devices.begin(), r.devices.end(), p.device) == r.devices.end())
      r.devices.push_back(p.device);
    r.points.push_back(std::move(p));
  }
  return r;
}

std::vector<RooflinePoint> FurthestBelow(const RooflineResult& r, size_t n) {
  std::vector<RooflinePoint> out = r.points;
  std::sort(out.begin(), out.end(), [](const RooflinePoint& a, const RooflinePoint& b) {
    return a.pct != b.pct ? a.pct < b.pct : a.name < b.name;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

std::vector<RooflinePoint> MostTimeLost(const RooflineResult& r, size_t n, bool launch_bound) {
  std::vector<RooflinePoint> out;
  for (const RooflinePoint& p : r.points)
    if (p.launch_bound == launch_bound) out.push_back(p);
  std::sort(out.begin(), out.end(), [](const RooflinePoint& a, const RooflinePoint& b) {
    return a.lost_ns != b.lost_ns ? a.lost_ns > b.lost_ns : a.name < b.name;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

Chart RooflineChart(const RooflineResult& r, const std::string& device,
                    const std::string& device_name) {
  Chart c;
  c.title = "Roofline: " + device_name;
  c.x_label = "arithmetic intensity (FLOP per byte, log scale)";
  c.y_label = "FLOP/s (log scale)";
  c.log_x = c.log_y = true;
  c.width = 860;
  std::vector<std::string> families;
  std::map<std::string, Series> by_family;
  double lo = INFINITY, hi = 0;
  // Roofs: one per dtype (its highest peak, with that case's bandwidth); dtypes whose peaks read
  // the same are one roof, named by them all.
  std::vector<std::string> dt_order;
  std::map<std::string, std::pair<double, double>> dt_roof;  // dtype -> peak, bandwidth
  for (const RooflinePoint& p : r.points) {
    if (p.device != device) continue;
    auto [it, inserted] = by_family.emplace(p.family, Series());
    if (inserted) {
      families.push_back(p.family);
      it->second.name = p.family;
      it->second.line = false;
    }
    it->second.points.emplace_back(p.intensity, p.achieved);
    lo = std::min(lo, p.intensity);
    hi = std::max(hi, p.intensity);
    if (!Positive(p.compute_peak) || !Positive(p.mem_bw)) continue;
    const std::string dt = p.dt.empty() ? std::string("?") : p.dt;
    auto [at, fresh] = dt_roof.emplace(dt, std::make_pair(p.compute_peak, p.mem_bw));
    if (fresh)
      dt_order.push_back(dt);
    else if (p.compute_peak > at->second.first)
      at->second = {p.compute_peak, p.mem_bw};
  }
  std::vector<std::pair<double, double>> roofs;  // peak, bandwidth
  std::map<double, std::vector<std::string>> roof_dts;
  std::map<std::string, double> peak_of_label;  // "800 T" -> the first peak that reads so
  for (const std::string& dt : dt_order) {
    auto [peak, bw] = dt_roof[dt];
    auto [at, fresh] = peak_of_label.emplace(Prose({Cell::Rate(peak)}), peak);
    if (fresh) roofs.emplace_back(peak, bw);
    roof_dts[at->second].push_back(dt);
  }
  for (size_t i = 0; i < families.size(); ++i) {
    Series s = std::move(by_family[families[i]]);
    s.color = static_cast<int>(i);
    c.series.push_back(std::move(s));
  }
  // Each roof over the points' range and a little beyond, with its ridge point where it bends.
  std::sort(roofs.begin(), roofs.end(), [](auto& a, auto& b) { return a.first > b.first; });
  // The range takes in every ridge, so that each roof shows both its slope and its flat.
  for (const auto& [peak, bw] : roofs) {
    lo = std::min(lo, peak / bw);
    hi = std::max(hi, peak / bw);
  }
  const double x0 = lo / 2, x1 = hi * 2;
  for (size_t i = 0; i < roofs.size(); ++i) {
    const auto [peak, bw] = roofs[i];
    Series s;
    // Short: the legend has 170 pixels ("roof bf16 800 T").
    s.name = Prose({"roof ", Join(roof_dts[peak], "/"), " ", Cell::Rate(peak)});
    s.markers = false;
    s.solid = true;
    s.color = static_cast<int>(families.size() + i);
    // Sampled at every power of two as well: the axis then ticks at powers of two rather than
    // at each x drawn, where the ridge's tick would crowd a case's.
    const double ridge = peak / bw;
    std::vector<double> xs = {x0, x1};
    if (ridge > x0 && ridge < x1) xs.push_back(ridge);
    for (double x = std::exp2(std::ceil(std::log2(x0))); x < x1; x *= 2) xs.push_back(x);
    std::sort(xs.begin(), xs.end());
    for (double x : xs) s.points.emplace_back(x, std::min(peak, x * bw));
    c.series.push_back(std::move(s));
  }
  return c;
}

namespace {

// A value in % of a peak or roof: "⚠" above 100% (the Problems section says why), a warning
// colour below 10%.
Cell PercentOfRoof(double pct) {
  Cell c = Cell::Number(pct, 3).After("%");
  if (pct > 100) c.Doubtful().With(Tone::kWarn);
  if (pct < 10) c.With(Tone::kWarn);
  return c;
}

Table RooflineTable(const std::vector<RooflinePoint>& points) {
  Table t;
  // Machines read the columns by the JSON's own names.
  auto key = [](std::string_view k) { return std::string(k); };
  t.columns = {{"benchmark", "name"},
               {"bound", key(schema::kBound)},
               {"FLOP/byte", key(schema::kFlopPerByte)},
               {"roof", key(schema::kRoofFlopPerS)},
               {"achieved", key(schema::kFlopPerS)},
               {"% of roof", key(schema::kPctRoofline)},
               {"count", key(schema::kCount)},
               {"time lost", "lost_ns"}};
  for (const RooflinePoint& p : points)
    t.rows.push_back({Cell(p.name), Cell(p.bound.empty() ? std::string("-") : p.bound),
                      Cell::Number(p.intensity, 4), Cell::Rate(p.roof, "FLOP/s"),
                      Cell::Rate(p.achieved, "FLOP/s"), PercentOfRoof(p.pct), Cell::Count(p.count),
                      Cell::Time(p.lost_ns)});
  SplitNameColumn(&t, 0);
  return t;
}

}  // namespace

std::vector<Section> RooflineSections(const RooflineResult& r,
                                      const std::map<std::string, std::string>& context,
                                      bool charts, size_t listed) {
  if (r.points.empty()) return {};
  Section s;
  s.title = "Roofline";
  const std::vector<RooflinePoint> lost = MostTimeLost(r, listed, false),
                                   launch = MostTimeLost(r, listed, true);
  const size_t launch_bound = static_cast<size_t>(std::count_if(
      r.points.begin(), r.points.end(), [](const RooflinePoint& p) { return p.launch_bound; }));
  s.notes.push_back(Prose(
      {"Each case's rate (FLOP/s) against its roof at its arithmetic intensity (FLOP per byte "
       "moved, its family's byte definition): min(compute peak, intensity x memory bandwidth), "
       "both the measured peaks of the run's context. Bound: which of the two is lower. Time "
       "lost: how often the case occurs in its network x its time below the roof's (time x (1 - "
       "achieved / roof)), what reaching the roof would save. The ",
       Cell::Count(static_cast<double>(lost.size())), " of ",
       Cell::Count(static_cast<double>(r.points.size() - launch_bound)),
       " cases that lose the most:"}));
  if (!lost.empty()) s.tables.push_back(RooflineTable(lost));
  if (!launch.empty()) {
    Table t = RooflineTable(launch);
    t.title = Prose({"Launch-bound: ", Cell::Count(static_cast<double>(launch_bound)),
                     " GPU case(s) shorter than ", Cell::Time(kLaunchBoundNs),
                     " a Run(), where launching the work, not the roof, limits the rate (the ",
                     Cell::Count(static_cast<double>(launch.size())), " that lose the most)"});
    s.tables.push_back(std::move(t));
  }
  if (charts)
    for (const std::string& dev : r.devices)
      s.charts.push_back(RooflineChart(r, dev, DeviceName(context, dev)));
  return {std::move(s)};
}

}  // namespace dlb::report
