// history check: the newest runs of a machine and branch against their window of earlier runs
// (their median and the case's run-to-run noise; a slowdown fails once confirmed,
// analyses/gate.h), the change points of each case over the longer history (FindChangePoints over
// each case's series of its newest build, as the site finds them), each named as an environment
// change where the case's own libraries, driver or flags changed across it (environment.h), and,
// under a flagged case, the command that re-runs it and its kernels' changes.
#include "tools/report/analyses/check.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <unordered_map>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/bisect.h"
#include "tools/report/analyses/gate.h"
#include "tools/report/analyses/kernel_diff.h"
#include "tools/report/analyses/libraries.h"
#include "tools/report/analyses/repro.h"
#include "tools/report/analyses/stats.h"
#include "tools/report/history/environment.h"
#include "tools/report/history/history.h"
#include "tools/report/history/series.h"
#include "tools/report/history/store.h"
#include "tools/report/history/tables.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report {

using namespace history;  // the tables (tables.h)

namespace {

// A change point's row: where it is (position among the runs read, its run's date and commit,
// which with the machine identify the run in the store), the two levels and the U test.
std::vector<Cell> StepRow(const std::string& name, const std::string& verdict, const ChangePoint* c,
                          const CaseSeries& s, const std::vector<RunInfo>& runs) {
  std::vector<Cell> row{Cell(name), Cell(verdict)};
  if (!c) {
    for (int i = 0; i < 10; ++i) row.emplace_back("-");  // through bisect
    return row;
  }
  const RunRow& at = runs[s.points[c->at].run].row;
  row.emplace_back("#" + std::to_string(s.points[c->at].run + 1),
                   static_cast<double>(s.points[c->at].run + 1));
  row.emplace_back(at.date);
  row.emplace_back(at.commit);
  row.emplace_back(FormatTime(c->before), c->before);
  row.emplace_back(FormatTime(c->after), c->after);
  row.emplace_back(FormatSigned(c->change), c->change);
  row.emplace_back(FormatP(c->p), c->p);
  row.emplace_back(std::to_string(c->at - c->from), static_cast<double>(c->at - c->from));
  row.emplace_back(std::to_string(c->to - c->at), static_cast<double>(c->to - c->at));
  return row;
}

// What history check adds under a flagged case: the command that re-runs it and, where the store
// keeps kernel tables, which kernels changed between the newest run and the latest run before it
// that recorded a table.
struct Diagnosis {
  std::string kernels, repro;
  std::string environment;   // the change of the case's environment its verdict or step meets
  std::string confirmation;  // of a newest-run slowdown: what confirmed it, or what it lacks
  std::optional<Table> table;
};

// Per case of the newest run, its series of `all` (ReadSeries over `runs` runs) cut to the newest
// `last` of those runs, runs counted from the first of them: the build it was measured in now,
// never another tier's or build's. `others` counts the other builds' series there.
std::map<std::string, CaseSeries> NewestSeries(const std::vector<CaseSeries>& all, size_t runs,
                                               size_t last, int* others) {
  std::map<std::string, CaseSeries> out;
  const size_t first = runs - last;
  for (const CaseSeries& s : all) {
    CaseSeries cut{s.name, s.family, s.build, {}};
    for (const Point& p : s.points)
      if (p.run >= first) {
        cut.points.push_back(p);
        cut.points.back().run -= first;
      }
    if (cut.points.empty()) continue;
    if (cut.points.back().run + 1 == last)
      out[s.name] = std::move(cut);
    else if (others)
      ++*others;
  }
  return out;
}

// The case's medians per run of the window (NaN where its series has none), the newest last.
std::vector<double> WindowMedians(const CaseSeries& s, size_t runs) {
  std::vector<double> v(runs, NAN);
  for (const Point& p : s.points) v[p.run] = p.median_ns;
  return v;
}

// Where the window's median was measured mostly in another environment than the newest point
// (at least half its points differ): what changed, at the first run after the latest point that
// differs. "" otherwise: an environment change long enough ago leaves the newest run's verdict to
// the code.
std::string NewestEnvironment(const CaseSeries& s) {
  const Point& now = s.points.back();
  size_t differ = 0;
  std::string latest;
  for (size_t i = s.points.size() - 1; i-- > 0;) {
    std::vector<std::string> changes =
        EnvironmentChanges(*s.points[i].context, *now.context, s.family);
    if (changes.empty()) continue;
    ++differ;
    if (latest.empty()) latest = EnvironmentNote(changes, s.points[i + 1].run + 1);
  }
  return 2 * differ >= s.points.size() - 1 ? latest : "";
}

// Across a change point: what changed in the case's own environment ("" when nothing did).
std::string StepEnvironment(const CaseSeries& s, const ChangePoint& c) {
  return EnvironmentNote(
      EnvironmentChanges(*s.points[c.at - 1].context, *s.points[c.at].context, s.family),
      s.points[c.at].run + 1);
}

// The note when the window's runs loaded other library versions than the newest run, per binary:
// each case read in the contexts of the files that measured it (those of its own binary), its
// cases grouped by the newest run's file.
std::string LibrariesNote(const std::map<std::string, CaseSeries>& window) {
  std::map<const Context*, std::vector<const CaseSeries*>> by_file;
  for (const auto& [name, s] : window) by_file[s.points.back().context.get()].push_back(&s);
  std::vector<LibraryRuns> binaries;
  for (const auto& [newest, cases] : by_file) {
    LibraryRuns b;
    b.newest = *newest;
    for (size_t i = 0; i + 1 < cases.front()->points.size(); ++i)
      b.window.push_back(*cases.front()->points[i].context);
    std::string binary = ContextValue(*newest, schema::kCtxExecutable);
    binary = binary.substr(binary.find_last_of('/') + 1);
    if (binary.empty()) binary = "the " + cases.front()->family + " binary";
    b.who =
        binary + " (" + std::to_string(cases.size()) + (cases.size() == 1 ? " case)" : " cases)");
    binaries.push_back(std::move(b));
  }
  return LibrariesAcrossRunsNote(binaries);
}

class Diagnoser {
 public:
  Diagnoser(Store& db, const std::vector<RunRow>& runs) : runs_(runs) {
    if (db.HasTable("kernels"))
      kernels_ = db.Prepare("SELECT run_id, kernels FROM kernels WHERE name = ? AND run_id IN (" +
                                RunIdList(runs, &col_) + ")",
                            "kernels");
  }

