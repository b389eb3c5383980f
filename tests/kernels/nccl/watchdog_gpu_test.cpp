// The NCCL watchdog on one GPU: a 2-rank communicator whose second rank never joins ends by its
// deadline with one line and is aborted (no hang), and a wait on a stream that does not finish in
// time aborts a working communicator, whose later use then fails with the same line.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "kernels/cuda/device.h"
#include "kernels/nccl/collective.h"
#include "kernels/nccl/comm.h"

namespace dlb::nccl {
namespace {

class WatchdogGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    DLB_CHECK(cudaSetDevice(0));
  }
};

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

TEST_F(WatchdogGpuTest, InitWhoseSecondRankNeverJoinsEndsByTheDeadline) {
  const UniqueId id = NewUniqueId();
  const double timeout = 3;
  const auto start = Clock::now();
  std::string line;
  try {
    Communicator c = Communicator::InitRank(id, /*ranks=*/2, /*rank=*/0, /*device=*/0, timeout);
    FAIL() << "a 2-rank communicator came up with one rank";
  } catch (const CommTimeout& e) {
    line = e.what();
  }
  const double took = SecondsSince(start);
  EXPECT_EQ(line, TimeoutMessage("init of rank 0 of 2", 0, timeout));
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_GE(took, timeout);
  // The abort must return without the missing rank: a bound on a hang, not a timing assertion.
  EXPECT_LT(took, timeout + 60);
}

// Blocks the stream it is enqueued on for `ms` milliseconds.
void CUDART_CB Sleep(void* ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(ms)));
}

TEST_F(WatchdogGpuTest, AWaitPastItsDeadlineAbortsTheCommunicator) {
  Communicator c = Communicator::InitAll({0}, /*timeout_s=*/30);
  ASSERT_FALSE(c.aborted());
  CommShape shape;
  shape.collective = Collective::kAllReduce;
  shape.bytes = 1 << 20;
  shape.gpus = 1;
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  CollectiveOp op(shape, cfg, c);
  ASSERT_TRUE(op.Verify().ok);  // the communicator works
  EXPECT_GT(op.TimedRuns(3), 0);

  static int ms = 3000;
  cudaStream_t s = c.members().front().stream.get();
  DLB_CHECK(cudaLaunchHostFunc(s, Sleep, &ms));
  const auto start = Clock::now();
  std::string line;
  try {
    WaitOrAbort(c, std::vector<cudaStream_t>{s}, DeadlineAfter(0.5), "the test's step");
    FAIL() << "a stream blocked for 3 s finished within 0.5 s";
  } catch (const CommTimeout& e) {
    line = e.what();
  }
  // No bound on the time here: ncclCommAbort waits for the work already on the communicator's
  // stream, and a host function (unlike an NCCL kernel waiting for a peer) cannot be aborted, so
  // it returns once the 3 s sleep is over (seen on the H100). The deadline itself is what counts.
  EXPECT_GE(SecondsSince(start), 0.5);
  EXPECT_EQ(line, TimeoutMessage("the test's step", 0, 0.5));
  EXPECT_TRUE(c.aborted());
  EXPECT_EQ(c.abort_reason(), line);
  // Every later use fails with the same line instead of touching the aborted communicator.
  try {
    op.Run();
    FAIL() << "a collective ran on an aborted communicator";
  } catch (const CommFailed& e) {
    EXPECT_EQ(std::string(e.what()), line);
  }
  DLB_CHECK(cudaStreamSynchronize(s));
}

}  // namespace
}  // namespace dlb::nccl
