// The build without MPI: there is no MPI launch (kernels/nccl/launch_mpi.cpp is the other half).
#include "kernels/nccl/launch.h"

namespace dlb::nccl {

std::unique_ptr<Launch> StartMpi(int*, char***) { return nullptr; }

}  // namespace dlb::nccl
