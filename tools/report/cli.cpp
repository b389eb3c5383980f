#include "tools/report/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>

#include "fixtures/schema/families.h"
#include "fixtures/schema/schema.h"
#include "tools/report/analyses/bisect.h"
#include "tools/report/analyses/compare.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/rerun.h"
#include "tools/report/analyses/speedup.h"
#include "tools/report/analyses/summary.h"
#include "tools/report/analyses/sweep.h"
#include "tools/report/analyses/timeline.h"
#include "tools/report/analyses/train.h"
#include "tools/report/history/history.h"
#include "tools/report/history/store.h"
#include "tools/report/read/file_text.h"
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

// A folder stands for the *.json and *.json.gz files in it, sorted: a suite run leaves one file
// per binary, and kept evidence is compressed. Folders replaced by those files, in name order;
// `from_folder` (when given) collects the files that came from a folder: report, summary, speedup,
// sweep and train skip those that hold no case (ReadInputs), where a file named on its own is bad
// input.
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
      if (IsJsonFileName(e.path().filename().string())) found.push_back(e.path().string());
    if (found.empty()) throw InputError(p, "", "a folder without *.json or *.json.gz files");
    std::sort(found.begin(), found.end());
    if (from_folder) from_folder->insert(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// 1, 0.5, 1e-06: a bound as short as it reads.
std::string FormatBound(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// "5%" or "5": a bare number is a percentage too, so that 0.5 and 0.5% agree; a malformed one is
// one line naming `flag`.
double ParseThreshold(const std::string& flag, const std::string& s) {
  const std::string bad = flag + " " + s + ": expects a percentage such as 5% or 0.5";
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
  return v / 100;
}

// history check's counts of runs: outside [lo, hi] is one line naming the flag (0 runs of window
// would judge nothing and mark every case new).
void RequireRuns(const std::string& flag, int v, int lo, int hi) {
  if (v < lo || v > hi)
    throw std::invalid_argument(flag + " " + std::to_string(v) + ": expects " + std::to_string(lo) +
                                " to " + std::to_string(hi));
}

// Range checks whose failure is one short line ("--alpha: must be in (0, 1), got 5"): CLI11's
// own Range prints its bounds with std::to_string, some 300 digits for the largest double.
CLI::Validator InRange(double lo, double hi, bool open_lo, bool open_hi) {
  const std::string range = std::string(open_lo ? "(" : "[") + FormatBound(lo) + ", " +
                            (std::isinf(hi) ? "inf" : FormatBound(hi)) + (open_hi ? ")" : "]");
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(in, v)) return "expects a number, got " + in;
        const bool ok = (open_lo ? v > lo : v >= lo) && (open_hi ? v < hi : v <= hi);
        return ok ? std::string() : "must be in " + range + ", got " + in;
      },
      "in " + range);
}
CLI::Validator AtLeast(double lo) { return InRange(lo, kInf, false, true); }
CLI::Validator Positive() { return InRange(0, kInf, true, true); }
CLI::Validator Fraction() { return InRange(0, 1, true, true); }

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
  bool confirm = false;
  int confirm_repetitions = 10;
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
    throw InputError(
        std::filesystem::path(*a.from_folder.begin()).parent_path().string(), "",
        "no *.json or *.json.gz file of the folder holds a case (" + a.skipped.front() + ")");
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
      ->check(AtLeast(1));
  compare->add_option("--alpha", a->copt.alpha, "significance level after BH correction (0.05)")
      ->check(Fraction());
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

// --machine and --branch of show, check and site: which runs are one series.
void AddSeriesOptions(CLI::App* sub, std::optional<std::string>* machine,
                      std::optional<std::string>* branch) {
  sub->add_option_function<std::string>(
      "--machine", [machine](const std::string& v) { *machine = v; },
      "runs of this machine (default: the newest run's)");
  sub->add_option_function<std::string>(
      "--branch", [branch](const std::string& v) { *branch = v; },
      "runs of this branch (default: the newest run's, of --machine where given)");
}

void AddHistoryAddShow(CLI::App* history, Args* a, Commands* c) {
  auto* hadd = c->hadd = history->add_subcommand(
      "add",
      "add files' cases to their run (commit, machine, date): a new run or one other files "
      "were added to; adding a file again adds nothing");
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
  AddSeriesOptions(hshow, &a->sopt.machine, &a->sopt.branch);
  hshow->add_option("--max-charts", a->sopt.max_charts, "HTML charts at most (40)");
  hshow->add_option("--busy-timeout-ms", a->hopt.busy_timeout_ms, "wait for a locked database");
  AddOutput(hshow, &a->out);
}

// The detector's options, shared by history check and site: the same change points from both.
void AddChangePointOptions(CLI::App* sub, ChangePointOptions* o, std::string* threshold,
                           std::string* detector) {
  sub->add_option("--min-segment", o->min_segment, "change points: runs on each side at least (5)")
      ->check(AtLeast(1));
  sub->add_option("--detector", *detector,
                  "change points: pelt (default) or edivisive (permutation test)")
      ->check(CLI::IsMember({"pelt", "edivisive"}));
  sub->add_option("--penalty", o->penalty, "PELT: penalty per change point, x log(runs) (2.5)")
      ->check(Positive());
  sub->add_option("--alpha", o->alpha, "change points: U test level between the segments (0.0001)")
      ->check(Fraction());
  sub->add_option("--change-threshold", *threshold,
                  "change points: least change of the segments' medians (2%)");
}

