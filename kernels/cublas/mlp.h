// The native MLP training step on the GPU: cuBLASLt matmuls whose epilogues carry the bias, the
// ReLU and its mask (forward RELU_AUX_BIAS, BIAS for the last layer), the ReLU's backward and the
// bias gradients (DRELU_BGRAD on the data-gradient GEMMs, BGRADB on the last layer's
// weight-gradient GEMM), and small kernels of its own (kernels/cuda/train_kernels.h) for the
// softmax cross-entropy and one fused SGD-momentum update over a flat parameter buffer. Where
// cuBLASLt has no algorithm for an epilogue here, the plain GEMM runs and a kernel does the rest;
// the label says which. With TrainShape::graph the whole step (the forward for Pass::kInfer) is
// captured once in a CUDA graph on the op's stream, and Run() is one cudaGraphLaunch.
//   f32: CUBLAS_COMPUTE_32F; tf32: f32 storage, CUBLAS_COMPUTE_32F_FAST_TF32.
// Row-major as the rest of the suite: cuBLASLt, column-major, sees every matrix transposed.
#pragma once

#include <cublasLt.h>

#include <string>
#include <utility>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/train.h"
#include "kernels/common/verdict.h"
#include "kernels/cublas/gemm.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/handles.h"
#include "kernels/reference/mlp.h"

namespace dlb::cublas {

class NativeMlpStep {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "native";
  static Support Supports(const TrainShape& s, const RunConfig& cfg);
  // Allocates everything, picks the algorithms, runs one warm-up step and captures the graph;
  // leaves the seeded state behind.
  NativeMlpStep(const TrainShape& s, const RunConfig& cfg);
  // One step (or forward): with a graph, one replay.
  void Run();
  // One eager step from the seeded state against ReferenceMlpStep; with a graph, also that a
  // replay equals the eager step and that a second replay updates again. Leaves the seeded state.
  Verdict Verify();
  // Times forward+loss, backward and the update apart with CUDA events over a few eager steps
  // (medians) for Counters(); leaves the seeded state behind.
  void MeasurePhases();
  std::vector<std::pair<std::string, double>> Counters() const;
  Cost cost() const;
  std::string label() const { return label_; }
  StreamRef stream() const { return stream_.get(); }
  // The state after the last Run() (synchronizes): loss, logits, gradients (train), parameters.
  MlpSnapshot Snapshot() const;
  // The seeded parameters back, momentum buffers at zero (synchronizes).
  void Restore();

 private:
  // One cublasLtMatmul with its operands fixed at construction.
  struct Gemm {
    MatmulDesc desc;
    Layout a, b, c;
    cublasLtMatmulAlgo_t algo{};
    const float *a_ptr = nullptr, *b_ptr = nullptr;
    float* c_ptr = nullptr;
  };
  struct GemmSpec;
  bool Plan(const GemmSpec& spec, Gemm* gemm);
  void Launch(const Gemm& gemm);

  struct Layer {
    int64_t in = 0, out = 0;
    size_t w = 0, b = 0;  // offsets of the weight and bias in the flat arrays
    Gemm fwd, wgrad, dgrad;
    bool aux = false;     // fwd wrote the ReLU bit-mask (RELU_AUX_BIAS)
    bool bgradb = false;  // wgrad wrote the bias gradient (BGRADB, last layer)
    bool drelu = false;   // dgrad applied the previous layer's ReLU backward and its bias
                          // gradient (DRELU_BGRAD)
  };

  // The construction's phases: the buffers (seeded parameters, batch, activations, masks,
  // workspace); the algorithms of the forward GEMMs and of the backward ones (each list names the
  // epilogues planned, `kernels` what a kernel of its own does instead); one eager step and, with
  // a graph, its capture; the label.
  void Allocate();
  void PlanForward(std::vector<std::string>* fwd_names);
  void PlanBackward(std::vector<std::string>* bwd_names, std::vector<std::string>* kernels);
  void WarmUpAndCapture();
  std::string Label(const std::vector<std::string>& fwd_names,
                    const std::vector<std::string>& bwd_names,
                    const std::vector<std::string>& kernels) const;

  void Forward();
  void Loss();
  void Backward();
  void Optimize();
  void EagerStep();

  TrainShape shape_;
  DType dtype_;
  uint64_t seed_;
  MlpParams seeded_;
  cuda::Stream stream_;
  LtHandle handle_;
  size_t flat_ = 0;  // floats in each flat array, padding included
  double allocated_bytes_ = 0;
  cuda::DeviceBuffer<float> params_, grads_, momentum_, seeded_params_, x_, loss_;
  cuda::DeviceBuffer<int32_t> labels_;
  std::vector<cuda::DeviceBuffer<float>> act_;  // layer l's output, batch x out (last: logits)
  std::vector<cuda::DeviceBuffer<float>> dz_;   // dLoss/d(layer l's pre-activation)
  std::vector<cuda::DeviceBuffer<unsigned char>> mask_;  // ReLU bit-masks of the hidden layers
  std::vector<int64_t> mask_ld_;
  cuda::DeviceBuffer<unsigned char> workspace_;
  std::vector<Layer> layers_;
  cuda::GraphExec exec_;
  cuda::Event phase_[4];
  std::string label_;
  StepPhases phases_;
};

}  // namespace dlb::cublas
