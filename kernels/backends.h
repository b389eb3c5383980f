// What the harness asks of the backends in this build, without naming one: the CPU thread count
// they run with, and what they say about themselves in every result's context. Which backends a
// build has is decided here (kernels/backends.cpp), so the harness needs no backend header.
#pragma once

#include <map>
#include <string>

namespace dlb::backends {

// Sets the threads every CPU backend with a thread pool runs with; n <= 0 leaves their defaults.
void SetCpuThreads(int n);

// Context entries, key -> value: each backend's version and threads, and "not built" for a
// backend this build lacks. The keys are the result schema's context keys (onednn_version, ...).
std::map<std::string, std::string> ContextEntries();

}  // namespace dlb::backends
