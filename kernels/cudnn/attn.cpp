#include "kernels/cudnn/attn.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/common/autotune.h"
#include "kernels/common/autotune_cache.h"
#include "kernels/common/fill.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"
#include "kernels/cudnn/attn_graph.h"
#include "kernels/cudnn/backend.h"
#include "kernels/cudnn/check.h"
#include "kernels/cudnn/engines.h"

namespace dlb::cudnn {

using engines::Candidate;
using engines::Mib;

namespace {

std::string CacheKey(const AttnShape& s, const RunConfig& cfg) {
  char shape[160];
  std::snprintf(shape, sizeof shape, "attn %s b%ld h%ld g%ld s%ld d%ld causal%d", Name(s.pass),
                long(s.batch), long(s.heads), long(s.kv_heads), long(s.seq), long(s.head_dim),
                int(s.causal));
  return "cudnn " + VersionText(cudnnGetVersion()) + " | " + CurrentDevice().Key() + " | " + shape +
         " | " + std::string(Name(cfg.dtype)) + " | bhsd";
}

// The convolutions' search (kernels/cudnn/conv.cpp) with longer samples: attention runs take
// 0.05 to 5 ms and there are few candidates (4 to 8), so each is timed for ~5 ms and the three
// fastest again for ~20 ms; with 0.5 ms batches a 1 ms kernel got one or two runs and the clock's
// state decided between configurations within 10% of each other.
autotune::Policy SearchPolicy() {
  autotune::Policy p;
  p.warmup_runs = 1;
  p.first_launch_drop = 3.0;
  p.first_launch_max_host_ms = 0.1;
  p.score = autotune::Policy::Score::kMeanOfBatch;
  p.budget_ms = 5.0;
  p.min_runs = 3;
  p.max_runs = 200;
  p.drop_ratio = 2.0;
  p.retime_top = 3;
  p.retime_budget_ms = 20.0;
  p.retime_min_runs = 5;
  p.retime_max_runs = 1000;
  return p;
}

std::string Notes(const Candidate& c) {
  std::string notes;
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) notes += "tensor_core ";
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION))
    notes += "reduced_precision_reduction ";
  if (c.numerical.count(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)) notes += "nondeterministic ";
  if (c.behavior.count(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) notes += "runtime_compiled ";
  if (!notes.empty()) notes.pop_back();
  return notes;
}

std::string EngineLabel(const Candidate& c) { return engines::EngineLabel(c, Notes(c)); }

}  // namespace

struct AttnState {
  AttnShape shape;
  RunConfig cfg;
  attn::Lowering low;
  cuda::Stream stream;
  Handle handle;
  cuda::DeviceBuffer<uint8_t> q, k, v, o, stats, dout, dq, dk, dv, softmax_sum, dq_accum, seq_q,
      seq_kv, workspace;
  // The by-value scalars: the variant pack holds their addresses.
  float scale = 0, one = 1, neg_inf = 0;
  attn::OpGraph graph;
  Candidate chosen;
  Descriptor pack;
  std::string label;
  double setup_ms = 0;

  bool Bwd() const { return shape.pass == AttnPass::kBwd; }

  // Every tensor the pass's graph names, with its address.
  std::pair<std::vector<int64_t>, std::vector<void*>> Bindings(AttnPass pass) {
    using namespace attn;  // NOLINT: the uids
    std::vector<int64_t> uids = {kUidQ, kUidK, kUidV, kUidO, kUidStats, kUidScale};
    std::vector<void*> ptrs = {q.get(), k.get(), v.get(), o.get(), stats.get(), &scale};
    const auto add = [&](int64_t uid, void* p) {
      uids.push_back(uid);
      ptrs.push_back(p);
    };
    if (shape.causal || (pass == AttnPass::kBwd && low.padding_workaround))
      add(kUidNegInf, &neg_inf);
    if (pass == AttnPass::kBwd) {
      add(kUidDO, dout.get());
      add(kUidDQ, dq.get());
      add(kUidDK, dk.get());
      add(kUidDV, dv.get());
      add(kUidOne, &one);
      add(kUidSoftmaxSum, softmax_sum.get());
      add(kUidDQAccum, dq_accum.get());
      if (low.padding_workaround) {
        add(kUidSeqQ, seq_q.get());
        add(kUidSeqKv, seq_kv.get());
      }
    }
    return {uids, ptrs};
  }

  Descriptor MakePack(AttnPass pass, void* ws) {
    auto [uids, ptrs] = Bindings(pass);
    return engines::MakeVariantPack(uids, ptrs, ws);
  }

