#include "kernels/onednn/conv.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/autotune.h"
#include "kernels/common/autotune_cache.h"
#include "kernels/common/cpu.h"
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

// `act` is the activations' layout (x and y); tag::any lets oneDNN choose it. Weights are
// always oneDNN's choice.
Pds MakePds(const ConvShape& s, DType dt, ConvPass pass, const dnnl::primitive_attr& attr,
            tag act = tag::any) {
  const Descs d = Dims(s);
  const memory::data_type t = DataType(dt);
  const memory::desc x(d.x, t, act), w(d.w, t, tag::any), y(d.y, t, act);
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

// A plain-layout memory holding seeded values.
memory SeededPlain(const memory::dims& dims, tag plain, uint64_t seed, DType dt) {
  memory::dim n = 1;
  for (auto v : dims) n *= v;
  memory user({dims, DataType(dt), plain}, Engine());
  SeedStorage(user.get_data_handle(), seed, size_t(n), dt);
  return user;
}

memory Reordered(memory user, const memory::desc& want) {  // memory is a shared handle
  memory out(want, Engine());
  dnnl::reorder(user, out).execute(Stream(), user, out);
  Stream().wait();
  return out;
}

// Per pass: its primitive type, its primitive descriptor in Pds, and which arguments are read
// (in0, in1) and written (out), with their descriptors.
template <ConvPass kPass>
struct PassArgs;
template <>
struct PassArgs<ConvPass::kFwd> {
  using Primitive = dnnl::convolution_forward;
  static constexpr int kIn0 = DNNL_ARG_SRC, kIn1 = DNNL_ARG_WEIGHTS, kOut = DNNL_ARG_DST;
  static auto& Pd(Pds& p) { return p.fwd; }
  template <class Pd>
  static std::array<memory::desc, 3> Descs(const Pd& pd) {
    return {pd.src_desc(), pd.weights_desc(), pd.dst_desc()};
  }
};
template <>
struct PassArgs<ConvPass::kBwdData> {
  using Primitive = dnnl::convolution_backward_data;
  static constexpr int kIn0 = DNNL_ARG_DIFF_DST, kIn1 = DNNL_ARG_WEIGHTS, kOut = DNNL_ARG_DIFF_SRC;
  static auto& Pd(Pds& p) { return p.bwd_data; }
  template <class Pd>
  static std::array<memory::desc, 3> Descs(const Pd& pd) {
    return {pd.diff_dst_desc(), pd.weights_desc(), pd.diff_src_desc()};
  }
};
template <>
struct PassArgs<ConvPass::kBwdFilter> {
  using Primitive = dnnl::convolution_backward_weights;
  static constexpr int kIn0 = DNNL_ARG_SRC, kIn1 = DNNL_ARG_DIFF_DST, kOut = DNNL_ARG_DIFF_WEIGHTS;
  static auto& Pd(Pds& p) { return p.bwd_weights; }
  template <class Pd>
  static std::array<memory::desc, 3> Descs(const Pd& pd) {
    return {pd.src_desc(), pd.diff_dst_desc(), pd.diff_weights_desc()};
  }
};

// One candidate of the search: a primitive and its tensors, in the layouts it asked for.
struct Impl {
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
  memory out;
  std::string name;                // oneDNN's implementation
  std::string asked;               // the activations' layout asked for
  std::array<memory::desc, 3> md;  // in0, in1, out
  memory::desc scratch_md;
};

// The layout search: after a warm-up run, the min of >= 2 runs and >= 10 ms, at most 50; a run
// over 1.3x the best so far ends a candidate. Candidates that close are both fine to keep: Google
// Benchmark then times the one kept.
autotune::Policy SearchPolicy() {
  autotune::Policy p;
  p.warmup_runs = 1;
  p.score = autotune::Policy::Score::kMinOfRuns;
  p.budget_ms = 10;
  p.min_runs = 2;
  p.max_runs = 50;
  p.drop_ratio = 1.3;
  return p;
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

const char* AskedName(tag act) {
  return act == tag::any ? "any" : act == tag::nhwc ? "nhwc" : "nChw16c";
}

std::optional<tag> ParseAsked(const std::string& name) {
  for (tag t : {tag::any, tag::nhwc, tag::nChw16c})
    if (name == AskedName(t)) return t;
  return std::nullopt;
}

std::string FormatMs(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g ms", ms);
  return buf;
}

// The autotune cache's key: what can change oneDNN's choice or its speed. The version string
// carries the git hash and the ISA oneDNN dispatches to; the thread count is the one the op runs.
std::string CacheKey(const ConvShape& shape, const RunConfig& cfg, ConvPass pass) {
  return autotune::ConvKey(
      "onednn " + Version(),
      HostCpu().model + " " + EffectiveIsa() + " threads " + std::to_string(Threads()), pass, shape,
      cfg.dtype, Name(cfg.layout));
}

}  // namespace

template <ConvPass kPass>
Support OneDnnConv<kPass>::Supports(const ConvShape& shape, const RunConfig& cfg) {
  if (!shape.Valid()) return Support::No("invalid convolution shape");
  if (cfg.dtype == DType::kF16)
    return Support::No("f16 convolutions are not benchmarked on oneDNN (f32 and bf16 only)");
  if (cfg.dtype == DType::kTF32) return Support::No("tf32 is a GPU tensor-core math mode");
  if (IsEightBit(cfg.dtype))
    return Support::No(std::string(Name(cfg.dtype)) +
                       " convolutions are not benchmarked (8-bit types: GEMM only)");
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
  RequireSupported(Supports(shape, cfg));
  SetThreads(cfg.threads);
  const bool search = cfg.algo != Algo::kHeuristic;
  // A user scratchpad, allocated here: otherwise oneDNN may allocate it inside execute().
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  using A = PassArgs<kPass>;
  const Descs d = Dims(shape);
  // The seeded inputs in plain layout, plus each tensor in the chosen implementation's layout
  // (and a candidate's, while searching).
  RequireHostBytes((search ? 3.0 : 2.0) * sizeof(float) *
                   (double(shape.n * shape.c * shape.h * shape.w) +
                    double(shape.k * (shape.c / shape.groups) * shape.r * shape.s) +
                    double(shape.n * shape.k * shape.P() * shape.Q())));
  const uint64_t sx = TensorSeed(cfg.seed, 0), sw = TensorSeed(cfg.seed, 1),
                 sy = TensorSeed(cfg.seed, 2);
  const memory x =
      kPass != ConvPass::kBwdData ? SeededPlain(d.x, tag::nchw, sx, cfg.dtype) : memory();
  const memory w =
      kPass != ConvPass::kBwdFilter ? SeededPlain(d.w, d.w_plain, sw, cfg.dtype) : memory();
  const memory dy = kPass != ConvPass::kFwd ? SeededPlain(d.y, tag::nchw, sy, cfg.dtype) : memory();
  const memory& in0 = kPass == ConvPass::kBwdData ? dy : x;
  const memory& in1 = kPass == ConvPass::kBwdFilter ? dy : w;

  // oneDNN's first choice with every layout left to it; the search also asks for channels-last
  // activations (what PyTorch's channels_last tensors give it) and 16-channel blocks, since the
  // implementation oneDNN ranks first for `any` is not always its fastest. Each distinct
  // implementation gets the layouts it asks for (inputs reordered outside the timed span); the
  // tuner times them only when there is more than one, and frees a loser's tensors before the
  // next layout is tried. Reference implementations are considered only when oneDNN has nothing
  // else. With the cache, a recorded winner is rebuilt from the layout it asked for, and kept only
  // when oneDNN still gives the same implementation for it (a new library or ISA may not).
  const double setup_t0 = autotune::SteadyMs();
  const auto describe = [&](tag act) -> std::optional<std::pair<Pds, Impl>> {
    Pds p;
    try {
      p = MakePds(shape, cfg.dtype, kPass, attr, act);
    } catch (const dnnl::error&) {
      return std::nullopt;  // no implementation for this layout
    }
    auto& pd = A::Pd(p);
    Impl c;
    c.name = pd.impl_info_str();
    c.md = A::Descs(pd);
    c.asked = AskedName(act);
    c.scratch_md = pd.scratchpad_desc();
    return std::make_pair(std::move(p), std::move(c));
  };
  const auto materialize = [&](Pds& p, Impl& c) {
    auto& pd = A::Pd(p);
    c.prim = typename A::Primitive(pd);
    c.out = memory(c.md[2], Engine());
    c.args = {{A::kIn0, Reordered(in0, c.md[0])},
              {A::kIn1, Reordered(in1, c.md[1])},
              {A::kOut, c.out},
              {DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), Engine())}};
  };

  const bool use_cache = cfg.algo == Algo::kCache;
  const std::string key = use_cache ? CacheKey(shape, cfg, kPass) : "";
  std::optional<Impl> chosen;
  std::string how;
  if (use_cache) {
    if (const auto hit = autotune::ProcessCache().Find(key)) {
      const std::string asked = autotune::Field(hit->winner, "asked");
      const std::string impl = autotune::Field(hit->winner, "impl");
      auto found = ParseAsked(asked) ? describe(*ParseAsked(asked)) : std::nullopt;
      if (found && found->second.name == impl) {
        materialize(found->first, found->second);
        chosen = std::move(found->second);
        how = autotune::CachedWinnerLabel(*hit);
      } else {
        how = "cached winner " + impl + " (activations " + asked + ") no longer built; ";
      }
    } else {
      how = "no cached winner; ";
    }
  }
  if (!chosen) {
    autotune::Tuner<Impl> tuner(SearchPolicy(),
                                [](Impl& c, int runs) { return TimeRuns(c.prim, c.args, runs); });
    std::vector<std::pair<std::string, std::array<memory::desc, 3>>> seen;
    const std::vector<tag> layouts =
        search ? std::vector<tag>{tag::any, tag::nhwc, tag::nChw16c} : std::vector<tag>{tag::any};
    for (tag act : layouts) {
      auto found = describe(act);
      if (!found) continue;
      Impl& c = found->second;
      if (tuner.offered() > 0 && c.name.find("ref") != std::string::npos) continue;
      const auto same = [&](const auto& other) {
        return other.first == c.name && other.second == c.md;
      };
      if (std::any_of(seen.begin(), seen.end(), same)) continue;  // `any` chose this layout too
      seen.emplace_back(c.name, c.md);
      materialize(found->first, c);
      const std::string name = c.name + " (activations " + c.asked + ")";
      tuner.Offer(name, std::move(c));
    }
    if (tuner.offered() == 0) throw Unsupported("oneDNN built no convolution for this shape");
    chosen = tuner.Finish();
    const autotune::Report& found = tuner.report();
    if (!search) {
      how = "heuristic: oneDNN's first implementation";
    } else {
      how += "searched " + std::to_string(found.offered) +
             (found.offered == 1 ? " candidate (the only implementation offered)"
                                 : " candidates, fastest " + FormatMs(found.best_ms));
      if (use_cache) {
        autotune::ProcessCache().Record(
            key, {"asked=" + chosen->asked + ";impl=" + chosen->name, found.best_ms, ""});
        how += ", recorded";
      }
    }
    if (found.failed) how += " (" + std::to_string(found.failed) + " failed to run)";
  }
  setup_ms_ = autotune::SteadyMs() - setup_t0;
  prim_ = chosen->prim;
  args_ = std::move(chosen->args);
  out_ = chosen->out;
  Poison(out_, cfg.dtype);  // after the search, so verification proves Run() writes everything
  const std::array<memory::desc, 3>& md = chosen->md;
  const memory::desc& x_md =
      kPass == ConvPass::kFwd || kPass == ConvPass::kBwdFilter ? md[0] : md[2];
  const memory::desc& w_md = kPass == ConvPass::kFwd || kPass == ConvPass::kBwdData ? md[1] : md[2];
  const memory::desc& y_md = kPass == ConvPass::kFwd       ? md[2]
                             : kPass == ConvPass::kBwdData ? md[0]
                                                           : md[1];
  label_ = "onednn " + chosen->name + ", " + how + ", " + std::string(Name(cfg.dtype)) +
           ", layouts x " + LayoutName(x_md, d.x, DataType(cfg.dtype), false) + " w " +
           LayoutName(w_md, d.w, DataType(cfg.dtype), true) + " y " +
           LayoutName(y_md, d.y, DataType(cfg.dtype), false) +
           " chosen by oneDNN (activations asked as " + chosen->asked +
           ", weights any; cfg.layout " + Name(cfg.layout) + " ignored), scratchpad " +
           std::to_string(chosen->scratch_md.get_size() >> 10) + " KiB, threads " +
           std::to_string(Threads());
  // The direct algorithm is asked for; an implementation named Winograd would still say so.
  fewer_ops_ = chosen->name.find("wino") != std::string::npos;
  if (fewer_ops_) label_ += FewerOpsNote("winograd");
}

