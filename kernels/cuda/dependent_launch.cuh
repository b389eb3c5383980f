// Programmatic dependent launch (compute capability 9.0 on), as the decode step's
// weight-streaming products use it (gemv.cu): a kernel so launched may start while the kernel
// before it on the stream is still running, once every block of that one has called
// LetDependentsStart() (or ended). Until its own WaitForPrevious() returns it may read only what
// that kernel does not write (a step's weights); after it, everything the previous kernels wrote is
// visible. On older GPUs the launch is a plain one and both calls do nothing. Internal to
// kernels/cuda (CUDA sources).
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/check.h"

namespace dlb::cuda {

// Whether the current device takes the launch attribute (asked at each launch: a step's kernels
// are launched when it is captured, not each replay).
inline bool DependentLaunchSupported() {
  int device = 0, major = 0;
  DLB_CHECK(cudaGetDevice(&device));
  DLB_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9;
}

// kernel<<<grid, block, smem, stream>>>(args...) as a programmatic dependent launch where the
// device supports it. Checks the launch.
template <class... Params, class... Args>
void LaunchDependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                     cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  if (DependentLaunchSupported()) {
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  DLB_CHECK(cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...));
}

__device__ __forceinline__ void LetDependentsStart() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void WaitForPrevious() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace dlb::cuda
