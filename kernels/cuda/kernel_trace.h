// The GPU cases' per-kernel table (--dlb_kernels=on) from CUPTI's activity API: every kernel,
// memcpy and memset the GPU ran in the recorded span, CUDA graph replays included (each kernel
// node comes as a kernel record). CUDA-free header.
#pragma once

#include <memory>

#include "kernels/common/kernel_trace.h"

namespace dlb::cuda {

// The recorder of GPU cases. It enables CUPTI's kernel, memcpy and memset activities at once,
// for the rest of the process: made before any case is built, CUPTI is attached before any CUDA
// graph is captured (attaching after a capture is what profilers warn against), and a graph's
// kernels are recorded however it was instantiated. Records outside a span are dropped. Throws
// dlb::Error with CUPTI's reason where it cannot trace (another profiler holds it, ...).
std::shared_ptr<trace::Recorder> MakeCuptiRecorder();

}  // namespace dlb::cuda
