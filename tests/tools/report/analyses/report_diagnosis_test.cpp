// What explains a number or a change: the roofline (the list of the cases furthest below their
// roof, the chart per device), kernel diffs under the cases compare and history check flag, the
// Problems block (the repro command alone: report_repro_test.cpp). Synthetic cases (report_cases.h)
// with the "roofline" and "kernels" objects of fixtures/schema/schema.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/tools/report/report_cases.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/compare.h"
#include "tools/report/analyses/kernel_diff.h"
#include "tools/report/analyses/problems.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/repro.h"
#include "tools/report/analyses/roofline.h"
#include "tools/report/history/history.h"
#include "tools/report/render/document.h"

namespace dlb::report {
namespace {

using testing::Case;
using testing::CasesJson;
using testing::CasesRuns;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A case at `flop_per_s` with intensity `fpb` under a roof of peak / bandwidth.
Case RoofCase(const std::string& name, double fpb, double flop_per_s, double peak, double bw) {
  const double roof = std::min(peak, fpb * bw);
  char obj[256];
  std::snprintf(obj, sizeof obj,
                R"("roofline": {"bound": "%s", "roof_flop_per_s": %.17g,)"
                R"( "compute_peak_flop_per_s": %.17g, "mem_bw_bytes_per_s": %.17g, "bytes": 1e6})",
                fpb * bw < peak ? "memory" : "compute", roof, peak, bw);
  return Case{name,
              10,
              {{"flop_per_s", flop_per_s},
               {"flop_per_byte", fpb},
               {"pct_roofline", flop_per_s / roof * 100}},
              "",
              obj};
}

std::vector<Case> RoofCases() {
  // GPU: bf16 peak 800 T, f32 peak 60 T, 3 TB/s; CPU: 2 T, 100 GB/s.
  return {RoofCase("gemm/gpu/cublaslt/square.4096/dt:bf16", 1365, 600e12, 800e12, 3e12),
          RoofCase("gemm/gpu/cublaslt/skinny.64/dt:bf16", 30, 9e12, 800e12, 3e12),
          RoofCase("conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:32/dt:f32", 40, 30e12, 60e12, 3e12),
          RoofCase("conv/gpu/cudnn/resnet18.layer4.conv3x3/bs:32/dt:bf16", 200, 8e12, 800e12, 3e12),
          RoofCase("gemm/cpu/onednn/square.1024/dt:f32", 170, 1.5e12, 2e12, 100e9),
          // No roofline at all: on no chart, in no list.
          Case{"gemm/cpu/onednn/square.64/dt:f32", 1, {{"flop_per_s", 1e10}}, "", ""}};
}

TEST(Roofline, ListsTheCasesFurthestBelowTheirRoofLowestFirst) {
  RooflineResult r = ComputeRoofline(CasesRuns(RoofCases(), "NVIDIA H100"));
  ASSERT_EQ(r.points.size(), 5u);
  EXPECT_EQ(r.devices, (std::vector<std::string>{"gpu", "cpu"}));
  // skinny: roof min(800 T, 30 x 3 T = 90 T) = 90 T, memory bound, 9 T of it = 10%.
  const RooflinePoint& skinny = r.points[1];
  EXPECT_EQ(skinny.bound, "memory");
  EXPECT_DOUBLE_EQ(skinny.roof, 90e12);
  EXPECT_NEAR(skinny.pct, 10, 1e-5);
  std::vector<RooflinePoint> low = FurthestBelow(r, 3);
  ASSERT_EQ(low.size(), 3u);
  // layer4: 8 T of 600 T = 1.33%; skinny 10%; layer1: 30 T of 60 T (compute) = 50%.
  EXPECT_EQ(low[0].name, "conv/gpu/cudnn/resnet18.layer4.conv3x3/bs:32/dt:bf16/manual_time");
  EXPECT_NEAR(low[0].pct, 8e12 / 600e12 * 100, 1e-5);  // counters as written: 7 digits
  EXPECT_EQ(low[1].name, skinny.name);
  EXPECT_EQ(low[2].name, "conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:32/dt:f32/manual_time");
  EXPECT_EQ(low[2].bound, "compute");
  for (size_t i = 1; i < low.size(); ++i) EXPECT_LE(low[i - 1].pct, low[i].pct);
}

// Without the "roofline" object the peaks are unknown: the roof comes from pct_roofline.
// Ranked by the time a network loses (count x time below the roof), not by %: a tiny case far
// below its roof loses little; GPU cases shorter than kLaunchBoundNs stand apart.
TEST(Roofline, TheListIsRankedByTimeLostWithLaunchBoundCasesApart) {
  // RoofCases' GPU cases take 10 us a Run(): launch-bound; the CPU one is never. Two more: an
  // MLP GEMM of 5 us at 1% of its roof, and a layer of 2 ms at 50%, three times in its network.
  std::vector<Case> cases = RoofCases();
  cases.push_back(RoofCase("gemm/gpu/cublaslt/fc.mlp.8x8/bs:1/dt:bf16", 5, 8e12, 800e12, 3e12));
  cases.back().us = 5;
  Case big =
      RoofCase("conv/gpu/cudnn/resnet18.layer2.conv3x3/bs:32/dt:bf16", 2000, 400e12, 800e12, 3e12);
  big.us = 2000;
  big.counters.push_back({"count", 3});
  cases.push_back(big);
  RooflineResult r = ComputeRoofline(CasesRuns(cases, "NVIDIA H100"));
  std::vector<RooflinePoint> lost = MostTimeLost(r, 10, false);
  ASSERT_EQ(lost.size(), 2u);
  EXPECT_EQ(lost[0].name, big.name + "/manual_time");
  EXPECT_NEAR(lost[0].lost_ns, 3 * 2000e3 * 0.5, 3 * 2000e3 * 0.01);
  EXPECT_EQ(lost[1].name, "gemm/cpu/onednn/square.1024/dt:f32/manual_time");
  EXPECT_GE(lost[0].lost_ns, lost[1].lost_ns);
  std::vector<RooflinePoint> launch = MostTimeLost(r, 10, true);
  ASSERT_EQ(launch.size(), 5u);
  for (const RooflinePoint& p : launch) EXPECT_TRUE(p.launch_bound) << p.name;
  for (size_t i = 1; i < launch.size(); ++i) EXPECT_GE(launch[i - 1].lost_ns, launch[i].lost_ns);
  // The section: the list, then the launch-bound cases in a table of their own; names as keys.
  std::vector<Section> s = RooflineSections(r, {}, false);
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s[0].tables.size(), 2u);
  EXPECT_EQ(s[0].tables[1].title.rfind("Launch-bound: 5 GPU case(s)", 0), 0u)
      << s[0].tables[1].title;
  const Table& t = s[0].tables[0];
  ASSERT_GE(t.columns.size(), 4u);
  EXPECT_EQ(t.columns[0].key, "family");
  EXPECT_EQ(t.columns[3].key, "workload");
  EXPECT_EQ(t.rows[0][3].Text(), "resnet18.layer2.conv3x3");
  EXPECT_EQ(t.columns.back().key, "lost_ns");
}

// A value above 100% of its roof reads with its warning sign, never bare.
TEST(Roofline, AValueAbove100PercentIsFlagged) {
  RooflineResult r = ComputeRoofline(CasesRuns(
      {RoofCase("gemm/gpu/cublaslt/square.8192/dt:bf16", 1000, 900e12, 800e12, 3e12)}, "H100"));
  std::vector<Section> s = RooflineSections(r, {}, false);
  ASSERT_EQ(s.size(), 1u);
  const Table& t = s[0].tables.at(0);
  size_t pct = 0;
  while (pct < t.columns.size() && t.columns[pct].key != "pct_roofline") ++pct;
  ASSERT_LT(pct, t.columns.size());
  EXPECT_EQ(t.rows[0][pct].Text(), "⚠ 112%");
  EXPECT_EQ(t.rows[0][pct].tone, Tone::kWarn);
}

TEST(Roofline, TheCountersAloneGiveTheRoof) {
  RooflineResult r = ComputeRoofline(
      CasesRuns({Case{"gemm/cpu/onednn/square.1024/dt:f32",
                      10,
                      {{"flop_per_s", 1e12}, {"flop_per_byte", 100}, {"pct_roofline", 25}},
                      "",
                      ""}}));
  ASSERT_EQ(r.points.size(), 1u);
  EXPECT_DOUBLE_EQ(r.points[0].roof, 4e12);
  EXPECT_EQ(r.points[0].bound, "");
}

TEST(Roofline, OneChartPerDeviceOnePointPerCaseOneRoofPerPeak) {
  RooflineResult r = ComputeRoofline(CasesRuns(RoofCases(), "NVIDIA H100"));
  Chart gpu = RooflineChart(r, "gpu", "GPU: NVIDIA H100");
  EXPECT_TRUE(gpu.log_x && gpu.log_y);
  std::string svg = RenderSvg(gpu);
  EXPECT_EQ(Count(svg, "<circle"), 4u);  // the four GPU cases
  // Two compute peaks (bf16 800 T, f32 60 T): two roof lines, named by their dtypes.
  EXPECT_EQ(Count(svg, "<polyline"), 2u);
  EXPECT_NE(svg.find("roof bf16 800 T"), std::string::npos) << svg;
  EXPECT_NE(svg.find("roof f32 60.0 T"), std::string::npos);
  // The bf16 roof bends at its ridge: 800 T / 3 TB/s = 266.7 FLOP/byte.
  bool ridge = false;
  for (const Series& s : gpu.series)
    for (auto [x, y] : s.points) ridge |= std::fabs(x - 800.0 / 3) < 1e-9 && y == 800e12;
  EXPECT_TRUE(ridge);
  EXPECT_EQ(Count(RenderSvg(RooflineChart(r, "cpu", "CPU")), "<circle"), 1u);
  // The axes say they are logarithmic.
  EXPECT_NE(gpu.x_label.find("log scale"), std::string::npos);
  EXPECT_NE(gpu.y_label.find("log scale"), std::string::npos);
}

// Peaks of one dtype that differ by a hair (two files' measured peaks) are one roof, its highest,
// never the same label twice.
TEST(Roofline, OneRoofPerDtype) {
  std::vector<Case> cases = {
      RoofCase("gemm/gpu/cublaslt/square.4096/dt:f32", 1365, 45e12, 50.7e12, 3e12),
      RoofCase("gemm/gpu/cublaslt/square.2048/dt:f32", 680, 44e12, 50.72e12, 3e12),
      RoofCase("gemm/gpu/cublaslt/square.4096/dt:bf16", 1365, 600e12, 800e12, 3e12)};
  Chart gpu = RooflineChart(ComputeRoofline(CasesRuns(cases, "NVIDIA H100")), "gpu", "GPU");
  const std::string svg = RenderSvg(gpu);
  EXPECT_EQ(Count(svg, "<polyline"), 2u) << svg;
  EXPECT_EQ(Count(svg, "roof f32 50.7 T"), 1u) << svg;
}

TEST(Roofline, TheReportDrawsItAfterTheFirstScreenAndListsItInEveryFormat) {
  MergedRuns runs = CasesRuns(RoofCases(), "NVIDIA H100");
  Document d = FullReport(runs, {"cases.json"});
  size_t at = 0;
  while (at < d.sections.size() && d.sections[at].title != "Roofline") ++at;
  ASSERT_LT(at, d.sections.size());
  EXPECT_GT(at, 0u);  // the findings come first
  EXPECT_FALSE(d.sections[at].details);
  EXPECT_EQ(d.sections[at].charts.size(), 2u);
  for (size_t i = 0; i < at; ++i) EXPECT_FALSE(d.sections[i].details) << d.sections[i].title;
  const std::string html = RenderHtml(d);
  EXPECT_NE(html.find("Roofline: GPU: NVIDIA H100"), std::string::npos);
  EXPECT_NE(RenderMarkdown(d).find("## Roofline"), std::string::npos);
  EXPECT_NE(RenderCsv(d).find("pct_roofline"), std::string::npos);
  auto j = nlohmann::json::parse(RenderJson(d));
  EXPECT_NE(j.dump().find("\"bound\""), std::string::npos);
}

TEST(Roofline, NoCaseWithARooflineNoSection) {
  MergedRuns runs =
      CasesRuns({Case{"gemm/cpu/onednn/square.64/dt:f32", 1, {{"flop_per_s", 1e10}}, "", ""}});
  EXPECT_TRUE(RooflineSections(ComputeRoofline(runs), runs.context, true).empty());
  EXPECT_EQ(RenderMarkdown(FullReport(runs, {"x"})).find("Roofline"), std::string::npos);
}

// ---- kernel tables ----

std::string KernelsJson(const std::vector<std::pair<std::string, double>>& rows, double runs) {
  std::string r;
  for (const auto& [name, total] : rows)
    r += std::string(r.empty() ? "" : ", ") + R"({"name": ")" + name +
         R"(", "kind": "kernel", "launches_per_run": 1, "total_s": )" + std::to_string(total) +
         R"(, "mean_s": 0, "share": 0})";
  return R"("kernels": {"source": "cupti", "runs": )" + std::to_string(runs) +
         R"(, "span_s": 1, "rows": [)" + r + "]}";
}

