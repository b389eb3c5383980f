// One temporary folder per test, for every test that writes files: unique to the process and the
// test (so parallel ctest runs never share one), created empty, removed with everything in it when
// the test ends. Use TempDir on its own, or derive a fixture from TempDirTest.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

namespace dlb::testing {

class TempDir {
 public:
  // <system temp>/dlb_<tag>_<pid>_<suite>_<test>; tag names the folder in a listing.
  explicit TempDir(const std::string& tag = "test") {
    std::string name = "dlb_" + tag + "_" + std::to_string(::getpid());
    if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info())
      name += std::string("_") + info->test_suite_name() + "_" + info->name();
    for (char& c : name)
      if (c == '/') c = '_';  // parameterised tests' names carry a '/'
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;  // a test that made a file read-only must not fail the teardown
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The path of `name` inside the folder, as a string.
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  // Writes `text` to `name` inside the folder and returns its path.
  std::string Write(const std::string& name, const std::string& text) const {
    const std::filesystem::path p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  // The text of `name` inside the folder, or of an absolute path; "" when it cannot be read.
  std::string Read(const std::string& name) const {
    std::ifstream in(path_ / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

 private:
  std::filesystem::path path_;
};

// A fixture for suites whose every test needs a folder: dir() is made before the test body.
class TempDirTest : public ::testing::Test {
 protected:
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
};

}  // namespace dlb::testing
