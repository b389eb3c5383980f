// The attention family's tier matrix: what each tier times, as data. The models themselves are
// fixtures/workloads/attn_models.csv (each with the lowest tier that includes it); benchmarks/
// attn.cpp declares the cases from these entries. --dlb_batch_sizes and --dlb_dtypes replace them.
#pragma once

#include <cstdint>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/common/dtype.h"

namespace dlb::attn::matrix {

// Sequence lengths, and the tokens of one batch (batch = tokens / seq, at least 1): every point
// of a tier does the same projection work, so the attention's S^2 shows.
//   smoke: seq 128, batch 1 on both devices;
//   default: GPU seq 512..8192 at 16384 tokens (16 x 1024, 4 x 4096, ...), CPU 128 and 512 at 1024;
//   full: GPU seq 256..16384 at 16384 tokens, CPU seq 128..2048 at 4096 tokens.
inline const PerTier<std::vector<int64_t>> kGpuSeqs = {
    {128}, {512, 1024, 2048, 4096, 8192}, {256, 512, 1024, 2048, 4096, 8192, 16384}};
inline const PerTier<int64_t> kGpuTokens = {128, 16384, 16384};
inline const PerTier<std::vector<int64_t>> kCpuSeqs = {
    {128}, {128, 512}, {128, 256, 512, 1024, 2048}};
inline const PerTier<int64_t> kCpuTokens = {128, 1024, 4096};

// bf16 (and f16 in the full tier) on the GPU; f32 and bf16 on the CPU.
inline const PerTier<std::vector<DType>> kGpuDTypes = {
    {DType::kBF16}, {DType::kBF16}, {DType::kBF16, DType::kF16}};
inline const auto kCpuDTypes = PerTier<std::vector<DType>>::Every({DType::kF32, DType::kBF16});

}  // namespace dlb::attn::matrix
