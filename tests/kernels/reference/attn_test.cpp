#include "kernels/reference/attn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <thread>
#include <tuple>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/common/fill.h"
#include "tests/kernels/testing.h"

namespace dlb {
namespace {

struct Inputs {
  std::vector<float> q, k, v, dout;
};

Inputs Seeded(const AttnShape& s, uint64_t seed, DType dt) {
  return {SeededValues(TensorSeed(seed, 0), size_t(s.QElems()), dt),
          SeededValues(TensorSeed(seed, 1), size_t(s.KvElems()), dt),
          SeededValues(TensorSeed(seed, 2), size_t(s.KvElems()), dt),
          SeededValues(TensorSeed(seed, 3), size_t(s.QElems()), dt)};
}

// The whole forward, straight from the definition: for every (b, h, i) the full score row, the
// softmax written as exp(s) / sum exp(s) (no max subtracted: the scores here are small), then P V.
std::vector<double> BruteForward(const AttnShape& s, const std::vector<double>& q,
                                 const std::vector<double>& k, const std::vector<double>& v) {
  const int64_t S = s.seq, D = s.head_dim, group = s.heads / s.kv_heads;
  std::vector<double> o(size_t(s.QElems()), 0.0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t qb = (b * s.heads + h) * S * D, kb = (b * s.kv_heads + h / group) * S * D;
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> e(size_t(S), 0.0);
        double sum = 0;
        for (int64_t j = 0; j < S; ++j) {
          if (s.causal && j > i) continue;
          double dot = 0;
          for (int64_t t = 0; t < D; ++t) dot += q[qb + i * D + t] * k[kb + j * D + t];
          e[j] = std::exp(dot * s.Scale());
          sum += e[j];
        }
        for (int64_t j = 0; j < S; ++j)
          for (int64_t t = 0; t < D; ++t) o[qb + i * D + t] += e[j] / sum * v[kb + j * D + t];
      }
    }
  return o;
}

std::vector<double> ToDouble(const std::vector<float>& x) { return {x.begin(), x.end()}; }

// L = sum(O * dO), the scalar whose gradients the backward pass computes.
double Loss(const AttnShape& s, const std::vector<double>& q, const std::vector<double>& k,
            const std::vector<double>& v, const std::vector<double>& dout) {
  const std::vector<double> o = BruteForward(s, q, k, v);
  double l = 0;
  for (size_t i = 0; i < o.size(); ++i) l += o[i] * dout[i];
  return l;
}

// dQ, dK, dV concatenated, by central differences of Loss: independent of the backward equations.
std::vector<double> FiniteDifferenceGrads(const AttnShape& s, const Inputs& in) {
  std::vector<double> q = ToDouble(in.q), k = ToDouble(in.k), v = ToDouble(in.v),
                      dout = ToDouble(in.dout);
  const double h = 1e-5;
  std::vector<double> out;
  for (std::vector<double>* x : {&q, &k, &v})
    for (double& xi : *x) {
      const double keep = xi;
      xi = keep + h;
      const double up = Loss(s, q, k, v, dout);
      xi = keep - h;
      const double down = Loss(s, q, k, v, dout);
      xi = keep;
      out.push_back((up - down) / (2 * h));
    }
  return out;
}

// The problem of the given sizes (tests/kernels/testing.h).
const auto Shape = dlb::testing::TestAttnShape;

TEST(ReferenceAttn, OutputElemsArePassShaped) {
  EXPECT_EQ(
      ReferenceAttn(Shape(2, 4, 2, 3, 5, false, AttnPass::kFwd), 1, DType::kF32).OutputElems(),
      2 * 4 * 3 * 5);
  EXPECT_EQ(
      ReferenceAttn(Shape(2, 4, 2, 3, 5, false, AttnPass::kBwd), 1, DType::kF32).OutputElems(),
      2 * 4 * 3 * 5 + 2 * (2 * 2 * 3 * 5));
}

TEST(ReferenceAttn, RejectsInvalidShapesAndPositions) {
  EXPECT_THROW(ReferenceAttn(Shape(1, 3, 2, 4, 4, false, AttnPass::kFwd), 1, DType::kF32), Error);
  ReferenceAttn r(Shape(1, 2, 2, 4, 4, false, AttnPass::kFwd), 1, DType::kF32);
  EXPECT_THROW(r.At(-1), Error);
  EXPECT_THROW(r.At(r.OutputElems()), Error);
}

// One key: the softmax is 1, so O = V of the head's kv head, and the gradients of Q and K vanish
// while dV sums dO over the query heads that read it.
TEST(ReferenceAttn, SequenceOfOneCopiesVAndSumsDoIntoDv) {
  const uint64_t seed = 7;
  for (bool causal : {false, true}) {
    AttnShape s = Shape(2, 4, 2, 1, 3, causal, AttnPass::kFwd);
    const Inputs in = Seeded(s, seed, DType::kF32);
    ReferenceAttn fwd(s, seed, DType::kF32);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t t = 0; t < 3; ++t)
          EXPECT_DOUBLE_EQ(fwd.At((b * 4 + h) * 3 + t), in.v[(b * 2 + h / 2) * 3 + t]);
    s.pass = AttnPass::kBwd;
    ReferenceAttn bwd(s, seed, DType::kF32);
    const int64_t qe = s.QElems(), kve = s.KvElems();
    for (int64_t x = 0; x < qe + kve; ++x) EXPECT_NEAR(bwd.At(x), 0.0, 1e-15) << x;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t g = 0; g < 2; ++g)
        for (int64_t t = 0; t < 3; ++t) {
          const double want = double(in.dout[(b * 4 + 2 * g) * 3 + t]) +
                              double(in.dout[(b * 4 + 2 * g + 1) * 3 + t]);
          EXPECT_NEAR(bwd.At(qe + kve + (b * 2 + g) * 3 + t), want, 1e-15);
        }
  }
}

