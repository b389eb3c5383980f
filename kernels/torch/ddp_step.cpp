#include "kernels/torch/ddp_step.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/handles.h"
#include "kernels/nccl/check.h"
#include "kernels/nccl/comm.h"
#include "kernels/torch/compat.h"
#include "kernels/torch/engine.h"
#include "kernels/torch/step.h"

namespace dlb::libtorch {

namespace F = torch::nn::functional;

namespace {

// PyTorch DDP's defaults: a small first bucket starts communication early; 25 MiB after it.
constexpr int64_t kFirstBucketBytes = int64_t(1) << 20;
constexpr int64_t kBucketBytes = int64_t(25) << 20;
constexpr int kWarmupSteps = 3;   // before capture: NCCL connects, cuDNN tunes, the allocator grows
constexpr int kSingleSteps = 20;  // one-GPU steps timed for the scaling reference, at least
constexpr double kSingleSeconds = 0.5;  // and this long

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

cuda::Event SyncEvent() {
  cudaEvent_t e = nullptr;
  DLB_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return cuda::Event(e);
}

// A thread per rank, kept for the op's life: one GPU's collectives return only when every GPU has
// issued them, so each GPU's step is issued from a thread of its own; and the same thread every
// time, since LibTorch keeps cuDNN's autotuning results per thread (a new thread would search
// again, which a capture does not allow).
class RankThreads {
 public:
  explicit RankThreads(int n) {
    for (int r = 0; r < n; ++r) workers_.push_back(std::make_unique<Worker>());
    for (int r = 0; r < n; ++r) workers_[size_t(r)]->thread = std::thread([this, r] { Loop(r); });
  }
  ~RankThreads() {
    for (auto& w : workers_) {
      {
        std::lock_guard<std::mutex> lock(w->mu);
        w->stop = true;
      }
      w->cv.notify_all();
    }
    for (auto& w : workers_)
      if (w->thread.joinable()) w->thread.join();
  }
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  // fn(r) on every rank's thread at once; the first failure is rethrown once all are done.
  void Run(const std::function<void(int)>& fn) {
    for (auto& w : workers_) {
      {
        std::lock_guard<std::mutex> lock(w->mu);
        w->task = &fn;
        w->error = nullptr;
      }
      w->cv.notify_all();
    }
    std::exception_ptr first;
    for (auto& w : workers_) {
      std::unique_lock<std::mutex> lock(w->mu);
      w->cv.wait(lock, [&] { return w->task == nullptr; });
      if (w->error && !first) first = w->error;
    }
    if (first) std::rethrow_exception(first);
  }

 private:
  struct Worker {
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    const std::function<void(int)>* task = nullptr;
    std::exception_ptr error;
    bool stop = false;
  };

