// history check: the newest run of a machine against its window of earlier runs (median and MAD),
// the most likely step in each benchmark's window (FindStep), and, under a flagged case, the
// command that re-runs it and its kernels' changes.
#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "tools/report/analyses/bisect.h"
#include "tools/report/analyses/kernel_diff.h"
#include "tools/report/analyses/libraries.h"
#include "tools/report/analyses/repro.h"
#include "tools/report/analyses/stats.h"
#include "tools/report/history/history.h"
#include "tools/report/history/store.h"
#include "tools/report/history/tables.h"

namespace dlb::report {

using namespace history;  // the tables (tables.h)

namespace {

// A step's verdict: which way the level moved, and "(undone)" when the newest runs are back.
std::string StepVerdict(const Step& st) {
  if (!st.searched) return "short history";
  if (!st.found) return "none";
  return std::string(st.change > 0 ? "slower" : "faster") + (st.lasting ? "" : " (undone)");
}

// A slower step the newest runs still show: the regression the newest-run test stops seeing
// once the slow runs are half the window, and misses when the newest run alone is a fast outlier.
bool StepRegresses(const Step& st) { return st.found && st.lasting && st.change > 0; }

// The step's row: where it is (position among the runs read, its run's date and commit, which
// with the machine identify the run in the store) and the two levels.
std::vector<Cell> StepRow(const std::string& name, const Step& st, const std::vector<size_t>& pos,
                          const std::vector<RunRow>& runs) {
  std::vector<Cell> row{Cell(name), Cell(StepVerdict(st))};
  if (!st.found) {
    for (int i = 0; i < 6; ++i) row.emplace_back("-");
    row.emplace_back(st.searched ? FormatNumber(st.z, 3) : "-", st.searched ? st.z : NAN);
    row.emplace_back("-");
    row.emplace_back("-");
    return row;
  }
  size_t at = pos[st.at];
  double before_n = static_cast<double>(st.at), after_n = static_cast<double>(pos.size() - st.at);
  row.emplace_back("#" + std::to_string(at + 1), static_cast<double>(at + 1));
  row.emplace_back(runs[at].date);
  row.emplace_back(runs[at].commit);
  row.emplace_back(FormatTime(st.before), st.before);
  row.emplace_back(FormatTime(st.after), st.after);
  row.emplace_back(FormatSigned(st.change), st.change);
  row.emplace_back(FormatNumber(st.z, 3), st.z);
  row.emplace_back(std::to_string(st.at), before_n);
  row.emplace_back(std::to_string(pos.size() - st.at), after_n);
  return row;
}

// What history check adds under a flagged case: the command that re-runs it and, where the store
// keeps kernel tables, which kernels changed between the newest run and the latest run before it
// that recorded a table.
struct Diagnosis {
  std::string kernels, repro;
  std::optional<Table> table;
};

// A run's context as stored: its text fields.
Context RunContext(Store& db, int64_t id) {
  Context context;
  auto q = db.Prepare("SELECT context FROM runs WHERE id = ?", "runs");
  q->Bind(1, id);
  if (q->Step()) {
    nlohmann::json ctx = nlohmann::json::parse(q->Text(0), nullptr, false);
    if (ctx.is_object())
      for (const auto& [k, v] : ctx.items())
        if (v.is_string()) context[k] = v.get<std::string>();
  }
  while (q->Step()) {
  }
  return context;
}

// The note when runs of the window loaded other library versions than the newest run.
std::string LibrariesNote(Store& db, const std::vector<RunRow>& runs) {
  std::vector<Context> window;
  for (size_t i = 0; i + 1 < runs.size(); ++i) window.push_back(RunContext(db, runs[i].id));
  return LibrariesAcrossRunsNote(window, RunContext(db, runs.back().id));
}

class Diagnoser {
 public:
  Diagnoser(Store& db, const std::vector<RunRow>& runs)
      : runs_(runs), context_(RunContext(db, runs.back().id)) {
    if (db.HasTable("kernels"))
      kernels_ = db.Prepare("SELECT run_id, kernels FROM kernels WHERE name = ? AND run_id IN (" +
                                RunIdList(runs, &col_) + ")",
                            "kernels");
  }

