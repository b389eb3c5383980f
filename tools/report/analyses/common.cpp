#include "tools/report/analyses/common.h"

#include <algorithm>
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

std::string OtherKeys(const BenchName& n) {
  std::string out;
  for (const auto& [k, v] : n.keys)
    if (k != name_key::kBs && k != name_key::kDt) out += (out.empty() ? "" : "/") + k + ":" + v;
  return out;
}

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

std::string InputsNote(const std::vector<std::string>& inputs) {
  return "Inputs: " + Join(inputs, ", ");
}

}  // namespace dlb::report
