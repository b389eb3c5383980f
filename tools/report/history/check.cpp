// history check: the newest runs of a machine and branch against their window of earlier runs
// (their median and the case's run-to-run noise; a slowdown fails once confirmed,
// analyses/gate.h), the change points of each case over the longer history (FindChangePoints over
// each case's series of its newest build, as the site finds them), each named as an environment
// change where the case's own libraries, driver or flags changed across it (environment.h), and,
// under a flagged case, the command that re-runs it and its kernels' changes.
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

// A case's change-point verdict: the direction of its last change point, the level it is at now.
std::string StepVerdict(const std::vector<ChangePoint>& cps, bool searched) {
  if (!searched) return "short history";
  if (cps.empty()) return "none";
  return cps.back().change > 0 ? "slower" : "faster";
}

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

// ---- the gate (analyses/gate.h): each case's newest run judged, and with --confirm the slower
// ones re-run; `how` says what confirmed a slowdown or what it still lacks.
struct Judged {
  RunJudgement j;
  std::string how = "-";
};

std::map<std::string, Judged> JudgeNewestRuns(
    const std::vector<std::string>& names, std::map<std::string, std::vector<double>>& medians,
    const CheckOptions& opt, const GateOptions& gate,
    const std::function<std::string(const std::string&)>& repro) {
  std::map<std::string, Judged> out;
  std::vector<std::string> rerun;
  std::vector<RerunSample> samples;
  for (const std::string& name : names) {
    const std::vector<double>& v = medians[name];
    if (!std::isfinite(v.back())) continue;
    Judged& c = out[name];
    c.j = JudgeNewest(v, gate);
    if (c.j.verdict != RunVerdict::kSlower && c.j.verdict != RunVerdict::kUnconfirmed) continue;
    c.how = "held " + std::to_string(c.j.held) + " of " + std::to_string(gate.hold) + " runs";
    if (!opt.rerun) continue;
    std::string command = repro(name), why = "the run's context names no binary";
    RerunSample s;
    for (size_t i = v.size() - 1 - std::min(v.size() - 1, static_cast<size_t>(gate.window));
         i + 1 < v.size(); ++i)
      if (std::isfinite(v[i])) s.window.push_back(v[i]);
    if (!command.empty()) s.rerun = opt.rerun(name, command, &why);
    if (s.rerun.empty()) c.how = "not re-run: " + why;
    rerun.push_back(name);
    samples.push_back(std::move(s));
  }
  std::vector<RerunJudgement> judged = JudgeReruns(samples, gate.threshold, opt.confirm_alpha);
  for (size_t i = 0; i < rerun.size(); ++i) {
    Judged& c = out[rerun[i]];
    c.j = AfterRerun(c.j, judged[i]);
    if (samples[i].rerun.empty()) continue;
    c.how = "re-run (" + std::to_string(samples[i].rerun.size()) +
            " repetitions): " + FormatSigned(judged[i].change) + ", q " + FormatP(judged[i].q) +
            (judged[i].confirmed ? "" : ", not reproduced");
  }
  return out;
}

}  // namespace

