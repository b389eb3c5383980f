#include <fstream>
#include <map>

#include "tests/benchmarks/smoke.h"
#include "tests/support/temp_dir.h"

namespace dlb::testing {
namespace {

TEST(BenchInfer, SmokeTierWritesValidJson) {
  Result r = RunBinary(DLB_BENCH_INFER, "--dlb_tier=smoke --benchmark_min_time=0.02");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const int measured = CheckSmokeJson(r.json, "infer");
#ifdef DLBENCH_HAVE_ONEDNN
  EXPECT_GT(measured, 0) << "no CPU case was measured";
#endif
  bool prefill = false, decode = false;
  for (const auto& b : r.json["benchmarks"]) {
    const std::string name = b["name"];
    auto keys = KeysOf(name);
    const auto parsed = ParseName(name);
    ASSERT_TRUE(parsed) << name;
    std::string order;
    for (const auto& kv : parsed->keys) order += kv.first + " ";
    EXPECT_EQ(order, "phase bs ctx dt ") << name << ": the family's own key order";
    if (b.value("error_occurred", false)) continue;
    const bool is_decode = keys["phase"] == "decode";
    prefill |= !is_decode;
    decode |= is_decode;
    EXPECT_EQ(b["dlbench"]["verification"]["disposition"], "verified") << name;
    // Tokens a step: a decode step makes one token per sequence, a prefill reads ctx per prompt.
    const double step = is_decode ? b["tpot_s"].get<double>() : b["ttft_s"].get<double>();
    const double tokens = std::stod(keys["bs"]) * (is_decode ? 1 : std::stod(keys["ctx"]));
    EXPECT_NEAR(b["tokens_per_s"].get<double>() * step, tokens, tokens * 1e-6) << name;
    EXPECT_NEAR(b["bytes_per_s"].get<double>() * step, b["step_bytes"].get<double>(),
                b["step_bytes"].get<double>() * 1e-6)
        << name;
    EXPECT_GT(b["kv_bytes"].get<double>(), 0) << name;
    EXPECT_LT(b["kv_bytes"].get<double>(), b["step_bytes"].get<double>()) << name;
    if (is_decode) {
      EXPECT_TRUE(b.contains("pct_mem_bw")) << name;
      EXPECT_FALSE(b.contains("mfu")) << name;
    } else {
      EXPECT_TRUE(b.contains("mfu")) << name;
    }
  }
#ifdef DLBENCH_HAVE_ONEDNN
  EXPECT_TRUE(prefill && decode) << "the smoke tier times both phases";
#endif
#ifdef DLBENCH_HAVE_TORCH_INFER
  // LibTorch's own step beside the native one, both phases, verified like it.
  int torch_cpu = 0;
  for (const auto& b : r.json["benchmarks"]) {
    const std::string name = b["name"];
    if (name.rfind("infer/cpu/torch/tiny/", 0) != 0 || b.value("error_occurred", false)) continue;
    EXPECT_EQ(b["dlbench"]["verification"]["disposition"], "verified") << name;
    ++torch_cpu;
  }
  EXPECT_GE(torch_cpu, 2) << "the smoke tier times LibTorch's CPU step in both phases";
  // LibTorch runs the threads oneDNN was given, not a default of its own.
  const auto& ctx = r.json["context"];
  ASSERT_TRUE(ctx.contains("libtorch_threads")) << ctx.dump();
  EXPECT_EQ(ctx["libtorch_threads"], ctx["onednn_threads"]);
#endif
}

TEST(BenchInfer, InvalidWorkloadRowIsOneLineError) {
  const TempDir tmp("infer_bad");
  std::ofstream(tmp.path() / "infer_bad.csv")
      << "name,count,layers,dim,heads,kv_heads,head_dim,ffn,vocab,rope_theta,norm_eps,tier,"
         "network\nx,1,2,64,4,3,16,192,256,10000,1e-5,smoke,x\n";
  Result r = RunBinary(DLB_BENCH_INFER, "--dlb_workloads=" + tmp.path().string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("infer_bad.csv:2: layers, dim, heads"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("infer/"), std::string::npos) << "no case ran: " << r.output;
}

}  // namespace
}  // namespace dlb::testing
