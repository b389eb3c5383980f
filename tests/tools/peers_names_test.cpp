// The PyTorch peer's benchmark names (tools/peers/pytorch-peer names) against the suite's naming
// rules: every name it can emit parses, and BuildName gives it back unchanged, so dlbench-report
// pairs each PyTorch result with its dlbench twin. Needs no torch: the peer lists names without it.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <exception>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/schema/naming.h"
#include "kernels/common/kernel_trace.h"
#include "tests/support/temp_dir.h"

namespace {

struct Listing {
  int rc;
  std::vector<std::string> lines;
  std::string err;
};

// Runs `pytorch-peer names ARGS`: its exit status, its stdout's lines and its stderr.
Listing Names(const std::string& args) {
  dlb::testing::TempDir dir("peer_names");
  std::string cmd = std::string("'") + DLB_PYTHON + "' -B '" + DLB_PEER + "' names " + args + " >" +
                    (dir / "out") + " 2>" + (dir / "err");
  int status = std::system(cmd.c_str());
  Listing l{WIFEXITED(status) ? WEXITSTATUS(status) : -1, {}, {}};
  std::ifstream out(dir / "out");
  for (std::string line; std::getline(out, line);) l.lines.push_back(line);
  std::stringstream err;
  err << std::ifstream(dir / "err").rdbuf();
  l.err = err.str();
  return l;
}

// Empty when `full` is a name the peer may write; otherwise what is wrong with it.
std::string Problem(const std::string& full) {
  std::string name = full;
  const std::string suffix = "/manual_time";
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  auto parsed = dlb::ParseName(full);
  if (!parsed) return "does not parse";
  if (parsed->backend != "pytorch" && parsed->backend != "torchvision")
    return "backend '" + parsed->backend + "' is not pytorch or torchvision";
  try {
    std::string built = dlb::BuildName(*parsed);
    if (built != name) return "BuildName gives '" + built + "'";
  } catch (const std::exception& e) {
    return std::string("BuildName throws: ") + e.what();
  }
  return "";
}

TEST(PeerNames, CheckerRejectsMalformedNames) {
  EXPECT_EQ(Problem("gemm/gpu/pytorch/square.8192/dt:bf16"), "");
  EXPECT_EQ(Problem("dataload/cpu/torchvision/imagenet.rrc224/bs:256/dt:f32/fmt:nchw/workers:16"),
            "");
  for (const char* bad : {
           "gemm/gpu/pytorch/Square.8192/dt:bf16",          // upper case
           "gemm/tpu/pytorch/square.8192/dt:bf16",          // no such device
           "gemm/gpu/pytorch/square.8192/dt",               // a key without a value
           "gemm/gpu/pytorch",                              // no workload
           "gemm/gpu/pytorch/square 8192/dt:bf16",          // a space
           "conv/gpu/pytorch/resnet18.conv1/dt:f32/bs:64",  // bs after dt: not canonical
           "train/gpu/pytorch/gpt2s/bs:8/bs:16",            // a key twice
           "gemm/gpu/pytorch/square.8192/dt:bf16_median",   // an aggregate's name
           "gemm/gpu/cublaslt/square.8192/dt:bf16",         // not the peer's backend
       })
    EXPECT_NE(Problem(bad), "") << bad;
}

TEST(PeerNames, EveryNameRoundTrips) {
  Listing l = Names("");
  ASSERT_EQ(l.rc, 0) << l.err;
  EXPECT_EQ(l.err, "");
  ASSERT_GT(l.lines.size(), 1000u);
  std::set<std::string> kinds;
  for (const auto& line : l.lines) {
    EXPECT_EQ(Problem(line), "") << line;
    if (auto n = dlb::ParseName(line)) kinds.insert(n->family + "/" + n->device);
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"attn/gpu", "conv/cpu", "conv/gpu", "dataload/cpu",
                                          "dataload/gpu", "gemm/cpu", "gemm/gpu", "infer/gpu",
                                          "train/cpu", "train/gpu"}));
}

