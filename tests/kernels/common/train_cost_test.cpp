#include <gtest/gtest.h>

#include "kernels/common/train.h"

namespace dlb {
namespace {

TEST(StepBytes, CountsParameterPassesByOptimizerAndTheBatchOnce) {
  EXPECT_DOUBLE_EQ(StepBytes(100, 7, Pass::kTrain, false), 8 * 100 + 7);  // SGD with momentum
  EXPECT_DOUBLE_EQ(StepBytes(100, 7, Pass::kTrain, true), 10 * 100 + 7);  // AdamW
  EXPECT_DOUBLE_EQ(StepBytes(100, 7, Pass::kInfer, false), 100 + 7);      // the forward alone
}

TEST(StepBytes, TheMlpStepCountsItsWeightsBiasesInputsAndLabels) {
  TrainShape s;
  s.model = "mlp";
  s.batch = 4;
  s.widths = {10, 5, 2};
  const double params = (10 * 5 + 5) + (5 * 2 + 2);  // weights and biases
  const double batch = 4 * 10 * 4 + 4 * 8;           // f32 inputs, int64 labels
  EXPECT_DOUBLE_EQ(MlpStepCost(s).bytes, 8 * 4 * params + batch);
  s.pass = Pass::kInfer;
  EXPECT_DOUBLE_EQ(MlpStepCost(s).bytes, 4 * params + batch);
  EXPECT_DOUBLE_EQ(MlpStepCost(s).flops, 2.0 * 4 * (10 * 5 + 5 * 2));
}

}  // namespace
}  // namespace dlb
