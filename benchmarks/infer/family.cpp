#include "benchmarks/infer/family.h"

#include <cstdio>
#include <string>

#include "benchmarks/infer/matrix.h"
#include "fixtures/harness.h"
#include "kernels/reference/infer.h"

namespace dlb::infer {

std::vector<Model> LoadModels(const std::string& path) {
  std::vector<Model> out;
  std::vector<std::string> seen;
  for (const auto& row :
       LoadCsv(path, {"name", "count", "layers", "dim", "heads", "kv_heads", "head_dim", "ffn",
                      "vocab", "rope_theta", "norm_eps", "tier", "network"})) {
    Model m;
    m.basics = ReadBasics(row, &seen);
    LlamaConfig& c = m.config;
    c.name = m.basics.name;
    c.layers = row.Int("layers");
    c.dim = row.Int("dim");
    c.heads = row.Int("heads");
    c.kv_heads = row.Int("kv_heads");
    c.head_dim = row.Int("head_dim");
    c.ffn = row.Int("ffn");
    c.vocab = row.Int("vocab");
    c.rope_theta = row.Double("rope_theta");
    c.norm_eps = row.Double("norm_eps");
    if (!c.Valid())
      row.Fail(
          "layers, dim, heads, kv_heads, head_dim, ffn, vocab, rope_theta and norm_eps must be "
          "positive, heads a multiple of kv_heads, head_dim even");
    out.push_back(m);
  }
  return out;
}

std::vector<Model> TierModels() { return TierRows<Model>("infer_", dlb::Opts().tier, LoadModels); }

std::vector<Point> Points(bool gpu, const LlamaConfig& model, DType dt) {
  const bool fp8 = dt == DType::kFP8E4M3;
  const auto batches = [&](const PerTier<std::vector<int>>& per_tier) {
    return dlb::Opts().batch_sizes.empty() ? per_tier.Now() : dlb::Opts().batch_sizes;
  };
  std::vector<Point> all;
  for (int64_t ctx : (gpu ? matrix::kGpuDecodeCtx : matrix::kCpuDecodeCtx).Now())
    for (int b : batches(gpu ? (fp8 ? matrix::kGpuFp8DecodeBatches : matrix::kGpuDecodeBatches)
                             : matrix::kCpuDecodeBatches))
      all.push_back({InferPhase::kDecode, b, ctx});
  const auto& cpu_prefill =
      dt == DType::kInt8 ? matrix::kCpuInt8PrefillBatches : matrix::kCpuPrefillBatches;
  for (int64_t ctx : (gpu ? matrix::kGpuPrefillCtx : matrix::kCpuPrefillCtx).Now())
    for (int b : batches(gpu ? matrix::kGpuPrefillBatches : cpu_prefill))
      all.push_back({InferPhase::kPrefill, b, ctx});
  if (gpu) return all;
  std::vector<Point> out;
  if (model.StepParams() > matrix::kCpuMaxParams.Now()) return out;
  for (const Point& p : all)
    if (InferShape{model, p.phase, p.batch, p.ctx}.Flops() <= matrix::kCpuMaxStepFlops.Now())
      out.push_back(p);
  return out;
}

std::vector<DType> DTypesOn(bool gpu, std::string_view backend) {
  if (backend == "torch") return DTypes(gpu ? matrix::kGpuTorchDTypes : matrix::kCpuTorchDTypes);
  return DTypes(gpu ? matrix::kGpuDTypes : matrix::kCpuDTypes);
}

double InferTolerance(DType dt) {
  switch (dt) {
    case DType::kF32:
      return 1e-4;
    // fp8: the weights are the reference's own e4m3 values, but each GEMM's input is rounded to
    // e4m3 (3 mantissa bits: an RMS error of about 2.4% of a value) under one per-tensor scale,
    // which small activations lose more to; some 3-5% on the logits, held within twice that.
    case DType::kFP8E4M3:
    case DType::kFP8E5M2:
      return 1e-1;
    // int8 (the CPU's): the weights are the reference's own values, exact in bf16 once
    // decompressed, so only the bf16 activations round: bf16's tolerance.
    case DType::kInt8:
    default:
      return 3e-2;
  }
}

VerifyFn Verifier(const InferShape& shape, const RunConfig& cfg, bool gpu) {
  const double params = shape.model.StepParams() + double(shape.model.vocab * shape.model.dim);
  if (params > kMaxReferenceParams || shape.Flops() > kMaxReferenceFlops) {
    char why[200];
    std::snprintf(why, sizeof why,
                  "not verified: the float64 step of %s would hold %.2g weights and cost %.2g "
                  "FLOPs (above %.0e and %.0e; the smaller models are verified)",
                  shape.model.name.c_str(), params, shape.Flops(), kMaxReferenceParams,
                  kMaxReferenceFlops);
    const std::string reason = why;
    if (gpu) return F32Verifier(shape, cfg, reason);
    return [reason](const OutputReader&) { return Verdict::NotVerified(reason); };
  }
  return [shape, cfg](const OutputReader& out) {
    // fp8 is the matrices' dtype: the embedding, norms and KV cache stay bf16.
    const DType rest = IsEightBit(cfg.dtype) ? DType::kBF16 : cfg.dtype;
    RefCache cache = SeededRefCache(shape, cfg.seed, rest);
    const Vec want = RefInferStep(shape, SeededRefLlama(shape.model, cfg.seed, cfg.dtype, rest),
                                  SeededTokens(cfg.seed, shape), &cache);
    std::vector<int64_t> pos(want.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int64_t(i);
    Verdict v;
    const std::optional<OutputReader::Sample> got = ReadSampled(out, int64_t(want.size()), pos, &v);
    if (!got) return v;
    return Compare(got->values, want, InferTolerance(cfg.dtype), want.size());
  };
}

void RecordInferCounters(benchmark::State& st, const InferShape& shape, const Cost& cost,
                         double kv_bytes, double step_s, bool gpu, DType dt, int threads) {
  const auto set = [&st](std::string_view name, double v) { st.counters[std::string(name)] = v; };
  set(schema::kTokensPerS, cost.items / step_s);
  set(schema::kStepBytes, cost.bytes);
  set(schema::kKvBytes, kv_bytes);
  if (shape.phase == InferPhase::kPrefill) {
    set(schema::kTtftS, step_s);
    auto pct = st.counters.find(std::string(schema::kPctPeak));
    if (pct != st.counters.end()) set(schema::kMfu, double(pct->second));
    return;
  }
  set(schema::kTpotS, step_s);
  if (const double bw = RooflinePeaksFor(gpu, dt, threads).bandwidth; bw > 0)
    set(schema::kPctMemBw, 100.0 * cost.bytes / step_s / bw);
}

}  // namespace dlb::infer
