#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/schema/schema.h"
#include "tests/tools/report/report_cases.h"
#include "tools/report/analyses/compare.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/speedup.h"
#include "tools/report/analyses/sweep.h"
#include "tools/report/read/gbench_json.h"

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
  return Compare(base, now, opt);
}

// Known answers of Google Benchmark's compare.py on the same two files
// (tests/tools/report/data/compare_{base,new}.json; its whole output is
// data/gbench/expected/compare.json, from comparepy_expected.sh with scipy 1.10.1): change =
// calculate_change() of the "_median" aggregate rows (or of the single run), p = the time_pvalue
// of its U test over the real_time repetitions.
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
  // No repetitions: slower on the threshold alone, but unconfirmed (one run a side), so it is no
  // regression for the gate.
  EXPECT_STREQ(verdict("BM_Sort/1024"), "slower");
  EXPECT_TRUE(Find(r, "BM_Sort/1024")->unconfirmed);
  EXPECT_NE(Find(r, "BM_Sort/1024")->note.find("unconfirmed"), std::string::npos);
  EXPECT_FALSE(Find(r, "gemm/gpu/cublaslt/square.1024/dt:f32/manual_time")->unconfirmed);
  EXPECT_STREQ(verdict("BM_Gone"), "missing");
  EXPECT_STREQ(verdict("BM_Fresh"), "new");
  EXPECT_EQ(r.regressions, 1);
  EXPECT_EQ(r.unconfirmed, 1);
  EXPECT_EQ(r.exit_code, 3);
  // Rate counters: flop_per_s falls as time rises.
  const CompareRow* slow = Find(r, "gemm/gpu/cublaslt/square.1024/dt:f32/manual_time");
  EXPECT_LT(slow->rate_deltas.at("flop_per_s"), -0.1);
}

