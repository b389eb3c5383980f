// What the ops on cuDNN's backend graph API (the convolutions, the attention) write alike: an
// attribute, a tensor descriptor, the sizes in their labels, and the loaded library's version and
// the device that their labels and autotune cache keys name. Internal to kernels/cudnn.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cudnn/check.h"

namespace dlb::cudnn {

// "9.14.0" of cudnnGetVersion()'s number: the loaded library's, not the header's, as the lowering,
// the engines and so the autotune cache follow the library.
std::string VersionText(size_t version);

// The current device's name and compute capability, asked once per device.
struct DeviceProps {
  std::string name;
  int major = 0, minor = 0;
  // "NVIDIA H100 80GB HBM3 sm_90": the device an autotune cache entry belongs to.
  std::string Key() const;
};
DeviceProps CurrentDevice();

}  // namespace dlb::cudnn

namespace dlb::cudnn::engines {

template <class T>
void Set(void* d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
         const T* values) {
  DLB_CHECK(cudnnBackendSetAttribute(d, name, type, count, values));
}

// A finalized tensor descriptor: 16-byte aligned, `dims` and `strides` of rank 4. A virtual one
// lives only inside the graph; a by-value one is a scalar the variant pack passes by address.
Descriptor TensorDescriptor(int64_t uid, const std::array<int64_t, 4>& dims,
                            const std::array<int64_t, 4>& strides, cudnnDataType_t type,
                            bool is_virtual = false, bool by_value = false);

// "12.50MiB".
std::string Mib(double bytes);

}  // namespace dlb::cudnn::engines
