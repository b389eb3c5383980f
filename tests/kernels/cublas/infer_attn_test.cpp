// The inference step's attention kernel (kernels/cuda/infer_kernels.h, GqaAttention) alone against
// the float64 grouped-query attention, at the query-head groups its blocks take (8, 4, 2 and one
// head a block for a group of 3), head dims 16 to 256, decode contexts split over many chunks and
// a causal prefill after a cached prefix, and the same over a paged cache whose pages are shuffled.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/common/fill.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/infer_kernels.h"
#include "kernels/reference/infer.h"
#include "tests/kernels/testing.h"

namespace dlb {
namespace {

struct AttnCase {
  const char* what;
  cuda::InferAttnDims dims;
  int64_t page = 0;  // positions a page; 0: the contiguous cache
};

std::string CaseName(const ::testing::TestParamInfo<AttnCase>& info) { return info.param.what; }
void PrintTo(const AttnCase& c, std::ostream* os) { *os << c.what; }

class GqaAttentionTest : public ::testing::TestWithParam<AttnCase> {};

// Seeded bf16 values in [-1, 1), as float.
std::vector<float> Values(uint64_t seed, size_t n) {
  return SeededValues(TensorSeed(seed, 0), n, DType::kBF16);
}

// A paged copy of a contiguous batch x kv_heads x capacity x head_dim cache: the pages of every
// sequence in one shuffled pool, as an allocator leaves them after other sequences have come and
// gone.
struct Paged {
  std::vector<int32_t> table;
  std::vector<float> k, v;
};
Paged Page(const cuda::InferAttnDims& a, const std::vector<float>& k, const std::vector<float>& v) {
  const int64_t pps = (a.capacity + a.page - 1) / a.page, D = a.head_dim, G = a.kv_heads;
  Paged out;
  out.table.resize(size_t(a.batch * pps));
  std::iota(out.table.begin(), out.table.end(), 0);
  std::shuffle(out.table.begin(), out.table.end(), std::mt19937(7));
  const size_t pool = out.table.size() * size_t(G * a.page * D);
  out.k.assign(pool, 0.f);
  out.v.assign(pool, 0.f);
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t j = 0; j < a.capacity; ++j)
        for (int64_t e = 0; e < D; ++e) {
          const int64_t page = out.table[size_t(b * pps + j / a.page)];
          const size_t to = size_t(((page * G + g) * a.page + j % a.page) * D + e);
          const size_t from = size_t(((b * G + g) * a.capacity + j) * D + e);
          out.k[to] = k[from];
          out.v[to] = v[from];
        }
  return out;
}

TEST_P(GqaAttentionTest, MatchesTheFloat64Attention) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  cuda::InferAttnDims a = GetParam().dims;
  const int64_t D = a.head_dim, rows = a.batch * a.new_tokens;
  const size_t q_n = size_t(rows * a.heads * D),
               kv_n = size_t(a.batch * a.kv_heads * a.capacity * D);
  const std::vector<float> q = Values(1, q_n), k = Values(2, kv_n), v = Values(3, kv_n);
  cuda::Stream stream = cuda::MakeStream();
  Paged paged;
  cuda::DeviceBuffer<int32_t> table;
  if (GetParam().page > 0) {
    a.page = GetParam().page;
    a.pages_per_seq = (a.capacity + a.page - 1) / a.page;
    paged = Page(a, k, v);
    table = cuda::DeviceBuffer<int32_t>(paged.table.size());
    DLB_CHECK(cudaMemcpy(table.get(), paged.table.data(), table.bytes(), cudaMemcpyHostToDevice));
    a.page_table = table.get();
  }
  const std::vector<float>& k_stored = a.page > 0 ? paged.k : k;
  const std::vector<float>& v_stored = a.page > 0 ? paged.v : v;
  cuda::DeviceBuffer<uint16_t> dq(q_n), dk(k_stored.size()), dv(v_stored.size()), dout(q_n);
  cuda::Upload(dq.get(), q, DType::kBF16, stream.get());
  cuda::Upload(dk.get(), k_stored, DType::kBF16, stream.get());
  cuda::Upload(dv.get(), v_stored, DType::kBF16, stream.get());
  const cuda::AttnSplit split = cuda::ChooseSplit(a);
  cuda::DeviceBuffer<float> partial(cuda::AttnPartialFloats(a, split));
  cuda::ClearAttnScratch(partial.get(), a, split, stream.get());
  // Twice, poisoned in between: the second call finds the chunk counters the first left behind.
  std::vector<float> got;
  for (int run = 0; run < 2; ++run) {
    cuda::Poison(dout.get(), q_n, DType::kBF16, stream.get());
    cuda::GqaAttention(dq.get(), dk.get(), dv.get(), a, split, partial.get(), dout.get(),
                       stream.get());
    got = cuda::Download(dout.get(), q_n, DType::kBF16, stream.get());
  }

