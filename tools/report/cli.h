// The command line of dlbench-report, callable in-process (tests) and from main().
#pragma once

#include <string>
#include <vector>

namespace dlb::report {

// Exit codes: 0 fine, 1 bad input or usage, 3 a significant regression (compare, history check);
// bisect: 0 found, 4 not reproduced, 5 undecided, 130 interrupted (analyses/bisect.h).
int RunCli(int argc, const char* const* argv);

}  // namespace dlb::report
