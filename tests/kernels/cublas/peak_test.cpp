// The GPU's measured GEMM peak (label gpu: skipped without a device).
#include "kernels/cublas/peak.h"

#include <gtest/gtest.h>

#include "kernels/cuda/device.h"

namespace dlb::cublas {
namespace {

TEST(GemmPeak, MeasuresARateBelowTheDatasheetAndAboveAFractionOfIt) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const cuda::DeviceInfo d = cuda::QueryDevice(0);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const GemmPeakRun run = MeasureGemmPeak(dt, PeakSearch::kOne);
    ASSERT_GT(run.flops, 0) << Name(dt) << ": " << run.method;
    EXPECT_NE(run.method.find("cuBLASLt"), std::string::npos) << run.method;
    // Both timings ran, and the method says which rate is the peak.
    EXPECT_NE(run.method.find("sustained: "), std::string::npos) << run.method;
    EXPECT_NE(run.method.find("re-timed like a case"), std::string::npos) << run.method;
    EXPECT_NE(run.method.find("; the peak: the "), std::string::npos) << run.method;
    // Dense FLOP per clock per SM of any GPU so far is at most 8192 (Hopper fp8): 2x that at the
    // max clock is beyond any GEMM, a 1000th of the f32 rate below any working one.
    const double ceiling = 2 * 8192.0 * d.sms * d.sm_clock_mhz * 1e6;
    EXPECT_LT(run.flops, ceiling) << Name(dt);
    EXPECT_GT(run.flops, 0.001 * 128.0 * d.sms * d.sm_clock_mhz * 1e6) << Name(dt);
    if (run.sm_clock_mhz > 0) EXPECT_LE(run.sm_clock_mhz, d.sm_clock_mhz * 1.05);
  }
}

TEST(CopyBandwidth, MeasuresReadPlusWriteBytes) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const cuda::CopyBandwidth bw = cuda::MeasureCopyBandwidth(0);
  EXPECT_GT(bw.bytes_per_s, 1e10) << bw.method;  // any GPU with CUDA 13 copies faster
  EXPECT_LT(bw.bytes_per_s, 1e14) << bw.method;
  EXPECT_NE(bw.method.find("read + write counted"), std::string::npos) << bw.method;
}

TEST(GemmPeak, ADtypeTheGpuLacksSaysWhyWithoutThrowing) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const cuda::DeviceInfo d = cuda::QueryDevice(0);
  if (d.cc_major * 10 + d.cc_minor >= 89) GTEST_SKIP() << "this GPU has FP8";
  const GemmPeakRun run = MeasureGemmPeak(DType::kFP8E4M3, PeakSearch::kOne);
  EXPECT_EQ(run.flops, 0);
  EXPECT_FALSE(run.method.empty());
}

}  // namespace
}  // namespace dlb::cublas
