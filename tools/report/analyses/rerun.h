// history check --confirm's re-run of one case: its repro command (repro.h) run once more with
// enough repetitions for the U test, its JSON read back. The judgement is gate.h's.
#pragma once

#include <string>
#include <vector>

namespace dlb::report {

// Runs `repro` (a shell command line, as ReproCommand writes it) in the current directory with
// --benchmark_repetitions=`repetitions` and a JSON output of its own appended, and returns the
// repetitions' real times of the case `name` in ns. Empty, with `why` set, when the command
// fails, writes no usable JSON or does not measure the case. A signal meanwhile ends the child
// and throws std::runtime_error. Its temporary folder is gone in every case.
std::vector<double> RerunCase(const std::string& name, const std::string& repro, int repetitions,
                              std::string* why);

}  // namespace dlb::report
