// Deterministic dataset generator: an ImageFolder tree of JPEGs (class_000/img_000000.jpg ...)
// whose sizes and compression are like real photographs, or CIFAR-10's binary batches. The data
// loading benchmarks call Generate() to build their cached dataset on first use; dlbench-dataset
// is the same call from the command line.
//
// Every image i depends only on (seed, i) and the source photographs: one xoshiro256** stream per
// image, seeded through splitmix64, draws in a fixed order (see PlanImage). Nothing uses
// std::uniform_*_distribution, whose output differs between standard libraries, so the same seed
// gives the same pixels everywhere and, with the same libjpeg-turbo, byte-identical files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/rng.h"

namespace dlb::dataset {

// A failure while generating (unreadable source, a write that failed): exit 1 in the CLI.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A request that cannot be honoured as given (bad value, output folder in the way): exit 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// splitmix64 and xoshiro256** (kernels/common/rng.h), shared with the data pipelines' augmentation.
using ::dlb::Rng;
using ::dlb::SplitMix64;

// The seed of image i's stream: splitmix64 of (splitmix64(seed) xor i), so neighbouring seeds and
// neighbouring images share nothing.
uint64_t ImageSeed(uint64_t seed, uint64_t i);

enum class Format { kImageFolder, kCifar10 };

// The pipeline's ranges: documented here once, used by PlanImage.
struct PipelineRanges {
  double size_jitter = 0.25;         // target width, height: uniform in mean * [0.75, 1.25)
  double area_min = 0.35;            // crop area share of the source: uniform in [0.35, 1)
  double area_max = 1.0;             //
  double aspect_jitter = 4.0 / 3.0;  // crop aspect / target aspect: log-uniform [3/4, 4/3)
  double flip_p = 0.5;               // horizontal flip
  double gain_min = 0.8;             // per-channel gain: uniform in [0.8, 1.2)
  double gain_max = 1.2;             //
  double offset_abs = 20.0;          // per-channel offset: uniform in [-20, 20)
};

struct Options {
  std::filesystem::path out;  // the dataset folder; written as a hidden sibling, then renamed
  Format format = Format::kImageFolder;
  int64_t images = 1000;
  int classes = 10;  // image i is in class i mod classes; CIFAR-10 needs 10
  uint64_t seed = 1;
  int mean_width = 400;  // ImageNet's train set averages about 400x350
  int mean_height = 350;
  int quality_min = 75;  // JPEG quality, uniform in [min, max]
  int quality_max = 95;
  // Source photographs: a folder of colour PNG/JPEG files. Empty: the first known location that
  // has some (DefaultSourceDirs). A folder without usable photos: procedural content.
  std::filesystem::path sources;
  bool procedural = false;  // ignore photographs even where there are some
  bool force = false;       // replace a non-empty --out
  int threads = 0;          // 0: all hardware threads
  PipelineRanges ranges;
  // Called now and then from the calling thread with (images done, images in all).
  std::function<void(int64_t, int64_t)> progress;
};

// What was made of one image.
struct ImageInfo {
  std::string path;    // relative to the dataset folder (CIFAR-10: its batch file)
  int64_t record = 0;  // CIFAR-10: the record's index in its batch file
  int label = 0;
  int width = 0;  // as encoded
  int height = 0;
  int quality = 0;  // 0 for CIFAR-10 (raw pixels)
  int source = -1;  // index into Result::source_files; -1: procedural
  bool flipped = false;
  uint64_t bytes = 0;  // file size (CIFAR-10: the record, 3073)
};

struct Result {
  std::filesystem::path out;
  std::vector<ImageInfo> images;
  std::vector<std::string> source_files;  // the photographs used, in the order indexed
  std::string source_desc;                // "7 photographs from DIR" or "procedural (why)"
  uint64_t total_bytes = 0;
  double mean_bytes = 0;
  double mean_width = 0;
  double mean_height = 0;
};

// Where the known Debian/Ubuntu packages put colour photographs (python3-skimage's data folder,
// for each python3.* under /usr/lib and /usr/local/lib), in search order.
std::vector<std::filesystem::path> DefaultSourceDirs();

// The photographs of python3-skimage's data folder that are real colour photos (its other files
// are synthetic, grayscale, or mostly black): the default selection from a DefaultSourceDirs()
// folder. A folder given explicitly contributes every colour PNG/JPEG it holds.
const std::vector<std::string>& KnownPhotoNames();

// Checks the options (UsageError naming the offending one); Generate calls it first.
void Validate(const Options& o);

// Writes the dataset into a hidden sibling of o.out and renames it into place at the end, so an
// interrupted run never leaves a half dataset at o.out. o.out existing and not empty: UsageError
// unless o.force.
Result Generate(const Options& o);

// CIFAR-10 split of n images: test_batch gets n / 6 (10000 of 60000), the 5 data batches share the
// rest as evenly as possible, the first ones one more. Images 0.. fill data_batch_1 first.
std::vector<int64_t> Cifar10BatchSizes(int64_t n);
const std::vector<std::string>& Cifar10BatchNames();

// The file name of image i (img_000000.jpg) and class c's folder (class_000): zero-padded to at
// least 6 and 3 digits, more when n or classes need them.
std::string ImageFileName(int64_t i, int64_t n);
std::string ClassFolderName(int c, int classes);

}  // namespace dlb::dataset
