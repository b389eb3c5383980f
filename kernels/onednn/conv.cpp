#include "kernels/onednn/conv.h"

#include <cstring>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/common/fill.h"
#include "kernels/common/memory.h"
#include "kernels/onednn/context.h"

namespace dlb::onednn {

namespace {

using dnnl::memory;
using tag = memory::format_tag;

memory::data_type DataType(DType dt) {
  return dt == DType::kBF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

struct Descs {
  memory::dims x, w, y, strides, dilates, pad_l, pad_r;
  tag w_plain;
};

Descs Dims(const ConvShape& s) {
  Descs d;
  d.x = {s.n, s.c, s.h, s.w};
  d.y = {s.n, s.k, s.P(), s.Q()};
  if (s.groups > 1) {
    d.w = {s.groups, s.k / s.groups, s.c / s.groups, s.r, s.s};
    d.w_plain = tag::goihw;
  } else {
    d.w = {s.k, s.c, s.r, s.s};
    d.w_plain = tag::oihw;
  }
  d.strides = {s.stride_h, s.stride_w};
  d.dilates = {s.dil_h - 1, s.dil_w - 1};  // oneDNN counts the gaps: 0 is a dense filter
  d.pad_l = {s.pad_h, s.pad_w};
  d.pad_r = {s.pad_h, s.pad_w};
  return d;
}

// The three primitive descriptors of a convolution on tensors in layouts oneDNN picks.
// The backward ones need the forward one as a hint.
struct Pds {
  dnnl::convolution_forward::primitive_desc fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_data;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights;
};

Pds MakePds(const ConvShape& s, DType dt, ConvPass pass, const dnnl::primitive_attr& attr) {
  const Descs d = Dims(s);
  const memory::data_type t = DataType(dt);
  const memory::desc x(d.x, t, tag::any), w(d.w, t, tag::any), y(d.y, t, tag::any);
  const auto algo = dnnl::algorithm::convolution_direct;
  const auto prop = dnnl::prop_kind::forward_training;
  dnnl::engine& eng = Engine();
  Pds p;
#if DNNL_VERSION_MAJOR >= 3
  p.fwd = {eng,
           prop,
           algo,
           x,
           w,
           y,
           d.strides,
           d.dilates,
           d.pad_l,
           d.pad_r,
           pass == ConvPass::kFwd ? attr : dnnl::primitive_attr()};
  if (pass == ConvPass::kBwdData)
    p.bwd_data = {eng, algo, x, w, y, d.strides, d.dilates, d.pad_l, d.pad_r, p.fwd, attr};
  if (pass == ConvPass::kBwdFilter)
    p.bwd_weights = {eng, algo, x, w, y, d.strides, d.dilates, d.pad_l, d.pad_r, p.fwd, attr};
#else
  p.fwd = {{prop, algo, x, w, y, d.strides, d.dilates, d.pad_l, d.pad_r},
           pass == ConvPass::kFwd ? attr : dnnl::primitive_attr(),
           eng};
  if (pass == ConvPass::kBwdData)
    p.bwd_data = {{algo, x, w, y, d.strides, d.dilates, d.pad_l, d.pad_r}, attr, eng, p.fwd};
  if (pass == ConvPass::kBwdFilter)
    p.bwd_weights = {{algo, x, w, y, d.strides, d.dilates, d.pad_l, d.pad_r}, attr, eng, p.fwd};
#endif
  return p;
}

// A plain-layout memory holding seeded values, reordered into `want`'s layout.
memory Seeded(const memory::dims& dims, tag plain, const memory::desc& want, uint64_t seed,
              DType dt) {
  memory::dim n = 1;
  for (auto v : dims) n *= v;
  memory user({dims, DataType(dt), plain}, Engine());
  const std::vector<uint8_t> bytes = ToStorage(SeededValues(seed, size_t(n), dt), dt);
  std::memcpy(user.get_data_handle(), bytes.data(), bytes.size());
  memory out(want, Engine());
  dnnl::reorder(user, out).execute(Stream(), user, out);
  Stream().wait();
  return out;
}

// NaN in every byte pair/quad, padding included, so an output never written fails verification.
void Poison(memory& m, DType dt) {
  const size_t bytes = m.get_desc().get_size();
  auto* p = static_cast<uint8_t*>(m.get_data_handle());
  if (dt == DType::kBF16) {
    const uint16_t nan = 0x7fc0;
    for (size_t i = 0; i + 2 <= bytes; i += 2) std::memcpy(p + i, &nan, 2);
  } else {
    const uint32_t nan = 0x7fc00000u;
    for (size_t i = 0; i + 4 <= bytes; i += 4) std::memcpy(p + i, &nan, 4);
  }
}

std::string LayoutName(const memory::desc& md, const memory::dims& dims, memory::data_type t,
                       bool weights) {
  const bool grouped = dims.size() == 5;
  if (md == memory::desc(dims, t, grouped ? tag::goihw : weights ? tag::oihw : tag::nchw))
    return grouped ? "goihw" : weights ? "oihw" : "nchw";
  if (md == memory::desc(dims, t, grouped ? tag::gohwi : weights ? tag::ohwi : tag::nhwc))
    return grouped ? "gohwi" : weights ? "ohwi" : "nhwc";
  return "blocked";
}

}  // namespace

template <ConvPass kPass>
Support OneDnnConv<kPass>::Supports(const ConvShape& shape, const RunConfig& cfg) {
  if (!shape.Valid()) return Support::No("invalid convolution shape");
  if (cfg.dtype == DType::kF16)
    return Support::No("f16 convolutions are not benchmarked on oneDNN (f32 and bf16 only)");
  if (cfg.dtype == DType::kTF32) return Support::No("tf32 is a GPU tensor-core math mode");
  if (cfg.dtype == DType::kBF16 && !HasBf16()) return Support::No("bf16 needs avx512_bf16 or amx");
  try {
    MakePds(shape, cfg.dtype, kPass, dnnl::primitive_attr());
  } catch (const dnnl::error& e) {
    return Support::No(std::string("oneDNN has no implementation: ") + e.what());
  }
  return Support::Yes();
}

template <ConvPass kPass>
OneDnnConv<kPass>::OneDnnConv(const ConvShape& shape, const RunConfig& cfg)
    : shape_(shape), cfg_(cfg) {
  const Support sup = Supports(shape, cfg);
  DLB_REQUIRE(sup.ok, "unsupported: " + sup.why);
  SetThreads(cfg.threads);
  // A user scratchpad, allocated here: otherwise oneDNN may allocate it inside execute().
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const Pds p = MakePds(shape, cfg.dtype, kPass, attr);
  const Descs d = Dims(shape);
  // Each tensor lives in oneDNN's layout plus a float staging copy while it is seeded.
  RequireHostBytes(2.0 * sizeof(float) *
                   (double(shape.n * shape.c * shape.h * shape.w) +
                    double(shape.k * (shape.c / shape.groups) * shape.r * shape.s) +
                    double(shape.n * shape.k * shape.P() * shape.Q())));
  const uint64_t sx = TensorSeed(cfg.seed, 0), sw = TensorSeed(cfg.seed, 1),
                 sy = TensorSeed(cfg.seed, 2);
  memory::desc x_md, w_md, y_md, scratch_md;
  std::string impl;
  if constexpr (kPass == ConvPass::kFwd) {
    x_md = p.fwd.src_desc(), w_md = p.fwd.weights_desc(), y_md = p.fwd.dst_desc();
    scratch_md = p.fwd.scratchpad_desc();
    impl = p.fwd.impl_info_str();
    prim_ = dnnl::convolution_forward(p.fwd);
    out_ = memory(y_md, Engine());
    args_ = {{DNNL_ARG_SRC, Seeded(d.x, tag::nchw, x_md, sx, cfg.dtype)},
             {DNNL_ARG_WEIGHTS, Seeded(d.w, d.w_plain, w_md, sw, cfg.dtype)},
             {DNNL_ARG_DST, out_}};
  } else if constexpr (kPass == ConvPass::kBwdData) {
    x_md = p.bwd_data.diff_src_desc(), w_md = p.bwd_data.weights_desc();
    y_md = p.bwd_data.diff_dst_desc(), scratch_md = p.bwd_data.scratchpad_desc();
    impl = p.bwd_data.impl_info_str();
    prim_ = dnnl::convolution_backward_data(p.bwd_data);
    out_ = memory(x_md, Engine());
    args_ = {{DNNL_ARG_DIFF_DST, Seeded(d.y, tag::nchw, y_md, sy, cfg.dtype)},
             {DNNL_ARG_WEIGHTS, Seeded(d.w, d.w_plain, w_md, sw, cfg.dtype)},
             {DNNL_ARG_DIFF_SRC, out_}};
  } else {
    x_md = p.bwd_weights.src_desc(), w_md = p.bwd_weights.diff_weights_desc();
    y_md = p.bwd_weights.diff_dst_desc(), scratch_md = p.bwd_weights.scratchpad_desc();
    impl = p.bwd_weights.impl_info_str();
    prim_ = dnnl::convolution_backward_weights(p.bwd_weights);
    out_ = memory(w_md, Engine());
    args_ = {{DNNL_ARG_SRC, Seeded(d.x, tag::nchw, x_md, sx, cfg.dtype)},
             {DNNL_ARG_DIFF_DST, Seeded(d.y, tag::nchw, y_md, sy, cfg.dtype)},
             {DNNL_ARG_DIFF_WEIGHTS, out_}};
  }
  args_.emplace(DNNL_ARG_SCRATCHPAD, memory(scratch_md, Engine()));
  Poison(out_, cfg.dtype);
  label_ = "onednn " + std::string(impl) + ", " + std::string(Name(cfg.dtype)) + ", layouts x " +
           LayoutName(x_md, d.x, DataType(cfg.dtype), false) + " w " +
           LayoutName(w_md, d.w, DataType(cfg.dtype), true) + " y " +
           LayoutName(y_md, d.y, DataType(cfg.dtype), false) +
           " chosen by oneDNN (format_tag::any; cfg.layout " + Name(cfg.layout) +
           " ignored), scratchpad " + std::to_string(scratch_md.get_size() >> 10) +
           " KiB, threads " + std::to_string(Threads());
}

template <ConvPass kPass>
void OneDnnConv<kPass>::Run() {
  SetThreads(cfg_.threads);  // the harness may interleave ops built with other thread counts
  prim_.execute(Stream(), args_);
  Stream().wait();  // CPU stream: a no-op under OpenMP, needed under an asynchronous runtime
}

template <ConvPass kPass>
HostTensor OneDnnConv<kPass>::Output() const {
  const Descs d = Dims(shape_);
  memory::dims dims = kPass == ConvPass::kFwd ? d.y : kPass == ConvPass::kBwdData ? d.x : d.w;
  const tag plain = kPass == ConvPass::kBwdFilter ? d.w_plain : tag::nchw;
  memory plain_f32({dims, memory::data_type::f32, plain}, Engine());
  memory src = out_;
  dnnl::reorder(src, plain_f32).execute(Stream(), src, plain_f32);
  Stream().wait();
  HostTensor t;
  if (kPass == ConvPass::kBwdFilter)
    dims = {shape_.k, shape_.c / shape_.groups, shape_.r, shape_.s};
  size_t n = 1;
  for (auto v : dims) n *= size_t(v);
  t.shape.assign(dims.begin(), dims.end());
  const float* p = static_cast<const float*>(plain_f32.get_data_handle());
  t.data.assign(p, p + n);
  return t;
}

template <ConvPass kPass>
Cost OneDnnConv<kPass>::cost() const {
  const ConvShape& s = shape_;
  const double elems = double(s.n * s.c * s.h * s.w) + double(s.k * (s.c / s.groups) * s.r * s.s) +
                       double(s.n * s.k * s.P() * s.Q());
  return {s.Flops(), elems * double(StorageBytes(cfg_.dtype)), double(s.n)};
}

template class OneDnnConv<ConvPass::kFwd>;
template class OneDnnConv<ConvPass::kBwdData>;
template class OneDnnConv<ConvPass::kBwdFilter>;

}  // namespace dlb::onednn
