// The serving section: decode's latency-throughput frontier per model and device, the batch where
// decode turns compute-bound, the largest batch within a time-per-token budget, CPU against GPU at
// batch 1, the memory roof, energy per token and the PyTorch peer; on a default-tier CPU run and
// on small runs of the edge cases (one batch, no peer, counters missing).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/tools/report/report_cases.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/serving.h"
#include "tools/report/render/document.h"

namespace dlb::report {
namespace {

using testing::Case;

std::string Data(const std::string& name) { return std::string(DLB_REPORT_TEST_DATA) + "/" + name; }

MergedRuns Runs(const std::vector<Case>& cases, const std::string& context_json = "") {
  return Merge({ParseBenchmarkJson(testing::CasesJson(cases, "", context_json), "serving.json")});
}

// A roofline object of a device with `peak` FLOP/s and `bw` bytes/s (ridge: peak / bw).
std::string Roof(double peak, double bw) {
  char obj[256];
  std::snprintf(obj, sizeof obj,
                R"("roofline": {"bound": "memory", "roof_flop_per_s": %.17g,)"
                R"( "compute_peak_flop_per_s": %.17g, "mem_bw_bytes_per_s": %.17g, "bytes": 1e6})",
                bw, peak, bw);
  return obj;
}

// A decode step of `model` at batch `bs`, context 2048, taking `ms` in every repetition.
Case Decode(const std::string& device, const std::string& backend, int bs, double ms,
            std::vector<std::pair<std::string, double>> counters = {},
            const std::string& result_json = "", const std::string& dt = "bf16",
            const std::string& model = "llama3_8b") {
  Case c{"infer/" + device + "/" + backend + "/" + model +
             "/phase:decode/bs:" + std::to_string(bs) + "/ctx:2048/dt:" + dt,
         ms * 1e3, std::move(counters), model, result_json};
  c.spread = 0;  // every repetition the same: the median is `ms`
  return c;
}

const DecodeCurve* CurveOf(const Serving& s, const std::string& device, const std::string& dt) {
  for (const DecodeCurve& c : s.curves)
    if (c.device == device && c.dt == dt) return &c;
  return nullptr;
}

const Table* TableTitled(const Section& s, const std::string& start) {
  for (const Table& t : s.tables)
    if (t.title.rfind(start, 0) == 0) return &t;
  return nullptr;
}

size_t ColumnOf(const Table& t, const std::string& title) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].title == title) return i;
  return t.columns.size();
}

std::string Notes(const Section& s) {
  std::string all;
  for (const std::string& n : s.notes) all += n + "\n";
  return all;
}

