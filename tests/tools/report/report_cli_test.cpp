// The dlbench-report binary end to end: exit codes, the one-line errors, atomic output files.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fixtures/schema/families.h"
#include "tests/support/temp_dir.h"
#include "tests/tools/report/report_cases.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int rc;
  std::string out, err;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Cli : public dlb::testing::TempDirTest {
 protected:
  Result Run(const std::string& args) {
    std::string cmd = std::string(DLB_REPORT_EXE) + " " + args + " >" + (dir_ / "out").string() +
                      " 2>" + (dir_ / "err").string();
    int status = std::system(cmd.c_str());
    Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(dir_ / "out"),
             Slurp(dir_ / "err")};
    fs::remove(dir_ / "out");
    fs::remove(dir_ / "err");
    return r;
  }
  std::string Data(const std::string& n) { return std::string(DLB_REPORT_TEST_DATA) + "/" + n; }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  size_t Files() {
    return static_cast<size_t>(
        std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }
  const fs::path dir_ = dir().path();
};

// The families table for scripts (tools/dlbench-run.sh, the CI workflow): a line per binary in the
// table's order, "bench_<name>\t<family>\t<budget weight>", and nothing on stderr.
TEST_F(Cli, FamiliesPrintsEveryBinaryOfTheTableInOrder) {
  std::string expected;
  for (const dlb::families::Facts& f : dlb::families::kFamilies)
    for (const dlb::families::Binary& b : f.binaries)
      if (!b.name.empty())
        expected += "bench_" + std::string(b.name) + "\t" + std::string(f.name) + "\t" +
                    std::to_string(b.budget_weight) + "\n";
  Result r = Run("families");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(Run("families extra").rc, 1);
}

// A folder of one attention case on two cuDNN builds is two rows, each build's own figure, and
// Problems counts the setups; compare of fp8 runs with full and fast accumulation names the flag.
TEST_F(Cli, TwoBuildsOfACaseAreTwoRowsAndCompareNamesTheFlagThatDiffers) {
  using dlb::report::testing::CasesJson;
  const std::string attn = "attn/gpu/cudnn/qwen2_7b.attn/bs:4/dt:bf16/pass:bwd/seq:1024";
  auto cudnn = [](const std::string& v) {
    return R"("libraries_loaded": "cudnn )" + v + " /opt/cudnn-" + v + "/libcudnn.so." + v + "\"";
  };
  fs::create_directory(dir_ / "runs");
  Write("runs/attn_914.json", CasesJson({{attn, 1100}}, "NVIDIA H200", cudnn("9.14.0")));
  Write("runs/attn_919.json", CasesJson({{attn, 1020}}, "NVIDIA H200", cudnn("9.19.0")));
  Result r = Run("summary " + (dir_ / "runs").string());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("| cudnn-9.14.0 | 1.10 ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| cudnn-9.19.0 | 1.02 ms"), std::string::npos) << r.out;
  Result report = Run("report " + (dir_ / "runs").string());
  ASSERT_EQ(report.rc, 0) << report.err;
  EXPECT_NE(report.out.find("**Setups**: 1 case(s) were measured under 2 setups"),
            std::string::npos)
      << report.out;

  const std::string gemm = "gemm/gpu/cublaslt/square.8192/dt:fp8";
  auto accum = [](const std::string& how) {
    return R"("dlbench_command": "/b/bench_gemm --dlb_gemm_fp8_accum=)" + how + "\"";
  };
  Write("full.json", CasesJson({{gemm, 900}}, "NVIDIA H200", accum("full")));
  Write("fast.json", CasesJson({{gemm, 800}}, "NVIDIA H200", accum("fast")));
  Result c = Run("compare " + (dir_ / "full.json").string() + " " + (dir_ / "fast.json").string());
  EXPECT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.out.find("⚠ Measured with different settings: --dlb_gemm_fp8_accum=full (base) -> "
                       "fast (new)"),
            std::string::npos)
      << c.out;
}

