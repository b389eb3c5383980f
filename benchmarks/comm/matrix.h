// The collectives family's tier matrix as data: the sizes, dtypes and in-place forms each tier
// times (--dlb_comm_bytes and --dlb_dtypes replace sizes and dtypes).
#pragma once

#include <cstdint>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/common/dtype.h"

namespace dlb::comm::matrix {

// from, from*factor, ... up to `to` (bytes).
inline std::vector<int64_t> Powers(int64_t from, int64_t to, int64_t factor) {
  std::vector<int64_t> out;
  for (int64_t b = from; b <= to; b *= factor) out.push_back(b);
  return out;
}
// 8 B, then `rest`.
inline std::vector<int64_t> EightBytesThen(std::vector<int64_t> rest) {
  rest.insert(rest.begin(), 8);
  return rest;
}

// Sizes in bytes: smoke 8 B, 64 KiB, 1 MiB; default 8 B and the powers of 4 from 16 B to 1 GiB;
// full every power of 2 from 8 B to 4 GiB.
inline const PerTier<std::vector<int64_t>> kSizes{
    {8, 64 << 10, 1 << 20},
    EightBytesThen(Powers(16, int64_t(1) << 30, 4)),
    Powers(8, int64_t(4) << 30, 2),
};

// Dtypes: all_reduce bf16 and f32, the other collectives bf16; full f32, bf16, f16 for all.
inline const PerTier<std::vector<DType>> kAllReduceDTypes{
    {DType::kBF16, DType::kF32},
    {DType::kBF16, DType::kF32},
    {DType::kF32, DType::kBF16, DType::kF16},
};
inline const PerTier<std::vector<DType>> kDTypes{
    {DType::kBF16},
    {DType::kBF16},
    {DType::kF32, DType::kBF16, DType::kF16},
};

// Out of place, and in place: all_reduce at every tier, the others from default on (all_to_all,
// which has no in-place form, never: family.cpp).
inline const PerTier<std::vector<bool>> kAllReduceInPlace{
    {false, true},
    {false, true},
    {false, true},
};
inline const PerTier<std::vector<bool>> kInPlace{
    {false},
    {false, true},
    {false, true},
};

}  // namespace dlb::comm::matrix
