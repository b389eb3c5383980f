#include "kernels/onednn/matmul.h"

#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/common/autotune.h"
#include "kernels/common/fill.h"
#include "kernels/common/memory.h"
#include "kernels/onednn/context.h"

namespace dlb::onednn {

namespace {

using dnnl::memory;

memory::data_type DataType(DType dt) {
  switch (dt) {
    case DType::kBF16:
      return memory::data_type::bf16;
    case DType::kF16:
      return memory::data_type::f16;
    case DType::kInt8:
      return memory::data_type::s8;
    default:
      return memory::data_type::f32;
  }
}

// C's type: the inputs' (f32, bf16, f16), s32 for int8.
memory::data_type OutputType(DType dt) {
  return dt == DType::kInt8 ? memory::data_type::s32 : DataType(dt);
}

// The fastest of at least 3 runs and 50 ms, after a warm-up run (first touch of the scratchpad,
// caches): on the GPU host's CPU single runs scatter by ~10% (thread placement, turbo), more than
// the ~7% between brgemm and gemm:jit f32.
autotune::Policy SearchPolicy() {
  autotune::Policy p;
  p.warmup_runs = 1;
  p.score = autotune::Policy::Score::kMinOfRuns;
  p.budget_ms = 50;
  p.min_runs = 3;
  p.max_runs = std::numeric_limits<int>::max();
  return p;
}

// A logical rows x cols matrix stored row-major, or stored transposed (cols x rows row-major).
memory::desc Matrix(int64_t rows, int64_t cols, bool transposed, memory::data_type type) {
  memory::dims strides = transposed ? memory::dims{1, rows} : memory::dims{cols, 1};
  return memory::desc({rows, cols}, type, strides);
}

}  // namespace

Support OneDnnMatmul::Supports(const GemmShape& s, const RunConfig& cfg) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return Support::No("empty GEMM");
  if (cfg.algo == Algo::kCache) return Support::No("algo cache (heuristic|search)");
  switch (cfg.dtype) {
    case DType::kF32:
      return Support::Yes();
    case DType::kTF32:
      return Support::No("tf32 is a GPU tensor-core format; x86 CPUs have no tf32 math (use f32)");
    case DType::kBF16:
      if (!HasBf16()) return Support::No("bf16 needs avx512_bf16 or amx");
      return Support::Yes();
    case DType::kF16:
#if DNNL_VERSION_MAJOR < 3
      return Support::No("f16 matmul on the CPU needs oneDNN 3 (this is " +
                         std::to_string(DNNL_VERSION_MAJOR) + "." +
                         std::to_string(DNNL_VERSION_MINOR) + ")");
#else
      if (!HasF16()) return Support::No("f16 needs avx512_fp16 or amx_fp16");
      return Support::Yes();
#endif
    case DType::kInt8:
      if (!HasInt8()) return Support::No(NoInt8Reason());
      return Support::Yes();
    case DType::kFP8E4M3:
    case DType::kFP8E5M2:
#if DNNL_VERSION_MAJOR < 3
      return Support::No(std::string(Name(cfg.dtype)) + " matmul on the CPU: oneDNN " +
                         std::to_string(DNNL_VERSION_MAJOR) + "." +
                         std::to_string(DNNL_VERSION_MINOR) + " has no fp8 data types");
#else
      return Support::No(std::string(Name(cfg.dtype)) +
                         " is a GPU tensor-core format here: x86 CPUs without AMX-FP8 have no "
                         "fp8 math (oneDNN would convert to f32), so the CPU is not measured");
#endif
  }
  return Support::No("unknown dtype");
}