TEST_F(Cli, CompareExitsThreeOnARegression) {
  Result r = Run("compare " + Data("compare_base.json") + " " + Data("compare_new.json"));
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_NE(r.out.find("**REGRESSION**"), std::string::npos);
  Result same = Run("compare " + Data("compare_base.json") + " " + Data("compare_base.json"));
  EXPECT_EQ(same.rc, 0) << same.err;
  Result loose =
      Run("compare --threshold 200% " + Data("compare_base.json") + " " + Data("compare_new.json"));
  EXPECT_EQ(loose.rc, 0) << loose.err;
}

// compare.py's own inputs, and its table next to ours.
TEST_F(Cli, CompareReadsComparePyInputsAndPrintsItsTable) {
  Result r = Run("compare " + Data("gbench/test3_run0.json") + " " +
                 Data("gbench/test3_run1.json") + " --as-compare-py");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("| BM_Two_pvalue | 1.0000 | 0.6667 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| OVERALL_GEOMEAN | +1.6405 | -0.6985 |"), std::string::npos) << r.out;
  Result bad =
      Run("compare " + Data("gbench/test4_run.json") + " " + Data("gbench/test4_run.json"));
  EXPECT_EQ(bad.rc, 1);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  // A row where a side was not verified or was mistrusted is marked, and the notes say so.
  Result v = Run("compare " + Data("dlbench_v2_base.json") + " " + Data("dlbench_v2_new.json"));
  EXPECT_EQ(v.rc, 3) << v.err;
  EXPECT_NE(v.out.find("⚠ 4 row(s) where either side was not verified or was mistrusted"),
            std::string::npos);
  EXPECT_NE(v.out.find("⚠ base verified, new mistrusted"), std::string::npos);
}

TEST_F(Cli, EveryFormat) {
  std::string in = Data("compare_base.json") + " " + Data("compare_new.json");
  for (const char* sub : {"summary", "speedup", "sweep", "train", "report"}) {
    for (const char* fmt : {"md", "html", "csv", "json"}) {
      fs::path out = dir_ / (std::string(sub) + "." + fmt);
      Result r = Run(std::string(sub) + " " + in + " -o " + out.string());
      ASSERT_EQ(r.rc, 0) << sub << " " << fmt << ": " << r.err;
      std::string text = Slurp(out);
      ASSERT_FALSE(text.empty());
      if (std::string(fmt) == "json") {
        EXPECT_FALSE(nlohmann::json::parse(text, nullptr, false).is_discarded()) << sub;
      } else if (std::string(fmt) == "html") {
        EXPECT_EQ(text.rfind("<!DOCTYPE html>", 0), 0u);
        EXPECT_EQ(text.find("http://") == std::string::npos ||
                      text.find("src=\"http") == std::string::npos,
                  true);  // nothing loaded from the network
      } else if (std::string(fmt) == "csv") {
        EXPECT_TRUE(text.rfind("section,table,", 0) == 0 || text.rfind("section,note\n", 0) == 0)
            << sub;
      } else {
        EXPECT_EQ(text.rfind("# dlbench", 0), 0u) << sub;
      }
    }
  }
  Result r = Run("summary " + Data("compare_base.json") + " --format json");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["title"], "dlbench summary");
  // The skipped and failed cases with their reasons.
  EXPECT_NE(r.out.find("unsupported: f16 needs avx512_fp16"), std::string::npos);
  EXPECT_NE(r.out.find("out of memory: needed 90 GiB"), std::string::npos);
}

