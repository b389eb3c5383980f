// The attention tests every backend's scaled-dot-product attention must pass, written once: a
// typed suite (AttnSuite) and a grid of cases against the float64 reference (AttnGrid). A
// backend's test file describes its op in an Ops struct and instantiates both:
//
//   INSTANTIATE_TYPED_TEST_SUITE_P(Cudnn, AttnSuite, CudnnAttnOps, OpsName);
//   INSTANTIATE_TEST_SUITE_P(Cudnn, AttnGrid, ::testing::ValuesIn(AttnGridCases<CudnnAttnOps>()),
//                            AttnGridCaseName);
//
// so each test binary links only its own backend. Include this header from one file per binary
// (it defines tests). What an Ops struct gives:
//   using Op;                         the backend's op (the pass is the shape's)
//   kName, HasDevice()                names the instantiation; false skips every test needing one
//   GridShapes(), GridDTypes(), kGridSeed
//                                     the grid: every pass x dtype x causal x shape (the shape's
//                                     own causal and pass are replaced), seeded kGridSeed + the
//                                     shape's index
//   Bound(dtype, pass)                the relative L2 error allowed against float64
//   kDeterministic                    whether a second Run() must write the same bits
//   CheckLabel(label, cfg)            what a grid case's label must say
//   SupportedCases()                  (shape, config) pairs both passes must support
//   OutputAtCase()                    a case whose outputs OutputAt reads back, in both passes
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/common/dtype.h"
#include "kernels/common/op.h"
#include "kernels/common/shapes.h"
#include "kernels/reference/attn.h"
#include "tests/kernels/testing.h"

namespace dlb::testing {

struct AttnCase {
  AttnShape shape;
  RunConfig cfg;
};

// The shape of `c` in `pass`.
inline AttnShape InPass(AttnShape s, AttnPass pass) {
  s.pass = pass;
  return s;
}

// Runs the op once on its seeded inputs against the float64 reference: the whole output, and in
// the backward each of dQ, dK and dV on its own (a small gradient hides in the others). *label gets
// the op's label when it ran; it stays empty when the op does not support the case (the test is
// then skipped) or a fatal check failed.
template <class Ops>
void RunAgainstAttnReference(const AttnShape& s, const RunConfig& cfg, std::string* label) {
  using Op = typename Ops::Op;
  const Support sup = Op::Supports(s, cfg);
  if (!sup.ok) {
    EXPECT_FALSE(sup.why.empty());
    GTEST_SKIP() << "unsupported: " << sup.why;
  }
  Op op(s, cfg);
  op.Run();
  const HostTensor out = op.Output();
  ReferenceAttn ref(s, cfg.seed, cfg.dtype);
  ASSERT_EQ(int64_t(out.data.size()), ref.OutputElems());
  std::vector<double> want(out.data.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = ref.At(int64_t(i));
  for (size_t i = 0; i < out.data.size(); ++i)
    ASSERT_FALSE(std::isnan(out.data[i])) << "index " << i << ": " << op.label();
  const double bound = Ops::Bound(cfg.dtype, s.pass);
  const double err = RelativeL2(out.data, want);
  EXPECT_LE(err, bound) << op.label();
  std::printf("  rel-L2 %.3e  %s\n", err, op.label().c_str());
  if (s.pass == AttnPass::kBwd) {
    const int64_t q = s.QElems(), kv = s.KvElems();
    const int64_t begin[3] = {0, q, q + kv}, size[3] = {q, kv, kv};
    const char* names[3] = {"dQ", "dK", "dV"};
    for (int t = 0; t < 3; ++t) {
      const std::vector<float> got(out.data.begin() + begin[t],
                                   out.data.begin() + begin[t] + size[t]);
      const std::vector<double> w(want.begin() + begin[t], want.begin() + begin[t] + size[t]);
      EXPECT_LE(RelativeL2(got, w), bound) << names[t] << ": " << op.label();
    }
  }
  // No state carried over between runs.
  if (Ops::kDeterministic) {
    op.Run();
    EXPECT_EQ(op.Output().data, out.data) << op.label();
  }
  *label = op.label();
}

// ---- The grid: one test case per pass, dtype, causal and shape ----

struct AttnGridCase {
  std::string name;  // fwd_bf16_causal_0
  AttnShape shape;
  RunConfig cfg;
  bool (*has_device)();
  void (*check)(const AttnShape&, const RunConfig&);
};

inline void PrintTo(const AttnGridCase& c, std::ostream* os) { *os << c.name; }

inline std::string AttnGridCaseName(const ::testing::TestParamInfo<AttnGridCase>& info) {
  return info.param.name;
}

template <class Ops>
void CheckAttnCase(const AttnShape& s, const RunConfig& cfg) {
  std::string label;
  RunAgainstAttnReference<Ops>(s, cfg, &label);
  if (!label.empty()) Ops::CheckLabel(label, cfg);
}

template <class Ops>
std::vector<AttnGridCase> AttnGridCases() {
  const std::vector<AttnShape> shapes = Ops::GridShapes();
  std::vector<AttnGridCase> cases;
  for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd})
    for (DType dt : Ops::GridDTypes())
      for (bool causal : {false, true})
        for (size_t i = 0; i < shapes.size(); ++i) {
          AttnGridCase c;
          c.name = std::string(Name(pass)) + "_" + std::string(Name(dt)) +
                   (causal ? "_causal_" : "_full_") + std::to_string(i);
          c.shape = InPass(shapes[i], pass);
          c.shape.causal = causal;
          c.cfg.dtype = dt;
          c.cfg.seed = Ops::kGridSeed + i;
          c.has_device = &Ops::HasDevice;
          c.check = &CheckAttnCase<Ops>;
          cases.push_back(c);
        }
  return cases;
}

