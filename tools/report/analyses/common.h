// What several analyses build their rows and notes from.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures/schema/families.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

// "a, b, c": every element, empty ones too.
std::string Join(const std::vector<std::string>& v, const std::string& sep);
// The same without the empty elements.
std::string JoinNonEmpty(const std::vector<std::string>& v, const std::string& sep);
// A name's keys but the ones named, as "key:value" in the name's order joined by '/':
// "dt:f32/fmt:nchw" (KeysExcept(n, {}) is every key).
std::string KeysExcept(const BenchName& n, std::initializer_list<std::string_view> skip);
// The keys that make a case's configuration, all but bs and dt: "fmt:nhwc/pass:fwd".
std::string ConfigKeys(const BenchName& n);
// The values of a name's keys, "fmt:nchw/pass:fwd" -> "nchw fwd" (a part without ':' stays whole):
// legends and labels have little room.
std::string ConfigValues(const std::string& keys);
// The column `col` of benchmark names split into their parts as columns, as nvbench shows its
// axes: family, device, backend, workload, then the keys as SplitKeyColumn lays them out. Returns
// the keys every row shares ("dt:bf16"), for a note; leaves the table whole where a name does not
// follow the scheme.
std::vector<std::string> SplitNameColumn(Table* t, size_t col);
// A name's keys in its order: {{"dt", "bf16"}, {"fmt", "nhwc"}}.
using NameKeys = std::vector<std::pair<std::string, std::string>>;
// The column `col`, whose row r stands for the keys `keys[r]`, replaced by one column per key whose
// value varies over the rows (a key missing from a row reads "-"); past six such keys the rest
// share one column of "key:value" words ("other keys"). A key the table has as a column already
// ("bs") is left out. Returns the keys every row shares ("dt:bf16"), for a note or a title.
std::vector<std::string> SplitKeyColumn(Table* t, size_t col, const std::vector<NameKeys>& keys);
// Columns that say nothing ("-" in every row: a CPU-only run's GPU time, a dtype no case names)
// are left out.
void DropEmptyColumns(Table* t);
// A column whose rows all give one value (or "-") is said once, in the title ("; <label>:
// <value>"), and leaves the table; a column whose rows differ stays, each row naming its own.
void SayOnceInTitle(Table* t, const std::string& key, const std::string& label);
// "bs 8": a batch size in a label of the findings and the first screen.
std::string BatchSizeLabel(double bs);
// A time in ns as a cell; "-" when not finite.
Cell TimeCell(double ns);
// "1.23x", marked where a result behind it was not verified or was mistrusted; "-" when unknown.
Cell SpeedupCell(double x, bool doubtful);
// Whether the y values of a chart's series span more than 20x, so that a log axis shows them.
bool WideY(const Chart& chart);
// What a family's items per second count: images for CNNs, convolutions and image loading,
// samples for an MLP and other workloads, sequences for transformers (GPT-2, BERT, Llama: their
// batch counts sequences; their tokens/s is a counter of its own).
std::string ItemsPerSecond(const std::string& family, const std::string& model);
// The unit of a FLOP rate at a dtype: "OP/s" for integer dtypes (int8), else "FLOP/s".
std::string FlopUnit(const std::string& dtype);
// The peak a device's rate at `dtype` is measured against, named: "measured bf16 769.3 TFLOP/s"
// from the context's gpu_peak_measured / cpu_peak_measured; empty where the context has none.
std::string MeasuredPeakOf(const std::map<std::string, std::string>& context,
                           const std::string& device, std::string dtype);
// The part of a gpu_peak_measured / cpu_peak_measured value that is `dtype`'s ("amp_bf16" reads
// bf16's), "fp8 1372.0 TFLOP/s (cuBLASLt ...; SM clock 1305 MHz (median while timed))"; empty where
// the value names none or says it was not measured ("bf16 not measured (no bf16 case in this
// run)").
std::string MeasuredPeakPart(const std::string& measured, std::string dtype);
// The SM clock the GPU's measured peak of `dtype` was timed at, in MHz, from its part's "SM clock
// 1305 MHz (median while timed)" (kernels/cublas/peak.cpp writes it; fp8_e5m2 reads fp8's); 0
// where it names none.
double MeasuredPeakClockMhz(const std::string& measured, const std::string& dtype);
// A rate counter (items_per_s, flop_per_s, bus_bw) at the case's median time: the work of one
// run (the counter times the time, per repetition, their median) over the median time, so that
// a headline rate and the time beside it come from one statistic, not a median of rates whose
// own median time gives another figure; the counter's median where there are no repetitions.
double RateAtMedianTime(const Bench& b, std::string_view counter);
// A case whose repetitions spread more than this (coefficient of variation) is marked where a
// table crowns it best: its figure rests on noise.
inline constexpr double kNoisyCv = 0.10;

inline constexpr std::string_view kConvFamily = families::kConv;
// The engine of a convolution that does fewer FLOPs than the direct count its rates are computed
// from, as its label names it ("[winograd]", "[fft]", "..._ALGO_FFT_TILING", oneDNN's "wino"):
// "Winograd" or "FFT"; empty for any other case.
std::string FewerFlopsEngine(const Bench& b);
// Splits a command line written with ShellQuote (repro.h) (and the usual double quotes and
// backslashes) into its words; what it cannot read (an unclosed quote) ends the last word.
std::vector<std::string> ShellSplit(std::string_view line);
// The note that names the input files.
std::string InputsNote(const std::vector<std::string>& inputs);

}  // namespace dlb::report
