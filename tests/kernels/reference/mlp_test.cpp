#include "kernels/reference/mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/common/train.h"

namespace dlb {
namespace {

TrainShape Tiny(Pass pass = Pass::kTrain) {
  TrainShape s;
  s.model = "mlp";
  s.batch = 3;
  s.widths = {5, 4, 3};
  s.classes = 3;
  s.pass = pass;
  return s;
}

double LossAt(const TrainShape& s, const MlpParams& p, const MlpBatch& b) {
  TrainShape infer = s;
  infer.pass = Pass::kInfer;
  return ReferenceMlpStep(infer, p, b, nullptr).loss;
}

// dL/dp by central differences. The parameters are floats: the step actually taken is the
// difference of the two rounded points, exact in double.
template <class Get>
void ExpectGradientsMatchFiniteDifferences(const TrainShape& s, const MlpParams& p,
                                           const MlpBatch& b, Get get,
                                           const std::vector<std::vector<double>>& grads,
                                           const char* what) {
  for (size_t l = 0; l < grads.size(); ++l)
    for (size_t e = 0; e < grads[l].size(); ++e) {
      MlpParams plus = p, minus = p;
      float& up = get(plus)[l][e];
      float& down = get(minus)[l][e];
      up = up + 1e-3f;
      down = down - 1e-3f;
      const double h = double(up) - double(down);
      const double fd = (LossAt(s, plus, b) - LossAt(s, minus, b)) / h;
      EXPECT_NEAR(grads[l][e], fd, 1e-6 + 1e-4 * std::abs(fd))
          << what << " layer " << l << " element " << e;
    }
}

TEST(ReferenceMlp, GradientsMatchCentralFiniteDifferences) {
  const TrainShape s = Tiny();
  const MlpParams p = SeededMlpParams(7, s.widths);
  const MlpBatch b = SeededMlpBatch(7, s.batch, s.widths.front(), s.widths.back());
  const MlpStepResult r = ReferenceMlpStep(s, p, b, nullptr);
  ASSERT_EQ(r.grad_weight.size(), 2u);
  ASSERT_EQ(r.grad_weight[0].size(), 20u);
  ASSERT_EQ(r.grad_bias[1].size(), 3u);
  // Some hidden units must be off for some samples, or the ReLU's backward goes untested.
  int off = 0;
  for (int64_t i = 0; i < s.batch; ++i)
    for (int64_t o = 0; o < 4; ++o) {
      double z = p.bias[0][o];
      for (int64_t k = 0; k < 5; ++k) z += double(b.x[i * 5 + k]) * p.weight[0][o * 5 + k];
      off += z <= 0;
    }
  EXPECT_GT(off, 0);
  EXPECT_LT(off, 12);
  ExpectGradientsMatchFiniteDifferences(
      s, p, b, [](MlpParams & q) -> auto& { return q.weight; }, r.grad_weight, "weight");
  ExpectGradientsMatchFiniteDifferences(
      s, p, b, [](MlpParams & q) -> auto& { return q.bias; }, r.grad_bias, "bias");
}

// One linear layer, W = I, b = 0: sample 0 (x = [1, 0], label 0) has logits [1, 0], sample 1
// (x = [0, 0], label 1) has logits [0, 0].
TEST(ReferenceMlp, LossAndGradientsOfAHandComputedCase) {
  TrainShape s;
  s.batch = 2;
  s.widths = {2, 2};
  MlpParams p{{{1, 0, 0, 1}}, {{0, 0}}};
  MlpBatch b{{1, 0, 0, 0}, {0, 1}};
  const MlpStepResult r = ReferenceMlpStep(s, p, b, nullptr);
  const double e = std::exp(1.0);
  EXPECT_NEAR(r.loss, (std::log(1 + e) - 1 + std::log(2.0)) / 2, 1e-15);
  EXPECT_EQ(r.logits, (std::vector<double>{1, 0, 0, 0}));
  // dlogits = (softmax - onehot) / 2: sample 0 [-1, 1] / (2 (1 + e)), sample 1 [1, -1] / 4.
  const double g = 1 / (2 * (1 + e));
  const std::vector<double> dw = {-g, 0, g, 0}, db = {-g + 0.25, g - 0.25};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(r.grad_weight[0][i], dw[i], 1e-15) << i;
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(r.grad_bias[0][i], db[i], 1e-15) << i;
  // The first step's momentum buffer is the gradient: w - lr * g.
  EXPECT_NEAR(r.weight[0][0], 1 - s.lr * -g, 1e-15);
  EXPECT_NEAR(r.bias[0][1], -s.lr * (g - 0.25), 1e-15);
}

TEST(ReferenceMlp, MomentumFollowsPyTorchSgdOverTwoSteps) {
  TrainShape s = Tiny();
  s.lr = 0.1;
  s.momentum = 0.9;
  const MlpParams p0 = SeededMlpParams(3, s.widths);
  const MlpBatch b = SeededMlpBatch(3, s.batch, s.widths.front(), s.widths.back());
  MlpMomentum buf;
  const MlpStepResult r1 = ReferenceMlpStep(s, p0, b, &buf);
  ASSERT_EQ(buf.weight.size(), 2u);
  for (size_t l = 0; l < 2; ++l) {
    EXPECT_EQ(buf.weight[l], r1.grad_weight[l]);  // buf starts at zero: first buf = grad
    EXPECT_EQ(buf.bias[l], r1.grad_bias[l]);
    for (size_t e = 0; e < p0.weight[l].size(); ++e)
      EXPECT_DOUBLE_EQ(r1.weight[l][e], p0.weight[l][e] - s.lr * r1.grad_weight[l][e]);
  }
  const MlpParams p1 = UpdatedParams(r1);
  const MlpStepResult r2 = ReferenceMlpStep(s, p1, b, &buf);
  for (size_t l = 0; l < 2; ++l)
    for (size_t e = 0; e < p1.weight[l].size(); ++e) {
      const double want_buf = s.momentum * r1.grad_weight[l][e] + r2.grad_weight[l][e];
      EXPECT_DOUBLE_EQ(buf.weight[l][e], want_buf);
      EXPECT_DOUBLE_EQ(r2.weight[l][e], p1.weight[l][e] - s.lr * want_buf);
    }
  // A second step on the same batch lowers its loss.
  EXPECT_LT(r2.loss, r1.loss);
  // Without buffers, the second step would have moved by lr * g2 alone.
  const MlpStepResult plain = ReferenceMlpStep(s, p1, b, nullptr);
  EXPECT_NE(plain.weight[0][0], r2.weight[0][0]);
}

TEST(ReferenceMlp, InferComputesLogitsAndLossOnly) {
  const TrainShape s = Tiny(Pass::kInfer);
  const MlpParams p = SeededMlpParams(5, s.widths);
  const MlpBatch b = SeededMlpBatch(5, s.batch, 5, 3);
  const MlpStepResult infer = ReferenceMlpStep(s, p, b, nullptr);
  const MlpStepResult train = ReferenceMlpStep(Tiny(), p, b, nullptr);
  EXPECT_EQ(infer.logits, train.logits);
  EXPECT_EQ(infer.loss, train.loss);
  EXPECT_TRUE(infer.grad_weight.empty());
  EXPECT_TRUE(infer.weight.empty());
}

TEST(ReferenceMlp, RejectsMismatchedInputs) {
  const TrainShape s = Tiny();
  const MlpParams p = SeededMlpParams(5, s.widths);
  MlpBatch b = SeededMlpBatch(5, s.batch, 5, 3);
  b.labels[0] = 3;
  EXPECT_THROW(ReferenceMlpStep(s, p, b, nullptr), Error);
  b = SeededMlpBatch(5, s.batch + 1, 5, 3);
  EXPECT_THROW(ReferenceMlpStep(s, p, b, nullptr), Error);
}

MlpSnapshot AsSnapshot(const MlpStepResult& r) {
  MlpSnapshot s;
  s.loss = r.loss;
  s.logits.assign(r.logits.begin(), r.logits.end());
  const auto to_float = [](const std::vector<std::vector<double>>& v) {
    std::vector<std::vector<float>> out;
    for (const auto& x : v) out.emplace_back(x.begin(), x.end());
    return out;
  };
  s.grad_weight = to_float(r.grad_weight);
  s.grad_bias = to_float(r.grad_bias);
  s.weight = to_float(r.weight);
  s.bias = to_float(r.bias);
  return s;
}

TEST(ReferenceMlp, CompareNamesTheWorstMeasure) {
  const TrainShape s = Tiny();
  const MlpParams p = SeededMlpParams(5, s.widths);
  const MlpBatch b = SeededMlpBatch(5, s.batch, 5, 3);
  const MlpStepResult r = ReferenceMlpStep(s, p, b, nullptr);
  MlpSnapshot got = AsSnapshot(r);
  Verdict v = CompareMlpStep(got, r, Pass::kTrain, 1e-5, "5-4-3 at batch 3");
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_EQ(v.disposition, Disposition::kVerified);
  EXPECT_EQ(v.metric, "rel_l2");
  EXPECT_EQ(v.checked, 1u + 2 * (20 + 12 + 4 + 3));
  EXPECT_EQ(v.checked, v.of);
  EXPECT_LT(v.error, 1e-6);
  got.grad_bias[1][2] += 1.0f;
  v = CompareMlpStep(got, r, Pass::kTrain, 1e-5, "5-4-3 at batch 3");
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.detail.rfind("worst grads", 0), 0u) << v.detail;
  got.grad_bias[1][2] = NAN;
  EXPECT_FALSE(CompareMlpStep(got, r, Pass::kTrain, 1e-5, "").ok);

  const MlpStepResult inf = ReferenceMlpStep(Tiny(Pass::kInfer), p, b, nullptr);
  MlpSnapshot logits = AsSnapshot(inf);
  v = CompareMlpStep(logits, inf, Pass::kInfer, 1e-5, "");
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_EQ(v.checked, 9u);
  logits.logits.pop_back();
  EXPECT_FALSE(CompareMlpStep(logits, inf, Pass::kInfer, 1e-5, "").ok);
}

}  // namespace
}  // namespace dlb