KernelTable PerRunTable(const std::vector<std::pair<std::string, double>>& per_run) {
  KernelTable t;
  t.runs = 100;
  for (const auto& [name, s] : per_run) t.rows.push_back({name, "kernel", 1, s * 100, s, 0});
  return t;
}

TEST(KernelDiff, AppearedVanishedGrewAndTheirShareOfTheChange) {
  // Base 10 us per Run(); new 14 us. cuDNN's engine changed: implicit_gemm (6 us) vanished,
  // winograd (8 us) appeared; the bias kernel grew 2 -> 3 us; the copy stayed at 1 us.
  KernelTable base = PerRunTable({{"implicit_gemm", 6e-6}, {"bias", 2e-6}, {"copy", 1e-6}});
  KernelTable now = PerRunTable({{"winograd", 8e-6}, {"bias", 3e-6}, {"copy", 1e-6}});
  KernelDiff d = DiffKernels(base, now, 10e3, 14e3);
  EXPECT_NEAR(d.case_delta_s, 4e-6, 1e-15);
  ASSERT_EQ(d.changes.size(), 4u);
  EXPECT_EQ(d.changes[0].name, "winograd");
  EXPECT_EQ(d.changes[0].change, KernelChangeKind::kAppeared);
  EXPECT_NEAR(d.changes[0].of_case, 2.0, 1e-9);  // +8 us of a +4 us change
  EXPECT_EQ(d.changes[1].name, "implicit_gemm");
  EXPECT_EQ(d.changes[1].change, KernelChangeKind::kVanished);
  EXPECT_NEAR(d.changes[1].of_case, -1.5, 1e-9);
  EXPECT_EQ(d.changes[2].name, "bias");
  EXPECT_EQ(d.changes[2].change, KernelChangeKind::kGrew);
  EXPECT_EQ(d.changes[3].change, KernelChangeKind::kSame);
  // The shares add up to what the tables account for: (8 + 3 + 1) - (6 + 2 + 1) = 3 of 4 us.
  double sum = 0;
  for (const KernelChange& c : d.changes) sum += c.of_case;
  EXPECT_NEAR(sum, d.explained, 1e-12);
  EXPECT_NEAR(d.explained, 0.75, 1e-9);
  const std::string s = KernelDiffSummary(d);
  EXPECT_EQ(s, "+winograd 200%, -implicit_gemm -150%, ↑bias 25% (kernels: 75% of the change)");
  Table t = KernelDiffTable(d, "x");
  EXPECT_EQ(t.rows.back()[0].Text(), "the case");
  EXPECT_EQ(t.rows[t.rows.size() - 2][0].Text(), "all kernels");
}

