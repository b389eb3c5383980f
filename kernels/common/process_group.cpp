#include "kernels/common/process_group.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "kernels/common/error.h"

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

void ProcessGroup::RequireWhole() const {
  if (!broken_.empty()) throw Error(broken_);
}

void ProcessGroup::Break(const std::string& line) {
  if (broken_.empty()) broken_ = line;
  throw Error(broken_);
}

std::string ProcessGroup::NoAnswerLine(int rank, const std::string& what) const {
  std::ostringstream s;
  s << "comm timeout: rank " << rank << " stopped answering: no word in " << timeout_s_
    << " s during " << what << "; the process group is broken";
  return s.str();
}

void FreezePointForTests(const char* point, int rank) {
  static const char* spec = std::getenv("DLB_TEST_FREEZE");
  if (spec == nullptr || *spec == '\0') return;
  static std::map<std::string, int> seen;
  const std::string s = spec;
  const size_t a = s.find(':'), b = s.find(':', a == std::string::npos ? a : a + 1);
  if (a == std::string::npos || b == std::string::npos) return;
  if (s.substr(0, a) != point || std::atoi(s.c_str() + b + 1) != rank) return;
  if (++seen[point] != std::atoi(s.substr(a + 1, b - a - 1).c_str())) return;
  // The moment it stops, for a test that measures how long the live ranks take to end.
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::fprintf(stderr, "dlbench: rank %d stops itself (DLB_TEST_FREEZE=%s) at %.3f s\n", rank, spec,
               now);
  std::fflush(stderr);
  std::raise(SIGSTOP);
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

}  // namespace dlb
