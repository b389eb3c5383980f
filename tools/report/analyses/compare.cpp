#include "tools/report/analyses/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/libraries.h"
#include "tools/report/analyses/repro.h"
#include "tools/report/analyses/setup.h"
#include "tools/report/analyses/stats.h"

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

bool AnyThrottled(const Bench& b) {
  auto it = b.counters.find(schema::kThrottled);
  if (it != b.counters.end())
    return std::any_of(it->second.begin(), it->second.end(), [](double v) { return v > 0; });
  return b.Counter(schema::kThrottled) > 0;
}

bool AnyStalled(const Bench& b) {
  auto it = b.counters.find(schema::kStalled);
  if (it != b.counters.end())
    return std::any_of(it->second.begin(), it->second.end(), [](double v) { return v > 0; });
  return b.Counter(schema::kStalled) > 0;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool IsRate(const std::string& c) {
  return c.size() > schema::kRateSuffix.size() &&
         c.compare(c.size() - schema::kRateSuffix.size(), schema::kRateSuffix.size(),
                   schema::kRateSuffix) == 0;
}

std::string RateTitle(const std::string& c) {
  if (c == schema::kFlopPerS) return "Δ FLOP/s";
  if (c == schema::kBytesPerS) return "Δ bytes/s";
  if (c == schema::kItemsPerS) return "Δ items/s";
  return "Δ " + c;
}

void MarkVerification(const Bench* b, const Bench* n, CompareRow* row) {
  if (b) row->base_disposition = b->verification.disposition;
  if (n) row->new_disposition = n->verification.disposition;
  row->doubtful = (b && b->verification.doubtful()) || (n && n->verification.doubtful());
}

// Each side's median SM clock and throttling, and whether they make the row's change suspect.
void MarkClock(const Bench* b, const Bench* n, CompareRow* row) {
  row->base_clock = b ? b->Counter(schema::kSmClockMedianMhz) : kNaN;
  row->new_clock = n ? n->Counter(schema::kSmClockMedianMhz) : kNaN;
  row->base_throttled = b && AnyThrottled(*b);
  row->new_throttled = n && AnyThrottled(*n);
  const bool differ = row->base_clock > 0 && row->new_clock > 0 &&
                      std::fabs(RelativeChange(row->base_clock, row->new_clock)) > kClockDiffers;
  row->clock_flag = row->base_throttled || row->new_throttled || differ;
}

void MarkStalled(const Bench* b, const Bench* n, CompareRow* row) {
  row->base_stalled = b && AnyStalled(*b);
  row->new_stalled = n && AnyStalled(*n);
}

// "⚠ stalled in new": which side's timing pass stalled and was re-timed.
Cell TimingCell(const CompareRow& row) {
  if (!row.base_stalled && !row.new_stalled) return Cell("-");
  return Cell(std::string("⚠ stalled in ") + (row.base_stalled && row.new_stalled ? "both"
                                              : row.base_stalled                  ? "base"
                                                                                  : "new"))
      .With(Tone::kWarn);
}

// The kernel diff in a few words, or why there is none.
Cell KernelsCell(const CompareRow& row) {
  std::string text = row.kernels ? KernelDiffSummary(*row.kernels) : std::string();
  if (!row.kernels_note.empty()) text += (text.empty() ? "" : "; ") + row.kernels_note;
  return Cell(text.empty() ? std::string("-") : text);
}

bool Monitored(const CompareRow& row) {
  return std::isfinite(row.base_clock) || std::isfinite(row.new_clock) || row.base_throttled ||
         row.new_throttled;
}

// "1980 → 1755 MHz", "⚠" first when the row is flagged, and which side throttled.
Cell ClockCell(const CompareRow& row) {
  if (!Monitored(row)) return Cell("-");
  auto mhz = [](double v) { return std::isfinite(v) ? Cell::Number(v, 4) : Cell("?"); };
  std::string text = row.clock_flag ? "⚠ " : "";
  text += Prose({mhz(row.base_clock), " → ", mhz(row.new_clock), " MHz"});
  if (row.base_throttled || row.new_throttled)
    text += std::string(", throttled in ") + (row.base_throttled && row.new_throttled ? "both"
                                              : row.base_throttled                    ? "base"
                                                                                      : "new");
  Cell c(text);
  return row.clock_flag ? c.With(Tone::kWarn) : c;
}

// "verified", or what each side says, "⚠" first when a side was not verified or was mistrusted.
Cell VerificationCell(const CompareRow& row) {
  const std::string &b = row.base_disposition, &n = row.new_disposition;
  if (b.empty() && n.empty()) return Cell("-");
  if (b == n && !row.doubtful) return Cell(b);
  std::string text = row.doubtful ? "⚠ " : "";
  if (!b.empty()) text += "base " + b;
  if (!n.empty()) text += std::string(b.empty() ? "" : ", ") + "new " + n;
  Cell c(text);
  return row.doubtful ? c.With(Tone::kWarn) : c;
}

// What a flagged row carries for the diagnosis: the repro command and the kernel diff.
void AttachDiagnosis(const MergedRuns& base, const MergedRuns& now, CompareResult* r) {
  std::unordered_map<std::string, const Bench*> b_of, n_of;
  for (const Bench& b : base.benches) b_of.emplace(b.name, &b);
  for (const Bench& n : now.benches) n_of.emplace(n.name, &n);
  if (auto it = now.context.find(std::string(schema::kCtxKernels)); it != now.context.end())
    r->kernels_recorded = it->second;
  r->libraries = LibrariesNote(base.context, now.context);
  r->settings = SetupNote(base.context, now.context);
  for (CompareRow& row : r->rows) {
    if (!Flagged(row)) continue;
    ++r->flagged;
    row.repro = ReproCommand(now.context, row.name);
    const Bench* b = b_of.count(row.name) ? b_of[row.name] : nullptr;
    const Bench* n = n_of.count(row.name) ? n_of[row.name] : nullptr;
    if (!b || !n) continue;
    std::string why;
    for (const auto& [side, bench] : {std::pair("base", b), std::pair("new", n)})
      if (!bench->ignored.empty())
        why += std::string(why.empty() ? "" : "; ") + side + ": " + bench->ignored;
    if (b->kernels && n->kernels) {
      row.kernels = DiffKernels(*b->kernels, *n->kernels, row.base_ns, row.new_ns);
      ++r->kernel_diffs;
    } else if (b->kernels || n->kernels) {
      row.kernels_note = std::string("no kernel table in ") + (b->kernels ? "new" : "base");
    }
    if (!why.empty()) row.kernels_note += (row.kernels_note.empty() ? "" : "; ") + why;
  }
}

}  // namespace

