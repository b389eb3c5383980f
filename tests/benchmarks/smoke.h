// Runs a benchmark binary at the smoke tier with JSON output and checks what users script
// against: names follow the scheme, verified cases have times and rates, skipped cases say why,
// GPU cases without a device say "unsupported: no CUDA device".
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "fixtures/naming.h"

namespace dlb::testing {

struct Result {
  int exit_code = -1;
  std::string output;  // stdout + stderr
  nlohmann::json json;
};

inline Result RunBinary(const std::string& binary, const std::string& args) {
  Result r;
  auto out = std::filesystem::temp_directory_path() / ("dlb_smoke_" + std::to_string(::getpid()) +
                                                       "_" + std::to_string(std::rand()) + ".json");
  std::string cmd = "'" + binary + "' " + args + " --benchmark_out='" + out.string() +
                    "' --benchmark_out_format=json 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out);
  if (in) r.json = nlohmann::json::parse(in, nullptr, false);
  if (r.json.is_discarded()) r.json = nullptr;
  std::filesystem::remove(out);
  return r;
}

inline bool HasGpu(const nlohmann::json& json) {
  std::string gpu = json["context"].value("gpu_name", "");
  return !gpu.empty() && gpu.rfind("no CUDA device", 0) != 0 && gpu.rfind("not built", 0) != 0;
}

// Checks every entry; returns how many were measured.
inline int CheckSmokeJson(const nlohmann::json& json, const std::string& family) {
  EXPECT_TRUE(json.is_object()) << "no JSON written";
  if (!json.is_object()) return 0;
  for (const char* key : {"dlbench_version", "dlbench_git_revision", "cpu_model", "cpu_isa",
                          "onednn_version", "gpu_name", "dlbench_build_type"})
    EXPECT_TRUE(json["context"].contains(key)) << "context lacks " << key;
  const bool gpu = HasGpu(json);
  int measured = 0;
  EXPECT_FALSE(json["benchmarks"].empty());
  for (const auto& b : json["benchmarks"]) {
    const std::string name = b["name"];
    auto parsed = ParseName(name);
    EXPECT_TRUE(parsed.has_value()) << name << " does not follow the naming scheme";
    if (!parsed) continue;
    EXPECT_EQ(parsed->family, family) << name;
    EXPECT_EQ(BuildName(*parsed) + "/manual_time", name) << "not canonical: " << name;
    if (b.value("error_occurred", false)) {
      const std::string msg = b.value("error_message", "");
      EXPECT_EQ(msg.rfind("unsupported: ", 0), 0u) << name << " failed: " << msg;
      if (parsed->device == "gpu" && !gpu)
        EXPECT_EQ(msg.rfind("unsupported: no CUDA device", 0), 0u) << name << ": " << msg;
      EXPECT_FALSE(b.contains("flop_per_s")) << name;
      continue;
    }
    ++measured;
    EXPECT_GT(b.value("real_time", 0.0), 0.0) << name;
    EXPECT_GT(b.value("flop_per_s", 0.0), 0.0) << name;
    EXPECT_GE(b.value("count", 0.0), 1.0) << name;
    const std::string label = b.value("label", "");
    EXPECT_NE(label.find("verified rel-L2"), std::string::npos) << name << ": " << label;
  }
  return measured;
}

}  // namespace dlb::testing
