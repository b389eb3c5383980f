#include "kernels/common/process_group.h"

#include <unistd.h>

namespace dlb {

std::string ProcessGroup::FirstError(const std::string& mine) {
  if (size() == 1) return mine;
  const std::vector<std::string> all = AllGather(mine);
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    if (int(r) == rank()) return all[r];
    return all[r] + " (rank " + std::to_string(r) + ")";
  }
  return "";
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

}  // namespace dlb
