#include "tools/report/analyses/common.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace dlb::report {

std::string Join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string JoinNonEmpty(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v)
    if (!s.empty()) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string KeysExcept(const BenchName& n, std::initializer_list<std::string_view> skip) {
  std::string out;
  for (const auto& [k, v] : n.keys)
    if (std::find(skip.begin(), skip.end(), k) == skip.end())
      out += (out.empty() ? "" : "/") + k + ":" + v;
  return out;
}

std::string ConfigKeys(const BenchName& n) { return KeysExcept(n, {key::kBatch, key::kDType}); }

std::string ConfigValues(const std::string& keys) {
  std::string out;
  size_t start = 0;
  while (start <= keys.size()) {
    size_t end = keys.find('/', start);
    if (end == std::string::npos) end = keys.size();
    std::string part = keys.substr(start, end - start);
    auto colon = part.find(':');
    if (!part.empty()) out += (out.empty() ? "" : " ") + part.substr(colon + 1);
    start = end + 1;
  }
  return out;
}

void DropEmptyColumns(Table* t) {
  for (size_t i = t->columns.size(); i-- > 0;) {
    bool empty = std::all_of(t->rows.begin(), t->rows.end(),
                             [&](const std::vector<Cell>& r) { return r[i].text == "-"; });
    if (!empty) continue;
    t->columns.erase(t->columns.begin() + static_cast<std::ptrdiff_t>(i));
    for (auto& r : t->rows) r.erase(r.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

std::string BatchSizeLabel(double bs) { return "bs " + FormatNumber(bs, 6); }

Cell TimeCell(double ns) { return std::isfinite(ns) ? Cell(FormatTime(ns), ns) : Cell("-"); }

Cell SpeedupCell(double x, bool doubtful) {
  if (!std::isfinite(x)) return Cell("-");
  if (!doubtful) return Cell(FormatNumber(x, 3) + "x", x);
  return Cell("⚠ " + FormatNumber(x, 3) + "x", x).With(Tone::kWarn);
}

bool WideY(const Chart& chart) {
  double lo = INFINITY, hi = 0;
  for (const Series& s : chart.series)
    for (auto [x, y] : s.points) {
      lo = std::min(lo, y);
      hi = std::max(hi, y);
    }
  return lo > 0 && hi / lo > 20;
}

std::string FormatDuration(double s) {
  if (!std::isfinite(s)) return "-";
  if (s >= 7200) return FormatNumber(s / 3600, 3) + " h";
  if (s >= 120) return FormatNumber(s / 60, 3) + " min";
  return FormatTime(s * 1e9);
}

std::string FormatBytes(double b, int significant) {
  if (!std::isfinite(b)) return "-";
  static const char* kUnit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) {
    b /= 1024;
    ++i;
  }
  return FormatNumber(b, significant) + " " + kUnit[i];
}

std::string WithUnit(double v, const std::string& unit) {
  std::string r = FormatRate(v);
  bool join = (unit.rfind("FLOP/s", 0) == 0 || unit.rfind("B/s", 0) == 0) && !r.empty() &&
              !std::isdigit(static_cast<unsigned char>(r.back()));
  return r + (join ? "" : " ") + unit;
}

std::string InputsNote(const std::vector<std::string>& inputs) {
  return "Inputs: " + Join(inputs, ", ");
}

}  // namespace dlb::report
