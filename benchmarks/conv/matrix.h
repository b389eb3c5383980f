// The convolution family's tier matrix: what each tier times, as data. The layers themselves are
// fixtures/workloads/conv_*.csv (one file per network, each row with the lowest tier that includes
// it); benchmarks/conv.cpp declares the cases from these entries. --dlb_batch_sizes and
// --dlb_dtypes replace them.
#pragma once

#include <vector>

#include "fixtures/harness.h"
#include "kernels/common/dtype.h"

namespace dlb::conv::matrix {

// Batch sizes by device: the default tier's on the CPU are those a CPU trains with (16, 32, 64);
// the GPU's go to 256.
inline const PerTier<std::vector<int>> kCpuBatches = {
    {1, 2}, {16, 32, 64}, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}};
inline const PerTier<std::vector<int>> kGpuBatches = {
    {1, 2}, {16, 32, 64, 128, 256}, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}};

// f32 and bf16 on both devices; tf32 and f16 too on the GPU in the full tier.
inline const auto kCpuDTypes = PerTier<std::vector<DType>>::Every({DType::kF32, DType::kBF16});
inline const PerTier<std::vector<DType>> kGpuDTypes = {
    {DType::kF32, DType::kBF16},
    {DType::kF32, DType::kBF16},
    {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16}};

// Each dtype in the layout a framework uses for it (NaturalLayout: NCHW for 32 bits, NHWC for
// 16); on the GPU the full tier times both layouts.
inline const PerTier<bool> kGpuEveryLayout = {false, false, true};

}  // namespace dlb::conv::matrix
