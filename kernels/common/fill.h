// Seeded inputs: the op and the reference generate the same values from the same seed.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/dtype.h"
#include "kernels/common/rng.h"

namespace dlb {

namespace detail {
// Value i of the stream before rounding to a dtype: splitmix64 is counter-based (state_i =
// seed + (i + 1) * golden), so any element can be computed on its own, big tensors are filled
// on all cores (or on the GPU) with the numbers a sequential loop gives, and a check can read
// single elements without the tensor. 24 random bits -> [-1, 1), exact in f32.
DLB_HOST_DEVICE inline float UnroundedSeededValueAt(uint64_t seed, uint64_t i) {
  uint64_t state = seed + i * 0x9e3779b97f4a7c15ULL;
  return static_cast<float>(SplitMix64(state) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}
inline float SeededValueAt(uint64_t seed, size_t i, DType dt) {
  return RoundTo(dt, UnroundedSeededValueAt(seed, i));
}
}  // namespace detail

// n values uniform in [-1, 1), each already rounded to dt so the op and the reference see exactly
// the same numbers. Deterministic for (seed, n, dt) on every platform.
// Throws dlb::Error("out of memory: needs X GiB of host memory, Y GiB available") when the values
// would not fit in the memory the host has available.
std::vector<float> SeededValues(uint64_t seed, size_t n, DType dt);

// Writes the dtype's storage (fill.h's ToStorage) of SeededValues(seed, n, dt) straight into dst,
// on all cores: big inputs are seeded in place, without a float copy in between.
void SeedStorage(void* dst, uint64_t seed, size_t n, DType dt);

// The values SeededValues(seed, n, dt) holds, computed when read: verifying a sampled output of
// a big batch reads only the input elements its positions touch, without materializing inputs.
class SeededView {
 public:
  SeededView(uint64_t seed, size_t n, DType dt) : seed_(seed), n_(n), dt_(dt) {}
  float operator[](size_t i) const { return detail::SeededValueAt(seed_, i, dt_); }
  size_t size() const { return n_; }

 private:
  uint64_t seed_;
  size_t n_;
  DType dt_;
};

// Derives a per-tensor seed from the run's seed and the tensor's index (A=0, B=1, ...).
uint64_t TensorSeed(uint64_t run_seed, int tensor_index);

// Converts floats to the dtype's storage bytes (f32/tf32: 4 bytes each, f16/bf16: 2; the 8-bit
// types: 1, the value divided by the dtype's StorageScale) and back (dequantised).
std::vector<uint8_t> ToStorage(const std::vector<float>& values, DType dt);
std::vector<float> FromStorage(const void* data, size_t n, DType dt);

}  // namespace dlb
