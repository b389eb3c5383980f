// The inference step's attention kernel (kernels/cuda/infer_kernels.h, GqaAttention) alone against
// the float64 grouped-query attention, at the query-head groups its blocks take (8, 4, 2 and one
// head a block for a group of 3), head dims 16 to 256, decode contexts split over many chunks and
// a causal prefill after a cached prefix, and the same over a paged cache whose pages are shuffled;
// and the decode step's rotary append fused with it (RopeAttention) against the float64 of both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// A case's cache on the device as bf16: contiguous, or (page > 0) paged through a shuffled table,
// which `a` then names. k and v: the stored values (the pool's order where paged).
struct DeviceCache {
  Paged paged;
  cuda::DeviceBuffer<int32_t> table;
  std::vector<float> k, v;
  cuda::DeviceBuffer<uint16_t> dk, dv;
};
void PlaceCache(cuda::InferAttnDims* a, int64_t page, const std::vector<float>& k,
                const std::vector<float>& v, cudaStream_t stream, DeviceCache* c) {
  c->k = k;
  c->v = v;
  if (page > 0) {
    a->page = page;
    a->pages_per_seq = (a->capacity + page - 1) / page;
    c->paged = Page(*a, k, v);
    c->table = cuda::DeviceBuffer<int32_t>(c->paged.table.size());
    DLB_CHECK(cudaMemcpy(c->table.get(), c->paged.table.data(), c->table.bytes(),
                         cudaMemcpyHostToDevice));
    a->page_table = c->table.get();
    c->k = c->paged.k;
    c->v = c->paged.v;
  }
  c->dk = cuda::DeviceBuffer<uint16_t>(c->k.size());
  c->dv = cuda::DeviceBuffer<uint16_t>(c->v.size());
  cuda::Upload(c->dk.get(), c->k, DType::kBF16, stream);
  cuda::Upload(c->dv.get(), c->v, DType::kBF16, stream);
}

