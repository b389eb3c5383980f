#include "tools/report/analyses/gbench_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "tools/report/analyses/stats.h"

namespace dlb::report {

namespace {

// compare.py's _TIME_UNIT_TO_SECONDS_MULTIPLIER.
double Seconds(const std::string& unit) {
  if (unit == "ns") return 1e-9;
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  return 1;
}

// calculate_geomean: the geometric mean of [real, cpu] in seconds over every entry that is not an
// aggregate, as scipy's gmean per column (a zero time makes it 0). Empty: no entries.
std::vector<double> Geomean(const std::vector<Entry>& entries) {
  double log_real = 0, log_cpu = 0;
  size_t n = 0;
  for (const Entry& e : entries) {
    if (e.run_type == RunType::kAggregate || !e.comparable) continue;
    double s = Seconds(e.time_unit);
    log_real += std::log(e.real_time * s);
    log_cpu += std::log(e.cpu_time * s);
    ++n;
  }
  if (n == 0) return {};
  return {std::exp(log_real / static_cast<double>(n)), std::exp(log_cpu / static_cast<double>(n))};
}

// numpy's any(): NaN counts as true.
bool Any(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return x != 0; });
}

}  // namespace

std::vector<Entry> SortLikeComparePy(std::vector<Entry> entries) {
  auto key = [](const Entry& e) {
    return std::make_tuple(e.family_index, e.per_family_instance_index,
                           e.run_type == RunType::kAggregate ? 1 : 0, e.repetition_index);
  };
  std::stable_sort(entries.begin(), entries.end(),
                   [&](const Entry& a, const Entry& b) { return key(a) < key(b); });
  return entries;
}

std::vector<GbenchDiff> DifferenceReport(const std::vector<Entry>& base,
                                         const std::vector<Entry>& now, bool utest) {
  // get_unique_benchmark_names of both, intersected in the base's order.
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  for (const Entry& e : base)
    if (seen.insert(e.name).second) names.push_back(e.name);
  std::unordered_map<std::string, std::vector<const Entry*>> lhs_by_name, rhs_by_name;
  for (const Entry& e : base) lhs_by_name[e.name].push_back(&e);
  for (const Entry& e : now) rhs_by_name[e.name].push_back(&e);

  std::vector<GbenchDiff> out;
  for (const std::string& name : names) {
    auto rit = rhs_by_name.find(name);
    if (rit == rhs_by_name.end()) continue;
    const auto& lhs_all = lhs_by_name[name];
    const Entry* first = nullptr;
    for (const Entry* e : lhs_all)
      if (e->comparable) {
        first = e;
        break;
      }
    if (!first) continue;
    // "All the repetitions are assumed to be comparable": same name and same time unit.
    std::vector<const Entry*> lhs, rhs;
    for (const Entry* e : lhs_all)
      if (e->comparable && e->time_unit == first->time_unit) lhs.push_back(e);
    for (const Entry* e : rit->second)
      if (e->comparable && e->time_unit == first->time_unit) rhs.push_back(e);
    GbenchDiff d;
    d.name = name;
    d.label = lhs[0]->label;
    d.time_unit = lhs[0]->time_unit;
    d.run_type = lhs[0]->run_type;
    if (d.run_type == RunType::kAggregate) d.aggregate_name = lhs[0]->aggregate_name;
    for (size_t i = 0; i < std::min(lhs.size(), rhs.size()); ++i) {
      const Entry &a = *lhs[i], &b = *rhs[i];
      d.measurements.push_back({a.real_time, a.cpu_time, b.real_time, b.cpu_time,
                                RelativeChange(a.real_time, b.real_time),
                                RelativeChange(a.cpu_time, b.cpu_time)});
    }
    if (utest && std::min(lhs.size(), rhs.size()) >= kUTestMinRepetitions) {
      std::vector<double> lr, lc, rr, rc;
      for (const Entry* e : lhs) {
        lr.push_back(e->real_time);
        lc.push_back(e->cpu_time);
      }
      for (const Entry* e : rhs) {
        rr.push_back(e->real_time);
        rc.push_back(e->cpu_time);
      }
      GbenchUTest u;
      u.have_optimal_repetitions = std::min(lhs.size(), rhs.size()) >= kUTestOptimalRepetitions;
      u.time_pvalue = MannWhitneyU(lr, rr).p;
      u.cpu_pvalue = MannWhitneyU(lc, rc).p;
      u.repetitions = lhs.size();
      u.repetitions_other = rhs.size();
      d.utest = u;
    }
    // Empty only when the new side has no entry in that unit.
    if (!d.measurements.empty()) out.push_back(std::move(d));
  }

  std::vector<double> lg = Geomean(base), rg = Geomean(now);
  if (Any(lg) && Any(rg)) {
    GbenchDiff g;
    g.name = kOverallGeomean;
    g.time_unit = "s";
    g.run_type = RunType::kAggregate;
    g.aggregate_name = "geomean";
    g.measurements.push_back(
        {lg[0], lg[1], rg[0], rg[1], RelativeChange(lg[0], rg[0]), RelativeChange(lg[1], rg[1])});
    out.push_back(std::move(g));
  }
  return out;
}

Section DifferenceSection(const std::vector<GbenchDiff>& diff, bool aggregates_only, double alpha) {
  Section s;
  s.title = "As compare.py";
  s.details = true;
  s.notes.push_back(
      "Google Benchmark's tools/compare.py on the same files: per name, the i-th run of BASE "
      "against the i-th of NEW, changes as fractions ((new - old) / |old|: +0.1000 is 10% slower), "
      "times in each benchmark's unit; a \"_pvalue\" row gives the two-sided U test of real and "
      "CPU time when both sides have at least 2 runs (significant below " +
      Prose({Cell::Number(alpha, 3)}) + ")." + (aggregates_only ? " Aggregates only." : ""));
  Table t;
  t.columns = {{"Benchmark", "name"},
               {"Time", "time"},
               {"CPU", "cpu"},
               {"Time Old", "real_time"},
               {"Time New", "real_time_other"},
               {"CPU Old", "cpu_time"},
               {"CPU New", "cpu_time_other"},
               {"unit", "time_unit"},
               {"note", "note"}};
  for (const GbenchDiff& d : diff) {
    if (!aggregates_only || d.run_type == RunType::kAggregate) {
      for (const GbenchMeasurement& m : d.measurements)
        t.rows.push_back({Cell(d.name), Cell::Fixed(m.time, 4, true), Cell::Fixed(m.cpu, 4, true),
                          Cell::Number(m.real_time, 6), Cell::Number(m.real_time_other, 6),
                          Cell::Number(m.cpu_time, 6), Cell::Number(m.cpu_time_other, 6),
                          Cell(d.time_unit), Cell("")});
    }
    if (!d.utest) continue;
    const GbenchUTest& u = *d.utest;
    std::string note = "U Test, Repetitions: " + std::to_string(u.repetitions) + " vs " +
                       std::to_string(u.repetitions_other);
    if (!u.have_optimal_repetitions)
      note += ". WARNING: Results unreliable! " + std::to_string(kUTestOptimalRepetitions) +
              "+ repetitions recommended.";
    t.rows.push_back({Cell(d.name + "_pvalue"), Cell::Fixed(u.time_pvalue, 4),
                      Cell::Fixed(u.cpu_pvalue, 4), Cell("-"), Cell("-"), Cell("-"), Cell("-"),
                      Cell("-"), Cell(note)});
  }
  s.tables.push_back(std::move(t));
  return s;
}

}  // namespace dlb::report
