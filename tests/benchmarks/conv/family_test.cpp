// The convolution family's own code: its workload rows, its verifier and its flag.
#include "benchmarks/conv/family.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "fixtures/schema/schema.h"
#include "kernels/common/autotune_cache.h"
#include "kernels/common/error.h"
#include "kernels/common/fill.h"
#include "kernels/common/shapes.h"
#include "kernels/reference/conv.h"
#include "tests/fixtures/testing.h"
#include "tests/support/temp_dir.h"

namespace dlb::conv {
namespace {

using dlb::testing::ErrorOf;

TEST(ConvFamily, RowsTheirNetworkAndImpossibleShapes) {
  const dlb::testing::TempDir dir("conv_family");
  const std::string header = "name,count,c,h,w,k,r,s,stride,pad,dilation,groups,tier\n";
  auto ok = dir.Write("conv_resnet18.csv", header + "l1,2,64,56,56,64,3,3,1,1,1,1,default\n");
  auto rows = LoadWorkloads(ok);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].shape.P(), 56);
  EXPECT_EQ(rows[0].basics.count, 2);
  EXPECT_EQ(rows[0].basics.network, "resnet18") << "from the file name";
  auto bad = dir.Write("conv_bad.csv", header + "l1,1,64,5,5,64,7,7,1,0,1,1,default\n");
  EXPECT_NE(ErrorOf([&] { LoadWorkloads(bad); }).find("conv_bad.csv:2: impossible convolution"),
            std::string::npos);
  auto groups = dir.Write("conv_groups.csv", header + "l1,1,64,5,5,64,3,3,1,1,1,3,default\n");
  EXPECT_NE(ErrorOf([&] { LoadWorkloads(groups); }).find("impossible"), std::string::npos);
}

TEST(ConvFamily, ShippedFilesParseOneNetworkEach) {
  for (const auto& f : WorkloadFiles("conv_")) {
    auto rows = LoadWorkloads(f);
    ASSERT_FALSE(rows.empty()) << f;
    for (const auto& w : rows) EXPECT_EQ(w.basics.network, rows[0].basics.network) << f;
  }
}

TEST(ConvFamily, VerifierChecksEveryPassAgainstTheReference) {
  ConvShape s;
  s.n = 2, s.c = 4, s.h = 6, s.w = 5, s.k = 6, s.r = 3, s.s = 3, s.pad_h = s.pad_w = 1;
  s.groups = 2;
  RunConfig cfg;
  auto x = SeededValues(TensorSeed(cfg.seed, 0), size_t(s.n * s.c * s.h * s.w), cfg.dtype);
  auto w =
      SeededValues(TensorSeed(cfg.seed, 1), size_t(s.k * s.c / s.groups * s.r * s.s), cfg.dtype);
  auto dy = SeededValues(TensorSeed(cfg.seed, 2), size_t(s.n * s.k * s.P() * s.Q()), cfg.dtype);
  struct {
    ConvPass pass;
    std::vector<double> ref;
  } cases[] = {{ConvPass::kFwd, ReferenceConvFwd(s, x, w)},
               {ConvPass::kBwdData, ReferenceConvBwdData(s, dy, w)},
               {ConvPass::kBwdFilter, ReferenceConvBwdFilter(s, x, dy)}};
  for (auto& c : cases) {
    HostTensor out{{}, std::vector<float>(c.ref.begin(), c.ref.end())};
    VerifyFn verify = Verifier(s, cfg, c.pass);
    Verdict v = verify(out);
    EXPECT_TRUE(v.ok) << Name(c.pass) << ": " << v.detail;
    EXPECT_EQ(v.disposition, Disposition::kVerified);
    std::reverse(out.data.begin(), out.data.end());
    EXPECT_FALSE(verify(out).ok) << Name(c.pass);
  }
}

TEST(ConvFamily, AutotuneFlagAndItsConvAlgoAlias) {
  auto flags = Flags();
  ASSERT_EQ(flags.size(), 2u);
  EXPECT_EQ(flags[0].name, "autotune");
  EXPECT_EQ(flags[1].name, "conv_algo");
  EXPECT_NE(flags[1].help.find("alias"), std::string::npos) << flags[1].help;
  EXPECT_EQ(FamilyOptions().algo, Algo::kCache) << "the default";
  EXPECT_EQ(flags[0].set("heuristic"), "");
  EXPECT_EQ(FamilyOptions().algo, Algo::kHeuristic);
  EXPECT_EQ(flags[0].set("search"), "");
  EXPECT_EQ(FamilyOptions().algo, Algo::kSearch);
  EXPECT_NE(flags[0].set("fastest"), "");
  EXPECT_EQ(flags[1].set("heuristic"), "");
  EXPECT_EQ(FamilyOptions().algo, Algo::kHeuristic) << "conv_algo=heuristic is autotune=heuristic";
  EXPECT_EQ(flags[1].set("search"), "");
  EXPECT_EQ(FamilyOptions().algo, Algo::kSearch) << "conv_algo=search is autotune=search";
  EXPECT_NE(flags[1].set("cache"), "") << "the alias keeps its old choices";
  EXPECT_EQ(flags[0].set("cache"), "");
}

TEST(ConvFamily, AutotuneCacheLivesInTheUserCacheDir) {
  const std::string dir = UserCacheDir();
  EXPECT_EQ(AutotuneCachePath(), dir.empty() ? "" : dir + "/autotune.json");
  EXPECT_EQ(schema::kSetupMs, autotune::kSetupMsCounter) << "one counter name for ops and schema";
}

TEST(ConvFamily, TheFewerOpsCounterHasTheSchemasName) {
  EXPECT_EQ(schema::kFewerOpsThanCounted, kFewerOpsCounter);
}

TEST(ConvFamily, NaturalLayoutIsChannelsLastFor16Bit) {
  EXPECT_EQ(NaturalLayout(DType::kF32), Layout::kNCHW);
  EXPECT_EQ(NaturalLayout(DType::kTF32), Layout::kNCHW);
  EXPECT_EQ(NaturalLayout(DType::kBF16), Layout::kNHWC);
  EXPECT_EQ(NaturalLayout(DType::kF16), Layout::kNHWC);
}

}  // namespace
}  // namespace dlb::conv
