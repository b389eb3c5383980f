#include "kernels/nccl/shape.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kernels/nccl/pattern.h"

namespace dlb::nccl {
namespace {

TEST(CollectiveNames, RoundTrip) {
  for (Collective c : kCollectives) EXPECT_EQ(ParseCollective(Name(c)), c);
  EXPECT_FALSE(ParseCollective("allreduce").has_value());
  EXPECT_EQ(Name(Collective::kAllToAll), "all_to_all");
}

// nccl-tests' doc/PERFORMANCE.md: 2(n-1)/n, (n-1)/n, 1.
TEST(BusBw, FactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kAllGather, 2), 0.5);
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kAllToAll, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kBroadcast, 8), 1.0);
  // One rank moves nothing between GPUs.
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kAllReduce, 1), 0.0);
}

TEST(Counts, TheCountedBytesAreTheLargerBufferAsNcclTestsSizesIt) {
  // 1 MiB of bf16 over 2 ranks.
  const CommCounts ar = Counts(Collective::kAllReduce, 1 << 20, DType::kBF16, 2);
  EXPECT_EQ(ar.send, 1 << 19);
  EXPECT_EQ(ar.recv, 1 << 19);
  EXPECT_EQ(ar.CountedBytes(DType::kBF16), 1 << 20);
  const CommCounts ag = Counts(Collective::kAllGather, 1 << 20, DType::kBF16, 2);
  EXPECT_EQ(ag.send, 1 << 18);
  EXPECT_EQ(ag.recv, 1 << 19);
  EXPECT_EQ(ag.CountedBytes(DType::kBF16), 1 << 20);
  const CommCounts rs = Counts(Collective::kReduceScatter, 1 << 20, DType::kBF16, 2);
  EXPECT_EQ(rs.send, 1 << 19);
  EXPECT_EQ(rs.recv, 1 << 18);
  EXPECT_EQ(rs.CountedBytes(DType::kBF16), 1 << 20);
  const CommCounts a2a = Counts(Collective::kAllToAll, 1 << 20, DType::kF32, 2);
  EXPECT_EQ(a2a.chunk, 1 << 17);
  EXPECT_EQ(a2a.send, 1 << 18);
  EXPECT_EQ(a2a.CountedBytes(DType::kF32), 1 << 20);
}

TEST(Counts, SplitBuffersRoundDownToAMultipleOfTheRanks) {
  // 8 bytes of f32 are 2 elements: one per rank of 2, none per rank of 3.
  EXPECT_EQ(Counts(Collective::kAllGather, 8, DType::kF32, 2).chunk, 1);
  EXPECT_EQ(Counts(Collective::kAllGather, 8, DType::kF32, 3).recv, 0);
  const CommCounts rs = Counts(Collective::kReduceScatter, 1000, DType::kF32, 3);  // 250 elements
  EXPECT_EQ(rs.chunk, 83);
  EXPECT_EQ(rs.send, 249);
  EXPECT_EQ(rs.CountedBytes(DType::kF32), 996);
  EXPECT_EQ(Counts(Collective::kBroadcast, 1000, DType::kF32, 3).send, 250);
}

// Every value the pattern asks a reduction to produce, and every partial sum on the way, is an
// integer that bf16 holds exactly: equality is the right check in every dtype.
TEST(Pattern, EveryExpectedValueIsExactInBf16) {
  for (int ranks : {1, 2, 3, 4, 8, 16, 64, 256})
    for (Collective c : kCollectives)
      for (int rank : {0, ranks - 1})
        for (int64_t i = 0; i < 512; ++i) {
          const float want = pattern::Expected(c, 42, rank, ranks, 64, i);
          ASSERT_GE(want, 0);
          ASSERT_LE(want, 256) << Name(c) << " ranks " << ranks;
          ASSERT_EQ(RoundTo(DType::kBF16, want), want) << Name(c) << " ranks " << ranks;
          ASSERT_EQ(RoundTo(DType::kF16, want), want);
        }
}

TEST(Pattern, OutputsFollowFromTheInputsOfEveryRank) {
  const int ranks = 4;
  const int64_t chunk = 16;
  const uint64_t seed = 7;
  for (int rank = 0; rank < ranks; ++rank)
    for (int64_t i = 0; i < chunk * ranks; ++i) {
      const int64_t peer = i / chunk, j = i % chunk;
      float sum = 0;
      for (int s = 0; s < ranks; ++s) sum += pattern::Input(seed, s, ranks, i);
      EXPECT_EQ(pattern::Expected(Collective::kAllReduce, seed, rank, ranks, chunk, i), sum);
      EXPECT_EQ(pattern::Expected(Collective::kAllGather, seed, rank, ranks, chunk, i),
                pattern::Input(seed, int(peer), ranks, j));
      EXPECT_EQ(pattern::Expected(Collective::kBroadcast, seed, rank, ranks, chunk, i),
                pattern::Input(seed, 0, ranks, i));
      EXPECT_EQ(pattern::Expected(Collective::kAllToAll, seed, rank, ranks, chunk, i),
                pattern::Input(seed, int(peer), ranks, rank * chunk + j));
    }
  // Ranks and elements get different values: a chunk in the wrong place would show.
  int differ = 0;
  for (int64_t i = 0; i < 64; ++i)
    differ += pattern::Input(seed, 0, ranks, i) != pattern::Input(seed, 1, ranks, i);
  EXPECT_GT(differ, 48);
}

}  // namespace
}  // namespace dlb::nccl