TEST(Compare, SingleRepetitionChangesCountOnlyWhenAsked) {
  CompareOptions opt;
  opt.min_repetitions = 1;  // --min-repetitions 1: a single run a side is judged too
  CompareResult r = RunGolden(opt);
  EXPECT_FALSE(Find(r, "BM_Sort/1024")->unconfirmed);
  EXPECT_EQ(r.regressions, 2);
  EXPECT_EQ(r.unconfirmed, 0);
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

// compare's tables split each name into family, device, backend, workload and the keys that vary
// (as the summary's), the shared keys in a note; a name outside the scheme stays whole. The full
// name stays where machines and CI logs look for it: a CSV/JSON field and the flagged cases' lines.
TEST(Compare, TablesSplitNamesIntoKeyColumnsAndKeepTheFullNameForMachinesAndLogs) {
  CompareResult r = RunGolden();
  const Document d = CompareDocument(r, {}, "base", "new");
  const Section* gemm = nullptr;
  const Section* other = nullptr;
  const Section* flagged = nullptr;
  for (const Section& s : d.sections) {
    if (s.title == "Compare: gemm") gemm = &s;
    if (s.title == "Compare: BM_Sort") other = &s;
    if (s.title == "Flagged cases") flagged = &s;
  }
  ASSERT_NE(gemm, nullptr);
  ASSERT_NE(other, nullptr);
  ASSERT_NE(flagged, nullptr);
  const Table& t = gemm->tables.at(0);
  std::vector<std::string> people;
  for (const auto& c : t.columns)
    if (!c.machine) people.push_back(c.title);
  ASSERT_GE(people.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(people.begin(), people.begin() + 6),
            (std::vector<std::string>{"family", "device", "backend", "workload", "dt", "base"}));
  EXPECT_EQ(std::count(people.begin(), people.end(), "benchmark"), 0);
  for (const char* kept : {"verdict", "change", "p", "q", "new"})
    EXPECT_EQ(std::count(people.begin(), people.end(), kept), 1) << kept;
  // The row of gemm/gpu/cublaslt/square.1024/dt:bf16: its parts in their columns.
  auto col = [&](const std::string& key) {
    for (size_t i = 0; i < t.columns.size(); ++i)
      if (t.columns[i].key == key) return i;
    return t.columns.size();
  };
  bool found = false;
  for (const auto& row : t.rows) {
    if (row.at(col("name")).Text() != "gemm/gpu/cublaslt/square.1024/dt:bf16/manual_time") continue;
    found = true;
    EXPECT_EQ(row.at(col("device")).Text(), "gpu");
    EXPECT_EQ(row.at(col("backend")).Text(), "cublaslt");
    EXPECT_EQ(row.at(col("workload")).Text(), "square.1024");
    EXPECT_EQ(row.at(col("dt")).Text(), "bf16");
    EXPECT_EQ(row.at(col("verdict")).Text(), "faster");
  }
  EXPECT_TRUE(found);
  // BM_Sort/1024 follows no scheme: its table keeps the name whole, once.
  const Table& bm = other->tables.at(0);
  ASSERT_EQ(bm.columns.at(0).key, "name");
  EXPECT_FALSE(bm.columns.at(0).machine);
  EXPECT_EQ(std::count_if(bm.columns.begin(), bm.columns.end(),
                          [](const Column& c) { return c.key == "name"; }),
            1);
  // CSV and JSON carry the full name beside its parts.
  const std::string csv = RenderCsv(d);
  EXPECT_NE(csv.find("Compare: gemm,,gemm/gpu/cublaslt/square.1024/dt:bf16/manual_time,gemm,gpu,"),
            std::string::npos)
      << csv.substr(0, 800);
  const auto j = nlohmann::json::parse(RenderJson(d));
  bool json_name = false;
  for (const auto& s : j["sections"])
    for (const auto& jt : s["tables"])
      for (const auto& row : jt["rows"])
        json_name |= row.value("name", "") == "gemm/gpu/cublaslt/square.1024/dt:f32/manual_time" &&
                     row.value("workload", "") == "square.1024";
  EXPECT_TRUE(json_name);
  // The Markdown a CI log shows: each flagged case on one line with its verdict and full name;
  // no line past 200 characters outside code blocks; no benchmark column but BM_Sort's.
  const std::string md = RenderMarkdown(d);
  EXPECT_NE(md.find("# faster -19.73% (", 0), std::string::npos) << md;
  EXPECT_NE(md.find("): gemm/gpu/cublaslt/square.1024/dt:bf16/manual_time\n"), std::string::npos);
  EXPECT_NE(md.find("# slower (unconfirmed) +50.00% ("), std::string::npos);
  std::istringstream in(md);
  bool code = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) code = !code;
    size_t columns = 0;
    for (unsigned char c : line) columns += (c & 0xC0) != 0x80;
    EXPECT_TRUE(code || columns <= 200) << line;
  }
  const std::string html = RenderHtml(d);
  EXPECT_EQ(html.find("```"), std::string::npos);
  EXPECT_EQ(html.find("**"), std::string::npos);
  EXPECT_NE(html.find("<pre><code># slower"), std::string::npos);
}

TEST(Compare, OnlyChangesLeavesSameRowsOut) {
  CompareOptions opt;
  opt.only_changes = true;
  CompareResult r = RunGolden(opt);
  size_t rows = 0;
  for (const auto& s : CompareDocument(r, opt, "base", "new").sections)
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
  CompareResult r = Compare(base, base, {});
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

// A layer's network is the "network" field of its result (from its workload file).
std::string NetworkJson(bool with_network) {
  std::string b;
  auto add = [&](const char* name, double us, int count) {
    if (!b.empty()) b += ",";
    b += std::string(R"({"name": ")") + name + R"(", "real_time": )" + std::to_string(us) +
         R"(, "time_unit": "us", ")" + std::string(schema::kCount) + R"(": )" +
         std::to_string(count);
    if (with_network)
      b += R"(, ")" + std::string(schema::kResult) + R"(": {")" + std::string(schema::kNetwork) +
           R"(": "net"})";
    b += "}";
  };
  add("conv/cpu/onednn/net.a/bs:8/dt:f32/manual_time", 100, 2);
  add("conv/gpu/cudnn/net.a/bs:8/dt:f32/manual_time", 10, 2);
  add("conv/cpu/onednn/net.b/bs:8/dt:f32/manual_time", 50, 1);
  add("conv/gpu/cudnn/net.b/bs:8/dt:f32/manual_time", 25, 1);
  return R"({"benchmarks": [)" + b + "]}";
}

