// The persistent autotune cache: lookup, insert, persistence across processes (two Cache objects on
// one file), merging, corrupt and unwritable files, atomic replacement.
#include "kernels/common/autotune_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/temp_dir.h"

namespace dlb::autotune {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCacheFile = "dlbench/autotune.json";

// A fresh folder per test, removed afterwards.
class AutotuneCache : public ::dlb::testing::TempDirTest {
 protected:
  std::string Path() const { return dir() / kCacheFile; }
  // Writes the cache file as another process would.
  void Put(const std::string& text) const { dir().Write(kCacheFile, text); }
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

TEST_F(AutotuneCache, MissingFileIsEmptyAndInsertIsFound) {
  Cache c(Path());
  EXPECT_FALSE(c.Find("k").has_value());
  EXPECT_EQ(c.size(), 0u);
  EXPECT_TRUE(c.Record("k", {"engine=7;knobs=k2=3,k14=4", 0.25, ""}));
  const auto hit = c.Find("k");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->winner, "engine=7;knobs=k2=3,k14=4");
  EXPECT_DOUBLE_EQ(hit->ms, 0.25);
  EXPECT_EQ(hit->date.size(), 20u) << "UTC ISO 8601 set on record: " << hit->date;
  EXPECT_EQ(CachedWinnerLabel(*hit), "cached winner (0.25 ms when searched " + hit->date + ")");
  EXPECT_EQ(CachedWinnerLabel({"w", 0, "d"}), "cached winner (the only candidate, searched d)");
  EXPECT_EQ(Field(hit->winner, "engine"), "7");
  EXPECT_EQ(Field(hit->winner, "knobs"), "k2=3,k14=4") << "a value may hold '='";
  EXPECT_EQ(Field(hit->winner, "knob"), "") << "names match whole";
  EXPECT_EQ(Field(hit->winner, "impl"), "");
}

TEST_F(AutotuneCache, PersistsToTheFileAndANewProcessReadsIt) {
  {
    Cache c(Path());
    ASSERT_TRUE(
        c.Record("cudnn 9.14 | H100 sm_90 | fwd", {"engine=1", 0.5, "2026-11-23T00:00:00Z"}));
  }
  const nlohmann::json j = nlohmann::json::parse(Slurp(Path()));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["cudnn 9.14 | H100 sm_90 | fwd"]["winner"], "engine=1");
  EXPECT_EQ(j["cudnn 9.14 | H100 sm_90 | fwd"]["date"], "2026-11-23T00:00:00Z");
  Cache again(Path());
  const auto hit = again.Find("cudnn 9.14 | H100 sm_90 | fwd");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->winner, "engine=1");
  EXPECT_DOUBLE_EQ(hit->ms, 0.5);
}

TEST_F(AutotuneCache, FileIsReadOncePerCache) {
  Cache c(Path());
  EXPECT_FALSE(c.Find("a").has_value());
  Put(R"({"a": {"winner": "x", "ms": 1, "date": ""}})");
  EXPECT_FALSE(c.Find("a").has_value()) << "a lookup never goes back to the disk";
  EXPECT_TRUE(Cache(Path()).Find("a").has_value());
}

TEST_F(AutotuneCache, RecordMergesWithWhatOtherProcessesWrote) {
  Cache one(Path()), two(Path());
  EXPECT_FALSE(one.Find("a").has_value());  // both read the (missing) file first
  EXPECT_FALSE(two.Find("b").has_value());
  ASSERT_TRUE(one.Record("a", {"A", 1, ""}));
  ASSERT_TRUE(two.Record("b", {"B", 2, ""}));
  ASSERT_TRUE(one.Record("c", {"C", 3, ""}));
  Cache fresh(Path());
  EXPECT_EQ(fresh.size(), 3u) << Slurp(Path());
  EXPECT_EQ(fresh.Find("a")->winner, "A");
  EXPECT_EQ(fresh.Find("b")->winner, "B");
  EXPECT_EQ(fresh.Find("c")->winner, "C");
  ASSERT_TRUE(two.Record("a", {"A2", 0.5, ""}));
  EXPECT_EQ(Cache(Path()).Find("a")->winner, "A2") << "a new search overwrites its key";
  EXPECT_EQ(two.Find("c")->winner, "C") << "a record also brings in the others' entries";
}

