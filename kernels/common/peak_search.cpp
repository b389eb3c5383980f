#include "kernels/common/peak_search.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dlb {

const char* Name(PeakSearch s) {
  switch (s) {
    case PeakSearch::kOne:
      return "one shape";
    case PeakSearch::kShapes:
      return "shapes";
    case PeakSearch::kWide:
      return "wide";
  }
  return "?";
}

std::vector<PeakShape> PeakSearchShapes(DType dt, PeakSearch scope, int sms) {
  // f32 runs on the FMA units at a fifteenth of the tensor-core rate: half the size keeps its
  // search as short as the others'.
  const int64_t base = dt == DType::kF32 ? 4096 : 8192;
  std::vector<PeakShape> shapes = {{base, base, base}};
  if (scope == PeakSearch::kOne) return shapes;
  // m a multiple of both 128 and 32 x SMs (32 x lcm(4, SMs)), nearest to base: 8448 on 132 SMs.
  int64_t wave = 0;
  if (sms > 0) {
    const int64_t unit = 32 * std::lcm<int64_t>(4, sms);
    wave = std::max<int64_t>(1, std::llround(double(base) / double(unit))) * unit;
  }
  // The default search's shapes, in the wide search too: a wider search never finds less.
  shapes.push_back({base / 2, base / 2, base / 2});
  shapes.push_back({base * 3 / 2, base, base});
  shapes.push_back({base, base, 2 * base});
  if (wave > 0) {
    shapes.push_back({wave, base, base});
    shapes.push_back({wave, 2 * base, base / 2});
  }
  if (scope == PeakSearch::kWide) {
    // The full tier's largest GEMM case (square.16384): the search holds it, so that no case of
    // the tier outgrows the peak.
    shapes.push_back({2 * base, 2 * base, 2 * base});
    std::vector<int64_t> mn = {base / 2, base, 2 * base};
    if (wave > 0) mn.push_back(wave);
    for (int64_t m : mn)
      for (int64_t n : mn)
        for (int64_t k : {base / 2, base, 2 * base}) {
          // m <= n: the transposed problem is the same work with the operands swapped; and no
          // more than twice base^3's work (the largest shapes' seconds bound the search's time).
          const PeakShape s{m, n, k};
          if (m <= n && s.Flops() <= 2 * PeakShape{base, base, base}.Flops()) shapes.push_back(s);
        }
  }
  std::vector<PeakShape> unique;
  for (const PeakShape& s : shapes)
    if (std::find(unique.begin(), unique.end(), s) == unique.end()) unique.push_back(s);
  std::stable_sort(unique.begin(), unique.end(),
                   [](const PeakShape& a, const PeakShape& b) { return a.Flops() > b.Flops(); });
  return unique;
}

int PeakSearchAlgorithms(PeakSearch scope) { return scope == PeakSearch::kOne ? 16 : 32; }

std::vector<bool> PeakFinalistsKept(const std::vector<double>& bytes, double budget) {
  std::vector<bool> kept(bytes.size(), false);
  double used = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    if (used + bytes[i] <= budget) {
      used += bytes[i];
      kept[i] = true;
    }
  return kept;
}

}  // namespace dlb
