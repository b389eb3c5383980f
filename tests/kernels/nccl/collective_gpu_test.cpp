// The device check counts wrong elements exactly (a deliberately corrupted buffer), and every
// collective passes it on the GPUs this host has (one, or the first two).
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"
#include "kernels/nccl/collective.h"
#include "kernels/nccl/pattern.h"
#include "kernels/nccl/pattern_kernels.h"

namespace dlb::nccl {
namespace {

class NcclGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    ::setenv("NCCL_NVLS_ENABLE", "0", 1);
    DLB_CHECK(cudaSetDevice(0));
  }
};

// all_gather's output of rank 1 of 4, written from the host, then `corrupt` elements changed.
uint64_t WrongAfterCorrupting(DType dt, const std::vector<int64_t>& corrupt) {
  const int ranks = 4, rank = 1;
  const int64_t chunk = 1000, n = chunk * ranks;
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[size_t(i)] = pattern::Expected(Collective::kAllGather, 42, rank, ranks, chunk, i);
  for (int64_t i : corrupt) out[size_t(i)] += 1;
  cuda::Stream stream = cuda::MakeStream();
  cuda::DeviceBuffer<char> buf(size_t(n) * StorageBytes(dt));
  cuda::DeviceBuffer<unsigned long long> wrong(1);
  cuda::Upload(buf.get(), out, dt, stream.get());
  DLB_CHECK(cudaMemsetAsync(wrong.get(), 0, sizeof(unsigned long long), stream.get()));
  CountWrong(buf.get(), n, dt, Collective::kAllGather, 42, rank, ranks, chunk, wrong.get(),
             stream.get());
  unsigned long long got = 0;
  DLB_CHECK(cudaMemcpyAsync(&got, wrong.get(), sizeof got, cudaMemcpyDeviceToHost, stream.get()));
  cuda::Sync(stream.get());
  return got;
}

TEST_F(NcclGpuTest, CountWrongCountsEveryCorruptedElementAndNoOther) {
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(std::string(Name(dt)));
    EXPECT_EQ(WrongAfterCorrupting(dt, {}), 0u);
    EXPECT_EQ(WrongAfterCorrupting(dt, {0, 999, 1000, 3999}), 4u);
  }
}

TEST_F(NcclGpuTest, CountWrongCountsPoisonedElements) {
  const int64_t n = 4096;
  cuda::Stream stream = cuda::MakeStream();
  cuda::DeviceBuffer<char> buf(size_t(n) * 2);
  cuda::DeviceBuffer<unsigned long long> wrong(1);
  cuda::Poison(buf.get(), size_t(n), DType::kBF16, stream.get());
  DLB_CHECK(cudaMemsetAsync(wrong.get(), 0, sizeof(unsigned long long), stream.get()));
  CountWrong(buf.get(), n, DType::kBF16, Collective::kAllReduce, 42, 0, 2, 0, wrong.get(),
             stream.get());
  unsigned long long got = 0;
  DLB_CHECK(cudaMemcpyAsync(&got, wrong.get(), sizeof got, cudaMemcpyDeviceToHost, stream.get()));
  cuda::Sync(stream.get());
  EXPECT_EQ(got, uint64_t(n));
}

// Every collective, out of place and in place, on one GPU and (when there are two) on two, in one
// process: verified, and timed to a positive span.
TEST_F(NcclGpuTest, EveryCollectiveVerifiesOnTheLocalGpus) {
  std::vector<int> counts = {1};
  if (cuda::DeviceCount() >= 2) counts.push_back(2);
  for (int gpus : counts) {
    std::vector<int> devices;
    for (int d = 0; d < gpus; ++d) devices.push_back(d);
    Communicator comm = Communicator::InitAll(devices);
    for (Collective c : kCollectives)
      for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
        for (bool inplace : {false, true})
          for (int64_t bytes : {int64_t(8), int64_t(1000), int64_t(1) << 20}) {
            CommShape s{c, bytes, inplace, gpus};
            RunConfig cfg;
            cfg.dtype = dt;
            SCOPED_TRACE(std::string(Name(c)) + " " + std::to_string(bytes) + " B " +
                         std::string(Name(dt)) + (inplace ? " in place" : "") + " on " +
                         std::to_string(gpus) + " GPUs");
            if (!CollectiveOp::Supports(s, cfg).ok) continue;
            CollectiveOp op(s, cfg, comm);
            const Verdict v = op.Verify();
            EXPECT_TRUE(v.ok) << v.detail;
            EXPECT_EQ(v.error, 0);
            EXPECT_EQ(v.checked, size_t(op.counts().recv) * size_t(gpus));
            EXPECT_GT(op.TimedRuns(3), 0);
          }
  }
}

// Both allocators give the collectives buffers they verify on; an impossible size is the harness's
// out-of-memory line, not NCCL's warning and an abort.
TEST_F(NcclGpuTest, BothAllocatorsVerifyAndAnImpossibleSizeIsOutOfMemory) {
  Communicator comm = Communicator::InitAll({0});
  for (BufferAlloc how : {BufferAlloc::kNccl, BufferAlloc::kCuda}) {
    SCOPED_TRACE(std::string(Name(how)));
    CommShape s{Collective::kAllReduce, int64_t(1) << 20, false, 1};
    RunConfig cfg;
    cfg.dtype = DType::kBF16;
    CollectiveOp op(s, cfg, comm, how);
    const Verdict v = op.Verify();
    EXPECT_TRUE(v.ok) << v.detail;
    EXPECT_GT(op.TimedRuns(3), 0);
    DLB_CHECK(cudaSetDevice(0));
    try {
      CommBuffer huge(size_t(1) << 50, how);
      ADD_FAILURE() << "a 1 PiB buffer was allocated";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dlb::nccl
