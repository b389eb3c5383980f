// Which library builds two runs were measured on (the context's libraries_loaded,
// fixtures/schema/libraries.h): compare and history check say when they differ, next to their
// verdict, since a change may then come from the libraries rather than from the code (or is the
// answer: "did the cuDNN upgrade help?").
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dlb::report {

using Context = std::map<std::string, std::string>;

// Library name -> the versions a run loaded ("9.19.0"; several joined by ", "), from its
// libraries_loaded, else (files written before it existed) from cudnn_version, cublas_version and
// nccl_version where they hold a version. cuDNN's parts (cudnn_graph, ...) are left out: their
// version is cuDNN's.
std::map<std::string, std::string> LibraryVersions(const Context& context);

// compare: "" where both runs loaded the same library files; else one line naming each library
// whose version differs ("cudnn 9.14.0 (base) -> 9.19.0 (new)"), or, where every version is the
// same, the libraries loaded from other files.
std::string LibrariesNote(const Context& base, const Context& now);

// history check: "" where every run of the window loaded the versions the newest run loaded;
// else one line naming each library that differs and in how many of the window's runs.
std::string LibrariesAcrossRunsNote(const std::vector<Context>& window, const Context& newest);

// The same over several binaries of one run, each read in its own files' contexts: `who` names
// the binary ("bench_attn (3 cases)") before what its own runs loaded.
struct LibraryRuns {
  std::string who;
  std::vector<Context> window;
  Context newest;
};
std::string LibrariesAcrossRunsNote(const std::vector<LibraryRuns>& binaries);

}  // namespace dlb::report
