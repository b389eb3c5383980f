// bench_comm without a GPU (CUDA_VISIBLE_DEVICES=-1 hides any): every case unsupported, exit 0,
// valid JSON; under mpirun, rank 0 alone writes and prints, and processes that are at different
// cases fail those cases instead of waiting on each other.
#include "tests/benchmarks/comm.h"

#include <cstdlib>

namespace dlb::testing {
namespace {

class BenchComm : public WithoutGpu {};

void ExpectEveryCaseUnsupportedWithoutADevice(const nlohmann::json& json) {
  for (const auto& b : json["benchmarks"]) {
    EXPECT_TRUE(b.value("error_occurred", false)) << b["name"];
    EXPECT_EQ(b.value("error_message", ""), NoGpuMessage(json)) << b["name"];
  }
}

TEST(CommNames, RoundTrip) {
  for (const char* n : {"comm/gpu/nccl/all_reduce.1073741824/dt:bf16/gpus:2",
                        "comm/gpu/nccl/all_gather.8/dt:f32/gpus:8/inplace:1"}) {
    auto parsed = ParseName(std::string(n) + "/manual_time");
    ASSERT_TRUE(parsed.has_value()) << n;
    EXPECT_EQ(BuildName(*parsed), n);
  }
  // Family keys follow dt in the order given: gpus, then inplace.
  BenchName b{"comm", "gpu", "nccl", "reduce_scatter.1024", {{"inplace", "1"}, {"dt", "bf16"}}};
  b.keys.insert(b.keys.begin() + 1, {"gpus", "2"});
  EXPECT_EQ(BuildName(b), "comm/gpu/nccl/reduce_scatter.1024/dt:bf16/inplace:1/gpus:2");
  EXPECT_EQ(PairKey(*ParseName("comm/gpu/nccl/broadcast.8/dt:bf16/gpus:2")),
            "comm/broadcast.8/dt:bf16/gpus:2");
}

// --dlb_device=all (the default) without a GPU: no case at all, said once, and still a valid JSON
// file with the context.
TEST_F(BenchComm, WithoutAGpuTheRunHasNoCaseSaysWhyAndWritesValidJson) {
  Result r = RunBinary(DLB_BENCH_COMM, "--dlb_tier=smoke");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  EXPECT_TRUE(r.json["benchmarks"].empty());
  const std::string why = r.json["context"].value(std::string(schema::kCtxGpuLeftOut), "");
  EXPECT_FALSE(why.empty());
  EXPECT_NE(r.output.find("bench_comm: GPU cases left out: " + why), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bench_comm: no case to run here"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Failed to match"), std::string::npos) << r.output;
}

TEST_F(BenchComm, WithoutAGpuEveryCaseIsUnsupportedAndTheRunSucceeds) {
  Result r = RunBinary(DLB_BENCH_COMM, "--dlb_tier=smoke --dlb_device=gpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  CheckCommJson(r.json, 2);
  ExpectEveryCaseUnsupportedWithoutADevice(r.json);
  // The smoke tier: 5 collectives at 3 sizes, all_reduce in f32 and bf16, out of place and in.
  EXPECT_EQ(r.json["benchmarks"].size(), 24u);
  EXPECT_EQ(r.json["context"].value(std::string(schema::kCtxCommLaunch), ""), "one process");
}

TEST_F(BenchComm, BytesFlagChoosesTheSizes) {
  Result r = RunBinary(DLB_BENCH_COMM, "--dlb_tier=smoke --dlb_device=gpu --dlb_comm_bytes=8,4096");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object());
  for (const auto& b : r.json["benchmarks"]) {
    const std::string w = ParseName(b["name"].get<std::string>())->workload;
    EXPECT_TRUE(w.size() > 2 && (w.substr(w.size() - 2) == ".8" || w.find(".4096") != w.npos)) << w;
  }
  Result bad = RunBinary(DLB_BENCH_COMM, "--dlb_comm_bytes=8,big");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--dlb_comm_bytes"), std::string::npos) << bad.output;
}

TEST_F(BenchComm, AllocFlagIsRecordedAndCheckedAtParse) {
  Result def = RunBinary(DLB_BENCH_COMM, "--dlb_tier=smoke --dlb_device=gpu --dlb_comm_bytes=8");
  ASSERT_EQ(def.exit_code, 0) << def.output;
  ASSERT_TRUE(def.json.is_object());
  EXPECT_EQ(def.json["context"].value(std::string(schema::kCtxCommBuffers), ""), "ncclMemAlloc");
  Result cuda = RunBinary(
      DLB_BENCH_COMM, "--dlb_tier=smoke --dlb_device=gpu --dlb_comm_bytes=8 --dlb_comm_alloc=cuda");
  ASSERT_EQ(cuda.exit_code, 0) << cuda.output;
  ASSERT_TRUE(cuda.json.is_object());
  EXPECT_EQ(cuda.json["context"].value(std::string(schema::kCtxCommBuffers), ""), "cudaMalloc");
  Result bad = RunBinary(DLB_BENCH_COMM, "--dlb_comm_alloc=pinned");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--dlb_comm_alloc"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("nccl or cuda"), std::string::npos) << bad.output;
}

#ifdef DLB_MPIEXEC
// The JSON path and the smoke tier, for each process of an mpirun line.
std::string Args(const std::filesystem::path& out) {
  return " --dlb_tier=smoke --dlb_device=gpu --benchmark_out='" + out.string() +
         "' --benchmark_out_format=json";
}

TEST_F(BenchComm, TwoProcessesRunTheSameCasesAndOnlyRankZeroWrites) {
  const TempDir tmp("comm_mpi");
  const std::filesystem::path& dir = tmp.path();
  const auto out = dir / "comm.json";
  Result r = RunShell(MpiRun(2) + " -x CUDA_VISIBLE_DEVICES '" + DLB_BENCH_COMM + "'" + Args(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json json = ReadJson(out);
  ASSERT_TRUE(json.is_object()) << "rank 0 wrote no JSON: " << r.output;
  CheckCommJson(json, 2);
  ExpectEveryCaseUnsupportedWithoutADevice(json);
  EXPECT_EQ(json["benchmarks"].size(), 24u);
  EXPECT_EQ(json["context"].value(std::string(schema::kCtxCommLaunch), "").rfind("mpi, 2 ", 0), 0u);
  // Nothing but rank 0's file in the folder (no second writer, no temporary left), and one
  // console: the cases that cannot run here summed up once.
  ExpectTwoRanksAndOneFile(json, dir);
  const std::string summed = "24 x " + NoGpuMessage(json);
  size_t seen = 0;
  for (size_t p = r.output.find(summed); p != std::string::npos; p = r.output.find(summed, p + 1))
    ++seen;
  EXPECT_EQ(seen, 1u) << summed << " in:\n" << r.output;
}

// Open MPI's MPMD form gives rank 0 and rank 1 different sizes: each case is then a failure
// naming the cause, on every process, and the run ends instead of hanging.
TEST_F(BenchComm, ProcessesAtDifferentCasesFailThemInsteadOfWaiting) {
  const TempDir tmp("comm_mpmd");
  const std::filesystem::path& dir = tmp.path();
  const auto out = dir / "comm.json";
  const std::string bin = std::string(" -x CUDA_VISIBLE_DEVICES '") + DLB_BENCH_COMM + "'";
  Result r = RunShell(MpiRun(1) + bin + Args(out) + " --dlb_comm_bytes=8 : -np 1" + bin +
                      Args(out) + " --dlb_comm_bytes=16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json json = ReadJson(out);
  ASSERT_TRUE(json.is_object()) << r.output;
  ASSERT_FALSE(json["benchmarks"].empty());
  for (const auto& b : json["benchmarks"])
    EXPECT_NE(b.value("error_message", "").find("different cases"), std::string::npos)
        << b.value("error_message", "");
}
#endif

}  // namespace
}  // namespace dlb::testing
