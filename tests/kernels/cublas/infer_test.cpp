#include "kernels/cublas/infer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/common/dtype.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/infer_kernels.h"
#include "kernels/reference/infer.h"
#include "tests/kernels/infer_testing.h"
#include "tests/kernels/testing.h"

namespace dlb {
namespace {

// The tiny row of fixtures/workloads/infer_models.csv.
LlamaConfig Tiny() { return testing::TinyLlama(true); }

std::string StepName(const ::testing::TestParamInfo<std::tuple<InferPhase, int, int64_t>>& info) {
  return std::string(Name(std::get<0>(info.param))) + "_bs" +
         std::to_string(std::get<1>(info.param)) + "_ctx" + std::to_string(std::get<2>(info.param));
}

class NativeInferTest : public ::testing::TestWithParam<std::tuple<InferPhase, int, int64_t>> {};

// The graph's step against the float64 step of the same bf16 weights and cache, within the
// family's bf16 tolerance (benchmarks/infer/family.cpp's InferTolerance); a second replay writes
// the same cache position, so it gives the same logits.
TEST_P(NativeInferTest, LogitsMatchTheFloat64Step) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const auto [phase, batch, ctx] = GetParam();
  const InferShape s{Tiny(), phase, batch, ctx};
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  cfg.seed = 11;
  cublas::NativeInfer op(s, cfg);
  op.Run();
  const HostTensor first = op.Output();
  op.Run();
  const HostTensor got = op.Output();
  const Vec want = testing::Float64Logits(s, cfg.seed, DType::kBF16, DType::kBF16);
  ASSERT_EQ(got.data.size(), want.size());
  EXPECT_LT(testing::RelativeL2(got.data, want), 3e-2);
  EXPECT_EQ(first.data, got.data);
  EXPECT_NE(op.label().find("CUDA graph"), std::string::npos) << op.label();
  // Prefill's attention is cuDNN's fused SDPA where it has an engine; the label says which ran.
  if (phase == InferPhase::kPrefill)
    EXPECT_NE(op.label().find("fused SDPA fwd"), std::string::npos) << op.label();
}

class NativeInferFp8Test : public ::testing::TestWithParam<std::tuple<InferPhase, int, int64_t>> {};

// fp8 weights: the float64 step of the same e4m3 matrices (the embedding, norms and cache bf16),
// within the family's fp8 tolerance (each GEMM input quantised to e4m3 by its absmax).
TEST_P(NativeInferFp8Test, LogitsMatchTheFloat64StepOfTheE4m3Weights) {
  const auto [phase, batch, ctx] = GetParam();
  const InferShape s{Tiny(), phase, batch, ctx};
  RunConfig cfg;
  cfg.dtype = DType::kFP8E4M3;
  cfg.seed = 5;
  const Support sup = cublas::NativeInfer::Supports(s, cfg);
  if (!sup.ok) GTEST_SKIP() << sup.why;
  cublas::NativeInfer op(s, cfg);
  op.Run();
  const HostTensor got = op.Output();
  const Vec want = testing::Float64Logits(s, cfg.seed, DType::kFP8E4M3, DType::kBF16);
  ASSERT_EQ(got.data.size(), want.size());
  const double err = testing::RelativeL2(got.data, want);
  EXPECT_LT(err, 1e-1);
  // Far from the bf16 step's error, and not zero: the activations were quantised.
  EXPECT_GT(err, 1e-4);
  EXPECT_NE(op.label().find("fp8"), std::string::npos) << op.label();
  EXPECT_DOUBLE_EQ(op.cost().bytes, s.Bytes(DType::kFP8E4M3, DType::kBF16));
}

INSTANTIATE_TEST_SUITE_P(Steps, NativeInferFp8Test,
                         ::testing::Values(std::make_tuple(InferPhase::kDecode, 2, int64_t{40}),
                                           std::make_tuple(InferPhase::kPrefill, 1, int64_t{16})),
                         StepName);

// Decode at a context long enough to split the keys into several chunks, and prefill's causal
// prompts; batch 3 checks that sequences do not mix.
INSTANTIATE_TEST_SUITE_P(Steps, NativeInferTest,
                         ::testing::Values(std::make_tuple(InferPhase::kDecode, 1, int64_t{9}),
                                           std::make_tuple(InferPhase::kDecode, 3, int64_t{300}),
                                           std::make_tuple(InferPhase::kPrefill, 1, int64_t{32}),
                                           std::make_tuple(InferPhase::kPrefill, 3, int64_t{7})),
                         StepName);

// The paged cache's step: the float64 step's logits, and bit for bit the contiguous cache's (the
// same arithmetic in the same order, only the rows' addresses differ: both at the products'
// default layouts, since a layout the tuner may choose can sum a row in another order); at batch 1
// (the fused weight-streaming step) and 3, the latter over several chunks of keys.
TEST(NativePagedInfer, LogitsMatchTheFloat64StepAndTheContiguousCache) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  for (int batch : {1, 3}) {
    const InferShape s{Tiny(), InferPhase::kDecode, batch, 300};
    RunConfig cfg;
    cfg.dtype = DType::kBF16;
    cfg.seed = 13;
    using Layouts = cublas::NativeInfer::ProductLayouts;
    cublas::NativePagedInfer paged(s, cfg, Layouts::kDefault);
    paged.Run();
    const HostTensor got = paged.Output();
    cublas::NativeInfer contiguous(s, cfg, cublas::NativeInfer::DecodeAttention::kKernel,
                                   Layouts::kDefault);
    contiguous.Run();
    EXPECT_EQ(got.data, contiguous.Output().data) << batch;
    const Vec want = testing::Float64Logits(s, cfg.seed, DType::kBF16, DType::kBF16);
    EXPECT_LT(testing::RelativeL2(got.data, want), 3e-2) << batch;
    EXPECT_NE(paged.label().find("paged bf16 KV cache"), std::string::npos) << paged.label();
    if (batch == 1)  // the weight-streaming step
      EXPECT_NE(paged.label().find("default layout, as told"), std::string::npos) << paged.label();
  }
}

