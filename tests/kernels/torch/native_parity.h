// The native MLP step against LibTorch's: one step from the same seeded weights and batch, loss,
// gradients and updated weights compared directly (the two are also each checked against the
// float64 reference elsewhere). Shared by the CPU (oneDNN) and GPU (cuBLASLt) parity tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/train.h"
#include "kernels/reference/mlp.h"
#include "kernels/torch/step.h"
#include "tests/kernels/testing.h"

namespace dlb::testing {

// The suite's MLP at `batch`, as the training family has it (no image channels).
inline TrainShape SuiteMlp(int64_t batch, Pass pass = Pass::kTrain) {
  TrainShape s = MlpShape({1000, 512, 256, 2}, batch, pass);
  s.channels = 0;
  return s;
}

// A native step's snapshot in LibTorch's order: parameters() is weight, bias for each layer.
inline libtorch::StepResult AsTorchResult(const MlpSnapshot& got, const MlpParams& seeded,
                                          Pass pass) {
  libtorch::StepResult r;
  r.loss = got.loss;
  if (pass == Pass::kInfer) {
    r.logits = got.logits;
    return r;
  }
  for (size_t l = 0; l < got.weight.size(); ++l) {
    r.grads.insert(r.grads.end(), got.grad_weight[l].begin(), got.grad_weight[l].end());
    r.grads.insert(r.grads.end(), got.grad_bias[l].begin(), got.grad_bias[l].end());
    for (size_t i = 0; i < got.weight[l].size(); ++i)
      r.update.push_back(got.weight[l][i] - seeded.weight[l][i]);
    for (size_t i = 0; i < got.bias[l].size(); ++i)
      r.update.push_back(got.bias[l][i] - seeded.bias[l][i]);
  }
  return r;
}

// Both are f32 chains of dot products of at most 1000 terms that differ only in summation order
// (each sits within ~4e-7 of float64 at these batches), so they agree to ~1e-6; 1e-5 leaves a 10x
// margin, while a wrong layout, a missing ReLU mask or a different optimizer rule gives 1e-2..1.
// The update is lr * grad on a first step (the momentum buffer starts as the gradient), so it
// carries the gradients' tolerance.
constexpr double kNativeVsTorchTolerance = 1e-5;

// Runs `op` once from the seeded state and compares it with LibTorch's step on `where`.
template <class Op>
void ExpectNativeEqualsTorch(const TrainShape& s, const RunConfig& cfg, libtorch::Where where) {
  SCOPED_TRACE(std::string(Name(s.pass)) + " at batch " + std::to_string(s.batch));
  Op op(s, cfg);
  op.Run();
  const MlpParams seeded = SeededMlpParams(cfg.seed, s.widths);
  const libtorch::StepResult native = AsTorchResult(op.Snapshot(), seeded, s.pass);
  const libtorch::StepResult torch = libtorch::OneStep(s, cfg, where, /*f64=*/false);
  const bool train = s.pass == Pass::kTrain;
  if (train) {
    ASSERT_EQ(native.grads.size(), torch.grads.size());
    ASSERT_EQ(native.update.size(), torch.update.size());
  } else {
    ASSERT_EQ(native.logits.size(), torch.logits.size());
  }
  const Verdict v = libtorch::CompareSteps(native, torch, train,
                                           {kNativeVsTorchTolerance, kNativeVsTorchTolerance},
                                           "native vs libtorch");
  EXPECT_TRUE(v.ok) << v.detail << " | " << op.label();
  // The comparison must be able to fail: a step that moved nothing would pass vacuously.
  if (train) EXPECT_GT(libtorch::RelL2(native.update, std::vector<float>(native.update.size())), 0);
}

}  // namespace dlb::testing
