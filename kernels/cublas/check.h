// DLB_CHECK overload for cuBLAS and cuBLASLt (both return cublasStatus_t).
#pragma once

#include <cublas_api.h>

#include <string>

#include "kernels/common/error.h"

namespace dlb {

inline void Check(cublasStatus_t status, const char* expr, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    Fail(file, line, expr,
         std::string(cublasGetStatusName(status)) + ": " + cublasGetStatusString(status));
}

}  // namespace dlb
