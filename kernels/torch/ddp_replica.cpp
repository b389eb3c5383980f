#include "kernels/torch/ddp_replica.h"

#include <c10/cuda/CUDAGuard.h>

#include <algorithm>

#include "kernels/common/error.h"
#include "kernels/cuda/check.h"
#include "kernels/nccl/check.h"
#include "kernels/nccl/watchdog.h"

namespace dlb::libtorch::ddp {

cuda::Event SyncEvent() {
  cudaEvent_t e = nullptr;
  DLB_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return cuda::Event(e);
}

void SettleComm(ncclComm_t comm, double timeout_s, const std::string& what, int rank) {
  ncclResult_t state = ncclInProgress;
  const nccl::Probe p = nccl::PollUntil(
      [&] {
        const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
        if (r != ncclSuccess) state = r;
        return state == ncclInProgress ? nccl::Probe::kPending
               : state == ncclSuccess  ? nccl::Probe::kDone
                                       : nccl::Probe::kFailed;
      },
      nccl::DeadlineAfter(timeout_s));
  if (p == nccl::Probe::kPending)
    throw nccl::CommTimeout(nccl::TimeoutMessage(what, rank, timeout_s));
  if (p == nccl::Probe::kFailed) DLB_CHECK(state);
}

int64_t Replica::PlanBuckets(std::vector<int64_t>* offset) {
  const auto& params = engine->params;
  const size_t n = params.size();
  bucket_of_param.assign(n, -1);
  offset->assign(n, 0);
  int64_t total = 0, bytes_in_bucket = 0, cap = kFirstBucketBytes;
  for (size_t k = n; k-- > 0;) {
    const torch::Tensor& p = params[k];
    if (p.scalar_type() != torch::kFloat32)
      throw Error("a data-parallel step averages f32 gradients; a parameter is " +
                  std::string(c10::toString(p.scalar_type())));
    const int64_t bytes = p.numel() * 4;
    if (bucket_begin.empty() || (bytes_in_bucket > 0 && bytes_in_bucket + bytes > cap)) {
      if (!bucket_begin.empty()) cap = kBucketBytes;
      bucket_begin.push_back(total);
      bucket_elems.push_back(0);
      params_in_bucket.push_back(0);
      bytes_in_bucket = 0;
    }
    bucket_of_param[k] = int(bucket_begin.size()) - 1;
    (*offset)[k] = total;
    total += p.numel();
    bytes_in_bucket += bytes;
    bucket_elems.back() += p.numel();
    ++params_in_bucket.back();
  }
  return total;
}

void Replica::MakeBucketsAndHooks() {
  const auto& params = engine->params;
  const size_t n = params.size();
  std::vector<int64_t> offset;
  const int64_t total = PlanBuckets(&offset);
  torch::NoGradGuard no_grad;
  flat_buckets =
      torch::zeros({total}, torch::TensorOptions().dtype(torch::kFloat32).device(engine->device));
  for (size_t k = 0; k < n; ++k) {
    const torch::Tensor& p = params[k];
    // The slot has the parameter's strides (channels-last weights too), as DDP's bucket views:
    // the fused SGD step then reads gradient and parameter alike.
    grad_slots.push_back(p.is_non_overlapping_and_dense()
                             ? flat_buckets.as_strided(p.sizes(), p.strides(), offset[k])
                             : flat_buckets.narrow(0, offset[k], p.numel()).view(p.sizes()));
  }
  for (size_t b = 0; b < bucket_begin.size(); ++b) bucket_ready.push_back(SyncEvent());
  all_reduces_done = SyncEvent();
  fork = SyncEvent();
  join = SyncEvent();
  grads_pending.assign(bucket_begin.size(), 0);
  grad_arrived.assign(n, 0);
  for (size_t k = 0; k < n; ++k)
    engine->params[k].register_hook([this, k](const torch::Tensor& grad) { OnGradient(k, grad); });
}

void Replica::BeginStep() {
  std::lock_guard<std::mutex> lock(mu);
  work_stream = c10::cuda::getCurrentCUDAStream(c10::DeviceIndex(device()));
  for (size_t b = 0; b < grads_pending.size(); ++b) grads_pending[b] = params_in_bucket[b];
  std::fill(grad_arrived.begin(), grad_arrived.end(), 0);
  next_bucket = 0;
}

// A parameter's gradient, made on the step's stream: into its slot there; a bucket whose
// gradients are all in is all-reduced, in bucket order.
void Replica::OnGradient(size_t k, const torch::Tensor& grad) {
  std::lock_guard<std::mutex> lock(mu);
  if (!hooks_on || grad_arrived[k] || !work_stream) return;
  c10::cuda::CUDAStreamGuard sg(*work_stream);
  {
    torch::NoGradGuard no_grad;
    grad_slots[k].copy_(grad);
  }
  grad_arrived[k] = 1;
  --grads_pending[size_t(bucket_of_param[k])];
  LaunchReadyBuckets(work_stream->stream());
}

// Every bucket from next_bucket on whose gradients are in: the communication stream waits for
// the step's stream, then averages the bucket over the GPUs in place. Called with `mu` held.
void Replica::LaunchReadyBuckets(cudaStream_t on) {
  while (next_bucket < int(grads_pending.size()) && grads_pending[size_t(next_bucket)] == 0) {
    const size_t b = size_t(next_bucket);
    DLB_CHECK(cudaEventRecord(bucket_ready[b].get(), on));
    DLB_CHECK(cudaStreamWaitEvent(comm_stream.stream(), bucket_ready[b].get(), 0));
    if (all_reduce_on) {
      float* data = flat_buckets.data_ptr<float>() + bucket_begin[b];
      ncclResult_t rc = ncclSuccess;
      DLB_CHECK(rc = ncclAllReduce(data, data, size_t(bucket_elems[b]), ncclFloat32, ncclAvg, comm,
                                   comm_stream.stream()));
      if (rc == ncclInProgress)
        SettleComm(comm, timeout_s, "all_reduce of gradient bucket " + std::to_string(b), shard);
    }
    ++next_bucket;
  }
}

// After backward, on the step's current stream: gradients that never came (a parameter the
// loss does not reach) are zeros; the last buckets go; the stream waits for every all-reduce
// and each parameter's gradient becomes its averaged slot.
void Replica::FinishGradients() {
  {
    std::lock_guard<std::mutex> lock(mu);
    c10::cuda::CUDAStreamGuard sg(*work_stream);
    const cudaStream_t s = work_stream->stream();
    torch::NoGradGuard no_grad;
    for (size_t k = 0; k < grad_arrived.size(); ++k) {
      if (grad_arrived[k]) continue;
      grad_slots[k].zero_();
      grad_arrived[k] = 1;
      --grads_pending[size_t(bucket_of_param[k])];
    }
    LaunchReadyBuckets(s);
    DLB_CHECK(cudaEventRecord(all_reduces_done.get(), comm_stream.stream()));
    DLB_CHECK(cudaStreamWaitEvent(s, all_reduces_done.get(), 0));
  }
  for (size_t k = 0; k < grad_slots.size(); ++k) engine->params[k].mutable_grad() = grad_slots[k];
}

void Replica::Step() {
  BeginStep();  // on the current stream
  engine->SetMath();
  engine->Forward();
  engine->Backward();
  FinishGradients();
  engine->Optimize();
}

void Replica::SetAllReduce(bool on) {
  std::lock_guard<std::mutex> lock(mu);
  all_reduce_on = on;
}

void Replica::SetHooks(bool on) {
  std::lock_guard<std::mutex> lock(mu);
  hooks_on = on;
}

void Replica::ResetTo(const Engine::State& state) {
  engine->Restore(state);
  engine->loss = torch::Tensor();
  engine->logits = torch::Tensor();
  for (auto& p : engine->params) p.mutable_grad().reset();
}

void Replica::UseGraphOutputs() {
  if (!graph) return;
  engine->loss = graph_loss;
  for (size_t k = 0; k < grad_slots.size(); ++k) engine->params[k].mutable_grad() = grad_slots[k];
}

}  // namespace dlb::libtorch::ddp
