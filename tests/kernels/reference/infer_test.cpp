#include "kernels/reference/infer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace dlb {
namespace {

TEST(RefInfer, RmsNormByHand) {
  // rms of (3, 4) is sqrt(12.5).
  const Vec y = RefRmsNorm({3, 4, 0, 2}, {1, 2}, 0);
  const double r = std::sqrt(12.5);
  EXPECT_NEAR(y[0], 3 / r, 1e-12);
  EXPECT_NEAR(y[1], 8 / r, 1e-12);
  EXPECT_NEAR(y[2], 0, 1e-12);
  EXPECT_NEAR(y[3], 2 * std::sqrt(2.0), 1e-12);  // (0, 2): rms sqrt(2)
}

TEST(RefInfer, RopeRotatesPairsByPositionTimesFrequency) {
  // head_dim 4: pairs (0, 2) at frequency 1 and (1, 3) at theta^-1/2 = 1/100.
  Vec x = {1, 1, 0, 0, 1, 1, 0, 0};
  RefRope(&x, {0, 3}, 1, 4, 10000);
  EXPECT_EQ(x[0], 1);  // position 0 unchanged
  EXPECT_EQ(x[2], 0);
  EXPECT_NEAR(x[4], std::cos(3.0), 1e-12);
  EXPECT_NEAR(x[6], std::sin(3.0), 1e-12);
  EXPECT_NEAR(x[5], std::cos(0.03), 1e-12);
  EXPECT_NEAR(x[7], std::sin(0.03), 1e-12);
}

TEST(RefInfer, LinearIsXTimesWTransposed) {
  // x (1 x 2) = (1, 2); W (3 x 2) rows (1, 0), (0, 1), (1, 1).
  const Vec y = RefLinear({1, 2}, {1, 0, 0, 1, 1, 1}, 2, 3);
  EXPECT_EQ(y, (Vec{1, 2, 3}));
}

TEST(RefInfer, SwiGluByHand) {
  // silu(1 * 1) * (1 * 2) * 3.
  const Vec y = RefSwiGlu({1}, {1}, {2}, {3}, 1, 1);
  EXPECT_NEAR(y[0], 1 / (1 + std::exp(-1.0)) * 2 * 3, 1e-12);
}

TEST(RefInfer, GqaAttentionIsCausalAndSharesKvHeads) {
  // Two query heads over one kv head, head_dim 1, two keys: scores 0 and ln 3 give weights 1/4,
  // 3/4; the token at position 0 sees key 0 alone.
  const Vec k = {0, std::log(3.0)}, v = {2, 6};
  const Vec o = RefGqaAttention({1, 1, 1, 1}, {0, 1}, k, v, 2, 1, 1, 2);
  EXPECT_NEAR(o[0], 2, 1e-12);
  EXPECT_NEAR(o[1], 2, 1e-12);
  EXPECT_NEAR(o[2], 0.25 * 2 + 0.75 * 6, 1e-12);
  EXPECT_NEAR(o[3], 0.25 * 2 + 0.75 * 6, 1e-12);
}

LlamaConfig Tiny() {
  LlamaConfig m;
  m.name = "t";
  m.layers = 2;
  m.dim = 16;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_dim = 4;
  m.ffn = 24;
  m.vocab = 32;
  m.rope_theta = 500000;
  return m;
}

TEST(RefInfer, ZeroLayersLeaveTheEmbeddingToTheHead) {
  // Every layer matrix zero: attention and MLP add nothing, so the logits are the final norm of the
  // token's embedding row times the LM head: embed (3, 4), norm weights (1, 1), head rows (1, 0)
  // and (1, 1).
  LlamaConfig m = Tiny();
  m.layers = 1;
  m.dim = 2;
  m.heads = m.kv_heads = 1;
  m.head_dim = 2;
  m.ffn = 1;
  m.vocab = 2;
  m.norm_eps = 1e-300;
  RefLlama w;
  RefLlama::Layer y;
  y.attn_norm = y.ffn_norm = {1, 1};
  y.wq = y.wk = y.wv = y.wo = Vec(4, 0.0);
  y.w1 = y.w3 = y.w2 = Vec(2, 0.0);
  w.layers = {y};
  w.embed = {0, 0, 3, 4};
  w.final_norm = {1, 1};
  w.lm_head = {1, 0, 1, 1};
  InferShape s{m, InferPhase::kPrefill, 1, 1};
  RefCache c = SeededRefCache(s, 1, DType::kF32);
  const Vec logits = RefInferStep(s, w, {1}, &c);
  const double r = std::sqrt(12.5);
  ASSERT_EQ(logits.size(), 2u);
  EXPECT_NEAR(logits[0], 3 / r, 1e-12);
  EXPECT_NEAR(logits[1], 7 / r, 1e-12);
}

// fp8 weights beside a bf16 embedding and norms: each tensor is the one-dtype model's of its own
// dtype.
TEST(RefInfer, MatricesAndTheRestTakeTheirOwnDtypes) {
  const LlamaConfig m = Tiny();
  const RefLlama mixed = SeededRefLlama(m, 3, DType::kFP8E4M3, DType::kBF16);
  const RefLlama fp8 = SeededRefLlama(m, 3, DType::kFP8E4M3);
  const RefLlama bf16 = SeededRefLlama(m, 3, DType::kBF16);
  EXPECT_EQ(mixed.layers[1].wq, fp8.layers[1].wq);
  EXPECT_EQ(mixed.layers[0].w2, fp8.layers[0].w2);
  EXPECT_EQ(mixed.lm_head, fp8.lm_head);
  EXPECT_NE(mixed.lm_head, bf16.lm_head);
  EXPECT_EQ(mixed.embed, bf16.embed);
  EXPECT_EQ(mixed.final_norm, bf16.final_norm);
  EXPECT_EQ(mixed.layers[1].ffn_norm, bf16.layers[1].ffn_norm);
}

TEST(RefInfer, DecodeAfterPrefillMatchesALongerPrefill) {
  // Prefill 5 tokens, then decode the 6th over that cache: the logits equal a prefill of all 6.
  const LlamaConfig m = Tiny();
  const RefLlama w = SeededRefLlama(m, 7, DType::kF32);
  const std::vector<int64_t> tokens = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};  // 2 sequences of 6
  InferShape full{m, InferPhase::kPrefill, 2, 6};
  RefCache c6 = SeededRefCache(full, 7, DType::kF32);
  const Vec want = RefInferStep(full, w, tokens, &c6);

