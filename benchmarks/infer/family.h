// The inference family's own code: its model rows (fixtures/workloads/infer_models.csv), the
// phases, batch sizes and contexts each tier times, its verifier (the float64 step of
// kernels/reference/infer.h), its counters and how one case is added. benchmarks/infer.cpp only
// declares which cases exist.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/common/infer.h"
#include "kernels/common/op.h"

namespace dlb::infer {

struct Model {
  WorkloadBasics basics;
  LlamaConfig config;
};
// One infer_*.csv file; a malformed row throws "file:line: ...".
std::vector<Model> LoadModels(const std::string& path);
// Every infer_*.csv of the workloads folder, rows above the tier left out.
std::vector<Model> TierModels();

// One case's phase, batch and context.
struct Point {
  InferPhase phase = InferPhase::kDecode;
  int batch = 1;
  int64_t ctx = 0;
};
// What the tier times of a model in a dtype on a device (benchmarks/infer/matrix.h): decode at
// each batch and context, prefill at each batch and prompt length; on the CPU only the cases
// within the tier's model size and step FLOPs. --dlb_batch_sizes replaces both phases' batches.
std::vector<Point> Points(bool gpu, const LlamaConfig& model, DType dt);
// The tier's dtypes of a backend on a device (benchmarks/infer/matrix.h): LibTorch's GPU step
// bf16 alone; --dlb_dtypes overrides.
std::vector<DType> DTypesOn(bool gpu, std::string_view backend);

// The relative-L2 tolerance of the logits of a step in dtype dt (docs/families/infer.md).
double InferTolerance(DType dt);
// The float64 step's logits against the op's, where the reference is affordable (a model of at
// most kMaxReferenceParams weights, a step of at most kMaxReferenceFlops). Above that, a GPU
// case's logits against LibTorch's eager f32 step of the same seeded model on the GPU
// (F32Verifier), where this build's LibTorch has CUDA; not verified otherwise, saying why.
inline constexpr double kMaxReferenceParams = 5e7;
inline constexpr double kMaxReferenceFlops = 5e9;
VerifyFn Verifier(const InferShape& shape, const RunConfig& cfg, bool gpu);
// The eager f32 check of a case too large for the float64 step (benchmarks/infer/f32_check.cpp):
// `too_large` says why the float64 step is not run; where the f32 step cannot run either (no
// LibTorch CUDA in this build, too little device memory), the case is not verified with both
// reasons.
VerifyFn F32Verifier(const InferShape& shape, const RunConfig& cfg, const std::string& too_large);

// The family's counters of a measured step (tokens_per_s, tpot_s or ttft_s, step_bytes, kv_bytes,
// pct_mem_bw for decode, mfu for prefill), after the harness's own.
void RecordInferCounters(benchmark::State& st, const InferShape& shape, const Cost& cost,
                         double kv_bytes, double step_s, bool gpu, DType dt, int threads);

template <class Op>
struct InferSteps : DefaultSteps<Op, InferShape> {
  static void Record(benchmark::State& st, const Op& op, const CaseInfo& info, const RunConfig& cfg,
                     const Timing& t, int launches, Verdict* verdict) {
    RecordStep(st, op, info, cfg, t, launches, verdict);
    if (t.iterations == 0 || t.total <= 0) return;
    RecordInferCounters(st, op.shape(), op.cost(), op.KvBytes(), t.Mean(), Op::kGpu, info.dtype,
                        cfg.threads);
  }
};

// Whether an op times a paged KV cache (it names its page size, kPage): its rows are the decode
// points of the tiers matrix::kGpuPagedDecode names.
template <class Op, class = void>
struct PagedKv : std::false_type {};
template <class Op>
struct PagedKv<Op, std::void_t<decltype(Op::kPage)>> : std::true_type {};

// Registers one case: infer/<device>/<backend>/<model>/phase:<p>/bs:<b>/ctx:<l>/dt:<dt> (the key
// order of the family's row in fixtures/schema/families.h).
template <class Op>
void Add(const Model& m, const Point& p, DType dt) {
  const InferShape shape{m.config, p.phase, p.batch, p.ctx};
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.seed = dlb::Opts().seed;
  cfg.threads = dlb::Opts().threads;
  NameKeys keys = {{key::kPhase, Name(p.phase)},
                   {key::kBatch, std::to_string(p.batch)},
                   {key::kCtx, std::to_string(p.ctx)},
                   {key::kDType, std::string(Name(dt))}};
  Register<Op, InferShape, InferSteps<Op>>(
      "infer", m.basics, std::move(keys), shape, cfg,
      CaseInfo::Of(m.basics, dt, p.batch, Verifier(shape, cfg, Op::kGpu)));
}

}  // namespace dlb::infer