TEST_F(Cli, BadInputIsOneLineExitOneAndNoPartialFile) {
  Write("trunc.json", "{\"benchmarks\": [{\"name\": \"a\", \"real_ti");
  Write("report.md", "previous report\n");
  size_t before = Files();
  Result r =
      Run("summary " + (dir_ / "trunc.json").string() + " -o " + (dir_ / "report.md").string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err.rfind("dlbench-report: " + (dir_ / "trunc.json").string() + ":1:", 0), 0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(Slurp(dir_ / "report.md"), "previous report\n");
  EXPECT_EQ(Files(), before);  // no temporary file left behind

  Result missing = Run("summary /nonexistent/x.json");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_EQ(missing.err,
            "dlbench-report: /nonexistent/x.json: cannot open: No such file or directory\n");

  Result usage = Run("compare only_one.json");
  EXPECT_EQ(usage.rc, 1);
  EXPECT_EQ(usage.err.rfind("dlbench-report: usage:", 0), 0u) << usage.err;
  EXPECT_EQ(Run("frobnicate").rc, 1);
  EXPECT_EQ(Run("summary x.json --format pdf").rc, 1);
  EXPECT_EQ(Run("--help").rc, 0);

  Result unwritable = Run("summary " + Data("compare_base.json") + " -o /nonexistent/dir/r.md");
  EXPECT_EQ(unwritable.rc, 1);
  EXPECT_NE(unwritable.err.find("/nonexistent/dir/r.md"), std::string::npos);
}

// Two runs with no case in common compared nothing: bad input, one line, exit 1 (not "OK").
TEST_F(Cli, CompareOfRunsWithNoCaseInCommonIsBadInput) {
  Write("other.json",
        R"({"context": {}, "benchmarks": [{"name": "BM_Other", "run_name": "BM_Other",
            "run_type": "iteration", "iterations": 1, "real_time": 5, "cpu_time": 5,
            "time_unit": "ns"}]})");
  Result r = Run("compare " + Data("compare_base.json") + " " + (dir_ / "other.json").string());
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_EQ(r.err.rfind("dlbench-report: compare: no case measured in both ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// A malformed number is one line that names its flag (not "stod").
TEST_F(Cli, AMalformedThresholdNamesItsFlag) {
  for (const std::string sub :
       {"compare " + Data("compare_base.json") + " " + Data("compare_new.json"),
        std::string("history check --db x.sqlite")}) {
    Result r = Run(sub + " --threshold abc");
    EXPECT_EQ(r.rc, 1) << sub;
    EXPECT_EQ(r.err,
              "dlbench-report: usage: --threshold abc: expects a percentage such as 5% or 0.5\n")
        << sub;
  }
  EXPECT_NE(Run("compare a.json b.json --threshold 5x").err.find("--threshold 5x"),
            std::string::npos);
  EXPECT_NE(Run("compare a.json b.json --threshold -3").err.find("must not be negative"),
            std::string::npos);
}

// history check's counts of runs out of range (--window 0 would judge nothing and call every case
// new): one short line naming the flag, exit 1, no database touched.
TEST_F(Cli, HistoryCheckRunCountsOutOfRangeAreOneShortLine) {
  const std::string db = (dir_ / "none.sqlite").string();
  for (const std::string flag :
       {"--window 0", "--window 20000", "--hold 0", "--confirm-repetitions 2"}) {
    Result r = Run("history check --db " + db + " " + flag);
    EXPECT_EQ(r.rc, 1) << flag;
    EXPECT_EQ(r.err.rfind("dlbench-report: usage: " + flag + ": expects ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_LT(r.err.size(), 80u) << r.err;
  }
  Result both = Run("history check --db " + db + " --confirm --hold 3");
  EXPECT_EQ(both.rc, 1);
  EXPECT_NE(both.err.find("--confirm"), std::string::npos) << both.err;
  EXPECT_FALSE(fs::exists(db));
}

// history check --confirm runs the flagged case's repro command (here a stand-in bench_gemm that
// writes as many 130 us repetitions as asked) and fails on the slowdown the re-run reproduces;
// without it, the one slow run is unconfirmed.
TEST_F(Cli, HistoryCheckConfirmReRunsTheFlaggedCase) {
  const std::string bench = (dir_ / "bench_gemm").string();
  const std::string name = "gemm/cpu/onednn/square.64/dt:f32/manual_time";
  auto entry = [&](double us, int rep) {
    return R"({"name": ")" + name + R"(", "run_name": ")" + name +
           R"(", "run_type": "iteration", "repetition_index": )" + std::to_string(rep) +
           R"(, "real_time": )" + std::to_string(us) + R"(, "time_unit": "us"})";
  };
  Write("bench_gemm",
        "#!/bin/sh\nreps=1; out=\nfor a in \"$@\"; do case \"$a\" in\n"
        "  --benchmark_repetitions=*) reps=${a#*=} ;;\n"
        "  --benchmark_out=*) out=${a#*=} ;;\nesac; done\n"
        "{ echo '{\"context\": {}, \"benchmarks\": ['; i=0\n"
        "while [ $i -lt $reps ]; do [ $i -gt 0 ] && echo ,; echo '" +
            entry(130, 0) + "'; i=$((i + 1)); done; echo ']}'; } > \"$out\"\n");
  fs::permissions(bench, fs::perms::owner_all);
  const std::string db = (dir_ / "h.sqlite").string();
  for (int i = 0; i < 9; ++i) {
    Write("run.json", R"({"context": {"date": "2026-01-0)" + std::to_string(i + 1) +
                          R"(T00:00:00Z", "host_name": "box", "executable": ")" + bench +
                          R"("}, "benchmarks": [)" + entry(i == 8 ? 130 : 100 + i % 2, 0) + "]}");
    ASSERT_EQ(Run("history add --db " + db + " " + (dir_ / "run.json").string()).rc, 0);
  }
  EXPECT_EQ(Run("history check --db " + db).rc, 0);
  Result r = Run("history check --db " + db + " --confirm --confirm-repetitions 5");
  EXPECT_EQ(r.rc, 3) << r.err << r.out;
  EXPECT_NE(r.out.find("re-run (5 repetitions): +29."), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("re-running " + name), std::string::npos) << r.err;
}

