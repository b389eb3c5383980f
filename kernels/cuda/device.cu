#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "kernels/common/fill.h"
#include "kernels/common/stats.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"

#ifdef DLBENCH_HAVE_NVML
#include <nvml.h>
#endif

namespace dlb::cuda {

namespace {

std::string VersionText(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// Why cudaGetDeviceCount found no device, in words that fit the cause. The runtime reports a
// missing driver as "driver version is insufficient", so the driver library is looked for first.
std::string Explain(cudaError_t st) {
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) cudaGetLastError();
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return "no NVIDIA driver (libcuda.so.1 not found)";
  int driver = 0;
  using GetVersion = int (*)(int*);
  if (auto get = reinterpret_cast<GetVersion>(::dlsym(lib, "cuDriverGetVersion"))) get(&driver);
  ::dlclose(lib);  // the runtime holds its own reference when it loaded the library
  if (st == cudaErrorInsufficientDriver)
    return "NVIDIA driver too old: it supports CUDA " + VersionText(driver) +
           ", this build's CUDA runtime is " + VersionText(runtime) + " (update the driver)";
  if (st == cudaErrorStubLibrary)
    return "no NVIDIA driver (libcuda.so.1 is the CUDA toolkit's stub, not a driver)";
  if (st == cudaErrorNoDevice || st == cudaSuccess) {
    if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
      return std::string("no CUDA device visible (CUDA_VISIBLE_DEVICES=") + visible +
             " hides every GPU)";
    return "no CUDA device (the NVIDIA driver, CUDA " + VersionText(driver) +
           ", is installed but sees no GPU)";
  }
  return std::string("CUDA unusable: ") + cudaGetErrorString(st);
}

struct Probe {
  int count = 0;
  std::string reason;  // "" when count > 0
};

// Once per process: the answer cannot change while it runs, and asking again costs a driver call.
const Probe& Devices() {
  static const Probe probe = [] {
    Probe p;
    const cudaError_t st = cudaGetDeviceCount(&p.count);
    if (st != cudaSuccess) {
      cudaGetLastError();
      p.count = 0;
    }
    if (p.count == 0) p.reason = Explain(st);
    return p;
  }();
  return probe;
}

}  // namespace

int DeviceCount() { return Devices().count; }

std::string NoDeviceReason() { return Devices().reason; }

std::string UuidText(const unsigned char (&bytes)[16]) {
  bool any = false;
  for (unsigned char b : bytes) any |= b != 0;
  if (!any) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

#ifdef DLBENCH_HAVE_NVML
namespace {
// NVML opened once for the process and left open: nvmlInit costs milliseconds or more, too much
// to pay around every timed batch (it is reference-counted, so the device monitor's own
// init and shutdown leave this one open).
bool NvmlOpen() {
  static const bool open = nvmlInit_v2() == NVML_SUCCESS;
  return open;
}

// CUDA device `device`'s NVML handle: the PCI bus id names the same GPU to NVML whatever
// CUDA_VISIBLE_DEVICES renumbers. Looked up once per device (a clock read between two timed spans
// should not pay for the lookup again); the handle stays valid while NVML is open.
bool NvmlHandle(int device, nvmlDevice_t* dev) {
  static std::mutex mutex;
  static std::map<int, nvmlDevice_t> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(device); it != known.end()) {
    *dev = it->second;
    return true;
  }
  char bus[32] = {};
  const bool found = NvmlOpen() && cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess &&
                     nvmlDeviceGetHandleByPciBusId_v2(bus, dev) == NVML_SUCCESS;
  cudaGetLastError();
  if (found) known[device] = *dev;
  return found;
}
}  // namespace
#endif

DeviceInfo QueryDevice(int device) {
  DeviceInfo info;
  cudaDeviceProp p{};
  DLB_CHECK(cudaGetDeviceProperties(&p, device));
  info.name = p.name;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.sms = p.multiProcessorCount;
  info.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  info.total_mem = p.totalGlobalMem;
  info.mem_bus_bits = p.memoryBusWidth;
  int khz = 0;
  DLB_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  info.sm_clock_mhz = khz / 1000.0;
  DLB_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device));
  info.mem_clock_mhz = khz / 1000.0;
  DLB_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  DLB_CHECK(cudaDriverGetVersion(&info.driver_api_version));
  unsigned char uuid[16];
  for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>(p.uuid.bytes[i]);
  info.uuid = UuidText(uuid);
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess)
    info.pci_bus_id = bus;
  else
    cudaGetLastError();  // the id only helps NVML find the device: its index is the fallback
  info.driver = std::to_string(info.driver_api_version / 1000) + "." +
                std::to_string(info.driver_api_version % 1000 / 10) + " (driver API)";
