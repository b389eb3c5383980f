// The inference family's tier matrix: what each tier times, as data. The models themselves are
// fixtures/workloads/infer_models.csv (each with the lowest tier that includes it); benchmarks/
// infer.cpp declares the cases from these entries. --dlb_batch_sizes and --dlb_dtypes replace the
// batch sizes and dtypes.
#pragma once

#include <cstdint>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/common/dtype.h"

namespace dlb::infer::matrix {

// Decode: sequences a step (one token each) and the context cached before it.
//   smoke: batch 1 at 64 on both devices;
//   default: GPU batch 1, 8, 32, 128 at 2048; CPU batch 1 and 8 at 512;
//   full: GPU batch 1..256 at 2048, 8192 and 32768; CPU batch 1, 8, 32 at 512 and 2048.
inline const PerTier<std::vector<int>> kGpuDecodeBatches = {
    {1}, {1, 8, 32, 128}, {1, 8, 32, 64, 128, 256}};
inline const PerTier<std::vector<int64_t>> kGpuDecodeCtx = {{64}, {2048}, {2048, 8192, 32768}};
inline const PerTier<std::vector<int>> kCpuDecodeBatches = {{1}, {1, 8}, {1, 8, 32}};
inline const PerTier<std::vector<int64_t>> kCpuDecodeCtx = {{64}, {512}, {512, 2048}};

// Prefill: prompts a step and their tokens.
//   smoke: 1 prompt of 32 on both devices; default: GPU 1 of 2048, CPU 1 and 8 of 128;
//   full: GPU 1 and 8 of 2048 and 8192, CPU 1 and 8 of 128 and 512. The CPU's int8 weights: no
//   prefill (decompressing weights is decode's lever, where the weights' bytes set the time).
inline const PerTier<std::vector<int>> kGpuPrefillBatches = {{1}, {1}, {1, 8}};
inline const PerTier<std::vector<int64_t>> kGpuPrefillCtx = {{32}, {2048}, {2048, 8192}};
inline const PerTier<std::vector<int>> kCpuPrefillBatches = {{1}, {1, 8}, {1, 8}};
inline const auto kCpuInt8PrefillBatches = PerTier<std::vector<int>>::Every({});
inline const PerTier<std::vector<int64_t>> kCpuPrefillCtx = {{32}, {128}, {128, 512}};

// bf16 on the GPU (fp8 e4m3 weights beside it from the default tier); f32 and bf16 on the CPU
// (int8 weights beside them from the default tier).
inline const PerTier<std::vector<DType>> kGpuDTypes = {
    {DType::kBF16}, {DType::kBF16, DType::kFP8E4M3}, {DType::kBF16, DType::kFP8E4M3}};
inline const PerTier<std::vector<DType>> kCpuDTypes = {{DType::kF32, DType::kBF16},
                                                       {DType::kF32, DType::kBF16, DType::kInt8},
                                                       {DType::kF32, DType::kBF16, DType::kInt8}};
// LibTorch's steps: bf16 only on the GPU (its fp8 would be torch._scaled_mm, not a step a user
// writes); f32 and bf16 on the CPU (int8 weight decompression is oneDNN's matmul, not LibTorch's).
inline const auto kGpuTorchDTypes = PerTier<std::vector<DType>>::Every({DType::kBF16});
inline const auto kCpuTorchDTypes = PerTier<std::vector<DType>>::Every({DType::kF32, DType::kBF16});
// The batch sizes fp8 decode runs at (the bf16 batches otherwise).
inline const PerTier<std::vector<int>> kGpuFp8DecodeBatches = {{1}, {1, 32}, {1, 8, 32, 128}};

// The paged KV cache's rows (GPU decode, beside the contiguous cache's at the same points): smoke,
// to test it, and full; the default tier times the contiguous cache alone.
inline const PerTier<bool> kGpuPagedDecode = {true, false, true};

// What a CPU case may cost, so that a tier keeps its time: the weights of its model (parameters a
// step reads) and the FLOPs of one step. smoke and default: the tiny model (a 1B-class decode
// step reads 2.5 GB of bf16 weights, and seeding and packing them takes minutes on a shared
// 2-core machine); full: the 1B-class decode and prefills up to 2 TFLOP a step.
inline const PerTier<double> kCpuMaxParams = {1e8, 1e8, 1e10};
inline const PerTier<double> kCpuMaxStepFlops = {1e9, 5e10, 2e12};

}  // namespace dlb::infer::matrix
