// Scaling over the GPU count (ComputeGpuScaling: multi-GPU training steps and collectives) on the
// synthetic hosts of data/gpus_h{2,4,8}.json (and the one-GPU run of data/gpus_h1.json), and the
// timing-fidelity counters (stalled, stdrel, stdrel_converged) in summary and compare on
// data/fidelity_{base,new}.json. The rendering is also held by the golden outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/compare.h"
#include "tools/report/analyses/gpu_scaling.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/summary.h"
#include "tools/report/analyses/sweep.h"
#include "tools/report/analyses/train.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report {
namespace {

std::string Data(const std::string& name) { return std::string(DLB_REPORT_TEST_DATA) + "/" + name; }

MergedRuns Hosts() {
  return Merge(
      ReadBenchmarkFiles({Data("gpus_h2.json"), Data("gpus_h4.json"), Data("gpus_h8.json")}));
}

const Table* FindTable(const Section& s, const std::string& title) {
  for (const Table& t : s.tables)
    if (t.title == title) return &t;
  return nullptr;
}

int Column(const Table& t, const std::string& title) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].title == title) return int(i);
  return -1;
}

const Section* FindSection(const Document& d, const std::string& title) {
  for (const Section& s : d.sections)
    if (s.title == title) return &s;
  return nullptr;
}

// The three files hold the points of one curve: gpus 1 and 2 from the 2-GPU host, 4 and 8 from the
// others. With the gpus:1 point the efficiency is (thr(n) / n) / thr(1), not the case's counter.
TEST(GpuScaling, CurvesMergeHostsAndUseTheOneGpuPointWhereThereIsOne) {
  GpuScaling g = ComputeGpuScaling(Hosts());
  ASSERT_EQ(g.steps.size(), 2u);
  const GpuCurve& b256 = g.steps[0];
  EXPECT_EQ(b256.curve,
            "train/gpu/libtorch/resnet18/bs:256/dt:amp_bf16/fmt:nhwc/pass:train/graph:1");
  EXPECT_EQ(b256.model, "resnet18");
  EXPECT_EQ(b256.config, "dt:amp_bf16/fmt:nhwc/pass:train/graph:1");
  EXPECT_DOUBLE_EQ(b256.bs, 256);
  EXPECT_TRUE(b256.one_gpu);
  ASSERT_EQ(b256.points.size(), 4u);
  const double one = 12300;
  const double want[] = {1, 0.9675, 0.951 * 1.01, 0.935};  // the 4-GPU host's steps ran 1% faster
  const double gpus[] = {1, 2, 4, 8};
  for (size_t i = 0; i < 4; ++i) {
    const GpuPoint& p = b256.points[i];
    EXPECT_DOUBLE_EQ(p.gpus, gpus[i]);
    EXPECT_NEAR(p.throughput, one * gpus[i] * want[i], 1e-6);
    EXPECT_NEAR(p.per_gpu, p.throughput / p.gpus, 1e-6);
    EXPECT_NEAR(p.efficiency, want[i], 1e-12);
    EXPECT_EQ(p.source, EfficiencySource::kOneGpuPoint);
  }
  // The 4-GPU point's own counter says 0.951 (its process's one-GPU step); the curve's gpus:1
  // point wins.
  EXPECT_NEAR(b256.points[2].single_gpu, one * 1.01, 1e-9);
  EXPECT_DOUBLE_EQ(b256.points[3].exposed_comm_s, 1.2e-3);
  EXPECT_TRUE(std::isnan(b256.points[0].exposed_comm_s));  // the one-GPU step writes none
  // No gpus:1 point anywhere: each case's scaling_efficiency.
  const GpuCurve& b64 = g.steps[1];
  EXPECT_FALSE(b64.one_gpu);
  ASSERT_EQ(b64.points.size(), 3u);
  const double counter[] = {0.88, 0.86, 0.83};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(b64.points[i].efficiency, counter[i]);
    EXPECT_EQ(b64.points[i].source, EfficiencySource::kCounter);
  }
}

