// The data-parallel step's checks before it is timed: this process's first replica against the
// float64 reference; then one timed-path step of every GPU against one GPU's step over the
// concatenated batch, and every replica's update against the first's (with one process per GPU,
// rank 0's); a failure on any rank is every rank's.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/torch/compat.h"
#include "kernels/torch/ddp_internal.h"

namespace dlb::libtorch {

using ddp::MessageOf;

Verdict DdpStepGpu::Impl::Verify() {
  // The model, the GPUs idle (its new batch size tunes and waits on the first GPU).
  WaitForEveryGpu();
  const Verdict model = VerifyFirstReplica();
  if (!model.ok) return model;

  // The timed path once, from the seeded state, against the reference from that state.
  const std::vector<Engine::State> before = SaveEveryReplica();
  const std::vector<StepResult> got = StepOnceFrom(before);
  const StepResult want = ReferenceStepOnFirstThread(before.front());
  const Verdict v = CompareWithOneGpu(got, want);
  if (!v.ok) return v;

  Verdict out = (v.error / v.tolerance > model.error / model.tolerance) ? v : model;
  out.detail = model.detail + "; " + v.detail;
  out.checked = model.checked + v.checked;
  out.of = out.checked;
  return out;
}

// The first replica alone (its hooks off: no all-reduce) against the float64 reference.
Verdict DdpStepGpu::Impl::VerifyFirstReplica() {
  Replica& first = *replicas.front();
  Verdict model;
  std::string failed;
  try {
    c10::cuda::CUDAGuard dg(c10::DeviceIndex(first.device()));
    c10::cuda::CUDAStreamGuard sg(first.stream);
    first.SetHooks(false);
    model = VerifyAgainstReference(*first.engine, Where::kGpu, nullptr);
    first.SetHooks(true);
    first.UseGraphOutputs();
    first.stream.synchronize();
  } catch (...) {
    failed = MessageOf(std::current_exception());
  }
  FailTogether(failed);
  if (launch) FailVerdictTogether(model);
  return model;
}

std::vector<Engine::State> DdpStepGpu::Impl::SaveEveryReplica() {
  std::vector<Engine::State> before(replicas.size());
  for (auto& r : replicas) {
    c10::cuda::CUDAGuard dg(c10::DeviceIndex(r->device()));
    c10::cuda::CUDAStreamGuard sg(r->stream);
    before[size_t(r->index)] = r->engine->Save();
  }
  return before;
}

// One step of the timed path (a replay where graphed): every replica's result, each replica
// restored to `before` after it.
std::vector<StepResult> DdpStepGpu::Impl::StepOnceFrom(const std::vector<Engine::State>& before) {
  StepEveryGpu();
  WaitForEveryGpu();
  std::vector<StepResult> got;
  for (auto& r : replicas) {
    c10::cuda::CUDAGuard dg(c10::DeviceIndex(r->device()));
    c10::cuda::CUDAStreamGuard sg(r->stream);
    got.push_back(r->engine->Result(before[size_t(r->index)]));
    r->engine->Restore(before[size_t(r->index)]);
    r->UseGraphOutputs();
  }
  WaitForEveryGpu();
  return got;
}

std::unique_ptr<Engine> DdpStepGpu::Impl::GlobalBatchEngine() const {
  TrainShape s = shape.step;
  s.batch = shape.step.batch * int64_t(gpus());
  s.graph = false;
  const int d = replicas.empty() ? 0 : own_device();
  c10::cuda::CUDAGuard dg{c10::DeviceIndex(d)};
  return std::make_unique<Engine>(s, cfg, Where::kGpu, false, d);
}

// The one-GPU reference over the concatenated batch, from the first replica's state `from`:
// each GPU's shard in turn, its mean loss / n backpropagated and accumulated, so BatchNorm sees
// each shard alone as a replica does.
StepResult DdpStepGpu::Impl::ReferenceStep(const Engine::State& from) const {
  std::unique_ptr<Engine> g = GlobalBatchEngine();
  c10::cuda::CUDAGuard dg(c10::DeviceIndex(own_device()));
  g->Restore(from);
  const Engine::State start = g->Save();
  g->SetMath();
  for (auto& p : g->params) p.mutable_grad().reset();
  const int64_t b = shape.step.batch;
  const double n = double(gpus());
  double loss = 0;
  for (int64_t r = 0; r < int64_t(gpus()); ++r) {
    torch::Tensor part;
    {
      compat::Autocast ac(shape.step.amp, c10::DeviceType::CUDA);
      part = g->Loss(g->model->forward(g->x.narrow(0, r * b, b)), g->y.narrow(0, r * b, b));
    }
    (part / n).backward();
    loss += part.item<double>() / n;
  }
  g->loss = torch::scalar_tensor(loss, torch::kFloat64);
  g->Optimize();
  return g->Result(start);
}

// On the first GPU's thread: LibTorch keeps cuDNN's autotuned choices per thread, so the
// reference's shards (the first GPU's shape) run the algorithms its replica ran. One process per
// GPU: every rank computes the reference over the whole batch on its own GPU (the global batch
// and the weights are seeded alike on every rank).
StepResult DdpStepGpu::Impl::ReferenceStepOnFirstThread(const Engine::State& from) {
  StepResult want;
  std::string failed;
  try {
    threads->Run([&](int i) {
      if (i != 0) return;
      c10::cuda::CUDAGuard dg(c10::DeviceIndex(this->own_device()));  // this->: not a declaration
      want = Guarded([&] { return ReferenceStep(from); });
    });
  } catch (...) {
    failed = MessageOf(std::current_exception());
  }
  FailTogether(failed);
  return want;
}

// The replicas' step against the reference (the mean of their losses is the loss of the whole
// batch), and their updates against each other's.
Verdict DdpStepGpu::Impl::CompareWithOneGpu(const std::vector<StepResult>& got,
                                            const StepResult& want) {
  StepResult all = got.front();
  all.loss = launch ? MeanLossOfRanks(got.front().loss) : MeanLossOfReplicas(got);
  const int64_t global = shape.step.batch * int64_t(gpus());
  // The same kernels on the same shards, but the other GPUs' threads autotune on their own and
  // may pick other cuDNN algorithms, whose other summation orders show through BatchNorm in bf16
  // autocast (docs/families/train.md). A wrong reduction is further off: a sum for the mean is 1
  // at 2 GPUs, a bucket left out its share of the norm.
  StepTolerances tol = SameStepTolerance(shape.step, cfg);
  if (shape.step.amp) tol = {1e-2, 0.3};
  Verdict v = CompareSteps(all, want, true, tol,
                           std::to_string(gpus()) +
                               " GPUs vs one GPU over the concatenated batch "
                               "(bs " +
                               std::to_string(global) + ")");
  const ddp::UpdateSpread spread =
      launch ? SpreadOfRanks(got.front().update) : SpreadOfReplicas(got);
  char buf[96];
  std::snprintf(buf, sizeof buf, "; replicas' updates apart by %.1e (rel L2)", spread.rel_l2);
  v.detail += buf;
  v.checked += spread.compared;
  v.of = v.checked;
  if (!(spread.rel_l2 <= 1e-6)) v.ok = false;
  // Every rank's comparison with the reference: one failing is the run's failure.
  if (launch) FailVerdictTogether(v);
  return v;
}

}  // namespace dlb::libtorch