TEST(ReportServing, ADefaultTierCpuRunReadsAsOneCurvePerDtypeBelowItsRidge) {
  const MergedRuns runs = Merge(ReadBenchmarkFiles({Data("infer_default.json")}));
  const Serving s = ComputeServing(runs);
  EXPECT_TRUE(s.any);
  EXPECT_FALSE(s.peer);
  ASSERT_EQ(s.curves.size(), 2u) << "f32 and bf16 decode; the prefill cases are no curve";
  const DecodeCurve* f32 = CurveOf(s, "cpu", "f32");
  ASSERT_NE(f32, nullptr);
  EXPECT_EQ(f32->model, "tiny");
  EXPECT_EQ(f32->backend, "onednn");
  EXPECT_EQ(f32->ctx, "512");
  ASSERT_EQ(f32->points.size(), 2u);
  EXPECT_EQ(f32->points[0].bs, 1);
  EXPECT_EQ(f32->points[1].bs, 8);
  // The file's step at B 1: 132.69 us, 1 / that = 7,536 tokens/s.
  EXPECT_NEAR(f32->points[0].tpot_s, 132.69026953125e-6, 1e-12);
  EXPECT_NEAR(f32->points[0].tokens_per_s, 7536.35, 0.01);
  EXPECT_NEAR(f32->points[0].pct_mem_bw, 315.99, 0.01);
  EXPECT_NEAR(f32->points[1].flop_per_byte, 1.5307, 1e-4);
  // The roofline's f32 peak over the triad bandwidth: 305.3 G / 1.727 G = 176.8 FLOP/byte.
  EXPECT_NEAR(f32->ridge, 305343278680.9563 / 1726654347.5044866, 1e-6);
  EXPECT_EQ(f32->rule, KneeRule::kRidge);
  EXPECT_TRUE(std::isnan(f32->knee_bs)) << "1.5 FLOP/byte is far below the ridge";
  // Every step is well inside every budget: the largest batch measured, 8.
  for (double bs : f32->budget_bs) EXPECT_EQ(bs, 8);
  EXPECT_EQ(f32->energy_why, "not available (no /sys/class/powercap)");
  EXPECT_TRUE(s.batch_one.empty()) << "a CPU-only run";

  const std::vector<Section> sections = ServingSections(s);
  ASSERT_EQ(sections.size(), 1u);
  const std::string notes = Notes(sections[0]);
  EXPECT_NE(notes.find("(CPU only)"), std::string::npos) << notes;
  EXPECT_NE(notes.find("CPU: not available (no /sys/class/powercap)"), std::string::npos) << notes;
  const Table* frontier = TableTitled(sections[0], "tiny on the CPU");
  ASSERT_NE(frontier, nullptr);
  EXPECT_EQ(frontier->rows.size(), 4u);
  EXPECT_EQ(ColumnOf(*frontier, "vs PyTorch"), frontier->columns.size()) << "no peer, no column";
  const Table* knee = TableTitled(sections[0], "Where decode turns compute-bound");
  ASSERT_NE(knee, nullptr);
  ASSERT_EQ(knee->rows.size(), 2u);
  EXPECT_EQ(CellText(knee->rows[0][ColumnOf(*knee, "compute-bound from B")]), "not at B ≤ 8");
  EXPECT_EQ(CellText(knee->rows[0][ColumnOf(*knee, "≤ 20.0 ms")]), "8+");
  EXPECT_EQ(CellText(knee->rows[1][ColumnOf(*knee, "by")]), "the ridge, 1199 FLOP/byte");

  // In the whole report, on the first screen, in Markdown and HTML.
  const Document doc = FullReport(runs, {"infer_default.json"});
  bool found = false;
  for (const Section& sec : doc.sections)
    if (sec.id == "serving") {
      found = true;
      EXPECT_FALSE(sec.details);
    }
  EXPECT_TRUE(found);
  EXPECT_NE(RenderMarkdown(doc).find("tiny on the CPU: decode, time per output token"),
            std::string::npos);
  EXPECT_NE(RenderHtml(doc).find("id=\"serving\""), std::string::npos);
}

TEST(ReportServing, TheKneeIsTheFirstBatchPastTheRidgeAndTheBudgetsTheLargestWithinThem) {
  // GPU: ridge 1e15 / 4e12 = 250 FLOP/byte. Decode at B 1..256, intensity about B; the step grows
  // once the batch passes the ridge.
  const std::string roof = Roof(1e15, 4e12);
  const MergedRuns runs =
      Runs({Decode("gpu", "native", 1, 4.0, {{"flop_per_byte", 1}}, roof),
            Decode("gpu", "native", 32, 6.0, {{"flop_per_byte", 31}}, roof),
            Decode("gpu", "native", 128, 15.0, {{"flop_per_byte", 120}}, roof),
            Decode("gpu", "native", 256, 28.0, {{"flop_per_byte", 260}}, roof),
            Decode("gpu", "native", 512, 60.0, {{"flop_per_byte", 500}}, roof)});
  const Serving s = ComputeServing(runs);
  ASSERT_EQ(s.curves.size(), 1u);
  const DecodeCurve& c = s.curves[0];
  EXPECT_DOUBLE_EQ(c.ridge, 250);
  EXPECT_EQ(c.rule, KneeRule::kRidge);
  EXPECT_EQ(c.knee_bs, 256);
  EXPECT_EQ(c.budget_bs[0], 128);  // 15 ms within 20 ms; 28 ms is not
  EXPECT_EQ(c.budget_bs[1], 256);
  EXPECT_EQ(c.budget_bs[2], 512);
  // No tokens_per_s counter: B over the step's time.
  EXPECT_NEAR(c.points[2].tokens_per_s, 128 / 15e-3, 1e-6);
}

