// Collectives family: NCCL's all_reduce (sum), all_gather, reduce_scatter (sum), broadcast and
// all_to_all over every GPU of the run, out of place and in place, sizes and dtypes by tier
// (benchmarks/comm/matrix.h). One process per GPU under mpirun, srun or torchrun, else one process
// driving every local GPU; every output element checked on the device before a case is timed.
#include "benchmarks/comm/family.h"
#include "kernels/nccl/launch.h"

namespace dlb::comm {
namespace {

void RegisterCases() {
  AddCommContext();
  // Register would leave every case out; a run without the GPU does not even count the GPUs
  // (Gpus() asks CUDA, and checks --dlb_comm_gpus against the launch).
  if (!WantDevice(true)) return;
  for (Collective c : nccl::kCollectives)
    for (DType dt : DTypesFor(c))
      for (int64_t bytes : Sizes())
        for (bool inplace : InPlaceFor(c)) Add(c, bytes, dt, inplace);
}

}  // namespace
}  // namespace dlb::comm

DLB_LAUNCHED_MAIN(dlb::comm::CommFamily(dlb::comm::RegisterCases), dlb::nccl::StartLaunch)
