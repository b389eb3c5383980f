#include <map>

#include "benchmarks/conv/family.h"
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

// The share of a convolution's counted FLOP that are real work. ConvShape::Flops() counts every
// filter tap at every output position, those that fall on the zero padding too; a library skips
// them, so a padded layer's pct_peak reads high by the inverse of this share (the 4x4 layers of
// the CIFAR ResNet-18, padded by 1: 100 of 144 taps, pct_peak up to 1.44x the real figure).
double RealTapShare(const ConvShape& s) {
  auto along = [](int64_t in, int64_t out, int64_t taps, int64_t stride, int64_t pad, int64_t dil) {
    int64_t inside = 0;
    for (int64_t o = 0; o < out; ++o)
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t i = o * stride - pad + t * dil;
        inside += i >= 0 && i < in;
      }
    return double(inside) / double(out * taps);
  };
  return along(s.h, s.P(), s.r, s.stride_h, s.pad_h, s.dil_h) *
         along(s.w, s.Q(), s.s, s.stride_w, s.pad_w, s.dil_w);
}

TEST(BenchConv, RealTapShareCountsTapsInsideTheInput) {
  ConvShape s;
  s.c = s.k = 8;
  s.h = s.w = 4;
  s.r = s.s = 3;
  s.pad_h = s.pad_w = 1;
  EXPECT_DOUBLE_EQ(RealTapShare(s), 100.0 / 144.0);
  s.pad_h = s.pad_w = 0;
  EXPECT_DOUBLE_EQ(RealTapShare(s), 1.0);
}

// The smoke tier's CPU convolutions against the peak the binary measured for itself.
TEST(BenchConv, SmokeCpuCasesStayWithinTheMeasuredPeak) {
#ifndef DLBENCH_HAVE_ONEDNN
  GTEST_SKIP() << "no CPU backend built";
#endif
  std::map<std::string, ConvShape> shapes;
  for (const std::string& file : WorkloadFiles("conv_"))
    for (const conv::Workload& w : conv::LoadWorkloads(file)) shapes[w.basics.name] = w.shape;
  bool cached = false;
  Result r = RunWithFreshPeakCache(DLB_BENCH_CONV, "--dlb_tier=smoke --dlb_device=cpu", &cached);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  EXPECT_TRUE(cached) << "the measured peak was not cached";
  const auto [highest, checked] = CheckCpuPctPeak(r.json, [&](const std::string& workload) {
    const auto it = shapes.find(workload);
    EXPECT_NE(it, shapes.end()) << workload << " is in no conv_*.csv";
    return it == shapes.end() ? 1.0 : RealTapShare(it->second);
  });
  EXPECT_GT(checked, 0);
  std::printf("highest CPU pct_peak: %.1f%% (%d cases); %s\n", highest, checked,
              r.json["context"].value(std::string(schema::kCtxCpuPeakMeasured), "").c_str());
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