// A one-GPU run's ordinary step (no gpus key) given beside the multi-GPU runs: the 1-GPU point of
// the curve that has no gpus:1 point, the efficiencies against it, and said so.
TEST(GpuScaling, TheOneGpuStepIsTheOneGpuPointOfACurveWithoutOne) {
  const MergedRuns m = Merge(ReadBenchmarkFiles(
      {Data("gpus_h2.json"), Data("gpus_h4.json"), Data("gpus_h8.json"), Data("gpus_h1.json")}));
  GpuScaling g = ComputeGpuScaling(m);
  ASSERT_EQ(g.steps.size(), 2u);  // bs 128 has no multi-GPU twin: no curve
  // bs 256 has its own gpus:1 point: it wins over the one-GPU step (12000 images/s).
  const GpuCurve& b256 = g.steps[0];
  EXPECT_TRUE(b256.one_gpu);
  EXPECT_EQ(b256.one_gpu_step, "");
  ASSERT_EQ(b256.points.size(), 4u);
  EXPECT_NE(b256.points[0].name.find("/gpus:1/"), std::string::npos);
  EXPECT_DOUBLE_EQ(b256.points[0].throughput, 12300);
  EXPECT_EQ(b256.points[3].source, EfficiencySource::kOneGpuPoint);
  // bs 64: the curve starts at the one-GPU step (11220 images/s, 2% above what the multi-GPU
  // processes timed), not at 2 GPUs.
  const std::string step =
      "train/gpu/libtorch/resnet18/bs:64/dt:amp_bf16/fmt:nhwc/pass:train/graph:1/manual_time";
  const GpuCurve& b64 = g.steps[1];
  EXPECT_TRUE(b64.one_gpu);
  EXPECT_EQ(b64.one_gpu_step, step);
  ASSERT_EQ(b64.points.size(), 4u);
  EXPECT_EQ(b64.points[0].name, step);
  EXPECT_DOUBLE_EQ(b64.points[0].gpus, 1);
  EXPECT_NEAR(b64.points[0].throughput, 11220, 1e-9);
  // The counters are against 11000 images/s (11110 on the 4-GPU host); now all are against 11220.
  const double against_11220[] = {1, 0.88 * 11000 / 11220, 0.86 * 11110 / 11220,
                                  0.83 * 11000 / 11220};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(b64.points[i].efficiency, against_11220[i], 1e-12);
    EXPECT_EQ(b64.points[i].source, EfficiencySource::kOneGpuStep);
  }
  std::vector<Section> s = GpuScalingSections(g);
  const Table& t = s.at(0).tables.at(0);
  const int at1 = Column(t, "efficiency at 1 GPU"), at2 = Column(t, "efficiency at 2 GPUs");
  const int from = Column(t, "efficiency from");
  EXPECT_EQ(t.rows.at(1)[at1].Text(), "1");
  EXPECT_EQ(t.rows[1][at2].Text(), FormatNumber(0.88 * 11000 / 11220, 3));
  EXPECT_EQ(t.rows[1][from].Text(), "one-GPU step");
  EXPECT_EQ(t.rows[0][from].Text(), "gpus:1 point");
  const Section& curve = s.at(2);
  ASSERT_EQ(curve.notes.size(), 1u);
  EXPECT_NE(curve.notes[0].find("one-GPU step " + step), std::string::npos);
  EXPECT_TRUE(s[1].notes.empty());
  EXPECT_EQ(curve.tables.at(0).rows.at(0)[0].Text(), "1");
  EXPECT_EQ(curve.charts.at(0).series.at(1).points.front(), std::make_pair(1.0, 11220.0));
  // One-GPU steps alone make no curve.
  EXPECT_TRUE(ComputeGpuScaling(Merge({ReadBenchmarkFile(Data("gpus_h1.json"))})).empty());
}

