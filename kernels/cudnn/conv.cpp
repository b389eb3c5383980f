#include "kernels/cudnn/conv.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/common/autotune.h"
#include "kernels/common/autotune_cache.h"
#include "kernels/common/fill.h"
#include "kernels/common/parallel.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"
#include "kernels/cudnn/backend.h"
#include "kernels/cudnn/check.h"
#include "kernels/cudnn/engines.h"

namespace dlb::cudnn {

using namespace engines;  // the backend graph and its engines (engines.h)

namespace {

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
    case DType::kFP8E4M3:
    case DType::kFP8E5M2:
    case DType::kInt8:
      break;  // never built: Supports turns the 8-bit types down
  }
  return "";
}

// The convolutions are timed in f32, tf32, f16 and bf16; the 8-bit types are the GEMM family's.
std::string EightBitReason(DType dt) {
  return std::string(Name(dt)) + " convolutions are not benchmarked (8-bit types: GEMM only)";
}

std::string CacheKey(const ConvShape& s, const RunConfig& cfg, ConvPass pass) {
  return autotune::ConvKey("cudnn " + VersionText(cudnnGetVersion()), CurrentDevice().Key(), pass,
                           s, cfg.dtype, Name(cfg.layout));
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
  std::string fewer_ops;  // "winograd", "fft": an algorithm that does fewer multiplications
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

namespace {

// The tensors, the stream and the handle; the inputs seeded on the device, straight into the
// layout: the same values the verifier reads on the host, without a host copy or a transfer of a
// batch-256 tensor. Tensors first: a batch that does not fit fails here, with the sizes, before
// any planning.
void PrepareTensors(ConvState& st) {
  const Tensors d = LogicalDims(st.shape);
  const size_t es = StorageBytes(st.cfg.dtype);
  st.x = cuda::DeviceBuffer<uint8_t>(Count(d.x) * es);
  st.w = cuda::DeviceBuffer<uint8_t>(Count(d.w) * es);
  st.y = cuda::DeviceBuffer<uint8_t>(Count(d.y) * es);
  st.stream = cuda::MakeStream();
  st.handle = MakeHandle();
  DLB_CHECK(cudnnSetStream(st.handle.get(), st.stream.get()));
  const RunConfig& cfg = st.cfg;
  auto seed = [&](void* dst, int index, const Dims& dims) {
    cuda::SeedDevice(dst, dims, Strides(dims, cfg.layout), TensorSeed(cfg.seed, index), cfg.dtype,
                     st.stream.get());
  };
  if (st.pass != ConvPass::kBwdData) seed(st.x.get(), 0, d.x);
  if (st.pass != ConvPass::kBwdFilter) seed(st.w.get(), 1, d.w);
  if (st.pass != ConvPass::kFwd) seed(st.y.get(), 2, d.y);
}

// The usable candidates timed (SearchPolicy) or, without a search, the first one, into
// st.chosen; with the cache, the winner recorded under `key`. `how` gets what was done.
void ChooseBySearch(ConvState& st, bool use_cache, const std::string& key, int64_t ws_limit,
                    std::string* how) {
  const bool search = st.cfg.algo != Algo::kHeuristic;
  // Declared before the tuner, whose timer reads them: set once every plan is built.
  cuda::DeviceBuffer<uint8_t> search_ws;
  Descriptor search_vp;
  cuda::EventTimer events;
  autotune::Tuner<Candidate> tuner(SearchPolicy(), [&](Candidate& c, int runs) {
    return events.TimeLaunches(st.stream.get(), runs,
                               [&] { st.Execute(c.plan.get(), search_vp.get()); });
  });
  std::vector<Candidate> usable = Usable(
      st.graph.graph.get(), st.handle.get(), search, ws_limit,
      [&](const Candidate& c) { return Acceptable(c, st.cfg.dtype); },
      "engine for this " + std::string(Name(st.pass)) + " convolution");
  if (usable.size() > 1) {  // timed: one workspace every candidate fits
    int64_t ws_max = 0;
    for (const Candidate& c : usable) ws_max = std::max(ws_max, c.workspace);
    search_ws = cuda::DeviceBuffer<uint8_t>(static_cast<size_t>(ws_max));
    search_vp = MakeVariantPack(st.x.get(), st.w.get(), st.y.get(), search_ws.get());
  }
  for (Candidate& c : usable) tuner.Offer(EngineName(c), std::move(c));
  st.chosen = tuner.Finish();
  NoteChoice(tuner.report(), search, use_cache ? key : "", st.chosen, how);
}

// The chosen engine's notes worth naming, and whether it does fewer multiplications (st.fewer_ops).
std::string ConvNotes(ConvState& st) {
  const Candidate& c = st.chosen;
  std::string notes;
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) notes += "tensor_core ";
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_WINOGRAD)) notes += "winograd ";
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_FFT)) notes += "fft ";
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)) notes += "nondeterministic ";
  if (c.behavior.count(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) notes += "runtime_compiled ";
  if (!notes.empty()) notes.pop_back();
  for (int tile :
       {CUDNN_NUMERICAL_NOTE_WINOGRAD, CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4,
        CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6, CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13})
    if (c.numerical.count(tile)) st.fewer_ops = "winograd";
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_FFT)) st.fewer_ops = "fft";
  return notes;
}

