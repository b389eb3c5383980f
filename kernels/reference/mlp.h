// Naive float64 MLP training step, the yardstick the native MLP steps (kernels/onednn/mlp.h,
// kernels/cublas/mlp.h) are verified against, and what those ops hand back for comparison.
// The MLP is kernels/common/train.h's: layer l maps widths[l] -> widths[l+1], weight out x in
// row-major, ReLU after every layer but the last; the loss is the mean softmax cross-entropy over
// the batch; SGD with momentum as PyTorch's (buf = momentum * buf + grad, w -= lr * buf).
#pragma once

#include <string>
#include <vector>

#include "kernels/common/train.h"
#include "kernels/common/verdict.h"

namespace dlb {

// Momentum buffers per layer, in double. Empty vectors are PyTorch's "no buffer yet": the first
// step's buffer is then the gradient (momentum * 0 + grad).
struct MlpMomentum {
  std::vector<std::vector<double>> weight, bias;
};

// One step in float64. All vectors are double so that nothing of the reference is rounded; the
// parameters it starts from are the ops' f32 ones.
struct MlpStepResult {
  double loss = 0;                                          // mean cross-entropy (both passes)
  std::vector<double> logits;                               // batch x classes, row-major
  std::vector<std::vector<double>> grad_weight, grad_bias;  // train: layer l's dL/dW, dL/db
  std::vector<std::vector<double>> weight, bias;            // train: parameters after the update
};

// Forward, loss and, for Pass::kTrain, backward and the SGD-momentum update with shape.lr and
// shape.momentum. `momentum` is read and advanced when given (empty: zero buffers); null is a
// first step with fresh buffers. `batch.x` is batch x widths[0], labels in [0, widths.back()).
MlpStepResult ReferenceMlpStep(const TrainShape& shape, const MlpParams& params,
                               const MlpBatch& batch, MlpMomentum* momentum);

// The updated parameters of a step rounded to float: the next step's start, as an f32 op has it.
MlpParams UpdatedParams(const MlpStepResult& step);

// An op's state after a step, copied to the host (what the native steps' Snapshot() returns).
struct MlpSnapshot {
  double loss = 0;                                         // train: the step's loss
  std::vector<float> logits;                               // batch x classes (may be empty)
  std::vector<std::vector<float>> grad_weight, grad_bias;  // train: the step's gradients
  std::vector<std::vector<float>> weight, bias;            // the parameters now
};

// ||got - ref|| / ||ref|| over the vectors concatenated, accumulated in double; +inf when the
// sizes differ.
double RelL2(const std::vector<std::vector<float>>& got,
             const std::vector<std::vector<double>>& ref);
double RelL2(const std::vector<std::vector<float>>& got,
             const std::vector<std::vector<float>>& ref);

// Checks a step against the reference with one tolerance for every measure: Pass::kTrain compares
// the loss (relative error), all gradients and all updated parameters (relative L2 over each set
// concatenated), Pass::kInfer the logits (relative L2). The verdict's error is the worst of them,
// its detail names it; `what` ends the detail ("1000-512-256-2 at batch 64").
Verdict CompareMlpStep(const MlpSnapshot& got, const MlpStepResult& ref, Pass pass,
                       double tolerance, const std::string& what);

}  // namespace dlb
