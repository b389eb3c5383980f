// bench_train_native, the native MLP step's own binary: its smoke JSON, and that its CPU step
// calls the oneDNN it was compiled against (LibTorch 2.x carries a oneDNN of its own, whose
// symbols take the native step's calls where one process links both; this binary does not).
#include "tests/benchmarks/smoke.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include <dnnl_version.h>
#endif

namespace dlb::testing {
namespace {

TEST(BenchTrainNative, SmokeTierWritesValidJsonAndCallsItsOwnOneDnn) {
  Result r = RunBinary(DLB_BENCH_TRAIN_NATIVE, "--dlb_tier=smoke --benchmark_min_time=0.02");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  CheckSchemaNames(r.json);
  int measured = 0;
  std::set<std::string> names;
  for (const auto& b : r.json["benchmarks"]) {
    const std::string name = b["name"];
    names.insert(name);
    auto parsed = ParseName(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(parsed->family, "train");
    EXPECT_EQ(parsed->backend, "native") << name;
    EXPECT_EQ(parsed->workload, "mlp") << name;
    EXPECT_EQ(BuildName(*parsed) + "/manual_time", name) << "not canonical: " << name;
    if (b.value("error_occurred", false)) {
      EXPECT_EQ(b.value("error_message", "").rfind("unsupported: ", 0), 0u) << name;
      continue;
    }
    ++measured;
    const bool train = name.find("/pass:train") != std::string::npos;
    EXPECT_GT(b.value("items_per_s", 0.0), 0.0) << name;
    EXPECT_GT(b.value("epoch_s", 0.0), 0.0) << name;
    EXPECT_GT(b.value("fwd_s", 0.0), 0.0) << name;
    EXPECT_EQ(b.contains("bwd_s"), train) << name;
    EXPECT_GT(b.value("peak_mem_bytes", 0.0), 0.0) << name;
    const auto& ver = b["dlbench"]["verification"];
    EXPECT_EQ(ver["disposition"], "verified") << name;
    EXPECT_LE(ver["error"].get<double>(), ver["tolerance"].get<double>()) << name;
  }
#ifdef DLBENCH_HAVE_ONEDNN
  EXPECT_GE(measured, 2) << "the CPU's smoke cases: train and infer";
  EXPECT_TRUE(names.count("train/cpu/native/mlp/bs:2/dt:f32/pass:train/manual_time"));
  // The context's oneDNN is what dnnl_version() answered in the binary: the headers' own.
  const std::string version = r.json["context"].value(std::string(schema::kCtxOnednnVersion), "");
  const std::string built = std::to_string(DNNL_VERSION_MAJOR) + "." +
                            std::to_string(DNNL_VERSION_MINOR) + "." +
                            std::to_string(DNNL_VERSION_PATCH) + " ";
  EXPECT_EQ(version.rfind(built, 0), 0u) << "runtime oneDNN " << version << ", headers " << built;
#endif
}

// The native step runs the process's threads: --dlb_threads=1 gives oneDNN and the label one.
TEST(BenchTrainNative, DlbThreadsSetsTheStepsThreads) {
  Result r = RunBinary(DLB_BENCH_TRAIN_NATIVE,
                       "--dlb_device=cpu --dlb_tier=smoke --benchmark_min_time=0.01 "
                       "--benchmark_filter=pass:infer --dlb_threads=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  const auto& ctx = r.json["context"];
  EXPECT_EQ(ctx.value(std::string(schema::kCtxCpuThreads), "").rfind("1 (--dlb_threads", 0), 0u);
#ifdef DLBENCH_HAVE_ONEDNN
  EXPECT_EQ(ctx.value(std::string(schema::kCtxOnednnThreads), ""), "1");
  int labelled = 0;
  for (const auto& b : r.json["benchmarks"]) {
    if (b.value("error_occurred", false)) continue;
    ++labelled;
    EXPECT_NE(b.value("label", "").find("f32 threads 1;"), std::string::npos)
        << b.value("label", "");
  }
  EXPECT_EQ(labelled, 1) << r.output;
#endif
}

}  // namespace
}  // namespace dlb::testing
