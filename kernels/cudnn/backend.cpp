#include "kernels/cudnn/backend.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <mutex>

#include "kernels/cuda/check.h"

namespace dlb::cudnn {

std::string VersionText(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

std::string DeviceProps::Key() const {
  return name + " sm_" + std::to_string(major) + std::to_string(minor);
}

DeviceProps CurrentDevice() {
  static std::mutex mu;
  static std::map<int, DeviceProps> known;
  int device = 0;
  DLB_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known.find(device); it != known.end()) return it->second;
  cudaDeviceProp p{};
  DLB_CHECK(cudaGetDeviceProperties(&p, device));
  return known[device] = {p.name, p.major, p.minor};
}

}  // namespace dlb::cudnn

namespace dlb::cudnn::engines {

Descriptor TensorDescriptor(int64_t uid, const std::array<int64_t, 4>& dims,
                            const std::array<int64_t, 4>& strides, cudnnDataType_t type,
                            bool is_virtual, bool by_value) {
  Descriptor t = MakeDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t alignment = 16;
  Set(t.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  Set(t.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  Set(t.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  Set(t.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  Set(t.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  Set(t.get(), CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  Set(t.get(), CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
  DLB_CHECK(cudnnBackendFinalize(t.get()));
  return t;
}

std::string Mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fMiB", bytes / (1024.0 * 1024.0));
  return buf;
}

}  // namespace dlb::cudnn::engines
