#include "kernels/onednn/attn.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "kernels/common/fill.h"
#include "kernels/common/memory.h"
#include "kernels/onednn/context.h"

namespace dlb::onednn {

namespace {

using dnnl::memory;
using dims = memory::dims;

// A primitive as built, with what the op needs to know of it.
struct Built {
  dnnl::primitive prim;
  memory::desc scratchpad;
  std::string impl;  // "gemm:jit", "ref:any", ...
};

template <class Prim, class Pd>
Built Make(const Pd& pd) {
  return {Prim(pd), pd.scratchpad_desc(), pd.impl_info_str()};
}

// The one place where oneDNN 2 and 3 differ for this file: oneDNN 2 builds a primitive descriptor
// from an operation descriptor, puts a scale in front of every eltwise post-op, and offers the
// softmax with distinct source and destination descriptors as softmax_v2; oneDNN 3 takes the
// engine first and calls that one softmax.
#if DNNL_VERSION_MAJOR >= 3
using SoftmaxFwd = dnnl::softmax_forward;
using SoftmaxBwd = dnnl::softmax_backward;
Built Matmul(const memory::desc& src, const memory::desc& wei, const memory::desc& dst,
             const dnnl::primitive_attr& attr) {
  return Make<dnnl::matmul>(dnnl::matmul::primitive_desc(Engine(), src, wei, dst, attr));
}
void AppendScale(dnnl::post_ops* po, float scale) {
  po->append_eltwise(dnnl::algorithm::eltwise_linear, scale, 0.f);
}
Built Binary(const memory::desc& src0, const memory::desc& src1, const memory::desc& dst,
             const dnnl::primitive_attr& attr) {
  return Make<dnnl::binary>(
      dnnl::binary::primitive_desc(Engine(), dnnl::algorithm::binary_add, src0, src1, dst, attr));
}
SoftmaxFwd::primitive_desc SoftmaxFwdPd(const memory::desc& d, const dnnl::primitive_attr& attr) {
  return SoftmaxFwd::primitive_desc(Engine(), dnnl::prop_kind::forward_training,
                                    dnnl::algorithm::softmax_accurate, d, d, 1, attr);
}
Built SoftmaxBwdOf(const memory::desc& d, const SoftmaxFwd::primitive_desc& hint,
                   const dnnl::primitive_attr& attr) {
  return Make<SoftmaxBwd>(SoftmaxBwd::primitive_desc(Engine(), dnnl::algorithm::softmax_accurate, d,
                                                     d, d, 1, hint, attr));
}
#else
using SoftmaxFwd = dnnl::softmax_v2_forward;
using SoftmaxBwd = dnnl::softmax_v2_backward;
Built Matmul(const memory::desc& src, const memory::desc& wei, const memory::desc& dst,
             const dnnl::primitive_attr& attr) {
  return Make<dnnl::matmul>(
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), attr, Engine()));
}
void AppendScale(dnnl::post_ops* po, float scale) {
  po->append_eltwise(1.f, dnnl::algorithm::eltwise_linear, scale, 0.f);
}
Built Binary(const memory::desc& src0, const memory::desc& src1, const memory::desc& dst,
             const dnnl::primitive_attr& attr) {
  return Make<dnnl::binary>(dnnl::binary::primitive_desc(
      dnnl::binary::desc(dnnl::algorithm::binary_add, src0, src1, dst), attr, Engine()));
}
SoftmaxFwd::primitive_desc SoftmaxFwdPd(const memory::desc& d, const dnnl::primitive_attr& attr) {
  return SoftmaxFwd::primitive_desc(SoftmaxFwd::desc(dnnl::prop_kind::forward_training,
                                                     dnnl::algorithm::softmax_accurate, d, d, 1),
                                    attr, Engine());
}
Built SoftmaxBwdOf(const memory::desc& d, const SoftmaxFwd::primitive_desc& hint,
                   const dnnl::primitive_attr& attr) {
  return Make<SoftmaxBwd>(SoftmaxBwd::primitive_desc(
      SoftmaxBwd::desc(dnnl::algorithm::softmax_accurate, d, d, d, 1), attr, Engine(), hint));
}
#endif

Built Reorder(const memory::desc& src, const memory::desc& dst, const dnnl::primitive_attr& attr) {
  return Make<dnnl::reorder>(dnnl::reorder::primitive_desc(Engine(), src, Engine(), dst, attr));
}

