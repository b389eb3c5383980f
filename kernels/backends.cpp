#include "kernels/backends.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "kernels/common/cpu.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/context.h"
#endif

namespace dlb::backends {

namespace {
int g_threads = 0;

constexpr const char* kWaitVariables[] = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"};

// Runs this program again with the same arguments and OMP_WAIT_POLICY=passive; returns only where
// that cannot be done, with the variable unset again (the runtime loaded without it).
void RunAgainWithPassiveWait() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (all.empty()) return;
  std::vector<std::string> args;
  for (size_t begin = 0; begin < all.size();) {
    const size_t end = all.find('\0', begin);
    args.push_back(all.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (::setenv("OMP_WAIT_POLICY", "passive", 0) != 0) return;
  std::fflush(nullptr);
  ::execv("/proc/self/exe", argv.data());
  ::unsetenv("OMP_WAIT_POLICY");
}
}  // namespace

std::string OpenMpWait() {
  for (const char* v : kWaitVariables)
    if (const char* s = std::getenv(v)) return std::string(v) + "=" + s;
  return "OpenMP's default wait";
}

int SetCpuThreads(int n) {
  if (OpenMpWait() == "OpenMP's default wait") RunAgainWithPassiveWait();
  g_threads = n > 0 ? n : AllowedPhysicalCores();
#ifdef DLBENCH_HAVE_ONEDNN
  onednn::SetThreads(g_threads);
#endif
  return g_threads;
}

int CpuThreads() { return g_threads > 0 ? g_threads : AllowedPhysicalCores(); }

std::map<std::string, std::string> ContextEntries() {
  std::map<std::string, std::string> c;
#ifdef DLBENCH_HAVE_ONEDNN
  c["onednn_version"] = onednn::Version();
  c["onednn_threads"] = std::to_string(onednn::Threads());
#else
  c["onednn_version"] = "not built";
#endif
  return c;
}

}  // namespace dlb::backends
