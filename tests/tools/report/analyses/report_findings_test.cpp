// The report's findings: throughput cliffs over batch size (and the phase that grew), loader
// starvation, the one line a run on one device gets, and the findings leading the report.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tests/tools/report/report_cases.h"
#include "tools/report/analyses/findings.h"
#include "tools/report/analyses/problems.h"
#include "tools/report/analyses/report.h"
#include "tools/report/render/document.h"

namespace dlb::report {
namespace {

using testing::Case;

MergedRuns Runs(const std::vector<Case>& cases, const std::string& gpu_name = "") {
  return testing::CasesRuns(cases, gpu_name, "findings.json");
}

// A training step per batch size with its phases in seconds per step.
Case Step(const std::string& device, int bs, double step_us, double fwd, double bwd, double opt) {
  return {"train/" + device + "/libtorch/resnet18_cifar/bs:" + std::to_string(bs) +
              "/dt:f32/fmt:nchw/pass:train",
          step_us,
          {{"fwd_s", fwd}, {"bwd_s", bwd}, {"opt_s", opt}, {"epoch_items", 50000}}};
}

TEST(Findings, ACliffIsFlaggedWithThePhaseThatGrewPerItem) {
  // Images/s: bs 16: 16 / 1 ms = 16 k; bs 32: 32 / 1.6 ms = 20 k; bs 64: 64 / 8 ms = 8 k, a 2.5x
  // drop. Per image from 32 to 64: fwd 15.6 -> 31.3 us, bwd 28.1 -> 93.8 us, opt 3.1 -> 1.6 us.
  MergedRuns m = Runs({Step("cpu", 16, 1000, 300e-6, 600e-6, 100e-6),
                       Step("cpu", 32, 1600, 500e-6, 900e-6, 100e-6),
                       Step("cpu", 64, 8000, 2000e-6, 6000e-6, 100e-6)});
  std::vector<Cliff> cliffs = FindCliffs(m);
  ASSERT_EQ(cliffs.size(), 1u);
  const Cliff& c = cliffs[0];
  EXPECT_EQ(c.curve, "train/cpu/libtorch/resnet18_cifar/bs:*/dt:f32/fmt:nchw/pass:train");
  EXPECT_EQ(c.bs_from, 32);
  EXPECT_EQ(c.bs_to, 64);
  EXPECT_NEAR(c.thr_from / c.thr_to, 2.5, 0.01);
  EXPECT_EQ(c.phase, "bwd_s");
  EXPECT_NEAR(c.phase_from, 900e-6 / 32, 1e-9);
  EXPECT_NEAR(c.phase_to, 6000e-6 / 64, 1e-9);

  // The findings list it, naming the phase and that its figure is per item.
  Section s = FindingsSection(m, ComputeTrain(m), ComputeGpuScaling(m));
  std::string md = RenderMarkdown(Document{"t", {}, {s}});
  EXPECT_NE(md.find("Throughput cliffs"), std::string::npos) << md;
  EXPECT_NE(md.find("32 → 64"), std::string::npos) << md;
  EXPECT_NE(md.find("bwd_s: "), std::string::npos) << md;
  EXPECT_NE(md.find("per item"), std::string::npos) << md;
}

TEST(Findings, ASmoothCurveHasNoCliff) {
  // Images/s: 16 k, 20 k, 12.8 k: the drop from 32 to 64 is 1.56x, under 2x.
  MergedRuns m = Runs({Step("cpu", 16, 1000, 300e-6, 600e-6, 100e-6),
                       Step("cpu", 32, 1600, 500e-6, 900e-6, 100e-6),
                       Step("cpu", 64, 5000, 1500e-6, 3400e-6, 100e-6)});
  EXPECT_TRUE(FindCliffs(m).empty());
  Section s = FindingsSection(m, ComputeTrain(m), ComputeGpuScaling(m));
  std::string md = RenderMarkdown(Document{"t", {}, {s}});
  EXPECT_EQ(md.find("Throughput cliffs"), std::string::npos) << md;
  EXPECT_NE(md.find("No throughput cliff"), std::string::npos) << md;
}

TEST(Findings, ACliffWithoutPhasesNamesNone) {
  // A conv layer: no fwd_s/bwd_s/opt_s counters, and curves of different configs stay apart.
  MergedRuns m = Runs({{"conv/cpu/onednn/l1/bs:1/dt:f32/fmt:nchw/pass:fwd", 100, {}},
                       {"conv/cpu/onednn/l1/bs:2/dt:f32/fmt:nchw/pass:fwd", 900, {}},
                       {"conv/cpu/onednn/l1/bs:1/dt:f32/fmt:nchw/pass:bwd_data", 100, {}},
                       {"conv/cpu/onednn/l1/bs:2/dt:f32/fmt:nchw/pass:bwd_data", 150, {}}});
  std::vector<Cliff> cliffs = FindCliffs(m);
  ASSERT_EQ(cliffs.size(), 1u);
  EXPECT_EQ(cliffs[0].curve, "conv/cpu/onednn/l1/bs:*/dt:f32/fmt:nchw/pass:fwd");
  EXPECT_TRUE(cliffs[0].phase.empty());
  EXPECT_NEAR(cliffs[0].thr_from / cliffs[0].thr_to, 4.5, 0.01);
}

TEST(Findings, ACpuOnlyRunSaysSoOnceAndShowsNoGpuColumn) {
  MergedRuns m = Runs({Step("cpu", 16, 1000, 300e-6, 600e-6, 100e-6),
                       Step("cpu", 32, 1600, 500e-6, 900e-6, 100e-6)},
                      "none: no CUDA device");
  Devices d = DevicesOf(m);
  EXPECT_TRUE(d.cpu);
  EXPECT_FALSE(d.gpu);
  EXPECT_EQ(DevicesLine(d), "CPU only: no GPU in this run (none: no CUDA device).");
  std::string md = RenderMarkdown(FullReport(m, {"findings.json"}));
  size_t details = md.find("## Details");
  ASSERT_NE(details, std::string::npos);
  std::string first = md.substr(0, details);
  EXPECT_EQ(first.find("CPU only"), first.rfind("CPU only")) << "said once";
  EXPECT_EQ(first.find("GPU epoch"), std::string::npos) << first;
  EXPECT_EQ(first.find("GPU time"), std::string::npos) << first;
  EXPECT_NE(first.find("CPU epoch"), std::string::npos) << first;
  // The best batch size by images/s: 32 (20 k/s) over 16 (16 k/s).
  EXPECT_NE(first.find("bs 32 · 20.0 k images/s"), std::string::npos) << first;
  // No empty CPU-vs-GPU sections in the details either.
  EXPECT_EQ(md.find("CPU vs GPU speedups"), std::string::npos);
}

TEST(Findings, AGpuOnlyRunShowsNoCpuColumn) {
  MergedRuns m =
      Runs({Step("gpu", 16, 100, 30e-6, 60e-6, 10e-6), Step("gpu", 32, 160, 50e-6, 90e-6, 10e-6)},
           "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(DevicesLine(DevicesOf(m)), "GPU only: no CPU case in this run.");
  std::string md = RenderMarkdown(FullReport(m, {"findings.json"}));
  std::string first = md.substr(0, md.find("## Details"));
  EXPECT_EQ(first.find("CPU epoch"), std::string::npos) << first;
  EXPECT_NE(first.find("GPU epoch"), std::string::npos) << first;
}

// A "best" batch size that rests on one measured size says so; two sizes make it a choice.
TEST(Findings, ABestBatchSizeOfOneMeasuredSizeSaysSo) {
  MergedRuns one = Runs({Step("gpu", 64, 100, 30e-6, 60e-6, 10e-6)}, "NVIDIA H200");
  std::string md = RenderMarkdown(FullReport(one, {"findings.json"}));
  EXPECT_NE(md.find("bs 64 · 639 k images/s (only size measured)"), std::string::npos) << md;
  MergedRuns two =
      Runs({Step("gpu", 16, 100, 30e-6, 60e-6, 10e-6), Step("gpu", 32, 160, 50e-6, 90e-6, 10e-6)},
           "NVIDIA H200");
  EXPECT_EQ(RenderMarkdown(FullReport(two, {"findings.json"})).find("only size measured"),
            std::string::npos);
}

// A model's rate reads in its own items: samples/s for an MLP, images/s for a CNN.
TEST(Findings, AnMlpReadsInSamplesPerSecond) {
  MergedRuns m = Runs(
      {{"train/gpu/libtorch/mlp/bs:64/dt:f32/pass:train", 100, {{"epoch_items", 60000}}}}, "H200");
  const std::string md = RenderMarkdown(FullReport(m, {"findings.json"}));
  EXPECT_NE(md.find("bs 64 · 639 k samples/s"), std::string::npos) << md;
  EXPECT_EQ(md.find("images/s (the only"), std::string::npos) << md;
}

// A "network" whose cases are all one layer is no network: it stands as its workload, and the
// findings' networks of layers leave it out.
TEST(Findings, ANetworkOfOneLayerIsAWorkload) {
  std::vector<Case> one = {
      {"gemm/cpu/onednn/fc.mlp.1000x512/bs:64/dt:f32", 40, {{"flop_per_s", 1e12}}, "mlp"},
      {"gemm/gpu/cublaslt/fc.mlp.1000x512/bs:64/dt:f32", 8, {{"flop_per_s", 8e12}}, "mlp"}};
  Overview ov = ComputeOverview(Runs(one, "H100"));
  ASSERT_FALSE(ov.rows.empty());
  for (const OverviewRow& r : ov.rows) {
    EXPECT_FALSE(r.network) << r.subject;
    EXPECT_EQ(r.subject, "fc.mlp.1000x512");
  }
  EXPECT_TRUE(NetworkFindings(ov).rows.empty());
  // Two layers make a network.
  one.push_back({"gemm/cpu/onednn/fc.mlp.512x256/bs:64/dt:f32", 12, {{"flop_per_s", 1e12}}, "mlp"});
  one.push_back(
      {"gemm/gpu/cublaslt/fc.mlp.512x256/bs:64/dt:f32", 6, {{"flop_per_s", 3e12}}, "mlp"});
  ov = ComputeOverview(Runs(one, "H100"));
  ASSERT_FALSE(ov.rows.empty());
  EXPECT_TRUE(ov.rows[0].network);
  EXPECT_EQ(ov.rows[0].subject, "mlp");
}

TEST(Findings, StarvationTakesTheLeastStarvedWorkerCount) {
  auto fed = [](int workers, double items, double starvation) {
    return Case{
        "train/gpu/libtorch/resnet18/bs:256/dt:amp_bf16/fmt:nhwc/pass:train/graph:1/"
        "loader:turbojpeg/workers:" +
            std::to_string(workers),
        256.0 / items * 1e6,
        {{"items_per_s", items}, {"alone_items_per_s", 12000}, {"starvation", starvation}}};
  };
  MergedRuns m = Runs({fed(1, 1200, 0.9), fed(16, 10800, 0.1), fed(8, 6000, 0.5)});
  std::vector<FedStep> steps = FedSteps(m);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].model, "resnet18");
  EXPECT_EQ(steps[0].loader, "turbojpeg");
  EXPECT_EQ(steps[0].workers, 16);
  EXPECT_DOUBLE_EQ(steps[0].starvation, 0.1);
  EXPECT_EQ(steps[0].fewest_workers, 1);
  EXPECT_DOUBLE_EQ(steps[0].fewest_starvation, 0.9);
  EXPECT_EQ(steps[0].counts, 3u);
  std::string md = RenderMarkdown(
      Document{"t", {}, {FindingsSection(m, ComputeTrain(m), ComputeGpuScaling(m))}});
  EXPECT_NE(md.find("Loader starvation"), std::string::npos) << md;
  EXPECT_NE(md.find("| 10% |"), std::string::npos) << md;
  EXPECT_NE(md.find("90% (1 worker)"), std::string::npos) << md;
}

// A cell of the column whose key is `key`, in row `row`.
const Cell& At(const Table& t, size_t row, const std::string& key) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].key == key) return t.rows.at(row).at(i);
  ADD_FAILURE() << "no column " << key << " in " << t.title;
  static const Cell none;
  return none;
}