// A transformer's curve counts sequences and says its tokens/s per GPU (sequences x seq); a
// CNN's counts images.
TEST(GpuScaling, ATransformersCurveReadsInSequencesAndTokens) {
  GpuScaling g;
  GpuCurve c;
  c.curve = "train/gpu/libtorch/gpt2s/bs:8/dt:amp_bf16/pass:train/graph:1/seq:1024";
  c.model = "gpt2s";
  c.bs = 8;
  GpuPoint p;
  p.name = c.curve + "/gpus:2";
  p.gpus = 2;
  p.time_ns = 25e6;
  p.throughput = 640;
  p.per_gpu = 320;
  p.efficiency = 0.93;
  c.points.push_back(p);
  g.steps.push_back(c);
  const Section curve = GpuScalingSections(g).at(1);
  const Table& t = curve.tables.at(0);
  ASSERT_GE(Column(t, "sequences/s per GPU"), 0);
  const int tokens = Column(t, "tokens/s per GPU");
  ASSERT_GE(tokens, 0);
  EXPECT_DOUBLE_EQ(*t.rows.at(0)[size_t(tokens)].value, 320.0 * 1024);
  EXPECT_EQ(Column(t, "images/s per GPU"), -1);
  EXPECT_EQ(curve.charts.at(0).y_label, "sequences/s (all GPUs)");
  g.steps[0].curve = "train/gpu/libtorch/resnet18/bs:64/dt:amp_bf16/fmt:nhwc/pass:train/graph:1";
  const std::vector<Section> cnn_sections = GpuScalingSections(g);
  const Table& cnn = cnn_sections.at(1).tables.at(0);
  EXPECT_GE(Column(cnn, "images/s per GPU"), 0);
  EXPECT_EQ(Column(cnn, "tokens/s per GPU"), -1);
}

TEST(GpuScaling, CollectivesGroupByCollectiveDtypeAndInplaceWithAColumnPerGpuCount) {
  GpuScaling g = ComputeGpuScaling(Hosts());
  ASSERT_EQ(g.collectives.size(), 3u);
  const CollectiveCurve& ar = g.collectives[0];
  EXPECT_EQ(ar.key, "comm/gpu/nccl/all_reduce/dt:bf16");
  EXPECT_EQ(ar.collective, "all_reduce");
  EXPECT_EQ(ar.gpus, (std::vector<double>{2, 4, 8}));
  ASSERT_EQ(ar.points.size(), 3u);
  EXPECT_DOUBLE_EQ(ar.points[1].bytes, 64 << 20);
  EXPECT_DOUBLE_EQ(ar.points[1].busbw.at(4), 280e9);
  EXPECT_NEAR(ar.points[1].algbw.at(4), 280e9 / 1.5, 1);
  EXPECT_TRUE(ar.points[0].doubtful.at(8));
  EXPECT_FALSE(ar.points[0].doubtful.at(2));
  EXPECT_EQ(g.collectives[1].key, "comm/gpu/nccl/all_gather/dt:bf16");
  EXPECT_EQ(g.collectives[1].gpus, (std::vector<double>{2, 8}));
  EXPECT_EQ(g.collectives[2].key, "comm/gpu/nccl/all_reduce/dt:bf16/inplace:1");
  EXPECT_EQ(g.collectives[2].points.size(), 1u);

  std::vector<Section> s = GpuScalingSections(g);
  ASSERT_EQ(s.size(), 1u + 2 + 3);  // the summary, a section per step curve, per collective
  const Section& allreduce = s[3];
  EXPECT_EQ(allreduce.title, "Collective: comm/gpu/nccl/all_reduce/dt:bf16");
  const Table* bus = FindTable(allreduce, "comm/gpu/nccl/all_reduce/dt:bf16: busbw (GB/s)");
  ASSERT_NE(bus, nullptr);
  ASSERT_EQ(bus->columns.size(), 4u);  // size, 2, 4 and 8 GPUs
  EXPECT_EQ(bus->columns[3].title, "8 GPUs");
  ASSERT_EQ(bus->rows.size(), 3u);
  EXPECT_EQ(bus->rows[0][0].Text(), "1 MiB");
  EXPECT_EQ(bus->rows[2][1].Text(), "345");
  EXPECT_EQ(bus->rows[0][3].Text(), "⚠ 30");  // mistrusted
  ASSERT_EQ(allreduce.charts.size(), 1u);
  EXPECT_EQ(allreduce.charts[0].series.size(), 3u);  // one per GPU count
  EXPECT_TRUE(allreduce.charts[0].log_x);
  // all_gather was not run on 4 GPUs: no column for it.
  EXPECT_EQ(s[4].tables[0].columns.size(), 3u);
}

