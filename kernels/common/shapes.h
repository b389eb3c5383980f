// Problem shapes shared by ops, references and the harness.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace dlb {

// C[m x n] = op(A) * op(B), all row-major. A is stored m x k (k x m when ta), B is stored
// k x n (n x k when tb). Inputs are SeededValues(TensorSeed(seed, 0|1), ...) in storage order.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  double Flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

// Of one spatial axis of a convolution: the (output position o, filter tap t) pairs whose input
// position o * stride - pad_before + t * dilation lies inside the input [0, in), for o < out and
// t < taps; the rest fall on the zero padding. Closed form, one term per tap: tap t reaches the
// input from the outputs o in [ceil((pad_before - t d) / stride), floor((in - 1 + pad_before - t d)
// / stride)] within [0, out). The padding after the input enters through `out` alone, so an
// asymmetric padding is counted too.
inline int64_t ValidTapPairs(int64_t in, int64_t out, int64_t taps, int64_t stride,
                             int64_t pad_before, int64_t dilation) {
  auto floor_div = [](int64_t a, int64_t b) {
    return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
  };
  int64_t pairs = 0;
  for (int64_t t = 0; t < taps; ++t) {
    const int64_t offset = t * dilation - pad_before;  // input position of output 0
    const int64_t lo = std::max<int64_t>(0, -floor_div(offset, stride));  // ceil(-offset / stride)
    const int64_t hi = std::min<int64_t>(out - 1, floor_div(in - 1 - offset, stride));
    if (hi >= lo) pairs += hi - lo + 1;
  }
  return pairs;
}

// 2-D convolution, cross-correlation as every framework computes it.
// Logical layouts, whatever the op stores: x NCHW, w K x (C/groups) x R x S, y NKPQ.
// Seeded tensors: x = TensorSeed(seed, 0), w = 1, dy = 2, each in logical order.
struct ConvShape {
  int64_t n = 1, c = 0, h = 0, w = 0;  // input
  int64_t k = 0, r = 0, s = 0;         // filters
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t groups = 1;
  int64_t P() const { return (h + 2 * pad_h - dil_h * (r - 1) - 1) / stride_h + 1; }
  int64_t Q() const { return (w + 2 * pad_w - dil_w * (s - 1) - 1) / stride_w + 1; }
  // The work: multiply-adds x 2 that touch the input, the taps on the zero padding left out
  // (every library skips them; a 4x4 map with a 3x3 filter and padding 1 has 100 of its 144
  // output-tap pairs inside). What pct_peak, the roofline and shares of a peak divide. The same for
  // the three passes: forward y[o] += x[i] w[t], backward-data dx[i] += dy[o] w[t] and
  // backward-filter dw[t] += x[i] dy[o] each do one multiply-add per (o, t) pair with i = o x
  // stride - pad + t x dilation inside the input, at any stride (backward-data of a strided
  // convolution reaches each dx from the taps that land on it, the same pairs seen from the input).
  double Flops() const {
    return 2.0 * double(n) * double(k) * double(c / groups) *
           double(ValidTapPairs(h, P(), r, stride_h, pad_h, dil_h)) *
           double(ValidTapPairs(w, Q(), s, stride_w, pad_w, dil_w));
  }
  // The conventional count: every tap at every output position, padding included (2 N K P Q C R
  // S / groups), as cuDNN's, PyTorch's and benchdnn's rates count; for comparing rates across
  // tools.
  double ConventionalFlops() const {
    return 2.0 * double(n) * double(k) * double(P()) * double(Q()) * double(c / groups) *
           double(r) * double(s);
  }
  // Positive sizes, divisible channels, a non-empty output.
  bool Valid() const {
    return n > 0 && c > 0 && h > 0 && w > 0 && k > 0 && r > 0 && s > 0 && stride_h > 0 &&
           stride_w > 0 && pad_h >= 0 && pad_w >= 0 && dil_h > 0 && dil_w > 0 && groups > 0 &&
           c % groups == 0 && k % groups == 0 && P() > 0 && Q() > 0;
  }
};

enum class AttnPass { kFwd, kBwd };
inline const char* Name(AttnPass p) { return p == AttnPass::kFwd ? "fwd" : "bwd"; }

// Scaled-dot-product attention, O = softmax(scale * Q K^T [+ causal mask]) V, per (batch, head).
// Logical layouts, whatever the op stores: Q, O, dO and dQ are batch x heads x seq x head_dim;
// K, V, dK and dV batch x kv_heads x seq x head_dim (grouped-query attention: query head h reads
// K/V head h / (heads / kv_heads)). Causal: query i sees keys 0..i. scale = 1/sqrt(head_dim).
// Seeded tensors, each in logical order: Q = TensorSeed(seed, 0), K = 1, V = 2, dO = 3.
// Outputs: the forward pass writes O; the backward pass (given Q, K, V, O, dO and the forward's
// softmax statistics) writes dQ, dK and dV, read as one flat array in that order.
struct AttnShape {
  int64_t batch = 1, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = false;
  AttnPass pass = AttnPass::kFwd;  // which pass one Run() is
  // Keys each query sees where they are not the queries' own tokens (an inference step's decode:
  // one query over a cache of kv_seq positions); 0: seq, self-attention.
  int64_t kv_seq = 0;
  int64_t KvSeq() const { return kv_seq > 0 ? kv_seq : seq; }
  double Scale() const { return 1.0 / std::sqrt(double(head_dim)); }
  // FlashAttention's convention: 4 B H S S_kv D for the two matmuls of the forward, halved when
  // causal; the backward counts 2.5x the forward (five matmuls to the forward's two).
  double FwdFlops() const {
    const double f =
        4.0 * double(batch) * double(heads) * double(seq) * double(KvSeq()) * double(head_dim);
    return causal ? f / 2 : f;
  }
  double BwdFlops() const { return 2.5 * FwdFlops(); }
  int64_t QElems() const { return batch * heads * seq * head_dim; }
  int64_t KvElems() const { return batch * kv_heads * KvSeq() * head_dim; }
  // Positive sizes, heads a multiple of kv_heads.
  bool Valid() const {
    return batch > 0 && heads > 0 && kv_heads > 0 && seq > 0 && head_dim > 0 && kv_seq >= 0 &&
           heads % kv_heads == 0;
  }
};

// A convolution engine whose algorithm (Winograd's minimal filtering, FFT) does fewer
// multiplications than the direct count its FLOP counters use says so: the counter (1, else 0;
// fixtures/schema/schema.h's kFewerOpsThanCounted) and its label's words (FewerOpsNote). Its rate
// and pct_peak then read above the arithmetic it did, and may pass 100% of a measured peak.
inline constexpr const char* kFewerOpsCounter = "fewer_ops_than_counted";
inline std::string FewerOpsNote(const std::string& algorithm) {
  return ", " + algorithm +
         ": fewer multiplications than the direct count (flop_per_s and pct_peak read high)";
}

enum class ConvPass { kFwd, kBwdData, kBwdFilter };
inline const char* Name(ConvPass p) {
  return p == ConvPass::kFwd ? "fwd" : p == ConvPass::kBwdData ? "bwd_data" : "bwd_filter";
}

}  // namespace dlb