// Causal: query 0 sees key 0 alone, so its output row is V's row 0; the last query sees every key
// and matches the non-causal row.
TEST(ReferenceAttn, CausalFirstRowIsVsFirstRowAndLastRowSeesAll) {
  const AttnShape c = Shape(1, 2, 1, 5, 4, true, AttnPass::kFwd);
  AttnShape nc = c;
  nc.causal = false;
  const Inputs in = Seeded(c, 3, DType::kF32);
  ReferenceAttn rc(c, 3, DType::kF32), rn(nc, 3, DType::kF32);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t t = 0; t < 4; ++t) {
      EXPECT_DOUBLE_EQ(rc.At(h * 20 + t), in.v[t]);
      EXPECT_DOUBLE_EQ(rc.At(h * 20 + 16 + t), rn.At(h * 20 + 16 + t));
    }
}

class ReferenceAttnBrute : public ::testing::TestWithParam<std::tuple<bool, int64_t, DType>> {};

// Every element of the forward against the brute-force definition, for causal or not, plain or
// grouped-query heads, f32 or bf16-rounded inputs.
TEST_P(ReferenceAttnBrute, ForwardMatchesTheDefinition) {
  const auto [causal, kv_heads, dt] = GetParam();
  const AttnShape s = Shape(2, 4, kv_heads, 6, 3, causal, AttnPass::kFwd);
  const Inputs in = Seeded(s, 11, dt);
  const std::vector<double> want = BruteForward(s, ToDouble(in.q), ToDouble(in.k), ToDouble(in.v));
  ReferenceAttn r(s, 11, dt);
  ASSERT_EQ(r.OutputElems(), int64_t(want.size()));
  // Read back to front: cached rows and statistics must not depend on the order of reads.
  for (int64_t x = r.OutputElems() - 1; x >= 0; --x)
    EXPECT_NEAR(r.At(x), want[size_t(x)], 1e-13) << x;
}

// Every gradient against central differences of sum(O * dO).
TEST_P(ReferenceAttnBrute, BackwardMatchesFiniteDifferencesOfTheLoss) {
  const auto [causal, kv_heads, dt] = GetParam();
  const AttnShape s = Shape(1, 4, kv_heads, 5, 3, causal, AttnPass::kBwd);
  const Inputs in = Seeded(s, 5, dt);
  const std::vector<double> want = FiniteDifferenceGrads(s, in);
  ReferenceAttn r(s, 5, dt);
  ASSERT_EQ(r.OutputElems(), int64_t(want.size()));
  double worst = 0, norm = 0;
  // Back to front: causal dV/dK rows of the last keys come first and need only the last query
  // rows' statistics, which earlier keys then extend.
  for (int64_t x = r.OutputElems() - 1; x >= 0; --x) {
    worst = std::max(worst, std::abs(r.At(x) - want[size_t(x)]));
    norm = std::max(norm, std::abs(want[size_t(x)]));
  }
  EXPECT_GT(norm, 1e-2);  // the gradients are not all zero
  EXPECT_LT(worst, 1e-8) << "largest gradient " << norm;
}

std::string CaseName(const ::testing::TestParamInfo<ReferenceAttnBrute::ParamType>& info) {
  const auto& [causal, kv, dt] = info.param;
  return std::string(causal ? "causal" : "full") + "_kv" + std::to_string(kv) + "_" +
         std::string(Name(dt));
}

INSTANTIATE_TEST_SUITE_P(CausalGqaDtype, ReferenceAttnBrute,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(4, 2, 1),
                                            ::testing::Values(DType::kF32, DType::kBF16)),
                         CaseName);

// Concurrent reads (the verifier calls At from every core) give the single-threaded values.
TEST(ReferenceAttn, ConcurrentReadsAgree) {
  const AttnShape s = Shape(1, 4, 2, 16, 8, true, AttnPass::kBwd);
  ReferenceAttn serial(s, 9, DType::kF32), shared(s, 9, DType::kF32);
  const int64_t n = serial.OutputElems();
  std::vector<double> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
  for (int64_t x = 0; x < n; ++x) want[size_t(x)] = serial.At(x);
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&, t] {
      for (int64_t x = t; x < n; x += 4) got[size_t(x)] = shared.At(x);
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace dlb
