#include "tools/report/trace.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "fixtures/schema/schema.h"
#include "tools/report/gbench_json.h"
#include "tools/report/stats.h"

namespace dlb::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A line of CSV as RFC 4180 quotes it (the trace writer quotes a field with a comma or a quote).
bool SplitCsv(std::string_view line, std::vector<std::string>* out) {
  out->assign(1, std::string());
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out->back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out->back() += c;
      }
    } else if (c == '"' && out->back().empty()) {
      quoted = true;
    } else if (c == ',') {
      out->emplace_back();
    } else {
      out->back() += c;
    }
  }
  return !quoted;
}

// An empty cell is a quantity not reported (NaN); anything else must be a finite number.
std::optional<double> Number(const std::string& cell) {
  if (cell.empty()) return kNaN;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(cell.c_str(), &end);
  if (errno || end != cell.c_str() + cell.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}


// "1755 MHz", or "-" where the trace reported nothing.
Cell WithUnit(double v, int digits, const char* unit) {
  return std::isfinite(v) ? Cell(FormatNumber(v, digits) + unit, v) : Cell("-");
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

Trace ParseTrace(std::string_view text, const std::string& path) {
  Trace trace;
  trace.path = path;
  std::vector<std::string> cells;
  std::map<std::string_view, size_t> at;  // column name -> index
  size_t columns = 0, line_no = 0, pos = 0;
  auto where = [&line_no] { return std::to_string(line_no); };
  auto cell = [&](std::string_view column) -> const std::string* {
    auto it = at.find(column);
    return it == at.end() ? nullptr : &cells[it->second];
  };
  auto number = [&](std::string_view column) {
    const std::string* c = cell(column);
    if (!c) return kNaN;
    std::optional<double> v = Number(*c);
    if (!v) throw InputError(path, where(), std::string(column) + " is not a number: '" + *c + "'");
    return *v;
  };
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (!SplitCsv(line, &cells)) throw InputError(path, where(), "a quote is not closed");
    if (columns == 0) {
      for (size_t i = 0; i < cells.size(); ++i) {
        auto known =
            std::find(schema::kTraceColumns.begin(), schema::kTraceColumns.end(), cells[i]);
        // Columns a later dlbench adds are read past, not refused.
        if (known != schema::kTraceColumns.end() && !at.emplace(*known, i).second)
          throw InputError(path, where(), "column " + cells[i] + " twice");
      }
      if (!at.count(schema::kTraceCase) || !at.count(schema::kTraceTimeS))
        throw InputError(path, where(),
                         "not a monitor trace: the header lacks " +
                             std::string(schema::kTraceCase) + " and " +
                             std::string(schema::kTraceTimeS));
      columns = cells.size();
      continue;
    }
    if (cells.size() != columns)
      throw InputError(
          path, where(),
          std::to_string(cells.size()) + " fields where the header has " + std::to_string(columns));
    TraceSample s;
    s.case_name = *cell(schema::kTraceCase);
    s.t_s = number(schema::kTraceTimeS);
    if (std::isnan(s.t_s)) throw InputError(path, where(), "no time");
    s.sm_clock_mhz = number(schema::kTraceSmClockMhz);
    s.mem_clock_mhz = number(schema::kTraceMemClockMhz);
    s.power_w = number(schema::kTracePowerMw) / 1e3;
    s.temp_c = number(schema::kTraceTempC);
    s.gpu_util_pct = number(schema::kTraceGpuUtil);
    if (const std::string* r = cell(schema::kTraceReasons); r && !r->empty()) {
      char* end_hex = nullptr;
      errno = 0;
      const unsigned long long v = std::strtoull(r->c_str(), &end_hex, 16);
      if (errno || r->rfind("0x", 0) != 0 || end_hex != r->c_str() + r->size())
        throw InputError(
            path, where(),
            std::string(schema::kTraceReasons) + " is not a hexadecimal mask: '" + *r + "'");
      s.has_reasons = true;
      s.reasons = v;
    }
    trace.samples.push_back(std::move(s));
  }
  if (columns == 0) throw InputError(path, "1", "empty: not a monitor trace");
  return trace;
}

Trace ReadTrace(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw InputError(path, "", std::string("cannot open: ") + std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const bool bad = std::ferror(f);
  const int err = errno;
  std::fclose(f);
  if (bad) throw InputError(path, "", std::string("cannot read: ") + std::strerror(err));
  return ParseTrace(text, path);
}

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
    Cell throttled = c.throttle ? Cell("yes: " + schema::ClocksEventReasonNames(c.throttle), 1.0)
                                      .With(Tone::kWarn)
                                : Cell("no", 0.0);
    table.rows.push_back({Cell(c.name), Cell(std::to_string(c.samples), double(c.samples)),
                          WithUnit(c.from, 4, " s"), WithUnit(c.to, 4, " s"),
                          WithUnit(sm, 4, " MHz"), WithUnit(pw, 4, " W"), WithUnit(tp, 3, " °C"),
                          WithUnit(ut, 3, "%"), throttled});
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
