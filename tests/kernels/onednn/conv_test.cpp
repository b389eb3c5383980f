#include "kernels/onednn/conv.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/common/autotune_cache.h"
#include "kernels/common/error.h"
#include "kernels/common/fill.h"
#include "kernels/onednn/context.h"
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
    TestConvShape(2, 64, 14, 14, 64, 3, 1, 1),       // blocked layouts (16-channel blocks)
};

template <class Op>
void Check(ConvPass pass, const ConvShape& s, const RunConfig& cfg) {
  std::string label;
  RunAgainstConvReference<Op>(pass, s, cfg, &label);
  if (label.empty()) return;
  EXPECT_NE(label.find("chosen by oneDNN"), std::string::npos) << label;
}

void CheckPass(ConvPass pass, const ConvShape& s, const RunConfig& cfg) {
  switch (pass) {
    case ConvPass::kFwd:
      return Check<OneDnnConvFwd>(pass, s, cfg);
    case ConvPass::kBwdData:
      return Check<OneDnnConvBwdData>(pass, s, cfg);
    case ConvPass::kBwdFilter:
      return Check<OneDnnConvBwdWeights>(pass, s, cfg);
  }
}

using Param = std::tuple<ConvPass, DType, int>;
class OneDnnConvGrid : public ::testing::TestWithParam<Param> {};

TEST_P(OneDnnConvGrid, MatchesReference) {
  auto [pass, dt, shape] = GetParam();
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.seed = 5 + shape;
  CheckPass(pass, kShapes[shape], cfg);
}

INSTANTIATE_TEST_SUITE_P(All, OneDnnConvGrid,
                         ::testing::Combine(::testing::Values(ConvPass::kFwd, ConvPass::kBwdData,
                                                              ConvPass::kBwdFilter),
                                            ::testing::Values(DType::kF32, DType::kBF16),
                                            ::testing::Range(0, int(std::size(kShapes)))),
                         [](const ::testing::TestParamInfo<Param>& i) {
                           return std::string(Name(std::get<0>(i.param))) + "_" +
                                  std::string(Name(std::get<1>(i.param))) + "_" +
                                  std::to_string(std::get<2>(i.param));
                         });

// The search builds every implementation oneDNN offers, each with the layouts it asks for: the one
// kept must still match the reference (even shapes f32, odd shapes bf16).
using SearchParam = std::tuple<ConvPass, int>;
class OneDnnConvSearch : public ::testing::TestWithParam<SearchParam> {};

TEST_P(OneDnnConvSearch, FastestImplementationMatchesReference) {
  auto [pass, shape] = GetParam();
  RunConfig cfg;
  cfg.dtype = shape % 2 == 0 ? DType::kF32 : DType::kBF16;
  cfg.algo = "search";
  cfg.seed = 11 + shape;
  CheckPass(pass, kShapes[shape], cfg);
}

INSTANTIATE_TEST_SUITE_P(All, OneDnnConvSearch,
                         ::testing::Combine(::testing::Values(ConvPass::kFwd, ConvPass::kBwdData,
                                                              ConvPass::kBwdFilter),
                                            ::testing::Range(0, int(std::size(kShapes)))),
                         [](const ::testing::TestParamInfo<SearchParam>& i) {
                           return std::string(Name(std::get<0>(i.param))) + "_" +
                                  std::to_string(std::get<1>(i.param));
                         });

TEST(OneDnnConv, SearchSaysHowManyItTimedAndLeavesTheOutputPoisoned) {
  RunConfig cfg;
  cfg.algo = "search";
  OneDnnConvFwd op(kShapes[7], cfg);
  const std::regex said(
      ", searched ([2-9] candidates, fastest [0-9.e+-]+ ms|1 candidate \\(the only implementation "
      "offered\\)), ");
  EXPECT_TRUE(std::regex_search(op.label(), said)) << op.label();
  for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));  // search runs must not leak
  cfg.algo = "exhaustive";
  EXPECT_THROW(OneDnnConvFwd(kShapes[7], cfg), Error);
}