// A bare threshold is a percentage, as one with its %: 0.5 and 0.5% agree, 1 and 1% too.
TEST_F(Cli, ABareThresholdIsAPercentage) {
  const std::string files = Data("compare_base.json") + " " + Data("compare_new.json");
  auto out = [&](const std::string& t) { return Run("compare " + files + " -t " + t).out; };
  EXPECT_EQ(out("0.5"), out("0.5%"));
  EXPECT_EQ(out("1"), out("1%"));
  EXPECT_EQ(out("5"), out("5%"));
  EXPECT_NE(out("0.5"), out("50%"));  // not 50%, as a bare fraction read before
  EXPECT_EQ(Run("compare " + files + " -t 200").rc, 0);
}

// A number out of its range is one short line naming its flag, and exit 1: nothing runs.
TEST_F(Cli, OutOfRangeNumbersAreOneShortLine) {
  const std::string files = Data("compare_base.json") + " " + Data("compare_new.json");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"compare " + files + " --alpha 5", "--alpha: must be in (0, 1), got 5"},
      {"compare " + files + " --alpha 0", "--alpha: must be in (0, 1), got 0"},
      {"compare " + files + " --min-repetitions 0", "--min-repetitions: must be in [1, inf)"},
      {"compare " + files + " --threshold -1%", "--threshold -1%: must not be negative"},
      {"bisect --good a --bad b --case gemm/cpu/onednn/x --alpha 1", "--alpha: must be in (0, 1)"},
      {"history check --db x.sqlite --penalty 0", "--penalty: must be in (0, inf), got 0"},
      {"history check --db x.sqlite --alpha 1.5", "--alpha: must be in (0, 1), got 1.5"},
      {"history check --db x.sqlite --min-segment 0", "--min-segment: must be in [1, inf)"},
      {"site --db x.sqlite -o s --last -1", "--last: must be in [0, inf), got -1"},
  };
  for (const auto& [args, want] : cases) {
    Result r = Run(args);
    EXPECT_EQ(r.rc, 1) << args;
    EXPECT_NE(r.err.find(want), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_LT(r.err.size(), 120u) << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}

// Google Benchmark's test4 pair holds one custom percentage aggregate and no time: compare.py
// compares it, and so does compare (its table, no verdict).
TEST_F(Cli, CompareOfAggregatesOnlyShowsComparePysTable) {
  Result r =
      Run("compare " + Data("gbench/test4_run0.json") + " " + Data("gbench/test4_run1.json"));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("No case has a time in both files"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| whocares | -0.5000 | +0.5000 |"), std::string::npos) << r.out;
}

// NaN, -NaN, Infinity and -Infinity as Google Benchmark writes them: read, as compare.py reads
// them; a run without a finite time is a failure, an aggregate keeps its value.
TEST_F(Cli, NonFiniteValuesAsGoogleBenchmarkWritesThemAreRead) {
  auto file = [&](const std::string& name, const std::string& cv, const std::string& rate) {
    Write(name, R"({"context": {"cpu_scaling_enabled": true}, "benchmarks": [
      {"name": "BM_A", "run_name": "BM_A", "run_type": "iteration", "iterations": 1,
       "real_time": 10, "cpu_time": 10, "time_unit": "ns", "items_per_second": )" +
                    rate + R"(},
      {"name": "BM_A", "run_name": "BM_A", "run_type": "iteration", "iterations": 1,
       "real_time": 11, "cpu_time": 11, "time_unit": "ns", "items_per_second": 1},
      {"name": "BM_A_cv", "run_name": "BM_A", "run_type": "aggregate", "aggregate_name": "cv",
       "aggregate_unit": "percentage", "iterations": 2, "real_time": )" +
                    cv +
                    R"(, "cpu_time": -NaN, "time_unit": "ns"},
      {"name": "BM_B", "run_name": "BM_B", "run_type": "iteration", "iterations": 1,
       "real_time": NaN, "cpu_time": Infinity, "time_unit": "ns"}]})");
    return (dir_ / name).string();
  };
  const std::string base = file("base.json", "NaN", "Infinity");
  const std::string now = file("new.json", "-Infinity", "-Infinity");
  Result r = Run("compare " + base + " " + now + " --as-compare-py --min-repetitions 1");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("BM_A"), std::string::npos) << r.out;
  Result s = Run("summary " + base);
  EXPECT_EQ(s.rc, 0) << s.err;
  EXPECT_NE(s.out.find("real_time NaN in the file: no time"), std::string::npos) << s.out;
  // Where Google Benchmark writes no such value (the iterations) it stays bad input.
  Write("bad.json", R"({"benchmarks": [{"name": "a", "iterations": NaN, "real_time": 1,
                        "time_unit": "ns"}]})");
  Result bad = Run("summary " + (dir_ / "bad.json").string());
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("NaN or Infinity"), std::string::npos) << bad.err;
}

