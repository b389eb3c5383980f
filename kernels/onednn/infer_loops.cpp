// The CPU inference step's loops (infer_loops.h).
#include "kernels/onednn/infer_loops.h"

#if DLB_X86_64
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace dlb::onednn::infer_loops {

// The step's loops between its primitives, a row at a time, each written so that the compiler
// vectorizes it and compiled for AVX-512, AVX2 and the baseline, the one this CPU runs picked
// when the program loads. A tiny model's decode step is its dispatch: the loops as they were
// (scalar, a call to convert each bf16 value, std::exp for each SwiGLU value) took 10.6 of its
// 45 us in bf16 on a 2-core Sapphire Rapids VM.
#if DLB_X86_64
#define DLB_ROW_LOOP __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DLB_ROW_LOOP
#endif

// out = x / rms(x) * w over a row of d, out in the low dtype.
DLB_ROW_LOOP void NormRow(const float* x, const float* w, int64_t d, double eps, void* out,
                          bool low) {
  float ss = 0;
#pragma omp simd reduction(+ : ss)
  for (int64_t i = 0; i < d; ++i) ss += x[i] * x[i];
  const float inv = float(1.0 / std::sqrt(double(ss) / double(d) + eps));
  if (low) {
    auto* o = static_cast<uint16_t*>(out);
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) o[i] = ToBf16(x[i] * inv * w[i]);
  } else {
    auto* o = static_cast<float*>(out);
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) o[i] = x[i] * inv * w[i];
  }
}

// One head's rotary embedding: the pairs (j, j + half) of src rotated by the angles' cos c and
// sin s, into dst in the low dtype.
DLB_ROW_LOOP void RotateRow(const float* src, const float* c, const float* s, int64_t half,
                            void* dst, bool low) {
  if (low) {
    auto* o = static_cast<uint16_t*>(dst);
#pragma omp simd
    for (int64_t j = 0; j < half; ++j) {
      o[j] = ToBf16(src[j] * c[j] - src[j + half] * s[j]);
      o[j + half] = ToBf16(src[j + half] * c[j] + src[j] * s[j]);
    }
  } else {
    auto* o = static_cast<float*>(dst);
#pragma omp simd
    for (int64_t j = 0; j < half; ++j) {
      o[j] = src[j] * c[j] - src[j + half] * s[j];
      o[j + half] = src[j + half] * c[j] + src[j] * s[j];
    }
  }
}

// src copied into dst in the low dtype.
DLB_ROW_LOOP void StoreRow(const float* src, int64_t count, void* dst, bool low) {
  if (low) {
    auto* o = static_cast<uint16_t*>(dst);
#pragma omp simd
    for (int64_t i = 0; i < count; ++i) o[i] = ToBf16(src[i]);
  } else {
    std::memcpy(dst, src, size_t(count) * sizeof(float));
  }
}

// SwiGLU of a row: silu(gate) * up, F values, into out in the low dtype.
DLB_ROW_LOOP void SwiGluRow(const float* gate, const float* up, int64_t F, void* out, bool low) {
  if (low) {
    auto* o = static_cast<uint16_t*>(out);
#pragma omp simd
    for (int64_t f = 0; f < F; ++f) o[f] = ToBf16(gate[f] / (1.f + Exp(-gate[f])) * up[f]);
  } else {
    auto* o = static_cast<float*>(out);
#pragma omp simd
    for (int64_t f = 0; f < F; ++f) o[f] = gate[f] / (1.f + Exp(-gate[f])) * up[f];
  }
}

#if DLB_X86_64
#define DLB_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

DLB_AVX512 inline __m512 Load16(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
DLB_AVX512 inline __m512 Load16(const uint16_t* p, __mmask16 m) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}
inline float Value(float f) { return f; }
inline float Value(uint16_t h) { return FromBf16(h); }
inline void Put(float* base, int64_t i, float v) { base[i] = v; }
inline void Put(uint16_t* base, int64_t i, float v) { base[i] = ToBf16(v); }