memory::data_type DataType(DType dt) {
  return dt == DType::kBF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

memory::desc Desc(const dims& d, memory::data_type t, const dims& strides) {
  return memory::desc(d, t, strides);
}

// A view of `whole` starting `offset` elements in, described by `d`.
memory View(const memory& whole, const memory::desc& d, int64_t offset, DType dt) {
  auto* base = static_cast<char*>(whole.get_data_handle());
  return memory(d, Engine(), base + size_t(offset) * StorageBytes(dt));
}

// The largest divisor of n that is at most cap (at least 1).
int64_t LargestDivisorUpTo(int64_t n, int64_t cap) {
  for (int64_t d = std::max<int64_t>(1, std::min(n, cap)); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

double GroupScoreBytes(const AttnShape& s) {
  return 4.0 * double(s.heads / s.kv_heads) * double(s.seq) * double(s.seq);
}

}  // namespace

Support OneDnnAttn::Supports(const AttnShape& s, const RunConfig& cfg) {
  if (!s.Valid())
    return Support::No("attention sizes must be positive, heads a multiple of kv_heads");
  switch (cfg.dtype) {
    case DType::kF32:
      break;
    case DType::kTF32:
      return Support::No("tf32 is a GPU tensor-core format; x86 CPUs have no tf32 math (use f32)");
    case DType::kBF16:
      if (!HasBf16()) return Support::No("bf16 needs avx512_bf16 or amx");
      break;
    case DType::kF16:
      return Support::No("the CPU attention runs f32 and bf16, not f16");
  }
  const double group = GroupScoreBytes(s);
  if (group > kMaxGroupBytes) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "one kv group's S x S scores need %.1f GiB (%lld heads x %lld^2 f32), above the "
                  "CPU op's %.0f GiB",
                  group / double(1 << 30), static_cast<long long>(s.heads / s.kv_heads),
                  static_cast<long long>(s.seq), kMaxGroupBytes / double(1 << 30));
    return Support::No(buf);
  }
  return Support::Yes();
}

// The chunk's memory descriptors, the two attributes, and what the steps added so far need: the
// implementations they run and the largest scratchpad.
struct OneDnnAttn::Plan {
  Plan(const AttnShape& s, DType dtype, int64_t groups_per_chunk)
      : n(groups_per_chunk),
        chunks(s.batch * s.kv_heads / groups_per_chunk),
        M(s.heads / s.kv_heads * s.seq),
        S(s.seq),
        D(s.head_dim),
        t(DataType(dtype)) {
    const int64_t R = s.heads / s.kv_heads;
    const memory::data_type f32 = memory::data_type::f32;
    // Per chunk of n kv groups: query-side rows [n, M, D], kv-side [n, S, D] (or transposed), the
    // scores [n, M, S] (transposed: [n, S, M]); 2-D for the row softmax, 4-D for the mask.
    q_md = Desc({n, M, D}, t, {M * D, D, 1});
    kv_md = Desc({n, S, D}, t, {S * D, D, 1});
    kvt_md = Desc({n, D, S}, t, {S * D, 1, D});
    sc_md = Desc({n, M, S}, f32, {M * S, S, 1});
    sc2_md = Desc({n * M, S}, f32, {S, 1});
    sc4_md = Desc({n, R, S, S}, f32, {R * S * S, S * S, S, 1});
    p_md = Desc({n, M, S}, t, {M * S, S, 1});
    pt_md = Desc({n, S, M}, t, {M * S, 1, S});
    mask_md = Desc({1, 1, S, S}, f32, {S * S, S * S, S, 1});
    low2_md = Desc({n * M, S}, t, {S, 1});
    plain.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    scaled.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops po;
    AppendScale(&po, float(s.Scale()));
    scaled.set_post_ops(po);
  }

  // Adds a step to `steps`; `views(g0)` gives its arguments for the chunk whose first group is g0.
  template <class Views>
  void Add(std::vector<Step>* steps, const std::string& what, const Built& b, Views views) {
    Step st{b.prim, {}};
    for (int64_t c = 0; c < chunks; ++c) st.args.push_back(views(c * n));
    steps->push_back(std::move(st));
    scratch = std::max(scratch, b.scratchpad.get_size());
    impls.insert(what + " " + b.impl);
  }
  int64_t QOffset(int64_t g0) const { return g0 * M * D; }
  int64_t KvOffset(int64_t g0) const { return g0 * S * D; }