CompareResult Compare(const MergedRuns& base, const MergedRuns& now, const CompareOptions& opt) {
  CompareResult r;
  std::unordered_map<std::string, const Bench*> in_new;
  in_new.reserve(now.benches.size());
  for (const Bench& b : now.benches) in_new.emplace(b.name, &b);
  std::unordered_map<std::string, char> in_base;
  in_base.reserve(base.benches.size());

  auto add_row = [&](const Bench& b, const Bench* n) {
    CompareRow row;
    row.name = b.name;
    row.family = b.family;
    row.p = row.q = row.cpu_p = kNaN;
    bool bm = b.measured(), nm = n && n->measured();
    if (!bm && !nm) {
      ++r.not_compared;
      return;
    }
    row.base_ns = bm ? b.MedianNs() : kNaN;
    row.new_ns = nm ? n->MedianNs() : kNaN;
    row.base_reps = bm ? b.Repetitions() : 0;
    row.new_reps = nm ? n->Repetitions() : 0;
    row.base_behind = bm ? b.RepetitionsBehind() : 0;
    row.new_behind = nm ? n->RepetitionsBehind() : 0;
    row.delta = row.cpu_delta = kNaN;
    MarkVerification(&b, n, &row);
    MarkClock(bm ? &b : nullptr, nm ? n : nullptr, &row);
    MarkStalled(bm ? &b : nullptr, nm ? n : nullptr, &row);
    if (!bm) {
      row.verdict = Verdict::kNew;
      if (!b.message.empty()) row.note = std::string("base: ") + b.message;
    } else if (!nm) {
      row.verdict = Verdict::kMissing;
      if (n && !n->message.empty())
        row.note = std::string(StatusName(n->status)) + ": " + n->message;
    } else {
      row.delta = RelativeChange(row.base_ns, row.new_ns);
      if (!b.cpu_ns.empty() && !n->cpu_ns.empty())
        row.cpu_delta = RelativeChange(Median(b.cpu_ns), Median(n->cpu_ns));
      if (b.real_ns.size() >= kUTestMinRepetitions && n->real_ns.size() >= kUTestMinRepetitions &&
          b.cpu_ns.size() >= kUTestMinRepetitions && n->cpu_ns.size() >= kUTestMinRepetitions) {
        row.p = MannWhitneyU(b.real_ns, n->real_ns).p;
        row.cpu_p = MannWhitneyU(b.cpu_ns, n->cpu_ns).p;
      }
      for (const auto& c : b.CounterNames()) {
        if (!IsRate(c)) continue;
        double ob = b.Counter(c), nb = n->Counter(c);
        if (std::isfinite(ob) && std::isfinite(nb)) row.rate_deltas[c] = RelativeChange(ob, nb);
      }
      if (!b.time_unit.empty() && !n->time_unit.empty() && b.time_unit != n->time_unit)
        row.note = "time unit " + b.time_unit + " in base, " + n->time_unit +
                   " in new: compared in ns (compare.py leaves such a pair out)";
    }
    r.rows.push_back(std::move(row));
  };

  for (const Bench& b : base.benches) {
    in_base.emplace(b.name, 1);
    auto it = in_new.find(b.name);
    add_row(b, it == in_new.end() ? nullptr : it->second);
  }
  for (const Bench& n : now.benches)
    if (!in_base.count(n.name)) {
      CompareRow row;
      row.name = n.name;
      row.family = n.family;
      row.p = row.q = row.cpu_p = row.delta = row.cpu_delta = row.base_ns = kNaN;
      if (!n.measured()) {
        ++r.not_compared;
        continue;
      }
      row.new_ns = n.MedianNs();
      row.new_reps = n.Repetitions();
      row.verdict = Verdict::kNew;
      MarkVerification(nullptr, &n, &row);
      MarkClock(nullptr, &n, &row);
      MarkStalled(nullptr, &n, &row);
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
    r.doubtful += row.doubtful;
    r.clock_flags += row.clock_flag;
    r.stalled += row.base_stalled || row.new_stalled;
    if (row.verdict == Verdict::kNew || row.verdict == Verdict::kMissing) continue;
    if (row.base_ns > 0 && row.new_ns > 0) ratios.push_back(row.new_ns / row.base_ns);
    bool tested = std::isfinite(row.q);
    bool significant = !tested || row.q < opt.alpha;
    if (!tested && row.note.empty()) row.note = "no U test (fewer than 2 repetitions)";
    ++r.common;
    if (std::fabs(row.delta) < opt.threshold)
      row.verdict = Verdict::kSame;
    else if (!significant)
      row.verdict = Verdict::kNoisy;
    else
      row.verdict = row.delta > 0 ? Verdict::kSlower : Verdict::kFaster;
    const size_t reps = std::min(row.base_behind, row.new_behind);
    if (Flagged(row) && reps < size_t(std::max(1, opt.min_repetitions))) {
      row.unconfirmed = true;
      ++r.unconfirmed;
      const std::string why = "unconfirmed: " + std::to_string(reps) + " repetition" +
                              (reps == 1 ? "" : "s") + " on a side, fewer than " +
                              std::to_string(opt.min_repetitions) + " (--min-repetitions)";
      row.note = row.note.empty() || row.note == "no U test (fewer than 2 repetitions)"
                     ? why
                     : row.note + "; " + why;
    }
    if (row.verdict == Verdict::kSlower && !row.unconfirmed) ++r.regressions;
  }
  AttachDiagnosis(base, now, &r);
  r.geomean_count = ratios.size();
  r.geomean_delta = ratios.empty() ? kNaN : GeoMean(ratios) - 1;
  r.exit_code = r.regressions > 0 ? 3 : 0;
  return r;
}

