// The GEMM rate a GPU reaches, measured: the fastest cuBLASLt GEMM of the dtype over the shapes
// and heuristic algorithms of a search (kernels/common/peak_search.h: one large square for the
// smoke tier, about 6 shapes for the default, about 26 for the full; 16 to 32 algorithms each),
// every candidate ranked by a short timing, the best of each shape timed with CUDA events after a
// warm-up (the sustained rate), then the fastest shapes re-timed the way a default-tier case is
// timed (short spans between idle gaps, which hold a higher clock under the power cap); the
// higher rate, with the SM clock observed while it ran. What the harness calls a GPU's measured peak
// (fixtures/machine/peak.h): datasheet peaks assume the boost clock, which a GPU under its power
// cap does not hold through a GEMM. CUDA-free header.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/common/dtype.h"
#include "kernels/common/peak_search.h"

namespace dlb::cublas {

struct GemmPeakRun {
  double flops = 0;         // FLOP/s (int8: operations/s); 0 when the dtype cannot run here
  double sm_clock_mhz = 0;  // median SM clock during the timed runs of the best shape; 0: unknown
  // "cuBLASLt best of 6 shapes x up to 32 heuristic algorithms (search "shapes", 12.1 s),
  // sustained: 8448x8192x8192 TN, best of 5 batches of 20; cublasLtMatmul ...; 741.7 TFLOP/s at
  // 1590 MHz; re-timed like a case, the fastest 6: 8192x8192x8192 TN, as a case: best of 40 spans
  // of 2 after 500 ms idle; cublasLtMatmul ...; 790.2 TFLOP/s; the peak: the case-like rate; SM
  // clock 1965 MHz (median while timed)"
  std::string method;
};

// Measures on the current device. Never throws: a dtype the GPU lacks (fp8 before sm_89), no
// device, or a failure leaves flops 0 and says why in `method` (a shape that fails or that the
// library cannot run is left out of the search; only when every shape does is there no figure).
GemmPeakRun MeasureGemmPeak(DType dt, PeakSearch scope);

}  // namespace dlb::cublas
