#include "kernels/nccl/launch.h"

#include <cstdlib>

#include "kernels/common/error.h"

namespace dlb::nccl {

namespace {

class Single final : public Launch {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string how() const override { return "one process"; }
  double Max(double v) override { return v; }
  bool Same(uint64_t) override { return true; }
  void Broadcast(void*, size_t) override {}
  std::vector<std::string> AllGather(const std::string& mine) override { return {mine}; }
};

}  // namespace

std::string Launch::FirstError(const std::string& mine) {
  if (size() == 1) return mine;
  const std::vector<std::string> all = AllGather(mine);
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    if (int(r) == rank()) return all[r];
    return all[r] + " (rank " + std::to_string(r) + ")";
  }
  return "";
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

std::unique_ptr<Launch> SingleProcess() { return std::make_unique<Single>(); }

std::unique_ptr<Launch> StartLaunch(int* argc, char*** argv) {
  const int processes = LauncherProcesses([](const char* v) { return std::getenv(v); });
  if (processes == 0) return SingleProcess();
  std::unique_ptr<Launch> mpi = StartMpi(argc, argv);
  if (mpi) return mpi;
  if (processes > 1)
    throw Error("started as one of " + std::to_string(processes) +
                " processes by an MPI launcher, but built without MPI (DLBENCH_WITH_MPI)");
  return SingleProcess();
}

}  // namespace dlb::nccl
