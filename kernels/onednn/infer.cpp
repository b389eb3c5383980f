#include "kernels/onednn/infer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/common/autotune.h"
#include "kernels/common/cpu.h"
#include "kernels/common/fill.h"
#include "kernels/common/memory.h"
#include "kernels/onednn/context.h"
#include "kernels/onednn/fastest_matmul.h"
#include "kernels/onednn/infer_loops.h"

namespace dlb::onednn {

namespace {

using namespace infer_loops;  // NOLINT: the step's loops

using dnnl::memory;
using dims = memory::dims;

// The one place where oneDNN 2 and 3 differ for this file: oneDNN 2 builds a primitive descriptor
// from an operation descriptor, puts a scale in front of every eltwise post-op and calls the
// softmax with distinct source and destination descriptors softmax_v2; oneDNN 3 takes the engine
// first and calls that one softmax.
#if DNNL_VERSION_MAJOR >= 3
using Softmax = dnnl::softmax_forward;
dnnl::matmul::primitive_desc MatmulPd(const memory::desc& src, const memory::desc& wei,
                                      const memory::desc& dst, const dnnl::primitive_attr& attr) {
  return dnnl::matmul::primitive_desc(Engine(), src, wei, dst, attr);
}
void AppendScale(dnnl::post_ops* po, float scale) {
  po->append_eltwise(dnnl::algorithm::eltwise_linear, scale, 0.f);
}
dnnl::binary::primitive_desc AddPd(const memory::desc& src0, const memory::desc& src1,
                                   const dnnl::primitive_attr& attr) {
  return dnnl::binary::primitive_desc(Engine(), dnnl::algorithm::binary_add, src0, src1, src0,
                                      attr);
}
Softmax::primitive_desc SoftmaxPd(const memory::desc& src, const memory::desc& dst,
                                  const dnnl::primitive_attr& attr) {
  return Softmax::primitive_desc(Engine(), dnnl::prop_kind::forward_inference,
                                 dnnl::algorithm::softmax_accurate, src, dst, 1, attr);
}
#else
using Softmax = dnnl::softmax_v2_forward;
dnnl::matmul::primitive_desc MatmulPd(const memory::desc& src, const memory::desc& wei,
                                      const memory::desc& dst, const dnnl::primitive_attr& attr) {
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), attr, Engine());
}
void AppendScale(dnnl::post_ops* po, float scale) {
  po->append_eltwise(1.f, dnnl::algorithm::eltwise_linear, scale, 0.f);
}
dnnl::binary::primitive_desc AddPd(const memory::desc& src0, const memory::desc& src1,
                                   const dnnl::primitive_attr& attr) {
  return dnnl::binary::primitive_desc(
      dnnl::binary::desc(dnnl::algorithm::binary_add, src0, src1, src0), attr, Engine());
}
Softmax::primitive_desc SoftmaxPd(const memory::desc& src, const memory::desc& dst,
                                  const dnnl::primitive_attr& attr) {
  return Softmax::primitive_desc(Softmax::desc(dnnl::prop_kind::forward_inference,
                                               dnnl::algorithm::softmax_accurate, src, dst, 1),
                                 attr, Engine());
}
#endif

// int8 weights are decompressed inside the matmul: oneDNN 3.4 added the switch (the fpmath mode's
// apply_to_int, with the weights' scales as an attribute), 3.5 the first x64 kernels behind it,
// for bf16 activations (f32 ones from 3.10). Before 3.4 there is nothing to call.
#if DNNL_VERSION_MAJOR > 3 || (DNNL_VERSION_MAJOR == 3 && DNNL_VERSION_MINOR >= 4)
constexpr bool kDecompresses = true;
void Decompress(dnnl::primitive_attr* attr) {
  attr->set_fpmath_mode(dnnl::fpmath_mode::bf16, true);
  attr->set_scales_mask(DNNL_ARG_WEIGHTS, 1 << 1);  // one scale per output channel (N of K x N)
}
void AddWeightScales(std::unordered_map<int, memory>* args, const memory& scales) {
  (*args)[DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS] = scales;
}
#else
// Not reached: Supports() turns int8 down.
constexpr bool kDecompresses = false;
void Decompress(dnnl::primitive_attr*) {}
void AddWeightScales(std::unordered_map<int, memory>*, const memory&) {}
#endif