std::string ConvLabel(ConvState& st, const std::string& how, int64_t ws_limit) {
  const std::string notes = ConvNotes(st);
  const Candidate& c = st.chosen;
  return "cudnn " + VersionText(cudnnGetVersion()) + " backend " + EngineLabel(c, notes) + how +
         ", workspace " + Mib(double(c.workspace)) + " (limit " + Mib(double(ws_limit)) +
         "), math " + MathName(st.cfg.dtype) + ", " + Name(st.cfg.layout) +
         (st.fewer_ops.empty() ? "" : FewerOpsNote(st.fewer_ops));
}

}  // namespace

template <ConvPass kPass>
Support CudnnConv<kPass>::Supports(const ConvShape& shape, const RunConfig& cfg) {
  if (!shape.Valid()) return Support::No("invalid convolution shape");
  if (IsEightBit(cfg.dtype)) return Support::No(EightBitReason(cfg.dtype));
  if (cuda::DeviceCount() == 0) return Support::No(cuda::NoDeviceReason());
  return EngineExists(shape, cfg, kPass);
}

template <ConvPass kPass>
CudnnConv<kPass>::CudnnConv(const ConvShape& shape, const RunConfig& cfg)
    : state_(std::make_unique<ConvState>()) {
  DLB_REQUIRE(shape.Valid(), "invalid convolution shape");
  if (IsEightBit(cfg.dtype)) throw Unsupported(EightBitReason(cfg.dtype));
  ConvState& st = *state_;
  st.shape = shape;
  st.cfg = cfg;
  st.pass = kPass;
  PrepareTensors(st);
  // setup_ms: the graph, the plans and the search (or the cached winner's rebuild).
  const double setup_t0 = autotune::SteadyMs();
  st.graph = BuildGraph(st.handle.get(), shape, cfg, kPass);
  size_t free_b = 0, total_b = 0;
  cuda::MemInfo(&free_b, &total_b);
  const int64_t ws_limit = static_cast<int64_t>(std::min(kWorkspaceCapBytes, 0.5 * double(free_b)));
  const bool use_cache = cfg.algo == Algo::kCache;
  const std::string key = use_cache ? CacheKey(shape, cfg, kPass) : "";
  std::string how;
  std::optional<Candidate> cached;
  if (use_cache)
    cached = CachedWinner(st.graph.graph.get(), key, cfg.dtype, st.handle.get(), ws_limit, &how);
  if (cached)
    st.chosen = std::move(*cached);
  else
    ChooseBySearch(st, use_cache, key, ws_limit, &how);
  st.workspace = cuda::DeviceBuffer<uint8_t>(static_cast<size_t>(st.chosen.workspace));
  st.variant_pack = MakeVariantPack(st.x.get(), st.w.get(), st.y.get(), st.workspace.get());
  st.setup_ms = autotune::SteadyMs() - setup_t0;
  st.PoisonOutput();
  cuda::Sync(st.stream.get());
  st.label = ConvLabel(st, how, ws_limit);
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
          double(state_->shape.n), state_->shape.ConventionalFlops()};
}

template <ConvPass kPass>
std::string CudnnConv<kPass>::label() const {
  return state_->label;
}

template <ConvPass kPass>
std::vector<std::pair<std::string, double>> CudnnConv<kPass>::Counters() const {
  return {{autotune::kSetupMsCounter, state_->setup_ms},
          {kFewerOpsCounter, state_->fewer_ops.empty() ? 0.0 : 1.0}};
}

template <ConvPass kPass>
StreamRef CudnnConv<kPass>::stream() const {
  return state_->stream.get();
}

template class CudnnConv<ConvPass::kFwd>;
template class CudnnConv<ConvPass::kBwdData>;
template class CudnnConv<ConvPass::kBwdFilter>;

}  // namespace dlb::cudnn
