#include "benchmarks/conv/family.h"

#include "fixtures/harness.h"
#include "kernels/reference/conv.h"

namespace dlb::conv {

namespace {
FamilyOptionValues g_options;
}  // namespace

const FamilyOptionValues& FamilyOptions() { return g_options; }

std::vector<FlagSpec> Flags() {
  const std::string modes = "cache|search|heuristic";
  return {EnumFlag(
              "autotune",
              modes + ": how each case picks its engine (cuDNN engine configurations, oneDNN "
                      "layouts). heuristic: the library's first; search: the fastest of its "
                      "candidates, timed before the case on every run; cache (default): the "
                      "winner recorded for this library, device, shape, dtype, layout and pass "
                      "in <cache dir>/autotune.json, else a search whose winner is recorded",
              {{"cache", Algo::kCache}, {"search", Algo::kSearch}, {"heuristic", Algo::kHeuristic}},
              &g_options.algo),
          EnumFlag("conv_algo",
                   "heuristic|search: the older spelling of --dlb_autotune, an alias "
                   "(heuristic: --dlb_autotune=heuristic, search: --dlb_autotune=search)",
                   {{"heuristic", Algo::kHeuristic}, {"search", Algo::kSearch}}, &g_options.algo)};
}

std::vector<Workload> LoadWorkloads(const std::string& path) {
  std::vector<Workload> out;
  std::vector<std::string> seen;
  for (const auto& row : LoadCsv(path, {"name", "count", "c", "h", "w", "k", "r", "s", "stride",
                                        "pad", "dilation", "groups", "tier"})) {
    Workload w;
    w.basics = ReadBasics(row, &seen);
    ConvShape& s = w.shape;
    s.n = 1;
    s.c = row.Int("c");
    s.h = row.Int("h");
    s.w = row.Int("w");
    s.k = row.Int("k");
    s.r = row.Int("r");
    s.s = row.Int("s");
    s.stride_h = s.stride_w = row.Int("stride");
    s.pad_h = s.pad_w = row.Int("pad");
    s.dil_h = s.dil_w = row.Int("dilation");
    s.groups = row.Int("groups");
    if (!s.Valid())
      row.Fail(
          "impossible convolution (sizes must be positive, channels divisible by groups, "
          "output non-empty)");
    out.push_back(w);
  }
  return out;
}

std::vector<Workload> TierWorkloads() {
  return TierRows<Workload>("conv_", dlb::Opts().tier, LoadWorkloads);
}

Layout NaturalLayout(DType dt) {
  return dt == DType::kF16 || dt == DType::kBF16 ? Layout::kNHWC : Layout::kNCHW;
}

VerifyFn Verifier(const ConvShape& s, const RunConfig& cfg, ConvPass pass) {
  return [s, cfg, pass](const OutputReader& out) {
    const int64_t P = s.P(), Q = s.Q(), cg = s.c / s.groups;
    const size_t nx = size_t(s.n * s.c * s.h * s.w), nw = size_t(s.k * cg * s.r * s.s),
                 ny = size_t(s.n * s.k * P * Q);
    const DType dt = cfg.dtype;
    const uint64_t sx = TensorSeed(cfg.seed, 0), sw = TensorSeed(cfg.seed, 1),
                   sy = TensorSeed(cfg.seed, 2);
    // The pass's output, its two inputs and the reference sum at one flat output index.
    auto check = [&](size_t n_out, double macs, uint64_t sa, size_t na, uint64_t sb, size_t nb,
                     auto ref) {
      return WithSeededInputs(
          int64_t(n_out), macs, sa, na, sb, nb, dt, [&](const auto& a, const auto& b) {
            return CheckSampled(out, int64_t(n_out), macs, cfg.seed, ReductionTolerance(dt, macs),
                                [&](int64_t i) { return ref(a, b, i); });
          });
    };
    switch (pass) {
      case ConvPass::kFwd:
        return check(ny, double(cg * s.r * s.s), sx, nx, sw, nw,
                     [&](const auto& x, const auto& w, int64_t i) {
                       return ReferenceConvFwdAt(s, x, w, i / (s.k * P * Q), i / (P * Q) % s.k,
                                                 i / Q % P, i % Q);
                     });
      case ConvPass::kBwdData:
        return check(nx, double(s.k / s.groups * s.r * s.s), sy, ny, sw, nw,
                     [&](const auto& dy, const auto& w, int64_t i) {
                       return ReferenceConvBwdDataAt(s, dy, w, i / (s.c * s.h * s.w),
                                                     i / (s.h * s.w) % s.c, i / s.w % s.h, i % s.w);
                     });
      case ConvPass::kBwdFilter:
        return check(
            nw, double(s.n * P * Q), sx, nx, sy, ny, [&](const auto& x, const auto& dy, int64_t i) {
              return ReferenceConvBwdFilterAt(s, x, dy, i / (cg * s.r * s.s), i / (s.r * s.s) % cg,
                                              i / s.s % s.r, i % s.s);
            });
    }
    return Verdict{};
  };
}

}  // namespace dlb::conv
