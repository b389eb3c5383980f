// Programmatic dependent launch (Hopper and later): a kernel launched with LaunchDependent may
// start while the kernel before it on the stream finishes, do what does not read that kernel's
// output (a product's first weights), then wait for it (WaitForPrecedingGrid). The kernel before
// it lets it start by calling AllowDependentGrid once its own main work is done. Both are no-ops
// below sm_90 and in a kernel launched the ordinary way; a CUDA graph keeps the dependency as a
// programmatic edge. For .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "kernels/cuda/check.h"

namespace dlb::cuda {

__device__ __forceinline__ void WaitForPrecedingGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void AllowDependentGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// kernel<<<grid, block, 0, stream>>>(args...) as a programmatic dependent of the stream's last
// kernel.
template <class... Params, class... Args>
void LaunchDependent(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                     Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attr;
  config.numAttrs = 1;
  DLB_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace dlb::cuda
