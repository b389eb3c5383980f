// GEMM on the CPU through the oneDNN matmul primitive, row-major as shapes.h defines it. Transposed
// operands are described by strides, so no copy or reorder runs; the output has the input's dtype
// (bf16 in, bf16 out, as PyTorch) and accumulates in f32. int8: s8 x s8 -> s32, exact int32
// accumulation, on CPUs with VNNI or AMX (context.h's HasInt8); fp8: unsupported on the CPU.
#pragma once

#include <dnnl.hpp>
#include <string>
#include <unordered_map>

#include "kernels/common/op.h"

namespace dlb::onednn {

class OneDnnMatmul {
 public:
  static constexpr bool kGpu = false;
  static constexpr const char* kBackend = "onednn";
  static Support Supports(const GemmShape& s, const RunConfig& cfg);
  OneDnnMatmul(const GemmShape& s, const RunConfig& cfg);
  void Run();
  HostTensor Output() const;
  Cost cost() const;
  std::string label() const { return label_; }

 private:
  GemmShape shape_;
  DType dtype_;
  dnnl::matmul matmul_;
  dnnl::memory a_, b_, c_, scratchpad_;
  std::unordered_map<int, dnnl::memory> args_;  // built once, in the constructor
  std::string label_;
};

}  // namespace dlb::onednn