  // medians: the case's median per run (runs_' order), the newest last.
  // context: the newest run's context of the file that measured the case (its own binary).
  Diagnosis Of(const std::string& name, const std::vector<double>& medians, const char* verdict,
               const Context& context) {
    Diagnosis d;
    d.repro = ReproCommand(context, name);
    if (!kernels_) return d;
    std::vector<std::string> text(runs_.size());
    kernels_->Bind(1, name);
    while (kernels_->Step()) text[col_[kernels_->Int(0)]] = kernels_->Text(1);
    kernels_->Reset();
    const size_t last = runs_.size() - 1;
    if (text[last].empty()) return d;
    std::string why;
    std::optional<KernelTable> now = ParseKernels(text[last], &why);
    for (size_t i = last; now && i-- > 0;) {
      if (text[i].empty() || !std::isfinite(medians[i])) continue;
      std::optional<KernelTable> before = ParseKernels(text[i], &why);
      if (!before) break;
      KernelDiff diff = DiffKernels(*before, *now, medians[i], medians[last]);
      d.kernels = "vs run #" + std::to_string(i + 1) + ": " + KernelDiffSummary(diff);
      d.table = KernelDiffTable(diff, name + " (" + verdict + "; the newest run against run #" +
                                          std::to_string(i + 1) + ", " + runs_[i].commit + ")");
      return d;
    }
    d.kernels = why.empty() ? "no earlier run in the window has a kernel table" : why;
    return d;
  }

