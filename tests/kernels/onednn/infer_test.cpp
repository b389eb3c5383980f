#include "kernels/onednn/infer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/common/cpu.h"
#include "kernels/onednn/context.h"
#include "kernels/reference/infer.h"
#include "tests/kernels/testing.h"

namespace dlb {
namespace {

LlamaConfig Small() {
  LlamaConfig m;
  m.name = "small";
  m.layers = 2;
  m.dim = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_dim = 16;
  m.ffn = 96;
  m.vocab = 80;
  m.rope_theta = 500000;
  return m;
}

// Whether this build's oneDNN has the switch int8 weights' decompression needs (the fpmath mode's
// apply_to_int): the op's Supports() says the same.
constexpr bool kDecompresses = DNNL_VERSION_MAJOR > 3 ||
                               (DNNL_VERSION_MAJOR == 3 && DNNL_VERSION_MINOR >= 4);
// oneDNN 3.7 was seen to run every matmul of the step with its x64 kernels (brg_matmul): from it
// on, a CPU with bf16 must get the op, not a refusal.
constexpr bool kKnownToDecompress = DNNL_VERSION_MAJOR > 3 ||
                                    (DNNL_VERSION_MAJOR == 3 && DNNL_VERSION_MINOR >= 7);

// The op, or a skip saying why this CPU or oneDNN cannot run the dtype (bf16 math; int8 weights'
// decompression, which only oneDNN 3.5+ offers as more than its reference implementation).
std::optional<onednn::OneDnnInfer> Make(const InferShape& s, const RunConfig& cfg,
                                        std::string* why) {
  const Support sup = onednn::OneDnnInfer::Supports(s, cfg);
  if (!sup.ok) {
    *why = sup.why;
    return std::nullopt;
  }
  try {
    return std::optional<onednn::OneDnnInfer>(std::in_place, s, cfg);
  } catch (const Unsupported& e) {
    *why = e.what();
    return std::nullopt;
  }
}

class OneDnnInferTest : public ::testing::TestWithParam<std::tuple<InferPhase, int, DType>> {};

TEST_P(OneDnnInferTest, LogitsMatchTheFloat64Step) {
  const auto [phase, batch, dt] = GetParam();
  const InferShape s{Small(), phase, batch, phase == InferPhase::kPrefill ? 7 : 9};
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.seed = 11;
  std::string why;
  std::optional<onednn::OneDnnInfer> op = Make(s, cfg, &why);
  if (!op) GTEST_SKIP() << why;
  op->Run();
  op->Run();  // a second step appends at the same place: the same logits
  const HostTensor got = op->Output();
  // int8: the matrices are the reference's own int8 values (dequantised exactly), the embedding,
  // norms and cache bf16, as the op holds them.
  const DType rest = dt == DType::kInt8 ? DType::kBF16 : dt;
  RefCache cache = SeededRefCache(s, cfg.seed, rest);
  const Vec want =
      RefInferStep(s, SeededRefLlama(s.model, cfg.seed, dt, rest), SeededTokens(11, s), &cache);
  ASSERT_EQ(got.data.size(), want.size());
  EXPECT_LT(testing::RelativeL2(got.data, want), dt == DType::kF32 ? 1e-5 : 1e-2);
}

INSTANTIATE_TEST_SUITE_P(
    Steps, OneDnnInferTest,
    ::testing::Combine(::testing::Values(InferPhase::kPrefill, InferPhase::kDecode),
                       ::testing::Values(1, 3),
                       ::testing::Values(DType::kF32, DType::kBF16, DType::kInt8)));

TEST(OneDnnInfer, Int8WeightsAreRunOrRefusedWithTheReason) {
  RunConfig cfg;
  cfg.dtype = DType::kInt8;
  const InferShape s{Small(), InferPhase::kDecode, 1, 8};
  const Support sup = onednn::OneDnnInfer::Supports(s, cfg);
  if (!kDecompresses) {
    EXPECT_FALSE(sup.ok);
    EXPECT_NE(sup.why.find("weights decompression"), std::string::npos) << sup.why;
    return;
  }
  EXPECT_EQ(sup.ok, onednn::HasBf16()) << sup.why;
  if (!sup.ok) EXPECT_NE(sup.why.find("bf16"), std::string::npos) << sup.why;
  std::string why;
  std::optional<onednn::OneDnnInfer> op = Make(s, cfg, &why);
  if (!op) {
    // Found unsupported by oneDNN itself: the reason names the matmul it lacks.
    EXPECT_FALSE(kKnownToDecompress) << why;
    EXPECT_NE(why.find("bf16 x s8 matmul"), std::string::npos) << why;
    return;
  }
  EXPECT_NE(op->label().find("int8 weights"), std::string::npos) << op->label();
  EXPECT_NE(op->label().rfind("ref", 0), 0u) << op->label();  // not the reference matmul
  // One byte a matrix weight, the rest bf16.
  EXPECT_DOUBLE_EQ(op->cost().bytes, s.Bytes(DType::kInt8, DType::kBF16));
  EXPECT_DOUBLE_EQ(op->KvBytes(), s.KvReadBytes(DType::kBF16) + s.KvWrittenBytes(DType::kBF16));
}

// A step whose every product is below 2^16 multiply-adds is planned for and run on one thread
// (the label says so), and the run's thread count is back after it; a larger step keeps them.
TEST(OneDnnInfer, AStepTooSmallToSplitRunsOnOneThreadAndSaysSo) {
  const int run_threads = onednn::Threads();
  if (run_threads < 2) GTEST_SKIP() << "one thread here: nothing to keep small work off";
  RunConfig cfg;
  onednn::OneDnnInfer small({Small(), InferPhase::kDecode, 1, 9}, cfg);
  EXPECT_NE(small.label().find("threads 1 of the run's " + std::to_string(run_threads) +
                               " (every product below 2^16 multiply-adds"),
            std::string::npos)
      << small.label();
  EXPECT_EQ(onednn::Threads(), run_threads);
  small.Run();
  EXPECT_EQ(onednn::Threads(), run_threads);
  // 8 x 4 tokens x 64 x 192 multiply-adds in gate/up: split.
  onednn::OneDnnInfer large({Small(), InferPhase::kPrefill, 8, 4}, cfg);
  EXPECT_NE(large.label().find("threads " + std::to_string(run_threads)), std::string::npos)
      << large.label();
  EXPECT_EQ(large.label().find("threads 1 of"), std::string::npos) << large.label();
}

// A decode step attends in AVX-512 loops where the CPU has them (the label says so): their keys
// in blocks of 64 and of 16 and a part block (ctx 100: 101 keys), query heads in passes of 4 and
// of 1 (10 heads over 2 kv heads: 5 a kv head), head dims of 16 and 32, on one thread and (8
// sequences of 301 keys) split over the run's, against the float64 step as the cases above.
TEST(OneDnnInfer, DecodeAttentionInLoopsMatchesTheFloat64Step) {
  LlamaConfig five = Small();
  five.heads = 10;
  five.head_dim = 32;
  const bool avx512 = HasFlag(HostCpu(), "avx512f") && HasFlag(HostCpu(), "avx512bw") &&
                      HasFlag(HostCpu(), "avx512vl");
  for (const InferShape& s : {InferShape{Small(), InferPhase::kDecode, 1, 100},
                              InferShape{five, InferPhase::kDecode, 1, 70},
                              InferShape{Small(), InferPhase::kDecode, 2, 47},
                              InferShape{Small(), InferPhase::kDecode, 8, 300}})
    for (DType dt : {DType::kF32, DType::kBF16}) {
      RunConfig cfg;
      cfg.dtype = dt;
      cfg.seed = 11;
      std::string why;
      std::optional<onednn::OneDnnInfer> op = Make(s, cfg, &why);
      if (!op) continue;  // bf16 on a CPU without it
      if (avx512)
        EXPECT_NE(op->label().find("attention in AVX-512 loops"), std::string::npos) << op->label();
      op->Run();
      op->Run();
      RefCache cache = SeededRefCache(s, cfg.seed, dt);
      const Vec want =
          RefInferStep(s, SeededRefLlama(s.model, cfg.seed, dt, dt), SeededTokens(11, s), &cache);
      const HostTensor got = op->Output();
      ASSERT_EQ(got.data.size(), want.size());
      EXPECT_LT(testing::RelativeL2(got.data, want), dt == DType::kF32 ? 1e-5 : 1e-2)
          << Name(dt) << " ctx " << s.ctx << " heads " << s.model.heads;
    }
}

TEST(OneDnnInfer, EachMatmulIsOneOfOneDnnsOwnImplementationsAndTheLabelSaysWhich) {
  // Every product of both dtypes the CPU has: timed among oneDNN's implementations, a
  // non-reference one chosen (the float64 step tests check what it computes).
  for (DType dt : {DType::kF32, DType::kBF16}) {
    RunConfig cfg;
    cfg.dtype = dt;
    if (!onednn::OneDnnInfer::Supports({Small(), InferPhase::kDecode, 2, 9}, cfg).ok) continue;
    onednn::OneDnnInfer op({Small(), InferPhase::kDecode, 2, 9}, cfg);
    const std::string label = op.label();
    EXPECT_NE(label.find("matmuls (each product the fastest of oneDNN's implementations, "),
              std::string::npos)
        << label;
    const std::string impls = label.substr(0, label.find(" matmuls"));
    EXPECT_FALSE(impls.empty()) << label;
    EXPECT_EQ(impls.find("ref"), std::string::npos) << label;
  }
}

TEST(OneDnnInfer, CountsTokensFlopsAndBytesOfTheShape) {
  const InferShape s{Small(), InferPhase::kDecode, 4, 32};
  RunConfig cfg;
  onednn::OneDnnInfer op(s, cfg);
  const Cost c = op.cost();
  EXPECT_EQ(c.items, 4);
  EXPECT_DOUBLE_EQ(c.flops, s.Flops());
  EXPECT_DOUBLE_EQ(c.bytes, s.Bytes(DType::kF32, DType::kF32));
  EXPECT_DOUBLE_EQ(op.KvBytes(), 2.0 * 2 * 4 * 32 * 33 * 4);
}

TEST(OneDnnInfer, RefusesWeightsItDoesNotOffer) {
  RunConfig cfg;
  cfg.dtype = DType::kFP8E4M3;
  const Support sup = onednn::OneDnnInfer::Supports({Small(), InferPhase::kDecode, 1, 8}, cfg);
  EXPECT_FALSE(sup.ok);
  EXPECT_NE(sup.why.find("fp8 weights are not offered"), std::string::npos) << sup.why;
}

TEST(OneDnnInfer, RefusesImpossibleShapesInEveryDtypeSayingWhy) {
  LlamaConfig odd = Small();
  odd.kv_heads = 3;  // 4 heads do not share 3 kv heads
  for (DType dt : {DType::kF32, DType::kBF16, DType::kInt8}) {
    RunConfig cfg;
    cfg.dtype = dt;
    for (const InferShape& s : {InferShape{odd, InferPhase::kDecode, 1, 8},
                                InferShape{Small(), InferPhase::kDecode, 0, 8},
                                InferShape{Small(), InferPhase::kPrefill, 1, 0}}) {
      const Support sup = onednn::OneDnnInfer::Supports(s, cfg);
      EXPECT_FALSE(sup.ok) << Name(dt);
      EXPECT_NE(sup.why.find("multiple of kv_heads"), std::string::npos) << sup.why;
      EXPECT_THROW(onednn::OneDnnInfer(s, cfg), Unsupported) << Name(dt);
    }
  }
}

}  // namespace
}  // namespace dlb