#ifdef DLBENCH_HAVE_NVML
  if (NvmlOpen()) {
    char buf[96] = {};
    if (nvmlSystemGetDriverVersion(buf, sizeof buf) == NVML_SUCCESS) info.driver = buf;
  }
  // The card's own handle (by PCI bus id): NVML's index ignores CUDA_VISIBLE_DEVICES.
  if (nvmlDevice_t dev{}; NvmlHandle(device, &dev)) {
    unsigned mhz = 0;
    if (nvmlDeviceGetMaxClockInfo(dev, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS && mhz)
      info.sm_clock_mhz = mhz;
    if (nvmlDeviceGetMaxClockInfo(dev, NVML_CLOCK_MEM, &mhz) == NVML_SUCCESS && mhz)
      info.mem_clock_mhz = mhz;
  }
#endif
  return info;
}

void MemInfo(size_t* free_bytes, size_t* total_bytes) {
  DLB_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

void ThrowOutOfMemory(size_t bytes) {
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) cudaGetLastError();
  char msg[160];
  std::snprintf(msg, sizeof msg, "out of memory: needs %.2f GiB, %.2f GiB free",
                bytes / 1073741824.0, free_b / 1073741824.0);
  throw Error(msg);
}

void Upload(void* dst, const std::vector<float>& values, DType dt, StreamRef stream) {
  std::vector<uint8_t> bytes = ToStorage(values, dt);
  DLB_CHECK(cudaMemcpyAsync(dst, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream));
  DLB_CHECK(cudaStreamSynchronize(stream));  // `bytes` dies at return
}

std::vector<float> Download(const void* src, size_t n, DType dt, StreamRef stream) {
  std::vector<uint8_t> bytes(n * StorageBytes(dt));
  DLB_CHECK(cudaMemcpyAsync(bytes.data(), src, bytes.size(), cudaMemcpyDeviceToHost, stream));
  DLB_CHECK(cudaStreamSynchronize(stream));
  return FromStorage(bytes.data(), n, dt);
}

namespace {
__global__ void Fill32(uint32_t* p, size_t n, uint32_t v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = v;
}
__global__ void Fill16(uint16_t* p, size_t n, uint16_t v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = v;
}

// The host's RoundTo and storage conversion for the values seeding produces (finite, |v| < 1):
// bf16 rounds to nearest even on the top 16 bits; f16 is IEEE round-to-nearest-even.
__device__ uint16_t Bf16Bits(float f) {
  uint32_t u = __float_as_uint(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// n elements of a (d0, d1, d2, d3) tensor placed by strides s0..s3; the seed for SeedKernel.
struct Placement {
  int64_t n, d1, d2, d3, s0, s1, s2, s3;
  uint64_t seed;
};

template <class T, int kKind>  // kKind: 0 f32/tf32, 1 bf16, 2 f16, 3 e4m3 (of v / its scale)
__global__ void SeedKernel(T* dst, Placement a, float inv_storage_scale) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.n; i += step) {
    const int64_t e = i % a.d3, c = i / a.d3 % a.d2, b = i / (a.d3 * a.d2) % a.d1,
                  n = i / (a.d3 * a.d2 * a.d1);
    const float v = detail::UnroundedSeededValueAt(a.seed, uint64_t(i));
    T out;
    if constexpr (kKind == 0) {
      out = v;
    } else if constexpr (kKind == 1) {
      out = Bf16Bits(v);
    } else if constexpr (kKind == 3) {
      // The host's EncodeFp8: round to nearest even, saturating at 448 (|v| < 1 and the scale a
      // power of two keep it exact and far below).
      out = __nv_cvt_float_to_fp8(v * inv_storage_scale, __NV_SATFINITE, __NV_E4M3);
    } else {
      out = __half_as_ushort(__float2half_rn(v));
    }
    dst[n * a.s0 + b * a.s1 + c * a.s2 + e * a.s3] = out;
  }
}
}  // namespace