TEST(GpuScaling, TheSummarySaysWhereEachEfficiencyComesFrom) {
  std::vector<Section> s = GpuScalingSections(ComputeGpuScaling(Hosts()));
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s[0].title, "GPU scaling");
  ASSERT_EQ(s[0].tables.size(), 1u);
  const Table& t = s[0].tables[0];
  ASSERT_EQ(t.rows.size(), 2u);
  const int at1 = Column(t, "efficiency at 1 GPU"), at8 = Column(t, "efficiency at 8 GPUs");
  const int from = Column(t, "efficiency from"),
            comm = Column(t, "exposed comm per step (most GPUs)");
  ASSERT_GE(at1, 0);
  ASSERT_GE(at8, 0);
  ASSERT_GE(from, 0);
  ASSERT_GE(comm, 0);
  EXPECT_EQ(t.rows[0][at1].Text(), "1");
  EXPECT_EQ(t.rows[0][at8].Text(), "0.935");
  EXPECT_EQ(t.rows[0][from].Text(), "gpus:1 point");
  EXPECT_EQ(t.rows[1][at1].Text(), "");  // bs 64 has no one-GPU case
  EXPECT_EQ(t.rows[1][at8].Text(), "0.83");
  EXPECT_EQ(t.rows[1][from].Text(), "case's counter");
  EXPECT_EQ(t.rows[1][comm].Text(), FormatTime(1.1e6));
  // Per curve: measured throughput and linear scaling from the one-GPU step.
  ASSERT_EQ(s[1].charts.size(), 1u);
  ASSERT_EQ(s[1].charts[0].series.size(), 2u);
  EXPECT_EQ(s[1].charts[0].series[1].name, "linear");
  EXPECT_DOUBLE_EQ(s[1].charts[0].series[1].points.back().second, 8 * 12300.0);
  // Without a gpus:1 point the line starts from the one-GPU step a case measured.
  ASSERT_EQ(s[2].charts[0].series.size(), 2u);
  EXPECT_EQ(s[2].charts[0].series[1].points.front(), std::make_pair(1.0, 11000.0));
}

TEST(GpuScaling, NothingWithAGpusKeySaysSoInOneLine) {
  MergedRuns m = Merge({ReadBenchmarkFile(Data("dlbench_v2_base.json"))});
  EXPECT_TRUE(ComputeGpuScaling(m).empty());
  const Document d = SweepDocument(m, {"x"}, "gpus");
  EXPECT_EQ(d.title, "dlbench GPU scaling");
  ASSERT_EQ(d.sections.size(), 1u);
  ASSERT_EQ(d.sections[0].notes.size(), 1u);
  EXPECT_NE(d.sections[0].notes[0].find("No GPU scaling"), std::string::npos);
  // The full report leaves the part out.
  const Document r = FullReport(m, {"x"});
  EXPECT_EQ(FindSection(r, "GPU scaling"), nullptr);
  EXPECT_EQ(FindSection(r, "GPU scaling details"), nullptr);
}

TEST(GpuScaling, TheFullReportKeepsTheSummaryOnTheFirstScreen) {
  const Document r = FullReport(Hosts(), {"h2", "h4", "h8"});
  const Section* head = FindSection(r, "GPU scaling");
  const Section* details = FindSection(r, "GPU scaling details");
  ASSERT_NE(head, nullptr);
  ASSERT_NE(details, nullptr);
  EXPECT_FALSE(head->details);
  EXPECT_TRUE(details->details);
  EXPECT_LT(head, details);
  EXPECT_EQ(details->tables.size(), 2u + 3 * 2);  // a table per step curve, two per collective
  EXPECT_EQ(details->charts.size(), 2u + 3);
}