// One primitive that now runs 16 times per Run() where it ran once: the diff says so beside the
// time, in the summary and the table.
TEST(KernelDiff, AChangeInLaunchesPerRunIsShownBesideTheTime) {
  KernelTable base = PerRunTable({{"matmul brg:avx512_core", 10e-6}, {"reorder", 1e-6}});
  KernelTable now = PerRunTable({{"matmul brg:avx512_core", 18.9e-6}, {"reorder", 1e-6}});
  now.rows[0].launches_per_run = 16;
  KernelDiff d = DiffKernels(base, now, 11e3, 19.9e3);
  ASSERT_EQ(d.changes.size(), 2u);
  EXPECT_EQ(d.changes[0].base_launches, 1);
  EXPECT_EQ(d.changes[0].new_launches, 16);
  EXPECT_EQ(KernelDiffSummary(d),
            "↑matmul brg:avx512_core 100% (launches 1 → 16) (kernels: 100% of the change)");
  Table t = KernelDiffTable(d, "x");
  size_t col = 0;
  while (col < t.columns.size() && t.columns[col].title != "launches / Run()") ++col;
  ASSERT_LT(col, t.columns.size());
  EXPECT_EQ(t.rows[0][col].Text(), "1 → 16");
  EXPECT_EQ(t.rows[0][col].tone, Tone::kBad);
}

