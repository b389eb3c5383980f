// Setups (analyses/setup.h): a case measured under two setups is two rows, never one figure;
// compare names the flags that differ; Problems words mistrusted cases as what they are and gives
// every value above 100% its reason (an engine, a multi-GPU aggregate, a clock) or says it has
// none; a multi-GPU aggregate is read per GPU.
#include <gtest/gtest.h>

#include <string>

#include "fixtures/schema/schema.h"
#include "tests/tools/report/report_cases.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/compare.h"
#include "tools/report/analyses/findings.h"
#include "tools/report/analyses/problems.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/setup.h"
#include "tools/report/analyses/transformer.h"
#include "tools/report/history/environment.h"

namespace dlb::report {
namespace {

using testing::Case;
using testing::CasesJson;

constexpr const char* kAttn = "attn/gpu/cudnn/qwen2_7b.attn/bs:4/dt:bf16/pass:bwd/seq:1024";

// The context of a bench_attn run on cuDNN `version`.
std::string CudnnContext(const std::string& version, const std::string& flag) {
  return R"("gpu_driver": "580.95.05", "cudnn_version": ")" + version +
         R"(", "libraries_loaded": "cublas 13.1.0 /usr/local/cuda/lib64/libcublas.so.13.1.0.3; )" +
         "cudnn " + version + " /opt/cudnn-" + version + "/libcudnn.so." + version +
         R"(", "dlbench_command": "/b/bench_attn --dlb_tier=full)" + flag + "\"";
}

MergedRuns TwoCudnnBuilds() {
  return Merge(
      {ParseBenchmarkJson(CasesJson({{kAttn, 1100}}, "NVIDIA H200", CudnnContext("9.14.0", "")),
                          "attn_914.json"),
       ParseBenchmarkJson(CasesJson({{kAttn, 1020}}, "NVIDIA H200",
                                    CudnnContext("9.19.0", " --dlb_cudnn=/opt/cudnn-9.19.0")),
                          "attn_919.json")});
}

TEST(SetupKey, FlagsOfASetupAreThoseThatChangeTheMeasurement) {
  const std::map<std::string, std::string> expected = {{"--dlb_gemm_fp8_accum", "fast"},
                                                       {"--dlb_threads", "8"}};
  EXPECT_EQ(SetupFlags("/b/bench_gemm --dlb_tier=full --dlb_gemm_fp8_accum=fast "
                       "'--benchmark_filter=gemm/.*' --dlb_threads=8 --dlb_seed=3 --dlb_budget=5"),
            expected);
}

// The history names a change of exactly the flags that make a report's setup: one list.
TEST(SetupKey, TheHistoryNamesTheFlagsThatMakeASetup) {
  const std::string command =
      "/b/bench_gemm --dlb_tier=full --dlb_gemm_fp8_accum=fast --dlb_kernels=on --dlb_seed=3 "
      "--dlb_monitor_trace=t.csv --dlb_peak_gpu_tflops=989";
  const std::map<std::string, std::string> expected = {
      {"--dlb_gemm_fp8_accum", "fast"}, {"--dlb_kernels", "on"}, {"--dlb_peak_gpu_tflops", "989"}};
  EXPECT_EQ(SetupFlags(command), expected);
  EXPECT_EQ(history::MeasuringFlags({{std::string(schema::kCtxCommand), command}}, "gemm"),
            expected);
}

TEST(SetupKey, DifferencesNameWhatDiffersNotWhatOneSideDoesNotKnow) {
  const report::Setup fast =
      SetupOf({{std::string(schema::kCtxCommand), "/b/bench_gemm --dlb_gemm_fp8_accum=fast"},
               {std::string(schema::kCtxHostName), "h1"}});
  const report::Setup full = SetupOf({{std::string(schema::kCtxCommand), "/b/bench_gemm"},
                                      {std::string(schema::kCtxHostName), "h1"},
                                      {std::string(schema::kCtxGpuDriver), "580.95.05"}});
  EXPECT_EQ(SetupDifferences(fast, full), std::vector<std::string>{"--dlb_gemm_fp8_accum"});
  EXPECT_EQ(SetupText(full, {"--dlb_gemm_fp8_accum"}), "--dlb_gemm_fp8_accum default");
  EXPECT_EQ(SetupText(fast, {"--dlb_gemm_fp8_accum", "host"}),
            "--dlb_gemm_fp8_accum=fast, host h1");
  // A file without a command line knows no flag: no difference to find in them.
  EXPECT_TRUE(SetupDifferences(fast, SetupOf({{std::string(schema::kCtxHostName), "h1"}})).empty());
}

TEST(SetupKey, AKeyValueIsShortTheTextWhole) {
  const report::Setup s =
      SetupOf({{std::string(schema::kCtxGitRevision), "9a671e4f75db-dirty"},
               {std::string(schema::kCtxCommLaunch), "mpi, 2 processes on 1 host"},
               {std::string(schema::kCtxCommand), "/b/bench_gemm --dlb_gemm_fp8_accum=fast"}});
  const std::vector<std::string> whats = {"revision", "launch", "--dlb_gemm_fp8_accum", "host"};
  EXPECT_EQ(SetupKeyValue(s, whats), "revision-9a671e4-mpi-2-processes-gemm_fp8_accum-fast");
  EXPECT_EQ(SetupText(s, {"launch"}), "launch mpi, 2 processes on 1 host");
}

TEST(SetupKey, NameWithSetupKeepsTheSchemeAndComesOffForARepro) {
  const std::string name = std::string(kAttn) + "/manual_time";
  const std::string split = NameWithSetup(name, "cudnn 9.14.0, --dlb_threads=8");
  EXPECT_EQ(split, std::string(kAttn) + "/setup:cudnn-9.14.0-threads-8/manual_time");
  ASSERT_TRUE(ParseName(split));
  EXPECT_EQ(ParseName(split)->Get(kSetupKey), "cudnn-9.14.0-threads-8");
  EXPECT_EQ(NameWithoutSetup(split), name);
  EXPECT_EQ(NameWithSetup("BM_memcpy/8", "host h1"), "BM_memcpy/8 [host h1]");
  EXPECT_EQ(NameWithoutSetup("BM_memcpy/8 [host h1]"), "BM_memcpy/8");
}

TEST(SetupKey, TwoCudnnBuildsOfACaseAreTwoRowsNamedByTheLibrary) {
  const MergedRuns runs = TwoCudnnBuilds();
  ASSERT_EQ(runs.benches.size(), 2u);
  // The folder flag differs too, but the version names the setup.
  EXPECT_EQ(runs.benches[0].setup, "cudnn 9.14.0");
  EXPECT_EQ(runs.benches[1].setup, "cudnn 9.19.0");
  EXPECT_EQ(runs.benches[0].name, std::string(kAttn) + "/setup:cudnn-9.14.0/manual_time");
  // Each build's own median, not the 1.06 ms of both pooled.
  EXPECT_NEAR(runs.benches[0].MedianNs(), 1100e3 * 1.001, 1);
  EXPECT_NEAR(runs.benches[1].MedianNs(), 1020e3 * 1.001, 1);
  EXPECT_EQ(runs.benches[0].files, std::vector<std::string>{"attn_914.json"});
  EXPECT_EQ(runs.setup_whats, (std::vector<std::string>{"cudnn", "--dlb_cudnn"}));
  std::vector<std::map<std::string, std::string>> contexts;
  for (const auto& [path, ctx] : runs.file_contexts) contexts.push_back(ctx);
  const std::string md =
      RenderMarkdown(FullReport(runs, {"attn_914.json", "attn_919.json"}, contexts));
  EXPECT_NE(md.find("**Setups**: 1 case(s) were measured under 2 setups, which differ in cudnn, "
                    "--dlb_cudnn"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("figures side by side may differ"), std::string::npos);
  // The key setup is a column of the attention table: both rows, each named.
  EXPECT_NE(md.find("cudnn-9.14.0"), std::string::npos);
  EXPECT_NE(md.find("cudnn-9.19.0"), std::string::npos);
}

TEST(SetupKey, FilesOfOneSetupStillPool) {
  const std::string ctx = CudnnContext("9.19.0", "");
  const MergedRuns runs =
      Merge({ParseBenchmarkJson(CasesJson({{kAttn, 1000}}, "NVIDIA H200", ctx), "r1.json"),
             ParseBenchmarkJson(CasesJson({{kAttn, 1010}}, "NVIDIA H200", ctx), "r2.json")});
  ASSERT_EQ(runs.benches.size(), 1u);
  EXPECT_EQ(runs.benches[0].Repetitions(), 6u);
  EXPECT_EQ(runs.benches[0].name, std::string(kAttn) + "/manual_time");
  EXPECT_TRUE(runs.split_setups.empty());
}

TEST(SetupKey, CompareNamesTheFp8AccumulationFlag) {
  const std::string gemm = "gemm/gpu/cublaslt/square.8192/dt:fp8";
  auto side = [&](const std::string& flag, double us, const std::string& file) {
    return Merge({ParseBenchmarkJson(
        CasesJson({{gemm, us}}, "NVIDIA H200",
                  R"("dlbench_command": "/b/bench_gemm --dlb_dtypes=fp8)" + flag + "\""),
        file)});
  };
  const CompareResult r = Compare(side(" --dlb_gemm_fp8_accum=full", 900, "full.json"),
                                  side(" --dlb_gemm_fp8_accum=fast", 800, "fast.json"), {});
  EXPECT_EQ(r.settings,
            "⚠ Measured with different settings: --dlb_gemm_fp8_accum=full (base) -> fast (new). "
            "A change may come from them rather than from the code.");
  const std::string md =
      RenderMarkdown(CompareDocument(r, {}, "full.json", "fast.json", nullptr, false));
  EXPECT_NE(md.find("--dlb_gemm_fp8_accum=full (base) -> fast (new)"), std::string::npos);
  // Same flags: nothing to say.
  EXPECT_EQ(Compare(side("", 900, "a.json"), side("", 900, "b.json"), {}).settings, "");
}

std::string ProblemsText(const MergedRuns& runs) {
  const std::optional<Section> s = ProblemsSection(FindProblems(runs, {}));
  std::string out;
  if (s)
    for (const std::string& n : s->notes) out += n + "\n";
  return out;
}

TEST(Problems, MistrustedIsAPassedCheckTimedAbovePeakNotAFailedOne) {
  const std::string gemm = "gemm/gpu/cublaslt/square.4096/dt:bf16";
  Case c{gemm, 100, {{std::string(schema::kPctPeak), 107}}};
  c.result_json =
      R"("verification": {"disposition": "mistrusted", "detail": "above 105% of peak"})";
  const std::string text = ProblemsText(testing::CasesRuns({c}, "NVIDIA H200"));
  EXPECT_NE(text.find("**Mistrusted**: 1 case(s) passed their check but were timed above 105% "
                      "of the peak"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("did not pass"), std::string::npos);
  EXPECT_EQ(text.find("**Not verified**"), std::string::npos);
}

TEST(Problems, AWinogradConvolutionAbove100IsExplainedByItsEngine) {
  Case wino{"conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:64/dt:f32/fmt:nchw/pass:fwd",
            100,
            {{std::string(schema::kPctPeak), 168}}};
  wino.label = "cudnn 9.14 backend engine 7 [winograd] from all_engines#7 | verified";
  const ProblemsFound p = FindProblems(testing::CasesRuns({wino}, "NVIDIA H100"), {});
  EXPECT_EQ(p.over_100, 1);
  EXPECT_EQ(p.over_100_engine, 1);
  EXPECT_EQ(p.over_100_unexplained, 0);
  EXPECT_EQ(p.over_100_engines, std::vector<std::string>{"Winograd"});
  const std::string text = ProblemsText(testing::CasesRuns({wino}, "NVIDIA H100"));
  EXPECT_NE(text.find("1 of them are convolutions on Winograd engines"), std::string::npos) << text;
  EXPECT_EQ(text.find("no reason found"), std::string::npos);
}

TEST(Problems, AClockCannotExplainMoreThanItsRatio) {
  // 168% of a roof whose peak was timed at 1755 MHz, the case at 1980 MHz: 113% at most is the
  // clock's, so no reason is found.
  Case c{
      "gemm/gpu/cublaslt/square.4096/dt:bf16",
      100,
      {{std::string(schema::kPctRoofline), 168}, {std::string(schema::kSmClockMedianMhz), 1980}}};
  const MergedRuns runs = Merge({ParseBenchmarkJson(
      CasesJson(
          {c}, "NVIDIA H200",
          R"x("gpu_peak_measured": "bf16: 702 TFLOP/s (cuBLASLt 8192^3; SM clock 1755 MHz (median while timed))")x"),
      "c.json")});
  const ProblemsFound p = FindProblems(runs, {});
  EXPECT_EQ(p.over_100, 1);
  EXPECT_EQ(p.over_100_clock, 0);
  EXPECT_EQ(p.over_100_unexplained, 1);
  EXPECT_NE(ProblemsText(runs).find("1 (all) have no reason found here"), std::string::npos)
      << ProblemsText(runs);
}

TEST(Peaks, AMultiGpuAggregateIsNotSetAgainstOneGpusPeak) {
  // A 4-GPU step's aggregate 1.105 PFLOP/s over one GPU's 1070.5 TFLOP/s: "103%" as written.
  Case c{"train/gpu/libtorch/gpt2s/bs:8/dt:amp_bf16/pass:train/graph:1/seq:1024/gpus:4",
         100000,
         {{std::string(schema::kFlopPerS), 1.105e15}, {std::string(schema::kPctPeak), 103.2}}};
  c.label = "update 2.23e-02 | peak 1070.5 TFLOP/s = 132 SMs x 1980 MHz x 4096 flop/clk/SM";
  const MergedRuns runs = testing::CasesRuns({c}, "NVIDIA H200");
  ASSERT_EQ(runs.benches.size(), 1u);
  EXPECT_EQ(AggregateOverOneGpu(runs.benches[0], schema::kPctPeak, runs.context), 4);
  const PeakShare share = PeakShareOf(runs.benches[0], 1.105e15, "FLOP/s", runs.context);
  EXPECT_NEAR(share.pct, 25.8, 0.01);
  EXPECT_NE(share.peak.find("per GPU, the rate is 4 GPUs' aggregate"), std::string::npos);
  const ProblemsFound p = FindProblems(runs, {});
  EXPECT_EQ(p.over_100_aggregate, 1);
  EXPECT_EQ(p.over_100_unexplained, 0);
  // Written per GPU (the denominator 4 GPUs' peaks): nothing to divide.
  Case per_gpu = c;
  per_gpu.counters = {{std::string(schema::kFlopPerS), 1.105e15},
                      {std::string(schema::kPctPeak), 25.8}};
  const MergedRuns ok = testing::CasesRuns({per_gpu}, "NVIDIA H200");
  EXPECT_EQ(AggregateOverOneGpu(ok.benches[0], schema::kPctPeak, ok.context), 1);
}

TEST(Peaks, AHeadlineRateComesFromTheMedianTime) {
  // Four repetitions of 60 images, 2.9 to 101 ms: the median of the rates (4.6k images/s) is no
  // figure of the median time (22 ms: 2.7k images/s).
  std::string body;
  for (double ms : {2.9, 8.0, 36.0, 101.0})
    body += std::string(body.empty() ? "" : ",") +
            R"({"name": "dataload/cpu/turbojpeg/imagenet.rrc224/bs:60/manual_time", )" +
            R"("run_type": "iteration", "time_unit": "ms", "real_time": )" + std::to_string(ms) +
            R"(, "items_per_s": )" + std::to_string(60 / (ms * 1e-3)) + "}";
  const MergedRuns runs =
      Merge({ParseBenchmarkJson(R"({"context": {}, "benchmarks": [)" + body + "]}", "d.json")});
  ASSERT_EQ(runs.benches.size(), 1u);
  EXPECT_NEAR(RateAtMedianTime(runs.benches[0], schema::kItemsPerS), 60 / 22e-3, 1);
  EXPECT_NEAR(runs.benches[0].Counter(schema::kItemsPerS), (60 / 8e-3 + 60 / 36e-3) / 2, 1);
}

TEST(Peaks, MfuNamesThePeakItWasComputedAgainst) {
  // The run's spec peak is 1070.5 TFLOP/s, but the step's MFU was computed against the 989 the
  // user gave (--dlb_peak_gpu_tflops): its row names 989.
  Case c{"train/gpu/libtorch/gpt2s/bs:8/dt:bf16/pass:train/graph:1/seq:1024",
         100000,
         {{std::string(schema::kTokensPerS), 3.5e5},
          {std::string(schema::kFlopPerS), 2.6e14},
          {std::string(schema::kPctPeak), 26.29},
          {std::string(schema::kMfu), 26.29}}};
  c.label = "loss ok | peak 989.0 TFLOP/s (--dlb_peak_gpu_tflops)";
  const MergedRuns runs = Merge({ParseBenchmarkJson(
      CasesJson(
          {c}, "NVIDIA H100",
          R"x("gpu_peak_spec": "bf16 peak 1070.5 TFLOP/s = 132 SMs x 1980 MHz x 4096 flop/clk/SM (sm_90 bf16)")x"),
      "t.json")});
  const std::vector<TokenStep> steps = TokenSteps(runs);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_NE(steps[0].mfu_peak.find("989"), std::string::npos) << steps[0].mfu_peak;
  EXPECT_EQ(steps[0].mfu_peak.find("1070"), std::string::npos) << steps[0].mfu_peak;
}

TEST(Peaks, ABestBatchSizeOnNoiseIsMarkedAndTheFastestBackendNamed) {
  const std::string conv = "conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:";
  Case steady{conv + "16/dt:bf16/fmt:nhwc/pass:fwd", 120};
  Case noisy{conv + "32/dt:bf16/fmt:nhwc/pass:fwd", 150};
  noisy.spread = 0.3;  // CV well above 10%
  Case slower{"conv/gpu/libtorch/resnet18.layer1.conv3x3/bs:32/dt:bf16/fmt:nhwc/pass:fwd", 400};
  const MergedRuns runs = testing::CasesRuns({steady, noisy, slower}, "NVIDIA H200");
  const Overview ov = ComputeOverview(runs);
  ASSERT_EQ(ov.rows.size(), 2u);
  EXPECT_TRUE(ov.rows[1].gpu_best);
  EXPECT_TRUE(ov.rows[1].gpu_noisy);
  EXPECT_FALSE(ov.rows[0].gpu_noisy);
  EXPECT_EQ(ov.rows[1].gpu_backend, "cudnn");
  const std::string md = RenderMarkdown(FullReport(runs, {"cases.json"}));
  EXPECT_NE(md.find("★ (noisy)"), std::string::npos) << md;
  EXPECT_NE(md.find("GPU backend"), std::string::npos) << md;
}

}  // namespace
}  // namespace dlb::report