// Decode's attentions, each forced, against the float64 step: the split-key kernel, cuDNN's
// fused SDPA of the one query over the cache (its label says so) and the kernel fused with the
// rotary append; at batch 1 (the fused weight-streaming step) and 3 over several chunks of keys.
// Built free to choose, the label names the fastest and every time.
TEST(NativeInfer, DecodeAttentionEitherWayMatchesTheFloat64Step) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  using Attention = cublas::NativeInfer::DecodeAttention;
  for (int batch : {1, 3}) {
    const InferShape s{Tiny(), InferPhase::kDecode, batch, 300};
    RunConfig cfg;
    cfg.dtype = DType::kBF16;
    cfg.seed = 17;
    const Vec want = testing::Float64Logits(s, cfg.seed, DType::kBF16, DType::kBF16);
    for (Attention a : {Attention::kKernel, Attention::kCudnn, Attention::kFused}) {
      cublas::NativeInfer op(s, cfg, a);
      op.Run();
      const HostTensor got = op.Output();
      EXPECT_LT(testing::RelativeL2(got.data, want), 3e-2) << batch << " " << op.label();
      const bool cudnn = op.label().find("fused SDPA fwd") != std::string::npos;
      EXPECT_EQ(cudnn, a == Attention::kCudnn) << op.label();
      if (cudnn)
        EXPECT_NE(op.label().find("no softmax statistics"), std::string::npos) << op.label();
      // The fused kernel, or the kernel saying why not (the step at batch 3 is cuBLASLt's).
      const bool fused =
          op.label().find("in one programmatic dependent launch") != std::string::npos;
      EXPECT_EQ(fused || op.label().find("(the fused kernel: ") != std::string::npos,
                a == Attention::kFused)
          << op.label();
      if (a == Attention::kFused && batch == 1 && cuda::RopeAttentionSupported()) {
        EXPECT_TRUE(fused) << op.label();
        // Beside the fused kernel the step also timed a shared-memory split for every kernel.
        EXPECT_NE(op.label().find("shared-memory split"), std::string::npos) << op.label();
      }
    }
    cublas::NativeInfer fastest(s, cfg);
    EXPECT_NE(fastest.label().find("(the fastest, timed with each layer's qkv product and the "
                                   "rotary append"),
              std::string::npos)
        << fastest.label();
    fastest.Run();
    EXPECT_LT(testing::RelativeL2(fastest.Output().data, want), 3e-2) << fastest.label();
  }
}