// Elements below which a loop runs on the calling thread: waking the OpenMP team costs more than
// a decode step's few thousand elements (kernels/onednn/mlp.cpp says the same of its loops).
constexpr int64_t kMinParallel = 32768;
// A step whose every product is below this many multiply-adds (and whose scores are below
// kMinParallel) runs on one thread, its primitives planned for one: split over threads, each of
// its primitives waits on their fork and join longer than it computes. All or nothing: a step
// that leaves threads idle between primitives wakes them from sleep at its next parallel one.
constexpr double kMinParallelMacs = 65536;

memory::data_type TypeOf(DType dt) {
  switch (dt) {
    case DType::kBF16:
      return memory::data_type::bf16;
    case DType::kInt8:
      return memory::data_type::s8;
    default:
      return memory::data_type::f32;
  }
}

// What an int8 step's activations, KV cache, embedding and norms are held in: bf16, the dtype
// oneDNN decompresses int8 weights into (as the GPU's fp8 step keeps its rest in bf16).
DType ActivationsOf(DType weights) { return weights == DType::kF32 ? DType::kF32 : DType::kBF16; }

memory::desc Plain(const dims& d, memory::data_type t) {
  dims strides(d.size(), 1);
  for (size_t i = d.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * d[i];
  return memory::desc(d, t, strides);
}

// body(r) for each of `rows` rows, over the OpenMP team where `split`, else on this thread without
// entering a parallel region (one that its if clause keeps to one thread still costs its entry).
template <class F>
void ForRows(int64_t rows, bool split, const F& body) {
  if (!split) {
    for (int64_t r = 0; r < rows; ++r) body(r);
    return;
  }
#pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) body(r);
}

// The weights of a matmul that computes y = x W^T, W out x in row-major (seeded values), reordered
// into the layout the matmul chose. int8: each value divided by its output row's scale (a power
// of two, so the quotient is the exact integer the value was seeded from).
memory Packed(const std::vector<float>& w, const std::vector<float>& row_scales, int64_t out,
              int64_t in, DType dt, const memory::desc& chosen) {
  std::vector<uint8_t> bytes;
  if (dt == DType::kInt8) {
    bytes.resize(w.size());
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i)
        bytes[o * in + i] = uint8_t(FloatToInt8(w[o * in + i] / row_scales[o]));
  } else {
    bytes = ToStorage(w, dt);
  }
  memory plain(memory::desc({in, out}, TypeOf(dt), {1, in}), Engine(), bytes.data());
  memory packed(chosen, Engine());
  dnnl::reorder(plain, packed).execute(Stream(), plain, packed);
  Stream().wait();
  return packed;
}

std::vector<float> Concat(std::vector<float> a, const std::vector<float>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The per-output-channel scales of a matrix with `in` inputs, as int8 checkpoints carry them: the
// seeded rows of one matrix share theirs (MatrixScale), so stored x scale is the seeded value.
std::vector<float> RowScales(int64_t out, int64_t in, DType dt) {
  return std::vector<float>(size_t(out), MatrixScale(in, dt));
}

memory ScalesMemory(const std::vector<float>& scales) {
  memory m(Plain({int64_t(scales.size())}, memory::data_type::f32), Engine());
  std::memcpy(m.get_data_handle(), scales.data(), scales.size() * sizeof(float));
  return m;
}

std::string VersionNumber() {
  return std::to_string(DNNL_VERSION_MAJOR) + "." + std::to_string(DNNL_VERSION_MINOR);
}

}  // namespace

Support OneDnnInfer::Supports(const InferShape& s, const RunConfig& cfg) {
  if (!s.Valid()) return Support::No(kInvalidInferShape);
  switch (cfg.dtype) {
    case DType::kF32:
      return Support::Yes();
    case DType::kBF16:
      return HasBf16() ? Support::Yes() : Support::No("bf16 needs avx512_bf16 or amx");
    case DType::kInt8:
      if (!kDecompresses)
        return Support::No("int8 weights: oneDNN " + VersionNumber() +
                           " has no weights decompression in its matmul (the fpmath mode's "
                           "apply_to_int, from 3.4)");
      if (!HasBf16())
        return Support::No(
            "int8 weights are decompressed into bf16 activations: needs avx512_bf16 or amx");
      return Support::Yes();
    default:
      return Support::No("the CPU step runs f32, bf16 and int8 weights; " +
                         std::string(Name(cfg.dtype)) + " weights are not offered on the CPU");
  }
}

