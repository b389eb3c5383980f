// One step of a Llama-style decoder (kernels/common/infer.h) on the GPU: prefill of B prompts or
// decode of one token for B sequences over a KV cache, the projections, MLP and LM head cuBLASLt
// GEMMs, prefill's attention cuDNN's fused SDPA, the rest small CUDA kernels of the suite's own
// (kernels/cuda/infer_kernels.h), the whole step captured once in a CUDA graph (after one eager
// step) that Run() launches.
//   weights: bf16 or fp8 e4m3, seeded on the device (the values the reference rounds to the
//            dtype): q, k and v in one matrix, gate and up in another (their rows interleaved, a
//            unit's gate and up side by side), so a step is 4 GEMMs a layer
//            and reads every weight once; each GEMM is the TN weight-streaming y = x W^T (M = the
//            step's tokens: the batch at decode) with f32 accumulation; the fused qkv and gate/up
//            write bf16 (what the rotary append and SwiGLU alone read: half the bytes of f32
//            written and read back, as PyTorch's bf16 Linear writes), the o and down projections
//            add into the f32 residual (beta 1). bf16: bf16 x bf16. fp8:
//            cuBLASLt's fp8 GEMMs take fp8 on both sides, so each GEMM's input is quantised to
//            e4m3 on the device first, with a per-tensor scale from its absolute maximum of this
//            step (amax / 448, an absmax reduction kernel, no calibration); the weights are e4m3
//            with a per-tensor scale (a power of two: the seeded storage scale times the matrix's
//            weight scale), both scales passed to cuBLASLt as its A and B scales;
//   activations: the residual stream f32, what a GEMM reads bf16 (RMSNorm, SwiGLU and attention
//            write it; fp8 quantises that), the fused projections' outputs bf16 (f32 from the
//            one-token weight-streaming products, which fuse SwiGLU into theirs);
//   KV cache: bf16 in both dtypes, appended in place (decode: position ctx, capacity ctx + 1, so
//            every step is the same step; prefill: 0..P-1); contiguous, B x kv_heads x capacity x
//            head_dim per layer for K and V, or (NativePagedInfer) paged: pages of kPage positions
//            from one pool a layer, each sequence's pages a shuffled set of the pool's, as an
//            allocator leaves them once sequences have come and gone;
//   attention: decode, the faster of two, timed over every layer's cache in a CUDA graph when
//            the op is built (the label gives both times): a split-key CUDA kernel
//            (flash-decoding) whose block takes all the query heads of one kv head, reading each
//            cached K and V row once for them, and cuDNN's fused SDPA forward of the one query
//            over the cache's positions (grouped-query, no statistics: PyTorch's cuDNN decode);
//            prefill, cuDNN's fused SDPA forward (causal, grouped-query, kernels/cudnn/sdpa.h) over
//            the step's q rows and the cache; the kernel alone where cuDNN has no engine for the
//            shape (the label says why).
// Output(): the logits of each sequence's last token, B x vocab, f32.
#pragma once

#include <cublasLt.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/infer.h"
#include "kernels/common/op.h"
#include "kernels/cublas/gemm.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/infer_kernels.h"
#include "kernels/cudnn/sdpa.h"

namespace dlb::cublas {

class NativeInfer {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "native";
  // Decode's attention: the fastest when built, or one of them (tests compare each with the
  // float64 step; kCudnn falls back to the kernel, saying why, where cuDNN has no engine; kFused,
  // the rotary append and attention in one launch (kernels/cuda/infer_kernels.h's RopeAttention),
  // the same where the GPU or the step does not take it).
  enum class DecodeAttention { kFastest, kKernel, kCudnn, kFused };
  // The weight-streaming products' layouts: each the fastest when built, or each its format's
  // default. Layouts that split a row over warps sum it in another order, so two steps agree bit
  // for bit only at the same layouts (a test of the paged cache against the contiguous one takes
  // the defaults).
  enum class ProductLayouts { kFastest, kDefault };
  // No for an invalid shape, weights other than bf16 and fp8, a head_dim the attention kernel
  // does not take, no CUDA device, fp8 without FP8 tensor cores or sizes off its alignment.
  static Support Supports(const InferShape& s, const RunConfig& cfg);
  // Seeds the weights, cache and tokens on the device, plans the GEMMs and prefill's attention,
  // runs one eager step and captures the step in a CUDA graph; the logits are poisoned after.
  NativeInfer(const InferShape& s, const RunConfig& cfg)
      : NativeInfer(s, cfg, false, DecodeAttention::kFastest) {}
  NativeInfer(const InferShape& s, const RunConfig& cfg, DecodeAttention attention,
              ProductLayouts layouts = ProductLayouts::kFastest)
      : NativeInfer(s, cfg, false, attention, layouts) {}
  void Run();
  HostTensor Output() const;
  Cost cost() const;
  std::string label() const { return label_; }
  const InferShape& shape() const { return shape_; }
  // Bytes of the KV cache one step reads and writes (part of cost().bytes).
  double KvBytes() const;
  StreamRef stream() const { return stream_.get(); }

