#include "kernels/cublas/infer.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "kernels/common/fill.h"
#include "kernels/cublas/check.h"
#include "kernels/cublas/lt_plan.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/gemv.h"

namespace dlb::cublas {

namespace {

// A seeded matrix of kernels/common/infer.h (rows x cols at dst), seeded on the device: bf16, then
// scaled by its power of two, which bf16 holds exactly; fp8, the seeded e4m3 storage
// (kernels/common/fill.h's SeedStorage, bit for bit), whose logical value is that times
// StorageScale(fp8) times the matrix's weight scale (GemmAScale).
// `row_stride` elements apart rows place a matrix's rows among another's (the interleaved gate
// and up); such a pair is scaled by its caller once both are seeded.
void SeedMatrix(uint8_t* dst, DType dt, uint64_t seed, int index, int64_t rows, int64_t cols,
                StreamRef stream, int64_t row_stride = 0) {
  const int64_t ld = row_stride == 0 ? cols : row_stride;
  cuda::SeedDevice(dst, {1, 1, rows, cols}, {rows * ld, rows * ld, ld, 1}, TensorSeed(seed, index),
                   dt, stream);
  if (dt == DType::kFP8E4M3 || row_stride != 0) return;
  cuda::ScaleBf16(reinterpret_cast<uint16_t*>(dst), size_t(rows * cols), WeightScale(cols), stream);
}

// fp8: what cuBLASLt multiplies a weight matrix of `in` inputs by (its A scale).
float GemmAScale(int64_t in) { return float(StorageScale(DType::kFP8E4M3)) * WeightScale(in); }

// fp8 scales: each GEMM's A and B scales in their own 256-byte slots.
constexpr int64_t kScaleApart = 64;  // floats

int DeviceCc() {
  int dev = 0, major = 0, minor = 0;
  DLB_CHECK(cudaGetDevice(&dev));
  DLB_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  DLB_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  return major * 10 + minor;
}

template <class T>
void Upload(T* dst, const std::vector<T>& src, StreamRef stream) {
  DLB_CHECK(
      cudaMemcpyAsync(dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
}

}  // namespace

Support NativeInfer::Supports(const InferShape& s, const RunConfig& cfg) {
  if (!s.Valid()) return Support::No(kInvalidInferShape);
  const bool fp8 = cfg.dtype == DType::kFP8E4M3;
  if (cfg.dtype != DType::kBF16 && !fp8)
    return Support::No("the GPU step runs bf16 or fp8 (e4m3) weights; " +
                       std::string(Name(cfg.dtype)) + " weights are not offered");
  if (!cuda::InferHeadDimOk(s.model.head_dim))
    return Support::No("the attention kernel takes a head_dim of 16, 32, 64, 128 or 256");
  if (s.batch * s.NewTokens() * s.model.heads > INT32_MAX)
    return Support::No("batch x tokens x heads above 2^31 - 1 (the attention kernel's grid)");
  const LlamaConfig& m = s.model;
  if (fp8 && (m.dim % 16 != 0 || m.QDim() % 16 != 0 || m.KvDim() % 16 != 0 || m.ffn % 16 != 0 ||
              m.vocab % 16 != 0))
    return Support::No(
        "fp8 needs dim, heads x head_dim, kv_heads x head_dim, ffn and vocab multiples of 16 "
        "(cuBLASLt's FP8 alignment)");
  if (cuda::DeviceCount() == 0) return Support::No(cuda::NoDeviceReason());
  if (fp8 && DeviceCc() < 89)
    return Support::No("fp8 needs FP8 tensor cores: compute capability 8.9+");
  return Support::Yes();
}

NativeInfer::NativeInfer(const InferShape& s, const RunConfig& cfg, bool paged,
                         DecodeAttention attention_choice, ProductLayouts layouts)
    : shape_(s) {
  RequireSupported(Supports(s, cfg));
  fp8_ = cfg.dtype == DType::kFP8E4M3;
  const LlamaConfig& m = s.model;
  const int64_t B = s.batch, n = s.NewTokens(), T = B * n, d = m.dim, G = m.kv_heads,
                D = m.head_dim, F = m.ffn, V = m.vocab, cap = s.CacheLen(), QD = m.QDim(),
                KVD = m.KvDim(), QKV = QD + 2 * KVD;
  rows_ = T;
  attn_ = {B, n, s.FirstPos(), m.heads, G, D, cap};

  stream_ = cuda::MakeStream();
  cublasLtHandle_t raw_handle = nullptr;
  DLB_CHECK(cublasLtCreate(&raw_handle));
  handle_.reset(raw_handle);
  workspace_ = cuda::DeviceBuffer<unsigned char>(WorkspaceBytes());
  StreamRef st = stream_.get();
  if (fp8_) {
    // The weights' scales are fixed; the activations' are written by each step's quantisation.
    std::vector<float> scales(size_t(2 * kGemms * kScaleApart), 1.0f);
    const int64_t ins[kGemms] = {d, QD, d, F, d};
    for (int g = 0; g < kGemms; ++g) scales[size_t(2 * g * kScaleApart)] = GemmAScale(ins[g]);
    scales_ = cuda::DeviceBuffer<float>(scales.size());
    Upload(scales_.get(), scales, st);
    cuda::Sync(st);  // the host vector goes
    amax_ = cuda::DeviceBuffer<uint32_t>(size_t(kGemms));
    x8_ = cuda::DeviceBuffer<uint8_t>(size_t(T * std::max({d, QD, F})));
  }
  g_qkv_ = Plan(T, d, QKV, 0, true);
  g_o_ = Plan(T, QD, d, 1);
  g_13_ = Plan(T, d, 2 * F, 2, true);
  g_2_ = Plan(T, F, d, 3);
  g_lm_ = Plan(B, d, V, 4);
  fused_ = g_qkv_.gemv && g_o_.gemv && g_13_.gemv && g_2_.gemv && g_lm_.gemv;

  SeedWeights(cfg.seed);
  // The cache: zero, then (decode) the seeded prefix, which streams layer 0 K, layer 0 V, ...
  // each B x kv_heads x ctx x head_dim: one placement of (2 layers, B kv_heads, ctx, head_dim)
  // into the capacity-strided buffer; paged, into a contiguous buffer first, copied into the
  // pages layer by layer.
  const int64_t per = B * G * cap * D;
  layer_kv_ = per;
  if (paged) {
    const int64_t pps = (cap + NativePagedInfer::kPage - 1) / NativePagedInfer::kPage;
    std::vector<int32_t> table(size_t(B * pps));
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), std::mt19937_64(cfg.seed));
    page_table_ = cuda::DeviceBuffer<int32_t>(table.size());
    Upload(page_table_.get(), table, st);
    attn_.page = NativePagedInfer::kPage;
    attn_.pages_per_seq = pps;
    attn_.page_table = page_table_.get();
    layer_kv_ = int64_t(table.size()) * G * NativePagedInfer::kPage * D;
    cuda::Sync(st);  // the host table goes
  }
  cache_ = cuda::DeviceBuffer<uint16_t>(size_t(2 * m.layers * layer_kv_));
  DLB_CHECK(cudaMemsetAsync(cache_.get(), 0, cache_.bytes(), st));
  if (s.phase == InferPhase::kDecode) {
    cuda::DeviceBuffer<uint16_t> staged;
    uint16_t* dst = cache_.get();
    if (paged) {
      staged = cuda::DeviceBuffer<uint16_t>(size_t(2 * m.layers * per));
      dst = staged.get();
    }
    cuda::SeedDevice(dst, {2 * m.layers, B * G, s.ctx, D}, {per, cap * D, D, 1},
                     TensorSeed(cfg.seed, kCacheIndex), DType::kBF16, st);
    if (paged) {
      for (int64_t i = 0; i < 2 * m.layers; ++i)
        cuda::CopyToPages(dst + i * per, s.ctx, attn_, cache_.get() + i * layer_kv_, st);
      cuda::Sync(st);  // the staging buffer goes
    }
  }

