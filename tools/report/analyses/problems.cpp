#include "tools/report/analyses/problems.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "fixtures/schema/naming.h"
#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/peaks.h"

namespace dlb::report {

namespace {

// How far above the clocks' ratio a value may stand and still be the clock's doing: the spread of
// a sound measurement (2%).
constexpr double kClockSlack = 1.02;

// The context fields whose differences between input files a reader must know: what was run,
// where, and on which libraries. A date counts by its day.
constexpr std::pair<std::string_view, std::string_view> kMixKeys[] = {
    {schema::kCtxDate, "dates"},
    {schema::kCtxGitRevision, "revisions"},
    {schema::kCtxHostName, "hosts"},
    {schema::kCtxCpuModel, "CPU models"},
    {schema::kCtxNumCpus, "CPU counts"},
    {schema::kCtxTier, "tiers"},
    {schema::kCtxGpuName, "GPUs"},
    {schema::kCtxGpuUuid, "GPU UUIDs"},
    {schema::kCtxGpuDriver, "drivers"},
    {schema::kCtxCudnnVersion, "cuDNN versions"},
    {schema::kCtxCublasVersion, "cuBLAS versions"},
    {schema::kCtxNcclVersion, "NCCL versions"},
    {schema::kCtxTorchVersion, "LibTorch versions"},
};

// "sw_power_cap, hw_slowdown" from a label's "throttled: sw_power_cap, hw_slowdown".
void ReasonsOf(const std::string& label, std::set<std::string>* out) {
  const std::string key = "throttled: ";
  const size_t at = label.find(key);
  if (at == std::string::npos) return;
  std::string rest = label.substr(at + key.size());
  rest = rest.substr(0, rest.find_first_of("|;"));
  size_t from = 0;
  while (from < rest.size()) {
    size_t comma = rest.find(',', from);
    std::string word =
        rest.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    word.erase(0, word.find_first_not_of(' '));
    word.erase(word.find_last_not_of(' ') + 1);
    if (!word.empty()) out->insert(word);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
}

// cuDNN's version as its integer (91900, what PyTorch's torch.backends.cudnn.version() gives and
// older peer files hold) written as dlbench writes it ("9.19.0"): one version, not two. cuDNN 9:
// major*10000 + minor*100 + patch; before: major*1000 + minor*100 + patch.
std::string DottedCudnnVersion(const std::string& v) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 9) return v;
  const long n = std::stol(v);
  const long major = n >= 90000 ? n / 10000 : n / 1000;
  const long minor = n >= 90000 ? n % 10000 / 100 : n % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(n % 100);
}

std::string Names(const std::vector<std::string>& names, size_t shown = 8) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i)
    out += (i ? ", " : "") + std::string("`") + names[i] + "`";
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

// The SM clock a GPU case's dtype's measured peak was timed at, the highest over the
// gpu_peak_measured of the files the case came from; 0 where one of them names none.
double PeakClockOf(const MergedRuns& runs, const Bench& b) {
  if (!b.parsed || b.parsed->device != "gpu") return 0;
  const std::string dt = b.parsed->Get(key::kDType);
  if (dt.empty() || b.files.empty()) return 0;
  double high = 0;
  for (const std::string& file : b.files) {
    auto it = runs.file_contexts.find(file);
    const double mhz =
        it == runs.file_contexts.end()
            ? 0
            : MeasuredPeakClockMhz(ContextValue(it->second, schema::kCtxGpuPeakMeasured), dt);
    if (!(mhz > 0)) return 0;
    high = std::max(high, mhz);
  }
  return high;
}