// The networks' headline carries each device's % of peak with the peak named: the layers' shares
// weighted by their time (the time at the peak over the time taken). A peak comes from the cases'
// pct_peak, else from the run's measured peak of the dtype; without either, "no peak known".
TEST(Findings, NetworksCarryTheirShareOfPeakWithThePeakNamed) {
  auto layer = [](const std::string& device, const std::string& l, double us,
                  std::vector<std::pair<std::string, double>> counters) {
    return Case{"conv/" + device + (device == "gpu" ? "/cudnn/" : "/onednn/") + "net." + l +
                    "/bs:32/dt:bf16/fmt:nhwc/pass:fwd",
                us, std::move(counters), "net"};
  };
  // GPU: 10% and 20% of 1 PFLOP/s over 100 and 300 us: (100 x 10 + 300 x 20) / 400 = 17.5%.
  // CPU: 1 and 2 TFLOP/s, no pct_peak.
  const std::vector<Case> cases = {
      layer("gpu", "a", 100, {{"flop_per_s", 100e12}, {"pct_peak", 10}}),
      layer("gpu", "b", 300, {{"flop_per_s", 200e12}, {"pct_peak", 20}}),
      layer("cpu", "a", 1000, {{"flop_per_s", 1e12}}),
      layer("cpu", "b", 3000, {{"flop_per_s", 2e12}}),
      {"dataload/cpu/turbojpeg/imagenet.decode/bs:32", 1000, {{"items_per_s", 32000}}}};
  const std::string spec =
      R"("gpu_peak_spec": "bf16 peak 1000.0 TFLOP/s = 100 SMs x 2000 MHz x 5000 flop/clk/SM")";
  MergedRuns m = Merge({ParseBenchmarkJson(testing::CasesJson(cases, "H100", spec), "p.json")});
  Overview ov = ComputeOverview(m);
  // A row per device, the CPU first.
  Table t = NetworkFindings(ov);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(At(t, 1, "device").Text(), "GPU");
  ASSERT_TRUE(At(t, 1, "pct_peak").value.has_value());
  EXPECT_NEAR(*At(t, 1, "pct_peak").value, 17.5, 1e-6);
  // The cases' peak (1 PFLOP/s) is the spec peak at max clock: named so.
  const std::string gpu_peak = At(t, 1, "peak").Text();
  EXPECT_EQ(gpu_peak.rfind("spec bf16 ", 0), 0u) << gpu_peak;
  EXPECT_NE(gpu_peak.find("at max clock"), std::string::npos) << gpu_peak;
  // No share on the CPU: the peak says why.
  EXPECT_EQ(At(t, 0, "device").Text(), "CPU");
  EXPECT_FALSE(At(t, 0, "pct_peak").value.has_value());
  EXPECT_EQ(At(t, 0, "peak").Text(), "no peak known");
  // The family's table has the same share per row; its one row's peak is said in its title, and
  // the note says where a row's peak is named.
  const std::vector<Section> sections = OverviewSections(ov);
  ASSERT_FALSE(sections.empty());
  ASSERT_FALSE(sections[0].tables.empty());
  const Table& net = sections[0].tables[0];
  EXPECT_NEAR(*At(net, 0, "gpu_pct_peak").value, 17.5, 1e-6);
  EXPECT_NE(net.title.find("; GPU peak: spec bf16 "), std::string::npos) << net.title;
  EXPECT_NE(sections[0].notes[0].find("% of peak (a network: its layers' shares, weighted by their "
                                      "time): of the peak its row names"),
            std::string::npos)
      << sections[0].notes[0];
  EXPECT_NE(sections[0].notes[0].find("-: no peak known"), std::string::npos)
      << sections[0].notes[0];

  // A measured peak of the CPU's bf16 (4 TFLOP/s) in the context: the CPU's share is of that one.
  // 25% and 50% over 1 and 3 ms: 43.75%.
  m = Merge({ParseBenchmarkJson(
      testing::CasesJson(cases, "H100",
                         spec + R"x(, "cpu_peak_measured": "bf16 4.0 TFLOP/s (gemm 4096)")x"),
      "p.json")});
  t = NetworkFindings(ComputeOverview(m));
  ASSERT_EQ(t.rows.size(), 2u);
  ASSERT_TRUE(At(t, 0, "pct_peak").value.has_value());
  EXPECT_NEAR(*At(t, 0, "pct_peak").value, 43.75, 1e-6);
  EXPECT_EQ(At(t, 0, "peak").Text().rfind("measured bf16 4", 0), 0u) << At(t, 0, "peak").Text();

  // The best of each family: images/s of a loader have no peak, and say so.
  const Section s = FindingsSection(m, ComputeTrain(m), ComputeGpuScaling(m));
  const Table* best = nullptr;
  for (const Table& b : s.tables)
    if (b.title == "Best of each family") best = &b;
  ASSERT_NE(best, nullptr);
  bool loader = false;
  for (size_t r = 0; r < best->rows.size(); ++r)
    if (best->rows[r][0].Text() == "dataload") {
      loader = true;
      EXPECT_EQ(At(*best, r, "peak").Text(), "no peak known");
    } else {
      EXPECT_NE(At(*best, r, "peak").Text(), "no peak known");
    }
  EXPECT_TRUE(loader);
}

