#include "kernels/cudnn/engines.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <utility>

#include "kernels/common/autotune.h"
#include "kernels/common/autotune_cache.h"
#include "kernels/common/parallel.h"
#include "kernels/cuda/device.h"

namespace dlb::cudnn::engines {

namespace {

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

}  // namespace

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

Tensors LogicalDims(const ConvShape& s) {
  return {{s.n, s.c, s.h, s.w}, {s.k, s.c / s.groups, s.r, s.s}, {s.n, s.k, s.P(), s.Q()}};
}

namespace {

Descriptor MakeTensor(int64_t uid, const Dims& dims, Layout layout, DType dt) {
  return TensorDescriptor(uid, dims, Strides(dims, layout), DataType(dt));
}

}  // namespace

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

namespace {

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

}  // namespace

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

bool Acceptable(const Candidate& c, DType dt) {
  const auto has = [&](cudnnBackendNumericalNote_t n) { return c.numerical.count(n) > 0; };
  if (has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) return false;
  if (dt == DType::kF32 && has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) return false;
  if ((dt == DType::kF16 || dt == DType::kBF16) &&
      has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION))
    return false;
  return true;
}

bool KeepsInputPrecision(const Candidate& c) {
  return !c.numerical.count(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS);
}

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

std::string EngineLabel(const Candidate& c, const std::string& notes) {
  return "engine " + std::to_string(c.engine) + (c.knobs.empty() ? "" : " {" + c.knobs + "}") +
         (notes.empty() ? "" : " [" + notes + "]") + " from " + c.source + "#" +
         std::to_string(c.rank);
}

std::string EngineName(const Candidate& c) {
  return "engine " + std::to_string(c.engine) + (c.knobs.empty() ? "" : " {" + c.knobs + "}") +
         " from " + c.source + "#" + std::to_string(c.rank);
}

Descriptor MakeVariantPack(void* x, void* w, void* y, void* workspace) {
  return MakeVariantPack({kUidX, kUidW, kUidY}, {x, w, y}, workspace);
}

Descriptor MakeVariantPack(const std::vector<int64_t>& uids, const std::vector<void*>& ptrs,
                           void* workspace) {
  Descriptor vp = MakeDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  Set(vp.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()),
      uids.data());
  Set(vp.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(ptrs.size()),
      ptrs.data());
  Set(vp.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  DLB_CHECK(cudnnBackendFinalize(vp.get()));
  return vp;
}

std::string Identity(const Candidate& c) {
  return "engine=" + std::to_string(c.engine) + ";knobs=" + c.knobs + ";source=" + c.source +
         ";rank=" + std::to_string(c.rank);
}

namespace {

// The heuristic mode names Identity writes, as static strings for Candidate::source.
const char* SourceNamed(const std::string& name) {
  for (const char* known : {"heur_a", "heur_b", "fallback", "all_engines"})
    if (name == known) return known;
  return "cache";
}

}  // namespace

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

std::optional<Candidate> CachedWinner(void* graph, const std::string& key, DType dt,
                                      cudnnHandle_t handle, int64_t ws_limit, std::string* how) {
  const auto hit = autotune::ProcessCache().Find(key);
  if (!hit) {
    *how = ", no cached winner;";
    return std::nullopt;
  }
  std::optional<Candidate> c = Rebuild(graph, hit->winner, dt, handle, ws_limit);
  *how = c ? ", " + autotune::CachedWinnerLabel(*hit)
           : ", cached winner {" + hit->winner + "} no longer builds;";
  return c;
}

std::vector<Candidate> Usable(void* graph, cudnnHandle_t handle, bool search, int64_t ws_limit,
                              const std::function<bool(const Candidate&)>& acceptable,
                              const std::string& what) {
  const auto modes =
      search ? std::vector<cudnnBackendHeurMode_t>{CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B,
                                                   CUDNN_HEUR_MODE_FALLBACK}
             : std::vector<cudnnBackendHeurMode_t>{CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
  std::vector<Candidate> usable;
  std::set<std::string> seen;
  int proposed_total = 0, rejected_numerics = 0, rejected_plan = 0, rejected_workspace = 0;
  for (auto mode : modes) {
    std::vector<Candidate> proposed = Heuristics(graph, mode);
    if (search && mode == CUDNN_HEUR_MODE_FALLBACK) {
      std::vector<Candidate> all = AllEngines(graph);
      std::move(all.begin(), all.end(), std::back_inserter(proposed));
    }
    for (Candidate& c : proposed) {
      if (!seen.insert(Key(c)).second) continue;
      ++proposed_total;
      if (!acceptable(c)) {
        ++rejected_numerics;
        continue;
      }
      if (!Finalize(c, handle)) {
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
  if (usable.empty()) {
    char last[512] = {};
    cudnnGetLastErrorString(last, sizeof last);
    throw Unsupported("no cuDNN " + what + " (" + std::to_string(proposed_total) + " proposed, " +
                      std::to_string(rejected_numerics) + " rejected for numerics, " +
                      std::to_string(rejected_plan) + " failed to build, " +
                      std::to_string(rejected_workspace) + " over the workspace limit " +
                      Mib(double(ws_limit)) + ")" + (last[0] ? std::string(": ") + last : ""));
  }
  return usable;
}

void NoteChoice(const autotune::Report& found, bool search, const std::string& key,
                const Candidate& winner, std::string* how) {
  if (!search) {
    *how = ", heuristic: first usable";
    return;
  }
  const bool use_cache = !key.empty();
  *how += (use_cache ? " searched " : ", searched ") + std::to_string(found.offered) +
          " candidates (plans built in " + std::to_string(int(found.build_ms)) + " ms, timed in " +
          std::to_string(int(found.time_ms)) + " ms" +
          (found.failed ? ", " + std::to_string(found.failed) + " failed to run" : "") + ")";
  if (use_cache) {
    autotune::ProcessCache().Record(key, {Identity(winner), found.best_ms, ""});
    *how += ", recorded";
  }
}

}  // namespace dlb::cudnn::engines