TEST_P(GqaAttentionTest, MatchesTheFloat64Attention) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  cuda::InferAttnDims a = GetParam().dims;
  const int64_t D = a.head_dim, rows = a.batch * a.new_tokens;
  const size_t q_n = size_t(rows * a.heads * D),
               kv_n = size_t(a.batch * a.kv_heads * a.capacity * D);
  const std::vector<float> q = Values(1, q_n), k = Values(2, kv_n), v = Values(3, kv_n);
  cuda::Stream stream = cuda::MakeStream();
  DeviceCache cache;
  PlaceCache(&a, GetParam().page, k, v, stream.get(), &cache);
  cuda::DeviceBuffer<uint16_t> dq(q_n), dout(q_n);
  cuda::Upload(dq.get(), q, DType::kBF16, stream.get());
  const cuda::AttnSplit split = cuda::ChooseSplit(a);
  cuda::DeviceBuffer<float> partial(cuda::AttnPartialFloats(a, split));
  cuda::ClearAttnScratch(partial.get(), a, split, stream.get());
  // Twice, poisoned in between: the second call finds the chunk counters the first left behind.
  std::vector<float> got;
  for (int run = 0; run < 2; ++run) {
    cuda::Poison(dout.get(), q_n, DType::kBF16, stream.get());
    cuda::GqaAttention(dq.get(), cache.dk.get(), cache.dv.get(), a, split, partial.get(),
                       dout.get(), stream.get());
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

// Decode shapes both kernels take, then each one's own:
// {batch, new_tokens, first_pos, heads, kv_heads, head_dim, capacity}, page.
std::vector<AttnCase> DecodeCasesAnd(std::vector<AttnCase> more) {
  std::vector<AttnCase> all = {AttnCase{"llama3_8b_decode", {2, 1, 700, 32, 8, 128, 701}},
                               AttnCase{"group8_decode", {1, 1, 1000, 16, 2, 64, 1001}},
                               AttnCase{"group2_head_dim16", {3, 1, 300, 4, 2, 16, 301}},
                               AttnCase{"multi_head_decode", {2, 1, 129, 4, 4, 128, 130}},
                               AttnCase{"group3_one_head_a_block", {2, 1, 250, 12, 4, 32, 251}},
                               AttnCase{"group16_head_dim256", {1, 1, 77, 32, 2, 256, 78}},
                               AttnCase{"first_key_only", {4, 1, 0, 8, 2, 128, 1}},
                               AttnCase{"llama3_8b_decode_paged", {2, 1, 700, 32, 8, 128, 701}, 64},
                               AttnCase{"batch_64_one_chunk", {64, 1, 1500, 32, 8, 128, 1501}}};
  all.insert(all.end(), more.begin(), more.end());
  return all;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GqaAttentionTest,
    ::testing::ValuesIn(
        DecodeCasesAnd({AttnCase{"causal_prefill_after_a_prefix", {2, 5, 3, 8, 2, 64, 8}},
                        AttnCase{"multi_head_paged_pages_of_32", {3, 1, 200, 4, 4, 64, 201}, 32},
                        AttnCase{"causal_prefill_paged", {2, 9, 40, 8, 2, 16, 49}, 32}})),
    CaseName);

class RopeAttentionTest : public ::testing::TestWithParam<AttnCase> {};

// The fused rotary append and attention (RopeAttention) against the float64 of what it fuses: the
// projection's f32 rows rotated (q and k) and v, this step's key and value appended at first_pos,
// then the grouped-query attention over the cache; its appended rows against the same rotation,
// and every other cached row left as it was.
TEST_P(RopeAttentionTest, MatchesTheFloat64RotaryAppendAndAttention) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  if (!cuda::RopeAttentionSupported()) GTEST_SKIP() << "no thread-block clusters (before sm_90)";
  cuda::InferAttnDims a = GetParam().dims;
  const int64_t D = a.head_dim, half = D / 2, H = a.heads, G = a.kv_heads, pos = a.first_pos;
  const int64_t width = (H + 2 * G) * D;
  const std::vector<float> qkv = Values(4, size_t(a.batch * width));
  const size_t kv_n = size_t(a.batch * G * a.capacity * D);
  // The cache as earlier steps left it (the row at pos too: the launch overwrites it).
  std::vector<float> k = Values(2, kv_n), v = Values(3, kv_n);
  constexpr double kTheta = 500000.0;  // Llama-3's
  std::vector<float> cos, sin;
  for (int64_t j = 0; j < half; ++j) {
    const double angle = double(pos) * std::pow(kTheta, -2.0 * double(j) / double(D));
    cos.push_back(float(std::cos(angle)));
    sin.push_back(float(std::sin(angle)));
  }
  cuda::Stream stream = cuda::MakeStream();
  DeviceCache cache;
  PlaceCache(&a, GetParam().page, k, v, stream.get(), &cache);
  const std::vector<float>& k_stored = cache.k;
  const std::vector<float>& v_stored = cache.v;
  cuda::DeviceBuffer<float> dqkv(qkv.size()), dcos(cos.size()), dsin(sin.size());
  cuda::Upload(dqkv.get(), qkv, DType::kF32, stream.get());
  cuda::Upload(dcos.get(), cos, DType::kF32, stream.get());
  cuda::Upload(dsin.get(), sin, DType::kF32, stream.get());
  cuda::DeviceBuffer<uint16_t>& dk = cache.dk;
  cuda::DeviceBuffer<uint16_t>& dv = cache.dv;
  cuda::DeviceBuffer<uint16_t> dout(size_t(a.batch * H * D));
  cuda::Poison(dout.get(), dout.size(), DType::kBF16, stream.get());
  const cuda::AttnSplit split = cuda::ChooseRopeAttnSplit(a);
  ASSERT_LE(split.splits, 8);
  // Launched first asking for the shared-memory split that just holds a block, then at the
  // driver's (over the cache the first launch appended to, which the second rewrites alike): the
  // same bits.
  const int carveout = cuda::RopeAttentionCarveout(a);
  EXPECT_GT(carveout, 0);
  EXPECT_LE(carveout, 100);
  if (carveout > 1)
    EXPECT_THROW(cuda::RopeAttention(dqkv.get(), dcos.get(), dsin.get(), a, split, dk.get(),
                                     dv.get(), dout.get(), stream.get(), carveout - 1),
                 Error);
  cuda::RopeAttention(dqkv.get(), dcos.get(), dsin.get(), a, split, dk.get(), dv.get(), dout.get(),
                      stream.get(), carveout);
  const std::vector<float> carved =
      cuda::Download(dout.get(), dout.size(), DType::kBF16, stream.get());
  cuda::Poison(dout.get(), dout.size(), DType::kBF16, stream.get());
  cuda::RopeAttention(dqkv.get(), dcos.get(), dsin.get(), a, split, dk.get(), dv.get(), dout.get(),
                      stream.get());
  const std::vector<float> got =
      cuda::Download(dout.get(), dout.size(), DType::kBF16, stream.get());
  EXPECT_EQ(carved, got) << "at " << carveout << "% shared memory";
  const std::vector<float> got_k = cuda::Download(dk.get(), dk.size(), DType::kBF16, stream.get());
  const std::vector<float> got_v = cuda::Download(dv.get(), dv.size(), DType::kBF16, stream.get());

  // The float64 step: q and this step's k rotated (RefRope, its own angles), v copied, into the
  // (contiguous) cache.
  std::vector<double> want, kd(k.begin(), k.end()), vd(v.begin(), v.end());
  std::vector<double> want_new_k, want_new_v;
  std::vector<float> got_new_k, got_new_v;
  for (int64_t b = 0; b < a.batch; ++b) {
    const float* row = qkv.data() + b * width;
    Vec q(row, row + H * D), k_new(row + H * D, row + (H + G) * D);
    RefRope(&q, {pos}, H, D, kTheta);
    RefRope(&k_new, {pos}, G, D, kTheta);
    for (int64_t g = 0; g < G; ++g) {
      const size_t at = size_t(((b * G + g) * a.capacity + pos) * D);
      std::copy(k_new.begin() + g * D, k_new.begin() + (g + 1) * D, kd.begin() + int64_t(at));
      for (int64_t e = 0; e < D; ++e) vd[at + size_t(e)] = row[(H + G + g) * D + e];
      // Where the kernel wrote this row: the contiguous cache's place, or its page's.
      size_t stored = at;
      if (a.page > 0) {
        const int64_t page = cache.paged.table[size_t(b * a.pages_per_seq + pos / a.page)];
        stored = size_t(((page * G + g) * a.page + pos % a.page) * D);
      }
      for (int64_t e = 0; e < D; ++e) {
        want_new_k.push_back(kd[at + size_t(e)]);
        want_new_v.push_back(vd[at + size_t(e)]);
        got_new_k.push_back(got_k[stored + size_t(e)]);
        got_new_v.push_back(got_v[stored + size_t(e)]);
      }
    }
    const size_t seq = size_t(G * a.capacity * D);
    const Vec out = RefGqaAttention(
        q, {pos},
        Vec(kd.begin() + int64_t(size_t(b) * seq), kd.begin() + int64_t(size_t(b + 1) * seq)),
        Vec(vd.begin() + int64_t(size_t(b) * seq), vd.begin() + int64_t(size_t(b + 1) * seq)), H, G,
        D, a.capacity);
    want.insert(want.end(), out.begin(), out.end());
  }
  EXPECT_LT(testing::RelativeL2(got, want), 5e-3)
      << split.splits << " chunks of " << split.chunk << " keys";
  EXPECT_LT(testing::RelativeL2(got_new_k, want_new_k), 4e-3);  // rounded to bf16
  EXPECT_LT(testing::RelativeL2(got_new_v, want_new_v), 4e-3);
  // Every other row as it was: only position pos of each sequence and kv head changed.
  size_t changed = 0;
  for (size_t i = 0; i < got_k.size(); ++i)
    changed += (got_k[i] != k_stored[i]) + (got_v[i] != v_stored[i]);
  EXPECT_LE(changed, size_t(2 * a.batch * G * D));
}

