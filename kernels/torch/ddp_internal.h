// The data-parallel step's state (DdpStepGpu::Impl) and the parts its files share. The op's
// public methods are in ddp_step.cpp, its setup in ddp_setup.cpp, its checks in ddp_verify.cpp;
// what differs between the two ways of running it is in ddp_threads.cpp (one process driving
// every local GPU, a thread per GPU) and ddp_processes.cpp (one process per GPU).
// Not for use outside kernels/torch/ddp_*.
#pragma once

#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/nccl/comm.h"
#include "kernels/nccl/launch.h"
#include "kernels/torch/ddp_replica.h"
#include "kernels/torch/ddp_step.h"
#include "kernels/torch/engine.h"
#include "kernels/torch/step.h"

namespace dlb::libtorch {
namespace ddp {

constexpr int kWarmupSteps = 3;   // before capture: NCCL connects, cuDNN tunes, the allocator grows
constexpr int kSingleSteps = 20;  // one-GPU steps timed for the scaling reference, at least
constexpr double kSingleSeconds = 0.5;  // and this long

double Now();  // seconds on the steady clock
// An exception's one line, to be shared among the processes of a run.
std::string MessageOf(std::exception_ptr e);

// A thread per rank, kept for the op's life: one GPU's collectives return only when every GPU has
// issued them, so each GPU's step is issued from a thread of its own; and the same thread every
// time, since LibTorch keeps cuDNN's autotuning results per thread (a new thread would search
// again, which a capture does not allow). Defined in ddp_threads.cpp.
class RankThreads {
 public:
  explicit RankThreads(int n);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  // fn(r) on every rank's thread at once; the first failure is rethrown once all are done.
  void Run(const std::function<void(int)>& fn);

 private:
  struct Worker {
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    const std::function<void(int)>* task = nullptr;
    std::exception_ptr error;
    bool stop = false;
  };

  void Loop(int r);

  std::vector<std::unique_ptr<Worker>> workers_;
};

// How far apart the replicas' updates are after one step: the largest relative L2 distance from
// the first replica's (rank 0's), and how many values were compared.
struct UpdateSpread {
  double rel_l2 = 0;
  size_t compared = 0;
};

}  // namespace ddp

struct DdpStepGpu::Impl {
  using Replica = ddp::Replica;

  DdpShape shape;
  RunConfig cfg;
  std::optional<nccl::Communicator> world;  // this process's replicas' communicators
  std::vector<std::unique_ptr<Replica>> replicas;
  std::unique_ptr<ddp::RankThreads> threads;
  bool broken = false;  // a step failed on some GPU: the communicators are aborted
  double single_step_s = 0;
  nccl::Launch* launch = nullptr;  // set with several processes, one GPU each
  torch::Tensor line_up;           // with several processes: TimedRuns' one-element all-reduce

  int gpus() const { return launch ? launch->size() : int(replicas.size()); }  // of the run
  int own_device() const { return replicas.front()->device(); }

  // --- Shared by both ways of running (ddp_step.cpp) ---

  void RequireUnbroken() const {
    if (broken) throw Error("an earlier step failed on one of the GPUs; this case is over");
  }
  // The communicators aborted: collectives waiting for a GPU that failed return.
  void AbortCommunicators();
  // What a wait of this case is for, in the watchdog's one line.
  std::string WaitName(const std::string& part) const;
  // Waits for the streams within the communicator's timeout; past it (or on NCCL's error) the
  // communicator is aborted and the case ends with the watchdog's line.
  void WaitWithinTimeout(const std::vector<cudaStream_t>& streams, const std::string& part);
  // One replica's step stream: with one process per GPU within the watchdog's bound (the only
  // rank thread of the process waits); with one process, each GPU's thread waits plainly (the
  // communicator's abort is the calling thread's, after every GPU's thread is done).
  void WaitForReplica(Replica& r, const std::string& part);
  void WaitForEveryGpu(const std::string& part = "(a wait for every GPU)");

