// The device side of kernels/nccl/pattern.h: seeding a rank's input and counting the output
// elements that differ from what the collective must produce. CUDA-free header.
#pragma once

#include <cstdint>

#include "kernels/common/dtype.h"
#include "kernels/common/op.h"
#include "kernels/nccl/shape.h"

namespace dlb::nccl {

// Writes pattern::Input(seed, rank, ranks, first + j) to dst[j] for j < n, in dt's storage.
void FillInput(void* dst, int64_t n, int64_t first, DType dt, uint64_t seed, int rank, int ranks,
               StreamRef stream);

// Adds to *wrong (a device counter) how many of the n output elements differ from
// pattern::Expected; NaN (a poisoned, never written element) counts as wrong. Enqueued only.
void CountWrong(const void* out, int64_t n, DType dt, Collective c, uint64_t seed, int rank,
                int ranks, int64_t chunk, unsigned long long* wrong, StreamRef stream);

}  // namespace dlb::nccl
