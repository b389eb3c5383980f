// The training family's step on n GPUs, data parallel: one replica of the model per GPU, each on
// its own shard of the batch (the case's per-GPU batch), gradients averaged over the GPUs by the
// suite's own bucketed NCCL all-reduce, overlapped with the backward pass, then the same SGD step
// on every replica. No LibTorch, NCCL or CUDA header here.
//
// Why the suite's own all-reduce and not c10d's ProcessGroupNCCL and Reducer: the communicator is
// the collectives family's (kernels/nccl, one process over the local GPUs), so the step and the
// collectives it is made of are timed on the same NCCL setup; and the whole step, all-reduces
// included, is captured in one CUDA graph per GPU, which c10d's reducer does not allow from C++.
//
// How (PyTorch DDP's design, kept where it matters for speed):
//   - buckets: the parameters in reverse order (the order backward produces their gradients),
//     the first bucket up to 1 MiB so that communication starts early, the others up to 25 MiB
//     (DDP's defaults); every replica holds its buckets in one flat f32 buffer;
//   - a hook on each parameter copies its gradient into its bucket slot on the backward's stream;
//     a bucket complete (and all before it launched: every rank launches in the same order) is
//     all-reduced with ncclAvg on a communication stream that waits for it; after backward the
//     step's stream waits for the last all-reduce, each parameter's .grad becomes its bucket slot
//     (with the parameter's strides), and the fused SGD step runs;
//   - graph:1: after 3 eager steps on a side stream (NCCL connects, cuDNN tunes), each GPU's whole
//     step is captured (all-reduces included, the GPUs' captures at once, thread-local capture
//     mode), one replay per GPU a Run(); graph:0: each GPU's eager step from a thread of its own
//     (the all-reduces of one GPU wait for the others').
//   - a Run() starts every GPU's step after the work before it on GPU 0's stream, and GPU 0's
//     stream waits for every GPU's step: the harness's CUDA events on that stream time the
//     slowest GPU.
//   - BatchNorm statistics stay per replica (as DDP with broadcast_buffers=False), each over its
//     own shard.
// Before any GPU waits for another, every GPU runs one step alone (no all-reduce) and NCCL connects
// the GPUs: CUDA loads a kernel on its first launch holding the GPU context's lock while the GPU's
// queue drains, which with an all-reduce queued that waits for another GPU's thread is a deadlock
// (the step hung on 2 GPUs before it did this).
//
// One process per GPU (DdpShape::launch of several processes: mpirun, srun or torchrun): this
// process builds one replica, on its host's GPU local_rank (modulo the GPUs it sees), its shard
// of the global batch the launch rank's; rank 0's NCCL unique id reaches the others through the
// launch (MPI or its TCP rendezvous), and the communicator is ncclCommInitRank's. The step is the
// same, one CUDA graph per process with its all-reduces; the setup's failures are agreed before
// any collective (a rank that failed does not leave the others waiting in NCCL). TimedRuns() is
// this process's time; the family takes the slowest rank's (the launch's Max).
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
  // The launch of this run: with several processes, one GPU per process (see above); nullptr or
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
  std::string label() const;
  StreamRef stream() const;  // GPU 0's step stream

  int gpus() const;              // every process's together
  double single_step_s() const;  // after MeasurePhases(): one GPU's step time, seconds

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlb::libtorch