CheckResult HistoryCheck(const std::string& path, const CheckOptions& opt,
                         const HistoryOptions& hopt) {
  auto store = OpenStore(path, false, hopt);
  Store& db = *store;
  RequireSchema(db);
  CheckResult r;
  Document& d = r.doc;
  d.title = "dlbench history check";
  d.short_markdown_lines = true;  // read in CI logs
  const RunFilter filter = NewestRunFilter(db, {opt.machine, opt.branch});
  const GateOptions gate{opt.window, opt.threshold, opt.k, opt.min_history,
                         opt.rerun ? 1 : std::max(opt.hold, 1)};
  // The gate reads further back than the window: the noise is estimated over up to --history runs.
  const std::vector<RunInfo> read_runs =
      FilteredRuns(db, filter, std::max(opt.history, opt.window) + gate.hold);
  const size_t judged_runs =
      std::min(read_runs.size(), static_cast<size_t>(opt.window + gate.hold));
  const std::vector<RunInfo> window_runs(read_runs.end() - judged_runs, read_runs.end());
  std::vector<RunRow> runs;  // the window and the judged runs, the newest last
  for (const RunInfo& w : window_runs) runs.push_back(w.row);
  const RunRow& now = runs.back();
  // The runs' results, read once. Each case's series of the build the newest run measured it in:
  // over the window (whether its environment changed there) and over every run read (the gate's
  // medians).
  const std::vector<CaseSeries> all_series = ReadSeries(db, read_runs);
  std::map<std::string, CaseSeries> window =
      NewestSeries(all_series, read_runs.size(), judged_runs, nullptr);
  std::map<std::string, CaseSeries> read_series =
      NewestSeries(all_series, read_runs.size(), read_runs.size(), nullptr);
  std::vector<std::string> names;
  std::map<std::string, std::vector<double>> read, results;
  for (const auto& [name, ws] : window) {
    names.push_back(name);
    read[name] = WindowMedians(read_series.at(name), read_runs.size());
    results[name] = WindowMedians(ws, runs.size());
  }
  Table t;
  t.columns = {{"benchmark", "name"}, {"newest", "new_ns"},   {"window median", "median_ns"},
               {"noise", "noise"},    {"change", "change"},   {"z (noise)", "z"},
               {"history", "n"},      {"verdict", "verdict"}, {"step", "step"}};
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
  std::vector<std::vector<Cell>> step_slower, step_other;
  std::vector<std::pair<std::vector<Cell>, Diagnosis>> slower, other;
  Diagnoser diagnoser(db, runs);
  bool any_kernels = false, any_repro = false, any_env = false, any_step_env = false;
  bool any_confirmation = false;
  std::map<std::string, int> verdicts;  // how many benchmarks got each verdict
  int steps_found = 0, steps_missed = 0, other_builds = 0;
  // The change points: every run of the machine and branch in the longer history, each case's
  // series of the build it was measured in by the newest run.
  const size_t long_count =
      std::min(read_runs.size(), static_cast<size_t>(std::max(opt.history, 1)));
  const std::vector<RunInfo> long_runs(read_runs.end() - long_count, read_runs.end());
  std::map<std::string, CaseSeries> series =
      NewestSeries(all_series, read_runs.size(), long_count, &other_builds);
  std::set<std::string> builds;
  for (const auto& [name, cs] : series) builds.insert(cs.build);
  const size_t min_points = 2 * static_cast<size_t>(std::max(opt.changes.min_segment, 1));
  KernelTables kernel_tables(db, long_runs);
  std::vector<Table> across;  // the kernel diffs across the slower last change points
  const std::map<std::string, Judged> judged =
      JudgeNewestRuns(names, read, opt, gate, [&](const std::string& name) {
        return ReproCommand(*window.at(name).points.back().context, name);
      });
  for (const auto& name : names) {
    const CaseSeries& ws = window.at(name);
    const auto& v = results[name];
    auto found = judged.find(name);
    if (found == judged.end()) continue;  // not measured in the newest run
    const RunJudgement& j = found->second.j;
    const double x = j.newest, med = j.median, noise = j.noise, ch = j.change, z = j.z;
    std::string verdict = RunVerdictName(j.verdict);
    // A change the case's own environment explains is named, not counted as the code's.
    std::string env;
    if (verdict == "slower" || verdict == "unconfirmed" || verdict == "faster")
      env = NewestEnvironment(ws);
    if (!env.empty()) {
      r.environment_changes += verdict == "slower";
      verdict += " (environment)";
    }
    ++verdicts[verdict];
    const CaseSeries& cs = series[name];
    const bool searched = cs.points.size() >= min_points;
    std::vector<ChangePoint> cps =
        searched ? FindChangePoints(cs.Medians(), opt.changes) : std::vector<ChangePoint>{};
    std::vector<std::string> step_env;
    for (const ChangePoint& c : cps) {
      step_env.push_back(StepEnvironment(cs, c));
      any_step_env |= !step_env.back().empty();
    }
    std::string step = StepVerdict(cps, searched);
    if (!cps.empty() && !step_env.back().empty()) {
      r.environment_changes += step == "slower" && env.empty();
      step += " (environment)";
      if (env.empty()) env = step_env.back();
    }
    any_env |= !env.empty();
    bool step_regresses = step == "slower";
    steps_found += static_cast<int>(cps.size());
    r.step_regressions += step_regresses;
    steps_missed += step_regresses && verdict != "slower";
    std::vector<Cell> row{Cell(name),
                          Cell(FormatTime(x), x),
                          Cell(FormatTime(med), med),
                          Cell(FormatPercent(noise, 2), noise),
                          Cell(FormatSigned(ch), ch),
                          Cell(FormatNumber(z, 3), z),
                          Cell(std::to_string(j.history), static_cast<double>(j.history)),
                          Cell(verdict),
                          Cell(step)};
    Diagnosis dx;
    if (verdict == "slower" || verdict == "unconfirmed" || verdict == "faster" || step_regresses)
      dx = diagnoser.Of(name, v,
                        step_regresses && verdict != "slower" ? "slower step" : verdict.c_str(),
                        *ws.points.back().context);
    dx.environment = env;
    dx.confirmation = found->second.how;
    any_confirmation |= dx.confirmation != "-";
    any_kernels |= !dx.kernels.empty();
    any_repro |= !dx.repro.empty();
    (verdict == "slower" || verdict == "unconfirmed" || step_regresses ? slower : other)
        .emplace_back(std::move(row), std::move(dx));
    if (cps.empty()) {
      step_other.push_back(StepRow(name, step, nullptr, cs, long_runs));
      step_other.back().emplace_back("-");
      step_other.back().emplace_back("-");
    }
    for (size_t i = 0; i < cps.size(); ++i) {
      const ChangePoint& c = cps[i];
      const bool slower = c.change > 0, environment = !step_env[i].empty();
      std::vector<Cell> step_row = StepRow(
          name, std::string(slower ? "slower" : "faster") + (environment ? " (environment)" : ""),
          &c, cs, long_runs);
      // The runs on both sides of a slower change name the revisions to bisect, unless the case's
      // environment changed there: then the code is not what to search.
      step_row.emplace_back(slower && !environment
                                ? StepBisect(long_runs[cs.points[c.at - 1].run].row.commit,
                                             long_runs[cs.points[c.at].run].row.commit, name)
                                : "-");
      // Across the change point that fails the check: which kernels changed there.
      const bool fails = i + 1 == cps.size() && slower &&
                         (step_regresses || (environment && opt.fail_on_env_change));
      if (fails) {
        KernelsAcross ka = KernelDiffAcross(cs, c, kernel_tables.Of(name));
        step_row.emplace_back(ka.summary);
        if (ka.table) across.push_back(std::move(*ka.table));
      } else {
        step_row.emplace_back("-");
      }
      step_row.emplace_back(environment ? step_env[i] : std::string("-"));
      (fails ? step_slower : step_other).push_back(std::move(step_row));
    }
  }
  r.regressions = verdicts["slower"];
  r.unconfirmed = verdicts["unconfirmed"];
  bool fail = r.regressions || (opt.steps_fail && r.step_regressions) ||
              (opt.fail_on_env_change && r.environment_changes);
  r.exit_code = fail ? 3 : 0;
  const int window_count =
      static_cast<int>(runs.size()) - std::min(gate.hold, static_cast<int>(runs.size()));
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
  if (std::string libs = LibrariesNote(window); !libs.empty()) d.notes.push_back(libs);
  if (r.environment_changes || any_env)
    d.notes.push_back(
        std::to_string(r.environment_changes) +
        " cases slower where their own libraries, driver or measuring --dlb_* flags changed "
        "(verdict or step \"(environment)\", the environment column names the change): not a "
        "change of the code, so no bisect command; " +
        (opt.fail_on_env_change ? "they fail the check (--fail-on-env-change)."
                                : "they do not fail the check (--fail-on-env-change makes them)."));
  d.notes.push_back("Change points: " + std::to_string(steps_found) + " confirmed, " +
                    std::to_string(r.step_regressions) + " cases slower since their last (" +
                    std::to_string(steps_missed) + " of them missed by the newest-run test)" +
                    (opt.steps_fail
                         ? "; a slower last change point fails the check."
                         : "; shown only (--steps report), the exit code ignores them."));
  Section s;
  s.title = "Newest run against the window";
  if (any_env) t.columns.push_back({"environment", "environment"});
  if (any_confirmation) t.columns.push_back({"confirmation", "confirmation"});
  if (any_kernels) t.columns.push_back({"kernels", "kernels"});
  if (any_repro) t.columns.push_back({"repro", "repro"});
  Section ks;
  ks.title = "Kernel changes of the flagged cases";
  ks.details = true;
  ks.notes.push_back(
      "Per flagged case whose newest run and an earlier run of the window recorded a kernel "
      "table: each kernel's time per Run(), appeared, vanished, grew or shrank, and its change as "
      "a share of the case's change in median time between those two runs.");
  for (auto* rows : {&slower, &other})
    for (auto& [row, dx] : *rows) {
      if (any_env) row.emplace_back(dx.environment.empty() ? std::string("-") : dx.environment);
      if (any_confirmation) row.emplace_back(dx.confirmation);
      if (any_kernels) row.emplace_back(dx.kernels.empty() ? std::string("-") : dx.kernels);
      if (any_repro) row.emplace_back(dx.repro);
      if (dx.table) ks.tables.push_back(std::move(*dx.table));
      t.rows.push_back(std::move(row));
    }
  s.tables.push_back(std::move(t));
  d.sections.push_back(std::move(s));
  Section ss;
  ss.title = "Change points";
  std::string build_list;
  for (const std::string& b : builds) build_list += (build_list.empty() ? "" : "; ") + b;
  ss.notes.push_back("Per benchmark, every confirmed change point in its medians over the newest " +
                     std::to_string(long_runs.size()) +
                     " runs of this machine and branch (oldest first; #1 the oldest) of "
                     "the build the newest run measured it in (" +
                     build_list + "): proposed by " + DetectorName(opt.changes.detector) +
                     " and kept where the U test between the runs on either side gives p < " +
                     FormatNumber(opt.changes.alpha, 3) + " and their medians differ by at least " +
                     FormatPercent(opt.changes.threshold) + ", at least " +
                     std::to_string(opt.changes.min_segment) +
                     " runs on each side. The step column above is " +
                     "the direction of the last one: the level the case is at now.");
  if (other_builds)
    ss.notes.push_back(std::to_string(other_builds) +
                       " series of other tiers or library builds in those runs are left out: "
                       "they are never one series with this build's.");
  ss.notes.push_back(
      "bisect: for a slower change point, the command that finds the commit between the last run "
      "before it and the first after (dlbench-report bisect, run in the repository); none where "
      "the case's own libraries, driver or measuring flags changed across it (environment).");
  // The environment column only where a change point met a change of one.
  if (any_step_env) steps.columns.push_back({"environment", "step_environment"});
  for (auto* rows : {&step_slower, &step_other})
    for (auto& row : *rows) {
      if (!any_step_env) row.pop_back();
      steps.rows.push_back(std::move(row));
    }
  ss.tables.push_back(std::move(steps));
  d.sections.push_back(std::move(ss));
  if (!across.empty())
    ks.notes.push_back(
        "And per case whose last change point is slower: the kernel tables of the last run "
        "before it and the first after it that recorded one, diffed the same way.");
  for (Table& t : across) ks.tables.push_back(std::move(t));
  if (!ks.tables.empty()) d.sections.push_back(std::move(ks));
  return r;
}

}  // namespace dlb::report
