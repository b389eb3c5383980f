// One GPU's replica of the data-parallel step (kernels/torch/ddp_step.h): its model, its gradient
// buckets in one flat f32 buffer, and the hooks that copy each gradient into its bucket and
// all-reduce every bucket once its gradients are in. Why buckets, hooks and graphs:
// docs/families/train.md, "How the data-parallel step is built".
#pragma once

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/handles.h"
#include "kernels/torch/engine.h"

namespace dlb::libtorch::ddp {

// PyTorch DDP's defaults: a small first bucket starts communication early; 25 MiB after it.
constexpr int64_t kFirstBucketBytes = int64_t(1) << 20;
constexpr int64_t kBucketBytes = int64_t(25) << 20;

// A CUDA event without timing, for one stream to wait for another.
cuda::Event SyncEvent();

// The communicators are non-blocking (the watchdog, kernels/nccl/comm.h): a call NCCL leaves in
// progress is polled on its own communicator until it is taken, by the deadline. Per
// communicator, not Communicator::Settle: each GPU's thread issues its own replica's calls.
void SettleComm(ncclComm_t comm, double timeout_s, const std::string& what, int rank);

// One GPU's model, its buckets and the state of the step in flight.
struct Replica {
  Replica(int i, int rank, c10::cuda::CUDAStream step_stream,
          c10::cuda::CUDAStream all_reduce_stream)
      : index(i), shard(rank), stream(step_stream), comm_stream(all_reduce_stream) {}

  int index;  // among this process's replicas: the number of the thread that drives it
  int shard;  // its part of the global batch: the replica's rank in the communicator
  c10::cuda::CUDAStream stream;       // the step's
  c10::cuda::CUDAStream comm_stream;  // the all-reduces'
  ncclComm_t comm = nullptr;          // owned by the op's communicator
  double timeout_s = 0;               // the communicator's (the watchdog's) bound on a wait
  std::unique_ptr<Engine> engine;

  // The buckets: the parameters in reverse order (the order backward produces their gradients).
  torch::Tensor flat_buckets;             // every bucket, f32, in bucket order
  std::vector<torch::Tensor> grad_slots;  // per parameter: its part of flat_buckets, its strides
  std::vector<int> bucket_of_param;       // per parameter
  std::vector<int64_t> bucket_begin, bucket_elems;  // per bucket, in elements of flat_buckets
  std::vector<int> params_in_bucket;                // per bucket
  std::vector<cuda::Event> bucket_ready;            // per bucket: its gradients are in place
  cuda::Event all_reduces_done;
  // Run() orders every GPU's step on GPU 0's stream: the other GPUs start at the first replica's
  // `fork` and GPU 0's stream waits for each other replica's `join`.
  cuda::Event fork, join;

  std::optional<at::cuda::CUDAGraph> graph;
  torch::Tensor graph_loss;

  // The step in flight: which gradients have arrived, which buckets are launched. The hooks run
  // on LibTorch's autograd thread of this GPU.
  std::mutex mu;
  bool hooks_on = false;  // off: a gradient stays where autograd put it (the float64 check)
  // Off for the solo warm-up: the step's every kernel, the gradients into their buckets and the
  // event waits, without the all-reduces.
  bool all_reduce_on = true;
  // The stream the step runs on (the step's, a warm-up's side stream, or one being captured):
  // autograd's thread runs each backward kernel on its forward's stream, which is this one, but
  // a hook does not run with it as the current stream.
  std::optional<c10::cuda::CUDAStream> work_stream;
  std::vector<int> grads_pending;  // per bucket: gradients still to come
  std::vector<char> grad_arrived;  // per parameter
  int next_bucket = 0;             // the first bucket not yet launched

  int device() const { return int(stream.device_index()); }

  // Lays out the buckets over the engine's parameters, allocates them and hooks every parameter.
  void MakeBucketsAndHooks();
  // One data-parallel step on the current stream (eager, or being captured).
  void Step();
  void SetAllReduce(bool on);
  void SetHooks(bool on);
  // Back to `state` after steps that only prepared the timed ones (on the current stream).
  void ResetTo(const Engine::State& state);
  // After an eager step on this engine (verification), its results point back at the graph's.
  void UseGraphOutputs();

 private:
  // The buckets' layout: each parameter's bucket and offset in flat_buckets; the total elements.
  int64_t PlanBuckets(std::vector<int64_t>* offset);
  void BeginStep();
  void OnGradient(size_t k, const torch::Tensor& grad);
  void LaunchReadyBuckets(cudaStream_t on);
  void FinishGradients();
};

}  // namespace dlb::libtorch::ddp
