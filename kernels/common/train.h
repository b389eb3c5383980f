// Training steps: the case a step op is built for, and the seeded MLP state that the native MLP
// steps (kernels/onednn/mlp.h, kernels/cublas/mlp.h), LibTorch's MLP (kernels/torch/) and the
// float64 reference (kernels/reference/mlp.h) all start from, so that their losses, gradients and
// updated weights can be compared number for number.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/op.h"

namespace dlb {

enum class Pass { kTrain, kInfer };
inline const char* Name(Pass p) { return p == Pass::kTrain ? "train" : "infer"; }

// One training-step case. A step is forward, mean softmax cross-entropy, backward and SGD with
// momentum (PyTorch's: buf = momentum * buf + grad, w -= lr * buf; buf starts at zero, so the
// first step's buf is the gradient); pass kInfer is the forward alone. A transformer (seq > 0)
// takes `seq` token ids a sample, its cross-entropy is over every position's `classes`-token
// vocabulary, and its optimizer is AdamW (kernels/torch/transformer.h).
struct TrainShape {
  std::string model;  // "mlp", "resnet18_cifar", "catdog64", ...
  int64_t batch = 0;
  int64_t channels = 3;         // image models: input channels
  int64_t image = 0;            // image models: input height = width; 0 for the MLP
  int64_t classes = 0;          // logits per sample
  std::vector<int64_t> widths;  // MLP: the layer widths, input first ({1000, 512, 256, 2})
  int64_t seq = 0;              // transformers: tokens a sample; 0 for every other model
  Pass pass = Pass::kTrain;
  bool graph = false;  // GPU: the whole step captured in a CUDA graph, one replay a Run()
  bool amp = false;    // autocast to bf16 (dt:amp_bf16), no loss scaling
  double lr = 0.01;
  double momentum = 0.9;
};

// The MLP's parameters: layer l maps widths[l] -> widths[l+1]; weight[l] is out x in, row-major
// (torch.nn.Linear's layout), bias[l] has `out` values. ReLU after every layer but the last.
struct MlpParams {
  std::vector<std::vector<float>> weight, bias;
};

// PyTorch's default Linear init in distribution (uniform in +-1/sqrt(in)), from the seeded stream:
// weight l = TensorSeed(seed, 10 + 2l), bias l = TensorSeed(seed, 11 + 2l).
MlpParams SeededMlpParams(uint64_t seed, const std::vector<int64_t>& widths);

// A seeded batch: x is batch x widths[0] in [-1, 1) (TensorSeed(seed, 0)), labels in
// [0, classes) (TensorSeed(seed, 1)).
struct MlpBatch {
  std::vector<float> x;
  std::vector<int64_t> labels;
};
MlpBatch SeededMlpBatch(uint64_t seed, int64_t batch, int64_t features, int64_t classes);

// Seeded class labels in [0, classes) for any model's batch (the stream of TensorSeed(seed, 1)).
std::vector<int64_t> SeededLabels(uint64_t seed, int64_t batch, int64_t classes);

// "1000-512-256-2": the MLP's widths as labels and messages write them.
std::string WidthsText(const std::vector<int64_t>& widths);

// Floating-point operations of one MLP step over `batch` samples: 2 * batch * sum(in * out) for
// the forward; a training step adds the data and weight gradients (3x in all).
double MlpStepFlops(const std::vector<int64_t>& widths, int64_t batch, Pass pass);
// The compulsory bytes of one training step (docs/families/train.md): the parameters (in their
// stored dtype) read by the forward, and when training read again by the backward, their
// gradients written, and the optimizer's reads and writes (SGD with momentum: w, grad and buf
// read, w and buf written; AdamW: w, grad, m and v read, w, m and v written): 8 passes over the
// parameters (AdamW 10), 1 for inference; plus the batch (inputs and labels) read once.
// Activations are not counted: what of them reaches memory depends on fusion and caches, not on
// the model.
double StepBytes(double param_bytes, double batch_bytes, Pass pass, bool adamw);
// What one step of an MLP case costs: its flops, StepBytes over its f32 weights and biases and
// its f32 inputs and int64 labels, and `batch` items.
Cost MlpStepCost(const TrainShape& shape);

// ||got - ref||^2 and ||ref||^2 of one pair of vectors, added to *err2 and *ref2 (double
// accumulation); false when the sizes differ. RelL2From turns the sums into ||got - ref|| / ||ref||
// (0 for two zero vectors, +inf for a nonzero error against a zero reference).
template <class G, class R>
bool AddL2(const std::vector<G>& got, const std::vector<R>& ref, double* err2, double* ref2) {
  if (got.size() != ref.size()) return false;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = double(got[i]) - double(ref[i]);
    *err2 += d * d;
    *ref2 += double(ref[i]) * double(ref[i]);
  }
  return true;
}
double RelL2From(double err2, double ref2);

// A step's forward (with the loss), backward and optimizer seconds, each the median of the
// samples a step op's MeasurePhases() took outside the timed loop.
struct StepPhases {
  bool measured = false;
  double fwd_s = 0, bwd_s = 0, opt_s = 0;

  // Medians of each list; bwd and opt may be empty (pass kInfer), fwd may not.
  static StepPhases FromSamples(std::vector<double> fwd, std::vector<double> bwd,
                                std::vector<double> opt);
  // fixtures/schema/schema.h's kFwdS, and kBwdS and kOptS for pass kTrain; nothing until measured.
  std::vector<std::pair<std::string, double>> Counters(Pass pass) const;
  // The same with fixtures/schema/schema.h's kPeakMemBytes after them.
  std::vector<std::pair<std::string, double>> Counters(Pass pass, double peak_mem_bytes) const;
};

}  // namespace dlb
