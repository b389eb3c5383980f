// The transformer era in the report: tokens/s and MFU first for the steps that count tokens, the
// attention family's FLOP/s over sequence length, and GEMM dtypes side by side.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/tools/report/report_cases.h"
#include "tools/report/analyses/findings.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/transformer.h"
#include "tools/report/render/document.h"

namespace dlb::report {
namespace {

using testing::Case;

MergedRuns Runs(const std::vector<Case>& cases) {
  return testing::CasesRuns(cases, "H100", "transformer.json");
}

Case Gpt2(const std::string& device, int bs, const std::string& graph, double step_us, double mfu) {
  const double tokens = bs * 1024.0 / (step_us * 1e-6);
  std::string name =
      "train/" + device + "/libtorch/gpt2s/bs:" + std::to_string(bs) +
      (device == "gpu" ? "/dt:amp_bf16/pass:train/graph:" + graph : "/dt:f32/pass:train") +
      "/seq:1024";
  return {
      name,
      step_us,
      {{"tokens_per_s", tokens}, {"mfu", mfu}, {"epoch_items", 8823811}, {"peak_mem_bytes", 20e9}},
      "gpt2s"};
}

TEST(Transformer, TheFastestStepPerDeviceLeadsWithTokensAndMfu) {
  // GPU bs 8: 8192 tokens in 25 ms = 327.7 k tokens/s (graph) against 30 ms eager; bs 16 graph:
  // 16384 in 47 ms = 348.6 k, the fastest. CPU: 1024 tokens in 2 s = 512 tokens/s.
  MergedRuns m = Runs({Gpt2("gpu", 8, "1", 25000, 40.1), Gpt2("gpu", 8, "0", 30000, 33.4),
                       Gpt2("gpu", 16, "1", 47000, 42.7), Gpt2("cpu", 1, "", 2e6, 12.5)});
  std::vector<TokenStep> steps = TokenSteps(m);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].device, "cpu");
  EXPECT_EQ(steps[1].device, "gpu");
  EXPECT_EQ(steps[1].model, "gpt2s");
  EXPECT_NEAR(steps[1].tokens_per_s, 16384 / 0.047, 1);
  EXPECT_NEAR(steps[1].mfu, 42.7, 1e-9);
  EXPECT_EQ(steps[1].config, "libtorch bs:16/dt:amp_bf16/graph:1/seq:1024");
  EXPECT_NEAR(steps[0].tokens_per_s, 512, 1e-6);

  // In the findings, with the epoch table naming the best batch size in tokens/s.
  Section s = FindingsSection(m, ComputeTrain(m), ComputeGpuScaling(m));
  std::string md = RenderMarkdown(Document{"t", {}, {s}});
  EXPECT_NE(md.find("Transformer training: tokens/s and MFU"), std::string::npos) << md;
  EXPECT_NE(md.find("349 k tokens/s"), std::string::npos) << md;
  EXPECT_NE(md.find("42.7%"), std::string::npos) << md;
  // The epoch from the epoch's sequences at the rate: 8,823,811 / 16 x 47 ms = 7.21 h.
  EXPECT_NE(md.find("7.21 h"), std::string::npos) << md;
  EXPECT_NE(md.find("bs 16 · 349 k tokens/s"), std::string::npos) << md;
}

// The PyTorch peer's step (backend pytorch), even when faster, stands beside dlbench's as the
// peer: never dlbench's fastest configuration, nor the model's best epoch.
TEST(Transformer, APeersStepIsShownAsThePeerNeverAsTheBest) {
  Case peer = Gpt2("gpu", 16, "1", 45000, 44.6);
  peer.name.replace(peer.name.find("/libtorch/"), 10, "/pytorch/");
  MergedRuns m = Runs({Gpt2("gpu", 16, "1", 47000, 42.7), peer});
  std::vector<TokenStep> steps = TokenSteps(m);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].config, "libtorch bs:16/dt:amp_bf16/graph:1/seq:1024");
  EXPECT_EQ(steps[1].config, "peer: pytorch bs:16/dt:amp_bf16/graph:1/seq:1024");
  const TrainResult train = ComputeTrain(m);
  ASSERT_EQ(train.epochs.size(), 1u);
  ASSERT_TRUE(train.epochs[0].gpu.has_value());
  EXPECT_EQ(train.epochs[0].gpu->backend, "libtorch");
}

// The MFU's peak is named beside it: the dtype's spec peak at the maximum clock, from the context.
TEST(Transformer, TheMfusPeakIsNamedBesideIt) {
  const std::map<std::string, std::string> ctx = {
      {"gpu_peak_spec",
       "f32 peak 66.9 TFLOP/s = 132 SMs x 1980 MHz x 256 flop/clk/SM (sm_90 f32); bf16 peak 1070.5 "
       "TFLOP/s = 132 SMs x 1980 MHz x 4096 flop/clk/SM (sm_90 bf16)"}};
  EXPECT_EQ(GpuPeakOf(ctx, "amp_bf16"), "1070.5 TFLOP/s (132 SMs x 1980 MHz)");
  EXPECT_EQ(GpuPeakOf(ctx, "f32"), "66.9 TFLOP/s (132 SMs x 1980 MHz)");
  EXPECT_EQ(GpuPeakOf(ctx, "fp8"), "");
  EXPECT_EQ(GpuPeakOf({}, "bf16"), "");
  MergedRuns m = Runs({Gpt2("gpu", 16, "1", 47000, 42.7)});
  const Table t = TokenTable(TokenSteps(m), ctx);
  ASSERT_EQ(t.rows.size(), 1u);
  // No FLOP rate in the case to tell its own peak by: the spec's, named.
  EXPECT_EQ(t.columns[5].title, "MFU's peak (the row's own)");
  EXPECT_EQ(t.rows[0][5].Text(), "1070.5 TFLOP/s (132 SMs x 1980 MHz)");
}

