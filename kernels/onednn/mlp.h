// The native MLP training step on the CPU: oneDNN matmul primitives for the forward (bias and
// ReLU as post-ops) and for the backward's weight and data gradients; the softmax cross-entropy,
// the ReLU mask with the bias gradients, and PyTorch's SGD with momentum as OpenMP loops over the
// buffers oneDNN reads and writes. Parameters, gradients and momentum buffers each live in one
// flat array (layer by layer: weight out x in row-major, then bias), so the update is one loop.
#pragma once

#include <cstdlib>
#include <dnnl.hpp>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/train.h"
#include "kernels/common/verdict.h"
#include "kernels/reference/mlp.h"

namespace dlb::onednn {

class NativeMlpStep {
 public:
  static constexpr bool kGpu = false;
  static constexpr const char* kBackend = "native";
  static Support Supports(const TrainShape& s, const RunConfig& cfg);
  NativeMlpStep(const TrainShape& s, const RunConfig& cfg);
  // One step (Pass::kTrain) or one forward (Pass::kInfer); returns when it is done.
  void Run();
  // One step from the seeded state against ReferenceMlpStep; leaves the seeded state behind.
  Verdict Verify();
  // Times forward+loss, backward and the update apart over a few steps (medians) for Counters();
  // leaves the seeded state behind.
  void MeasurePhases();
  std::vector<std::pair<std::string, double>> Counters() const;
  Cost cost() const;
  std::string label() const { return label_; }
  // The state after the last Run(): loss, logits, gradients (train) and parameters.
  MlpSnapshot Snapshot() const;
  // The seeded parameters back, momentum buffers at zero (PyTorch's "no buffer yet").
  void Restore();

 private:
  struct Free {
    void operator()(float* p) const noexcept { std::free(p); }
  };
  using Floats = std::unique_ptr<float[], Free>;
  Floats Allocate(size_t count);

  struct Layer {
    int64_t in = 0, out = 0;
    size_t w = 0, b = 0;             // offsets of the weight and bias in the flat arrays
    dnnl::matmul fwd, wgrad, dgrad;  // dgrad: not built for layer 0 (no input gradient)
    std::unordered_map<int, dnnl::memory> fwd_args, wgrad_args, dgrad_args;
  };

  void Forward();
  void Loss();
  void Backward();
  void Optimize();

  TrainShape shape_;
  uint64_t seed_;
  MlpParams seeded_;
  std::vector<int64_t> labels_;
  size_t flat_ = 0;  // floats in each flat array, padding included
  double allocated_bytes_ = 0;
  Floats params_, grads_, momentum_, x_, scratch_;
  std::vector<Floats> act_;  // act_[l]: layer l's output, batch x out (the last: the logits)
  std::vector<Floats> dz_;   // dz_[l]: dLoss/d(layer l's pre-activation), batch x out
  std::vector<double> row_loss_;
  double loss_ = 0;
  std::vector<Layer> layers_;
  std::string label_;
  StepPhases phases_;
};

}  // namespace dlb::onednn
