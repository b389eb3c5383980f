// The GEMM family's tier matrix: what each tier times, as data. The rows themselves are
// fixtures/workloads/gemm_*.csv (each with the lowest tier that includes it); benchmarks/gemm.cpp
// declares the cases from these entries. --dlb_batch_sizes and --dlb_dtypes replace them.
#pragma once

#include <vector>

#include "fixtures/harness.h"
#include "kernels/common/dtype.h"

namespace dlb::gemm::matrix {

// The batch sizes of the fully connected rows, whose M is the batch (m = bs in the CSV).
inline const PerTier<std::vector<int>> kFcBatches = {
    {2}, {16, 64, 256}, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}};

// The dtypes of every row, by device: f32 and bf16 on the CPU; on the GPU tf32 and f16 too,
// except in the smoke tier.
inline const auto kCpuDTypes = PerTier<std::vector<DType>>::Every({DType::kF32, DType::kBF16});
inline const PerTier<std::vector<DType>> kGpuDTypes = {
    {DType::kF32, DType::kBF16},
    {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16},
    {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16}};

// The 8-bit types, after those above: FP8 on cuBLASLt alone (the backend with FP8 scales), then
// int8 on every backend. The default tier times them on the square rows, the full tier on every
// row.
inline const PerTier<std::vector<DType>> kFp8DTypes = {
    {}, {DType::kFP8E4M3}, {DType::kFP8E4M3, DType::kFP8E5M2}};
inline const PerTier<std::vector<DType>> kInt8DTypes = {{}, {DType::kInt8}, {DType::kInt8}};
inline const PerTier<bool> kEightBitOnEveryRow = {false, false, true};

}  // namespace dlb::gemm::matrix
