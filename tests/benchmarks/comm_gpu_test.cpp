// bench_comm on two GPUs at the smoke tier: one process driving both, and two processes under
// mpirun, one GPU each. Every case is measured, verified with no wrong element, and carries
// nccl-tests' algbw and busbw. Skips without two GPUs.
#include <cstdlib>

#include "kernels/cuda/device.h"
#include "tests/benchmarks/comm.h"

namespace dlb::testing {
namespace {

class BenchCommGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount() < 2) GTEST_SKIP() << "needs 2 GPUs, " << cuda::DeviceCount() << " here";
    ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  }
};

TEST_F(BenchCommGpu, OneProcessMeasuresEveryCaseOnTwoGpus) {
  Result r = RunBinary(DLB_BENCH_COMM, "--dlb_tier=smoke --dlb_comm_gpus=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(CheckCommJson(r.json, 2), int(r.json["benchmarks"].size())) << r.output;
  EXPECT_EQ(r.json["context"].value(std::string(schema::kCtxCommLaunch), ""),
            "one process driving 2 GPUs");
}

#ifdef DLB_MPIEXEC
TEST_F(BenchCommGpu, TwoProcessesMeasureEveryCaseOneGpuEach) {
  const TempDir tmp("comm_mpi_gpu");
  const std::filesystem::path& dir = tmp.path();
  const auto out = dir / "comm.json";
  Result r = RunShell(MpiRun(2) + " '" + DLB_BENCH_COMM + "' --dlb_tier=smoke --benchmark_out='" +
                      out.string() + "' --benchmark_out_format=json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json json = ReadJson(out);
  ASSERT_TRUE(json.is_object()) << r.output;
  EXPECT_EQ(CheckCommJson(json, 2), int(json["benchmarks"].size())) << r.output;
  const std::string ranks = json["context"].value(std::string(schema::kCtxCommRanks), "");
  EXPECT_NE(ranks.find("rank 1: "), std::string::npos) << ranks;
}
#endif

}  // namespace
}  // namespace dlb::testing
