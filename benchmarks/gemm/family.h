// The GEMM family's own code: its workload rows (fixtures/workloads/gemm_*.csv), its flag
// (--dlb_gemm_algo), its verifier (float64 dot products) and how one case is added. The shared
// harness knows none of it; benchmarks/gemm.cpp only declares which cases exist.
#pragma once

#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/common/op.h"
#include "kernels/common/shapes.h"

namespace dlb::gemm {

struct Workload {
  WorkloadBasics basics;
  GemmShape shape;  // m is 0 when m_is_batch
  bool m_is_batch = false;
};
// One gemm_*.csv file; a malformed row throws "file:line: ...".
std::vector<Workload> LoadWorkloads(const std::string& path);
// Every gemm_*.csv of the workloads folder, rows above the tier left out.
std::vector<Workload> TierWorkloads();
// The square rows (square.<n>), where the default tier times the 8-bit types.
bool IsSquare(const Workload& w);

// cuBLASLt's FP8 accumulation: full precision, or fast (CUBLASLT_MATMUL_DESC_FAST_ACCUM).
enum class Fp8Accum { kFull, kFast };

// The family's own flags (the run's are dlb::Opts()).
struct FamilyOptionValues {
  Algo algo = Algo::kHeuristic;          // --dlb_gemm_algo: heuristic | search
  Fp8Accum fp8_accum = Fp8Accum::kFull;  // --dlb_gemm_fp8_accum
};
const FamilyOptionValues& FamilyOptions();
std::vector<FlagSpec> Flags();

// Float64 dot products at sampled positions of C (all of C when it is small), of the dequantised
// inputs for the 8-bit types.
VerifyFn Verifier(const GemmShape& shape, const RunConfig& cfg);

// Registers one case: gemm/<device>/<backend>/<workload>[/bs:<b>]/dt:<dt>. batch is 0 for rows
// whose M is not the batch size.
template <class Op>
void Add(const Workload& w, int64_t batch, DType dt) {
  GemmShape shape = w.shape;
  if (w.m_is_batch) shape.m = batch;
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.seed = dlb::Opts().seed;
  cfg.threads = dlb::Opts().threads;
  cfg.algo = FamilyOptions().algo;
  cfg.fast_accum = FamilyOptions().fp8_accum == Fp8Accum::kFast;
  NameKeys keys;
  if (batch > 0) keys.push_back({key::kBatch, std::to_string(batch)});
  keys.push_back({key::kDType, std::string(Name(dt))});
  Register<Op>("gemm", w.basics, std::move(keys), shape, cfg,
               CaseInfo::Of(w.basics, dt, batch, Verifier(shape, cfg)));
}

}  // namespace dlb::gemm
