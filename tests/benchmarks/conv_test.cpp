#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "benchmarks/conv/family.h"
#include "tests/benchmarks/smoke.h"
#include "tests/support/temp_dir.h"

namespace dlb::testing {
namespace {

TEST(BenchConv, SmokeTierWritesValidJson) {
  Result r = RunBinary(DLB_BENCH_CONV, "--dlb_tier=smoke --benchmark_min_time=0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int measured = CheckSmokeJson(r.json, "conv");
#ifdef DLBENCH_HAVE_ONEDNN
  EXPECT_GT(measured, 0) << "no CPU case was measured";
#endif
  // Every pass is registered for every layer.
  int passes[3] = {0, 0, 0};
  for (const auto& b : r.json["benchmarks"]) {
    std::string name = b["name"];
    passes[0] += name.find("/pass:fwd") != std::string::npos;
    passes[1] += name.find("/pass:bwd_data") != std::string::npos;
    passes[2] += name.find("/pass:bwd_filter") != std::string::npos;
  }
  EXPECT_GT(passes[0], 0);
  EXPECT_EQ(passes[0], passes[1]);
  EXPECT_EQ(passes[0], passes[2]);
}

// The share of a convolution's taps that fall inside the input, counted one by one (a library
// skips those on the zero padding): flop_per_s / conventional_flop_per_s (the 4x4 layers of the
// CIFAR ResNet-18, padded by 1: 100 of 144).
double RealTapShare(const ConvShape& s) {
  auto along = [](int64_t in, int64_t out, int64_t taps, int64_t stride, int64_t pad, int64_t dil) {
    int64_t inside = 0;
    for (int64_t o = 0; o < out; ++o)
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t i = o * stride - pad + t * dil;
        inside += i >= 0 && i < in;
      }
    return double(inside) / double(out * taps);
  };
  return along(s.h, s.P(), s.r, s.stride_h, s.pad_h, s.dil_h) *
         along(s.w, s.Q(), s.s, s.stride_w, s.pad_w, s.dil_w);
}

std::map<std::string, ConvShape> WorkloadShapes() {
  std::map<std::string, ConvShape> shapes;
  for (const std::string& file : WorkloadFiles("conv_"))
    for (const conv::Workload& w : conv::LoadWorkloads(file)) shapes[w.basics.name] = w.shape;
  return shapes;
}

// --dlb_kernels=on: each oneDNN convolution's table holds its convolution primitive, once per
// Run().
TEST(BenchConv, KernelsOnRecordsTheConvolutionPrimitiveOfEachCpuCase) {
#ifndef DLBENCH_HAVE_ONEDNN
  GTEST_SKIP() << "no CPU backend built";
#endif
  Result r = RunBinary(DLB_BENCH_CONV,
                       "--dlb_tier=smoke --dlb_device=cpu --dlb_dtypes=f32 --dlb_kernels=on "
                       "--benchmark_min_time=0.02");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  CheckSmokeJson(r.json, "conv");
  EXPECT_GT(CheckPrimitiveTables(r.json, "convolution"), 0) << r.output;
}

TEST(BenchConv, RealTapShareCountsTapsInsideTheInput) {
  ConvShape s;
  s.c = s.k = 8;
  s.h = s.w = 4;
  s.r = s.s = 3;
  s.pad_h = s.pad_w = 1;
  EXPECT_DOUBLE_EQ(RealTapShare(s), 100.0 / 144.0);
  s.pad_h = s.pad_w = 0;
  EXPECT_DOUBLE_EQ(RealTapShare(s), 1.0);
}

// The smoke tier's CPU convolutions against the peak the binary measured for itself: their
// pct_peak counts the work done (the taps inside the input), and the conventional rate beside it
// counts every tap.
TEST(BenchConv, SmokeCpuCasesStayWithinTheMeasuredPeak) {
#ifndef DLBENCH_HAVE_ONEDNN
  GTEST_SKIP() << "no CPU backend built";
#endif
  const std::map<std::string, ConvShape> shapes = WorkloadShapes();
  bool cached = false;
  Result r = RunWithFreshPeakCache(DLB_BENCH_CONV, "--dlb_tier=smoke --dlb_device=cpu", &cached);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  EXPECT_TRUE(cached) << "the measured peak was not cached";
  const auto [highest, checked] = CheckCpuPctPeak(r.json);
  EXPECT_GT(checked, 0);
  for (const auto& b : r.json["benchmarks"]) {
    if (b.value("error_occurred", false)) continue;
    const std::string name = b.value("name", "");
    const auto it = shapes.find(b["dlbench"].value("workload", ""));
    ASSERT_NE(it, shapes.end()) << name << "'s workload is in no conv_*.csv";
    const double work = b.value(std::string(schema::kFlopPerS), 0.0),
                 conventional = b.value(std::string(schema::kConventionalFlopPerS), 0.0);
    ASSERT_GT(conventional, 0) << name;
    EXPECT_NEAR(work / conventional, RealTapShare(it->second), 1e-9) << name;
    EXPECT_EQ(b.value(std::string(schema::kFewerOpsThanCounted), -1.0), 0.0)
        << name << ": oneDNN is asked for the direct algorithm";
  }
  std::printf("highest CPU pct_peak: %.1f%% (%d cases); %s\n", highest, checked,
              r.json["context"].value(std::string(schema::kCtxCpuPeakMeasured), "").c_str());
}

// CIFAR ResNet-18's layer4 3x3 at batch 1 (4x4 map, 512 channels, 3x3 filter, padding 1): 52.4
// MFLOP of work in each pass, 75.5 MFLOP counted the conventional way.
TEST(BenchConv, Layer4OfCifarResNet18CountsItsWorkInEveryPass) {
#ifndef DLBENCH_HAVE_ONEDNN
  GTEST_SKIP() << "no CPU backend built";
#endif
  const std::string workload = "resnet18_cifar.layer4.conv3x3";
  const std::map<std::string, ConvShape> shapes = WorkloadShapes();
  ASSERT_TRUE(shapes.count(workload));
  ConvShape s = shapes.at(workload);
  s.n = 1;
  EXPECT_NEAR(s.Flops(), 52.4e6, 0.05e6);
  EXPECT_NEAR(s.ConventionalFlops(), 75.5e6, 0.05e6);
  Result r =
      RunBinary(DLB_BENCH_CONV,
                "--dlb_tier=smoke --dlb_device=cpu --dlb_dtypes=f32 --benchmark_min_time=0.01 "
                "--benchmark_filter='" +
                    workload + "/bs:1/'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.json["benchmarks"].size(), 3u) << r.output;
  for (const auto& b : r.json["benchmarks"]) {
    const std::string name = b.value("name", "");
    ASSERT_FALSE(b.value("error_occurred", false)) << name;
    const double work = b.value(std::string(schema::kFlopPerS), 0.0),
                 conventional = b.value(std::string(schema::kConventionalFlopPerS), 0.0);
    EXPECT_NEAR(work / conventional, 100.0 / 144.0, 1e-9) << name;
  }
}

TEST(BenchConv, BatchSizesFlagAndLayerCounts) {
  Result r = RunBinary(DLB_BENCH_CONV,
                       "--dlb_tier=smoke --dlb_batch_sizes=3 --dlb_device=cpu "
                       "--dlb_dtypes=f32 --benchmark_min_time=0.01 "
                       "--benchmark_filter='conv/cpu/onednn/resnet18_cifar[.].*/pass:fwd'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  ASSERT_FALSE(r.json["benchmarks"].empty());
  for (const auto& b : r.json["benchmarks"]) {
    EXPECT_NE(b["name"].get<std::string>().find("/bs:3/"), std::string::npos);
    if (!b.value("error_occurred", false)) EXPECT_EQ(b["bs"].get<double>(), 3);
  }
}

// Runs bench_conv with XDG_CACHE_HOME at `xdg` (the autotune cache and the CPU peak live there).
Result RunWithCacheHome(const std::string& xdg, const std::string& args) {
  std::optional<std::string> old;
  if (const char* v = std::getenv("XDG_CACHE_HOME")) old = v;
  ::setenv("XDG_CACHE_HOME", xdg.c_str(), 1);
  Result r = RunBinary(DLB_BENCH_CONV, args);
  if (old)
    ::setenv("XDG_CACHE_HOME", old->c_str(), 1);
  else
    ::unsetenv("XDG_CACHE_HOME");
  return r;
}

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The autotune cache end to end on oneDNN: a first run with an empty cache folder searches every
// case and records its winner; a second run rebuilds the recorded winners (its labels say so,
// verification still passes) and writes nothing; heuristic and search (the old --dlb_conv_algo
// spelling too) leave the cache alone; a corrupt cache file is one line and searched over.
TEST(BenchConv, AutotuneCacheSecondRunReusesTheWinners) {
#ifndef DLBENCH_HAVE_ONEDNN
  GTEST_SKIP() << "no CPU backend built";
#endif
  namespace fs = std::filesystem;
  const TempDir tmp("autotune_e2e");
  const fs::path& xdg = tmp.path();
  const fs::path file = xdg / "dlbench" / "autotune.json";
  const std::string args =
      "--dlb_tier=smoke --dlb_device=cpu --dlb_dtypes=f32 --dlb_batch_sizes=1 "
      "--benchmark_min_time=0.01 --benchmark_filter='conv/cpu/onednn/catdog64.conv4/'";
  // Each measured case's label and setup_ms, after checking it was verified.
  const auto cases = [](const Result& r) {
    std::map<std::string, std::pair<std::string, double>> out;
    EXPECT_EQ(r.exit_code, 0) << r.output;
    if (!r.json.is_object()) return out;
    for (const auto& b : r.json["benchmarks"]) {
      EXPECT_FALSE(b.value("error_occurred", false)) << b;
      EXPECT_EQ(b[std::string(schema::kResult)][std::string(schema::kVerification)].value(
                    std::string(schema::kDisposition), ""),
                schema::kVerified)
          << b;
      EXPECT_TRUE(b.contains(std::string(schema::kSetupMs))) << b;
      out[b["name"]] = {b.value("label", ""), b.value(std::string(schema::kSetupMs), -1.0)};
    }
    return out;
  };

  const auto first = cases(RunWithCacheHome(xdg.string(), args));
  ASSERT_EQ(first.size(), 3u) << "fwd, bwd_data, bwd_filter";
  for (const auto& [name, c] : first) {
    EXPECT_NE(c.first.find("no cached winner; searched "), std::string::npos) << c.first;
    EXPECT_NE(c.first.find(", recorded, "), std::string::npos) << c.first;
    EXPECT_GT(c.second, 0) << name;
  }
  ASSERT_TRUE(fs::is_regular_file(file));
  const std::string recorded = ReadText(file);
  const nlohmann::json entries = nlohmann::json::parse(recorded, nullptr, false);
  ASSERT_TRUE(entries.is_object()) << recorded;
  EXPECT_EQ(entries.size(), 3u) << recorded;
  for (const auto& [key, e] : entries.items()) {
    EXPECT_EQ(key.rfind("onednn ", 0), 0u) << key;
    EXPECT_NE(key.find(" | conv "), std::string::npos) << key;
    EXPECT_NE(key.find(" n1 c64 "), std::string::npos) << key;
    EXPECT_NE(key.find(" | f32 | nchw"), std::string::npos) << key;
    EXPECT_NE(e.value("winner", "").find("impl="), std::string::npos) << e;
    EXPECT_TRUE(e.contains("ms") && e.contains("date")) << e;
  }

  const auto second = cases(RunWithCacheHome(xdg.string(), args));
  ASSERT_EQ(second.size(), 3u);
  for (const auto& [name, c] : second) {
    EXPECT_NE(c.first.find(", cached winner ("), std::string::npos) << c.first;
    EXPECT_EQ(c.first.find("no cached winner"), std::string::npos) << c.first;
    EXPECT_EQ(c.first.substr(0, c.first.find(',')),
              first.at(name).first.substr(0, first.at(name).first.find(',')))
        << "the recorded implementation";
  }
  EXPECT_EQ(ReadText(file), recorded) << "a run that found every winner writes nothing";

  for (const char* other : {"--dlb_autotune=heuristic", "--dlb_conv_algo=heuristic"})
    for (const auto& [name, c] : cases(RunWithCacheHome(xdg.string(), args + " " + other))) {
      EXPECT_NE(c.first.find(", heuristic: "), std::string::npos) << other << ": " << c.first;
      EXPECT_EQ(c.first.find("cached"), std::string::npos) << other << ": " << c.first;
    }
  for (const char* other : {"--dlb_autotune=search", "--dlb_conv_algo=search"})
    for (const auto& [name, c] : cases(RunWithCacheHome(xdg.string(), args + " " + other))) {
      EXPECT_NE(c.first.find(", searched "), std::string::npos) << other << ": " << c.first;
      EXPECT_EQ(c.first.find("cached"), std::string::npos) << other << ": " << c.first;
      EXPECT_EQ(c.first.find("recorded"), std::string::npos) << other << ": " << c.first;
    }
  EXPECT_EQ(ReadText(file), recorded) << "heuristic and search leave the cache alone";

  std::ofstream(file) << "{\"truncated\": ";
  const Result corrupt = RunWithCacheHome(xdg.string(), args);
  EXPECT_NE(corrupt.output.find("autotune cache"), std::string::npos) << corrupt.output;
  EXPECT_NE(corrupt.output.find("treated as empty"), std::string::npos) << corrupt.output;
  for (const auto& [name, c] : cases(corrupt))
    EXPECT_NE(c.first.find("no cached winner; searched "), std::string::npos) << c.first;
  EXPECT_EQ(nlohmann::json::parse(ReadText(file), nullptr, false).size(), 3u);
}

TEST(BenchConv, OversizedBatchIsOutOfMemoryAndTheRunGoesOn) {
  // Batch 1,000,000 of a 256-channel 4x4 layer needs ~122 GiB: reported, not a crash.
  Result r = RunBinary(DLB_BENCH_CONV,
                       "--dlb_tier=smoke --dlb_device=cpu --dlb_dtypes=f32 "
                       "--dlb_batch_sizes=1000000,1 --benchmark_min_time=0.01 "
                       "--benchmark_filter='resnet18_cifar.layer4.conv3x3/.*pass:fwd'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.json.is_object()) << r.output;
  int oom = 0, measured = 0;
  for (const auto& b : r.json["benchmarks"]) {
    const std::string name = b["name"];
    if (name.find("/bs:1000000/") != std::string::npos) {
      EXPECT_EQ(b.value("error_message", "").rfind("out of memory: needs ", 0), 0u) << b;
      ++oom;
    } else if (!b.value("error_occurred", false)) {
      ++measured;
    }
  }
  EXPECT_EQ(oom, 1);
  EXPECT_EQ(measured, 1);
}

}  // namespace
}  // namespace dlb::testing
