// The input pipelines this build has: the CPU's (TurboJPEG decoding on worker threads, CIFAR-10's
// binary records) always; nvJPEG's where the CUDA toolkit has it. The one place the family names a
// backend's build option; registration only visits the lists.
#pragma once

#include "fixtures/harness.h"
#include "kernels/data/loader.h"
#ifdef DLBENCH_HAVE_NVJPEG
#include "kernels/data/nvjpeg_loader.h"
#endif

namespace dlb::dataload {

#ifdef DLBENCH_HAVE_NVJPEG
using GpuLoaders = OpList<data::NvJpegLoader>;
#else
using GpuLoaders = OpList<>;
#endif

}  // namespace dlb::dataload