OneDnnInfer::OneDnnInfer(const InferShape& s, const RunConfig& cfg)
    : shape_(s), dt_(cfg.dtype), act_dt_(ActivationsOf(cfg.dtype)) {
  RequireSupported(Supports(s, cfg));
  SetThreads(cfg.threads);
  const LlamaConfig& m = s.model;
  const int64_t B = s.batch, n = s.NewTokens(), T = B * n, d = m.dim, G = m.kv_heads,
                D = m.head_dim, R = m.heads / G, F = m.ffn, V = m.vocab, cap = s.CacheLen(),
                QKV = m.QDim() + 2 * m.KvDim();
  // Multiply-adds of the step's largest product: qkv, gate/up, o, down, LM head, attention's two.
  const double rows = double(T);
  const double largest =
      std::max({rows * double(d) * double(std::max(QKV, 2 * F)),
                rows * double(std::max(F, m.QDim())) * double(d), double(B) * double(d) * double(V),
                double(B * G * R * n) * double(D) * double(cap)});
  serial_ = Threads() > 1 && largest < kMinParallelMacs && B * m.heads * n * cap < kMinParallel;
  const ThreadScope plan(serial_ ? 1 : 0);
  rows_ = T;
  group_ = R;
  keys_ = cap;
  const bool low = act_dt_ == DType::kBF16, int8 = dt_ == DType::kInt8;
  const double elem = double(StorageBytes(act_dt_));
  const double scores = double(B * m.heads * n * cap);
  // Weights and cache, the embedding as floats, activations, scores, one layer's seeding copies.
  RequireHostBytes(m.StepParams() * double(StorageBytes(dt_)) + double(V * d) * 4 +
                   2.0 * double(m.layers * B * m.KvDim() * cap) * elem +
                   double(T) * double(2 * d + QKV + 2 * m.QDim() + 3 * F) * 4 +
                   scores * (4 + elem) + 3.0 * m.LayerMatmulParams() * 4);

  const memory::data_type t = TypeOf(act_dt_), wt = TypeOf(dt_), f32 = memory::data_type::f32;
  dnnl::primitive_attr plain;
  plain.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // The weights' matmuls: int8 ones decompress; the o and down projections add into the residual
  // (dst += src x W^T).
  const auto weights_attr = [&](bool sum) {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (sum) {
      dnnl::post_ops po;
      po.append_sum(1.f);
      a.set_post_ops(po);
    }
    if (int8) Decompress(&a);
    return a;
  };
  const dnnl::primitive_attr project = weights_attr(false), add = weights_attr(true);
  dnnl::primitive_attr scaled;
  scaled.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  {
    dnnl::post_ops po;
    AppendScale(&po, float(1.0 / std::sqrt(double(D))));
    scaled.set_post_ops(po);
  }
  size_t scratch = 0;
  // Each product the fastest of oneDNN's implementations for it (FastestMatmul); int8's the one
  // decompressing matmul oneDNN offers.
  std::vector<std::pair<const char*, std::string>> chosen;  // product, implementation
  int most_offered = 1;
  const auto fastest = [&](const char* what, const memory::desc& src, const memory::desc& wei,
                           const memory::desc& dst, const dnnl::primitive_attr& attr) {
    int offered = 1;
    MatmulImpl m = FastestMatmul(src, wei, dst, attr, &offered);
    most_offered = std::max(most_offered, offered);
    chosen.emplace_back(what, m.name);
    scratch = std::max(scratch, m.scratch);
    return m;
  };
  const auto linear = [&](const char* what, int64_t rows, int64_t in, int64_t out,
                          const dnnl::primitive_attr& attr) {
    const memory::desc src = Plain({rows, in}, t), wei({in, out}, wt, memory::format_tag::any),
                       dst = Plain({rows, out}, f32);
    if (!int8) return fastest(what, src, wei, dst, attr);
    // No silent fallback: a decompressing matmul oneDNN lacks, or offers only as its reference
    // implementation (3.4's only one, slower than f32 weights), is a case it cannot run.
    const std::string why = "int8 weights: oneDNN " + Version() + " has no bf16 x s8 matmul " +
                            std::to_string(rows) + "x" + std::to_string(in) + "x" +
                            std::to_string(out) + " decompressing its weights";
    try {
      MatmulImpl m = Built(MatmulPd(src, wei, dst, attr));
      if (m.name.rfind("ref", 0) == 0)
        throw Unsupported(why + " but its reference (" + m.name + ")");
      chosen.emplace_back(what, m.name);
      scratch = std::max(scratch, m.scratch);
      return m;
    } catch (const dnnl::error& e) {
      throw Unsupported(why + " (" + e.what() + ")");
    }
  };
  const MatmulImpl pd_qkv = linear("qkv", T, d, QKV, project);
  const MatmulImpl pd_o = linear("o", T, m.QDim(), d, add);
  const MatmulImpl pd_13 = linear("gate/up", T, d, 2 * F, project);
  const MatmulImpl pd_2 = linear("down", T, F, d, add);
  const MatmulImpl pd_lm = linear("LM head", B, d, V, project);
  mm_qkv_ = pd_qkv.prim;
  mm_o_ = pd_o.prim;
  mm_13_ = pd_13.prim;
  mm_2_ = pd_2.prim;
  mm_lm_ = pd_lm.prim;

  // Attention over (batch, kv head): the kv head's R query heads x n tokens as rows.
  const int64_t M = R * n;
  // The attention products run in the activations' dtype (their operands are no weights).
  const memory::desc q_md = Plain({B, G, M, D}, t);
  const memory::desc kt_md({B, G, D, cap}, t, {G * cap * D, cap * D, 1, D});
  const memory::desc v_md({B, G, cap, D}, t, {G * cap * D, cap * D, D, 1});
  const memory::desc sc_md = Plain({B, G, M, cap}, f32);
  const memory::desc sc2_md = Plain({B * G * M, cap}, f32);
  const memory::desc p_md = Plain({B, G, M, cap}, t);
  const memory::desc p2_md = Plain({B * G * M, cap}, t);
  // A decode step attends in AVX-512 loops (AttendHead, each kv head's on one thread) where the
  // CPU has them and the head dim is a multiple of 16; a prefill in oneDNN's matmuls and softmax.
  const CpuInfo& cpu = HostCpu();
  attend_in_loops_ = DLB_X86_64 && n == 1 && D % 16 == 0 && HasFlag(cpu, "avx512f") &&
                     HasFlag(cpu, "avx512bw") && HasFlag(cpu, "avx512vl");
  if (attend_in_loops_) {
    acc_.resize(size_t(B * G * R * (D + 1)));
  } else {
    mm_qk_ = fastest("scores", q_md, kt_md, sc_md, scaled).prim;
    mm_pv_ = fastest("P V", p_md, v_md, q_md, plain).prim;
    // The softmax writes P in the activations' dtype itself (bf16: no copy of the scores after
    // it).
    const auto pd_sm = SoftmaxPd(sc2_md, p2_md, plain);
    softmax_ = Softmax(pd_sm);
    scratch = std::max(scratch, pd_sm.scratchpad_desc().get_size());
  }
  masked_ = n > 1;
  if (masked_) {
    // Row (r, i) of a kv head's block is token i: it sees the keys up to FirstPos() + i.
    const memory::desc mask_md = Plain({1, 1, M, cap}, f32);
    mask_ = memory(mask_md, Engine());
    auto* mk = static_cast<float*>(mask_.get_data_handle());
    for (int64_t row = 0; row < M; ++row)
      for (int64_t j = 0; j < cap; ++j)
        mk[row * cap + j] =
            j > s.FirstPos() + row % n ? -std::numeric_limits<float>::infinity() : 0.f;
    const auto pd_mask = AddPd(sc_md, mask_md, plain);
    scratch = std::max(scratch, pd_mask.scratchpad_desc().get_size());
    mask_add_ = dnnl::binary(pd_mask);
  }

  // Activations.
  x_ = memory(Plain({T, d}, f32), Engine());
  h_ = memory(Plain({T, d}, t), Engine());
  qkv_ = memory(Plain({T, QKV}, f32), Engine());
  q_ = memory(q_md, Engine());
  scores_ = memory(sc_md, Engine());
  p_ = low ? memory(p_md, Engine()) : scores_;
  o_ = memory(q_md, Engine());
  attn_ = memory(Plain({T, m.QDim()}, t), Engine());
  gu_ = memory(Plain({T, 2 * F}, f32), Engine());
  act_ = memory(Plain({T, F}, t), Engine());
  last_ = memory(Plain({B, d}, t), Engine());
  logits_ = memory(Plain({B, V}, f32), Engine());
  scratch_ =
      memory(Plain({int64_t(std::max<size_t>(scratch, 1))}, memory::data_type::u8), Engine());

  // Seeded weights (kernels/common/infer.h), the prefilled cache, tokens, rotary angles. int8: the
  // matrices' seeded int8 values and their scales; the norms, embedding and cache in bf16.
  const uint64_t seed = cfg.seed;
  const auto pack = [&](const std::vector<float>& w, int64_t out, int64_t in,
                        const memory::desc& chosen, memory* scales) {
    const std::vector<float> rows = RowScales(out, in, dt_);
    if (int8) *scales = ScalesMemory(rows);
    return Packed(w, rows, out, in, dt_, chosen);
  };
  for (int l = 0; l < int(m.layers); ++l) {
    const auto mat = [&](LlamaTensor w, int64_t rows, int64_t cols) {
      return SeededMatrix(seed, WeightIndex(l, w), rows, cols, dt_);
    };
    Layer y;
    y.attn_norm = SeededNorm(seed, WeightIndex(l, LlamaTensor::kAttnNorm), d, act_dt_);
    y.ffn_norm = SeededNorm(seed, WeightIndex(l, LlamaTensor::kFfnNorm), d, act_dt_);
    y.wqkv =
        pack(Concat(Concat(mat(LlamaTensor::kWq, m.QDim(), d), mat(LlamaTensor::kWk, m.KvDim(), d)),
                    mat(LlamaTensor::kWv, m.KvDim(), d)),
             QKV, d, pd_qkv.weights, &y.sqkv);
    y.wo = pack(mat(LlamaTensor::kWo, d, m.QDim()), d, m.QDim(), pd_o.weights, &y.so);
    y.w13 = pack(Concat(mat(LlamaTensor::kW1, F, d), mat(LlamaTensor::kW3, F, d)), 2 * F, d,
                 pd_13.weights, &y.s13);
    y.w2 = pack(mat(LlamaTensor::kW2, d, F), d, F, pd_2.weights, &y.s2);
    for (bool value : {false, true}) {
      // Zeroed, the loops' last tile past the keys too (their masked loads never read it).
      const int64_t elements = value ? B * G * cap * D : CacheElements();
      memory c(Plain({elements}, t), Engine());
      std::memset(c.get_data_handle(), 0, size_t(elements) * StorageBytes(act_dt_));
      if (s.phase == InferPhase::kDecode) {
        const std::vector<float> prefix = SeededCache(seed, s, l, value, act_dt_);
        for (int64_t bh = 0; bh < B * G; ++bh)
          for (int64_t p = 0; p < s.ctx; ++p)
            for (int64_t e = 0; e < D; ++e)
              Store(c.get_data_handle(), CacheAt(bh, p, e, value), prefix[(bh * s.ctx + p) * D + e],
                    low);
      }
      (value ? y.v : y.k) = c;
    }
    layers_.push_back(std::move(y));
  }
  embed_ = SeededValues(TensorSeed(seed, kEmbedIndex), size_t(V * d), act_dt_);
  final_norm_ = SeededNorm(seed, kFinalNormIndex, d, act_dt_);
  lm_head_ = pack(SeededMatrix(seed, kLmHeadIndex, V, d, dt_), V, d, pd_lm.weights, &lm_scales_);
  tokens_ = SeededTokens(seed, s);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < D / 2; ++j) {
      const double angle =
          double(s.FirstPos() + i) * std::pow(m.rope_theta, -2.0 * double(j) / double(D));
      cos_.push_back(float(std::cos(angle)));
      sin_.push_back(float(std::sin(angle)));
    }

  // Every call's arguments, built once: Run() allocates nothing.
  const memory sc2(sc2_md, Engine(), scores_.get_data_handle());
  const memory p2(p2_md, Engine(), p_.get_data_handle());
  for (Layer& y : layers_) {
    const memory kt(kt_md, Engine(), y.k.get_data_handle());
    const memory vv(v_md, Engine(), y.v.get_data_handle());
    y.calls = {{&mm_qkv_, {{DNNL_ARG_SRC, h_}, {DNNL_ARG_WEIGHTS, y.wqkv}, {DNNL_ARG_DST, qkv_}}},
               {&mm_qk_, {{DNNL_ARG_SRC, q_}, {DNNL_ARG_WEIGHTS, kt}, {DNNL_ARG_DST, scores_}}},
               {&mm_pv_, {{DNNL_ARG_SRC, p_}, {DNNL_ARG_WEIGHTS, vv}, {DNNL_ARG_DST, o_}}},
               {&mm_o_, {{DNNL_ARG_SRC, attn_}, {DNNL_ARG_WEIGHTS, y.wo}, {DNNL_ARG_DST, x_}}},
               {&mm_13_, {{DNNL_ARG_SRC, h_}, {DNNL_ARG_WEIGHTS, y.w13}, {DNNL_ARG_DST, gu_}}},
               {&mm_2_, {{DNNL_ARG_SRC, act_}, {DNNL_ARG_WEIGHTS, y.w2}, {DNNL_ARG_DST, x_}}}};
    for (Call& c : y.calls) c.args[DNNL_ARG_SCRATCHPAD] = scratch_;
    if (int8) {
      AddWeightScales(&y.calls[0].args, y.sqkv);
      AddWeightScales(&y.calls[3].args, y.so);
      AddWeightScales(&y.calls[4].args, y.s13);
      AddWeightScales(&y.calls[5].args, y.s2);
    }
  }
  softmax_args_ = {{DNNL_ARG_SRC, sc2}, {DNNL_ARG_DST, p2}, {DNNL_ARG_SCRATCHPAD, scratch_}};
  if (masked_)
    mask_args_ = {{DNNL_ARG_SRC_0, scores_},
                  {DNNL_ARG_SRC_1, mask_},
                  {DNNL_ARG_DST, scores_},
                  {DNNL_ARG_SCRATCHPAD, scratch_}};
  lm_args_ = {{DNNL_ARG_SRC, last_},
              {DNNL_ARG_WEIGHTS, lm_head_},
              {DNNL_ARG_DST, logits_},
              {DNNL_ARG_SCRATCHPAD, scratch_}};
  if (int8) AddWeightScales(&lm_args_, lm_scales_);

  Poison(logits_, DType::kF32);
  const std::string held =
      int8 ? "int8 weights with per-channel f32 scales decompressed to bf16 in the matmul, bf16 "
             "activations and KV cache"
           : std::string(Name(dt_)) + " weights and KV cache";
  // The products' implementations, "brg:avx512_core_bf16 matmuls" where one won them all.
  std::string impls;
  for (const auto& [what, name] : chosen)
    if (impls.find(name) == std::string::npos) impls += (impls.empty() ? "" : ", ") + name;
  if (impls.find(", ") != std::string::npos) {
    impls.clear();
    for (const auto& [what, name] : chosen)
      impls += std::string(impls.empty() ? "" : ", ") + what + " " + name;
  }
  label_ = impls + " matmuls" +
           (int8 ? std::string()
                 : " (each product the fastest of oneDNN's implementations, " +
                       std::to_string(most_offered) + " at most, timed when built)") +
           (attend_in_loops_ ? "; attention in AVX-512 loops" : "") + "; " + held +
           ", f32 residual; threads " +
           (serial_ ? "1 of the run's " + std::to_string(plan.before()) +
                          " (every product below 2^16 multiply-adds: too small to split)"
                    : std::to_string(Threads()));
}

