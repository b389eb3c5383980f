// bench_train's steps fed by the data-loading pipelines (key loader:), on a GPU: each case is
// verified (the step, the loader's pixels, the step's input equal to the loaded batch), and carries
// the step-alone rate and the starvation. Skips without a GPU.
#include "kernels/data/generator.h"
#include "tests/benchmarks/smoke.h"
#include "tests/support/temp_dir.h"

namespace dlb::testing {
namespace {

namespace fs = std::filesystem;

TEST(BenchTrainLoaderFed, LoaderCasesVerifyAndReportStarvation) {
  const TempDir tmp("train_loader_fed");
  const fs::path& dir = tmp.path();
  dataset::Options o;
  o.out = dir / "data";
  o.images = 600;
  o.procedural = true;
  dataset::Generate(o);
  ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  Result r = RunBinary(DLB_BENCH_TRAIN,
                       "--dlb_tier=default --dlb_device=gpu --dlb_data=" + o.out.string() +
                           " --benchmark_filter=loader: --benchmark_min_time=0.05");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  if (!HasGpu(r.json)) GTEST_SKIP() << "no CUDA device";
  CheckSchemaNames(r.json);
  std::set<std::string> loaders;
  for (const auto& b : r.json["benchmarks"]) {
    const std::string name = b["name"];
    auto parsed = ParseName(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(BuildName(*parsed) + "/manual_time", name);
    ASSERT_FALSE(b.value("error_occurred", false)) << name << ": " << b.value("error_message", "");
    loaders.insert(parsed->Get("loader"));
    EXPECT_GT(b.value("items_per_s", 0.0), 0.0) << name;
    EXPECT_GT(b.value("alone_items_per_s", 0.0), 0.0) << name;
    EXPECT_GE(b.value("starvation", -1.0), 0.0) << name;
    EXPECT_LE(b.value("starvation", 2.0), 1.0) << name;
    const auto& ver = b["dlbench"]["verification"];
    EXPECT_EQ(ver["disposition"], "verified") << name;
    EXPECT_NE(b.value("label", "").find("fed by "), std::string::npos) << name;
  }
  EXPECT_TRUE(loaders.count("turbojpeg")) << r.output;
}

}  // namespace
}  // namespace dlb::testing