TEST(ReportServing, WithoutRooflineCountersTheKneeIsWhereTokensStopGrowingNearLinearly) {
  // Tokens/s: 100, 200, 400 (each doubling the batch doubles it), then 8 at 20 ms: 400 again.
  // One case has no flop_per_byte, so the ridge cannot judge the curve.
  const std::string roof = Roof(1e12, 1e11);
  const MergedRuns runs = Runs({Decode("cpu", "onednn", 1, 10, {{"flop_per_byte", 1}}, roof),
                                Decode("cpu", "onednn", 2, 10, {}, roof),
                                Decode("cpu", "onednn", 4, 10), Decode("cpu", "onednn", 8, 20)});
  const Serving s = ComputeServing(runs);
  ASSERT_EQ(s.curves.size(), 1u);
  EXPECT_EQ(s.curves[0].rule, KneeRule::kScaling);
  EXPECT_EQ(s.curves[0].knee_bs, 8);
  // 100 -> 140 tokens/s from B 1 to 2 is 40% of the batch's growth: below half, the knee.
  std::vector<DecodePoint> pts(2);
  pts[0].bs = 1;
  pts[0].tokens_per_s = 100;
  pts[1].bs = 2;
  pts[1].tokens_per_s = 140;
  KneeRule rule;
  EXPECT_EQ(ComputeBoundBatch(pts, std::nan(""), &rule), 2);
  EXPECT_EQ(rule, KneeRule::kScaling);
  pts[1].tokens_per_s = 160;
  EXPECT_TRUE(std::isnan(ComputeBoundBatch(pts, std::nan(""), &rule)));
}

TEST(ReportServing, ASingleBatchWithoutRooflineHasNoKneeAndMeetsOnlyTheBudgetsItIsWithin) {
  const MergedRuns runs = Runs({Decode("cpu", "onednn", 1, 30)});
  const Serving s = ComputeServing(runs);
  ASSERT_EQ(s.curves.size(), 1u);
  const DecodeCurve& c = s.curves[0];
  EXPECT_EQ(c.rule, KneeRule::kNone);
  EXPECT_TRUE(std::isnan(c.knee_bs));
  EXPECT_TRUE(std::isnan(c.budget_bs[0]));
  EXPECT_EQ(c.budget_bs[1], 1);
  EXPECT_EQ(c.energy_why, "the run read no CPU energy (no cpu_energy in its context)");
  const std::vector<Section> sections = ServingSections(s);
  ASSERT_EQ(sections.size(), 1u);
  const Table* knee = TableTitled(sections[0], "Where decode turns compute-bound");
  ASSERT_NE(knee, nullptr);
  EXPECT_EQ(CellText(knee->rows[0][ColumnOf(*knee, "compute-bound from B")]), "-");
  EXPECT_EQ(CellText(knee->rows[0][ColumnOf(*knee, "by")]), "one batch, no roofline");
  EXPECT_EQ(CellText(knee->rows[0][ColumnOf(*knee, "≤ 20.0 ms")]), "none");
  EXPECT_TRUE(sections[0].charts.empty()) << "one point is no curve";
}

