// Running this program again, same arguments, in place of this process: for settings a library
// reads only when it loads (OpenMP's wait policy, the dynamic loader's search path).
#pragma once

#include <string>

namespace dlb {

// execv(/proc/self/exe) with the arguments this process was started with (/proc/self/cmdline),
// the environment as it is now. Returns only where that cannot be done, with why.
std::string RunAgain();

}  // namespace dlb
