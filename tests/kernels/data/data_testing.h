// Small generated datasets for the data-loading tests: a fresh folder per test, removed after.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/data/generator.h"
#include "tests/support/temp_dir.h"

namespace dlb::data::testing {

namespace fs = std::filesystem;

class DataTest : public ::dlb::testing::TempDirTest {
 protected:
  // n procedural JPEGs of about w x h in `classes` class folders (photographs are not needed:
  // these tests check pixels against a reference, not realism).
  fs::path MakeJpegs(const std::string& name, int n, int classes = 3, int w = 160, int h = 120) {
    dataset::Options o;
    o.out = dir().path() / name;
    o.images = n;
    o.classes = classes;
    o.mean_width = w;
    o.mean_height = h;
    o.procedural = true;
    o.threads = 2;
    dataset::Generate(o);
    return o.out;
  }
  fs::path MakeCifar(const std::string& name, int n) {
    dataset::Options o;
    o.out = dir().path() / name;
    o.format = dataset::Format::kCifar10;
    o.images = n;
    o.procedural = true;
    o.threads = 2;
    dataset::Generate(o);
    return o.out;
  }
  static std::vector<uint8_t> Slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
  }
  static void Write(const fs::path& p, const std::vector<uint8_t>& bytes) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
};

}  // namespace dlb::data::testing
