#include "benchmarks/gemm/family.h"

#include "fixtures/checks.h"
#include "kernels/reference/gemm.h"

namespace dlb::gemm {

namespace {
Options g_options;
}  // namespace

const Options& Opts() { return g_options; }

std::vector<FlagSpec> Flags() {
  return {
      ChoiceFlag("gemm_algo",
                 "heuristic|search: the library's first choice, or the fastest of its candidates "
                 "(cuBLASLt heuristic results, oneDNN implementations) timed once before the case",
                 {"heuristic", "search"}, &g_options.algo)};
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

VerifyFn Verifier(const GemmShape& shape, const RunConfig& cfg) {
  return [shape, cfg](const OutputReader& out) {
    const int64_t outputs = shape.m * shape.n;
    const double k = double(shape.k);
    return WithSeededInputs(
        outputs, k, TensorSeed(cfg.seed, 0), size_t(shape.m * shape.k), TensorSeed(cfg.seed, 1),
        size_t(shape.k * shape.n), cfg.dtype, [&](const auto& a, const auto& b) {
          return CheckSampled(out, outputs, k, cfg.seed, ReductionTolerance(cfg.dtype, k),
                              [&](int64_t idx) {
                                return ReferenceGemmAt(shape, a, b, idx / shape.n, idx % shape.n);
                              });
        });
  };
}

}  // namespace dlb::gemm
