// The cuDNN backend operation graphs of fused scaled-dot-product attention, forward and backward:
// what kernels/cudnn/attn.cpp plans and runs. Internal to kernels/cudnn.
//
// The graphs are the ones cudnn-frontend's composite SDPA nodes lower to (cuDNN's fused flash
// attention engines match this pattern, not an arbitrary equivalent one), with the attributes
// PyTorch's cuDNN SDPA backend sets: fp32 intermediates and math, no dropout, no bias, the scale
// passed by value, causal masking as a top-left diagonal mask, softmax statistics (log-sum-exp,
// float, batch x heads x seq x 1) written by the forward and read by the backward.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <vector>

#include "kernels/common/dtype.h"
#include "kernels/common/op.h"
#include "kernels/common/shapes.h"
#include "kernels/cudnn/check.h"

namespace dlb::cudnn::attn {

// Unique ids of the tensors a variant pack names. Virtual tensors take ids from kFirstVirtual on.
enum Uid : int64_t {
  kUidQ = 1,
  kUidK,
  kUidV,
  kUidO,
  kUidStats,
  kUidDO,
  kUidDQ,
  kUidDK,
  kUidDV,
  kUidScale,       // by value: 1/sqrt(head_dim)
  kUidOne,         // by value: 1.0 (the backward's dropout scale, which is 1 without dropout)
  kUidNegInf,      // by value: what masked scores become
  kUidSoftmaxSum,  // backward scratch: rowsum(dO * O), float B x H x S x 1
  kUidDQAccum,     // backward scratch: dQ accumulated in float, B x H x S x D
  kUidSeqQ,        // the padding-mask workaround's sequence lengths, int32 B x 1 x 1 x 1
  kUidSeqKv,
  kFirstVirtual = 1000,
};

using Dims = std::array<int64_t, 4>;

// The storage of every tensor: (B, H, S, D) contiguous, PyTorch's default for q/k/v.
Dims Contiguous(const Dims& d);

// Whether cuDNN's fused attention engines take the shape in `dt` on the current device (the
// frontend's support surface): f16 or bf16, head_dim a multiple of 8 and at most 256 on Hopper
// (128 on Ampere, Ada and Blackwell), sm_80 or newer. Asks the device only once the shape and
// dtype pass, so that a machine without a GPU hears the shape's reason first.
Support FusedSupport(const AttnShape& s, DType dt);

// Version-dependent parts of the lowering, decided by the loaded cuDNN (cudnnGetVersion), as the
// frontend does.
struct Lowering {
  // cuDNN <= 9.15 computes a wrong backward when s_kv is not a multiple of 128 unless a padding
  // mask (with every sequence at full length) is in the graph; the frontend adds one then.
  bool padding_workaround = false;
  // 9.0 <= cuDNN < 9.10 wants the padding value put back after the statistics are subtracted.
  bool repad_after_stats = false;
  // Before 9.6 the dQ accumulator must be zeroed before every run.
  bool zero_dq_accum = false;
  // Masked scores: -inf from 9.10, the lowest float before (older engines prefer it).
  float neg_inf = 0;
};
Lowering LoweringFor(const AttnShape& s, AttnPass pass, size_t cudnn_version);

// An operation graph and every descriptor it refers to.
struct OpGraph {
  std::vector<Descriptor> keep;
  Descriptor graph;
};

// Where Q, K, V and O live: strides of the logical (B, H, S, D) of Q and O and (B, G, S, D) of K
// and V. Contiguous (B, H, S, D) unless a caller's tensors are laid out otherwise (the inference
// step's rows of tokens x heads x head_dim, its KV cache's positions up to a capacity).
struct Storage {
  Dims q, kv;
};
Storage ContiguousStorage(const AttnShape& s);

// Forward: Q, K, V -> O, Stats; without stats, Q, K, V -> O (what PyTorch's cuDNN backend builds
// where no backward will read the statistics: inference).
OpGraph BuildForward(cudnnHandle_t handle, const AttnShape& s, DType dt, const Lowering& low);
OpGraph BuildForward(cudnnHandle_t handle, const AttnShape& s, DType dt, const Lowering& low,
                     const Storage& storage, bool stats);
// Forward as cuDNN 9.13.1's single SDPA operation (what cudnn-frontend builds where the graph needs
// no mask: its UNIFIED implementation), Q, K, V -> O[, Stats]; no causal mask. Throws Unsupported
// where the cuDNN built against predates it (UnifiedForwardBuilt() false).
bool UnifiedForwardBuilt();
OpGraph BuildUnifiedForward(cudnnHandle_t handle, const AttnShape& s, DType dt,
                            const Storage& storage, bool stats);

// Backward: Q, K, V, O, dO, Stats -> dQ, dK, dV (with the SoftmaxSum and DQAccum scratch tensors,
// and SeqQ/SeqKv when low.padding_workaround).
OpGraph BuildBackward(cudnnHandle_t handle, const AttnShape& s, DType dt, const Lowering& low);

}  // namespace dlb::cudnn::attn
