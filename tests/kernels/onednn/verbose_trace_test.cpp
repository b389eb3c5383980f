#include "kernels/onednn/verbose_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <dnnl.hpp>
#include <string>

#include "kernels/onednn/context.h"

namespace dlb::onednn {
namespace {

TEST(ParseVerboseLine, ReadsTheExecLinesOfOneDnn2And3) {
  auto v2 = ParseVerboseLine(
      "onednn_verbose,exec,cpu,convolution,jit:avx2,forward_training,src_f32::blocked:abcd:f0 "
      "wei_f32::blocked:Acdb8a:f0 bia_undef::undef::f0 dst_f32::blocked:aBcd8b:f0,,alg:"
      "convolution_direct,mb2_ic3oc8_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1,0.0219727");
  ASSERT_TRUE(v2);
  EXPECT_EQ(v2->name, "convolution jit:avx2 forward_training");
  EXPECT_DOUBLE_EQ(v2->ms, 0.0219727);
  auto old = ParseVerboseLine(
      "dnnl_verbose,exec,cpu,matmul,gemm:jit,undef,src_f32::blocked:ab:f0 wei_f32::blocked:ab:f0 "
      "dst_f32::blocked:ab:f0,,,64x64:64x64:64x64,0.0361328");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->name, "matmul gemm:jit");  // no propagation kind: "undef" is left out
  auto v3 = ParseVerboseLine(
      "onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx512_core,forward_training,"
      "src:f32::blocked:acdb::f0 wei:f32:a:blocked:Acdb16a::f0 dst:f32::blocked:acdb::f0,,alg:"
      "convolution_direct,mb1_ic64oc64_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1,0.25");
  ASSERT_TRUE(v3);
  EXPECT_EQ(v3->name, "convolution brg_conv_fwd:avx512_core forward_training");
  EXPECT_DOUBLE_EQ(v3->ms, 0.25);
  auto stamped = ParseVerboseLine(
      "onednn_verbose,1732600000123.456,primitive,exec,cpu,matmul,brg_matmul:avx512_core_amx,"
      "undef,src:bf16::blocked:ab::f0 wei:bf16::blocked:AB16b32a2b::f0 dst:bf16::blocked:ab::f0,,,"
      "64x64:64x64,1.5\r");
  ASSERT_TRUE(stamped);
  EXPECT_EQ(stamped->name, "matmul brg_matmul:avx512_core_amx");
  EXPECT_DOUBLE_EQ(stamped->ms, 1.5);
}

TEST(ParseVerboseLine, IgnoresEverythingElse) {
  EXPECT_FALSE(ParseVerboseLine("onednn_verbose,info,oneDNN v2.6.3 (commit N/A)"));
  EXPECT_FALSE(ParseVerboseLine(
      "onednn_verbose,create:cache_miss,cpu,convolution,jit:avx2,forward_training,src_f32::"
      "blocked:abcd:f0,,alg:convolution_direct,mb2_ic3oc8_ih16oh16kh3,0.079834"));
  EXPECT_FALSE(ParseVerboseLine("onednn_verbose,exec,cpu,matmul"));
  EXPECT_FALSE(ParseVerboseLine("onednn_verbose,exec,cpu,matmul,gemm:jit,undef,,,,x,not-a-time"));
  EXPECT_FALSE(ParseVerboseLine("some,other,program,exec,cpu,matmul,gemm:jit,undef,0.1"));
  EXPECT_FALSE(ParseVerboseLine(""));
}

// A real matmul, executed 3 times in the span: one row, three calls, and what someone else printed
// to stdout meanwhile still reaches stdout.
TEST(VerboseRecorder, RecordsEachExecutionOfAPrimitive) {
  using dnnl::memory;
  const memory::desc a({32, 32}, memory::data_type::f32, memory::format_tag::ab);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::matmul::primitive_desc pd(Engine(), a, a, a);
#else
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, a, a), Engine());
#endif
  dnnl::matmul mm(pd);
  memory x(a, Engine()), w(a, Engine()), y(a, Engine());
  auto run = [&] {
    mm.execute(Stream(), {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}});
    Stream().wait();
  };
  run();  // created and warm before the span
  auto rec = MakeVerboseRecorder();
  EXPECT_EQ(rec->source(), trace::Source::kOnednnVerbose);
  ::testing::internal::CaptureStdout();
  rec->Start();
  for (int i = 0; i < 3; ++i) run();
  std::printf("a line of someone else\n");
  const std::vector<trace::Activity> acts = rec->Stop();
  std::printf("after\n");
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("a line of someone else\n"), std::string::npos) << out;
  EXPECT_NE(out.find("after\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("exec"), std::string::npos) << "oneDNN's lines leaked: " << out;
  ASSERT_EQ(acts.size(), 1u);
  EXPECT_EQ(acts[0].name.rfind("matmul ", 0), 0u) << acts[0].name;
  EXPECT_EQ(acts[0].kind, trace::kKindPrimitive);
  EXPECT_EQ(acts[0].count, 3);
  EXPECT_GT(acts[0].total_s, 0);
  // Off again after the span.
  ::testing::internal::CaptureStdout();
  run();
  EXPECT_EQ(::testing::internal::GetCapturedStdout().find("exec"), std::string::npos);
}

}  // namespace
}  // namespace dlb::onednn
