// oneDNN convolutions on the CPU: forward, backward-data, backward-weights, f32 and bf16.
// oneDNN picks every tensor's layout (format_tag::any), so cfg.layout is ignored and the label
// says which layouts it chose. cfg.algo "search" also asks for channels-last and 16-channel
// blocked activations and keeps the fastest implementation offered; "cache" rebuilds the winner
// recorded for the case in the autotune cache (kernels/common/autotune_cache.h), or searches and
// records it. Seeded inputs are reordered into those layouts in the constructor, never in Run();
// Output() reorders back to the logical layout of shapes.h. Compiles against the oneDNN v2 (2.6)
// and v3 (3.x) APIs; only primitive-descriptor creation differs.
#pragma once

#include <dnnl.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/shapes.h"

namespace dlb::onednn {

template <ConvPass kPass>
class OneDnnConv {
 public:
  static constexpr bool kGpu = false;
  static constexpr const char* kBackend = "onednn";

  // No for an invalid shape, f16/tf32 (not offered: oneDNN's f16 convolutions need AVX512-FP16
  // and tf32 is a GPU math mode), bf16 without AVX512-BF16/AMX, or no oneDNN implementation.
  static Support Supports(const ConvShape& shape, const RunConfig& cfg);
  OneDnnConv(const ConvShape& shape, const RunConfig& cfg);

  void Run();
  HostTensor Output() const;
  // Read after one reorder to plain f32.
  HostTensor OutputAt(const std::vector<int64_t>& flat) const;
  Cost cost() const;
  std::string label() const { return label_; }
  // setup_ms: choosing and building the primitive (the search, or the cached winner's rebuild).
  std::vector<std::pair<std::string, double>> Counters() const;

 private:
  std::pair<dnnl::memory, std::vector<int64_t>> PlainOutput() const;
  ConvShape shape_;
  RunConfig cfg_;
  dnnl::primitive prim_;
  std::unordered_map<int, dnnl::memory> args_;
  dnnl::memory out_;  // in the layout oneDNN chose
  std::string label_;
  double setup_ms_ = 0;
  bool fewer_ops_ = false;  // a Winograd implementation: fewer multiplications than counted
};

extern template class OneDnnConv<ConvPass::kFwd>;
extern template class OneDnnConv<ConvPass::kBwdData>;
extern template class OneDnnConv<ConvPass::kBwdFilter>;

}  // namespace dlb::onednn

namespace dlb {
using OneDnnConvFwd = onednn::OneDnnConv<ConvPass::kFwd>;
using OneDnnConvBwdData = onednn::OneDnnConv<ConvPass::kBwdData>;
using OneDnnConvBwdWeights = onednn::OneDnnConv<ConvPass::kBwdFilter>;
}  // namespace dlb
