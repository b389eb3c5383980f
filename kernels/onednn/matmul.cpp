#include "kernels/onednn/matmul.h"

#include <algorithm>
#include <chrono>
#include <vector>

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
    default:
      return memory::data_type::f32;
  }
}

// A logical rows x cols matrix stored row-major, or stored transposed (cols x rows row-major).
memory::desc Matrix(int64_t rows, int64_t cols, bool transposed, DType dt) {
  memory::dims strides = transposed ? memory::dims{1, rows} : memory::dims{cols, 1};
  return memory::desc({rows, cols}, DataType(dt), strides);
}

}  // namespace

Support OneDnnMatmul::Supports(const GemmShape& s, const RunConfig& cfg) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return Support::No("unsupported: empty GEMM");
  if (cfg.algo != "heuristic" && cfg.algo != "search")
    return Support::No("unsupported: algo " + cfg.algo + " (heuristic|search)");
  switch (cfg.dtype) {
    case DType::kF32:
      return Support::Yes();
    case DType::kTF32:
      return Support::No(
          "unsupported: tf32 is a GPU tensor-core format; x86 "
          "CPUs have no tf32 math (use f32)");
    case DType::kBF16:
      if (!HasBf16()) return Support::No("unsupported: bf16 needs avx512_bf16 or amx");
      return Support::Yes();
    case DType::kF16:
#if DNNL_VERSION_MAJOR < 3
      return Support::No("unsupported: f16 matmul on the CPU needs oneDNN 3 (this is " +
                         std::to_string(DNNL_VERSION_MAJOR) + "." +
                         std::to_string(DNNL_VERSION_MINOR) + ")");
#else
      if (!HasF16()) return Support::No("unsupported: f16 needs avx512_fp16 or amx_fp16");
      return Support::Yes();
#endif
  }
  return Support::No("unsupported dtype");
}

OneDnnMatmul::OneDnnMatmul(const GemmShape& s, const RunConfig& cfg)
    : shape_(s), dtype_(cfg.dtype) {
  Support support = Supports(s, cfg);
  DLB_REQUIRE(support.ok, support.why);
  SetThreads(cfg.threads);
  // Each matrix lives in oneDNN's layout plus a float staging copy while it is seeded.
  RequireHostBytes(2.0 * sizeof(float) * double(s.m * s.k + s.k * s.n + s.m * s.n));

  const memory::desc a_md = Matrix(s.m, s.k, s.ta, dtype_);
  const memory::desc b_md = Matrix(s.k, s.n, s.tb, dtype_);
  const memory::desc c_md = Matrix(s.m, s.n, false, dtype_);
  dnnl::primitive_attr attr;
  // A user scratchpad is allocated here once; the library's would be sized on first execute.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::matmul::primitive_desc pd(Engine(), a_md, b_md, c_md, attr);
#else
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, Engine());
#endif
  a_ = memory(pd.src_desc(), Engine());
  b_ = memory(pd.weights_desc(), Engine());
  c_ = memory(pd.dst_desc(), Engine());
  // Plain (possibly transposed) layouts: storage order is the seeded stream's order.
  SeedStorage(a_.get_data_handle(), TensorSeed(cfg.seed, 0), size_t(s.m * s.k), dtype_);
  SeedStorage(b_.get_data_handle(), TensorSeed(cfg.seed, 1), size_t(s.k * s.n), dtype_);
  std::string how = "heuristic";
  if (cfg.algo == "search") {
    // Every implementation oneDNN offers for these exact (strided) layouts, reference ones aside,
    // is timed; oneDNN's first choice is not always its fastest (brgemm vs gemm:jit f32).
    int candidates = 0;
    double best = 0;
    do {
      std::string impl = pd.impl_info_str();
      if (impl.find("ref") != std::string::npos) continue;
      dnnl::matmul candidate(pd);
      memory scratchpad(pd.scratchpad_desc(), Engine());
      std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, a_},
                                              {DNNL_ARG_WEIGHTS, b_},
                                              {DNNL_ARG_DST, c_},
                                              {DNNL_ARG_SCRATCHPAD, scratchpad}};
      candidate.execute(Stream(), args);  // warm-up: first-touch of scratchpad and caches
      Stream().wait();
      // The fastest of at least 3 runs and 50 ms: on the GPU host's CPU single runs scatter by
      // ~10% (thread placement, turbo), more than the ~7% between brgemm and gemm:jit f32.
      double t = 0, spent = 0;
      for (int run = 0; run < 3 || spent < 0.05; ++run) {
        auto start = std::chrono::steady_clock::now();
        candidate.execute(Stream(), args);
        Stream().wait();
        double once =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        t = run == 0 ? once : std::min(t, once);
        spent += once;
      }
      if (candidates++ == 0 || t < best) {
        best = t;
        matmul_ = candidate;
        scratchpad_ = scratchpad;
        label_ = impl;
      }
    } while (pd.next_impl());
    DLB_REQUIRE(candidates > 0, "oneDNN offers only reference matmul implementations here");
    how = "search best of " + std::to_string(candidates) + " impls";
  } else {
    matmul_ = dnnl::matmul(pd);
    scratchpad_ = memory(pd.scratchpad_desc(), Engine());
    label_ = pd.impl_info_str();
  }
  // Poisoned after any search, so verification proves that Run() writes every element.
  Poison(c_, dtype_);
  args_ = {{DNNL_ARG_SRC, a_},
           {DNNL_ARG_WEIGHTS, b_},
           {DNNL_ARG_DST, c_},
           {DNNL_ARG_SCRATCHPAD, scratchpad_}};
  label_ += " " + how + " " + std::string(Name(dtype_)) + " threads " + std::to_string(Threads());
}

void OneDnnMatmul::Run() { matmul_.execute(Stream(), args_); }

HostTensor OneDnnMatmul::Output() const {
  Stream().wait();
  return {{shape_.m, shape_.n},
          FromStorage(c_.get_data_handle(), size_t(shape_.m * shape_.n), dtype_)};
}

Cost OneDnnMatmul::cost() const {
  const GemmShape& s = shape_;
  double elems = double(s.m) * double(s.k) + double(s.k) * double(s.n) + double(s.m) * double(s.n);
  return {s.Flops(), elems * double(StorageBytes(dtype_)), 0};
}

}  // namespace dlb::onednn
