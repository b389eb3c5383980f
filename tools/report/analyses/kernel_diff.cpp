#include "tools/report/analyses/kernel_diff.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace dlb::report {

const char* KernelChangeName(KernelChangeKind k) {
  switch (k) {
    case KernelChangeKind::kAppeared:
      return "appeared";
    case KernelChangeKind::kVanished:
      return "vanished";
    case KernelChangeKind::kGrew:
      return "grew";
    case KernelChangeKind::kShrank:
      return "shrank";
    case KernelChangeKind::kSame:
      return "same";
  }
  return "?";
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Key = std::pair<std::string, std::string>;  // name, kind

std::map<Key, double> PerRun(const KernelTable& t) {
  std::map<Key, double> out;
  for (const KernelRow& r : t.rows) out[{r.name, r.kind}] += t.runs > 0 ? r.total_s / t.runs : 0;
  return out;
}

std::map<Key, double> LaunchesPerRun(const KernelTable& t) {
  std::map<Key, double> out;
  for (const KernelRow& r : t.rows) out[{r.name, r.kind}] += r.launches_per_run;
  return out;
}

// Whether two launch counts differ (they are means over runs: a hair's difference is the same).
bool LaunchesDiffer(double a, double b) {
  return std::fabs(a - b) > 0.01 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

// A launch count, as a whole number where it is one.
Cell Count(double v) {
  return std::fabs(v - std::round(v)) < 1e-9 ? Cell::Count(v) : Cell::Number(v, 3);
}

// "1 → 16".
std::string Launches(double a, double b) { return Prose({Count(a), " → ", Count(b)}); }

const char* Sign(KernelChangeKind k) {
  switch (k) {
    case KernelChangeKind::kAppeared:
      return "+";
    case KernelChangeKind::kVanished:
      return "-";
    case KernelChangeKind::kGrew:
      return "↑";
    case KernelChangeKind::kShrank:
      return "↓";
    case KernelChangeKind::kSame:
      break;
  }
  return "=";
}

// A change in seconds: "+1.23 ms"; the number in seconds for CSV and JSON.
Cell SignedSeconds(double s) {
  return Cell(Prose({s > 0 ? "+" : s < 0 ? "-" : "", Cell::Duration(std::fabs(s))}), s);
}

}  // namespace

KernelDiff DiffKernels(const KernelTable& base, const KernelTable& now, double base_ns,
                       double new_ns) {
  KernelDiff d;
  d.case_delta_s = (new_ns - base_ns) * 1e-9;
  const std::map<Key, double> b = PerRun(base), n = PerRun(now);
  const std::map<Key, double> bl = LaunchesPerRun(base), nl = LaunchesPerRun(now);
  std::map<Key, std::pair<double, double>> both;
  for (const auto& [k, v] : b) both[k].first = v;
  for (const auto& [k, v] : n) both[k].second = v;
  for (const auto& [k, v] : both) {
    KernelChange c;
    c.name = k.first;
    c.kind = k.second;
    c.base_s = v.first;
    c.new_s = v.second;
    c.delta_s = c.new_s - c.base_s;
    if (auto it = bl.find(k); it != bl.end()) c.base_launches = it->second;
    if (auto it = nl.find(k); it != nl.end()) c.new_launches = it->second;
    const bool in_base = b.count(k) > 0, in_new = n.count(k) > 0;
    if (!in_base)
      c.change = KernelChangeKind::kAppeared;
    else if (!in_new)
      c.change = KernelChangeKind::kVanished;
    else if (std::fabs(c.delta_s) < kKernelSame * std::max(c.base_s, c.new_s) || c.delta_s == 0)
      c.change = KernelChangeKind::kSame;
    else
      c.change = c.delta_s > 0 ? KernelChangeKind::kGrew : KernelChangeKind::kShrank;
    c.of_case = d.case_delta_s != 0 ? c.delta_s / d.case_delta_s : kNaN;
    d.kernels_delta_s += c.delta_s;
    d.changes.push_back(std::move(c));
  }
  std::stable_sort(d.changes.begin(), d.changes.end(),
                   [](const KernelChange& x, const KernelChange& y) {
                     return std::fabs(x.delta_s) > std::fabs(y.delta_s);
                   });
  d.explained = d.case_delta_s != 0 ? d.kernels_delta_s / d.case_delta_s : kNaN;
  return d;
}

std::string KernelDiffSummary(const KernelDiff& diff, size_t top) {
  std::string out;
  size_t shown = 0;
  for (const KernelChange& c : diff.changes) {
    if (c.change == KernelChangeKind::kSame) continue;
    if (shown++ == top) break;
    out += (out.empty() ? "" : ", ") + std::string(Sign(c.change)) + c.name;
    if (std::isfinite(c.of_case)) out += Prose({" ", Cell::Percent(c.of_case, 0)});
    if (c.change != KernelChangeKind::kAppeared && c.change != KernelChangeKind::kVanished &&
        LaunchesDiffer(c.base_launches, c.new_launches))
      out += " (launches " + Launches(c.base_launches, c.new_launches) + ")";
  }
  if (out.empty()) out = "no kernel changed";
  if (std::isfinite(diff.explained))
    out += Prose({" (kernels: ", Cell::Percent(diff.explained, 0), " of the change)"});
  return out;
}

Table KernelDiffTable(const KernelDiff& diff, const std::string& title, size_t top) {
  Table t;
  t.title = title;
  t.columns = {{"kernel", "kernel"},
               {"kind", "kind"},
               {"change", "kernel_change"},
               {"base / Run()", "base_s"},
               {"new / Run()", "new_s"},
               {"Δ / Run()", "delta_s"},
               {"launches / Run()", "launches_per_run"},
               {"of the case's change", "of_case"}};
  size_t shown = 0;
  double rest = 0;
  size_t rest_n = 0;
  for (const KernelChange& c : diff.changes) {
    if (c.change == KernelChangeKind::kSame || shown == top) {
      rest += c.delta_s;
      ++rest_n;
      continue;
    }
    ++shown;
    Cell change(KernelChangeName(c.change));
    if (c.delta_s > 0) change.With(Tone::kBad);
    if (c.delta_s < 0) change.With(Tone::kGood);
    // A side without the kernel reads "-", not a time of 0.
    Cell base = c.change == KernelChangeKind::kAppeared ? Cell("-") : Cell::Duration(c.base_s);
    Cell now = c.change == KernelChangeKind::kVanished ? Cell("-") : Cell::Duration(c.new_s);
    // Both sides' launches per Run() where the kernel is on both and they differ (a change stands
    // out), else the one side's.
    const bool on_both =
        c.change != KernelChangeKind::kAppeared && c.change != KernelChangeKind::kVanished;
    Cell launches =
        Count(c.change == KernelChangeKind::kVanished ? c.base_launches : c.new_launches);
    if (on_both && LaunchesDiffer(c.base_launches, c.new_launches)) {
      launches = Cell(Launches(c.base_launches, c.new_launches), c.new_launches);
      launches.With(c.new_launches > c.base_launches ? Tone::kBad : Tone::kGood);
    }
    t.rows.push_back({Cell(c.name), Cell(c.kind), change, base, now, SignedSeconds(c.delta_s),
                      launches, Cell::Percent(c.of_case, 1)});
  }
  const double case_delta = diff.case_delta_s;
  auto share = [case_delta](double s) { return case_delta != 0 ? s / case_delta : kNaN; };
  if (rest_n)
    t.rows.push_back({Cell("(" + std::to_string(rest_n) + " more)"), Cell("-"), Cell("-"),
                      Cell("-"), Cell("-"), SignedSeconds(rest), Cell("-"),
                      Cell::Percent(share(rest), 1)});
  t.rows.push_back({Cell("all kernels"), Cell("-"), Cell("-"), Cell("-"), Cell("-"),
                    SignedSeconds(diff.kernels_delta_s), Cell("-"),
                    Cell::Percent(diff.explained, 1)});
  t.rows.push_back({Cell("the case"), Cell("-"), Cell("-"), Cell("-"), Cell("-"),
                    SignedSeconds(case_delta), Cell("-"), Cell("100%")});
  return t;
}

}  // namespace dlb::report
