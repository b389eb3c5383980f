// GEMM on the GPU through cuBLAS (cublasGemmEx) and cuBLASLt (cublasLtMatmul), row-major as
// shapes.h defines it. cuBLAS is column-major, so both compute C^T = op(B)^T op(A)^T: a row-major
// matrix read column-major is its transpose, which needs no copy.
//   f32: CUBLAS_COMPUTE_32F (no TF32); tf32: f32 storage, CUBLAS_COMPUTE_32F_FAST_TF32;
//   f16/bf16: 16-bit in and out (as torch.matmul), f32 accumulation.
//   fp8 (e4m3 x e4m3) and fp8_e5m2 (A e5m2 x B e4m3; cuBLASLt has no e5m2 x e5m2): cuBLASLt only,
//     sm_89+, per-tensor scales (CUBLASLT_MATMUL_DESC_A/B_SCALE_POINTER, dtype.h's StorageScale),
//     CUBLAS_COMPUTE_32F, bf16 output, as torch._scaled_mm; full-precision accumulation by
//     default, as _scaled_mm's use_fast_accum=False (RunConfig::fast_accum; the label says which):
//     more accurate, and on the H100, where both run into the 700 W cap, no slower at 8192^3.
//   int8: int8 in, CUBLAS_COMPUTE_32I, int32 out (as torch._int_mm), on cuBLASLt and cublasGemmEx.
// The 8-bit tensor-core kernels read only the "TN" layout: column-major op(A) = T, op(B) = N, both
// operands contiguous along k. Row-major, that is C = A B^T with A stored m x k and B stored n x k
// (ta = 0, tb = 1: torch.nn.Linear's x W^T, the layout _scaled_mm demands of its operands). An
// 8-bit case whose row says otherwise (the square rows: tb = 0) keeps that layout for its
// operands: A and/or B are transposed once on the host when the op is built, off the clock, as an
// FP8 pipeline quantises into that layout; the label says so. The product is the row's C = op(A)
// op(B) either way, verified against the same reference. cuBLASLt's FP8 also needs k and n
// multiples of 16 (16-byte aligned leading dimensions); other sizes are unsupported.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <memory>
#include <string>

#include "kernels/common/op.h"
#include "kernels/cublas/lt_plan.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/handles.h"

namespace dlb::cublas {

struct HandleDeleter {
  void operator()(cublasHandle_t h) const noexcept;
};
using Handle = std::unique_ptr<cublasContext, HandleDeleter>;

// The workspace torch gives cuBLAS: 32 MiB on Hopper (sm_90), 4 MiB + 128 KiB elsewhere
// (CUBLAS_WORKSPACE_CONFIG default :4096:2:16:8), so both libraries may pick the same kernels.
size_t WorkspaceBytes();

// Operands, output and stream both GEMM ops share: seeded A and B, C poisoned with NaN (int32:
// dtype.h's kInt32Poison, which Output() reads as NaN).
class GemmBuffers {
 public:
  GemmBuffers(const GemmShape& s, const RunConfig& cfg);
  const GemmShape& shape() const { return shape_; }
  // The layout A and B are stored in: the shape's, or TN for the 8-bit types (see above).
  const GemmShape& stored() const { return stored_; }
  DType dtype() const { return dtype_; }
  const GemmTypes& types() const { return types_; }
  // Which operands were transposed at build to reach the stored layout ("" when none).
  std::string relaid() const;
  void Poison();
  cudaStream_t stream() const { return stream_.get(); }
  void* a() const { return a_.get(); }
  void* b() const { return b_.get(); }
  void* c() const { return c_.get(); }
  HostTensor Output() const;
  Cost cost() const;

 private:
  GemmShape shape_, stored_;
  DType dtype_;
  GemmTypes types_;
  cuda::Stream stream_;
  cuda::DeviceBuffer<unsigned char> a_, b_, c_;
};

// cublasGemmEx with CUBLAS_GEMM_DEFAULT: the path torch.matmul takes on CUDA by default.
class CublasGemm {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "cublas";
  static Support Supports(const GemmShape& s, const RunConfig& cfg);
  CublasGemm(const GemmShape& s, const RunConfig& cfg);
  void Run();
  HostTensor Output() const { return buffers_.Output(); }
  Cost cost() const { return buffers_.cost(); }
  std::string label() const;
  StreamRef stream() const { return buffers_.stream(); }

 private:
  GemmBuffers buffers_;
  Handle handle_;
  cuda::DeviceBuffer<unsigned char> workspace_;
};

// cublasLtMatmul with the algorithm cublasLtMatmulAlgoGetHeuristic ranks first (cfg.algo
// "heuristic"), or with cfg.algo "search" the fastest of the top heuristic results, each timed once
// in the constructor.
class CublasLtGemm {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "cublaslt";
  static Support Supports(const GemmShape& s, const RunConfig& cfg);
  // cfg.algo "search" times `candidates` of the heuristic's results (it may return fewer) and
  // keeps the fastest; the harness's cases time 8, the measured peak more (kernels/cublas/peak.h).
  CublasLtGemm(const GemmShape& s, const RunConfig& cfg, int candidates = 8);
  void Run();
  HostTensor Output() const { return buffers_.Output(); }
  Cost cost() const { return buffers_.cost(); }
  std::string label() const { return label_; }
  StreamRef stream() const { return buffers_.stream(); }

 private:
  GemmBuffers buffers_;
  LtHandle handle_;
  MatmulDesc desc_;
  Layout a_layout_, b_layout_, c_layout_;  // cuBLAS's A is our B and its B our A
  cuda::DeviceBuffer<unsigned char> workspace_;
  cuda::DeviceBuffer<float> scales_;  // fp8: cuBLAS's A scale (our B's), then B's (our A's)
  cublasLtMatmulAlgo_t algo_{};
  std::string label_;
};

}  // namespace dlb::cublas