  void Execute(void* plan, void* vp, AttnPass pass) {
    if (pass == AttnPass::kBwd && low.zero_dq_accum)
      DLB_CHECK(cudaMemsetAsync(dq_accum.get(), 0, dq_accum.bytes(), stream.get()));
    DLB_CHECK(cudnnBackendExecute(handle.get(), plan, vp));
  }

  struct Picked {
    Candidate c;
    std::string how;
  };
  // The engine configuration for a pass's graph, by cfg.algo (heuristic, search or cache).
  Picked Pick(void* g, AttnPass pass, Algo algo, int64_t ws_limit);
};

AttnState::Picked AttnState::Pick(void* g, AttnPass pass, Algo algo, int64_t ws_limit) {
  Picked out;
  const bool use_cache = algo == Algo::kCache;
  AttnShape keyed = shape;
  keyed.pass = pass;
  const std::string key = use_cache ? CacheKey(keyed, cfg) : "";
  if (use_cache) {
    if (std::optional<Candidate> c =
            engines::CachedWinner(g, key, cfg.dtype, handle.get(), ws_limit, &out.how)) {
      out.c = std::move(*c);
      return out;
    }
  }
  const bool search = algo != Algo::kHeuristic;
  cuda::DeviceBuffer<uint8_t> search_ws;
  Descriptor search_vp;
  cuda::EventTimer events;
  autotune::Tuner<Candidate> tuner(SearchPolicy(), [&](Candidate& c, int runs) {
    return events.TimeLaunches(stream.get(), runs,
                               [&] { Execute(c.plan.get(), search_vp.get(), pass); });
  });
  std::vector<Candidate> usable =
      engines::Usable(g, handle.get(), search, ws_limit, engines::KeepsInputPrecision,
                      "fused attention engine for this " + std::string(Name(pass)) + " graph");
  if (usable.size() > 1) {
    int64_t ws_max = 0;
    for (const Candidate& c : usable) ws_max = std::max(ws_max, c.workspace);
    search_ws = cuda::DeviceBuffer<uint8_t>(static_cast<size_t>(ws_max));
    search_vp = MakePack(pass, search_ws.get());
  }
  if (usable.size() > 1) {
    // ~50 ms of the first candidate before any is timed: an idle GPU's clocks ramp up over the
    // first milliseconds of work, which would otherwise favour whichever candidate comes last.
    const autotune::Sample one = events.TimeLaunches(
        stream.get(), 1, [&] { Execute(usable[0].plan.get(), search_vp.get(), pass); });
    const int runs = int(std::min(1000.0, 50.0 / std::max(one.ms, 0.01)));
    events.TimeLaunches(stream.get(), std::max(runs, 1),
                        [&] { Execute(usable[0].plan.get(), search_vp.get(), pass); });
  }
  for (Candidate& c : usable) tuner.Offer(engines::EngineName(c), std::move(c));
  out.c = tuner.Finish();
  engines::NoteChoice(tuner.report(), search, key, out.c, &out.how);
  return out;
}

Support CudnnAttn::Supports(const AttnShape& s, const RunConfig& cfg) {
  if (s.Valid() && s.pass == AttnPass::kBwd && s.seq == 1)
    return Support::No("cuDNN's fused attention backward does not take seq 1");
  return attn::FusedSupport(s, cfg.dtype);
}

