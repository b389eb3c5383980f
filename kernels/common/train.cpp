#include "kernels/common/train.h"

#include <algorithm>
#include <cmath>

#include "kernels/common/error.h"
#include "kernels/common/fill.h"

namespace dlb {

MlpParams SeededMlpParams(uint64_t seed, const std::vector<int64_t>& widths) {
  if (widths.size() < 2) throw Error("an MLP needs at least two widths (input and output)");
  MlpParams p;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const int64_t in = widths[l], out = widths[l + 1];
    if (in <= 0 || out <= 0) throw Error("MLP widths must be positive");
    const float bound = 1.0f / std::sqrt(float(in));
    std::vector<float> w = SeededValues(TensorSeed(seed, 10 + 2 * int(l)), size_t(out * in),
                                        DType::kF32);
    std::vector<float> b = SeededValues(TensorSeed(seed, 11 + 2 * int(l)), size_t(out),
                                        DType::kF32);
    for (float& v : w) v *= bound;
    for (float& v : b) v *= bound;
    p.weight.push_back(std::move(w));
    p.bias.push_back(std::move(b));
  }
  return p;
}

std::vector<int64_t> SeededLabels(uint64_t seed, int64_t batch, int64_t classes) {
  if (classes <= 0) throw Error("classes must be positive");
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  const uint64_t s = TensorSeed(seed, 1);
  for (int64_t i = 0; i < batch; ++i) {
    // [-1, 1) -> [0, classes): 24 random bits, so every class up to 2^24 is reachable.
    const float u = (detail::UnroundedSeededValueAt(s, uint64_t(i)) + 1.0f) * 0.5f;
    labels[size_t(i)] = std::min<int64_t>(classes - 1, int64_t(u * float(classes)));
  }
  return labels;
}

MlpBatch SeededMlpBatch(uint64_t seed, int64_t batch, int64_t features, int64_t classes) {
  MlpBatch b;
  b.x = SeededValues(TensorSeed(seed, 0), size_t(batch * features), DType::kF32);
  b.labels = SeededLabels(seed, batch, classes);
  return b;
}

}  // namespace dlb