template <ConvPass kPass>
std::vector<std::pair<std::string, double>> OneDnnConv<kPass>::Counters() const {
  return {{autotune::kSetupMsCounter, setup_ms_}, {kFewerOpsCounter, fewer_ops_ ? 1.0 : 0.0}};
}

template <ConvPass kPass>
void OneDnnConv<kPass>::Run() {
  SetThreads(cfg_.threads);  // the harness may interleave ops built with other thread counts
  prim_.execute(Stream(), args_);
  Stream().wait();  // CPU stream: a no-op under OpenMP, needed under an asynchronous runtime
}

// The output reordered into plain f32 (oneDNN's reorder, on all cores) and its logical shape.
template <ConvPass kPass>
std::pair<memory, std::vector<int64_t>> OneDnnConv<kPass>::PlainOutput() const {
  const Descs d = Dims(shape_);
  const memory::dims dims = kPass == ConvPass::kFwd ? d.y : kPass == ConvPass::kBwdData ? d.x : d.w;
  const tag plain = kPass == ConvPass::kBwdFilter ? d.w_plain : tag::nchw;
  memory plain_f32({dims, memory::data_type::f32, plain}, Engine());
  memory src = out_;
  dnnl::reorder(src, plain_f32).execute(Stream(), src, plain_f32);
  Stream().wait();
  if (kPass == ConvPass::kBwdFilter)
    return {plain_f32, {shape_.k, shape_.c / shape_.groups, shape_.r, shape_.s}};
  return {plain_f32, std::vector<int64_t>(dims.begin(), dims.end())};
}

