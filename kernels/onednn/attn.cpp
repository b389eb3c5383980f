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

OneDnnAttn::OneDnnAttn(const AttnShape& s, const RunConfig& cfg) : shape_(s), dtype_(cfg.dtype) {
  RequireSupported(Supports(s, cfg));
  SetThreads(cfg.threads);
  const bool bwd = s.pass == AttnPass::kBwd, low = dtype_ != DType::kF32;
  const int64_t B = s.batch, G = s.kv_heads, R = s.heads / s.kv_heads, S = s.seq, D = s.head_dim;
  const int64_t M = R * S;  // the stacked query rows of one kv group
  const int64_t chunks_total = B * G;
  groups_per_chunk_ = LargestDivisorUpTo(
      chunks_total, std::max<int64_t>(1, int64_t(kChunkBytes / GroupScoreBytes(s))));
  const int64_t n = groups_per_chunk_, chunks = chunks_total / n;
  const double elem = double(StorageBytes(dtype_)), score_elems = double(n * M * S);
  // Inputs and outputs (and a float staging copy while seeding), the score buffers, the mask.
  RequireHostBytes((bwd ? 7.0 : 4.0) * double(s.QElems()) * (elem + 4) +
                   score_elems * (bwd ? 8.0 + 2 * elem : 4.0 + elem) + 4.0 * double(S * S));

  const memory::data_type t = DataType(dtype_), f32 = memory::data_type::f32;
  const auto whole = [&](int64_t elems, memory::data_type type) {
    return memory(Desc({elems}, type, {1}), Engine());
  };
  const uint64_t seed = cfg.seed;
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

  // Per chunk of n kv groups: query-side rows [n, M, D], kv-side [n, S, D] (or transposed), the
  // scores [n, M, S] (transposed: [n, S, M]); 2-D for the row softmax, 4-D for the mask.
  const memory::desc q_md = Desc({n, M, D}, t, {M * D, D, 1});
  const memory::desc kv_md = Desc({n, S, D}, t, {S * D, D, 1});
  const memory::desc kvt_md = Desc({n, D, S}, t, {S * D, 1, D});
  const memory::desc sc_md = Desc({n, M, S}, f32, {M * S, S, 1});
  const memory::desc sc2_md = Desc({n * M, S}, f32, {S, 1});
  const memory::desc sc4_md = Desc({n, R, S, S}, f32, {R * S * S, S * S, S, 1});
  const memory::desc p_md = Desc({n, M, S}, t, {M * S, S, 1});
  const memory::desc pt_md = Desc({n, S, M}, t, {M * S, 1, S});
  const memory::desc mask_md = Desc({1, 1, S, S}, f32, {S * S, S * S, S, 1});

  dnnl::primitive_attr plain;
  plain.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::primitive_attr scaled;  // not a copy of plain: attributes are shared handles
  scaled.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  {
    dnnl::post_ops po;
    AppendScale(&po, float(s.Scale()));
    scaled.set_post_ops(po);
  }

  // The score-side buffer a matmul reads P or dS from: the f32 one itself, or its bf16 copy.
  const memory& p_low = low ? low_ : scores_;
  const memory& ds_low = low ? low_ : dp_;
  std::set<std::string> impls;
  size_t scratch = 0;
  // Adds a step; `views(chunk)` gives its arguments for that chunk (first group c * n).
  const auto add = [&](const std::string& what, const Built& b, auto views) {
    Step st{b.prim, {}};
    for (int64_t c = 0; c < chunks; ++c) st.args.push_back(views(c * n));
    steps_.push_back(std::move(st));
    scratch = std::max(scratch, b.scratchpad.get_size());
    impls.insert(what + " " + b.impl);
  };
  const auto qoff = [&](int64_t g0) { return g0 * M * D; };
  const auto kvoff = [&](int64_t g0) { return g0 * S * D; };

  // S = scale Q K^T, masked, softmax in place.
  add("matmul", Matmul(q_md, kvt_md, sc_md, scaled), [&](int64_t g0) {
    return Args{{DNNL_ARG_SRC, View(q_, q_md, qoff(g0), dtype_)},
                {DNNL_ARG_WEIGHTS, View(k_, kvt_md, kvoff(g0), dtype_)},
                {DNNL_ARG_DST, View(scores_, sc_md, 0, DType::kF32)}};
  });
  if (s.causal) {
    mask_ = whole(S * S, f32);
    auto* m = static_cast<float*>(mask_.get_data_handle());
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < S; ++j)
        m[i * S + j] = j > i ? -std::numeric_limits<float>::infinity() : 0.f;
    add("binary", Binary(sc4_md, mask_md, sc4_md, plain), [&](int64_t) {
      const memory sc = View(scores_, sc4_md, 0, DType::kF32);
      return Args{{DNNL_ARG_SRC_0, sc},
                  {DNNL_ARG_SRC_1, View(mask_, mask_md, 0, DType::kF32)},
                  {DNNL_ARG_DST, sc}};
    });
  }
  const SoftmaxFwd::primitive_desc softmax_pd = SoftmaxFwdPd(sc2_md, plain);
  add("softmax", Make<SoftmaxFwd>(softmax_pd), [&](int64_t) {
    const memory sc = View(scores_, sc2_md, 0, DType::kF32);
    return Args{{DNNL_ARG_SRC, sc}, {DNNL_ARG_DST, sc}};
  });
  const memory::desc low2_md = Desc({n * M, S}, t, {S, 1});
  if (low)
    add("reorder", Reorder(sc2_md, low2_md, plain), [&](int64_t) {
      return Args{{DNNL_ARG_FROM, View(scores_, sc2_md, 0, DType::kF32)},
                  {DNNL_ARG_TO, View(low_, low2_md, 0, dtype_)}};
    });

  if (!bwd) {
    // O = P V.
    add("matmul", Matmul(p_md, kv_md, q_md, plain), [&](int64_t g0) {
      return Args{{DNNL_ARG_SRC, View(p_low, p_md, 0, dtype_)},
                  {DNNL_ARG_WEIGHTS, View(v_, kv_md, kvoff(g0), dtype_)},
                  {DNNL_ARG_DST, View(o_, q_md, qoff(g0), dtype_)}};
    });
  } else {
    // dV = P^T dO (the group's heads summed by the reduction over M).
    add("matmul", Matmul(pt_md, q_md, kv_md, plain), [&](int64_t g0) {
      return Args{{DNNL_ARG_SRC, View(p_low, pt_md, 0, dtype_)},
                  {DNNL_ARG_WEIGHTS, View(do_, q_md, qoff(g0), dtype_)},
                  {DNNL_ARG_DST, View(dv_, kv_md, kvoff(g0), dtype_)}};
    });
    // dP = dO V^T; dS = softmax_backward(P, dP), in place.
    add("matmul", Matmul(q_md, kvt_md, sc_md, plain), [&](int64_t g0) {
      return Args{{DNNL_ARG_SRC, View(do_, q_md, qoff(g0), dtype_)},
                  {DNNL_ARG_WEIGHTS, View(v_, kvt_md, kvoff(g0), dtype_)},
                  {DNNL_ARG_DST, View(dp_, sc_md, 0, DType::kF32)}};
    });
    add("softmax_bwd", SoftmaxBwdOf(sc2_md, softmax_pd, plain), [&](int64_t) {
      const memory dp = View(dp_, sc2_md, 0, DType::kF32);
      return Args{{DNNL_ARG_DST, View(scores_, sc2_md, 0, DType::kF32)},
                  {DNNL_ARG_DIFF_DST, dp},
                  {DNNL_ARG_DIFF_SRC, dp}};
    });
    if (low)
      add("reorder", Reorder(sc2_md, low2_md, plain), [&](int64_t) {
        return Args{{DNNL_ARG_FROM, View(dp_, sc2_md, 0, DType::kF32)},
                    {DNNL_ARG_TO, View(low_, low2_md, 0, dtype_)}};
      });
    // dQ = scale dS K; dK = scale dS^T Q.
    add("matmul", Matmul(p_md, kv_md, q_md, scaled), [&](int64_t g0) {
      return Args{{DNNL_ARG_SRC, View(ds_low, p_md, 0, dtype_)},
                  {DNNL_ARG_WEIGHTS, View(k_, kv_md, kvoff(g0), dtype_)},
                  {DNNL_ARG_DST, View(dq_, q_md, qoff(g0), dtype_)}};
    });
    add("matmul", Matmul(pt_md, q_md, kv_md, scaled), [&](int64_t g0) {
      return Args{{DNNL_ARG_SRC, View(ds_low, pt_md, 0, dtype_)},
                  {DNNL_ARG_WEIGHTS, View(q_, q_md, qoff(g0), dtype_)},
                  {DNNL_ARG_DST, View(dk_, kv_md, kvoff(g0), dtype_)}};
    });
  }
  scratchpad_ =
      memory(Desc({int64_t(std::max<size_t>(scratch, 1))}, memory::data_type::u8, {1}), Engine());
  for (Step& st : steps_)
    for (Args& a : st.args) a[DNNL_ARG_SCRATCHPAD] = scratchpad_;

  if (bwd) {
    Poison(dq_, dtype_);
    Poison(dk_, dtype_);
    Poison(dv_, dtype_);
  } else {
    Poison(o_, dtype_);
  }
  std::string used;
  for (const std::string& i : impls) used += (used.empty() ? "" : ", ") + i;
  label_ = used + "; " + std::string(Name(dtype_)) + ", " + std::to_string(chunks) +
           " chunk(s) of " + std::to_string(n) + " kv group(s)" +
           (bwd ? ", bwd recomputes P (5 matmuls)" : "") + ", threads " + std::to_string(Threads());
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
