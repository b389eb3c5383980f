// The communicator a collective case runs on, and how a run builds it:
//   - one process per GPU (MPI): rank 0's ncclGetUniqueId reaches every process (the caller
//     broadcasts it), each calls ncclCommInitRank for its own GPU;
//   - one process for every local GPU: ncclCommInitAll, collectives issued in group calls.
// Either way NVLink multicast (NVLS) stays off: see DisableMulticast.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "kernels/cuda/handles.h"
#include "kernels/nccl/check.h"

namespace dlb::nccl {

// ncclUniqueId's bytes, so that the bootstrap can move it without the NCCL header.
using UniqueId = std::array<char, NCCL_UNIQUE_ID_BYTES>;
UniqueId NewUniqueId();

// One GPU this process drives: its device, its rank in the communicator, the communicator and the
// stream every collective of it is enqueued on.
struct Member {
  int device = 0;
  int rank = 0;
  Comm comm;
  cuda::Stream stream;
};

class Communicator {
 public:
  // One process driving `devices` (ranks 0..n-1 in that order); the current device is kept.
  static Communicator InitAll(const std::vector<int>& devices);
  // This process's rank of `ranks`, on `device`; every process calls it with the same id.
  static Communicator InitRank(const UniqueId& id, int ranks, int rank, int device);

  int ranks() const { return ranks_; }
  std::vector<Member>& members() { return members_; }
  const std::vector<Member>& members() const { return members_; }

 private:
  int ranks_ = 0;
  std::vector<Member> members_;
};

// Sets NCCL_NVLS_ENABLE=0 unless the environment already says otherwise. NVLink SHARP (NVLS)
// makes NCCL create multicast objects (cuMulticastCreate), which on the shared multi-GPU hosts can
// take the GPUs out of service; collectives here must never use it. Called before every
// ncclCommInit*, which read the variable.
void DisableMulticast();

// "2.28.9": the NCCL library this process runs (ncclGetVersion), not the header it was built with.
std::string Version();

// "NVIDIA H200, 0000:19:00.0": the GPU's name and PCI bus id, for the run's context.
std::string DeviceSummary(int device);

}  // namespace dlb::nccl
