// The transformer era's answers: tokens/s and MFU of the training steps that report them, the
// attention family's FLOP/s over sequence length, and the GEMM family's dtypes side by side.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fixtures/schema/families.h"
#include "tools/report/analyses/peaks.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

inline constexpr std::string_view kAttnFamily = families::kAttn;
inline constexpr std::string_view kGemmFamily = families::kGemm;

// A training step that counts tokens (a transformer): per model and device the case with the most
// tokens/s.
struct TokenStep {
  std::string model, device, name, config;  // config: backend and the keys but pass
  std::string dt;                           // the name's dtype key ("amp_bf16")
  double tokens_per_s = 0;
  double mfu = 0;  // %; NaN where the case has none
  // The peak the case's MFU was computed against, named (its own pct_peak's: the label's peak,
  // a --dlb_peak_gpu_tflops included); empty where it cannot be told.
  std::string mfu_peak;
  double epoch_s = 0;         // NaN where the case has none
  double peak_mem_bytes = 0;  // NaN where the case has none
  bool doubtful = false;
};
std::vector<TokenStep> TokenSteps(const MergedRuns& runs);
// "Transformer training: ..." with a row per TokenStep; no rows when there is none. `context`: the
// run's, whose gpu_peak_spec names the peak each GPU row's MFU is measured against.
Table TokenTable(const std::vector<TokenStep>& steps,
                 const std::map<std::string, std::string>& context = {});

// FLOP/s of attention over sequence length: a chart per device, backend, dtype and pass, a line
// per model (and causal where both occur), from the flop_per_s counter.
std::vector<Chart> AttnSeqCharts(const MergedRuns& runs);

// GEMM FLOP/s (OP/s for int8) per shape, batch size and device, one column per dtype, the fastest
// backend in each cell; no rows unless some shape has two dtypes or more.
Table GemmDtypeTable(const MergedRuns& runs);

}  // namespace dlb::report