MergedRuns Side(double us, const std::string& kernels, double spread = 0.001,
                const std::string& ctx = "") {
  std::vector<Case> cases = {
      // Five repetitions a side: the U test's least p for 3 against 3 is 0.1, never significant.
      Case{"conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:32/dt:f32", us, {}, "", kernels, spread, 5},
      Case{"conv/gpu/cudnn/resnet18.layer2.conv3x3/bs:32/dt:f32", 50, {}, "", "", 0.001, 5}};
  return Merge({ParseBenchmarkJson(CasesJson(cases, "", ctx), "side.json")});
}

const char* kCtx =
    R"("executable": "./build/release/benchmarks/conv/bench_conv",)"
    R"( "dlbench_command": "./build/release/benchmarks/conv/bench_conv --dlb_tier=smoke )"
    R"('--benchmark_filter=conv/gpu/.*' --benchmark_out=/tmp/x.json --dlb_autotune=search )"
    R"(--benchmark_repetitions=5 '--dlb_note=it'\\''s'")";

TEST(CompareDiagnosis, AFlaggedCaseShowsItsKernelsAndTheCommandThatRerunsIt) {
  MergedRuns base =
      Side(10, KernelsJson({{"implicit_gemm", 6e-4}, {"bias", 2e-4}}, 100), 0.001, kCtx);
  MergedRuns now = Side(14, KernelsJson({{"winograd", 8e-3}, {"bias", 3e-3}}, 1000), 0.001, kCtx);
  CompareResult r = Compare(base, now, {});
  ASSERT_EQ(r.rows.size(), 2u);
  const CompareRow& row = r.rows[0];
  ASSERT_EQ(row.verdict, Verdict::kSlower);
  ASSERT_TRUE(row.kernels);
  EXPECT_EQ(row.kernels->changes[0].name, "winograd");
  EXPECT_EQ(r.kernel_diffs, 1);
  EXPECT_EQ(row.repro,
            "./build/release/benchmarks/conv/bench_conv "
            "'--benchmark_filter=^conv/gpu/cudnn/resnet18\\.layer1\\.conv3x3/bs:32/dt:f32/"
            "manual_time$' --dlb_tier=smoke --dlb_autotune=search --benchmark_repetitions=5 "
            "'--dlb_note=it'\\''s'");
  EXPECT_EQ(r.rows[1].verdict, Verdict::kSame);
  EXPECT_TRUE(r.rows[1].repro.empty());

  Document d = CompareDocument(r, {}, "base.json", "new.json");
  const std::string md = RenderMarkdown(d);
  EXPECT_NE(md.find("+winograd"), std::string::npos) << md;
  EXPECT_NE(md.find("Kernel changes of the flagged cases"), std::string::npos);
  const std::string html = RenderHtml(d);
  EXPECT_NE(html.find("<details><summary><h2>Kernel changes"), std::string::npos);
  auto j = nlohmann::json::parse(RenderJson(d));
  bool repro = false, kernels = false;
  for (const auto& s : j["sections"])
    for (const auto& t : s["tables"])
      for (const auto& rw : t["rows"]) {
        repro |= rw.contains("repro") && rw["repro"] == row.repro;
        kernels |= rw.contains("kernels") && rw["kernels"].is_string() &&
                   rw["kernels"].get<std::string>().find("+winograd") != std::string::npos;
      }
  EXPECT_TRUE(repro) << j.dump(1);
  EXPECT_TRUE(kernels);
  EXPECT_NE(RenderCsv(d).find("repro"), std::string::npos);
}

TEST(CompareDiagnosis, WithoutKernelTablesOrContextNoColumns) {
  CompareResult r = Compare(Side(10, ""), Side(14, ""), {});
  ASSERT_EQ(r.rows[0].verdict, Verdict::kSlower);
  EXPECT_FALSE(r.rows[0].kernels);
  EXPECT_TRUE(r.rows[0].repro.empty());  // the context names no binary
  const std::string md = RenderMarkdown(CompareDocument(r, {}, "a", "b"));
  EXPECT_EQ(md.find("kernels"), std::string::npos);
  EXPECT_EQ(md.find("repro"), std::string::npos);
  // A run that says it recorded no kernels: one note on how to get them.
  CompareResult off = Compare(Side(10, ""), Side(14, "", 0.001, R"("dlbench_kernels": "off")"), {});
  EXPECT_NE(RenderMarkdown(CompareDocument(off, {}, "a", "b"))
                .find("No kernel tables in these runs (dlbench_kernels off)"),
            std::string::npos);
}

// A malformed kernels object never fails the file: the entry stands, the table is left out with
// one line, and compare says it where it would have shown the diff.
TEST(CompareDiagnosis, AMalformedKernelTableIsLeftOutWithANote) {
  for (const std::string& bad :
       {std::string(R"("kernels": {"runs": 10, "rows": [{"name": "k", "total_s": "1"}]})"),
        std::string(R"("kernels": {"runs": 10, "rows": {}})"),
        std::string(R"("kernels": {"rows": []})"), std::string(R"("kernels": 3)"),
        std::string(R"("kernels": [[[[[[[1]]]]]]])"),
        std::string(R"("kernels": {"runs": 1, "rows": [{"total_s": 1}]})"),
        std::string(R"("roofline": {"bound": "disk"}, "kernels": {"runs": 0, "rows": []})")}) {
    MergedRuns base = Side(10, KernelsJson({{"a", 1e-3}}, 100));
    MergedRuns now = Side(14, bad);
    ASSERT_EQ(now.benches.size(), 2u) << bad;
    EXPECT_FALSE(now.benches[0].kernels) << bad;
    EXPECT_FALSE(now.benches[0].ignored.empty()) << bad;
    EXPECT_EQ(now.benches[0].ignored.find('\n'), std::string::npos);
    CompareResult r = Compare(base, now, {});
    EXPECT_FALSE(r.rows[0].kernels);
    EXPECT_NE(r.rows[0].kernels_note.find("left out"), std::string::npos)
        << bad << ": " << r.rows[0].kernels_note;
  }
}