// One column of % of peak never sets rows against different peaks under one header: f32 and bf16
// GEMMs of a table each name their own dtype's peak in the row; a peak every row shares is said
// once, in the title.
TEST(Findings, EachRowsPercentOfPeakNamesItsOwnPeak) {
  const std::string measured =
      R"x("gpu_peak_measured": "f32 50.0 TFLOP/s (gemm 8192); bf16 800.0 TFLOP/s (gemm 8192)")x";
  const MergedRuns m = Merge({ParseBenchmarkJson(
      testing::CasesJson({{"gemm/gpu/cublaslt/square.4096/dt:f32", 100, {{"flop_per_s", 25e12}}},
                          {"gemm/gpu/cublaslt/square.4096/dt:bf16", 10, {{"flop_per_s", 400e12}}}},
                         "H100", measured),
      "g.json")});
  const std::vector<Section> sections = OverviewSections(ComputeOverview(m));
  ASSERT_EQ(sections.size(), 1u);
  const Table& t = sections[0].tables.at(0);
  ASSERT_EQ(t.rows.size(), 2u) << RenderMarkdown(Document{"t", {}, {sections[0]}});
  ASSERT_TRUE(At(t, 0, "gpu_pct_peak").value.has_value())
      << RenderMarkdown(Document{"t", {}, {sections[0]}});
  EXPECT_NEAR(*At(t, 0, "gpu_pct_peak").value, 50, 1e-6);
  EXPECT_EQ(At(t, 0, "gpu_peak").Text(), "measured f32 50.0 TFLOP/s");
  EXPECT_NEAR(*At(t, 1, "gpu_pct_peak").value, 50, 1e-6);
  EXPECT_EQ(At(t, 1, "gpu_peak").Text(), "measured bf16 800 TFLOP/s");

  // One dtype: one peak, in the title, and no peak column.
  const MergedRuns one = Merge({ParseBenchmarkJson(
      testing::CasesJson({{"gemm/gpu/cublaslt/square.4096/dt:bf16", 10, {{"flop_per_s", 400e12}}},
                          {"gemm/gpu/cublaslt/square.8192/dt:bf16", 80, {{"flop_per_s", 400e12}}}},
                         "H100", measured),
      "g.json")});
  const std::vector<Section> one_sections = OverviewSections(ComputeOverview(one));
  const Table& u = one_sections.at(0).tables.at(0);
  EXPECT_NE(u.title.find("; GPU peak: measured bf16 800 TFLOP/s"), std::string::npos) << u.title;
  for (const Column& c : u.columns) EXPECT_NE(c.key, "gpu_peak");
}

