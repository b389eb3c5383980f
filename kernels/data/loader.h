// The data-loading family's CPU ops, in the harness's contract (kernels/common/op.h): one Run()
// delivers the next batch of a running pipeline (kernels/data/pipeline.h), and, when a GPU trains
// on it, copies the batch to the device. The pipeline works between Run() calls, so the ops have a
// measurement window (Start/Stop) and warm up by filling their prefetch ring (WarmUp).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/verdict.h"
#include "kernels/data/device_sink.h"
#include "kernels/data/pipeline.h"

namespace dlb::data {

struct LoaderShape {
  std::string dir;  // the dataset folder (ImageFolder of JPEGs, or CIFAR-10 binary batches)
  int batch = 256;
  int workers = 1;
  int side = 224;  // output images are side x side (CIFAR-10: 32)
  int depth = 4;   // batches in the ring
  bool to_device = false;  // copy each batch to the GPU (pinned ring buffers)
  // With to_device: copy in Run(); false keeps the ring pinned for a consumer that copies itself
  // (a training step copying into its own input).
  bool copy = true;
};

// The datasets the ops read, loaded once per folder and shared by every case.
std::shared_ptr<const ImageFolder> CachedImageFolder(const std::string& dir);
std::shared_ptr<const Cifar10> CachedCifar10(const std::string& dir);

class CpuLoader {
 public:
  static constexpr bool kGpu = false;
  // WarmUp() alone: it fills the ring, and the statistics start after it.
  static constexpr int kWarmupRuns = 0;
  static constexpr double kWarmupSeconds = 0;

  static Support Supports(const LoaderShape& s, const RunConfig& cfg);
  virtual ~CpuLoader() = default;

  void Start() { pipe_->Start(); }
  void Stop() { pipe_->Stop(); }
  void WarmUp();
  void Run();
  Verdict Verify();
  Cost cost() const;
  std::string label() const;
  std::vector<std::pair<std::string, double>> Counters() const;

  Pipeline& pipeline() { return *pipe_; }
  const Pipeline& pipeline() const { return *pipe_; }

 protected:
  CpuLoader(std::shared_ptr<const SampleSource> src, const LoaderShape& s, const RunConfig& cfg,
            std::string what);
  // The float64 reference of the sample at stream position p (CHW, normalised).
  virtual std::vector<double> Reference(int64_t sample, uint64_t seed) const = 0;
  virtual const char* ReferenceName() const = 0;  // for the verdict's sentence
  double mean_bytes_ = 0;  // of a sample's file (JPEG) or record, for the bytes/s counter

 private:
  LoaderShape shape_;
  RunConfig cfg_;
  std::string what_;
  std::unique_ptr<DeviceSink> sink_;
  std::string sink_why_;
  std::unique_ptr<Pipeline> pipe_;
  std::vector<double> latency_s_;
  int64_t delivered_ = 0;
};

// dataload/cpu/turbojpeg/<dataset>.rrc<side>: ImageFolder JPEGs through TurboJPEG.
class TurboJpegLoader : public CpuLoader {
 public:
  static constexpr const char* kBackend = "turbojpeg";
  TurboJpegLoader(const LoaderShape& s, const RunConfig& cfg);

 protected:
  std::vector<double> Reference(int64_t sample, uint64_t seed) const override;
  const char* ReferenceName() const override { return "float64 crop and resize of libjpeg's decode"; }

 private:
  std::shared_ptr<const ImageFolder> folder_;
};

// dataload/cpu/raw/cifar10.crop32: CIFAR-10's binary records, no decode.
class CifarLoader : public CpuLoader {
 public:
  static constexpr const char* kBackend = "raw";
  CifarLoader(const LoaderShape& s, const RunConfig& cfg);

 protected:
  std::vector<double> Reference(int64_t sample, uint64_t seed) const override;
  const char* ReferenceName() const override { return "float64 crop of the records"; }

 private:
  std::shared_ptr<const Cifar10> data_;
};

// p-th percentile (0..100) of xs by linear interpolation between order statistics; 0 when empty.
double Percentile(std::vector<double> xs, double p);

}  // namespace dlb::data