// e^x of 16 values at most 0 (scores less their row's largest): Exp()'s reduction and polynomial,
// 2^k applied by vscalefps, which underflows as e^x does, so without Exp()'s clamp or its integer
// exponent: within 2 ulp of e^x for each f32 in [-110, 0], checked.
DLB_AVX512 inline __m512 Exp16(__m512 x) {
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  return _mm512_scalef_ps(p, k);
}

// The scores of NR query rows (q: NR x D, f32, already scaled) against the U x 16 keys from j of
// kt (tiles of kKeyTile keys, each D x kKeyTile; j at a multiple of 16 and the U blocks in one
// tile), the last block's keys those of `last`, into p (row r at r x keys); top: each row's
// running maximum, lane-wise.
template <int NR, int U, class T>
DLB_AVX512 inline void ScoreBlock(const float* q, const T* kt, int64_t D, int64_t j, __mmask16 last,
                                  float* p, int64_t keys, __m512* top) {
  __m512 s[NR][U];
  for (int r = 0; r < NR; ++r)
    for (int u = 0; u < U; ++u) s[r][u] = _mm512_setzero_ps();
  const T* tile = kt + j / kKeyTile * D * kKeyTile + j % kKeyTile;
  for (int64_t e = 0; e < D; ++e) {
    __m512 k[U];
    for (int u = 0; u < U; ++u)
      k[u] = Load16(tile + e * kKeyTile + 16 * u, u == U - 1 ? last : __mmask16(0xffff));
    for (int r = 0; r < NR; ++r) {
      const __m512 qe = _mm512_set1_ps(q[r * D + e]);
      for (int u = 0; u < U; ++u) s[r][u] = _mm512_fmadd_ps(qe, k[u], s[r][u]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int u = 0; u < U; ++u) {
      const __mmask16 m = u == U - 1 ? last : __mmask16(0xffff);
      _mm512_mask_storeu_ps(p + r * keys + j + 16 * u, m, s[r][u]);
      top[r] = _mm512_mask_max_ps(top[r], m, top[r], s[r][u]);
    }
}

// NR rows' scores over every key, a tile (4 registers a row) at a time, then 16 keys at a time;
// top: each row's largest score.
template <int NR, class T>
DLB_AVX512 void Scores(const float* q, const T* kt, int64_t D, int64_t keys, float* p, float* top) {
  static_assert(kKeyTile == 64, "a tile is 4 registers of 16 keys");
  __m512 lanes[NR];
  for (int r = 0; r < NR; ++r) lanes[r] = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + kKeyTile <= keys; j += kKeyTile)
    ScoreBlock<NR, 4>(q, kt, D, j, 0xffff, p, keys, lanes);
  for (; j < keys; j += 16) {
    const int64_t in = std::min<int64_t>(16, keys - j);
    ScoreBlock<NR, 1>(q, kt, D, j, __mmask16((1u << in) - 1u), p, keys, lanes);
  }
  for (int r = 0; r < NR; ++r) top[r] = _mm512_reduce_max_ps(lanes[r]);
}

// acc (NR x D) = p v for NR rows of p over every key of v (keys x D), 16 values of D at a time,
// four keys' products in separate sums (so that consecutive keys' adds do not wait on each other).
template <int NR, class T>
DLB_AVX512 void Weighted(const float* p, int64_t keys, const T* v, int64_t D, float* acc) {
  for (int64_t e = 0; e < D; e += 16) {
    __m512 a[NR][4];
    for (int r = 0; r < NR; ++r)
      for (int u = 0; u < 4; ++u) a[r][u] = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 4 <= keys; j += 4)
      for (int u = 0; u < 4; ++u) {
        const __m512 vj = Load16(v + (j + u) * D + e, 0xffff);
        for (int r = 0; r < NR; ++r)
          a[r][u] = _mm512_fmadd_ps(_mm512_set1_ps(p[r * keys + j + u]), vj, a[r][u]);
      }
    for (; j < keys; ++j) {
      const __m512 vj = Load16(v + j * D + e, 0xffff);
      for (int r = 0; r < NR; ++r)
        a[r][0] = _mm512_fmadd_ps(_mm512_set1_ps(p[r * keys + j]), vj, a[r][0]);
    }
    for (int r = 0; r < NR; ++r)
      _mm512_storeu_ps(acc + r * D + e, _mm512_add_ps(_mm512_add_ps(a[r][0], a[r][1]),
                                                      _mm512_add_ps(a[r][2], a[r][3])));
  }
}