// A transformer's rates are in its own items: the model's table says sequences/s in its header,
// an MLP's samples/s, and a table of both names each rate's unit in its cell.
TEST(Findings, ATrainingRowCountsItsModelsItems) {
  auto step = [](const std::string& model, double us) {
    return Case{"train/gpu/libtorch/" + model + "/bs:8/dt:bf16/pass:train", us};
  };
  const MergedRuns m =
      Merge({ParseBenchmarkJson(testing::CasesJson({step("gpt2s", 1000)}, "H100"), "t.json")});
  const std::vector<Section> gpt_sections = OverviewSections(ComputeOverview(m));
  const Table& gpt = gpt_sections.at(0).tables.at(0);
  bool header = false;
  for (const Column& c : gpt.columns) header |= c.title == "GPU sequences/s";
  EXPECT_TRUE(header);
  const MergedRuns both = Merge({ParseBenchmarkJson(
      testing::CasesJson({step("gpt2s", 1000), step("mlp", 10)}, "H100"), "t.json")});
  const std::vector<Section> both_sections = OverviewSections(ComputeOverview(both));
  const Table& mixed = both_sections.at(0).tables.at(0);
  EXPECT_NE(At(mixed, 0, "gpu_per_s").Text().find("sequences/s"), std::string::npos);
  EXPECT_NE(At(mixed, 1, "gpu_per_s").Text().find("samples/s"), std::string::npos);
}

