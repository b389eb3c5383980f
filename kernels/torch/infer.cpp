#include "kernels/torch/infer.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/cpu.h"
#include "kernels/common/fill.h"
#include "kernels/common/memory.h"
#include "kernels/torch/compat.h"
#include "kernels/torch/engine.h"
#include "kernels/torch/infer_model.h"
#include "kernels/torch/step.h"

namespace dlb::libtorch {

namespace {

// gpt-fast's RMSNorm: in f32, cast back to x's dtype, then times the weight.
torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  const torch::Tensor f = x.to(torch::kFloat);
  return (f * torch::rsqrt(f.pow(2).mean(-1, /*keepdim=*/true) + eps)).to(x.scalar_type()) * w;
}

// Rotary embeddings on x (batch x tokens x heads x head_dim), the pair (i, i + head_dim/2) rotated
// by the table's angle of its token, in f32 (gpt-fast's apply_rotary_emb), cast back.
torch::Tensor Rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t n = x.size(1), half = x.size(3) / 2;
  const torch::Tensor f = x.to(torch::kFloat);
  const torch::Tensor a = f.narrow(3, 0, half), b = f.narrow(3, half, half);
  const torch::Tensor c = cos.view({1, n, 1, half}), s = sin.view({1, n, 1, half});
  return torch::cat({a * c - b * s, b * c + a * s}, 3).to(x.scalar_type());
}

// The f32 check's attention: the cached prefix (batch x kv_heads x first x head_dim, in the
// cache's dtype) widened, the step's own keys and values (f32) after it. Decode attends with a kv
// head's query heads as its rows, so no kv head is repeated: at a batch of 128 over 2048 positions
// the repeats would hold 8 GiB more.
torch::Tensor AttendBeside(const torch::Tensor& q, const torch::Tensor& k_prefix,
                           const torch::Tensor& v_prefix, const torch::Tensor& k,
                           const torch::Tensor& v) {
  const int64_t B = q.size(0), H = q.size(1), n = q.size(2), D = q.size(3), G = k.size(1),
                first = k_prefix.size(2);
  torch::Tensor keys = torch::empty({B, G, first + n, D}, q.options());
  torch::Tensor values = torch::empty({B, G, first + n, D}, q.options());
  keys.narrow(2, 0, first).copy_(k_prefix);
  keys.narrow(2, first, n).copy_(k);
  values.narrow(2, 0, first).copy_(v_prefix);
  values.narrow(2, first, n).copy_(v);
  if (n > 1) return compat::GqaAttention(q, keys, values, /*causal=*/true);
  const torch::Tensor grouped = q.reshape({B, G, H / G, D});
  return compat::Attention(grouped, keys, values, /*causal=*/false).reshape({B, H, 1, D});
}

torch::Tensor FromHost(const std::vector<float>& v, at::IntArrayRef shape,
                       const torch::TensorOptions& to) {
  return torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat)
      .to(to, /*non_blocking=*/false, /*copy=*/true);
}

bool CpuHasBf16() { return HasFlag(HostCpu(), "avx512_bf16") || HasFlag(HostCpu(), "amx_bf16"); }

}  // namespace

torch::Tensor InferModel::Step() const {
  const LlamaConfig& m = shape.model;
  const int64_t B = shape.batch, n = shape.NewTokens(), first = shape.FirstPos(), H = m.heads,
                G = m.kv_heads, D = m.head_dim;
  const double eps = m.norm_eps;
  torch::Tensor x = embed.index_select(0, tokens.view({-1})).view({B, n, m.dim});
  for (const Layer& y : layers) {
    const std::vector<torch::Tensor> qkv =
        torch::linear(RmsNorm(x, y.attn_norm, eps), y.wqkv)
            .split_with_sizes({m.QDim(), m.KvDim(), m.KvDim()}, -1);
    const torch::Tensor q = Rope(qkv[0].view({B, n, H, D}), cos, sin).transpose(1, 2);
    const torch::Tensor k = Rope(qkv[1].view({B, n, G, D}), cos, sin).transpose(1, 2);
    const torch::Tensor v = qkv[2].view({B, n, G, D}).transpose(1, 2);
    torch::Tensor a;
    if (append_in_place) {
      y.k.narrow(2, first, n).copy_(k);
      y.v.narrow(2, first, n).copy_(v);
      a = compat::GqaAttention(q, y.k, y.v, /*causal=*/n > 1);
    } else {
      a = AttendBeside(q, y.k, y.v, k, v);
    }
    x = x + torch::linear(a.transpose(1, 2).reshape({B, n, m.QDim()}), y.wo);
    const std::vector<torch::Tensor> gu =
        torch::linear(RmsNorm(x, y.ffn_norm, eps), y.w13).chunk(2, -1);
    x = x + torch::linear(torch::silu(gu[0]) * gu[1], y.w2);
  }
  return torch::linear(RmsNorm(x.select(1, n - 1), final_norm, eps), lm_head).to(torch::kFloat);
}

