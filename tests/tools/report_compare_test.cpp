#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tools/report/analyses.h"
#include "tools/report/gbench_json.h"

namespace dlb::report {
namespace {

std::string Data(const std::string& name) { return std::string(DLB_REPORT_TEST_DATA) + "/" + name; }

const CompareRow* Find(const CompareResult& r, const std::string& name) {
  for (const auto& row : r.rows)
    if (row.name == name) return &row;
  return nullptr;
}

CompareResult RunGolden(CompareOptions opt = {}) {
  auto base = Merge({ReadBenchmarkFile(Data("compare_base.json"))});
  auto now = Merge({ReadBenchmarkFile(Data("compare_new.json"))});
  return Compare(base, now, "base", "new", opt);
}

// Known answers from Google Benchmark's compare.py semantics on the same two files
// (tests/tools/report/data/compare_{base,new}.json), computed with scipy 1.10.1 by the script in
// tests/tools/report/golden_compare.py: change = calculate_change() of the "_median" aggregate
// rows (or of the single run), p = mannwhitneyu(real_time reps, alternative='two-sided').pvalue.
struct GoldenRow {
  const char* name;
  double change, p;  // p NaN: compare.py runs no U test (fewer than 2 repetitions)
};
const GoldenRow kGolden[] = {
    {"gemm/cpu/onednn/square.1024/dt:f32/manual_time", 0.004631926740804237, 0.5962416305866567},
    {"gemm/gpu/cublaslt/square.1024/dt:f32/manual_time", 0.20353369018730305,
     0.00041229480206169127},
    {"gemm/gpu/cublaslt/square.1024/dt:bf16/manual_time", -0.19725800775059352,
     0.00041229480206169127},
    {"conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:64/dt:bf16/fmt:nhwc/pass:fwd/manual_time",
     0.0109205690815708, 0.01711823970479015},
    {"gemm/cpu/onednn/noisy.64/dt:f32/manual_time", 1.0833333333333333, 0.7},
    {"BM_Sort/1024", 0.5, NAN},
};

TEST(Compare, DeltasAndPValuesEqualComparePy) {
  CompareResult r = RunGolden();
  for (const GoldenRow& g : kGolden) {
    const CompareRow* row = Find(r, g.name);
    ASSERT_NE(row, nullptr) << g.name;
    EXPECT_NEAR(row->delta, g.change, 1e-12) << g.name;
    if (std::isnan(g.p)) {
      EXPECT_TRUE(std::isnan(row->p)) << g.name;
    } else {
      EXPECT_NEAR(row->p, g.p, 1e-12) << g.name;
    }
  }
}

TEST(Compare, VerdictsAndExitCode) {
  CompareResult r = RunGolden();
  auto verdict = [&](const char* n) { return VerdictName(Find(r, n)->verdict); };
  EXPECT_STREQ(verdict("gemm/cpu/onednn/square.1024/dt:f32/manual_time"), "same");
  EXPECT_STREQ(verdict("gemm/gpu/cublaslt/square.1024/dt:f32/manual_time"), "slower");
  EXPECT_STREQ(verdict("gemm/gpu/cublaslt/square.1024/dt:bf16/manual_time"), "faster");
  // +1.1% is significant (q < 0.05) but under the 5% threshold.
  EXPECT_STREQ(
      verdict("conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:64/dt:bf16/fmt:nhwc/pass:fwd/manual_time"),
      "same");
  EXPECT_STREQ(verdict("gemm/cpu/onednn/noisy.64/dt:f32/manual_time"), "noisy");
  EXPECT_STREQ(verdict("BM_Sort/1024"), "slower");  // no repetitions: threshold alone
  EXPECT_STREQ(verdict("BM_Gone"), "missing");
  EXPECT_STREQ(verdict("BM_Fresh"), "new");
  EXPECT_EQ(r.regressions, 2);
  EXPECT_EQ(r.exit_code, 3);
  // Rate counters: flop_per_s falls as time rises.
  const CompareRow* slow = Find(r, "gemm/gpu/cublaslt/square.1024/dt:f32/manual_time");
  EXPECT_LT(slow->rate_deltas.at("flop_per_s"), -0.1);
}

TEST(Compare, BenjaminiHochbergAcrossBenchmarks) {
  CompareResult r = RunGolden();
  // Five tested rows; the two smallest p (0.000412) get q = p * 5 / 2.
  const CompareRow* slow = Find(r, "gemm/gpu/cublaslt/square.1024/dt:f32/manual_time");
  EXPECT_NEAR(slow->q, 0.00041229480206169127 * 5 / 2, 1e-15);
}

TEST(Compare, ThresholdDecides) {
  CompareOptions opt;
  opt.threshold = 0.60;  // only the 108% noisy one is beyond; the no-test 50% is not
  CompareResult r = RunGolden(opt);
  EXPECT_EQ(r.regressions, 0);
  EXPECT_EQ(r.exit_code, 0);
  opt.threshold = 0.01;  // now the significant +1.1% conv counts
  r = RunGolden(opt);
  EXPECT_STREQ(VerdictName(Find(r,
                                "conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:64/dt:bf16/fmt:nhwc/"
                                "pass:fwd/manual_time")
                               ->verdict),
               "slower");
}

TEST(Compare, OnlyChangesLeavesSameRowsOut) {
  CompareOptions opt;
  opt.only_changes = true;
  CompareResult r = RunGolden(opt);
  size_t rows = 0;
  for (const auto& s : r.doc.sections)
    if (s.title.rfind("Compare: ", 0) == 0) rows += s.tables[0].rows.size();
  EXPECT_EQ(rows, r.rows.size() - 2);  // the two "same" rows
  EXPECT_EQ(r.exit_code, 3);
}

TEST(Compare, GeomeanOverMatchedBenchmarks) {
  CompareResult r = RunGolden();
  double log_sum = 0;
  int n = 0;
  for (const auto& row : r.rows)
    if (row.verdict != Verdict::kNew && row.verdict != Verdict::kMissing) {
      log_sum += std::log(row.new_ns / row.base_ns);
      ++n;
    }
  EXPECT_EQ(r.geomean_count, 6u);
  EXPECT_NEAR(r.geomean_delta, std::exp(log_sum / n) - 1, 1e-12);
}

TEST(Compare, SameFileIsClean) {
  auto base = Merge({ReadBenchmarkFile(Data("compare_base.json"))});
  CompareResult r = Compare(base, base, "a", "a", {});
  EXPECT_EQ(r.exit_code, 0);
  for (const auto& row : r.rows) EXPECT_STREQ(VerdictName(row.verdict), "same") << row.name;
  EXPECT_NEAR(r.geomean_delta, 0, 1e-15);
}

// ---- speedup and sweep on a synthetic sweep with a known curve ----
std::string SweepJson() {
  std::string b;
  auto add = [&](const std::string& name, double us) {
    for (int rep = 0; rep < 3; ++rep) {
      if (!b.empty()) b += ",";
      b += R"({"name": ")" + name +
           R"(", "run_type": "iteration", "repetitions": 3, "real_time": )" +
           std::to_string(us * (1 + 0.001 * rep)) + R"(, "time_unit": "us"})";
    }
  };
  for (int bs : {16, 32, 64, 128, 256}) {
    // Per-sample time t(b) = 400/b^0.9 + 2 (GPU) and 50 us flat (CPU).
    double gpu = bs * (400 / std::pow(bs, 0.9) + 2);
    add("conv/gpu/cudnn/r18.l1/bs:" + std::to_string(bs) + "/dt:f32/manual_time", gpu);
    add("conv/cpu/onednn/r18.l1/bs:" + std::to_string(bs) + "/dt:f32/manual_time", bs * 50.0);
  }
  add("gemm/cpu/onednn/sq.64/dt:f32/manual_time", 100);  // no GPU twin: no speedup row
  return R"({"context": {}, "benchmarks": [)" + b + "]}";
}