OneDnnMatmul::OneDnnMatmul(const GemmShape& s, const RunConfig& cfg)
    : shape_(s), dtype_(cfg.dtype) {
  RequireSupported(Supports(s, cfg));
  SetThreads(cfg.threads);
  // Each matrix lives in oneDNN's layout plus a float staging copy while it is seeded.
  RequireHostBytes(2.0 * sizeof(float) * double(s.m * s.k + s.k * s.n + s.m * s.n));

  const memory::desc a_md = Matrix(s.m, s.k, s.ta, DataType(dtype_));
  const memory::desc b_md = Matrix(s.k, s.n, s.tb, DataType(dtype_));
  const memory::desc c_md = Matrix(s.m, s.n, false, OutputType(dtype_));
  dnnl::primitive_attr attr;
  // A user scratchpad is allocated here once; the library's would be sized on first execute.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // The search times every implementation oneDNN offers for these exact (strided) layouts,
  // reference ones aside: oneDNN's first choice is not always its fastest (brgemm vs gemm:jit
  // f32). The layouts are plain, so every implementation has the same memory descriptors.
  struct Impl {
    dnnl::matmul prim;
    memory scratchpad;
    std::unordered_map<int, memory> args;
  };
  autotune::Tuner<Impl> tuner(SearchPolicy(),
                              [](Impl& c, int runs) { return TimeRuns(c.prim, c.args, runs); });
  const bool search = cfg.algo == Algo::kSearch;
  ForEachMatmulImpl(a_md, b_md, c_md, attr, [&](const dnnl::matmul::primitive_desc& pd) {
    if (!a_) {
      a_ = memory(pd.src_desc(), Engine());
      b_ = memory(pd.weights_desc(), Engine());
      c_ = memory(pd.dst_desc(), Engine());
      // Plain (possibly transposed) layouts: storage order is the seeded stream's order.
      SeedStorage(a_.get_data_handle(), TensorSeed(cfg.seed, 0), size_t(s.m * s.k), dtype_);
      SeedStorage(b_.get_data_handle(), TensorSeed(cfg.seed, 1), size_t(s.k * s.n), dtype_);
    }
    std::string impl = pd.impl_info_str();
    if (search && impl.find("ref") != std::string::npos) return true;
    Impl c{dnnl::matmul(pd), memory(pd.scratchpad_desc(), Engine()), {}};
    c.args = {{DNNL_ARG_SRC, a_},
              {DNNL_ARG_WEIGHTS, b_},
              {DNNL_ARG_DST, c_},
              {DNNL_ARG_SCRATCHPAD, c.scratchpad}};
    tuner.Offer(std::move(impl), std::move(c));
    return search;
  });
  if (tuner.offered() == 0)
    throw Unsupported("oneDNN offers only reference matmul implementations here");
  Impl chosen = tuner.Finish();
  const autotune::Report& found = tuner.report();
  matmul_ = chosen.prim;
  scratchpad_ = chosen.scratchpad;
  label_ = found.winner;
  std::string how = "heuristic";
  if (search)
    how = "search best of " + std::to_string(found.usable()) + " impls" +
          (found.failed ? " (" + std::to_string(found.failed) + " failed to run)" : "");
  // Poisoned after any search, so verification proves that Run() writes every element.
  Poison(c_, dtype_);
  args_ = {{DNNL_ARG_SRC, a_},
           {DNNL_ARG_WEIGHTS, b_},
           {DNNL_ARG_DST, c_},
           {DNNL_ARG_SCRATCHPAD, scratchpad_}};
  label_ +=
      " " + how + " " +
      (dtype_ == DType::kInt8 ? std::string("int8 (s8 x s8 -> s32)") : std::string(Name(dtype_))) +
      " threads " + std::to_string(Threads());
}

void OneDnnMatmul::Run() { matmul_.execute(Stream(), args_); }

HostTensor OneDnnMatmul::Output() const {
  Stream().wait();
  const size_t n = size_t(shape_.m * shape_.n);
  if (dtype_ == DType::kInt8) {
    const auto* acc = static_cast<const int32_t*>(c_.get_data_handle());
    std::vector<float> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = Int32Result(acc[i], dtype_);
    return {{shape_.m, shape_.n}, std::move(out)};
  }
  return {{shape_.m, shape_.n}, FromStorage(c_.get_data_handle(), n, dtype_)};
}

Cost OneDnnMatmul::cost() const {
  const GemmShape& s = shape_;
  const double in = double(s.m) * double(s.k) + double(s.k) * double(s.n);
  return {s.Flops(),
          in * double(StorageBytes(dtype_)) +
              double(s.m) * double(s.n) * double(GemmTypesOf(dtype_).out_bytes),
          0};
}

}  // namespace dlb::onednn