CudnnAttn::CudnnAttn(const AttnShape& shape, const RunConfig& cfg)
    : state_(std::make_unique<AttnState>()) {
  RequireSupported(Supports(shape, cfg));
  AttnState& st = *state_;
  st.shape = shape;
  st.cfg = cfg;
  const size_t version = cudnnGetVersion();
  st.low = attn::LoweringFor(shape, shape.pass, version);
  st.scale = float(shape.Scale());
  st.neg_inf = st.low.neg_inf;
  const bool bwd = st.Bwd();
  const size_t es = StorageBytes(cfg.dtype);
  const size_t q_bytes = size_t(shape.QElems()) * es, kv_bytes = size_t(shape.KvElems()) * es;
  const size_t rows = size_t(shape.batch * shape.heads * shape.seq);
  // Tensors first: a case that does not fit fails here, with the sizes, before any planning.
  st.q = cuda::DeviceBuffer<uint8_t>(q_bytes);
  st.k = cuda::DeviceBuffer<uint8_t>(kv_bytes);
  st.v = cuda::DeviceBuffer<uint8_t>(kv_bytes);
  st.o = cuda::DeviceBuffer<uint8_t>(q_bytes);
  st.stats = cuda::DeviceBuffer<uint8_t>(rows * sizeof(float));
  if (bwd) {
    st.dout = cuda::DeviceBuffer<uint8_t>(q_bytes);
    st.dq = cuda::DeviceBuffer<uint8_t>(q_bytes);
    st.dk = cuda::DeviceBuffer<uint8_t>(kv_bytes);
    st.dv = cuda::DeviceBuffer<uint8_t>(kv_bytes);
    st.softmax_sum = cuda::DeviceBuffer<uint8_t>(rows * sizeof(float));
    st.dq_accum = cuda::DeviceBuffer<uint8_t>(size_t(shape.QElems()) * sizeof(float));
  }
  st.stream = cuda::MakeStream();
  st.handle = MakeHandle();
  DLB_CHECK(cudnnSetStream(st.handle.get(), st.stream.get()));

  const attn::Dims qd = {shape.batch, shape.heads, shape.seq, shape.head_dim};
  const attn::Dims kvd = {shape.batch, shape.kv_heads, shape.seq, shape.head_dim};
  const auto seed = [&](void* dst, int index, const attn::Dims& d) {
    cuda::SeedDevice(dst, d, attn::Contiguous(d), TensorSeed(cfg.seed, index), cfg.dtype,
                     st.stream.get());
  };
  seed(st.q.get(), 0, qd);
  seed(st.k.get(), 1, kvd);
  seed(st.v.get(), 2, kvd);
  if (bwd) seed(st.dout.get(), 3, qd);
  if (st.low.padding_workaround) {
    const std::vector<int32_t> lengths(size_t(shape.batch), int32_t(shape.seq));
    st.seq_q = cuda::DeviceBuffer<uint8_t>(lengths.size() * sizeof(int32_t));
    st.seq_kv = cuda::DeviceBuffer<uint8_t>(lengths.size() * sizeof(int32_t));
    for (void* dst : {static_cast<void*>(st.seq_q.get()), static_cast<void*>(st.seq_kv.get())})
      DLB_CHECK(cudaMemcpyAsync(dst, lengths.data(), st.seq_q.bytes(), cudaMemcpyHostToDevice,
                                st.stream.get()));
    cuda::Sync(st.stream.get());  // the host vector goes out of scope
  }

  const double setup_t0 = autotune::SteadyMs();
  size_t free_b = 0, total_b = 0;
  cuda::MemInfo(&free_b, &total_b);
  const int64_t ws_limit =
      static_cast<int64_t>(std::min(engines::kWorkspaceCapBytes, 0.5 * double(free_b)));

  std::string forward_note;
  if (bwd) {
    // The forward once, untimed, for O and the statistics the backward reads.
    const attn::Lowering fwd_low = attn::LoweringFor(shape, AttnPass::kFwd, version);
    attn::OpGraph fg = attn::BuildForward(st.handle.get(), shape, cfg.dtype, fwd_low);
    AttnState::Picked f = st.Pick(fg.graph.get(), AttnPass::kFwd, Algo::kHeuristic, ws_limit);
    cuda::DeviceBuffer<uint8_t> fws(static_cast<size_t>(f.c.workspace));
    Descriptor fvp = st.MakePack(AttnPass::kFwd, fws.get());
    st.Execute(f.c.plan.get(), fvp.get(), AttnPass::kFwd);
    cuda::Sync(st.stream.get());
    forward_note = "; O and stats from one untimed forward (" + EngineLabel(f.c) + ")";
  }

  st.graph = bwd ? attn::BuildBackward(st.handle.get(), shape, cfg.dtype, st.low)
                 : attn::BuildForward(st.handle.get(), shape, cfg.dtype, st.low);
  AttnState::Picked p = st.Pick(st.graph.graph.get(), shape.pass, cfg.algo, ws_limit);
  st.chosen = std::move(p.c);
  st.workspace = cuda::DeviceBuffer<uint8_t>(static_cast<size_t>(st.chosen.workspace));
  st.pack = st.MakePack(shape.pass, st.workspace.get());
  st.setup_ms = autotune::SteadyMs() - setup_t0;

  // The search ran the pass on these buffers: the outputs verification reads start poisoned.
  if (bwd) {
    cuda::Poison(st.dq.get(), size_t(shape.QElems()), cfg.dtype, st.stream.get());
    cuda::Poison(st.dk.get(), size_t(shape.KvElems()), cfg.dtype, st.stream.get());
    cuda::Poison(st.dv.get(), size_t(shape.KvElems()), cfg.dtype, st.stream.get());
  } else {
    cuda::Poison(st.o.get(), size_t(shape.QElems()), cfg.dtype, st.stream.get());
  }
  cuda::Sync(st.stream.get());

  std::string heads = std::to_string(shape.heads) + " heads";
  if (shape.kv_heads != shape.heads)
    heads = std::to_string(shape.heads) + " query / " + std::to_string(shape.kv_heads) +
            " kv heads (grouped)";
  st.label =
      "cuDNN " + VersionText(version) + " fused SDPA " + Name(shape.pass) + " (backend graph), " +
      EngineLabel(st.chosen) + p.how + ", workspace " + Mib(double(st.chosen.workspace)) +
      " (limit " + Mib(double(ws_limit)) + "), " + std::string(Name(cfg.dtype)) +
      " data, fp32 softmax and accumulation, " + (shape.causal ? "causal" : "no mask") + ", " +
      heads + ", q/k/v (B,H,S,D) contiguous" +
      (st.low.padding_workaround ? ", full-length padding mask (cuDNN <= 9.15, s % 128)" : "") +
      forward_note;
}

