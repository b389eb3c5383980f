#include "tests/benchmarks/smoke.h"
#include "tests/support/temp_dir.h"

namespace dlb::testing {
namespace {

// Every measured case is verified against its float64 step and carries the train counters.
void CheckTrainJson(const nlohmann::json& json, int* measured) {
  CheckSchemaNames(json);
  EXPECT_TRUE(json["context"].contains(std::string(schema::kCtxTorchVersion)));
  for (const auto& b : json["benchmarks"]) {
    const std::string name = b["name"];
    auto parsed = ParseName(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(parsed->family, "train");
    EXPECT_EQ(BuildName(*parsed) + "/manual_time", name) << "not canonical: " << name;
    if (b.value("error_occurred", false)) {
      EXPECT_EQ(b.value("error_message", "").rfind("unsupported: ", 0), 0u) << name;
      continue;
    }
    ++*measured;
    const bool train = name.find("/pass:train") != std::string::npos;
    EXPECT_GT(b.value("items_per_s", 0.0), 0.0) << name;
    EXPECT_GT(b.value("epoch_s", 0.0), 0.0) << name;
    EXPECT_GT(b.value("epoch_items", 0.0), 0.0) << name;
    EXPECT_GT(b.value("fwd_s", 0.0), 0.0) << name;
    EXPECT_EQ(b.contains("bwd_s"), train) << name;
    EXPECT_EQ(b.contains("opt_s"), train) << name;
    EXPECT_GT(b.value("peak_mem_bytes", 0.0), 0.0) << name;
    const auto& ver = b["dlbench"]["verification"];
    EXPECT_EQ(ver["disposition"], "verified") << name;
    EXPECT_LE(ver["error"].get<double>(), ver["tolerance"].get<double>()) << name;
    EXPECT_NE(b.value("label", "").find("vs float64 CPU"), std::string::npos) << name;
  }
}

TEST(BenchTrain, SmokeTierWritesValidJson) {
  Result r = RunBinary(DLB_BENCH_TRAIN, "--dlb_tier=smoke --benchmark_min_time=0.02");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int measured = 0;
  CheckTrainJson(r.json, &measured);
  EXPECT_GE(measured, 6) << "the CPU's smoke cases: 3 models x train, infer";
  std::set<std::string> names;
  for (const auto& b : r.json["benchmarks"]) names.insert(b["name"]);
  EXPECT_TRUE(names.count("train/cpu/libtorch/mlp/bs:2/dt:f32/pass:train/manual_time"));
  EXPECT_TRUE(
      names.count("train/cpu/libtorch/resnet18_cifar/bs:2/dt:f32/fmt:nchw/pass:train/manual_time"));
  // The transformer step: tokens (bs 2 x seq 32 a step) and MFU (the pct_peak of its FLOPs).
  const std::string gpt = "train/cpu/libtorch/gpt2_tiny/bs:2/dt:f32/pass:train/seq:32/manual_time";
  EXPECT_TRUE(names.count(gpt));
  for (const auto& b : r.json["benchmarks"]) {
    if (b["name"] != gpt || b.value("error_occurred", false)) continue;
    const double tokens = b.value("tokens_per_s", 0.0);
    EXPECT_NEAR(tokens, 32 * b.value("items_per_s", 0.0), 1e-6 * tokens);
    EXPECT_GT(b.value("mfu", 0.0), 0.0);
    EXPECT_DOUBLE_EQ(b.value("mfu", 0.0), b.value("pct_peak", -1.0));
    EXPECT_NE(b.value("label", "").find("6 N + 12 L H Q T"), std::string::npos);
  }
}

// One thread count for every CPU path of the process: --dlb_threads=1 gives LibTorch, oneDNN and
// every label one thread; without it, the physical cores the process may run on. The context says
// how OpenMP threads wait.
TEST(BenchTrain, EveryCpuPathRunsTheSameThreads) {
  const bool user_wait = std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT");
  for (const std::string flag : {"--dlb_threads=1", ""}) {
    Result r = RunBinary(DLB_BENCH_TRAIN,
                         "--dlb_device=cpu --dlb_tier=smoke --benchmark_min_time=0.01 "
                         "--benchmark_filter='libtorch/mlp/.*/pass:infer' " +
                             flag);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_TRUE(r.json.is_object()) << r.output;
    const auto& ctx = r.json["context"];
    const std::string threads = ctx.value(std::string(schema::kCtxCpuThreads), "");
    const int n = std::atoi(threads.c_str());
    if (flag.empty()) {
      EXPECT_NE(threads.find(" (physical cores"), std::string::npos) << threads;
      if (threads.find("in the CPU affinity") == std::string::npos)
        EXPECT_EQ(std::to_string(n), ctx.value(std::string(schema::kCtxCpuPhysical), ""));
    } else {
      EXPECT_EQ(threads.rfind("1 (--dlb_threads", 0), 0u) << threads;
    }
    // Passive where other processes kept the CPUs busy at the start, else OpenMP's own default.
    if (!user_wait)
      EXPECT_TRUE(threads.find("OMP_WAIT_POLICY=passive: other processes kept") !=
                      std::string::npos ||
                  threads.find("OpenMP's default wait)") != std::string::npos)
          << threads;
    EXPECT_EQ(ctx.value(std::string(schema::kCtxTorchThreads), ""), std::to_string(n)) << flag;
    EXPECT_EQ(ctx.value(std::string(schema::kCtxOnednnThreads), ""), std::to_string(n)) << flag;
    int labelled = 0;
    for (const auto& b : r.json["benchmarks"]) {
      if (b.value("error_occurred", false)) continue;
      ++labelled;
      EXPECT_NE(b.value("label", "").find("CPU, " + std::to_string(n) + " threads"),
                std::string::npos)
          << b.value("label", "");
    }
    EXPECT_EQ(labelled, 1) << r.output;
  }
}

TEST(BenchTrain, AnImpossibleBatchFailsItsCaseAndTheSweepGoesOn) {
  // 2^20 images of 224x224 need 588 GiB for the input alone: that case fails with "out of
  // memory: ...", the batch of 1 after it is measured.
  Result r = RunBinary(DLB_BENCH_TRAIN,
                       "--dlb_batch_sizes=1048576,1 --dlb_device=cpu --benchmark_min_time=0.01 "
                       "--benchmark_filter='train/cpu/libtorch/resnet18/.*/pass:infer'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  int oom = 0, measured = 0;
  for (const auto& b : r.json["benchmarks"]) {
    if (b.value("error_occurred", false)) {
      EXPECT_EQ(b.value("error_message", "").rfind("out of memory: ", 0), 0u) << b;
      ++oom;
    } else {
      ++measured;
    }
  }
  EXPECT_EQ(oom, 1);
  EXPECT_EQ(measured, 1);
}

TEST(BenchTrain, MalformedModelFileExitsOneNamingFileAndLine) {
  const TempDir tmp("bad_train_workloads");
  const std::filesystem::path& dir = tmp.path();
  std::ofstream(dir / "train_bad.csv")
      << "name,count,model,image,classes,widths,dataset,epoch_items,tier\n"
         "mlp,1,mlp,0,3,1000-x-2,synthetic,100,smoke\n";
  Result r = RunBinary(DLB_BENCH_TRAIN, "--dlb_workloads=" + dir.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("train_bad.csv:2: column 'widths'"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace dlb::testing