  InferShape head{m, InferPhase::kPrefill, 2, 5};
  RefCache c5 = SeededRefCache(head, 7, DType::kF32);
  RefInferStep(head, w, {3, 1, 4, 1, 5, 2, 6, 5, 3, 5}, &c5);
  InferShape step{m, InferPhase::kDecode, 2, 5};
  RefCache cd = SeededRefCache(step, 7, DType::kF32);
  ASSERT_EQ(cd.capacity, 6);
  for (size_t l = 0; l < cd.k.size(); ++l)
    for (int64_t bh = 0; bh < 2 * m.kv_heads; ++bh)
      for (int64_t p = 0; p < 5; ++p)
        for (int64_t d = 0; d < m.head_dim; ++d) {
          cd.k[l][(bh * 6 + p) * m.head_dim + d] = c5.k[l][(bh * 5 + p) * m.head_dim + d];
          cd.v[l][(bh * 6 + p) * m.head_dim + d] = c5.v[l][(bh * 5 + p) * m.head_dim + d];
        }
  const Vec got = RefInferStep(step, w, {9, 8}, &cd);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-9) << i;
  // The decode step wrote its keys where the longer prefill did.
  for (size_t i = 0; i < c6.k[1].size(); ++i) EXPECT_NEAR(cd.k[1][i], c6.k[1][i], 1e-12);
}

TEST(RefInfer, SeededCacheFillsThePrefixAndLeavesTheNewPosition) {
  const InferShape s{Tiny(), InferPhase::kDecode, 1, 3};
  const RefCache c = SeededRefCache(s, 5, DType::kBF16);
  ASSERT_EQ(c.k.size(), 2u);
  const std::vector<float> k1 = SeededCache(5, s, 1, false, DType::kBF16);
  // kv head 1, position 2, element 3; position 3 is the step's own, still zero.
  EXPECT_EQ(c.k[1][(1 * 4 + 2) * 4 + 3], k1[(1 * 3 + 2) * 4 + 3]);
  EXPECT_EQ(c.k[1][(1 * 4 + 3) * 4 + 3], 0);
  EXPECT_NE(SeededCache(5, s, 1, true, DType::kBF16), k1);
}

