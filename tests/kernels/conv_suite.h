// The convolution tests every backend's forward, backward-data and backward-filter ops must pass,
// written once: a typed suite (ConvSuite) and a grid of cases against the float64 reference
// (ConvGrid). A backend's test file describes its ops in an Ops struct and instantiates both:
//
//   INSTANTIATE_TYPED_TEST_SUITE_P(Cudnn, ConvSuite, CudnnConvOps, OpsName);
//   INSTANTIATE_TEST_SUITE_P(Cudnn, ConvGrid, ::testing::ValuesIn(ConvGridCases<CudnnConvOps>()),
//                            ConvGridCaseName);
//
// so each test binary links only its own backend. Include this header from one file per binary
// (it defines tests). What an Ops struct gives:
//   template <ConvPass P> using Op;   the backend's op for each pass
//   kName, HasDevice()                names the instantiation; false skips every test needing one
//   GridShapes(), GridDTypes(), GridLayouts(), kGridSeed
//                                     the grid: every pass x dtype x layout x shape, seeded
//                                     kGridSeed + the shape's index; no layouts: the op picks its
//                                     own and the case's name leaves the layout out
//   CheckLabel(label, cfg)            what a grid case's label must say
//   SupportedCases()                  (shape, config) pairs every pass must support
//   OutputAtCases()                   (shape, config) pairs whose outputs OutputAt reads back
//   PoisonCase(), CheckRanFilterOp(op)
//                                     a backward-filter case and the backend's checks of it once
//                                     run
//   CacheCase(), Engine(label), CheckCacheHit(searched, cached), Deterministic(label),
//   CheckStaleWinner(path, case), kHeuristicSays
//                                     the autotune cache at the op (forward)
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/autotune_cache.h"
#include "kernels/common/dtype.h"
#include "kernels/common/op.h"
#include "kernels/common/shapes.h"
#include "tests/kernels/testing.h"
#include "tests/support/temp_dir.h"

namespace dlb::testing {

// The shapes every backend's grid covers.
inline std::vector<ConvShape> CommonConvShapes() {
  return {
      TestConvShape(2, 8, 10, 10, 16, 3, 1, 1),        // same padding
      TestConvShape(2, 16, 9, 9, 8, 3, 2, 1),          // stride 2, odd size
      TestConvShape(1, 8, 12, 12, 8, 3, 1, 2, 2),      // dilation 2
      TestConvShape(2, 16, 8, 8, 16, 3, 1, 1, 1, 4),   // 4 groups
      TestConvShape(2, 16, 8, 8, 16, 3, 1, 1, 1, 16),  // depthwise
      TestConvShape(2, 16, 8, 8, 32, 1, 2, 0),         // 1x1 projection, stride 2
      TestConvShape(1, 3, 20, 20, 8, 7, 2, 3),         // 7x7 stem with 3 input channels
  };
}

struct ConvCase {
  ConvShape shape;
  RunConfig cfg;
};

// Runs one pass of a backend on its seeded inputs against the float64 reference; when it ran, the
// label says what the backend says it must.
template <class Ops, ConvPass kPass>
void CheckConvAgainstReference(const ConvShape& s, const RunConfig& cfg) {
  std::string label;
  RunAgainstConvReference<typename Ops::template Op<kPass>>(kPass, s, cfg, &label);
  if (!label.empty()) Ops::CheckLabel(label, cfg);
}

template <class Ops>
void CheckConvPass(ConvPass pass, const ConvShape& s, const RunConfig& cfg) {
  switch (pass) {
    case ConvPass::kFwd:
      return CheckConvAgainstReference<Ops, ConvPass::kFwd>(s, cfg);
    case ConvPass::kBwdData:
      return CheckConvAgainstReference<Ops, ConvPass::kBwdData>(s, cfg);
    case ConvPass::kBwdFilter:
      return CheckConvAgainstReference<Ops, ConvPass::kBwdFilter>(s, cfg);
  }
}

// The verifier reads sampled positions through OutputAt: they must be exactly the elements the
// whole output, brought into logical order, holds there.
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
    EXPECT_EQ(got.data[i], whole.data[size_t(flat[i])])
        << Name(cfg.dtype) << " " << op.label() << " index " << flat[i];
  EXPECT_TRUE(op.OutputAt({0, n}).data.empty()) << "an index past the end reads nothing";
}

// ---- The grid: one test case per pass, dtype, layout and shape ----

struct ConvGridCase {
  std::string name;  // fwd_f32_NCHW_0
  ConvPass pass;
  ConvShape shape;
  RunConfig cfg;
  bool (*has_device)();
  void (*check)(ConvPass, const ConvShape&, const RunConfig&);
};

inline void PrintTo(const ConvGridCase& c, std::ostream* os) { *os << c.name; }

inline std::string ConvGridCaseName(const ::testing::TestParamInfo<ConvGridCase>& info) {
  return info.param.name;
}

template <class Ops>
std::vector<ConvGridCase> ConvGridCases() {
  const std::vector<ConvShape> shapes = Ops::GridShapes();
  std::vector<Layout> layouts = Ops::GridLayouts();
  const bool named_layouts = !layouts.empty();
  if (!named_layouts) layouts.push_back(RunConfig{}.layout);
  std::vector<ConvGridCase> cases;
  for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
    for (DType dt : Ops::GridDTypes())
      for (Layout layout : layouts)
        for (size_t i = 0; i < shapes.size(); ++i) {
          ConvGridCase c;
          c.name = std::string(Name(pass)) + "_" + std::string(Name(dt)) + "_" +
                   (named_layouts ? std::string(Name(layout)) + "_" : "") + std::to_string(i);
          c.pass = pass;
          c.shape = shapes[i];
          c.cfg.dtype = dt;
          c.cfg.layout = layout;
          c.cfg.seed = Ops::kGridSeed + i;
          c.has_device = &Ops::HasDevice;
          c.check = &CheckConvPass<Ops>;
          cases.push_back(c);
        }
  return cases;
}