TEST(Reader, TheRooflineAndKernelObjectsAreRead) {
  MergedRuns runs = CasesRuns(
      {Case{"gemm/gpu/cublaslt/square.4096/dt:bf16",
            10,
            {},
            "net",
            R"("roofline": {"bound": "compute", "roof_flop_per_s": 8e14, "bytes": 1e8}, )" +
                KernelsJson({{"sm90_gemm", 0.5}, {"memcpy", 0.1}}, 50)}});
  const Bench& b = runs.benches[0];
  EXPECT_EQ(b.network, "net");
  ASSERT_TRUE(b.roofline);
  EXPECT_EQ(b.roofline->bound, "compute");
  EXPECT_DOUBLE_EQ(b.roofline->roof_flop_per_s, 8e14);
  EXPECT_TRUE(std::isnan(b.roofline->mem_bw_bytes_per_s));
  ASSERT_TRUE(b.kernels);
  EXPECT_EQ(b.kernels->source, "cupti");
  EXPECT_EQ(b.kernels->runs, 50);
  ASSERT_EQ(b.kernels->rows.size(), 2u);
  EXPECT_EQ(b.kernels->rows[1].name, "memcpy");
  EXPECT_DOUBLE_EQ(b.kernels->rows[0].total_s, 0.5);
  EXPECT_TRUE(b.ignored.empty());
}

// ---- Problems ----

TEST(Problems, ThrottledAbove100MeasuredOnceAndMixedInputsAreSaidFirst) {
  std::vector<Case> cases = {
      Case{"gemm/gpu/cublaslt/square.8192/dt:bf16",
           900,
           {{"throttled", 1}, {"sm_clock_median_mhz", 1320}, {"pct_roofline", 158.7}}},
      Case{"gemm/gpu/cublaslt/square.4096/dt:bf16",
           200,
           {{"throttled", 1}, {"sm_clock_median_mhz", 1530}, {"pct_peak", 80}}},
      Case{"gemm/gpu/cublaslt/square.1024/dt:bf16", 10, {{"throttled", 0}}},
      Case{"gemm/cpu/onednn/square.1024/dt:f32", 2000, {}, "", "", 0.001, 1}};
  std::string json = CasesJson(cases, "NVIDIA H200", R"("gpu_max_sm_clock_mhz": "1980")");
  // The throttled cases' labels name the reasons, as the monitor writes them.
  const std::string label =
      R"("label": "cuBLASLt | clock 1320/1980 MHz, throttled: sw_power_cap", )";
  for (size_t at = json.find("\"run_type\""); at != std::string::npos;
       at = json.find("\"run_type\"", at + label.size() + 1))
    json.insert(at, label);
  const MergedRuns runs = Merge({ParseBenchmarkJson(json, "a.json")});
  const ProblemsFound p =
      FindProblems(runs, {{{"date", "2026-11-22T10:00:00"}, {"dlbench_git_revision", "aaa"}},
                          {{"date", "2026-11-27T09:00:00"}, {"dlbench_git_revision", "bbb"}},
                          {{"date", "2026-11-27T11:00:00"}, {"dlbench_git_revision", "bbb"}}});
  EXPECT_EQ(p.throttled, 2);
  EXPECT_EQ(p.monitored, 3);
  EXPECT_EQ(p.throttle_reasons, std::vector<std::string>{"sw_power_cap"});
  EXPECT_EQ(p.clock_low, 1320);
  EXPECT_EQ(p.clock_high, 1530);
  EXPECT_EQ(p.clock_max, 1980);
  EXPECT_EQ(p.over_100, 1);
  EXPECT_NEAR(p.over_100_max, 158.7, 1e-9);
  EXPECT_EQ(p.once, 1);
  EXPECT_EQ(p.mixed.at("dates"), (std::vector<std::string>{"2026-11-22", "2026-11-27"}));
  EXPECT_EQ(p.mixed.at("revisions"), (std::vector<std::string>{"aaa", "bbb"}));
  const auto s = ProblemsSection(p);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->title, "Problems");
  ASSERT_EQ(s->notes.size(), 4u);
  EXPECT_EQ(s->notes[0].rfind("**Throttled**: 2 of 3 monitored GPU cases ran throttled "
                              "(sw_power_cap): median SM clock 1320-1530 MHz of 1980",
                              0),
            0u)
      << s->notes[0];
  // First in the report, and nothing when nothing applies.
  EXPECT_EQ(FullReport(runs, {"a.json"}).sections.front().title, "Problems");
  const MergedRuns clean = CasesRuns({Case{"gemm/cpu/onednn/square.64/dt:f32", 5}});
  EXPECT_FALSE(ProblemsSection(FindProblems(clean, {})).has_value());
}

