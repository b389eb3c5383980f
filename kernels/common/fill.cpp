#include "kernels/common/fill.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "kernels/common/memory.h"

namespace dlb {

namespace {
// splitmix64: tiny, fast and identical everywhere (std distributions are not).
uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

namespace {
// Value i of the stream: splitmix64 is counter-based (state_i = seed + (i + 1) * golden), so
// any element can be computed on its own and big tensors are filled on all cores with the same
// numbers a sequential loop gives.
float ValueAt(uint64_t seed, size_t i, DType dt) {
  uint64_t state = seed + uint64_t(i) * 0x9e3779b97f4a7c15ULL;
  // 24 random bits -> [-1, 1) exactly representable in f32.
  float v = static_cast<float>(SplitMix(state) >> 40) * (2.0f / 16777216.0f) - 1.0f;
  return RoundTo(dt, v);
}
}  // namespace

std::vector<float> SeededValues(uint64_t seed, size_t n, DType dt) {
  RequireHostBytes(double(n) * sizeof(float));
  std::vector<float> out(n);
  auto fill = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) out[i] = ValueAt(seed, i, dt);
  };
  const size_t threads =
      std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), n / (1 << 20) + 1);
  if (threads <= 1) {
    fill(0, n);
    return out;
  }
  std::vector<std::thread> pool;
  const size_t chunk = (n + threads - 1) / threads;
  for (size_t t = 0; t < threads; ++t)
    pool.emplace_back(fill, std::min(n, t * chunk), std::min(n, (t + 1) * chunk));
  for (auto& th : pool) th.join();
  return out;
}

uint64_t TensorSeed(uint64_t run_seed, int tensor_index) {
  uint64_t s = run_seed * 0x100000001b3ULL + static_cast<uint64_t>(tensor_index) + 1;
  return SplitMix(s);
}

std::vector<uint8_t> ToStorage(const std::vector<float>& values, DType dt) {
  std::vector<uint8_t> out(values.size() * StorageBytes(dt));
  if (StorageBytes(dt) == 4) {
    std::memcpy(out.data(), values.data(), out.size());
  } else {
    auto* p = reinterpret_cast<uint16_t*>(out.data());
    for (size_t i = 0; i < values.size(); ++i)
      p[i] = dt == DType::kBF16 ? FloatToBf16(values[i]) : FloatToF16(values[i]);
  }
  return out;
}

std::vector<float> FromStorage(const void* data, size_t n, DType dt) {
  std::vector<float> out(n);
  if (StorageBytes(dt) == 4) {
    std::memcpy(out.data(), data, n * 4);
  } else {
    const auto* p = static_cast<const uint16_t*>(data);
    for (size_t i = 0; i < n; ++i)
      out[i] = dt == DType::kBF16 ? Bf16ToFloat(p[i]) : F16ToFloat(p[i]);
  }
  return out;
}

}  // namespace dlb
