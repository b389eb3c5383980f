// Runs a benchmark binary at the smoke tier with JSON output and checks what users script
// against: names follow the scheme, verified cases have times and rates, skipped cases say why,
// without a usable GPU, --dlb_device=all leaves the GPU cases out and --dlb_device=gpu reports each
// unsupported with the reason the context gives.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "fixtures/schema/naming.h"
#include "fixtures/schema/schema.h"
#include "tests/support/temp_dir.h"

namespace dlb::testing {

struct Result {
  int exit_code = -1;
  std::string output;  // stdout + stderr
  nlohmann::json json;
};

// Runs the binary with `args`, and, unless `args_name_the_output`, with a JSON output file of
// its own that the result holds parsed.
inline Result RunBinary(const std::string& binary, const std::string& args,
                        bool args_name_the_output = false) {
  Result r;
  const TempDir tmp("smoke");
  const std::filesystem::path out = tmp.path() / "out.json";
  std::string cmd = "'" + binary + "' " + args;
  if (!args_name_the_output)
    cmd += " --benchmark_out='" + out.string() + "' --benchmark_out_format=json";
  cmd += " 2>&1";
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
  return r;
}

// Whether the run had a GPU: the context then describes it (its compute capability).
inline bool HasGpu(const nlohmann::json& json) {
  return json["context"].contains(std::string(schema::kCtxGpuCc));
}

// The message of a GPU case on a machine without a usable GPU: "unsupported: " and the reason
// the context's gpu_name gives ("no NVIDIA driver (libcuda.so.1 not found)", ...).
inline std::string NoGpuMessage(const nlohmann::json& json) {
  const std::string reason = json["context"].value(std::string(schema::kCtxGpuName), "");
  return std::string(schema::kStatusUnsupported) +
         (reason.rfind("not built", 0) == 0 ? "built without CUDA" : reason);
}

// Every name in the JSON is one of fixtures/schema/schema.h: context keys, entry fields, counters
// and the "dlbench" object's fields.
inline void CheckSchemaNames(const nlohmann::json& json) {
  for (const auto& [key, value] : json["context"].items())
    EXPECT_TRUE(schema::In(schema::kDlbenchContext, key) || schema::In(schema::kGbenchContext, key))
        << "context key outside the schema: " << key;
  for (const auto& b : json["benchmarks"]) {
    for (const auto& [key, value] : b.items())
      EXPECT_TRUE(schema::In(schema::kGbenchEntryFields, key) ||
                  schema::In(schema::kCounters, key) || key == schema::kResult)
          << b.value("name", "") << ": field outside the schema: " << key;
    if (!b.contains(std::string(schema::kResult))) continue;
    for (const auto& [key, value] : b[std::string(schema::kResult)].items())
      EXPECT_TRUE(schema::In(schema::kResultFields, key)) << "dlbench." << key;
    if (!b[std::string(schema::kResult)].contains(std::string(schema::kVerification))) continue;
    const auto& v = b[std::string(schema::kResult)][std::string(schema::kVerification)];
    for (const auto& [key, value] : v.items())
      EXPECT_TRUE(schema::In(schema::kVerificationFields, key)) << "verification." << key;
    EXPECT_TRUE(schema::In(schema::kDispositions, v.value(std::string(schema::kDisposition), "")))
        << v;
  }
}

// A case name's own keys (after bs, dt and pass) as a map; empty when the name does not parse.
inline std::map<std::string, std::string> KeysOf(const std::string& name) {
  std::map<std::string, std::string> out;
  const auto parsed = ParseName(name);
  if (!parsed) return out;
  for (const auto& [k, v] : parsed->keys) out[k] = v;
  return out;
}

// Checks every entry; returns how many were measured.
inline int CheckSmokeJson(const nlohmann::json& json, const std::string& family) {
  EXPECT_TRUE(json.is_object()) << "no JSON written";
  if (!json.is_object()) return 0;
  for (std::string_view key :
       {schema::kCtxVersion, schema::kCtxGitRevision, schema::kCtxGitBranch, schema::kCtxCpuModel,
        schema::kCtxCpuIsa, schema::kCtxOnednnVersion, schema::kCtxGpuName, schema::kCtxBuildType})
    EXPECT_TRUE(json["context"].contains(std::string(key))) << "context lacks " << key;
  CheckSchemaNames(json);
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
      if (parsed->device == "gpu" && !gpu) EXPECT_EQ(msg, NoGpuMessage(json)) << name;
      EXPECT_FALSE(b.contains("flop_per_s")) << name;
      continue;
    }
    ++measured;
    EXPECT_GT(b.value("real_time", 0.0), 0.0) << name;
    EXPECT_GT(b.value("flop_per_s", 0.0), 0.0) << name;
    EXPECT_GE(b.value("count", 0.0), 1.0) << name;
    // Some CPU time went into every timed loop, and no more than every CPU could give. The
    // process's CPU clock counts the other threads' runtime only to their last scheduler tick
    // (4 ms at HZ=250), so a smoke loop of tens of milliseconds may read up to ~20% over: the
    // bound catches a counter summed twice, not that.
    const double cpus = double(std::max(1u, std::thread::hardware_concurrency()));
    EXPECT_GT(b.value("cpu_util", 0.0), 0.0) << name;
    EXPECT_LE(b.value("cpu_util", 0.0), cpus * 1.25 + 0.1) << name;
    const std::string label = b.value("label", "");
    // The verification is structured: disposition, error and tolerance are fields, and the label
    // says the same. Mistrusted: checked, but faster than the machine's peak estimate allows.
    const auto& ver = b["dlbench"]["verification"];
    if (ver["disposition"] == "mistrusted") {
      EXPECT_NE(label.find("mistrusted: rel-L2"), std::string::npos) << name << ": " << label;
      EXPECT_NE(label.find("of the peak"), std::string::npos) << name << ": " << label;
    } else {
      EXPECT_EQ(ver["disposition"], "verified") << name;
      EXPECT_NE(label.find("verified rel-L2"), std::string::npos) << name << ": " << label;
    }
    EXPECT_LE(ver["error"].get<double>(), ver["tolerance"].get<double>()) << name;
    EXPECT_GT(ver["checked"].get<double>(), 0) << name;
    EXPECT_EQ(b["dlbench"]["workload"], parsed->workload) << name;
  }
  return measured;
}

