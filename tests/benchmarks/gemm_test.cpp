#include <dlfcn.h>

#include <cstdlib>

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

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

// Without a usable GPU, --dlb_device=all runs the CPU cases, leaves the GPU cases out and says why
// once (stderr and the context); --dlb_device=gpu reports each unsupported with that reason and
// exits 0. Neither prints Google Benchmark's "ERROR OCCURRED" for a case that cannot run here.
TEST(BenchGemm, WithoutAGpuTheGpuCasesAreLeftOutAndTheReasonSaidOnce) {
  Result r = RunBinary(DLB_BENCH_GEMM, "--dlb_tier=smoke --benchmark_min_time=0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  if (HasGpu(r.json)) GTEST_SKIP() << "this machine has a GPU";
  const std::string why = r.json["context"].value(std::string(schema::kCtxGpuLeftOut), "");
  ASSERT_FALSE(why.empty()) << r.output;
  EXPECT_EQ(std::string(schema::kStatusUnsupported) + why, NoGpuMessage(r.json));
  EXPECT_EQ(Occurrences(r.output, "GPU cases left out: " + why), 1u) << r.output;
  for (const auto& b : r.json["benchmarks"])
    EXPECT_EQ(ParseName(b["name"].get<std::string>())->device, "cpu") << b["name"];
  EXPECT_EQ(r.output.find("ERROR OCCURRED"), std::string::npos) << r.output;

  Result g = RunBinary(DLB_BENCH_GEMM, "--dlb_tier=smoke --dlb_device=gpu");
  ASSERT_EQ(g.exit_code, 0) << g.output;
  ASSERT_TRUE(g.json.is_object()) << g.output;
  EXPECT_FALSE(g.json["context"].contains(std::string(schema::kCtxGpuLeftOut)));
  // A build without CUDA has no GPU op to register.
  if (why == "built without CUDA") return;
  ASSERT_FALSE(g.json["benchmarks"].empty());
  for (const auto& b : g.json["benchmarks"]) {
    EXPECT_TRUE(b.value("error_occurred", false)) << b["name"];
    EXPECT_EQ(b.value("error_message", ""), NoGpuMessage(g.json)) << b["name"];
  }
  EXPECT_EQ(g.output.find("ERROR OCCURRED"), std::string::npos) << g.output;
  EXPECT_NE(
      g.output.find(std::to_string(g.json["benchmarks"].size()) + " x " + NoGpuMessage(g.json)),
      std::string::npos)
      << "the unsupported cases summed up once\n"
      << g.output;
}

// The reason fits the cause: no driver library, or (where there is one) every GPU hidden.
TEST(BenchGemm, TheReasonTheGpuIsLeftOutFitsTheCause) {
  ::setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
  Result r = RunBinary(DLB_BENCH_GEMM, "--dlb_tier=smoke --dlb_device=all --benchmark_filter=NONE");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  const std::string why = r.json["context"].value(std::string(schema::kCtxGpuLeftOut), "");
  if (why == "built without CUDA") GTEST_SKIP() << why;
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver) ::dlclose(driver);
  EXPECT_EQ(why, driver ? "no CUDA device visible (CUDA_VISIBLE_DEVICES=-1 hides every GPU)"
                        : "no NVIDIA driver (libcuda.so.1 not found)");
}

// Progress on stderr without a terminal: a line every tenth of the run, and the total at the end.
TEST(BenchGemm, ProgressLinesSayCaseOfNAndTimeLeft) {
  Result r = RunBinary(DLB_BENCH_GEMM, "--dlb_tier=smoke --benchmark_min_time=0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t n = r.json["benchmarks"].size();
  ASSERT_GT(n, 0u);
  EXPECT_NE(r.output.find(" of " + std::to_string(n) + " ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("elapsed, about "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bench_gemm: " + std::to_string(n) + " cases in "), std::string::npos)
      << r.output;
}

// --dlb_budget: a budget too small for the run drops the cases past it (not run, not failed),
// says so on stderr and in the context, and the run still succeeds.
TEST(BenchGemm, ABudgetDropsWhatDoesNotFitAndSaysSo) {
  Result r = RunBinary(DLB_BENCH_GEMM, "--dlb_tier=smoke --dlb_device=cpu --dlb_budget=0.0001");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  size_t dropped = 0;
  for (const auto& b : r.json["benchmarks"])
    if (b.value("error_message", "").rfind(std::string(schema::kStatusDropped), 0) == 0) ++dropped;
  EXPECT_GT(dropped, 0u) << r.output;
  const std::string said = r.json["context"].value(std::string(schema::kCtxBudget), "");
  EXPECT_NE(said.find("dropped " + std::to_string(dropped) + " of "), std::string::npos) << said;
  EXPECT_NE(r.output.find("bench_gemm: --dlb_budget: " + said.substr(0, 20)), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("ERROR OCCURRED"), std::string::npos) << r.output;
  Result bad = RunBinary(DLB_BENCH_GEMM, "--dlb_budget=soon");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--dlb_budget=soon: expects a positive number of minutes"),
            std::string::npos)
      << bad.output;
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
