// Helpers of bench_comm's tests: running it alone or under mpirun, and checking its JSON.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fixtures/schema/naming.h"
#include "fixtures/schema/schema.h"
#include "kernels/nccl/shape.h"
#include "tests/benchmarks/smoke.h"
#include "tests/support/temp_dir.h"

namespace dlb::testing {

// Tests of a binary run without a GPU (CUDA_VISIBLE_DEVICES=-1 hides any), NVLink multicast off.
class WithoutGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
    ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  }
};

// The start of an mpirun line for `processes` processes on this host: as root (CI's container)
// Open MPI wants --allow-run-as-root, and --oversubscribe lets 2 processes run on fewer cores.
// NVLink multicast stays off in every process (-x).
inline std::string MpiRun(int processes) {
  std::string cmd = std::string("'") + DLB_MPIEXEC + "' -np " + std::to_string(processes) +
                    " --oversubscribe -x NCCL_NVLS_ENABLE=0";
  if (::getuid() == 0) cmd += " --allow-run-as-root";
  return cmd;
}

// A two-process run's JSON names both ranks in its context, and `dir` holds one file: rank 0's
// (no second writer, no temporary left).
inline void ExpectTwoRanksAndOneFile(const nlohmann::json& json, const std::filesystem::path& dir) {
  const std::string ranks = json["context"].value(std::string(schema::kCtxCommRanks), "");
  EXPECT_NE(ranks.find("rank 0: "), std::string::npos) << ranks;
  EXPECT_NE(ranks.find("rank 1: "), std::string::npos) << ranks;
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

// Runs a shell command line; its exit code and stdout + stderr (no JSON: the line names it).
inline Result RunShell(const std::string& cmd) {
  Result r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline nlohmann::json ReadJson(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

// Checks every case of a bench_comm JSON; returns how many were measured. Measured cases are
// verified with no wrong element, and busbw is algbw times the collective's factor on `gpus`.
inline int CheckCommJson(const nlohmann::json& json, int gpus) {
  EXPECT_TRUE(json.is_object()) << "no JSON written";
  if (!json.is_object()) return 0;
  CheckSchemaNames(json);
  for (std::string_view key :
       {schema::kCtxNcclVersion, schema::kCtxCommLaunch, schema::kCtxCommRanks,
        schema::kCtxCommBuffers, schema::kCtxGitRevision})
    EXPECT_TRUE(json["context"].contains(std::string(key))) << "context lacks " << key;
  EXPECT_FALSE(json["benchmarks"].empty());
  int measured = 0;
  for (const auto& b : json["benchmarks"]) {
    const std::string name = b["name"];
    auto parsed = ParseName(name);
    EXPECT_TRUE(parsed.has_value()) << name;
    if (!parsed) continue;
    EXPECT_EQ(parsed->family, "comm");
    EXPECT_EQ(BuildName(*parsed) + "/manual_time", name) << "not canonical: " << name;
    EXPECT_EQ(parsed->Get("gpus"), std::to_string(gpus)) << name;
    if (b.value("error_occurred", false)) continue;
    ++measured;
    const auto coll = nccl::ParseCollective(parsed->workload.substr(0, parsed->workload.find('.')));
    EXPECT_TRUE(coll.has_value()) << name;
    const double algbw = b.value(std::string(schema::kAlgBw), 0.0);
    const double busbw = b.value(std::string(schema::kBusBw), 0.0);
    EXPECT_GT(algbw, 0) << name;
    if (coll) EXPECT_NEAR(busbw, algbw * nccl::BusBwFactor(*coll, gpus), 1e-9 * algbw) << name;
    const auto& ver = b["dlbench"]["verification"];
    EXPECT_EQ(ver["disposition"], "verified") << name;
    EXPECT_EQ(ver["metric"], std::string(schema::kMetricWrongElements)) << name;
    EXPECT_EQ(ver["error"].get<double>(), 0) << name;
    EXPECT_GT(ver["checked"].get<double>(), 0) << name;
    EXPECT_NE(b.value("label", "").find("verified 0 wrong"), std::string::npos) << name;
  }
  return measured;
}

}  // namespace dlb::testing