template <ConvPass kPass>
HostTensor OneDnnConv<kPass>::Output() const {
  auto [plain, shape] = PlainOutput();
  size_t n = 1;
  for (int64_t v : shape) n *= size_t(v);
  const float* p = static_cast<const float*>(plain.get_data_handle());
  return {shape, std::vector<float>(p, p + n)};
}

template <ConvPass kPass>
HostTensor OneDnnConv<kPass>::OutputAt(const std::vector<int64_t>& flat) const {
  auto [plain, shape] = PlainOutput();
  int64_t n = 1;
  for (int64_t v : shape) n *= v;
  return {shape, PickAt(static_cast<const float*>(plain.get_data_handle()), n, flat)};
}

template <ConvPass kPass>
Cost OneDnnConv<kPass>::cost() const {
  const ConvShape& s = shape_;
  const double elems = double(s.n * s.c * s.h * s.w) + double(s.k * (s.c / s.groups) * s.r * s.s) +
                       double(s.n * s.k * s.P() * s.Q());
  return {s.Flops(), elems * double(StorageBytes(cfg_.dtype)), double(s.n), s.ConventionalFlops()};
}

template class OneDnnConv<ConvPass::kFwd>;
template class OneDnnConv<ConvPass::kBwdData>;
template class OneDnnConv<ConvPass::kBwdFilter>;

}  // namespace dlb::onednn
