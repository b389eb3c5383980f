#include "kernels/data/dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace dlb::data {

namespace fs = std::filesystem;

namespace {

bool IsJpegName(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg";
}

std::string Why(const std::error_code& ec) { return ec.message(); }

}  // namespace

ImageFolder ScanImageFolder(const fs::path& root) {
  std::error_code ec;
  const fs::file_status st = fs::status(root, ec);
  if (ec || !fs::exists(st))
    throw DataError(root.string() + ": no such data directory" + (ec ? " (" + Why(ec) + ")" : ""));
  if (!fs::is_directory(st)) throw DataError(root.string() + ": not a directory");

  ImageFolder out;
  out.root = root;
  std::vector<fs::path> class_dirs;
  fs::directory_iterator it(root, ec);
  if (ec) throw DataError(root.string() + ": cannot read the data directory (" + Why(ec) + ")");
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) throw DataError(root.string() + ": cannot read the data directory (" + Why(ec) + ")");
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') continue;  // hidden: a dataset still being written
    std::error_code e2;
    if (it->is_directory(e2)) class_dirs.push_back(it->path());
  }
  std::sort(class_dirs.begin(), class_dirs.end());
  for (const fs::path& dir : class_dirs) {
    std::vector<ImageFile> files;
    fs::directory_iterator fi(dir, ec);
    if (ec) throw DataError(dir.string() + ": cannot read the class folder (" + Why(ec) + ")");
    for (; fi != fs::directory_iterator(); fi.increment(ec)) {
      if (ec) throw DataError(dir.string() + ": cannot read the class folder (" + Why(ec) + ")");
      std::error_code e2;
      if (!fi->is_regular_file(e2) || !IsJpegName(fi->path())) continue;
      const uintmax_t size = fi->file_size(e2);
      if (e2) continue;
      files.push_back({fi->path().string(), int(out.classes.size()), uint64_t(size)});
    }
    if (files.empty()) continue;  // torchvision skips classes without images too
    std::sort(files.begin(), files.end(),
              [](const ImageFile& a, const ImageFile& b) { return a.path < b.path; });
    for (const ImageFile& f : files) out.total_bytes += f.bytes;
    out.files.insert(out.files.end(), files.begin(), files.end());
    out.classes.push_back(dir.filename().string());
  }
  if (out.files.empty())
    throw DataError(root.string() +
                    ": no JPEG images in class folders (expected DIR/<class>/<image>.jpg)");
  return out;
}

void ReadFile(const std::string& path, std::vector<uint8_t>* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error(path + ": " + std::strerror(e));
  }
  out->resize(size_t(st.st_size));
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t n = ::read(fd, out->data() + done, out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      throw Error(path + ": " + (n == 0 ? std::string("shorter than its size") : std::strerror(e)));
    }
    done += size_t(n);
  }
  ::close(fd);
}

namespace {

const std::vector<std::string>& TrainBatchNames() {
  static const std::vector<std::string> names = {"data_batch_1.bin", "data_batch_2.bin",
                                                 "data_batch_3.bin", "data_batch_4.bin",
                                                 "data_batch_5.bin"};
  return names;
}

}  // namespace

bool LooksLikeCifar10(const fs::path& dir) {
  std::error_code ec;
  for (const std::string& n : TrainBatchNames())
    if (fs::is_regular_file(dir / n, ec)) return true;
  return fs::is_regular_file(dir / "test_batch.bin", ec);
}

Cifar10 LoadCifar10(const fs::path& dir, bool train) {
  std::vector<std::string> names = train ? TrainBatchNames()
                                         : std::vector<std::string>{"test_batch.bin"};
  Cifar10 out;
  std::vector<uint8_t> bytes;
  int found = 0;
  for (const std::string& n : names) {
    const fs::path p = dir / n;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    ++found;
    ReadFile(p.string(), &bytes);
    if (bytes.empty() || bytes.size() % kCifarRecord != 0)
      throw Error(p.string() + ": " + std::to_string(bytes.size()) +
                  " bytes is not a whole number of 3073-byte CIFAR-10 records");
    const int64_t records = int64_t(bytes.size() / kCifarRecord);
    out.pixels.reserve(size_t(out.count + records) * kCifarPixels);
    for (int64_t r = 0; r < records; ++r) {
      const uint8_t* rec = bytes.data() + r * kCifarRecord;
      if (rec[0] > 9)
        throw Error(p.string() + ": record " + std::to_string(r) + " has label " +
                    std::to_string(rec[0]) + " (CIFAR-10 has 0..9)");
      out.labels.push_back(rec[0]);
      out.pixels.insert(out.pixels.end(), rec + 1, rec + kCifarRecord);
    }
    out.count += records;
    out.file_bytes += bytes.size();
  }
  if (found == 0)
    throw DataError(dir.string() + ": no CIFAR-10 " + (train ? "data_batch_*.bin" : "test_batch.bin") +
                    " files");
  return out;
}

}  // namespace dlb::data
