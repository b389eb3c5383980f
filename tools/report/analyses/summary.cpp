#include "tools/report/analyses/summary.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/compare.h"
#include "tools/report/analyses/roofline.h"

namespace dlb::report {

namespace {

// The counters people look for first (rates, then what the device monitor says explains them),
// then the rest by name.
int CounterRank(const std::string& c) {
  static constexpr std::string_view kOrder[] = {
      schema::kFlopPerS,   schema::kBytesPerS,      schema::kItemsPerS,
      schema::kPctPeak,    schema::kPctPeakAtClock, schema::kSmClockMedianMhz,
      schema::kPowerMeanW, schema::kEnergyPerItemJ, schema::kThrottled,
      schema::kStalled,    schema::kStdrel};
  constexpr int n = int(std::size(kOrder));
  for (int i = 0; i < n; ++i)
    if (c == kOrder[i]) return i;
  return n;
}

std::string CounterTitle(const std::string& c) {
  if (c == schema::kFlopPerS) return "FLOP/s";
  if (c == schema::kBytesPerS) return "bytes/s";
  if (c == schema::kItemsPerS) return "items/s";
  if (c == schema::kPctPeak) return "% of peak";
  if (c == schema::kPctPeakAtClock) return "% of peak at clock";
  if (c == schema::kSmClockMedianMhz) return "SM clock (median)";
  if (c == schema::kPowerMeanW) return "power (mean)";
  if (c == schema::kEnergyPerItemJ) return "energy/item";
  if (c == schema::kThrottled) return "throttled";
  if (c == schema::kPeakRssBytes) return "peak RSS";
  if (c == schema::kStalled) return "stalled";
  if (c == schema::kStdrel) return "stdrel";
  return c;
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Cell CounterCell(const std::string& c, double v) {
  if (!std::isfinite(v)) return Cell("-");
  // Above 100%: the peak is below what the case reached; the Problems section says why.
  if (c == schema::kPctPeak || c == schema::kPctPeakAtClock || c == schema::kPctRoofline) {
    Cell pct = Cell::Number(v, 3).After("%");
    return v > 100 ? pct.Doubtful().With(Tone::kWarn) : pct;
  }
  if (c == schema::kSmClockMedianMhz) return Cell::Number(v, 4, "MHz");
  if (c == schema::kPowerMeanW) return Cell::Number(v, 3, "W");
  if (c == schema::kEnergyPerItemJ) return Cell::Number(v, 3, "J");
  if (c == schema::kPeakRssBytes) return Cell::Rate(v, "B");
  if (c == schema::kThrottled) return v > 0 ? Cell("yes", v).With(Tone::kWarn) : Cell("no", v);
  if (c == schema::kStalled) return v > 0 ? Cell("yes", v).With(Tone::kWarn) : Cell("", v);
  if (EndsWith(c, schema::kRateSuffix)) return Cell::Rate(v);
  return Cell::Number(v, 4);
}

// The relative standard deviation the timing reached, "⚠ 3.10% (not converged)" where the time
// cap ended it before the target.
Cell StdrelCell(const Bench& b) {
  const double v = b.Counter(schema::kStdrel);
  if (!std::isfinite(v)) return Cell("-");
  if (!(b.Counter(schema::kStdrelConverged) == 0)) return Cell::Percent(v, 2);
  return Cell::Percent(v, 2).Doubtful().After(" (not converged)").With(Tone::kWarn);
}

bool IntegerCase(const Bench* b) {
  return b->parsed && FlopUnit(b->parsed->Get(key::kDType)) == "OP/s";
}

Cell DispositionCell(const Verification& v) {
  if (!v.known()) return Cell("-");
  Cell c(v.disposition);
  return v.doubtful() ? c.With(Tone::kWarn) : c;
}

}  // namespace

std::string ContextLine(const std::map<std::string, std::string>& ctx) {
  std::string out;
  for (std::string_view k : {schema::kCtxHostName, schema::kCtxCpuModel, schema::kCtxGpuName,
                             schema::kCtxNumCpus, schema::kCtxDate, schema::kCtxLibraryBuildType,
                             schema::kCtxGitRevision, schema::kCtxVersion}) {
    std::string value = ContextValue(ctx, k);
    if (value.empty()) continue;
    if (!out.empty()) out += ", ";
    out += std::string(k) + ": " + value;
  }
  return out;
}

SummaryResult ComputeSummary(const MergedRuns& runs) {
  SummaryResult r;
  std::map<std::string, size_t> index;
  for (const Bench& b : runs.benches) {
    ++r.total;
    if (!b.measured()) {
      r.not_measured.push_back(&b);
      ++(b.status == Status::kUnsupported ? r.unsupported : r.failed);
      continue;
    }
    ++r.measured;
    auto [it, inserted] = index.emplace(b.family, r.families.size());
    if (inserted) r.families.push_back({b.family, {}, {}, false, {}});
    SummaryFamily& f = r.families[it->second];
    f.benches.push_back(&b);
    if (b.verification.known()) {
      f.verification = true;
      ++r.dispositions[b.verification.disposition];
      const std::string& m = b.verification.metric;
      if (!m.empty() && std::find(f.metrics.begin(), f.metrics.end(), m) == f.metrics.end())
        f.metrics.push_back(m);
    }
  }
  for (SummaryFamily& f : r.families) {
    std::set<std::string> names;
    for (const Bench* b : f.benches)
      for (const auto& c : b->CounterNames()) names.insert(c);
    // Whether stdrel converged is shown in the stdrel column.
    if (names.count(std::string(schema::kStdrel)))
      names.erase(std::string(schema::kStdrelConverged));
    f.counters.assign(names.begin(), names.end());
    std::stable_sort(f.counters.begin(), f.counters.end(),
                     [](const auto& a, const auto& b) { return CounterRank(a) < CounterRank(b); });
  }
  return r;
}

std::vector<Section> SummarySections(const SummaryResult& summary) {
  std::vector<Section> out = FamilySummarySections(summary);
  out.push_back(NotMeasuredSection(summary));
  return out;
}

std::vector<Section> FamilySummarySections(const SummaryResult& summary) {
  std::vector<Section> out;
  for (const SummaryFamily& f : summary.families) {
    Section s;
    s.title = "Summary: " + f.family;
    if (f.verification)
      s.notes.push_back(
          "verification: the disposition each result carries (verified: checked against an "
          "independent reference within tolerance; not_verified: not checked; mistrusted: the "
          "check passed but the result is implausible)" +
          (f.metrics.empty() ? std::string(".")
                             : "; error and tolerance in " + Join(f.metrics, ", ") + "."));
    const bool stalled = std::count(f.counters.begin(), f.counters.end(), schema::kStalled) > 0;
    const bool stdrel = std::count(f.counters.begin(), f.counters.end(), schema::kStdrel) > 0;
    if (stalled || stdrel)
      s.notes.push_back(
          std::string("timing fidelity:") +
          (stdrel ? " stdrel is the relative standard deviation the timing samples reached "
                    "(--dlb_stdrel), ⚠ where the time cap ended it before the target;"
                  : "") +
          (stalled ? " stalled: the timing pass stalled (a stretch far beyond the noise) and the "
                     "case was re-timed; its time may still carry the stall."
                   : ""));
    Table t;
    t.columns = {{"benchmark", "name"}, {"median", "median_ns"}, {"CV", "cv"}, {"reps", "reps"}};
    // Integer cases count operations, not floating-point ones: beside them every rate names its
    // unit, OP/s or FLOP/s.
    const bool integer = std::any_of(f.benches.begin(), f.benches.end(), IntegerCase);
    for (const auto& c : f.counters)
      t.columns.push_back(
          {c == schema::kFlopPerS && integer ? "FLOP/s or OP/s (int)" : CounterTitle(c), c});
    if (f.verification) {
      t.columns.push_back({"verification", std::string(schema::kDisposition)});
      t.columns.push_back({"error", std::string(schema::kError)});
      t.columns.push_back({"tolerance", std::string(schema::kTolerance)});
    }
    t.rows.reserve(f.benches.size());
    for (const Bench* b : f.benches) {
      std::vector<Cell> row;
      row.reserve(t.columns.size());
      row.emplace_back(b->name);
      double m = b->MedianNs(), cv = b->Cv();
      row.push_back(Cell::Time(m));
      row.push_back(Cell::Percent(cv, 2));
      row.push_back(Cell::Count(b->Repetitions()));
      for (const auto& c : f.counters) {
        const double v = b->Counter(c);
        if (c == schema::kStdrel)
          row.push_back(StdrelCell(*b));
        else if (c == schema::kThrottled && std::isfinite(v))
          row.push_back(CounterCell(c, double(AnyThrottled(*b))));
        else if (c == schema::kStalled && std::isfinite(v))
          row.push_back(CounterCell(c, double(AnyStalled(*b))));
        else if (c == schema::kFlopPerS && integer && std::isfinite(v))
          row.push_back(Cell::Rate(v, FlopUnit(b->parsed ? b->parsed->Get(key::kDType) : "")));
        else
          row.push_back(CounterCell(c, v));
      }
      if (f.verification) {
        const Verification& v = b->verification;
        row.push_back(DispositionCell(v));
        row.push_back(Cell::Number(v.error, 3));
        row.push_back(Cell::Number(v.tolerance, 3));
      }
      t.rows.push_back(std::move(row));
    }
    if (std::vector<std::string> shared = SplitNameColumn(&t, 0); !shared.empty())
      s.notes.push_back("Every case here: " + Join(shared, ", ") + ".");
    s.tables.push_back(std::move(t));
    out.push_back(std::move(s));
  }
  return out;
}

Section NotMeasuredSection(const SummaryResult& summary) {
  Section sk;
  sk.title = "Unsupported and failed";
  if (summary.not_measured.empty()) {
    sk.notes.push_back("None: every case was measured.");
  } else {
    Table t;
    t.columns = {{"benchmark", "name"}, {"state", "state"}, {"reason", "reason"}};
    for (const Bench* b : summary.not_measured) {
      Cell state(StatusName(b->status));
      if (b->status == Status::kFailed) state.With(Tone::kBad);
      t.rows.push_back({Cell(b->name), state, Cell(b->message)});
    }
    if (std::vector<std::string> shared = SplitNameColumn(&t, 0); !shared.empty())
      sk.notes.push_back("Every case here: " + Join(shared, ", ") + ".");
    sk.tables.push_back(std::move(t));
  }
  return sk;
}

Section LabelSection(const MergedRuns& runs) {
  Section s;
  s.title = "Labels";
  s.details = true;
  Table t;
  t.columns = {{"benchmark", "name"}, {"label", "label"}};
  for (const Bench& b : runs.benches)
    if (!b.label.empty()) t.rows.push_back({Cell(b.name), Cell(b.label)});
  if (t.rows.empty())
    s.notes.push_back("No result carries a label.");
  else
    s.tables.push_back(std::move(t));
  return s;
}

Document Summary(const MergedRuns& runs, const std::vector<std::string>& inputs) {
  Document d;
  d.title = "dlbench summary";
  d.notes.push_back(InputsNote(inputs));
  if (auto c = ContextLine(runs.context); !c.empty()) d.notes.push_back("Context: " + c);
  SummaryResult s = ComputeSummary(runs);
  d.notes.push_back(std::to_string(s.total) + " benchmarks, " + std::to_string(s.measured) +
                    " measured. Median over repetitions; CV = sample standard deviation / mean.");
  d.sections = SummarySections(s);
  for (Section& r : RooflineSections(ComputeRoofline(runs), runs.context, false))
    d.sections.push_back(std::move(r));
  d.sections.push_back(LabelSection(runs));
  return d;
}

}  // namespace dlb::report