  std::vector<int32_t> tokens;
  for (int64_t t : SeededTokens(cfg.seed, s)) tokens.push_back(int32_t(t));
  tokens_ = cuda::DeviceBuffer<int32_t>(tokens.size());
  Upload(tokens_.get(), tokens, st);
  std::vector<float> cos, sin;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < D / 2; ++j) {
      const double angle =
          double(s.FirstPos() + i) * std::pow(m.rope_theta, -2.0 * double(j) / double(D));
      cos.push_back(float(std::cos(angle)));
      sin.push_back(float(std::sin(angle)));
    }
  cos_ = cuda::DeviceBuffer<float>(cos.size());
  sin_ = cuda::DeviceBuffer<float>(sin.size());
  Upload(cos_.get(), cos, st);
  Upload(sin_.get(), sin, st);

  split_ = cuda::ChooseSplit(attn_);
  x_ = cuda::DeviceBuffer<float>(size_t(T * d));
  h_ = cuda::DeviceBuffer<uint16_t>(size_t(T * d));
  qkv_ = cuda::DeviceBuffer<uint8_t>(size_t(T * QKV) * g_qkv_.OutBytes());
  q_ = cuda::DeviceBuffer<uint16_t>(size_t(T * QD));
  partial_ = cuda::DeviceBuffer<float>(cuda::AttnPartialFloats(attn_, split_));
  cuda::ClearAttnScratch(partial_.get(), attn_, split_, st);
  if (fused_) ss_ = cuda::DeviceBuffer<float>(size_t(2 * T * cuda::GemvParts(d)));
  attn_out_ = cuda::DeviceBuffer<uint16_t>(size_t(T * QD));
  gu_ = cuda::DeviceBuffer<uint8_t>(size_t(T * 2 * F) * g_13_.OutBytes());
  act_ = cuda::DeviceBuffer<uint16_t>(size_t(T * F));
  last_ = cuda::DeviceBuffer<uint16_t>(size_t(B * d));
  logits_ = cuda::DeviceBuffer<float>(size_t(B * V));
  cuda::Sync(st);  // the staged host values may go

