// Serving: what the inference family's decode cases say to someone choosing a batch size. Per
// model and device, time per output token against tokens/s as the decode batch grows (the
// latency-throughput frontier), the batch where decode turns compute-bound, the largest batch
// within a time-per-token budget, the CPU against the GPU at batch 1, the share of the memory roof
// and the energy per token, with the PyTorch peer beside each row where the run has it.
#pragma once

#include <array>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures/schema/families.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

inline constexpr std::string_view kInferFamily = families::kInfer;

// Budgets on the time per output token, seconds: a reader's pace in a chat (about 50 tokens/s),
// a comfortable one, and the slowest a person still reads as streaming.
inline constexpr std::array<double, 3> kTpotBudgetsS = {0.020, 0.050, 0.100};

// Tokens/s growing by less than this share of the batch's growth, from one batch to the next, is
// decode no longer near-linear in the batch: the step's time grows with the batch, not the
// weights' reading alone (the knee's rule where the roofline cannot tell).
inline constexpr double kNearLinearShare = 0.5;

// One decode case: one token for each of B sequences whose cache holds L positions.
struct DecodePoint {
  double bs = 0;
  std::string name;  // the case's, with its setup where it has several
  double tpot_s = std::numeric_limits<double>::quiet_NaN();  // the step's median time
  double tokens_per_s = std::numeric_limits<double>::quiet_NaN();
  // The roofline's arithmetic intensity, the bytes moved as a % of the memory roof, the energy a
  // token took (energy_per_item_j: a decode step's items are its tokens); NaN where not counted.
  double flop_per_byte = std::numeric_limits<double>::quiet_NaN();
  double pct_mem_bw = std::numeric_limits<double>::quiet_NaN();
  double energy_per_token_j = std::numeric_limits<double>::quiet_NaN();
  bool doubtful = false;
  // The PyTorch peer's case of the same model, device, dtype, context and batch; NaN: none.
  double peer_tpot_s = std::numeric_limits<double>::quiet_NaN();
  double peer_tokens_per_s = std::numeric_limits<double>::quiet_NaN();
};

// How the batch where decode turns compute-bound was found: the first whose FLOP per byte passes
// the device's ridge point; else, without roofline counters, the first where tokens/s stops
// growing near-linearly; neither with one batch and no roofline.
enum class KneeRule { kRidge, kScaling, kNone };

// One model's decode on one device, backend, dtype and context, batch by batch.
struct DecodeCurve {
  std::string model, device, backend, dt, ctx;
  std::string setup;                // what sets this setup of the cases apart; "" for one setup
  std::vector<DecodePoint> points;  // by batch size
  // The device's ridge point, FLOP per byte: the compute roof over the memory bandwidth the cases
  // were placed against; NaN where the run wrote no roofline.
  double ridge = std::numeric_limits<double>::quiet_NaN();
  KneeRule rule = KneeRule::kNone;
  double knee_bs = std::numeric_limits<double>::quiet_NaN();  // NaN: not at the batches measured
  // Per kTpotBudgetsS: the largest batch whose time per token is within it; NaN: none.
  std::array<double, 3> budget_bs = {std::numeric_limits<double>::quiet_NaN(),
                                     std::numeric_limits<double>::quiet_NaN(),
                                     std::numeric_limits<double>::quiet_NaN()};
  // Why a point has no energy per token ("not available (no /sys/class/powercap)"); empty when
  // every point has one.
  std::string energy_why;
};

// The knee of `points` (by batch size) against `ridge` (NaN: unknown), and the rule that found it.
double ComputeBoundBatch(const std::vector<DecodePoint>& points, double ridge, KneeRule* rule);

// Decode at batch 1 on both devices: the fastest backend of each.
struct BatchOneRow {
  std::string model, dt, ctx;
  double cpu_tpot_s = 0, gpu_tpot_s = 0;
  std::string cpu_backend, gpu_backend;
  bool doubtful = false;
};

struct Serving {
  bool any = false;                    // the run has inference cases, measured or not
  std::vector<DecodeCurve> curves;     // model by model as they came, the CPU's before the GPU's
  std::vector<BatchOneRow> batch_one;  // models that decode at batch 1 on both devices
  bool peer = false;                   // the run has PyTorch peer decode cases
};
Serving ComputeServing(const MergedRuns& runs);

// The report's serving section; none where the run has no inference case.
std::vector<Section> ServingSections(const Serving& serving);

}  // namespace dlb::report
