#include "kernels/common/kernel_trace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace dlb::trace {
namespace {

TEST(ShortenKernelName, DropsReturnTypeParametersAndLongTemplateArguments) {
  const std::string elementwise =
      "void at::native::elementwise_kernel<128, 4, "
      "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
      "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
      "at::native::BinaryFunctor<float, float, float, "
      "at::native::binary_internal::MulFunctor<float> "
      "> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::"
      "BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > "
      ">(at::TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, "
      "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})";
  EXPECT_EQ(ShortenKernelName(elementwise), "at::native::elementwise_kernel<128,4,...>");
}

TEST(ShortenKernelName, KeepsShortTemplatesAndCNamesWhole) {
  const std::string c_name =
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
      "segment_k_off_kernel__5x_cublas";
  EXPECT_EQ(ShortenKernelName(c_name), c_name);
  EXPECT_EQ(
      ShortenKernelName("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_"
                        "bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_"
                        "s161616gemm_bf16_32x32_128x2_tn_align8::Params)"),
      "cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>");
  EXPECT_EQ(ShortenKernelName("void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, "
                              "float, false, true, (cudnnKernelDataType_t)0>(cudnn::engines_"
                              "precompiled::nchw2nhwc_params_t<float>, float const*, float*)"),
            "cudnn::engines_precompiled::nchwToNhwcKernel<float,float,float,false,true,"
            "(cudnnKernelDataType_t)0>");
  EXPECT_EQ(ShortenKernelName("memcpy HtoD"), "memcpy HtoD");
}

TEST(ShortenKernelName, DemanglesMangledNames) {
  EXPECT_EQ(Demangle("_Z6squarePfi"), "square(float*, int)");
  EXPECT_EQ(ShortenKernelName("_Z6squarePfi"), "square");
  EXPECT_EQ(Demangle("not_mangled"), "not_mangled");
  EXPECT_EQ(Demangle("_Zbroken"), "_Zbroken");
}

// One the demangler gives up on: the leading names and a hash, distinct per name and stable.
TEST(ShortenKernelName, UndemangleableNamesKeepTheirHeadAndAHash) {
  const std::string a = "_ZN17cutlass__5x_cudnn6KernelINS_4conv6kernelXXXbrokenA";
  const std::string b = "_ZN17cutlass__5x_cudnn6KernelINS_4conv6kernelXXXbrokenB";
  ASSERT_EQ(Demangle(a), a);
  const std::string sa = ShortenKernelName(a);
  EXPECT_EQ(sa.rfind("cutlass__5x_cudnn::Kernel<...> #", 0), 0u) << sa;
  EXPECT_EQ(sa.size(), std::string("cutlass__5x_cudnn::Kernel<...> #").size() + 8);
  EXPECT_EQ(ShortenKernelName(a), sa);
  EXPECT_NE(ShortenKernelName(b), sa);
  EXPECT_EQ(ShortenKernelName("_Z3fooXbroken").rfind("foo #", 0), 0u);
}

TEST(ShortenKernelName, KeepsTheHeadOfAnOverlongFirstArgument) {
  const std::string inner(120, 'x');
  const std::string name =
      "void cutlass::device_kernel<flash::FlashAttnFwdSm90<" + inner + ", 128> >(flash::Params)";
  EXPECT_EQ(ShortenKernelName(name), "cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>");
  EXPECT_LE(ShortenKernelName(name, 60).size(), 60u);
}

TEST(ShortenKernelName, AnonymousNamespacesAreShort) {
  EXPECT_EQ(ShortenKernelName("void (anonymous namespace)::fill<float>(float*, int)"),
            "(anon)::fill<float>");
}

TEST(Tally, SumsByKindAndName) {
  Tally t;
  t.Add("gemm", kKindKernel, 2e-3);
  t.Add("gemm", kKindKernel, 1e-3);
  t.Add("gemm", kKindPrimitive, 5e-3);
  t.Merge({{"relu", kKindKernel, 4, 4e-4}, {"gemm", kKindKernel, 2, 3e-3}});
  const std::vector<Activity> a = t.Activities();
  ASSERT_EQ(a.size(), 3u);
  for (const Activity& x : a) {
    if (x.name == "gemm" && x.kind == kKindKernel) {
      EXPECT_EQ(x.count, 4);
      EXPECT_NEAR(x.total_s, 6e-3, 1e-15);
    }
    if (x.name == "relu") EXPECT_EQ(x.count, 4);
  }
}

TEST(MakeTable, SortsByTotalComputesPerRunFiguresAndSumsTheRestIntoOther) {
  std::vector<Activity> acts;
  for (int i = 0; i < 5; ++i)
    acts.push_back({"k" + std::to_string(i), kKindKernel, 10 * (i + 1), 1e-3 * (i + 1)});
  const Table t = MakeTable(Source::kCupti, acts, 10, 0.02, 3);
  EXPECT_EQ(t.runs, 10);
  EXPECT_DOUBLE_EQ(t.span_s, 0.02);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[0].name, "k4");
  EXPECT_EQ(t.rows[1].name, "k3");
  EXPECT_EQ(t.rows[2].name, "k2");
  EXPECT_DOUBLE_EQ(t.rows[0].launches_per_run, 5.0);  // 50 launches over 10 runs
  EXPECT_DOUBLE_EQ(t.rows[0].mean_s, 5e-3 / 50);
  EXPECT_DOUBLE_EQ(t.rows[0].share, 5e-3 / 0.02);
  EXPECT_EQ(t.rows[3].name, kOtherName);
  EXPECT_EQ(t.rows[3].kind, kKindOther);
  EXPECT_DOUBLE_EQ(t.rows[3].launches_per_run, 3.0);  // k0 and k1: 10 + 20 launches
  EXPECT_NEAR(t.rows[3].total_s, 3e-3, 1e-15);
  // At the limit there is no other row.
  EXPECT_EQ(MakeTable(Source::kCupti, acts, 10, 0.02, 5).rows.size(), 5u);
  // No runs or no span: zeros, never a division by zero.
  const Table empty = MakeTable(Source::kOnednnVerbose, acts, 0, 0);
  for (const Row& r : empty.rows) {
    EXPECT_EQ(r.launches_per_run, 0);
    EXPECT_EQ(r.share, 0);
    EXPECT_TRUE(std::isfinite(r.mean_s));
  }
}