// Inputs from several hosts, days and revisions: the header says so (the Problems section's
// detection), not the first file's host, date and revision as if all were run there.
TEST(Problems, TheMachineLineSaysWhatTheInputsSpan) {
  const MergedRuns runs = CasesRuns({Case{"gemm/cpu/onednn/square.64/dt:f32", 5}});
  const std::vector<std::map<std::string, std::string>> contexts = {
      {{"host_name", "a"}, {"date", "2026-11-20T10:00:00"}, {"dlbench_git_revision", "r1"}},
      {{"host_name", "b"}, {"date", "2026-11-27T10:00:00"}, {"dlbench_git_revision", "r2"}},
      {{"host_name", "c"}, {"date", "2026-11-27T11:00:00"}, {"dlbench_git_revision", "r3"}}};
  const Document d = FullReport(runs, {"a.json", "b.json", "c.json"}, contexts);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_EQ(d.notes[0],
            "Machines: 3 hosts (a, b, c); runs 2026-11-20..2026-11-27 (2 days); dlbench at 3 "
            "revisions.");
  // The Problems block lists the same spread.
  const ProblemsFound p = FindProblems(runs, contexts);
  EXPECT_EQ(p.mixed.at("hosts"), (std::vector<std::string>{"a", "b", "c"}));
  // Files of one host, day and revision: that one machine line, the runs' own.
  const std::vector<std::map<std::string, std::string>> same = {
      {{"host_name", "a"}, {"date", "2026-11-20T10:00:00"}},
      {{"host_name", "a"}, {"date", "2026-11-20T12:00:00"}}};
  EXPECT_EQ(FullReport(runs, {"a.json", "b.json"}, same).notes[0], "Machine: test.");
  // More than four hosts: the first four named, the count whole.
  std::vector<std::map<std::string, std::string>> many;
  for (const char* h : {"h1", "h2", "h3", "h4", "h5"}) many.push_back({{"host_name", h}});
  EXPECT_EQ(FullReport(runs, {"1", "2", "3", "4", "5"}, many).notes[0],
            "Machines: 5 hosts (h1, h2, h3, h4, ...).");
}

// A file that loaded no cuDNN is no cuDNN version of its own, and PyTorch's integer version is
// the same version as dlbench's dotted one: neither makes the inputs mixed.
// One host name, one GPU model, two cards (the runs' UUIDs differ): the machine line says so.
TEST(Problems, TheMachineLineCountsCardsByUuid) {
  const MergedRuns runs = Merge({ParseBenchmarkJson(
      CasesJson({Case{"gemm/gpu/cublaslt/square.64/dt:bf16", 5}}, "NVIDIA H100 80GB HBM3"),
      "a.json")});
  auto ctx = [](const char* uuid) {
    return std::map<std::string, std::string>{
        {"host_name", "vm"}, {"gpu_name", "NVIDIA H100 80GB HBM3"}, {"gpu_uuid", uuid}};
  };
  const Document d = FullReport(runs, {"a.json", "b.json", "c.json"},
                                {ctx("GPU-01bb"), ctx("GPU-8ddf"), ctx("not reported")});
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("NVIDIA H100 80GB HBM3, 2 GPU UUIDs (GPU-01bb, GPU-8ddf)"),
            std::string::npos)
      << d.notes[0];
  EXPECT_EQ(FullReport(runs, {"a.json", "b.json"}, {ctx("GPU-01bb"), ctx("GPU-01bb")})
                .notes[0]
                .find("UUID"),
            std::string::npos);
}

TEST(Problems, MixedInputsIgnoreGapsAndReadCudnnIntegersAsVersions) {
  const MergedRuns runs = CasesRuns({Case{"gemm/cpu/onednn/square.64/dt:f32", 5}});
  std::vector<std::map<std::string, std::string>> contexts = {{{"cudnn_version", "9.19.0"}},
                                                              {{"cudnn_version", "91900"}},
                                                              {{"cudnn_version", "not loaded"}},
                                                              {{"cudnn_version", ""}}};
  EXPECT_TRUE(MixedInputs(contexts).empty());
  contexts.push_back({{"cudnn_version", "9.14.0"}});
  contexts.push_back({{"cudnn_version", "8907"}});
  EXPECT_EQ(MixedInputs(contexts).at("cuDNN versions"),
            (std::vector<std::string>{"8.9.7", "9.14.0", "9.19.0"}));
  EXPECT_FALSE(FindProblems(runs, contexts).mixed.empty());
}

// A GEMM above 100% of its roof whose operands fit in L2 (counter l2_resident) is explained by it.
TEST(Problems, Above100IsExplainedByOperandsInL2) {
  const MergedRuns runs = CasesRuns(
      {Case{
           "gemm/gpu/cublaslt/square.1024/dt:bf16", 5, {{"pct_roofline", 112}, {"l2_resident", 1}}},
       Case{"gemm/gpu/cublaslt/square.8192/dt:bf16",
            900,
            {{"pct_roofline", 101}, {"l2_resident", 0}}},
       Case{"gemm/gpu/cublaslt/square.4096/dt:bf16",
            200,
            {{"pct_roofline", 97}, {"l2_resident", 0}}}});
  const ProblemsFound p = FindProblems(runs, {});
  EXPECT_EQ(p.over_100, 2);
  EXPECT_EQ(p.over_100_l2, 1);
  const auto s = ProblemsSection(p);
  ASSERT_TRUE(s.has_value());
  bool said = false;
  for (const std::string& n : s->notes)
    said |= n.find("**Above 100%**: 2 value(s)") == 0 &&
            n.find(
                "1 of them are of cases whose operands fit in the GPU's L2 (counter "
                "`l2_resident`)") != std::string::npos;
  EXPECT_TRUE(said);
}