// The Above 100% line: how many values, the highest, then each reason and how many it explains,
// and the values none explains.
std::string Over100Line(const ProblemsFound& p) {
  std::string line = Prose({"**Above 100%**: ", Cell::Count(p.over_100),
                            " value(s) of `pct_peak` or `pct_roofline` exceed 100% (up to ",
                            Cell::Number(p.over_100_max, 4).After("%")}) +
                     " `" + p.over_100_counter + "`, `" + p.over_100_case + "`).";
  if (p.over_100_engine > 0)
    line += Prose({" ", Cell::Count(p.over_100_engine), " of them are convolutions on ",
                   Join(p.over_100_engines, " and "),
                   " engines (their labels name them), which do fewer FLOPs than the direct "
                   "count their rate is computed from: the rate is the direct-equivalent one, "
                   "not work done beyond the peak."});
  if (p.over_100_aggregate > 0)
    line += Prose({" ", Cell::Count(p.over_100_aggregate),
                   " of them are multi-GPU cases whose rate is the GPUs' aggregate, set against "
                   "one GPU's peak or roof: per GPU they are within it (the tables read them per "
                   "GPU)."});
  if (p.over_100_l2 > 0)
    line += " " + std::to_string(p.over_100_l2) +
            " of them are of cases whose operands fit in the GPU's L2 (counter `l2_resident`): "
            "their launches read them from L2, faster than the DRAM-fed GEMMs the peak was "
            "measured on.";
  if (p.over_100_clock > 0)
    line +=
        Prose({" ", Cell::Count(p.over_100_clock),
               " of them ran at a higher SM clock than their dtype's measured peak was taken "
               "at (up to ",
               Cell::Number(p.over_100_clock_case, 4), " against ",
               Cell::Number(p.over_100_clock_peak, 4),
               " MHz, counter `sm_clock_median_mhz`), by at least as much as they exceed it: the "
               "peak's search holds the GPU at its power cap; a case's shorter timed spans run "
               "at a higher clock."});
  if (p.over_100_unexplained > 0)
    line += Prose({" ", Cell::Count(p.over_100_unexplained),
                   p.over_100_unexplained == p.over_100 ? " (all)" : "",
                   " have no reason found here (no engine, aggregate, L2 or clock explains them): "
                   "the peak or roof is below what the case reached, or the timing is wrong; "
                   "re-measure the peak before reading them."});
  return line;
}

}  // namespace

std::map<std::string, std::vector<std::string>> MixedInputs(
    const std::vector<std::map<std::string, std::string>>& contexts) {
  std::map<std::string, std::vector<std::string>> mixed;
  if (contexts.size() < 2) return mixed;
  for (const auto& [key, what] : kMixKeys) {
    std::set<std::string> seen;
    for (const auto& ctx : contexts) {
      auto it = ctx.find(std::string(key));
      if (it == ctx.end() || IsContextGap(it->second)) continue;
      std::string v = key == schema::kCtxDate ? it->second.substr(0, 10) : it->second;
      if (key == schema::kCtxCudnnVersion) v = DottedCudnnVersion(v);
      seen.insert(std::move(v));
    }
    if (seen.size() > 1) mixed[std::string(what)].assign(seen.begin(), seen.end());
  }
  return mixed;
}

std::vector<std::string> TimingHazards(
    const std::vector<std::map<std::string, std::string>>& contexts) {
  struct Hazard {
    std::string_view key, value, what;
  };
  static constexpr Hazard kHazards[] = {
      {schema::kCtxLibraryBuildType, "debug",
       "Google Benchmark built as debug (`library_build_type`): its loop around the timed spans "
       "runs unoptimised, and it warns that timings may be noisy"},
      {schema::kCtxCpuScalingEnabled, "true",
       "CPU frequency scaling enabled (`cpu_scaling_enabled`): CPU cases ran at a clock the "
       "governor chose, which may move between and within cases"},
      {schema::kCtxBuildType, "Debug",
       "dlbench built as Debug (`dlbench_build_type`): the harness and the CPU code it calls ran "
       "unoptimised"},
  };
  std::vector<std::string> out;
  for (const Hazard& h : kHazards) {
    size_t n = 0;
    for (const auto& ctx : contexts)
      if (auto it = ctx.find(std::string(h.key)); it != ctx.end() && it->second == h.value) ++n;
    if (n > 0)
      out.push_back(std::string(h.what) + " in " + std::to_string(n) + " of " +
                    std::to_string(contexts.size()) + " file(s)");
  }
  return out;
}

std::string SpreadText(const std::string& what, const std::vector<std::string>& values) {
  std::string out = std::to_string(values.size()) + " " + what + " (";
  for (size_t i = 0; i < values.size() && i < 4; ++i) out += (i ? ", " : "") + values[i];
  return out + (values.size() > 4 ? ", ...)" : ")");
}

