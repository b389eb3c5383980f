// A training step fed by a real input pipeline instead of its static seeded batch: the end-to-end
// question of the data-loading family, does the loader keep the GPU busy? Each Run() takes the
// pipeline's next batch (the CPU pipeline's pinned buffer, or the nvJPEG pipeline's device batch),
// copies it into the step's static input on the step's stream, and runs the step (one graph
// replay, or an eager step). The step alone, on its static batch, is timed first in the same
// process: starvation = 1 - (images/s with the loader) / (images/s of the step alone).
// No LibTorch or CUDA header here.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/train.h"
#include "kernels/common/verdict.h"
#include "kernels/data/loader.h"

namespace dlb::libtorch {

class TorchStepGpu;

struct LoaderFedShape {
  TrainShape step;
  data::LoaderShape loader;  // side = the model's image size; dir = an ImageFolder
  bool nvjpeg = false;       // the GPU pipeline; else the CPU one (loader.workers threads)
};

class LoaderFedStepGpu {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "libtorch";
  // WarmUp() alone: the step alone is timed there, then the pipeline's ring filled and drained.
  static constexpr int kWarmupRuns = 0;
  static constexpr double kWarmupSeconds = 0;

  static Support Supports(const LoaderFedShape& s, const RunConfig& cfg);
  LoaderFedStepGpu(const LoaderFedShape& s, const RunConfig& cfg);
  ~LoaderFedStepGpu();
  LoaderFedStepGpu(const LoaderFedStepGpu&) = delete;
  LoaderFedStepGpu& operator=(const LoaderFedStepGpu&) = delete;

  void Start();
  void Stop();
  void WarmUp();
  void Run();
  Verdict Verify();
  Cost cost() const;
  std::string label() const;
  std::vector<std::pair<std::string, double>> Counters() const;
  StreamRef stream() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlb::libtorch
