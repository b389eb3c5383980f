// A collective's device buffer, from NCCL's allocator (ncclMemAlloc: what nccl-tests allocates
// with, and what NCCL's user-buffer registration and NVLink SHARP expect) or from cudaMalloc.
// Move-only; allocation failure throws dlb::Error ("out of memory: needs X GiB, Y GiB free"), as
// kernels/cuda/buffer.h does, so the harness reports the case and goes on.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>

namespace dlb::nccl {

enum class BufferAlloc { kNccl, kCuda };

// "ncclMemAlloc" / "cudaMalloc": the context's comm_buffers and the flag's values' meaning.
std::string_view Name(BufferAlloc a);
// "nccl" / "cuda" (--dlb_comm_alloc): the value, or false.
bool ParseBufferAlloc(std::string_view s, BufferAlloc* out);

class CommBuffer {
 public:
  CommBuffer() = default;
  // On the current device; 0 bytes: no allocation.
  CommBuffer(size_t bytes, BufferAlloc how);
  CommBuffer(CommBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), how_(o.how_) {}
  CommBuffer& operator=(CommBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      how_ = o.how_;
    }
    return *this;
  }
  CommBuffer(const CommBuffer&) = delete;
  CommBuffer& operator=(const CommBuffer&) = delete;
  ~CommBuffer() { Reset(); }

  char* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void Reset() noexcept;
  char* ptr_ = nullptr;
  size_t bytes_ = 0;
  BufferAlloc how_ = BufferAlloc::kNccl;
};

}  // namespace dlb::nccl
