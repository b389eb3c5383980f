#include "tools/report/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>
#include <stdexcept>

#include "fixtures/schema/families.h"
#include "fixtures/schema/schema.h"
#include "tools/report/analyses/bisect.h"
#include "tools/report/analyses/compare.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/speedup.h"
#include "tools/report/analyses/summary.h"
#include "tools/report/analyses/sweep.h"
#include "tools/report/analyses/timeline.h"
#include "tools/report/analyses/train.h"
#include "tools/report/history/history.h"
#include "tools/report/history/store.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/read/trace.h"
#include "tools/report/render/document.h"
#include "tools/report/render/output.h"
#include "tools/report/site/site.h"

namespace dlb::report {

namespace {

struct OutputOpts {
  std::string format;  // empty: from -o's extension, else md
  std::string out;
};

void AddOutput(CLI::App* sub, OutputOpts* o) {
  sub->add_option("--format,-f", o->format, "md|html|csv|json (default: from -o, else md)");
  sub->add_option("-o,--output", o->out, "output file (default: stdout)");
}

Format ResolveFormat(const OutputOpts& o) {
  if (!o.format.empty()) return ParseFormat(o.format);
  return FormatFromPath(o.out, Format::kMarkdown);
}

void Emit(const Document& d, const OutputOpts& o) {
  WriteOutput(o.out, Render(d, ResolveFormat(o)));
}

// A folder stands for the *.json files in it, sorted: a suite run leaves one file per binary.
// Folders replaced by their *.json files, in name order; `from_folder` (when given) collects the
// files that came from a folder: report, summary, speedup, sweep and train skip those that hold
// no case (ReadInputs), where a file named on its own is bad input.
std::vector<std::string> Expand(const std::vector<std::string>& paths,
                                std::set<std::string>* from_folder = nullptr) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(p, ec))
      if (e.path().extension() == ".json") found.push_back(e.path().string());
    if (found.empty()) throw InputError(p, "", "a folder without *.json files");
    std::sort(found.begin(), found.end());
    if (from_folder) from_folder->insert(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

// "5%", "5" (percent when >= 1) or "0.05"; a malformed one is one line naming `flag`.
double ParseThreshold(const std::string& flag, const std::string& s) {
  const std::string bad = flag + " " + s + ": expects a relative change such as 5%, 5 or 0.05";
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument(bad);
  }
  const std::string rest = s.substr(used);
  if (!std::isfinite(v) || (!rest.empty() && rest != "%")) throw std::invalid_argument(bad);
  if (v < 0) throw std::invalid_argument(flag + " " + s + ": must not be negative");
  if (rest == "%") return v / 100;
  return v >= 1 ? v / 100 : v;
}

constexpr const char* kDbHelp =
    "SQLite file, or postgresql://user@host:port/dbname (libpq URL; PG* variables fill the rest)";

// Every subcommand's options, as CLI11 fills them.
struct Args {
  std::vector<std::string> files;
  OutputOpts out;
  std::vector<std::string> traces;          // summary
  std::string base, now, threshold = "5%";  // compare
  CompareOptions copt;
  bool as_compare_py = false, aggregates_only = false;
  std::string axis = key::kBatch;  // sweep: the name key to sweep over
  std::string out_dir;             // report
  std::string db, other;           // history
  HistoryOptions hopt;
  RunMeta meta;
  ShowOptions sopt;
  CheckOptions kopt;
  std::string check_threshold = "5%", steps = "fail";
  std::string change_threshold = "2%", detector = "pelt";  // check and site
  SiteOptions site;
  BisectOptions bopt;  // bisect
  std::string bisect_threshold = "5%";
  std::set<std::string> from_folder;  // files a folder argument brought in
  std::vector<std::string> skipped;   // "<file>: <why>": a folder's files that hold no case
};

// The files' runs. A file that came from a folder and holds no case (a peaks file, another tool's
// JSON) is skipped with one line on stderr naming it and why, and a.files keeps the rest; a file
// named on its own that fails is bad input. A folder none of whose files holds a case is too.
std::vector<FileData> ReadInputs(Args& a) {
  if (a.from_folder.empty()) return ReadBenchmarkFiles(a.files);
  std::vector<FileData> out;
  std::vector<std::string> kept;
  for (const std::string& f : a.files) {
    try {
      out.push_back(ReadBenchmarkFile(f));
      kept.push_back(f);
    } catch (const InputError& e) {
      if (!a.from_folder.count(f)) throw;
      a.skipped.push_back(e.what());
      std::fprintf(stderr, "dlbench-report: skipped %s\n", e.what());
    }
  }
  if (out.empty())
    throw InputError(std::filesystem::path(*a.from_folder.begin()).parent_path().string(), "",
                     "no *.json file of the folder holds a case (" + a.skipped.front() + ")");
  a.files = kept;
  return out;
}

// The report's note of the files ReadInputs skipped.
void NoteSkipped(const Args& a, Document* d) {
  if (a.skipped.empty()) return;
  std::string list;
  for (const std::string& s : a.skipped) list += (list.empty() ? "" : "; ") + s;
  d->notes.insert(d->notes.begin(), std::to_string(a.skipped.size()) +
                                        " file(s) of the folder skipped, holding no case: " + list +
                                        ".");
}

// The subcommands, to ask which one was given.
struct Commands {
  CLI::App *summary = nullptr, *compare = nullptr, *speedup = nullptr, *sweep = nullptr,
           *train = nullptr, *report = nullptr;
  CLI::App *hadd = nullptr, *hshow = nullptr, *hcheck = nullptr, *hexport = nullptr,
           *himport = nullptr;
  CLI::App* bisect = nullptr;
  CLI::App* site = nullptr;
  CLI::App* families = nullptr;
};

void AddSummaryAndCompare(CLI::App* app, Args* a, Commands* c) {
  auto* summary = c->summary =
      app->add_subcommand("summary", "a table per family: median, CV, counters, skips");
  summary->add_option("files", a->files, "Google Benchmark JSON files or folders of them")
      ->required();
  summary->add_option("--trace", a->traces,
                      "a device monitor trace (--dlb_monitor_trace's CSV): per case clocks and "
                      "power, and in HTML their timeline; may be given once per binary");
  AddOutput(summary, &a->out);

  auto* compare = c->compare = app->add_subcommand(
      "compare", "BASE against NEW: change, U test, verdicts; exit 3 on a significant slowdown");
  compare->add_option("base", a->base, "baseline JSON, or a folder of them")->required();
  compare->add_option("new", a->now, "new JSON, or a folder of them")->required();
  compare->add_option("--threshold,-t", a->threshold, "relative change that matters (default 5%)");
  compare
      ->add_option("--min-repetitions", a->copt.min_repetitions,
                   "a change on fewer repetitions a side is unconfirmed and fails nothing (2)")
      ->check(CLI::PositiveNumber);
  compare->add_option("--alpha", a->copt.alpha, "significance level after BH correction (0.05)");
  compare->add_flag("--only-changes", a->copt.only_changes,
                    "leave the \"same\" rows out of the tables");
  compare->add_flag("--as-compare-py", a->as_compare_py,
                    "also Google Benchmark's compare.py table: per name and pair of runs, time and "
                    "CPU changes, U test of both");
  compare->add_flag("--aggregates-only,-a", a->aggregates_only,
                    "in that table only aggregate rows, as compare.py -a");
  AddOutput(compare, &a->out);
}

void AddAnalyses(CLI::App* app, Args* a, Commands* c) {
  auto* speedup = c->speedup =
      app->add_subcommand("speedup", "CPU vs GPU per family, workload, dtype, batch");
  speedup->add_option("files", a->files, "Google Benchmark JSON files or folders of them")
      ->required();
  AddOutput(speedup, &a->out);

  auto* sweep = c->sweep = app->add_subcommand(
      "sweep",
      "per workload the curve over batch size (with fit), over worker threads or over GPUs");
  sweep->add_option("files", a->files, "Google Benchmark JSON files or folders of them")
      ->required();
  sweep
      ->add_option("--axis", a->axis,
                   "bs (default): batch-size curves; workers: loader scaling; gpus: multi-GPU "
                   "training steps (efficiency, exposed communication) and collectives (busbw "
                   "over size per GPU count)")
      ->check(CLI::IsMember({key::kBatch, key::kWorkers, key::kGpus}));
  AddOutput(sweep, &a->out);

  auto* train = c->train = app->add_subcommand(
      std::string(kTrainFamily),
      "training steps per model: epoch CPU vs GPU, batch size, phases, memory, graph");
  train->add_option("files", a->files, "Google Benchmark JSON files or folders of them")
      ->required();
  AddOutput(train, &a->out);

  auto* report = c->report = app->add_subcommand(
      "report",
      "summary + speedups + sweeps + training steps in one report (what the README's main job "
      "writes)");
  report->add_option("files", a->files, "Google Benchmark JSON files or folders of them")
      ->required();
  report->add_option("--out-dir", a->out_dir,
                     "write report.md and report.html there and print their paths");
  AddOutput(report, &a->out);
}

void AddHistoryAddShow(CLI::App* history, Args* a, Commands* c) {
  auto* hadd = c->hadd =
      history->add_subcommand("add", "add one run (idempotent for the same run)");
  hadd->add_option("files", a->files, "Google Benchmark JSON files of the run")->required();
  hadd->add_option("--db", a->db, kDbHelp)->required();
  auto from_context = [](std::string_view key) {
    return " (default: the context's " + std::string(key) + ")";
  };
  hadd->add_option("--commit", a->meta.commit, "commit" + from_context(schema::kCtxGitRevision));
  hadd->add_option("--branch", a->meta.branch, "branch" + from_context(schema::kCtxGitBranch));
  hadd->add_option("--machine", a->meta.machine, "machine" + from_context(schema::kCtxHostName));
  hadd->add_option("--date", a->meta.date, "date" + from_context(schema::kCtxDate));
  hadd->add_option("--busy-timeout-ms", a->hopt.busy_timeout_ms, "wait for a locked database");
  auto* hshow = c->hshow = history->add_subcommand("show", "trend table and charts per benchmark");
  hshow->add_option("--db", a->db, kDbHelp)->required();
  hshow->add_option("--last", a->sopt.last, "runs to show (10)");
  hshow->add_option("--filter", a->sopt.filter, "substring of benchmark names");
  hshow->add_option("--machine", a->sopt.machine, "only runs of this machine");
  hshow->add_option("--max-charts", a->sopt.max_charts, "HTML charts at most (40)");
  hshow->add_option("--busy-timeout-ms", a->hopt.busy_timeout_ms, "wait for a locked database");
  AddOutput(hshow, &a->out);
}

// The detector's options, shared by history check and site: the same change points from both.
void AddChangePointOptions(CLI::App* sub, ChangePointOptions* o, std::string* threshold,
                           std::string* detector) {
  sub->add_option("--min-segment", o->min_segment, "change points: runs on each side at least (5)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--detector", *detector,
                  "change points: pelt (default) or edivisive (permutation test)")
      ->check(CLI::IsMember({"pelt", "edivisive"}));
  sub->add_option("--penalty", o->penalty, "PELT: penalty per change point, x log(runs) (2.5)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--alpha", o->alpha, "change points: U test level between the segments (0.0001)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--change-threshold", *threshold,
                  "change points: least change of the segments' medians (2%)");
}

void AddHistoryCheckCopy(CLI::App* app, CLI::App* history, Args* a, Commands* c) {
  auto* hcheck = c->hcheck = history->add_subcommand(
      "check",
      "newest run against the recent window (median, MAD) and steps in it; exit 3 on a regression");
  hcheck->add_option("--db", a->db, kDbHelp)->required();
  hcheck->add_option("--window", a->kopt.window, "previous runs on the same machine (10)");
  hcheck->add_option("--threshold,-t", a->check_threshold, "relative change that matters (5%)");
  hcheck->add_option("--mads", a->kopt.k, "and more than this many scaled MADs (3)");
  AddChangePointOptions(hcheck, &a->kopt.changes, &a->change_threshold, &a->detector);
  hcheck
      ->add_option("--history", a->kopt.history,
                   "change points: newest runs of the machine they are looked for in (100)")
      ->check(CLI::PositiveNumber);
  hcheck
      ->add_option("--steps", a->steps,
                   "fail: a lasting slower step fails the check (default); report: shown only")
      ->check(CLI::IsMember({"fail", "report"}));
  hcheck->add_option("--busy-timeout-ms", a->hopt.busy_timeout_ms, "wait for a locked database");
  AddOutput(hcheck, &a->out);
  auto* hexport = c->hexport = history->add_subcommand(
      "export",
      "copy every run of --db into --to that it lacks (a laptop's history to the team's)");
  hexport->add_option("--db", a->db, kDbHelp)->required();
  hexport->add_option("--to", a->other, "the store to copy into (created or upgraded as by add)")
      ->required();
  auto* himport = c->himport =
      history->add_subcommand("import", "copy every run of --from into --db that it lacks");
  himport->add_option("--db", a->db, kDbHelp)->required();
  himport->add_option("--from", a->other, "the store to copy from")->required();
  for (auto* sub : {hexport, himport}) {
    sub->add_option("--busy-timeout-ms", a->hopt.busy_timeout_ms, "wait for a locked database");
  }
  auto* site = c->site = app->add_subcommand(
      "site",
      "a static site of the history: an index per machine (sparklines, filters), a page per case "
      "with its change points, kernel diffs, repro and bisect commands, a page per machine");
  site->add_option("--db", a->db, kDbHelp)->required();
  site->add_option("--out-dir,-o", a->site.out_dir,
                   "the folder to write (made; its pages replaced)")
      ->required();
  site->add_option("--last", a->site.last, "the newest runs per machine (0: all; default 0)")
      ->check(CLI::NonNegativeNumber);
  AddChangePointOptions(site, &a->site.changes, &a->change_threshold, &a->detector);
  site->add_option("--busy-timeout-ms", a->hopt.busy_timeout_ms, "wait for a locked database");
  for (auto* sub : {c->hadd, c->hshow, hcheck, hexport, himport, site}) {
    sub->add_option("--connect-timeout", a->hopt.connect_timeout_s,
                    "PostgreSQL: seconds to wait for the server (10)");
  }
}

void AddBisect(CLI::App* app, Args* a, Commands* c) {
  auto* b = c->bisect = app->add_subcommand(
      "bisect",
      "the commit that made a case slower: git bisect in a temporary worktree, each step built, "
      "run with repetitions and judged as compare judges; exit 0 when found, 4 not reproduced, "
      "5 undecided");
  BisectOptions& o = a->bopt;
  b->add_option("--good", o.good, "a revision where the case is fast")->required();
  b->add_option("--bad", o.bad, "a later revision where it is slow")->required();
  b->add_option("--case", o.case_name,
                "the benchmark name, e.g. gemm/cpu/onednn/square.1024/dt:f32")
      ->required();
  b->add_option("--source", o.source, "a folder of the repository (default: the current one)");
  b->add_option("--build", o.build,
                "shell command run in the worktree at each step (default: cmake --preset release "
                "-B $DLBENCH_BISECT_BUILD_DIR && cmake --build ... --target bench_<family>)");
  b->add_option("--work-dir", o.work_dir,
                "keep the build here between bisections (DIR/build; the worktree goes to "
                "DIR/src and is removed); default: a temporary folder");
  auto* bin = b->add_option("--binary", o.binary,
                            "the benchmark binary, relative to the worktree (default: "
                            "$DLBENCH_BISECT_BUILD_DIR/benchmarks/bench_<family>)");
  b->add_option("--run", o.run,
                "shell command that runs the benchmark instead; the Google Benchmark flags are "
                "appended")
      ->excludes(bin);
  b->add_option("--repeats", o.repeats, "repetitions a step (10)");
  b->add_option("--threshold,-t", a->bisect_threshold, "relative change that matters (5%)");
  b->add_option("--alpha", o.compare.alpha, "significance level of the U test (0.05)");
  b->add_option("args", o.extra, "after --: more flags for every run (--dlb_kernels=on, ...)");
  AddOutput(b, &a->out);
}

int RunBisect(Args& a) {
  a.bopt.compare.threshold = ParseThreshold("--threshold", a.bisect_threshold);
  std::string message;
  try {
    BisectResult r = Bisect(a.bopt, &message);
    if (r.exit_code == kBisectNotReproduced) {
      std::fprintf(stderr, "dlbench-report: bisect: %s\n", message.c_str());
      return r.exit_code;
    }
    Emit(BisectDocument(r, a.bopt), a.out);
    return r.exit_code;
  } catch (const BisectInterrupted& e) {
    std::fprintf(stderr, "dlbench-report: bisect: %s\n", e.what());
    return kBisectInterrupted;
  }
}

int RunSummary(Args& a) {
  std::vector<Section> timelines;
  for (const std::string& t : a.traces) timelines.push_back(TraceSection(ReadTrace(t)));
  auto inputs = ReadInputs(a);
  Document d = Summary(Merge(std::move(inputs)), a.files);
  NoteSkipped(a, &d);
  // After the tables, before the labels (the last section).
  d.sections.insert(d.sections.end() - 1, timelines.begin(), timelines.end());
  Emit(d, a.out);
  return 0;
}

int RunCompare(Args& a) {
  a.copt.threshold = ParseThreshold("--threshold", a.threshold);
  std::vector<std::string> bases = Expand({a.base}), news = Expand({a.now});
  std::vector<std::string> all = bases;
  all.insert(all.end(), news.begin(), news.end());
  auto in = ReadBenchmarkFiles(all);
  std::vector<FileData> in_base(std::make_move_iterator(in.begin()),
                                std::make_move_iterator(in.begin() + bases.size()));
  std::vector<FileData> in_new(std::make_move_iterator(in.begin() + bases.size()),
                               std::make_move_iterator(in.end()));
  CompareResult r = Compare(Merge(in_base), Merge(in_new), a.copt);
  if (r.common == 0)
    throw InputError("compare", "",
                     "no case measured in both " + a.base + " and " + a.now +
                         ": nothing to compare (different families, devices or names?)");
  std::vector<GbenchDiff> diff;
  if (a.as_compare_py) {
    // compare.py reads one file a side; a folder's files count as one, in order.
    auto entries = [](const std::vector<FileData>& files) {
      std::vector<Entry> all;
      for (const FileData& f : files) all.insert(all.end(), f.entries.begin(), f.entries.end());
      return SortLikeComparePy(std::move(all));
    };
    diff = DifferenceReport(entries(in_base), entries(in_new));
  }
  Emit(CompareDocument(r, a.copt, a.base, a.now, a.as_compare_py ? &diff : nullptr,
                       a.aggregates_only),
       a.out);
  return r.exit_code;
}

int RunReport(Args& a) {
  auto inputs = ReadInputs(a);
  std::vector<std::map<std::string, std::string>> contexts;
  for (const FileData& f : inputs) contexts.push_back(f.context);
  Document d = FullReport(Merge(std::move(inputs)), a.files, contexts);
  NoteSkipped(a, &d);
  if (a.out_dir.empty()) {
    Emit(d, a.out);
    return 0;
  }
  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec) throw InputError(a.out_dir, "", "cannot create the folder: " + ec.message());
  std::string md = a.out_dir + "/report.md", html = a.out_dir + "/report.html";
  WriteOutput(md, RenderMarkdown(d));
  WriteOutput(html, RenderHtml(d));
  std::printf("%s\n%s\n", md.c_str(), html.c_str());
  return 0;
}

