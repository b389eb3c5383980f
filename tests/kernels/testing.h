// Helpers the kernel tests share: the float64 answer for an op's seeded inputs, and the error
// measure the harness uses (relative L2).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/fill.h"
#include "kernels/common/op.h"
#include "kernels/common/shapes.h"
#include "kernels/reference/conv.h"
#include "kernels/reference/gemm.h"
#include "kernels/reference/mlp.h"

namespace dlb::testing {

inline double RelativeL2(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = double(got[i]) - want[i];
    err += d * d;
    norm += want[i] * want[i];
  }
  return std::sqrt(err / norm);
}

// C = op(A) op(B) in float64 for the inputs an op seeds from `seed` (kernels/common/shapes.h),
// dequantised for the 8-bit types (each operand in its own dtype: dtype.h's GemmTypesOf).
inline std::vector<double> GemmReferenceFor(const GemmShape& s, uint64_t seed, DType dt) {
  const GemmTypes t = GemmTypesOf(dt);
  auto a = SeededValues(TensorSeed(seed, 0), size_t(s.m * s.k), t.a);
  auto b = SeededValues(TensorSeed(seed, 1), size_t(s.k * s.n), t.b);
  return ReferenceGemm(s, a, b);
}

// Square filters, strides, padding and dilation: what the layer tables need.
// An attention problem of the given sizes (kernels/common/shapes.h).
inline AttnShape TestAttnShape(int64_t b, int64_t h, int64_t g, int64_t seq, int64_t d, bool causal,
                               AttnPass pass) {
  AttnShape s;
  s.batch = b;
  s.heads = h;
  s.kv_heads = g;
  s.seq = seq;
  s.head_dim = d;
  s.causal = causal;
  s.pass = pass;
  return s;
}

inline ConvShape TestConvShape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                               int64_t stride, int64_t pad, int64_t dil = 1, int64_t groups = 1) {
  ConvShape s;
  s.n = n, s.c = c, s.h = h, s.w = w, s.k = k, s.r = r, s.s = r;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = pad;
  s.dil_h = s.dil_w = dil;
  s.groups = groups;
  return s;
}

// The pass's output in float64 for the tensors an op seeds from `seed` (x = 0, w = 1, dy = 2).
inline std::vector<double> ConvReferenceFor(ConvPass pass, const ConvShape& s, uint64_t seed,
                                            DType dt) {
  auto x = SeededValues(TensorSeed(seed, 0), ConvXSize(s), dt);
  auto w = SeededValues(TensorSeed(seed, 1), ConvWSize(s), dt);
  auto dy = SeededValues(TensorSeed(seed, 2), ConvYSize(s), dt);
  switch (pass) {
    case ConvPass::kFwd:
      return ReferenceConvFwd(s, x, w);
    case ConvPass::kBwdData:
      return ReferenceConvBwdData(s, dy, w);
    case ConvPass::kBwdFilter:
      return ReferenceConvBwdFilter(s, x, dy);
  }
  return {};
}

// Names a typed suite's instantiation after its Ops struct's kName (Cudnn/ConvSuite/Cudnn.Name).
struct OpsName {
  template <class Ops>
  static std::string GetName(int) {
    return Ops::kName;
  }
};

// The unsupported rule: Support::No carries the bare reason; the harness adds "unsupported: ".
inline void ExpectBareReason(const Support& s) {
  EXPECT_FALSE(s.ok);
  EXPECT_FALSE(s.why.empty());
  EXPECT_NE(s.why.rfind("unsupported", 0), 0u) << s.why;
}

// Runs a convolution op once on its seeded inputs and checks the output against the float64
// reference with the dtype's tolerance. *label gets the op's label when it ran; it stays empty when
// the op does not support the case (the test is then skipped) or a fatal check failed.
template <class Op>
void RunAgainstConvReference(ConvPass pass, const ConvShape& s, const RunConfig& cfg,
                             std::string* label) {
  const Support sup = Op::Supports(s, cfg);
  if (!sup.ok) {
    EXPECT_FALSE(sup.why.empty());
    GTEST_SKIP() << "unsupported: " << sup.why;
  }
  Op op(s, cfg);
  op.Run();
  HostTensor out = op.Output();
  const auto want = ConvReferenceFor(pass, s, cfg.seed, cfg.dtype);
  ASSERT_EQ(out.data.size(), want.size());
  for (float v : out.data) ASSERT_FALSE(std::isnan(v)) << op.label();
  EXPECT_LE(RelativeL2(out.data, want), Tolerance(cfg.dtype)) << op.label();
  *label = op.label();
}

// An MLP step case for the native steps' tests.
inline TrainShape MlpShape(std::vector<int64_t> widths, int64_t batch, Pass pass = Pass::kTrain,
                           bool graph = false) {
  TrainShape s;
  s.model = "mlp";
  s.widths = std::move(widths);
  s.classes = s.widths.back();
  s.batch = batch;
  s.pass = pass;
  s.graph = graph;
  return s;
}

// `steps` float64 steps from the seeded parameters and batch, momentum carried from step to step:
// the last step's result.
inline MlpStepResult ReferenceMlpSteps(const TrainShape& s, uint64_t seed, int steps) {
  MlpParams p = SeededMlpParams(seed, s.widths);
  const MlpBatch b = SeededMlpBatch(seed, s.batch, s.widths.front(), s.widths.back());
  MlpMomentum buf;
  MlpStepResult r;
  for (int i = 0; i < steps; ++i) {
    r = ReferenceMlpStep(s, p, b, &buf);
    if (s.pass == Pass::kTrain) p = UpdatedParams(r);
  }
  return r;
}

}  // namespace dlb::testing
