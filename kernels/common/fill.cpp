#include "kernels/common/fill.h"

#include <algorithm>
#include <cstring>

#include "kernels/common/memory.h"
#include "kernels/common/parallel.h"

namespace dlb {

std::vector<float> SeededValues(uint64_t seed, size_t n, DType dt) {
  RequireHostBytes(double(n) * sizeof(float));
  std::vector<float> out(n);
  ParallelFor(n, size_t(1) << 20, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) out[i] = detail::SeededValueAt(seed, i, dt);
  });
  return out;
}

void SeedStorage(void* dst, uint64_t seed, size_t n, DType dt) {
  ParallelFor(n, size_t(1) << 20, [&](size_t begin, size_t end) {
    if (StorageBytes(dt) == 4) {
      auto* p = static_cast<float*>(dst);
      for (size_t i = begin; i < end; ++i) p[i] = detail::SeededValueAt(seed, i, dt);
      return;
    }
    if (StorageBytes(dt) == 1) {
      auto* p = static_cast<uint8_t*>(dst);
      for (size_t i = begin; i < end; ++i) p[i] = ToScaled(dt, detail::SeededValueAt(seed, i, dt));
      return;
    }
    auto* p = static_cast<uint16_t*>(dst);
    const bool bf16 = dt == DType::kBF16;
    for (size_t i = begin; i < end; ++i) {
      const float v = detail::SeededValueAt(seed, i, dt);
      p[i] = bf16 ? FloatToBf16(v) : FloatToF16(v);
    }
  });
}

uint64_t TensorSeed(uint64_t run_seed, int tensor_index) {
  uint64_t s = run_seed * 0x100000001b3ULL + static_cast<uint64_t>(tensor_index) + 1;
  return SplitMix64(s);
}

std::vector<uint8_t> ToStorage(const std::vector<float>& values, DType dt) {
  std::vector<uint8_t> out(values.size() * StorageBytes(dt));
  if (StorageBytes(dt) == 4) {
    std::memcpy(out.data(), values.data(), out.size());
    return out;
  }
  if (StorageBytes(dt) == 1) {
    ParallelFor(values.size(), size_t(1) << 20, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) out[i] = ToScaled(dt, values[i]);
    });
    return out;
  }
  auto* p = reinterpret_cast<uint16_t*>(out.data());
  const bool bf16 = dt == DType::kBF16;
  ParallelFor(values.size(), size_t(1) << 20, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      p[i] = bf16 ? FloatToBf16(values[i]) : FloatToF16(values[i]);
  });
  return out;
}

std::vector<float> FromStorage(const void* data, size_t n, DType dt) {
  std::vector<float> out(n);
  if (StorageBytes(dt) == 4) {
    std::memcpy(out.data(), data, n * 4);
    return out;
  }
  if (StorageBytes(dt) == 1) {
    const auto* b = static_cast<const uint8_t*>(data);
    ParallelFor(n, size_t(1) << 20, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) out[i] = FromScaled(dt, b[i]);
    });
    return out;
  }
  const auto* p = static_cast<const uint16_t*>(data);
  const bool bf16 = dt == DType::kBF16;
  ParallelFor(n, size_t(1) << 20, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) out[i] = bf16 ? Bf16ToFloat(p[i]) : F16ToFloat(p[i]);
  });
  return out;
}

}  // namespace dlb
