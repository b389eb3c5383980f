// DLB_CHECK overload for cuDNN statuses, and RAII for the handle and backend descriptors.
#pragma once

#include <cudnn.h>

#include <memory>
#include <string>

#include "kernels/common/error.h"

namespace dlb {

// "CUDNN_STATUS_NOT_SUPPORTED: <cuDNN's last error message>", the name first so logs grep well.
inline void Check(cudnnStatus_t status, const char* expr, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char last[512] = {};
  cudnnGetLastErrorString(last, sizeof(last));
  std::string message = cudnnGetErrorString(status);
  if (last[0]) message += std::string(": ") + last;
  Fail(file, line, expr, message);
}

namespace cudnn {

struct HandleDeleter {
  void operator()(cudnnHandle_t h) const noexcept { DLB_CHECK_NOEXCEPT(cudnnDestroy(h)); }
};
using Handle = std::unique_ptr<cudnnContext, HandleDeleter>;

inline Handle MakeHandle() {
  cudnnHandle_t h = nullptr;
  DLB_CHECK(cudnnCreate(&h));
  return Handle(h);
}

// cudnnBackendDescriptor_t is a void*; unique_ptr<void> owns one.
struct DescriptorDeleter {
  void operator()(void* d) const noexcept { DLB_CHECK_NOEXCEPT(cudnnBackendDestroyDescriptor(d)); }
};
using Descriptor = std::unique_ptr<void, DescriptorDeleter>;

inline Descriptor MakeDescriptor(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  DLB_CHECK(cudnnBackendCreateDescriptor(type, &d));
  return Descriptor(d);
}

}  // namespace cudnn
}  // namespace dlb
