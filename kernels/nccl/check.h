// DLB_CHECK overload for NCCL results, and RAII for communicators.
#pragma once

#include <nccl.h>

#include <memory>
#include <string>

#include "kernels/common/error.h"

namespace dlb {

// "ncclInvalidUsage: invalid usage (run with NCCL_DEBUG=WARN for details): <NCCL's last error>",
// the name first so logs grep well.
inline void Check(ncclResult_t status, const char* expr, const char* file, int line) {
  if (status == ncclSuccess || status == ncclInProgress) return;
  static constexpr const char* kNames[] = {
      "ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
      "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress"};
  std::string message = int(status) >= 0 && int(status) < 8 ? kNames[status] : "ncclResult";
  message += std::string(": ") + ncclGetErrorString(status);
  if (const char* last = ncclGetLastError(nullptr); last && *last)
    message += std::string(": ") + last;
  Fail(file, line, expr, message);
}

namespace nccl {

struct CommDeleter {
  void operator()(ncclComm_t c) const noexcept { DLB_CHECK_NOEXCEPT(ncclCommDestroy(c)); }
};
using Comm = std::unique_ptr<ncclComm, CommDeleter>;

}  // namespace nccl
}  // namespace dlb
