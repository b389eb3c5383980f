#include "benchmarks/train/family.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/support/temp_dir.h"

namespace dlb::train {
namespace {

// A models file of the header and `body`, in the test's folder.
std::string Write(const ::dlb::testing::TempDir& dir, const std::string& body) {
  return dir.Write("train_models.csv",
                   "name,count,model,image,classes,widths,dataset,epoch_items,tier\n" + body);
}

TEST(TrainModels, TheShippedFileLoads) {
  const auto models = LoadModels(std::string(DLBENCH_WORKLOADS_DIR) + "/train_models.csv");
  ASSERT_EQ(models.size(), 8u);
  EXPECT_EQ(models[0].shape.model, "mlp");
  EXPECT_EQ(models[0].shape.widths, (std::vector<int64_t>{1000, 512, 256, 2}));
  EXPECT_EQ(models[1].basics.name, "resnet18_cifar");
  EXPECT_EQ(models[1].epoch_items, 50000);
  EXPECT_EQ(models[1].basics.network, "resnet18_cifar");
}

TEST(TrainModels, MalformedRowsNameTheirLine) {
  const ::dlb::testing::TempDir dir("train_models");
  auto expect_fail = [&dir](const std::string& body, const std::string& what) {
    const std::string path = Write(dir, body);
    try {
      LoadModels(path);
      ADD_FAILURE() << "no error for " << body;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(":2:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_fail("mlp,1,mlp,0,2,1000-x-2,s,10,smoke\n", "widths");
  expect_fail("mlp,1,mlp,0,3,1000-2,s,10,smoke\n", "last width");
  expect_fail("m,1,resnet18,224,0,,s,10,smoke\n", "classes");
  expect_fail("m,1,resnet18,224,10,,s,0,smoke\n", "epoch_items");
  expect_fail("m,1,resnet18,224,10,5-5,s,10,smoke\n", "widths are for the MLP");
}

TEST(TrainModels, TheTransformersFileLoadsItsEpochInTokens) {
  const auto models = LoadModels(std::string(DLBENCH_WORKLOADS_DIR) + "/train_transformers.csv");
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0].shape.model, "gpt2s");
  EXPECT_EQ(models[0].shape.classes, 50304);
  EXPECT_EQ(models[0].shape.seq, 1024);
  EXPECT_EQ(models[0].epoch_items, 9035582489);  // OpenWebText's tokens
  EXPECT_EQ(models[0].basics.tier, Tier::kSmoke);
  EXPECT_EQ(models[2].shape.model, "bert_base");
  EXPECT_EQ(models[2].shape.seq, 512);
}

TEST(TrainModels, MalformedTransformerRowsNameTheirLine) {
  const ::dlb::testing::TempDir dir("train_transformers");
  for (const auto& [body, what] : std::vector<std::pair<std::string, std::string>>{
           {"g,1,gpt2s,50304,0,owt,10,smoke\n", "seq"},
           {"g,1,gpt2s,0,1024,owt,10,smoke\n", "vocab"},
           {"g,1,gpt2s,50304,1024,owt,0,smoke\n", "epoch_tokens"}}) {
    const std::string path = dir.Write(
        "train_transformers.csv", "name,count,model,vocab,seq,dataset,epoch_tokens,tier\n" + body);
    try {
      LoadModels(path);
      ADD_FAILURE() << "no error for " << body;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(":2:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dlb::train
