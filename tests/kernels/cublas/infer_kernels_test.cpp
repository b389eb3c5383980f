// The inference step's small kernels (kernels/cuda/infer_kernels.h) alone against float64 on the
// host: the embedding lookup with the first norm's input; RMSNorm on rows its threads hold in
// registers and on rows too wide for that, strided and unaligned widths; SwiGLU from f32 and bf16
// gate/up, eight units a thread and one; the rotary append from f32 and bf16 projections, at few
// tokens (heads spread over blocks) and many (a block a token), into a contiguous cache. Label gpu:
// skipped without a device.
#include "kernels/cuda/infer_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/common/fill.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"
#include "tests/kernels/testing.h"

namespace dlb {
namespace {

// Seeded bf16 values in [-1, 1), as float (exact in bf16 and f32 alike).
std::vector<float> Values(uint64_t seed, size_t n) {
  return SeededValues(TensorSeed(seed, 0), n, DType::kBF16);
}

template <class T>
cuda::DeviceBuffer<T> ToDevice(const std::vector<float>& v, DType dt, cudaStream_t stream) {
  cuda::DeviceBuffer<T> d(v.size());
  cuda::Upload(d.get(), v, dt, stream);
  return d;
}

// {rows, stride, d}
struct NormCase {
  int64_t rows, stride, d;
};

class RmsNormTest : public ::testing::TestWithParam<NormCase> {};

TEST_P(RmsNormTest, MatchesTheFloat64Norm) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const NormCase c = GetParam();
  cuda::Stream stream = cuda::MakeStream();
  const std::vector<float> x = Values(1, size_t(c.rows * c.stride)), w = Values(2, size_t(c.d));
  auto dx = ToDevice<float>(x, DType::kF32, stream.get());
  auto dw = ToDevice<float>(w, DType::kF32, stream.get());
  cuda::DeviceBuffer<uint16_t> out(size_t(c.rows * c.d));
  cuda::Poison(out.get(), out.size(), DType::kBF16, stream.get());
  const float eps = 1e-5f;
  cuda::RmsNormBf16(dx.get(), c.rows, c.stride, c.d, dw.get(), eps, out.get(), stream.get());
  const std::vector<float> got = cuda::Download(out.get(), out.size(), DType::kBF16, stream.get());
  std::vector<double> want;
  for (int64_t r = 0; r < c.rows; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < c.d; ++j)
      ss += double(x[size_t(r * c.stride + j)]) * x[size_t(r * c.stride + j)];
    const double inv = 1.0 / std::sqrt(ss / double(c.d) + eps);
    for (int64_t j = 0; j < c.d; ++j)
      want.push_back(x[size_t(r * c.stride + j)] * inv * w[size_t(j)]);
  }
  // The output is rounded to bf16 (2^-9 relative at most).
  EXPECT_LT(testing::RelativeL2(got, want), 4e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Rows, RmsNormTest,
    ::testing::Values(NormCase{8, 4096, 4096},      // registers, Llama-3-8B's width
                      NormCase{3, 8192, 8192},      // registers, the widest they hold
                      NormCase{2, 12288, 12288},    // too wide: read twice
                      NormCase{4, 3 * 1024, 1024},  // every third row of the residual
                      NormCase{5, 101, 99}));       // not a multiple of 4: scalar reads

// The embedding lookup with the first norm's fused input: x the token's row exactly, next_in =
// bf16(x * gamma), ss the sum of x's squares; at Llama-3-8B's width (16-byte words, one pass), a
// width of two passes, and one of no 16-byte words (scalar reads).
TEST(InferEmbedNorm, MatchesTheFloat64RowsNormInputAndSquares) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  cuda::Stream stream = cuda::MakeStream();
  const std::vector<int32_t> tokens = {5, 0, 17};
  const int64_t vocab = 20, rows = int64_t(tokens.size());
  for (int64_t d : {4096, 8200, 99}) {
    const std::vector<float> embed = Values(7, size_t(vocab * d)), gamma = Values(8, size_t(d));
    auto de = ToDevice<uint16_t>(embed, DType::kBF16, stream.get());
    auto dg = ToDevice<float>(gamma, DType::kF32, stream.get());
    cuda::DeviceBuffer<int32_t> dt(tokens.size());
    DLB_CHECK(cudaMemcpyAsync(dt.get(), tokens.data(), tokens.size() * sizeof(int32_t),
                              cudaMemcpyHostToDevice, stream.get()));
    cuda::DeviceBuffer<float> x(size_t(rows * d)), ss{size_t(rows)};
    cuda::DeviceBuffer<uint16_t> next(size_t(rows * d));
    cuda::Poison(x.get(), x.size(), DType::kF32, stream.get());
    cuda::Poison(next.get(), next.size(), DType::kBF16, stream.get());
    cuda::EmbedNormInput(dt.get(), de.get(), rows, d, dg.get(), x.get(), next.get(), ss.get(),
                         stream.get());
    const std::vector<float> got_x = cuda::Download(x.get(), x.size(), DType::kF32, stream.get());
    const std::vector<float> got_n =
        cuda::Download(next.get(), next.size(), DType::kBF16, stream.get());
    const std::vector<float> got_ss =
        cuda::Download(ss.get(), ss.size(), DType::kF32, stream.get());
    std::vector<double> want_n, want_ss;
    size_t wrong_x = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < d; ++j) {
        const float v = embed[size_t(tokens[size_t(r)] * d + j)];
        wrong_x += got_x[size_t(r * d + j)] != v;
        want_n.push_back(double(v) * gamma[size_t(j)]);
        sum += double(v) * v;
      }
      want_ss.push_back(sum);
    }
    EXPECT_EQ(wrong_x, 0u) << "width " << d;
    EXPECT_LT(testing::RelativeL2(got_n, want_n), 4e-3) << "width " << d;  // rounded to bf16
    EXPECT_LT(testing::RelativeL2(got_ss, want_ss), 1e-5) << "width " << d;
  }
}

