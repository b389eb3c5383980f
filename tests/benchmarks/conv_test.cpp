#include "tests/benchmarks/smoke.h"

namespace dlb::testing {
namespace {

TEST(BenchConv, SmokeTierWritesValidJson) {
  Result r = RunBinary(DLB_BENCH_CONV, "--dlb_tier=smoke --benchmark_min_time=0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int measured = CheckSmokeJson(r.json, "conv");
#ifdef DLBENCH_HAVE_ONEDNN
  EXPECT_GT(measured, 0) << "no CPU case was measured";
#endif
  // Every pass is registered for every layer.
  int passes[3] = {0, 0, 0};
  for (const auto& b : r.json["benchmarks"]) {
    std::string name = b["name"];
    passes[0] += name.find("/pass:fwd") != std::string::npos;
    passes[1] += name.find("/pass:bwd_data") != std::string::npos;
    passes[2] += name.find("/pass:bwd_filter") != std::string::npos;
  }
  EXPECT_GT(passes[0], 0);
  EXPECT_EQ(passes[0], passes[1]);
  EXPECT_EQ(passes[0], passes[2]);
}

TEST(BenchConv, BatchSizesFlagAndLayerCounts) {
  Result r = RunBinary(DLB_BENCH_CONV,
                       "--dlb_tier=smoke --dlb_batch_sizes=3 --dlb_device=cpu "
                       "--dlb_dtypes=f32 --benchmark_min_time=0.01 "
                       "--benchmark_filter='conv/cpu/onednn/resnet18_cifar[.].*/pass:fwd'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  ASSERT_FALSE(r.json["benchmarks"].empty());
  for (const auto& b : r.json["benchmarks"]) {
    EXPECT_NE(b["name"].get<std::string>().find("/bs:3/"), std::string::npos);
    if (!b.value("error_occurred", false)) EXPECT_EQ(b["bs"].get<double>(), 3);
  }
}

TEST(BenchConv, OversizedBatchIsOutOfMemoryAndTheRunGoesOn) {
  // Batch 1,000,000 of a 256-channel 4x4 layer needs ~122 GiB: reported, not a crash.
  Result r = RunBinary(DLB_BENCH_CONV,
                       "--dlb_tier=smoke --dlb_device=cpu --dlb_dtypes=f32 "
                       "--dlb_batch_sizes=1000000,1 --benchmark_min_time=0.01 "
                       "--benchmark_filter='resnet18_cifar.layer4.conv3x3/.*pass:fwd'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  int oom = 0, measured = 0;
  for (const auto& b : r.json["benchmarks"]) {
    const std::string name = b["name"];
    if (name.find("/bs:1000000/") != std::string::npos) {
      EXPECT_EQ(b.value("error_message", "").rfind("out of memory: needs ", 0), 0u) << b;
      ++oom;
    } else if (!b.value("error_occurred", false)) {
      ++measured;
    }
  }
  EXPECT_EQ(oom, 1);
  EXPECT_EQ(measured, 1);
}

}  // namespace
}  // namespace dlb::testing