TEST(Speedup, NetworksWeighLayersByCount) {
  MergedRuns m = Merge({ParseBenchmarkJson(NetworkJson(true), "n.json")});
  SpeedupResult r = ComputeSpeedup(m);
  ASSERT_EQ(r.networks.size(), 1u);
  const NetworkRow& net = r.networks[0];
  EXPECT_EQ(net.network, "net");
  EXPECT_EQ(net.layers, 2);
  EXPECT_DOUBLE_EQ(net.cpu_ns, (2 * 100 + 50) * 1e3);
  EXPECT_DOUBLE_EQ(net.gpu_ns, (2 * 10 + 25) * 1e3);
  EXPECT_DOUBLE_EQ(net.speedup, 250.0 / 45);
  auto sections = SpeedupSections(r);
  ASSERT_EQ(sections.size(), 1u);
  ASSERT_EQ(sections[0].tables.size(), 2u);
  const Table& nets = sections[0].tables[1];
  ASSERT_EQ(nets.rows.size(), 1u);
  EXPECT_EQ(nets.rows[0][0].Text(), "net");
  EXPECT_DOUBLE_EQ(*nets.rows[0][7].value, 250.0 / 45);
}

// The issue this fixes: the text before the first dot of a workload name ("square.1024",
// "net.a") is not a network. Without the field, layers are listed per workload, never summed.
TEST(Speedup, NoNetworkIsGuessedFromNames) {
  MergedRuns m = Merge({ParseBenchmarkJson(NetworkJson(false), "n.json")});
  SpeedupResult r = ComputeSpeedup(m);
  EXPECT_EQ(r.rows.size(), 2u);
  EXPECT_TRUE(r.networks.empty());
  auto sections = SpeedupSections(r);
  ASSERT_EQ(sections.size(), 1u);
  EXPECT_EQ(sections[0].tables.size(), 1u);
  Overview ov = ComputeOverview(m);
  ASSERT_EQ(ov.rows.size(), 2u);
  for (const OverviewRow& row : ov.rows) EXPECT_FALSE(row.network) << row.subject;
  EXPECT_EQ(ov.rows[0].subject, "net.a");

  // The square GEMMs of the H100 example: three sizes, no network, never one "square".
  MergedRuns h100 = Merge({ReadBenchmarkFile(Data("real_gb183_h100_gemm.json"))});
  EXPECT_TRUE(ComputeSpeedup(h100).networks.empty());
  for (const OverviewRow& row : ComputeOverview(h100).rows) {
    EXPECT_FALSE(row.network);
    EXPECT_NE(row.subject, "square");
  }
}

TEST(Overview, NetworkRowsSumLayersAndMarkTheBestBatch) {
  MergedRuns m = Merge({ReadBenchmarkFile(Data("dlbench_v2_base.json"))});
  Overview ov = ComputeOverview(m);
  const OverviewRow* bs64 = nullptr;
  size_t resnet_f32 = 0;
  for (const OverviewRow& r : ov.rows)
    if (r.subject == "resnet18" && r.dt == "f32") {
      ++resnet_f32;
      if (r.bs == 64) bs64 = &r;
    }
  EXPECT_EQ(resnet_f32, 3u);  // bs 16, 32, 64
  ASSERT_NE(bs64, nullptr);
  EXPECT_TRUE(bs64->network);
  EXPECT_EQ(bs64->cpu_layers, 2);
  // layer1 x 4 + layer2 x 3, medians of the five repetitions (x1.000 of the nominal time).
  EXPECT_NEAR(bs64->cpu_ns, (4 * 13700 + 3 * 12000) * 1e3, 1e-6);
  EXPECT_NEAR(bs64->gpu_ns, (4 * 357 + 3 * 300) * 1e3, 1e-6);
  EXPECT_NEAR(bs64->speedup, bs64->cpu_ns / bs64->gpu_ns, 1e-12);
  EXPECT_TRUE(bs64->gpu_best);  // 64 / 2.328 ms beats 32 / 1.534 ms and 16 / 0.792 ms
  // bf16: only layer1 was measured (layer2's GPU case failed verification): one layer a side.
  for (const OverviewRow& r : ov.rows)
    if (r.subject == "resnet18" && r.dt == "bf16") {
      EXPECT_EQ(r.cpu_layers, 1);
      EXPECT_EQ(r.gpu_layers, 1);
      EXPECT_TRUE(std::isfinite(r.speedup));
    }
  // The square GEMMs are rows of their own, and mlp's two layers one network row.
  size_t squares = 0, mlp = 0;
  for (const OverviewRow& r : ov.rows) {
    squares += r.subject.rfind("square.", 0) == 0;
    mlp += r.subject == "mlp";
  }
  EXPECT_EQ(squares, 2u);
  EXPECT_EQ(mlp, 1u);
}

