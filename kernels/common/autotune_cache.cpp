#include "kernels/common/autotune_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <system_error>
#include <utility>

namespace dlb::autotune {

namespace {

namespace fs = std::filesystem;

constexpr const char* kWinner = "winner";
constexpr const char* kMs = "ms";
constexpr const char* kDate = "date";

enum class Read { kOk, kMissing, kBad };

// The file's entries into *out (over what is there). A missing file is not a fault; one that
// cannot be read or parsed, or is not an object, is kBad with the reason in *why. Malformed entries
// inside a good object are skipped: one bad line must not cost every other entry.
Read ReadFile(const std::string& path, std::map<std::string, CacheEntry>* out, std::string* why) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return ec ? (*why = ec.message(), Read::kBad) : Read::kMissing;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = std::strerror(errno);
    return Read::kBad;
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    *why = "read error";
    return Read::kBad;
  }
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) {
    *why = "not JSON";
    return Read::kBad;
  }
  if (!j.is_object()) {
    *why = "not a JSON object";
    return Read::kBad;
  }
  for (const auto& [key, v] : j.items()) {
    if (!v.is_object()) continue;
    const auto w = v.find(kWinner);
    if (w == v.end() || !w->is_string() || w->get<std::string>().empty()) continue;
    CacheEntry e;
    e.winner = w->get<std::string>();
    if (const auto ms = v.find(kMs); ms != v.end() && ms->is_number()) e.ms = ms->get<double>();
    if (!std::isfinite(e.ms) || e.ms < 0) e.ms = 0;
    if (const auto d = v.find(kDate); d != v.end() && d->is_string())
      e.date = d->get<std::string>();
    (*out)[key] = std::move(e);
  }
  return Read::kOk;
}

std::string Dump(const std::map<std::string, CacheEntry>& entries) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, e] : entries) j[key] = {{kWinner, e.winner}, {kMs, e.ms}, {kDate, e.date}};
  return j.dump(2) + "\n";
}

// An advisory lock on "<path>.lock" for the read-merge-write of Record, so two processes recording
// at once do not each write a file without the other's entry. Without the lock (a file system
// that refuses it) the write still happens: the rename keeps the file whole, at worst one entry
// is searched again next run.
class FileLock {
 public:
  explicit FileLock(const std::string& path)
      : fd_(::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// Writes text next to path and renames it over path: readers see the old file or the new one,
// never a part. Empty string on success, else the reason.
std::string WriteAtomically(const std::string& path, const std::string& text) {
  std::random_device rd;
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd() & 0xffffff);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return tmp + ": " + std::strerror(errno);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return tmp + ": write failed";
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::error_code ec;
    fs::remove(tmp, ec);
    return path + ": " + why;
  }
  return "";
}

std::mutex g_process_mu;
std::unique_ptr<Cache> g_process;

}  // namespace

Cache::Cache(std::string path) : path_(std::move(path)) {}

void Cache::LoadLocked() {
  if (loaded_) return;
  loaded_ = true;
  if (path_.empty()) return;
  std::string why;
  std::map<std::string, CacheEntry> read;
  if (ReadFile(path_, &read, &why) == Read::kBad) {
    std::fprintf(stderr, "dlbench: autotune cache %s unreadable (%s): treated as empty\n",
                 path_.c_str(), why.c_str());
    return;
  }
  entries_ = std::move(read);
}

std::optional<CacheEntry> Cache::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  LoadLocked();
  const auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

size_t Cache::size() {
  std::lock_guard<std::mutex> lock(mu_);
  LoadLocked();
  return entries_.size();
}

bool Cache::Record(const std::string& key, CacheEntry entry) {
  std::lock_guard<std::mutex> lock(mu_);
  LoadLocked();
  if (entry.date.empty()) entry.date = UtcNow();
  entries_[key] = entry;
  if (path_.empty()) return true;
  std::string why;
  std::error_code ec;
  fs::create_directories(fs::path(path_).parent_path(), ec);
  if (ec) {
    why = fs::path(path_).parent_path().string() + ": " + ec.message();
  } else {
    FileLock file_lock(path_);
    // Entries other processes recorded since this one read the file stay; this process's own
    // entries win over theirs for the keys it searched. A file gone bad since is replaced.
    std::map<std::string, CacheEntry> merged;
    std::string read_why;
    ReadFile(path_, &merged, &read_why);
    for (const auto& [k, e] : entries_) merged[k] = e;
    why = WriteAtomically(path_, Dump(merged));
    if (why.empty()) {
      entries_ = std::move(merged);
      return true;
    }
  }
  if (!warned_write_) {
    warned_write_ = true;
    std::fprintf(stderr,
                 "dlbench: autotune cache not written (%s): winners kept for this run only\n",
                 why.c_str());
  }
  return false;
}

void SetProcessCachePath(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_process_mu);
  if (g_process && g_process->path() == path) return;
  g_process = std::make_unique<Cache>(path);
}

Cache& ProcessCache() {
  std::lock_guard<std::mutex> lock(g_process_mu);
  if (!g_process) g_process = std::make_unique<Cache>();
  return *g_process;
}

std::string ConvShapeKey(const ConvShape& s) {
  std::ostringstream k;
  k << "n" << s.n << " c" << s.c << " h" << s.h << " w" << s.w << " k" << s.k << " r" << s.r << " s"
    << s.s << " stride" << s.stride_h << "x" << s.stride_w << " pad" << s.pad_h << "x" << s.pad_w
    << " dil" << s.dil_h << "x" << s.dil_w << " g" << s.groups;
  return k.str();
}

std::string ConvKey(const std::string& library, const std::string& device, ConvPass pass,
                    const ConvShape& s, DType dtype, const char* layout) {
  return library + " | " + device + " | conv " + Name(pass) + " " + ConvShapeKey(s) + " | " +
         std::string(Name(dtype)) + " | " + layout;
}

std::string Field(const std::string& winner, const std::string& name) {
  size_t pos = 0;
  while (pos <= winner.size()) {
    const size_t end = std::min(winner.find(';', pos), winner.size());
    const std::string item = winner.substr(pos, end - pos);
    const size_t eq = item.find('=');
    if (eq != std::string::npos && item.compare(0, eq, name) == 0 && eq == name.size())
      return item.substr(eq + 1);
    pos = end + 1;
  }
  return "";
}

std::string CachedWinnerLabel(const CacheEntry& e) {
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3g ms when", e.ms);
  return "cached winner (" + (e.ms > 0 ? std::string(ms) : "the only candidate,") + " searched " +
         (e.date.empty() ? "earlier" : e.date) + ")";
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace dlb::autotune