int64_t OneDnnInfer::CacheAt(int64_t bh, int64_t pos, int64_t e, bool value) const {
  const int64_t D = shape_.model.head_dim;
  if (!attend_in_loops_ || value) return (bh * keys_ + pos) * D + e;
  const int64_t tiles = (keys_ + kKeyTile - 1) / kKeyTile;
  return ((bh * tiles + pos / kKeyTile) * D + e) * kKeyTile + pos % kKeyTile;
}

int64_t OneDnnInfer::CacheElements() const {
  const int64_t bh = shape_.batch * shape_.model.kv_heads;
  return CacheAt(bh, 0, 0, false);  // one block past the last
}

bool OneDnnInfer::Split(int64_t elements) const { return !serial_ && elements >= kMinParallel; }

void OneDnnInfer::Norm(const float* x, const std::vector<float>& w, int64_t rows, int64_t stride,
                       void* out) {
  const int64_t d = shape_.model.dim;
  const bool low = act_dt_ == DType::kBF16;
  const size_t elem = StorageBytes(act_dt_);
  ForRows(rows, Split(rows * d), [&](int64_t r) {
    NormRow(x + r * stride, w.data(), d, shape_.model.norm_eps,
            static_cast<uint8_t*>(out) + size_t(r * d) * elem, low);
  });
}

