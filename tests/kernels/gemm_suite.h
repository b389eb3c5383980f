// The GEMM tests every backend's op must pass, written once as a typed suite over (op, dtype)
// cases. A backend's test file describes each op in an Ops struct and instantiates the suite:
//
//   using LtCases = ::testing::Types<GemmCase<LtOps, DType::kF32>, ...>;
//   INSTANTIATE_TYPED_TEST_SUITE_P(CublasLt, GemmSuite, LtCases, GemmCaseName);
//
// so each test binary links only its own backend. Include this header from one file per binary
// (it defines tests). What an Ops struct gives:
//   using Op                           the backend's op
//   Config(dtype)                      the run configuration the tests build it with
//   Available(cfg)                     No (with the reason) skips the case: no device, or a dtype
//                                      this machine lacks
//   Shapes()                           the shapes checked against the reference, each transposed
//                                      every way
//   CheckLabel(op, cfg)                what a fresh op's label must say
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/dtype.h"
#include "kernels/common/op.h"
#include "kernels/common/shapes.h"
#include "tests/kernels/testing.h"

namespace dlb::testing {

// Runs the op once on its seeded inputs against the float64 reference, with the dtype's tolerance.
template <class Op>
void ExpectGemmMatchesReference(const GemmShape& s, const RunConfig& cfg) {
  SCOPED_TRACE(std::string(Name(cfg.dtype)) + " " + std::to_string(s.m) + "x" +
               std::to_string(s.n) + "x" + std::to_string(s.k) + " ta=" + std::to_string(s.ta) +
               " tb=" + std::to_string(s.tb) + " algo=" + Name(cfg.algo));
  ASSERT_TRUE(Op::Supports(s, cfg).ok) << Op::Supports(s, cfg).why;
  Op op(s, cfg);
  op.Run();
  HostTensor out = op.Output();
  ASSERT_EQ(out.shape, (std::vector<int64_t>{s.m, s.n}));
  for (float v : out.data) ASSERT_FALSE(std::isnan(v)) << op.label();
  // int8's tolerance is 0: the int32 result is exact (these sums stay below 2^24, exact in float).
  EXPECT_LE(RelativeL2(out.data, GemmReferenceFor(s, cfg.seed, cfg.dtype)), Tolerance(cfg.dtype))
      << op.label();
}

// A small GEMM every op supports: the 8-bit kernels need k and n multiples of 16.
inline GemmShape SmallGemm(DType dt) {
  return IsEightBit(dt) ? GemmShape{16, 16, 16} : GemmShape{16, 8, 4};
}

template <class OpsT, DType kDT>
struct GemmCase {
  using Ops = OpsT;
  using Op = typename Ops::Op;
  static constexpr DType kDType = kDT;
};

// Names a case after its dtype (CublasLt/GemmSuite/bf16): the prefix names the op.
struct GemmCaseName {
  template <class Case>
  static std::string GetName(int) {
    return std::string(Name(Case::kDType));
  }
};

template <class Case>
class GemmSuite : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_ = Case::Ops::Config(Case::kDType);
    const Support available = Case::Ops::Available(cfg_);
    if (!available.ok) GTEST_SKIP() << available.why;
  }
  RunConfig cfg_;
};

TYPED_TEST_SUITE_P(GemmSuite);

TYPED_TEST_P(GemmSuite, MatchesReferenceForEveryTranspose) {
  for (GemmShape s : TypeParam::Ops::Shapes())
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        s.ta = ta, s.tb = tb;
        ExpectGemmMatchesReference<typename TypeParam::Op>(s, this->cfg_);
      }
}

TYPED_TEST_P(GemmSuite, OutputIsPoisonedUntilRun) {
  typename TypeParam::Op op(SmallGemm(TypeParam::kDType), this->cfg_);
  for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));
  TypeParam::Ops::CheckLabel(op, this->cfg_);
}

TYPED_TEST_P(GemmSuite, CostCountsTwoFlopsPerMacAndStorageBytes) {
  const DType dt = TypeParam::kDType;
  const GemmShape s = IsEightBit(dt) ? GemmShape{48, 32, 16} : GemmShape{4, 3, 2};
  typename TypeParam::Op op(s, this->cfg_);
  EXPECT_EQ(op.cost().flops, 2.0 * s.m * s.n * s.k);
  // The operands in their storage, the output in its own (bf16 for fp8, int32 for int8).
  const GemmTypes t = GemmTypesOf(dt);
  EXPECT_EQ(op.cost().bytes, double(s.m * s.k * StorageBytes(t.a) + s.k * s.n * StorageBytes(t.b) +
                                    s.m * s.n * t.out_bytes));
}

REGISTER_TYPED_TEST_SUITE_P(GemmSuite, MatchesReferenceForEveryTranspose, OutputIsPoisonedUntilRun,
                            CostCountsTwoFlopsPerMacAndStorageBytes);

}  // namespace dlb::testing
