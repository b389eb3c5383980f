// The CUPTI recorder on a real GPU: a cuBLASLt GEMM launched directly and replayed from a CUDA
// graph, a memset and a device-to-device copy, each counted once per call made inside the span
// and not at all outside it.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cublas/gemm.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/kernel_trace.h"

namespace dlb::cuda {
namespace {

TEST(CuptiRecorder, RecordsKernelsGraphReplaysAndCopiesOfTheSpanOnly) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  // Before any graph is captured, as the harness does.
  std::shared_ptr<trace::Recorder> rec = MakeCuptiRecorder();
  EXPECT_EQ(rec->source(), trace::Source::kCupti);
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  cublas::CublasLtGemm op({256, 256, 256}, cfg);
  op.Run();  // before the span: not recorded
  void* buf = nullptr;
  DLB_CHECK(cudaMalloc(&buf, 2 << 20));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  DLB_CHECK(cudaStreamBeginCapture(op.stream(), cudaStreamCaptureModeThreadLocal));
  op.Run();
  DLB_CHECK(cudaStreamEndCapture(op.stream(), &graph));
  DLB_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  Sync(op.stream());

  rec->Start();
  for (int i = 0; i < 5; ++i) op.Run();
  for (int i = 0; i < 3; ++i) DLB_CHECK(cudaGraphLaunch(exec, op.stream()));
  DLB_CHECK(cudaMemsetAsync(buf, 0, 1 << 20, op.stream()));
  DLB_CHECK(cudaMemcpyAsync(static_cast<char*>(buf) + (1 << 20), buf, 1 << 20,
                            cudaMemcpyDeviceToDevice, op.stream()));
  const std::vector<trace::Activity> acts = rec->Stop();
  op.Run();  // after the span: not recorded either

  int64_t kernels = 0;
  bool memset = false, memcpy = false;
  double exposed = 0;
  for (const trace::Activity& a : acts) {
    EXPECT_GT(a.total_s, 0) << a.name;
    // CUPTI has times: every row's exposed part is known and within its total.
    EXPECT_GE(a.exposed_s, 0) << a.name;
    EXPECT_LE(a.exposed_s, a.total_s * (1 + 1e-9)) << a.name;
    exposed += a.exposed_s;
    if (a.kind == trace::kKindKernel) {
      // 8 GEMMs, each the same kernels: every kernel name counted a multiple of 8 times.
      EXPECT_EQ(a.count % 8, 0) << a.name << " ran " << a.count << " times";
      EXPECT_NE(a.name.rfind("void ", 0), 0u) << a.name;
      EXPECT_NE(a.name.back(), ')') << a.name;
      kernels += a.count;
    }
    if (a.kind == trace::kKindMemset) memset = a.count == 1;
    if (a.kind == trace::kKindMemcpy) memcpy = a.name == "memcpy DtoD" && a.count == 1;
    std::printf("%-8s %3lld x %-60s %.3f us\n", a.kind.c_str(), (long long)a.count, a.name.c_str(),
                a.total_s * 1e6 / double(a.count));
  }
  EXPECT_GE(kernels, 8);
  // The exposed parts sum to the union of the activities: more than none, at most their total.
  double total = 0;
  for (const trace::Activity& a : acts) total += a.total_s;
  EXPECT_GT(exposed, 0);
  EXPECT_LE(exposed, total * (1 + 1e-9));
  EXPECT_TRUE(memset);
  EXPECT_TRUE(memcpy);
  const trace::Table t = trace::MakeTable(rec->source(), acts, 8, 1.0);
  ASSERT_FALSE(t.rows.empty());
  EXPECT_GE(t.rows[0].launches_per_run, 1.0);

  // A second span starts empty.
  rec->Start();
  op.Run();
  int64_t again = 0;
  for (const trace::Activity& a : rec->Stop()) again += a.kind == trace::kKindKernel ? a.count : 0;
  EXPECT_EQ(again * 8, kernels);

  DLB_CHECK(cudaGraphExecDestroy(exec));
  DLB_CHECK(cudaGraphDestroy(graph));
  DLB_CHECK(cudaFree(buf));
}

}  // namespace
}  // namespace dlb::cuda
