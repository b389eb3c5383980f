// The GPU step: eager from C++, or the whole step in a CUDA graph as PyTorch's CUDA-graph
// tutorial (advanced_source/cpp_cuda_graphs.rst) captures it: static input and target tensors,
// warm-up on a side stream, grads set to None before capture, one replay per Run().
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <cmath>
#include <optional>
#include <sstream>

#include "kernels/common/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/torch/compat.h"
#include "kernels/torch/engine.h"
#include "kernels/torch/step.h"

namespace dlb::libtorch {

namespace {

void ResetPeakDeviceMemory() {
  c10::cuda::CUDACachingAllocator::resetPeakStats(c10::cuda::current_device());
}

// Peak bytes the caching allocator handed out (graph pools included) since the reset.
double PeakDeviceMemory() {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
  return double(stats.allocated_bytes[0].peak);  // [0]: StatType::AGGREGATE, in 1.13 and 2.x
}

// `waiter` waits for the work enqueued on `on` so far.
void StreamWait(const c10::cuda::CUDAStream& waiter, const c10::cuda::CUDAStream& on) {
  cudaEvent_t ev = nullptr;
  DLB_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  DLB_CHECK(cudaEventRecord(ev, on.stream()));
  DLB_CHECK(cudaStreamWaitEvent(waiter.stream(), ev, 0));
  DLB_CHECK(cudaEventDestroy(ev));
}

}  // namespace

struct TorchStepGpu::Gpu {
  explicit Gpu(c10::cuda::CUDAStream s) : stream(s) {}
  c10::cuda::CUDAStream stream;
  std::optional<at::cuda::CUDAGraph> graph;
  // The tensors the graph writes its results into. An eager step (verification, phases) points
  // the engine at tensors of its own; these point it back.
  torch::Tensor loss, logits;
  std::vector<torch::Tensor> grads;
  void UseGraphOutputs(Engine& e) const {
    if (!graph) return;
    e.loss = loss;
    e.logits = logits;
    for (size_t i = 0; i < grads.size(); ++i) e.params[i].mutable_grad() = grads[i];
  }
};

Support TorchStepGpu::Supports(const TrainShape& shape, const RunConfig& cfg) {
  if (shape.batch <= 0) return Support::No("batch must be positive");
  if (Support t = TransformerSupport(shape); !t.ok) return t;
  if (shape.graph && IsTransformer(shape.model) && !compat::kTorch2)
    return Support::No("a graphed AdamW step needs the fused kernel's device step (LibTorch 2)");
  if (cfg.dtype != DType::kF32 && cfg.dtype != DType::kTF32 && cfg.dtype != DType::kBF16)
    return Support::No("the GPU steps run in f32, tf32 or bf16 autocast");
  if ((cfg.dtype == DType::kBF16) != shape.amp)
    return Support::No("bf16 is only run as autocast (dt:amp_bf16)");
  return Support::Yes();
}

TorchStepGpu::TorchStepGpu(const TrainShape& shape, const RunConfig& cfg) {
  RequireSupported(Supports(shape, cfg));
  if (!torch::cuda::is_available()) throw Unsupported("LibTorch sees no CUDA device");
  Guarded([&] {
    c10::cuda::CUDAGuard device_guard(0);
    torch::empty({1}, torch::kCUDA);  // the caching allocator exists from LibTorch's first use
    ResetPeakDeviceMemory();
    g_ = std::make_unique<Gpu>(c10::cuda::getStreamFromPool());
    c10::cuda::CUDAStreamGuard sg(g_->stream);
    e_ = std::make_unique<Engine>(shape, cfg, Where::kGpu, false);
    if (!shape.graph) return;
    // Warm-up on a side stream (cuDNN's autotuning and the allocator's first blocks happen
    // here, outside the graph), then capture from the seeded state on our own stream.
    const Engine::State s = e_->Save();
    {
      c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
      StreamWait(side, g_->stream);
      c10::cuda::CUDAStreamGuard side_guard(side);
      for (int i = 0; i < 3; ++i) {
        e_->SetMath();
        e_->Step();
      }
      StreamWait(g_->stream, side);
    }
    g_->stream.synchronize();
    e_->Restore(s);
    // Nothing of the warm-up's autograd graph may outlive it (its nodes belong to the side stream).
    e_->loss = torch::Tensor();
    e_->logits = torch::Tensor();
    if (e_->train())
      for (auto& p : e_->params) p.mutable_grad().reset();
    e_->SetMath();
    g_->graph.emplace();
    g_->graph->capture_begin();
    e_->Step();
    g_->graph->capture_end();
    g_->stream.synchronize();
    g_->loss = e_->loss;
    g_->logits = e_->logits;
    for (auto& p : e_->params) g_->grads.push_back(p.grad());
    e_->Restore(s);
  });
}

TorchStepGpu::~TorchStepGpu() {
  if (!g_) return;
  try {
    g_->stream.synchronize();
    g_->graph.reset();
    e_.reset();
    c10::cuda::CUDACachingAllocator::emptyCache();  // the next case gets the memory back
  } catch (...) {
  }
}

StreamRef TorchStepGpu::stream() const { return reinterpret_cast<StreamRef>(g_->stream.stream()); }

void* TorchStepGpu::images() const { return e_->x.data_ptr(); }
size_t TorchStepGpu::image_bytes() const { return size_t(e_->x.numel()) * e_->x.element_size(); }
DType TorchStepGpu::images_dtype() const {
  return e_->x.scalar_type() == torch::kBFloat16 ? DType::kBF16
         : e_->x.scalar_type() == torch::kHalf   ? DType::kF16
                                                 : DType::kF32;
}
void* TorchStepGpu::labels() const { return e_->y.data_ptr(); }
double TorchStepGpu::last_loss() const {
  return Guarded([&] {
    // The copy to the host must queue behind the steps: on the step's stream (a pool stream does
    // not wait for the default one), else it reads the loss of an earlier step.
    c10::cuda::CUDAStreamGuard sg(g_->stream);
    g_->UseGraphOutputs(*e_);
    return e_->loss.defined() ? e_->loss.item<double>() : NAN;
  });
}

void TorchStepGpu::Run() {
  Guarded([&] {
    c10::cuda::CUDAStreamGuard sg(g_->stream);
    if (g_->graph) {
      g_->graph->replay();
    } else {
      e_->SetMath();
      e_->Step();
    }
  });
}

Verdict TorchStepGpu::Verify() {
  return Guarded([&]() -> Verdict {
    c10::cuda::CUDAStreamGuard sg(g_->stream);
    Verdict v = VerifyAgainstReference(*e_, Where::kGpu, nullptr);
    g_->UseGraphOutputs(*e_);
    if (!v.ok || !g_->graph) return v;
    // The graph against the eager step at the case's batch, from the same state; then a second
    // replay must change the weights again (replays keep training, not re-run a frozen step).
    const Engine::State s = e_->Save();
    e_->SetMath();
    e_->Step();
    const StepResult eager = e_->Result(s);
    e_->Restore(s);
    g_->UseGraphOutputs(*e_);
    g_->graph->replay();
    const StepResult graphed = e_->Result(s);
    std::string more;
    double moved = 1;
    if (e_->train()) {
      const Engine::State after_one = e_->Save();
      g_->graph->replay();
      const StepResult second = e_->Result(after_one);
      double norm = 0;
      for (float u : second.update) norm += double(u) * double(u);
      moved = std::sqrt(norm);
    }
    e_->Restore(s);
    g_->stream.synchronize();
    const StepTolerances tol = SameStepTolerance(e_->shape, e_->cfg);
    Verdict g = CompareSteps(graphed, eager, e_->train(), tol,
                             "graph replay vs eager at bs " + std::to_string(e_->shape.batch));
    if (!g.ok) return g;
    if (!(moved > 0)) {
      g.ok = false;
      g.detail += "; a second replay left the weights unchanged";
      return g;
    }
    // Report the check nearest its tolerance; both details.
    Verdict out = (g.error / g.tolerance > v.error / v.tolerance) ? g : v;
    out.detail = v.detail + "; " + g.detail + "; a second replay moves the weights";
    out.checked = v.checked + g.checked;
    out.of = out.checked;
    return out;
  });
}

void TorchStepGpu::MeasurePhases() {
  Guarded([&] {
    c10::cuda::CUDAStreamGuard sg(g_->stream);
    // The peak counts from here: after the warm-up (cuDNN's autotuning tries algorithms with
    // workspaces the step never uses again) and the verification, over the phase steps.
    g_->stream.synchronize();
    ResetPeakDeviceMemory();
    cudaStream_t st = g_->stream.stream();
    cudaEvent_t start = nullptr;
    std::vector<cudaEvent_t> events;
    DLB_CHECK(cudaEventCreate(&start));
    DLB_CHECK(cudaEventRecord(start, st));
    auto now = [&]() {
      cudaEvent_t ev = nullptr;
      DLB_CHECK(cudaEventCreate(&ev));
      events.push_back(ev);
      DLB_CHECK(cudaEventRecord(ev, st));
      DLB_CHECK(cudaEventSynchronize(ev));
      float ms = 0;
      DLB_CHECK(cudaEventElapsedTime(&ms, start, ev));
      return double(ms) / 1e3;
    };
    try {
      MeasureEnginePhases(*e_, 7, now, [] {});
      g_->UseGraphOutputs(*e_);
    } catch (...) {
      for (cudaEvent_t ev : events) cudaEventDestroy(ev);
      cudaEventDestroy(start);
      throw;
    }
    for (cudaEvent_t ev : events) cudaEventDestroy(ev);
    cudaEventDestroy(start);
  });
}

std::vector<std::pair<std::string, double>> TorchStepGpu::Counters() const {
  auto out = e_->phases.Counters(e_->shape.pass);
  out.push_back({"peak_mem_bytes", PeakDeviceMemory()});
  return out;
}

Cost TorchStepGpu::cost() const { return StepCost(*e_); }
double TorchStepGpu::tokens_per_step() const { return TokensPerStep(*e_); }

std::string TorchStepGpu::label() const {
  std::ostringstream o;
  if (e_->tf) {
    o << "LibTorch " << TorchVersion() << " CUDA, " << (g_->graph ? "CUDA graph" : "eager C++")
      << ", " << compat::AdamWName(true) << ", SDPA"
      << (e_->shape.amp                   ? ", bf16 autocast"
          : e_->cfg.dtype == DType::kTF32 ? ", TF32"
                                          : ", TF32 off")
      << "; " << TransformerFlopsNote(*e_)
      << "; peak_mem_bytes = caching allocator peak over eager steps after warm-up";
    return o.str();
  }
  o << "LibTorch " << TorchVersion() << " CUDA, " << (g_->graph ? "CUDA graph" : "eager C++")
    << ", " << (e_->train() ? compat::SgdName(true) : "inference mode")
    << (e_->cfg.algo == Algo::kHeuristic ? ", cudnn.benchmark off, " : ", cudnn.benchmark, ")
    << (e_->shape.amp                   ? "bf16 autocast"
        : e_->cfg.dtype == DType::kTF32 ? "TF32"
                                        : "TF32 off")
    << "; flops = (conv MACs off the padding + linear MACs) x2 (x3 for a training step); "
       "peak_mem_bytes = caching "
       "allocator peak over eager steps after warm-up";
  return o.str();
}

}  // namespace dlb::libtorch