// SwiGLU: act[t][f] = silu(gu[t][2f]) gu[t][2f + 1].
template <class T>
void CheckSwiGlu(DType dt, int64_t rows, int64_t ffn) {
  cuda::Stream stream = cuda::MakeStream();
  std::vector<float> gu = Values(3, size_t(rows * 2 * ffn));
  for (float& v : gu) v *= 6.f;  // a range where silu bends (exact: a power-of-two-ish scale)
  auto dgu = ToDevice<T>(gu, dt, stream.get());
  gu = cuda::Download(dgu.get(), gu.size(), dt, stream.get());  // what the kernel reads
  cuda::DeviceBuffer<uint16_t> act(size_t(rows * ffn));
  cuda::Poison(act.get(), act.size(), DType::kBF16, stream.get());
  cuda::SwiGluBf16(dgu.get(), rows, ffn, act.get(), stream.get());
  const std::vector<float> got = cuda::Download(act.get(), act.size(), DType::kBF16, stream.get());
  std::vector<double> want;
  for (size_t i = 0; i < size_t(rows * ffn); ++i) {
    const double g = gu[2 * i], u = gu[2 * i + 1];
    want.push_back(g / (1.0 + std::exp(-g)) * u);
  }
  EXPECT_LT(testing::RelativeL2(got, want), 4e-3) << rows << " x " << ffn;
}

TEST(InferSwiGlu, MatchesTheFloat64FromF32AndBf16) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  for (const auto& [rows, ffn] : {std::pair<int64_t, int64_t>{3, 1024}, {2, 13}, {1, 7}}) {
    CheckSwiGlu<float>(DType::kF32, rows, ffn);
    CheckSwiGlu<uint16_t>(DType::kBF16, rows, ffn);
  }
}

