// The data-loading family's tier matrix: what each tier times, as data. The datasets themselves
// are fixtures/workloads/dataload_*.csv (each with the lowest tier that includes it);
// benchmarks/dataload.cpp declares the cases from these entries. --dlb_batch_sizes, --dlb_dtypes
// and --dlb_workers replace them.
#pragma once

#include <vector>

#include "fixtures/harness.h"
#include "kernels/common/dtype.h"

namespace dlb::dataload::matrix {

inline const PerTier<std::vector<int>> kBatches = {{32}, {64, 256}, {16, 32, 64, 128, 256, 512}};

// f32 NCHW across the worker sweep; bf16 NHWC (what an amp_bf16 channels-last step eats) at the
// largest worker count.
inline const auto kDTypes = PerTier<std::vector<DType>>::Every({DType::kF32, DType::kBF16});

// The CPU pipelines' worker threads: 2 in the smoke tier, else the sweep 1, 2, 4, ... up to every
// usable CPU (data::WorkerCounts).
inline const PerTier<bool> kTwoWorkers = {true, false, false};

// The generated dataset's size (data::GeneratedImages): 256 images in the smoke tier, 4,096 in the
// default, 20,000 in the full.
inline const PerTier<bool> kSmallDataset = {true, false, false};
inline const PerTier<bool> kLargeDataset = {false, false, true};

// The GPU pipeline's reader threads: its workers only read files, nvJPEG decodes.
inline constexpr int kGpuReaders = 4;

}  // namespace dlb::dataload::matrix
