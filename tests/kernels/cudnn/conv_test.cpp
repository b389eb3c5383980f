#include "kernels/cudnn/conv.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/common/fill.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"
#include "tests/kernels/conv_suite.h"
#include "tests/kernels/testing.h"

namespace dlb {
namespace {

using namespace ::dlb::testing;  // NOLINT: test helpers

const std::vector<ConvShape> kShapes = CommonConvShapes();

constexpr DType kDTypes[] = {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16};
constexpr Layout kLayouts[] = {Layout::kNCHW, Layout::kNHWC};

// The shape in each dtype, in both layouts.
std::vector<ConvCase> InBothLayouts(const ConvShape& s, const std::vector<DType>& dtypes) {
  std::vector<ConvCase> cases;
  for (DType dt : dtypes)
    for (Layout l : kLayouts) {
      RunConfig cfg;
      cfg.dtype = dt;
      cfg.layout = l;
      cases.push_back({s, cfg});
    }
  return cases;
}

struct CudnnConvOps {
  template <ConvPass P>
  using Op = cudnn::CudnnConv<P>;
  static constexpr const char* kName = "Cudnn";
  static bool HasDevice() { return cuda::DeviceCount() > 0; }

  static std::vector<ConvShape> GridShapes() { return kShapes; }
  static std::vector<DType> GridDTypes() { return {std::begin(kDTypes), std::end(kDTypes)}; }
  static std::vector<Layout> GridLayouts() { return {std::begin(kLayouts), std::end(kLayouts)}; }
  static constexpr uint64_t kGridSeed = 3;
  static void CheckLabel(const std::string& label, const RunConfig& cfg) {
    EXPECT_NE(label.find("engine"), std::string::npos);
    EXPECT_NE(label.find("workspace"), std::string::npos);
    EXPECT_NE(label.find("math"), std::string::npos);
    EXPECT_NE(label.find(Name(cfg.algo)), std::string::npos) << label;
  }

  static std::vector<ConvCase> SupportedCases() {
    return InBothLayouts(kShapes[0], {std::begin(kDTypes), std::end(kDTypes)});
  }
  static std::vector<ConvCase> OutputAtCases() {
    return InBothLayouts(kShapes[1], {DType::kF32, DType::kBF16});
  }

  static ConvCase PoisonCase() {
    RunConfig cfg;
    cfg.dtype = DType::kBF16;
    cfg.layout = Layout::kNHWC;
    return {kShapes[0], cfg};
  }
  static void CheckRanFilterOp(const CudnnConvBwdFilter& op) { EXPECT_NE(op.stream(), nullptr); }

  // The cache records the engine and its knobs; a rebuild skips the heuristics (less setup).
  static ConvCase CacheCase() {
    RunConfig cfg;
    cfg.dtype = DType::kBF16;
    cfg.layout = Layout::kNHWC;
    return {TestConvShape(8, 64, 14, 14, 64, 3, 1, 1), cfg};
  }
  // "cudnn 9.14.0 backend engine 45 {k2=5,...}"
  static std::string Engine(const std::string& label) {
    return label.substr(0, label.find(" from "));
  }
  static void CheckCacheHit(const CudnnConvFwd& searched, const CudnnConvFwd& cached) {
    EXPECT_LT(cached.Counters().at(0).second, searched.Counters().at(0).second)
        << "setup_ms: a rebuild against a search";
  }
  static bool Deterministic(const std::string& label) {
    return label.find("nondeterministic") == std::string::npos;
  }
  static void CheckStaleWinner(const std::string&, const ConvCase&) {}
  static constexpr const char* kHeuristicSays = ", heuristic: first usable";
};

INSTANTIATE_TYPED_TEST_SUITE_P(Cudnn, ConvSuite, CudnnConvOps, OpsName);
INSTANTIATE_TEST_SUITE_P(Cudnn, ConvGrid, ::testing::ValuesIn(ConvGridCases<CudnnConvOps>()),
                         ConvGridCaseName);

TEST(CudnnConv, SearchPicksAVerifiedEngine) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const ConvShape s = TestConvShape(8, 32, 14, 14, 32, 3, 1, 1);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    RunConfig cfg;
    cfg.dtype = dt;
    cfg.layout = dt == DType::kF32 ? Layout::kNCHW : Layout::kNHWC;
    cfg.algo = Algo::kSearch;
    for (ConvPass p : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter}) {
      CheckConvPass<CudnnConvOps>(p, s, cfg);
    }
  }
}

