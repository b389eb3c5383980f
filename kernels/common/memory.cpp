#include "kernels/common/memory.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "kernels/common/error.h"

namespace dlb {

double HostBytesAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024.0;
  return 0;
}

void RequireHostBytes(double bytes) {
  const double avail = HostBytesAvailable();
  if (avail > 0 && bytes > 0.9 * avail) {
    char msg[160];
    std::snprintf(msg, sizeof msg,
                  "out of memory: needs %.2f GiB of host memory, %.2f GiB available",
                  bytes / 1073741824.0, avail / 1073741824.0);
    throw Error(msg);
  }
}

void ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  if (out) out << "5";
}

double PeakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
  return 0;
}

}  // namespace dlb
