#include <algorithm>
#include <set>

#include "tools/report/analyses.h"

namespace dlb::report {

namespace {

// The counters people look for first, then the rest by name.
int CounterRank(const std::string& c) {
  static const char* kOrder[] = {"flop_per_s", "bytes_per_s", "items_per_s", "pct_peak"};
  for (int i = 0; i < 4; ++i)
    if (c == kOrder[i]) return i;
  return 4;
}

std::string CounterTitle(const std::string& c) {
  if (c == "flop_per_s") return "FLOP/s";
  if (c == "bytes_per_s") return "bytes/s";
  if (c == "items_per_s") return "items/s";
  if (c == "pct_peak") return "% of peak";
  return c;
}

Cell CounterCell(const std::string& c, double v) {
  if (!std::isfinite(v)) return Cell("-");
  if (c == "pct_peak") return Cell(FormatNumber(v, 3) + "%", v);
  if (c.size() > 6 && c.compare(c.size() - 6, 6, "_per_s") == 0) return Cell(FormatRate(v), v);
  return Cell(FormatNumber(v, 4), v);
}

}  // namespace

std::string ContextLine(const std::map<std::string, std::string>& ctx) {
  std::string out;
  for (const char* k : {"host_name", "cpu_model", "gpu_name", "num_cpus", "date",
                        "library_build_type", "git_revision", "dlbench_version"}) {
    auto it = ctx.find(k);
    if (it == ctx.end() || it->second.empty()) continue;
    if (!out.empty()) out += ", ";
    out += std::string(k) + ": " + it->second;
  }
  return out;
}

std::vector<Section> SummarySections(const MergedRuns& runs) {
  std::vector<Section> out;
  std::vector<std::string> families;
  std::map<std::string, std::vector<const Bench*>> by_family;
  std::vector<const Bench*> skipped;
  for (const Bench& b : runs.benches) {
    if (!b.measured()) {
      skipped.push_back(&b);
      continue;
    }
    if (!by_family.count(b.family)) families.push_back(b.family);
    by_family[b.family].push_back(&b);
  }
  for (const std::string& fam : families) {
    const auto& list = by_family[fam];
    std::set<std::string> names;
    for (const Bench* b : list)
      for (const auto& c : b->CounterNames()) names.insert(c);
    std::vector<std::string> counters(names.begin(), names.end());
    std::stable_sort(counters.begin(), counters.end(),
                     [](const auto& a, const auto& b) { return CounterRank(a) < CounterRank(b); });
    Section s;
    s.title = "Summary: " + fam;
    Table t;
    t.columns = {{"benchmark", "name"}, {"median", "median_ns"}, {"CV", "cv"}, {"reps", "reps"}};
    for (const auto& c : counters) t.columns.push_back({CounterTitle(c), c});
    t.columns.push_back({"label", "label"});
    t.rows.reserve(list.size());
    for (const Bench* b : list) {
      std::vector<Cell> row;
      row.reserve(t.columns.size());
      row.emplace_back(b->name);
      double m = b->MedianNs(), cv = b->Cv();
      row.emplace_back(FormatTime(m), m);
      row.emplace_back(FormatPercent(cv, 2), cv);
      row.emplace_back(std::to_string(b->Repetitions()), static_cast<double>(b->Repetitions()));
      for (const auto& c : counters) row.push_back(CounterCell(c, b->Counter(c)));
      row.emplace_back(b->label);
      t.rows.push_back(std::move(row));
    }
    s.tables.push_back(std::move(t));
    out.push_back(std::move(s));
  }
  Section sk;
  sk.title = "Unsupported and failed";
  if (skipped.empty()) {
    sk.notes.push_back("None: every case was measured.");
  } else {
    Table t;
    t.columns = {{"benchmark", "name"}, {"state", "state"}, {"reason", "reason"}};
    for (const Bench* b : skipped)
      t.rows.push_back({Cell(b->name), Cell(StatusName(b->status)), Cell(b->message)});
    sk.tables.push_back(std::move(t));
  }
  out.push_back(std::move(sk));
  return out;
}

Document Summary(const MergedRuns& runs, const std::vector<std::string>& inputs) {
  Document d;
  d.title = "dlbench summary";
  std::string in;
  for (const auto& p : inputs) in += (in.empty() ? "" : ", ") + p;
  d.notes.push_back("Inputs: " + in);
  if (auto c = ContextLine(runs.context); !c.empty()) d.notes.push_back("Context: " + c);
  size_t measured = 0;
  for (const Bench& b : runs.benches) measured += b.measured();
  d.notes.push_back(
      std::to_string(runs.benches.size()) + " benchmarks, " + std::to_string(measured) +
      " measured. Median over repetitions; CV = " + "sample standard deviation / mean.");
  d.sections = SummarySections(runs);
  return d;
}

}  // namespace dlb::report