  const int64_t n, chunks, M, S, D;  // M: the stacked query rows of one kv group
  const memory::data_type t;
  memory::desc q_md, kv_md, kvt_md, sc_md, sc2_md, sc4_md, p_md, pt_md, mask_md, low2_md;
  dnnl::primitive_attr plain;
  dnnl::primitive_attr scaled;            // not a copy of plain: attributes are shared handles
  SoftmaxFwd::primitive_desc softmax_pd;  // the backward's hint
  std::set<std::string> impls;
  size_t scratch = 0;
};

OneDnnAttn::OneDnnAttn(const AttnShape& s, const RunConfig& cfg) : shape_(s), dtype_(cfg.dtype) {
  RequireSupported(Supports(s, cfg));
  SetThreads(cfg.threads);
  Allocate(cfg.seed);
  Plan plan(shape_, dtype_, groups_per_chunk_);
  AddScoreSteps(plan);
  if (s.pass == AttnPass::kBwd)
    AddBackwardSteps(plan);
  else
    AddForwardSteps(plan);
  scratchpad_ = memory(
      Desc({int64_t(std::max<size_t>(plan.scratch, 1))}, memory::data_type::u8, {1}), Engine());
  for (Step& st : steps_)
    for (Args& a : st.args) a[DNNL_ARG_SCRATCHPAD] = scratchpad_;
  if (s.pass == AttnPass::kBwd) {
    Poison(dq_, dtype_);
    Poison(dk_, dtype_);
    Poison(dv_, dtype_);
  } else {
    Poison(o_, dtype_);
  }
  std::string used;
  for (const std::string& i : plan.impls) used += (used.empty() ? "" : ", ") + i;
  label_ = used + "; " + std::string(Name(dtype_)) + ", " + std::to_string(plan.chunks) +
           " chunk(s) of " + std::to_string(plan.n) + " kv group(s)" +
           (s.pass == AttnPass::kBwd ? ", bwd recomputes P (5 matmuls)" : "") + ", threads " +
           std::to_string(Threads());
}

void OneDnnAttn::Allocate(uint64_t seed) {
  const AttnShape& s = shape_;
  const bool bwd = s.pass == AttnPass::kBwd, low = dtype_ != DType::kF32;
  const int64_t M = s.heads / s.kv_heads * s.seq, S = s.seq;
  const int64_t chunks_total = s.batch * s.kv_heads;
  groups_per_chunk_ = LargestDivisorUpTo(
      chunks_total, std::max<int64_t>(1, int64_t(kChunkBytes / GroupScoreBytes(s))));
  const int64_t n = groups_per_chunk_;
  const double elem = double(StorageBytes(dtype_)), score_elems = double(n * M * S);
  // Inputs and outputs (and a float staging copy while seeding), the score buffers, the mask.
  RequireHostBytes((bwd ? 7.0 : 4.0) * double(s.QElems()) * (elem + 4) +
                   score_elems * (bwd ? 8.0 + 2 * elem : 4.0 + elem) + 4.0 * double(S * S));
  const memory::data_type t = DataType(dtype_), f32 = memory::data_type::f32;
  const auto whole = [&](int64_t elems, memory::data_type type) {
    return memory(Desc({elems}, type, {1}), Engine());
  };
  q_ = whole(s.QElems(), t);
  k_ = whole(s.KvElems(), t);
  v_ = whole(s.KvElems(), t);
  SeedStorage(q_.get_data_handle(), TensorSeed(seed, 0), size_t(s.QElems()), dtype_);
  SeedStorage(k_.get_data_handle(), TensorSeed(seed, 1), size_t(s.KvElems()), dtype_);
  SeedStorage(v_.get_data_handle(), TensorSeed(seed, 2), size_t(s.KvElems()), dtype_);
  if (bwd) {
    do_ = whole(s.QElems(), t);
    SeedStorage(do_.get_data_handle(), TensorSeed(seed, 3), size_t(s.QElems()), dtype_);
    dq_ = whole(s.QElems(), t);
    dk_ = whole(s.KvElems(), t);
    dv_ = whole(s.KvElems(), t);
  } else {
    o_ = whole(s.QElems(), t);
  }
  scores_ = whole(n * M * S, f32);
  if (bwd) dp_ = whole(n * M * S, f32);
  if (low) low_ = whole(n * M * S, t);
  if (s.causal) {
    mask_ = whole(S * S, f32);
    auto* m = static_cast<float*>(mask_.get_data_handle());
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < S; ++j)
        m[i * S + j] = j > i ? -std::numeric_limits<float>::infinity() : 0.f;
  }
}

