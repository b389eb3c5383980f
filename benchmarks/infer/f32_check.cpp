// The large models' check on the GPU: a case's logits against LibTorch's eager f32 step of the
// same seeded model (kernels/torch/infer.h), where this build's LibTorch has CUDA.
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/infer/family.h"
#include "fixtures/harness.h"

#ifdef DLBENCH_HAVE_TORCH_CUDA
#include "kernels/torch/infer.h"
#endif

namespace dlb::infer {

#ifdef DLBENCH_HAVE_TORCH_CUDA
VerifyFn F32Verifier(const InferShape& shape, const RunConfig& cfg, const std::string& too_large) {
  return [shape, cfg, too_large](const OutputReader& out) {
    // The case's logits first: the f32 step then borrows the device memory the case leaves free,
    // and gives it all back before the case is timed.
    const int64_t total = shape.batch * shape.model.vocab;
    std::vector<int64_t> pos(static_cast<size_t>(total));
    std::iota(pos.begin(), pos.end(), int64_t{0});
    Verdict v;
    const std::optional<OutputReader::Sample> got = ReadSampled(out, total, pos, &v);
    if (!got) return v;
    std::string why;
    std::optional<std::vector<float>> want;
    try {
      want = libtorch::EagerF32LogitsGpu(shape, cfg, &why);
    } catch (const Error& e) {
      // The yardstick failing (out of memory beside a large case) says nothing of the case.
      why = std::string("the eager f32 step failed: ") + e.what();
    }
    if (!want) return Verdict::NotVerified(too_large + "; " + why);
    v = Compare(got->values, std::vector<double>(want->begin(), want->end()),
                InferTolerance(cfg.dtype), size_t(total));
    v.detail += " against LibTorch's eager f32 step of the same weights on the GPU";
    return v;
  };
}
#else
VerifyFn F32Verifier(const InferShape&, const RunConfig&, const std::string& too_large) {
  const std::string reason =
      too_large + "; the eager f32 step that checks them on the GPU needs LibTorch with CUDA";
  return [reason](const OutputReader&) { return Verdict::NotVerified(reason); };
}
#endif

}  // namespace dlb::infer
