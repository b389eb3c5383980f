// What the ops on cuDNN's backend graph API (the convolutions, the attention) write alike: an
// attribute, a tensor descriptor, and the sizes in their labels. Internal to kernels/cudnn.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <string>

#include "kernels/cudnn/check.h"

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
