// The GEMM rate a GPU reaches, measured: the fastest cuBLASLt algorithm of the heuristic's top
// results for a large square GEMM of the dtype (8192^3; f32, which runs on the FMA units, 4096^3),
// timed with CUDA events after a warm-up, with the SM clock observed while it ran. What the
// harness calls a GPU's measured peak (fixtures/machine/peak.h): datasheet peaks assume the boost
// clock, which a GPU under its power cap does not hold through a GEMM. CUDA-free header.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/common/dtype.h"

namespace dlb::cublas {

struct GemmPeakRun {
  double flops = 0;         // FLOP/s (int8: operations/s); 0 when the dtype cannot run here
  double sm_clock_mhz = 0;  // median SM clock during the timed runs; 0 when unknown
  std::string method;       // "cuBLASLt 8192^3, best of 8 heuristic algorithms (...), 1755 MHz"
};

// The GEMM size the peak of `dt` is measured at.
int64_t PeakGemmSize(DType dt);

// Measures on the current device. Never throws: a dtype the GPU lacks (fp8 before sm_89), no
// device, or a failure leaves flops 0 and says why in `method`.
GemmPeakRun MeasureGemmPeak(DType dt);

}  // namespace dlb::cublas