// The autotune cache at the op: the first build searches and records, the next rebuilds the
// recorded winner (the same implementation, the same output), a recorded winner oneDNN no longer
// gives is searched again and overwritten, and heuristic never reads the cache.
TEST(OneDnnConv, CacheRebuildsTheRecordedWinner) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("dlb_onednn_conv_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string path = (dir / "autotune.json").string();
  autotune::SetProcessCachePath(path);
  RunConfig cfg;
  cfg.algo = "cache";
  OneDnnConvFwd searched(kShapes[7], cfg);
  EXPECT_NE(searched.label().find(", no cached winner; searched "), std::string::npos)
      << searched.label();
  EXPECT_NE(searched.label().find(", recorded, "), std::string::npos) << searched.label();
  ASSERT_TRUE(fs::is_regular_file(path));
  EXPECT_EQ(autotune::ProcessCache().size(), 1u);

  OneDnnConvFwd cached(kShapes[7], cfg);
  EXPECT_NE(cached.label().find(", cached winner ("), std::string::npos) << cached.label();
  EXPECT_EQ(cached.label().find("searched "), cached.label().find("searched 20"))
      << "only the date says searched: " << cached.label();
  EXPECT_EQ(cached.label().substr(0, cached.label().find(',')),
            searched.label().substr(0, searched.label().find(',')))
      << "the same implementation";
  const auto counters = cached.Counters();
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0].first, autotune::kSetupMsCounter);
  EXPECT_GT(counters[0].second, 0);
  searched.Run();
  cached.Run();
  EXPECT_EQ(searched.Output().data, cached.Output().data);

  // A winner this oneDNN would not give: searched again, and the entry overwritten.
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::ofstream(path) << std::regex_replace(text.str(), std::regex(R"("winner": "[^"]*")"),
                                            R"("winner": "asked=nhwc;impl=gone:avx9000")");
  autotune::SetProcessCachePath("");
  autotune::SetProcessCachePath(path);  // a new process's view of the file
  OneDnnConvFwd stale(kShapes[7], cfg);
  EXPECT_NE(stale.label().find("cached winner gone:avx9000 (activations nhwc) no longer built; "
                               "searched "),
            std::string::npos)
      << stale.label();
  text.str("");
  text << std::ifstream(path).rdbuf();
  EXPECT_EQ(text.str().find("gone"), std::string::npos) << text.str();

  cfg.algo = "heuristic";
  fs::remove(path);
  OneDnnConvFwd heuristic(kShapes[7], cfg);
  EXPECT_NE(heuristic.label().find(", heuristic: "), std::string::npos) << heuristic.label();
  EXPECT_FALSE(fs::exists(path)) << "heuristic writes nothing";
  autotune::SetProcessCachePath("");
  fs::remove_all(dir);
}

TEST(OneDnnConv, F32IsAlwaysSupported) {
  for (const ConvShape& s : kShapes) {
    EXPECT_TRUE(OneDnnConvFwd::Supports(s, RunConfig{}).ok);
    EXPECT_TRUE(OneDnnConvBwdData::Supports(s, RunConfig{}).ok);
    EXPECT_TRUE(OneDnnConvBwdWeights::Supports(s, RunConfig{}).ok);
  }
}