 private:
  const std::vector<RunRow>& runs_;
  std::unique_ptr<Query> kernels_;
  std::unordered_map<int64_t, size_t> col_;
};

// What history check reads of the store: the runs of the newest run's machine and branch, and
// each case's series of the build the newest run measured it in.
struct CheckInput {
  GateOptions gate;
  std::vector<RunInfo> read_runs;  // what the gate reads: the window, the judged runs, the noise
  std::vector<RunRow> runs;        // the window and the judged runs, the newest last
  std::vector<RunInfo> long_runs;  // the longer history the change points are found in
  // Per case: its series over the window (whether its environment changed there) and over the
  // longer history (its change points), its medians over the runs the gate reads and over the
  // window.
  std::map<std::string, CaseSeries> window, series;
  std::map<std::string, std::vector<double>> read, results;
  std::vector<std::string> names;
  std::set<std::string> builds;  // of the series searched for change points
  int other_builds = 0;          // series of other tiers or builds, left out
};

CheckInput ReadCheckInput(Store& db, const CheckOptions& opt) {
  CheckInput in;
  const RunFilter filter = NewestRunFilter(db, {opt.machine, opt.branch});
  in.gate = {opt.window, opt.threshold, opt.k, opt.min_history,
             opt.rerun ? 1 : std::max(opt.hold, 1)};
  // The gate reads further back than the window: the noise is estimated over up to --history runs.
  in.read_runs = FilteredRuns(db, filter, std::max(opt.history, opt.window) + in.gate.hold);
  const size_t read = in.read_runs.size();
  const size_t judged_runs = std::min(read, static_cast<size_t>(opt.window + in.gate.hold));
  for (size_t i = read - judged_runs; i < read; ++i) in.runs.push_back(in.read_runs[i].row);
  // The runs' results, read once. Each case's series of the build the newest run measured it in:
  // over the window (whether its environment changed there) and over every run read (the gate's
  // medians).
  const std::vector<CaseSeries> all_series = ReadSeries(db, in.read_runs);
  in.window = NewestSeries(all_series, read, judged_runs, nullptr);
  const std::map<std::string, CaseSeries> read_series =
      NewestSeries(all_series, read, read, nullptr);
  for (const auto& [name, ws] : in.window) {
    in.names.push_back(name);
    in.read[name] = WindowMedians(read_series.at(name), read);
    in.results[name] = WindowMedians(ws, in.runs.size());
  }
  // The change points: every run of the machine and branch in the longer history, each case's
  // series of the build it was measured in by the newest run.
  const size_t long_count = std::min(read, static_cast<size_t>(std::max(opt.history, 1)));
  in.long_runs.assign(in.read_runs.end() - long_count, in.read_runs.end());
  in.series = NewestSeries(all_series, read, long_count, &in.other_builds);
  for (const auto& [name, cs] : in.series) in.builds.insert(cs.build);
  return in;
}

// The rows of the check's tables, as the cases are judged: the newest-run rows (the flagged ones
// first) with what is diagnosed under them, the change-point rows (those that fail first), and
// the kernel diffs across the failing change points.
struct CheckRows {
  std::vector<std::pair<std::vector<Cell>, Diagnosis>> slower, other;
  std::vector<std::vector<Cell>> step_slower, step_other;
  std::vector<Table> across;
  bool any_kernels = false, any_repro = false, any_env = false, any_step_env = false;
  bool any_confirmation = false;
  std::map<std::string, int> verdicts;  // how many benchmarks got each verdict
  int steps_found = 0, steps_missed = 0;
};

// A case's row of the newest-run table.
std::vector<Cell> NewestRow(const std::string& name, const RunJudgement& j, const CaseVerdict& v) {
  return {Cell(name),
          Cell(FormatTime(j.newest), j.newest),
          Cell(FormatTime(j.median), j.median),
          Cell(FormatPercent(j.noise, 2), j.noise),
          Cell(FormatSigned(j.change), j.change),
          Cell(FormatNumber(j.z, 3), j.z),
          Cell(std::to_string(j.history), static_cast<double>(j.history)),
          Cell(v.verdict),
          Cell(v.step)};
}

// A case's rows of the change-point table: one per change point (a row of dashes without one),
// each with its bisect command, the kernels across it where it fails the check, and the change of
// environment across it.
void AddStepRows(const std::string& name, const CaseSeries& cs, const CaseVerdict& v,
                 const std::vector<ChangePoint>& cps, const std::vector<std::string>& step_env,
                 const std::vector<RunInfo>& long_runs, const CheckOptions& opt,
                 KernelTables& kernel_tables, CheckRows& rows) {
  if (cps.empty()) {
    rows.step_other.push_back(StepRow(name, v.step, nullptr, cs, long_runs));
    rows.step_other.back().emplace_back("-");
    rows.step_other.back().emplace_back("-");
  }
  for (size_t i = 0; i < cps.size(); ++i) {
    const ChangePoint& c = cps[i];
    const bool slower = c.change > 0, environment = !step_env[i].empty();
    std::vector<Cell> step_row = StepRow(
        name, std::string(slower ? "slower" : "faster") + (environment ? " (environment)" : ""), &c,
        cs, long_runs);
    // The runs on both sides of a slower change name the revisions to bisect, unless the case's
    // environment changed there: then the code is not what to search.
    step_row.emplace_back(slower && !environment
                              ? StepBisect(long_runs[cs.points[c.at - 1].run].row.commit,
                                           long_runs[cs.points[c.at].run].row.commit, name)
                              : "-");
    // Across the change point that fails the check: which kernels changed there.
    const bool fails = StepFails(i, cps, v.step_regresses, environment, opt.fail_on_env_change);
    if (fails) {
      KernelsAcross ka = KernelDiffAcross(cs, c, kernel_tables.Of(name));
      step_row.emplace_back(ka.summary);
      if (ka.table) rows.across.push_back(std::move(*ka.table));
    } else {
      step_row.emplace_back("-");
    }
    step_row.emplace_back(environment ? step_env[i] : std::string("-"));
    (fails ? rows.step_slower : rows.step_other).push_back(std::move(step_row));
  }
}

// A case the longer history has no series of (none when it reads fewer runs than the window).
const CaseSeries kNoSeries;

// Every case of the newest run judged (analyses/check.h), its rows added; the counts in `r`.
CheckRows JudgeCases(Store& db, const CheckInput& in, const CheckOptions& opt, CheckResult& r) {
  CheckRows rows;
  Diagnoser diagnoser(db, in.runs);
  const size_t min_points = 2 * static_cast<size_t>(std::max(opt.changes.min_segment, 1));
  KernelTables kernel_tables(db, in.long_runs);
  const std::map<std::string, Judged> judged = JudgeNewestRuns(
      in.names, in.read, in.gate, opt.rerun, opt.confirm_alpha, [&](const std::string& name) {
        return ReproCommand(*in.window.at(name).points.back().context, name);
      });
  for (const auto& name : in.names) {
    const CaseSeries& ws = in.window.at(name);
    auto found = judged.find(name);
    if (found == judged.end()) continue;  // not measured in the newest run
    const RunJudgement& j = found->second.j;
    auto in_series = in.series.find(name);
    const CaseSeries& cs = in_series != in.series.end() ? in_series->second : kNoSeries;
    const bool searched = cs.points.size() >= min_points;
    std::vector<ChangePoint> cps =
        searched ? FindChangePoints(cs.Medians(), opt.changes) : std::vector<ChangePoint>{};
    std::vector<std::string> step_env;
    for (const ChangePoint& c : cps) {
      step_env.push_back(StepEnvironment(cs, c));
      rows.any_step_env |= !step_env.back().empty();
    }
    const CaseVerdict v = JudgeCase(
        j, [&] { return NewestEnvironment(ws); }, cps, searched, step_env);
    ++rows.verdicts[v.verdict];
    r.environment_changes += v.environment_slower;
    rows.any_env |= !v.environment.empty();
    rows.steps_found += static_cast<int>(cps.size());
    r.step_regressions += v.step_regresses;
    rows.steps_missed += v.step_regresses && v.verdict != "slower";
    Diagnosis dx;
    if (v.diagnosed)
      dx = diagnoser.Of(name, in.results.at(name), v.diagnosis.c_str(), *ws.points.back().context);
    dx.environment = v.environment;
    dx.confirmation = found->second.how;
    rows.any_confirmation |= dx.confirmation != "-";
    rows.any_kernels |= !dx.kernels.empty();
    rows.any_repro |= !dx.repro.empty();
    (v.flagged ? rows.slower : rows.other).emplace_back(NewestRow(name, j, v), std::move(dx));
    AddStepRows(name, cs, v, cps, step_env, in.long_runs, opt, kernel_tables, rows);
  }
  return rows;
}

// The notes over the tables: which runs were judged, the counts and the rules that fail the check.
void AddCheckNotes(Store& db, const CheckInput& in, const CheckOptions& opt, const CheckRows& rows,
                   const CheckResult& r, bool fail, Document& d) {
  const RunRow& now = in.runs.back();
  const GateOptions& gate = in.gate;
  std::map<std::string, int> verdicts = rows.verdicts;
  const int window_count =
      static_cast<int>(in.runs.size()) - std::min(gate.hold, static_cast<int>(in.runs.size()));
  d.notes.push_back("Newest run: " + now.date + ", commit " + now.commit + ", machine " +
                    now.machine + ", branch " + (now.branch.empty() ? "(none)" : now.branch) +
                    "; window: the " + std::to_string(window_count) + " runs before " +
                    (gate.hold > 1 ? "the newest " + std::to_string(gate.hold) : "it") +
                    " of that machine and branch (--machine, --branch choose another; other "
                    "branches' and machines' runs are never part of it).");
  d.notes.push_back(
      std::string(fail ? "**REGRESSION**: " : "**OK**: ") + std::to_string(verdicts["slower"]) +
      " slower, " + std::to_string(verdicts["unconfirmed"]) + " unconfirmed, " +
      std::to_string(verdicts["faster"]) + " faster, " + std::to_string(verdicts["same"]) +
      " same, " + std::to_string(verdicts["new"]) + " new, " +
      std::to_string(verdicts["short history"]) +
      " with too short a history. A change counts when it is at least " +
      FormatPercent(opt.threshold) + " and more than " + FormatNumber(opt.k, 3) +
      " times the case's run-to-run noise (1.4826 x the median absolute "
      "difference of successive log medians / sqrt 2, over up to " +
      std::to_string(std::max(opt.history, opt.window)) + " runs) from the window's median.");
  d.notes.push_back(
      opt.rerun ? "A slower newest run fails only when its re-run (--confirm: the case's repro "
                  "command) confirms it: the re-run's median at least the threshold slower than "
                  "the window's and the U test of its repetitions against the window's run "
                  "medians, adjusted across the re-runs (Benjamini-Hochberg), below " +
                      FormatNumber(opt.confirm_alpha, 3) +
                      "; one the re-run does not reproduce is unconfirmed and fails nothing."
      : gate.hold > 1
          ? "A slowdown fails only once it holds for the newest " + std::to_string(gate.hold) +
                " runs, each slower than the window; a slower newest run alone is unconfirmed: "
                "reported, it fails nothing (a shared host slows a whole run now and then)."
          : "A slower newest run fails on its own (--hold 1).");
  if (std::string libs = LibrariesNote(in.window); !libs.empty()) d.notes.push_back(libs);
  if (r.environment_changes || rows.any_env)
    d.notes.push_back(
        std::to_string(r.environment_changes) +
        " cases slower where their own libraries, driver or measuring --dlb_* flags changed "
        "(verdict or step \"(environment)\", the environment column names the change): not a "
        "change of the code, so no bisect command; " +
        (opt.fail_on_env_change ? "they fail the check (--fail-on-env-change)."
                                : "they do not fail the check (--fail-on-env-change makes them)."));
  d.notes.push_back("Change points: " + std::to_string(rows.steps_found) + " confirmed, " +
                    std::to_string(r.step_regressions) + " cases slower since their last (" +
                    std::to_string(rows.steps_missed) + " of them missed by the newest-run test)" +
                    (opt.steps_fail
                         ? "; a slower last change point fails the check."
                         : "; shown only (--steps report), the exit code ignores them."));
}

// The newest-run table, its optional columns where a case has them; the kernel diffs of the
// flagged cases go to `kernels`.
Section NewestSection(CheckRows& rows, Section& kernels) {
  Table t;
  t.columns = {{"benchmark", "name"}, {"newest", "new_ns"},   {"window median", "median_ns"},
               {"noise", "noise"},    {"change", "change"},   {"z (noise)", "z"},
               {"history", "n"},      {"verdict", "verdict"}, {"step", "step"}};
  if (rows.any_env) t.columns.push_back({"environment", "environment"});
  if (rows.any_confirmation) t.columns.push_back({"confirmation", "confirmation"});
  if (rows.any_kernels) t.columns.push_back({"kernels", "kernels"});
  if (rows.any_repro) t.columns.push_back({"repro", "repro"});
  for (auto* list : {&rows.slower, &rows.other})
    for (auto& [row, dx] : *list) {
      if (rows.any_env)
        row.emplace_back(dx.environment.empty() ? std::string("-") : dx.environment);
      if (rows.any_confirmation) row.emplace_back(dx.confirmation);
      if (rows.any_kernels) row.emplace_back(dx.kernels.empty() ? std::string("-") : dx.kernels);
      if (rows.any_repro) row.emplace_back(dx.repro);
      if (dx.table) kernels.tables.push_back(std::move(*dx.table));
      t.rows.push_back(std::move(row));
    }
  Section s;
  s.title = "Newest run against the window";
  s.tables.push_back(std::move(t));
  return s;
}

// The change-point table, with how the change points were found.
Section ChangePointSection(const CheckInput& in, const CheckOptions& opt, CheckRows& rows) {
  Table steps;
  steps.columns = {{"benchmark", "name"},
                   {"step", "step"},
                   {"at run", "step_run"},
                   {"date", "step_date"},
                   {"commit", "step_commit"},
                   {"before", "before_ns"},
                   {"after", "after_ns"},
                   {"change", "step_change"},
                   {"p (U test)", "step_p"},
                   {"runs before", "before_n"},
                   {"runs after", "after_n"},
                   {"bisect", "bisect"},
                   {"kernels across", "step_kernels"}};
  Section ss;
  ss.title = "Change points";
  std::string build_list;
  for (const std::string& b : in.builds) build_list += (build_list.empty() ? "" : "; ") + b;
  ss.notes.push_back("Per benchmark, every confirmed change point in its medians over the newest " +
                     std::to_string(in.long_runs.size()) +
                     " runs of this machine and branch (oldest first; #1 the oldest) of "
                     "the build the newest run measured it in (" +
                     build_list + "): proposed by " + DetectorName(opt.changes.detector) +
                     " and kept where the U test between the runs on either side gives p < " +
                     FormatNumber(opt.changes.alpha, 3) + " and their medians differ by at least " +
                     FormatPercent(opt.changes.threshold) + ", at least " +
                     std::to_string(opt.changes.min_segment) +
                     " runs on each side. The step column above is " +
                     "the direction of the last one: the level the case is at now.");
  if (in.other_builds)
    ss.notes.push_back(std::to_string(in.other_builds) +
                       " series of other tiers or library builds in those runs are left out: "
                       "they are never one series with this build's.");
  ss.notes.push_back(
      "bisect: for a slower change point, the command that finds the commit between the last run "
      "before it and the first after (dlbench-report bisect, run in the repository); none where "
      "the case's own libraries, driver or measuring flags changed across it (environment).");
  // The environment column only where a change point met a change of one.
  if (rows.any_step_env) steps.columns.push_back({"environment", "step_environment"});
  for (auto* list : {&rows.step_slower, &rows.step_other})
    for (auto& row : *list) {
      if (!rows.any_step_env) row.pop_back();
      steps.rows.push_back(std::move(row));
    }
  ss.tables.push_back(std::move(steps));
  return ss;
}

}  // namespace

