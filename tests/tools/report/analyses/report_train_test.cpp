// The train analysis's computing half (ComputeTrain: cases in, rows out) on hand-made runs and on
// the synthetic fixture data/train_synthetic.json; its rendering is held by the golden outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/train.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report {
namespace {

std::string Data(const std::string& name) { return std::string(DLB_REPORT_TEST_DATA) + "/" + name; }

// Benchmark entries in ms with the given counters, the model as the result's network.
class Json {
 public:
  Json& Add(const std::string& name, double ms,
            const std::vector<std::pair<std::string_view, double>>& counters = {},
            const std::string& network = "") {
    if (!body_.empty()) body_ += ",";
    body_ += R"({"name": ")" + name + R"(", "real_time": )" + std::to_string(ms) +
             R"(, "time_unit": "ms")";
    for (const auto& [k, v] : counters) body_ += R"(, ")" + std::string(k) + R"(": )" + Num(v);
    if (!network.empty())
      body_ += R"(, ")" + std::string(schema::kResult) + R"(": {")" +
               std::string(schema::kNetwork) + R"(": ")" + network + R"("})";
    body_ += "}";
    return *this;
  }
  MergedRuns Runs() const {
    return Merge({ParseBenchmarkJson(R"({"benchmarks": [)" + body_ + "]}", "t.json")});
  }

 private:
  static std::string Num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  }
  std::string body_;
};

// A training case of the model "net" (50,000 items an epoch) with every counter.
std::vector<std::pair<std::string_view, double>> Full(double ms, double bs) {
  double step = ms / 1e3;
  return {{schema::kBatch, bs},         {schema::kItemsPerS, bs / step},
          {schema::kEpochItems, 50000}, {schema::kEpochS, 50000 * step / bs},
          {schema::kFwdS, 0.3 * step},  {schema::kBwdS, 0.6 * step},
          {schema::kOptS, 0.05 * step}, {schema::kPeakMemBytes, 1e9 + bs * 1e6}};
}

std::string Name(const std::string& device_backend, int bs, const std::string& rest) {
  return "train/" + device_backend + "/net/bs:" + std::to_string(bs) + "/" + rest + "/manual_time";
}

const TrainEpoch* EpochOf(const TrainResult& r, const std::string& model) {
  for (const TrainEpoch& e : r.epochs)
    if (e.model == model) return &e;
  return nullptr;
}

TEST(Train, BestConfigurationIsTheShortestEpochOfEachDevice) {
  TrainResult r = ComputeTrain(Merge({ReadBenchmarkFile(Data("train_synthetic.json"))}));
  EXPECT_EQ(r.models, (std::vector<std::string>{"mlp", "resnet18_cifar", "resnet18"}));
  const TrainEpoch* cifar = EpochOf(r, "resnet18_cifar");
  ASSERT_NE(cifar, nullptr);
  ASSERT_TRUE(cifar->cpu && cifar->gpu);
  EXPECT_EQ(cifar->cpu->Config(), "libtorch bs:256/dt:amp_bf16/fmt:nhwc");
  EXPECT_EQ(cifar->gpu->Config(), "libtorch bs:256/dt:amp_bf16/fmt:nhwc/graph:1");
  EXPECT_DOUBLE_EQ(cifar->speedup, cifar->cpu->epoch_s / cifar->gpu->epoch_s);
  EXPECT_DOUBLE_EQ(cifar->epoch_items, 50000);
  // No other training case of the device has a shorter epoch; inference never counts.
  for (const TrainCase& c : r.cases)
    if (c.model == "resnet18_cifar" && c.pass == "train" && std::isfinite(c.epoch_s))
      EXPECT_GE(c.epoch_s, (c.device == "cpu" ? cifar->cpu : cifar->gpu)->epoch_s) << c.name;
  const TrainEpoch* mlp = EpochOf(r, "mlp");
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->cpu->backend, "native");
  EXPECT_TRUE(mlp->cpu->fmt.empty());
  // resnet18 on the CPU at bs 32 carries epoch_items only: its epoch is items x step / bs.
  for (const TrainCase& c : r.cases)
    if (c.model == "resnet18" && c.device == "cpu" && c.bs == 32)
      EXPECT_NEAR(c.epoch_s, 1281167 * c.step_ns / 32 / 1e9, 1e-9 * c.epoch_s);
}

