#include "tools/report/render/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tools/report/read/gbench_json.h"

namespace dlb::report {

void WriteOutput(const std::string& path, const std::string& content) {
  if (path.empty() || path == "-") {
    if (std::fwrite(content.data(), 1, content.size(), stdout) != content.size() ||
        std::fflush(stdout) != 0)
      throw InputError("<stdout>", "", std::string("cannot write: ") + std::strerror(errno));
    return;
  }
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmpl = dir + "/." + base + ".tmp.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = mkstemp(buf.data());
  if (fd < 0) throw InputError(path, "", std::string("cannot create: ") + std::strerror(errno));
  std::string tmp(buf.data());
  auto fail = [&](const char* what) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw InputError(path, "", std::string(what) + std::strerror(err));
  };
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write: ");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  // mkstemp creates 0600; reports are ordinary files.
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) fail("cannot chmod: ");
  if (::fsync(fd) != 0) fail("cannot sync: ");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(path, "", std::string("cannot write: ") + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(path, "", std::string("cannot rename into place: ") + std::strerror(err));
  }
}

}  // namespace dlb::report
