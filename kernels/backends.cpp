#include "kernels/backends.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "kernels/common/cpu.h"
#include "kernels/common/kernel_trace.h"
#include "kernels/common/run_again.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/context.h"
#include "kernels/onednn/verbose_trace.h"
#endif
#ifdef DLBENCH_HAVE_CUPTI
#include "kernels/cuda/kernel_trace.h"
#endif
#ifdef DLBENCH_HAVE_CUDA
#include "kernels/cublas/peak.h"
#endif

namespace dlb::backends {

namespace {
int g_threads = 0;

constexpr const char* kWaitVariables[] = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"};
// Why this process set OMP_WAIT_POLICY before it ran itself again (for the context).
constexpr const char* kWaitWhy = "DLBENCH_OPENMP_WAIT_WHY";
// Other processes' load, in CPUs, from which OpenMP threads that wait sleep at once: half a CPU
// already makes one of the threads share its core.
constexpr double kBusyCpus = 0.5;
// How long the CPUs are watched before the first case, once per process.
constexpr double kWatchSeconds = 0.25;

// Runs this program again with the same arguments and OMP_WAIT_POLICY=passive; returns only where
// that cannot be done, with the variable unset again (the runtime loaded without it).
void RunAgainWithPassiveWait(const std::string& why) {
  if (::setenv("OMP_WAIT_POLICY", "passive", 0) != 0 || ::setenv(kWaitWhy, why.c_str(), 1) != 0)
    return;
  RunAgain();
  ::unsetenv("OMP_WAIT_POLICY");
  ::unsetenv(kWaitWhy);
}
}  // namespace

std::string OpenMpWait() {
  for (const char* v : kWaitVariables) {
    if (const char* s = std::getenv(v)) {
      const char* why = std::getenv(kWaitWhy);
      return std::string(v) + "=" + s + (why && *why ? std::string(": ") + why : "");
    }
  }
  return "OpenMP's default wait";
}

int SetCpuThreads(int n, bool may_run_again) {
  if (may_run_again && OpenMpWait() == "OpenMP's default wait") {
    const double busy = BusyAllowedCpus(kWatchSeconds);
    if (busy >= kBusyCpus) {
      char why[96];
      std::snprintf(why, sizeof why, "other processes kept %.1f of %d CPUs busy at the start", busy,
                    AllowedCpus());
      RunAgainWithPassiveWait(why);
    }
  }
  g_threads = n > 0 ? n : AllowedPhysicalCores();
#ifdef DLBENCH_HAVE_ONEDNN
  onednn::SetThreads(g_threads);
#endif
  return g_threads;
}

int CpuThreads() { return g_threads > 0 ? g_threads : AllowedPhysicalCores(); }

GpuGemmPeak MeasureGpuGemmPeak(DType dt, PeakSearch scope) {
#ifdef DLBENCH_HAVE_CUDA
  const cublas::GemmPeakRun run = cublas::MeasureGemmPeak(dt, scope);
  return {run.flops, run.sm_clock_mhz, run.method};
#else
  (void)dt;
  (void)scope;
  return {0, 0, "not built with CUDA"};
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

std::string EnableKernelTrace(bool gpu) {
  std::string why;
  if (gpu) {
#ifdef DLBENCH_HAVE_CUPTI
    try {
      trace::SetRecorder(true, cuda::MakeCuptiRecorder());
    } catch (const std::exception& e) {
      why = std::string("GPU: ") + e.what();
    }
#else
    why = "GPU: built without CUPTI";
#endif
  }
#ifdef DLBENCH_HAVE_ONEDNN
  // Registered for every CPU case, not only those that make dlbench's oneDNN engine: a LibTorch
  // step that calls the same oneDNN library gets its primitives recorded too.
  trace::SetRecorder(false, onednn::MakeVerboseRecorder());
#else
  why += std::string(why.empty() ? "" : "; ") + "CPU: built without oneDNN";
#endif
  return why;
}

}  // namespace dlb::backends
