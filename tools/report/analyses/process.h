// dlbench-report's child processes (bisect's builds and runs, history check --confirm's re-runs):
// each in a process group of its own with its output in a log file; while a SignalGuard lives, a
// signal to dlbench-report is passed on to the child's group, and the caller asks CaughtSignal()
// to stop and clean up.
#pragma once

#include <signal.h>

#include <cstddef>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace dlb::report {

// Catches SIGINT, SIGTERM and SIGHUP while it lives (no SA_RESTART, so a wait is interrupted).
class SignalGuard {
 public:
  SignalGuard();
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  static constexpr size_t kCount = std::size(kSignals);
  struct sigaction old_[kCount];
};
// The signal a SignalGuard caught since it was made; 0: none.
int CaughtSignal();

// Runs argv in cwd: stdin /dev/null, stdout and stderr into `log`, `env` added to the
// environment, in a process group of its own. When a signal reaches us meanwhile and `forward`,
// the group gets SIGTERM, and SIGKILL 3 s later. Returns the exit status, 128 + the signal that
// ended it, or 127 when it could not be started.
int RunProcess(const std::vector<std::string>& argv, const std::string& cwd, const std::string& log,
               const std::map<std::string, std::string>& env, bool forward = true);

std::string ReadText(const std::string& path);
std::string Trim(std::string s);
// The last non-empty line of a log, at most 200 characters: what a note quotes.
std::string LastLine(const std::string& path);

}  // namespace dlb::report
