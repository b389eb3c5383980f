#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/data/generator.h"
#include "tests/support/temp_dir.h"
#include "tools/dataset/cli.h"

namespace dlb::dataset {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// A fresh folder per test, removed at the end.
class DatasetTest : public ::dlb::testing::TempDirTest {
 protected:
  // Small images keep the tests quick; the size test uses the defaults.
  Options Small(const std::string& name, uint64_t seed = 7) {
    Options o;
    o.out = dir().path() / name;
    o.images = 24;
    o.classes = 4;
    o.seed = seed;
    o.mean_width = 64;
    o.mean_height = 56;
    o.threads = 2;
    return o;
  }
};

TEST(DatasetPrng, SplitMix64MatchesTheReference) {
  uint64_t s = 0;  // the reference implementation's first outputs from state 0
  EXPECT_EQ(SplitMix64(s), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(SplitMix64(s), 0x6E789E6AA1B965F4ull);
}

TEST(DatasetPrng, UniformIntStaysInRange) {
  Rng r(3);
  std::set<int64_t> seen;
  for (int k = 0; k < 2000; ++k) {
    const int64_t v = r.UniformInt(75, 95);
    ASSERT_GE(v, 75);
    ASSERT_LE(v, 95);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 21u);
}

TEST(DatasetNames, PaddedNamesAndCifarSplit) {
  EXPECT_EQ(ImageFileName(5, 200), "img_000005.jpg");
  EXPECT_EQ(ImageFileName(5, 10000001), "img_00000005.jpg");
  EXPECT_EQ(ClassFolderName(3, 10), "class_003");
  EXPECT_EQ(ClassFolderName(3, 10000), "class_0003");
  EXPECT_EQ(Cifar10BatchSizes(60000),
            (std::vector<int64_t>{10000, 10000, 10000, 10000, 10000, 10000}));
  EXPECT_EQ(Cifar10BatchSizes(61), (std::vector<int64_t>{11, 10, 10, 10, 10, 10}));
  EXPECT_EQ(Cifar10BatchSizes(23), (std::vector<int64_t>{4, 4, 4, 4, 4, 3}));
}

TEST_F(DatasetTest, SameSeedGivesByteIdenticalFiles) {
  Options a = Small("a"), b = Small("b");
  b.threads = 1;  // the thread count must not matter
  const Result ra = Generate(a), rb = Generate(b);
  ASSERT_EQ(ra.images.size(), rb.images.size());
  for (const auto& im : ra.images)
    EXPECT_EQ(Slurp(a.out / im.path), Slurp(b.out / im.path)) << im.path;
}

TEST_F(DatasetTest, DifferentSeedGivesDifferentFiles) {
  Options a = Small("a", 7), b = Small("b", 8);
  const Result ra = Generate(a);
  Generate(b);
  for (const auto& im : ra.images)
    EXPECT_NE(Slurp(a.out / im.path), Slurp(b.out / im.path)) << im.path;
}

TEST_F(DatasetTest, EveryJpegDecodesToTheChosenSize) {
  Options o = Small("d");
  const Result r = Generate(o);
  tjhandle tj = tjInitDecompress();
  ASSERT_NE(tj, nullptr);
  std::set<std::vector<uint8_t>> distinct;
  for (const auto& im : r.images) {
    std::vector<uint8_t> data = Slurp(o.out / im.path);
    EXPECT_EQ(data.size(), im.bytes);
    int w = 0, h = 0, sub = -1, cs = -1;
    ASSERT_EQ(tjDecompressHeader3(tj, data.data(), data.size(), &w, &h, &sub, &cs), 0) << im.path;
    EXPECT_EQ(w, im.width) << im.path;
    EXPECT_EQ(h, im.height) << im.path;
    EXPECT_EQ(sub, TJSAMP_420) << im.path;
    std::vector<uint8_t> px(static_cast<size_t>(w) * h * 3);
    EXPECT_EQ(tjDecompress2(tj, data.data(), data.size(), px.data(), w, 0, h, TJPF_RGB, 0), 0)
        << im.path << ": " << tjGetErrorStr2(tj);
    distinct.insert(std::move(data));
  }
  tjDestroy(tj);
  EXPECT_EQ(distinct.size(), r.images.size());
}

TEST_F(DatasetTest, ClassFoldersHoldImageIModC) {
  Options o = Small("c");
  o.images = 30;
  o.classes = 7;
  const Result r = Generate(o);
  std::map<std::string, int> count;
  std::set<std::string> top;
  for (const auto& e : fs::directory_iterator(o.out)) {
    top.insert(e.path().filename().string());
    if (e.is_directory())
      for (const auto& f : fs::directory_iterator(e.path())) {
        EXPECT_EQ(f.path().extension(), ".jpg");
        ++count[e.path().filename().string()];
      }
  }
  EXPECT_EQ(top,
            (std::set<std::string>{"class_000", "class_001", "class_002", "class_003", "class_004",
                                   "class_005", "class_006", "dlbench-dataset.txt"}));
  for (int c = 0; c < 7; ++c)  // 30 = 4 * 7 + 2: classes 0 and 1 have one more
    EXPECT_EQ(count[ClassFolderName(c, 7)], c < 2 ? 5 : 4) << c;
  for (size_t i = 0; i < r.images.size(); ++i) {
    EXPECT_EQ(r.images[i].label, static_cast<int>(i % 7));
    EXPECT_EQ(r.images[i].path, ClassFolderName(static_cast<int>(i % 7), 7) + "/" +
                                    ImageFileName(static_cast<int64_t>(i), 30));
  }
}

TEST_F(DatasetTest, DefaultsAreImageNetLike) {
  Options o;
  o.out = dir().path() / "imagenet";
  o.images = 200;
  o.threads = 2;
  const Result r = Generate(o);
  ASSERT_EQ(r.images.size(), 200u);
  EXPECT_NEAR(r.mean_width, 400, 40);
  EXPECT_NEAR(r.mean_height, 350, 35);
  std::set<int> qualities;
  for (const auto& im : r.images) {
    EXPECT_GE(im.quality, 75);
    EXPECT_LE(im.quality, 95);
    qualities.insert(im.quality);
  }
  EXPECT_GT(qualities.size(), 10u);  // drawn, not fixed
  // Photo-like compression: a 400x350 photo at quality 75-95 is tens of kB, not a few.
  EXPECT_GT(r.mean_bytes, 15000);
  EXPECT_LT(r.mean_bytes, 200000);
  std::printf("sources: %s\nmean %.0f bytes/image, %.1fx%.1f px\n", r.source_desc.c_str(),
              r.mean_bytes, r.mean_width, r.mean_height);
}

TEST_F(DatasetTest, UsesTheSkimagePhotographsWhereInstalled) {
  if (DefaultSourceDirs().empty()) GTEST_SKIP() << "python3-skimage is not installed";
  Options o = Small("p");
  const Result r = Generate(o);
  ASSERT_FALSE(r.source_files.empty()) << r.source_desc;
  EXPECT_NE(r.source_desc.find("photographs"), std::string::npos) << r.source_desc;
  for (const auto& im : r.images) {
    EXPECT_GE(im.source, 0);
    EXPECT_LT(im.source, static_cast<int>(r.source_files.size()));
  }
}

TEST_F(DatasetTest, Cifar10HasTheBinaryLayout) {
  Options o = Small("cifar");
  o.format = Format::kCifar10;
  o.images = 61;
  o.classes = 10;
  const Result r = Generate(o);
  const auto sizes = Cifar10BatchSizes(61);
  int64_t i = 0;
  for (size_t b = 0; b < 6; ++b) {
    const std::vector<uint8_t> data = Slurp(o.out / Cifar10BatchNames()[b]);
    ASSERT_EQ(data.size(), static_cast<size_t>(sizes[b]) * 3073) << Cifar10BatchNames()[b];
    for (int64_t k = 0; k < sizes[b]; ++k, ++i) {
      EXPECT_EQ(data[static_cast<size_t>(k) * 3073], i % 10);
      EXPECT_EQ(r.images[static_cast<size_t>(i)].path, Cifar10BatchNames()[b]);
      EXPECT_EQ(r.images[static_cast<size_t>(i)].record, k);
    }
  }
  EXPECT_EQ(i, 61);
  EXPECT_TRUE(fs::exists(o.out / "batches.meta.txt"));
  EXPECT_DOUBLE_EQ(r.mean_bytes, 3073);

  // The same crop/flip/colour pipeline at 32x32: planar records repeat for the same seed.
  Options again = o;
  again.out = dir().path() / "cifar2";
  Generate(again);
  for (const auto& name : Cifar10BatchNames())
    EXPECT_EQ(Slurp(o.out / name), Slurp(again.out / name)) << name;

  o.classes = 5;
  o.out = dir().path() / "cifar3";
  EXPECT_THROW(Generate(o), UsageError);
}

TEST_F(DatasetTest, ProceduralWhenTheSourceFolderIsEmpty) {
  fs::create_directories(dir().path() / "empty");
  Options o = Small("proc");
  o.sources = dir().path() / "empty";
  o.mean_width = 200;
  o.mean_height = 160;
  const Result r = Generate(o);
  EXPECT_EQ(r.source_desc.rfind("procedural", 0), 0u) << r.source_desc;
  EXPECT_TRUE(r.source_files.empty());
  for (const auto& im : r.images) EXPECT_EQ(im.source, -1);
  EXPECT_GT(r.mean_bytes, 3000);  // textured, not flat colour

  Options again = o;
  again.out = dir().path() / "proc2";
  Generate(again);
  for (const auto& im : r.images)
    EXPECT_EQ(Slurp(o.out / im.path), Slurp(again.out / im.path)) << im.path;
}

TEST_F(DatasetTest, ANonEmptyOutputIsRefusedUnlessForced) {
  Options o = Small("full");
  fs::create_directories(o.out);
  std::ofstream(o.out / "keep.txt") << "x";
  EXPECT_THROW(Generate(o), UsageError);
  EXPECT_TRUE(fs::exists(o.out / "keep.txt"));

  const std::string out = o.out.string();
  const char* argv[] = {"dlbench-dataset", "--out", out.c_str(), "--images", "4",
                        "--classes",       "2",     "-q"};
  EXPECT_EQ(RunCli(8, argv), 2);

  o.force = true;
  Generate(o);
  EXPECT_FALSE(fs::exists(o.out / "keep.txt"));
  EXPECT_TRUE(fs::exists(o.out / "class_000"));
}

TEST_F(DatasetTest, NoTemporaryFolderIsLeft) {
  Options o = Small("clean");
  fs::create_directories(o.out);  // an empty folder is taken over
  Generate(o);
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(dir().path()))
    left.insert(e.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"clean"}));
}

TEST_F(DatasetTest, CliRejectsBadInputWithExit2) {
  const std::string out = (dir().path() / "cli").string();
  auto run = [&](std::vector<const char*> args) {
    args.insert(args.begin(), {"dlbench-dataset", "--out", out.c_str(), "-q"});
    return RunCli(static_cast<int>(args.size()), args.data());
  };
  EXPECT_EQ(run({"--bogus"}), 2);
  EXPECT_EQ(run({"--quality-min", "0"}), 2);
  EXPECT_EQ(run({"--quality-min", "90", "--quality-max", "80"}), 2);
  EXPECT_EQ(run({"--format", "tiff"}), 2);
  EXPECT_EQ(run({"--images", "many"}), 2);
  EXPECT_EQ(run({"--images", "3", "--classes", "5"}), 2);
  EXPECT_EQ(run({"--sources", "/nonexistent/dlb"}), 2);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(run({"--images", "5", "--classes", "5", "--mean-width", "32", "--mean-height", "32",
                 "-j", "2"}),
            0);
  EXPECT_TRUE(fs::exists(fs::path(out) / "class_004" / "img_000004.jpg"));
}

}  // namespace
}  // namespace dlb::dataset
