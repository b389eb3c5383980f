// The collectives family's own code: its flags, the run's communicator, the sizes, dtypes and
// in-place forms of the run (the tier's from matrix.h, or the flags'), how one case is added, and
// the case's steps in lockstep.
//
// The launch is the harness's (fixtures/run/launched.h: one process, or one per GPU under mpirun,
// srun or torchrun, started by kernels/nccl/launch.h's StartLaunch); every case runs in lockstep
// on every process (fixtures/run/lockstep.h): the same cases, the same number of times, each timed
// span the slowest rank's, a case unsupported or failed on one rank so on all, and each case
// checks that every process is at the same case before touching NCCL. A timed span that fails on
// one rank (the NCCL watchdog aborted its communicator after --dlb_comm_timeout,
// kernels/nccl/comm.h) is agreed as failed by all, with that rank's line.
//
// No ops.h: the family has one op type, nccl::CollectiveOp, in every build that has the family
// (benchmarks/CMakeLists.txt adds bench_comm only where NCCL is), and the collectives it runs are
// nccl::kCollectives: there is no list of op types that depends on the build.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/nccl/collective.h"

namespace dlb::comm {

using nccl::Collective;
using nccl::CollectiveOp;
using nccl::CommShape;

// The family's flags' values.
struct Options {
  int gpus = 0;                                        // --dlb_comm_gpus; 0: all
  std::vector<int64_t> bytes;                          // --dlb_comm_bytes; empty: the tier's
  nccl::BufferAlloc alloc = nccl::BufferAlloc::kNccl;  // --dlb_comm_alloc
};
const Options& FamilyOptions();

std::vector<FlagSpec> Flags();

// bench_comm's Family: its flags and `register_cases`; no second start of the process (the
// collectives use no OpenMP, and a launcher may have started MPI); the communicator freed after
// the last case (before MPI_Finalize).
Family CommFamily(std::function<void()> register_cases);

// The communicator every case runs on, built by the first case that needs it (all processes
// reach it together, its init bounded by --dlb_comm_timeout) and kept for the run; a failure is
// kept too, and every later case fails with it, as after the watchdog aborted it.
nccl::Communicator& World();
// Frees the communicator (before MPI_Finalize and CUDA's teardown).
void ReleaseWorld();

// The GPUs every case runs on: one per process under a launcher; otherwise --dlb_comm_gpus or
// this host's GPUs, at least 2 (the fewest a collective means anything on: with fewer, the cases
// say they are unsupported).
int Gpus();

// The run's sizes in bytes (matrix::kSizes, or --dlb_comm_bytes).
std::vector<int64_t> Sizes();
// The run's dtypes of a collective (matrix::kAllReduceDTypes / kDTypes, or --dlb_dtypes).
std::vector<DType> DTypesFor(Collective c);
// Out of place, and in place where the tier has it (all_to_all has no in-place form).
std::vector<bool> InPlaceFor(Collective c);

// The run's context: NCCL's version, the launch, every rank's host and GPU (the harness's
// AddLaunchContext). Collective: every process calls it, in the same place (registration).
void AddCommContext();

// "all_reduce 1048576 B bf16 on 2 GPUs out of place": the key every process must agree on before
// a case starts.
std::string CaseKey(const CommShape& s, DType dt);

// A case's steps on one process; LockstepSteps (CommSteps) agrees them over the processes.
struct CommCaseSteps : DefaultSteps<CollectiveOp, CommShape> {
  static constexpr double kLockstepWarmupSeconds = 0.01;  // NCCL connects on first use
  // A span holds a fixed cost (85-110 µs for a 16 MiB broadcast on 4 GPUs: the ranks of a broadcast
  // or an all_to_all do not finish together, and the slowest rank's span holds that once): 1 ms
  // spans read it as +18%, 10 ms spans as under 2%, as nccl-tests' 50 iterations amortize it
  // (docs/families/comm.md#timing).
  static constexpr double kLockstepMinSpanSeconds = 0.01;
  static bool InLockstep() { return true; }  // one process too: the group's agreements are its own
  static std::string CaseKey(const CommShape& shape, const RunConfig& cfg);
  static void BeforeLockstepCalibrate(CollectiveOp&) {}
  static std::string Support(const CommShape& shape, const RunConfig& cfg);
  static std::shared_ptr<CollectiveOp> Build(const CommShape& shape, const RunConfig& cfg);
  // Google Benchmark's counters, plus a plain loop of the same calls beside the case
  // (CollectiveOp::PlainRuns, agreed by every rank): plain_loop_s and vs_plain_loop.
  static void Record(benchmark::State& st, CollectiveOp& op, const CaseInfo& info,
                     const RunConfig& cfg, const Timing& t, int launches, Verdict* verdict);
};
using CommSteps = LockstepSteps<CollectiveOp, CommShape, CommCaseSteps>;

// Registers comm/gpu/nccl/<collective>.<bytes>/dt:<dt>/gpus:<n>[/inplace:1].
void Add(Collective c, int64_t bytes, DType dt, bool inplace);

}  // namespace dlb::comm
