// Bisect's git and processes: a temporary worktree of the repository, `git bisect` driven one
// step at a time in it, the build and the case's run as child processes in their own process
// groups (a signal to dlbench-report is passed on to them, then the worktree is removed).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "tools/report/analyses/bisect.h"
#include "tools/report/analyses/process.h"
#include "tools/report/analyses/repro.h"

namespace dlb::report {

namespace {

namespace fs = std::filesystem;

void CheckInterrupt() {
  if (CaughtSignal())
    throw BisectInterrupted("interrupted (signal " + std::to_string(CaughtSignal()) +
                            "); the worktree and temporary files were removed");
}

std::string Short(const std::string& hash) { return hash.substr(0, 12); }

bool IsHash(const std::string& s) {
  return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The temporary folder, the worktree and the bisection's state in it: gone when this is.
struct Scratch {
  std::string tmp, repo, worktree;
  bool worktree_added = false;
  ~Scratch() {
    if (worktree_added) {
      const std::string log = tmp + "/cleanup.log";
      RunProcess({"git", "-C", repo, "worktree", "remove", "--force", worktree}, "/", log, {},
                 false);
      std::error_code ec;
      fs::remove_all(worktree, ec);
      RunProcess({"git", "-C", repo, "worktree", "prune"}, "/", log, {}, false);
    }
    if (!tmp.empty()) {
      std::error_code ec;
      fs::remove_all(tmp, ec);
    }
  }
};

class Driver {
 public:
  Driver(const BisectOptions& opt, Scratch* s) : opt_(opt), s_(*s) {}

  struct Out {
    int rc;
    std::string text;
  };
  // git with English messages (bisect's are parsed), output captured.
  Out Git(std::vector<std::string> args, const std::string& cwd) {
    CheckInterrupt();
    std::string log = s_.tmp + "/git-" + std::to_string(++calls_) + ".out";
    args.insert(args.begin(), "git");
    int rc = RunProcess(args, cwd, log, {{"LC_ALL", "C"}, {"GIT_TERMINAL_PROMPT", "0"}});
    CheckInterrupt();
    if (rc == 127 && ReadText(log).empty())
      throw InputError("bisect", "", "cannot run git (is it installed and on PATH?)");
    return {rc, ReadText(log)};
  }
  Out GitOk(const std::vector<std::string>& args, const std::string& cwd) {
    Out o = Git(args, cwd);
    if (o.rc != 0) {
      std::string text = Trim(o.text);
      std::string first = text.substr(0, text.find('\n'));
      throw InputError("bisect", "",
                       "git " + args.at(args.size() > 2 ? 2 : 0) + " failed: " + first);
    }
    return o;
  }

  std::string Resolve(const std::string& rev) {
    Out o = Git({"-C", s_.repo, "rev-parse", "--verify", "--quiet", rev + "^{commit}"}, "/");
    if (o.rc != 0 || !IsHash(Trim(o.text)))
      throw InputError("bisect", "", "unknown revision '" + rev + "' in " + s_.repo);
    return Trim(o.text);
  }

  std::string Subject(const std::string& commit) {
    return Trim(GitOk({"-C", s_.repo, "log", "-1", "--format=%s", commit}, "/").text);
  }

  // Checks the input, adds the worktree at the good revision.
  void Prepare(BisectResult* r) {
    std::string source = opt_.source.empty() ? "." : opt_.source;
    std::error_code ec;
    if (!fs::is_directory(source, ec)) throw InputError(source, "", "no such folder (--source)");
    Out top = Git({"-C", fs::absolute(source).string(), "rev-parse", "--show-toplevel"}, "/");
    if (top.rc != 0) throw InputError(source, "", "not inside a git repository");
    s_.repo = Trim(top.text);
    r->good = Resolve(opt_.good);
    r->bad = Resolve(opt_.bad);
    if (r->good == r->bad)
      throw InputError("bisect", "", "--good and --bad are the same commit " + Short(r->good));
    if (Git({"-C", s_.repo, "merge-base", "--is-ancestor", r->good, r->bad}, "/").rc != 0)
      throw InputError("bisect", "",
                       "--good " + opt_.good + " is not an ancestor of --bad " + opt_.bad);
    if (opt_.work_dir.empty()) {
      s_.worktree = s_.tmp + "/src";
      build_dir_ = s_.worktree + "/build/release";
    } else {
      fs::path w = fs::absolute(opt_.work_dir);
      fs::create_directories(w / "build", ec);
      if (ec) throw InputError(opt_.work_dir, "", "cannot create the folder: " + ec.message());
      s_.worktree = (w / "src").string();
      if (fs::exists(s_.worktree, ec))
        throw InputError(s_.worktree, "",
                         "exists already (a bisection still running, or one killed outright): "
                         "remove it with git worktree remove --force");
      build_dir_ = (w / "build").string();
    }
    s_.worktree_added = true;  // a half-made worktree is removed too
    GitOk({"-C", s_.repo, "worktree", "add", "--detach", s_.worktree, r->good}, "/");
    family_ = CaseFamily(opt_.case_name);
  }

  // Builds and runs the checked-out commit; the case's Bench when measured.
  std::optional<Bench> Measure(const std::string& commit, BisectStep* st) {
    const std::string tag = std::to_string(++steps_) + "-" + Short(commit);
    const std::map<std::string, std::string> env = {{"DLBENCH_BISECT_BUILD_DIR", build_dir_},
                                                    {"DLBENCH_BISECT_FAMILY", family_},
                                                    {"DLBENCH_BISECT_COMMIT", commit}};
    std::string build = opt_.build;
    if (build.empty())
      build =
          "cmake --preset release -B \"$DLBENCH_BISECT_BUILD_DIR\" && cmake --build "
          "\"$DLBENCH_BISECT_BUILD_DIR\" --target bench_" +
          family_;
    const std::string build_log = s_.tmp + "/build-" + tag + ".log";
    CheckInterrupt();
    int rc = RunProcess({"/bin/sh", "-c", build}, s_.worktree, build_log, env);
    CheckInterrupt();
    if (rc != 0) {
      st->note = "build failed (exit " + std::to_string(rc) + "): " + LastLine(build_log);
      return std::nullopt;
    }
    const std::string json = s_.tmp + "/run-" + tag + ".json";
    const std::string run_log = s_.tmp + "/run-" + tag + ".log";
    std::vector<std::string> flags = {"--benchmark_filter=" + CaseFilter(opt_.case_name),
                                      "--benchmark_repetitions=" + std::to_string(opt_.repeats),
                                      "--benchmark_out=" + json, "--benchmark_out_format=json"};
    flags.insert(flags.end(), opt_.extra.begin(), opt_.extra.end());
    if (!opt_.run.empty()) {
      std::string cmd = opt_.run;
      for (const auto& f : flags) cmd += " " + ShellQuote(f);
      rc = RunProcess({"/bin/sh", "-c", cmd}, s_.worktree, run_log, env);
    } else {
      const std::string bin = RanBinary();
      if (access(bin.c_str(), X_OK) != 0) {
        st->note = "the build left no runnable " + bin.substr(bin.rfind('/') + 1);
        return std::nullopt;
      }
      std::vector<std::string> argv = {bin};
      argv.insert(argv.end(), flags.begin(), flags.end());
      rc = RunProcess(argv, s_.worktree, run_log, env);
    }
    CheckInterrupt();
    if (rc != 0) {
      st->note = "the run failed (exit " + std::to_string(rc) + "): " + LastLine(run_log);
      return std::nullopt;
    }
    std::error_code ec;
    const std::string ran = (opt_.run.empty() ? RanBinary() : opt_.run) + " --benchmark_filter='" +
                            CaseFilter(opt_.case_name) + "'";
    if (!fs::exists(json, ec) || fs::file_size(json, ec) == 0) {
      // Google Benchmark leaves the file empty when the filter matches nothing.
      st->note = "the case is not in the run's output: " + ran + " ran no case";
      return std::nullopt;
    }
    MergedRuns runs;
    try {
      runs = Merge({ReadBenchmarkFile(json)});
    } catch (const InputError& e) {
      // A run of no case writes a valid JSON without benchmarks: the filter matched nothing.
      const std::string what = e.what();
      if (what.size() >= 13 && what.compare(what.size() - 13, 13, "no benchmarks") == 0)
        st->note = "the case is not in the run's output: " + ran + " ran no case";
      else
        st->note = std::string("no usable output: ") + what;
      return std::nullopt;
    }
    const std::string want = CaseBaseName(opt_.case_name);
    for (Bench& b : runs.benches) {
      if (CaseBaseName(b.name) != want) continue;
      if (!b.measured()) {
        st->note = std::string(StatusName(b.status)) + ": " + b.message;
        return std::nullopt;
      }
      st->measured = true;
      st->median_ns = b.MedianNs();
      st->reps = b.Repetitions();
      st->kernels = b.kernels;
      b.name = want;
      return b;
    }
    st->note = "the case is not in the run's output";
    return std::nullopt;
  }

  // The binary a step runs: --binary (relative to the worktree) or the family's in the build.
  std::string RanBinary() const {
    std::string bin =
        opt_.binary.empty() ? build_dir_ + "/benchmarks/bench_" + family_ : opt_.binary;
    if (!bin.empty() && bin[0] != '/') bin = s_.worktree + "/" + bin;
    return bin;
  }

  void Progress(const BisectStep& st) {
    if (!opt_.progress) return;
    std::string line = "dlbench-report: bisect: " + st.role + " " + Short(st.commit) + " " +
                       st.subject.substr(0, 60) + ": ";
    if (st.measured)
      line += Prose({Cell::Time(st.median_ns), " (", Cell::Signed(st.change), " vs good), "});
    line += CallName(st.call);
    if (!st.note.empty()) line += " (" + st.note + ")";
    std::fprintf(stderr, "%s\n", line.c_str());
  }

  const std::string& family() const { return family_; }

 private:
  const BisectOptions& opt_;
  Scratch& s_;
  std::string build_dir_, family_;
  int calls_ = 0, steps_ = 0;
};

// What `git bisect` said after a step: done (the first bad commit), stuck among skipped commits
// (the candidates), or go on (neither).
struct BisectState {
  std::string first_bad;
  std::vector<std::string> candidates;
};
BisectState ParseBisect(const std::string& text) {
  BisectState s;
  std::istringstream in(text);
  std::string line;
  bool listing = false;
  while (std::getline(in, line)) {
    line = Trim(line);
    const std::string marker = " is the first bad commit";
    if (line.size() > 40 && line.compare(40, marker.size(), marker) == 0 &&
        IsHash(line.substr(0, 40)))
      s.first_bad = line.substr(0, 40);
    if (line.find("could be any of") != std::string::npos)
      listing = true;
    else if (listing && IsHash(line))
      s.candidates.push_back(line);
  }
  return s;
}

}  // namespace

BisectResult Bisect(const BisectOptions& opt, std::string* message) {
  if (opt.case_name.empty() || opt.case_name.find_first_of(" \t\n'\"") != std::string::npos)
    throw InputError("bisect", "", "--case must be a benchmark name, e.g. gemm/cpu/onednn/...");
  if (CaseFamily(opt.case_name).empty())
    throw InputError("bisect", "", "--case '" + opt.case_name + "' names no family");
  if (opt.repeats < 2 || SmallestP(opt.repeats) >= opt.compare.alpha)
    throw InputError("bisect", "",
                     "--repeats " + std::to_string(opt.repeats) +
                         " is too few: the U test of that many repetitions a side cannot reach "
                         "alpha " +
                         Prose({Cell::Number(opt.compare.alpha, 3)}));
  SignalGuard signals;
  Scratch scratch;
  std::string tmpl = (fs::temp_directory_path() / "dlbench-bisect-XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    throw InputError(tmpl, "",
                     std::string("cannot create a temporary folder: ") + std::strerror(errno));
  scratch.tmp = tmpl;
  Driver drv(opt, &scratch);
  BisectResult r;
  r.case_name = CaseBaseName(opt.case_name);
  drv.Prepare(&r);

  auto measure_endpoint = [&](const std::string& commit, const char* role) {
    drv.GitOk({"-C", scratch.worktree, "checkout", "--detach", "-q", commit}, "/");
    BisectStep st;
    st.commit = commit;
    st.subject = drv.Subject(commit);
    st.role = role;
    std::optional<Bench> b = drv.Measure(commit, &st);
    if (!b)
      throw InputError("bisect", "",
                       std::string("the ") + role + " revision " + Short(commit) +
                           " cannot be measured: " + st.note +
                           (st.note.find("not in the run") != std::string::npos
                                ? " (is " + r.case_name + " a case of bench_" + drv.family() + "?)"
                                : ""));
    return std::make_pair(st, *b);
  };
  auto [good_step, good] = measure_endpoint(r.good, "good");
  good_step.call = StepCall::kGood;
  good_step.p = std::nan("");
  drv.Progress(good_step);
  auto [bad_step, bad] = measure_endpoint(r.bad, "bad");
  // The good endpoint once more, after the bad one: a machine whose load changed in between would
  // otherwise pass for a regression (or hide one). Both runs of it are the steps' reference.
  auto [again_step, again] = measure_endpoint(r.good, "good again");
  CompareRow steady = CompareOne(good, again, opt.compare);
  again_step.change = steady.delta;
  again_step.p = steady.p;
  again_step.call = StepCall::kGood;
  again_step.note =
      "the good endpoint re-run: compare says " + std::string(VerdictName(steady.verdict));
  drv.Progress(again_step);
  Bench reference = good;
  reference.real_ns.insert(reference.real_ns.end(), again.real_ns.begin(), again.real_ns.end());
  reference.cpu_ns.insert(reference.cpu_ns.end(), again.cpu_ns.begin(), again.cpu_ns.end());
  good = reference;
  CompareRow gb = CompareOne(good, bad, opt.compare);
  bad_step.change = gb.delta;
  bad_step.p = gb.p;
  bad_step.position = 1;
  bad_step.call = StepCall::kBad;
  auto position = [&](const BisectStep& st) {
    return std::log(st.median_ns / gb.base_ns) / std::log(gb.new_ns / gb.base_ns);
  };
  good_step.position = position(good_step);
  again_step.position = position(again_step);
  drv.Progress(bad_step);
  r.steps.push_back(good_step);
  r.steps.push_back(bad_step);
  r.steps.push_back(again_step);
  if (steady.verdict == Verdict::kSlower || steady.verdict == Verdict::kFaster) {
    *message = Prose({"the machine is not steady: the good endpoint ", Short(r.good), " read ",
                      Cell::Time(steady.base_ns), ", then ", Cell::Time(steady.new_ns), " (",
                      Cell::Signed(steady.delta), ", p ", Cell::P(steady.p),
                      ") after the bad one: other load came or went; bisect on a quiet machine"});
    r.exit_code = kBisectNotReproduced;
    return r;
  }
  if (gb.verdict != Verdict::kSlower) {
    *message = Prose({"the regression does not reproduce: good ", Short(r.good), " ",
                      Cell::Time(gb.base_ns), " (both runs), bad ", Short(r.bad), " ",
                      Cell::Time(gb.new_ns), " (", Cell::Signed(gb.delta), ", p ", Cell::P(gb.p),
                      "): compare says ", VerdictName(gb.verdict), " at threshold ",
                      Cell::Percent(opt.compare.threshold), ", alpha ",
                      Cell::Number(opt.compare.alpha, 3)});
    r.exit_code = kBisectNotReproduced;
    return r;
  }

  Driver::Out out = drv.Git({"-C", scratch.worktree, "bisect", "start", r.bad, r.good}, "/");
  for (int guard = 0; guard < 1000; ++guard) {
    BisectState state = ParseBisect(out.text);
    if (!state.first_bad.empty() || !state.candidates.empty()) {
      r.first_bad = state.first_bad;
      r.candidates = state.candidates;
      break;
    }
    if (out.rc != 0)
      throw InputError("bisect", "", "git bisect failed: " + Trim(out.text).substr(0, 200));
    std::string head = Trim(drv.GitOk({"-C", scratch.worktree, "rev-parse", "HEAD"}, "/").text);
    BisectStep st;
    st.commit = head;
    st.subject = drv.Subject(head);
    st.role = "step";
    std::optional<Bench> b = drv.Measure(head, &st);
    if (b) {
      Judgement j = JudgeStep(good, bad, *b, opt.compare);
      st.change = j.vs_good.delta;
      st.p = j.vs_good.p;
      st.position = j.position;
      st.call = j.call;
      st.note = j.why;
    }
    drv.Progress(st);
    r.steps.push_back(st);
    out = drv.Git({"-C", scratch.worktree, "bisect", CallName(st.call), head}, "/");
  }
  if (r.first_bad.empty() && r.candidates.empty())
    throw InputError("bisect", "", "git bisect did not end");

  if (!r.first_bad.empty()) {
    r.exit_code = kBisectFound;
    r.first_bad_subject = drv.Subject(r.first_bad);
    // The kernels of the first bad commit against its parent's (when measured good), else the
    // good endpoint's.
    Driver::Out parent = drv.Git({"-C", scratch.repo, "rev-parse", r.first_bad + "^"}, "/");
    std::string before = r.good;
    for (const auto& st : r.steps)
      if (st.commit == Trim(parent.text) && st.call == StepCall::kGood) before = st.commit;
    const BisectStep *bs = nullptr, *as = nullptr;
    for (const auto& st : r.steps) {
      if (st.commit == before && st.measured) bs = &st;
      if (st.commit == r.first_bad && st.measured) as = &st;
    }
    if (bs && as && bs->kernels && as->kernels) {
      r.kernels = DiffKernels(*bs->kernels, *as->kernels, bs->median_ns, as->median_ns);
      r.kernels_note = "Kernel tables of " + Short(before) + " (good) and " + Short(r.first_bad) +
                       " (first bad), per Run(): the kernels that appeared, vanished, grew or "
                       "shrank, and the part of the case's change each carries.";
    } else {
      r.kernels_note =
          "No kernel diff: the runs carry no kernel tables (record them with "
          "`-- --dlb_kernels=on`).";
    }
  } else {
    r.exit_code = kBisectUndecided;
  }
  return r;
}

}  // namespace dlb::report
