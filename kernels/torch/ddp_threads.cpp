// The data-parallel step run by one process over its local GPUs: a thread per GPU (RankThreads,
// also the one thread of a process per GPU), one communicator over every GPU, and the checks that
// compare this process's replicas with each other.
#include <algorithm>

#include "kernels/torch/ddp_internal.h"

namespace dlb::libtorch {

namespace ddp {

RankThreads::RankThreads(int n) {
  for (int r = 0; r < n; ++r) workers_.push_back(std::make_unique<Worker>());
  for (int r = 0; r < n; ++r) workers_[size_t(r)]->thread = std::thread([this, r] { Loop(r); });
}

RankThreads::~RankThreads() {
  for (auto& w : workers_) {
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->stop = true;
    }
    w->cv.notify_all();
  }
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

void RankThreads::Run(const std::function<void(int)>& fn) {
  for (auto& w : workers_) {
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->task = &fn;
      w->error = nullptr;
    }
    w->cv.notify_all();
  }
  std::exception_ptr first;
  for (auto& w : workers_) {
    std::unique_lock<std::mutex> lock(w->mu);
    w->cv.wait(lock, [&] { return w->task == nullptr; });
    if (w->error && !first) first = w->error;
  }
  if (first) std::rethrow_exception(first);
}

void RankThreads::Loop(int r) {
  Worker& w = *workers_[size_t(r)];
  std::unique_lock<std::mutex> lock(w.mu);
  for (;;) {
    w.cv.wait(lock, [&] { return w.stop || w.task != nullptr; });
    if (w.stop) return;
    const std::function<void(int)>* task = w.task;
    lock.unlock();
    std::exception_ptr error;
    try {
      (*task)(r);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    w.error = error;
    w.task = nullptr;
    w.cv.notify_all();
  }
}

}  // namespace ddp

void DdpStepGpu::Impl::OpenLocalCommunicator(std::vector<int>* devices, std::vector<int>* ranks) {
  for (int r = 0; r < shape.gpus; ++r) devices->push_back(r), ranks->push_back(r);
  world = nccl::Communicator::InitAll(*devices, shape.comm_timeout_s);
}

// The mean of the replicas' losses is the loss of the whole batch.
double DdpStepGpu::Impl::MeanLossOfReplicas(const std::vector<StepResult>& got) const {
  double loss = 0;
  for (const StepResult& g : got) loss += g.loss / double(got.size());
  return loss;
}

// Every replica holds the same weights after the all-reduced step.
ddp::UpdateSpread DdpStepGpu::Impl::SpreadOfReplicas(const std::vector<StepResult>& got) const {
  ddp::UpdateSpread s;
  for (size_t r = 1; r < got.size(); ++r)
    s.rel_l2 = std::max(s.rel_l2, RelL2(got[r].update, got.front().update));
  s.compared = got.front().update.size() * (got.size() - 1);
  return s;
}

}  // namespace dlb::libtorch
