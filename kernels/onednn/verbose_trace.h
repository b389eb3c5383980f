// The CPU cases' per-primitive table (--dlb_kernels=on) from oneDNN's verbose mode: level 1 prints
// one line per primitive execution with its implementation and time, to stdout. The recorder
// turns it on for the recorded span only, with stdout sent to a temporary file meanwhile (flushed
// first, restored after; lines that are not oneDNN's go back to stdout). It serves every CPU case:
// LibTorch cases too, where LibTorch calls the same oneDNN library.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kernels/common/kernel_trace.h"

namespace dlb::onednn {

// One execution: "convolution jit:avx2 forward_training" (primitive kind, implementation,
// propagation kind where there is one) and its time in milliseconds.
struct VerboseExec {
  std::string name;
  double ms = 0;
};

// An "exec" line of either format, std::nullopt for anything else:
//   oneDNN 2: "onednn_verbose,exec,cpu,convolution,jit:avx2,forward_training,<mds>,<attr>,<aux>,
//              <problem>,0.0219727" ("dnnl_verbose" before 2.5);
//   oneDNN 3: "onednn_verbose[,<timestamp>][,v1],primitive,exec,cpu,convolution,...,0.0219727".
std::optional<VerboseExec> ParseVerboseLine(const std::string& line);

// The recorder of CPU cases.
std::shared_ptr<trace::Recorder> MakeVerboseRecorder();

}  // namespace dlb::onednn
