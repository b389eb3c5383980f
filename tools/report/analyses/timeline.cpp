#include "tools/report/analyses/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/stats.h"

namespace dlb::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// "1755 MHz", or "-" where the trace reported nothing.
Cell Measured(double v, int digits, const char* unit) {
  return Cell::Number(v, digits).After(unit);
}

// At most about `keep` points: each bucket of consecutive points keeps its lowest and highest, so
// a dip of the clock stays visible in a long run's chart.
std::vector<std::pair<double, double>> Thin(std::vector<std::pair<double, double>> points,
                                            size_t keep) {
  if (points.size() <= keep) return points;
  const size_t bucket = (points.size() + keep / 2 - 1) / (keep / 2);
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < points.size(); i += bucket) {
    const auto first = points.begin() + long(i);
    const auto last = points.begin() + long(std::min(points.size(), i + bucket));
    auto [lo, hi] = std::minmax_element(
        first, last, [](const auto& a, const auto& b) { return a.second < b.second; });
    if (lo->first > hi->first) std::swap(lo, hi);
    out.push_back(*lo);
    if (hi != lo) out.push_back(*hi);
  }
  return out;
}

}  // namespace

Section TraceSection(const Trace& trace) {
  Section s;
  s.title = "Device timeline: " + trace.path;
  if (trace.samples.empty()) {
    s.notes.push_back("The trace holds no sample (the monitor was off, or no GPU case ran).");
    return s;
  }
  s.notes.push_back(
      "The device monitor's samples (NVML) during each GPU case's timed loop, as nvtop shows "
      "them: the table per case, the charts over the run's time with a dashed line where each "
      "case begins. Throttled: a clocks-event reason other than idle or application clocks.");
  struct PerCase {
    std::string name;
    double from = 0, to = 0;
    std::vector<double> sm, power, temp, util;
    uint64_t throttle = 0;
    size_t samples = 0;
  };
  std::vector<PerCase> cases;
  std::map<std::string, size_t> index;
  Chart clock, power, temp, util;
  clock.title = "SM clock";
  clock.y_label = "MHz";
  power.title = "Power";
  power.y_label = "W";
  temp.title = "Temperature";
  temp.y_label = "°C";
  util.title = "GPU utilisation";
  util.y_label = "%";
  std::vector<std::pair<double, double>> pts[4];
  const std::string* previous = nullptr;
  std::vector<std::pair<double, std::string>> marks;
  for (const TraceSample& t : trace.samples) {
    auto [it, inserted] = index.emplace(t.case_name, cases.size());
    if (inserted) cases.push_back({t.case_name, t.t_s, t.t_s, {}, {}, {}, {}, 0, 0});
    PerCase& c = cases[it->second];
    c.to = t.t_s;
    ++c.samples;
    if (!previous || *previous != t.case_name) marks.emplace_back(t.t_s, t.case_name);
    previous = &t.case_name;
    const double values[4] = {t.sm_clock_mhz, t.power_w, t.temp_c, t.gpu_util_pct};
    std::vector<double>* lists[4] = {&c.sm, &c.power, &c.temp, &c.util};
    for (int q = 0; q < 4; ++q) {
      if (std::isnan(values[q])) continue;
      lists[q]->push_back(values[q]);
      pts[q].emplace_back(t.t_s, values[q]);
    }
    if (t.has_reasons) c.throttle |= t.reasons & ~schema::kNotThrottlingReasons;
  }
  Table table;
  table.columns = {{"case", "case"},
                   {"samples", "samples"},
                   {"from", "from_s"},
                   {"to", "to_s"},
                   {"SM clock (median)", std::string(schema::kSmClockMedianMhz)},
                   {"power (mean)", std::string(schema::kPowerMeanW)},
                   {"temperature (max)", std::string(schema::kTempMaxC)},
                   {"GPU util (mean)", std::string(schema::kGpuUtilMean)},
                   {"throttled", std::string(schema::kThrottled)}};
  auto max_of = [](const std::vector<double>& v) {
    return v.empty() ? kNaN : *std::max_element(v.begin(), v.end());
  };
  auto mean_of = [](const std::vector<double>& v) { return v.empty() ? kNaN : Mean(v); };
  for (const PerCase& c : cases) {
    const double sm = Median(c.sm), pw = mean_of(c.power), tp = max_of(c.temp),
                 ut = mean_of(c.util);
    Cell throttled =
        c.throttle
            ? Cell("yes: " + schema::ClocksEventReasonNames(c.throttle), 1.0).With(Tone::kWarn)
            : Cell("no", 0.0);
    table.rows.push_back({Cell(c.name), Cell(std::to_string(c.samples), double(c.samples)),
                          Measured(c.from, 4, " s"), Measured(c.to, 4, " s"),
                          Measured(sm, 4, " MHz"), Measured(pw, 4, " W"), Measured(tp, 3, " °C"),
                          Measured(ut, 3, "%"), throttled});
  }
  s.tables.push_back(std::move(table));
  Chart* charts[4] = {&clock, &power, &temp, &util};
  for (int q = 0; q < 4; ++q) {
    if (pts[q].empty()) continue;
    Chart& ch = *charts[q];
    ch.x_label = "time since the monitor started (s)";
    ch.width = 960;
    ch.marks = marks;
    Series series;
    series.name = ch.title;
    series.points = Thin(std::move(pts[q]), 4000);
    series.markers = false;
    series.solid = true;
    ch.series.push_back(std::move(series));
    s.charts.push_back(std::move(ch));
  }
  return s;
}

}  // namespace dlb::report