// Every engine configuration cuDNN offers for decode's attention (one query a sequence over a
// cache of more positions than it holds, grouped-query heads), each run through Choose(), against
// the float64 attention of the same bf16 values on the host: what the step's choice times.
TEST(NativeInfer, EverySdpaConfigurationOfADecodeMatchesTheFloat64Attention) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  AttnShape a;
  a.batch = 2, a.heads = 8, a.kv_heads = 2, a.seq = 1, a.kv_seq = 300, a.head_dim = 64;
  const Support sup = cudnn::SdpaForward::Supports(a, DType::kBF16);
  if (!sup.ok) GTEST_SKIP() << sup.why;
  const int64_t B = a.batch, H = a.heads, G = a.kv_heads, L = a.kv_seq, D = a.head_dim,
                cap = L + 20;  // the cache's capacity, as the step's, past what is read
  std::mt19937 gen(23);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const auto seeded = [&](size_t n) {
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = FloatToBf16(u(gen));
    return v;
  };
  const std::vector<uint16_t> q = seeded(size_t(B * H * D)), k = seeded(size_t(B * G * cap * D)),
                              v = seeded(size_t(B * G * cap * D));
  cuda::DeviceBuffer<uint16_t> dq(q.size()), dk(k.size()), dv(v.size()), dout(q.size());
  DLB_CHECK(cudaMemcpy(dq.get(), q.data(), q.size() * 2, cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dk.get(), k.data(), k.size() * 2, cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dv.get(), v.data(), v.size() * 2, cudaMemcpyHostToDevice));
  // softmax(q k^T / sqrt(D)) v of each (sequence, head), its kv head h / (H / G).
  std::vector<double> want(q.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / G);
      std::vector<double> p(static_cast<size_t>(L));
      double top = -1e300, sum = 0;
      for (int64_t j = 0; j < L; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += double(Bf16ToFloat(q[size_t((b * H + h) * D + d)])) *
                 Bf16ToFloat(k[size_t(((b * G + g) * cap + j) * D + d)]);
        p[size_t(j)] = dot / std::sqrt(double(D));
        top = std::max(top, p[size_t(j)]);
      }
      for (double& x : p) sum += x = std::exp(x - top);
      for (int64_t d = 0; d < D; ++d) {
        double o = 0;
        for (int64_t j = 0; j < L; ++j)
          o += p[size_t(j)] * Bf16ToFloat(v[size_t(((b * G + g) * cap + j) * D + d)]);
        want[size_t((b * H + h) * D + d)] = o / sum;
      }
    }
  const cudnn::SdpaForward::Strides strides{{H * D, D, H * D, 1}, {G * cap * D, cap * D, D, 1}};
  cudnn::SdpaForward op(a, DType::kBF16, strides, nullptr, false, true);
  op.Bind(dq.get(), dk.get(), dv.get(), dout.get());
  ASSERT_GE(op.Candidates(), 1);
  for (int i = 0; i < op.Candidates(); ++i) {
    op.Choose(i);
    DLB_CHECK(cudaMemset(dout.get(), 0xff, dout.bytes()));  // NaN until written
    op.Run(0);
    DLB_CHECK(cudaDeviceSynchronize());
    std::vector<uint16_t> got(q.size());
    DLB_CHECK(cudaMemcpy(got.data(), dout.get(), got.size() * 2, cudaMemcpyDeviceToHost));
    double err = 0, norm = 0;
    for (size_t e = 0; e < got.size(); ++e) {
      const double d = double(Bf16ToFloat(got[e])) - want[e];
      err += d * d;
      norm += want[e] * want[e];
    }
    EXPECT_LT(std::sqrt(err / norm), 1e-2) << op.label();  // bf16 output's rounding, and NaN
  }
}

// cuDNN's graphs mask top-left, so a causal query block over more keys than queries is refused;
// the backward is self-attention only. Answered before the device is asked.
TEST(NativeInfer, SdpaOverACacheRefusesWhatItsGraphCannotSay) {
  AttnShape a;
  a.batch = 2, a.heads = 8, a.kv_heads = 2, a.seq = 4, a.kv_seq = 40, a.head_dim = 64;
  a.causal = true;
  Support sup = cudnn::SdpaForward::Supports(a, DType::kBF16);
  EXPECT_FALSE(sup.ok);
  EXPECT_NE(sup.why.find("4 over 40"), std::string::npos) << sup.why;
  a.causal = false;
  a.pass = AttnPass::kBwd;
  EXPECT_FALSE(cudnn::SdpaForward::Supports(a, DType::kBF16).ok);
  EXPECT_EQ(a.KvElems(), 2 * 2 * 40 * 64);
  EXPECT_DOUBLE_EQ(a.FwdFlops(), 4.0 * 2 * 8 * 4 * 40 * 64);
}

