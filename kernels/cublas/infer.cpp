#include "kernels/cublas/infer.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>

#include "kernels/common/fill.h"
#include "kernels/cublas/check.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"

namespace dlb::cublas {

namespace {

struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t p) const noexcept {
    DLB_CHECK_NOEXCEPT(cublasLtMatmulPreferenceDestroy(p));
  }
};

template <class T>
void SetAttr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  DLB_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value));
}

Layout MakeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
  cublasLtMatrixLayout_t raw = nullptr;
  DLB_CHECK(cublasLtMatrixLayoutCreate(&raw, type, uint64_t(rows), uint64_t(cols), ld));
  return Layout(raw);
}

// A seeded matrix of kernels/common/infer.h (rows x cols at dst, bf16): seeded on the device, then
// scaled by its power of two, which bf16 holds exactly.
void SeedMatrix(uint16_t* dst, uint64_t seed, int index, int64_t rows, int64_t cols,
                StreamRef stream) {
  cuda::SeedDevice(dst, {1, 1, rows, cols}, {rows * cols, rows * cols, cols, 1},
                   TensorSeed(seed, index), DType::kBF16, stream);
  cuda::ScaleBf16(dst, size_t(rows * cols), WeightScale(cols), stream);
}

template <class T>
void Upload(T* dst, const std::vector<T>& src, StreamRef stream) {
  DLB_CHECK(
      cudaMemcpyAsync(dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
}

}  // namespace

Support NativeInfer::Supports(const InferShape& s, const RunConfig& cfg) {
  if (!s.Valid())
    return Support::No(
        "model sizes, batch and context must be positive, heads a multiple of kv_heads, head_dim "
        "even");
  if (cfg.dtype == DType::kFP8E4M3)
    return Support::No(
        "fp8 weights: cuBLASLt's fp8 GEMMs take fp8 activations too (e4m3 x e4m3, per-tensor "
        "scales), and the step does not quantise its activations yet");
  if (cfg.dtype != DType::kBF16)
    return Support::No("the GPU step runs bf16 weights; " + std::string(Name(cfg.dtype)) +
                       " weights are not offered");
  if (s.model.head_dim > cuda::kInferMaxHeadDim)
    return Support::No("the attention kernel takes a head_dim of at most 256");
  if (s.batch * s.NewTokens() * s.model.heads > INT32_MAX)
    return Support::No("batch x tokens x heads above 2^31 - 1 (the attention kernel's grid)");
  if (cuda::DeviceCount() == 0) return Support::No(cuda::NoDeviceReason());
  return Support::Yes();
}

NativeInfer::NativeInfer(const InferShape& s, const RunConfig& cfg) : shape_(s) {
  RequireSupported(Supports(s, cfg));
  const LlamaConfig& m = s.model;
  const int64_t B = s.batch, n = s.NewTokens(), T = B * n, d = m.dim, G = m.kv_heads,
                D = m.head_dim, F = m.ffn, V = m.vocab, cap = s.CacheLen(), QD = m.QDim(),
                KVD = m.KvDim(), QKV = QD + 2 * KVD;
  rows_ = T;
  attn_ = {B, n, s.FirstPos(), m.heads, G, D, cap};
  split_ = cuda::ChooseSplit(attn_);

  stream_ = cuda::MakeStream();
  cublasLtHandle_t raw_handle = nullptr;
  DLB_CHECK(cublasLtCreate(&raw_handle));
  handle_.reset(raw_handle);
  workspace_ = cuda::DeviceBuffer<unsigned char>(WorkspaceBytes());
  g_qkv_ = Plan(T, d, QKV);
  g_o_ = Plan(T, QD, d);
  g_13_ = Plan(T, d, 2 * F);
  g_2_ = Plan(T, F, d);
  g_lm_ = Plan(B, d, V);

  // Seeded weights (kernels/common/infer.h), bf16 on the device; the norms' few values on the
  // host, kept until the copies are done.
  const uint64_t seed = cfg.seed;
  StreamRef st = stream_.get();
  std::vector<std::vector<float>> staged;
  const auto norm = [&](int index) {
    staged.push_back(SeededNorm(seed, index, d, DType::kBF16));
    cuda::DeviceBuffer<float> buf{size_t(d)};
    Upload(buf.get(), staged.back(), st);
    return buf;
  };
  for (int l = 0; l < int(m.layers); ++l) {
    Layer y;
    y.wqkv = cuda::DeviceBuffer<uint16_t>(size_t(QKV * d));
    SeedMatrix(y.wqkv.get(), seed, WeightIndex(l, LlamaTensor::kWq), QD, d, st);
    SeedMatrix(y.wqkv.get() + QD * d, seed, WeightIndex(l, LlamaTensor::kWk), KVD, d, st);
    SeedMatrix(y.wqkv.get() + (QD + KVD) * d, seed, WeightIndex(l, LlamaTensor::kWv), KVD, d, st);
    y.wo = cuda::DeviceBuffer<uint16_t>(size_t(d * QD));
    SeedMatrix(y.wo.get(), seed, WeightIndex(l, LlamaTensor::kWo), d, QD, st);
    y.w13 = cuda::DeviceBuffer<uint16_t>(size_t(2 * F * d));
    SeedMatrix(y.w13.get(), seed, WeightIndex(l, LlamaTensor::kW1), F, d, st);
    SeedMatrix(y.w13.get() + F * d, seed, WeightIndex(l, LlamaTensor::kW3), F, d, st);
    y.w2 = cuda::DeviceBuffer<uint16_t>(size_t(d * F));
    SeedMatrix(y.w2.get(), seed, WeightIndex(l, LlamaTensor::kW2), d, F, st);
    y.attn_norm = norm(WeightIndex(l, LlamaTensor::kAttnNorm));
    y.ffn_norm = norm(WeightIndex(l, LlamaTensor::kFfnNorm));
    layers_.push_back(std::move(y));
  }
  embed_ = cuda::DeviceBuffer<uint16_t>(size_t(V * d));
  cuda::SeedDevice(embed_.get(), {1, 1, V, d}, {V * d, V * d, d, 1}, TensorSeed(seed, kEmbedIndex),
                   DType::kBF16, st);
  lm_head_ = cuda::DeviceBuffer<uint16_t>(size_t(V * d));
  SeedMatrix(lm_head_.get(), seed, kLmHeadIndex, V, d, st);
  final_norm_ = norm(kFinalNormIndex);

  // The cache: zero, then (decode) the seeded prefix, which streams layer 0 K, layer 0 V, ...
  // each B x kv_heads x ctx x head_dim: one placement of (2 layers, B kv_heads, ctx, head_dim)
  // into the capacity-strided buffer.
  const int64_t per = B * G * cap * D;
  cache_ = cuda::DeviceBuffer<uint16_t>(size_t(2 * m.layers * per));
  DLB_CHECK(cudaMemsetAsync(cache_.get(), 0, cache_.bytes(), st));
  if (s.phase == InferPhase::kDecode)
    cuda::SeedDevice(cache_.get(), {2 * m.layers, B * G, s.ctx, D}, {per, cap * D, D, 1},
                     TensorSeed(seed, kCacheIndex), DType::kBF16, st);

  std::vector<int32_t> tokens;
  for (int64_t t : SeededTokens(seed, s)) tokens.push_back(int32_t(t));
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

  x_ = cuda::DeviceBuffer<float>(size_t(T * d));
  h_ = cuda::DeviceBuffer<uint16_t>(size_t(T * d));
  qkv_ = cuda::DeviceBuffer<float>(size_t(T * QKV));
  q_ = cuda::DeviceBuffer<uint16_t>(size_t(T * QD));
  partial_ = cuda::DeviceBuffer<float>(cuda::AttnPartialFloats(attn_, split_));
  attn_out_ = cuda::DeviceBuffer<uint16_t>(size_t(T * QD));
  gu_ = cuda::DeviceBuffer<float>(size_t(T * 2 * F));
  act_ = cuda::DeviceBuffer<uint16_t>(size_t(T * F));
  last_ = cuda::DeviceBuffer<uint16_t>(size_t(B * d));
  logits_ = cuda::DeviceBuffer<float>(size_t(B * V));
  cuda::Sync(st);  // the staged host values may go

  // One eager step first: cuBLASLt and the kernels load their code on first use, which must not
  // happen inside a capture.
  Step();
  cuda::Sync(st);
  DLB_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  try {
    Step();
  } catch (...) {
    // End the broken capture so the stream is usable again; the original error is the news.
    cudaGraph_t broken = nullptr;
    if (cudaStreamEndCapture(st, &broken) != cudaSuccess) cudaGetLastError();
    cuda::Graph discard(broken);
    throw;
  }
  cudaGraph_t raw_graph = nullptr;
  DLB_CHECK(cudaStreamEndCapture(st, &raw_graph));
  graph_.reset(raw_graph);
  cudaGraphExec_t raw_exec = nullptr;
  DLB_CHECK(cudaGraphInstantiate(&raw_exec, raw_graph, 0));
  exec_.reset(raw_exec);
  DLB_CHECK(cudaGraphUpload(raw_exec, st));
  cuda::Poison(logits_.get(), logits_.size(), DType::kF32, st);
  cuda::Sync(st);

  label_ =
      "cuBLASLt bf16 GEMMs (f32 accumulation and output; qkv and gate/up fused), attention "
      "a split-key CUDA kernel (" +
      std::to_string(split_.splits) + " chunks of " + std::to_string(split_.chunk) +
      " keys, f32 softmax); bf16 weights and contiguous KV cache (paged not implemented), "
      "f32 residual; whole step in one CUDA graph";
}

NativeInfer::Gemm NativeInfer::Plan(int64_t rows, int64_t in, int64_t out) {
  // Column-major, y^T (out x rows) = W (read transposed: stored in x out) . x^T (in x rows).
  Gemm g;
  cublasLtMatmulDesc_t raw = nullptr;
  DLB_CHECK(cublasLtMatmulDescCreate(&raw, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  g.desc.reset(raw);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  g.a = MakeLayout(CUDA_R_16BF, in, out, in);
  g.b = MakeLayout(CUDA_R_16BF, in, rows, in);
  g.c = MakeLayout(CUDA_R_32F, out, rows, out);
  cublasLtMatmulPreference_t raw_pref = nullptr;
  DLB_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter> pref(raw_pref);
  const uint64_t ws = workspace_.bytes();
  DLB_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_.get(), raw, g.a.get(), g.b.get(), g.c.get(), g.c.get(),
                                     pref.get(), 1, &result, &returned);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && returned <= 0))
    throw Unsupported("cuBLASLt has no bf16 x bf16 -> f32 algorithm for " + std::to_string(rows) +
                      " x " + std::to_string(in) + " x " + std::to_string(out) + " here");
  DLB_CHECK(status);
  g.algo = result.algo;
  return g;
}