ProblemsFound FindProblems(const MergedRuns& runs,
                           const std::vector<std::map<std::string, std::string>>& contexts) {
  ProblemsFound p;
  std::set<std::string> reasons, engines;
  std::vector<std::pair<double, std::string>> overhead;  // ratio, case
  double max_clock = 0;
  if (auto it = runs.context.find(std::string(schema::kCtxGpuMaxSmClock)); it != runs.context.end())
    max_clock = std::atof(it->second.c_str());
  for (const Bench& b : runs.benches) {
    if (b.status == Status::kFailed) p.failed.push_back(b.name);
    if (!b.measured()) continue;
    ++p.measured;
    if (b.verification.disposition == schema::kMistrusted)
      p.mistrusted.push_back(b.name);
    else if (b.verification.doubtful())
      p.unverified.push_back(b.name);
    if (b.RepetitionsBehind() < 2) ++p.once;
    if (auto it = b.counters.find(schema::kThrottled); it != b.counters.end()) {
      ++p.monitored;
      if (std::any_of(it->second.begin(), it->second.end(), [](double v) { return v > 0; })) {
        ++p.throttled;
        ReasonsOf(b.label, &reasons);
        const double clock = b.Counter(schema::kSmClockMedianMhz);
        if (std::isfinite(clock) && clock > 0) {
          p.clock_low = p.clock_low > 0 ? std::min(p.clock_low, clock) : clock;
          p.clock_high = std::max(p.clock_high, clock);
        }
        const double top = b.Counter(schema::kSmClockMaxMhz);
        if (std::isfinite(top)) max_clock = std::max(max_clock, top);
      }
    }
    if (const double r = b.Counter(schema::kVsPlainLoop);
        std::isfinite(r) && r > kHarnessOverhead) {
      overhead.emplace_back(r, b.name);
      p.overhead_max = std::max(p.overhead_max, r);
    }
    for (std::string_view c : {schema::kPctPeak, schema::kPctRoofline}) {
      const double v = b.Counter(c);
      if (!std::isfinite(v) || v <= 100) continue;
      ++p.over_100;
      bool explained = false;
      if (b.Counter(schema::kL2Resident) > 0) {
        ++p.over_100_l2;
        explained = true;
      }
      if (const std::string engine = FewerFlopsEngine(b); !engine.empty()) {
        ++p.over_100_engine;
        engines.insert(engine);
        explained = true;
      }
      if (const int gpus = AggregateOverOneGpu(b, c, runs.context); gpus > 1 && v / gpus <= 100) {
        ++p.over_100_aggregate;
        explained = true;
      }
      // A roof of the measured compute peak, timed at a lower clock than the case ran at: the
      // clocks' ratio explains the value only as far as it reaches.
      if (c == schema::kPctRoofline && !(b.roofline && b.roofline->bound == schema::kBoundMemory))
        if (const double peak = PeakClockOf(runs, b), clock = b.Counter(schema::kSmClockMedianMhz);
            peak > 0 && clock > peak && v <= 100 * clock / peak * kClockSlack) {
          ++p.over_100_clock;
          explained = true;
          if (clock / peak > p.over_100_clock_case / std::max(p.over_100_clock_peak, 1.0)) {
            p.over_100_clock_case = clock;
            p.over_100_clock_peak = peak;
          }
        }
      if (!explained) ++p.over_100_unexplained;
      if (v > p.over_100_max) {
        p.over_100_max = v;
        p.over_100_case = b.name;
        p.over_100_counter = std::string(c);
      }
    }
  }
  std::sort(overhead.begin(), overhead.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (auto& [r, name] : overhead) p.overhead.push_back(std::move(name));
  p.throttle_reasons.assign(reasons.begin(), reasons.end());
  p.clock_max = max_clock;
  p.over_100_engines.assign(engines.begin(), engines.end());
  p.mixed = MixedInputs(contexts);
  p.setups = runs.split_setups;
  p.setup_whats = runs.setup_whats;
  p.hazards = TimingHazards(contexts);
  return p;
}

std::optional<Section> ProblemsSection(const ProblemsFound& p) {
  if (!p.any()) return std::nullopt;
  Section s;
  s.title = "Problems";
  if (p.throttled > 0) {
    std::string line = "**Throttled**: " + std::to_string(p.throttled) + " of " +
                       std::to_string(p.monitored) + " monitored GPU cases ran throttled";
    if (!p.throttle_reasons.empty()) {
      line += " (";
      for (size_t i = 0; i < p.throttle_reasons.size(); ++i)
        line += (i ? ", " : "") + p.throttle_reasons[i];
      line += ")";
    }
    if (p.clock_high > 0) {
      line += Prose({": median SM clock ", Cell::Number(p.clock_low, 4),
                     p.clock_high > p.clock_low ? Prose({"-", Cell::Number(p.clock_high, 4)}) : "",
                     " MHz"});
      if (p.clock_max > 0) line += Prose({" of ", Cell::Number(p.clock_max, 4)});
    }
    line += "; their rates are below what the GPU reaches at its full clock (column `clock`).";
    s.notes.push_back(line);
  }
  if (p.over_100 > 0) s.notes.push_back(Over100Line(p));
  if (!p.overhead.empty())
    s.notes.push_back(Prose({"**Harness overhead**: ", Cell::Count(int64_t(p.overhead.size())),
                             " case(s) timed more than ", Cell::Number(kHarnessOverhead, 3),
                             "x slower than a plain loop of the same calls (counter "
                             "`vs_plain_loop`, up to ",
                             Cell::Number(p.overhead_max, 3), "x): "}) +
                      Names(p.overhead) +
                      "; their spans hold something the same calls in a loop do not (the harness's "
                      "timing, or noise "
                      "larger than the difference at these sizes): re-run them before reading them "
                      "as the library's speed.");
  if (!p.failed.empty())
    s.notes.push_back("**Failed**: " + std::to_string(p.failed.size()) +
                      " case(s): " + Names(p.failed) + " (table \"Not measured\").");
  if (!p.mistrusted.empty())
    s.notes.push_back("**Mistrusted**: " + std::to_string(p.mistrusted.size()) +
                      " case(s) passed their check but were timed above 105% of the peak (or "
                      "their check could not be conclusive; each label says which): " +
                      Names(p.mistrusted) +
                      "; the peak or the timing is wrong, not the hardware faster: their rates "
                      "are not to be read as speed.");
  if (!p.unverified.empty())
    s.notes.push_back("**Not verified**: " + std::to_string(p.unverified.size()) +
                      " case(s) whose result was not checked: " + Names(p.unverified) +
                      "; their figures may not be of correct work.");
  if (p.once > 0)
    s.notes.push_back("**Measured once**: " + std::to_string(p.once) + " of " +
                      std::to_string(p.measured) +
                      " cases have one repetition behind their figures, so no spread: a verdict "
                      "on them (best batch size, a change against another run) rests on a single "
                      "run (`--benchmark_repetitions`).");
  if (!p.hazards.empty()) {
    std::string line = "**Timing hazards**: ";
    for (size_t i = 0; i < p.hazards.size(); ++i) line += (i ? "; " : "") + p.hazards[i];
    s.notes.push_back(line + ".");
  }
  if (!p.mixed.empty()) {
    std::string line = "**Mixed inputs**: the files span ";
    bool first = true;
    for (const auto& [what, values] : p.mixed) {
      line += (first ? "" : "; ") + SpreadText(what, values);
      first = false;
    }
    line += p.setups.empty()
                ? ": the header's machine line names the spread; the files of one case are "
                  "pooled only where their setups (build, libraries, flags, machine) agree."
                : ": the header's machine line names the spread; a case measured under two "
                  "setups is two rows (**Setups**).";
    s.notes.push_back(line);
  }
  if (!p.setups.empty()) {
    std::vector<std::string> names;
    size_t most = 0;
    for (const auto& [name, texts] : p.setups) {
      names.push_back(name);
      most = std::max(most, texts.size());
    }
    const std::vector<std::string>& first = p.setups.begin()->second;
    s.notes.push_back("**Setups**: " + std::to_string(p.setups.size()) +
                      " case(s) were measured under " +
                      (most > 2 ? "up to " + std::to_string(most) : std::string("2")) +
                      " setups, which differ in " + Join(p.setup_whats, ", ") +
                      ": each setup is its own row (key `setup`: " + Join(first, "; ") + " for `" +
                      p.setups.begin()->first + "`), never one figure: " + Names(names, 3) + ".");
  }
  return s;
}

}  // namespace dlb::report
