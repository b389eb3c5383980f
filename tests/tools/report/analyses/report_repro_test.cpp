// The command that re-runs one case (the repro of compare's and history check's flagged rows): the
// anchored filter, the kept flags, the shell quoting read back through a shell, and each case's own
// binary in a run merged from several binaries' files.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tools/report/analyses/repro.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report {
namespace {

TEST(Repro, TheFilterIsAnchoredAndEscapedAndMatchesOnlyThatCase) {
  const std::vector<std::string> names = {
      "gemm/cpu/onednn/square.1024/dt:f32/manual_time",
      "conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:32/dt:bf16/fmt:nhwc/manual_time",
      "BM_x/8/threads:2", "odd+name(1)[a]{2}*?^$|\\"};
  for (const std::string& n : names) {
    const std::string f = AnchoredFilter(n);
    EXPECT_EQ(f.front(), '^');
    EXPECT_EQ(f.back(), '$');
    std::regex re(f, std::regex::extended);
    EXPECT_TRUE(std::regex_search(n, re)) << f;
    // '.' is no wildcard and the anchors hold: near names do not match.
    std::string near = n;
    if (auto dot = near.find('.'); dot != std::string::npos) near[dot] = 'X';
    if (near != n) {
      EXPECT_FALSE(std::regex_search(near, re)) << f;
    }
    EXPECT_FALSE(std::regex_search(n + "/x", re)) << f;
    EXPECT_FALSE(std::regex_search("x" + n, re)) << f;
  }
  // An aggregate's suffix is not part of the case's name.
  EXPECT_EQ(AnchoredFilter("gemm/cpu/onednn/square.64/dt:f32/manual_time_median"),
            "^gemm/cpu/onednn/square\\.64/dt:f32/manual_time$");
}

TEST(Repro, TheCommandReadsBackThroughAShellAsTheWordsMeant) {
  std::map<std::string, std::string> ctx = {
      {"executable", "/opt/dl bench/bench_gemm"},
      {"dlbench_command",
       "'/opt/dl bench/bench_gemm' --dlb_tier=full --benchmark_out=o.json "
       "--benchmark_out_format=json --benchmark_filter=gemm --benchmark_format=console "
       "\"--dlb_threads=4\" --benchmark_min_time=0.5s --benchmark_repetitionsX=3"}};
  const std::string name = "gemm/cpu/onednn/square.1024/dt:f32/manual_time";
  const std::string cmd = ReproCommand(ctx, name);
  EXPECT_EQ(ShellSplit(cmd),
            (std::vector<std::string>{
                "/opt/dl bench/bench_gemm", "--benchmark_filter=" + AnchoredFilter(name),
                "--dlb_tier=full", "--dlb_threads=4", "--benchmark_min_time=0.5s"}));
  const std::string binary = ShellQuote("/opt/dl bench/bench_gemm");
  ASSERT_EQ(cmd.rfind(binary + " ", 0), 0u) << cmd;
  std::FILE* p = ::popen(("printf '%s\\n' " + cmd.substr(binary.size() + 1)).c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ASSERT_EQ(::pclose(p), 0);
  EXPECT_EQ(out, "--benchmark_filter=" + AnchoredFilter(name) +
                     "\n--dlb_tier=full\n--dlb_threads=4\n--benchmark_min_time=0.5s\n");
  // No binary known: no command.
  EXPECT_EQ(ReproCommand({}, name), "");
  // Only the recorded command: its first word is the binary.
  EXPECT_EQ(ReproCommand({{"dlbench_command", "./b --dlb_seed=2"}}, "a.b"),
            "./b '--benchmark_filter=^a\\.b$' --dlb_seed=2");
  // The harness records its binary by the absolute path: that one, not argv[0] as typed, so that
  // the command runs pasted into any folder.
  EXPECT_EQ(ReproCommand({{"executable", "./bench_gemm"},
                          {"dlbench_command", "/opt/dlbench/build/bench_gemm --dlb_seed=2"}},
                         "a.b"),
            "/opt/dlbench/build/bench_gemm '--benchmark_filter=^a\\.b$' --dlb_seed=2");
}

// A run merged from several binaries' files: each case's repro runs its own family's binary with
// that binary's recorded flags, not the first file's.
TEST(Repro, AMergedRunGivesEachCaseItsOwnBinaryAndFlags) {
  auto file = [](const std::string& binary, const std::string& flags, const std::string& name,
                 const std::string& path) {
    const std::string json =
        R"({"context": {"executable": ")" + binary + R"(", "dlbench_command": ")" + binary + " " +
        flags + R"("}, "benchmarks": [{"name": ")" + name + R"(", "run_name": ")" + name +
        R"(", "run_type": "iteration", "iterations": 1, "real_time": 5,)"
        R"( "cpu_time": 5, "time_unit": "us"}]})";
    return ParseBenchmarkJson(json, path);
  };
  const std::string gemm = "gemm/gpu/cublaslt/square.64/dt:bf16/manual_time";
  const std::string comm = "comm/gpu/nccl/all_reduce.8/dt:bf16/gpus:2/manual_time";
  const MergedRuns runs = Merge({file("/b/bench_gemm", "--dlb_dtypes=bf16", gemm, "g.json"),
                                 file("/b/bench_comm", "--dlb_comm_gpus=2", comm, "c.json")});
  EXPECT_EQ(ReproCommand(runs.context, gemm),
            "/b/bench_gemm " + ShellQuote("--benchmark_filter=" + AnchoredFilter(gemm)) +
                " --dlb_dtypes=bf16");
  EXPECT_EQ(ReproCommand(runs.context, comm),
            "/b/bench_comm " + ShellQuote("--benchmark_filter=" + AnchoredFilter(comm)) +
                " --dlb_comm_gpus=2");
  // A context stored before Merge kept each family's command (one binary's only): the case's own
  // binary beside it, with the flags that context has.
  const std::map<std::string, std::string> old = {
      {"executable", "/b/bench_gemm"}, {"dlbench_command", "/b/bench_gemm --dlb_seed=3"}};
  EXPECT_EQ(ShellSplit(ReproCommand(old, comm)).front(), "/b/bench_comm");
  EXPECT_EQ(ShellSplit(ReproCommand(old, gemm)).front(), "/b/bench_gemm");
  // A name outside dlbench's scheme keeps the recorded binary.
  EXPECT_EQ(ShellSplit(ReproCommand(old, "BM_Copy/64")).front(), "/b/bench_gemm");
  // A file's own binary is kept whatever its name: one binary may hold every family.
  const MergedRuns all = Merge({file("/b/bench_all", "--dlb_seed=1", comm, "a.json")});
  EXPECT_EQ(ShellSplit(ReproCommand(all.context, comm)).front(), "/b/bench_all");
}

}  // namespace
}  // namespace dlb::report