// Markdown escapes <, > and & in every cell: a name or label reaches no viewer as HTML.
TEST_F(Cli, MarkdownCellsEscapeHtml) {
  Write("x.json", R"({"context": {}, "benchmarks": [{"name": "BM_<script>alert(1)</script>",
      "run_type": "iteration", "iterations": 1, "real_time": 5, "cpu_time": 5, "time_unit": "ns",
      "label": "<iframe src=x> & more"}]})");
  Result r = Run("summary " + (dir_ / "x.json").string() + " -f md");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find("<script"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("<iframe"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BM_&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("&lt;iframe src=x&gt; &amp; more"), std::string::npos) << r.out;
}

// A folder's files that hold no case (a peaks file, another tool's JSON) are skipped and named;
// the report of the rest is written. A file named on its own still fails.
TEST_F(Cli, ReportOfAFolderSkipsItsFilesWithoutCasesAndNamesThem) {
  const fs::path folder = dir_ / "runs";
  fs::create_directories(folder);
  fs::copy_file(Data("compare_base.json"), folder / "gemm.json");
  std::ofstream(folder / "peaks.json") << R"({"context": {}, "benchmarks": []})";
  std::ofstream(folder / "notes.json") << R"({"what": "not a run"})";
  Result r = Run("report " + folder.string() + " --format md");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("skipped " + (folder / "peaks.json").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("skipped " + (folder / "notes.json").string()), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("2 file(s) of the folder skipped"), std::string::npos);
  EXPECT_NE(r.out.find("gemm"), std::string::npos);
  EXPECT_EQ(Run("report " + (folder / "peaks.json").string()).rc, 1);
  fs::remove(folder / "gemm.json");
  Result none = Run("report " + folder.string());
  EXPECT_EQ(none.rc, 1);
  EXPECT_NE(none.err.find("no *.json or *.json.gz file of the folder holds a case"),
            std::string::npos)
      << none.err;
}

