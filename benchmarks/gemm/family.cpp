#include "benchmarks/gemm/family.h"

#include "fixtures/harness.h"
#include "kernels/reference/gemm.h"

namespace dlb::gemm {

namespace {
FamilyOptionValues g_options;
}  // namespace

const FamilyOptionValues& FamilyOptions() { return g_options; }

std::vector<FlagSpec> Flags() {
  return {
      EnumFlag("gemm_algo",
               "heuristic|search: the library's first choice, or the fastest of its candidates "
               "(cuBLASLt heuristic results, oneDNN implementations) timed once before the case",
               {{"heuristic", Algo::kHeuristic}, {"search", Algo::kSearch}}, &g_options.algo),
      EnumFlag("gemm_fp8_accum",
               "full|fast: cuBLASLt's FP8 accumulation, full precision or fast "
               "(CUBLASLT_MATMUL_DESC_FAST_ACCUM; torch._scaled_mm's use_fast_accum)",
               {{"full", Fp8Accum::kFull}, {"fast", Fp8Accum::kFast}}, &g_options.fp8_accum)};
}

std::vector<Workload> LoadWorkloads(const std::string& path) {
  std::vector<Workload> out;
  std::vector<std::string> seen;
  for (const auto& row : LoadCsv(path, {"name", "m", "n", "k", "ta", "tb", "count", "tier"})) {
    Workload w;
    w.basics = ReadBasics(row, &seen);
    w.m_is_batch = row.Str("m") == "bs";
    w.shape.m = w.m_is_batch ? 0 : row.Int("m");
    w.shape.n = row.Int("n");
    w.shape.k = row.Int("k");
    w.shape.ta = row.Flag01("ta");
    w.shape.tb = row.Flag01("tb");
    if ((!w.m_is_batch && w.shape.m <= 0) || w.shape.n <= 0 || w.shape.k <= 0)
      row.Fail("m, n, k and count must be positive");
    out.push_back(w);
  }
  return out;
}

std::vector<Workload> TierWorkloads() {
  return TierRows<Workload>("gemm_", dlb::Opts().tier, LoadWorkloads);
}

bool IsSquare(const Workload& w) { return w.basics.name.rfind("square.", 0) == 0; }

// The 8-bit types: the reference is the float64 product of the dequantised inputs (dtype.h's
// per-tensor scales are powers of two, so it is exact). fp8 writes bf16, whose rounding dominates
// the error: bf16's tolerance. int8 writes int32, exactly: the check is exact, against the
// reference rounded to float, as the int32 result reaches the check (float(acc) x scale, exact
// for |acc| < 2^24 and rounded the same way above).
VerifyFn Verifier(const GemmShape& shape, const RunConfig& cfg) {
  return [shape, cfg](const OutputReader& out) {
    const int64_t outputs = shape.m * shape.n;
    const double k = double(shape.k);
    const GemmTypes types = GemmTypesOf(cfg.dtype);
    const bool exact = cfg.dtype == DType::kInt8;
    return WithSeededInputs(
        outputs, k, TensorSeed(cfg.seed, 0), size_t(shape.m * shape.k), TensorSeed(cfg.seed, 1),
        size_t(shape.k * shape.n), types.a, types.b, [&](const auto& a, const auto& b) {
          return CheckSampled(
              out, outputs, k, cfg.seed, ReductionTolerance(cfg.dtype, k), [&](int64_t idx) {
                const double c = ReferenceGemmAt(shape, a, b, idx / shape.n, idx % shape.n);
                return exact ? double(float(c)) : c;
              });
        });
  };
}

}  // namespace dlb::gemm
