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

// A launch's shared-memory carveout: `percent` of the multiprocessor's on-chip memory (L1 and
// shared memory are one array) as shared memory, a hint the driver maps to one of the splits the
// GPU has. Kernels of different splits cannot share a multiprocessor: one that needs another split
// waits until the multiprocessor has drained, so the kernels of a step that start beside one
// another can all ask for the same (kernels/cublas/infer.h).
inline cudaLaunchAttribute SharedCarveoutAttr(int percent) {
  cudaLaunchAttribute a = {};
  a.id = cudaLaunchAttributePreferredSharedMemoryCarveout;
  a.val.sharedMemCarveout = unsigned(percent);
  return a;
}

// kernel<<<grid, block, smem, stream>>>(args...) as a programmatic dependent launch where the
// device supports it, asking for a shared-memory carveout of `carveout` percent of the
// multiprocessor's on-chip memory (SharedCarveoutAttr; -1 leaves it to the driver). Checks the
// launch.
template <class... Params, class... Args>
void LaunchDependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, int carveout,
                     cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  cfg.attrs = attr;
  if (DependentLaunchSupported()) {
    attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[cfg.numAttrs++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (carveout >= 0) attr[cfg.numAttrs++] = SharedCarveoutAttr(carveout);
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