void OneDnnInfer::RopeAndAppend(const Layer& y) {
  const LlamaConfig& m = shape_.model;
  const int64_t n = shape_.NewTokens(), G = m.kv_heads, R = group_, D = m.head_dim, half = D / 2,
                cap = keys_, QKV = m.QDim() + 2 * m.KvDim();
  const bool low = act_dt_ == DType::kBF16;
  const size_t elem = StorageBytes(act_dt_);
  const auto* qkv = static_cast<const float*>(qkv_.get_data_handle());
  auto* q = static_cast<uint8_t*>(q_.get_data_handle());
  auto* kc = static_cast<uint8_t*>(y.k.get_data_handle());
  auto* vc = static_cast<uint8_t*>(y.v.get_data_handle());
  ForRows(rows_, Split(rows_ * QKV), [&](int64_t t) {
    const int64_t b = t / n, i = t % n, pos = shape_.FirstPos() + i;
    const float* row = qkv + t * QKV;
    const float* c = cos_.data() + i * half;
    const float* s = sin_.data() + i * half;
    for (int64_t h = 0; h < m.heads; ++h)
      RotateRow(row + h * D, c, s, half,
                q + size_t((((b * G + h / R) * R + h % R) * n + i) * D) * elem, low);
    for (int64_t g = 0; g < G; ++g) {
      const size_t at = size_t(((b * G + g) * cap + pos) * D) * elem;
      if (attend_in_loops_) {
        // The key rotated into its block's scratch (free until Attend()), then down its column of
        // the transposed block.
        float* key = acc_.data() + (b * G + g) * R * (D + 1);
        RotateRow(row + m.QDim() + g * D, c, s, half, key, false);
        for (int64_t e = 0; e < D; ++e) Store(kc, CacheAt(b * G + g, pos, e, false), key[e], low);
      } else {
        RotateRow(row + m.QDim() + g * D, c, s, half, kc + at, low);
      }
      StoreRow(row + m.QDim() + m.KvDim() + g * D, D, vc + at, low);
    }
  });
}

