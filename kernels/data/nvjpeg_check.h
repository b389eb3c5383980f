// nvJPEG's statuses as DLB_CHECK errors, and RAII for its handles: what the GPU JPEG pipeline
// (nvjpeg_loader.cu) and its tests need of nvJPEG itself. Include only where nvjpeg.h is found.
#pragma once

#include <library_types.h>
#include <nvjpeg.h>

#include <memory>
#include <string>

#include "kernels/common/error.h"

namespace dlb {

// nvJPEG has no status-to-string function.
inline const char* NvJpegStatusName(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS:
      return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG:
      return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return "nvJPEG status (unknown)";
}

// DLB_CHECK overload for nvJPEG. It must be declared before its first DLB_CHECK: nvjpegStatus_t is
// a global-namespace enum, so argument-dependent lookup does not find it in dlb.
inline void Check(nvjpegStatus_t status, const char* expr, const char* file, int line) {
  if (status != NVJPEG_STATUS_SUCCESS)
    Fail(file, line, expr,
         std::string(NvJpegStatusName(status)) + " (" + std::to_string(int(status)) + ")");
}

}  // namespace dlb

namespace dlb::data {

struct NvJpegHandleDeleter {
  void operator()(nvjpegHandle_t h) const noexcept { DLB_CHECK_NOEXCEPT(nvjpegDestroy(h)); }
};
struct NvJpegStateDeleter {
  void operator()(nvjpegJpegState_t s) const noexcept {
    DLB_CHECK_NOEXCEPT(nvjpegJpegStateDestroy(s));
  }
};
struct NvJpegStreamDeleter {
  void operator()(nvjpegJpegStream_t s) const noexcept {
    DLB_CHECK_NOEXCEPT(nvjpegJpegStreamDestroy(s));
  }
};
using NvJpegHandle = std::unique_ptr<nvjpegHandle, NvJpegHandleDeleter>;
using NvJpegState = std::unique_ptr<nvjpegJpegState, NvJpegStateDeleter>;
using NvJpegStream = std::unique_ptr<nvjpegJpegStream, NvJpegStreamDeleter>;

inline NvJpegState MakeState(nvjpegHandle_t h) {
  nvjpegJpegState_t s = nullptr;
  DLB_CHECK(nvjpegJpegStateCreate(h, &s));
  return NvJpegState(s);
}

inline NvJpegStream MakeJpegStream(nvjpegHandle_t h) {
  nvjpegJpegStream_t s = nullptr;
  DLB_CHECK(nvjpegJpegStreamCreate(h, &s));
  return NvJpegStream(s);
}

// A status that one file can cause (a bad or unsupported bitstream): the image is skipped. The
// others (allocation, initialisation, internal errors) are the op's failure.
inline bool IsFileError(nvjpegStatus_t s) {
  return s == NVJPEG_STATUS_BAD_JPEG || s == NVJPEG_STATUS_JPEG_NOT_SUPPORTED ||
         s == NVJPEG_STATUS_INCOMPLETE_BITSTREAM || s == NVJPEG_STATUS_EXECUTION_FAILED ||
         s == NVJPEG_STATUS_INVALID_PARAMETER || s == NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED;
}

inline std::string NvJpegVersion() {
  int v[3] = {};
  const libraryPropertyType p[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
  for (int i = 0; i < 3; ++i) DLB_CHECK(nvjpegGetProperty(p[i], &v[i]));
  return std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
}

}  // namespace dlb::data
