// Output files appear whole or not at all: written to a temporary file in the same folder, then
// renamed over the target; on any error the temporary file is removed.
#pragma once

#include <string>

namespace dlb::report {

// path "-" or "" writes to stdout. Throws InputError naming the path.
void WriteOutput(const std::string& path, const std::string& content);

}  // namespace dlb::report
