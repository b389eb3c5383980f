// The training family's step on n GPUs, data parallel: one replica of the model per GPU, each on
// its own shard of the batch, gradients averaged by the suite's own bucketed NCCL all-reduce
// overlapped with backward, optionally the whole step in one CUDA graph per GPU; run by one
// process over the local GPUs (a thread per GPU) or one process per GPU (DdpShape::launch). How
// and why: docs/families/train.md, "How the data-parallel step is built". No LibTorch, NCCL or
// CUDA header here; the parts are in kernels/torch/ddp_*.{h,cpp}.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/train.h"
#include "kernels/common/verdict.h"

namespace dlb::nccl {
class Launch;
}

namespace dlb::libtorch {

struct DdpShape {
  TrainShape step;  // batch: per GPU
  int gpus = 2;     // the first `gpus` local GPUs; with a launch of several processes, its size
  // The launch of this run: with several processes, one GPU per process; nullptr or
  // one process: this process drives the first `gpus` local GPUs.
  nccl::Launch* launch = nullptr;
  // The NCCL watchdog's bound (kernels/nccl/comm.h): the communicator's init and every wait for
  // the step's GPUs; past it the communicator is aborted and the case fails with one line naming
  // the rank and the wait. <= 0: none.
  double comm_timeout_s = 300;
};

class DdpStepGpu {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "libtorch";

  static Support Supports(const DdpShape& s, const RunConfig& cfg);
  DdpStepGpu(const DdpShape& s, const RunConfig& cfg);
  ~DdpStepGpu();
  DdpStepGpu(const DdpStepGpu&) = delete;
  DdpStepGpu& operator=(const DdpStepGpu&) = delete;

  void Run();
  // GPU 0's replica against the float64 reference (bs 2); then one timed-path step of all GPUs
  // from their current weights against one GPU's step over the concatenated batch (one shard after
  // the other, gradients accumulated, BatchNorm per shard as the replicas have it), and every
  // replica's weights after the step against GPU 0's. One process per GPU: every rank checks its
  // own replica against the float64 reference and computes the one-GPU reference over the whole
  // concatenated batch on its own GPU; its update is compared with it and with rank 0's (sent by
  // the launch); the verdict is agreed (a rank's failure is every rank's).
  Verdict Verify();
  // Times the one-GPU step (the training family's, same per-GPU batch and configuration) in this
  // process: the scaling reference; also its forward/backward/optimizer phases. One process per
  // GPU: rank 0 times it on its GPU (GPU 0 of those it sees) and sends the time to the others.
  void MeasurePhases();
  // `runs` steps between two CUDA events on this process's step stream: seconds, this process's.
  double TimedRuns(int runs);
  std::vector<std::pair<std::string, double>> Counters() const;
  Cost cost() const;  // items and flops of all GPUs
  // A transformer's tokens a step, all GPUs (batch x seq x gpus); 0 for the other models.
  double tokens_per_step() const;
  std::string label() const;
  StreamRef stream() const;  // GPU 0's step stream

  int gpus() const;              // every process's together
  double single_step_s() const;  // after MeasurePhases(): one GPU's step time, seconds

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlb::libtorch
