// LibTorch's own step of the inference family's decoder (kernels/common/infer.h), the framework
// reference beside the suite's native steps: the model in plain LibTorch ops as a user writes it
// after gpt-fast (kernels/torch/infer_model.h), on the same seeded weights, cache and tokens, so
// the family's verifier checks it against the same float64 step.
//   CPU: f32, and bf16 where the CPU has bf16 arithmetic (avx512_bf16 or amx_bf16), eager.
//   GPU: bf16, the weights and the cache seeded on the device, the whole step captured in one CUDA
//        graph (at::cuda::CUDAGraph) after a warm-up on a side stream; Run() replays it.
// And the check of the large models' GPU rows: an eager f32 step of the same model on the GPU
// (EagerF32LogitsGpu). No LibTorch header here, so that the family's code compiles without it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/infer.h"
#include "kernels/common/op.h"

namespace dlb::libtorch {

struct InferModel;  // kernels/torch/infer_model.h

class TorchInferCpu {
 public:
  static constexpr bool kGpu = false;
  static constexpr const char* kBackend = "torch";
  // No for an invalid shape, weights other than f32 and bf16, bf16 without bf16 arithmetic.
  static Support Supports(const InferShape& s, const RunConfig& cfg);
  TorchInferCpu(const InferShape& s, const RunConfig& cfg);
  ~TorchInferCpu();
  // One eager step; LibTorch allocates its intermediates as a user's step does.
  void Run();
  HostTensor Output() const;
  Cost cost() const;
  std::string label() const;
  const InferShape& shape() const { return shape_; }
  // Bytes of the KV cache one step reads and writes (part of cost().bytes).
  double KvBytes() const;

 private:
  InferShape shape_;
  DType dt_;
  std::unique_ptr<InferModel> model_;
};

#ifdef DLBENCH_HAVE_TORCH_CUDA
class TorchInferGpu {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "torch";
  // No for an invalid shape or weights other than bf16.
  static Support Supports(const InferShape& s, const RunConfig& cfg);
  // Seeds the weights, cache and tokens on the device, warms the step up on a side stream and
  // captures it; the logits are poisoned after.
  TorchInferGpu(const InferShape& s, const RunConfig& cfg);
  ~TorchInferGpu();  // gives the caching allocator's memory back for the next case
  void Run();
  HostTensor Output() const;
  Cost cost() const;
  std::string label() const;
  const InferShape& shape() const { return shape_; }
  double KvBytes() const;
  StreamRef stream() const;

 private:
  struct Gpu;  // stream, graph (infer_cuda.cpp)
  void Build(const InferShape& s, const RunConfig& cfg);
  InferShape shape_;
  std::unique_ptr<InferModel> model_;
  std::unique_ptr<Gpu> g_;
};

// The logits (batch x vocab) of one eager f32 step of `s` on the GPU from the seeded state of a
// case in cfg.dtype (bf16 or fp8 e4m3 matrices, the embedding, norms and cache bf16, as the GPU
// steps hold them), widened to f32 and computed in f32 (TF32 off): the yardstick of the models
// too large for the float64 step. Everything it allocated is given back before it returns.
// nullopt with *why when it cannot run here (no device LibTorch sees, too little free memory,
// an fp8 case on a LibTorch without float8).
std::optional<std::vector<float>> EagerF32LogitsGpu(const InferShape& s, const RunConfig& cfg,
                                                    std::string* why);
// The device memory EagerF32LogitsGpu needs for `s`, in bytes.
double EagerF32Bytes(const InferShape& s);
#endif

}  // namespace dlb::libtorch
