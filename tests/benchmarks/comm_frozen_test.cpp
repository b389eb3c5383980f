// A rank that stops answering (frozen with SIGSTOP by the test-only hook DLB_TEST_FREEZE, alive,
// its connections open) inside an agreement between the processes, without a GPU: the live rank
// ends by --dlb_comm_timeout and a few seconds with one line naming the rank and the agreement,
// the cases after it fail with the same line at once, rank 0's JSON is whole, and the process
// exits non-zero so that the launcher can end (mpirun ends the frozen rank; over the TCP
// rendezvous the test kills it, as a scheduler would).
#include <signal.h>

#include <chrono>
#include <string>

#include "tests/benchmarks/comm.h"

namespace dlb::testing {
namespace {

class BenchCommFrozen : public WithoutGpu {};

constexpr int kTimeoutS = 3;

std::string FrozenArgs(const std::filesystem::path& out) {
  return " --dlb_tier=smoke --dlb_device=gpu --dlb_comm_timeout=" + std::to_string(kTimeoutS) +
         " --benchmark_out='" + out.string() + "' --benchmark_out_format=json";
}

// The live rank's run: ended non-zero, by the deadline (a bound on a hang, not a timing
// assertion), the line on its console, and every case after the freeze failed with it.
void CheckEndedByTheDeadline(const Result& r, double seconds, const std::filesystem::path& out) {
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_LT(seconds, kTimeoutS + 30) << r.output;
  const std::string line = "comm timeout: rank 1 stopped answering: no word in " +
                           std::to_string(kTimeoutS) + " s during ";
  EXPECT_NE(r.output.find(line), std::string::npos) << r.output;
  const nlohmann::json json = ReadJson(out);
  ASSERT_TRUE(json.is_object()) << "rank 0 wrote no whole JSON: " << r.output;
  CheckSchemaNames(json);
  ASSERT_EQ(json["benchmarks"].size(), 24u);
  int broken = 0;
  for (const auto& b : json["benchmarks"])
    broken += b.value("error_message", "").rfind(line, 0) == 0;
  // The freeze comes at the 8th agreement, within the first cases: the rest fail with the line.
  EXPECT_GE(broken, 18) << json.dump(1);
  EXPECT_EQ(json["benchmarks"].back().value("error_message", "").rfind(line, 0), 0u);
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

#ifdef DLB_MPIEXEC
TEST_F(BenchCommFrozen, UnderMpirunAFrozenRankEndsTheRunByTheDeadline) {
  const TempDir tmp("comm_frozen_mpi");
  const auto out = tmp.path() / "comm.json";
  const auto start = std::chrono::steady_clock::now();
  const Result r = RunShell("timeout 120 " + MpiRun(2) +
                            " -x CUDA_VISIBLE_DEVICES -x DLB_TEST_FREEZE=agreement:8:1 '" +
                            DLB_BENCH_COMM + "'" + FrozenArgs(out));
  CheckEndedByTheDeadline(r, Since(start), out);
  EXPECT_NE(r.exit_code, 124) << "mpirun did not end: " << r.output;
}
#endif

// torchrun's variables, two processes started by hand; rank 1 freezes, rank 0 must end alone.
TEST_F(BenchCommFrozen, OverTheTcpRendezvousAFrozenRankEndsTheRunByTheDeadline) {
  const TempDir tmp("comm_frozen_tcp");
  const auto out = tmp.path() / "comm.json";
  const std::string port = std::to_string(20000 + ((::getpid() + 7919) % 20000));
  const std::string env =
      "WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port +
      " DLB_RENDEZVOUS_TIMEOUT=60";
  const std::string bin = std::string(" '") + DLB_BENCH_COMM + "'" + FrozenArgs(out);
  const auto pid = tmp.path() / "rank1.pid";
  const auto start = std::chrono::steady_clock::now();
  const Result r = RunShell("(env " + env + " RANK=1 LOCAL_RANK=1 DLB_TEST_FREEZE=agreement:8:1" +
                            bin + " > /dev/null 2>&1 & echo $! > '" + pid.string() + "'; env " +
                            env + " RANK=0 LOCAL_RANK=0 timeout 120" + bin +
                            "; a=$?; kill -9 $(cat '" + pid.string() + "'); exit $a)");
  const double took = Since(start);
  CheckEndedByTheDeadline(r, took, out);
  EXPECT_NE(r.exit_code, 124) << "rank 0 did not end: " << r.output;
}

}  // namespace
}  // namespace dlb::testing
