// bench_train's data-parallel cases launched one process per GPU, without a GPU
// (CUDA_VISIBLE_DEVICES=-1 hides any): under mpirun and with torchrun's variables (two processes
// started by hand, the TCP rendezvous on localhost) every case says it is unsupported, the run
// exits 0, rank 0 alone writes the JSON, with the launch and both ranks in its context.
#include <cstdlib>
#include <string>

#include "tests/benchmarks/comm.h"

namespace dlb::testing {
namespace {

class BenchTrainDdp : public WithoutGpu {};

std::string Args(const std::filesystem::path& out) {
  return std::string(" --dlb_device=gpu --benchmark_filter=/gpus: --benchmark_out='") +
         out.string() + "' --benchmark_out_format=json";
}

// Every case a data-parallel one at gpus:2, unsupported; the launch as `launch_starts`; both
// ranks named; nothing but rank 0's file in `dir`.
void CheckUnsupportedRun(const Result& r, const std::filesystem::path& dir,
                         const std::filesystem::path& out, const std::string& launch_starts) {
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json json = ReadJson(out);
  ASSERT_TRUE(json.is_object()) << "rank 0 wrote no JSON: " << r.output;
  CheckSchemaNames(json);
  ASSERT_FALSE(json["benchmarks"].empty()) << r.output;
  for (const auto& b : json["benchmarks"]) {
    const std::string name = b["name"];
    const auto parsed = ParseName(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(parsed->family, "train") << name;
    EXPECT_EQ(parsed->Get("gpus"), "2") << name;
    EXPECT_TRUE(b.value("error_occurred", false)) << name;
    EXPECT_EQ(b.value("error_message", "").rfind(std::string(schema::kStatusUnsupported), 0), 0u)
        << name << ": " << b.value("error_message", "");
  }
  const std::string launch = json["context"].value(std::string(schema::kCtxCommLaunch), "");
  EXPECT_EQ(launch.rfind(launch_starts, 0), 0u) << launch;
  ExpectTwoRanksAndOneFile(json, dir);
}

#ifdef DLB_MPIEXEC
TEST_F(BenchTrainDdp, UnderMpirunEveryCaseIsUnsupportedAndTheRunSucceeds) {
  const TempDir tmp("train_ddp_mpi");
  const auto out = tmp.path() / "train.json";
  const Result r =
      RunShell(MpiRun(2) + " -x CUDA_VISIBLE_DEVICES '" + DLB_BENCH_TRAIN + "'" + Args(out));
  CheckUnsupportedRun(r, tmp.path(), out, "mpi, 2 processes on 1 host");
}
#endif

// torchrun's variables, two processes started by hand (rank 1 first: it retries until rank 0
// listens).
TEST_F(BenchTrainDdp, WithTorchrunsVariablesEveryCaseIsUnsupportedAndTheRunSucceeds) {
  const TempDir tmp("train_ddp_tcp");
  const auto out = tmp.path() / "train.json";
  const std::string port = std::to_string(20000 + (::getpid() % 20000));
  const std::string env =
      "WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port +
      " DLB_RENDEZVOUS_TIMEOUT=60";
  const std::string bin = std::string(" '") + DLB_BENCH_TRAIN + "'" + Args(out);
  const Result r = RunShell("(env " + env + " RANK=1 LOCAL_RANK=1" + bin + " & env " + env +
                            " RANK=0 LOCAL_RANK=0" + bin + "; a=$?; wait $!; b=$?; exit $((a|b)))");
  CheckUnsupportedRun(r, tmp.path(), out, "torchrun, tcp rendezvous at 127.0.0.1:" + port);
}

}  // namespace
}  // namespace dlb::testing
