// DLB_CHECK overload for the CUDA runtime.
#pragma once

#include <cuda_runtime.h>

#include "kernels/common/error.h"

namespace dlb {

inline void Check(cudaError_t status, const char* expr, const char* file, int line) {
  if (status != cudaSuccess)
    Fail(file, line, expr,
         std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status));
}

}  // namespace dlb
