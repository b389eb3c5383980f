// The inference family's LibTorch step on the GPU, captured whole in a CUDA graph as PyTorch's
// CUDA-graph tutorial (advanced_source/cpp_cuda_graphs.rst) captures a step: static tensors (the
// weights, the cache, the tokens), warm-up on a side stream, capture on the op's own stream, one
// replay per Run(). And the large models' check: the same model eager in f32 on the GPU.
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/fill.h"
#include "kernels/cuda/device.h"
#include "kernels/torch/compat.h"
#include "kernels/torch/engine.h"
#include "kernels/torch/infer.h"
#include "kernels/torch/infer_model.h"
#include "kernels/torch/step.h"

namespace dlb::libtorch {

namespace {

StreamRef CurrentStream() {
  return reinterpret_cast<StreamRef>(c10::cuda::getCurrentCUDAStream().stream());
}

// The seeded values of one tensor (kernels/common/fill.h's SeededValues in dt's storage) written
// into dst (contiguous, rows x the rest) on the device, on the current stream: no host copy, which
// for Llama-3-8B would be 16 GB of bf16 made on the host.
void SeedInto(const torch::Tensor& dst, uint64_t tensor_seed, DType dt) {
  const int64_t rows = dst.size(0), cols = dst.numel() / rows;
  cuda::SeedDevice(dst.data_ptr(), {1, 1, rows, cols}, {rows * cols, rows * cols, cols, 1},
                   tensor_seed, dt, CurrentStream());
}

// The seeded state as the native GPU step holds it (kernels/cublas/infer.cpp): the matrices in
// matrices_dt (bf16, or e4m3 whose value is its byte times the storage scale), each times its
// weight scale; the embedding and the cache bf16. Into bf16 tensors (the op) they are seeded in
// place and scaled (by a power of two: exact); into f32 tensors (the check) seeded in their
// storage beside and widened.
InferFills DeviceFills(const InferShape& s, uint64_t seed, DType matrices_dt) {
  InferFills f;
  f.matrix = [seed, matrices_dt](const torch::Tensor& dst, int index) {
    const double scale = WeightScale(dst.size(1));
    if (dst.scalar_type() == torch::kBFloat16 && matrices_dt == DType::kBF16) {
      SeedInto(dst, TensorSeed(seed, index), DType::kBF16);
      dst.mul_(scale);
      return;
    }
    const bool fp8 = matrices_dt == DType::kFP8E4M3;
    const torch::Tensor stored =
        torch::empty(dst.sizes(), dst.options().dtype(fp8 ? torch::kUInt8 : torch::kBFloat16));
    SeedInto(stored, TensorSeed(seed, index), matrices_dt);
    if (fp8) {
      dst.copy_(compat::E4m3ToFloat(stored)).mul_(StorageScale(DType::kFP8E4M3) * scale);
    } else {
      dst.copy_(stored).mul_(scale);
    }
  };
  f.embedding = [seed](const torch::Tensor& dst) {
    if (dst.scalar_type() == torch::kBFloat16) {
      SeedInto(dst, TensorSeed(seed, kEmbedIndex), DType::kBF16);
      return;
    }
    const torch::Tensor stored = torch::empty(dst.sizes(), dst.options().dtype(torch::kBFloat16));
    SeedInto(stored, TensorSeed(seed, kEmbedIndex), DType::kBF16);
    dst.copy_(stored);
  };
  // The prefix streams layer 0 K, layer 0 V, layer 1 K, ..., each batch x kv_heads x ctx x
  // head_dim: one placement of (2 layers, batch x kv_heads, ctx, head_dim) into the cache's
  // capacity, as the native step seeds its own.
  f.cache = [s, seed](const torch::Tensor& cache) {
    const LlamaConfig& m = s.model;
    const int64_t cap = cache.size(3), per = s.batch * m.kv_heads * cap * m.head_dim;
    cuda::SeedDevice(cache.data_ptr(), {2 * m.layers, s.batch * m.kv_heads, s.ctx, m.head_dim},
                     {per, cap * m.head_dim, m.head_dim, 1}, TensorSeed(seed, kCacheIndex),
                     DType::kBF16, CurrentStream());
  };
  return f;
}

// `waiter` waits for the work enqueued on `on` so far.
void StreamWait(const c10::cuda::CUDAStream& waiter, const c10::cuda::CUDAStream& on) {
  at::cuda::CUDAEvent ev;
  ev.record(on);
  ev.block(waiter);
}

std::string GiB(double bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f GiB", bytes / double(1ull << 30));
  return s;
}

}  // namespace

struct TorchInferGpu::Gpu {
  explicit Gpu(c10::cuda::CUDAStream s) : stream(s) {}
  c10::cuda::CUDAStream stream;
  std::optional<at::cuda::CUDAGraph> graph;
};

Support TorchInferGpu::Supports(const InferShape& s, const RunConfig& cfg) {
  if (!s.Valid())
    return Support::No(
        "model sizes, batch and context must be positive, heads a multiple of kv_heads, head_dim "
        "even");
  if (cfg.dtype != DType::kBF16)
    return Support::No("the LibTorch GPU step runs bf16 weights; " + std::string(Name(cfg.dtype)) +
                       " weights are the native step's");
  return Support::Yes();
}

TorchInferGpu::TorchInferGpu(const InferShape& s, const RunConfig& cfg) : shape_(s) {
  RequireSupported(Supports(s, cfg));
  if (!torch::cuda::is_available()) throw Unsupported("LibTorch sees no CUDA device");
  try {
    Build(s, cfg);
  } catch (...) {
    // The next case (the native step's own allocations among them) gets the memory back.
    g_.reset();
    model_.reset();
    c10::cuda::CUDACachingAllocator::emptyCache();
    throw;
  }
}

void TorchInferGpu::Build(const InferShape& s, const RunConfig& cfg) {
  Guarded([&] {
    c10::cuda::CUDAGuard device_guard(0);
    g_ = std::make_unique<Gpu>(c10::cuda::getStreamFromPool());
    c10::cuda::CUDAStreamGuard stream_guard(g_->stream);
    torch::NoGradGuard no_grad;
    InferPlacement where;
    where.weights =
        torch::TensorOptions().dtype(torch::kBFloat16).device(torch::Device(torch::kCUDA, 0));
    where.cache_dtype = torch::kBFloat16;
    where.norm_dt = DType::kBF16;
    model_ = BuildInferModel(s, cfg.seed, where, DeviceFills(s, cfg.seed, DType::kBF16));
    // Warm-up on a side stream: cuBLAS's handles and workspaces, the attention kernels' first
    // launches and the allocator's first blocks happen here, outside the graph. A step writes the
    // same cache positions with the same values every time, so the warm-up changes nothing.
    {
      c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
      StreamWait(side, g_->stream);
      c10::cuda::CUDAStreamGuard side_guard(side);
      for (int i = 0; i < 2; ++i) model_->Step();
      StreamWait(g_->stream, side);
    }
    g_->stream.synchronize();
    g_->graph.emplace();
    g_->graph->capture_begin();
    model_->logits = model_->Step();
    g_->graph->capture_end();
    model_->logits.fill_(std::numeric_limits<float>::quiet_NaN());
    g_->stream.synchronize();
  });
}

TorchInferGpu::~TorchInferGpu() {
  if (!g_) return;
  try {
    g_->stream.synchronize();
    g_->graph.reset();
    model_.reset();
    c10::cuda::CUDACachingAllocator::emptyCache();  // the next case gets the memory back
  } catch (...) {
  }
}

void TorchInferGpu::Run() {
  Guarded([&] {
    c10::cuda::CUDAStreamGuard stream_guard(g_->stream);
    g_->graph->replay();
  });
}

HostTensor TorchInferGpu::Output() const {
  return Guarded([&] {
    // On the op's stream: the copy queues behind the replays.
    c10::cuda::CUDAStreamGuard stream_guard(g_->stream);
    const torch::Tensor host = model_->logits.to(torch::kCPU);
    const float* p = host.data_ptr<float>();
    return HostTensor{{shape_.batch, shape_.model.vocab}, std::vector<float>(p, p + host.numel())};
  });
}

StreamRef TorchInferGpu::stream() const { return reinterpret_cast<StreamRef>(g_->stream.stream()); }

Cost TorchInferGpu::cost() const {
  return {shape_.Flops(), shape_.Bytes(DType::kBF16, DType::kBF16),
          double(shape_.batch * shape_.NewTokens())};
}

double TorchInferGpu::KvBytes() const {
  return shape_.KvReadBytes(DType::kBF16) + shape_.KvWrittenBytes(DType::kBF16);
}

std::string TorchInferGpu::label() const {
  return "LibTorch " + TorchVersion() +
         " CUDA, the whole step in one CUDA graph (gpt-fast-shaped: fused qkv and gate/up "
         "Linears, f32 RMSNorm and rotary); " +
         compat::GqaAttentionName() + "; bf16 weights, static KV cache and residual";
}

// ---- the large models' check ----------------------------------------------------------------

double EagerF32Bytes(const InferShape& s) {
  const LlamaConfig& m = s.model;
  const double B = double(s.batch), n = double(s.NewTokens()), first = double(s.FirstPos()),
               keys = first + n, T = B * n;
  // The matrices, norms and LM head f32, the embedding f32.
  const double weights = 4.0 * (m.StepParams() + double(m.vocab) * double(m.dim));
  // The largest matrix seeded in its storage beside its f32 copy, widened once more for fp8.
  const double staging = 6.0 * double(std::max({m.vocab, 2 * m.ffn, m.QDim()})) * double(m.dim);
  const double cache = 2.0 * double(m.layers) * B * double(m.KvDim()) * first * 2.0;
  // A layer's keys and values widened; prefill's kv heads repeated to the query heads, and its
  // scores and probabilities (the math path's worst case).
  double attention = 2.0 * B * double(m.KvDim()) * keys * 4.0 * 2.0;
  if (n > 1)
    attention += 2.0 * B * double(m.QDim()) * keys * 4.0 + 2.0 * B * m.heads * n * keys * 4;
  const double activations =
      3.0 * 4.0 * T * double(2 * m.dim + m.QDim() + 2 * m.KvDim() + 3 * m.ffn);
  const double logits = 8.0 * B * double(m.vocab);
  return 1.05 * (weights + staging + cache + attention + activations + logits) + double(1ull << 30);
}

std::optional<std::vector<float>> EagerF32LogitsGpu(const InferShape& s, const RunConfig& cfg,
                                                    std::string* why) {
  if (cfg.dtype != DType::kBF16 && cfg.dtype != DType::kFP8E4M3) {
    *why =
        "the eager f32 step takes bf16 or fp8 e4m3 matrices, not " + std::string(Name(cfg.dtype));
    return std::nullopt;
  }
  if (!torch::cuda::is_available()) {
    *why = "LibTorch sees no CUDA device for the eager f32 step";
    return std::nullopt;
  }
  return Guarded([&]() -> std::optional<std::vector<float>> {
    c10::cuda::CUDAGuard device_guard(0);
    c10::cuda::CUDACachingAllocator::emptyCache();
    size_t free = 0, total = 0;
    cuda::MemInfo(&free, &total);
    const double need = EagerF32Bytes(s);
    if (need > double(free)) {
      *why = "the eager f32 step of " + s.model.name + " needs " + GiB(need) +
             " of device memory, " + GiB(double(free)) + " free beside the case";
      return std::nullopt;
    }
    const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool();
    std::vector<float> out;
    try {
      c10::cuda::CUDAStreamGuard stream_guard(stream);
      torch::NoGradGuard no_grad;
      // Full f32 products (PyTorch's default; a tf32 case of another family may have changed it).
      at::globalContext().setAllowTF32CuBLAS(false);
      InferPlacement where;
      where.weights =
          torch::TensorOptions().dtype(torch::kFloat).device(torch::Device(torch::kCUDA, 0));
      where.cache_dtype = torch::kBFloat16;
      where.norm_dt = DType::kBF16;
      where.append_in_place = false;
      std::unique_ptr<InferModel> model =
          BuildInferModel(s, cfg.seed, where, DeviceFills(s, cfg.seed, cfg.dtype));
      const torch::Tensor logits = model->Step().to(torch::kCPU);
      const float* p = logits.data_ptr<float>();
      out.assign(p, p + logits.numel());
      model.reset();
      stream.synchronize();
    } catch (const Unsupported& e) {
      c10::cuda::CUDACachingAllocator::emptyCache();
      *why = e.what();
      return std::nullopt;
    } catch (...) {
      c10::cuda::CUDACachingAllocator::emptyCache();
      throw;
    }
    // Before the case's timing: its memory back to the device.
    c10::cuda::CUDACachingAllocator::emptyCache();
    return out;
  });
}

}  // namespace dlb::libtorch
