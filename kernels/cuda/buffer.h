// Move-only device and pinned host buffers. Allocation failure throws dlb::Error with
// "out of memory: needs X GiB, Y GiB free" so the harness can report the case and go on.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "kernels/cuda/check.h"

namespace dlb::cuda {

// Throws "out of memory: needs X GiB, Y GiB free" (with the device's free memory).
[[noreturn]] void ThrowOutOfMemory(size_t bytes);

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count == 0) return;
    cudaError_t st = cudaMalloc(reinterpret_cast<void**>(&ptr_), count * sizeof(T));
    if (st == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear the sticky-free allocation error
      ThrowOutOfMemory(count * sizeof(T));
    }
    DLB_CHECK(st);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }

  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  void Reset() noexcept {
    if (ptr_) DLB_CHECK_NOEXCEPT(cudaFree(ptr_));
    ptr_ = nullptr;
  }
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t count) : count_(count) {
    if (count) DLB_CHECK(cudaMallocHost(reinterpret_cast<void**>(&ptr_), count * sizeof(T)));
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { Reset(); }

  T* get() const { return ptr_; }
  size_t size() const { return count_; }

 private:
  void Reset() noexcept {
    if (ptr_) DLB_CHECK_NOEXCEPT(cudaFreeHost(ptr_));
    ptr_ = nullptr;
  }
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

}  // namespace dlb::cuda
