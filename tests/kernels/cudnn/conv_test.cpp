#include "kernels/cudnn/conv.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/common/autotune_cache.h"
#include "kernels/common/error.h"
#include "kernels/common/fill.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"
#include "kernels/reference/conv.h"
#include "tests/kernels/testing.h"

namespace dlb {
namespace {

using namespace ::dlb::testing;  // NOLINT: test helpers

const ConvShape kShapes[] = {
    TestConvShape(2, 8, 10, 10, 16, 3, 1, 1),        // same padding
    TestConvShape(2, 16, 9, 9, 8, 3, 2, 1),          // stride 2, odd size
    TestConvShape(1, 8, 12, 12, 8, 3, 1, 2, 2),      // dilation 2
    TestConvShape(2, 16, 8, 8, 16, 3, 1, 1, 1, 4),   // 4 groups
    TestConvShape(2, 16, 8, 8, 16, 3, 1, 1, 1, 16),  // depthwise
    TestConvShape(2, 16, 8, 8, 32, 1, 2, 0),         // 1x1 projection, stride 2
    TestConvShape(1, 3, 20, 20, 8, 7, 2, 3),         // 7x7 stem with 3 input channels
};

template <class Op>
void CheckAgainstReference(ConvPass pass, const ConvShape& s, const RunConfig& cfg) {
  std::string label;
  RunAgainstConvReference<Op>(pass, s, cfg, &label);
  if (label.empty()) return;
  EXPECT_NE(label.find("engine"), std::string::npos);
  EXPECT_NE(label.find("workspace"), std::string::npos);
  EXPECT_NE(label.find("math"), std::string::npos);
  EXPECT_NE(label.find(cfg.algo), std::string::npos) << label;
}

void CheckPass(ConvPass pass, const ConvShape& s, const RunConfig& cfg) {
  switch (pass) {
    case ConvPass::kFwd:
      return CheckAgainstReference<CudnnConvFwd>(pass, s, cfg);
    case ConvPass::kBwdData:
      return CheckAgainstReference<CudnnConvBwdData>(pass, s, cfg);
    case ConvPass::kBwdFilter:
      return CheckAgainstReference<CudnnConvBwdFilter>(pass, s, cfg);
  }
}

using Param = std::tuple<ConvPass, DType, Layout, int>;
class CudnnConvGrid : public ::testing::TestWithParam<Param> {};

TEST_P(CudnnConvGrid, MatchesReference) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  auto [pass, dt, layout, shape] = GetParam();
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.layout = layout;
  cfg.seed = 3 + shape;
  CheckPass(pass, kShapes[shape], cfg);
}

INSTANTIATE_TEST_SUITE_P(
    All, CudnnConvGrid,
    ::testing::Combine(::testing::Values(ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter),
                       ::testing::Values(DType::kF32, DType::kTF32, DType::kF16, DType::kBF16),
                       ::testing::Values(Layout::kNCHW, Layout::kNHWC),
                       ::testing::Range(0, int(std::size(kShapes)))),
    [](const ::testing::TestParamInfo<Param>& i) {
      return std::string(Name(std::get<0>(i.param))) + "_" +
             std::string(Name(std::get<1>(i.param))) + "_" + Name(std::get<2>(i.param)) + "_" +
             std::to_string(std::get<3>(i.param));
    });

// The common cases must not hide behind "unsupported".
TEST(CudnnConv, CommonCasesAreSupported) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  for (DType dt : {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16}) {
    for (Layout l : {Layout::kNCHW, Layout::kNHWC}) {
      RunConfig cfg;
      cfg.dtype = dt;
      cfg.layout = l;
      EXPECT_TRUE(CudnnConvFwd::Supports(kShapes[0], cfg).ok) << Name(dt) << " " << Name(l);
      EXPECT_TRUE(CudnnConvBwdData::Supports(kShapes[0], cfg).ok) << Name(dt) << " " << Name(l);
      EXPECT_TRUE(CudnnConvBwdFilter::Supports(kShapes[0], cfg).ok) << Name(dt) << " " << Name(l);
    }
  }
}

TEST(CudnnConv, SearchPicksAVerifiedEngine) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const ConvShape s = TestConvShape(8, 32, 14, 14, 32, 3, 1, 1);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    RunConfig cfg;
    cfg.dtype = dt;
    cfg.layout = dt == DType::kF32 ? Layout::kNCHW : Layout::kNHWC;
    cfg.algo = "search";
    for (ConvPass p : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter}) {
      CheckPass(p, s, cfg);
    }
  }
}

TEST(CudnnConv, FloatMathIsFp32WithoutTensorCores) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  RunConfig cfg;
  cfg.algo = "search";
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
  cfg.algo = "search";
  CudnnConvFwd op(TestConvShape(8, 32, 14, 14, 32, 3, 1, 1), cfg);
  const std::regex said(
      ", searched [1-9][0-9]* candidates \\(plans built in [0-9]+ ms, timed in [0-9]+ ms\\)");
  EXPECT_TRUE(std::regex_search(op.label(), said)) << op.label();
  for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));
  cfg.algo = "heuristic";
  CudnnConvFwd first(TestConvShape(8, 32, 14, 14, 32, 3, 1, 1), cfg);
  EXPECT_NE(first.label().find(", heuristic: first usable"), std::string::npos) << first.label();
}

