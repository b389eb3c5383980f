#include "kernels/torch/ddp_step.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/handles.h"
#include "kernels/nccl/check.h"
#include "kernels/nccl/comm.h"
#include "kernels/nccl/launch.h"
#include "kernels/torch/compat.h"
#include "kernels/torch/ddp_internal.h"
#include "kernels/torch/engine.h"
#include "kernels/torch/step.h"

namespace dlb::libtorch {

namespace ddp {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string MessageOf(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace ddp

using ddp::kSingleSeconds;
using ddp::kSingleSteps;
using ddp::kWarmupSteps;

// --- The parts of the step both ways of running share ---

void DdpStepGpu::Impl::AbortCommunicators() {
  if (broken || !world) return;
  broken = true;
  world->Abort("an earlier step failed on one of the GPUs; communicators aborted");
}

std::string DdpStepGpu::Impl::WaitName(const std::string& part) const {
  return "data-parallel step (" + shape.step.model + " bs " + std::to_string(shape.step.batch) +
         " a GPU, " + std::to_string(gpus()) + " GPUs) " + part;
}

void DdpStepGpu::Impl::WaitWithinTimeout(const std::vector<cudaStream_t>& streams,
                                         const std::string& part) {
  try {
    nccl::WaitOrAbort(*world, streams, WaitName(part));
  } catch (...) {
    broken = true;
    throw;
  }
}

void DdpStepGpu::Impl::WaitForReplica(Replica& r, const std::string& part) {
  if (launch)
    WaitWithinTimeout({r.stream.stream()}, part);
  else
    r.stream.synchronize();
}

void DdpStepGpu::Impl::WaitForEveryGpu(const std::string& part) {
  std::vector<cudaStream_t> streams;
  for (auto& r : replicas) streams.push_back(r->stream.stream());
  WaitWithinTimeout(streams, part);
}

void DdpStepGpu::Impl::StepEveryGpu() {
  Replica& first = *replicas.front();
  {
    c10::cuda::CUDAGuard dg(c10::DeviceIndex(first.device()));
    DLB_CHECK(cudaEventRecord(first.fork.get(), first.stream.stream()));
  }
  for (size_t i = 1; i < replicas.size(); ++i) {
    c10::cuda::CUDAGuard dg(c10::DeviceIndex(replicas[i]->device()));
    DLB_CHECK(cudaStreamWaitEvent(replicas[i]->stream.stream(), first.fork.get(), 0));
  }
  if (first.graph) {
    for (auto& r : replicas) {
      c10::cuda::CUDAGuard dg(c10::DeviceIndex(r->device()));
      c10::cuda::CUDAStreamGuard sg(r->stream);
      Guarded([&] { r->graph->replay(); });
    }
  } else {
    EachReplica([](Replica& r) {
      c10::cuda::CUDAStreamGuard sg(r.stream);
      r.Step();
    });
  }
  for (size_t i = 1; i < replicas.size(); ++i) {
    c10::cuda::CUDAGuard dg(c10::DeviceIndex(replicas[i]->device()));
    DLB_CHECK(cudaEventRecord(replicas[i]->join.get(), replicas[i]->stream.stream()));
    DLB_CHECK(cudaStreamWaitEvent(first.stream.stream(), replicas[i]->join.get(), 0));
  }
}

double DdpStepGpu::Impl::TimeOneGpuStep() {
  return Guarded([&] {
    WaitForEveryGpu();  // the GPUs idle: the one-GPU step below tunes and waits on GPU 0 alone
    TorchStepGpu one(shape.step, cfg);
    const cudaStream_t s = reinterpret_cast<cudaStream_t>(one.stream());
    for (int i = 0; i < kWarmupSteps; ++i) one.Run();
    DLB_CHECK(cudaStreamSynchronize(s));
    // At least kSingleSteps steps and kSingleSeconds: an eager step's time moves with the host.
    const double t0 = ddp::Now();
    int steps = 0;
    double spent = 0;
    while (steps < kSingleSteps || spent < kSingleSeconds) {
      for (int i = 0; i < kSingleSteps; ++i) one.Run();
      DLB_CHECK(cudaStreamSynchronize(s));
      steps += kSingleSteps;
      spent = ddp::Now() - t0;
    }
    return spent / steps;
  });
}

// --- The op ---

Support DdpStepGpu::Supports(const DdpShape& s, const RunConfig& cfg) {
  if (s.gpus < 1) return Support::No("gpus must be positive");
  if (s.step.pass != Pass::kTrain) return Support::No("data parallelism is a training step's");
  if (const Support one = TorchStepGpu::Supports(s.step, cfg); !one.ok) return one;
  const int have = torch::cuda::is_available() ? int(torch::cuda::device_count()) : 0;
  if (s.launch && s.launch->size() > 1) {
    if (s.gpus != s.launch->size())
      return Support::No("one GPU per process: " + std::to_string(s.launch->size()) +
                         " processes, " + std::to_string(s.gpus) + " GPUs asked for");
    if (have == 0) return Support::No("LibTorch sees no CUDA device");
    if (s.launch->local_size() > have)
      return Support::No("needs a GPU per process: " + std::to_string(s.launch->local_size()) +
                         " processes on this host, " + std::to_string(have) + " GPUs");
    return Support::Yes();
  }
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
  if (s.launch && s.launch->size() > 1) m.launch = s.launch;
  // This process's GPUs and their ranks in the communicator.
  std::vector<int> devices, ranks;
  if (m.launch)
    m.OpenRankCommunicator(&devices, &ranks);
  else
    m.OpenLocalCommunicator(&devices, &ranks);
  m.BuildReplicas(devices, ranks);
  m.threads = std::make_unique<ddp::RankThreads>(int(m.replicas.size()));
  m.WarmUp();
}

DdpStepGpu::~DdpStepGpu() {
  Impl& m = *impl_;
  if (m.broken) {
    // The communicators are aborted and a peer may be gone: work queued behind its collectives
    // may never finish, and every synchronizing teardown (a stream's, cudaFree's) would wait for
    // it for good. The replicas' memory is left to the process's end; the run goes on.
    for (auto& r : m.replicas) r.release();
    m.replicas.clear();
    return;
  }
  try {
    m.threads.reset();
    for (auto& r : m.replicas) {
      c10::cuda::CUDAGuard dg(c10::DeviceIndex(r->device()));
      r->stream.synchronize();
      r->comm_stream.synchronize();
      r->graph.reset();
      r->engine.reset();
    }
    m.replicas.clear();
    m.line_up = torch::Tensor();
    m.world.reset();
    c10::cuda::CUDACachingAllocator::emptyCache();  // the next case gets the memory back
  } catch (...) {
  }
}

int DdpStepGpu::gpus() const { return impl_->gpus(); }
double DdpStepGpu::single_step_s() const { return impl_->single_step_s; }

StreamRef DdpStepGpu::stream() const {
  return reinterpret_cast<StreamRef>(impl_->replicas.front()->stream.stream());
}

void DdpStepGpu::Run() {
  Impl& m = *impl_;
  m.RequireUnbroken();
  m.StepEveryGpu();
}

Verdict DdpStepGpu::Verify() {
  return Guarded([&] { return impl_->Verify(); });
}

void DdpStepGpu::MeasurePhases() {
  Impl& m = *impl_;
  m.single_step_s = m.launch ? m.TimeOneGpuOnRankZero() : m.TimeOneGpuStep();
}

double DdpStepGpu::TimedRuns(int runs) {
  Impl& m = *impl_;
  Impl::Replica& first = *m.replicas.front();
  return Guarded([&] {
    c10::cuda::CUDAGuard dg(c10::DeviceIndex(first.device()));
    cudaEvent_t start = nullptr, stop = nullptr;
    DLB_CHECK(cudaEventCreate(&start));
    const cuda::Event own_start(start);
    DLB_CHECK(cudaEventCreate(&stop));
    const cuda::Event own_stop(stop);
    // At most kInFlight steps queued ahead of the GPU: the host waits (under the watchdog) for
    // the step before last before it launches the next. A span of many graphed steps would
    // otherwise fill the launch queue, and with a peer gone the host would block inside a launch,
    // where no deadline reaches it. Two queued steps keep the GPU as busy as a full queue: a
    // replay's launch takes microseconds, a step milliseconds.
    constexpr int kInFlight = 2;
    std::vector<cuda::Event> marks;
    const std::string what = m.WaitName("(" + std::to_string(runs) + " timed steps)");
    // The enqueues of a blocking communicator (the line-up's all-reduce, eager steps' buckets)
    // can block the host behind kernels that wait for a peer that stopped answering: the
    // watchdog's thread aborts the communicators past the deadline, which makes them return.
    nccl::Communicator::Watched watched(*m.world, what, m.world->Deadline());
    if (m.launch) m.LineUpRanks();
    DLB_CHECK(cudaEventRecord(start, first.stream.stream()));
    try {
      for (int r = 0; r < runs; ++r) {
        if (r >= kInFlight)
          nccl::WaitOrAbort(*m.world, std::vector<cudaEvent_t>{marks[size_t(r - kInFlight)].get()},
                            what);
        Run();
        if (runs > kInFlight && r + kInFlight < runs) {
          cudaEvent_t e = nullptr;
          DLB_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
          marks.emplace_back(e);
          DLB_CHECK(cudaEventRecord(e, first.stream.stream()));
        }
      }
      DLB_CHECK(cudaEventRecord(stop, first.stream.stream()));
      nccl::WaitOrAbort(*m.world, std::vector<cudaEvent_t>{stop}, what);
      watched.Check();
    } catch (...) {
      m.broken = true;
      watched.Check();  // the watchdog's line where it fired
      throw;
    }
    float ms = 0;
    DLB_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return double(ms) / 1e3;
  });
}

std::vector<std::pair<std::string, double>> DdpStepGpu::Counters() const {
  const Impl& m = *impl_;
  std::vector<std::pair<std::string, double>> c;
  if (m.single_step_s > 0)
    c.emplace_back("single_gpu_items_per_s", double(m.shape.step.batch) / m.single_step_s);
  c.emplace_back("grad_buckets", double(m.replicas.front()->bucket_begin.size()));
  return c;
}

Cost DdpStepGpu::cost() const {
  const Impl& m = *impl_;
  // Every replica's step, as the one-GPU step counts it (all-reduce traffic is not counted).
  Cost c = StepCost(*m.replicas.front()->engine);
  const double gpus = double(m.gpus());
  c.items *= gpus;
  c.flops *= gpus;
  c.bytes *= gpus;
  return c;
}

double DdpStepGpu::tokens_per_step() const {
  const Impl& m = *impl_;
  return TokensPerStep(*m.replicas.front()->engine) * double(m.gpus());
}

std::string DdpStepGpu::label() const {
  const Impl& m = *impl_;
  const Impl::Replica& first = *m.replicas.front();
  int64_t bytes = 0;
  for (int64_t e : first.bucket_elems) bytes += e * 4;
  std::ostringstream o;
  o << "LibTorch " << TorchVersion() << " CUDA, data parallel on " << m.gpus() << " GPUs ("
    << (m.launch ? "one process per GPU: " + m.launch->how() : std::string("one process"))
    << ", NCCL " << nccl::Version() << "), "
    << (first.graph ? "a CUDA graph per GPU"
        : m.launch  ? "eager C++"
                    : "eager C++, a thread per GPU")
    << ", " << first.bucket_begin.size() << " gradient buckets of " << bytes / (1 << 20)
    << " MiB f32 (first <= 1 MiB, then <= 25 MiB) all-reduced (ncclAvg) on a side stream as "
       "backward fills them, ";
  const std::string math = m.shape.step.amp              ? "bf16 autocast"
                           : m.cfg.dtype == DType::kTF32 ? "TF32"
                                                         : "TF32 off";
  const Engine& e = *first.engine;
  if (e.tf) {
    o << compat::AdamWName(true) << ", SDPA, " << math << "; time = the slowest GPU's step; "
      << TransformerFlopsNote(e) << ", all GPUs";
    return o.str();
  }
  o << compat::SgdName(true) << ", cudnn.benchmark, " << math
    << ", BatchNorm per GPU; time = the slowest GPU's step; flops = (conv MACs off the padding + "
       "linear MACs) x2 x3, all GPUs";
  return o.str();
}

}  // namespace dlb::libtorch