// gpu_peak_measured's fp8 and int8 parts as an H100 run wrote them (kernels/cublas/peak.cpp).
const std::string kFp8Peak =
    R"(fp8 1372.0 TFLOP/s (cuBLASLt best of 6 shapes x up to 32 heuristic algorithms (search )"
    R"("shapes", 9.6 s): 8448x8192x8192 TN, best of 5 batches of 38; cublasLtMatmul search best )"
    R"(of 8 heuristic results: #0 (algo 66 tile 128x160 stages 36 splitk 1 swizzle 0 cluster 3) )"
    R"(compute 32F full accum workspace 32 MiB (needs 4 B) fp8 (e4m3 x e4m3 -> bf16); SM clock )"
    R"(1305 MHz (median while timed)))";
const std::string kInt8Peak =
    R"(int8 1477.8 TOPS (cuBLASLt best of 6 shapes x up to 32 heuristic algorithms (search )"
    R"("shapes", 7.6 s): 8192x8192x8192 TN, best of 5 batches of 41; cublasLtMatmul search best )"
    R"(of 8 heuristic results: #6 (algo 39 tile 128x128 stages 36 splitk 1 swizzle 0 cluster 12) )"
    R"(compute 32I workspace 32 MiB (needs 7.00058 MiB) int8 (int8 x int8 -> int32); SM clock )"
    R"(1455 MHz (median while timed)))";

// The same for a search that also re-times its fastest shapes like a case (an H200 run): the
// clock read is the peak's, the last one of the part, not the sustained rate's.
const std::string kFp8PeakReTimed =
    R"(fp8 1480.9 TFLOP/s (cuBLASLt best of 6 shapes x up to 32 heuristic algorithms (search )"
    R"("shapes", 13.4 s), sustained: 4096x4096x4096 TN, best of 5 batches of 259; cublasLtMatmul )"
    R"(search best of 8 heuristic results: #3 (algo 66 tile 256x64 stages 36 splitk 1 swizzle 0 )"
    R"(cluster 5) compute 32F full accum workspace 32 MiB (needs 4 B) fp8 (e4m3 x e4m3 -> bf16); )"
    R"(1345.5 TFLOP/s at 1755 MHz; re-timed like a case, the fastest 6: 12288x8192x8192 TN, as a )"
    R"(case: best of 22 spans of 1 after 500 ms idle; cublasLtMatmul search best of 8 heuristic )"
    R"(results: #0 (algo 66 tile 128x160 stages 36 splitk 1 swizzle 0 cluster 3) compute 32F full )"
    R"(accum workspace 32 MiB (needs 4 B) fp8 (e4m3 x e4m3 -> bf16); 1480.9 TFLOP/s; the peak: )"
    R"(the case-like rate; SM clock 1980 MHz (median while timed)))";

TEST(Problems, TheReTimedPeaksClockIsTheOneItsRateWasTimedAt) {
  const std::string measured = kInt8Peak + "; " + kFp8PeakReTimed;
  EXPECT_EQ(MeasuredPeakPart(measured, "fp8"), kFp8PeakReTimed);
  EXPECT_EQ(MeasuredPeakClockMhz(measured, "fp8"), 1980);
  EXPECT_EQ(MeasuredPeakClockMhz(measured, "int8"), 1455);
  EXPECT_EQ(MeasuredPeakOf({{"gpu_peak_measured", measured}}, "gpu", "fp8"),
            "measured fp8 1480.9 TFLOP/s");
}

TEST(Problems, TheMeasuredPeaksClockIsReadPerDtype) {
  const std::string measured = kFp8Peak + "; " + kInt8Peak;
  EXPECT_EQ(MeasuredPeakPart(measured, "int8"), kInt8Peak);
  EXPECT_EQ(MeasuredPeakClockMhz(measured, "fp8"), 1305);
  EXPECT_EQ(MeasuredPeakClockMhz(measured, "fp8_e5m2"), 1305);  // fp8's peak
  EXPECT_EQ(MeasuredPeakClockMhz(measured, "int8"), 1455);
  // No part of the dtype, no clock in its part, or words the writer does not write: no clock.
  EXPECT_EQ(MeasuredPeakClockMhz(measured, "bf16"), 0);
  // A dtype the run had no case of: no figure, no clock.
  const std::string partial = "bf16 not measured (no bf16 case in this run); " + kInt8Peak;
  EXPECT_EQ(MeasuredPeakPart(partial, "bf16"), "");
  EXPECT_EQ(MeasuredPeakOf({{"gpu_peak_measured", partial}}, "gpu", "bf16"), "");
  EXPECT_EQ(MeasuredPeakClockMhz(partial, "int8"), 1455);
  EXPECT_EQ(MeasuredPeakClockMhz("fp8 1372.0 TFLOP/s (cuBLASLt ...)", "fp8"), 0);
  EXPECT_EQ(MeasuredPeakClockMhz("fp8 1 T (x; SM clock ? MHz (median while timed))", "fp8"), 0);
  EXPECT_EQ(MeasuredPeakClockMhz("not measured (no GPU)", "fp8"), 0);
}