 protected:
  NativeInfer(const InferShape& s, const RunConfig& cfg, bool paged, DecodeAttention attention,
              ProductLayouts layouts = ProductLayouts::kFastest);

 private:
  // One planned GEMM y (rows x out, f32) = x (rows x in) W^T (W out x in), bf16 or e4m3 operands;
  // fp8: `slot` indexes its A (weight) and B (activation) scales and its input's absolute maximum.
  struct Gemm {
    MatmulDesc desc;
    Layout a, b, c;
    cublasLtMatmulAlgo_t algo{};
    int64_t rows = 0, in = 0, out = 0;
    int slot = 0;
    // One token a step: the weight-streaming kernels (kernels/cuda/gemv.h), which stream the
    // smaller matrices faster than cuBLASLt's tiles and the larger as fast; fp8 weights there
    // meet bf16 activations (weight-only fp8), times w_scale.
    bool gemv = false;
    float w_scale = 1.0f;
    int layout = 0;  // the weight-streaming product's (kernels/cuda/gemv.h's kGemvLayouts)
    // cuBLASLt writes y in bf16 (qkv and gate/up, which only the rotary append and SwiGLU read:
    // half the bytes of f32 written and read back, as PyTorch's bf16 Linear writes); f32
    // otherwise.
    bool bf16_out = false;
    size_t OutBytes() const { return bf16_out ? 2 : 4; }  // a y element's
  };
  Gemm Plan(int64_t rows, int64_t in, int64_t out, int slot, bool bf16_out = false);
  // y (+)= x W^T; fp8 quantises x (bf16, rows x in) first. y is f32, or bf16 where g.bf16_out. A
  // fusion only with g.gemv.
  void Launch(const Gemm& g, const uint8_t* w, const uint16_t* x, void* y, bool accumulate,
              const cuda::GemvFusion& fusion = {});
  void Step();
  // One token a step: the norms folded into the products, SwiGLU into gate/up's
  // (kernels/cuda/gemv.h's GemvFusion): a layer is four products, the rotary append and the
  // attention.
  void FusedStep();
  // The weight-streaming products' format.
  cuda::GemvWeights Weights() const {
    return fp8_ ? cuda::GemvWeights::kFp8E4m3 : cuda::GemvWeights::kBf16;
  }
  // Product `slot` (0 qkv, 1 o, 2 gate/up, 3 down, 4 the LM head) of layer l with FusedStep's
  // fusion, at its Gemm's layout.
  void FusedProduct(int slot, size_t l);
  void SeedWeights(uint64_t seed);
  void Capture();
  // Layer l's attention, the kernel's or (sdpa_ set) cuDNN's.
  void Attention(size_t l);
  // Layer l's rotary append and attention: RopeAppend then Attention(l), or (rope_attn_) the
  // fused kernel's one launch.
  void RopeAndAttention(size_t l);
  // "" where the fused rotary append and attention takes the step, else why not.
  std::string WhyNotFused() const;
  // The GEMMs cuBLASLt runs (not the weight-streaming ones): each one's algorithm the fastest of
  // the heuristic's first kGemmCandidates, timed over every layer's weights. The label's words.
  std::string TuneGemms();
  // One token a step: each weight-streaming product's layout (kernels/cuda/gemv.h's
  // kGemvLayouts) the fastest, each timed over every layer's weights in a CUDA graph. The label's
  // words.
  std::string TuneGemv(ProductLayouts layouts);
  // After TuneGemv and the attention's plan, product by product: its kGemvStepCandidates fastest
  // layouts in TuneGemv's timing, and with e4m3 weights the fastest of each arithmetic (f16 pairs,
  // weights widened), each timed in the whole step, the fastest kept. A product's blocks start
  // beside the kernel before it, whose shared memory and registers a product timed alone does
  // not meet. The label's words.
  std::string TuneGemvInStep();
  // After the attention's plan: TuneGemvInStep (with kFastest layouts), and where the fused
  // attention runs, twice: once at the driver's shared-memory split and once with every
  // product's and the attention's launch asking for the smallest split that holds an attention
  // block (cuda::RopeAttentionCarveout), each from TuneGemv's layouts; the two steps timed in
  // interleaved rounds, the faster split and its layouts kept. The label's words.
  std::string ChooseCarveout(ProductLayouts layouts);
  static constexpr int kGemvStepCandidates = 3;
  static constexpr int kGemmCandidates = 8;
  static constexpr int kGemms = 5;  // qkv, o, gate/up, down, LM head
  std::array<Gemm*, kGemms> Gemms() { return {&g_qkv_, &g_o_, &g_13_, &g_2_, &g_lm_}; }
  // The products' layouts (Gemms()' order), and setting them back.
  std::array<int, kGemms> Layouts();
  void SetLayouts(const std::array<int, kGemms>& layouts);
  // TuneGemv's milliseconds a pass of each product at each layout (1e300 where not timed).
  std::array<std::vector<double>, kGemms> gemv_pass_ms_;
  // Plans sdpa_ over q_, each layer's cache and attn_out_: "" or why cuDNN has no engine.
  // With `candidates`, sdpa_ keeps every usable engine configuration (SdpaForward::Choose).
  std::string PlanSdpa(const AttnShape& as, bool stats, bool candidates = false);
  // The attention's plan (prefill: cuDNN's fused SDPA where it has an engine; decode:
  // PlanDecodeAttention; a paged cache: the kernel) and the label's words on it
  // (infer_plan.cpp, as the other plans).
  std::string PlanAttention(bool paged, DecodeAttention choice);
  // Decode: plans cuDNN's SDPA over the cache (sdpa_) where it has an engine and `attention`
  // allows it, or the fused kernel; kFastest times them and the kernel, each after its layer's
  // qkv product with the rotary append, over every layer's weights and cache, and keeps the
  // fastest. Returns the label's words on the attention.
  std::string PlanDecodeAttention(DecodeAttention attention);

