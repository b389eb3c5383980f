#include "kernels/nccl/comm.h"

#include <cstdlib>
#include <cstring>

namespace dlb::nccl {

UniqueId NewUniqueId() {
  // The first NCCL call of rank 0 initialises the library, which reads its environment.
  DisableMulticast();
  ncclUniqueId id;
  DLB_CHECK(ncclGetUniqueId(&id));
  UniqueId out;
  std::memcpy(out.data(), id.internal, out.size());
  return out;
}

void DisableMulticast() { ::setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0); }

Communicator Communicator::InitAll(const std::vector<int>& devices) {
  DisableMulticast();
  int caller = 0;  // current again on return
  DLB_CHECK(cudaGetDevice(&caller));
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  DLB_CHECK(ncclCommInitAll(comms.data(), int(devices.size()), devices.data()));
  Communicator c;
  c.ranks_ = int(devices.size());
  // Owned first, so that a failure below still destroys every communicator.
  for (size_t i = 0; i < devices.size(); ++i) {
    Member m;
    m.device = devices[i];
    m.rank = int(i);
    m.comm = Comm(comms[i]);
    c.members_.push_back(std::move(m));
  }
  for (Member& m : c.members_) {
    DLB_CHECK(cudaSetDevice(m.device));
    m.stream = cuda::MakeStream();
  }
  DLB_CHECK(cudaSetDevice(caller));
  return c;
}

Communicator Communicator::InitRank(const UniqueId& id, int ranks, int rank, int device) {
  DisableMulticast();
  ncclUniqueId nid;
  std::memcpy(nid.internal, id.data(), id.size());
  DLB_CHECK(cudaSetDevice(device));
  ncclComm_t comm = nullptr;
  DLB_CHECK(ncclCommInitRank(&comm, ranks, nid, rank));
  Communicator c;
  c.ranks_ = ranks;
  Member m;
  m.device = device;
  m.rank = rank;
  m.comm = Comm(comm);
  m.stream = cuda::MakeStream();
  c.members_.push_back(std::move(m));
  return c;
}

std::string Version() {
  int v = 0;
  DLB_CHECK(ncclGetVersion(&v));
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." +
         std::to_string(v % 100);
}

std::string DeviceSummary(int device) {
  cudaDeviceProp p{};
  DLB_CHECK(cudaGetDeviceProperties(&p, device));
  char bus[32] = {};
  DLB_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device));
  return std::string(p.name) + ", " + bus;
}

}  // namespace dlb::nccl
