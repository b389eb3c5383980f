// What differs between the LibTorch versions dlbench builds against (Debian's 1.13, CPU only, and
// pip torch 2.11 with CUDA): each difference is one function here, used by the steps.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common/error.h"

namespace dlb::libtorch::compat {

inline constexpr bool kTorch2 = TORCH_VERSION_MAJOR >= 2;

// Autocast to bf16 on one device type for the scope's lifetime (nothing when !on). The weight
// cast cache stays off: a CUDA graph must not capture casts cached outside it, and each step
// casts every weight once anyway.
class Autocast {
 public:
  Autocast(bool on, c10::DeviceType device) : on_(on), device_(device) {
    if (!on_) return;
    cache_was_ = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
#if TORCH_VERSION_MAJOR >= 2
    was_ = at::autocast::is_autocast_enabled(device_);
    dtype_was_ = at::autocast::get_autocast_dtype(device_);
    at::autocast::set_autocast_dtype(device_, at::kBFloat16);
    at::autocast::set_autocast_enabled(device_, true);
#else
    if (device_ == c10::DeviceType::CUDA) {
      was_ = at::autocast::is_enabled();
      dtype_was_ = at::autocast::get_autocast_gpu_dtype();
      at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
      at::autocast::set_enabled(true);
    } else {
      was_ = at::autocast::is_cpu_enabled();
      dtype_was_ = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      at::autocast::set_cpu_enabled(true);
    }
#endif
    at::autocast::increment_nesting();
  }
  ~Autocast() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR >= 2
    at::autocast::set_autocast_enabled(device_, was_);
    at::autocast::set_autocast_dtype(device_, dtype_was_);
#else
    if (device_ == c10::DeviceType::CUDA) {
      at::autocast::set_enabled(was_);
      at::autocast::set_autocast_gpu_dtype(dtype_was_);
    } else {
      at::autocast::set_cpu_enabled(was_);
      at::autocast::set_autocast_cpu_dtype(dtype_was_);
    }
#endif
    at::autocast::set_autocast_cache_enabled(cache_was_);
  }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool on_;
  c10::DeviceType device_;
  bool was_ = false, cache_was_ = true;
  at::ScalarType dtype_was_ = at::kBFloat16;
};

// SGD with momentum as torch.optim.SGD (buf = momentum * buf + grad; p -= lr * buf), buffers
// zero-initialised so the first step's buffer is the gradient. CUDA on LibTorch 2: the fused
// kernel (SGD(fused=True)); otherwise the multi-tensor foreach kernels (SGD(foreach=True)).
inline void SgdStep(const std::vector<torch::Tensor>& params,
                    const std::vector<torch::Tensor>& grads, const std::vector<torch::Tensor>& bufs,
                    double lr, double momentum) {
  torch::NoGradGuard no_grad;
#if TORCH_VERSION_MAJOR >= 2
  if (!params.empty() && params.front().is_cuda()) {
    at::_fused_sgd_(params, grads, bufs, /*weight_decay=*/0.0, momentum, lr, /*dampening=*/0.0,
                    /*nesterov=*/false, /*maximize=*/false, /*is_first_step=*/false);
    return;
  }
#endif
  at::_foreach_mul_(bufs, momentum);
  at::_foreach_add_(bufs, grads);
  at::_foreach_add_(params, bufs, -lr);
}

inline const char* SgdName(bool cuda) { return (kTorch2 && cuda) ? "SGD fused" : "SGD foreach"; }

// Scaled-dot-product attention over q, k, v of batch x heads x seq x head_dim, scale
// 1/sqrt(head_dim), causal (a query sees itself and earlier keys) or not. LibTorch 2: the fused
// kernel (at::scaled_dot_product_attention: flash or memory-efficient on CUDA, the math path for
// float64); 1.13 has none public: softmax(QK^T / sqrt(d)) V written out.
inline torch::Tensor Attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, bool causal) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, causal);
#else
  const int64_t s = q.size(-2);
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(q.size(-1)));
  if (causal) {
    const torch::Tensor future =
        torch::ones({s, s}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  }
  return torch::matmul(torch::softmax(scores, -1), v);
#endif
}