namespace {

// The verdict counts, the geomean, what the marks mean and how a change counts.
void AddCompareNotes(const CompareResult& r, const CompareOptions& opt, Document* doc) {
  Document& d = *doc;
  std::map<Verdict, int> counts;
  for (const auto& row : r.rows) ++counts[row.verdict];
  std::string tally;
  for (Verdict v : {Verdict::kSlower, Verdict::kFaster, Verdict::kNoisy, Verdict::kSame,
                    Verdict::kNew, Verdict::kMissing})
    tally +=
        std::string(tally.empty() ? "" : ", ") + std::to_string(counts[v]) + " " + VerdictName(v);
  d.notes.push_back(std::string(r.regressions ? "**REGRESSION**: " : "**OK**: ") +
                    Prose({Cell::Count(r.regressions), " significant slowdown(s) beyond ",
                           Cell::Percent(opt.threshold, 1), " (", tally,
                           "). Geomean of time ratios: ", Cell::Signed(r.geomean_delta), " over ",
                           Cell::Count(r.geomean_count), " benchmarks."}));
  if (!r.libraries.empty()) d.notes.push_back(r.libraries);
  if (!r.settings.empty()) d.notes.push_back(r.settings);
  if (r.unconfirmed)
    d.notes.push_back("⚠ " + std::to_string(r.unconfirmed) +
                      " change(s) unconfirmed: measured with fewer than " +
                      std::to_string(opt.min_repetitions) +
                      " repetitions on a side, so one noisy run can make them; they do not fail "
                      "the gate (re-run with --benchmark_repetitions, or judge them with "
                      "--min-repetitions 1).");
  if (r.doubtful)
    d.notes.push_back("⚠ " + std::to_string(r.doubtful) +
                      " row(s) where either side was not verified or was mistrusted: their "
                      "change may come from a wrong result rather than from speed (column "
                      "\"verification\").");
  if (r.clock_flags)
    d.notes.push_back("⚠ " + std::to_string(r.clock_flags) +
                      " row(s) where either side throttled or the median SM clocks differ by more "
                      "than " +
                      Prose({Cell::Percent(kClockDiffers, 0)}) +
                      ": their change may come from the GPU's clock rather than from the code "
                      "(column \"clock\").");
  if (r.stalled)
    d.notes.push_back("⚠ " + std::to_string(r.stalled) +
                      " row(s) where either side's timing pass stalled and was re-timed: their "
                      "time may still carry the stall rather than the code's speed (column "
                      "\"timing\").");
  d.notes.push_back(
      "Change = (new - base) / base of the median time. p: two-sided Mann-Whitney U over the "
      "real-time repetitions (as compare.py); q: Benjamini-Hochberg adjusted; a change counts when "
      "|change| >= threshold and q < " +
      Prose({Cell::Number(opt.alpha, 3)}) + " (or, without repetitions, on the threshold alone).");
  // The next step for a flagged case is its kernels: say how to get them when no run has them.
  if (r.flagged && !r.kernel_diffs && r.kernels_recorded.rfind("off", 0) == 0)
    d.notes.push_back(
        "No kernel tables in these runs (dlbench_kernels " + r.kernels_recorded +
        "): runs with --dlb_kernels=on give each flagged case the kernels that changed.");
  if (r.not_compared)
    d.notes.push_back(std::to_string(r.not_compared) +
                      " benchmark(s) with a time in neither file (skipped, failed, or only "
                      "aggregates that are not a time).");
}

// The columns every compare table shares: the rate counters and the marks that any row has.
struct CompareTableShape {
  bool verification = false, clock = false, timing = false, kernels = false, repro = false;
  std::set<std::string> rate_names;

