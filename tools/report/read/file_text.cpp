#include "tools/report/read/file_text.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tools/report/read/entry.h"

namespace dlb::report {

namespace {

// Owns a z_stream set up for gzip, so that every way out of Gunzip frees zlib's state.
class Inflater {
 public:
  explicit Inflater(const std::string& path) {
    // 16 + MAX_WBITS: a gzip header and trailer (CRC-32 and length checked), not raw zlib.
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK)
      throw InputError(path, "", "gzip: cannot start zlib's inflate");
  }
  ~Inflater() { inflateEnd(&zs_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  z_stream* get() { return &zs_; }

 private:
  z_stream zs_{};
};

}  // namespace

bool IsGzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

std::string Gunzip(std::string_view data, const std::string& path) {
  Inflater inflater(path);
  z_stream* zs = inflater.get();
  std::string out;
  out.resize(std::max<size_t>(data.size() * 4, 1 << 16));
  size_t in_used = 0, out_used = 0;
  while (true) {
    // zlib counts in 32-bit uInt: feed and drain at most 1 GiB a call.
    const size_t in_chunk = std::min<size_t>(data.size() - in_used, size_t(1) << 30);
    if (out_used == out.size()) out.resize(out.size() * 2);
    const size_t out_chunk = std::min<size_t>(out.size() - out_used, size_t(1) << 30);
    zs->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in_used));
    zs->avail_in = static_cast<uInt>(in_chunk);
    zs->next_out = reinterpret_cast<Bytef*>(out.data() + out_used);
    zs->avail_out = static_cast<uInt>(out_chunk);
    const int rc = inflate(zs, Z_NO_FLUSH);
    in_used += in_chunk - zs->avail_in;
    out_used += out_chunk - zs->avail_out;
    if (rc == Z_STREAM_END) {
      if (in_used == data.size()) break;
      // gzip(1) reads concatenated members as one file; anything else after the end is damage.
      if (!IsGzip(data.substr(in_used)))
        throw InputError(path, "", "corrupt gzip: bytes after the end of the compressed stream");
      inflateReset(zs);
      continue;
    }
    if (rc == Z_OK) continue;
    // Output room was left, so no progress means the input ran out.
    if (rc == Z_BUF_ERROR)
      throw InputError(path, "", "corrupt gzip: truncated (the stream ends before its trailer)");
    if (rc == Z_MEM_ERROR) throw InputError(path, "", "gzip: out of memory while inflating");
    throw InputError(path, "",
                     std::string("corrupt gzip: ") + (zs->msg ? zs->msg : "invalid stream"));
  }
  out.resize(out_used);
  return out;
}

std::string ReadFileText(const std::string& path) {
  std::FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) throw InputError(path, "", std::string("cannot open: ") + std::strerror(errno));
  std::string text;
  struct stat st {};
  if (::fstat(::fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    text.reserve(static_cast<size_t>(st.st_size) + 1);
  // Read straight into the string's storage: no regrowth copies for 100 MB files.
  size_t used = 0;
  while (true) {
    if (text.size() == used)
      text.resize(std::max<size_t>(used * 2, std::max<size_t>(text.capacity(), 1 << 16)));
    const size_t n = std::fread(text.data() + used, 1, text.size() - used, f);
    used += n;
    if (n == 0) break;
  }
  text.resize(used);
  const bool bad = std::ferror(f);
  const int err = errno;
  if (f != stdin) std::fclose(f);
  if (bad) throw InputError(path, "", std::string("cannot read: ") + std::strerror(err));
  return IsGzip(text) ? Gunzip(text, path) : text;
}

bool IsJsonFileName(std::string_view name) {
  auto ends = [name](std::string_view tail) {
    return name.size() > tail.size() && name.substr(name.size() - tail.size()) == tail;
  };
  return ends(".json") || ends(".json.gz");
}

}  // namespace dlb::report
