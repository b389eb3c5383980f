// The data-loading family's GPU pipeline: ImageFolder JPEGs decoded by nvJPEG in batches (on the
// GPU's hardware JPEG decoder where it has one: A100, H100, H200), then RandomResizedCrop + flip +
// Normalize in one CUDA kernel per batch, into an f32 or bf16 NCHW/NHWC tensor on the device.
// CPU threads only read files (and parse headers, which nvJPEG needs on the host): a pool of
// `workers` readers fetches the next batch's bytes while the GPU decodes the current one.
//
// It delivers what the CPU pipeline (kernels/data/pipeline.h) delivers: the same stream of
// positions, the same permutation per epoch and the same augmentation draws per position, decoded
// at full size (no DCT scaling). Only the decoder differs (nvJPEG's IDCT and chroma upsampling
// against libjpeg's), which Verify() bounds by PSNR.
//
// No CUDA header here: the harness and the benchmark registration include it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/verdict.h"
#include "kernels/data/loader.h"

namespace dlb::data {

// dataload/gpu/nvjpeg/<dataset>.rrc<side>: the harness's contract (kernels/common/op.h) with a
// measurement window, as CpuLoader. One Run() delivers the next batch on the device and waits for
// it (the harness times windowed ops by wall clock).
class NvJpegLoader {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "nvjpeg";
  // WarmUp() alone: it decodes a few batches (nvJPEG's and the decode arena's buffers grow to their
  // steady size) and the statistics start after it.
  static constexpr int kWarmupRuns = 0;
  static constexpr double kWarmupSeconds = 0;

  // The least PSNR, in dB on 8-bit values, of a sample against TurboJPEG's decode of the same file
  // with the same crop and flip (see Verify in nvjpeg_loader.cu for why this much).
  static constexpr double kMinPsnrDb = 30.0;

  static Support Supports(const LoaderShape& s, const RunConfig& cfg);
  NvJpegLoader(const LoaderShape& s, const RunConfig& cfg);
  ~NvJpegLoader();
  NvJpegLoader(const NvJpegLoader&) = delete;
  NvJpegLoader& operator=(const NvJpegLoader&) = delete;

  // Starts the readers; they fetch the first batch not yet delivered. Stop() joins them and drops
  // what they fetched: after the next Start() the same batches come again, identical.
  void Start();
  void Stop();
  void WarmUp();
  void Run();
  Verdict Verify();
  Cost cost() const;
  std::string label() const;
  std::vector<std::pair<std::string, double>> Counters() const;
  StreamRef stream() const;

  // What the last Run() delivered, on the device: `size` samples of SampleBytes(side, dtype),
  // compacted (a skipped image leaves the batch one short), in stream order.
  struct DeviceBatch {
    const void* data = nullptr;
    int64_t size = 0;
    int64_t seq = -1;  // batches since the start of the stream
    std::vector<int> labels;
    std::vector<int64_t> samples;    // source index of each
    std::vector<int64_t> positions;  // stream position of each
  };
  const DeviceBatch& batch() const;
  // Sample k of the last batch, copied to the host and converted to float (CHW or HWC as the
  // layout says): verification and tests only.
  std::vector<float> SampleOnHost(int64_t k) const;

  bool hardware() const;  // the hardware decoder backend is in use
  int hw_engines() const;
  int64_t skipped() const;  // images skipped since the last WarmUp (or construction)
  StreamOrder& order();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlb::data
