#include "kernels/onednn/context.h"

#include <algorithm>
#include <cstdint>

#include "kernels/common/cpu.h"
#include "kernels/common/parallel.h"

#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#endif

namespace dlb::onednn {

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& Stream() {
  static dnnl::stream stream(Engine());
  return stream;
}

std::string EffectiveIsa() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41:
      return "sse41";
    case isa::avx:
      return "avx";
    case isa::avx2:
      return "avx2";
    case isa::avx512_core:
      return "avx512_core";
    case isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case isa::avx512_core_amx:
      return "avx512_core_amx";
#if DNNL_VERSION_MAJOR >= 3
    case isa::avx512_core_fp16:
      return "avx512_core_fp16";
    case isa::avx2_vnni:
      return "avx2_vnni";
#endif
    default:
      return "other";
  }
}

bool HasBf16() { return HasFlag(HostCpu(), "avx512_bf16") || HasFlag(HostCpu(), "amx_bf16"); }
bool HasInt8() {
  const CpuInfo& cpu = HostCpu();
  if (HasFlag(cpu, "avx512_vnni") || HasFlag(cpu, "amx_int8")) return true;
#if DNNL_VERSION_MAJOR >= 3
  return HasFlag(cpu, "avx_vnni");
#else
  return false;
#endif
}

std::string NoInt8Reason() {
  if (HasInt8()) return "";
#if DNNL_VERSION_MAJOR >= 3
  return "int8 needs avx512_vnni, avx_vnni or amx (without VNNI oneDNN adds pairs of int8 "
         "products in saturating 16-bit: no exact int32 GEMM)";
#else
  return "int8 needs avx512_vnni or amx with oneDNN " + std::to_string(DNNL_VERSION_MAJOR) + "." +
         std::to_string(DNNL_VERSION_MINOR) +
         " (without VNNI oneDNN adds pairs of int8 products in saturating 16-bit: no exact int32 "
         "GEMM; avx_vnni needs oneDNN 3)";
#endif
}

bool HasF16() { return HasFlag(HostCpu(), "avx512_fp16") || HasFlag(HostCpu(), "amx_fp16"); }

std::string Version() {
  const dnnl_version_t* v = dnnl_version();
  std::string runtime = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "omp"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB ? "tbb"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "seq"
                                                             : "other";
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " (git " + v->hash + ", cpu runtime " + runtime + ", isa " +
         EffectiveIsa() + ")";
}

void SetThreads(int n) {
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  if (n > 0) omp_set_num_threads(n);
#else
  (void)n;
#endif
}

int Threads() {
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

ThreadScope::ThreadScope(int n) : before_(Threads()) { SetThreads(n); }

ThreadScope::~ThreadScope() { SetThreads(before_); }

void Poison(const dnnl::memory& m, DType dt) {
  const size_t bytes = m.get_desc().get_size();
  void* p = m.get_data_handle();
  const auto fill = [&](auto nan) {
    auto* q = static_cast<decltype(nan)*>(p);
    ParallelFor(bytes / sizeof(nan), size_t(1) << 22,
                [&](size_t begin, size_t end) { std::fill(q + begin, q + end, nan); });
  };
  if (dt == DType::kInt8) {
    fill(uint8_t(0x80));  // an int8 GEMM's int32 output: kInt32Poison
  } else if (dt == DType::kBF16) {
    fill(uint16_t(0x7fc0));
  } else if (dt == DType::kF16) {
    fill(uint16_t(0x7e00));
  } else {
    fill(uint32_t(0x7fc00000u));
  }
}

autotune::Sample TimeRuns(const dnnl::primitive& prim,
                          const std::unordered_map<int, dnnl::memory>& args, int runs) {
  return autotune::TimeOnHost(runs, [&] {
    prim.execute(Stream(), args);
    Stream().wait();
  });
}

}  // namespace dlb::onednn