  struct Layer {
    cuda::DeviceBuffer<uint8_t> wqkv, wo, w13, w2;  // bf16 or e4m3 storage
    cuda::DeviceBuffer<float> attn_norm, ffn_norm;
  };

  InferShape shape_;
  bool fp8_ = false;
  bool fused_ = false;  // FusedStep: every product a weight-streaming one
  int64_t rows_ = 0;
  int64_t layer_kv_ = 0;  // elements of one layer's K (or V) cache, pool or contiguous
  cuda::DeviceBuffer<int32_t> page_table_;
  cuda::InferAttnDims attn_;
  cuda::AttnSplit split_;
  cuda::AttnSplit rope_split_;  // the fused kernel's (rope_attn_)
  bool rope_attn_ = false;      // RopeAndAttention runs the fused kernel
  // The shared-memory carveout (percent) the weight-streaming products and the fused attention
  // ask for; -1 the driver's (ChooseCarveout).
  int carveout_ = -1;
  cuda::Stream stream_;
  LtHandle handle_;
  cuda::DeviceBuffer<unsigned char> workspace_;
  Gemm g_qkv_, g_o_, g_13_, g_2_, g_lm_;
  std::vector<Layer> layers_;
  cuda::DeviceBuffer<uint8_t> lm_head_;
  cuda::DeviceBuffer<uint16_t> embed_, cache_;  // cache: layers x (K, V) x B x kv_heads x capacity
                                                // x head_dim
  cuda::DeviceBuffer<float> final_norm_, cos_, sin_;
  // fp8: each GEMM's A and B scales, 256 bytes apart (cuBLASLt turns down scale pointers that are
  // only 4-byte aligned); the activations' absolute maxima; the quantised GEMM input.
  cuda::DeviceBuffer<float> scales_;
  cuda::DeviceBuffer<uint32_t> amax_;
  cuda::DeviceBuffer<uint8_t> x8_;
  // The attention where cuDNN's SDPA runs it (prefill where it has an engine, decode where it
  // was chosen): one bound set of tensors a layer.
  std::unique_ptr<cudnn::SdpaForward> sdpa_;
  bool attn_sdpa_ = false;  // Attention() runs sdpa_
  cuda::DeviceBuffer<int32_t> tokens_;
  cuda::DeviceBuffer<float> x_, partial_, logits_;
  // qkv and gate/up: f32, or bf16 where the GEMM's bf16_out
  cuda::DeviceBuffer<uint8_t> qkv_, gu_;
  cuda::DeviceBuffer<float> ss_;  // FusedStep: the norms' sums of squares, two sets in turn
  cuda::DeviceBuffer<uint16_t> h_, q_, attn_out_, act_, last_;
  cuda::GraphExec exec_;
  std::string label_;
};

// The same step over a paged KV cache (decode; its attention kernel reads each tile's page from
// the page table; prefill's attention is that kernel too, not cuDNN's SDPA).
class NativePagedInfer : public NativeInfer {
 public:
  static constexpr const char* kBackend = "native_paged";
  // Positions a page: two of the attention kernel's 32-key tiles (vLLM's default is 16,
  // TensorRT-LLM's 64).
  static constexpr int64_t kPage = 64;
  static Support Supports(const InferShape& s, const RunConfig& cfg) {
    return NativeInfer::Supports(s, cfg);
  }
  NativePagedInfer(const InferShape& s, const RunConfig& cfg,
                   ProductLayouts layouts = ProductLayouts::kFastest)
      : NativeInfer(s, cfg, true, DecodeAttention::kKernel, layouts) {}
};

}  // namespace dlb::cublas