// How far above 100 a CPU case's pct_peak may read before the measured peak counts as wrong.
// The peak is measured when the binary starts (rounds of each thread's best of four 20 ms trials,
// until two rounds agree); a case is timed later, for some milliseconds, and the clock the cores
// run at (turbo) moves in between with temperature, power and what the rest of the machine (or a
// VM's host) does: a few percent, on the 2-core CI VM up to 8% from one minute to the next; the
// case's timer adds its own spread. 10 points cover that and still catch a wrong peak: the nominal
// model was 1.5-1.65x too low.
inline constexpr double kPctPeakNoise = 10.0;

// Runs `binary` with `args` under a peak cache of its own (XDG_CACHE_HOME in a fresh folder,
// removed afterwards), so that the run measures the CPU peak itself, as on a machine's first run;
// `cached` says whether it wrote the cache file; `cpu_peaks`, when given, gets the file's object.
inline Result RunWithFreshPeakCache(const std::string& binary, const std::string& args,
                                    bool* cached, nlohmann::json* cpu_peaks = nullptr) {
  namespace fs = std::filesystem;
  const TempDir tmp("peak_cache");
  const fs::path& dir = tmp.path();
  std::optional<std::string> old;
  if (const char* v = std::getenv("XDG_CACHE_HOME")) old = v;
  ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  Result r = RunBinary(binary, args);
  if (old)
    ::setenv("XDG_CACHE_HOME", old->c_str(), 1);
  else
    ::unsetenv("XDG_CACHE_HOME");
  const fs::path cache = dir / "dlbench" / "cpu_peak.json";
  *cached = fs::is_regular_file(cache);
  if (cpu_peaks && *cached) {
    std::ifstream in(cache);
    *cpu_peaks = nlohmann::json::parse(in, nullptr, false);
  }
  return r;
}