  const std::string gemm_choice = TuneGemms() + TuneGemv(layouts);
  const std::string attention = PlanAttention(paged, attention_choice);
  const std::string gemv_math = ChooseCarveout(layouts);

  Capture();
  cuda::Poison(logits_.get(), logits_.size(), DType::kF32, st);
  cuda::Sync(st);

  const char* gemms =
      fp8_ && g_qkv_.gemv
          ? "fp8 weight-streaming products, each a programmatic dependent launch (one token a "
            "step, the norms and SwiGLU fused into them: e4m3 weights with per-tensor scales, "
            "bf16 activations"
      : fp8_ ? "cuBLASLt fp8 GEMMs (e4m3 weights with per-tensor scales, activations quantised to "
               "e4m3 by their absmax each step"
      : g_qkv_.gemv ? "bf16 weight-streaming products, each a programmatic dependent launch (one "
                      "token a step, the norms and SwiGLU fused into them"
                    : "cuBLASLt bf16 GEMMs (bf16 weights and activations";
  label_ = std::string(gemms) +
           (g_13_.bf16_out ? "; f32 accumulation; qkv and gate/up written in bf16, o and down "
                             "added into the f32 residual"
            : fp8_ && g_qkv_.gemv
                ? "; products summed 8 at a time in f16 (x scaled into f16 by a power of two a "
                  "512-element segment), then in f32, where the layout does not widen the "
                  "weights to f32; f32 output"
                : "; f32 accumulation and output") +
           "; qkv and gate/up fused" + gemm_choice + gemv_math + "), attention " + attention +
           ", f32 softmax; " +
           (paged ? "paged bf16 KV cache (pages of " + std::to_string(NativePagedInfer::kPage) +
                        " positions, each sequence's a shuffled set of the pool's)"
                  : std::string("contiguous bf16 KV cache")) +
           ", f32 residual; whole step in one CUDA graph";
}