TEST_F(AutotuneCache, ConcurrentRecordersLoseNoEntry) {
  constexpr int kThreads = 4, kEach = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Cache own(Path());  // one per thread: as separate processes, sharing only the file
      for (int i = 0; i < kEach; ++i)
        own.Record("t" + std::to_string(t) + "." + std::to_string(i), {"w", 1, ""});
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(Cache(Path()).size(), size_t(kThreads * kEach));
  for (const auto& e : fs::directory_iterator(fs::path(Path()).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos)
        << "left behind: " << e.path();
}

TEST_F(AutotuneCache, CorruptFileIsOneLineAndEmpty) {
  for (const std::string bad : {"{\"a\": {\"winner\": \"x\"", "[1, 2]", "\x01\x02 not json"}) {
    Put(bad);
    Cache c(Path());
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(c.Find("a").has_value()) << bad;
    EXPECT_EQ(c.size(), 0u);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("autotune cache"), std::string::npos) << err;
    EXPECT_NE(err.find("treated as empty"), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_TRUE(c.Record("a", {"x", 1, ""})) << "a corrupt file is replaced by a good one";
    EXPECT_EQ(Cache(Path()).Find("a")->winner, "x");
  }
}

TEST_F(AutotuneCache, MalformedEntriesAreSkippedOthersKept) {
  Put(R"({"good": {"winner": "w", "ms": 2.5, "date": "d"},
                  "no_winner": {"ms": 1}, "empty": {"winner": ""}, "number": 3,
                  "bad_ms": {"winner": "v", "ms": "fast"}})");
  Cache c(Path());
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.Find("good")->winner, "w");
  EXPECT_DOUBLE_EQ(c.Find("bad_ms")->ms, 0);
}

TEST_F(AutotuneCache, UnwritableFolderIsOneLineAndTheRunGoesOn) {
  // A cache folder under a regular file cannot be made, even by root; a read-only folder can be
  // written by root only, so that case runs for other users.
  dir().Write("file", "x");
  std::vector<std::string> paths = {dir() / "file/dlbench/autotune.json"};
  const fs::path ro = dir().path() / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  if (::geteuid() != 0) paths.push_back((ro / "autotune.json").string());
  for (const std::string& path : paths) {
    Cache c(path);
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(c.Record("a", {"x", 1, ""})) << path;
    EXPECT_FALSE(c.Record("b", {"y", 1, ""})) << path;
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "said once: " << err;
    EXPECT_NE(err.find("not written"), std::string::npos) << err;
    EXPECT_EQ(c.Find("a")->winner, "x") << "kept in memory";
  }
  fs::permissions(ro, fs::perms::owner_all);
}

TEST_F(AutotuneCache, ReplacementIsAtomic) {
  // A reader racing the writers sees either no file or a whole one, never a part.
  Cache seed(Path());
  ASSERT_TRUE(seed.Record("seed", {std::string(4096, 'x'), 1, ""}));
  std::atomic<bool> done{false};
  std::thread writer([&] {
    Cache w(Path());
    for (int i = 0; i < 200; ++i) w.Record("k" + std::to_string(i), {std::string(512, 'y'), 1, ""});
    done = true;
  });
  int reads = 0, bad = 0;
  while (!done) {
    const std::string text = Slurp(Path());
    ++reads;
    bad += nlohmann::json::parse(text, nullptr, false).is_discarded();
  }
  writer.join();
  EXPECT_EQ(bad, 0) << "of " << reads << " reads";
}

TEST_F(AutotuneCache, EmptyPathKeepsEntriesInMemory) {
  Cache c("");
  EXPECT_TRUE(c.Record("a", {"x", 1, ""}));
  EXPECT_EQ(c.Find("a")->winner, "x");
}

TEST_F(AutotuneCache, ProcessCacheFollowsItsPath) {
  SetProcessCachePath(Path());
  Cache& c = ProcessCache();
  EXPECT_EQ(c.path(), Path());
  SetProcessCachePath(Path());
  EXPECT_EQ(&ProcessCache(), &c) << "the same path keeps the cache and what it read";
  SetProcessCachePath("");
  EXPECT_EQ(ProcessCache().path(), "");
}

TEST(AutotuneCacheKey, ConvShapeKeyNamesEveryDimension) {
  ConvShape s;
  s.n = 64, s.c = 3, s.h = 224, s.w = 225, s.k = 64, s.r = 7, s.s = 5;
  s.stride_h = 2, s.stride_w = 3, s.pad_h = 3, s.pad_w = 1, s.dil_h = 1, s.dil_w = 2, s.groups = 1;
  EXPECT_EQ(ConvShapeKey(s), "n64 c3 h224 w225 k64 r7 s5 stride2x3 pad3x1 dil1x2 g1");
}

}  // namespace
}  // namespace dlb::autotune
