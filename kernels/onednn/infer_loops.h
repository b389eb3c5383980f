// The CPU inference step's loops between its oneDNN primitives (infer_loops.cpp): the row loops
// (RMSNorm, rotary embeddings, the cache append, SwiGLU) and, on x86-64 with AVX-512, a decode
// step's attention. Internal to kernels/onednn.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#define DLB_X86_64 1
#else
#define DLB_X86_64 0
#endif

namespace dlb::onednn::infer_loops {

inline float Float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
// FloatToBf16 (kernels/common/dtype.h) without a call or a branch, so that a loop of it vectorizes:
// round to nearest even, NaN quieted.
inline uint16_t ToBf16(float f) {
  const uint32_t u = Bits(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return uint16_t((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded);
}
inline float FromBf16(uint16_t h) { return Float(uint32_t(h) << 16); }

// e^x in f32 without a call or a branch, so that a loop of it vectorizes (Cephes' expf: x = k ln 2
// + r, |r| <= ln 2 / 2, a degree-6 polynomial of r, 2^k put into the exponent): within 1.4 ulp of
// std::exp over [-87, 88], each f32 there checked; x outside that is taken as its nearer end.
inline float Exp(float x) {
  x = std::min(std::max(x, -87.f), 88.f);
  const float k = std::nearbyint(x * 1.44269504088896341f);
  const float r = (x - k * 0.693359375f) + k * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  return p * Float(uint32_t(int32_t(k) + 127) << 23);
}

// Writes v at element i of a buffer of the step's low dtype (f32 or bf16).
inline void Store(void* base, int64_t i, float v, bool low) {
  if (low) {
    static_cast<uint16_t*>(base)[i] = ToBf16(v);
  } else {
    static_cast<float*>(base)[i] = v;
  }
}

// out = x / rms(x) * w over a row of d, out in the low dtype.
void NormRow(const float* x, const float* w, int64_t d, double eps, void* out, bool low);

// One head's rotary embedding: the pairs (j, j + half) of src rotated by the angles' cos c and
// sin s, into dst in the low dtype.
void RotateRow(const float* src, const float* c, const float* s, int64_t half, void* dst, bool low);

// src copied into dst in the low dtype.
void StoreRow(const float* src, int64_t count, void* dst, bool low);

// SwiGLU of a row: silu(gate) * up, F values, into out in the low dtype.
void SwiGluRow(const float* gate, const float* up, int64_t F, void* out, bool low);

// Decode attention in AVX-512 (AVX512F, BW and VL: every AVX-512 server core has the three): one
// kv head's R query heads, one new token each, over its cached keys.
// oneDNN's two batched matmuls and softmax took 25 of the tiny model's 45 us at B 1, ctx 512, in
// bf16 (each matmul packing its K^T or V operand anew, the softmax 2 us for 2052 values); loops
// the compiler vectorized took 16 (a dot product of 16 summed across a register a key and row,
// sums kept in memory); these take some 1.1 us a kv head there (1.5 with Exp() vectorized by the
// compiler and each query element scaled again for each tile of keys). The keys are held in tiles
// of kKeyTile, each transposed (head_dim x kKeyTile), so that the scores are vectorized over keys
// and a tile is read as one sequential stream, where a whole block transposed would be read as
// head_dim streams at once, rows of capacity apart (a 1B-class model's cache is in memory, not in
// the caches); T is f32 or bf16 (a bf16 value is the top half of its f32), every sum f32.
inline constexpr int64_t kKeyTile = 64;
// out (rows x D) = softmax(scale q k^T) v for one kv head: q rows x D, kt the keys in tiles (D x
// kKeyTile each), v keys x D; D a multiple of 16. p: rows x keys, acc: rows x (D + 1), f32 scratch.
// x86-64 only, bf16 (uint16_t storage) or f32.
void AttendHead(const float* q, const float* kt, const float* v, int64_t rows, int64_t keys,
                int64_t D, float scale, float* p, float* acc, float* out);
void AttendHead(const uint16_t* q, const uint16_t* kt, const uint16_t* v, int64_t rows,
                int64_t keys, int64_t D, float scale, float* p, float* acc, uint16_t* out);

}  // namespace dlb::onednn::infer_loops