class AttnGrid : public ::testing::TestWithParam<AttnGridCase> {};

TEST_P(AttnGrid, MatchesReference) {
  const AttnGridCase& c = GetParam();
  if (!c.has_device()) GTEST_SKIP() << "no CUDA device";
  c.check(c.shape, c.cfg);
}

// ---- The typed suite ----

template <class Ops>
class AttnSuite : public ::testing::Test {};

TYPED_TEST_SUITE_P(AttnSuite);

// The common cases must not hide behind "unsupported".
TYPED_TEST_P(AttnSuite, CommonCasesAreSupported) {
  if (!TypeParam::HasDevice()) GTEST_SKIP() << "no CUDA device";
  for (const AttnCase& c : TypeParam::SupportedCases())
    for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd}) {
      const Support sup = TypeParam::Op::Supports(InPass(c.shape, pass), c.cfg);
      EXPECT_TRUE(sup.ok) << Name(pass) << " " << Name(c.cfg.dtype) << ": " << sup.why;
    }
}

// A wrong head count is refused before any device is asked, with the bare reason.
TYPED_TEST_P(AttnSuite, InvalidShapesAreRefusedWithTheBareReason) {
  const AttnCase c = TypeParam::OutputAtCase();
  for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd}) {
    AttnShape bad = InPass(c.shape, pass);
    bad.heads = 4;
    bad.kv_heads = 3;  // 4 query heads do not split into 3 groups
    ExpectBareReason(TypeParam::Op::Supports(bad, c.cfg));
    bad = InPass(c.shape, pass);
    bad.seq = 0;
    ExpectBareReason(TypeParam::Op::Supports(bad, c.cfg));
  }
}

// The constructor poisons what verification reads, so a kernel that writes nothing fails; cost()
// is the family's count for one pass, the same for every backend (docs/families/attn.md).
TYPED_TEST_P(AttnSuite, OutputIsPoisonedUntilRunAndCostCountsOnePass) {
  if (!TypeParam::HasDevice()) GTEST_SKIP() << "no CUDA device";
  const AttnCase c = TypeParam::OutputAtCase();
  for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd}) {
    const AttnShape s = InPass(c.shape, pass);
    typename TypeParam::Op op(s, c.cfg);
    for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v)) << "the output is not poisoned";
    op.Run();
    for (float v : op.Output().data) ASSERT_FALSE(std::isnan(v)) << op.label();
    const Cost cost = op.cost();
    const double es = double(StorageBytes(c.cfg.dtype)), q = double(s.QElems()),
                 kv = double(s.KvElems());
    const bool bwd = pass == AttnPass::kBwd;
    EXPECT_DOUBLE_EQ(cost.flops, bwd ? s.BwdFlops() : s.FwdFlops());
    EXPECT_DOUBLE_EQ(cost.flops, (bwd ? 2.5 : 1.0) * s.FwdFlops());
    EXPECT_DOUBLE_EQ(cost.bytes, es * (bwd ? 4 * q + 4 * kv : 2 * q + 2 * kv));
    EXPECT_DOUBLE_EQ(cost.items, double(s.batch));
  }
}

// The verifier reads sampled positions through OutputAt: they must be exactly the elements the
// whole output holds there, across dQ, dK and dV in the backward; past the end reads nothing.
TYPED_TEST_P(AttnSuite, OutputAtReadsWhatOutputHolds) {
  if (!TypeParam::HasDevice()) GTEST_SKIP() << "no CUDA device";
  const AttnCase c = TypeParam::OutputAtCase();
  for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd}) {
    typename TypeParam::Op op(InPass(c.shape, pass), c.cfg);
    op.Run();
    const HostTensor all = op.Output();
    const int64_t n = int64_t(all.data.size());
    std::vector<int64_t> flat;
    for (int64_t i = n - 1; i >= 0; i -= 97) flat.push_back(i);  // descending, every tensor
    flat.push_back(0);
    const HostTensor some = op.OutputAt(flat);
    EXPECT_EQ(some.shape, all.shape);
    ASSERT_EQ(some.data.size(), flat.size());
    for (size_t j = 0; j < flat.size(); ++j)
      EXPECT_EQ(some.data[j], all.data[size_t(flat[j])]) << Name(pass) << " index " << flat[j];
    EXPECT_TRUE(op.OutputAt({0, n}).data.empty()) << "an index past the end reads nothing";
  }
}

REGISTER_TYPED_TEST_SUITE_P(AttnSuite, CommonCasesAreSupported,
                            InvalidShapesAreRefusedWithTheBareReason,
                            OutputIsPoisonedUntilRunAndCostCountsOnePass,
                            OutputAtReadsWhatOutputHolds);

}  // namespace dlb::testing
