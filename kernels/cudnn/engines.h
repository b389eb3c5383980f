// The cuDNN backend graph of one convolution and the engine configurations that can run it: what
// kernels/cudnn/conv.cpp searches, caches and times; and how an op on the backend graph API (the
// convolutions, the attention) chooses a configuration: the cached winner, the usable candidates,
// what the label says of the choice. Internal to kernels/cudnn.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernels/common/autotune.h"
#include "kernels/common/dtype.h"
#include "kernels/common/op.h"
#include "kernels/common/shapes.h"
#include "kernels/cudnn/backend.h"
#include "kernels/cudnn/check.h"

namespace dlb::cudnn::engines {

constexpr int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y';
// Workspace cap: what a framework would grant one convolution (PyTorch's caching allocator gives
// cuDNN what is free); bounded so a benchmark never starves the next case.
constexpr double kWorkspaceCapBytes = 1024.0 * 1024 * 1024;

using Dims = std::array<int64_t, 4>;

// Logical dims (N, C, H, W), or (K, C/g, R, S) for the filter, of a convolution's tensors.
struct Tensors {
  Dims x, w, y;
};
Tensors LogicalDims(const ConvShape& s);
// Strides of logical dims in a layout: NHWC keeps C innermost.
Dims Strides(const Dims& d, Layout layout);
int64_t Count(const Dims& d);
// Storage-order values (as downloaded) into logical (N, C, H, W) order.
std::vector<float> ToLogical(const std::vector<float>& v, const Dims& d, Layout layout);

// The operation graph of one convolution; the tensor and convolution descriptors it refers to
// are kept alive with it.
struct Graph {
  Descriptor x, w, y, conv, op, graph;
};
Graph BuildGraph(cudnnHandle_t handle, const ConvShape& s, const RunConfig& cfg, ConvPass pass);

// One engine configuration from the heuristics, with what the label and the filters need.
struct Candidate {
  Descriptor engine_desc, cfg, plan;
  std::vector<Descriptor> knob_choices;  // set on a configuration rebuilt from the cache
  int64_t engine = -1;
  std::string knobs;  // "k2=3,k14=4": cuDNN's knob types and chosen values
  std::set<int> numerical, behavior;
  int64_t workspace = 0;
  const char* source = "";  // heuristic mode that proposed it
  int rank = 0;             // its position in that mode's list
};

// The heuristics' engine configurations, best first. A mode that cannot handle the graph
// yields none (cuDNN reports it through the finalize status, which is not an error here).
std::vector<Candidate> Heuristics(void* graph, cudnnBackendHeurMode_t mode);

// Every engine of the graph with its default knobs: what the heuristics do not rank still gets
// timed. Engines that compile kernels at run time are left to the heuristics (each costs
// seconds to build).
std::vector<Candidate> AllEngines(void* graph);

// Whether an engine configuration computes what the dtype promises. f32 means fp32 arithmetic:
// tensor-core engines on fp32 data run TF32, so they are out. FFT and Winograd engines do fp32
// arithmetic too and stay in, as they do for PyTorch with TF32 off (on the H100 they are up to 2x
// faster on ResNet layers); their rounding is checked like every engine's, by the harness's
// verification against the float64 reference, and the label names them. 16-bit types promise
// fp32 accumulation. No dtype allows converting inputs to a narrower type.
bool Acceptable(const Candidate& c, DType dt);
// Whether an engine configuration keeps its inputs' precision: the attention's filter. Unlike the
// convolutions' filter, notes about reduced-precision reduction do not disqualify one: PyTorch
// takes the heuristics' first configuration as it comes, and every engine is verified against
// the float64 reference.
bool KeepsInputPrecision(const Candidate& c);

// Builds the execution plan; false when cuDNN cannot (the heuristics also list configurations
// that a particular problem does not fit).
bool Finalize(Candidate& c, cudnnHandle_t handle);

// "45/k2=5,k5=3": one candidate among a search's.
std::string Key(const Candidate& c);
// "engine 12 {k2=3} [tensor_core] from heur_a#0": the engine, its knobs, `notes` (the op's
// choice of the numerical and behaviour notes worth naming, space-separated; none: no brackets),
// and which heuristic proposed it at which rank: the label's engine, for attention and
// convolution alike.
std::string EngineLabel(const Candidate& c, const std::string& notes);
// "engine 12 {k2=3} from heur_a#0": names a candidate the search skipped.
std::string EngineName(const Candidate& c);

Descriptor MakeVariantPack(void* x, void* w, void* y, void* workspace);
// A variant pack of any graph: the tensors' unique ids and their addresses, and the workspace.
Descriptor MakeVariantPack(const std::vector<int64_t>& uids, const std::vector<void*>& ptrs,
                           void* workspace);

// "engine=45;knobs=k2=5,k5=3;source=heur_a;rank=0": what the cache keeps of a winner, enough to
// rebuild its configuration without the heuristics.
std::string Identity(const Candidate& c);

// The engine configuration a cached identity names, checked as a searched one is: it must still
// exist for this graph, keep the dtype's numerics, build a plan and fit the workspace limit.
// nullopt when any of that fails (a new cuDNN renumbers or drops engines).
std::optional<Candidate> Rebuild(void* graph, const std::string& identity, DType dt,
                                 cudnnHandle_t handle, int64_t ws_limit);

// The process cache's winner for `key` rebuilt for the graph (Rebuild, whose numerics filter is
// the convolutions': a winner it turns down is searched for again, which finds the same engine);
// `how` gets what the label says of it, or why there is none (no winner, one that no longer
// builds) before the search that follows.
std::optional<Candidate> CachedWinner(void* graph, const std::string& key, DType dt,
                                      cudnnHandle_t handle, int64_t ws_limit, std::string* how);

// The engine configurations that pass `acceptable`, build a plan and fit `ws_limit`, each once:
// heuristics modes A and fallback, and with `search` mode B and every engine of the graph too;
// without a search the first usable one alone. None throws Unsupported: "no cuDNN <what> (N
// proposed, N rejected for numerics, N failed to build, N over the workspace limit L)" with
// cuDNN's last error.
std::vector<Candidate> Usable(void* graph, cudnnHandle_t handle, bool search, int64_t ws_limit,
                              const std::function<bool(const Candidate&)>& acceptable,
                              const std::string& what);

// After the choice: `how` gets what the label says of it (the search's candidates and times, or
// the heuristic's first usable one without a search), and with a `key` (the cache in use) the
// winner is recorded under it.
void NoteChoice(const autotune::Report& found, bool search, const std::string& key,
                const Candidate& winner, std::string* how);

}  // namespace dlb::cudnn::engines