  void Loop(int r) {
    Worker& w = *workers_[size_t(r)];
    std::unique_lock<std::mutex> lock(w.mu);
    for (;;) {
      w.cv.wait(lock, [&] { return w.stop || w.task != nullptr; });
      if (w.stop) return;
      const std::function<void(int)>* task = w.task;
      lock.unlock();
      std::exception_ptr error;
      try {
        (*task)(r);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      w.error = error;
      w.task = nullptr;
      w.cv.notify_all();
    }
  }

  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace

// One GPU's model, its buckets and the state of the step in flight.
struct Replica {
  Replica(int r, c10::cuda::CUDAStream s, c10::cuda::CUDAStream c)
      : rank(r), stream(s), comm_stream(c) {}

  int rank;
  c10::cuda::CUDAStream stream;       // the step's
  c10::cuda::CUDAStream comm_stream;  // the all-reduces'
  ncclComm_t comm = nullptr;          // owned by the op's communicator
  std::unique_ptr<Engine> e;

  torch::Tensor flat;                // every bucket, f32, in bucket order
  std::vector<torch::Tensor> slots;  // per parameter: its part of flat, with its strides
  std::vector<int> bucket_of;        // per parameter
  std::vector<int64_t> bucket_begin, bucket_elems;
  std::vector<int> bucket_params;
  std::vector<cuda::Event> ready;  // per bucket: its gradients are in place
  cuda::Event comm_done, fork, done;

  std::optional<at::cuda::CUDAGraph> graph;
  torch::Tensor graph_loss;

  // The step in flight: which gradients have arrived, which buckets are launched. The hooks run
  // on LibTorch's autograd thread of this GPU.
  std::mutex mu;
  bool comm_on = false;
  // Off for the solo warm-up: the step's every kernel, the gradients into their buckets and the
  // event waits, without the all-reduces.
  bool all_reduce = true;
  // The stream the step runs on (the step's, a warm-up's side stream, or one being captured):
  // autograd's thread runs each backward kernel on its forward's stream, which is this one, but
  // a hook does not run with it as the current stream.
  std::optional<c10::cuda::CUDAStream> work;
  std::vector<int> pending;  // per bucket: gradients still to come
  std::vector<char> arrived;
  int next = 0;  // the first bucket not yet launched

  int device() const { return int(stream.device_index()); }

  void MakeBuckets() {
    const auto& params = e->params;
    const size_t n = params.size();
    bucket_of.assign(n, -1);
    std::vector<int64_t> offset(n, 0);
    int64_t total = 0, bytes_in_bucket = 0, cap = kFirstBucketBytes;
    for (size_t k = n; k-- > 0;) {
      const torch::Tensor& p = params[k];
      if (p.scalar_type() != torch::kFloat32)
        throw Error("a data-parallel step averages f32 gradients; a parameter is " +
                    std::string(c10::toString(p.scalar_type())));
      const int64_t bytes = p.numel() * 4;
      if (bucket_begin.empty() || (bytes_in_bucket > 0 && bytes_in_bucket + bytes > cap)) {
        if (!bucket_begin.empty()) cap = kBucketBytes;
        bucket_begin.push_back(total);
        bucket_elems.push_back(0);
        bucket_params.push_back(0);
        bytes_in_bucket = 0;
      }
      bucket_of[k] = int(bucket_begin.size()) - 1;
      offset[k] = total;
      total += p.numel();
      bytes_in_bucket += bytes;
      bucket_elems.back() += p.numel();
      ++bucket_params.back();
    }
    torch::NoGradGuard no_grad;
    flat = torch::zeros({total}, torch::TensorOptions().dtype(torch::kFloat32).device(e->device));
    for (size_t k = 0; k < n; ++k) {
      const torch::Tensor& p = params[k];
      // The slot has the parameter's strides (channels-last weights too), as DDP's bucket views:
      // the fused SGD step then reads gradient and parameter alike.
      slots.push_back(p.is_non_overlapping_and_dense()
                          ? flat.as_strided(p.sizes(), p.strides(), offset[k])
                          : flat.narrow(0, offset[k], p.numel()).view(p.sizes()));
    }
    for (size_t b = 0; b < bucket_begin.size(); ++b) ready.push_back(SyncEvent());
    comm_done = SyncEvent();
    fork = SyncEvent();
    done = SyncEvent();
    pending.assign(bucket_begin.size(), 0);
    arrived.assign(n, 0);
    for (size_t k = 0; k < n; ++k)
      e->params[k].register_hook([this, k](const torch::Tensor& grad) { OnGradient(k, grad); });
  }

  void BeginStep() {
    std::lock_guard<std::mutex> lock(mu);
    work = c10::cuda::getCurrentCUDAStream(c10::DeviceIndex(device()));
    for (size_t b = 0; b < pending.size(); ++b) pending[b] = bucket_params[b];
    std::fill(arrived.begin(), arrived.end(), 0);
    next = 0;
  }

  // A parameter's gradient, made on the step's stream: into its slot there; a bucket whose
  // gradients are all in is all-reduced, in bucket order.
  void OnGradient(size_t k, const torch::Tensor& grad) {
    std::lock_guard<std::mutex> lock(mu);
    if (!comm_on || arrived[k] || !work) return;
    c10::cuda::CUDAStreamGuard sg(*work);
    {
      torch::NoGradGuard no_grad;
      slots[k].copy_(grad);
    }
    arrived[k] = 1;
    --pending[size_t(bucket_of[k])];
    LaunchReady(work->stream());
  }

  // Every bucket from `next` on whose gradients are in: the communication stream waits for the
  // step's stream, then averages the bucket over the GPUs in place.
  void LaunchReady(cudaStream_t on) {
    while (next < int(pending.size()) && pending[size_t(next)] == 0) {
      const size_t b = size_t(next);
      DLB_CHECK(cudaEventRecord(ready[b].get(), on));
      DLB_CHECK(cudaStreamWaitEvent(comm_stream.stream(), ready[b].get(), 0));
      if (all_reduce) {
        float* data = flat.data_ptr<float>() + bucket_begin[b];
        DLB_CHECK(ncclAllReduce(data, data, size_t(bucket_elems[b]), ncclFloat32, ncclAvg, comm,
                                comm_stream.stream()));
      }
      ++next;
    }
  }

  // After backward, on the step's current stream: gradients that never came (a parameter the
  // loss does not reach) are zeros; the last buckets go; the stream waits for every all-reduce
  // and each parameter's gradient becomes its averaged slot.
  void Finish() {
    {
      std::lock_guard<std::mutex> lock(mu);
      c10::cuda::CUDAStreamGuard sg(*work);
      const cudaStream_t s = work->stream();
      torch::NoGradGuard no_grad;
      for (size_t k = 0; k < arrived.size(); ++k) {
        if (arrived[k]) continue;
        slots[k].zero_();
        arrived[k] = 1;
        --pending[size_t(bucket_of[k])];
      }
      LaunchReady(s);
      DLB_CHECK(cudaEventRecord(comm_done.get(), comm_stream.stream()));
      DLB_CHECK(cudaStreamWaitEvent(s, comm_done.get(), 0));
    }
    for (size_t k = 0; k < slots.size(); ++k) e->params[k].mutable_grad() = slots[k];
  }

  // One data-parallel step on the current stream (eager, or being captured).
  void Step() {
    BeginStep();  // on the current stream
    e->SetMath();
    e->Forward();
    e->Backward();
    Finish();
    e->Optimize();
  }

  void SetAllReduce(bool on) {
    std::lock_guard<std::mutex> lock(mu);
    all_reduce = on;
  }

  // Back to `state` after steps that only prepared the timed ones (on the current stream).
  void Reset(const Engine::State& state) {
    e->Restore(state);
    e->loss = torch::Tensor();
    e->logits = torch::Tensor();
    for (auto& p : e->params) p.mutable_grad().reset();
  }

  // After an eager step on this engine (verification), its results point back at the graph's.
  void UseGraphOutputs() {
    if (!graph) return;
    e->loss = graph_loss;
    for (size_t k = 0; k < slots.size(); ++k) e->params[k].mutable_grad() = slots[k];
  }
};

struct DdpStepGpu::Impl {
  DdpShape shape;
  RunConfig cfg;
  std::optional<nccl::Communicator> world;
  std::vector<std::unique_ptr<Replica>> reps;
  std::unique_ptr<RankThreads> threads;
  bool broken = false;  // a step failed on some GPU: the communicators are aborted
  double single_s = 0;

  int n() const { return int(reps.size()); }

  // The communicators aborted: collectives waiting for a GPU that failed return.
  void Abort() {
    if (broken || !world) return;
    broken = true;
    for (nccl::Member& m : world->members())
      if (ncclComm_t c = m.comm.release()) ncclCommAbort(c);
  }

  // fn(replica) on every GPU at once; any failure aborts the communicators and is rethrown.
  template <class Fn>
  void EachReplica(Fn fn) {
    if (broken) throw Error("an earlier step failed on one of the GPUs; this case is over");
    try {
      threads->Run([&](int r) {
        Replica& R = *reps[size_t(r)];
        c10::cuda::CUDAGuard dg(c10::DeviceIndex(R.device()));
        Guarded([&] { fn(R); });
      });
    } catch (...) {
      Abort();
      throw;
    }
  }

  void SyncAll() {
    for (auto& R : reps) R->stream.synchronize();
  }

  // Every bucket's all-reduce once, all GPUs in one group from this thread (on whatever the
  // buckets hold: a step overwrites them), so that NCCL has connected the GPUs for every size
  // before a step issues them.
  void Connect() {
    for (size_t b = 0; b < reps.front()->bucket_begin.size(); ++b) {
      ncclResult_t rc = ncclGroupStart();
      if (rc == ncclSuccess) {
        for (auto& R : reps) {
          float* data = R->flat.data_ptr<float>() + R->bucket_begin[b];
          rc = ncclAllReduce(data, data, size_t(R->bucket_elems[b]), ncclFloat32, ncclAvg, R->comm,
                             R->comm_stream.stream());
          if (rc != ncclSuccess) break;
        }
        const ncclResult_t end = ncclGroupEnd();  // always, so this thread leaves the group
        if (rc == ncclSuccess) rc = end;
      }
      DLB_CHECK(rc);
    }
    for (auto& R : reps) R->comm_stream.synchronize();
  }

  // The global batch, GPU 0 first: an Engine of n x the per-GPU batch on GPU 0 (its seeded batch
  // and weights are those of the one-GPU reference).
  std::unique_ptr<Engine> GlobalEngine() const {
    TrainShape s = shape.step;
    s.batch = shape.step.batch * int64_t(reps.size());
    s.graph = false;
    c10::cuda::CUDAGuard dg(c10::DeviceIndex(0));
    return std::make_unique<Engine>(s, cfg, Where::kGpu, false, 0);
  }

  // The one-GPU reference over the concatenated batch, from GPU 0's state `from`: each GPU's shard
  // in turn, its mean loss / n backpropagated and accumulated, so BatchNorm sees each shard alone
  // as a replica does.
  StepResult ReferenceStep(const Engine::State& from) const {
    std::unique_ptr<Engine> g = GlobalEngine();
    c10::cuda::CUDAGuard dg(c10::DeviceIndex(0));
    g->Restore(from);
    const Engine::State before = g->Save();
    g->SetMath();
    for (auto& p : g->params) p.mutable_grad().reset();
    const int64_t b = shape.step.batch;
    const double n = double(reps.size());
    double loss = 0;
    for (int64_t r = 0; r < int64_t(reps.size()); ++r) {
      torch::Tensor part;
      {
        compat::Autocast ac(shape.step.amp, c10::DeviceType::CUDA);
        part = F::cross_entropy(g->model->forward(g->x.narrow(0, r * b, b)),
                                g->y.narrow(0, r * b, b));
      }
      (part / n).backward();
      loss += part.item<double>() / n;
    }
    g->loss = torch::scalar_tensor(loss, torch::kFloat64);
    g->Optimize();
    return g->Result(before);
  }

  // One step of every GPU, ordered on GPU 0's stream: each GPU starts after what GPU 0's stream
  // holds, and GPU 0's stream goes on once every GPU is done.
  void Step() {
    Replica& first = *reps.front();
    {
      c10::cuda::CUDAGuard dg(c10::DeviceIndex(first.device()));
      DLB_CHECK(cudaEventRecord(first.fork.get(), first.stream.stream()));
    }
    for (size_t r = 1; r < reps.size(); ++r) {
      c10::cuda::CUDAGuard dg(c10::DeviceIndex(reps[r]->device()));
      DLB_CHECK(cudaStreamWaitEvent(reps[r]->stream.stream(), first.fork.get(), 0));
    }
    if (first.graph) {
      for (auto& R : reps) {
        c10::cuda::CUDAGuard dg(c10::DeviceIndex(R->device()));
        c10::cuda::CUDAStreamGuard sg(R->stream);
        Guarded([&] { R->graph->replay(); });
      }
    } else {
      EachReplica([](Replica& R) {
        c10::cuda::CUDAStreamGuard sg(R.stream);
        R.Step();
      });
    }
    for (size_t r = 1; r < reps.size(); ++r) {
      c10::cuda::CUDAGuard dg(c10::DeviceIndex(reps[r]->device()));
      DLB_CHECK(cudaEventRecord(reps[r]->done.get(), reps[r]->stream.stream()));
      DLB_CHECK(cudaStreamWaitEvent(first.stream.stream(), reps[r]->done.get(), 0));
    }
  }
};

Support DdpStepGpu::Supports(const DdpShape& s, const RunConfig& cfg) {
  if (s.gpus < 1) return Support::No("gpus must be positive");
  if (s.step.pass != Pass::kTrain) return Support::No("data parallelism is a training step's");
  if (const Support one = TorchStepGpu::Supports(s.step, cfg); !one.ok) return one;
  const int have = torch::cuda::is_available() ? int(torch::cuda::device_count()) : 0;
  if (have < s.gpus)
    return Support::No("needs " + std::to_string(s.gpus) + " GPUs, this host has " +
                       std::to_string(have));
  return Support::Yes();
}

DdpStepGpu::DdpStepGpu(const DdpShape& s, const RunConfig& cfg) : impl_(std::make_unique<Impl>()) {
  RequireSupported(Supports(s, cfg));
  // The caller's current GPU stays current (the setup below visits every GPU): the harness makes
  // its timing events there, for GPU 0's stream.
  c10::cuda::CUDAGuard keep_device(c10::cuda::current_device());
  Impl& m = *impl_;
  m.shape = s;
  m.cfg = cfg;
  std::vector<int> devices(size_t(s.gpus));
  for (int r = 0; r < s.gpus; ++r) devices[size_t(r)] = r;
  m.world = nccl::Communicator::InitAll(devices);
  Guarded([&] {
    for (int r = 0; r < s.gpus; ++r) {
      const c10::DeviceIndex d = c10::DeviceIndex(r);
      c10::cuda::CUDAGuard dg(d);
      torch::empty({1}, torch::Device(torch::kCUDA, d));  // the caching allocator exists
      auto R = std::make_unique<Replica>(r, c10::cuda::getStreamFromPool(false, d),
                                         c10::cuda::getStreamFromPool(false, d));
      R->comm = m.world->members()[size_t(r)].comm.get();
      c10::cuda::CUDAStreamGuard sg(R->stream);
      R->e = std::make_unique<Engine>(s.step, cfg, Where::kGpu, false, r);
      R->MakeBuckets();
      m.reps.push_back(std::move(R));
    }
    // Every replica's shard of the global batch (their weights are the same seeded ones).
    {
      std::unique_ptr<Engine> g = m.GlobalEngine();
      const int64_t b = s.step.batch;
      torch::NoGradGuard no_grad;
      for (auto& R : m.reps) {
        c10::cuda::CUDAGuard dg(c10::DeviceIndex(R->device()));
        c10::cuda::CUDAStreamGuard sg(R->stream);
        R->e->x.copy_(g->x.narrow(0, R->rank * b, b));
        R->e->y.copy_(g->y.narrow(0, R->rank * b, b));
      }
      for (auto& R : m.reps) R->stream.synchronize();
    }
    for (auto& R : m.reps) R->comm_on = true;
  });
  m.threads = std::make_unique<RankThreads>(s.gpus);
  std::vector<Engine::State> seeded(m.reps.size());
  // Phases, each on every GPU's thread and each ended on all GPUs before the next begins:
  // 1. One step on every GPU alone (no all-reduce). CUDA loads a kernel into a GPU's context on
  //    its first launch and waits for that GPU's queued work while holding the context's lock,
  //    and cuDNN's autotuning waits for the GPU too: with an all-reduce queued that waits for
  //    another GPU, whose thread waits for that lock, the GPUs wait for each other for ever. After
  //    this step every kernel of the step is loaded and every convolution tuned, on every GPU.
  m.EachReplica([&](Replica& R) {
    c10::cuda::CUDAStreamGuard own(R.stream);  // saved and restored in the step's stream order
    seeded[size_t(R.rank)] = R.e->Save();
    R.SetAllReduce(false);
    R.Step();
    R.SetAllReduce(true);
    R.stream.synchronize();
    R.Reset(seeded[size_t(R.rank)]);
  });
  // 2. Every bucket's all-reduce once from this thread: NCCL connects the GPUs on first use, in
  //    host calls that wait for every GPU's.
  m.Connect();
  if (!s.step.graph) {
    // 3. (eager) One all-reduced step, from the seeded state again after it.
    m.EachReplica([&](Replica& R) {
      c10::cuda::CUDAStreamGuard own(R.stream);
      R.Step();
      R.stream.synchronize();
      R.Reset(seeded[size_t(R.rank)]);
    });
    return;
  }
  // 3. (graph) As the one-GPU step (step_cuda.cpp): warm-up steps on a side stream, then
  // 4. the step captured from the seeded state on the step's stream, on the thread that warmed up
  //    (see RankThreads); the GPUs together, since each step's all-reduces wait for the others'.
  m.EachReplica([&](Replica& R) {
    c10::cuda::CUDAStreamGuard own(R.stream);
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, c10::DeviceIndex(R.device()));
    cuda::Event ev = SyncEvent();
    DLB_CHECK(cudaEventRecord(ev.get(), R.stream.stream()));
    DLB_CHECK(cudaStreamWaitEvent(side.stream(), ev.get(), 0));
    {
      c10::cuda::CUDAStreamGuard sg(side);
      for (int i = 0; i < kWarmupSteps; ++i) R.Step();
      DLB_CHECK(cudaEventRecord(ev.get(), side.stream()));
    }
    DLB_CHECK(cudaStreamWaitEvent(R.stream.stream(), ev.get(), 0));
    R.stream.synchronize();
    side.synchronize();
    R.Reset(seeded[size_t(R.rank)]);
  });
  m.EachReplica([&](Replica& R) {
    c10::cuda::CUDAStreamGuard own(R.stream);
    R.e->SetMath();
    R.graph.emplace();
    // Thread-local: each GPU's thread captures its own step while the others capture theirs.
    R.graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    try {
      R.Step();
    } catch (...) {
      // The stream leaves capture mode, so that nothing after this case inherits it.
      cudaGraph_t abandoned = nullptr;
      cudaStreamEndCapture(R.stream.stream(), &abandoned);
      if (abandoned) cudaGraphDestroy(abandoned);
      throw;
    }
    R.graph->capture_end();
    R.stream.synchronize();
    R.graph_loss = R.e->loss;
    R.e->Restore(seeded[size_t(R.rank)]);
  });
}

DdpStepGpu::~DdpStepGpu() {
  Impl& m = *impl_;
  try {
    m.threads.reset();
    for (auto& R : m.reps) {
      c10::cuda::CUDAGuard dg(c10::DeviceIndex(R->device()));
      R->stream.synchronize();
      R->comm_stream.synchronize();
      R->graph.reset();
      R->e.reset();
    }
    m.reps.clear();
    m.world.reset();
    c10::cuda::CUDACachingAllocator::emptyCache();  // the next case gets the memory back
  } catch (...) {
  }
}

int DdpStepGpu::gpus() const { return impl_->n(); }
double DdpStepGpu::single_step_s() const { return impl_->single_s; }

StreamRef DdpStepGpu::stream() const {
  return reinterpret_cast<StreamRef>(impl_->reps.front()->stream.stream());
}

void DdpStepGpu::Run() {
  Impl& m = *impl_;
  if (m.broken) throw Error("an earlier step failed on one of the GPUs; this case is over");
  m.Step();
}

Verdict DdpStepGpu::Verify() {
  Impl& m = *impl_;
  return Guarded([&]() -> Verdict {
    // The model: GPU 0's replica alone (no all-reduce) against the float64 reference, the GPUs
    // idle (its new batch size tunes and waits on GPU 0).
    m.SyncAll();
    Replica& first = *m.reps.front();
    Verdict model;
    {
      c10::cuda::CUDAGuard dg(c10::DeviceIndex(first.device()));
      c10::cuda::CUDAStreamGuard sg(first.stream);
      {
        std::lock_guard<std::mutex> lock(first.mu);
        first.comm_on = false;
      }
      model = VerifyAgainstReference(*first.e, Where::kGpu, nullptr);
      {
        std::lock_guard<std::mutex> lock(first.mu);
        first.comm_on = true;
      }
      first.UseGraphOutputs();
      first.stream.synchronize();
    }
    if (!model.ok) return model;

    // The timed path once, from the seeded state.
    std::vector<Engine::State> before(m.reps.size());
    for (auto& R : m.reps) {
      c10::cuda::CUDAGuard dg(c10::DeviceIndex(R->device()));
      c10::cuda::CUDAStreamGuard sg(R->stream);
      before[size_t(R->rank)] = R->e->Save();
    }
    m.Step();
    m.SyncAll();
    std::vector<StepResult> got;
    for (auto& R : m.reps) {
      c10::cuda::CUDAGuard dg(c10::DeviceIndex(R->device()));
      c10::cuda::CUDAStreamGuard sg(R->stream);
      got.push_back(R->e->Result(before[size_t(R->rank)]));
      R->e->Restore(before[size_t(R->rank)]);
      R->UseGraphOutputs();
    }
    m.SyncAll();

    // Against one GPU over the concatenated batch; the mean of the replicas' losses is the loss
    // of the whole batch.
    // On GPU 0's thread: LibTorch keeps cuDNN's autotuned choices per thread, so the reference's
    // shards (GPU 0's shape) run the algorithms GPU 0's replica ran.
    StepResult want;
    m.threads->Run([&](int r) {
      if (r != 0) return;
      c10::cuda::CUDAGuard dg(c10::DeviceIndex(0));
      want = Guarded([&] { return m.ReferenceStep(before.front()); });
    });
    StepResult all = got.front();
    all.loss = 0;
    for (const StepResult& g : got) all.loss += g.loss / double(got.size());
    const int64_t global = m.shape.step.batch * int64_t(m.n());
    // The same kernels on the same shards, but the other GPUs' threads autotune on their own and
    // may pick other cuDNN algorithms, whose other summation orders show through BatchNorm in
    // bf16 autocast: on one thread each, an eager ResNet-18 (CIFAR) at bs 16 differed by 1.1e-3
    // in the loss and 0.22 in the gradients on the H100 (0 where both ran the same algorithms).
    // A wrong reduction is further off: a sum for the mean is 1 at 2 GPUs, a bucket left out its
    // share of the norm.
    StepTolerances tol = SameStepTolerance(m.shape.step, m.cfg);
    if (m.shape.step.amp) tol = {1e-2, 0.3};
    Verdict v = CompareSteps(all, want, true, tol,
                             std::to_string(m.n()) + " GPUs vs one GPU over the concatenated batch "
                             "(bs " + std::to_string(global) + ")");
    // Every replica holds the same weights after the all-reduced step.
    double apart = 0;
    for (size_t r = 1; r < got.size(); ++r)
      apart = std::max(apart, RelL2(got[r].update, got.front().update));
    char buf[96];
    std::snprintf(buf, sizeof buf, "; replicas' updates apart by %.1e (rel L2)", apart);
    v.detail += buf;
    v.checked += got.front().update.size() * (got.size() - 1);
    v.of = v.checked;
    if (!(apart <= 1e-6)) {
      v.ok = false;
      return v;
    }
    if (!v.ok) return v;
    Verdict out = (v.error / v.tolerance > model.error / model.tolerance) ? v : model;
    out.detail = model.detail + "; " + v.detail;
    out.checked = model.checked + v.checked;
    out.of = out.checked;
    return out;
  });
}

void DdpStepGpu::MeasurePhases() {
  Impl& m = *impl_;
  Guarded([&] {
    m.SyncAll();  // the GPUs idle: the one-GPU step below tunes and waits on GPU 0 alone
    TorchStepGpu one(m.shape.step, m.cfg);  // GPU 0, the same per-GPU batch and configuration
    const cudaStream_t s = reinterpret_cast<cudaStream_t>(one.stream());
    for (int i = 0; i < kWarmupSteps; ++i) one.Run();
    DLB_CHECK(cudaStreamSynchronize(s));
    // At least kSingleSteps steps and kSingleSeconds: an eager step's time moves with the host.
    const double t0 = Now();
    int steps = 0;
    double spent = 0;
    while (steps < kSingleSteps || spent < kSingleSeconds) {
      for (int i = 0; i < kSingleSteps; ++i) one.Run();
      DLB_CHECK(cudaStreamSynchronize(s));
      steps += kSingleSteps;
      spent = Now() - t0;
    }
    m.single_s = spent / steps;
  });
}

std::vector<std::pair<std::string, double>> DdpStepGpu::Counters() const {
  const Impl& m = *impl_;
  std::vector<std::pair<std::string, double>> c;
  if (m.single_s > 0)
    c.emplace_back("single_gpu_items_per_s", double(m.shape.step.batch) / m.single_s);
  c.emplace_back("grad_buckets", double(m.reps.front()->bucket_begin.size()));
  return c;
}

Cost DdpStepGpu::cost() const {
  const Impl& m = *impl_;
  Cost c;
  const double items = double(m.shape.step.batch) * double(m.n());
  c.items = items;
  c.flops = ForwardFlopsPerSample(m.shape.step) * items * 3;
  // Every replica's step, as the flops count them (all-reduce traffic is not counted).
  const Engine& e = *m.reps.front()->e;
  c.bytes = StepBytes(ParamBytes(e), BatchBytes(e), Pass::kTrain, false) * double(m.n());
  return c;
}

std::string DdpStepGpu::label() const {
  const Impl& m = *impl_;
  const Replica& first = *m.reps.front();
  int64_t bytes = 0;
  for (int64_t e : first.bucket_elems) bytes += e * 4;
  std::ostringstream o;
  o << "LibTorch " << TorchVersion() << " CUDA, data parallel on " << m.n()
    << " GPUs (one process, NCCL " << nccl::Version() << "), "
    << (first.graph ? "a CUDA graph per GPU" : "eager C++, a thread per GPU") << ", "
    << first.bucket_begin.size() << " gradient buckets of " << bytes / (1 << 20)
    << " MiB f32 (first <= 1 MiB, then <= 25 MiB) all-reduced (ncclAvg) on a side stream as "
       "backward fills them, "
    << compat::SgdName(true) << ", cudnn.benchmark, "
    << (m.shape.step.amp                ? "bf16 autocast"
        : m.cfg.dtype == DType::kTF32 ? "TF32"
                                      : "TF32 off")
    << ", BatchNorm per GPU; time = the slowest GPU's step; flops = conv+linear MACs x2 x3, all "
       "GPUs";
  return o.str();
}

}  // namespace dlb::libtorch