void OneDnnInfer::HeadsBack() {
  const LlamaConfig& m = shape_.model;
  const int64_t n = shape_.NewTokens(), G = m.kv_heads, R = group_, D = m.head_dim;
  const size_t row = size_t(D) * StorageBytes(act_dt_);
  const auto* o = static_cast<const uint8_t*>(o_.get_data_handle());
  auto* a = static_cast<uint8_t*>(attn_.get_data_handle());
  ForRows(rows_, Split(rows_ * m.QDim()), [&](int64_t t) {
    const int64_t b = t / n, i = t % n;
    for (int64_t h = 0; h < m.heads; ++h)
      std::memcpy(a + size_t(t * m.heads + h) * row,
                  o + size_t(((b * G + h / R) * R + h % R) * n + i) * row, row);
  });
}

void OneDnnInfer::SwiGlu() {
  const int64_t F = shape_.model.ffn;
  const bool low = act_dt_ == DType::kBF16;
  const size_t elem = StorageBytes(act_dt_);
  const auto* gu = static_cast<const float*>(gu_.get_data_handle());
  auto* act = static_cast<uint8_t*>(act_.get_data_handle());
  ForRows(rows_, Split(rows_ * F), [&](int64_t t) {
    SwiGluRow(gu + t * 2 * F, gu + t * 2 * F + F, F, act + size_t(t * F) * elem, low);
  });
}