int RunHistory(const Commands& c, Args& a) {
  if (c.hadd->parsed()) {
    bool added = HistoryAdd(a.db, ReadBenchmarkFiles(a.files), a.meta, a.hopt);
    std::string where = RedactUrl(a.db);
    std::fprintf(stderr, "dlbench-report: %s\n",
                 added ? ("added the run to " + where).c_str()
                       : ("the run is already in " + where + "; nothing added").c_str());
  } else if (c.hshow->parsed()) {
    Emit(HistoryShow(a.db, a.sopt, a.hopt), a.out);
  } else if (c.hcheck->parsed()) {
    a.kopt.threshold = ParseThreshold("--threshold", a.check_threshold);
    a.kopt.steps_fail = a.steps == "fail";
    a.kopt.changes.threshold = ParseThreshold("--change-threshold", a.change_threshold);
    a.kopt.changes.detector = ParseDetector(a.detector);
    CheckResult r = HistoryCheck(a.db, a.kopt, a.hopt);
    Emit(r.doc, a.out);
    return r.exit_code;
  } else if (c.site->parsed()) {
    a.site.changes.threshold = ParseThreshold("--change-threshold", a.change_threshold);
    a.site.changes.detector = ParseDetector(a.detector);
    SiteResult r = WriteSite(a.db, a.site, a.hopt);
    std::fprintf(stderr,
                 "dlbench-report: wrote %s/index.html: %d machines, %d series of cases, %d runs, "
                 "%d change points\n",
                 a.site.out_dir.c_str(), r.machines, r.cases, r.runs, r.change_points);
  } else if (c.hexport->parsed() || c.himport->parsed()) {
    const std::string& from = c.hexport->parsed() ? a.db : a.other;
    const std::string& to = c.hexport->parsed() ? a.other : a.db;
    CopyResult r = HistoryCopy(from, to, a.hopt);
    std::fprintf(stderr,
                 "dlbench-report: %d runs (%lld results) copied from %s to %s; %d were there "
                 "already\n",
                 r.copied, static_cast<long long>(r.results), RedactUrl(from).c_str(),
                 RedactUrl(to).c_str(), r.present);
  }
  return 0;
}

