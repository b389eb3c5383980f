// The weight-streaming product of a decode step, y = x W^T for a few rows of x: each weight is
// read once and used by at most kGemvMaxRows tokens, so the product is bound by how fast the
// weights stream from memory, not by math. cuBLASLt's GEMMs are tiled for many rows; with one to
// eight they leave bandwidth unused (docs/families/infer.md has the figures), so the decode step
// of kernels/cublas/infer.h calls this kernel where it fits and cuBLASLt elsewhere.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dlb::cuda {

inline constexpr int64_t kGemvMaxRows = 8;

// Whether GemvBf16 takes these operands: 1 <= m <= kGemvMaxRows, n and k positive, k a multiple
// of 8 (a row is read 16 bytes at a time) and every pointer 16-byte aligned.
bool GemvFits(const void* x, const void* w, const void* y, int64_t m, int64_t n, int64_t k);

// y[i * n + j] = sum over t of x[i * k + t] * w[j * k + t] (+ y[i * n + j] when accumulate), for
// i < m and j < n: x (m x k) and w (n x k) bf16, row-major; f32 products summed in f32; y f32
// (m x n). A warp a row of w (GemvLayout), reading it with 16-byte streaming loads, several in
// flight per lane. Checks its launch; does not synchronize (it can be captured in a CUDA graph). Throws
// dlb::Error when !GemvFits.
// On compute capability 9.0 on, each product is a programmatic dependent launch: it may start
// while the kernel before it on the stream ends, reading its first weights before waiting for
// that kernel (x, y and the fusion's inputs only after), and lets the next kernel start as it
// does. So w must not be written by the kernel just before it, which every step's constant
// weights are not.
void GemvBf16(const uint16_t* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k,
              bool accumulate, cudaStream_t stream);

// The same product with e4m3 weights (w: n x k bytes) times w_scale, the activations kept bf16
// in memory: a weight-only fp8 step reads half the bytes of a bf16 one and quantises nothing each
// step. At a layout without `wide` (GemvLayout), its arithmetic is f16's where the hardware pairs
// it; at one with `wide`, each weight is widened to f32 and x read as bf16, summed as GemvBf16
// sums. In f16: each block first writes x's rows into shared memory as f16, each segment of 512
// elements times the power of two 2^s that puts the segment's largest magnitude in [8, 16) (exact
// for every element within 2^21 of that largest: a bf16 has 8 significant bits). Then each 16
// weights of a row times x are two chains of four f16x2 fused multiply-adds, added pairwise, so
// that each half of the pair sums 8 products in f16; the pair is widened to f32, times its
// segment's 2^-s, and the rest of the row is summed in f32, times w_scale. Every partial sum stays
// below 8 x 448 x 16 = 57344, under f16's largest. An output's error is then at most 5 x 2^-11
// (f16's rounding, at most five roundings on a product's way to f32) of the magnitudes it adds,
// plus 2^-25 x 2^-s x w_scale a product for those below f16's normal range: some 25 times below
// the e4m3 weights' own rounding (2^-4). A 16-byte word of weights takes about 22 instructions in
// f16 against about 52 widened; which reads faster depends on the product and on the kernel
// beside which its blocks start, so a step times both (docs/families/infer.md has the figures).
// k a multiple of 16 (a row is read 16 bytes, 16 weights, at a time) and m x k x 2 <=
// kGemvFp8MaxStage bytes; throws dlb::Error when !GemvFp8Fits.
// x in shared memory, within every compute capability 8.0+'s opt-in (99 KB at the least).
inline constexpr int64_t kGemvFp8MaxStage = 64 * 1024;
bool GemvFp8Fits(const void* x, const void* w, const void* y, int64_t m, int64_t n, int64_t k);
void GemvFp8E4m3(const uint16_t* x, const uint8_t* w, float w_scale, float* y, int64_t m, int64_t n,
                 int64_t k, bool accumulate, cudaStream_t stream);

// What a decode step fuses into its products, so that a token's layer is four products and the
// attention rather than ten launches (each a few microseconds of latency at one token a step).
// All pointers are device memory. The sums of squares travel as pieces, one a block of the
// product that wrote them, added in a fixed order: the step gives the same logits every replay.
struct GemvFusion {
  // RMSNorm folded into the input: x holds bf16(h x gamma) (a residual output's next_in) and
  // norm_parts the sums of h's squares, norm_part_count pieces a row of x (a residual output's
  // out_parts), so the product is scaled by rsqrt(sum / k + eps).
  const float* norm_parts = nullptr;
  int norm_part_count = 0;
  float eps = 0.f;
  // Residual output: y (+)= the product, then next_in[i][j] = bf16(y[i][j] x gamma[j]) (the next
  // norm's input) and out_parts[i * GemvParts(n, layout) + b] = block b's sum of y[i][j]^2 over its
  // rows.
  const float* gamma = nullptr;
  uint16_t* next_in = nullptr;
  float* out_parts = nullptr;
  // SwiGLU output: w's rows 2f and 2f + 1 are the gate and up rows of unit f, and
  // act[i][f] = bf16(silu(gate) x up) (m x n / 2) is written instead of y (which may be null).
  uint16_t* act = nullptr;
};
enum class GemvWeights { kBf16, kFp8E4m3 };