// Steps on several GPUs have a per-GPU bs: no one-device figure takes them; gpus:1 stays.
TEST(GpuScaling, TrainFiguresLeaveOutStepsOnSeveralGpus) {
  TrainResult t = ComputeTrain(Hosts());
  ASSERT_EQ(t.cases.size(), 1u);
  EXPECT_NE(t.cases[0].name.find("/gpus:1/"), std::string::npos);
  bool noted = false;
  for (const std::string& n : t.notes)
    noted = noted || n.find("6 case(s) on more than one GPU") != std::string::npos;
  EXPECT_TRUE(noted);
}

// ---- timing fidelity ----

// The family's summary table (a copy: the sections are temporaries).
Table FamilyTable(const std::vector<Section>& s, const std::string& title) {
  for (const Section& x : s)
    if (x.title == title) return x.tables.at(0);
  ADD_FAILURE() << title << " missing";
  return {};
}

TEST(Fidelity, SummaryShowsStdrelWithConvergenceAndStalledAsYesOrBlank) {
  MergedRuns base = Merge({ReadBenchmarkFile(Data("fidelity_base.json"))});
  MergedRuns now = Merge({ReadBenchmarkFile(Data("fidelity_new.json"))});
  const Table b = FamilyTable(SummarySections(ComputeSummary(base)), "Summary: gemm");
  const int stdrel = Column(b, "stdrel"), stalled = Column(b, "stalled");
  ASSERT_GE(stdrel, 0);
  ASSERT_GE(stalled, 0);
  EXPECT_EQ(Column(b, std::string(schema::kStdrelConverged)), -1);  // folded into stdrel
  ASSERT_EQ(b.rows.size(), 3u);
  EXPECT_EQ(b.rows[0][stdrel].Text(), "0.40%");
  EXPECT_EQ(b.rows[1][stdrel].Text(), "⚠ 3.10% (not converged)");
  EXPECT_EQ(b.rows[1][stdrel].tone, Tone::kWarn);
  EXPECT_EQ(b.rows[2][stdrel].Text(), "-");  // the CPU case has no counters
  EXPECT_EQ(b.rows[0][stalled].Text(), "");
  const Table n = FamilyTable(SummarySections(ComputeSummary(now)), "Summary: gemm");
  // Stalled in one repetition of three is stalled (the median would say 0).
  EXPECT_EQ(n.rows[0][Column(n, "stalled")].Text(), "yes");
  EXPECT_EQ(n.rows[1][Column(n, "stalled")].Text(), "");
  // A family without them has no such columns.
  const Table g = FamilyTable(
      SummarySections(ComputeSummary(Merge({ReadBenchmarkFile(Data("dlbench_v2_base.json"))}))),
      "Summary: gemm");
  EXPECT_EQ(Column(g, "stalled"), -1);
  EXPECT_EQ(Column(g, "stdrel"), -1);
}

TEST(Fidelity, CompareFlagsRowsWhereEitherSideStalled) {
  MergedRuns base = Merge({ReadBenchmarkFile(Data("fidelity_base.json"))});
  MergedRuns now = Merge({ReadBenchmarkFile(Data("fidelity_new.json"))});
  CompareResult r = Compare(base, now, {});
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_FALSE(r.rows[0].base_stalled);
  EXPECT_TRUE(r.rows[0].new_stalled);
  EXPECT_FALSE(r.rows[1].base_stalled || r.rows[1].new_stalled);
  EXPECT_TRUE(r.rows[2].new_stalled);
  EXPECT_EQ(r.stalled, 2);
  const Document d = CompareDocument(r, {}, "b", "n");
  bool note = false;
  for (const std::string& s : d.notes)
    note = note || s.find("2 row(s) where either side's timing pass stalled") != std::string::npos;
  EXPECT_TRUE(note);
  const Table& t = d.sections.at(0).tables.at(0);
  const int timing = Column(t, "timing");
  ASSERT_GE(timing, 0);
  EXPECT_EQ(t.rows[0][timing].Text(), "⚠ stalled in new");
  EXPECT_EQ(t.rows[1][timing].Text(), "-");
  // No stalled side: no column.
  const Document same = CompareDocument(Compare(base, base, {}), {}, "b", "b");
  EXPECT_EQ(Column(same.sections.at(0).tables.at(0), "timing"), -1);
}

}  // namespace
}  // namespace dlb::report