void NativeInfer::SeedWeights(uint64_t seed) {
  const LlamaConfig& m = shape_.model;
  const int64_t d = m.dim, F = m.ffn, V = m.vocab, QD = m.QDim(), KVD = m.KvDim(),
                QKV = QD + 2 * KVD;
  const DType wdt = fp8_ ? DType::kFP8E4M3 : DType::kBF16;
  const size_t es = StorageBytes(wdt);
  StreamRef st = stream_.get();
  // The norms' few values on the host, kept until the copies are done (bf16 in both dtypes: the
  // fp8 weights are the matrices').
  std::vector<std::vector<float>> staged;
  const auto norm = [&](int index) {
    staged.push_back(SeededNorm(seed, index, d, DType::kBF16));
    cuda::DeviceBuffer<float> buf{size_t(d)};
    Upload(buf.get(), staged.back(), st);
    return buf;
  };
  const auto matrix = [&](int64_t rows, int64_t cols) {
    return cuda::DeviceBuffer<uint8_t>(size_t(rows * cols) * es);
  };
  for (int l = 0; l < int(m.layers); ++l) {
    Layer y;
    y.wqkv = matrix(QKV, d);
    SeedMatrix(y.wqkv.get(), wdt, seed, WeightIndex(l, LlamaTensor::kWq), QD, d, st);
    SeedMatrix(y.wqkv.get() + QD * d * es, wdt, seed, WeightIndex(l, LlamaTensor::kWk), KVD, d, st);
    SeedMatrix(y.wqkv.get() + (QD + KVD) * d * es, wdt, seed, WeightIndex(l, LlamaTensor::kWv), KVD,
               d, st);
    y.wo = matrix(d, QD);
    SeedMatrix(y.wo.get(), wdt, seed, WeightIndex(l, LlamaTensor::kWo), d, QD, st);
    y.w13 = matrix(2 * F, d);
    SeedMatrix(y.w13.get(), wdt, seed, WeightIndex(l, LlamaTensor::kW1), F, d, st, 2 * d);
    SeedMatrix(y.w13.get() + d * es, wdt, seed, WeightIndex(l, LlamaTensor::kW3), F, d, st, 2 * d);
    if (!fp8_)
      cuda::ScaleBf16(reinterpret_cast<uint16_t*>(y.w13.get()), size_t(2 * F * d), WeightScale(d),
                      st);
    y.w2 = matrix(d, F);
    SeedMatrix(y.w2.get(), wdt, seed, WeightIndex(l, LlamaTensor::kW2), d, F, st);
    y.attn_norm = norm(WeightIndex(l, LlamaTensor::kAttnNorm));
    y.ffn_norm = norm(WeightIndex(l, LlamaTensor::kFfnNorm));
    layers_.push_back(std::move(y));
  }
  embed_ = cuda::DeviceBuffer<uint16_t>(size_t(V * d));
  cuda::SeedDevice(embed_.get(), {1, 1, V, d}, {V * d, V * d, d, 1}, TensorSeed(seed, kEmbedIndex),
                   DType::kBF16, st);
  lm_head_ = matrix(V, d);
  SeedMatrix(lm_head_.get(), wdt, seed, kLmHeadIndex, V, d, st);
  final_norm_ = norm(kFinalNormIndex);
  cuda::Sync(st);  // the staged norms may go
}

void NativeInfer::Attention(size_t l) {
  if (attn_sdpa_) return sdpa_->Run(int(l));
  uint16_t* k = cache_.get() + 2 * int64_t(l) * layer_kv_;
  cuda::GqaAttention(q_.get(), k, k + layer_kv_, attn_, split_, partial_.get(), attn_out_.get(),
                     stream_.get());
}

void NativeInfer::RopeAndAttention(size_t l) {
  uint16_t* k = cache_.get() + 2 * int64_t(l) * layer_kv_;
  uint16_t* v = k + layer_kv_;
  cudaStream_t st = stream_.get();
  if (rope_attn_)
    return cuda::RopeAttention(reinterpret_cast<const float*>(qkv_.get()), cos_.get(), sin_.get(),
                               attn_, rope_split_, k, v, attn_out_.get(), st, carveout_);
  if (g_qkv_.bf16_out)
    cuda::RopeAppend(reinterpret_cast<const uint16_t*>(qkv_.get()), cos_.get(), sin_.get(), attn_,
                     q_.get(), k, v, st);
  else
    cuda::RopeAppend(reinterpret_cast<const float*>(qkv_.get()), cos_.get(), sin_.get(), attn_,
                     q_.get(), k, v, st);
  Attention(l);
}

std::string NativeInfer::WhyNotFused() const {
  if (shape_.NewTokens() != 1) return "it takes one token a sequence";
  if (g_qkv_.bf16_out) return "it reads the projection's f32 rows, and this qkv GEMM writes bf16";
  if (attn_.page != 0) return "it is not offered over the paged cache";
  if (!cuda::RopeAttentionSupported()) return "it needs compute capability 9.0+ (clusters)";
  return "";
}