// The autotune cache at the op: the first build searches and records the engine and its knobs,
// the next rebuilds that configuration without the heuristics (the same engine, the same output,
// less setup), and heuristic never reads the cache.
TEST(CudnnConv, CacheRebuildsTheRecordedEngine) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("dlb_cudnn_conv_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string path = (dir / "autotune.json").string();
  autotune::SetProcessCachePath(path);
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  cfg.layout = Layout::kNHWC;
  cfg.algo = "cache";
  const ConvShape shape = TestConvShape(8, 64, 14, 14, 64, 3, 1, 1);
  CudnnConvFwd searched(shape, cfg);
  EXPECT_NE(searched.label().find(", no cached winner; searched "), std::string::npos)
      << searched.label();
  EXPECT_NE(searched.label().find(", recorded, "), std::string::npos) << searched.label();
  ASSERT_TRUE(fs::is_regular_file(path));
  CudnnConvFwd cached(shape, cfg);
  EXPECT_NE(cached.label().find(", cached winner ("), std::string::npos) << cached.label();
  const auto engine = [](const std::string& label) {
    return label.substr(0, label.find(" from "));  // "cudnn 9.14 backend engine 45 {k2=5,...}"
  };
  EXPECT_EQ(engine(cached.label()), engine(searched.label()));
  EXPECT_LT(cached.Counters().at(0).second, searched.Counters().at(0).second)
      << "setup_ms: a rebuild against a search";
  searched.Run();
  cached.Run();
  if (cached.label().find("nondeterministic") == std::string::npos)
    EXPECT_EQ(searched.Output().data, cached.Output().data);
  cfg.algo = "heuristic";
  fs::remove(path);
  CudnnConvFwd heuristic(shape, cfg);
  EXPECT_NE(heuristic.label().find(", heuristic: first usable"), std::string::npos);
  EXPECT_FALSE(fs::exists(path));
  autotune::SetProcessCachePath("");
  fs::remove_all(dir);
}

// Convolution inputs are seeded on the device; the verifier computes the same values on the host.
// Bit for bit, in every dtype, for both layouts and odd sizes (and more elements than one pass of
// the grid covers).
TEST(CudnnConv, DeviceSeedingMatchesHostSeeding) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  cuda::Stream stream = cuda::MakeStream();
  for (const std::array<int64_t, 4>& d :
       {std::array<int64_t, 4>{3, 5, 7, 11}, std::array<int64_t, 4>{9, 64, 61, 67}}) {
    const int64_t n = d[0] * d[1] * d[2] * d[3];
    const std::array<int64_t, 4> nchw = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1},
                                 nhwc = {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
    for (DType dt : {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16}) {
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

// The verifier reads sampled positions through OutputAt: they must be exactly the elements the
// whole download, brought into logical order, holds there.
template <class Op>
void CheckOutputAt(const ConvShape& s, const RunConfig& cfg) {
  Op op(s, cfg);
  op.Run();
  const HostTensor whole = op.Output();
  const int64_t n = int64_t(whole.data.size());
  std::vector<int64_t> flat = {0, 1, n / 3, n / 2 + 1, n - 2, n - 1};
  const HostTensor got = op.OutputAt(flat);
  EXPECT_EQ(got.shape, whole.shape);
  ASSERT_EQ(got.data.size(), flat.size());
  for (size_t i = 0; i < flat.size(); ++i)
    EXPECT_EQ(got.data[i], whole.data[size_t(flat[i])]) << Name(cfg.dtype) << " index " << flat[i];
  EXPECT_TRUE(op.OutputAt({0, n}).data.empty()) << "an index past the end reads nothing";
}

TEST(CudnnConv, OutputAtGathersWhatOutputHolds) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  for (DType dt : {DType::kF32, DType::kBF16}) {
    for (Layout l : {Layout::kNCHW, Layout::kNHWC}) {
      RunConfig cfg;
      cfg.dtype = dt;
      cfg.layout = l;
      CheckOutputAt<CudnnConvFwd>(kShapes[1], cfg);
      CheckOutputAt<CudnnConvBwdData>(kShapes[1], cfg);
      CheckOutputAt<CudnnConvBwdFilter>(kShapes[1], cfg);
    }
  }
}

TEST(CudnnConv, OutputIsPoisonedUntilRun) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  cfg.layout = Layout::kNHWC;
  CudnnConvBwdFilter op(kShapes[0], cfg);
  for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));
  op.Run();
  for (float v : op.Output().data) ASSERT_FALSE(std::isnan(v));
  const Cost c = op.cost();
  EXPECT_EQ(c.flops, kShapes[0].Flops());
  EXPECT_EQ(c.items, 2);
  EXPECT_EQ(c.bytes, 2.0 * (ConvXSize(kShapes[0]) + ConvWSize(kShapes[0]) + ConvYSize(kShapes[0])));
  EXPECT_NE(op.stream(), nullptr);
}

TEST(CudnnConv, UnsupportedSaysWhy) {
  RunConfig cfg;
  ConvShape bad = kShapes[0];
  bad.groups = 3;  // 8 channels do not split into 3 groups
  Support s = CudnnConvFwd::Supports(bad, cfg);
  ExpectBareReason(s);
  EXPECT_NE(s.why.find("invalid"), std::string::npos);
  cfg.algo = "exhaustive";
  s = CudnnConvBwdData::Supports(kShapes[0], cfg);
  ExpectBareReason(s);
  EXPECT_NE(s.why.find("algo"), std::string::npos);
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
