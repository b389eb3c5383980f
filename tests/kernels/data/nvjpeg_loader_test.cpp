#include "kernels/data/nvjpeg_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/data/dataset.h"
#include "kernels/data/generator.h"
#include "kernels/data/pipeline.h"
#include "tests/support/temp_dir.h"

namespace dlb::data {
namespace {

namespace fs = std::filesystem;

constexpr int kImages = 64;

// A procedural ImageFolder of kImages JPEGs ("clean"), and a copy with one truncated and one
// corrupt file ("broken"), made once for the suite and only where there is a GPU.
class NvJpegLoaderTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { tmp_.reset(); }

  void SetUp() override {
    if (cuda::DeviceCount() == 0) GTEST_SKIP() << cuda::NoDeviceReason();
    if (tmp_) return;
    tmp_ = std::make_unique<::dlb::testing::TempDir>("nvjpeg_loader");
    root_ = tmp_->path();
    dataset::Options o;
    o.out = root_ / "clean";
    o.images = kImages;
    o.classes = 4;
    o.seed = 11;
    o.procedural = true;
    o.threads = 2;
    dataset::Generate(o);
    fs::copy(root_ / "clean", root_ / "broken", fs::copy_options::recursive);
    const ImageFolder broken = ScanImageFolder(root_ / "broken");
    truncated_ = broken.files[5].path;
    corrupt_ = broken.files[40].path;
    fs::resize_file(truncated_, fs::file_size(truncated_) / 2);
    std::ofstream(corrupt_, std::ios::binary | std::ios::trunc) << "not a JPEG at all\n";
  }

  static LoaderShape Shape(const std::string& which, int batch) {
    LoaderShape s;
    s.dir = (root_ / which).string();
    s.batch = batch;
    s.workers = 2;
    s.side = 224;
    return s;
  }

  static std::unique_ptr<::dlb::testing::TempDir> tmp_;
  static fs::path root_;
  static std::string truncated_, corrupt_;
};

std::unique_ptr<::dlb::testing::TempDir> NvJpegLoaderTest::tmp_;
fs::path NvJpegLoaderTest::root_;
std::string NvJpegLoaderTest::truncated_, NvJpegLoaderTest::corrupt_;

TEST_F(NvJpegLoaderTest, MatchesTurboJpegAndTheHostAugmentation) {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
      RunConfig cfg;
      cfg.dtype = dt;
      cfg.layout = layout;
      NvJpegLoader op(Shape("clean", 16), cfg);
      op.Start();
      const Verdict v = op.Verify();
      op.Stop();
      SCOPED_TRACE(std::string(Name(dt)) + " " + Name(layout) + ": " + v.detail);
      EXPECT_TRUE(v.ok);
      EXPECT_EQ(v.disposition, Disposition::kVerified);
      EXPECT_EQ(v.metric, "psnr_db");
      EXPECT_GE(v.error, NvJpegLoader::kMinPsnrDb);
      EXPECT_EQ(v.tolerance, NvJpegLoader::kMinPsnrDb);
      RecordProperty(std::string("verify_") + std::string(Name(dt)) + "_" + Name(layout), v.detail);
    }
  }
}

// Every image once per epoch, in the stream's order, also across a Stop()/Start() and with a
// batch size that does not divide the dataset.
TEST_F(NvJpegLoaderTest, DeliversEveryImageOncePerEpoch) {
  const int batch = 24;
  NvJpegLoader op(Shape("clean", batch), RunConfig{});
  const ImageFolder& folder = *CachedImageFolder(Shape("clean", batch).dir);
  std::vector<int64_t> samples, positions;
  op.Start();
  for (int b = 0; b < 6; ++b) {
    if (b == 3) {  // the readers had fetched batch 3 already: it must come again, the same
      op.Stop();
      op.Start();
    }
    op.Run();
    const NvJpegLoader::DeviceBatch& db = op.batch();
    ASSERT_EQ(db.seq, b);
    ASSERT_EQ(db.size, batch);
    ASSERT_NE(db.data, nullptr);
    for (int64_t k = 0; k < db.size; ++k) {
      samples.push_back(db.samples[size_t(k)]);
      positions.push_back(db.positions[size_t(k)]);
      EXPECT_EQ(db.labels[size_t(k)], folder.files[size_t(db.samples[size_t(k)])].label);
      EXPECT_EQ(db.samples[size_t(k)], op.order().SampleAt(db.positions[size_t(k)]));
    }
  }
  op.Stop();
  for (size_t i = 0; i < positions.size(); ++i) ASSERT_EQ(positions[i], int64_t(i));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::set<int64_t> seen(samples.begin() + epoch * kImages,
                           samples.begin() + (epoch + 1) * kImages);
    EXPECT_EQ(seen.size(), size_t(kImages)) << "epoch " << epoch;
    EXPECT_EQ(*seen.begin(), 0);
    EXPECT_EQ(*seen.rbegin(), kImages - 1);
  }
  EXPECT_EQ(op.skipped(), 0);
}