void NativeInfer::Capture() {
  // One eager step first: cuBLASLt, cuDNN and the kernels load their code on first use, which
  // must not happen inside a capture.
  StreamRef st = stream_.get();
  Step();
  cuda::Sync(st);
  exec_ = cuda::Capture(st, [&] { Step(); });
}

NativeInfer::Gemm NativeInfer::Plan(int64_t rows, int64_t in, int64_t out, int slot,
                                    bool bf16_out) {
  // Column-major, y^T (out x rows) = W (read transposed: stored in x out) . x^T (in x rows).
  Gemm g;
  g.rows = rows;
  g.in = in;
  g.out = out;
  g.slot = slot;
  g.gemv = rows == 1 && in % (fp8_ ? 16 : 8) == 0 && (!fp8_ || in * 2 <= cuda::kGemvFp8MaxStage);
  g.layout = cuda::GemvDefaultLayout(Weights());
  g.bf16_out = bf16_out && !g.gemv;  // the weight-streaming product writes f32 (or fuses on)
  g.w_scale = fp8_ ? GemmAScale(in) : 1.0f;
  cublasLtMatmulDesc_t raw = nullptr;
  DLB_CHECK(cublasLtMatmulDescCreate(&raw, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  g.desc.reset(raw);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  const cudaDataType_t in_type = fp8_ ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  if (fp8_) {
    // torch._scaled_mm's attributes for a per-tensor scaled GEMM: both scales on the device;
    // full-precision accumulation (no fast accumulation).
    const float* a_scale = scales_.get() + 2 * slot * kScaleApart;
    const float* b_scale = a_scale + kScaleApart;
    SetAttr(raw, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scale);
    SetAttr(raw, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scale);
  }
  g.a = MakeLayout(in_type, CUBLAS_OP_T, out, in, in);
  g.b = MakeLayout(in_type, CUBLAS_OP_N, in, rows, in);
  g.c = MakeLayout(g.bf16_out ? CUDA_R_16BF : CUDA_R_32F, CUBLAS_OP_N, out, rows, out);
  g.algo = FirstHeuristicAlgo(
      handle_.get(), raw, g.a.get(), g.b.get(), g.c.get(), workspace_.bytes(),
      std::string("cuBLASLt has no ") + (fp8_ ? "e4m3 x e4m3" : "bf16 x bf16") +
          (g.bf16_out ? " -> bf16" : " -> f32") + " algorithm for " + std::to_string(rows) + " x " +
          std::to_string(in) + " x " + std::to_string(out) + " here");
  return g;
}

void NativeInfer::Launch(const Gemm& g, const uint8_t* w, const uint16_t* x, void* y,
                         bool accumulate, const cuda::GemvFusion& fusion) {
  if (g.gemv) {
    cuda::Gemv(x, w, Weights(), g.w_scale, static_cast<float*>(y), g.rows, g.out, g.in, accumulate,
               fusion, stream_.get(), g.layout, carveout_);
    return;
  }
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  const void* input = x;
  if (fp8_) {
    cuda::QuantizeFp8(x, g.rows * g.in, amax_.get() + g.slot,
                      scales_.get() + (2 * g.slot + 1) * kScaleApart, x8_.get(), stream_.get());
    input = x8_.get();
  }
  DLB_CHECK(cublasLtMatmul(handle_.get(), g.desc.get(), &alpha, w, g.a.get(), input, g.b.get(),
                           &beta, y, g.c.get(), y, g.c.get(), &g.algo, workspace_.get(),
                           workspace_.bytes(), stream_.get()));
}

void NativeInfer::FusedProduct(int slot, size_t l) {
  const int64_t d = shape_.model.dim, parts = cuda::GemvParts(d);
  const float eps = float(shape_.model.norm_eps);
  // ss_ holds the norms' sums of squares in pieces (GemvFusion): the embedding's one a row, then
  // each residual output's one a block of its product (GemvParts at its layout), used in turn by
  // the next product.
  float* ss_attn = ss_.get();
  float* ss_ffn = ss_.get() + rows_ * parts;
  const int attn_parts = l == 0 && slot == 0 ? 1 : int(cuda::GemvParts(d, g_2_.layout));
  cuda::GemvFusion f;
  if (slot == 0 || slot == 2 || slot == 4) {  // the norm before them folded in
    f.norm_parts = slot == 2 ? ss_ffn : ss_attn;
    f.norm_part_count = slot == 2 ? int(cuda::GemvParts(d, g_o_.layout)) : attn_parts;
    f.eps = eps;
  }
  if (slot == 4) return Launch(g_lm_, lm_head_.get(), h_.get(), logits_.get(), false, f);
  const Layer& y = layers_[l];
  switch (slot) {
    case 0:
      return Launch(g_qkv_, y.wqkv.get(), h_.get(), qkv_.get(), false, f);
    case 1:
      f.gamma = y.ffn_norm.get();
      f.next_in = h_.get();
      f.out_parts = ss_ffn;
      return Launch(g_o_, y.wo.get(), attn_out_.get(), x_.get(), true, f);
    case 2:
      f.act = act_.get();
      return Launch(g_13_, y.w13.get(), h_.get(), nullptr, false, f);
    default:
      f.gamma = l + 1 < layers_.size() ? layers_[l + 1].attn_norm.get() : final_norm_.get();
      f.next_in = h_.get();
      f.out_parts = ss_attn;
      return Launch(g_2_, y.w2.get(), act_.get(), x_.get(), true, f);
  }
}

void NativeInfer::FusedStep() {
  const LlamaConfig& m = shape_.model;
  cuda::EmbedNormInput(tokens_.get(), embed_.get(), rows_, m.dim, layers_[0].attn_norm.get(),
                       x_.get(), h_.get(), ss_.get(), stream_.get());
  for (size_t l = 0; l < layers_.size(); ++l) {
    FusedProduct(0, l);
    RopeAndAttention(l);
    for (int slot = 1; slot <= 3; ++slot) FusedProduct(slot, l);
  }
  FusedProduct(4, layers_.size());
}

void NativeInfer::Step() {
  if (fused_) return FusedStep();
  const LlamaConfig& m = shape_.model;
  const int64_t d = m.dim, n = shape_.NewTokens();
  const float eps = float(m.norm_eps);
  cudaStream_t st = stream_.get();
  cuda::EmbedRows(tokens_.get(), embed_.get(), rows_, d, x_.get(), st);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& y = layers_[l];
    cuda::RmsNormBf16(x_.get(), rows_, d, d, y.attn_norm.get(), eps, h_.get(), st);
    Launch(g_qkv_, y.wqkv.get(), h_.get(), qkv_.get(), false);
    RopeAndAttention(l);
    Launch(g_o_, y.wo.get(), attn_out_.get(), x_.get(), true);
    cuda::RmsNormBf16(x_.get(), rows_, d, d, y.ffn_norm.get(), eps, h_.get(), st);
    Launch(g_13_, y.w13.get(), h_.get(), gu_.get(), false);
    if (g_13_.bf16_out)
      cuda::SwiGluBf16(reinterpret_cast<const uint16_t*>(gu_.get()), rows_, m.ffn, act_.get(), st);
    else
      cuda::SwiGluBf16(reinterpret_cast<const float*>(gu_.get()), rows_, m.ffn, act_.get(), st);
    Launch(g_2_, y.w2.get(), act_.get(), x_.get(), true);
  }
  // Each sequence's last token: rows n - 1, 2n - 1, ... of the residual.
  cuda::RmsNormBf16(x_.get() + (n - 1) * d, shape_.batch, n * d, d, final_norm_.get(), eps,
                    last_.get(), st);
  Launch(g_lm_, lm_head_.get(), last_.get(), logits_.get(), false);
}

void NativeInfer::Run() { DLB_CHECK(cudaGraphLaunch(exec_.get(), stream_.get())); }

HostTensor NativeInfer::Output() const {
  return {{shape_.batch, shape_.model.vocab},
          cuda::Download(logits_.get(), logits_.size(), DType::kF32, stream_.get())};
}

double NativeInfer::KvBytes() const {
  return shape_.KvReadBytes(DType::kBF16) + shape_.KvWrittenBytes(DType::kBF16);
}

Cost NativeInfer::cost() const {
  return {shape_.Flops(), shape_.Bytes(fp8_ ? DType::kFP8E4M3 : DType::kBF16, DType::kBF16),
          double(rows_)};
}

}  // namespace dlb::cublas