InferFills HostInferFills(const InferShape& s, uint64_t seed, DType dt) {
  InferFills f;
  f.matrix = [seed, dt](const torch::Tensor& dst, int index) {
    const std::vector<float> v = SeededMatrix(seed, index, dst.size(0), dst.size(1), dt);
    dst.copy_(FromHost(v, dst.sizes(), torch::kFloat));
  };
  f.embedding = [seed, dt](const torch::Tensor& dst) {
    const std::vector<float> v =
        SeededValues(TensorSeed(seed, kEmbedIndex), size_t(dst.numel()), dt);
    dst.copy_(FromHost(v, dst.sizes(), torch::kFloat));
  };
  f.cache = [s, seed, dt](const torch::Tensor& cache) {
    const LlamaConfig& m = s.model;
    for (int l = 0; l < int(m.layers); ++l)
      for (bool value : {false, true}) {
        const std::vector<float> v = SeededCache(seed, s, l, value, dt);
        cache.select(0, 2 * l + (value ? 1 : 0))
            .narrow(2, 0, s.ctx)
            .copy_(FromHost(v, {s.batch, m.kv_heads, s.ctx, m.head_dim}, torch::kFloat));
      }
  };
  return f;
}

std::unique_ptr<InferModel> BuildInferModel(const InferShape& s, uint64_t seed,
                                            const InferPlacement& where, const InferFills& fills) {
  const LlamaConfig& m = s.model;
  const int64_t B = s.batch, n = s.NewTokens(), d = m.dim, F = m.ffn, V = m.vocab, QD = m.QDim(),
                KVD = m.KvDim(), half = m.head_dim / 2;
  auto model = std::make_unique<InferModel>();
  model->shape = s;
  model->append_in_place = where.append_in_place;
  const torch::TensorOptions& w = where.weights;
  const auto norm = [&](int index) {
    return FromHost(SeededNorm(seed, index, d, where.norm_dt), {d}, w);
  };
  for (int l = 0; l < int(m.layers); ++l) {
    const auto index = [l](LlamaTensor t) { return WeightIndex(l, t); };
    InferModel::Layer y;
    y.attn_norm = norm(index(LlamaTensor::kAttnNorm));
    y.ffn_norm = norm(index(LlamaTensor::kFfnNorm));
    y.wqkv = torch::empty({QD + 2 * KVD, d}, w);
    fills.matrix(y.wqkv.narrow(0, 0, QD), index(LlamaTensor::kWq));
    fills.matrix(y.wqkv.narrow(0, QD, KVD), index(LlamaTensor::kWk));
    fills.matrix(y.wqkv.narrow(0, QD + KVD, KVD), index(LlamaTensor::kWv));
    y.wo = torch::empty({d, QD}, w);
    fills.matrix(y.wo, index(LlamaTensor::kWo));
    y.w13 = torch::empty({2 * F, d}, w);
    fills.matrix(y.w13.narrow(0, 0, F), index(LlamaTensor::kW1));
    fills.matrix(y.w13.narrow(0, F, F), index(LlamaTensor::kW3));
    y.w2 = torch::empty({d, F}, w);
    fills.matrix(y.w2, index(LlamaTensor::kW2));
    model->layers.push_back(std::move(y));
  }
  model->embed = torch::empty({V, d}, w);
  fills.embedding(model->embed);
  model->final_norm = norm(kFinalNormIndex);
  model->lm_head = torch::empty({V, d}, w);
  fills.matrix(model->lm_head, kLmHeadIndex);

  const int64_t cap = where.append_in_place ? s.CacheLen() : s.FirstPos();
  model->cache =
      torch::zeros({2 * m.layers, B, m.kv_heads, cap, m.head_dim}, w.dtype(where.cache_dtype));
  if (s.phase == InferPhase::kDecode) fills.cache(model->cache);
  for (int l = 0; l < int(m.layers); ++l) {
    model->layers[size_t(l)].k = model->cache.select(0, 2 * l);
    model->layers[size_t(l)].v = model->cache.select(0, 2 * l + 1);
  }

  const std::vector<int64_t> tokens = SeededTokens(seed, s);
  model->tokens = torch::from_blob(const_cast<int64_t*>(tokens.data()), {B, n}, torch::kInt64)
                      .to(w.dtype(torch::kInt64), /*non_blocking=*/false, /*copy=*/true);
  std::vector<float> cos, sin;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < half; ++j) {
      const double angle =
          double(s.FirstPos() + i) * std::pow(m.rope_theta, -2.0 * double(j) / double(m.head_dim));
      cos.push_back(float(std::cos(angle)));
      sin.push_back(float(std::sin(angle)));
    }
  model->cos = FromHost(cos, {n, half}, w.dtype(torch::kFloat));
  model->sin = FromHost(sin, {n, half}, w.dtype(torch::kFloat));
  return model;
}