// Grouped-query attention over q (batch x heads x seq x head_dim) and k, v (batch x kv_heads x keys
// x head_dim), query head h reading kv head h / (heads / kv_heads), scale 1/sqrt(head_dim), causal
// or not (causal: seq == keys). LibTorch 2.5+: at::scaled_dot_product_attention with enable_gqa,
// as gpt-fast and the PyTorch peer call it; 2.0-2.4: the kv heads repeated to the query heads
// first (gpt-fast's repeat_interleave), then the fused kernel; 1.13: repeated, then Attention's
// written-out softmax.
inline torch::Tensor GqaAttention(const torch::Tensor& q, const torch::Tensor& k,
                                  const torch::Tensor& v, bool causal) {
  const int64_t group = q.size(1) / k.size(1);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, causal,
                                          /*scale=*/{}, /*enable_gqa=*/group > 1);
#else
  if (group == 1) return Attention(q, k, v, causal);
  return Attention(q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), causal);
#endif
}

// What GqaAttention runs on this LibTorch, for labels.
inline const char* GqaAttentionName() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  return "SDPA with enable_gqa";
#elif TORCH_VERSION_MAJOR >= 2
  return "SDPA over kv heads repeated to the query heads";
#else
  return "softmax(QK^T / sqrt(d)) V written out over kv heads repeated to the query heads (no SDPA "
         "before LibTorch 2)";
#endif
}

// e4m3 (OCP e4m3fn) bytes, one a value, as f32 values. LibTorch 2.1+: its float8_e4m3fn dtype
// over the same bytes; before it, no float8 type: dlb::Unsupported.
inline torch::Tensor E4m3ToFloat([[maybe_unused]] const torch::Tensor& bytes) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  return bytes.view(at::kFloat8_e4m3fn).to(torch::kFloat);
#else
  throw Unsupported("LibTorch " TORCH_VERSION " has no float8 type (2.1+ has)");
#endif
}

// AdamW's state for one group of parameters (torch.optim.AdamW: exp_avg, exp_avg_sq, and a step
// count per parameter, a float32 scalar tensor on the parameter's device as the fused and
// capturable optimizers keep it: a CUDA graph replay then reads and advances the real count).
struct AdamWGroup {
  std::vector<torch::Tensor> params, exp_avg, exp_avg_sq, steps;
  double weight_decay = 0;
};

// One AdamW step over a group (torch.optim.AdamW, amsgrad off): step += 1; p *= 1 - lr * wd;
// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; p -= lr / (1 - b1^step) * m /
// (sqrt(v) / sqrt(1 - b2^step) + eps). CUDA on LibTorch 2: the fused kernel
// (AdamW(fused=True) calls at::_fused_adamw_ after the same foreach increment of the steps);
// otherwise the multi-tensor foreach ops (AdamW(foreach=True)), the count read on the host.
inline void AdamWStep(AdamWGroup& g, const std::vector<torch::Tensor>& grads, double lr,
                      double beta1, double beta2, double eps) {
  torch::NoGradGuard no_grad;
  if (g.params.empty()) return;
  at::_foreach_add_(g.steps, 1.0);
#if TORCH_VERSION_MAJOR >= 2
  if (g.params.front().is_cuda()) {
    at::_fused_adamw_(g.params, grads, g.exp_avg, g.exp_avg_sq, /*max_exp_avg_sqs=*/{}, g.steps, lr,
                      beta1, beta2, g.weight_decay, eps, /*amsgrad=*/false,
                      /*maximize=*/false);
    return;
  }
#endif
  const double step = g.steps.front().item<double>();
  const double bc1 = 1 - std::pow(beta1, step), bc2 = 1 - std::pow(beta2, step);
  if (g.weight_decay != 0) at::_foreach_mul_(g.params, 1 - lr * g.weight_decay);
  at::_foreach_mul_(g.exp_avg, beta1);
  at::_foreach_add_(g.exp_avg, grads, 1 - beta1);
  at::_foreach_mul_(g.exp_avg_sq, beta2);
  at::_foreach_addcmul_(g.exp_avg_sq, grads, grads, 1 - beta2);
  std::vector<torch::Tensor> denom = at::_foreach_sqrt(g.exp_avg_sq);
  at::_foreach_div_(denom, std::sqrt(bc2));
  at::_foreach_add_(denom, eps);
  at::_foreach_addcdiv_(g.params, g.exp_avg, denom, -lr / bc1);
}

inline const char* AdamWName(bool cuda) {
  return (kTorch2 && cuda) ? "AdamW fused" : "AdamW foreach";
}

inline std::string Version() { return TORCH_VERSION; }

}  // namespace dlb::libtorch::compat
