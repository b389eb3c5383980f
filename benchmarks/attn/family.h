// The attention family's own code: its model rows (fixtures/workloads/attn_models.csv), the
// sequence lengths and batch sizes each tier times, its verifier (the float64 reference attention
// of kernels/reference/attn.h at sampled elements) and how one case is added. benchmarks/attn.cpp
// only declares which cases exist.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/common/op.h"
#include "kernels/common/shapes.h"

namespace dlb::attn {

// The family's own flags (the run's are dlb::Opts()).
struct FamilyOptionValues {
  Algo algo = Algo::kCache;  // --dlb_autotune
};
const FamilyOptionValues& FamilyOptions();
std::vector<FlagSpec> Flags();

struct Model {
  WorkloadBasics basics;
  AttnShape shape;  // heads, kv_heads, head_dim, causal; batch, seq and pass left to the case
};
// One attn_*.csv file; a malformed row throws "file:line: ...".
std::vector<Model> LoadModels(const std::string& path);
// Every attn_*.csv of the workloads folder, rows above the tier left out.
std::vector<Model> TierModels();

// One (sequence length, batch) point of a tier.
struct Point {
  int64_t seq = 0;
  int batch = 0;
};
// What the tier times on a device (benchmarks/attn/matrix.h): each sequence length at a fixed
// token count per batch (batch = tokens / seq). --dlb_batch_sizes replaces the token count's batch
// with its own list at every length.
std::vector<Point> Points(bool gpu);
// The tier's dtypes on a device (benchmarks/attn/matrix.h); --dlb_dtypes overrides.
std::vector<DType> DTypesOn(bool gpu);

// The relative-L2 tolerance of a pass's output in dtype dt over `seq` keys (docs/families/attn.md):
// f32 forward the dtype's, widened for long reductions; 16-bit forward 1e-2; the backward 10x the
// f32 forward's and 3e-2 at 16 bits.
double AttnTolerance(DType dt, AttnPass pass, int64_t seq);

// The positions the verifier checks in a pass's output (flat, ascending): sampled O (fwd) or dQ
// rows, and for the backward dK/dV rows of at most two kv groups (the first and the last), whose
// reference cost, R x 2 S D per needed query row of each of the group's R heads, stays within
// about 2e10 float64 operations: a causal key row j needs the rows i >= j, so the rows checked
// there are the latest keys that budget affords.
std::vector<int64_t> VerifyPositions(const AttnShape& shape, uint64_t seed);

// The float64 reference at VerifyPositions.
VerifyFn Verifier(const AttnShape& shape, const RunConfig& cfg);

// Registers one case: attn/<device>/<backend>/<model>.attn/bs:/dt:/pass:/seq:/heads:/kv_heads:/
// head_dim:/causal:.
template <class Op>
void Add(const Model& m, const Point& p, DType dt, AttnPass pass) {
  AttnShape shape = m.shape;
  shape.batch = p.batch;
  shape.seq = p.seq;
  shape.pass = pass;
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.seed = dlb::Opts().seed;
  cfg.threads = dlb::Opts().threads;
  cfg.algo = FamilyOptions().algo;
  if (cfg.algo == Algo::kCache) UseAutotuneCache();
  NameKeys keys = {{key::kBatch, std::to_string(p.batch)},
                   {key::kDType, std::string(Name(dt))},
                   {key::kPass, Name(pass)},
                   {key::kSeq, std::to_string(p.seq)},
                   {key::kHeads, std::to_string(shape.heads)},
                   {key::kKvHeads, std::to_string(shape.kv_heads)},
                   {key::kHeadDim, std::to_string(shape.head_dim)},
                   {key::kCausal, shape.causal ? "1" : "0"}};
  Register<Op>("attn", m.basics, std::move(keys), shape, cfg,
               CaseInfo::Of(m.basics, dt, p.batch, Verifier(shape, cfg)));
}

}  // namespace dlb::attn
