// How the processes of a collectives run were started, and the few host values they agree on.
// Under an MPI launcher (mpirun, srun) each process drives one GPU and MPI carries the agreement;
// otherwise there is one process, which drives every local GPU, and agreeing is trivial.
// No MPI, NCCL or CUDA header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dlb::nccl {

class Launch {
 public:
  virtual ~Launch() = default;
  virtual int rank() const = 0;        // this process among all of the run
  virtual int size() const = 0;        // processes of the run
  virtual int local_rank() const = 0;  // this process among those of its host
  virtual int local_size() const = 0;
  virtual std::string how() const = 0;  // "mpi, 2 processes on 1 host" / "one process"

  // The largest v over all processes (every process gets it).
  virtual double Max(double v) = 0;
  // Whether every process holds the same v.
  virtual bool Same(uint64_t v) = 0;
  // Rank 0's bytes, on every process.
  virtual void Broadcast(void* data, size_t bytes) = 0;
  // Every process's text, in rank order, on every process.
  virtual std::vector<std::string> AllGather(const std::string& mine) = 0;

  // "" when no process failed, else the message of the lowest failing rank (its own words on
  // that rank; others get it with " (rank r)" appended), on every process.
  std::string FirstError(const std::string& mine);
};

// The launch of this process: MPI (MPI_Init, then MPI_Comm_split_type for the local rank) when
// an MPI launcher started it and the build has MPI, else one process. Throws dlb::Error with one
// line when MPI_Init fails, or when a launcher started several processes of a build without MPI
// (each would drive every GPU on its own).
std::unique_ptr<Launch> StartLaunch(int* argc, char*** argv);

// The number of processes an MPI launcher started, read from its environment (Open MPI, PMIx,
// PMI/Hydra, Slurm): 0 when none did. `getenv` is ::getenv outside tests.
int LauncherProcesses(const std::function<const char*(const char*)>& getenv);

// The MPI launch, or nullptr in a build without MPI. Throws as StartLaunch.
std::unique_ptr<Launch> StartMpi(int* argc, char*** argv);
// One process: rank 0 of 1.
std::unique_ptr<Launch> SingleProcess();

}  // namespace dlb::nccl