// The first screen's tables show a case's keys as columns, as the summary's do: one per key that
// varies within the table, the keys every row shares said once in its title; no "config" column
// of keys packed into one string.
TEST(Overview, TablesSplitTheConfigIntoAColumnPerKeyThatVaries) {
  std::vector<testing::Case> cases;
  for (const char* device : {"cpu", "gpu"})
    for (const char* pass : {"fwd", "bwd_data"})
      for (const char* layer : {"a", "b"})
        cases.push_back({std::string("conv/") + device + "/x/net." + layer +
                             "/bs:32/dt:bf16/fmt:nhwc/pass:" + pass,
                         100,
                         {},
                         "net"});
  // Layers without a network: dtypes and a key only one of them has.
  cases.push_back({"conv/gpu/x/lone.c/bs:8/dt:f32/fmt:nchw/pass:fwd", 10});
  cases.push_back({"conv/gpu/x/lone.c/bs:8/dt:bf16/fmt:nchw/pass:fwd/algo:winograd", 10});
  const MergedRuns m = Merge({ParseBenchmarkJson(testing::CasesJson(cases), "k.json")});
  const std::vector<Section> sections = OverviewSections(ComputeOverview(m));
  ASSERT_EQ(sections.size(), 1u);
  ASSERT_EQ(sections[0].tables.size(), 2u);
  auto titles = [](const Table& t) {
    std::vector<std::string> out;
    for (const Column& c : t.columns) out.push_back(c.title);
    return out;
  };
  auto column = [](const Table& t, const std::string& key) {
    std::vector<std::string> out;
    for (size_t i = 0; i < t.columns.size(); ++i)
      if (t.columns[i].key == key)
        for (const auto& row : t.rows) out.push_back(row[i].Text());
    return out;
  };
  const Table& net = sections[0].tables[0];
  EXPECT_EQ(net.title, "Network net: its conv layers only (every row: dt:bf16, fmt:nhwc)");
  const std::vector<std::string> cols = titles(net);
  ASSERT_FALSE(cols.empty());
  EXPECT_EQ(cols[0], "pass");
  for (const char* gone : {"config", "dt", "fmt"})
    EXPECT_EQ(std::count(cols.begin(), cols.end(), gone), 0) << gone;
  EXPECT_EQ(column(net, "pass"), (std::vector<std::string>{"fwd", "bwd_data"}));
  EXPECT_EQ(net.rows[0][0].kind, Kind::kKey);
  const Table& lone = sections[0].tables[1];
  EXPECT_EQ(lone.title, "Layers without a network (every row: fmt:nchw, pass:fwd)");
  EXPECT_EQ(column(lone, "dt"), (std::vector<std::string>{"f32", "bf16"}));
  EXPECT_EQ(column(lone, "algo"), (std::vector<std::string>{"-", "winograd"}));
  EXPECT_EQ(column(lone, "config"), std::vector<std::string>{});
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

// Loader scaling over worker threads: 2, 4, 8 workers at 100, 190, 300 images/s (items_per_s,
// as measured) per batch size; the batch sizes stay apart and bs 128 has one point only.
TEST(Sweep, TheWorkersAxisGivesThroughputAndEfficiencyPerCase) {
  std::string b;
  auto add = [&](const std::string& name, double us, double items) {
    if (!b.empty()) b += ",";
    b += R"({"name": ")" + name + R"(", "run_type": "iteration", "real_time": )" +
         std::to_string(us) + R"(, "time_unit": "us", "items_per_s": )" + std::to_string(items) +
         "}";
  };
  const char* base = "dataload/cpu/turbojpeg/imagenet.rrc224/bs:";
  for (int bs : {32, 64})
    for (auto [w, thr] : {std::pair{2, 100.0}, {4, 190.0}, {8, 300.0}})
      add(base + std::to_string(bs) + "/dt:f32/fmt:nchw/workers:" + std::to_string(w) +
              "/manual_time",
          bs / thr * 1e6, thr * (bs == 64 ? 2 : 1));
  add(std::string(base) + "128/dt:f32/fmt:nchw/workers:2/manual_time", 1e6, 128);
  MergedRuns m = Merge({ParseBenchmarkJson(R"({"context": {}, "benchmarks": [)" + b + "]}", "w")});
  auto curves = WorkerCurves(m);
  ASSERT_EQ(curves.size(), 2u);
  for (const WorkerCurve& c : curves) {
    ASSERT_EQ(c.points.size(), 3u) << c.curve;
    const double k = c.curve.find("bs:64") != std::string::npos ? 2 : 1;
    EXPECT_DOUBLE_EQ(c.best_workers, 8);
    EXPECT_DOUBLE_EQ(c.best_throughput, 300 * k);
    EXPECT_DOUBLE_EQ(c.points[0].efficiency, 1);
    EXPECT_NEAR(c.points[1].efficiency, 190.0 / 100 / 2, 1e-12);
    EXPECT_NEAR(c.points[2].efficiency, 300.0 / 100 / 4, 1e-12);
  }
  const Document d = SweepDocument(m, {"w"}, "workers");
  EXPECT_EQ(d.title, "dlbench worker sweeps");
  EXPECT_EQ(d.sections.size(), 3u);  // the summary, then one per case
}

// The device monitor's counters: a row is flagged (never re-judged) when either side throttled in
// any repetition or the median SM clocks differ by more than 5%
// (tests/tools/report/data/monitor_{base,new}.json).
TEST(Compare, RowsWhereAClockMovedOrASideThrottledAreFlagged) {
  CompareResult r = Compare(Merge({ReadBenchmarkFile(Data("monitor_base.json"))}),
                            Merge({ReadBenchmarkFile(Data("monitor_new.json"))}), {});
  struct Want {
    const char* name;
    bool flag, base_throttled, new_throttled;
  };
  for (const Want& w : {
           Want{"gemm/gpu/cublaslt/square.8192/dt:bf16/manual_time", true, false, true},
           Want{"gemm/gpu/cublaslt/square.4096/dt:bf16/manual_time", false, false, false},
           Want{"gemm/gpu/cublaslt/square.2048/dt:bf16/manual_time", true, false, false},
           Want{"conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:64/dt:bf16/fmt:nhwc/pass:fwd/"
                "manual_time",
                true, true, false},
           Want{"gemm/cpu/onednn/square.1024/dt:f32/manual_time", false, false, false},
       }) {
    const CompareRow* row = Find(r, w.name);
    ASSERT_NE(row, nullptr) << w.name;
    EXPECT_EQ(row->clock_flag, w.flag) << w.name;
    EXPECT_EQ(row->base_throttled, w.base_throttled) << w.name;
    EXPECT_EQ(row->new_throttled, w.new_throttled) << w.name;
  }
  EXPECT_EQ(r.clock_flags, 3);
  EXPECT_DOUBLE_EQ(Find(r, "gemm/gpu/cublaslt/square.2048/dt:bf16/manual_time")->new_clock, 1850);
  EXPECT_TRUE(std::isnan(Find(r, "gemm/cpu/onednn/square.1024/dt:f32/manual_time")->base_clock));
  const Document d = CompareDocument(r, {}, "base", "new");
  const std::string md = RenderMarkdown(d);
  EXPECT_NE(md.find("⚠ 3 row(s) where either side throttled or the median SM clocks differ"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| ⚠ 1980 → 1850 MHz |"), std::string::npos) << md;
}

}  // namespace
}  // namespace dlb::report
