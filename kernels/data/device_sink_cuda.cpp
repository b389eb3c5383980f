#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda/buffer.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"
#include "kernels/data/device_sink.h"

namespace dlb::data {

namespace {

class CudaSink : public DeviceSink {
 public:
  explicit CudaSink(size_t max_bytes)
      : dev_(max_bytes), stream_(cuda::MakeStream()), name_(cuda::QueryDevice().name) {}

  HostAllocator PinnedAllocator() override {
    return {[](size_t n) {
              void* p = nullptr;
              DLB_CHECK(cudaHostAlloc(&p, n, cudaHostAllocDefault));
              return p;
            },
            [](void* p) { DLB_CHECK_NOEXCEPT(cudaFreeHost(p)); }};
  }

  void Copy(const void* host, size_t bytes) override {
    if (bytes > dev_.size()) throw Error("a batch of " + std::to_string(bytes) +
                                         " bytes is larger than the device buffer");
    DLB_CHECK(cudaMemcpyAsync(dev_.get(), host, bytes, cudaMemcpyHostToDevice, stream_.get()));
    DLB_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  std::vector<uint8_t> Readback(size_t bytes) override {
    std::vector<uint8_t> out(std::min(bytes, dev_.size()));
    DLB_CHECK(cudaMemcpy(out.data(), dev_.get(), out.size(), cudaMemcpyDeviceToHost));
    return out;
  }

  std::string name() const override { return name_; }

 private:
  cuda::DeviceBuffer<uint8_t> dev_;
  cuda::Stream stream_;
  std::string name_;
};

}  // namespace

std::unique_ptr<DeviceSink> MakeDeviceSink(size_t max_bytes, std::string* why) {
  if (cuda::DeviceCount() == 0) {
    *why = cuda::NoDeviceReason();
    return nullptr;
  }
  return std::make_unique<CudaSink>(max_bytes);
}

}  // namespace dlb::data
