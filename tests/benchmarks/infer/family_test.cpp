// The inference family's own code: its model rows, the tiers' points, its verifier.
#include "benchmarks/infer/family.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/reference/infer.h"
#include "tests/fixtures/testing.h"
#include "tests/support/temp_dir.h"

namespace dlb::infer {
namespace {

using dlb::testing::ErrorOf;

const std::string kHeader =
    "name,count,layers,dim,heads,kv_heads,head_dim,ffn,vocab,rope_theta,norm_eps,tier,network\n";

TEST(InferFamily, ReadsModelRows) {
  const dlb::testing::TempDir dir("infer_family");
  auto path = dir.Write("infer_ok.csv", "# comment\n" + kHeader +
                                            "a,1,2,64,4,2,16,192,256,10000,1e-5,smoke,a\n"
                                            "b,1,32,4096,32,8,128,14336,128256,5e5,1e-6,full,b\n");
  const std::vector<Model> rows = LoadModels(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].config.name, "a");
  EXPECT_EQ(rows[0].config.ffn, 192);
  EXPECT_EQ(rows[1].config.kv_heads, 8);
  EXPECT_EQ(rows[1].config.vocab, 128256);
  EXPECT_EQ(rows[1].config.rope_theta, 500000);
  EXPECT_EQ(rows[1].config.norm_eps, 1e-6);
  EXPECT_EQ(rows[1].basics.tier, Tier::kFull);
}

TEST(InferFamily, MalformedRowsNameFileAndLine) {
  const dlb::testing::TempDir dir("infer_family");
  struct Case {
    std::string body, expect;
  } cases[] = {
      {"a,1,2,64,4,x,16,192,256,10000,1e-5,smoke,a\n", "infer_bad.csv:2: column 'kv_heads'"},
      {"a,1,2,64,4,3,16,192,256,10000,1e-5,smoke,a\n", "infer_bad.csv:2: layers, dim, heads"},
      {"a,1,2,64,4,2,15,192,256,10000,1e-5,smoke,a\n", "head_dim even"},
      {"a,1,2,64,4,2,16,192,256,ten,1e-5,smoke,a\n",
       "infer_bad.csv:2: column 'rope_theta': expected a number, got 'ten'"},
      {"a,1,2,64,4,2,16,192,256,10000,-1,smoke,a\n", "infer_bad.csv:2: layers, dim, heads"},
      {"a,1,2,64,4,2,16,192,256,10000,1e-5,smoke\n", "infer_bad.csv:2: expected 13 fields, got 12"},
  };
  for (const auto& c : cases) {
    auto path = dir.Write("infer_bad.csv", kHeader + c.body);
    const std::string err = ErrorOf([&] { LoadModels(path); });
    EXPECT_NE(err.find(c.expect), std::string::npos) << "got: " << err << "\nwant: " << c.expect;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

Model Named(const std::string& name) {
  for (const auto& f : WorkloadFiles("infer_"))
    for (Model& m : LoadModels(f))
      if (m.basics.name == name) return m;
  ADD_FAILURE() << name << " not shipped";
  return {};
}

TEST(InferFamily, ShippedModelsHaveTheirPublishedShapes) {
  const LlamaConfig l3 = Named("llama3_8b").config;
  EXPECT_EQ(l3.layers, 32);
  EXPECT_EQ(l3.QDim(), 4096);
  EXPECT_EQ(l3.KvDim(), 1024);
  EXPECT_EQ(l3.ffn, 14336);
  // The bf16 weights a decode step reads: 15.0 GB with the LM head, the embedding a lookup.
  EXPECT_NEAR(l3.StepParams() * 2 / 1e9, 15.0, 0.05);
  const LlamaConfig l2 = Named("llama2_7b").config;
  EXPECT_EQ(l2.heads, l2.kv_heads);
  EXPECT_EQ(Named("llama3_2_1b").config.head_dim, 64);
  EXPECT_EQ(Named("tiny").basics.tier, Tier::kSmoke);
}

TEST(InferFamily, DefaultPointsHoldTheGpuTargetsAndKeepTheCpuShort) {
  ASSERT_EQ(dlb::Opts().tier, Tier::kDefault);
  const auto has = [](const std::vector<Point>& ps, InferPhase ph, int b, int64_t ctx) {
    return std::any_of(ps.begin(), ps.end(), [&](const Point& p) {
      return p.phase == ph && p.batch == b && p.ctx == ctx;
    });
  };
  const LlamaConfig l3 = Named("llama3_8b").config;
  const std::vector<Point> gpu = Points(true, l3, DType::kBF16);
  for (int b : {1, 8, 32, 128}) EXPECT_TRUE(has(gpu, InferPhase::kDecode, b, 2048)) << b;
  EXPECT_TRUE(has(gpu, InferPhase::kPrefill, 1, 2048));
  const std::vector<Point> fp8 = Points(true, l3, DType::kFP8E4M3);
  EXPECT_TRUE(has(fp8, InferPhase::kDecode, 32, 2048));
  EXPECT_FALSE(has(fp8, InferPhase::kDecode, 8, 2048));
  // The CPU: only the tiny model, both phases.
  EXPECT_TRUE(Points(false, l3, DType::kBF16).empty());
  EXPECT_TRUE(Points(false, Named("llama3_2_1b").config, DType::kBF16).empty());
  const std::vector<Point> tiny = Points(false, Named("tiny").config, DType::kF32);
  EXPECT_TRUE(has(tiny, InferPhase::kPrefill, 8, 128));
  EXPECT_TRUE(has(tiny, InferPhase::kDecode, 1, 512));
  // int8 weights beside f32 and bf16: decode alone, at the same batches.
  const std::vector<DType> cpu = DTypesOn(false, "onednn");
  EXPECT_NE(std::find(cpu.begin(), cpu.end(), DType::kInt8), cpu.end());
  const std::vector<Point> int8 = Points(false, Named("tiny").config, DType::kInt8);
  EXPECT_TRUE(has(int8, InferPhase::kDecode, 1, 512));
  EXPECT_TRUE(has(int8, InferPhase::kDecode, 8, 512));
  EXPECT_TRUE(std::none_of(int8.begin(), int8.end(),
                           [](const Point& p) { return p.phase == InferPhase::kPrefill; }));
}

TEST(InferFamily, VerifierComparesTheLogitsOrSaysWhyNot) {
  RunConfig cfg;
  cfg.seed = 3;
  const InferShape tiny{Named("tiny").config, InferPhase::kDecode, 2, 5};
  RefCache cache = SeededRefCache(tiny, cfg.seed, cfg.dtype);
  const Vec want = RefInferStep(tiny, SeededRefLlama(tiny.model, cfg.seed, cfg.dtype),
                                SeededTokens(cfg.seed, tiny), &cache);
  HostTensor right{{2, tiny.model.vocab}, std::vector<float>(want.begin(), want.end())};
  const Verdict ok = Verifier(tiny, cfg, false)(OutputReader(right));
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.disposition, Disposition::kVerified);
  HostTensor wrong = right;
  for (size_t i = 0; i < wrong.data.size(); i += 4) wrong.data[i] *= 1.5f;
  EXPECT_FALSE(Verifier(tiny, cfg, false)(OutputReader(wrong)).ok);
  const InferShape big{Named("llama3_8b").config, InferPhase::kDecode, 1, 2048};
  const Verdict v = Verifier(big, cfg, false)(OutputReader(right));
  EXPECT_EQ(v.disposition, Disposition::kNotVerified);
  EXPECT_NE(v.detail.find("llama3_8b"), std::string::npos) << v.detail;
#ifndef DLBENCH_HAVE_TORCH_CUDA
  // A GPU case is checked against LibTorch's eager f32 step, which needs LibTorch with CUDA.
  const Verdict gpu = Verifier(big, cfg, true)(OutputReader(right));
  EXPECT_TRUE(gpu.ok);
  EXPECT_EQ(gpu.disposition, Disposition::kNotVerified);
  EXPECT_NE(gpu.detail.find("llama3_8b"), std::string::npos) << gpu.detail;
  EXPECT_NE(gpu.detail.find("LibTorch with CUDA"), std::string::npos) << gpu.detail;
#endif
}

// LibTorch's steps: bf16 alone on the GPU; f32 and bf16 on the CPU, without oneDNN's int8 weights.
TEST(InferFamily, LibTorchsStepsRunTheirOwnDtypes) {
  EXPECT_EQ(DTypesOn(true, "torch"), std::vector<DType>{DType::kBF16});
  const std::vector<DType> native = DTypesOn(true, "native");
  EXPECT_NE(std::find(native.begin(), native.end(), DType::kBF16), native.end());
  EXPECT_EQ(DTypesOn(false, "torch"), (std::vector<DType>{DType::kF32, DType::kBF16}));
  const std::vector<DType> onednn = DTypesOn(false, "onednn");
  EXPECT_NE(std::find(onednn.begin(), onednn.end(), DType::kInt8), onednn.end());
}

}  // namespace
}  // namespace dlb::infer