// ---- the CPU op ---------------------------------------------------------------------------

Support TorchInferCpu::Supports(const InferShape& s, const RunConfig& cfg) {
  if (!s.Valid()) return Support::No(kInvalidInferShape);
  switch (cfg.dtype) {
    case DType::kF32:
      return Support::Yes();
    case DType::kBF16:
      return CpuHasBf16() ? Support::Yes()
                          : Support::No(
                                "bf16 needs avx512_bf16 or amx_bf16 (LibTorch's CPU bf16 matmuls "
                                "are emulated without them)");
    default:
      return Support::No("the CPU step runs f32 and bf16 weights; " + std::string(Name(cfg.dtype)) +
                         " weights are not offered on the CPU");
  }
}

TorchInferCpu::TorchInferCpu(const InferShape& s, const RunConfig& cfg)
    : shape_(s), dt_(cfg.dtype) {
  RequireSupported(Supports(s, cfg));
  SetTorchThreads(cfg.threads);
  const LlamaConfig& m = s.model;
  const double elem = double(StorageBytes(dt_));
  // The weights and cache, the embedding, one matrix's seeded values and a step's intermediates.
  RequireHostBytes(m.StepParams() * elem + double(m.vocab * m.dim) * elem +
                   2.0 * double(m.layers * s.batch * m.KvDim() * s.CacheLen()) * elem +
                   double(m.vocab * m.dim) * 8 +
                   double(s.batch * s.NewTokens()) * double(m.QDim() + 2 * m.KvDim() + 3 * m.ffn) *
                       8 +
                   double(s.batch * m.heads * s.NewTokens() * s.CacheLen()) * 8);
  Guarded([&] {
    torch::NoGradGuard no_grad;
    InferPlacement where;
    const torch::ScalarType t = dt_ == DType::kBF16 ? torch::kBFloat16 : torch::kFloat;
    where.weights = torch::TensorOptions().dtype(t).device(torch::kCPU);
    where.cache_dtype = t;
    where.norm_dt = dt_;
    model_ = BuildInferModel(s, cfg.seed, where, HostInferFills(s, cfg.seed, dt_));
    model_->logits = torch::full({s.batch, m.vocab}, std::numeric_limits<float>::quiet_NaN(),
                                 torch::TensorOptions().dtype(torch::kFloat));
  });
}

TorchInferCpu::~TorchInferCpu() = default;

void TorchInferCpu::Run() {
  Guarded([&] {
    torch::NoGradGuard no_grad;
    model_->logits = model_->Step();
  });
}

HostTensor TorchInferCpu::Output() const {
  const torch::Tensor l = model_->logits.contiguous();
  const float* p = l.data_ptr<float>();
  return {{shape_.batch, shape_.model.vocab}, std::vector<float>(p, p + l.numel())};
}

Cost TorchInferCpu::cost() const {
  return {shape_.Flops(), shape_.Bytes(dt_, dt_), double(shape_.batch * shape_.NewTokens())};
}

double TorchInferCpu::KvBytes() const {
  return shape_.KvReadBytes(dt_) + shape_.KvWrittenBytes(dt_);
}

std::string TorchInferCpu::label() const {
  return "LibTorch " + TorchVersion() + " CPU, eager C++ (gpt-fast-shaped: fused qkv and gate/up " +
         "Linears, f32 RMSNorm and rotary); " + compat::GqaAttentionName() + "; " +
         std::string(Name(dt_)) + " weights, static KV cache and residual; threads " +
         std::to_string(TorchThreads());
}

}  // namespace dlb::libtorch
