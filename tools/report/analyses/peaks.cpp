#include "tools/report/analyses/peaks.h"

#include <cstdlib>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"

namespace dlb::report {

std::string GpuPeakOf(const std::map<std::string, std::string>& context, std::string dtype) {
  auto it = context.find(std::string(schema::kCtxGpuPeakSpec));
  if (it == context.end()) return "";
  if (dtype.rfind("amp_", 0) == 0) dtype = dtype.substr(4);
  // "...; bf16 peak 1070.5 TFLOP/s = 132 SMs x 1980 MHz x 4096 flop/clk/SM (sm_90 bf16); ..."
  const std::string& spec = it->second;
  const std::string head = dtype + " peak ";
  for (size_t at = 0; at < spec.size();) {
    size_t end = spec.find("; ", at);
    if (end == std::string::npos) end = spec.size();
    const std::string part = spec.substr(at, end - at);
    at = end + 2;
    if (part.rfind(head, 0) != 0) continue;
    const std::string rest = part.substr(head.size());  // "1070.5 TFLOP/s = 132 SMs x 1980 ..."
    const size_t eq = rest.find(" = ");
    if (eq == std::string::npos) return rest;
    std::string how = rest.substr(eq + 3);
    // "132 SMs x 1980 MHz" of "132 SMs x 1980 MHz x 4096 flop/clk/SM (...)".
    const size_t mhz = how.find(" MHz");
    if (mhz != std::string::npos) how = how.substr(0, mhz + 4);
    return rest.substr(0, eq) + " (" + how + ")";
  }
  return "";
}

double LeadingRate(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return std::nan("");
  while (*end == ' ') ++end;
  static const std::string kPrefixes = "kMGTPE";
  const size_t at = kPrefixes.find(*end);
  return at == std::string::npos ? v : v * std::pow(1000, static_cast<double>(at + 1));
}

std::string PeakBehind(const Bench& b, double rate, const std::string& unit,
                       const std::map<std::string, std::string>& context) {
  const double pct = b.Counter(schema::kPctPeak);
  if (!(pct > 0) || !(rate > 0)) return "";
  const double peak = rate / (pct / 100);
  const BenchName& n = *b.parsed;
  const std::string dt = n.Get(key::kDType);
  const Cell figure = Cell::Rate(peak, unit);
  if (size_t at = b.label.find("peak "); at != std::string::npos) {
    const std::string rest = b.label.substr(at + 5);
    for (const char* source : {"measured", "spec", "datasheet"})
      if (rest.find(source) != std::string::npos && rest.find(source) < 24)
        return Prose({source, " ", dt, " ", figure});
  }
  auto same = [&](double v) { return std::fabs(v / peak - 1) < 0.02; };
  // "measured bf16 760.0 TFLOP/s": the figure after the dtype.
  const std::string measured = MeasuredPeakOf(context, n.device, dt);
  if (!measured.empty() && same(LeadingRate(measured.substr(measured.find(' ', 9) + 1))))
    return Prose({"measured ", dt, " ", figure});
  const std::string spec = n.device == "gpu" ? GpuPeakOf(context, dt) : "";
  if (!spec.empty() && same(LeadingRate(spec)))
    return Prose({"spec ", dt, " ", figure, " at max clock"});
  return Prose({dt, " ", figure, std::string(kCaseOwnPeak)});
}

int AggregateOverOneGpu(const Bench& b, std::string_view counter,
                        const std::map<std::string, std::string>& context) {
  if (!b.parsed || b.parsed->device != "gpu") return 1;
  const int gpus = std::atoi(b.parsed->Get(key::kGpus).c_str());
  const double rate = b.Counter(schema::kFlopPerS), pct = b.Counter(counter);
  if (gpus < 2 || !(rate > 0) || !(pct > 0)) return 1;
  const double denominator = rate / (pct / 100);
  // One GPU's peak or roof: the roofline object's compute peak, the case's label's peak, the
  // run's spec or measured peak of its dtype.
  double one = 0;
  const std::string dt = b.parsed->Get(key::kDType);
  if (counter == schema::kPctRoofline) {
    if (b.roofline) one = b.roofline->compute_peak_flop_per_s;
  } else if (size_t at = b.label.find("peak "); at != std::string::npos) {
    one = LeadingRate(b.label.substr(at + 5));
  }
  if (!(one > 0)) one = LeadingRate(GpuPeakOf(context, dt));
  const std::string device = "gpu";  // a multi-GPU case is read against one GPU's peak
  if (const std::string m = MeasuredPeakOf(context, device, dt); !(one > 0) && !m.empty())
    one = LeadingRate(m.substr(m.find(' ', 9) + 1));
  // Against all the GPUs' peaks the denominator is about `gpus` times one GPU's.
  return one > 0 && denominator < one * 1.5 ? gpus : 1;
}

PeakShare PeakShareOf(const Bench& b, double rate, const std::string& unit,
                      const std::map<std::string, std::string>& context) {
  if (!b.parsed || !(rate > 0)) return {};
  if (const double pct = b.Counter(schema::kPctPeak); pct > 0) {
    if (const int gpus = AggregateOverOneGpu(b, schema::kPctPeak, context); gpus > 1)
      return {pct / gpus, PeakBehind(b, rate, unit, context) + " per GPU, the rate is " +
                              std::to_string(gpus) + " GPUs' aggregate"};
    return {pct, PeakBehind(b, rate, unit, context)};
  }
  if (const double pct = b.Counter(schema::kPctRoofline); pct > 0) {
    if (const int gpus = AggregateOverOneGpu(b, schema::kPctRoofline, context); gpus > 1)
      return {pct / gpus, Prose({"roof ", Cell::Rate(rate / (pct / 100), unit),
                                 " at its intensity per GPU, the rate is ",
                                 Cell::Count(int64_t(gpus)), " GPUs' aggregate"})};
    return {pct, Prose({"roof ", Cell::Rate(rate / (pct / 100), unit), " at its intensity"})};
  }
  const BenchName& n = *b.parsed;
  const std::string dt = n.Get(key::kDType);
  if (dt.empty()) return {};
  // "measured bf16 760.0 TFLOP/s": the figure after the dtype.
  if (const std::string measured = MeasuredPeakOf(context, n.device, dt); !measured.empty()) {
    const double peak = LeadingRate(measured.substr(measured.find(' ', 9) + 1));
    if (peak > 0) return {rate / peak * 100, Prose({"measured ", dt, " ", Cell::Rate(peak, unit)})};
  }
  if (n.device == "gpu")
    if (const double peak = LeadingRate(GpuPeakOf(context, dt)); peak > 0)
      return {rate / peak * 100,
              Prose({"spec ", dt, " ", Cell::Rate(peak, unit), " at max clock"})};
  return {};
}

}  // namespace dlb::report