CudnnAttn::~CudnnAttn() = default;
CudnnAttn::CudnnAttn(CudnnAttn&&) noexcept = default;
CudnnAttn& CudnnAttn::operator=(CudnnAttn&&) noexcept = default;

void CudnnAttn::Run() {
  state_->Execute(state_->chosen.plan.get(), state_->pack.get(), state_->shape.pass);
}

HostTensor CudnnAttn::Output() const {
  const AttnState& st = *state_;
  const AttnShape& s = st.shape;
  const DType dt = st.cfg.dtype;
  if (!st.Bwd())
    return {{s.batch, s.heads, s.seq, s.head_dim},
            cuda::Download(st.o.get(), size_t(s.QElems()), dt, st.stream.get())};
  HostTensor out;
  out.shape = {s.QElems() + 2 * s.KvElems()};
  out.data = cuda::Download(st.dq.get(), size_t(s.QElems()), dt, st.stream.get());
  for (const auto* b : {&st.dk, &st.dv}) {
    std::vector<float> part = cuda::Download(b->get(), size_t(s.KvElems()), dt, st.stream.get());
    out.data.insert(out.data.end(), part.begin(), part.end());
  }
  return out;
}

HostTensor CudnnAttn::OutputAt(const std::vector<int64_t>& flat) const {
  const AttnState& st = *state_;
  const AttnShape& s = st.shape;
  const DType dt = st.cfg.dtype;
  const attn::Dims qd = {s.batch, s.heads, s.seq, s.head_dim};
  const attn::Dims kvd = {s.batch, s.kv_heads, s.seq, s.head_dim};
  if (!st.Bwd())
    return {{s.batch, s.heads, s.seq, s.head_dim},
            cuda::Gather(st.o.get(), qd, attn::Contiguous(qd), flat, dt, st.stream.get())};
  const int64_t total = s.QElems() + 2 * s.KvElems();
  HostTensor out;
  out.shape = {total};
  if (!IndicesBelow(flat, total)) return out;
  // Each index belongs to dQ, dK or dV: gathered per tensor, then put back in the asked order.
  struct Part {
    const cuda::DeviceBuffer<uint8_t>* buf;
    attn::Dims dims;
    int64_t begin, size;
  };
  const Part parts[3] = {{&st.dq, qd, 0, s.QElems()},
                         {&st.dk, kvd, s.QElems(), s.KvElems()},
                         {&st.dv, kvd, s.QElems() + s.KvElems(), s.KvElems()}};
  out.data.assign(flat.size(), 0.0f);
  for (const Part& part : parts) {
    std::vector<int64_t> local;
    std::vector<size_t> where;
    for (size_t i = 0; i < flat.size(); ++i)
      if (flat[i] >= part.begin && flat[i] < part.begin + part.size) {
        local.push_back(flat[i] - part.begin);
        where.push_back(i);
      }
    if (local.empty()) continue;
    const std::vector<float> got = cuda::Gather(
        part.buf->get(), part.dims, attn::Contiguous(part.dims), local, dt, st.stream.get());
    for (size_t j = 0; j < where.size(); ++j) out.data[where[j]] = got[j];
  }
  return out;
}

Cost CudnnAttn::cost() const {
  const AttnShape& s = state_->shape;
  const double es = double(StorageBytes(state_->cfg.dtype));
  const double q = double(s.QElems()), kv = double(s.KvElems());
  // The family's bytes (docs/families/attn.md), the same for every backend: forward Q, K, V in and
  // O out; backward Q, K, V, O, dO in and dQ, dK, dV out. The softmax statistics cuDNN keeps
  // between the passes are its own, and not counted.
  if (!state_->Bwd()) return {s.FwdFlops(), es * (2 * q + 2 * kv), double(s.batch)};
  return {s.BwdFlops(), es * (4 * q + 4 * kv), double(s.batch)};
}

std::string CudnnAttn::label() const { return state_->label; }

std::vector<std::pair<std::string, double>> CudnnAttn::Counters() const {
  return {{autotune::kSetupMsCounter, state_->setup_ms}};
}

StreamRef CudnnAttn::stream() const { return state_->stream.get(); }

}  // namespace dlb::cudnn
