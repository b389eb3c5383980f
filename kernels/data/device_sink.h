// Where a CPU pipeline's batches go when a GPU trains on them: pinned host buffers for the ring
// and a host-to-device copy of each batch on a stream of its own. No CUDA header here: builds
// without CUDA link device_sink_none.cpp, whose MakeDeviceSink says why there is none.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kernels/data/pipeline.h"

namespace dlb::data {

class DeviceSink {
 public:
  virtual ~DeviceSink() = default;
  // cudaHostAlloc'd buffers for the pipeline's ring (copies from them run at full PCIe speed).
  virtual HostAllocator PinnedAllocator() = 0;
  // Copies bytes from host to the device buffer (grown once to the largest batch) and waits for
  // the copy: a batch counts as delivered once it is on the GPU.
  virtual void Copy(const void* host, size_t bytes) = 0;
  // The device buffer's first `bytes`, back on the host: verification only.
  virtual std::vector<uint8_t> Readback(size_t bytes) = 0;
  virtual std::string name() const = 0;  // "NVIDIA H100 80GB HBM3"
};

// A sink on the current CUDA device, sized for `max_bytes`; nullptr with *why set when there is
// no GPU (or no CUDA in this build).
std::unique_ptr<DeviceSink> MakeDeviceSink(size_t max_bytes, std::string* why);

}  // namespace dlb::data
