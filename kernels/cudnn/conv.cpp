#include "kernels/cudnn/conv.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "kernels/common/autotune.h"
#include "kernels/common/autotune_cache.h"
#include "kernels/common/fill.h"
#include "kernels/common/parallel.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"
#include "kernels/cudnn/check.h"

namespace dlb::cudnn {

namespace {

constexpr int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y';
// Workspace cap: what a framework would grant one convolution (PyTorch's caching allocator gives
// cuDNN what is free); bounded so a benchmark never starves the next case.
constexpr double kWorkspaceCapBytes = 1024.0 * 1024 * 1024;

using Dims = std::array<int64_t, 4>;

template <class T>
void Set(void* d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
         const T* values) {
  DLB_CHECK(cudnnBackendSetAttribute(d, name, type, count, values));
}

cudnnDataType_t DataType(DType dt) {
  switch (dt) {
    case DType::kF16:
      return CUDNN_DATA_HALF;
    case DType::kBF16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

// dims are logical (N, C, H, W) or (K, C/g, R, S); NHWC keeps C innermost.
Dims Strides(const Dims& d, Layout layout) {
  if (layout == Layout::kNCHW) return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
  return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
}

// Storage-order values (as downloaded) into logical (N, C, H, W) order. Every outer index is its
// own slab, so big tensors convert on all cores.
std::vector<float> ToLogical(const std::vector<float>& v, const Dims& d, Layout layout) {
  if (layout == Layout::kNCHW) return v;
  std::vector<float> out(v.size());
  const Dims st = Strides(d, layout);
  const size_t slab = size_t(d[1] * d[2] * d[3]);
  const size_t grain = std::max<size_t>(1, (size_t(1) << 20) / std::max<size_t>(slab, 1));
  ParallelFor(size_t(d[0]), grain, [&](size_t begin, size_t end) {
    for (int64_t a = int64_t(begin); a < int64_t(end); ++a) {
      size_t i = size_t(a) * slab;
      for (int64_t b = 0; b < d[1]; ++b)
        for (int64_t c = 0; c < d[2]; ++c)
          for (int64_t e = 0; e < d[3]; ++e, ++i)
            out[i] = v[size_t(a * st[0] + b * st[1] + c * st[2] + e * st[3])];
    }
  });
  return out;
}

int64_t Count(const Dims& d) { return d[0] * d[1] * d[2] * d[3]; }

struct Tensors {
  Dims x, w, y;
};
Tensors LogicalDims(const ConvShape& s) {
  return {{s.n, s.c, s.h, s.w}, {s.k, s.c / s.groups, s.r, s.s}, {s.n, s.k, s.P(), s.Q()}};
}

Descriptor MakeTensor(int64_t uid, const Dims& dims, Layout layout, DType dt) {
  Descriptor t = MakeDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t type = DataType(dt);
  const Dims strides = Strides(dims, layout);
  const int64_t alignment = 16;
  Set(t.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  Set(t.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  Set(t.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  Set(t.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  Set(t.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  DLB_CHECK(cudnnBackendFinalize(t.get()));
  return t;
}

// The operation graph of one convolution; the tensor and convolution descriptors it refers to
// are kept alive with it.
struct Graph {
  Descriptor x, w, y, conv, op, graph;
};

Graph BuildGraph(cudnnHandle_t handle, const ConvShape& s, const RunConfig& cfg, ConvPass pass) {
  Graph g;
  const Tensors d = LogicalDims(s);
  g.x = MakeTensor(kUidX, d.x, cfg.layout, cfg.dtype);
  g.w = MakeTensor(kUidW, d.w, cfg.layout, cfg.dtype);
  g.y = MakeTensor(kUidY, d.y, cfg.layout, cfg.dtype);

  g.conv = MakeDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;  // fp32 accumulation for every dtype
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t dims = 2;
  const int64_t stride[2] = {s.stride_h, s.stride_w}, pad[2] = {s.pad_h, s.pad_w},
                dil[2] = {s.dil_h, s.dil_w};
  Set(g.conv.get(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  Set(g.conv.get(), CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  Set(g.conv.get(), CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
  Set(g.conv.get(), CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
  Set(g.conv.get(), CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  Set(g.conv.get(), CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  Set(g.conv.get(), CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
  DLB_CHECK(cudnnBackendFinalize(g.conv.get()));

  void* x = g.x.get();
  void* w = g.w.get();
  void* y = g.y.get();
  void* conv = g.conv.get();
  const float alpha = 1.0f, beta = 0.0f;  // beta 0: the poisoned output is never read
  switch (pass) {
    case ConvPass::kFwd:
      g.op = MakeDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
          &x);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
          &w);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
          &y);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      break;
    case ConvPass::kBwdData:
      g.op = MakeDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_TYPE_BACKEND_DESCRIPTOR,
          1, &x);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
          &w);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR,
          1, &y);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      break;
    case ConvPass::kBwdFilter:
      g.op = MakeDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_TYPE_BACKEND_DESCRIPTOR,
          1, &x);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_TYPE_BACKEND_DESCRIPTOR,
          1, &w);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR,
          1, &y);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1,
          &alpha);
      Set(g.op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
      break;
  }
  DLB_CHECK(cudnnBackendFinalize(g.op.get()));

  g.graph = MakeDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  void* op = g.op.get();
  Set(g.graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
  Set(g.graph.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  DLB_CHECK(cudnnBackendFinalize(g.graph.get()));
  return g;
}

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

const char* ModeName(cudnnBackendHeurMode_t mode) {
  switch (mode) {
    case CUDNN_HEUR_MODE_A:
      return "heur_a";
    case CUDNN_HEUR_MODE_B:
      return "heur_b";
    case CUDNN_HEUR_MODE_FALLBACK:
      return "fallback";
    default:
      return "heur";
  }
}

// Reads what the label and the filters need off an engine configuration.
Candidate Describe(Descriptor cfg) {
  Candidate c;
  c.engine_desc = MakeDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  void* e = c.engine_desc.get();
  int64_t n = 0;
  DLB_CHECK(cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e));
  DLB_CHECK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                     &c.engine));
  cudnnBackendNumericalNote_t nn[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  DLB_CHECK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                     CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, nn));
  for (int64_t j = 0; j < n; ++j) c.numerical.insert(nn[j]);
  cudnnBackendBehaviorNote_t bn[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  DLB_CHECK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                     CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, bn));
  for (int64_t j = 0; j < n; ++j) c.behavior.insert(bn[j]);

  std::vector<Descriptor> knobs;
  std::vector<void*> kraw;
  for (int j = 0; j < CUDNN_KNOB_TYPE_COUNTS; ++j) {
    knobs.push_back(MakeDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
    kraw.push_back(knobs.back().get());
  }
  int64_t nk = 0;
  DLB_CHECK(cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS, &nk,
                                     kraw.data()));
  for (int64_t j = 0; j < nk; ++j) {
    cudnnBackendKnobType_t type;
    int64_t value = 0;
    DLB_CHECK(cudnnBackendGetAttribute(kraw[j], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                       CUDNN_TYPE_KNOB_TYPE, 1, &n, &type));
    DLB_CHECK(cudnnBackendGetAttribute(kraw[j], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64,
                                       1, &n, &value));
    c.knobs +=
        (c.knobs.empty() ? "k" : ",k") + std::to_string(int(type)) + "=" + std::to_string(value);
  }
  c.cfg = std::move(cfg);
  return c;
}

// The heuristics' engine configurations, best first. A mode that cannot handle the graph
// yields none (cuDNN reports it through the finalize status, which is not an error here).
std::vector<Candidate> Heuristics(void* graph, cudnnBackendHeurMode_t mode) {
  std::vector<Candidate> out;
  Descriptor heur = MakeDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  Set(heur.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  Set(heur.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (cudnnBackendFinalize(heur.get()) != CUDNN_STATUS_SUCCESS) return out;
  int64_t count = 0;
  DLB_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  if (count <= 0) return out;
  std::vector<Descriptor> cfgs;
  std::vector<void*> raw;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.push_back(MakeDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(cfgs.back().get());
  }
  int64_t got = 0;
  DLB_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()));
  for (int64_t i = 0; i < got; ++i) {
    Candidate c = Describe(std::move(cfgs[i]));
    c.source = ModeName(mode);
    c.rank = static_cast<int>(i);
    out.push_back(std::move(c));
  }
  return out;
}

// Every engine of the graph with its default knobs: what the heuristics do not rank still gets
// timed. Engines that compile kernels at run time are left to the heuristics (each costs
// seconds to build).
std::vector<Candidate> AllEngines(void* graph) {
  std::vector<Candidate> out;
  int64_t count = 0, n = 0;
  DLB_CHECK(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                     CUDNN_TYPE_INT64, 1, &n, &count));
  for (int64_t i = 0; i < count; ++i) {
    Descriptor engine = MakeDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    Set(engine.get(), CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    Set(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &i);
    if (cudnnBackendFinalize(engine.get()) != CUDNN_STATUS_SUCCESS) continue;  // not for this graph
    Descriptor cfg = MakeDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    void* e = engine.get();
    Set(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e);
    if (cudnnBackendFinalize(cfg.get()) != CUDNN_STATUS_SUCCESS) continue;
    Candidate c = Describe(std::move(cfg));
    if (c.behavior.count(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) continue;
    c.source = "all_engines";
    c.rank = static_cast<int>(i);
    c.engine_desc = std::move(engine);
    out.push_back(std::move(c));
  }
  return out;
}

// Whether an engine configuration computes what the dtype promises. f32 means fp32 arithmetic:
// tensor-core engines on fp32 data run TF32, so they are out. FFT and Winograd engines do fp32
// arithmetic too and stay in, as they do for PyTorch with TF32 off (on the H100 they are up to 2x
// faster on ResNet layers); their rounding is checked like every engine's, by the harness's
// verification against the float64 reference, and the label names them. 16-bit types promise
// fp32 accumulation. No dtype allows converting inputs to a narrower type.
bool Acceptable(const Candidate& c, DType dt) {
  const auto has = [&](cudnnBackendNumericalNote_t n) { return c.numerical.count(n) > 0; };
  if (has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) return false;
  if (dt == DType::kF32 && has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) return false;
  if ((dt == DType::kF16 || dt == DType::kBF16) &&
      has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION))
    return false;
  return true;
}

// Builds the execution plan; false when cuDNN cannot (the heuristics also list configurations
// that a particular problem does not fit).
bool Finalize(Candidate& c, cudnnHandle_t handle) {
  c.plan = MakeDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  void* cfg = c.cfg.get();
  Set(c.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  Set(c.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
      &cfg);
  if (cudnnBackendFinalize(c.plan.get()) != CUDNN_STATUS_SUCCESS) {
    c.plan.reset();
    return false;
  }
  int64_t n = 0;
  DLB_CHECK(cudnnBackendGetAttribute(c.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &n, &c.workspace));
  return true;
}

std::string Key(const Candidate& c) { return std::to_string(c.engine) + "/" + c.knobs; }

// "engine 12 {k2=3} from heur_a#0": names a candidate the search skipped.
std::string EngineName(const Candidate& c) {
  return "engine " + std::to_string(c.engine) + (c.knobs.empty() ? "" : " {" + c.knobs + "}") +
         " from " + c.source + "#" + std::to_string(c.rank);
}

Descriptor MakeVariantPack(void* x, void* w, void* y, void* workspace) {
  Descriptor vp = MakeDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  void* ptrs[3] = {x, w, y};
  Set(vp.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  Set(vp.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
  Set(vp.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  DLB_CHECK(cudnnBackendFinalize(vp.get()));
  return vp;
}

std::string Mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fMiB", bytes / (1024.0 * 1024.0));
  return buf;
}

const char* MathName(DType dt) {
  switch (dt) {
    case DType::kF32:
      return "fp32 (no tf32)";
    case DType::kTF32:
      return "tf32 tensor ops allowed";
    case DType::kF16:
      return "f16 data, fp32 accumulate";
    case DType::kBF16:
      return "bf16 data, fp32 accumulate";
  }
  return "";
}

// "engine=45;knobs=k2=5,k5=3;source=heur_a;rank=0": what the cache keeps of a winner, enough to
// rebuild its configuration without the heuristics.
std::string Identity(const Candidate& c) {
  return "engine=" + std::to_string(c.engine) + ";knobs=" + c.knobs + ";source=" + c.source +
         ";rank=" + std::to_string(c.rank);
}

// The heuristic mode names Identity writes, as static strings for Candidate::source.
const char* SourceNamed(const std::string& name) {
  for (const char* known : {"heur_a", "heur_b", "fallback", "all_engines"})
    if (name == known) return known;
  return "cache";
}

// The engine configuration a cached identity names, checked as a searched one is: it must still
// exist for this graph, keep the dtype's numerics, build a plan and fit the workspace limit.
// nullopt when any of that fails (a new cuDNN renumbers or drops engines).
std::optional<Candidate> Rebuild(void* graph, const std::string& identity, DType dt,
                                 cudnnHandle_t handle, int64_t ws_limit) {
  try {
    const std::string engine_text = autotune::Field(identity, "engine");
    if (engine_text.empty()) return std::nullopt;
    const int64_t index = std::stoll(engine_text);
    Descriptor engine = MakeDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    Set(engine.get(), CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    Set(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index);
    if (cudnnBackendFinalize(engine.get()) != CUDNN_STATUS_SUCCESS) return std::nullopt;
    std::vector<Descriptor> choices;
    std::vector<void*> raw;
    const std::string knobs = autotune::Field(identity, "knobs");
    for (size_t pos = 0; pos < knobs.size();) {
      const size_t end = std::min(knobs.find(',', pos), knobs.size());
      const std::string item = knobs.substr(pos, end - pos);  // "k2=5"
      pos = end + 1;
      const size_t eq = item.find('=');
      if (item.size() < 4 || item[0] != 'k' || eq == std::string::npos) return std::nullopt;
      const auto type = static_cast<cudnnBackendKnobType_t>(std::stoi(item.substr(1, eq - 1)));
      const int64_t value = std::stoll(item.substr(eq + 1));
      choices.push_back(MakeDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
      Set(choices.back().get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type);
      Set(choices.back().get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &value);
      if (cudnnBackendFinalize(choices.back().get()) != CUDNN_STATUS_SUCCESS) return std::nullopt;
      raw.push_back(choices.back().get());
    }
    Descriptor cfg = MakeDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    void* e = engine.get();
    Set(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e);
    if (!raw.empty())
      Set(cfg.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
          int64_t(raw.size()), raw.data());
    if (cudnnBackendFinalize(cfg.get()) != CUDNN_STATUS_SUCCESS) return std::nullopt;
    Candidate c = Describe(std::move(cfg));
    c.engine_desc = std::move(engine);
    c.knob_choices = std::move(choices);
    c.source = SourceNamed(autotune::Field(identity, "source"));
    const std::string rank = autotune::Field(identity, "rank");
    c.rank = rank.empty() ? 0 : std::stoi(rank);
    if (!Acceptable(c, dt) || !Finalize(c, handle) || c.workspace > ws_limit) return std::nullopt;
    return c;
  } catch (const std::exception&) {
    return std::nullopt;  // a malformed identity, or cuDNN refusing an attribute: search instead
  }
}

// "NVIDIA H100 80GB HBM3 sm_90" for the current device, asked once per device.
std::string DeviceKey() {
  static std::mutex mu;
  static std::map<int, std::string> names;
  int device = 0;
  DLB_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = names.find(device); it != names.end()) return it->second;
  cudaDeviceProp p{};
  DLB_CHECK(cudaGetDeviceProperties(&p, device));
  return names[device] =
             std::string(p.name) + " sm_" + std::to_string(p.major) + std::to_string(p.minor);
}

// The loaded library's version ("9.14.0"), not the header's: a new cuDNN may pick differently.
std::string CudnnVersionKey() {
  const size_t v = cudnnGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

std::string CacheKey(const ConvShape& s, const RunConfig& cfg, ConvPass pass) {
  return autotune::ConvKey("cudnn " + CudnnVersionKey(), DeviceKey(), pass, s, cfg.dtype,
                           Name(cfg.layout));
}

std::string SupportKey(const ConvShape& s, const RunConfig& c, ConvPass p) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%d/%d/%d/%ld,%ld,%ld,%ld/%ld,%ld,%ld/%ld,%ld,%ld,%ld,%ld,%ld/%ld",
                int(p), int(c.dtype), int(c.layout), long(s.n), long(s.c), long(s.h), long(s.w),
                long(s.k), long(s.r), long(s.s), long(s.stride_h), long(s.stride_w), long(s.pad_h),
                long(s.pad_w), long(s.dil_h), long(s.dil_w), long(s.groups));
  return buf;
}

// Whether some engine accepts the problem; asked through one handle shared by the process and
// cached per combination, so the harness can call Supports freely.
Support EngineExists(const ConvShape& s, const RunConfig& cfg, ConvPass pass) {
  static std::mutex mu;
  static Handle handle;
  static std::map<std::string, Support> cache;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = SupportKey(s, cfg, pass);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (!handle) handle = MakeHandle();
  Graph g = BuildGraph(handle.get(), s, cfg, pass);
  Support result =
      Support::No("no cuDNN engine (heuristics and fallback) for this " + std::string(Name(pass)) +
                  " " + std::string(Name(cfg.dtype)) + " " + Name(cfg.layout) + " convolution");
  // Any acceptable engine answers the question: the fallback list first, and heuristics mode A
  // only when no fallback engine builds; engines without runtime compilation are tried first, as
  // their plans build in microseconds rather than seconds.
  for (auto mode : {CUDNN_HEUR_MODE_FALLBACK, CUDNN_HEUR_MODE_A}) {
    std::vector<Candidate> cands = Heuristics(g.graph.get(), mode);
    std::stable_partition(cands.begin(), cands.end(), [](const Candidate& c) {
      return !c.behavior.count(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
    });
    const auto usable = [&](Candidate& c) {
      return Acceptable(c, cfg.dtype) && Finalize(c, handle.get());
    };
    if (std::any_of(cands.begin(), cands.end(), usable)) {
      result = Support::Yes();
      break;
    }
  }
  cache.emplace(key, result);
  return result;
}

// The engine search. The first launch of a plan may do one-time work (module loading, runtime
// kernels): it only drops a clearly slow candidate, one whose launch, less the time its enqueue
// took on the host (an upper bound on the idle gap before the kernel starts), still took over 3x
// the best time so far, and only when the enqueue did no one-time work (over 0.1 ms). Any other
// candidate gets a warm timed launch and, unless that one took over twice the best so far, a batch
// of ~0.5 ms of events. The three fastest are timed again for ~3 ms so one noisy sample does not
// decide. Candidates come best-first from the heuristics, so the bound is tight early and slow
// engines cost one or two launches each.
bool KnownAlgo(const std::string& algo) {
  return algo == autotune::kHeuristic || algo == autotune::kSearch || algo == autotune::kCache;
}

autotune::Policy SearchPolicy() {
  autotune::Policy p;
  p.warmup_runs = 1;
  p.first_launch_drop = 3.0;
  p.first_launch_max_host_ms = 0.1;
  p.score = autotune::Policy::Score::kMeanOfBatch;
  p.budget_ms = 0.5;
  p.min_runs = 2;
  p.max_runs = 50;
  p.drop_ratio = 2.0;
  p.retime_top = 3;
  p.retime_budget_ms = 3.0;
  p.retime_min_runs = 3;
  p.retime_max_runs = 100;
  return p;
}

}  // namespace

struct ConvState {
  ConvShape shape;
  RunConfig cfg;
  ConvPass pass = ConvPass::kFwd;
  cuda::Stream stream;
  Handle handle;
  cuda::DeviceBuffer<uint8_t> x, w, y, workspace;
  Graph graph;
  Candidate chosen;
  Descriptor variant_pack;
  std::string label;
  double setup_ms = 0;

  void* OutputPtr() const {
    return pass == ConvPass::kFwd ? y.get() : pass == ConvPass::kBwdData ? x.get() : w.get();
  }
  Dims OutputDims() const {
    const Tensors d = LogicalDims(shape);
    return pass == ConvPass::kFwd ? d.y : pass == ConvPass::kBwdData ? d.x : d.w;
  }
  void PoisonOutput() { cuda::Poison(OutputPtr(), Count(OutputDims()), cfg.dtype, stream.get()); }
  void Execute(void* plan, void* vp) { DLB_CHECK(cudnnBackendExecute(handle.get(), plan, vp)); }
};

template <ConvPass kPass>
Support CudnnConv<kPass>::Supports(const ConvShape& shape, const RunConfig& cfg) {
  if (!shape.Valid()) return Support::No("invalid convolution shape");
  if (!KnownAlgo(cfg.algo))
    return Support::No("unknown algo '" + cfg.algo + "' (heuristic|search|cache)");
  if (cuda::DeviceCount() == 0) return Support::No(cuda::NoDeviceReason());
  return EngineExists(shape, cfg, kPass);
}

template <ConvPass kPass>
CudnnConv<kPass>::CudnnConv(const ConvShape& shape, const RunConfig& cfg)
    : state_(std::make_unique<ConvState>()) {
  DLB_REQUIRE(shape.Valid(), "invalid convolution shape");
  DLB_REQUIRE(KnownAlgo(cfg.algo), "algo must be heuristic|search|cache");
  ConvState& st = *state_;
  st.shape = shape;
  st.cfg = cfg;
  st.pass = kPass;
  const Tensors d = LogicalDims(shape);
  const size_t es = StorageBytes(cfg.dtype);
  // Tensors first: a batch that does not fit fails here, with the sizes, before any planning.
  st.x = cuda::DeviceBuffer<uint8_t>(Count(d.x) * es);
  st.w = cuda::DeviceBuffer<uint8_t>(Count(d.w) * es);
  st.y = cuda::DeviceBuffer<uint8_t>(Count(d.y) * es);
  st.stream = cuda::MakeStream();
  st.handle = MakeHandle();
  DLB_CHECK(cudnnSetStream(st.handle.get(), st.stream.get()));

  // Inputs are seeded on the device, straight into the layout: the same values the verifier
  // reads on the host, without a host copy or a transfer of a batch-256 tensor.
  auto seed = [&](void* dst, int index, const Dims& dims) {
    cuda::SeedDevice(dst, dims, Strides(dims, cfg.layout), TensorSeed(cfg.seed, index), cfg.dtype,
                     st.stream.get());
  };
  if (kPass != ConvPass::kBwdData) seed(st.x.get(), 0, d.x);
  if (kPass != ConvPass::kBwdFilter) seed(st.w.get(), 1, d.w);
  if (kPass != ConvPass::kFwd) seed(st.y.get(), 2, d.y);

  // setup_ms: the graph, the plans and the search (or the cached winner's rebuild).
  const double setup_t0 = autotune::SteadyMs();
  st.graph = BuildGraph(st.handle.get(), shape, cfg, kPass);
  size_t free_b = 0, total_b = 0;
  cuda::MemInfo(&free_b, &total_b);
  const int64_t ws_limit = static_cast<int64_t>(std::min(kWorkspaceCapBytes, 0.5 * double(free_b)));

  const bool use_cache = cfg.algo == autotune::kCache;
  const std::string key = use_cache ? CacheKey(shape, cfg, kPass) : "";
  std::string how;
  bool chosen = false;
  if (use_cache) {
    if (const auto hit = autotune::ProcessCache().Find(key)) {
      if (std::optional<Candidate> c =
              Rebuild(st.graph.graph.get(), hit->winner, cfg.dtype, st.handle.get(), ws_limit)) {
        st.chosen = std::move(*c);
        chosen = true;
        how = ", " + autotune::CachedWinnerLabel(*hit);
      } else {
        how = ", cached winner {" + hit->winner + "} no longer builds;";
      }
    } else {
      how = ", no cached winner;";
    }
  }
  if (!chosen) {
    const bool search = cfg.algo != autotune::kHeuristic;
    // Declared before the tuner, whose timer reads them: set once every plan is built.
    cuda::DeviceBuffer<uint8_t> search_ws;
    Descriptor search_vp;
    cuda::EventTimer events;
    autotune::Tuner<Candidate> tuner(SearchPolicy(), [&](Candidate& c, int runs) {
      return events.TimeLaunches(st.stream.get(), runs,
                                 [&] { st.Execute(c.plan.get(), search_vp.get()); });
    });
    const auto modes =
        search ? std::vector<cudnnBackendHeurMode_t>{CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B,
                                                     CUDNN_HEUR_MODE_FALLBACK}
               : std::vector<cudnnBackendHeurMode_t>{CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    std::vector<Candidate> usable;
    std::set<std::string> seen;
    int rejected_numerics = 0, rejected_workspace = 0, rejected_plan = 0;
    for (auto mode : modes) {
      std::vector<Candidate> proposed = Heuristics(st.graph.graph.get(), mode);
      if (search && mode == CUDNN_HEUR_MODE_FALLBACK) {
        std::vector<Candidate> all = AllEngines(st.graph.graph.get());
        std::move(all.begin(), all.end(), std::back_inserter(proposed));
      }
      for (Candidate& c : proposed) {
        if (!seen.insert(Key(c)).second) continue;
        if (!Acceptable(c, cfg.dtype)) {
          ++rejected_numerics;
          continue;
        }
        if (!Finalize(c, st.handle.get())) {
          ++rejected_plan;
          continue;
        }
        if (c.workspace > ws_limit) {
          ++rejected_workspace;
          continue;
        }
        usable.push_back(std::move(c));
        if (!search) break;
      }
      if (!search && !usable.empty()) break;
    }
    if (usable.empty())
      throw Unsupported(std::string("no cuDNN engine for this ") + Name(kPass) + " convolution (" +
                        std::to_string(rejected_numerics) + " rejected for numerics, " +
                        std::to_string(rejected_plan) + " failed to build, " +
                        std::to_string(rejected_workspace) + " over the workspace limit " +
                        Mib(double(ws_limit)) + ")");

    if (usable.size() > 1) {  // timed: one workspace every candidate fits
      int64_t ws_max = 0;
      for (const Candidate& c : usable) ws_max = std::max(ws_max, c.workspace);
      search_ws = cuda::DeviceBuffer<uint8_t>(static_cast<size_t>(ws_max));
      search_vp = MakeVariantPack(st.x.get(), st.w.get(), st.y.get(), search_ws.get());
    }
    for (Candidate& c : usable) tuner.Offer(EngineName(c), std::move(c));
    st.chosen = tuner.Finish();
    const autotune::Report& found = tuner.report();
    if (search) {
      how += (use_cache ? " searched " : ", searched ") + std::to_string(found.offered) +
             " candidates (plans built in " + std::to_string(int(found.build_ms)) +
             " ms, timed in " + std::to_string(int(found.time_ms)) + " ms" +
             (found.failed ? ", " + std::to_string(found.failed) + " failed to run" : "") + ")";
      if (use_cache) {
        autotune::ProcessCache().Record(key, {Identity(st.chosen), found.best_ms, ""});
        how += ", recorded";
      }
    } else {
      how = ", heuristic: first usable";
    }
  }
  st.workspace = cuda::DeviceBuffer<uint8_t>(static_cast<size_t>(st.chosen.workspace));
  st.variant_pack = MakeVariantPack(st.x.get(), st.w.get(), st.y.get(), st.workspace.get());
  st.setup_ms = autotune::SteadyMs() - setup_t0;
  st.PoisonOutput();
  cuda::Sync(st.stream.get());

  const Candidate& c = st.chosen;
  std::string notes;
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) notes += "tensor_core ";
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_WINOGRAD)) notes += "winograd ";
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_FFT)) notes += "fft ";
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)) notes += "nondeterministic ";
  if (c.behavior.count(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) notes += "runtime_compiled ";
  if (!notes.empty()) notes.pop_back();
  const size_t version = cudnnGetVersion();  // the library loaded, not the header built against
  st.label = "cudnn " + std::to_string(version / 10000) + "." +
             std::to_string(version / 100 % 100) + " backend engine " + std::to_string(c.engine) +
             (c.knobs.empty() ? "" : " {" + c.knobs + "}") +
             (notes.empty() ? "" : " [" + notes + "]") + " from " + c.source + "#" +
             std::to_string(c.rank) + how + ", workspace " + Mib(double(c.workspace)) + " (limit " +
             Mib(double(ws_limit)) + "), math " + MathName(cfg.dtype) + ", " + Name(cfg.layout);
}

template <ConvPass kPass>
CudnnConv<kPass>::~CudnnConv() = default;
template <ConvPass kPass>
CudnnConv<kPass>::CudnnConv(CudnnConv&&) noexcept = default;
template <ConvPass kPass>
CudnnConv<kPass>& CudnnConv<kPass>::operator=(CudnnConv&&) noexcept = default;

template <ConvPass kPass>
void CudnnConv<kPass>::Run() {
  state_->Execute(state_->chosen.plan.get(), state_->variant_pack.get());
}

template <ConvPass kPass>
HostTensor CudnnConv<kPass>::Output() const {
  const ConvState& st = *state_;
  const Dims dims = st.OutputDims();
  std::vector<float> stored = cuda::Download(st.OutputPtr(), static_cast<size_t>(Count(dims)),
                                             st.cfg.dtype, st.stream.get());
  return {{dims[0], dims[1], dims[2], dims[3]}, ToLogical(stored, dims, st.cfg.layout)};
}

template <ConvPass kPass>
HostTensor CudnnConv<kPass>::OutputAt(const std::vector<int64_t>& flat) const {
  const ConvState& st = *state_;
  const Dims dims = st.OutputDims();
  return {{dims[0], dims[1], dims[2], dims[3]},
          cuda::Gather(st.OutputPtr(), dims, Strides(dims, st.cfg.layout), flat, st.cfg.dtype,
                       st.stream.get())};
}

template <ConvPass kPass>
Cost CudnnConv<kPass>::cost() const {
  const Tensors d = LogicalDims(state_->shape);
  const double es = double(StorageBytes(state_->cfg.dtype));
  return {state_->shape.Flops(), es * double(Count(d.x) + Count(d.w) + Count(d.y)),
          double(state_->shape.n)};
}

template <ConvPass kPass>
std::string CudnnConv<kPass>::label() const {
  return state_->label;
}

template <ConvPass kPass>
std::vector<std::pair<std::string, double>> CudnnConv<kPass>::Counters() const {
  return {{autotune::kSetupMsCounter, state_->setup_ms}};
}

template <ConvPass kPass>
StreamRef CudnnConv<kPass>::stream() const {
  return state_->stream.get();
}

template class CudnnConv<ConvPass::kFwd>;
template class CudnnConv<ConvPass::kBwdData>;
template class CudnnConv<ConvPass::kBwdFilter>;

}  // namespace dlb::cudnn