CheckResult HistoryCheck(const std::string& path, const CheckOptions& opt,
                         const HistoryOptions& hopt) {
  auto store = OpenStore(path, false, hopt);
  Store& db = *store;
  RequireSchema(db);
  const CheckInput in = ReadCheckInput(db, opt);
  CheckResult r;
  CheckRows rows = JudgeCases(db, in, opt, r);
  r.regressions = rows.verdicts["slower"];
  r.unconfirmed = rows.verdicts["unconfirmed"];
  const bool fail = r.regressions || (opt.steps_fail && r.step_regressions) ||
                    (opt.fail_on_env_change && r.environment_changes);
  r.exit_code = fail ? 3 : 0;
  Document& d = r.doc;
  d.title = "dlbench history check";
  d.short_markdown_lines = true;  // read in CI logs
  AddCheckNotes(db, in, opt, rows, r, fail, d);
  Section ks;
  ks.title = "Kernel changes of the flagged cases";
  ks.details = true;
  ks.notes.push_back(
      "Per flagged case whose newest run and an earlier run of the window recorded a kernel "
      "table: each kernel's time per Run(), appeared, vanished, grew or shrank, and its change as "
      "a share of the case's change in median time between those two runs.");
  d.sections.push_back(NewestSection(rows, ks));
  d.sections.push_back(ChangePointSection(in, opt, rows));
  if (!rows.across.empty())
    ks.notes.push_back(
        "And per case whose last change point is slower: the kernel tables of the last run "
        "before it and the first after it that recorded one, diffed the same way.");
  for (Table& t : rows.across) ks.tables.push_back(std::move(t));
  if (!ks.tables.empty()) d.sections.push_back(std::move(ks));
  return r;
}

}  // namespace dlb::report
