#include "kernels/nccl/launch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/common/error.h"

namespace dlb::nccl {

namespace {

class Single final : public Launch {
 public:
  explicit Single(bool launched) : launched_(launched) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string how() const override { return "one process"; }
  bool launched() const override { return launched_; }
  double Max(double v) override { return v; }
  bool Same(uint64_t) override { return true; }
  void Broadcast(void*, size_t) override {}
  std::vector<std::string> AllGather(const std::string& mine) override { return {mine}; }

 private:
  bool launched_;
};

}  // namespace

double StarLaunch::Max(double v) {
  double m = v;
  for (const std::string& s : Exchange(std::string(reinterpret_cast<const char*>(&v), sizeof v),
                                       "an agreement on the slowest span (Max)")) {
    double x = 0;
    std::memcpy(&x, s.data(), sizeof x);
    m = std::max(m, x);
  }
  return m;
}

bool StarLaunch::Same(uint64_t v) {
  const std::string mine(reinterpret_cast<const char*>(&v), sizeof v);
  for (const std::string& s :
       Exchange(mine, "the check that every process is at the same case (Same)"))
    if (s != mine) return false;
  return true;
}

void StarLaunch::Broadcast(void* data, size_t bytes) {
  const std::vector<std::string> all =
      Exchange(rank() == 0 ? std::string(static_cast<const char*>(data), bytes) : "",
               "a broadcast from rank 0");
  if (all.front().size() != bytes)
    throw Error(transport() + ": rank 0 broadcast " + std::to_string(all.front().size()) +
                " bytes, this rank expected " + std::to_string(bytes));
  if (rank() != 0) std::memcpy(data, all.front().data(), bytes);
}

std::vector<std::string> StarLaunch::AllGather(const std::string& mine) {
  return Exchange(mine, "a gather of every process's words (AllGather)");
}

int LauncherProcesses(const std::function<const char*(const char*)>& getenv) {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS",
                          "SLURM_STEP_NUM_TASKS"}) {
    const char* v = getenv(var);
    if (v && *v) return std::max(1, std::atoi(v));
  }
  // PMIx publishes the rank but not always the size.
  if (const char* v = getenv("PMIX_RANK"); v && *v) return 1;
  return 0;
}

std::unique_ptr<Launch> SingleProcess(bool launched) { return std::make_unique<Single>(launched); }

namespace {

// An environment variable as a whole number into *out; false when unset, one line when not one.
bool ReadInt(const std::function<const char*(const char*)>& getenv, const char* var, int* out) {
  const char* v = getenv(var);
  if (!v || !*v) return false;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > (1 << 30))
    throw Error(std::string(var) + "='" + v + "': expected a whole number");
  *out = int(n);
  return true;
}

}  // namespace

LaunchEnv DetectLaunch(const std::function<const char*(const char*)>& getenv) {
  LaunchEnv env;
  int rank = -1, size = -1, local = -1;
  if (ReadInt(getenv, "OMPI_COMM_WORLD_SIZE", &size)) {
    env.launcher = "mpirun";
    ReadInt(getenv, "OMPI_COMM_WORLD_RANK", &rank);
    ReadInt(getenv, "OMPI_COMM_WORLD_LOCAL_RANK", &local);
  } else if (ReadInt(getenv, "WORLD_SIZE", &size) && ReadInt(getenv, "RANK", &rank)) {
    env.launcher = "torchrun";
    ReadInt(getenv, "LOCAL_RANK", &local);
  } else if (ReadInt(getenv, "SLURM_PROCID", &rank) &&
             (ReadInt(getenv, "SLURM_STEP_NUM_TASKS", &size) ||
              ReadInt(getenv, "SLURM_NTASKS", &size))) {
    env.launcher = "slurm";
    ReadInt(getenv, "SLURM_LOCALID", &local);
  } else {
    return LaunchEnv();
  }
  if (size < 1) throw Error(env.launcher + ": the number of processes is " + std::to_string(size));
  if (rank < 0) rank = 0;
  if (rank >= size)
    throw Error(env.launcher + ": rank " + std::to_string(rank) + " of " + std::to_string(size) +
                " processes");
  env.rank = rank;
  env.size = size;
  env.local_rank = local;
  if (const char* a = getenv("MASTER_ADDR"); a && *a) env.master_addr = a;
  int port = 0;
  if (ReadInt(getenv, "MASTER_PORT", &port)) {
    if (port < 1 || port > 65535)
      throw Error("MASTER_PORT=" + std::to_string(port) + ": expected a TCP port, 1..65535");
    env.master_port = port;
    // torchrun's agent holds a store of its own on MASTER_PORT (its workers are told so): the
    // rendezvous takes the next port.
    if (const char* agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
        env.launcher == "torchrun" && agent && std::string(agent) == "True") {
      if (port == 65535) throw Error("MASTER_PORT=65535: torchrun's store holds it, none is left");
      env.master_port = port + 1;
    }
  }
  return env;
}

double RendezvousSeconds() {
  const char* v = std::getenv("DLB_RENDEZVOUS_TIMEOUT");
  if (!v || !*v) return 300;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (*end != '\0' || !(s > 0))
    throw Error(std::string("DLB_RENDEZVOUS_TIMEOUT='") + v + "': expected seconds > 0");
  return s;
}

std::unique_ptr<Launch> StartLaunch(int* argc, char*** argv) {
  const auto get = [](const char* v) -> const char* { return std::getenv(v); };
  const LaunchEnv env = DetectLaunch(get);
  const bool rendezvous = !env.master_addr.empty() && env.master_port > 0;
  if (env.launcher == "torchrun") {
    if (env.size == 1) return SingleProcess(true);
    if (!rendezvous)
      throw Error("torchrun's RANK and WORLD_SIZE are set but not MASTER_ADDR and MASTER_PORT");
    return StartTcp(env, RendezvousSeconds());
  }
  const int processes = LauncherProcesses(get);
  if (processes == 0 && env.launcher.empty()) return SingleProcess();
  std::unique_ptr<Launch> mpi = StartMpi(argc, argv);
  // srun without its MPI plugin (--mpi=pmix) starts singletons: each MPI sees only itself.
  if (mpi && env.size > 1 && mpi->size() != env.size) {
    if (rendezvous) return StartTcp(env, RendezvousSeconds());
    throw Error(env.launcher + " started " + std::to_string(env.size) + " processes but MPI sees " +
                std::to_string(mpi->size()) +
                " (srun --mpi=pmix, or MASTER_ADDR/MASTER_PORT for the TCP rendezvous)");
  }
  if (mpi) return mpi;
  if (env.size > 1 && rendezvous) return StartTcp(env, RendezvousSeconds());
  if (std::max(processes, env.size) > 1)
    throw Error("started as one of " + std::to_string(std::max(processes, env.size)) +
                " processes by a launcher, but built without MPI (DLBENCH_WITH_MPI) and with no "
                "MASTER_ADDR/MASTER_PORT for the TCP rendezvous");
  return SingleProcess(true);  // a launcher's environment, one process
}

}  // namespace dlb::nccl
