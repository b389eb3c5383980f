// The data-parallel step's setup after its communicator is open: the replicas and their shards,
// then every step before the timed ones, each phase ended on all GPUs before the next begins.
// Why this order (a GPU must not wait for another before its kernels are loaded):
// docs/families/train.md, "How the data-parallel step is built".
#include <exception>
#include <string>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/nccl/check.h"
#include "kernels/torch/ddp_internal.h"

namespace dlb::libtorch {

using ddp::kWarmupSteps;
using ddp::MessageOf;
using ddp::SyncEvent;

void DdpStepGpu::Impl::BuildReplicas(const std::vector<int>& devices,
                                     const std::vector<int>& ranks) {
  std::string failed;
  try {
    Guarded([&] {
      for (size_t i = 0; i < devices.size(); ++i) {
        const c10::DeviceIndex d = c10::DeviceIndex(devices[i]);
        c10::cuda::CUDAGuard dg(d);
        torch::empty({1}, torch::Device(torch::kCUDA, d));  // the caching allocator exists
        auto r = std::make_unique<Replica>(int(i), ranks[i], c10::cuda::getStreamFromPool(false, d),
                                           c10::cuda::getStreamFromPool(false, d));
        r->comm = world->members()[i].comm.get();
        r->timeout_s = shape.comm_timeout_s;
        c10::cuda::CUDAStreamGuard sg(r->stream);
        r->engine = std::make_unique<Engine>(shape.step, cfg, Where::kGpu, false, int(d));
        r->MakeBucketsAndHooks();
        replicas.push_back(std::move(r));
      }
      ShardGlobalBatch();
      for (auto& r : replicas) r->hooks_on = true;
    });
  } catch (...) {
    failed = MessageOf(std::current_exception());
  }
  FailTogether(failed);
}

// Every replica's shard of the global batch (their weights are the same seeded ones).
void DdpStepGpu::Impl::ShardGlobalBatch() {
  std::unique_ptr<Engine> g = GlobalBatchEngine();
  const int64_t b = shape.step.batch;
  torch::NoGradGuard no_grad;
  for (auto& r : replicas) {
    c10::cuda::CUDAGuard dg(c10::DeviceIndex(r->device()));
    c10::cuda::CUDAStreamGuard sg(r->stream);
    r->engine->x.copy_(g->x.narrow(0, r->shard * b, b));
    r->engine->y.copy_(g->y.narrow(0, r->shard * b, b));
  }
  for (auto& r : replicas) r->stream.synchronize();
}

void DdpStepGpu::Impl::WarmUp() {
  std::vector<Engine::State> seeded(replicas.size());
  WarmUpAlone(seeded);
  ConnectBuckets();
  if (!shape.step.graph) {
    WarmUpAllReduced(seeded);
    return;
  }
  WarmUpOnSideStreams(seeded);
  CaptureGraphs(seeded);
}

// 1. One step on every GPU alone (no all-reduce), then back to the seeded state. CUDA loads a
//    kernel into a GPU's context on its first launch and waits for that GPU's queued work while
//    holding the context's lock, and cuDNN's autotuning waits for the GPU too: with an all-reduce
//    queued that waits for another GPU, whose thread waits for that lock, the GPUs would wait for
//    each other for ever. After this step every kernel of the step is loaded and every
//    convolution tuned, on every GPU.
void DdpStepGpu::Impl::WarmUpAlone(std::vector<Engine::State>& seeded) {
  std::string failed;
  try {
    EachReplica([&](Replica& r) {
      c10::cuda::CUDAStreamGuard own(r.stream);  // saved and restored in the step's stream order
      seeded[size_t(r.index)] = r.engine->Save();
      r.SetAllReduce(false);
      r.Step();
      r.SetAllReduce(true);
      r.stream.synchronize();
      r.ResetTo(seeded[size_t(r.index)]);
    });
  } catch (...) {
    failed = MessageOf(std::current_exception());
  }
  FailTogether(failed);
}

// 2. Every bucket's all-reduce once, all GPUs in one group from this thread (on whatever the
//    buckets hold: a step overwrites them): NCCL connects the GPUs on first use, in host calls
//    that wait for every GPU's, so it has connected them for every size before a step issues them.
void DdpStepGpu::Impl::ConnectBuckets() {
  for (size_t b = 0; b < replicas.front()->bucket_begin.size(); ++b) {
    ncclResult_t rc = ncclGroupStart();
    if (rc == ncclSuccess) {
      for (auto& r : replicas) {
        float* data = r->flat_buckets.data_ptr<float>() + r->bucket_begin[b];
        rc = ncclAllReduce(data, data, size_t(r->bucket_elems[b]), ncclFloat32, ncclAvg, r->comm,
                           r->comm_stream.stream());
        if (rc != ncclSuccess && rc != ncclInProgress) break;
      }
      const ncclResult_t end = ncclGroupEnd();  // always, so this thread leaves the group
      if (rc == ncclSuccess || rc == ncclInProgress) rc = end;
    }
    DLB_CHECK(rc);
    if (rc == ncclInProgress)
      world->Settle(WaitName("(connecting bucket " + std::to_string(b) + ")"));
  }
  std::vector<cudaStream_t> streams;
  for (auto& r : replicas) streams.push_back(r->comm_stream.stream());
  WaitWithinTimeout(streams, "(connecting)");
}

// 3. (eager) One all-reduced step, from the seeded state again after it.
void DdpStepGpu::Impl::WarmUpAllReduced(const std::vector<Engine::State>& seeded) {
  EachReplica([&](Replica& r) {
    c10::cuda::CUDAStreamGuard own(r.stream);
    r.Step();
    WaitForReplica(r, "(warm-up steps)");
    r.ResetTo(seeded[size_t(r.index)]);
  });
}

// 3. (graph) As the one-GPU step (step_cuda.cpp): warm-up steps on a side stream, then back to
//    the seeded state.
void DdpStepGpu::Impl::WarmUpOnSideStreams(const std::vector<Engine::State>& seeded) {
  EachReplica([&](Replica& r) {
    c10::cuda::CUDAStreamGuard own(r.stream);
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, c10::DeviceIndex(r.device()));
    cuda::Event ev = SyncEvent();
    DLB_CHECK(cudaEventRecord(ev.get(), r.stream.stream()));
    DLB_CHECK(cudaStreamWaitEvent(side.stream(), ev.get(), 0));
    {
      c10::cuda::CUDAStreamGuard sg(side);
      for (int i = 0; i < kWarmupSteps; ++i) r.Step();
      DLB_CHECK(cudaEventRecord(ev.get(), side.stream()));
    }
    DLB_CHECK(cudaStreamWaitEvent(r.stream.stream(), ev.get(), 0));
    WaitForReplica(r, "(warm-up steps)");
    side.synchronize();
    r.ResetTo(seeded[size_t(r.index)]);
  });
}

// 4. (graph) The step captured from the seeded state on the step's stream, on the thread that
//    warmed up (see RankThreads); the GPUs together, since each step's all-reduces wait for the
//    others'.
void DdpStepGpu::Impl::CaptureGraphs(const std::vector<Engine::State>& seeded) {
  EachReplica([&](Replica& r) {
    c10::cuda::CUDAStreamGuard own(r.stream);
    r.engine->SetMath();
    r.graph.emplace();
    // Thread-local: each GPU's thread captures its own step while the others capture theirs.
    r.graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    try {
      r.Step();
    } catch (...) {
      // The stream leaves capture mode, so that nothing after this case inherits it.
      cudaGraph_t abandoned = nullptr;
      cudaStreamEndCapture(r.stream.stream(), &abandoned);
      if (abandoned) cudaGraphDestroy(abandoned);
      throw;
    }
    r.graph->capture_end();
    r.stream.synchronize();
    r.graph_loss = r.engine->loss;
    r.engine->Restore(seeded[size_t(r.index)]);
  });
}

}  // namespace dlb::libtorch
