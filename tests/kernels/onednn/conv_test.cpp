#include "kernels/onednn/conv.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/common/autotune_cache.h"
#include "kernels/common/error.h"
#include "kernels/onednn/context.h"
#include "tests/kernels/conv_suite.h"
#include "tests/kernels/testing.h"

namespace dlb {
namespace {

using namespace ::dlb::testing;  // NOLINT: test helpers

const std::vector<ConvShape> kShapes = [] {
  std::vector<ConvShape> s = CommonConvShapes();
  s.push_back(TestConvShape(2, 64, 14, 14, 64, 3, 1, 1));  // blocked layouts (16-channel blocks)
  return s;
}();

std::string Slurp(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

// oneDNN picks every tensor's layout itself: the grid has no layout axis.
struct OneDnnConvOps {
  template <ConvPass P>
  using Op = onednn::OneDnnConv<P>;
  static constexpr const char* kName = "OneDnn";
  static bool HasDevice() { return true; }

  static std::vector<ConvShape> GridShapes() { return kShapes; }
  static std::vector<DType> GridDTypes() { return {DType::kF32, DType::kBF16}; }
  static std::vector<Layout> GridLayouts() { return {}; }
  static constexpr uint64_t kGridSeed = 5;
  static void CheckLabel(const std::string& label, const RunConfig&) {
    EXPECT_NE(label.find("chosen by oneDNN"), std::string::npos) << label;
  }

  // f32 is always supported.
  static std::vector<ConvCase> SupportedCases() {
    std::vector<ConvCase> cases;
    for (const ConvShape& s : kShapes) cases.push_back({s, RunConfig{}});
    return cases;
  }

  // Every pass, with blocked and channels-last layouts (search) and groups.
  static std::vector<ConvCase> OutputAtCases() {
    std::vector<ConvCase> cases;
    for (const ConvShape& s : {kShapes[1], kShapes[3], kShapes[7]})
      for (Algo algo : {Algo::kHeuristic, Algo::kSearch}) {
        RunConfig cfg;
        cfg.algo = algo;
        cases.push_back({s, cfg});
      }
    return cases;
  }

  static ConvCase PoisonCase() {
    RunConfig cfg;
    cfg.threads = 1;
    return {kShapes[7], cfg};
  }
  static void CheckRanFilterOp(const OneDnnConvBwdWeights& op) {
    const ConvShape& s = kShapes[7];
    EXPECT_EQ(op.Output().shape, (std::vector<int64_t>{s.k, s.c, s.r, s.s}));
    EXPECT_NE(op.label().find("threads 1"), std::string::npos) << op.label();
  }

  static ConvCase CacheCase() { return {kShapes[7], RunConfig{}}; }
  static std::string Engine(const std::string& label) { return label.substr(0, label.find(',')); }
  static void CheckCacheHit(const OneDnnConvFwd&, const OneDnnConvFwd& cached) {
    EXPECT_EQ(autotune::ProcessCache().size(), 1u);
    EXPECT_EQ(cached.label().find("searched "), cached.label().find("searched 20"))
        << "only the date says searched: " << cached.label();
    const auto counters = cached.Counters();
    ASSERT_EQ(counters.size(), 2u);
    EXPECT_EQ(counters[0].first, autotune::kSetupMsCounter);
    EXPECT_GT(counters[0].second, 0);
    // The direct algorithm, asked for: as many multiplications as counted.
    EXPECT_EQ(counters[1], std::make_pair(std::string(kFewerOpsCounter), 0.0));
  }
  static bool Deterministic(const std::string&) { return true; }
  // A winner this oneDNN would not give: searched again, and the entry overwritten.
  static void CheckStaleWinner(const std::string& path, const ConvCase& c) {
    const std::string text = Slurp(path);
    std::ofstream(path) << std::regex_replace(text, std::regex(R"("winner": "[^"]*")"),
                                              R"("winner": "asked=nhwc;impl=gone:avx9000")");
    autotune::SetProcessCachePath("");
    autotune::SetProcessCachePath(path);  // a new process's view of the file
    OneDnnConvFwd stale(c.shape, c.cfg);
    EXPECT_NE(stale.label().find("cached winner gone:avx9000 (activations nhwc) no longer built; "
                                 "searched "),
              std::string::npos)
        << stale.label();
    EXPECT_EQ(Slurp(path).find("gone"), std::string::npos) << Slurp(path);
  }
  static constexpr const char* kHeuristicSays = ", heuristic: ";
};

INSTANTIATE_TYPED_TEST_SUITE_P(OneDnn, ConvSuite, OneDnnConvOps, OpsName);
INSTANTIATE_TEST_SUITE_P(OneDnn, ConvGrid, ::testing::ValuesIn(ConvGridCases<OneDnnConvOps>()),
                         ConvGridCaseName);

// The search builds every implementation oneDNN offers, each with the layouts it asks for: the one
// kept must still match the reference (even shapes f32, odd shapes bf16).
using SearchParam = std::tuple<ConvPass, int>;
class OneDnnConvSearch : public ::testing::TestWithParam<SearchParam> {};

TEST_P(OneDnnConvSearch, FastestImplementationMatchesReference) {
  auto [pass, shape] = GetParam();
  RunConfig cfg;
  cfg.dtype = shape % 2 == 0 ? DType::kF32 : DType::kBF16;
  cfg.algo = Algo::kSearch;
  cfg.seed = 11 + shape;
  CheckConvPass<OneDnnConvOps>(pass, kShapes[shape], cfg);
}

INSTANTIATE_TEST_SUITE_P(All, OneDnnConvSearch,
                         ::testing::Combine(::testing::Values(ConvPass::kFwd, ConvPass::kBwdData,
                                                              ConvPass::kBwdFilter),
                                            ::testing::Range(0, int(kShapes.size()))),
                         [](const ::testing::TestParamInfo<SearchParam>& i) {
                           return std::string(Name(std::get<0>(i.param))) + "_" +
                                  std::to_string(std::get<1>(i.param));
                         });

TEST(OneDnnConv, SearchSaysHowManyItTimedAndLeavesTheOutputPoisoned) {
  RunConfig cfg;
  cfg.algo = Algo::kSearch;
  OneDnnConvFwd op(kShapes[7], cfg);
  const std::regex said(
      ", searched ([2-9] candidates, fastest [0-9.e+-]+ ms|1 candidate \\(the only implementation "
      "offered\\)), ");
  EXPECT_TRUE(std::regex_search(op.label(), said)) << op.label();
  for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));  // search runs must not leak
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
