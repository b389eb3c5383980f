// bench_dataload at the smoke tier on a small generated dataset: names, verification, the
// family's counters; and what a broken data folder does (one line, exit 2; a corrupt JPEG is
// skipped and counted, the run goes on).
#include "kernels/data/generator.h"
#include "tests/benchmarks/smoke.h"
#include "tests/support/temp_dir.h"

namespace dlb::testing {
namespace {

namespace fs = std::filesystem;

class BenchDataload : public TempDirTest {
 protected:
  fs::path Jpegs(const std::string& name, int n) {
    dataset::Options o;
    o.out = dir().path() / name;
    o.images = n;
    o.classes = 2;
    o.mean_width = 160;
    o.mean_height = 120;
    o.procedural = true;
    dataset::Generate(o);
    return o.out;
  }
  // The binary with its cache (generated datasets, CPU peak) in the test's folder.
  Result Run(const std::string& args) {
    ::setenv("XDG_CACHE_HOME", (dir().path() / "cache").c_str(), 1);
    return RunBinary(DLB_BENCH_DATALOAD, "--benchmark_min_time=0.01 " + args);
  }
};

TEST_F(BenchDataload, SmokeTierGeneratesItsDatasetsOnceAndVerifiesEveryCase) {
  Result r = Run("--dlb_tier=smoke --dlb_dataload_images=64");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dataload: generating 64 JPEG images into "), std::string::npos)
      << r.output;
  CheckSchemaNames(r.json);
  std::set<std::string> workloads;
  for (const auto& b : r.json["benchmarks"]) {
    const std::string name = b["name"];
    auto parsed = ParseName(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(parsed->family, "dataload");
    const bool gpu = parsed->device == "gpu";
    EXPECT_EQ(parsed->backend, gpu                                    ? "nvjpeg"
                               : parsed->workload == "cifar10.crop32" ? "raw"
                                                                      : "turbojpeg")
        << name;
    EXPECT_EQ(BuildName(*parsed) + "/manual_time", name);
    ASSERT_FALSE(b.value("error_occurred", false)) << name << ": " << b.value("error_message", "");
    workloads.insert(parsed->workload);
    EXPECT_GT(b.value("items_per_s", 0.0), 0.0) << name;
    EXPECT_EQ(b.value("bs", 0.0), 32.0) << name;
    // The CPU pipelines sweep the tier's workers (smoke: 2); the GPU one reads with 4 threads.
    EXPECT_EQ(b.value("workers", 0.0), gpu ? 4.0 : 2.0) << name;
    EXPECT_GT(b.value("latency_max_ms", 0.0), 0.0) << name;
    if (!gpu) {
      EXPECT_GT(b.value("worker_util", 0.0), 0.0) << name;
      EXPECT_LE(b.value("worker_util", 0.0), 1.1) << name;
    }
    EXPECT_EQ(b.value("skipped_images", -1.0), 0.0) << name;
    const bool jpeg = parsed->backend != "raw";
    EXPECT_EQ(b.value("jpeg_bytes_per_s", 0.0) > 0, jpeg) << name;
    EXPECT_EQ(b.value("decode_us_per_item", 0.0) > 0, jpeg) << name;
    EXPECT_FALSE(b.contains("flop_per_s")) << name;
    const auto& ver = b["dlbench"]["verification"];
    EXPECT_EQ(ver["disposition"], "verified") << name;
    if (ver["metric"] == schema::kMetricPsnrDb)  // higher is better
      EXPECT_GE(ver["error"].get<double>(), ver["tolerance"].get<double>()) << name;
    else
      EXPECT_LE(ver["error"].get<double>(), ver["tolerance"].get<double>()) << name;
  }
  EXPECT_EQ(workloads, (std::set<std::string>{"imagenet.rrc224", "cifar10.crop32"}));
  EXPECT_NE(r.json["context"].value("turbojpeg_version", ""), "");
  EXPECT_NE(r.json["context"].value("dataload_datasets", "").find("64 images"), std::string::npos);
  // The second run reuses the cache.
  Result again = Run("--dlb_tier=smoke --dlb_dataload_images=64 --benchmark_filter=cifar");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(again.output.find("dataload: generating"), std::string::npos) << again.output;
}

// A run whose filter selects no case of a workload neither generates nor checks its dataset: a
// filter for the CIFAR-10 cases on an empty cache generates no JPEG folder.
TEST_F(BenchDataload, AWorkloadTheFilterSelectsNothingOfGetsNoDataset) {
  Result r = Run("--dlb_tier=smoke --dlb_dataload_images=64 --benchmark_filter=cifar");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("JPEG images into"), std::string::npos) << r.output;
  const std::string datasets = r.json["context"].value("dataload_datasets", "");
  EXPECT_NE(datasets.find("cifar10.crop32"), std::string::npos) << datasets;
  EXPECT_EQ(datasets.find("imagenet"), std::string::npos) << datasets;
  ASSERT_FALSE(r.json["benchmarks"].empty());
  for (const auto& b : r.json["benchmarks"])
    EXPECT_NE(b["name"].get<std::string>().find("cifar10.crop32"), std::string::npos) << b["name"];
}

TEST_F(BenchDataload, AnEmptyOrMissingDataFolderIsOneLineAndExit2) {
  fs::create_directories(dir().path() / "empty");
  for (const fs::path& p : {dir().path() / "empty", dir().path() / "missing"}) {
    Result r = Run("--dlb_tier=smoke --dlb_data=" + p.string() + " --benchmark_filter=imagenet");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("bench_dataload: " + p.string()), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  Result bad = Run("--dlb_workers=0");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

TEST_F(BenchDataload, ACorruptJpegIsSkippedCountedAndTheRunGoesOn) {
  const fs::path data = Jpegs("set", 12);
  const fs::path bad = data / "class_001" / "img_000005.jpg";
  fs::resize_file(bad, fs::file_size(bad) / 2);
  Result r = Run("--dlb_tier=smoke --dlb_data=" + data.string() +
                 " --benchmark_filter=cpu/.*imagenet.*dt:f32");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dataload: skipped " + bad.string() + ": "), std::string::npos)
      << r.output;
  ASSERT_EQ(r.json["benchmarks"].size(), 1u) << r.json.dump();
  const auto& b = r.json["benchmarks"][0];
  ASSERT_FALSE(b.value("error_occurred", false)) << b.value("error_message", "");
  // Batches of 32 from 12 images: the bad one comes round in every batch that is timed.
  EXPECT_GE(b.value("skipped_images", 0.0), 1.0);
  EXPECT_EQ(b["dlbench"]["verification"]["disposition"], "verified");
}

// A malformed row of a dataload_*.csv stops the run before any case (exit 1) with one error that
// names the file and the line (blank and comment lines count), as the other families' loaders do.
TEST_F(BenchDataload, MalformedWorkloadFileExitsOneNamingFileAndLine) {
  const std::string header = "name,count,network,format,side,tier\n";
  const std::string good = "imagenet.rrc224,1,imagenet,imagefolder,224,smoke\n";
  struct Case {
    const char* what;
    std::string csv;
    std::string want;  // in the output
  };
  const Case cases[] = {
      {"bad format", header + "imagenet.rrc224,1,imagenet,png,224,smoke\n",
       "dataload_bad.csv:2: column 'format': expected imagefolder or cifar10, got 'png'"},
      {"zero side", "# workloads\n\n" + header + good + "small,1,imagenet,imagefolder,0,smoke\n",
       "dataload_bad.csv:5: column 'side': expected 8..4096"},
      {"huge side", header + good + "huge,1,imagenet,imagefolder,5000,smoke\n",
       "dataload_bad.csv:3: column 'side': expected 8..4096"},
      {"side not a number", header + "imagenet.rrc224,1,imagenet,imagefolder,big,smoke\n",
       "dataload_bad.csv:2: column 'side': expected a non-negative integer, got 'big'"},
      {"cifar10 side", header + "cifar10.crop224,1,cifar10,cifar10,224,smoke\n",
       "dataload_bad.csv:2: column 'side': CIFAR-10 images are 32"},
      {"a row short of a column", header + good + "short,1,imagenet,imagefolder,smoke\n",
       "dataload_bad.csv:3: expected 6 fields, got 5"},
      {"a header without the side column",
       "# no side\nname,count,network,format,tier\nimagenet.rrc224,1,imagenet,imagefolder,smoke\n",
       "dataload_bad.csv:2: header lacks column 'side'"},
  };
  int k = 0;
  for (const Case& c : cases) {
    const fs::path workloads = dir().path() / ("workloads_" + std::to_string(k++));
    fs::create_directories(workloads);
    std::ofstream(workloads / "dataload_bad.csv") << c.csv;
    Result r = Run("--dlb_tier=smoke --dlb_workloads=" + workloads.string());
    EXPECT_EQ(r.exit_code, 1) << c.what << ": " << r.output;
    EXPECT_NE(r.output.find(c.want), std::string::npos) << c.what << ": " << r.output;
    EXPECT_EQ(r.output.find("dataload: generating"), std::string::npos)
        << c.what << ": " << r.output;
    EXPECT_EQ(r.output.find("dataload/"), std::string::npos) << c.what << ": no case ran";
  }
}

}  // namespace
}  // namespace dlb::testing
