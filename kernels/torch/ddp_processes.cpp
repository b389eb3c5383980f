// The data-parallel step run as one process per GPU (DdpShape::launch of several processes:
// mpirun, srun or torchrun): the communicator from rank 0's NCCL id, every failure and verdict
// shared by all ranks before any of them goes on, and the ranks lined up before a timed span.
#include <algorithm>
#include <cstring>
#include <exception>

#include "kernels/cuda/check.h"
#include "kernels/nccl/check.h"
#include "kernels/torch/ddp_internal.h"

namespace dlb::libtorch {

using ddp::MessageOf;

void DdpStepGpu::Impl::OpenRankCommunicator(std::vector<int>* devices, std::vector<int>* ranks) {
  *devices = {launch->local_rank() % std::max(1, int(torch::cuda::device_count()))};
  *ranks = {launch->rank()};
  // Rank 0 makes the id and sends it with whether it could (the others must not wait for an
  // id that never comes), as the collectives family does.
  struct {
    char ok = 0;
    nccl::UniqueId id{};
  } msg;
  std::string why;
  if (launch->rank() == 0) {
    try {
      msg.id = nccl::NewUniqueId();
      msg.ok = 1;
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  launch->Broadcast(&msg, sizeof msg);
  if (!msg.ok) throw Error(why.empty() ? "rank 0 could not make NCCL's unique id" : why);
  std::string failed;
  try {
    world = nccl::Communicator::InitRank(msg.id, launch->size(), launch->rank(), devices->front(),
                                         shape.comm_timeout_s);
  } catch (...) {
    failed = MessageOf(std::current_exception());
  }
  FailTogether(failed);
}

void DdpStepGpu::Impl::FailTogether(const std::string& mine) const {
  if (!launch) {
    if (!mine.empty()) throw Error(mine);
    return;
  }
  const std::string first = launch->FirstError(mine);
  if (!first.empty()) throw Error(first);
}

void DdpStepGpu::Impl::FailVerdictTogether(Verdict& v) const {
  const std::string bad = launch->FirstError(v.ok ? "" : v.detail);
  if (!bad.empty()) {
    v.ok = false;
    v.detail = bad;
  }
}

// Every rank's loss over its shard: their mean is the loss of the whole batch.
double DdpStepGpu::Impl::MeanLossOfRanks(double mine) const {
  double loss = 0;
  for (const std::string& l :
       launch->AllGather(std::string(reinterpret_cast<const char*>(&mine), sizeof(double)))) {
    double x = 0;
    std::memcpy(&x, l.data(), sizeof x);
    loss += x / double(gpus());
  }
  return loss;
}

ddp::UpdateSpread DdpStepGpu::Impl::SpreadOfRanks(const std::vector<float>& mine) const {
  std::vector<float> zero = mine;
  launch->Broadcast(zero.data(), zero.size() * sizeof(float));
  ddp::UpdateSpread s;
  s.rel_l2 = launch->Max(launch->rank() == 0 ? 0.0 : RelL2(mine, zero));
  s.compared = zero.size() * size_t(gpus() - 1);
  return s;
}

// Rank 0 on its GPU while the others wait at the broadcast: the one-GPU step runs on GPU 0 of
// those this process sees, which is rank 0's own (local rank 0), or every rank's where each
// sees only its own; elsewhere the scaling reference is left out (0).
double DdpStepGpu::Impl::TimeOneGpuOnRankZero() {
  double single = 0;
  std::string failed;
  if (launch->rank() == 0 && own_device() == 0) {
    try {
      single = TimeOneGpuStep();
    } catch (...) {
      failed = MessageOf(std::current_exception());
    }
  }
  FailTogether(failed);
  launch->Broadcast(&single, sizeof single);
  return single;
}

// As the collectives' spans are: a rank whose process launches later would otherwise hold the
// others' first all-reduce, inside their spans.
void DdpStepGpu::Impl::LineUpRanks() {
  Replica& first = *replicas.front();
  RequireUnbroken();
  if (!line_up.defined())
    line_up = torch::zeros(
        {1}, torch::TensorOptions().dtype(torch::kFloat32).device(first.engine->device));
  float* one = line_up.data_ptr<float>();
  ncclResult_t rc = ncclSuccess;
  DLB_CHECK(
      rc = ncclAllReduce(one, one, 1, ncclFloat32, ncclSum, first.comm, first.stream.stream()));
  if (rc == ncclInProgress)
    ddp::SettleComm(first.comm, first.timeout_s, WaitName("(lining up the ranks)"), first.shard);
}

}  // namespace dlb::libtorch