// The families table (fixtures/schema/families.h), a line per binary for scripts:
// "bench_<binary> <family> <budget weight>", tab-separated, in the order a run takes them.
int PrintFamilies() {
  for (const families::Facts& f : families::kFamilies)
    for (const families::Binary& b : f.binaries)
      if (!b.name.empty())
        std::printf("bench_%.*s\t%.*s\t%d\n", int(b.name.size()), b.name.data(), int(f.name.size()),
                    f.name.data(), b.budget_weight);
  return 0;
}

// The parsed subcommand's work; its exit code.
int Dispatch(const Commands& c, Args& a) {
  if (c.families->parsed()) return PrintFamilies();
  if (!a.out.format.empty()) ParseFormat(a.out.format);
  a.files = Expand(a.files, &a.from_folder);
  if (c.summary->parsed()) return RunSummary(a);
  if (c.compare->parsed()) return RunCompare(a);
  if (c.report->parsed()) return RunReport(a);
  if (c.bisect->parsed()) return RunBisect(a);
  if (c.speedup->parsed() || c.sweep->parsed() || c.train->parsed()) {
    MergedRuns runs = Merge(ReadInputs(a));
    if (c.speedup->parsed()) Emit(SpeedupDocument(runs, a.files), a.out);
    if (c.sweep->parsed()) Emit(SweepDocument(runs, a.files, a.axis), a.out);
    if (c.train->parsed()) Emit(TrainDocument(runs, a.files), a.out);
    return 0;
  }
  return RunHistory(c, a);
}

}  // namespace

int RunCli(int argc, const char* const* argv) {
  CLI::App app{
      "dlbench-report: summaries, comparisons, CPU-vs-GPU speedups, batch-size sweeps, training "
      "steps and history from Google Benchmark JSON"};
  app.name("dlbench-report");
  app.require_subcommand(1);
  Args args;
  Commands commands;
  AddSummaryAndCompare(&app, &args, &commands);
  AddAnalyses(&app, &args, &commands);
  auto* history =
      app.add_subcommand("history", "runs and results in SQLite or PostgreSQL (a team's store)");
  history->require_subcommand(1);
  AddHistoryAddShow(history, &args, &commands);
  AddHistoryCheckCopy(&app, history, &args, &commands);
  AddBisect(&app, &args, &commands);
  commands.families = app.add_subcommand(
      "families",
      "the benchmark families' binaries, a line each: bench_<name>, family, budget weight");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "dlbench-report: usage: %s (see --help)\n", e.what());
    return 1;
  }

  try {
    return Dispatch(commands, args);
  } catch (const InputError& e) {
    std::fprintf(stderr, "dlbench-report: %s\n", e.what());
    return 1;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "dlbench-report: usage: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlbench-report: %s\n", e.what());
    return 1;
  }
}

}  // namespace dlb::report
