#include "kernels/common/error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dlb {

namespace {
std::string Where(const char* file, int line) {
  // Keep paths short and stable: from the project's top folders on.
  std::string f = file;
  for (const char* top : {"kernels/", "fixtures/", "benchmarks/", "tools/", "tests/"}) {
    if (auto pos = f.rfind(top); pos != std::string::npos) {
      f = f.substr(pos);
      break;
    }
  }
  return f + ":" + std::to_string(line);
}
}  // namespace

std::string OneLine(const std::string& message) {
  std::string out, line;
  const auto flush = [&] {
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos) {
      if (!out.empty()) out += "; ";
      out += line.substr(first, line.find_last_not_of(' ') - first + 1);
    }
    line.clear();
  };
  for (char c : message) {
    if (c == '\n' || c == '\r')
      flush();
    else
      line += c;
  }
  flush();
  return out;
}

void Fail(const char* file, int line, const char* expr, const std::string& message) {
  throw Error(Where(file, line) + ": " + expr + " -> " + message);
}

void FailNoexcept(const char* file, int line, const char* expr,
                  const std::string& message) noexcept {
  std::fprintf(stderr, "dlbench: fatal in destructor: %s: %s -> %s\n", Where(file, line).c_str(),
               expr, message.c_str());
  std::abort();
}

}  // namespace dlb