INSTANTIATE_TEST_SUITE_P(Shapes, RopeAttentionTest,
                         ::testing::ValuesIn(DecodeCasesAnd(
                             {AttnCase{"llama3_8b_long_context", {1, 1, 5000, 32, 8, 128, 5001}},
                              AttnCase{"key_at_a_tile_start", {1, 1, 256, 32, 8, 128, 300}},
                              AttnCase{"one_cached_key", {2, 1, 1, 8, 2, 64, 2}}})),
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
  EXPECT_THROW(cuda::ChooseRopeAttnSplit({1, 2, 10, 4, 2, 64, 12}), Error);  // two tokens
  // 8 rows of heads: a cluster of 8 chunks of the cached keys, whole tiles at a round context
  // (this step's key is added after them).
  const cuda::AttnSplit one = cuda::ChooseRopeAttnSplit({1, 1, 2048, 32, 8, 128, 2049});
  EXPECT_EQ(one.splits, 8);
  EXPECT_EQ(one.chunk, 256);
  EXPECT_EQ(cuda::ChooseRopeAttnSplit({1, 1, 40, 32, 8, 128, 41}).splits, 2);  // a tile a chunk
  EXPECT_EQ(cuda::ChooseRopeAttnSplit({64, 1, 1500, 32, 8, 128, 1501}).splits, 1);
}

}  // namespace
}  // namespace dlb
