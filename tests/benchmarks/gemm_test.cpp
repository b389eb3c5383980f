#include "tests/benchmarks/smoke.h"
#include "tests/support/temp_dir.h"

namespace dlb::testing {
namespace {

TEST(BenchGemm, SmokeTierWritesValidJson) {
  Result r = RunBinary(DLB_BENCH_GEMM, "--dlb_tier=smoke --benchmark_min_time=0.02");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int measured = CheckSmokeJson(r.json, "gemm");
#ifdef DLBENCH_HAVE_ONEDNN
  EXPECT_GT(measured, 0) << "no CPU case was measured";
#endif
  // The smoke tier holds at least one square and one fully connected (batch-as-M) case per device.
  bool fc = false;
  for (const auto& b : r.json["benchmarks"])
    fc |= b["name"].get<std::string>().find("/bs:") != std::string::npos;
  EXPECT_TRUE(fc);
}

// The smoke tier's CPU GEMMs against the peak the binary measured for itself. A GEMM's counted
// FLOP (2 m n k) are all real work.
TEST(BenchGemm, SmokeCpuCasesStayWithinTheMeasuredPeak) {
#ifndef DLBENCH_HAVE_ONEDNN
  GTEST_SKIP() << "no CPU backend built";
#endif
  bool cached = false;
  Result r = RunWithFreshPeakCache(DLB_BENCH_GEMM, "--dlb_tier=smoke --dlb_device=cpu", &cached);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  const std::string measured =
      r.json["context"].value(std::string(schema::kCtxCpuPeakMeasured), "");
  EXPECT_NE(measured.find("f32 "), std::string::npos) << measured;
  EXPECT_TRUE(r.json["context"].contains(std::string(schema::kCtxCpuPeakNominal)));
  EXPECT_TRUE(cached) << "the measured peak was not cached";
  const auto [highest, checked] = CheckCpuPctPeak(r.json);
  EXPECT_GT(checked, 0);
  std::printf("highest CPU pct_peak: %.1f%% (%d cases); %s\n", highest, checked, measured.c_str());
}

TEST(BenchGemm, FiltersSelectCases) {
  Result r = RunBinary(DLB_BENCH_GEMM,
                       "--dlb_tier=smoke --benchmark_min_time=0.01 "
                       "--benchmark_filter='gemm/cpu/.*/dt:f32'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  ASSERT_FALSE(r.json["benchmarks"].empty());
  for (const auto& b : r.json["benchmarks"]) {
    std::string name = b["name"];
    EXPECT_EQ(name.rfind("gemm/cpu/", 0), 0u) << name;
    EXPECT_NE(name.find("/dt:f32"), std::string::npos) << name;
  }
}

TEST(BenchGemm, BadFlagsExitTwoWithOneLine) {
  Result r = RunBinary(DLB_BENCH_GEMM, "--dlb_tier=galactic");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--dlb_tier=galactic"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  Result u = RunBinary(DLB_BENCH_GEMM, "--dlb_frobnicate=1");
  EXPECT_EQ(u.exit_code, 2);
  EXPECT_NE(u.output.find("unknown flag --dlb_frobnicate"), std::string::npos) << u.output;
}

TEST(BenchGemm, AnOutputFileThatCannotBeWrittenStopsTheRunBeforeItStarts) {
  Result r = RunBinary(DLB_BENCH_GEMM,
                       "--dlb_tier=smoke --benchmark_out=/nonexistent_dlb_dir/gemm.json", true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("/nonexistent_dlb_dir/gemm.json"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("gemm/"), std::string::npos) << "no case ran: " << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(BenchGemm, MalformedWorkloadFileExitsOneNamingFileAndLine) {
  const TempDir tmp("bad_workloads");
  const std::filesystem::path& dir = tmp.path();
  std::ofstream(dir / "gemm_bad.csv")
      << "name,m,n,k,ta,tb,count,tier\nsquare.1,1,1,one,0,0,1,smoke\n";
  Result r = RunBinary(DLB_BENCH_GEMM, "--dlb_workloads=" + dir.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("gemm_bad.csv:2: column 'k'"), std::string::npos) << r.output;
}

TEST(BenchGemm, VerifyOffIsSaidInTheLabel) {
  Result r = RunBinary(DLB_BENCH_GEMM,
                       "--dlb_tier=smoke --dlb_verify=off --dlb_device=cpu "
                       "--benchmark_min_time=0.01 --benchmark_filter=/dt:f32");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& b : r.json["benchmarks"]) {
    if (b.value("error_occurred", false)) continue;
    EXPECT_NE(b["label"].get<std::string>().find("not verified"), std::string::npos);
  }
}

}  // namespace
}  // namespace dlb::testing
