#include "tools/report/read/trace.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>

#include "fixtures/schema/schema.h"
#include "tools/report/read/file_text.h"
#include "tools/report/read/gbench_json.h"

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

Trace ReadTrace(const std::string& path) { return ParseTrace(ReadFileText(path), path); }

}  // namespace dlb::report