// How a product's rows are laid over the GPU: weight rows a warp, rows a block (at least 8, even),
// 16-byte loads in flight a lane and row. Which is fastest depends on the matrix's shape and
// format: measured on an H200, each of Llama-3-8B's decode products 32 times over in a CUDA graph,
// e4m3's 4096 x 14336 down projection ran 17.96 us a product at (1, 8, 4) against 20.15 at
// (2, 8, 4), its 6144 x 4096 qkv 7.67 at (4, 32, 4) against 9.08; bf16's down 28.29 at (1, 16, 8)
// against 31.57 at (1, 8, 4). A step chooses each product's by timing them
// (kernels/cublas/infer.h). A layout may also set the registers a thread the compiler may use
// (max_regs, as the blocks an SM it must fit; 0 leaves the count to its own heuristic, which at
// these kernels keeps 44-64): more let it issue a round's loads earlier, fewer leave room for more
// warps. Measured on an H200 in the same 32-product chain with the step's fusions: e4m3's down
// projection 16.20 us at (1, 8, 4) with 64 against 18.65 at (1, 16, 8) with the compiler's count,
// its gate/up 28.67 at (2, 8, 4) with 64 against 30.22, its o projection 6.47 against 7.16; bf16's
// qkv 12.00 at (2, 16, 4) with 80 against 13.83, its o projection 8.94 at (1, 8, 4) with 64
// against 10.06; e4m3's qkv 7.50 and gate/up 28.24 at (2, 8, 4) with 72.
// A layout may split each row's words over k_split warps (slices of the row, a warp's sums added
// in shared memory by the row's first warp, in slice order), so that a warp of several rows, which
// reads each word of x once for all of them, still leaves as many warps to the product as one row
// a warp would; and it may be pipelined, a round's loads asked for before the round before it is
// summed (two rounds of registers). Same chain, another H200: bf16's gate/up 52.60 us at
// (4, 16, 4) with 96 registers in 2 slices against 54.18 at (2, 8, 4), e4m3's down 15.81 at
// (2, 8, 4) with 64 in 2 slices against 16.38 at (1, 8, 4) with 64, e4m3's o projection 5.77 at
// (2, 8, 2) with 64 in 2 slices pipelined against 6.39, bf16's down 27.65 at (1, 8, 4) with 64
// pipelined against 28.17; e4m3's gate/up stayed fastest at (2, 8, 4) with 72 (28.46: pipelined
// it spills at 64 registers and halves its warps at 128, 31.9-33.7).
struct GemvLayout {
  int rows_per_warp, rows_per_block, loads;
  int max_regs = 0;
  int k_split = 1;
  int pipelined = 0;  // 1: a round's loads asked for before the round before it is summed
  // e4m3 only: 1 widens each weight to f32 and reads x as bf16 from global memory (no staging),
  // 0 sums in f16 pairs over x staged in shared memory (GemvFp8E4m3). bf16 weights ignore it.
  int wide = 0;
  constexpr int Threads() const { return 32 * k_split * rows_per_block / rows_per_warp; }
  // The blocks an SM the compiler is asked to fit (__launch_bounds__' second argument): 0 none.
  constexpr int MinBlocks() const {
    if (max_regs == 0) return 0;
    const int blocks = 65536 / (Threads() * max_regs);
    return blocks < 1 ? 1 : blocks;
  }
};
inline constexpr GemvLayout kGemvLayouts[] = {
    {1, 8, 4},     {2, 8, 4},        {2, 16, 4},      {4, 32, 4},          {1, 16, 8}, {1, 8, 4, 64},
    {2, 8, 4, 64}, {2, 16, 4, 80},   {2, 8, 4, 72},   {2, 8, 4, 64, 2},    {2, 8, 4, 72, 2},
    {4, 16, 2, 64, 4}, {4, 16, 4, 96, 2}, {1, 8, 4, 64, 1, 1}, {2, 8, 2, 64, 2, 1},
    {2, 8, 4, 64, 2, 0, 1}, {1, 8, 4, 64, 1, 1, 1}, {2, 8, 2, 64, 2, 1, 1}};
inline constexpr int kGemvLayoutCount = int(sizeof(kGemvLayouts) / sizeof(kGemvLayouts[0]));
// The layout a format runs unless told otherwise, and the only one at more than one row of x:
// bf16 a row a warp; e4m3 two (its row at k 4096 is two rounds of loads, and a row's fixed start
// and end, the norm's pieces, the shuffles, the epilogue, weighed twice as much on it).
inline constexpr int GemvDefaultLayout(GemvWeights w) { return w == GemvWeights::kFp8E4m3 ? 1 : 0; }
// The pieces a row a residual output of n rows writes: one a block (8 rows at the defaults). At
// most GemvParts(n) at any layout.
inline constexpr int64_t GemvParts(int64_t n, int layout = 0) {
  return (n + kGemvLayouts[layout].rows_per_block - 1) / kGemvLayouts[layout].rows_per_block;
}
// The product with either weight format, a fusion and a layout (kGemvLayouts' index; -1 the
// format's default); GemvBf16 and GemvFp8E4m3 are this with no fusion at the default. `carveout`
// asks for that percent of each multiprocessor's on-chip memory as shared memory (the rest is L1),
// -1 leaves the split to the driver: the sums are the same at any split. Throws dlb::Error for
// operands the format does not fit, an incomplete fusion, a layout out of range or other than the
// default at m > 1, or a carveout outside -1..100.
void Gemv(const uint16_t* x, const void* w, GemvWeights weights, float w_scale, float* y, int64_t m,
          int64_t n, int64_t k, bool accumulate, const GemvFusion& fusion, cudaStream_t stream,
          int layout = -1, int carveout = -1);

}  // namespace dlb::cuda
