#include "kernels/backends.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/context.h"
#endif

namespace dlb::backends {

void SetCpuThreads([[maybe_unused]] int n) {
#ifdef DLBENCH_HAVE_ONEDNN
  onednn::SetThreads(n);
#endif
}

std::map<std::string, std::string> ContextEntries() {
  std::map<std::string, std::string> c;
#ifdef DLBENCH_HAVE_ONEDNN
  c["onednn_version"] = onednn::Version();
  c["onednn_threads"] = std::to_string(onednn::Threads());
#else
  c["onednn_version"] = "not built";
#endif
  return c;
}

}  // namespace dlb::backends