void SeedDevice(void* dst, const std::array<int64_t, 4>& dims,
                const std::array<int64_t, 4>& strides, uint64_t seed, DType dt, StreamRef stream) {
  const Placement a{dims[0] * dims[1] * dims[2] * dims[3],
                    dims[1],
                    dims[2],
                    dims[3],
                    strides[0],
                    strides[1],
                    strides[2],
                    strides[3],
                    seed};
  if (a.n == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((a.n + 255) / 256, 8192));
  switch (dt) {
    case DType::kF32:
    case DType::kTF32:
      SeedKernel<float, 0><<<blocks, 256, 0, stream>>>(static_cast<float*>(dst), a, 1.f);
      break;
    case DType::kBF16:
      SeedKernel<uint16_t, 1><<<blocks, 256, 0, stream>>>(static_cast<uint16_t*>(dst), a, 1.f);
      break;
    case DType::kF16:
      SeedKernel<uint16_t, 2><<<blocks, 256, 0, stream>>>(static_cast<uint16_t*>(dst), a, 1.f);
      break;
    case DType::kFP8E4M3:
      // The inference family's fp8 weights (gigabytes: seeding them on the host took a minute).
      SeedKernel<uint8_t, 3><<<blocks, 256, 0, stream>>>(static_cast<uint8_t*>(dst), a,
                                                         float(1.0 / StorageScale(dt)));
      break;
    case DType::kFP8E5M2:
    case DType::kInt8:
      // Only the GEMM family has these, and it seeds them on the host (cuda::Upload).
      throw Error("SeedDevice: " + std::string(Name(dt)) + " tensors are seeded on the host");
  }
  DLB_CHECK(cudaGetLastError());
}

namespace {
// out[i] = the element at logical flat index flat[i] of a (d0, d1, d2, d3) tensor placed by the
// strides: raw storage, converted on the host as Download does.
template <class T>
__global__ void GatherKernel(const T* src, const int64_t* flat, T* out, Placement a) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < a.n; j += step) {
    const int64_t i = flat[j];
    const int64_t e = i % a.d3, c = i / a.d3 % a.d2, b = i / (a.d3 * a.d2) % a.d1,
                  n = i / (a.d3 * a.d2 * a.d1);
    out[j] = src[n * a.s0 + b * a.s1 + c * a.s2 + e * a.s3];
  }
}
}  // namespace

std::vector<float> Gather(const void* src, const std::array<int64_t, 4>& dims,
                          const std::array<int64_t, 4>& strides, const std::vector<int64_t>& flat,
                          DType dt, StreamRef stream) {
  const int64_t total = dims[0] * dims[1] * dims[2] * dims[3];
  if (flat.empty() || !IndicesBelow(flat, total)) return {};
  const size_t es = StorageBytes(dt);
  DeviceBuffer<int64_t> d_flat(flat.size());
  DeviceBuffer<uint8_t> d_out(flat.size() * es);
  DLB_CHECK(cudaMemcpyAsync(d_flat.get(), flat.data(), flat.size() * sizeof(int64_t),
                            cudaMemcpyHostToDevice, stream));
  const Placement a{int64_t(flat.size()), dims[1],    dims[2],    dims[3], strides[0],
                    strides[1],           strides[2], strides[3], 0};
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((a.n + 255) / 256, 1024));
  if (es == 1) {
    GatherKernel<uint8_t><<<blocks, 256, 0, stream>>>(static_cast<const uint8_t*>(src),
                                                      d_flat.get(), d_out.get(), a);
  } else if (es == 4) {
    GatherKernel<uint32_t><<<blocks, 256, 0, stream>>>(static_cast<const uint32_t*>(src),
                                                       d_flat.get(),
                                                       reinterpret_cast<uint32_t*>(d_out.get()), a);
  } else {
    GatherKernel<uint16_t><<<blocks, 256, 0, stream>>>(static_cast<const uint16_t*>(src),
                                                       d_flat.get(),
                                                       reinterpret_cast<uint16_t*>(d_out.get()), a);
  }
  DLB_CHECK(cudaGetLastError());
  return Download(d_out.get(), flat.size(), dt, stream);
}

void Poison(void* dst, size_t n, DType dt, StreamRef stream) {
  if (n == 0) return;
  unsigned blocks = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 4096));
  if (StorageBytes(dt) == 4) {
    Fill32<<<blocks, 256, 0, stream>>>(static_cast<uint32_t*>(dst), n, 0x7fc00000u);
  } else if (StorageBytes(dt) == 1) {
    DLB_REQUIRE(dt != DType::kInt8, "int8 has no NaN to poison with");
    DLB_CHECK(cudaMemsetAsync(dst, dt == DType::kFP8E4M3 ? 0x7f : 0x7e, n, stream));
  } else {
    uint16_t nan = dt == DType::kBF16 ? 0x7fc0 : 0x7e00;
    Fill16<<<blocks, 256, 0, stream>>>(static_cast<uint16_t*>(dst), n, nan);
  }
  DLB_CHECK(cudaGetLastError());
}