TEST(NativeInfer, CountsTokensFlopsAndBf16Bytes) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const InferShape s{Tiny(), InferPhase::kDecode, 4, 32};
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  cublas::NativeInfer op(s, cfg);
  const Cost c = op.cost();
  EXPECT_EQ(c.items, 4);
  EXPECT_DOUBLE_EQ(c.flops, s.Flops());
  EXPECT_DOUBLE_EQ(c.bytes, s.Bytes(DType::kBF16, DType::kBF16));
  EXPECT_DOUBLE_EQ(op.KvBytes(), 2.0 * 2 * 4 * 32 * 33 * 2);
}

TEST(NativeInfer, RefusesWeightsItDoesNotOfferSayingWhy) {
  RunConfig cfg;
  cfg.dtype = DType::kF32;
  const InferShape s{Tiny(), InferPhase::kDecode, 1, 8};
  Support sup = cublas::NativeInfer::Supports(s, cfg);
  EXPECT_FALSE(sup.ok);
  EXPECT_NE(sup.why.find("bf16 or fp8"), std::string::npos) << sup.why;
  // fp8's GEMMs need cuBLASLt's FP8 alignment: sizes multiples of 16.
  cfg.dtype = DType::kFP8E4M3;
  LlamaConfig odd = Tiny();
  odd.ffn = 200;
  sup = cublas::NativeInfer::Supports({odd, InferPhase::kDecode, 1, 8}, cfg);
  EXPECT_FALSE(sup.ok);
  EXPECT_NE(sup.why.find("multiples of 16"), std::string::npos) << sup.why;
  cfg.dtype = DType::kBF16;
  LlamaConfig wide = Tiny();
  wide.head_dim = 512;
  EXPECT_FALSE(cublas::NativeInfer::Supports({wide, InferPhase::kDecode, 1, 8}, cfg).ok);
  LlamaConfig uneven = Tiny();
  uneven.head_dim = 24;
  sup = cublas::NativeInfer::Supports({uneven, InferPhase::kDecode, 1, 8}, cfg);
  EXPECT_FALSE(sup.ok);
  EXPECT_NE(sup.why.find("head_dim"), std::string::npos) << sup.why;
}

// The attention's key split: every key in some chunk, no chunk empty for every row, a decode at
// batch 1 spread over many chunks and a long prefill over one.
TEST(NativeInfer, AttentionSplitCoversEveryKey) {
  for (const cuda::InferAttnDims& a : {cuda::InferAttnDims{1, 1, 2048, 32, 8, 128, 2049},
                                       cuda::InferAttnDims{128, 1, 2048, 32, 8, 128, 2049},
                                       cuda::InferAttnDims{1, 2048, 0, 32, 8, 128, 2048},
                                       cuda::InferAttnDims{3, 1, 9, 4, 2, 16, 10}}) {
    const cuda::AttnSplit sp = cuda::ChooseSplit(a);
    const int64_t keys = a.first_pos + a.new_tokens;
    EXPECT_GE(sp.splits * sp.chunk, keys);
    EXPECT_LT((sp.splits - 1) * sp.chunk, keys);
    EXPECT_EQ(sp.chunk % 32, 0);  // whole key tiles
    EXPECT_LE(sp.splits, cuda::kInferMaxSplits);
    // The partial results, then a counter a block row (at most one a query head).
    EXPECT_GT(cuda::AttnPartialFloats(a, sp),
              size_t(a.batch * a.new_tokens * a.heads * sp.splits * (a.head_dim + 2)));
    EXPECT_LE(cuda::AttnPartialFloats(a, sp),
              size_t(a.batch * a.new_tokens * a.heads * (sp.splits * (a.head_dim + 2) + 1)));
  }
  EXPECT_GT(cuda::ChooseSplit({1, 1, 2048, 32, 8, 128, 2049}).splits, 16);
  EXPECT_EQ(cuda::ChooseSplit({1, 2048, 0, 32, 8, 128, 2048}).splits, 1);
  // Batch 8 and 32: chunks of 512 keys; batch 128: the rows fill the GPU.
  for (int64_t b : {8, 32}) {
    const cuda::AttnSplit sp = cuda::ChooseSplit({b, 1, 2048, 32, 8, 128, 2049});
    EXPECT_EQ(sp.splits, 5) << b;
    EXPECT_EQ(sp.chunk, 512) << b;  // four tiles for each of the block's warps
  }
  EXPECT_EQ(cuda::ChooseSplit({128, 1, 2048, 32, 8, 128, 2049}).splits, 1);
}

}  // namespace
}  // namespace dlb
