// dlbench-dataset's command line, apart from main() so its tests can call it.
#pragma once

namespace dlb::dataset {

// 0 on success, 2 on a usage error, 1 on a failure.
int RunCli(int argc, const char* const* argv);

}  // namespace dlb::dataset
