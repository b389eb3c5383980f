// Seeded inputs: the op and the reference generate the same values from the same seed.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/dtype.h"

namespace dlb {

// n values uniform in [-1, 1), each already rounded to dt so the op and the reference see exactly
// the same numbers. Deterministic for (seed, n, dt) on every platform.
// Throws dlb::Error("out of memory: needs X GiB of host memory, Y GiB available") when the values
// would not fit in the memory the host has available.
std::vector<float> SeededValues(uint64_t seed, size_t n, DType dt);

// Derives a per-tensor seed from the run's seed and the tensor's index (A=0, B=1, ...).
uint64_t TensorSeed(uint64_t run_seed, int tensor_index);

// Converts floats to the dtype's storage bytes (f32/tf32: 4 bytes each, f16/bf16: 2).
std::vector<uint8_t> ToStorage(const std::vector<float>& values, DType dt);
std::vector<float> FromStorage(const void* data, size_t n, DType dt);

}  // namespace dlb
