// Small statistics over samples, shared by the kernels' own timing (the peak search, the step
// phases, the clock readings). CUDA-free.
#pragma once

#include <algorithm>
#include <vector>

namespace dlb {

// The median of `v` (the upper of the two middle values for an even count); 0 when empty.
inline double UpperMedian(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace dlb