L2Flusher::L2Flusher() {
  int dev = 0, l2 = 0;
  DLB_CHECK(cudaGetDevice(&dev));
  DLB_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  bytes_ = static_cast<size_t>(l2) * 2;
  if (bytes_) DLB_CHECK(cudaMalloc(&buf_, bytes_));
}

L2Flusher::~L2Flusher() {
  if (buf_) DLB_CHECK_NOEXCEPT(cudaFree(buf_));
}

void L2Flusher::Flush(StreamRef stream) {
  if (buf_) DLB_CHECK(cudaMemsetAsync(buf_, 0, bytes_, stream));
}

struct EventTimer::Impl {
  cudaEvent_t start = nullptr, stop = nullptr;
};

EventTimer::EventTimer() : impl_(new Impl) {
  DLB_CHECK(cudaEventCreate(&impl_->start));
  DLB_CHECK(cudaEventCreate(&impl_->stop));
}

EventTimer::~EventTimer() {
  DLB_CHECK_NOEXCEPT(cudaEventDestroy(impl_->start));
  DLB_CHECK_NOEXCEPT(cudaEventDestroy(impl_->stop));
  delete impl_;
}

void EventTimer::Start(StreamRef stream) { DLB_CHECK(cudaEventRecord(impl_->start, stream)); }
void EventTimer::Stop(StreamRef stream) { DLB_CHECK(cudaEventRecord(impl_->stop, stream)); }

double EventTimer::Seconds() {
  DLB_CHECK(cudaEventSynchronize(impl_->stop));
  float ms = 0;
  DLB_CHECK(cudaEventElapsedTime(&ms, impl_->start, impl_->stop));
  return ms / 1000.0;
}

autotune::Sample EventTimer::TimeLaunches(StreamRef stream, int runs,
                                          const std::function<void()>& launch) {
  Start(stream);
  const double t0 = autotune::SteadyMs();
  for (int i = 0; i < runs; ++i) launch();
  const double host_ms = autotune::SteadyMs() - t0;
  Stop(stream);
  return {1e3 * Seconds() / runs, host_ms};
}

void Sync(StreamRef stream) { DLB_CHECK(cudaStreamSynchronize(stream)); }

double SmClockMhz(int device) {
#ifdef DLBENCH_HAVE_NVML
  nvmlDevice_t dev{};
  unsigned clock = 0;
  if (NvmlHandle(device, &dev) &&
      nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, &clock) == NVML_SUCCESS)
    return clock;
#else
  (void)device;
#endif
  return 0;
}

double SyncSamplingSmClock(StreamRef stream, int device) {
  std::vector<double> mhz;
#ifdef DLBENCH_HAVE_NVML
  if (nvmlDevice_t dev{}; NvmlHandle(device, &dev)) {
    while (cudaStreamQuery(stream) == cudaErrorNotReady) {
      if (const double clock = SmClockMhz(device); clock > 0) mhz.push_back(clock);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    cudaGetLastError();  // a real error surfaces in the synchronisation below
  }
#else
  (void)device;
#endif
  Sync(stream);
  return UpperMedian(std::move(mhz));
}

CopyBandwidth MeasureCopyBandwidth(int device) {
  DLB_CHECK(cudaSetDevice(device));
  int l2 = 0;
  DLB_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  size_t free_b = 0, total_b = 0;
  DLB_CHECK(cudaMemGetInfo(&free_b, &total_b));
  size_t bytes = std::max(size_t{1} << 30, size_t(l2) * 16);
  // Two buffers in at most half the free memory: the rest stays for whoever runs beside.
  while (bytes > (size_t{64} << 20) && 2 * bytes > free_b / 2) bytes /= 2;
  DeviceBuffer<uint8_t> src(bytes), dst(bytes);
  DLB_CHECK(cudaMemsetAsync(src.get(), 1, bytes));
  Stream stream = MakeStream();
  EventTimer timer;
  auto copy = [&] {
    DLB_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream.get()));
  };
  DLB_CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < 3; ++i) copy();  // warm-up: clocks up, pages mapped
  Sync(stream.get());
  constexpr int kCopies = 10, kBatches = 5;
  double best = 0;
  for (int b = 0; b < kBatches; ++b) {
    timer.Start(stream.get());
    for (int i = 0; i < kCopies; ++i) copy();
    timer.Stop(stream.get());
    const double s = timer.Seconds();
    if (s > 0) best = std::max(best, 2.0 * double(bytes) * kCopies / s);
  }
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "cudaMemcpyAsync device to device, %.0f MiB buffer, read + write counted, best of "
                "%d x %d copies",
                bytes / 1048576.0, kBatches, kCopies);
  return {best, buf};
}

}  // namespace dlb::cuda
