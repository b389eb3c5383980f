// Each model's conv and linear layers, as a forward pass meets them, equal the rows of its
// workload CSVs: conv_<network>.csv (shape x count) and gemm_fc.csv's rows of the network.
#include "kernels/torch/models.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "fixtures/case/workloads.h"

namespace dlb::libtorch {
namespace {

using ConvKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t>;  // c h w k r s stride pad dilation groups
using FcKey = std::pair<int64_t, int64_t>;     // in, out

struct Layers {
  std::map<ConvKey, int64_t> conv;
  std::map<FcKey, int64_t> fc;
};

Layers Traced(const ModelSpec& spec) {
  std::shared_ptr<Net> m = MakeModel(spec, 1);
  m->eval();
  std::vector<int64_t> sizes = {1};
  for (int64_t d : SampleShape(spec)) sizes.push_back(d);
  torch::NoGradGuard no_grad;
  LayerTrace trace;
  m->forward(torch::zeros(sizes));
  Layers out;
  for (const LayerRecord& r : trace.layers()) {
    if (r.conv)
      ++out.conv[{r.c, r.h, r.w, r.k, r.r, r.s, r.stride, r.pad, r.dilation, r.groups}];
    else
      ++out.fc[{r.in, r.out}];
  }
  return out;
}

std::string Dir() { return std::string(DLBENCH_WORKLOADS_DIR) + "/"; }

std::map<ConvKey, int64_t> CsvConvs(const std::string& network) {
  std::map<ConvKey, int64_t> out;
  for (const CsvRow& r :
       LoadCsv(Dir() + "conv_" + network + ".csv",
               {"c", "h", "w", "k", "r", "s", "stride", "pad", "dilation", "groups", "count"}))
    out[{r.Int("c"), r.Int("h"), r.Int("w"), r.Int("k"), r.Int("r"), r.Int("s"), r.Int("stride"),
         r.Int("pad"), r.Int("dilation"), r.Int("groups")}] += r.Int("count");
  return out;
}

std::map<FcKey, int64_t> CsvFcs(const std::string& network) {
  std::map<FcKey, int64_t> out;
  for (const CsvRow& r : LoadCsv(Dir() + "gemm_fc.csv", {"n", "k", "count", "network"}))
    if (r.Str("network") == network) out[{r.Int("k"), r.Int("n")}] += r.Int("count");
  return out;
}

std::string Show(const std::map<ConvKey, int64_t>& m) {
  std::string s;
  for (const auto& [k, n] : m) {
    auto [c, h, w, kk, r, ss, st, p, d, g] = k;
    s += "  c" + std::to_string(c) + " " + std::to_string(h) + "x" + std::to_string(w) + " k" +
         std::to_string(kk) + " " + std::to_string(r) + "x" + std::to_string(ss) + " s" +
         std::to_string(st) + " p" + std::to_string(p) + " x" + std::to_string(n) + "\n";
  }
  return s;
}

struct Case {
  ModelSpec spec;
  std::string network;
  bool has_fc_rows;  // gemm_fc.csv lists the network's linear layers
};

class ModelLayers : public ::testing::TestWithParam<Case> {};

TEST_P(ModelLayers, EqualTheWorkloadRows) {
  const Case& c = GetParam();
  const Layers got = Traced(c.spec);
  if (c.spec.image > 0) {
    const auto want = CsvConvs(c.network);
    EXPECT_EQ(got.conv, want) << "model:\n" << Show(got.conv) << "csv:\n" << Show(want);
  } else {
    EXPECT_TRUE(got.conv.empty());
  }
  if (c.has_fc_rows) EXPECT_EQ(got.fc, CsvFcs(c.network));
  EXPECT_FALSE(got.fc.empty());
}

INSTANTIATE_TEST_SUITE_P(
    AllModels, ModelLayers,
    ::testing::Values(Case{{"mlp", 0, 0, 2, {1000, 512, 256, 2}}, "mlp", true},
                      Case{{"resnet18_cifar", 3, 32, 10, {}}, "resnet18_cifar", false},
                      Case{{"resnet18", 3, 224, 1000, {}}, "resnet18", true},
                      Case{{"resnet50", 3, 224, 1000, {}}, "resnet50", true},
                      Case{{"densenet121", 3, 224, 1000, {}}, "densenet121", false},
                      Case{{"vgg16", 3, 224, 1000, {}}, "vgg16", true},
                      Case{{"catdog", 3, 64, 2, {}}, "catdog64", false},
                      Case{{"catdog", 3, 128, 2, {}}, "catdog128", false}),
    [](const auto& info) { return info.param.network; });

TEST(Models, SameSeedSameWeightsOtherSeedOthers) {
  const ModelSpec spec{"catdog", 3, 64, 2, {}};
  auto a = MakeModel(spec, 7), b = MakeModel(spec, 7), c = MakeModel(spec, 8);
  auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i]));
  EXPECT_FALSE(torch::equal(pa[0], pc[0]));
}

TEST(Models, UnknownNameSaysWhichAreKnown) {
  try {
    MakeModel({"alexnet", 3, 224, 1000, {}}, 1);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model 'alexnet'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("resnet50"), std::string::npos);
  }
}

}  // namespace
}  // namespace dlb::libtorch
