#include "kernels/data/loader.h"

#include "tests/kernels/data/data_testing.h"

namespace dlb::data {
namespace {

using testing::DataTest;
namespace fs = std::filesystem;

std::map<std::string, double> CountersOf(const CpuLoader& op) {
  std::map<std::string, double> m;
  for (const auto& [k, v] : op.Counters()) m[k] = v;
  return m;
}

TEST_F(DataTest, TheJpegLoaderVerifiesAgainstTheReferenceInEveryDtypeAndLayout) {
  const auto dir = MakeJpegs("set", 24, 3, 320, 260);
  for (DType dt : {DType::kF32, DType::kBF16})
    for (Layout l : {Layout::kNCHW, Layout::kNHWC}) {
      LoaderShape s;
      s.dir = dir.string();
      s.batch = 8;
      s.workers = 2;
      s.side = 96;
      s.depth = 3;
      RunConfig cfg;
      cfg.dtype = dt;
      cfg.layout = l;
      TurboJpegLoader op(s, cfg);
      op.Start();
      const Verdict v = op.Verify();
      EXPECT_TRUE(v.ok) << v.detail;
      EXPECT_EQ(v.disposition, Disposition::kVerified) << v.detail;
      EXPECT_EQ(v.checked, 3u * 3 * 96 * 96);
      op.WarmUp();
      for (int i = 0; i < 4; ++i) op.Run();
      op.Stop();
      const auto c = CountersOf(op);
      EXPECT_GT(c.at("jpeg_bytes_per_s"), 0);
      EXPECT_GT(c.at("decode_us_per_item"), 0);
      EXPECT_GT(c.at("latency_max_ms"), 0);
      EXPECT_LE(c.at("latency_p50_ms"), c.at("latency_max_ms"));
      EXPECT_EQ(c.at("skipped_images"), 0);
      EXPECT_EQ(op.cost().items, 8);
      EXPECT_NE(op.label().find("2 workers"), std::string::npos) << op.label();
    }
}

TEST_F(DataTest, AWrongPixelFailsVerification) {
  // The reference sees the file on disk; the pipeline's copy was decoded before the file changed.
  const auto dir = MakeJpegs("set", 6, 1, 200, 160);
  LoaderShape s;
  s.dir = dir.string();
  s.batch = 6;
  s.side = 64;
  s.depth = 2;
  TurboJpegLoader op(s, RunConfig{});
  op.Start();
  op.pipeline().WaitFull();
  // Replace every file by another's content: the batch already made no longer matches.
  const auto files = ScanImageFolder(dir).files;
  const auto other = Slurp(MakeJpegs("other", 1, 1, 200, 160) / "class_000" / "img_000000.jpg");
  for (const auto& f : files) Write(f.path, other);
  const Verdict v = op.Verify();
  op.Stop();
  EXPECT_FALSE(v.ok) << v.detail;
  EXPECT_NE(v.detail.find(">"), std::string::npos) << v.detail;
}

TEST_F(DataTest, TheCifarLoaderVerifiesWithoutDecoding) {
  const auto dir = MakeCifar("cifar", 70);
  LoaderShape s;
  s.dir = dir.string();
  s.batch = 16;
  s.workers = 2;
  s.side = 32;
  s.depth = 2;
  CifarLoader op(s, RunConfig{});
  op.Start();
  const Verdict v = op.Verify();
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_LT(v.error, 1e-5);
  op.WarmUp();
  op.Run();
  op.Stop();
  EXPECT_EQ(CountersOf(op).at("decode_us_per_item"), 0);
}

TEST(Percentile, InterpolatesBetweenOrderStatistics) {
  EXPECT_EQ(Percentile({}, 50), 0);
  EXPECT_EQ(Percentile({3, 1, 2}, 50), 2);
  EXPECT_EQ(Percentile({1, 2, 3, 4}, 100), 4);
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({0, 10}, 99), 9.9);
}

}  // namespace
}  // namespace dlb::data