  // Per sequence: its tokens' queries at positions first_pos.., its kv_heads x capacity cache.
  std::vector<double> want;
  const size_t q_seq = size_t(a.new_tokens * a.heads * D),
               kv_seq = size_t(a.kv_heads * a.capacity * D);
  std::vector<int64_t> pos;
  for (int64_t t = 0; t < a.new_tokens; ++t) pos.push_back(a.first_pos + t);
  for (int64_t b = 0; b < a.batch; ++b) {
    const auto slice = [&](const std::vector<float>& x, size_t n) {
      return Vec(x.begin() + int64_t(size_t(b) * n), x.begin() + int64_t(size_t(b + 1) * n));
    };
    const Vec out = RefGqaAttention(slice(q, q_seq), pos, slice(k, kv_seq), slice(v, kv_seq),
                                    a.heads, a.kv_heads, D, a.capacity);
    want.insert(want.end(), out.begin(), out.end());
  }
  ASSERT_EQ(got.size(), want.size());
  // The output is rounded to bf16 (2^-9 relative at most); the rest is f32 arithmetic.
  EXPECT_LT(testing::RelativeL2(got, want), 5e-3)
      << split.splits << " chunks of " << split.chunk << " keys";
}

// {batch, new_tokens, first_pos, heads, kv_heads, head_dim, capacity}
INSTANTIATE_TEST_SUITE_P(
    Shapes, GqaAttentionTest,
    ::testing::Values(AttnCase{"llama3_8b_decode", {2, 1, 700, 32, 8, 128, 701}},
                      AttnCase{"group8_decode", {1, 1, 1000, 16, 2, 64, 1001}},
                      AttnCase{"group2_head_dim16", {3, 1, 300, 4, 2, 16, 301}},
                      AttnCase{"multi_head_decode", {2, 1, 129, 4, 4, 128, 130}},
                      AttnCase{"group3_one_head_a_block", {2, 1, 250, 12, 4, 32, 251}},
                      AttnCase{"group16_head_dim256", {1, 1, 77, 32, 2, 256, 78}},
                      AttnCase{"causal_prefill_after_a_prefix", {2, 5, 3, 8, 2, 64, 8}},
                      AttnCase{"first_key_only", {4, 1, 0, 8, 2, 128, 1}},
                      AttnCase{"llama3_8b_decode_paged", {2, 1, 700, 32, 8, 128, 701}, 64},
                      AttnCase{"multi_head_paged_pages_of_32", {3, 1, 200, 4, 4, 64, 201}, 32},
                      AttnCase{"causal_prefill_paged", {2, 9, 40, 8, 2, 16, 49}, 32},
                      AttnCase{"batch_64_one_chunk", {64, 1, 1500, 32, 8, 128, 1501}}),
    CaseName);

// Shapes the kernel does not take are one-line errors, not launches.
TEST(GqaAttention, RefusesHeadDimsItsTilesDoNotTake) {
  EXPECT_TRUE(cuda::InferHeadDimOk(128));
  EXPECT_TRUE(cuda::InferHeadDimOk(16));
  EXPECT_FALSE(cuda::InferHeadDimOk(8));  // below one tensor-core step
  EXPECT_FALSE(cuda::InferHeadDimOk(96));
  EXPECT_FALSE(cuda::InferHeadDimOk(20));
  EXPECT_FALSE(cuda::InferHeadDimOk(512));
  EXPECT_THROW(cuda::ChooseSplit({1, 1, 10, 4, 2, 96, 11}), Error);
  EXPECT_THROW(cuda::ChooseSplit({1, 1, 10, 4, 2, 8, 11}), Error);
  cuda::InferAttnDims paged{1, 1, 10, 4, 2, 64, 11};
  paged.page = 48;  // not a multiple of the 32-key tile
  paged.pages_per_seq = 1;
  const int32_t table = 0;
  paged.page_table = &table;
  EXPECT_THROW(cuda::ChooseSplit(paged), Error);
}

}  // namespace
}  // namespace dlb
