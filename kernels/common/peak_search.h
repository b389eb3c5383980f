// What the measured GEMM peak searches (kernels/cublas/peak.h), as the "maximum achievable matmul
// FLOPS" finders do: GEMM shapes near the GPU's sweet spots, and many of the library's heuristic
// algorithms for each, the fastest of all kept. How wide the search is follows the tier, so that
// a smoke run stays short; the figure is cached per GPU, driver and library build
// (fixtures/machine/peak.h), so a tier pays for its search once per machine. CUDA-free, so that a
// CPU test checks the list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/dtype.h"

namespace dlb {

enum class PeakSearch {
  kOne,     // the smoke tier: one large square (8192^3; f32, on the FMA units, 4096^3)
  kShapes,  // the default tier: about 6 shapes, squares and wave-aligned rectangles
  kWide,    // the full tier: about 26 shapes over m, n and k
};
const char* Name(PeakSearch s);

struct PeakShape {
  int64_t m = 0, n = 0, k = 0;
  double Flops() const { return 2.0 * double(m) * double(n) * double(k); }
  bool operator==(const PeakShape& o) const { return m == o.m && n == o.n && k == o.k; }
};

// The shapes the peak of `dt` is searched over, on a GPU of `sms` SMs (0: unknown, no
// wave-aligned shapes), the largest work first: none more than twice the square's work but, in the
// wide search, the full tier's 2x larger square (8 times the work). Every
// dimension is a multiple of 128 (the tiles' rows). Wave-aligned: m a multiple of 32 x SMs as well,
// so that 128-row tiles fill whole waves of the GPU's SMs, where a square's last wave runs
// part-empty.
std::vector<PeakShape> PeakSearchShapes(DType dt, PeakSearch scope, int sms);

// How many of the library's heuristic algorithms are timed per shape (it may return fewer).
int PeakSearchAlgorithms(PeakSearch scope);

// The search's fastest shapes keep their GEMMs for the case-like re-timing (kernels/cublas/peak.h)
// while their operands fit in `budget` bytes: given each finalist's bytes, fastest first, which
// keep theirs. One too large for what is left is skipped and the next, smaller, may still fit.
std::vector<bool> PeakFinalistsKept(const std::vector<double>& bytes, double budget);

}  // namespace dlb