TEST(Speedup, PairsCpuWithGpuByName) {
  MergedRuns m = Merge({ParseBenchmarkJson(SweepJson(), "s.json")});
  auto rows = SpeedupRows(m);
  ASSERT_EQ(rows.size(), 5u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.cpu_backend, "onednn");
    EXPECT_EQ(r.gpu_backend, "cudnn");
    double bs = std::stod(r.bs);
    double gpu = bs * (400 / std::pow(bs, 0.9) + 2) * 1.001;      // median of 3 reps
    EXPECT_NEAR(r.speedup / (bs * 50.0 * 1.001 / gpu), 1, 1e-6);  // the JSON keeps 6 decimals
    EXPECT_FALSE(r.has_interval);  // 3 x 3 repetitions are too few for a 95% interval
  }
}

TEST(Speedup, NetworksWeighLayersByCount) {
  std::string b;
  auto add = [&](const char* name, double us, int count) {
    if (!b.empty()) b += ",";
    b += std::string(R"({"name": ")") + name + R"(", "real_time": )" + std::to_string(us) +
         R"(, "time_unit": "us", "count": )" + std::to_string(count) + "}";
  };
  add("conv/cpu/onednn/net.a/bs:8/dt:f32/manual_time", 100, 2);
  add("conv/gpu/cudnn/net.a/bs:8/dt:f32/manual_time", 10, 2);
  add("conv/cpu/onednn/net.b/bs:8/dt:f32/manual_time", 50, 1);
  add("conv/gpu/cudnn/net.b/bs:8/dt:f32/manual_time", 25, 1);
  MergedRuns m = Merge({ParseBenchmarkJson(R"({"benchmarks": [)" + b + "]}", "n.json")});
  auto sections = SpeedupSections(m);
  ASSERT_EQ(sections.size(), 1u);
  ASSERT_EQ(sections[0].tables.size(), 2u);
  const Table& nets = sections[0].tables[1];
  ASSERT_EQ(nets.rows.size(), 1u);
  EXPECT_EQ(nets.rows[0][0].text, "net");
  EXPECT_DOUBLE_EQ(*nets.rows[0][5].value, (2 * 100 + 50) * 1e3);  // CPU ns
  EXPECT_DOUBLE_EQ(*nets.rows[0][6].value, (2 * 10 + 25) * 1e3);   // GPU ns
  EXPECT_DOUBLE_EQ(*nets.rows[0][7].value, 250.0 / 45);
}

TEST(Sweep, FitsTheCurveAndFindsTheBestBatch) {
  MergedRuns m = Merge({ParseBenchmarkJson(SweepJson(), "s.json")});
  auto curves = SweepCurves(m);
  ASSERT_EQ(curves.size(), 2u);
  const SweepCurve& gpu = curves[0].device == "gpu" ? curves[0] : curves[1];
  EXPECT_EQ(gpu.points.size(), 5u);
  EXPECT_DOUBLE_EQ(gpu.best_bs, 256);
  ASSERT_TRUE(gpu.fit_ok);
  EXPECT_NEAR(gpu.alpha, 0.9, 1e-3);
  EXPECT_NEAR(gpu.t_min, 2002, 2);  // ns: 2 us * 1.001
  EXPECT_GT(gpu.r2, 0.9999);
}

}  // namespace
}  // namespace dlb::report