// Exposed times: what each interval adds to the union of those that started before it.
TEST(ExposedTimes, CountEachBusyMomentOnceForTheActivityThatExtendsTheSpan) {
  // Given out of order: a kernel [0, 10); its dependent launched early [8, 15) (5 past the
  // first's end); one inside the second [9, 12) (nothing); a gap, then [20, 24) (all 4); and an
  // empty and a reversed record (nothing).
  const std::vector<Interval> in = {{20, 24}, {8, 15}, {0, 10}, {9, 12}, {30, 30}, {40, 35}};
  const std::vector<uint64_t> got = ExposedTimes(in);
  const std::vector<uint64_t> want = {4, 5, 10, 0, 0, 0};
  EXPECT_EQ(got, want);
  uint64_t sum = 0;
  for (uint64_t v : got) sum += v;
  EXPECT_EQ(sum, 19u);  // the union: [0, 15) and [20, 24)
  // Two that start together: the shorter first, the longer adds its tail.
  EXPECT_EQ(ExposedTimes({{5, 9}, {5, 7}}), (std::vector<uint64_t>{2, 2}));
  EXPECT_TRUE(ExposedTimes({}).empty());
}

TEST(Tally, SumsExposedTimesOnlyWhereEveryAddedOneHasOne) {
  Tally t;
  t.Add("a", kKindKernel, 3e-3, 1, 1e-3);
  t.Add("a", kKindKernel, 2e-3, 1, 2e-3);
  t.Add("b", kKindKernel, 1e-3, 1, 1e-3);
  t.Add("b", kKindKernel, 1e-3);  // no exposed time: the row's is unknown
  t.Add("c", kKindPrimitive, 1e-3);
  for (const Activity& a : t.Activities()) {
    if (a.name == "a") EXPECT_NEAR(a.exposed_s, 3e-3, 1e-15);
    if (a.name == "b" || a.name == "c") EXPECT_LT(a.exposed_s, 0);
  }
  // The table carries them, and its other row sums them where all are known.
  std::vector<Activity> acts = {{"k0", kKindKernel, 1, 4e-3, 1e-3},
                                {"k1", kKindKernel, 1, 3e-3, 2e-3},
                                {"k2", kKindKernel, 1, 2e-3, 5e-4}};
  Table table = MakeTable(Source::kCupti, acts, 1, 1e-2, 1);
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(table.rows[0].exposed_s, 1e-3);
  EXPECT_NEAR(table.rows[1].exposed_s, 2.5e-3, 1e-15);
  acts[2].exposed_s = -1;
  EXPECT_LT(MakeTable(Source::kCupti, acts, 1, 1e-2, 1).rows[1].exposed_s, 0);
}

TEST(Recorders, AreRegisteredPerDevice) {
  struct Fake : Recorder {
    Source source() const override { return Source::kOnednnVerbose; }
    void Start() override {}
    std::vector<Activity> Stop() override { return {}; }
  };
  auto cpu = std::make_shared<Fake>();
  SetRecorder(false, cpu);
  EXPECT_EQ(RecorderFor(false), cpu.get());
  EXPECT_EQ(RecorderFor(true), nullptr);
  SetRecorder(false, nullptr);
  EXPECT_EQ(RecorderFor(false), nullptr);
}

}  // namespace
}  // namespace dlb::trace