void OneDnnAttn::AddScoreSteps(Plan& p) {
  const bool low = dtype_ != DType::kF32;
  // S = scale Q K^T, masked, softmax in place.
  p.Add(&steps_, "matmul", Matmul(p.q_md, p.kvt_md, p.sc_md, p.scaled), [&](int64_t g0) {
    return Args{{DNNL_ARG_SRC, View(q_, p.q_md, p.QOffset(g0), dtype_)},
                {DNNL_ARG_WEIGHTS, View(k_, p.kvt_md, p.KvOffset(g0), dtype_)},
                {DNNL_ARG_DST, View(scores_, p.sc_md, 0, DType::kF32)}};
  });
  if (shape_.causal)
    p.Add(&steps_, "binary", Binary(p.sc4_md, p.mask_md, p.sc4_md, p.plain), [&](int64_t) {
      const memory sc = View(scores_, p.sc4_md, 0, DType::kF32);
      return Args{{DNNL_ARG_SRC_0, sc},
                  {DNNL_ARG_SRC_1, View(mask_, p.mask_md, 0, DType::kF32)},
                  {DNNL_ARG_DST, sc}};
    });
  p.softmax_pd = SoftmaxFwdPd(p.sc2_md, p.plain);
  p.Add(&steps_, "softmax", Make<SoftmaxFwd>(p.softmax_pd), [&](int64_t) {
    const memory sc = View(scores_, p.sc2_md, 0, DType::kF32);
    return Args{{DNNL_ARG_SRC, sc}, {DNNL_ARG_DST, sc}};
  });
  if (low)
    p.Add(&steps_, "reorder", Reorder(p.sc2_md, p.low2_md, p.plain), [&](int64_t) {
      return Args{{DNNL_ARG_FROM, View(scores_, p.sc2_md, 0, DType::kF32)},
                  {DNNL_ARG_TO, View(low_, p.low2_md, 0, dtype_)}};
    });
}

void OneDnnAttn::AddForwardSteps(Plan& p) {
  // The score-side buffer the matmul reads P from: the f32 one itself, or its bf16 copy.
  const memory& p_low = dtype_ != DType::kF32 ? low_ : scores_;
  // O = P V.
  p.Add(&steps_, "matmul", Matmul(p.p_md, p.kv_md, p.q_md, p.plain), [&](int64_t g0) {
    return Args{{DNNL_ARG_SRC, View(p_low, p.p_md, 0, dtype_)},
                {DNNL_ARG_WEIGHTS, View(v_, p.kv_md, p.KvOffset(g0), dtype_)},
                {DNNL_ARG_DST, View(o_, p.q_md, p.QOffset(g0), dtype_)}};
  });
}

void OneDnnAttn::AddBackwardSteps(Plan& p) {
  const bool low = dtype_ != DType::kF32;
  // The score-side buffers the matmuls read P and dS from: the f32 ones, or their bf16 copy.
  const memory& p_low = low ? low_ : scores_;
  const memory& ds_low = low ? low_ : dp_;
  // dV = P^T dO (the group's heads summed by the reduction over M).
  p.Add(&steps_, "matmul", Matmul(p.pt_md, p.q_md, p.kv_md, p.plain), [&](int64_t g0) {
    return Args{{DNNL_ARG_SRC, View(p_low, p.pt_md, 0, dtype_)},
                {DNNL_ARG_WEIGHTS, View(do_, p.q_md, p.QOffset(g0), dtype_)},
                {DNNL_ARG_DST, View(dv_, p.kv_md, p.KvOffset(g0), dtype_)}};
  });
  // dP = dO V^T; dS = softmax_backward(P, dP), in place.
  p.Add(&steps_, "matmul", Matmul(p.q_md, p.kvt_md, p.sc_md, p.plain), [&](int64_t g0) {
    return Args{{DNNL_ARG_SRC, View(do_, p.q_md, p.QOffset(g0), dtype_)},
                {DNNL_ARG_WEIGHTS, View(v_, p.kvt_md, p.KvOffset(g0), dtype_)},
                {DNNL_ARG_DST, View(dp_, p.sc_md, 0, DType::kF32)}};
  });
  p.Add(&steps_, "softmax_bwd", SoftmaxBwdOf(p.sc2_md, p.softmax_pd, p.plain), [&](int64_t) {
    const memory dp = View(dp_, p.sc2_md, 0, DType::kF32);
    return Args{{DNNL_ARG_DST, View(scores_, p.sc2_md, 0, DType::kF32)},
                {DNNL_ARG_DIFF_DST, dp},
                {DNNL_ARG_DIFF_SRC, dp}};
  });
  if (low)
    p.Add(&steps_, "reorder", Reorder(p.sc2_md, p.low2_md, p.plain), [&](int64_t) {
      return Args{{DNNL_ARG_FROM, View(dp_, p.sc2_md, 0, DType::kF32)},
                  {DNNL_ARG_TO, View(low_, p.low2_md, 0, dtype_)}};
    });
  // dQ = scale dS K; dK = scale dS^T Q.
  p.Add(&steps_, "matmul", Matmul(p.p_md, p.kv_md, p.q_md, p.scaled), [&](int64_t g0) {
    return Args{{DNNL_ARG_SRC, View(ds_low, p.p_md, 0, dtype_)},
                {DNNL_ARG_WEIGHTS, View(k_, p.kv_md, p.KvOffset(g0), dtype_)},
                {DNNL_ARG_DST, View(dq_, p.q_md, p.QOffset(g0), dtype_)}};
  });
  p.Add(&steps_, "matmul", Matmul(p.pt_md, p.q_md, p.kv_md, p.scaled), [&](int64_t g0) {
    return Args{{DNNL_ARG_SRC, View(ds_low, p.pt_md, 0, dtype_)},
                {DNNL_ARG_WEIGHTS, View(q_, p.q_md, p.QOffset(g0), dtype_)},
                {DNNL_ARG_DST, View(dk_, p.kv_md, p.KvOffset(g0), dtype_)}};
  });
}