class ConvGrid : public ::testing::TestWithParam<ConvGridCase> {};

TEST_P(ConvGrid, MatchesReference) {
  const ConvGridCase& c = GetParam();
  if (!c.has_device()) GTEST_SKIP() << "no CUDA device";
  c.check(c.pass, c.shape, c.cfg);
}

// ---- The typed suite ----

template <class Ops>
class ConvSuite : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Ops::HasDevice()) GTEST_SKIP() << "no CUDA device";
  }
};

TYPED_TEST_SUITE_P(ConvSuite);

// The common cases must not hide behind "unsupported".
TYPED_TEST_P(ConvSuite, CommonCasesAreSupported) {
  for (const ConvCase& c : TypeParam::SupportedCases()) {
    SCOPED_TRACE(std::string(Name(c.cfg.dtype)) + " " + Name(c.cfg.layout));
    EXPECT_TRUE(TypeParam::template Op<ConvPass::kFwd>::Supports(c.shape, c.cfg).ok);
    EXPECT_TRUE(TypeParam::template Op<ConvPass::kBwdData>::Supports(c.shape, c.cfg).ok);
    EXPECT_TRUE(TypeParam::template Op<ConvPass::kBwdFilter>::Supports(c.shape, c.cfg).ok);
  }
}

TYPED_TEST_P(ConvSuite, OutputAtReadsWhatOutputHolds) {
  for (const ConvCase& c : TypeParam::OutputAtCases()) {
    CheckOutputAt<typename TypeParam::template Op<ConvPass::kFwd>>(c.shape, c.cfg);
    CheckOutputAt<typename TypeParam::template Op<ConvPass::kBwdData>>(c.shape, c.cfg);
    CheckOutputAt<typename TypeParam::template Op<ConvPass::kBwdFilter>>(c.shape, c.cfg);
  }
}

TYPED_TEST_P(ConvSuite, OutputIsPoisonedUntilRunAndCostCountsOnePass) {
  const ConvCase c = TypeParam::PoisonCase();
  const ConvShape& s = c.shape;
  typename TypeParam::template Op<ConvPass::kBwdFilter> op(s, c.cfg);
  for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));
  op.Run();
  for (float v : op.Output().data) ASSERT_FALSE(std::isnan(v));
  const Cost cost = op.cost();
  EXPECT_EQ(cost.flops, s.Flops());
  EXPECT_EQ(cost.conventional_flops, s.ConventionalFlops());
  EXPECT_EQ(cost.items, s.n);
  EXPECT_EQ(cost.bytes,
            double(StorageBytes(c.cfg.dtype)) * (ConvXSize(s) + ConvWSize(s) + ConvYSize(s)));
  TypeParam::CheckRanFilterOp(op);
}

// The autotune cache at the op: the first build searches and records the winner, the next
// rebuilds it (the same implementation, the same output), and heuristic never reads the cache.
TYPED_TEST_P(ConvSuite, CacheRebuildsTheRecordedWinner) {
  namespace fs = std::filesystem;
  using Fwd = typename TypeParam::template Op<ConvPass::kFwd>;
  const TempDir dir("conv_cache");
  const std::string path = dir / "autotune.json";
  autotune::SetProcessCachePath(path);
  ConvCase c = TypeParam::CacheCase();
  c.cfg.algo = Algo::kCache;
  Fwd searched(c.shape, c.cfg);
  EXPECT_NE(searched.label().find(", no cached winner; searched "), std::string::npos)
      << searched.label();
  EXPECT_NE(searched.label().find(", recorded, "), std::string::npos) << searched.label();
  ASSERT_TRUE(fs::is_regular_file(path));
  Fwd cached(c.shape, c.cfg);
  EXPECT_NE(cached.label().find(", cached winner ("), std::string::npos) << cached.label();
  EXPECT_EQ(TypeParam::Engine(cached.label()), TypeParam::Engine(searched.label()))
      << "the same implementation";
  TypeParam::CheckCacheHit(searched, cached);
  searched.Run();
  cached.Run();
  if (TypeParam::Deterministic(cached.label()))
    EXPECT_EQ(searched.Output().data, cached.Output().data);
  TypeParam::CheckStaleWinner(path, c);

  c.cfg.algo = Algo::kHeuristic;
  fs::remove(path);
  Fwd heuristic(c.shape, c.cfg);
  EXPECT_NE(heuristic.label().find(TypeParam::kHeuristicSays), std::string::npos)
      << heuristic.label();
  EXPECT_FALSE(fs::exists(path)) << "heuristic writes nothing";
  autotune::SetProcessCachePath("");
}

REGISTER_TYPED_TEST_SUITE_P(ConvSuite, CommonCasesAreSupported, OutputAtReadsWhatOutputHolds,
                            OutputIsPoisonedUntilRunAndCostCountsOnePass,
                            CacheRebuildsTheRecordedWinner);

}  // namespace dlb::testing
