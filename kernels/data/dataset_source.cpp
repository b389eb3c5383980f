#include "kernels/data/dataset_source.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "kernels/data/dataset.h"
#include "kernels/data/generator.h"
#include "kernels/data/loader.h"

namespace dlb::data {

namespace fs = std::filesystem;

namespace {

struct Options {
  std::string data;
  std::vector<int> workers;
  int64_t images = 0;
  int depth = 4;
};
Options g_options;

std::string ParsePositive(const std::string& v, int64_t* out) {
  try {
    size_t used = 0;
    const long long n = std::stoll(v, &used);
    if (used != v.size() || n <= 0) throw std::invalid_argument(v);
    *out = n;
    return "";
  } catch (const std::exception&) {
    return "expects a positive integer, got '" + v + "'";
  }
}

int UsableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
}

}  // namespace

std::vector<SourceFlag> SourceFlags() {
  return {
      {"data",
       "DIR: the dataset to read (an ImageFolder of JPEGs, or CIFAR-10's binary batches); "
       "without it, one is generated into the user's cache on first use",
       [](const std::string& v) -> std::string {
         if (v.empty()) return "expects a directory";
         g_options.data = v;
         return "";
       }},
      {"workers", "N[,N...]: worker threads of the CPU pipelines (default: the tier's sweep)",
       [](const std::string& v) -> std::string {
         std::vector<int> out;
         std::stringstream in(v);
         std::string part;
         while (std::getline(in, part, ',')) {
           int64_t n = 0;
           if (std::string e = ParsePositive(part, &n); !e.empty())
             return "expects positive integers joined by ',', got '" + v + "'";
           if (n > 1024) return "expects at most 1024 workers, got " + part;
           out.push_back(int(n));
         }
         if (out.empty()) return "expects positive integers joined by ','";
         g_options.workers = out;
         return "";
       }},
      {"dataload_images",
       "N: images in a generated dataset (default: smoke 256, default 4096, full 20000)",
       [](const std::string& v) { return ParsePositive(v, &g_options.images); }},
      {"dataload_depth", "N: batches in each pipeline's ring, 2..64 (default 4)",
       [](const std::string& v) -> std::string {
         int64_t n = 0;
         if (std::string e = ParsePositive(v, &n); !e.empty()) return e;
         if (n < 2 || n > 64) return "expects 2..64, got " + v;
         g_options.depth = int(n);
         return "";
       }},
  };
}

int64_t GeneratedImages(bool smoke, bool full) {
  if (g_options.images > 0) return g_options.images;
  if (smoke) return 256;
  return full ? 20000 : 4096;
}

std::vector<int> WorkerCounts(bool smoke) {
  if (!g_options.workers.empty()) return g_options.workers;
  if (smoke) return {2};
  const int cpus = UsableCpus();
  std::vector<int> out;
  for (int w = 1; w < cpus; w *= 2) out.push_back(w);
  out.push_back(cpus);
  return out;
}

int RingDepth() { return g_options.depth; }

std::string DatasetDir(const DatasetWant& want) {
  const bool cifar = want.cifar;
  if (!g_options.data.empty()) {
    std::error_code ec;
    if (!fs::is_directory(g_options.data, ec))
      throw DataError(g_options.data + ": --dlb_data is not a readable directory");
    if (LooksLikeCifar10(g_options.data) == cifar) return g_options.data;
  }
  if (want.cache_dir.empty())
    throw DataError(
        "no dataset: neither --dlb_data, nor XDG_CACHE_HOME or HOME for the generated one");
  dataset::Options o;
  o.format = cifar ? dataset::Format::kCifar10 : dataset::Format::kImageFolder;
  o.images = want.images;
  o.seed = 1;
  // The generator's version is part of the name: a change to what it makes is a new folder.
  const std::string name = std::string(cifar ? "cifar10" : "imagenet") + "-v1-" +
                           std::to_string(o.images) + "-seed" + std::to_string(o.seed);
  o.out = fs::path(want.cache_dir) / "datasets" / name;
  std::error_code ec;
  if (fs::is_directory(o.out, ec) && !fs::is_empty(o.out, ec)) return o.out.string();
  fs::create_directories(o.out.parent_path(), ec);
  if (ec) throw DataError(o.out.parent_path().string() + ": cannot create (" + ec.message() + ")");
  std::fprintf(stderr, "dataload: generating %lld %s images into %s (once; reused after)\n",
               static_cast<long long>(o.images), cifar ? "CIFAR-10" : "JPEG", o.out.c_str());
  const auto t0 = std::chrono::steady_clock::now();
  int last_pct = -1;
  o.progress = [&last_pct](int64_t done, int64_t all) {
    const int pct = all > 0 ? int(100 * done / all) : 100;
    if (pct / 10 != last_pct / 10) {
      std::fprintf(stderr, "dataload:   %3d%%\n", pct);
      last_pct = pct;
    }
  };
  try {
    const dataset::Result r = dataset::Generate(o);
    std::fprintf(stderr, "dataload: %s: %s, mean %.0f bytes per image, %.1f s\n", o.out.c_str(),
                 r.source_desc.c_str(), r.mean_bytes,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } catch (const dataset::Error& e) {
    // Another process may have made it meanwhile.
    if (fs::is_directory(o.out, ec) && !fs::is_empty(o.out, ec)) return o.out.string();
    throw DataError(std::string("generating the dataset: ") + e.what());
  }
  return o.out.string();
}

std::string OpenDatasetOrExit(const DatasetWant& want, const char* binary) {
  try {
    std::string dir = DatasetDir(want);
    if (want.cifar)
      CachedCifar10(dir);
    else
      CachedImageFolder(dir);
    return dir;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", binary, e.what());
    std::exit(2);
  }
}

}  // namespace dlb::data