// Timing hazards read from each file's context, as Google Benchmark's JSON writes it: the library
// built as debug, CPU frequency scaling on (a JSON boolean), and dlbench built as Debug.
TEST(Problems, TimingHazardsAreNamedFromEachFilesContext) {
  const std::string context = R"("library_build_type": "debug", "cpu_scaling_enabled": true, )"
                              R"("dlbench_build_type": "Release")";
  const FileData f = ParseBenchmarkJson(
      testing::CasesJson({Case{"gemm/cpu/onednn/square.64/dt:f32", 5}}, "", context), "a.json");
  EXPECT_EQ(f.context.at("cpu_scaling_enabled"), "true");
  const std::map<std::string, std::string> clean = {{"library_build_type", "release"},
                                                    {"cpu_scaling_enabled", "false"},
                                                    {"dlbench_build_type", "Release"}};
  EXPECT_TRUE(TimingHazards({clean, clean}).empty());
  const std::vector<std::string> h = TimingHazards({f.context, clean});
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].rfind("Google Benchmark built as debug (`library_build_type`)", 0), 0u) << h[0];
  EXPECT_NE(h[0].find("in 1 of 2 file(s)"), std::string::npos) << h[0];
  EXPECT_EQ(h[1].rfind("CPU frequency scaling enabled (`cpu_scaling_enabled`)", 0), 0u) << h[1];
  std::map<std::string, std::string> debug = clean;
  debug["dlbench_build_type"] = "Debug";
  EXPECT_EQ(TimingHazards({debug}).size(), 1u);
  const MergedRuns runs = testing::CasesRuns({Case{"gemm/cpu/onednn/square.64/dt:f32", 5}});
  const auto s = ProblemsSection(FindProblems(runs, {f.context, clean}));
  ASSERT_TRUE(s.has_value());
  bool said = false;
  for (const std::string& n : s->notes)
    said |= n.rfind("**Timing hazards**: Google Benchmark built as debug", 0) == 0 &&
            n.find("; CPU frequency scaling enabled") != std::string::npos;
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace dlb::report
