// What differs between the LibTorch versions dlbench builds against (Debian's 1.13, CPU only, and
// pip torch 2.11 with CUDA): each difference is one function here, used by the steps.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <string>
#include <vector>

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

inline const char* SgdName(bool cuda) {
  return (kTorch2 && cuda) ? "SGD fused" : "SGD foreach";
}

inline std::string Version() { return TORCH_VERSION; }

}  // namespace dlb::libtorch::compat
