// The attention family's own code: its model rows, the tiers' points, its verifier.
#include "benchmarks/attn/family.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/reference/attn.h"
#include "tests/fixtures/testing.h"
#include "tests/kernels/testing.h"
#include "tests/support/temp_dir.h"

namespace dlb::attn {
namespace {

using dlb::testing::ErrorOf;

// The problem of the given sizes (tests/kernels/testing.h).
const auto Shape = dlb::testing::TestAttnShape;

TEST(AttnFamily, ReadsModelRows) {
  const dlb::testing::TempDir dir("attn_family");
  auto path = dir.Write("attn_ok.csv",
                        "# comment\nname,count,heads,kv_heads,head_dim,causal,tier,network\n\n"
                        "a.attn,12,12,12,64,1,smoke,a\nb.attn,80,64,8,128,0,full,b\n");
  auto rows = LoadModels(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].basics.name, "a.attn");
  EXPECT_EQ(rows[0].basics.network, "a");
  EXPECT_EQ(rows[0].basics.count, 12);
  EXPECT_TRUE(rows[0].shape.causal);
  EXPECT_EQ(rows[1].shape.heads, 64);
  EXPECT_EQ(rows[1].shape.kv_heads, 8);
  EXPECT_EQ(rows[1].shape.head_dim, 128);
  EXPECT_FALSE(rows[1].shape.causal);
  EXPECT_EQ(rows[1].basics.tier, Tier::kFull);
}

TEST(AttnFamily, MalformedRowsNameFileAndLine) {
  const dlb::testing::TempDir dir("attn_family");
  const std::string header = "name,count,heads,kv_heads,head_dim,causal,tier,network\n";
  struct Case {
    std::string body, expect;
  } cases[] = {
      {"a,1,12,x,64,1,smoke,a\n", "attn_bad.csv:2: column 'kv_heads'"},
      {"a,1,12,12,64,1,smoke\n", "attn_bad.csv:2: expected 8 fields, got 7"},
      {"a,1,12,12,64,2,smoke,a\n", "attn_bad.csv:2: column 'causal'"},
      {"a,1,12,5,64,1,smoke,a\n", "attn_bad.csv:2: heads, kv_heads and head_dim must be positive"},
      {"a,1,12,12,0,1,smoke,a\n", "attn_bad.csv:2: heads, kv_heads and head_dim must be positive"},
      {"a,1,12,12,64,1,soon,a\n", "attn_bad.csv:2: column 'tier'"},
  };
  for (const auto& c : cases) {
    auto path = dir.Write("attn_bad.csv", header + c.body);
    std::string err = ErrorOf([&] { LoadModels(path); });
    EXPECT_NE(err.find(c.expect), std::string::npos) << "got: " << err << "\nwant: " << c.expect;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  auto path = dir.Write("attn_bad.csv", "name,count,heads,kv_heads,head_dim,tier\n");
  EXPECT_NE(ErrorOf([&] { LoadModels(path); }).find("header lacks column 'causal'"),
            std::string::npos);
}

// The shipped models, each its own network: GQA 8:1 (Llama 70B) and 4:1 (Llama-3 8B), head dims
// 64, 80, 96, 128 and 256.
TEST(AttnFamily, ShippedModelsCoverTheHeadDimsAndGroupRatios) {
  std::vector<Model> all;
  for (const auto& f : WorkloadFiles("attn_"))
    for (Model& m : LoadModels(f)) all.push_back(m);
  ASSERT_EQ(all.size(), 9u);
  std::set<int64_t> head_dims, ratios;
  for (const Model& m : all) {
    head_dims.insert(m.shape.head_dim);
    ratios.insert(m.shape.heads / m.shape.kv_heads);
    EXPECT_EQ(m.basics.name, m.basics.network + ".attn");
    const bool gqa = m.basics.name == "llama70b.attn" || m.basics.name == "llama3_8b.attn";
    EXPECT_EQ(m.shape.kv_heads == m.shape.heads, !gqa) << m.basics.name;
    EXPECT_EQ(m.shape.causal, m.basics.name != "bert_base.attn") << m.basics.name;
  }
  EXPECT_EQ(head_dims, (std::set<int64_t>{64, 80, 96, 128, 256}));
  EXPECT_EQ(ratios, (std::set<int64_t>{1, 4, 8}));
}

// The default tier on the GPU holds the two peer shapes: (16, 12, 1024, 64) and
// (4, 32, 4096, 128), both at 16384 tokens.
TEST(AttnFamily, DefaultGpuPointsHoldThePeerShapes) {
  ASSERT_EQ(dlb::Opts().tier, Tier::kDefault);
  const std::vector<Point> gpu = Points(true);
  auto has = [&](int64_t seq, int batch) {
    return std::any_of(gpu.begin(), gpu.end(),
                       [&](const Point& p) { return p.seq == seq && p.batch == batch; });
  };
  EXPECT_TRUE(has(1024, 16));
  EXPECT_TRUE(has(4096, 4));
  EXPECT_TRUE(has(512, 32));
  EXPECT_TRUE(has(8192, 2));
  EXPECT_EQ(gpu.size(), 5u);
  for (const Point& p : Points(false)) EXPECT_LE(p.seq, 512) << "the CPU's are short";
  EXPECT_EQ(DTypesOn(true), std::vector<DType>{DType::kBF16});
  EXPECT_EQ(DTypesOn(false), (std::vector<DType>{DType::kF32, DType::kBF16}));
}

TEST(AttnFamily, TolerancesWidenForTheBackwardAndSixteenBits) {
  EXPECT_DOUBLE_EQ(AttnTolerance(DType::kF32, AttnPass::kFwd, 128), 1e-5);
  EXPECT_DOUBLE_EQ(AttnTolerance(DType::kF32, AttnPass::kBwd, 128), 1e-4);
  EXPECT_GT(AttnTolerance(DType::kF32, AttnPass::kFwd, 1 << 20), 1e-5);
  EXPECT_DOUBLE_EQ(AttnTolerance(DType::kBF16, AttnPass::kFwd, 4096), 1e-2);
  EXPECT_DOUBLE_EQ(AttnTolerance(DType::kF16, AttnPass::kBwd, 4096), 3e-2);
}

// A long causal grouped-query backward: dQ rows anywhere, dK/dV rows only in the first and last
// kv groups and among the last keys, whose reference needs the last query rows alone.
TEST(AttnFamily, BackwardPositionsStayAffordableAtLongSequences) {
  const AttnShape s = Shape(2, 64, 8, 8192, 128, true, AttnPass::kBwd);
  const std::vector<int64_t> pos = VerifyPositions(s, 42);
  ASSERT_TRUE(std::is_sorted(pos.begin(), pos.end()));
  int64_t q = 0, kv = 0, lowest_key = s.seq;
  std::vector<int64_t> groups;
  for (int64_t p : pos) {
    ASSERT_GE(p, 0);
    ASSERT_LT(p, s.QElems() + 2 * s.KvElems());
    if (p < s.QElems()) {
      ++q;
      continue;
    }
    ++kv;
    const int64_t k = (p - s.QElems()) % s.KvElems();
    const int64_t row = k / s.head_dim;
    lowest_key = std::min(lowest_key, row % s.seq);
    if (std::find(groups.begin(), groups.end(), row / s.seq) == groups.end())
      groups.push_back(row / s.seq);
  }
  EXPECT_GE(q, 64);
  EXPECT_GT(kv, 0);
  EXPECT_EQ(groups, (std::vector<int64_t>{0, s.batch * s.kv_heads - 1}));
  // 2e10 operations over 2 groups of 8 heads at 2 S D each: about 600 rows.
  EXPECT_GT(lowest_key, s.seq - 1000);
  EXPECT_LT(lowest_key, s.seq - 100);
  // Non-causal: any key, but one group only once a group's statistics cost half the budget.
  AttnShape nc = s;
  nc.causal = false;
  nc.heads = nc.kv_heads = 12;
  nc.head_dim = 64;
  nc.batch = 2;
  nc.seq = 16384;
  int64_t last_group_rows = 0;
  for (int64_t p : VerifyPositions(nc, 42))
    if (p >= nc.QElems() && (p - nc.QElems()) % nc.KvElems() >= nc.KvElems() - nc.seq * 64)
      ++last_group_rows;
  EXPECT_EQ(last_group_rows, 0);
}

// The verifier passes the reference's own values (forward and backward, small enough that every
// dK/dV row is affordable) and fails a perturbed or short output with one line.
TEST(AttnFamily, VerifierAcceptsTheReferenceAndRejectsAPerturbedOutput) {
  for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd}) {
    const AttnShape s = Shape(2, 4, 2, 24, 8, true, pass);
    RunConfig cfg;
    ReferenceAttn ref(s, cfg.seed, cfg.dtype);
    HostTensor out{{ref.OutputElems()}, {}};
    for (int64_t i = 0; i < ref.OutputElems(); ++i) out.data.push_back(float(ref.At(i)));
    VerifyFn verify = Verifier(s, cfg);
    Verdict v = verify(out);
    EXPECT_TRUE(v.ok) << v.detail;
    EXPECT_EQ(v.disposition, Disposition::kVerified);
    EXPECT_GT(v.checked, 0u);
    EXPECT_EQ(v.of, size_t(ref.OutputElems()));
    // A wrong dV (bwd) or O (fwd) element: the last one, which every sample includes.
    out.data.back() += 1.0f;
    Verdict bad = verify(out);
    EXPECT_FALSE(bad.ok);
    EXPECT_EQ(bad.detail.find('\n'), std::string::npos);
    out.data.pop_back();
    EXPECT_FALSE(verify(out).ok);
  }
}

}  // namespace
}  // namespace dlb::attn
