// Collectives family: NCCL's all_reduce (sum), all_gather, reduce_scatter (sum), broadcast and
// all_to_all over every GPU of the run, out of place and in place, sizes and dtypes by tier
// (benchmarks/comm/family.h). One process per GPU under mpirun or srun, else one process driving
// every local GPU; every output element checked on the device before a case is timed.
#include "benchmarks/comm/family.h"

namespace dlb::comm {
namespace {

void RegisterCases() {
  AddCommContext();
  if (!WantDevice(true)) return;  // every collective runs on GPUs
  for (Collective c : nccl::kCollectives)
    for (DType dt : DTypesFor(c))
      for (int64_t bytes : Sizes())
        for (bool inplace : InPlaceFor(c)) Add(c, bytes, dt, inplace);
}

}  // namespace
}  // namespace dlb::comm

DLB_COMM_MAIN((dlb::Family{"comm", dlb::comm::Flags(), dlb::comm::RegisterCases}))