// Every measured CPU case names the measured peak in its label, and its pct_peak (of the work it
// did) stays within kPctPeakNoise of 100. Returns the highest pct_peak and how many were checked.
inline std::pair<double, int> CheckCpuPctPeak(const nlohmann::json& json) {
  double highest = 0;
  int checked = 0;
  for (const auto& b : json["benchmarks"]) {
    const std::string name = b.value("name", "");
    if (name.find("/cpu/") == std::string::npos || b.value("error_occurred", false)) continue;
    EXPECT_TRUE(b.contains(std::string(schema::kPctPeak))) << name;
    if (!b.contains(std::string(schema::kPctPeak))) continue;
    const std::string label = b.value("label", "");
    EXPECT_NE(label.find(" measured ("), std::string::npos) << name << ": " << label;
    const double pct = b[std::string(schema::kPctPeak)].get<double>();
    EXPECT_LE(pct, 100.0 + kPctPeakNoise) << name << ": " << pct << "% of the peak: " << label;
    highest = std::max(highest, pct);
    ++checked;
  }
  return {highest, checked};
}

// --dlb_kernels=on on the CPU: every measured oneDNN case has a table from oneDNN's verbose mode
// whose largest row is the primitive the case times (`primitive`: "matmul", "convolution"), run
// once per Run(); every share is in (0, 1]. Returns how many tables were checked.
inline int CheckPrimitiveTables(const nlohmann::json& json, const std::string& primitive) {
  const std::string k(schema::kKernels);
  EXPECT_EQ(json["context"].value(std::string(schema::kCtxKernels), ""), "on");
  int checked = 0;
  for (const auto& b : json["benchmarks"]) {
    const std::string name = b.value("name", "");
    if (b.value("error_occurred", false) || name.find("/cpu/onednn/") == std::string::npos)
      continue;
    const auto& d = b[std::string(schema::kResult)];
    EXPECT_TRUE(d.contains(k)) << name << " has no kernel table";
    if (!d.contains(k)) continue;
    const auto& t = d[k];
    EXPECT_EQ(t.value(std::string(schema::kKernelsSource), ""), schema::kKernelsSourceOnednn);
    EXPECT_GT(t.value(std::string(schema::kKernelsRuns), 0), 0) << name;
    EXPECT_GT(t.value(std::string(schema::kKernelsSpanS), 0.0), 0.0) << name;
    const auto& rows = t[std::string(schema::kKernelsRows)];
    EXPECT_FALSE(rows.empty()) << name;
    if (rows.empty()) continue;
    ++checked;
    const auto& top = rows[0];
    EXPECT_EQ(top.value(std::string(schema::kKernelName), "").rfind(primitive + " ", 0), 0u)
        << name << ": " << top;
    EXPECT_EQ(top.value(std::string(schema::kKernelKind), ""), "primitive") << top;
    EXPECT_DOUBLE_EQ(top.value(std::string(schema::kKernelLaunchesPerRun), 0.0), 1.0) << name;
    double last = 1e300;
    for (const auto& r : rows) {
      const double share = r.value(std::string(schema::kKernelShare), -1.0);
      EXPECT_GT(share, 0.0) << name << ": " << r;
      EXPECT_LE(share, 1.0) << name << ": " << r;
      const double total = r.value(std::string(schema::kKernelTotalS), 0.0);
      EXPECT_LE(total, last) << name << ": rows not sorted by total_s";
      last = total;
      EXPECT_NEAR(r.value(std::string(schema::kKernelMeanS), 0.0) *
                      r.value(std::string(schema::kKernelLaunchesPerRun), 0.0) *
                      t.value(std::string(schema::kKernelsRuns), 0),
                  total, total * 1e-9 + 1e-15)
          << name;
    }
  }
  return checked;
}

}  // namespace dlb::testing
