#include "benchmarks/attn/family.h"

#include <algorithm>
#include <string>

#include "benchmarks/attn/matrix.h"
#include "fixtures/harness.h"
#include "kernels/common/parallel.h"
#include "kernels/common/rng.h"
#include "kernels/reference/attn.h"

namespace dlb::attn {

namespace {

// Float64 operations the backward's dK/dV rows may cost the reference (row statistics of the
// query rows they need): 1-2 s on the GPU host's cores, a small share of a case's time.
constexpr double kDkvBudget = 2e10;
// Key rows checked per kv group (both ends of the affordable range and random ones between).
constexpr int64_t kDkvRowsPerGroup = 16;

}  // namespace

std::vector<Model> LoadModels(const std::string& path) {
  std::vector<Model> out;
  std::vector<std::string> seen;
  for (const auto& row : LoadCsv(
           path, {"name", "count", "heads", "kv_heads", "head_dim", "causal", "tier", "network"})) {
    Model m;
    m.basics = ReadBasics(row, &seen);
    AttnShape& s = m.shape;
    s.heads = row.Int("heads");
    s.kv_heads = row.Int("kv_heads");
    s.head_dim = row.Int("head_dim");
    s.causal = row.Flag01("causal");
    s.batch = 1;
    s.seq = 1;
    if (!s.Valid())
      row.Fail("heads, kv_heads and head_dim must be positive, heads a multiple of kv_heads");
    out.push_back(m);
  }
  return out;
}

namespace {
FamilyOptionValues g_options;
}  // namespace

const FamilyOptionValues& FamilyOptions() { return g_options; }

std::vector<FlagSpec> Flags() {
  return {EnumFlag(
      "autotune",
      "cache|search|heuristic: how each GPU case picks cuDNN's engine configuration. heuristic: "
      "the library's first (what PyTorch's cuDNN backend takes); search: the fastest of its "
      "candidates, timed before the case on every run; cache (default): the winner recorded for "
      "this cuDNN, device, shape, dtype and pass in <cache dir>/autotune.json, else a search whose "
      "winner is recorded",
      {{"cache", Algo::kCache}, {"search", Algo::kSearch}, {"heuristic", Algo::kHeuristic}},
      &g_options.algo)};
}

std::vector<Model> TierModels() { return TierRows<Model>("attn_", dlb::Opts().tier, LoadModels); }

std::vector<Point> Points(bool gpu) {
  const std::vector<int64_t>& seqs = (gpu ? matrix::kGpuSeqs : matrix::kCpuSeqs).Now();
  const int64_t tokens = (gpu ? matrix::kGpuTokens : matrix::kCpuTokens).Now();
  std::vector<Point> out;
  for (int64_t seq : seqs) {
    if (!dlb::Opts().batch_sizes.empty()) {
      for (int b : dlb::Opts().batch_sizes) out.push_back({seq, b});
    } else {
      out.push_back({seq, int(std::max<int64_t>(1, tokens / seq))});
    }
  }
  return out;
}

std::vector<DType> DTypesOn(bool gpu) {
  return DTypes(gpu ? matrix::kGpuDTypes : matrix::kCpuDTypes);
}

double AttnTolerance(DType dt, AttnPass pass, int64_t seq) {
  const bool fwd = pass == AttnPass::kFwd;
  switch (dt) {
    case DType::kF32:
      return (fwd ? 1.0 : 10.0) * ReductionTolerance(dt, double(seq));
    case DType::kTF32:
      return fwd ? 1e-3 : 1e-2;
    case DType::kF16:
    case DType::kBF16:
      return fwd ? 1e-2 : 3e-2;
  }
  return 0;
}

std::vector<int64_t> VerifyPositions(const AttnShape& s, uint64_t seed) {
  const bool fwd = s.pass == AttnPass::kFwd;
  const double row_cost = (fwd ? 2.0 : 3.0) * double(s.seq) * double(s.head_dim);
  std::vector<int64_t> pos = SamplePositions(s.QElems(), row_cost, seed);
  if (fwd) return pos;
  const int64_t group = s.heads / s.kv_heads, groups = s.batch * s.kv_heads;
  // One query row's statistics for every head of a kv group.
  const double stats_row = double(group) * 2.0 * double(s.seq) * double(s.head_dim);
  std::vector<int64_t> checked = {0};
  if (groups > 1 && (s.causal || stats_row * double(s.seq) <= kDkvBudget / 2))
    checked.push_back(groups - 1);
  const int64_t affordable =
      std::clamp<int64_t>(int64_t(kDkvBudget / double(checked.size()) / stats_row), 1, s.seq);
  const int64_t first = s.causal ? s.seq - affordable : 0;
  Rng rng(seed ^ 0x6a09e667f3bcc909ULL);
  for (int64_t g : checked) {
    std::vector<int64_t> rows = {first, s.seq - 1};
    for (int64_t r = 2; r < std::min(kDkvRowsPerGroup, s.seq - first); ++r)
      rows.push_back(rng.UniformInt(first, s.seq - 1));
    for (int64_t j : rows)
      for (int64_t which = 0; which < 2; ++which)
        for (int64_t t = 0; t < s.head_dim; ++t)
          pos.push_back(s.QElems() + which * s.KvElems() + (g * s.seq + j) * s.head_dim + t);
  }
  std::sort(pos.begin(), pos.end());
  pos.erase(std::unique(pos.begin(), pos.end()), pos.end());
  return pos;
}

VerifyFn Verifier(const AttnShape& shape, const RunConfig& cfg) {
  return [shape, cfg](const OutputReader& out) {
    ReferenceAttn ref(shape, cfg.seed, cfg.dtype);
    const int64_t total = ref.OutputElems();
    const std::vector<int64_t> pos = VerifyPositions(shape, cfg.seed);
    Verdict v;
    const std::optional<OutputReader::Sample> got = ReadSampled(out, total, pos, &v);
    if (!got) return v;
    // O/dQ rows, then dK/dV rows (a handful of kv groups): each part spread over every core.
    std::vector<double> want(pos.size());
    const size_t split =
        size_t(std::lower_bound(pos.begin(), pos.end(), shape.QElems()) - pos.begin());
    const auto fill = [&](size_t lo, size_t hi) {
      ParallelFor(hi - lo, 1, [&](size_t begin, size_t end) {
        for (size_t i = lo + begin; i < lo + end; ++i) want[i] = ref.At(pos[i]);
      });
    };
    fill(0, split);
    fill(split, pos.size());
    return Compare(got->values, want, AttnTolerance(cfg.dtype, shape.pass, shape.seq),
                   size_t(total));
  };
}

}  // namespace dlb::attn
