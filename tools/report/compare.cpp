#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include "tools/report/analyses.h"
#include "tools/report/stats.h"

namespace dlb::report {

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kFaster:
      return "faster";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kSame:
      return "same";
    case Verdict::kNoisy:
      return "noisy";
    case Verdict::kNew:
      return "new";
    case Verdict::kMissing:
      return "missing";
  }
  return "?";
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// compare.py's UTEST_MIN_REPETITIONS.
constexpr size_t kMinReps = 2;

bool IsRate(const std::string& c) {
  return c.size() > 6 && c.compare(c.size() - 6, 6, "_per_s") == 0;
}

std::string RateTitle(const std::string& c) {
  if (c == "flop_per_s") return "Δ FLOP/s";
  if (c == "bytes_per_s") return "Δ bytes/s";
  if (c == "items_per_s") return "Δ items/s";
  return "Δ " + c;
}

}  // namespace

CompareResult Compare(const MergedRuns& base, const MergedRuns& now, const std::string& base_path,
                      const std::string& new_path, const CompareOptions& opt) {
  CompareResult r;
  std::unordered_map<std::string, const Bench*> in_new;
  in_new.reserve(now.benches.size());
  for (const Bench& b : now.benches) in_new.emplace(b.name, &b);
  std::unordered_map<std::string, char> in_base;
  in_base.reserve(base.benches.size());
  size_t not_compared = 0;

  auto add_rows = [&](const Bench& b, const Bench* n) {
    CompareRow row;
    row.name = b.name;
    row.family = b.family;
    row.p = row.q = kNaN;
    bool bm = b.measured(), nm = n && n->measured();
    if (!bm && !nm) {
      ++not_compared;
      return;
    }
    row.base_ns = bm ? b.MedianNs() : kNaN;
    row.new_ns = nm ? n->MedianNs() : kNaN;
    row.base_reps = bm ? b.Repetitions() : 0;
    row.new_reps = nm ? n->Repetitions() : 0;
    row.delta = kNaN;
    if (!bm) {
      row.verdict = Verdict::kNew;
      if (!b.message.empty()) row.note = std::string("base: ") + b.message;
    } else if (!nm) {
      row.verdict = Verdict::kMissing;
      if (n && !n->message.empty())
        row.note = std::string(StatusName(n->status)) + ": " + n->message;
    } else {
      row.delta = RelativeChange(row.base_ns, row.new_ns);
      if (b.real_ns.size() >= kMinReps && n->real_ns.size() >= kMinReps &&
          b.cpu_ns.size() >= kMinReps && n->cpu_ns.size() >= kMinReps)
        row.p = MannWhitneyU(b.real_ns, n->real_ns).p;
      for (const auto& c : b.CounterNames()) {
        if (!IsRate(c)) continue;
        double ob = b.Counter(c), nb = n->Counter(c);
        if (std::isfinite(ob) && std::isfinite(nb)) row.rate_deltas[c] = RelativeChange(ob, nb);
      }
    }
    r.rows.push_back(std::move(row));
  };

  for (const Bench& b : base.benches) {
    in_base.emplace(b.name, 1);
    auto it = in_new.find(b.name);
    add_rows(b, it == in_new.end() ? nullptr : it->second);
  }
  for (const Bench& n : now.benches)
    if (!in_base.count(n.name)) {
      CompareRow row;
      row.name = n.name;
      row.family = n.family;
      row.p = row.q = row.delta = row.base_ns = kNaN;
      if (!n.measured()) {
        ++not_compared;
        continue;
      }
      row.new_ns = n.MedianNs();
      row.new_reps = n.Repetitions();
      row.verdict = Verdict::kNew;
      r.rows.push_back(std::move(row));
    }

  // Benjamini-Hochberg over every benchmark that has a test.
  std::vector<double> ps;
  ps.reserve(r.rows.size());
  for (const auto& row : r.rows) ps.push_back(row.p);
  std::vector<double> qs = BenjaminiHochberg(ps);
  std::vector<double> ratios;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    CompareRow& row = r.rows[i];
    row.q = qs[i];
    if (row.verdict == Verdict::kNew || row.verdict == Verdict::kMissing) continue;
    if (row.base_ns > 0 && row.new_ns > 0) ratios.push_back(row.new_ns / row.base_ns);
    bool tested = std::isfinite(row.q);
    bool significant = !tested || row.q < opt.alpha;
    if (!tested) row.note = "no U test (fewer than 2 repetitions)";
    if (std::fabs(row.delta) < opt.threshold)
      row.verdict = Verdict::kSame;
    else if (!significant)
      row.verdict = Verdict::kNoisy;
    else
      row.verdict = row.delta > 0 ? Verdict::kSlower : Verdict::kFaster;
    if (row.verdict == Verdict::kSlower) ++r.regressions;
  }
  r.geomean_count = ratios.size();
  r.geomean_delta = ratios.empty() ? kNaN : GeoMean(ratios) - 1;
  r.exit_code = r.regressions > 0 ? 3 : 0;

  // ---- the document ----
  Document& d = r.doc;
  d.title = "dlbench compare";
  d.notes.push_back("Base: " + base_path + "; new: " + new_path + ".");
  std::map<Verdict, int> counts;
  for (const auto& row : r.rows) ++counts[row.verdict];
  std::string tally;
  for (Verdict v : {Verdict::kSlower, Verdict::kFaster, Verdict::kNoisy, Verdict::kSame,
                    Verdict::kNew, Verdict::kMissing})
    tally +=
        std::string(tally.empty() ? "" : ", ") + std::to_string(counts[v]) + " " + VerdictName(v);
  d.notes.push_back(std::string(r.regressions ? "**REGRESSION**: " : "**OK**: ") +
                    std::to_string(r.regressions) + " significant slowdown(s) beyond " +
                    FormatPercent(opt.threshold, 1) + " (" + tally +
                    "). Geomean of time ratios: " + FormatSigned(r.geomean_delta) + " over " +
                    std::to_string(r.geomean_count) + " benchmarks.");
  d.notes.push_back(
      "Change = (new - base) / base of the median time. p: two-sided Mann-Whitney U over the "
      "real-time repetitions (as compare.py); q: Benjamini-Hochberg adjusted; a change counts when "
      "|change| >= threshold and q < " +
      FormatNumber(opt.alpha, 3) + " (or, without repetitions, on the threshold alone).");
  if (not_compared)
    d.notes.push_back(std::to_string(not_compared) +
                      " benchmark(s) measured in neither file (skipped or failed).");

  std::set<std::string> rate_names;
  for (const auto& row : r.rows)
    for (const auto& [k, v] : row.rate_deltas) rate_names.insert(k);
  auto make_table = [&](const std::string& title) {
    Table t;
    t.title = title;
    t.columns = {{"benchmark", "name"},
                 {"base", "base_ns"},
                 {"new", "new_ns"},
                 {"change", "change"},
                 {"p", "p"},
                 {"q", "q"},
                 {"reps", "reps"},
                 {"verdict", "verdict"}};
    for (const auto& c : rate_names) t.columns.push_back({RateTitle(c), "change_" + c});
    t.columns.push_back({"note", "note"});
    return t;
  };
  auto make_row = [&](const CompareRow& row) {
    std::vector<Cell> c;
    c.emplace_back(row.name);
    c.emplace_back(FormatTime(row.base_ns), row.base_ns);
    c.emplace_back(FormatTime(row.new_ns), row.new_ns);
    c.emplace_back(FormatSigned(row.delta), row.delta);
    c.emplace_back(FormatP(row.p), row.p);
    c.emplace_back(FormatP(row.q), row.q);
    c.emplace_back(std::to_string(row.base_reps) + "/" + std::to_string(row.new_reps));
    c.emplace_back(VerdictName(row.verdict));
    for (const auto& k : rate_names) {
      auto it = row.rate_deltas.find(k);
      c.push_back(it == row.rate_deltas.end() ? Cell("-")
                                              : Cell(FormatSigned(it->second), it->second));
    }
    c.emplace_back(row.note);
    return c;
  };
  if (r.regressions) {
    Section s;
    s.title = "Regressions";
    Table t = make_table("");
    for (const auto& row : r.rows)
      if (row.verdict == Verdict::kSlower) t.rows.push_back(make_row(row));
    s.tables.push_back(std::move(t));
    d.sections.push_back(std::move(s));
  }
  std::vector<std::string> families;
  std::map<std::string, Table> tables;
  size_t omitted = 0;
  for (const auto& row : r.rows) {
    if (opt.only_changes && row.verdict == Verdict::kSame) {
      ++omitted;
      continue;
    }
    auto [it, inserted] = tables.emplace(row.family, Table());
    if (inserted) {
      families.push_back(row.family);
      it->second = make_table("");
    }
    it->second.rows.push_back(make_row(row));
  }
  for (const auto& fam : families) {
    Section s;
    s.title = "Compare: " + fam;
    s.tables.push_back(std::move(tables[fam]));
    d.sections.push_back(std::move(s));
  }
  if (omitted)
    d.notes.push_back(std::to_string(omitted) + " benchmark(s) with verdict \"same\" left out.");
  Section g;
  g.title = "Geomean";
  Table t;
  t.columns = {{"benchmarks", "count"}, {"time ratio new/base", "ratio"}, {"change", "change"}};
  t.rows.push_back({Cell(std::to_string(r.geomean_count), static_cast<double>(r.geomean_count)),
                    Cell(FormatNumber(r.geomean_delta + 1, 4), r.geomean_delta + 1),
                    Cell(FormatSigned(r.geomean_delta), r.geomean_delta)});
  g.tables.push_back(std::move(t));
  d.sections.push_back(std::move(g));
  return r;
}

}  // namespace dlb::report
