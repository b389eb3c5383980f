// The data-parallel step on the local GPUs (two where the host has them, else one): the check it
// runs before timing (n GPUs against one GPU over the concatenated batch, replicas agreeing),
// graph and eager, f32 and bf16 autocast; the one-GPU reference time; what a host cannot run.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "kernels/cuda/device.h"
#include "kernels/torch/ddp_step.h"

namespace dlb::libtorch {
namespace {

#define REQUIRE_GPU() \
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device"

DdpShape Cifar(int gpus, bool graph, bool amp) {
  DdpShape s;
  s.step.model = "resnet18_cifar";
  s.step.image = 32;
  s.step.classes = 10;
  s.step.batch = 16;
  s.step.pass = Pass::kTrain;
  s.step.graph = graph;
  s.step.amp = amp;
  s.gpus = gpus;
  return s;
}

RunConfig Config(bool amp) {
  RunConfig c;
  c.dtype = amp ? DType::kBF16 : DType::kF32;
  c.layout = amp ? Layout::kNHWC : Layout::kNCHW;
  c.seed = 7;
  return c;
}

// Two GPUs where the host has them.
int Gpus() { return std::min(2, cuda::DeviceCount()); }

struct Variant {
  bool graph, amp;
};

class DdpVariants : public ::testing::TestWithParam<Variant> {};

TEST_P(DdpVariants, StepOnTheLocalGpusEqualsOneGpuOverTheConcatenatedBatch) {
  REQUIRE_GPU();
  const int n = Gpus();
  DdpStepGpu op(Cifar(n, GetParam().graph, GetParam().amp), Config(GetParam().amp));
  const Verdict v = op.Verify();
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_EQ(v.disposition, Disposition::kVerified);
  EXPECT_NE(v.detail.find(std::to_string(n) + " GPUs vs one GPU"), std::string::npos) << v.detail;
  std::printf("%d GPU(s), graph %d, amp %d: %s\n", n, GetParam().graph, GetParam().amp,
              v.detail.c_str());
  EXPECT_EQ(op.gpus(), n);
  EXPECT_EQ(op.cost().items, 16.0 * n);
  // Timed steps after the check, then the check again: replays keep their buffers consistent.
  for (int i = 0; i < 5; ++i) op.Run();
  const Verdict again = op.Verify();
  EXPECT_TRUE(again.ok) << again.detail;
}

INSTANTIATE_TEST_SUITE_P(GraphAndEager, DdpVariants,
                         ::testing::Values(Variant{true, true}, Variant{false, true},
                                           Variant{true, false}),
                         [](const auto& info) {
                           return std::string(info.param.graph ? "Graph" : "Eager") +
                                  (info.param.amp ? "AmpBf16" : "F32");
                         });

TEST(DdpStep, MeasuresTheOneGpuStepAndCountsItsBuckets) {
  REQUIRE_GPU();
  int before = -1, after = -2;
  ASSERT_EQ(cudaGetDevice(&before), cudaSuccess);
  DdpStepGpu op(Cifar(Gpus(), true, true), Config(true));
  // Setting up visits every GPU; the caller's stays current (the harness times on it).
  ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
  EXPECT_EQ(after, before);
  EXPECT_EQ(op.single_step_s(), 0);
  op.MeasurePhases();
  EXPECT_GT(op.single_step_s(), 0);
  std::map<std::string, double> c;
  for (const auto& [k, v] : op.Counters()) c[k] = v;
  ASSERT_TRUE(c.count("single_gpu_items_per_s"));
  EXPECT_NEAR(c["single_gpu_items_per_s"], 16 / op.single_step_s(), 1e-6 * c["single_gpu_items_per_s"]);
  // ResNet-18 (CIFAR) has 11.2M f32 parameters, 44.7 MB: a 1 MiB first bucket, then 25 MiB ones.
  EXPECT_EQ(c["grad_buckets"], 3);
  EXPECT_NE(op.label().find("3 gradient buckets"), std::string::npos) << op.label();
}

TEST(DdpStep, MoreGpusThanTheHostHasIsUnsupported) {
  const int have = cuda::DeviceCount();
  const Support s = DdpStepGpu::Supports(Cifar(have + 1, true, true), Config(true));
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.why.find("needs " + std::to_string(have + 1) + " GPUs, this host has " +
                       std::to_string(have)),
            std::string::npos)
      << s.why;
  EXPECT_FALSE(DdpStepGpu::Supports(Cifar(0, true, true), Config(true)).ok);
  DdpShape infer = Cifar(1, true, true);
  infer.step.pass = Pass::kInfer;
  EXPECT_FALSE(DdpStepGpu::Supports(infer, Config(true)).ok);
}

}  // namespace
}  // namespace dlb::libtorch