TEST(Train, SameConfigurationIsF32NchwEagerAtTheLargestCommonBatch) {
  Json j;
  for (int bs : {16, 64, 128})
    j.Add(Name("cpu/libtorch", bs, "dt:f32/fmt:nchw/pass:train"), bs * 10.0, Full(bs * 10.0, bs));
  for (int bs : {64, 128, 256})
    j.Add(Name("gpu/libtorch", bs, "dt:f32/fmt:nchw/pass:train/graph:0"), bs * 0.1,
          Full(bs * 0.1, bs));
  // Faster, but not the same configuration: graphed, bf16, channels-last, a larger batch.
  j.Add(Name("gpu/libtorch", 128, "dt:f32/fmt:nchw/pass:train/graph:1"), 5, Full(5, 128));
  j.Add(Name("gpu/libtorch", 128, "dt:amp_bf16/fmt:nchw/pass:train/graph:0"), 4, Full(4, 128));
  j.Add(Name("gpu/libtorch", 128, "dt:f32/fmt:nhwc/pass:train/graph:0"), 3, Full(3, 128));
  j.Add(Name("cpu/libtorch", 512, "dt:amp_bf16/fmt:nchw/pass:train"), 2000, Full(2000, 512));
  TrainResult r = ComputeTrain(j.Runs());
  const TrainEpoch* e = EpochOf(r, "net");
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->same_cpu && e->same_gpu);
  EXPECT_EQ(e->same_cpu->bs, 128);
  EXPECT_EQ(e->same_gpu->bs, 128);
  EXPECT_EQ(e->same_gpu->graph, "0");
  EXPECT_EQ(e->same_gpu->fmt, "nchw");
  EXPECT_EQ(e->same_gpu->dt, "f32");
  EXPECT_NEAR(e->same_speedup, 1280.0 / 12.8, 1e-9);
  // The best of each device may be anything.
  EXPECT_EQ(e->gpu->Config(), "libtorch bs:128/dt:f32/fmt:nhwc/graph:0");
  EXPECT_EQ(e->cpu->Config(), "libtorch bs:512/dt:amp_bf16/fmt:nchw");
}

TEST(Train, NoSameConfigurationWithoutACommonBatch) {
  Json j;
  j.Add(Name("cpu/libtorch", 16, "dt:f32/fmt:nchw/pass:train"), 100, Full(100, 16));
  j.Add(Name("gpu/libtorch", 64, "dt:f32/fmt:nchw/pass:train/graph:0"), 5, Full(5, 64));
  TrainResult r = ComputeTrain(j.Runs());
  ASSERT_EQ(r.epochs.size(), 1u);
  EXPECT_FALSE(r.epochs[0].same_cpu || r.epochs[0].same_gpu);
  EXPECT_TRUE(std::isnan(r.epochs[0].same_speedup));
  EXPECT_TRUE(std::isfinite(r.epochs[0].speedup));
  // Only one device: a row, no speedup.
  Json g;
  g.Add(Name("gpu/libtorch", 64, "dt:f32/fmt:nchw/pass:train/graph:0"), 5, Full(5, 64));
  TrainResult only = ComputeTrain(g.Runs());
  ASSERT_EQ(only.epochs.size(), 1u);
  EXPECT_FALSE(only.epochs[0].cpu);
  EXPECT_TRUE(std::isnan(only.epochs[0].speedup));
}

TEST(Train, EagerAndGraphPairOnlyAsTwins) {
  Json j;
  for (int bs : {16, 64}) {
    j.Add(Name("gpu/libtorch", bs, "dt:f32/fmt:nchw/pass:train/graph:0"), 8, Full(8, bs));
    j.Add(Name("gpu/libtorch", bs, "dt:f32/fmt:nchw/pass:train/graph:1"), bs == 16 ? 2 : 4,
          Full(bs == 16 ? 2 : 4, bs));
  }
  // No eager twin (other dtype); another backend's eager case is no twin either.
  j.Add(Name("gpu/libtorch", 16, "dt:amp_bf16/fmt:nhwc/pass:train/graph:1"), 1, Full(1, 16));
  j.Add(Name("gpu/pytorch", 16, "dt:amp_bf16/fmt:nhwc/pass:train/graph:0"), 9, Full(9, 16));
  TrainResult r = ComputeTrain(j.Runs());
  ASSERT_EQ(r.graphs.size(), 2u);
  for (const TrainPair& p : r.graphs) {
    EXPECT_EQ(p.a.graph, "1");
    EXPECT_EQ(p.b.graph, "0");
    EXPECT_EQ(p.a.bs, p.b.bs);
    EXPECT_EQ(p.a.backend, p.b.backend);
    EXPECT_DOUBLE_EQ(p.speedup, p.b.step_ns / p.a.step_ns);
  }
  ASSERT_EQ(r.graph_summary.size(), 1u);
  const TrainPairSummary& s = r.graph_summary[0];
  EXPECT_EQ(s.n, 2u);
  EXPECT_NEAR(s.geomean, std::sqrt(4.0 * 2.0), 1e-12);
  EXPECT_DOUBLE_EQ(s.lo.speedup, 2);
  EXPECT_DOUBLE_EQ(s.hi.speedup, 4);
  EXPECT_EQ(s.hi.a.bs, 16);
  // libtorch graph:1 amp_bf16 against pytorch eager is no backend pair: the graph key differs.
  EXPECT_TRUE(r.backends.empty());
}