TEST(OneDnnConv, UnsupportedSaysWhy) {
  RunConfig cfg;
  cfg.dtype = DType::kF16;
  Support s = OneDnnConvFwd::Supports(kShapes[0], cfg);
  ExpectBareReason(s);
  EXPECT_NE(s.why.find("f16"), std::string::npos);
  try {
    OneDnnConvFwd op(kShapes[0], cfg);
    FAIL() << "built an f16 convolution";
  } catch (const Unsupported& e) {
    EXPECT_EQ(e.what(), s.why);  // the bare reason: the harness adds "unsupported: "
  }
  cfg.dtype = DType::kTF32;
  s = OneDnnConvBwdData::Supports(kShapes[0], cfg);
  ExpectBareReason(s);
  EXPECT_NE(s.why.find("tf32"), std::string::npos);
  cfg.dtype = DType::kBF16;
  s = OneDnnConvBwdWeights::Supports(kShapes[0], cfg);
  EXPECT_EQ(s.ok, onednn::HasBf16());
  if (!s.ok) {
    EXPECT_EQ(s.why, "bf16 needs avx512_bf16 or amx");
    EXPECT_THROW(OneDnnConvFwd(kShapes[0], cfg), Unsupported);
  }
  ConvShape bad = kShapes[0];
  bad.groups = 3;
  ExpectBareReason(OneDnnConvFwd::Supports(bad, RunConfig{}));
  RunConfig unknown;
  unknown.algo = "exhaustive";
  ExpectBareReason(OneDnnConvFwd::Supports(kShapes[0], unknown));
}

TEST(OneDnnConv, OutputIsPoisonedUntilRunAndCostCountsOnePass) {
  RunConfig cfg;
  cfg.threads = 1;
  const ConvShape s = kShapes[7];
  OneDnnConvBwdWeights op(s, cfg);
  for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));
  op.Run();
  HostTensor out = op.Output();
  EXPECT_EQ(out.shape, (std::vector<int64_t>{s.k, s.c, s.r, s.s}));
  for (float v : out.data) ASSERT_FALSE(std::isnan(v));
  const Cost c = op.cost();
  EXPECT_EQ(c.flops, s.Flops());
  EXPECT_EQ(c.items, s.n);
  EXPECT_EQ(c.bytes, 4.0 * (ConvXSize(s) + ConvWSize(s) + ConvYSize(s)));
  EXPECT_NE(op.label().find("threads 1"), std::string::npos) << op.label();
}

// The verifier reads sampled positions through OutputAt: the elements the whole output holds
// there, in every pass, with blocked and channels-last layouts (search) and groups.
template <class Op>
void CheckOutputAt(const ConvShape& s, const RunConfig& cfg) {
  Op op(s, cfg);
  op.Run();
  const HostTensor whole = op.Output();
  const int64_t n = int64_t(whole.data.size());
  const std::vector<int64_t> flat = {0, 1, n / 3, n / 2 + 1, n - 2, n - 1};
  const HostTensor got = op.OutputAt(flat);
  EXPECT_EQ(got.shape, whole.shape);
  ASSERT_EQ(got.data.size(), flat.size());
  for (size_t i = 0; i < flat.size(); ++i)
    EXPECT_EQ(got.data[i], whole.data[size_t(flat[i])]) << op.label() << " index " << flat[i];
  EXPECT_TRUE(op.OutputAt({0, n}).data.empty()) << "an index past the end reads nothing";
}

TEST(OneDnnConv, OutputAtReadsWhatOutputHolds) {
  for (const ConvShape& s : {kShapes[1], kShapes[3], kShapes[7]}) {
    for (const char* algo : {"heuristic", "search"}) {
      RunConfig cfg;
      cfg.algo = algo;
      CheckOutputAt<OneDnnConvFwd>(s, cfg);
      CheckOutputAt<OneDnnConvBwdData>(s, cfg);
      CheckOutputAt<OneDnnConvBwdWeights>(s, cfg);
    }
  }
}

// Run() is repeatable: a second pass overwrites rather than accumulates.
TEST(OneDnnConv, RepeatedRunsGiveTheSameResult) {
  OneDnnConvBwdData op(kShapes[1], RunConfig{});
  op.Run();
  auto first = op.Output().data;
  op.Run();
  EXPECT_EQ(first, op.Output().data);
}

}  // namespace
}  // namespace dlb