TEST(ReportServing, CpuAgainstGpuAtBatchOneTakesEachDevicesFastestBackend) {
  const MergedRuns runs = Runs({Decode("cpu", "onednn", 1, 50), Decode("gpu", "native", 1, 5),
                                Decode("gpu", "libtorch", 1, 6), Decode("gpu", "native", 8, 6),
                                // Another dtype on the CPU alone pairs with nothing.
                                Decode("cpu", "onednn", 1, 80, {}, "", "f32")});
  const Serving s = ComputeServing(runs);
  ASSERT_EQ(s.batch_one.size(), 1u);
  const BatchOneRow& r = s.batch_one[0];
  EXPECT_EQ(r.model, "llama3_8b");
  EXPECT_EQ(r.dt, "bf16");
  EXPECT_EQ(r.gpu_backend, "native");
  EXPECT_NEAR(r.cpu_tpot_s / r.gpu_tpot_s, 10, 1e-6);
  // The curves: model by model, the CPU's first.
  ASSERT_EQ(s.curves.size(), 4u);
  EXPECT_EQ(s.curves[0].device, "cpu");
  EXPECT_EQ(s.curves.back().device, "gpu");
  const std::vector<Section> sections = ServingSections(s);
  const Table* one = TableTitled(sections[0], "CPU against GPU at batch 1");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(CellText(one->rows[0][ColumnOf(*one, "GPU speedup")]), "10x");
  // A chart per model and device of the curves with two batches or more: the GPU's native one.
  ASSERT_EQ(sections[0].charts.size(), 1u);
  const Chart& chart = sections[0].charts[0];
  EXPECT_EQ(chart.title.rfind("llama3_8b, GPU", 0), 0u) << chart.title;
  ASSERT_EQ(chart.series.size(), 1u);
  ASSERT_EQ(chart.series[0].points.size(), 2u);
  EXPECT_NEAR(chart.series[0].points[1].first, 8 / 6e-3, 1e-6);  // tokens/s at B 8
  EXPECT_NEAR(chart.series[0].points[1].second, 6, 1e-9);        // ms per token
}

TEST(ReportServing, ThePeerStandsBesideEachRowAndEnergyPerTokenWhereCounted) {
  const MergedRuns runs =
      Runs({Decode("gpu", "native", 1, 4, {{"energy_per_item_j", 2.5}, {"pct_mem_bw", 88}}),
            Decode("gpu", "native", 8, 5, {{"energy_per_item_j", 0.4}}),
            Decode("gpu", "pytorch", 1, 5), Decode("cpu", "onednn", 1, 40)},
           R"j("monitor": "nvml 580.95.05", "cpu_energy": "rapl package-0 (powercap)")j");
  const Serving s = ComputeServing(runs);
  EXPECT_TRUE(s.peer);
  ASSERT_EQ(s.curves.size(), 2u) << "the peer's case is no curve of its own";
  const DecodeCurve* gpu = CurveOf(s, "gpu", "bf16");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->backend, "native");
  EXPECT_NEAR(gpu->points[0].peer_tokens_per_s, 200, 1e-6);
  EXPECT_TRUE(std::isnan(gpu->points[1].peer_tokens_per_s)) << "the peer has no batch 8";
  EXPECT_DOUBLE_EQ(gpu->points[0].energy_per_token_j, 2.5);
  EXPECT_EQ(gpu->energy_why, "");
  // The CPU case has none although the context says RAPL was read: the reason is its status.
  EXPECT_EQ(CurveOf(s, "cpu", "bf16")->energy_why, "rapl package-0 (powercap)");
  const std::vector<Section> sections = ServingSections(s);
  const Table* t = TableTitled(sections[0], "llama3_8b on the GPU");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(CellText(t->rows[0][ColumnOf(*t, "vs PyTorch")]), "1.25x");
  EXPECT_EQ(CellText(t->rows[1][ColumnOf(*t, "vs PyTorch")]), "-");
  EXPECT_EQ(CellText(t->rows[0][ColumnOf(*t, "energy per token")]), "2.5 J");
  EXPECT_EQ(CellText(t->rows[1][ColumnOf(*t, "energy per token")]), "400 mJ");
  EXPECT_EQ(CellText(t->rows[0][ColumnOf(*t, "% of memory roof")]), "88.0%");
  EXPECT_EQ(CellText(t->rows[1][ColumnOf(*t, "% of memory roof")]), "-");
  EXPECT_NE(Notes(sections[0]).find("PyTorch: the peer's decode"), std::string::npos);
}