TEST(Train, BackendPairsNativeLibtorchAndLibtorchPytorch) {
  Json j;
  j.Add("train/cpu/native/mlp/bs:64/dt:f32/pass:train/manual_time", 1, Full(1, 64), "mlp");
  j.Add("train/cpu/libtorch/mlp/bs:64/dt:f32/pass:train/manual_time", 3, Full(3, 64), "mlp");
  j.Add("train/gpu/libtorch/mlp/bs:64/dt:f32/pass:train/graph:1/manual_time", 0.1, Full(0.1, 64),
        "mlp");
  j.Add("train/gpu/pytorch/mlp/bs:64/dt:f32/pass:train/graph:1/manual_time", 0.15, {}, "mlp");
  TrainResult r = ComputeTrain(j.Runs());
  ASSERT_EQ(r.backends.size(), 2u);
  EXPECT_EQ(r.backends[0].a.backend, "native");
  EXPECT_EQ(r.backends[0].b.backend, "libtorch");
  EXPECT_DOUBLE_EQ(r.backends[0].speedup, 3);
  EXPECT_EQ(r.backends[1].device, "gpu");
  EXPECT_EQ(r.backends[1].b.backend, "pytorch");
  EXPECT_NEAR(r.backends[1].speedup, 1.5, 1e-9);
  EXPECT_EQ(r.backend_summary.size(), 2u);
}

TEST(Train, PhaseSharesAddUpToOneAndNeverExceedIt) {
  TrainResult r = ComputeTrain(Merge({ReadBenchmarkFile(Data("train_synthetic.json"))}));
  ASSERT_EQ(r.phases.size(), 6u);  // 3 models x 2 devices
  bool any_over = false;
  for (const TrainPhases& p : r.phases) {
    for (double share : {p.fwd, p.bwd, p.opt, p.other}) {
      EXPECT_GE(share, 0) << p.at.name;
      EXPECT_LE(share, 1) << p.at.name;
    }
    EXPECT_LE(p.fwd + p.bwd + p.opt, 1 + 1e-12) << p.at.name;
    EXPECT_NEAR(p.fwd + p.bwd + p.opt + p.other, 1, 1e-12) << p.at.name;
    EXPECT_NE(p.at.backend, "pytorch");  // the peer writes no phases
    any_over |= p.over_step;
    if (p.over_step) EXPECT_EQ(p.other, 0);
  }
  EXPECT_TRUE(any_over);  // graphed steps are shorter than their un-graphed phases

  Json j;
  auto c = Full(10, 32);
  j.Add(Name("gpu/libtorch", 32, "dt:f32/fmt:nchw/pass:train/graph:0"), 10, c);
  TrainResult one = ComputeTrain(j.Runs());
  ASSERT_EQ(one.phases.size(), 1u);
  EXPECT_NEAR(one.phases[0].fwd, 0.3, 1e-12);
  EXPECT_NEAR(one.phases[0].other, 0.05, 1e-12);
  EXPECT_FALSE(one.phases[0].over_step);
}

TEST(Train, CurvesComeFromTheSweepWithItsFit) {
  TrainResult r = ComputeTrain(Merge({ReadBenchmarkFile(Data("train_synthetic.json"))}));
  const TrainCurve* gpu = nullptr;
  for (const TrainCurve& c : r.curves)
    if (c.model == "resnet18_cifar" && c.device == "gpu") gpu = &c;
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->sweep.curve, gpu->at.curve);
  EXPECT_EQ(gpu->sweep.points.size(), 3u);
  ASSERT_TRUE(gpu->sweep.fit_ok);
  EXPECT_NEAR(gpu->sweep.alpha, 0.95, 0.01);  // make_train_fixture.py's curve
  EXPECT_DOUBLE_EQ(gpu->sweep.best_bs, 256);
  // Peak memory along the same curve, by batch size.
  for (const TrainMemory& m : r.memory)
    if (m.model == "resnet18_cifar" && m.device == "gpu") {
      EXPECT_EQ(m.at.curve, gpu->at.curve);
      ASSERT_EQ(m.points.size(), 3u);
      EXPECT_LT(m.points[0].second, m.points[2].second);
    }
}