  // medians: the case's median per run (runs_' order), the newest last.
  Diagnosis Of(const std::string& name, const std::vector<double>& medians, const char* verdict) {
    Diagnosis d;
    d.repro = ReproCommand(context_, name);
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
  std::map<std::string, std::string> context_;
  std::unique_ptr<Query> kernels_;
  std::unordered_map<int64_t, size_t> col_;
};

}  // namespace

CheckResult HistoryCheck(const std::string& path, const CheckOptions& opt,
                         const HistoryOptions& hopt) {
  auto store = OpenStore(path, false, hopt);
  Store& db = *store;
  RequireSchema(db);
  CheckResult r;
  Document& d = r.doc;
  d.title = "dlbench history check";
  std::vector<RunRow> newest = LastRuns(db, "", 1);
  if (newest.empty()) throw InputError(db.name(), "runs", "the database holds no runs");
  std::vector<RunRow> runs = LastRuns(db, newest.back().machine, opt.window + 1);
  const RunRow& now = runs.back();
  std::vector<std::string> names;
  auto results = Medians(db, runs, "", &names);
  Table t;
  t.columns = {{"benchmark", "name"}, {"newest", "new_ns"},   {"window median", "median_ns"},
               {"MAD", "mad_ns"},     {"change", "change"},   {"z (MAD)", "z"},
               {"history", "n"},      {"verdict", "verdict"}, {"step", "step"}};
  Table steps;
  steps.columns = {
      {"benchmark", "name"},       {"step", "step"},          {"at run", "step_run"},
      {"date", "step_date"},       {"commit", "step_commit"}, {"before", "before_ns"},
      {"after", "after_ns"},       {"change", "step_change"}, {"z (pooled MAD)", "step_z"},
      {"runs before", "before_n"}, {"runs after", "after_n"}, {"bisect", "bisect"}};
  std::vector<std::vector<Cell>> step_slower, step_other;
  std::vector<std::pair<std::vector<Cell>, Diagnosis>> slower, other;
  Diagnoser diagnoser(db, runs);
  bool any_kernels = false, any_repro = false;
  std::map<std::string, int> verdicts;  // how many benchmarks got each verdict
  int steps_found = 0, steps_missed = 0;
  StepOptions sopt{opt.min_segment, opt.k, opt.threshold};
  for (const auto& name : names) {
    const auto& v = results[name];
    double x = v.back();
    if (!std::isfinite(x)) continue;
    std::vector<double> prev, series;
    std::vector<size_t> pos;  // series[i] is the median of runs[pos[i]]
    for (size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i])) continue;
      if (i + 1 < v.size()) prev.push_back(v[i]);
      series.push_back(v[i]);
      pos.push_back(i);
    }
    std::string verdict;
    double med = NAN, mad = NAN, ch = NAN, z = NAN;
    if (prev.empty()) {
      verdict = "new";
    } else if (static_cast<int>(prev.size()) < opt.min_history) {
      verdict = "short history";
    } else {
      med = Median(prev);
      mad = Mad(prev);
      ch = RelativeChange(med, x);
      double spread = 1.4826 * mad;
      z = spread > 0 ? (x - med) / spread : (x == med ? 0 : INFINITY * (x > med ? 1 : -1));
      bool beyond = std::fabs(ch) >= opt.threshold && std::fabs(z) > opt.k;
      verdict = !beyond ? "same" : ch > 0 ? "slower" : "faster";
    }
    ++verdicts[verdict];
    Step step = FindStep(series, sopt);
    bool step_regresses = StepRegresses(step);
    steps_found += step.found;
    r.step_regressions += step_regresses;
    steps_missed += step_regresses && verdict != "slower";
    std::vector<Cell> row{Cell(name),
                          Cell(FormatTime(x), x),
                          Cell(FormatTime(med), med),
                          Cell(FormatTime(mad), mad),
                          Cell(FormatSigned(ch), ch),
                          Cell(FormatNumber(z, 3), z),
                          Cell(std::to_string(prev.size()), static_cast<double>(prev.size())),
                          Cell(verdict),
                          Cell(StepVerdict(step))};
    Diagnosis dx;
    if (verdict == "slower" || verdict == "faster" || step_regresses)
      dx = diagnoser.Of(name, v,
                        step_regresses && verdict != "slower" ? "slower step" : verdict.c_str());
    any_kernels |= !dx.kernels.empty();
    any_repro |= !dx.repro.empty();
    (verdict == "slower" || step_regresses ? slower : other)
        .emplace_back(std::move(row), std::move(dx));
    std::vector<Cell> step_row = StepRow(name, step, pos, runs);
    // The runs on both sides of a lasting slower step name the revisions to bisect.
    step_row.emplace_back(
        step_regresses ? StepBisect(runs[pos[step.at - 1]].commit, runs[pos[step.at]].commit, name)
                       : "-");
    (step_regresses ? step_slower : step_other).push_back(std::move(step_row));
  }
  r.regressions = verdicts["slower"];
  bool fail = r.regressions || (opt.steps_fail && r.step_regressions);
  r.exit_code = fail ? 3 : 0;
  d.notes.push_back("Newest run: " + now.date + ", commit " + now.commit + ", machine " +
                    now.machine + "; window: the " + std::to_string(runs.size() - 1) +
                    " runs before it on that machine.");
  d.notes.push_back(std::string(fail ? "**REGRESSION**: " : "**OK**: ") +
                    std::to_string(verdicts["slower"]) + " slower, " +
                    std::to_string(verdicts["faster"]) + " faster, " +
                    std::to_string(verdicts["same"]) + " same, " + std::to_string(verdicts["new"]) +
                    " new, " + std::to_string(verdicts["short history"]) +
                    " with too short a history. A change counts when it is at least " +
                    FormatPercent(opt.threshold) + " and more than " + FormatNumber(opt.k, 3) +
                    " scaled MADs (1.4826 x MAD) from the window's median.");
  if (std::string libs = LibrariesNote(db, runs); !libs.empty()) d.notes.push_back(libs);
  d.notes.push_back("Steps: " + std::to_string(steps_found) + " found, " +
                    std::to_string(r.step_regressions) + " slower and lasting (" +
                    std::to_string(steps_missed) + " of them missed by the newest-run test)" +
                    (opt.steps_fail
                         ? "; a slower lasting step fails the check."
                         : "; shown only (--steps report), the exit code ignores them."));
  Section s;
  s.title = "Newest run against the window";
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
      if (any_kernels) row.emplace_back(dx.kernels.empty() ? std::string("-") : dx.kernels);
      if (any_repro) row.emplace_back(dx.repro);
      if (dx.table) ks.tables.push_back(std::move(*dx.table));
      t.rows.push_back(std::move(row));
    }
  s.tables.push_back(std::move(t));
  d.sections.push_back(std::move(s));
  Section ss;
  ss.title = "Steps in the window (change points)";
  ss.notes.push_back(
      "Per benchmark, the most likely single step in its medians over these " +
      std::to_string(runs.size()) +
      " runs (oldest first; #1 the oldest): the split with the least summed absolute deviation "
      "from the two segments' medians, at least " +
      std::to_string(opt.min_segment) +
      " runs on each side. A step counts when its levels differ by at least " +
      FormatPercent(opt.threshold) + " and more than " + FormatNumber(opt.k, 3) +
      " scaled MADs pooled over both segments; \"(undone)\": the newest " +
      std::to_string(opt.min_segment) + " runs are back nearer the level before.");
  ss.notes.push_back(
      "bisect: for a lasting slower step, the command that finds the commit between the last run "
      "before it and the first at the new level (dlbench-report bisect, run in the repository).");
  for (auto& row : step_slower) steps.rows.push_back(std::move(row));
  for (auto& row : step_other) steps.rows.push_back(std::move(row));
  ss.tables.push_back(std::move(steps));
  d.sections.push_back(std::move(ss));
  if (!ks.tables.empty()) d.sections.push_back(std::move(ks));
  return r;
}

}  // namespace dlb::report