// Above 100% at a median SM clock above its file's dtype's peak's: explained, both clocks named.
TEST(Problems, Above100IsExplainedByAClockAboveThePeaksClock) {
  auto runs = [](const std::string& measured) {
    auto gemm = [](const std::string& dt, double pct, double mhz) {
      return Case{"gemm/gpu/cublaslt/square.8192/dt:" + dt,
                  781,
                  {{"pct_roofline", pct}, {"l2_resident", 0}, {"sm_clock_median_mhz", mhz}}};
    };
    // int8 at its peak's own clock, bf16 of a dtype the peak names no clock for: no reason.
    const std::vector<Case> cases = {gemm("fp8", 102.6, 1980), gemm("int8", 101, 1455),
                                     gemm("bf16", 103, 1980)};
    const std::string ctx = R"("gpu_peak_measured": )" + nlohmann::json(measured).dump();
    return Merge({ParseBenchmarkJson(CasesJson(cases, "NVIDIA H100", ctx), "a.json")});
  };
  const ProblemsFound p = FindProblems(runs(kFp8Peak + "; " + kInt8Peak), {});
  EXPECT_EQ(
      std::make_tuple(p.over_100, p.over_100_clock, p.over_100_clock_case, p.over_100_clock_peak),
      std::make_tuple(3, 1, 1980., 1305.));
  EXPECT_EQ(p.over_100_unexplained, 2);
  const std::string line = ProblemsSection(p).value().notes.front();
  EXPECT_EQ(line.rfind("**Above 100%**: 3 value(s)", 0), 0u) << line;
  EXPECT_NE(line.find(" 1 of them ran at a higher SM clock than their dtype's measured peak was "
                      "taken at (up to 1980 against 1305 MHz"),
            std::string::npos)
      << line;
  // A context with no clock for the dtype explains nothing.
  const ProblemsFound none = FindProblems(runs("fp8 1372.0 TFLOP/s (cuBLASLt ...)"), {});
  EXPECT_EQ(std::make_pair(none.over_100, none.over_100_clock), std::make_pair(3, 0));
  EXPECT_EQ(ProblemsSection(none).value().notes.front().find("SM clock"), std::string::npos);
}

// Collectives whose timed spans read slower than a plain loop of the same calls (the harness's
// cost, as 1 ms spans once added to a broadcast): named, the worst first; 1.1x and under is not.
TEST(Problems, HarnessOverheadAgainstThePlainLoopIsNamed) {
  const MergedRuns runs = CasesRuns(
      {Case{"comm/gpu/nccl/broadcast.16777216/dt:bf16/gpus:4", 84, {{"vs_plain_loop", 1.18}}},
       Case{"comm/gpu/nccl/all_to_all.16777216/dt:bf16/gpus:4", 70, {{"vs_plain_loop", 1.25}}},
       Case{"comm/gpu/nccl/all_reduce.16777216/dt:bf16/gpus:4", 100, {{"vs_plain_loop", 1.02}}},
       Case{"comm/gpu/nccl/all_gather.16777216/dt:bf16/gpus:4", 60, {{"vs_plain_loop", 1.1}}}});
  const ProblemsFound p = FindProblems(runs, {});
  EXPECT_EQ(p.overhead, (std::vector<std::string>{
                            "comm/gpu/nccl/all_to_all.16777216/dt:bf16/gpus:4/manual_time",
                            "comm/gpu/nccl/broadcast.16777216/dt:bf16/gpus:4/manual_time"}));
  EXPECT_NEAR(p.overhead_max, 1.25, 1e-12);
  const auto s = ProblemsSection(p);
  ASSERT_TRUE(s.has_value());
  bool said = false;
  for (const std::string& n : s->notes)
    said |= n.rfind("**Harness overhead**: 2 case(s) timed more than 1.1x slower than a plain loop",
                    0) == 0 &&
            n.find("up to 1.25x") != std::string::npos &&
            n.find("all_to_all.16777216") < n.find("broadcast.16777216");
  EXPECT_TRUE(said) << s->notes.front();
  // Within 1.1x: nothing to say.
  const MergedRuns sound =
      CasesRuns({Case{"comm/gpu/nccl/all_reduce.8/dt:bf16/gpus:2", 10, {{"vs_plain_loop", 0.93}}}});
  EXPECT_TRUE(FindProblems(sound, {}).overhead.empty());
}

// ---- history check ----

TEST(HistoryDiagnosis, CheckShowsTheKernelDiffAndTheReproOfAFlaggedCase) {
  dlb::testing::TempDir dir("diagnosis");
  const std::string db = dir / "h.db";
  const std::string ctx = kCtx;
  for (int i = 0; i < 5; ++i) {
    const bool newest = i == 4;
    char date[64];
    std::snprintf(date, sizeof date, R"("date": "2026-01-0%dT00:00:00Z", )", i + 1);
    const std::string kernels = newest
                                    ? KernelsJson({{"winograd", 8e-4}, {"bias", 2e-4}}, 100)
                                    : KernelsJson({{"implicit_gemm", 6e-4}, {"bias", 2e-4}}, 100);
    std::vector<Case> cases = {
        Case{"conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:32/dt:f32",
             newest ? 14.0 : 10.0 + 0.01 * i,
             {},
             "",
             kernels},
        Case{"conv/gpu/cudnn/resnet18.layer2.conv3x3/bs:32/dt:f32", 50 + 0.01 * i, {}, "", ""}};
    HistoryAdd(db, {ParseBenchmarkJson(CasesJson(cases, "", date + ctx), "r.json")},
               RunMeta{"c" + std::to_string(i), "", "", ""});
  }
  CheckResult r = HistoryCheck(db, {});
  ASSERT_EQ(r.unconfirmed, 1);  // one slow run: flagged with its diagnosis, not failed
  const std::string md = RenderMarkdown(r.doc);
  EXPECT_NE(md.find("vs run #4: +winograd"), std::string::npos) << md;
  EXPECT_NE(md.find("-implicit_gemm"), std::string::npos);
  EXPECT_NE(md.find("Kernel changes of the flagged cases"), std::string::npos);
  EXPECT_NE(md.find("--benchmark_filter=^conv/gpu/cudnn/resnet18\\.layer1"), std::string::npos);
  // Exported and imported, the kernel tables go along.
  const std::string copy = dir / "copy.db";
  HistoryCopy(db, copy);
  EXPECT_EQ(RenderMarkdown(HistoryCheck(copy, {}).doc), md);
}

}  // namespace
}  // namespace dlb::report
