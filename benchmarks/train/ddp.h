// The training step on n GPUs, data parallel (kernels/torch/ddp_step.h): over the local GPUs from
// one process, or one process per GPU under mpirun, srun or torchrun, the cases then in lockstep
// (fixtures/run/lockstep.h). Where the build has it (LibTorch with CUDA, NCCL:
// DLBENCH_HAVE_TORCH_DDP); elsewhere bench_train starts no process group, and these register
// nothing and add no flag.
#pragma once

#include <vector>

#include "fixtures/harness.h"

namespace dlb::train {

// How bench_train's processes start: the NCCL launch (kernels/nccl/launch.h: MPI, the TCP
// rendezvous, or one process), or none where the data-parallel step is not built.
StartProcesses DdpLaunch();

// --dlb_train_gpus.
std::vector<FlagSpec> DdpFlags();

// The data-parallel cases (matrix::kDdpModels ...), and the launch's context keys:
// train/gpu/libtorch/<model>/bs:<per GPU>/dt:amp_bf16/fmt:nhwc/pass:train/graph:<g>/gpus:<n>.
// Under a launcher of several processes these are the only cases (rank 0 says so).
void RegisterDdpCases();

}  // namespace dlb::train