// Missing, negative or absent counters and names without a batch size: left out with a note,
// never a crash, in every format.
TEST(Train, MalformedCountersAreNotedNotFatal) {
  Json j;
  j.Add(Name("cpu/libtorch", 16, "dt:f32/fmt:nchw/pass:train"), 100);  // no counter at all
  j.Add(Name("gpu/libtorch", 16, "dt:f32/fmt:nchw/pass:train/graph:0"), 2,
        {{schema::kFwdS, -1},
         {schema::kBwdS, 0.001},
         {schema::kEpochS, -5},
         {schema::kPeakMemBytes, 0}});
  j.Add("train/gpu/libtorch/net/dt:f32/pass:train/graph:0/manual_time", 2,
        {{schema::kEpochItems, 50000}});
  j.Add(Name("gpu/libtorch", 16, "dt:f32/fmt:nchw/pass:infer/graph:1"), 1,
        {{schema::kFwdS, 0.001}});
  j.Add("train/tpu/x/net/bs:8/dt:f32/pass:train/manual_time", 1, Full(1, 8));
  MergedRuns runs = j.Runs();
  TrainResult r = ComputeTrain(runs);
  EXPECT_EQ(r.cases.size(), 3u);
  EXPECT_TRUE(r.epochs.empty());
  EXPECT_TRUE(r.phases.empty());
  EXPECT_TRUE(r.memory.empty());
  EXPECT_TRUE(r.curves.empty());
  std::string notes;
  for (const std::string& n : r.notes) notes += n + "\n";
  EXPECT_NE(notes.find("without a batch size"), std::string::npos) << notes;
  EXPECT_NE(notes.find("neither epoch_s nor epoch_items"), std::string::npos) << notes;
  EXPECT_NE(notes.find("fwd_s, bwd_s and opt_s"), std::string::npos) << notes;
  EXPECT_NE(notes.find("peak_mem_bytes"), std::string::npos) << notes;
  EXPECT_NE(notes.find("whose name is not train/"), std::string::npos) << notes;
  Document d = TrainDocument(runs, {"t.json"});
  for (Format f : {Format::kMarkdown, Format::kHtml, Format::kCsv, Format::kJson})
    EXPECT_FALSE(Render(d, f).empty());
  EXPECT_FALSE(RenderHtml(FullReport(runs, {"t.json"})).empty());
}

TEST(Train, FirstScreenOfTheReportAndNothingWithoutTrainResults) {
  MergedRuns m = Merge({ReadBenchmarkFile(Data("train_synthetic.json"))});
  Document d = FullReport(m, {"train_synthetic.json"});
  ASSERT_GE(d.sections.size(), 3u);
  // Problems (its runs were measured once), then the findings; the family's own sections come
  // right after them.
  EXPECT_EQ(d.sections[0].title, "Problems");
  EXPECT_EQ(d.sections[1].title, "Findings");
  EXPECT_EQ(d.sections[2].title, "train: one epoch, CPU vs GPU");
  EXPECT_FALSE(d.sections[2].details);
  bool all_pairs_in_details = false;
  for (const Section& s : d.sections) {
    EXPECT_NE(s.title, "train");  // the family's per-layer overview gives way
    if (s.title == "train: every eager/graph and backend pair") all_pairs_in_details = s.details;
  }
  EXPECT_TRUE(all_pairs_in_details);

  MergedRuns other = Merge({ReadBenchmarkFile(Data("dlbench_v2_base.json"))});
  EXPECT_TRUE(ComputeTrain(other).cases.empty());
  for (const Section& s : FullReport(other, {"x"}).sections)
    EXPECT_NE(s.title.rfind("train", 0), 0u) << s.title;
  std::vector<Section> none = TrainSections(ComputeTrain(other));
  ASSERT_EQ(none.size(), 1u);
  EXPECT_FALSE(none[0].notes.empty());
}

}  // namespace
}  // namespace dlb::report
