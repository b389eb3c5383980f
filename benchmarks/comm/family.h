// The collectives family's own code: the sizes and dtypes each tier times, its flags, how one case
// is added, the run's launch (MPI or one process) and communicator, and the harness steps that
// keep every process of a run in lockstep.
//
// Lockstep: a collective returns only once every rank has called it, so all processes must run
// the same cases, the same number of times. Google Benchmark chooses iteration counts per process
// from the times it is given; here every process gives it the same times: each timed span is the
// slowest rank's (MPI_Allreduce MAX of the per-rank CUDA-event spans), so every process makes the
// same choices, call for call. The same holds for warm-up and launches per span, decided on those
// agreed times, and for failures: a case that fails or is unsupported on one rank fails on all;
// a timed span that fails on one rank (the NCCL watchdog aborted its communicator after
// --dlb_comm_timeout, kernels/nccl/comm.h) is agreed as failed by all, with that rank's line.
// Each case also checks that every process is at the same case before touching NCCL.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "fixtures/run/flags.h"
#include "fixtures/run/main.h"
#include "kernels/nccl/collective.h"
#include "kernels/nccl/launch.h"

namespace dlb::comm {

using nccl::Collective;
using nccl::CollectiveOp;
using nccl::CommShape;

// The launch of this run, set by Main before any case registers.
nccl::Launch& TheLaunch();
// The communicator every case runs on, built by the first case that needs it (all processes
// reach it together, its init bounded by --dlb_comm_timeout) and kept for the run; a failure is
// kept too, and every later case fails with it, as after the watchdog aborted it.
nccl::Communicator& World();
// Frees the communicator (before MPI_Finalize and CUDA's teardown).
void ReleaseWorld();

// The GPUs every case runs on: one per process under MPI; otherwise --dlb_comm_gpus or this host's
// GPUs, at least 2 (the fewest a collective means anything on: with fewer, the cases say they are
// unsupported).
int Gpus();

// Sizes in bytes: smoke 8 B, 64 KiB, 1 MiB; default 8 B and the powers of 4 from 16 B to 1 GiB;
// full every power of 2 from 8 B to 4 GiB; --dlb_comm_bytes replaces them.
std::vector<int64_t> Sizes();
// Dtypes: smoke and default bf16, and f32 for all_reduce; full f32, bf16, f16; --dlb_dtypes
// replaces them.
std::vector<DType> DTypesFor(Collective c);
// Out of place, and in place (not all_to_all, which has no in-place form); smoke: in place only
// for all_reduce.
std::vector<bool> InPlaceFor(Collective c);

std::vector<FlagSpec> Flags();

// The run's context: NCCL's version, the launch, every rank's host and GPU. Collective: every
// process calls it, in the same place (registration).
void AddCommContext();

// "all_reduce.1048576" style workload, and "all_reduce 1048576 B bf16 on 2 GPUs out of place": the
// key every process must agree on before a case starts.
std::string CaseKey(const CommShape& s, DType dt);

struct CommSteps : DefaultSteps<CollectiveOp, CommShape> {
  static std::string Support(const CommShape& shape, const RunConfig& cfg);
  static std::shared_ptr<CollectiveOp> Build(const CommShape& shape, const RunConfig& cfg);
  static int Calibrate(CollectiveOp& op);
  static Timing Time(benchmark::State& st, CollectiveOp& op, int launches);
  static void Record(benchmark::State& st, const CollectiveOp& op, const CaseInfo& info,
                     const RunConfig& cfg, const Timing& t, int launches, Verdict* verdict);
};

// Registers comm/gpu/nccl/<collective>.<bytes>/dt:<dt>/gpus:<n>[/inplace:1].
void Add(Collective c, int64_t bytes, DType dt, bool inplace);

// main() of bench_comm: starts the launch, keeps every process but rank 0 quiet (no console table,
// no JSON), runs BenchMain on every process, then frees the communicator and ends MPI.
int Main(int argc, char** argv, const Family& family);

}  // namespace dlb::comm

#define DLB_COMM_MAIN(family) \
  int main(int argc, char** argv) { return ::dlb::comm::Main(argc, argv, family); }