  explicit CompareTableShape(const CompareResult& r) {
    for (const auto& row : r.rows) {
      for (const auto& [k, v] : row.rate_deltas) rate_names.insert(k);
      verification |= !row.base_disposition.empty() || !row.new_disposition.empty();
      clock |= Monitored(row);
      timing |= row.base_stalled || row.new_stalled;
      kernels |= row.kernels.has_value() || !row.kernels_note.empty();
      repro |= !row.repro.empty();
    }
  }
  // The benchmark's name twice: whole for CSV and JSON, and as the one that SplitNames splits
  // into its parts for people.
  Table Make() const {
    Table t;
    t.columns = {{"benchmark", "name", true},
                 {"benchmark", "name"},
                 {"base", "base_ns"},
                 {"new", "new_ns"},
                 {"change", "change"},
                 {"p", "p"},
                 {"q", "q"},
                 {"reps", "reps"},
                 {"verdict", "verdict"}};
    for (const auto& c : rate_names) t.columns.push_back({RateTitle(c), "change_" + c});
    if (verification) t.columns.push_back({"verification", "verification"});
    if (clock) t.columns.push_back({"clock", "clock"});
    if (timing) t.columns.push_back({"timing", "timing"});
    if (kernels) t.columns.push_back({"kernels", "kernels"});
    t.columns.push_back({"note", "note"});
    // Too long for a table a person reads: Markdown and HTML show it in FlaggedSection.
    if (repro) t.columns.push_back({"repro", "repro", true});
    return t;
  }
  std::vector<Cell> Row(const CompareRow& row) const {
    std::vector<Cell> c;
    c.emplace_back(row.name);
    c.emplace_back(row.name);
    c.push_back(Cell::Time(row.base_ns));
    c.push_back(Cell::Time(row.new_ns));
    c.push_back(Cell::Signed(row.delta));
    c.push_back(Cell::P(row.p));
    c.push_back(Cell::P(row.q));
    c.emplace_back(std::to_string(row.base_reps) + "/" + std::to_string(row.new_reps));
    Cell verdict(std::string(VerdictName(row.verdict)) + (row.unconfirmed ? " (unconfirmed)" : ""));
    if (row.verdict == Verdict::kSlower && !row.unconfirmed) verdict.With(Tone::kBad);
    if (row.verdict == Verdict::kFaster && !row.unconfirmed) verdict.With(Tone::kGood);
    c.push_back(verdict);
    for (const auto& k : rate_names) {
      auto it = row.rate_deltas.find(k);
      c.push_back(it == row.rate_deltas.end() ? Cell("-") : Cell::Signed(it->second));
    }
    if (verification) c.push_back(VerificationCell(row));
    if (clock) c.push_back(ClockCell(row));
    if (timing) c.push_back(TimingCell(row));
    if (kernels) c.push_back(KernelsCell(row));
    c.emplace_back(row.note);
    if (repro) c.emplace_back(row.repro);
    return c;
  }
};

// The name column split into family, device, backend, workload and the keys that vary (as the
// summary's tables), the keys every row shares in a note; where a name does not follow the scheme
// the table keeps it whole, once.
void SplitNames(Table t, Section* s) {
  if (std::vector<std::string> shared = SplitNameColumn(&t, 1); !shared.empty())
    s->notes.push_back("Every case here: " + Join(shared, ", ") + ".");
  if (t.columns.size() > 1 && t.columns[1].key == "name") {
    t.columns.erase(t.columns.begin());
    for (auto& row : t.rows) row.erase(row.begin());
  }
  s->tables.push_back(std::move(t));
}

// "slower +20.00% (57.2 µs → 68.6 µs): <name>": a flagged row on one line, its name whole.
std::string FlaggedLine(const CompareRow& row) {
  return Prose({VerdictName(row.verdict), row.unconfirmed ? " (unconfirmed)" : "", " ",
                Cell::Signed(row.delta), " (", Cell::Time(row.base_ns), " → ",
                Cell::Time(row.new_ns), "): ", row.name});
}

// Every slower and faster case by its full name (what a CI log is searched for), each followed by
// the command that re-runs it alone where the new run's context names its binary.
Section FlaggedSection(const CompareResult& r) {
  Section s;
  s.title = "Flagged cases";
  bool any_command = false;
  for (const CompareRow& row : r.rows) {
    if (!Flagged(row)) continue;
    s.code.push_back("# " + FlaggedLine(row));
    if (!row.repro.empty()) s.code.push_back(row.repro);
    any_command |= !row.repro.empty();
  }
  s.notes.push_back(any_command
                        ? "Each slower or faster case by its full name, and the command that "
                          "re-runs it alone with the new run's flags:"
                        : "Each slower or faster case by its full name (the new run's context "
                          "names no binary to re-run it with):");
  return s;
}

// Per flagged case with a kernel diff, its table: the details under the rows' "kernels" cells.
Section KernelChangesSection(const CompareResult& r) {
  Section s;
  s.title = "Kernel changes of the flagged cases";
  s.details = true;
  s.notes.push_back(
      "Per flagged case with a kernel table on both sides: each kernel's time per Run() (its "
      "total over the Run()s recorded), appeared, vanished, grew or shrank (by " +
      Prose({Cell::Percent(kKernelSame, 0)}) +
      " or more), and its change as a share of the case's change in median time per Run(). "
      "\"all kernels\" short of 100%: time outside the kernels (launch gaps, host work).");
  for (const CompareRow& row : r.rows)
    if (row.kernels)
      s.tables.push_back(KernelDiffTable(
          *row.kernels,
          Prose({row.name, " (", VerdictName(row.verdict), ", ", Cell::Signed(row.delta), ")"})));
  return s;
}

Section GeomeanSection(const CompareResult& r) {
  Section g;
  g.title = "Geomean";
  Table t;
  t.columns = {{"benchmarks", "count"}, {"time ratio new/base", "ratio"}, {"change", "change"}};
  t.rows.push_back({Cell(std::to_string(r.geomean_count), static_cast<double>(r.geomean_count)),
                    Cell::Number(r.geomean_delta + 1, 4), Cell::Signed(r.geomean_delta)});
  g.tables.push_back(std::move(t));
  return g;
}

}  // namespace