void AddHistoryCheckCopy(CLI::App* app, CLI::App* history, Args* a, Commands* c) {
  auto* hcheck = c->hcheck = history->add_subcommand(
      "check",
      "newest runs against the recent window and change points; exit 3 on a confirmed regression");
  hcheck->add_option("--db", a->db, kDbHelp)->required();
  AddSeriesOptions(hcheck, &a->kopt.machine, &a->kopt.branch);
  hcheck->add_option("--window", a->kopt.window,
                     "runs of that machine and branch before the judged ones: the reference (10)");
  auto* hold = hcheck->add_option(
      "--hold", a->kopt.hold,
      "a slowdown fails once it holds for the newest N runs (2; 1: the newest run alone)");
  hcheck
      ->add_flag(
          "--confirm", a->confirm,
          "re-run each case whose newest run is slower (its repro command, in the current "
          "folder) and fail only where the U test confirms it, instead of waiting for --hold")
      ->excludes(hold);
  hcheck->add_option("--confirm-repetitions", a->confirm_repetitions,
                     "--confirm: repetitions of each re-run (10)");
  hcheck->add_option("--threshold,-t", a->check_threshold, "relative change that matters (5%)");
  hcheck->add_option("--mads", a->kopt.k,
                     "and more than this many times the case's run-to-run noise (3)");
  AddChangePointOptions(hcheck, &a->kopt.changes, &a->change_threshold, &a->detector);
  hcheck
      ->add_option("--history", a->kopt.history,
                   "change points: newest runs of the machine they are looked for in (100)")
      ->check(AtLeast(1));
  hcheck
      ->add_option("--steps", a->steps,
                   "fail: a lasting slower step fails the check (default); report: shown only")
      ->check(CLI::IsMember({"fail", "report"}));
  hcheck->add_flag("--fail-on-env-change", a->kopt.fail_on_env_change,
                   "a slowdown where the case's own libraries, driver or measuring flags changed "
                   "fails too (default: named, not failed)");
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
      ->check(AtLeast(0));
  site->add_option_function<std::string>(
      "--machine", [a](const std::string& v) { a->site.machine = v; },
      "this machine only (default: every machine)");
  site->add_option_function<std::string>(
      "--branch", [a](const std::string& v) { a->site.branch = v; },
      "runs of this branch (default: the newest run's, of --machine where given)");
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
  b->add_option("--alpha", o.compare.alpha, "significance level of the U test (0.05)")
      ->check(Fraction());
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
  // compare.py reads one file a side; a folder's files count as one, in order.
  auto entries = [](const std::vector<FileData>& files) {
    std::vector<Entry> all;
    for (const FileData& f : files) all.insert(all.end(), f.entries.begin(), f.entries.end());
    return SortLikeComparePy(std::move(all));
  };
  // Without a time on both sides (only aggregates that are no time: a percentage, a custom
  // statistic) compare.py's table still compares what both files hold, as compare.py does.
  const bool py_only = r.common == 0;
  std::vector<GbenchDiff> diff;
  if (a.as_compare_py || py_only) diff = DifferenceReport(entries(in_base), entries(in_new));
  if (py_only && std::none_of(diff.begin(), diff.end(),
                              [](const GbenchDiff& g) { return g.name != kOverallGeomean; }))
    throw InputError("compare", "",
                     "no case measured in both " + a.base + " and " + a.now +
                         ": nothing to compare (different families, devices or names?)");
  Document d =
      CompareDocument(r, a.copt, a.base, a.now, diff.empty() ? nullptr : &diff, a.aggregates_only);
  if (py_only)
    d.notes.push_back(
        "No case has a time in both files: compare.py's table (in the details) compares the "
        "aggregates both hold, with no verdict.");
  Emit(d, a.out);
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
    AddResult r = HistoryAdd(a.db, ReadBenchmarkFiles(a.files), a.meta, a.hopt);
    auto count = [](int64_t n) { return std::to_string(n) + (n == 1 ? " case" : " cases"); };
    const std::string where = RedactUrl(a.db);
    const std::string present =
        r.present ? " (" + count(r.present) + " it held already)" : std::string();
    std::string said = r.new_run ? "added the run to " + where + ": " + count(r.added)
                       : r.added
                           ? "added " + count(r.added) + " to the run already in " + where + present
                           : "the run is already in " + where + " with the same " +
                                 count(r.present) + "; nothing added";
    std::fprintf(stderr, "dlbench-report: %s\n", said.c_str());
  } else if (c.hshow->parsed()) {
    Emit(HistoryShow(a.db, a.sopt, a.hopt), a.out);
  } else if (c.hcheck->parsed()) {
    a.kopt.threshold = ParseThreshold("--threshold", a.check_threshold);
    RequireRuns("--window", a.kopt.window, 1, 10000);
    RequireRuns("--hold", a.kopt.hold, 1, 100);
    RequireRuns("--confirm-repetitions", a.confirm_repetitions, 3, 1000);
    if (a.confirm)
      a.kopt.rerun = [&a](const std::string& name, const std::string& repro, std::string* why) {
        std::fprintf(stderr, "dlbench-report: history check: re-running %s\n", name.c_str());
        return RerunCase(name, repro, a.confirm_repetitions, why);
      };
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
                 "dlbench-report: %d runs copied from %s to %s, %d it had got the cases they "
                 "lacked (%lld results in all); %d were there already\n",
                 r.copied, RedactUrl(from).c_str(), RedactUrl(to).c_str(), r.extended,
                 static_cast<long long>(r.results), r.present);
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