// No Markdown syntax in an HTML report: the verdict's emphasis is an element.
TEST_F(Cli, HtmlShowsNoMarkdown) {
  Result r = Run("compare " + Data("compare_base.json") + " " + Data("compare_new.json") +
                 " --format html");
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_NE(r.out.find("<strong>REGRESSION</strong>"), std::string::npos);
  EXPECT_EQ(r.out.find("**"), std::string::npos);
}

// The inference family's cases are models, their rate tokens per second, one table of every case.
TEST_F(Cli, InferenceCasesReadAsModelsInTokensPerSecond) {
  Result r =
      Run("report " + Data("infer_default.json") + " --out-dir " + (dir_ / "infer").string());
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string md = Slurp(dir_ / "infer" / "report.md");
  EXPECT_NE(md.find("Models: prefill and decode steps"), std::string::npos) << md;
  EXPECT_NE(md.find("tokens/s"), std::string::npos) << md;
  EXPECT_NE(md.find("phase:decode"), std::string::npos) << md;
}

TEST_F(Cli, ReportWritesMarkdownAndHtmlAndPrintsThePaths) {
  fs::path out = dir_ / "latest";  // created when missing
  Result r = Run("report " + Data("compare_base.json") + " --out-dir " + out.string());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, (out / "report.md").string() + "\n" + (out / "report.html").string() + "\n");
  // The answers first, the per-benchmark tables after them.
  std::string md = Slurp(out / "report.md");
  EXPECT_LT(md.find("## gemm"), md.find("## Details"));
  EXPECT_LT(md.find("## Details"), md.find("### Summary: gemm"));
  EXPECT_NE(Slurp(out / "report.html").find("<svg"), std::string::npos);
}

TEST_F(Cli, HistoryCommands) {
  std::string db = (dir_ / "h.sqlite").string();
  EXPECT_EQ(Run("history add --db " + db + " " + Data("compare_base.json")).rc, 0);
  Result again = Run("history add --db " + db + " " + Data("compare_base.json"));
  EXPECT_EQ(again.rc, 0);
  EXPECT_NE(again.err.find("already"), std::string::npos);
  EXPECT_EQ(Run("history add --db " + db + " " + Data("compare_new.json")).rc, 0);
  Result show = Run("history show --db " + db + " --format html");
  EXPECT_EQ(show.rc, 0) << show.err;
  EXPECT_NE(show.out.find("<svg"), std::string::npos);
  EXPECT_EQ(Run("history check --db " + db).rc, 0);  // two runs: too short a history to judge
  Write("corrupt.sqlite", std::string(4096, 'z'));
  Result bad = Run("history check --db " + (dir_ / "corrupt.sqlite").string());
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("corrupt.sqlite"), std::string::npos) << bad.err;

  // site: the pages, and a bad store, folder or option in one line each, with nothing written.
  const std::string site = (dir_ / "site").string();
  Result ok = Run("site --db " + db + " -o " + site);
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(ok.err.find("1 machines, "), std::string::npos) << ok.err;
  EXPECT_NE(Slurp(dir_ / "site" / "index.html").find("<table>"), std::string::npos);
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"site --db " + (dir_ / "corrupt.sqlite").string() + " -o " + site + "2",
            "corrupt.sqlite"},
           {"site --db " + (dir_ / "none.sqlite").string() + " -o " + site + "2",
            "none.sqlite:open: no such database"},
           {"site --db " + db + " -o " + (dir_ / "corrupt.sqlite" / "x").string(),
            "cannot create the folder"},
           {"site --db " + db + " -o " + site + "2 --change-threshold 2x", "--change-threshold 2x"},
           {"site --db " + db + " -o " + site + "2 --detector cusum", "--detector"},
           {"site --db " + db, "--out-dir is required"}}) {
    Result r = Run(args);
    EXPECT_EQ(r.rc, 1) << args;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(site + "2"));
}

}  // namespace