void OneDnnAttn::Run() {
  const size_t chunks = steps_.empty() ? 0 : steps_.front().args.size();
  for (size_t c = 0; c < chunks; ++c)
    for (const Step& st : steps_) st.prim.execute(Stream(), st.args[c]);
}

float OneDnnAttn::ElementAt(int64_t flat) const {
  const memory* m = &o_;
  if (shape_.pass == AttnPass::kBwd) {
    m = &dq_;
    if (flat >= shape_.QElems()) {
      flat -= shape_.QElems();
      m = &dk_;
      if (flat >= shape_.KvElems()) {
        flat -= shape_.KvElems();
        m = &dv_;
      }
    }
  }
  const void* p = m->get_data_handle();
  if (dtype_ == DType::kBF16) return Bf16ToFloat(static_cast<const uint16_t*>(p)[flat]);
  return static_cast<const float*>(p)[flat];
}

HostTensor OneDnnAttn::Output() const {
  Stream().wait();
  const int64_t n =
      shape_.pass == AttnPass::kFwd ? shape_.QElems() : shape_.QElems() + 2 * shape_.KvElems();
  HostTensor out{{n}, {}};
  if (shape_.pass == AttnPass::kFwd) {
    out.data = FromStorage(o_.get_data_handle(), size_t(n), dtype_);
    return out;
  }
  for (const memory* m : {&dq_, &dk_, &dv_}) {
    const size_t elems = size_t(m == &dq_ ? shape_.QElems() : shape_.KvElems());
    const std::vector<float> part = FromStorage(m->get_data_handle(), elems, dtype_);
    out.data.insert(out.data.end(), part.begin(), part.end());
  }
  return out;
}

HostTensor OneDnnAttn::OutputAt(const std::vector<int64_t>& flat) const {
  Stream().wait();
  const int64_t n =
      shape_.pass == AttnPass::kFwd ? shape_.QElems() : shape_.QElems() + 2 * shape_.KvElems();
  HostTensor out{{n}, {}};
  if (!IndicesBelow(flat, n)) return out;
  out.data.reserve(flat.size());
  for (int64_t i : flat) out.data.push_back(ElementAt(i));
  return out;
}

Cost OneDnnAttn::cost() const {
  const AttnShape& s = shape_;
  const double elem = double(StorageBytes(dtype_)), q = double(s.QElems()),
               kv = double(s.KvElems());
  // The family's bytes (docs/families/attn.md), the same for every backend: forward Q, K, V in and
  // O out; backward Q, K, V, O, dO in and dQ, dK, dV out.
  if (s.pass == AttnPass::kFwd) return {s.FwdFlops(), (2 * q + 2 * kv) * elem, double(s.batch)};
  return {s.BwdFlops(), (4 * q + 4 * kv) * elem, double(s.batch)};
}

}  // namespace dlb::onednn