// Calls f(std::integral_constant<int, NR>{}, r) for each pass of up to 4 rows of `rows`.
template <class F>
inline void ForRowPasses(int64_t rows, const F& f) {
  for (int64_t r = 0; r < rows; r += 4) {
    switch (std::min<int64_t>(4, rows - r)) {
      case 1:
        f(std::integral_constant<int, 1>{}, r);
        break;
      case 2:
        f(std::integral_constant<int, 2>{}, r);
        break;
      case 3:
        f(std::integral_constant<int, 3>{}, r);
        break;
      default:
        f(std::integral_constant<int, 4>{}, r);
    }
  }
}

// out (rows x D) = softmax(scale q k^T) v for one kv head: q rows x D, kt the keys in tiles (D x
// kKeyTile each), v keys x D; D a multiple of 16. p: rows x keys, acc: rows x (D + 1), f32 scratch.
template <class T>
DLB_AVX512 void AttendHeadOf(const T* q, const T* kt, const T* v, int64_t rows, int64_t keys,
                             int64_t D, float scale, float* p, float* acc, T* out) {
  float* inv = acc + rows * D;  // each row's largest score, then 1 / its sum of exponentials
  // The queries scaled, in f32 (acc, until the output's sums overwrite them).
  for (int64_t i = 0; i < rows * D; ++i) acc[i] = Value(q[i]) * scale;
  ForRowPasses(rows, [&](auto nr, int64_t r) {
    Scores<decltype(nr)::value>(acc + r * D, kt, D, keys, p + r * keys, inv + r);
  });
  for (int64_t r = 0; r < rows; ++r) {
    float* pr = p + r * keys;
    const __m512 top = _mm512_set1_ps(inv[r]);
    __m512 sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < keys; j += 16) {
      const __mmask16 m = __mmask16((1u << std::min<int64_t>(16, keys - j)) - 1u);
      const __m512 x = Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, pr + j), top));
      _mm512_mask_storeu_ps(pr + j, m, x);
      sum = _mm512_mask_add_ps(sum, m, sum, x);
    }
    inv[r] = 1.f / _mm512_reduce_add_ps(sum);
  }
  ForRowPasses(rows, [&](auto nr, int64_t r) {
    Weighted<decltype(nr)::value>(p + r * keys, keys, v, D, acc + r * D);
  });
  for (int64_t r = 0; r < rows; ++r)
#pragma omp simd
    for (int64_t e = 0; e < D; ++e) Put(out, r * D + e, acc[r * D + e] * inv[r]);
}
void AttendHead(const float* q, const float* kt, const float* v, int64_t rows, int64_t keys,
                int64_t D, float scale, float* p, float* acc, float* out) {
  AttendHeadOf(q, kt, v, rows, keys, D, scale, p, acc, out);
}
void AttendHead(const uint16_t* q, const uint16_t* kt, const uint16_t* v, int64_t rows,
                int64_t keys, int64_t D, float scale, float* p, float* acc, uint16_t* out) {
  AttendHeadOf(q, kt, v, rows, keys, D, scale, p, acc, out);
}
#endif  // DLB_X86_64

}  // namespace dlb::onednn::infer_loops