TEST(PeerNames, ACommandListsWhatItsFlagsSelect) {
  // tf32 is a GPU math mode: the CPU run skips it.
  Listing l = Names("gemm --device cpu --dtypes f32,tf32,bf16 --filter '^square[.]64$'");
  ASSERT_EQ(l.rc, 0) << l.err;
  EXPECT_EQ(l.lines, (std::vector<std::string>{"gemm/cpu/pytorch/square.64/dt:f32",
                                               "gemm/cpu/pytorch/square.64/dt:bf16"}));
  l = Names("ddp --models resnet18 --batch-sizes 64 --graph 1 --gpus 2");
  ASSERT_EQ(l.rc, 0) << l.err;
  EXPECT_EQ(l.lines, (std::vector<std::string>{
                         "train/gpu/pytorch/resnet18/bs:64/dt:amp_bf16/fmt:nhwc/pass:train/"
                         "graph:1/gpus:2"}));
  // A transformer's: seq where its one-GPU step has it, then gpus (the scaling curve's match).
  l = Names("ddp --models gpt2s --batch-sizes 8 --graph 1 --gpus 4");
  ASSERT_EQ(l.rc, 0) << l.err;
  EXPECT_EQ(l.lines, (std::vector<std::string>{
                         "train/gpu/pytorch/gpt2s/bs:8/dt:amp_bf16/pass:train/graph:1/seq:1024/"
                         "gpus:4"}));
  l = Names("train --device gpu --models gpt2s --batch-sizes 8 --dtypes amp_bf16 --graph 1");
  ASSERT_EQ(l.rc, 0) << l.err;
  EXPECT_EQ(l.lines, (std::vector<std::string>{
                         "train/gpu/pytorch/gpt2s/bs:8/dt:amp_bf16/pass:train/graph:1/seq:1024"}));
}

TEST(PeerNames, AFlagTheSubcommandRejectsFailsWithOneLine) {
  Listing l = Names("train --models nosuchmodel");
  EXPECT_EQ(l.rc, 1);
  EXPECT_TRUE(l.lines.empty());
  EXPECT_EQ(l.err.find('\n'), l.err.size() - 1) << l.err;
  EXPECT_NE(l.err.find("unknown model nosuchmodel"), std::string::npos) << l.err;
}

// The peer's --kernels tables (tools/peers/pytorch/kernels.py) shorten a kernel's name as
// dlbench's recorder does, so compare finds the same kernel under the same row on both sides.
TEST(PeerKernelNames, ShortenedAsTheRecorderShortensThem) {
  const std::vector<std::string> names = {
      "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
      "BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::"
      "TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, at::native::"
      "binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, at::native::"
      "gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, at::native::"
      "binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<"
      "float, float, float, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)"
      "#1})",
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
      "segment_k_off_kernel__5x_cublas",
      "void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true, "
      "(cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, float "
      "const*, float*)",
      "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false>(float*, "
      "float const*, int, int, int)",
      "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, "
      "false>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, "
      "float*, "
      "float*, c10::BFloat16*)",
      "square(float*, int)",
  };
  dlb::testing::TempDir dir("peer_kernel_names");
  {
    std::ofstream in(dir / "in");
    for (const auto& n : names) in << n << "\n";
  }
  const std::string cmd = std::string("cd '") + DLB_ROOT + "' && '" + DLB_PYTHON +
                          "' -B -c 'import sys; from tools.peers.pytorch import kernels; "
                          "[print(kernels.shorten(l.rstrip(chr(10)))) for l in sys.stdin]' <" +
                          (dir / "in") + " >" + (dir / "out");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream out(dir / "out");
  std::vector<std::string> got;
  for (std::string line; std::getline(out, line);) got.push_back(line);
  ASSERT_EQ(got.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(got[i], dlb::trace::ShortenKernelName(names[i])) << names[i];
}

}  // namespace
