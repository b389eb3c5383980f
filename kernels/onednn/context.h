// The oneDNN engine and stream every CPU op shares, and what the library says about itself.
#pragma once

#include <dnnl.hpp>
#include <string>
#include <unordered_map>

#include "kernels/common/autotune.h"
#include "kernels/common/dtype.h"
#include "kernels/common/error.h"

namespace dlb {

inline void Check(dnnl_status_t status, const char* expr, const char* file, int line) {
  if (status != dnnl_success) Fail(file, line, expr, "oneDNN status " + std::to_string(status));
}

namespace onednn {

dnnl::engine& Engine();
dnnl::stream& Stream();

// "2.6.3 (git abc123, cpu runtime omp, isa avx512_core_amx)".
std::string Version();
// The ISA oneDNN dispatches to on this CPU ("avx512_core_amx", "avx2", ...).
std::string EffectiveIsa();
// Whether this CPU has native bf16 math oneDNN uses (AVX512-BF16 or AMX-BF16).
bool HasBf16();
// Whether this CPU has exact int8 dot products oneDNN uses: AVX512-VNNI or AMX-INT8, and with
// oneDNN 3, AVX-VNNI (oneDNN 2 has no AVX-VNNI kernels). Without them oneDNN's int8 kernels add
// pairs of u8 x s8 products in saturating 16-bit (vpmaddubsw): not an exact int32 GEMM.
bool HasInt8();
// Why HasInt8() is false: "int8 needs avx512_vnni, avx_vnni or amx ..."; "" when it is true.
std::string NoInt8Reason();
// Whether this CPU has native fp16 math (AVX512-FP16 or AMX-FP16).
bool HasF16();
// Threads oneDNN runs with (OpenMP runtime); n <= 0 leaves the default.
void SetThreads(int n);
int Threads();
// n threads (n <= 0: as before) for what this thread creates and runs until the scope ends, then
// the count before: a primitive created and executed in it is planned for n and forks no more.
// What work too small to split takes (its threads would wait on their fork and join longer than
// it computes), as PyTorch's grain size keeps small work on one thread.
class ThreadScope {
 public:
  explicit ThreadScope(int n);
  ~ThreadScope();
  int before() const { return before_; }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int before_;
};

// Hands each implementation oneDNN offers for the matmul (src x wei -> dst under attr), in its
// order of preference, to `take` (const dnnl::matmul::primitive_desc&) until `take` returns
// false or none is left. oneDNN 2's iterator reads its operation descriptor at each step, so the
// descriptor lives here for the whole walk.
template <class F>
void ForEachMatmulImpl(const dnnl::memory::desc& src, const dnnl::memory::desc& wei,
                       const dnnl::memory::desc& dst, const dnnl::primitive_attr& attr, F&& take) {
#if DNNL_VERSION_MAJOR >= 3
  dnnl::matmul::primitive_desc pd(Engine(), src, wei, dst, attr);
#else
  const dnnl::matmul::desc op(src, wei, dst);
  dnnl::matmul::primitive_desc pd(op, attr, Engine());
#endif
  while (take(static_cast<const dnnl::matmul::primitive_desc&>(pd)) && pd.next_impl()) {
  }
}

// Fills the memory with NaN of the dtype's storage, padding included, on all cores: an output an
// op never writes then fails verification. int8: the int32 output of an int8 op, filled with
// kInt32Poison (dtype.h).
void Poison(const dnnl::memory& m, DType dt);

// Times `runs` executions of a primitive on the shared stream, each waited for, with the steady
// clock: the autotune timer of CPU primitives.
autotune::Sample TimeRuns(const dnnl::primitive& prim,
                          const std::unordered_map<int, dnnl::memory>& args, int runs);

}  // namespace onednn
}  // namespace dlb
