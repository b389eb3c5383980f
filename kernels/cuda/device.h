// Device queries and small utilities that GPU ops share. CUDA-free header: fixtures include it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/common/autotune.h"
#include "kernels/common/dtype.h"
#include "kernels/common/op.h"

namespace dlb::cuda {

// Number of usable CUDA devices; 0 when there is no driver or no device (never throws). Asked
// once per process.
int DeviceCount();
// Why there is no device, by cause: "no NVIDIA driver (libcuda.so.1 not found)", "NVIDIA driver
// too old: it supports CUDA 12.2, this build's CUDA runtime is 13.0 (update the driver)", "no
// CUDA device visible (CUDA_VISIBLE_DEVICES=-1 hides every GPU)", ...; "" when there is one.
std::string NoDeviceReason();

struct DeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  double sm_clock_mhz = 0;   // max SM clock
  double mem_clock_mhz = 0;  // max memory clock
  int mem_bus_bits = 0;
  size_t l2_bytes = 0;
  size_t total_mem = 0;
  std::string driver;          // "580.159.04" (NVML) or the CUDA driver API version
  int runtime_version = 0;     // cudaRuntimeGetVersion
  int driver_api_version = 0;  // cudaDriverGetVersion
  std::string pci_bus_id;      // "0000:65:00.0": names the same GPU to NVML; "" if not reported
  std::string uuid;            // "GPU-01bb73db-3082-f944-1802-9550f5cb8ecf" (UuidText)
};
DeviceInfo QueryDevice(int device = 0);
// A GPU's 16-byte UUID as nvidia-smi and NVML print it: "GPU-" and the bytes in lower-case hex,
// grouped 4-2-2-2-6; "" when every byte is zero (not reported).
std::string UuidText(const unsigned char (&bytes)[16]);

// Free and total device memory in bytes.
void MemInfo(size_t* free_bytes, size_t* total_bytes);

// Uploads seeded host values in the dtype's storage to a device pointer.
void Upload(void* dst, const std::vector<float>& values, DType dt, StreamRef stream);
// Downloads n elements of dtype storage and converts to float (synchronizes the stream).
std::vector<float> Download(const void* src, size_t n, DType dt, StreamRef stream);
// Writes, in the dtype's storage, the values SeededValues(seed, d0*d1*d2*d3, dt) holds for a
// tensor of logical dims (d0, d1, d2, d3) placed by `strides` (in elements): inputs are seeded on
// the device, with no host copy and no transfer. Bit for bit what seeding on the host and
// uploading gives. f32, tf32, f16, bf16 and fp8 e4m3; e5m2 and int8 throw dlb::Error (they are
// seeded on the host).
void SeedDevice(void* dst, const std::array<int64_t, 4>& dims,
                const std::array<int64_t, 4>& strides, uint64_t seed, DType dt, StreamRef stream);
// The elements at logical flat indices `flat` of a (d0, d1, d2, d3) tensor placed by `strides`,
// gathered on the device and converted to float (synchronizes the stream): what Download and a
// layout conversion would give at those indices, without moving the whole tensor. Empty when an
// index is out of range.
std::vector<float> Gather(const void* src, const std::array<int64_t, 4>& dims,
                          const std::array<int64_t, 4>& strides, const std::vector<int64_t>& flat,
                          DType dt, StreamRef stream);
// Fills n elements of dtype storage with NaN, so an op that never writes its output fails
// verification.
void Poison(void* dst, size_t n, DType dt, StreamRef stream);

// Evicts L2 by writing a buffer twice its size; the harness calls it outside the timed span.
class L2Flusher {
 public:
  L2Flusher();
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void Flush(StreamRef stream);

 private:
  void* buf_ = nullptr;
  size_t bytes_ = 0;
};

// Events on a stream: Start/Stop around the timed work, Seconds() syncs and returns the span.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void Start(StreamRef stream);
  void Stop(StreamRef stream);
  double Seconds();
  // Times `runs` calls of `launch` issued back to back on the stream (an autotune timer): the
  // events' span per run, and the host time the calls took to enqueue.
  autotune::Sample TimeLaunches(StreamRef stream, int runs, const std::function<void()>& launch);

 private:
  struct Impl;
  Impl* impl_;
};

// Blocks until the stream's work is done (throws on an asynchronous error).
void Sync(StreamRef stream);

// Blocks until the stream's work is done like Sync, reading the device's SM clock (NVML) about
// every millisecond meanwhile: the median of what it read, in MHz; 0 when nothing could be read
// (no NVML in this build or on this machine, or work too short for one reading).
double SyncSamplingSmClock(StreamRef stream, int device = 0);
// The device's SM clock now (NVML), in MHz; 0 when it cannot be read.
double SmClockMhz(int device = 0);

// The memory bandwidth a device reaches: device-to-device cudaMemcpyAsync of a buffer far beyond
// L2 (1 GiB, or 16 x L2 where that is more; halved while it does not fit), the best of 5 timed
// batches of copies after a warm-up. Counted as read + written, 2 x the buffer per copy (as
// nvbandwidth and PyTorch's x.copy_(y) timing count it; cudaMemcpy reports only one direction).
struct CopyBandwidth {
  double bytes_per_s = 0;
  std::string method;  // "cudaMemcpyAsync device to device, 1 GiB buffer, read + write counted"
};
CopyBandwidth MeasureCopyBandwidth(int device = 0);

}  // namespace dlb::cuda

namespace dlb::cuda {
// Library versions for the benchmark context: "13.1.0" style strings, runtime-reported.
std::string CublasVersion();
}  // namespace dlb::cuda