TEST(CudnnConv, FloatMathIsFp32WithoutTensorCores) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  RunConfig cfg;
  cfg.algo = Algo::kSearch;
  CudnnConvFwd op(TestConvShape(8, 64, 14, 14, 64, 3, 1, 1), cfg);
  EXPECT_EQ(op.label().find("tensor_core"), std::string::npos) << op.label();
  EXPECT_NE(op.label().find("fp32 (no tf32)"), std::string::npos) << op.label();
}

// The search's label says how many engines it chose from and how long planning and timing took;
// its timing launches must not leak into the output that verification reads.
TEST(CudnnConv, SearchSaysWhatItTimedAndHowLong) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  cfg.layout = Layout::kNHWC;
  cfg.algo = Algo::kSearch;
  CudnnConvFwd op(TestConvShape(8, 32, 14, 14, 32, 3, 1, 1), cfg);
  const std::regex said(
      ", searched [1-9][0-9]* candidates \\(plans built in [0-9]+ ms, timed in [0-9]+ ms\\)");
  EXPECT_TRUE(std::regex_search(op.label(), said)) << op.label();
  for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));
  cfg.algo = Algo::kHeuristic;
  CudnnConvFwd first(TestConvShape(8, 32, 14, 14, 32, 3, 1, 1), cfg);
  EXPECT_NE(first.label().find(", heuristic: first usable"), std::string::npos) << first.label();
}

// Convolution inputs (and the inference family's fp8 weights) are seeded on the device; the
// verifier computes the same values on the host. Bit for bit, in every dtype, for both layouts and
// odd sizes (and more elements than one pass of the grid covers).
TEST(CudnnConv, DeviceSeedingMatchesHostSeeding) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  cuda::Stream stream = cuda::MakeStream();
  for (const std::array<int64_t, 4>& d :
       {std::array<int64_t, 4>{3, 5, 7, 11}, std::array<int64_t, 4>{9, 64, 61, 67}}) {
    const int64_t n = d[0] * d[1] * d[2] * d[3];
    const std::array<int64_t, 4> nchw = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1},
                                 nhwc = {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
    for (DType dt : {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16, DType::kFP8E4M3}) {
      const std::vector<float> want = SeededValues(TensorSeed(3, 1), size_t(n), dt);
      for (const auto& strides : {nchw, nhwc}) {
        cuda::DeviceBuffer<uint8_t> buf(size_t(n) * StorageBytes(dt));
        cuda::SeedDevice(buf.get(), d, strides, TensorSeed(3, 1), dt, stream.get());
        const std::vector<float> got = cuda::Download(buf.get(), size_t(n), dt, stream.get());
        int64_t i = 0;
        for (int64_t a = 0; a < d[0]; ++a)
          for (int64_t b = 0; b < d[1]; ++b)
            for (int64_t c = 0; c < d[2]; ++c)
              for (int64_t e = 0; e < d[3]; ++e, ++i) {
                const int64_t j = a * strides[0] + b * strides[1] + c * strides[2] + e * strides[3];
                ASSERT_EQ(got[size_t(j)], want[size_t(i)]) << Name(dt) << " logical index " << i;
              }
      }
    }
  }
}

TEST(CudnnConv, UnsupportedSaysWhy) {
  RunConfig cfg;
  ConvShape bad = kShapes[0];
  bad.groups = 3;  // 8 channels do not split into 3 groups
  Support s = CudnnConvFwd::Supports(bad, cfg);
  ExpectBareReason(s);
  EXPECT_NE(s.why.find("invalid"), std::string::npos);
  if (cuda::DeviceCount() == 0) {
    s = CudnnConvFwd::Supports(kShapes[0], RunConfig{});
    ExpectBareReason(s);
  }
}

TEST(CudnnConv, BatchThatDoesNotFitSaysHowMuch) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  ConvShape s = TestConvShape(4096, 256, 224, 224, 256, 3, 1, 1);  // x alone is 196 GiB in f32
  try {
    CudnnConvFwd op(s, RunConfig{});
    FAIL() << "a 196 GiB input was allocated";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("out of memory: needs"), std::string::npos) << what;
    EXPECT_NE(what.find("GiB free"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace dlb