// The rotary append: q rows (token x heads x D) rotated; k rotated and v copied into the
// contiguous cache (batch x kv_heads x capacity x D) at each token's position.
template <class T>
void CheckRope(DType dt, const cuda::InferAttnDims& a) {
  cuda::Stream stream = cuda::MakeStream();
  const int64_t D = a.head_dim, half = D / 2, H = a.heads, G = a.kv_heads,
                T_ = a.batch * a.new_tokens, width = (H + 2 * G) * D;
  const std::vector<float> qkv = Values(4, size_t(T_ * width));
  std::vector<float> cos, sin;
  for (int64_t i = 0; i < a.new_tokens; ++i)
    for (int64_t j = 0; j < half; ++j) {
      const double angle =
          double(a.first_pos + i) * std::pow(10000.0, -2.0 * double(j) / double(D));
      cos.push_back(float(std::cos(angle)));
      sin.push_back(float(std::sin(angle)));
    }
  auto dqkv = ToDevice<T>(qkv, dt, stream.get());
  auto dcos = ToDevice<float>(cos, DType::kF32, stream.get());
  auto dsin = ToDevice<float>(sin, DType::kF32, stream.get());
  const size_t cache_n = size_t(a.batch * G * a.capacity * D);
  cuda::DeviceBuffer<uint16_t> q(size_t(T_ * H * D)), kc(cache_n), vc(cache_n);
  DLB_CHECK(cudaMemsetAsync(kc.get(), 0, kc.bytes(), stream.get()));
  DLB_CHECK(cudaMemsetAsync(vc.get(), 0, vc.bytes(), stream.get()));
  cuda::Poison(q.get(), q.size(), DType::kBF16, stream.get());
  cuda::RopeAppend(dqkv.get(), dcos.get(), dsin.get(), a, q.get(), kc.get(), vc.get(),
                   stream.get());
  const std::vector<float> got_q = cuda::Download(q.get(), q.size(), DType::kBF16, stream.get()),
                           got_k = cuda::Download(kc.get(), cache_n, DType::kBF16, stream.get()),
                           got_v = cuda::Download(vc.get(), cache_n, DType::kBF16, stream.get());
  std::vector<double> want_q(got_q.size()), want_k(cache_n, 0.0), want_v(cache_n, 0.0);
  for (int64_t t = 0; t < T_; ++t) {
    const int64_t b = t / a.new_tokens, tok = t % a.new_tokens, pos = a.first_pos + tok;
    const float* row = qkv.data() + t * width;
    for (int64_t head = 0; head < H + G; ++head)
      for (int64_t j = 0; j < half; ++j) {
        const double c = cos[size_t(tok * half + j)], s = sin[size_t(tok * half + j)];
        const float* x = head < H ? row + head * D : row + H * D + (head - H) * D;
        const double r0 = x[j] * c - x[j + half] * s, r1 = x[j + half] * c + x[j] * s;
        if (head < H) {
          want_q[size_t((t * H + head) * D + j)] = r0;
          want_q[size_t((t * H + head) * D + j + half)] = r1;
        } else {
          const int64_t g = head - H, at = ((b * G + g) * a.capacity + pos) * D;
          const float* v = row + (H + G) * D + g * D;
          want_k[size_t(at + j)] = r0;
          want_k[size_t(at + j + half)] = r1;
          want_v[size_t(at + j)] = v[j];
          want_v[size_t(at + j + half)] = v[j + half];
        }
      }
  }
  const std::string what = std::to_string(T_) + " tokens, head_dim " + std::to_string(D);
  EXPECT_LT(testing::RelativeL2(got_q, want_q), 4e-3) << what;
  EXPECT_LT(testing::RelativeL2(got_k, want_k), 4e-3) << what;
  EXPECT_LT(testing::RelativeL2(got_v, want_v), 1e-7) << what;  // copied: exact
}

TEST(InferRopeAppend, MatchesTheFloat64FromF32AndBf16AtFewAndManyTokens) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  // {batch, new_tokens, first_pos, heads, kv_heads, head_dim, capacity}
  const cuda::InferAttnDims few{3, 1, 40, 32, 8, 128, 41};   // decode: heads over blocks
  const cuda::InferAttnDims many{2, 300, 5, 4, 2, 64, 305};  // prefill: a block a token
  const cuda::InferAttnDims narrow{1, 2, 0, 6, 3, 16, 2};    // half a warp of pairs
  for (const cuda::InferAttnDims& a : {few, many, narrow}) {
    CheckRope<float>(DType::kF32, a);
    CheckRope<uint16_t>(DType::kBF16, a);
  }
}

}  // namespace
}  // namespace dlb
