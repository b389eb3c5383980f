#include "kernels/nccl/launch.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace dlb::nccl {
namespace {

int ProcessesFrom(const std::map<std::string, std::string>& env) {
  return LauncherProcesses([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Launch, ReadsTheLaunchersEnvironment) {
  EXPECT_EQ(ProcessesFrom({}), 0);
  EXPECT_EQ(ProcessesFrom({{"HOME", "/root"}}), 0);
  EXPECT_EQ(ProcessesFrom({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}}), 2);
  EXPECT_EQ(ProcessesFrom({{"PMI_SIZE", "4"}}), 4);
  EXPECT_EQ(ProcessesFrom({{"SLURM_STEP_NUM_TASKS", "8"}}), 8);
  EXPECT_EQ(ProcessesFrom({{"PMIX_RANK", "0"}}), 1);
}

TEST(Launch, OneProcessAgreesWithItself) {
  std::unique_ptr<Launch> one = SingleProcess();
  EXPECT_EQ(one->rank(), 0);
  EXPECT_EQ(one->size(), 1);
  EXPECT_EQ(one->Max(2.5), 2.5);
  EXPECT_TRUE(one->Same(123));
  EXPECT_EQ(one->AllGather("x"), std::vector<std::string>{"x"});
  EXPECT_EQ(one->FirstError(""), "");
  EXPECT_EQ(one->FirstError("out of memory: needs 2 GiB"), "out of memory: needs 2 GiB");
}

}  // namespace
}  // namespace dlb::nccl
