#include "kernels/common/fill.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kernels/common/error.h"

namespace dlb {
namespace {

TEST(Fill, DeterministicAndInRange) {
  auto a = SeededValues(7, 1000, DType::kF32);
  auto b = SeededValues(7, 1000, DType::kF32);
  EXPECT_EQ(a, b);
  std::set<float> distinct(a.begin(), a.end());
  EXPECT_GT(distinct.size(), 990u);
  for (float v : a) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  EXPECT_NE(SeededValues(8, 10, DType::kF32), SeededValues(7, 10, DType::kF32));
}

TEST(Fill, ValuesAreRepresentableInTheDtype) {
  for (DType dt : {DType::kBF16, DType::kF16, DType::kFP8E4M3, DType::kFP8E5M2, DType::kInt8}) {
    for (float v : SeededValues(3, 500, dt)) EXPECT_EQ(RoundTo(dt, v), v);
  }
}

// The 8-bit types still spread over [-1, 1): int8 takes (nearly) every one of its 256 values.
TEST(Fill, EightBitValuesSpanTheirRange) {
  std::set<float> int8;
  for (float v : SeededValues(3, 20000, DType::kInt8)) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    int8.insert(v);
  }
  EXPECT_GT(int8.size(), 250u);
  std::set<float> fp8;
  for (float v : SeededValues(3, 20000, DType::kFP8E4M3)) fp8.insert(v);
  EXPECT_GT(fp8.size(), 150u);  // the e4m3 values in [-1, 1) the scale 2^-8 reaches
}

TEST(Fill, StorageRoundTrip) {
  for (DType dt :
       {DType::kF32, DType::kF16, DType::kBF16, DType::kFP8E4M3, DType::kFP8E5M2, DType::kInt8}) {
    auto v = SeededValues(11, 64, dt);
    auto bytes = ToStorage(v, dt);
    EXPECT_EQ(bytes.size(), v.size() * StorageBytes(dt));
    EXPECT_EQ(FromStorage(bytes.data(), v.size(), dt), v);
  }
}

TEST(Fill, TensorSeedsDiffer) {
  EXPECT_NE(TensorSeed(42, 0), TensorSeed(42, 1));
  EXPECT_NE(TensorSeed(42, 0), TensorSeed(43, 0));
}

}  // namespace
}  // namespace dlb

namespace dlb {
namespace {

// Big tensors are filled on several threads: every element must still be the one the stream
// gives at its index, whatever the tensor's size.
TEST(Fill, SeededViewReadsTheSameValuesWithoutStoringThem) {
  for (DType dt : {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16}) {
    const size_t n = (size_t(1) << 20) + 777;  // more than one parallel chunk
    const auto values = SeededValues(7, n, dt);
    const SeededView view(7, n, dt);
    ASSERT_EQ(view.size(), n);
    for (size_t i = 0; i < n; i += 13) ASSERT_EQ(view[i], values[i]) << Name(dt) << " " << i;
    ASSERT_EQ(view[n - 1], values[n - 1]);
  }
}

TEST(Fill, SeedStorageWritesWhatToStorageOfSeededValuesGives) {
  for (DType dt :
       {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16, DType::kFP8E4M3, DType::kInt8}) {
    const size_t n = (size_t(1) << 21) + 333;  // several parallel chunks and a ragged end
    const std::vector<uint8_t> want = ToStorage(SeededValues(5, n, dt), dt);
    std::vector<uint8_t> got(want.size(), 0xab);
    SeedStorage(got.data(), 5, n, dt);
    ASSERT_EQ(got, want) << Name(dt);
  }
}

TEST(Fill, ParallelFillMatchesTheStreamAtEveryIndex) {
  const size_t big = (size_t(1) << 21) + 12345;
  auto a = SeededValues(99, big, DType::kBF16);
  auto b = SeededValues(99, 1000, DType::kBF16);
  for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(a[i], b[i]) << i;
  auto tail = SeededValues(99, big - 5, DType::kBF16);
  for (size_t i = big - 100; i < big - 5; ++i) ASSERT_EQ(a[i], tail[i]) << i;
}

}  // namespace
}  // namespace dlb

namespace dlb {
namespace {

TEST(Fill, MoreThanTheHostHasIsAnErrorNotACrash) {
  try {
    SeededValues(1, size_t(1) << 45, DType::kF32);  // 128 TiB
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory: needs 131072.00 GiB of host memory"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dlb
