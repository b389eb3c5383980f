#include "kernels/data/dataset.h"

#include "tests/kernels/data/data_testing.h"

namespace dlb::data {
namespace {

using testing::DataTest;
namespace fs = std::filesystem;

TEST_F(DataTest, ScanListsJpegsByClassThenNameAndIgnoresTheRest) {
  const auto dir = MakeJpegs("set", 12, 3);
  Write(dir / "class_001" / "notes.txt", {1, 2, 3});
  fs::create_directories(dir / ".partial");
  Write(dir / ".partial" / "x.jpg", Slurp(dir / "class_000" / "img_000000.jpg"));
  fs::create_directories(dir / "empty_class");
  const ImageFolder f = ScanImageFolder(dir);
  ASSERT_EQ(f.files.size(), 12u);
  EXPECT_EQ(f.classes, (std::vector<std::string>{"class_000", "class_001", "class_002"}));
  uint64_t total = 0;
  for (size_t i = 0; i < f.files.size(); ++i) {
    EXPECT_EQ(f.files[i].bytes, fs::file_size(f.files[i].path));
    total += f.files[i].bytes;
    if (i > 0) {
      EXPECT_LE(f.files[i - 1].label, f.files[i].label);
      if (f.files[i - 1].label == f.files[i].label) EXPECT_LT(f.files[i - 1].path, f.files[i].path);
    }
    EXPECT_EQ(fs::path(f.files[i].path).parent_path().filename().string(),
              f.classes[size_t(f.files[i].label)]);
  }
  EXPECT_EQ(f.total_bytes, total);
}

TEST_F(DataTest, AMissingEmptyOrFlatFolderIsADataErrorNamingIt) {
  try {
    ScanImageFolder(dir().path() / "nope");
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("nope: no such data directory"), std::string::npos)
        << e.what();
  }
  fs::create_directories(dir().path() / "empty");
  EXPECT_THROW(ScanImageFolder(dir().path() / "empty"), DataError);
  // JPEGs directly in the folder are not an ImageFolder (torchvision finds no class either).
  fs::create_directories(dir().path() / "flat");
  Write(dir().path() / "flat" / "a.jpg", {0xFF, 0xD8, 0xFF});
  EXPECT_THROW(ScanImageFolder(dir().path() / "flat"), DataError);
  Write(dir().path() / "file", {1});
  EXPECT_THROW(ScanImageFolder(dir().path() / "file"), DataError);
}

TEST_F(DataTest, Cifar10LoadsTheGeneratedBatchesAndRejectsBrokenOnes) {
  const auto dir = MakeCifar("cifar", 60);
  EXPECT_TRUE(LooksLikeCifar10(dir));
  const Cifar10 train = LoadCifar10(dir, true);
  const Cifar10 test = LoadCifar10(dir, false);
  EXPECT_EQ(train.count + test.count, 60);
  EXPECT_EQ(test.count, 10);
  EXPECT_EQ(train.pixels.size(), size_t(train.count) * kCifarPixels);
  // The first record of data_batch_1 as stored.
  const auto raw = Slurp(dir / "data_batch_1.bin");
  EXPECT_EQ(train.labels[0], raw[0]);
  EXPECT_TRUE(std::equal(train.pixels.begin(), train.pixels.begin() + kCifarPixels, raw.begin() + 1));

  auto cut = raw;
  cut.pop_back();
  Write(dir / "data_batch_1.bin", cut);
  EXPECT_THROW(LoadCifar10(dir, true), Error);
  auto bad = raw;
  bad[0] = 12;
  Write(dir / "data_batch_1.bin", bad);
  try {
    LoadCifar10(dir, true);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 12"), std::string::npos) << e.what();
  }
  const fs::path none = DataTest::dir().path() / "none";
  fs::create_directories(none);
  EXPECT_FALSE(LooksLikeCifar10(none));
  EXPECT_THROW(LoadCifar10(none, true), DataError);
}

TEST_F(DataTest, ReadFileNamesTheFileItCannotRead) {
  std::vector<uint8_t> out;
  try {
    ReadFile((dir().path() / "missing.jpg").string(), &out);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.jpg: "), std::string::npos);
  }
  Write(dir().path() / "x.bin", {1, 2, 3, 4});
  ReadFile((dir().path() / "x.bin").string(), &out);
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace dlb::data