TEST_F(NvJpegLoaderTest, SkipsTruncatedAndCorruptFilesOnceEachWithOneLine) {
  const int batch = 16;
  NvJpegLoader op(Shape("broken", batch), RunConfig{});
  const ImageFolder& folder = *CachedImageFolder(Shape("broken", batch).dir);
  std::map<std::string, int> delivered;
  int64_t total = 0;
  ::testing::internal::CaptureStderr();
  op.Start();
  for (int b = 0; b < 2 * kImages / batch; ++b) {  // two epochs
    op.Run();
    total += op.batch().size;
    for (int64_t s : op.batch().samples) ++delivered[folder.files[size_t(s)].path];
  }
  op.Stop();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(op.skipped(), 4);  // two files, two epochs
  EXPECT_EQ(total, 2 * kImages - 4);
  EXPECT_EQ(delivered.count(truncated_), 0u);
  EXPECT_EQ(delivered.count(corrupt_), 0u);
  EXPECT_EQ(delivered.size(), size_t(kImages - 2));
  for (const auto& [path, n] : delivered) EXPECT_EQ(n, 2) << path;
  for (const std::string& victim : {truncated_, corrupt_}) {
    size_t lines = 0;
    for (size_t at = err.find(victim); at != std::string::npos; at = err.find(victim, at + 1))
      ++lines;
    EXPECT_EQ(lines, 1u) << victim << " in:\n" << err;
  }
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  EXPECT_NE(err.find("not a JPEG"), std::string::npos) << err;
  const auto counters = op.Counters();
  const auto skipped = std::find_if(counters.begin(), counters.end(),
                                    [](const auto& c) { return c.first == "skipped_images"; });
  ASSERT_NE(skipped, counters.end());
  EXPECT_EQ(skipped->second, 4.0);
}

TEST_F(NvJpegLoaderTest, ReportsTheHardwareDecoderWhereTheGpuHasOne) {
  const std::string gpu = cuda::QueryDevice().name;
  const bool has_engines = gpu.find("H100") != std::string::npos ||
                           gpu.find("H200") != std::string::npos ||
                           gpu.find("A100") != std::string::npos;
  NvJpegLoader op(Shape("clean", 32), RunConfig{});
  const std::string label = op.label();
  RecordProperty("label", label);
  EXPECT_NE(label.find("nvJPEG"), std::string::npos) << label;
  if (!has_engines) {
    EXPECT_NE(label.find("GPU hybrid"), std::string::npos) << label;
    GTEST_SKIP() << gpu << " has no hardware JPEG decoder: " << label;
  }
  EXPECT_TRUE(op.hardware()) << gpu << ": " << label;
  EXPECT_GT(op.hw_engines(), 0);
  EXPECT_NE(label.find("hardware decoder, " + std::to_string(op.hw_engines()) + " engine"),
            std::string::npos)
      << label;
  op.Start();
  op.WarmUp();
  op.Run();
  op.Stop();
  const auto counters = op.Counters();
  std::map<std::string, double> c(counters.begin(), counters.end());
  EXPECT_EQ(c["hw_engines"], double(op.hw_engines()));
  // The generator writes baseline JPEGs, which the engine takes.
  EXPECT_GT(c["hw_fraction"], 0.99);
  EXPECT_GT(c["decode_us_per_item"], 0.0);
  EXPECT_GT(c["augment_us_per_item"], 0.0);
  EXPECT_GT(c["jpeg_bytes_per_s"], 0.0);
  EXPECT_GT(c["latency_p50_ms"], 0.0);
}

}  // namespace
}  // namespace dlb::data