TEST(ReportServing, AReasonInTheLabelIsTheRowsReasonOverTheContexts) {
  const std::string why =
      "the energy counter updated 1 time in the 0.080 s window, too few to measure it within 5%";
  Case short_window = Decode("gpu", "native", 1, 4);
  short_window.label = "decode step | verified | sm 1980 MHz | no energy: " + why +
                       " | stalled: slowest sample 1.3x the fastest";
  // The CPU's label has no reason: its context's status stands.
  Case cpu = Decode("cpu", "onednn", 1, 40);
  cpu.label = "decode step | verified";
  const MergedRuns runs =
      Runs({short_window, Decode("gpu", "native", 8, 5), cpu},
           R"j("monitor": "nvml 580.95.05", "cpu_energy": "rapl package-0 (powercap)")j");
  const Serving s = ComputeServing(runs);
  EXPECT_EQ(CurveOf(s, "gpu", "bf16")->energy_why, why);
  EXPECT_EQ(CurveOf(s, "cpu", "bf16")->energy_why, "rapl package-0 (powercap)");
  // The report's serving section says it once, without the label's parts after it.
  for (const Section& sec : FullReport(runs, {"serving.json"}).sections) {
    if (sec.id != "serving") continue;
    const std::string notes = Notes(sec);
    EXPECT_NE(notes.find("GPU: " + why + "."), std::string::npos) << notes;
    EXPECT_NE(notes.find("CPU: rapl package-0 (powercap)"), std::string::npos) << notes;
    EXPECT_EQ(notes.find("device monitor"), std::string::npos) << notes;
    EXPECT_EQ(notes.find("stalled"), std::string::npos) << notes;
    return;
  }
  ADD_FAILURE() << "no serving section";
}

TEST(ReportServing, TwoSetupsOfOneCaseAreTwoCurvesNeverOnePooled) {
  const std::vector<Case> cases = {Decode("cpu", "onednn", 1, 40), Decode("cpu", "onednn", 8, 60)};
  const MergedRuns runs = Merge(
      {ParseBenchmarkJson(testing::CasesJson(cases, "", R"("onednn_version": "2.6.3")"), "a.json"),
       ParseBenchmarkJson(testing::CasesJson(cases, "", R"("onednn_version": "3.7.0")"),
                          "b.json")});
  const Serving s = ComputeServing(runs);
  ASSERT_EQ(s.curves.size(), 2u);
  EXPECT_NE(s.curves[0].setup, s.curves[1].setup);
  for (const DecodeCurve& c : s.curves) {
    EXPECT_NE(c.setup.find("onednn"), std::string::npos) << c.setup;
    EXPECT_EQ(c.points.size(), 2u) << c.setup;
  }
}

TEST(ReportServing, NoInferenceCaseNoSectionAndPrefillAloneSaysSo) {
  const MergedRuns gemm = Runs({Case{"gemm/cpu/onednn/square.64/dt:f32", 10, {}}});
  EXPECT_FALSE(ComputeServing(gemm).any);
  EXPECT_TRUE(ServingSections(ComputeServing(gemm)).empty());
  for (const Section& sec : FullReport(gemm, {"g.json"}).sections) EXPECT_NE(sec.id, "serving");
  const MergedRuns prefill =
      Runs({Case{"infer/cpu/onednn/tiny/phase:prefill/bs:1/ctx:128/dt:f32", 100, {}, "tiny"}});
  const std::vector<Section> sections = ServingSections(ComputeServing(prefill));
  ASSERT_EQ(sections.size(), 1u);
  EXPECT_TRUE(sections[0].tables.empty());
  EXPECT_NE(Notes(sections[0]).find("No decode case was measured"), std::string::npos);
}

}  // namespace
}  // namespace dlb::report