#if DLB_X86_64
void OneDnnInfer::Attend(const Layer& y) {
  const LlamaConfig& m = shape_.model;
  const int64_t B = shape_.batch, G = m.kv_heads, R = group_, D = m.head_dim, cap = keys_;
  const float scale = float(1.0 / std::sqrt(double(D)));
  // Split over the team as a step's products are: by multiply-adds (of the scores).
  const bool split = !serial_ && double(B * m.heads * cap * D) >= kMinParallelMacs;
  ForRows(B * G, split, [&](int64_t bg) {
    // q_'s rows (b, g, 0..R-1), the cache's block (b, g), attn_'s heads g R .. g R + R - 1 of b;
    // the block's scores in scores_, its scratch in acc_.
    const int64_t b = bg / G, g = bg % G, q_at = bg * R * D, k_at = CacheAt(bg, 0, 0, false),
                  v_at = CacheAt(bg, 0, 0, true), out_at = (b * m.heads + g * R) * D;
    float* p = static_cast<float*>(scores_.get_data_handle()) + bg * R * cap;
    float* acc = acc_.data() + bg * R * (D + 1);
    const auto run = [&](auto* type) {
      using T = std::remove_pointer_t<decltype(type)>;
      AttendHead(static_cast<const T*>(q_.get_data_handle()) + q_at,
                 static_cast<const T*>(y.k.get_data_handle()) + k_at,
                 static_cast<const T*>(y.v.get_data_handle()) + v_at, R, cap, D, scale, p, acc,
                 static_cast<T*>(attn_.get_data_handle()) + out_at);
    };
    if (act_dt_ == DType::kBF16) {
      run(static_cast<uint16_t*>(nullptr));
    } else {
      run(static_cast<float*>(nullptr));
    }
  });
}
#else
void OneDnnInfer::Attend(const Layer&) {
  throw Error("onednn infer: the decode attention's loops are x86-64 only");
}
#endif  // DLB_X86_64

