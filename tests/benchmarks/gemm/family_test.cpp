// The GEMM family's own code: its workload rows, its verifier and its flag.
#include "benchmarks/gemm/family.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "kernels/common/error.h"
#include "kernels/common/fill.h"
#include "kernels/reference/gemm.h"
#include "tests/fixtures/testing.h"
#include "tests/support/temp_dir.h"

namespace dlb::gemm {
namespace {

using dlb::testing::ErrorOf;

TEST(GemmFamily, ReadsRowsWithBatchAsM) {
  const dlb::testing::TempDir dir("gemm_family");
  auto path = dir.Write("gemm_ok.csv",
                        "# comment\nname,m,n,k,ta,tb,count,tier,network\n\n"
                        "square.256,256,256,256,0,0,1,smoke,\nfc.x,bs,1000,512,0,1,2,full,mlp\n");
  auto rows = LoadWorkloads(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].basics.name, "square.256");
  EXPECT_EQ(rows[0].basics.network, "");
  EXPECT_EQ(rows[0].shape.m, 256);
  EXPECT_EQ(rows[0].basics.tier, Tier::kSmoke);
  EXPECT_TRUE(rows[1].m_is_batch);
  EXPECT_TRUE(rows[1].shape.tb);
  EXPECT_EQ(rows[1].basics.count, 2);
  EXPECT_EQ(rows[1].basics.network, "mlp");
  EXPECT_EQ(rows[1].basics.tier, Tier::kFull);
}

TEST(GemmFamily, MalformedRowsNameFileAndLine) {
  const dlb::testing::TempDir dir("gemm_family");
  const std::string header = "name,m,n,k,ta,tb,count,tier\n";
  struct Case {
    std::string body, expect;
  } cases[] = {
      {"a,1,2,x,0,0,1,smoke\n", "gemm_bad.csv:2: column 'k'"},
      {"a,1,2,3,0,0,1\n", "gemm_bad.csv:2: expected 8 fields, got 7"},
      {"a,1,2,3,2,0,1,smoke\n", "gemm_bad.csv:2: column 'ta'"},
      {"a,1,2,3,0,0,1,huge\n", "gemm_bad.csv:2: column 'tier'"},
      {"a,0,2,3,0,0,1,smoke\n", "gemm_bad.csv:2: m, n, k and count must be positive"},
      {"a,1,2,3,0,0,0,smoke\n", "gemm_bad.csv:2: count must be positive"},
      {"A b,1,2,3,0,0,1,smoke\n", "gemm_bad.csv:2: column 'name'"},
      {"a,1,2,3,0,0,1,smoke\na,1,2,3,0,0,1,smoke\n", "gemm_bad.csv:3: column 'name': 'a' repeats"},
  };
  for (const auto& c : cases) {
    auto path = dir.Write("gemm_bad.csv", header + c.body);
    std::string err = ErrorOf([&] { LoadWorkloads(path); });
    EXPECT_NE(err.find(c.expect), std::string::npos) << "got: " << err << "\nwant: " << c.expect;
  }
}

// Square and DeepBench rows belong to no network; every fully connected layer names its own.
TEST(GemmFamily, ShippedFilesParseAndNameTheirNetworks) {
  for (const auto& f : WorkloadFiles("gemm_")) {
    auto rows = LoadWorkloads(f);
    EXPECT_FALSE(rows.empty()) << f;
    for (const auto& w : rows) {
      if (w.basics.name.rfind("fc.", 0) == 0)
        EXPECT_FALSE(w.basics.network.empty()) << w.basics.name;
      else
        EXPECT_EQ(w.basics.network, "") << w.basics.name;
    }
  }
}

TEST(GemmFamily, VerifierAcceptsTheExactProductAndRejectsAPerturbedOne) {
  GemmShape s{9, 7, 5, true, false};
  RunConfig cfg;
  auto a = SeededValues(TensorSeed(cfg.seed, 0), size_t(s.m * s.k), cfg.dtype);
  auto b = SeededValues(TensorSeed(cfg.seed, 1), size_t(s.k * s.n), cfg.dtype);
  auto ref = ReferenceGemm(s, a, b);
  HostTensor out{{s.m, s.n}, std::vector<float>(ref.begin(), ref.end())};
  VerifyFn verify = Verifier(s, cfg);
  Verdict v = verify(out);
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_EQ(v.disposition, Disposition::kVerified);
  EXPECT_EQ(v.checked, size_t(s.m * s.n));
  out.data[3] += 0.5f;
  EXPECT_FALSE(verify(out).ok);
  out.data.pop_back();
  EXPECT_FALSE(verify(out).ok);
}

TEST(GemmFamily, AlgoAndFp8AccumFlagsAreTheFamilysOwn) {
  auto flags = Flags();
  ASSERT_EQ(flags.size(), 2u);
  EXPECT_EQ(flags[0].name, "gemm_algo");
  EXPECT_EQ(flags[0].set("search"), "");
  EXPECT_EQ(FamilyOptions().algo, Algo::kSearch);
  EXPECT_NE(flags[0].set("best"), "");
  EXPECT_EQ(flags[0].set("heuristic"), "");
  EXPECT_EQ(FamilyOptions().algo, Algo::kHeuristic);
  EXPECT_EQ(flags[1].name, "gemm_fp8_accum");
  EXPECT_EQ(FamilyOptions().fp8_accum, Fp8Accum::kFull);
  EXPECT_EQ(flags[1].set("fast"), "");
  EXPECT_EQ(FamilyOptions().fp8_accum, Fp8Accum::kFast);
  EXPECT_NE(flags[1].set("turbo"), "");
  EXPECT_EQ(flags[1].set("full"), "");
}

// int8: the int32 result is exact, so is the check: one element off by one step (2^-14 as a
// dequantised value) fails, however small against the norm.
TEST(GemmFamily, Int8VerifierIsExact) {
  GemmShape s{33, 17, 64, false, true};
  RunConfig cfg;
  cfg.dtype = DType::kInt8;
  auto a = SeededValues(TensorSeed(cfg.seed, 0), size_t(s.m * s.k), DType::kInt8);
  auto b = SeededValues(TensorSeed(cfg.seed, 1), size_t(s.k * s.n), DType::kInt8);
  auto ref = ReferenceGemm(s, a, b);
  HostTensor out{{s.m, s.n}, std::vector<float>(ref.begin(), ref.end())};
  VerifyFn verify = Verifier(s, cfg);
  Verdict v = verify(out);
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_EQ(v.tolerance, 0.0);
  out.data[5] += 1.0f / 16384;
  EXPECT_FALSE(verify(out).ok);
}

// fp8_e5m2: A is e5m2 and B e4m3; the product of those verifies, with bf16's tolerance.
TEST(GemmFamily, Fp8E5M2VerifierReadsEachOperandInItsOwnType) {
  GemmShape s{16, 32, 48};
  RunConfig cfg;
  cfg.dtype = DType::kFP8E5M2;
  auto a = SeededValues(TensorSeed(cfg.seed, 0), size_t(s.m * s.k), DType::kFP8E5M2);
  auto b = SeededValues(TensorSeed(cfg.seed, 1), size_t(s.k * s.n), DType::kFP8E4M3);
  auto ref = ReferenceGemm(s, a, b);
  std::vector<float> bf16;
  for (double r : ref) bf16.push_back(RoundTo(DType::kBF16, float(r)));  // the op writes bf16
  Verdict v = Verifier(s, cfg)(HostTensor{{s.m, s.n}, bf16});
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_EQ(v.tolerance, 1e-2);
  for (float& x : bf16) x *= 1.05f;  // a scale off by 5%
  EXPECT_FALSE(Verifier(s, cfg)(HostTensor{{s.m, s.n}, bf16}).ok);
}

}  // namespace
}  // namespace dlb::gemm