TEST(Transformer, StepsWithoutTokensGiveNoTokenTable) {
  MergedRuns m =
      Runs({{"train/gpu/libtorch/resnet18_cifar/bs:16/dt:f32/fmt:nchw/pass:train/graph:1",
             1000,
             {{"epoch_items", 50000}},
             "resnet18_cifar"}});
  EXPECT_TRUE(TokenSteps(m).empty());
  EXPECT_TRUE(TokenTable(TokenSteps(m)).rows.empty());
  std::string md = RenderMarkdown(
      Document{"t", {}, {FindingsSection(m, ComputeTrain(m), ComputeGpuScaling(m))}});
  EXPECT_EQ(md.find("tokens/s"), std::string::npos) << md;
}

Case Attn(const std::string& backend, const std::string& pass, int seq, double tflops) {
  const int bs = 16384 / seq;
  // FLOP of one causal forward: 4 B H S^2 D / 2, H 12, D 64; backward 2.5x.
  double flop = 4.0 * bs * 12 * double(seq) * seq * 64 / 2 * (pass == "bwd" ? 2.5 : 1);
  return {"attn/gpu/" + backend + "/gpt2s.attn/bs:" + std::to_string(bs) + "/dt:bf16/pass:" + pass +
              "/seq:" + std::to_string(seq) + "/heads:12/kv_heads:12/head_dim:64/causal:1",
          flop / (tflops * 1e12) * 1e6,
          {{"flop_per_s", tflops * 1e12}},
          "gpt2s"};
}

TEST(Transformer, AttentionIsChartedOverSequenceLengthPerPass) {
  MergedRuns m = Runs({Attn("cudnn", "fwd", 512, 200), Attn("cudnn", "fwd", 1024, 280),
                       Attn("cudnn", "fwd", 2048, 320), Attn("cudnn", "bwd", 512, 120),
                       Attn("cudnn", "bwd", 1024, 170)});
  std::vector<Chart> charts = AttnSeqCharts(m);
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_EQ(charts[0].title, "attn gpu cudnn bf16 fwd: FLOP/s over sequence length");
  ASSERT_EQ(charts[0].series.size(), 1u);
  EXPECT_EQ(charts[0].series[0].name, "gpt2s causal");
  ASSERT_EQ(charts[0].series[0].points.size(), 3u);
  EXPECT_EQ(charts[0].series[0].points[1].first, 1024);
  EXPECT_NEAR(charts[0].series[0].points[1].second, 280e12, 280e12 * 1e-3);
  EXPECT_EQ(charts[1].x_label, "sequence length");

  // The family's section lists every shape on its own (never summed into a network "gpt2s") and
  // draws the charts.
  Document d = FullReport(m, {"transformer.json"});
  std::string md = RenderMarkdown(d);
  EXPECT_EQ(md.find("Network gpt2s"), std::string::npos) << md;
  EXPECT_NE(md.find("Attention shapes"), std::string::npos) << md;
  const Section* attn = nullptr;
  for (const Section& sec : d.sections)
    if (sec.title == "attn") attn = &sec;
  ASSERT_NE(attn, nullptr);
  ASSERT_EQ(attn->charts.size(), 2u);
  EXPECT_EQ(attn->charts[1].title, "attn gpu cudnn bf16 bwd: FLOP/s over sequence length");
}

Case Gemm(const std::string& backend, const std::string& dt, double tflops) {
  const double flop = 2.0 * 8192.0 * 8192.0 * 8192.0;
  return {"gemm/gpu/" + backend + "/square.8192/dt:" + dt,
          flop / (tflops * 1e12) * 1e6,
          {{"flop_per_s", tflops * 1e12}},
          ""};
}

TEST(Transformer, GemmDtypesStandSideBySideWithTheFastestBackend) {
  MergedRuns m = Runs({Gemm("cublas", "bf16", 650), Gemm("cublaslt", "bf16", 700),
                       Gemm("cublaslt", "fp8", 1300), Gemm("cublaslt", "int8", 900),
                       Gemm("cublaslt", "f32", 51)});
  Table t = GemmDtypeTable(m);
  ASSERT_EQ(t.rows.size(), 1u);
  std::vector<std::string> cols;
  for (const Column& c : t.columns) cols.push_back(c.title);
  EXPECT_EQ(cols,
            (std::vector<std::string>{"shape", "device", "f32", "bf16", "fp8", "int8 (OP/s)"}));
  EXPECT_EQ(t.rows[0][0].Text(), "square.8192");
  EXPECT_NE(t.rows[0][3].Text().find("(cublaslt)"), std::string::npos) << t.rows[0][3].Text();
  EXPECT_NEAR(*t.rows[0][3].value, 700e12, 1e9);
  EXPECT_NE(t.rows[0][5].Text().find("OP/s"), std::string::npos) << t.rows[0][5].Text();

  // One dtype per shape: nothing to put side by side.
  EXPECT_TRUE(GemmDtypeTable(Runs({Gemm("cublaslt", "bf16", 700)})).rows.empty());

  // In the report, the gemm section opens with it.
  std::string md = RenderMarkdown(FullReport(m, {"gemm.json"}));
  EXPECT_NE(md.find("GEMM by dtype"), std::string::npos) << md;
}

}  // namespace
}  // namespace dlb::report