void OneDnnInfer::Run() {
  const ThreadScope threads(serial_ ? 1 : 0);
  const LlamaConfig& m = shape_.model;
  const int64_t d = m.dim, n = shape_.NewTokens();
  auto* x = static_cast<float*>(x_.get_data_handle());
  ForRows(rows_, Split(rows_ * d), [&](int64_t t) {
    std::memcpy(x + t * d, embed_.data() + tokens_[t] * d, size_t(d) * sizeof(float));
  });
  dnnl::stream& st = Stream();
  for (const Layer& y : layers_) {
    Norm(x, y.attn_norm, rows_, d, h_.get_data_handle());
    y.calls[0].prim->execute(st, y.calls[0].args);
    RopeAndAppend(y);
    if (attend_in_loops_) {
      Attend(y);
    } else {
      y.calls[1].prim->execute(st, y.calls[1].args);
      if (masked_) mask_add_.execute(st, mask_args_);
      softmax_.execute(st, softmax_args_);
      y.calls[2].prim->execute(st, y.calls[2].args);
      HeadsBack();
    }
    y.calls[3].prim->execute(st, y.calls[3].args);
    Norm(x, y.ffn_norm, rows_, d, h_.get_data_handle());
    y.calls[4].prim->execute(st, y.calls[4].args);
    SwiGlu();
    y.calls[5].prim->execute(st, y.calls[5].args);
  }
  Norm(x + (n - 1) * d, final_norm_, shape_.batch, n * d, last_.get_data_handle());
  mm_lm_.execute(st, lm_args_);
}

HostTensor OneDnnInfer::Output() const {
  Stream().wait();
  const int64_t count = shape_.batch * shape_.model.vocab;
  const auto* p = static_cast<const float*>(logits_.get_data_handle());
  return {{shape_.batch, shape_.model.vocab}, std::vector<float>(p, p + count)};
}

double OneDnnInfer::KvBytes() const {
  return shape_.KvReadBytes(act_dt_) + shape_.KvWrittenBytes(act_dt_);
}

Cost OneDnnInfer::cost() const {
  return {shape_.Flops(), shape_.Bytes(dt_, act_dt_), double(rows_)};
}

}  // namespace dlb::onednn
