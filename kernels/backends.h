// What the harness asks of the backends in this build, without naming one: the CPU thread count
// they run with, and what they say about themselves in every result's context. Which backends a
// build has is decided here (kernels/backends.cpp), so the harness needs no backend header.
#pragma once

#include <map>
#include <string>

#include "kernels/common/dtype.h"
#include "kernels/common/peak_search.h"

namespace dlb::backends {

// Readies the CPU backends of this build once per process, before any case is built (the thread
// pools keep what it sets), and returns the thread count: n, or for n <= 0 the physical cores this
// process may run on (kernels/common/cpu.h), for oneDNN and the OpenMP loops beside it (LibTorch,
// linked by the train family only, gets the same count from CpuThreads()).
// Where other processes keep the CPUs busy (half a CPU or more over 0.25 s) and the user set no
// OMP_WAIT_POLICY or GOMP_SPINCOUNT, waiting OpenMP threads must not spin on the cores the working
// threads need: it sets OMP_WAIT_POLICY=passive and runs the process again, same arguments, since
// the runtime reads the variable only when it loads (where /proc/self/exe can be run, and
// `may_run_again`: not in a process MPI has started). docs/families/train.md, "CPU threads".
int SetCpuThreads(int n, bool may_run_again = true);
// The count SetCpuThreads() set; before it is called, the default it would set.
int CpuThreads();
// How OpenMP threads wait in this process: "OMP_WAIT_POLICY=passive: other processes kept 1.9 of
// 2 CPUs busy at the start" (set by SetCpuThreads), the user's own OMP_WAIT_POLICY or
// GOMP_SPINCOUNT, or "OpenMP's default wait" (spin, then sleep).
std::string OpenMpWait();

// The GEMM rate the GPU (the current device) reaches for the dtype with the best library GEMM
// this build has (cuBLASLt, kernels/cublas/peak.h), searched over the shapes and algorithms of
// `scope`, and the SM clock it ran at: what the harness records as the GPU's measured peak. flops
// 0, and why in `method`, where there is none (no CUDA in this build, no device, a dtype the GPU
// lacks). Takes about a second for one shape, 5 to 15 for the default search, 20 to 60 for the
// wide one; never throws.
struct GpuGemmPeak {
  double flops = 0;
  double sm_clock_mhz = 0;  // median while timed; 0 when unknown
  std::string method;
};
GpuGemmPeak MeasureGpuGemmPeak(DType dt, PeakSearch scope);

// Context entries, key -> value: each backend's version and threads, and "not built" for a
// backend this build lacks. The keys are the result schema's context keys (onednn_version, ...).
std::map<std::string, std::string> ContextEntries();

// --dlb_kernels=on, once before any case is built: registers the recorders of this build's
// backends with kernels/common/kernel_trace.h, CUPTI for the GPU cases (where `gpu`: a GPU is
// usable) and oneDNN's verbose mode for the CPU cases. Returns "" or why a device's cases get no
// table ("GPU: CUPTI: ...; CPU: built without oneDNN").
std::string EnableKernelTrace(bool gpu);

}  // namespace dlb::backends
