#include "kernels/torch/loader_fed_step.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "kernels/cuda/buffer.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/handles.h"
#include "kernels/torch/step.h"
#ifdef DLBENCH_HAVE_NVJPEG
#include "kernels/data/nvjpeg_loader.h"
#endif

namespace dlb::libtorch {

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Steps of the step alone that WarmUp times: enough to average out launch jitter.
constexpr int kAloneSteps = 20;

}  // namespace

struct LoaderFedStepGpu::Impl {
  LoaderFedShape shape;
  RunConfig cfg;
  std::unique_ptr<TorchStepGpu> step;
  std::unique_ptr<data::TurboJpegLoader> cpu;
#ifdef DLBENCH_HAVE_NVJPEG
  std::unique_ptr<data::NvJpegLoader> gpu;
#endif
  cuda::PinnedBuffer<int64_t> labels;
  cuda::Event copied;  // after the last batch's copies: the host buffers may be reused then
  bool pending = false;
  const void* last_src = nullptr;  // where the last batch was copied from, and how
  cudaMemcpyKind last_kind = cudaMemcpyHostToDevice;
  double alone_s = 0;  // seconds per step on the static batch
  double fed_total_s = 0;
  int64_t fed_steps = 0, fed_images = 0, short_batches = 0;

  // The next batch into the step's static input, on the step's stream. Returns the images.
  int64_t Feed() {
    const StreamRef s = step->stream();
    const size_t sample = data::SampleBytes(shape.loader.side, step->images_dtype());
    if (pending) DLB_CHECK(cudaEventSynchronize(copied.get()));
    const void* src = nullptr;
    const std::vector<int>* batch_labels = nullptr;
    int64_t n = 0;
    cudaMemcpyKind kind = cudaMemcpyHostToDevice;
#ifdef DLBENCH_HAVE_NVJPEG
    if (gpu) {
      gpu->Run();  // decoded and augmented on the GPU; Run() waited for its stream
      const auto& b = gpu->batch();
      src = b.data;
      batch_labels = &b.labels;
      n = b.size;
      kind = cudaMemcpyDeviceToDevice;
    }
#endif
    if (cpu) {
      const data::Batch& b = cpu->pipeline().Next();
      src = b.data;
      batch_labels = &b.labels;
      n = b.size;
    }
    for (int64_t k = 0; k < n; ++k)
      labels.get()[k] = (*batch_labels)[size_t(k)] % shape.step.classes;
    // A batch short of skipped images keeps the previous images and labels in its last rows.
    DLB_CHECK(cudaMemcpyAsync(step->images(), src, size_t(n) * sample, kind,
                              reinterpret_cast<cudaStream_t>(s)));
    DLB_CHECK(cudaMemcpyAsync(step->labels(), labels.get(), size_t(n) * sizeof(int64_t),
                              cudaMemcpyHostToDevice, reinterpret_cast<cudaStream_t>(s)));
    DLB_CHECK(cudaEventRecord(copied.get(), reinterpret_cast<cudaStream_t>(s)));
    pending = true;
    last_src = src;
    last_kind = kind;
    if (n < shape.step.batch) ++short_batches;
    return n;
  }
};

Support LoaderFedStepGpu::Supports(const LoaderFedShape& s, const RunConfig& cfg) {
  if (s.step.image <= 0) return Support::No("the MLP has no images to load");
  if (s.loader.side != s.step.image)
    return Support::No("the loader's images are not the model's size");
#ifndef DLBENCH_HAVE_NVJPEG
  if (s.nvjpeg) return Support::No("built without nvJPEG (the CUDA toolkit has no nvjpeg.h)");
#endif
  return TorchStepGpu::Supports(s.step, cfg);
}

LoaderFedStepGpu::LoaderFedStepGpu(const LoaderFedShape& s, const RunConfig& cfg)
    : impl_(std::make_unique<Impl>()) {
  RequireSupported(Supports(s, cfg));
  Impl& m = *impl_;
  m.shape = s;
  m.cfg = cfg;
  m.step = std::make_unique<TorchStepGpu>(s.step, cfg);
  // The loader produces what the step's input holds: its dtype, and the case's layout.
  RunConfig lc = cfg;
  lc.dtype = m.step->images_dtype();
  data::LoaderShape ls = s.loader;
  ls.batch = int(s.step.batch);
  ls.to_device = true;  // a pinned ring: the copies into the step's input run at full speed
  ls.copy = false;      // this op copies, into the step's own input
#ifdef DLBENCH_HAVE_NVJPEG
  if (s.nvjpeg) m.gpu = std::make_unique<data::NvJpegLoader>(ls, lc);
#endif
  if (!s.nvjpeg) m.cpu = std::make_unique<data::TurboJpegLoader>(ls, lc);
  m.labels = cuda::PinnedBuffer<int64_t>(size_t(s.step.batch));
  m.copied = cuda::MakeEvent();
  if (data::SampleBytes(s.loader.side, lc.dtype) * size_t(s.step.batch) != m.step->image_bytes())
    throw Error("the loader's batch and the step's input differ in size");
}

LoaderFedStepGpu::~LoaderFedStepGpu() = default;

void LoaderFedStepGpu::Start() {
#ifdef DLBENCH_HAVE_NVJPEG
  if (impl_->gpu) impl_->gpu->Start();
#endif
  if (impl_->cpu) impl_->cpu->Start();
}

