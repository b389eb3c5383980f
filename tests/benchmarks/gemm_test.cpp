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

// A run measures the peaks of the dtypes its selected cases use, no others: on the CPU with
// --dlb_dtypes=f32 the f32 peak alone (the one entry of a fresh cache), and the context says why
// the others have no figure.
TEST(BenchGemm, ACpuRunOfF32MeasuresTheF32PeakAlone) {
#ifndef DLBENCH_HAVE_ONEDNN
  GTEST_SKIP() << "no CPU backend built";
#endif
  bool cached = false;
  nlohmann::json cache;
  Result r = RunWithFreshPeakCache(
      DLB_BENCH_GEMM,
      "--dlb_tier=smoke --dlb_device=cpu --dlb_dtypes=f32 --benchmark_min_time=0.01", &cached,
      &cache);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(cached) << r.output;
  ASSERT_TRUE(cache.is_object());
  ASSERT_EQ(cache.size(), 1u) << cache.dump(1);
  EXPECT_NE(cache.begin().key().find(" | f32 | "), std::string::npos) << cache.begin().key();
  const std::string measured =
      r.json["context"].value(std::string(schema::kCtxCpuPeakMeasured), "");
  EXPECT_EQ(measured.rfind("f32 ", 0), 0u) << measured;
  for (const char* dt : {"bf16", "f16", "int8"})
    EXPECT_NE(measured.find(std::string(dt) + " not measured (no " + dt + " case in this run)"),
              std::string::npos)
        << measured;
}

// --dlb_kernels=on: each oneDNN GEMM's table holds its matmul primitive, once per Run(); off (the
// default), no case has a table.
TEST(BenchGemm, KernelsOnRecordsTheMatmulPrimitiveOfEachCpuCase) {
#ifndef DLBENCH_HAVE_ONEDNN
  GTEST_SKIP() << "no CPU backend built";
#endif
  const std::string args =
      "--dlb_tier=smoke --dlb_device=cpu --dlb_dtypes=f32 --benchmark_min_time=0.02";
  Result on = RunBinary(DLB_BENCH_GEMM, args + " --dlb_kernels=on");
  ASSERT_EQ(on.exit_code, 0) << on.output;
  CheckSmokeJson(on.json, "gemm");
  EXPECT_GT(CheckPrimitiveTables(on.json, "matmul"), 0) << on.output;
  Result off = RunBinary(DLB_BENCH_GEMM, args + " --benchmark_filter=square");
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_EQ(off.json["context"].value(std::string(schema::kCtxKernels), ""), "off");
  for (const auto& b : off.json["benchmarks"])
    EXPECT_FALSE(b[std::string(schema::kResult)].contains(std::string(schema::kKernels))) << b;
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

// The 8-bit types by --dlb_dtypes on the CPU: int8 measured and verified exactly where the CPU has
// VNNI or AMX, else unsupported with the reason; fp8 always unsupported on the CPU.
TEST(BenchGemm, EightBitTypesOnTheCpuRunOrSayWhyNot) {
  Result r = RunBinary(DLB_BENCH_GEMM,
                       "--dlb_tier=smoke --dlb_device=cpu --dlb_dtypes=int8,fp8 "
                       "--benchmark_min_time=0.01 --benchmark_filter=square.64/");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
#ifndef DLBENCH_HAVE_ONEDNN
  GTEST_SKIP() << "no CPU backend built";
#endif
  int seen = 0;
  for (const auto& b : r.json["benchmarks"]) {
    const std::string name = b["name"];
    const std::string error = b.value("error_message", "");
    ++seen;
    if (name.find("/dt:fp8") != std::string::npos) {
      EXPECT_EQ(error.rfind(std::string(schema::kStatusUnsupported) + "fp8 ", 0), 0u) << error;
    } else if (b.value("error_occurred", false)) {
      EXPECT_EQ(error.rfind(std::string(schema::kStatusUnsupported) + "int8 needs avx512_vnni", 0),
                0u)
          << error;
    } else {
      EXPECT_NE(b["label"].get<std::string>().find("verified rel-L2 0.00e+00 <= 0e+00"),
                std::string::npos)
          << b["label"];
    }
  }
  EXPECT_EQ(seen, 2) << r.output;
}

}  // namespace
}  // namespace dlb::testing
