// Repro commands: the command line that re-runs one case of a run, from what the run's context
// recorded (Google Benchmark's executable, dlbench's command line: schema::kCtxCommand).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tools/report/analyses/common.h"

namespace dlb::report {

// POSIX shell quoting: the word as it is when it needs none, else in single quotes ('\'' for a
// quote inside).
std::string ShellQuote(std::string_view word);
// Google Benchmark's filter for exactly this case: '^' + the name with the extended regular
// expression's metacharacters escaped (.[{()\*+?^$|; ']' and '}' need none) + '$'. An aggregate's
// suffix (_mean, _median, _stddev, _cv) is taken off, since the filter matches the case's name;
// /manual_time is part of it and stays.
std::string AnchoredFilter(std::string_view name);
// The flags of a recorded command line that a repro keeps: every --dlb_ flag (they choose how the
// case is built, timed and checked) and --benchmark_repetitions, --benchmark_min_time,
// --benchmark_min_warmup_time, --benchmark_enable_random_interleaving (how it is measured); the
// filter, the output files and the console's format are the repro's own.
std::vector<std::string> ReproFlags(const std::vector<std::string>& argv);
// The whole command, shell-quoted: the binary (context "executable", else the recorded command's
// first word), the anchored filter of the name without its setup key (NameWithoutSetup), then the
// kept flags. Empty when the context names no binary.
std::string ReproCommand(const std::map<std::string, std::string>& context, std::string_view name);

}  // namespace dlb::report
