// How the processes of a run were started, and the few host values they agree on.
// Under a launcher (Open MPI's mpirun, Slurm's srun, torchrun) each process drives one GPU; MPI
// carries the agreement where the build has it and the launcher is MPI's, else a TCP rendezvous
// at MASTER_ADDR:MASTER_PORT (torchrun's variables; rank 0 listens). Without a launcher there is
// one process, which drives every local GPU, and agreeing is trivial.
// No MPI, NCCL or CUDA header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/process_group.h"

namespace dlb::nccl {

// A launch is the run's process group (kernels/common/process_group.h: the harness and the
// data-parallel step use it through that interface); this type names the launches made here.
class Launch : public ProcessGroup {};

// A launch of several processes whose agreements are one star exchange at rank 0: every rank's
// text to rank 0, then every text to every rank, each wait bounded by the group's timeout (MPI and
// the TCP rendezvous). Max, Same, Broadcast and AllGather are built on it here once.
class StarLaunch : public Launch {
 public:
  double Max(double v) final;
  bool Same(uint64_t v) final;
  void Broadcast(void* data, size_t bytes) final;
  std::vector<std::string> AllGather(const std::string& mine) final;

 protected:
  // Every rank's `mine`, in rank order, on every rank; `what` names the agreement in the line of a
  // rank that stopped answering. Breaks the group (ProcessGroup::Break) on a timeout or a gone
  // rank.
  virtual std::vector<std::string> Exchange(const std::string& mine, const std::string& what) = 0;
  // "MPI", "TCP rendezvous": the transport, named in the errors.
  virtual std::string transport() const = 0;
};

// The launch of this process:
//   - torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): the TCP rendezvous;
//   - an MPI launcher (mpirun, srun, Hydra) and a build with MPI: MPI (MPI_Init, then
//     MPI_Comm_split_type for the local rank);
//   - mpirun or srun, a build without MPI (or an MPI that sees fewer processes than the launcher
//     started: srun without --mpi=pmix) and MASTER_ADDR/MASTER_PORT set: the TCP rendezvous;
//   - no launcher: one process.
// Throws dlb::Error with one line when MPI_Init or the rendezvous fails, or when a launcher
// started several processes of a build without MPI and no rendezvous address is set (each would
// drive every GPU on its own).
std::unique_ptr<Launch> StartLaunch(int* argc, char*** argv);

// What a launcher's environment says about this process. Precedence: Open MPI, torchrun, Slurm.
struct LaunchEnv {
  std::string launcher;  // "mpirun", "torchrun", "slurm"; "" without one
  int rank = 0, size = 1;
  int local_rank = -1;      // -1: not given (the rendezvous counts the processes of each host)
  std::string master_addr;  // MASTER_ADDR, where rank 0 listens for the TCP rendezvous
  // MASTER_PORT; 0 when not given. Under torchrun itself (TORCHELASTIC_USE_AGENT_STORE=True) its
  // agent's store holds MASTER_PORT, and this is the port after it.
  int master_port = 0;
};
// Reads Open MPI's OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK}, torchrun's RANK, WORLD_SIZE,
// LOCAL_RANK, Slurm's SLURM_PROCID, SLURM_STEP_NUM_TASKS (or SLURM_NTASKS), SLURM_LOCALID, and
// MASTER_ADDR/MASTER_PORT with any of them. Throws one line on values that do not fit (a rank
// outside 0..size-1, a port that is not one). `getenv` is ::getenv outside tests.
LaunchEnv DetectLaunch(const std::function<const char*(const char*)>& getenv);

// The TCP rendezvous of env's processes: rank 0 listens on env.master_port (every address), the
// others connect to env.master_addr:env.master_port, retrying until `deadline_s` has passed since
// the call; a process that has not joined by then ends the launch with one line on every process
// that waits for it. Agreements go through rank 0 (gathered there, sent back to all); a process
// that leaves (killed, crashed) closes its connection, and the others' next agreement fails with
// one line naming its rank.
std::unique_ptr<Launch> StartTcp(const LaunchEnv& env, double deadline_s);
// How long the rendezvous waits for every process to join: DLB_RENDEZVOUS_TIMEOUT (seconds) or
// 300.
double RendezvousSeconds();

// The number of processes an MPI launcher started, read from its environment (Open MPI, PMIx,
// PMI/Hydra, Slurm): 0 when none did. `getenv` is ::getenv outside tests.
int LauncherProcesses(const std::function<const char*(const char*)>& getenv);

// The MPI launch, or nullptr in a build without MPI. Throws as StartLaunch.
std::unique_ptr<Launch> StartMpi(int* argc, char*** argv);
// One process: rank 0 of 1; `launched`: a launcher started it all the same (torchrun with one
// process, an MPI launcher's environment with one).
std::unique_ptr<Launch> SingleProcess(bool launched = false);

}  // namespace dlb::nccl
