// dlbench-dataset: the generator from the command line.
#include "tools/dataset/cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "kernels/data/generator.h"

namespace dlb::dataset {

int RunCli(int argc, const char* const* argv) {
  Options o;
  std::string format = "imagefolder";
  std::string sources;
  bool quiet = false;
  CLI::App app{
      "dlbench-dataset: a deterministic dataset of photo-like JPEGs in class folders "
      "(ImageFolder), or CIFAR-10 binary batches, made from (seed, image index) alone"};
  app.name("dlbench-dataset");
  app.add_option("--out,-o", o.out, "dataset folder to create")->required();
  app.add_option("--format", format, "imagefolder (default) | cifar10")
      ->check(CLI::IsMember({"imagefolder", "cifar10"}));
  app.add_option("--images,-n", o.images, "number of images (default 1000)");
  app.add_option("--classes,-c", o.classes, "number of classes; image i is in class i mod C (10)");
  app.add_option("--seed,-s", o.seed, "seed (default 1)");
  app.add_option("--mean-width", o.mean_width, "mean width in pixels; uniform within +-25% (400)");
  app.add_option("--mean-height", o.mean_height, "mean height in pixels; +-25% (350)");
  app.add_option("--quality-min", o.quality_min, "lowest JPEG quality (75)");
  app.add_option("--quality-max", o.quality_max, "highest JPEG quality (95)");
  app.add_option("--sources", sources,
                 "folder of colour PNG/JPEG photographs to derive images from (default: "
                 "python3-skimage's data folder; none usable: procedural content)");
  app.add_flag("--procedural", o.procedural, "procedural content even where photographs exist");
  app.add_flag("--force", o.force, "replace an existing non-empty --out");
  app.add_option("--threads,-j", o.threads, "worker threads (default 0: all)");
  app.add_flag("--quiet,-q", quiet, "no progress lines");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "dlbench-dataset: %s (see --help)\n", e.what());
    return 2;
  }
  o.format = format == "cifar10" ? Format::kCifar10 : Format::kImageFolder;
  o.sources = sources;

  // A line at each tenth, not a redrawn line: logs of CI runs stay readable.
  int64_t shown = -1;
  if (!quiet)
    o.progress = [&](int64_t done, int64_t total) {
      const int64_t tenth = done * 10 / total;
      if (tenth == shown) return;
      shown = tenth;
      std::fprintf(stderr, "dlbench-dataset: %lld/%lld images\n", static_cast<long long>(done),
                   static_cast<long long>(total));
    };

  try {
    Validate(o);
    Result r = Generate(o);
    std::printf("sources: %s\n", r.source_desc.c_str());
    std::printf(
        "wrote %zu images (%s) to %s: %llu bytes, mean %.0f bytes/image, mean %.1fx%.1f px\n",
        r.images.size(), format.c_str(), r.out.string().c_str(),
        static_cast<unsigned long long>(r.total_bytes), r.mean_bytes, r.mean_width, r.mean_height);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "dlbench-dataset: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlbench-dataset: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace dlb::dataset