void LoaderFedStepGpu::Stop() {
  Impl& m = *impl_;
  if (m.pending) DLB_CHECK(cudaEventSynchronize(m.copied.get()));
  m.pending = false;
#ifdef DLBENCH_HAVE_NVJPEG
  if (m.gpu) m.gpu->Stop();
#endif
  if (m.cpu) m.cpu->Stop();
}

void LoaderFedStepGpu::WarmUp() {
  Impl& m = *impl_;
  const cudaStream_t s = reinterpret_cast<cudaStream_t>(m.step->stream());
  // The step alone on its current batch (the loader's ring fills meanwhile).
  for (int i = 0; i < 3; ++i) m.step->Run();
  DLB_CHECK(cudaStreamSynchronize(s));
  const double t0 = Now();
  for (int i = 0; i < kAloneSteps; ++i) m.step->Run();
  DLB_CHECK(cudaStreamSynchronize(s));
  m.alone_s = (Now() - t0) / kAloneSteps;
  // Then the pipeline: ring filled and drained, so every timed batch is made while timed.
#ifdef DLBENCH_HAVE_NVJPEG
  if (m.gpu) m.gpu->WarmUp();
#endif
  if (m.cpu) m.cpu->WarmUp();
  for (int i = 0; i < 2; ++i) {
    m.Feed();
    m.step->Run();
  }
  DLB_CHECK(cudaStreamSynchronize(s));
  m.fed_total_s = 0;
  m.fed_steps = m.fed_images = m.short_batches = 0;
}

void LoaderFedStepGpu::Run() {
  Impl& m = *impl_;
  const double t0 = Now();
  m.fed_images += m.Feed();
  m.step->Run();
  // The harness times this window by the host's clock: return once the step has run, so each
  // iteration's time is a whole step's (the pipeline's workers go on meanwhile). Without the wait a
  // short measurement counted only the enqueueing of its last steps.
  DLB_CHECK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(m.step->stream())));
  m.fed_total_s += Now() - t0;
  ++m.fed_steps;
}

Verdict LoaderFedStepGpu::Verify() {
  Impl& m = *impl_;
  // The step on its seeded batch against the float64 reference, and the loader's pixels against
  // theirs: both parts are what the timed loop runs.
  Verdict step = m.step->Verify();
  if (!step.ok) return step;
#ifdef DLBENCH_HAVE_NVJPEG
  Verdict load = m.gpu ? m.gpu->Verify() : m.cpu->Verify();
#else
  Verdict load = m.cpu->Verify();
#endif
  if (!load.ok) return load;
  // And the copy: one fed step, whose input must hold the batch and whose loss must be finite.
  const int64_t n = m.Feed();
  const size_t sample = data::SampleBytes(m.shape.loader.side, m.step->images_dtype());
  std::vector<uint8_t> got(sample), want(sample);
  DLB_CHECK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(m.step->stream())));
  DLB_CHECK(cudaMemcpy(got.data(), m.step->images(), sample, cudaMemcpyDeviceToHost));
  DLB_CHECK(cudaMemcpy(
      want.data(), m.last_src, sample,
      m.last_kind == cudaMemcpyDeviceToDevice ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost));
  m.step->Run();
  const double loss = m.step->last_loss();
  Verdict v = step;
  if (n <= 0 || got != want || !std::isfinite(loss)) {
    v.ok = false;
    v.disposition = Disposition::kNotVerified;
    v.detail = n <= 0        ? "the first loaded batch has no image"
               : got != want ? "the step's input is not the loaded batch"
                             : "a step on a loaded batch has a loss of " + std::to_string(loss);
    return v;
  }
  v.detail +=
      "; loader: " + load.detail + "; a step on a loaded batch: loss " + std::to_string(loss);
  return v;
}

Cost LoaderFedStepGpu::cost() const { return impl_->step->cost(); }

std::string LoaderFedStepGpu::label() const {
  const Impl& m = *impl_;
#ifdef DLBENCH_HAVE_NVJPEG
  const std::string loader = m.gpu ? m.gpu->label() : m.cpu->label();
#else
  const std::string loader = m.cpu->label();
#endif
  return m.step->label() + "; fed by " + loader;
}

std::vector<std::pair<std::string, double>> LoaderFedStepGpu::Counters() const {
  const Impl& m = *impl_;
  std::vector<std::pair<std::string, double>> c = m.step->Counters();
  const double batch = double(m.shape.step.batch);
  const double alone = m.alone_s > 0 ? batch / m.alone_s : 0;
  const double fed = m.fed_total_s > 0 ? double(m.fed_images) / m.fed_total_s : 0;
  c.emplace_back("alone_items_per_s", alone);
  if (alone > 0 && fed > 0) c.emplace_back("starvation", std::max(0.0, 1.0 - fed / alone));
#ifdef DLBENCH_HAVE_NVJPEG
  const auto loader = m.gpu ? m.gpu->Counters() : m.cpu->Counters();
#else
  const auto loader = m.cpu->Counters();
#endif
  for (const auto& [k, v] : loader)
    if (k.rfind("latency_", 0) != 0) c.emplace_back(k, v);
  return c;
}

StreamRef LoaderFedStepGpu::stream() const { return impl_->step->stream(); }

}  // namespace dlb::libtorch
