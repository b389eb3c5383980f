// Errors: one exception type and one check macro with an overload per status type.
//   DLB_CHECK(cudaMalloc(...)); DLB_CHECK(cublasStatus); DLB_CHECK(cudnnStatus);
// Each backend header adds its own `Check` overload (kernels/cuda/check.h, ...), so this header
// stays free of every vendor include. Destructors use DLB_CHECK_NOEXCEPT, which aborts.
#pragma once

#include <stdexcept>
#include <string>

namespace dlb {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A case this machine or library cannot run, thrown by an op's constructor: one Supports() turns
// down, or one found out only while building (no engine or implementation for it). The message is
// the bare reason, as in Support::No; the harness reports "unsupported: <reason>".
class Unsupported : public Error {
 public:
  using Error::Error;
};

// A message on one line, as a label or a one-line error wants it: each run of line breaks (and the
// spaces around them) becomes "; " (cuDNN's and CUPTI's reasons come as several lines).
std::string OneLine(const std::string& message);

// "file:line: expr -> message"
[[noreturn]] void Fail(const char* file, int line, const char* expr, const std::string& message);
[[noreturn]] void FailNoexcept(const char* file, int line, const char* expr,
                               const std::string& message) noexcept;

inline void Check(bool ok, const char* expr, const char* file, int line) {
  if (!ok) Fail(file, line, expr, "false");
}

// For destructors: runs `check`, a DLB_CHECK expanded at the call site, and aborts on a throw.
// The Check call must stay at the call site: from a template here, the overloads added later for
// global-namespace status enums (cudaError_t, cublasStatus_t) are invisible (no ADL into dlb), so
// Check(bool) would be chosen and success (0) would read as failure.
template <class F>
void CheckNoexcept(F&& check, const char* expr, const char* file, int line) noexcept {
  try {
    check();
  } catch (const std::exception& e) {
    FailNoexcept(file, line, expr, e.what());
  }
}

}  // namespace dlb

#define DLB_CHECK(expr) ::dlb::Check((expr), #expr, __FILE__, __LINE__)
#define DLB_CHECK_NOEXCEPT(expr) \
  ::dlb::CheckNoexcept([&] { DLB_CHECK(expr); }, #expr, __FILE__, __LINE__)
// A precondition with a message: DLB_REQUIRE(n > 0, "batch size must be positive").
#define DLB_REQUIRE(cond, msg)                                  \
  do {                                                          \
    if (!(cond)) ::dlb::Fail(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)
