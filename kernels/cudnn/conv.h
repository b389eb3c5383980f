// cuDNN 9 convolutions (forward, backward-data, backward-filter) through the backend graph API:
// one operation graph per op, engine configurations from cuDNN's heuristics, and with
// RunConfig::algo search every candidate engine configuration (heuristics modes A and B,
// the fallback list, and every engine of the graph with default knobs) timed once in the
// constructor; "heuristic" takes cuDNN's first usable configuration; "cache" rebuilds the engine
// and knobs recorded for the case in the autotune cache (kernels/common/autotune_cache.h), or
// searches and records the winner.
//   dtypes: f32 (fp32 math: tensor-core engines, which run TF32, are excluded; FFT and Winograd
//   engines stay, as in PyTorch, and are verified like the rest), tf32 (fp32 storage, tensor-core
//   engines allowed), f16 and bf16 (fp32 accumulation: engines with reduced-precision reduction are
//   excluded). Layouts: cfg.layout NCHW (filter KCRS) or NHWC (filter KRSC); inputs and outputs
//   keep the logical order of shapes.h at the API. Workspace: up to min(1 GiB, half the free
//   memory), stated in the label.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/shapes.h"

namespace dlb::cudnn {

struct ConvState;  // descriptors, buffers and the chosen plan (kernels/cudnn/conv.cpp)

template <ConvPass kPass>
class CudnnConv {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "cudnn";

  // No for an invalid shape, no CUDA device, or no cuDNN engine for the
  // combination (asked once per combination through the process's shared handle, then cached).
  static Support Supports(const ConvShape& shape, const RunConfig& cfg);
  // Picks an engine configuration (heuristic: cuDNN's first usable one; search: the fastest of
  // all usable candidates).
  CudnnConv(const ConvShape& shape, const RunConfig& cfg);
  ~CudnnConv();
  CudnnConv(CudnnConv&&) noexcept;
  CudnnConv& operator=(CudnnConv&&) noexcept;
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  void Run();
  HostTensor Output() const;
  // Gathered on the device.
  HostTensor OutputAt(const std::vector<int64_t>& flat) const;
  Cost cost() const;
  std::string label() const;
  // setup_ms: the operation graph, the plans and the search, or the cached winner's rebuild.
  std::vector<std::pair<std::string, double>> Counters() const;
  StreamRef stream() const;

 private:
  std::unique_ptr<ConvState> state_;
};

extern template class CudnnConv<ConvPass::kFwd>;
extern template class CudnnConv<ConvPass::kBwdData>;
extern template class CudnnConv<ConvPass::kBwdFilter>;

}  // namespace dlb::cudnn

namespace dlb {
using CudnnConvFwd = cudnn::CudnnConv<ConvPass::kFwd>;
using CudnnConvBwdData = cudnn::CudnnConv<ConvPass::kBwdData>;
using CudnnConvBwdFilter = cudnn::CudnnConv<ConvPass::kBwdFilter>;
}  // namespace dlb
