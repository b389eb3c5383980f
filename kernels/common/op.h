// The op contract: the one shape every op in kernels/ has, so that the harness (fixtures/) can
// support-check, build, verify, time and record any of them the same way (docs/architecture.md
// shows where it sits). The harness checks it at compile time (fixtures/case/op_traits.h); a
// backend's header says only what is particular to its ops.
//
// Every op has:
//   static constexpr bool kGpu;                 // where it runs: the name's <device>
//   static constexpr const char* kBackend;      // the name's <backend>
//   static Support Supports(const Shape&, const RunConfig&);  // cheap, no allocation
//   Op(const Shape&, const RunConfig&);  // plans, buffers, seeded inputs; poisons the output;
//                                        // throws dlb::Unsupported for a case found unsupported
//   void Run();                          // one pass: enqueued on the GPU, no sync, no allocation
//   HostTensor Output() const;           // sync + copy out, for verification only (an op with
//                                        // Verify() below may do without)
//   Cost cost() const;                   // flops and bytes of one Run()
//   std::string label() const;           // chosen algorithm/engine
// GPU ops also have `StreamRef stream() const`, the stream Run() enqueues on (the harness times
// it with CUDA events there).
//
// An op may also have:
//   HostTensor OutputAt(const std::vector<int64_t>& flat) const;
//       only the elements at these flat logical indices (shape: the whole output's; data empty
//       when an index is out of range): the verifier then reads its samples without copying a
//       batch-256 output out whole (gathered on the GPU, picked after one reorder on the CPU)
//   Verdict Verify();      checks itself (one run against its own reference) instead of Output()
//                          against the family's float64 reference
//   std::vector<std::pair<std::string, double>> Counters() const;   per-case extra counters
//   void Start(); void Stop();   a measurement window, for ops that keep working between
//                          iterations (a prefetching pipeline): every Run() happens inside it, and
//                          the harness times the window's wall clock, so nothing runs off the clock
//   void WarmUp();         warms itself (fills its queue) before the harness's warm-up runs
//   static constexpr int kWarmupRuns; static constexpr double kWarmupSeconds;
//                          replace the warm-up's 2 runs and 10 ms (0 and 0: WarmUp() alone)
//   int gpus() const;      the GPUs cost() counts the work of (a data-parallel step): pct_peak and
//                          the roofline divide by it, as the peaks are one GPU's
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/dtype.h"
#include "kernels/common/error.h"
#include "kernels/common/shapes.h"

struct CUstream_st;  // cudaStream_t without a CUDA header

namespace dlb {

using StreamRef = CUstream_st*;

// Whether a case can run here. `why` is the bare reason ("bf16 needs avx512_bf16 or amx"): the
// harness, which owns the result schema, prefixes it with "unsupported: ".
struct Support {
  bool ok = true;
  std::string why;  // set when !ok
  static Support Yes() { return {}; }
  static Support No(std::string why) { return {false, std::move(why)}; }
};

// For constructors: a case Supports() turns down throws dlb::Unsupported with the bare reason, as
// does one found unsupported only while building (no engine or implementation for it).
inline void RequireSupported(const Support& s) {
  if (!s.ok) throw Unsupported(s.why);
}

struct Cost {
  double flops = 0;  // floating-point operations of one Run() (a multiply-add counts 2)
  double bytes = 0;  // compulsory bytes read + written by one Run()
  double items = 0;  // samples (images) processed by one Run(); 0 when not meaningful
  // Where an op's work (flops) differs from the count other tools rate it by (a convolution's
  // padding taps): that count, written as its own rate; 0 when there is none.
  double conventional_flops = 0;
};

enum class Layout { kNCHW, kNHWC };
inline const char* Name(Layout l) { return l == Layout::kNCHW ? "nchw" : "nhwc"; }

// How an op picks its algorithm or engine (--dlb_autotune, --dlb_gemm_algo): the library's first
// candidate, the fastest of its candidates timed before the case on every run, or the winner the
// autotune cache recorded (else a search whose winner is recorded;
// kernels/common/autotune_cache.h).
enum class Algo { kHeuristic, kSearch, kCache };
inline const char* Name(Algo a) {
  return a == Algo::kHeuristic ? "heuristic" : a == Algo::kSearch ? "search" : "cache";
}

struct RunConfig {
  DType dtype = DType::kF32;
  Layout layout = Layout::kNCHW;
  uint64_t seed = 42;
  int threads = 0;  // CPU threads; 0 = the library's default
  Algo algo = Algo::kHeuristic;
  bool fast_accum = false;  // fp8 GEMMs: cuBLASLt's fast accumulation (--dlb_gemm_fp8_accum)
};

// A host copy of an op's output, converted to float for comparison.
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Whether every flat index lies in [0, n): OutputAt reads nothing otherwise.
inline bool IndicesBelow(const std::vector<int64_t>& flat, int64_t n) {
  return std::all_of(flat.begin(), flat.end(), [n](int64_t i) { return i >= 0 && i < n; });
}

// data[flat[i]] for every i, from a float array of n elements; empty when an index is out of
// range (OutputAt's contract).
inline std::vector<float> PickAt(const float* data, int64_t n, const std::vector<int64_t>& flat) {
  std::vector<float> out;
  if (!IndicesBelow(flat, n)) return out;
  out.reserve(flat.size());
  for (int64_t i : flat) out.push_back(data[i]);
  return out;
}

}  // namespace dlb
