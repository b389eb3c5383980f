// The peaks a rate is read against: the run's spec and measured peaks of a dtype, the peak a
// case's share was computed against, named by its source, and whether a multi-GPU case's share
// sets the GPUs' aggregate against one GPU's peak. The findings, the overview, the transformer
// table, the roofline and Problems read peaks only through these.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <string_view>

#include "tools/report/read/gbench_json.h"

namespace dlb::report {

// "1070.5 TFLOP/s (132 SMs x 1980 MHz)": the spec peak of `dtype` ("amp_" taken off) as the
// context's gpu_peak_spec states it; "" when it does not.
std::string GpuPeakOf(const std::map<std::string, std::string>& context, std::string dtype);

// "760.0 TFLOP/s ..." or "1375.2 TOPS": the rate a peak's text starts with; NaN where none.
double LeadingRate(const std::string& text);

// The peak a case's pct_peak is of, named by where it comes from: the case's label where it says
// ("peak 19.09 TFLOP/s measured (...)"), else the run's measured or spec peak of its dtype where
// it is the same figure (within 2%), else only the figure. Empty without a pct_peak.
std::string PeakBehind(const Bench& b, double rate, const std::string& unit,
                       const std::map<std::string, std::string>& context);

// A rate's share of the peak it is measured against, and that peak named by its source, as the
// findings name it: the case's pct_peak and its peak (the case's label where it says, else the
// run's measured or spec peak of its dtype where it is the same figure, else the figure alone: "the
// case's own"); else its pct_roofline and the roof ("roof 310 TFLOP/s at its intensity"); else
// the run's measured peak of the case's dtype and device (gpu_peak_measured / cpu_peak_measured),
// else the GPU's spec peak at the maximum clock (gpu_peak_spec). `rate`: the case's FLOP/s (OP/s).
// A multi-GPU aggregate set against one GPU's peak (AggregateOverOneGpu) reads per GPU, and its
// peak says so ("... per GPU, the rate is 4 GPUs' aggregate").
struct PeakShare {
  double pct = std::nan("");  // 100: at the peak; NaN: no peak known
  std::string peak;           // the peak named; empty: no peak known
};
PeakShare PeakShareOf(const Bench& b, double rate, const std::string& unit,
                      const std::map<std::string, std::string>& context);
// A multi-GPU case (key gpus above 1) whose `counter` (pct_peak, mfu or pct_roofline) sets the
// GPUs' aggregate FLOP/s against one GPU's peak or roof (files written before the harness divided
// by the GPUs): the number of GPUs, by which the share is to be divided to read per GPU; else 1.
int AggregateOverOneGpu(const Bench& b, std::string_view counter,
                        const std::map<std::string, std::string>& context);

// Words for a table where a rate has no peak to be a share of.
inline constexpr const char* kNoPeakKnown = "no peak known";
// What a peak the case's own figures give (rate / pct_peak, of no known source) says after it:
// "bf16 989 TFLOP/s (the case's own)".
inline constexpr std::string_view kCaseOwnPeak = " (the case's own)";

}  // namespace dlb::report