void NativeInfer::Launch(const Gemm& g, const uint16_t* w, const uint16_t* x, float* y,
                         bool accumulate) {
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  DLB_CHECK(cublasLtMatmul(handle_.get(), g.desc.get(), &alpha, w, g.a.get(), x, g.b.get(), &beta,
                           y, g.c.get(), y, g.c.get(), &g.algo, workspace_.get(),
                           workspace_.bytes(), stream_.get()));
}

void NativeInfer::Step() {
  const LlamaConfig& m = shape_.model;
  const int64_t d = m.dim, n = shape_.NewTokens(),
                per = attn_.batch * m.kv_heads * attn_.capacity * m.head_dim;
  const float eps = float(m.norm_eps);
  cudaStream_t st = stream_.get();
  cuda::EmbedRows(tokens_.get(), embed_.get(), rows_, d, x_.get(), st);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& y = layers_[l];
    uint16_t* k = cache_.get() + 2 * int64_t(l) * per;
    uint16_t* v = k + per;
    cuda::RmsNormBf16(x_.get(), rows_, d, d, y.attn_norm.get(), eps, h_.get(), st);
    Launch(g_qkv_, y.wqkv.get(), h_.get(), qkv_.get(), false);
    cuda::RopeAppend(qkv_.get(), cos_.get(), sin_.get(), attn_, q_.get(), k, v, st);
    cuda::GqaAttention(q_.get(), k, v, attn_, split_, partial_.get(), attn_out_.get(), st);
    Launch(g_o_, y.wo.get(), attn_out_.get(), x_.get(), true);
    cuda::RmsNormBf16(x_.get(), rows_, d, d, y.ffn_norm.get(), eps, h_.get(), st);
    Launch(g_13_, y.w13.get(), h_.get(), gu_.get(), false);
    cuda::SwiGluBf16(gu_.get(), rows_, m.ffn, act_.get(), st);
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
  return {shape_.Flops(), shape_.Bytes(DType::kBF16, DType::kBF16), double(rows_)};
}

}  // namespace dlb::cublas
