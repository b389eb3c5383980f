#include "kernels/nccl/buffer.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include "kernels/cuda/buffer.h"
#include "kernels/cuda/check.h"
#include "kernels/nccl/check.h"

namespace dlb::nccl {

std::string_view Name(BufferAlloc a) {
  return a == BufferAlloc::kNccl ? "ncclMemAlloc" : "cudaMalloc";
}

bool ParseBufferAlloc(std::string_view s, BufferAlloc* out) {
  if (s == "nccl")
    *out = BufferAlloc::kNccl;
  else if (s == "cuda")
    *out = BufferAlloc::kCuda;
  else
    return false;
  return true;
}

CommBuffer::CommBuffer(size_t bytes, BufferAlloc how) : how_(how) {
  if (bytes == 0) return;
  size_t free = 0, total = 0;
  DLB_CHECK(cudaMemGetInfo(&free, &total));
  // ncclMemAlloc rounds up to the allocation granularity (2 MiB here) and, failing, prints NCCL's
  // own warning: a size past the free memory is the harness's one line instead.
  if (bytes > free) cuda::ThrowOutOfMemory(bytes);
  void* p = nullptr;
  if (how == BufferAlloc::kNccl) {
    const ncclResult_t r = ncclMemAlloc(&p, bytes);
    if (r != ncclSuccess) {
      cudaGetLastError();
      DLB_CHECK(cudaMemGetInfo(&free, &total));
      if (bytes > free) cuda::ThrowOutOfMemory(bytes);
      DLB_CHECK(r);
    }
  } else {
    const cudaError_t st = cudaMalloc(&p, bytes);
    if (st == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      cuda::ThrowOutOfMemory(bytes);
    }
    DLB_CHECK(st);
  }
  ptr_ = static_cast<char*>(p);
  bytes_ = bytes;
}

void CommBuffer::Reset() noexcept {
  if (ptr_) {
    if (how_ == BufferAlloc::kNccl)
      DLB_CHECK_NOEXCEPT(ncclMemFree(ptr_));
    else
      DLB_CHECK_NOEXCEPT(cudaFree(ptr_));
  }
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace dlb::nccl
