// The datasets the data-loading family reads: an ImageFolder tree of JPEGs (one subfolder per
// class, as torchvision.datasets.ImageFolder) and CIFAR-10's binary batches. Scanning reads only
// directory entries and sizes; the pipelines read the files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/common/error.h"

namespace dlb::data {

// The data directory cannot be used at all (missing, unreadable, no images): the benchmark says
// so in one line and exits 2, as for a bad flag.
class DataError : public Error {
 public:
  using Error::Error;
};

struct ImageFile {
  std::string path;  // absolute or relative to the working directory, as found
  int label = 0;     // the index of its class folder in sorted order
  uint64_t bytes = 0;
};

struct ImageFolder {
  std::filesystem::path root;
  std::vector<std::string> classes;  // sorted folder names
  std::vector<ImageFile> files;      // by class, then by file name
  uint64_t total_bytes = 0;
  double MeanBytes() const { return files.empty() ? 0 : double(total_bytes) / files.size(); }
};

// Every *.jpg / *.jpeg (any case) one level below root's class folders, as ImageFolder lists
// them. DataError when root is missing, not a directory, unreadable, or holds no JPEG.
ImageFolder ScanImageFolder(const std::filesystem::path& root);

// The whole file. Error("<path>: <why>") when it cannot be read.
void ReadFile(const std::string& path, std::vector<uint8_t>* out);

// CIFAR-10's binary version: records of 1 label byte + 3072 pixel bytes (R, G, B planes of
// 32x32), in data_batch_1..5.bin (train) or test_batch.bin.
inline constexpr int kCifarSide = 32;
inline constexpr int kCifarPixels = 3 * kCifarSide * kCifarSide;
inline constexpr int kCifarRecord = 1 + kCifarPixels;

struct Cifar10 {
  std::vector<uint8_t> pixels;  // count x 3 x 32 x 32
  std::vector<uint8_t> labels;  // count
  int64_t count = 0;
  uint64_t file_bytes = 0;
};

// The train split (the data batches present, at least one) or the test split. DataError when
// the folder has none of them; Error naming the file when one is not a whole number of records
// or holds a label above 9.
Cifar10 LoadCifar10(const std::filesystem::path& dir, bool train);

// Where a dataset lives: dir itself when it has class folders or CIFAR-10 batches, else its
// "cifar-10-batches-bin" subfolder (the archive's layout) for CIFAR-10.
bool LooksLikeCifar10(const std::filesystem::path& dir);

}  // namespace dlb::data
