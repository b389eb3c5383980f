#include "tools/report/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses.h"
#include "tools/report/document.h"
#include "tools/report/gbench_json.h"
#include "tools/report/history.h"
#include "tools/report/history_store.h"
#include "tools/report/output.h"
#include "tools/report/trace.h"

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
std::vector<std::string> Expand(const std::vector<std::string>& paths) {
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
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

// "5%", "5" (percent when >= 1) or "0.05".
double ParseThreshold(const std::string& s) {
  size_t used = 0;
  double v = std::stod(s, &used);
  std::string rest = s.substr(used);
  if (rest == "%") return v / 100;
  if (!rest.empty()) throw std::invalid_argument("bad threshold '" + s + "'");
  if (v < 0) throw std::invalid_argument("threshold must not be negative");
  return v >= 1 ? v / 100 : v;
}

}  // namespace

constexpr const char* kDbHelp =
    "SQLite file, or postgresql://user@host:port/dbname (libpq URL; PG* variables fill the rest)";

int RunCli(int argc, const char* const* argv) {
  CLI::App app{
      "dlbench-report: summaries, comparisons, CPU-vs-GPU speedups, batch-size sweeps, training "
      "steps and history from Google Benchmark JSON"};
  app.name("dlbench-report");
  app.require_subcommand(1);

  std::vector<std::string> files;
  OutputOpts out;

  auto* summary = app.add_subcommand("summary", "a table per family: median, CV, counters, skips");
  summary->add_option("files", files, "Google Benchmark JSON files or folders of them")->required();
  std::vector<std::string> traces;
  summary->add_option("--trace", traces,
                      "a device monitor trace (--dlb_monitor_trace's CSV): per case clocks and "
                      "power, and in HTML their timeline; may be given once per binary");
  AddOutput(summary, &out);

  std::string base, now, threshold = "5%";
  CompareOptions copt;
  auto* compare = app.add_subcommand(
      "compare", "BASE against NEW: change, U test, verdicts; exit 3 on a significant slowdown");
  compare->add_option("base", base, "baseline JSON, or a folder of them")->required();
  compare->add_option("new", now, "new JSON, or a folder of them")->required();
  compare->add_option("--threshold,-t", threshold, "relative change that matters (default 5%)");
  compare->add_option("--alpha", copt.alpha, "significance level after BH correction (0.05)");
  compare->add_flag("--only-changes", copt.only_changes,
                    "leave the \"same\" rows out of the tables");
  bool as_compare_py = false, aggregates_only = false;
  compare->add_flag("--as-compare-py", as_compare_py,
                    "also Google Benchmark's compare.py table: per name and pair of runs, time and "
                    "CPU changes, U test of both");
  compare->add_flag("--aggregates-only,-a", aggregates_only,
                    "in that table only aggregate rows, as compare.py -a");
  AddOutput(compare, &out);

  auto* speedup = app.add_subcommand("speedup", "CPU vs GPU per family, workload, dtype, batch");
  speedup->add_option("files", files, "Google Benchmark JSON files or folders of them")->required();
  AddOutput(speedup, &out);

  auto* sweep = app.add_subcommand(
      "sweep",
      "per workload the curve over batch size (with fit), over worker threads or over GPUs");
  sweep->add_option("files", files, "Google Benchmark JSON files or folders of them")->required();
  std::string axis = "bs";
  sweep
      ->add_option("--axis", axis,
                   "bs (default): batch-size curves; workers: loader scaling; gpus: multi-GPU "
                   "training steps (efficiency, exposed communication) and collectives (busbw "
                   "over size per GPU count)")
      ->check(CLI::IsMember({"bs", "workers", "gpus"}));
  AddOutput(sweep, &out);

  auto* train = app.add_subcommand(
      "train", "training steps per model: epoch CPU vs GPU, batch size, phases, memory, graph");
  train->add_option("files", files, "Google Benchmark JSON files or folders of them")->required();
  AddOutput(train, &out);

  std::string out_dir;
  auto* report = app.add_subcommand(
      "report",
      "summary + speedups + sweeps + training steps in one report (what the README's main job "
      "writes)");
  report->add_option("files", files, "Google Benchmark JSON files or folders of them")->required();
  report->add_option("--out-dir", out_dir,
                     "write report.md and report.html there and print their paths");
  AddOutput(report, &out);

  auto* history =
      app.add_subcommand("history", "runs and results in SQLite or PostgreSQL (a team's store)");
  history->require_subcommand(1);
  std::string db;
  HistoryOptions hopt;
  RunMeta meta;
  auto* hadd = history->add_subcommand("add", "add one run (idempotent for the same run)");
  hadd->add_option("files", files, "Google Benchmark JSON files of the run")->required();
  hadd->add_option("--db", db, kDbHelp)->required();
  auto from_context = [](std::string_view key) {
    return " (default: the context's " + std::string(key) + ")";
  };
  hadd->add_option("--commit", meta.commit, "commit" + from_context(schema::kCtxGitRevision));
  hadd->add_option("--branch", meta.branch, "branch" + from_context(schema::kCtxGitBranch));
  hadd->add_option("--machine", meta.machine, "machine" + from_context(schema::kCtxHostName));
  hadd->add_option("--date", meta.date, "date" + from_context(schema::kCtxDate));
  hadd->add_option("--busy-timeout-ms", hopt.busy_timeout_ms, "wait for a locked database");
  ShowOptions sopt;
  auto* hshow = history->add_subcommand("show", "trend table and charts per benchmark");
  hshow->add_option("--db", db, kDbHelp)->required();
  hshow->add_option("--last", sopt.last, "runs to show (10)");
  hshow->add_option("--filter", sopt.filter, "substring of benchmark names");
  hshow->add_option("--machine", sopt.machine, "only runs of this machine");
  hshow->add_option("--max-charts", sopt.max_charts, "HTML charts at most (40)");
  hshow->add_option("--busy-timeout-ms", hopt.busy_timeout_ms, "wait for a locked database");
  AddOutput(hshow, &out);
  CheckOptions kopt;
  std::string check_threshold = "5%";
  auto* hcheck = history->add_subcommand(
      "check",
      "newest run against the recent window (median, MAD) and steps in it; exit 3 on a regression");
  hcheck->add_option("--db", db, kDbHelp)->required();
  hcheck->add_option("--window", kopt.window, "previous runs on the same machine (10)");
  hcheck->add_option("--threshold,-t", check_threshold, "relative change that matters (5%)");
  hcheck->add_option("--mads", kopt.k, "and more than this many scaled MADs (3)");
  hcheck->add_option("--min-segment", kopt.min_segment, "steps: runs on each side at least (3)")
      ->check(CLI::PositiveNumber);
  std::string steps = "fail";
  hcheck
      ->add_option("--steps", steps,
                   "fail: a lasting slower step fails the check (default); report: shown only")
      ->check(CLI::IsMember({"fail", "report"}));
  hcheck->add_option("--busy-timeout-ms", hopt.busy_timeout_ms, "wait for a locked database");
  AddOutput(hcheck, &out);
  std::string other;
  auto* hexport = history->add_subcommand(
      "export",
      "copy every run of --db into --to that it lacks (a laptop's history to the team's)");
  hexport->add_option("--db", db, kDbHelp)->required();
  hexport->add_option("--to", other, "the store to copy into (created or upgraded as by add)")
      ->required();
  auto* himport =
      history->add_subcommand("import", "copy every run of --from into --db that it lacks");
  himport->add_option("--db", db, kDbHelp)->required();
  himport->add_option("--from", other, "the store to copy from")->required();
  for (auto* c : {hexport, himport}) {
    c->add_option("--busy-timeout-ms", hopt.busy_timeout_ms, "wait for a locked database");
  }
  for (auto* c : {hadd, hshow, hcheck, hexport, himport}) {
    c->add_option("--connect-timeout", hopt.connect_timeout_s,
                  "PostgreSQL: seconds to wait for the server (10)");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "dlbench-report: usage: %s (see --help)\n", e.what());
    return 1;
  }

  try {
    if (!out.format.empty()) ParseFormat(out.format);
    files = Expand(files);
    if (summary->parsed()) {
      std::vector<Section> timelines;
      for (const std::string& t : traces) timelines.push_back(TraceSection(ReadTrace(t)));
      Document d = Summary(Merge(ReadBenchmarkFiles(files)), files);
      // After the tables, before the labels (the last section).
      d.sections.insert(d.sections.end() - 1, timelines.begin(), timelines.end());
      Emit(d, out);
    } else if (compare->parsed()) {
      copt.threshold = ParseThreshold(threshold);
      std::vector<std::string> bases = Expand({base}), news = Expand({now});
      std::vector<std::string> all = bases;
      all.insert(all.end(), news.begin(), news.end());
      auto in = ReadBenchmarkFiles(all);
      std::vector<FileData> in_base(std::make_move_iterator(in.begin()),
                                    std::make_move_iterator(in.begin() + bases.size()));
      std::vector<FileData> in_new(std::make_move_iterator(in.begin() + bases.size()),
                                   std::make_move_iterator(in.end()));
      CompareResult r = Compare(Merge(in_base), Merge(in_new), copt);
      std::vector<GbenchDiff> diff;
      if (as_compare_py) {
        // compare.py reads one file a side; a folder's files count as one, in order.
        auto entries = [](const std::vector<FileData>& files) {
          std::vector<Entry> all;
          for (const FileData& f : files) all.insert(all.end(), f.entries.begin(), f.entries.end());
          return SortLikeComparePy(std::move(all));
        };
        diff = DifferenceReport(entries(in_base), entries(in_new));
      }
      Emit(CompareDocument(r, copt, base, now, as_compare_py ? &diff : nullptr, aggregates_only),
           out);
      return r.exit_code;
    } else if (speedup->parsed()) {
      Emit(SpeedupDocument(Merge(ReadBenchmarkFiles(files)), files), out);
    } else if (sweep->parsed()) {
      Emit(SweepDocument(Merge(ReadBenchmarkFiles(files)), files, axis), out);
    } else if (train->parsed()) {
      Emit(TrainDocument(Merge(ReadBenchmarkFiles(files)), files), out);
    } else if (report->parsed()) {
      Document d = FullReport(Merge(ReadBenchmarkFiles(files)), files);
      if (!out_dir.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(out_dir, ec);
        if (ec) throw InputError(out_dir, "", "cannot create the folder: " + ec.message());
        std::string md = out_dir + "/report.md", html = out_dir + "/report.html";
        WriteOutput(md, RenderMarkdown(d));
        WriteOutput(html, RenderHtml(d));
        std::printf("%s\n%s\n", md.c_str(), html.c_str());
      } else {
        Emit(d, out);
      }
    } else if (hadd->parsed()) {
      bool added = HistoryAdd(db, ReadBenchmarkFiles(files), meta, hopt);
      std::string where = RedactUrl(db);
      std::fprintf(stderr, "dlbench-report: %s\n",
                   added ? ("added the run to " + where).c_str()
                         : ("the run is already in " + where + "; nothing added").c_str());
    } else if (hshow->parsed()) {
      Emit(HistoryShow(db, sopt, hopt), out);
    } else if (hcheck->parsed()) {
      kopt.threshold = ParseThreshold(check_threshold);
      kopt.steps_fail = steps == "fail";
      CheckResult r = HistoryCheck(db, kopt, hopt);
      Emit(r.doc, out);
      return r.exit_code;
    } else if (hexport->parsed() || himport->parsed()) {
      const std::string& from = hexport->parsed() ? db : other;
      const std::string& to = hexport->parsed() ? other : db;
      CopyResult c = HistoryCopy(from, to, hopt);
      std::fprintf(stderr,
                   "dlbench-report: %d runs (%lld results) copied from %s to %s; %d were there "
                   "already\n",
                   c.copied, static_cast<long long>(c.results), RedactUrl(from).c_str(),
                   RedactUrl(to).c_str(), c.present);
    }
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
  return 0;
}

}  // namespace dlb::report