  // fn(replica) on every GPU at once; any failure aborts the communicators and is rethrown.
  template <class Fn>
  void EachReplica(Fn fn) {
    RequireUnbroken();
    try {
      threads->Run([&](int i) {
        Replica& r = *replicas[size_t(i)];
        c10::cuda::CUDAGuard dg(c10::DeviceIndex(r.device()));
        Guarded([&] { fn(r); });
      });
    } catch (...) {
      AbortCommunicators();
      throw;
    }
  }

  // One step of every GPU, ordered on GPU 0's stream: each GPU starts after what GPU 0's stream
  // holds, and GPU 0's stream goes on once every GPU is done.
  void StepEveryGpu();
  // The one-GPU step (the training family's, GPU 0, the same per-GPU batch and configuration):
  // seconds a step, eager or graphed as the case.
  double TimeOneGpuStep();

  // --- Setup (ddp_setup.cpp), after the communicator is open ---

  // This process's replicas on `devices`, of communicator ranks `ranks`, each with its shard.
  void BuildReplicas(const std::vector<int>& devices, const std::vector<int>& ranks);
  // Every step that must come before the timed ones: warm-ups, NCCL's connections, the capture.
  void WarmUp();

  // --- Verification (ddp_verify.cpp) ---

  Verdict Verify();
  // The global batch, GPU 0 first: an Engine of n x the per-GPU batch on this process's first GPU
  // (its seeded batch and weights are those of the one-GPU reference).
  std::unique_ptr<Engine> GlobalBatchEngine() const;

  // --- One process driving every local GPU, a thread per GPU (ddp_threads.cpp) ---

  // GPUs 0..gpus-1 as ranks 0..gpus-1, one communicator over them (ncclCommInitAll).
  void OpenLocalCommunicator(std::vector<int>* devices, std::vector<int>* ranks);
  double MeanLossOfReplicas(const std::vector<StepResult>& got) const;
  ddp::UpdateSpread SpreadOfReplicas(const std::vector<StepResult>& got) const;

  // --- One process per GPU (ddp_processes.cpp) ---

  // This process's GPU (local rank modulo the GPUs it sees) as its launch rank; rank 0's NCCL id
  // sent through the launch, the communicator ncclCommInitRank's.
  void OpenRankCommunicator(std::vector<int>* devices, std::vector<int>* ranks);
  // "" from every process when none failed, else the lowest failing rank's words, thrown on
  // every rank: the ranks go on to a collective together or not at all. One process: throws
  // `mine` when it is not empty.
  void FailTogether(const std::string& mine) const;
  // A failed verdict on any rank fails every rank's, with the lowest failing rank's detail.
  void FailVerdictTogether(Verdict& v) const;
  double MeanLossOfRanks(double mine) const;
  // Rank 0's update, sent to every rank, against each rank's own; the largest distance, on all.
  ddp::UpdateSpread SpreadOfRanks(const std::vector<float>& mine) const;
  // Rank 0 times the one-GPU step and sends the time to the others.
  double TimeOneGpuOnRankZero();
  // A one-element all-reduce on the step's stream, before the timed span starts.
  void LineUpRanks();

 private:
  // Parts of the setup and of Verify (ddp_setup.cpp, ddp_verify.cpp).
  void ShardGlobalBatch();
  void WarmUpAlone(std::vector<Engine::State>& seeded);
  void ConnectBuckets();
  void WarmUpAllReduced(const std::vector<Engine::State>& seeded);
  void WarmUpOnSideStreams(const std::vector<Engine::State>& seeded);
  void CaptureGraphs(const std::vector<Engine::State>& seeded);
  Verdict VerifyFirstReplica();
  std::vector<Engine::State> SaveEveryReplica();
  std::vector<StepResult> StepOnceFrom(const std::vector<Engine::State>& before);
  StepResult ReferenceStep(const Engine::State& from) const;
  StepResult ReferenceStepOnFirstThread(const Engine::State& from);
  Verdict CompareWithOneGpu(const std::vector<StepResult>& got, const StepResult& want);
};

}  // namespace dlb::libtorch