Document CompareDocument(const CompareResult& r, const CompareOptions& opt,
                         const std::string& base_path, const std::string& new_path,
                         const std::vector<GbenchDiff>* as_compare_py, bool aggregates_only) {
  Document d;
  d.title = "dlbench compare";
  d.short_markdown_lines = true;
  d.notes.push_back("Base: " + base_path + "; new: " + new_path + ".");
  AddCompareNotes(r, opt, &d);
  const CompareTableShape shape(r);
  if (r.regressions) {
    Section s;
    s.title = "Regressions";
    Table t = shape.Make();
    for (const auto& row : r.rows)
      if (row.verdict == Verdict::kSlower) t.rows.push_back(shape.Row(row));
    SplitNames(std::move(t), &s);
    d.sections.push_back(std::move(s));
  }
  if (r.flagged) d.sections.push_back(FlaggedSection(r));
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
      it->second = shape.Make();
    }
    it->second.rows.push_back(shape.Row(row));
  }
  for (const auto& fam : families) {
    Section s;
    s.title = "Compare: " + fam;
    SplitNames(std::move(tables[fam]), &s);
    d.sections.push_back(std::move(s));
  }
  if (omitted)
    d.notes.push_back(std::to_string(omitted) + " benchmark(s) with verdict \"same\" left out.");
  d.sections.push_back(GeomeanSection(r));
  if (r.kernel_diffs) d.sections.push_back(KernelChangesSection(r));
  if (as_compare_py)
    d.sections.push_back(DifferenceSection(*as_compare_py, aggregates_only, opt.alpha));
  return d;
}

}  // namespace dlb::report
