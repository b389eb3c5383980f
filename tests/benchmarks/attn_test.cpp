#include <filesystem>
#include <fstream>
#include <map>

#include "tests/benchmarks/smoke.h"
#include "tests/support/temp_dir.h"

namespace dlb::testing {
namespace {

TEST(BenchAttn, SmokeTierWritesValidJson) {
  Result r = RunBinary(DLB_BENCH_ATTN, "--dlb_tier=smoke --benchmark_min_time=0.02");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const int measured = CheckSmokeJson(r.json, "attn");
#ifdef DLBENCH_HAVE_ONEDNN
  EXPECT_GT(measured, 0) << "no CPU case was measured";
#endif
  bool fwd = false, bwd = false, gqa = false;
  for (const auto& b : r.json["benchmarks"]) {
    const std::string name = b["name"];
    auto keys = KeysOf(name);
    for (const char* k : {"bs", "dt", "pass", "seq", "heads", "kv_heads", "head_dim", "causal"})
      EXPECT_EQ(keys.count(k), 1u) << name << " lacks " << k;
    fwd |= keys["pass"] == "fwd";
    bwd |= keys["pass"] == "bwd";
    gqa |= keys["kv_heads"] != keys["heads"];
    if (b.value("error_occurred", false)) continue;
    // FlashAttention's count: 4 B H S^2 D, halved when causal, 2.5x for the backward; per item
    // (one sequence of the batch) that is the case's flop_per_s / items_per_s.
    const double s = std::stod(keys["seq"]), h = std::stod(keys["heads"]),
                 d = std::stod(keys["head_dim"]);
    double per_item = 4 * h * s * s * d / (keys["causal"] == "1" ? 2 : 1);
    if (keys["pass"] == "bwd") per_item *= 2.5;
    EXPECT_NEAR(b["flop_per_s"].get<double>() / b["items_per_s"].get<double>(), per_item,
                per_item * 1e-9)
        << name;
    EXPECT_EQ(b["dlbench"]["network"],
              b["dlbench"]["workload"].get<std::string>().substr(
                  0, b["dlbench"]["workload"].get<std::string>().find('.')))
        << name;
  }
  EXPECT_TRUE(fwd && bwd && gqa) << "the smoke tier times both passes and a grouped-query model";
}

TEST(BenchAttn, InvalidWorkloadRowIsOneLineError) {
  const TempDir tmp("attn_bad");
  std::ofstream(tmp.path() / "attn_bad.csv")
      << "name,count,heads,kv_heads,head_dim,causal,tier,network\nx.attn,1,12,5,64,1,smoke,x\n";
  Result r = RunBinary(DLB_BENCH_ATTN, "--dlb_workloads=" + tmp.path().string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("attn_bad.csv:2: heads, kv_heads and head_dim must be positive, heads a "
                          "multiple of kv_heads"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("attn/"), std::string::npos) << "no case ran: " << r.output;
}

}  // namespace
}  // namespace dlb::testing
