// The persistent autotune cache: the winner of an op's search, kept in a JSON file across runs so
// that a second run of the same case rebuilds the winner instead of timing every candidate again.
// The op builds the key (backend and library version, device, shape, dtype, layout, pass) and the
// winner's identity (whatever lets it rebuild that candidate); this file only keeps strings, so it
// has no vendor include. The file's place comes from the caller (the user's cache folder), set once
// per process with SetProcessCachePath.
//
//   autotune::Cache& cache = autotune::ProcessCache();
//   if (auto hit = cache.Find(key); hit && Rebuild(hit->winner)) ...   // "cached winner"
//   else { ...search...; cache.Record(key, {winner_id, best_ms}); }     // "searched N candidates"
//
// File format: {"<key>": {"winner": "...", "ms": 0.123, "date": "2026-11-23T15:04:05Z"}, ...}.
// The file is read once per process (on the first Find); Record merges the entry into what is on
// disk at that moment and replaces the file atomically (temporary file + rename, under an advisory
// lock), so processes sharing the folder keep each other's entries. A missing file is an empty
// cache; an unreadable or malformed one is one line on stderr and an empty cache; a folder that
// cannot be written is one line on stderr and the run goes on with the entry kept in memory.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/dtype.h"
#include "kernels/common/shapes.h"

namespace dlb::autotune {

// The counter an op reports its setup with: plan building and search, or the cached winner's
// rebuild (fixtures/schema/schema.h names it too).
inline constexpr const char* kSetupMsCounter = "setup_ms";

struct CacheEntry {
  std::string winner;  // the op's identity of the winning candidate
  double ms = 0;       // its time per run when searched; 0 when it was the only candidate
  std::string date;    // UTC, ISO 8601, when it was recorded
};

class Cache {
 public:
  // path "": nothing is read or written; entries live in memory for the process.
  explicit Cache(std::string path = "");

  // The entry for key, reading the file on the first call.
  std::optional<CacheEntry> Find(const std::string& key);

  // Keeps the entry (date set to now when empty) and writes it through: the file as it is on disk
  // now, this entry over it, replaced atomically. False when the file could not be written (said
  // once per process on stderr); the entry stays in memory either way.
  bool Record(const std::string& key, CacheEntry entry);

  const std::string& path() const { return path_; }
  size_t size();

 private:
  void LoadLocked();

  std::string path_;
  std::mutex mu_;
  bool loaded_ = false;
  bool warned_write_ = false;
  std::map<std::string, CacheEntry> entries_;
};

// The process's cache, at the path last given to SetProcessCachePath ("" until then: in memory
// only). Setting a different path replaces the cache object; the same path keeps it.
void SetProcessCachePath(const std::string& path);
Cache& ProcessCache();

// "n64 c64 h56 w56 k64 r3 s3 stride1x1 pad1x1 dil1x1 g1": every dimension of a convolution.
std::string ConvShapeKey(const ConvShape& s);

// A convolution case's key: "<library> | <device> | conv <pass> <shape> | <dtype> | <layout>",
// library and device as the op names them ("cudnn 9.14.0", "NVIDIA H100 80GB HBM3 sm_90").
std::string ConvKey(const std::string& library, const std::string& device, ConvPass pass,
                    const ConvShape& s, DType dtype, const char* layout);

// Fields of a winner identity written as "a=1;b=x": the value for a field, "" when absent.
std::string Field(const std::string& winner, const std::string& name);

// The label's words for a winner taken from the cache: "cached winner (0.0169 ms when searched
// 2026-11-23T15:04:05Z)", or "(the only candidate, searched ...)" when it was not timed.
std::string CachedWinnerLabel(const CacheEntry& e);

// UTC now as "2026-11-23T15:04:05Z".
std::string UtcNow();

}  // namespace dlb::autotune