TEST(InferShape, CountsFlopsAndBytesOfAStep) {
  LlamaConfig m = Tiny();
  const InferShape d{m, InferPhase::kDecode, 2, 10};
  // Per token: 2 x (16 x (16 + 2 x 8) + 16 x 16 + 3 x 16 x 24) per layer; attention 4 x 16 x 11.
  const double per_token = 2.0 * (16 * 32 + 256 + 3 * 16 * 24) * 2 + 4.0 * 16 * 11 * 2;
  EXPECT_DOUBLE_EQ(d.Flops(), 2 * per_token + 2 * 2.0 * 16 * 32);
  // KV read: 2 layers x K and V x 2 sequences x 8 x 10 positions, in bf16.
  EXPECT_DOUBLE_EQ(d.KvReadBytes(DType::kBF16), 2.0 * 2 * 2 * 8 * 10 * 2);
  EXPECT_DOUBLE_EQ(d.KvWrittenBytes(DType::kBF16), 2.0 * 2 * 2 * 8 * 1 * 2);
  const InferShape p{m, InferPhase::kPrefill, 1, 4};
  EXPECT_DOUBLE_EQ(p.KvReadBytes(DType::kF32), 0);
  // Causal: 1 + 2 + 3 + 4 keys over the prompt.
  EXPECT_DOUBLE_EQ(p.Flops(),
                   4 * 2.0 * (16 * 32 + 256 + 3 * 16 * 24) * 2 + 4.0 * 16 * 10 * 2 + 2.0 * 16 * 32);
}

TEST(InferShape, CountsEightBitMatricesAtOneByteAndTheRestInItsDtype) {
  const InferShape d{Tiny(), InferPhase::kDecode, 2, 10};
  // Matrices: 2 layers x (16 x 32 + 256 + 3 x 16 x 24) + the LM head 32 x 16; norms: 2 x 2 x 16
  // + 16; the embedding rows of 2 tokens; the cache; the f32 logits.
  const double matrices = 2.0 * (16 * 32 + 256 + 3 * 16 * 24) + 32 * 16, norms = 2 * 2 * 16 + 16;
  const double kv = d.KvReadBytes(DType::kBF16) + d.KvWrittenBytes(DType::kBF16);
  EXPECT_DOUBLE_EQ(d.Bytes(DType::kInt8, DType::kBF16),
                   matrices + (norms + 2 * 16) * 2 + kv + 4.0 * 2 * 32);
  EXPECT_DOUBLE_EQ(d.Bytes(DType::kBF16, DType::kBF16),
                   (matrices + norms + 2 * 16) * 2 + kv + 4.0 * 2 * 32);
  EXPECT_DOUBLE_EQ(Tiny().StepMatrixParams() + norms, Tiny().StepParams());
}

TEST(InferWeights, Int8MatricesAreIntegersTimesTheirScale) {
  // 64 inputs: WeightScale 2^-3, int8's storage 2^-7.
  const float scale = MatrixScale(64, DType::kInt8);
  EXPECT_EQ(scale, 1.0f / 1024);
  EXPECT_EQ(MatrixScale(64, DType::kBF16), WeightScale(64));
  const std::vector<float> w = SeededMatrix(3, 100, 8, 64, DType::kInt8);
  int distinct_from_bf16 = 0;
  const std::vector<float> b = SeededMatrix(3, 100, 8, 64, DType::kBF16);
  for (size_t i = 0; i < w.size(); ++i) {
    const float q = w[i] / scale;
    EXPECT_EQ(q, std::nearbyint(q)) << i;
    EXPECT_GE(q, -128);
    EXPECT_LE(q, 127);
    distinct_from_bf16 += w[i] != b[i];
  }
  EXPECT_GT(distinct_from_bf16, 0);  // rounded to int8, not only to bf16
}

TEST(InferWeights, ScalesArePowersOfTwoNearOneOverSqrtIn) {
  EXPECT_EQ(WeightScale(4096), 1.0f / 64);
  EXPECT_EQ(WeightScale(14336), 1.0f / 128);  // sqrt = 119.7
  const std::vector<float> w = SeededMatrix(3, 100, 4, 64, DType::kBF16);
  for (float x : w) EXPECT_LE(std::fabs(x), 1.0f / 8);
}

}  // namespace
}  // namespace dlb
