#include "tests/tools/report/analyses/report_synthetic.h"

#include <algorithm>
#include <cmath>

#include "tools/report/analyses/stats.h"

namespace dlb::report::synthetic {

const char* NoiseName(Noise n) {
  switch (n) {
    case Noise::kGpu:
      return "GPU (0.5-4% CV)";
    case Noise::kCpu:
      return "CPU (2-30% CV)";
    case Noise::kBimodal:
      return "bimodal (two levels 3-8% apart)";
    case Noise::kDrift:
      return "GPU noise + slow drift (3-6% over the history)";
  }
  return "?";
}

namespace {

double LogUniform(double lo, double hi, std::mt19937_64& rng) {
  return std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng));
}

}  // namespace

double GpuCv(std::mt19937_64& rng) { return LogUniform(0.005, 0.04, rng); }
double CpuCv(std::mt19937_64& rng) { return LogUniform(0.02, 0.30, rng); }

double LogNormal(double cv, double z) {
  const double sigma = std::sqrt(std::log(1 + cv * cv));
  return std::exp(sigma * z - sigma * sigma / 2);
}

History Make(Noise noise, int runs, double step, std::mt19937_64& rng) {
  History h;
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> unit(0, 1);
  const double level = 1e6;
  double cv = 0, gap = 0, p_high = 0, drift = 0;
  switch (noise) {
    case Noise::kGpu:
    case Noise::kDrift:
      cv = GpuCv(rng);
      break;
    case Noise::kCpu:
      cv = CpuCv(rng);
      break;
    case Noise::kBimodal:
      cv = LogUniform(0.005, 0.02, rng);
      gap = std::uniform_real_distribution<double>(0.03, 0.08)(rng);
      p_high = std::uniform_real_distribution<double>(0.2, 0.5)(rng);
      break;
  }
  if (noise == Noise::kDrift)
    drift = std::uniform_real_distribution<double>(0.03, 0.06)(rng) * (unit(rng) < 0.5 ? -1 : 1);
  if (step != 0) {
    int lo = runs / 5, hi = runs - runs / 5;
    h.step_at = static_cast<size_t>(std::uniform_int_distribution<int>(lo, hi)(rng));
    h.step = step;
  }
  // CPU noise is log-normal with the CV's sigma, so it is skewed towards slow runs; GPU noise is
  // Gaussian with one run in 50 slowed by 3-10% (a clock dip).
  for (int i = 0; i < runs; ++i) {
    double x = level * (1 + drift * i / std::max(runs - 1, 1));
    if (h.step_at && static_cast<size_t>(i) >= h.step_at) x *= 1 + step;
    if (noise == Noise::kCpu) {
      x *= LogNormal(cv, normal(rng));
    } else {
      x *= 1 + cv * normal(rng);
      if (unit(rng) < 0.02) x *= 1 + std::uniform_real_distribution<double>(0.03, 0.10)(rng);
    }
    if (noise == Noise::kBimodal && unit(rng) < p_high) x *= 1 + gap;
    h.values.push_back(x);
  }
  return h;
}

Outcome Score(const History& h, const ChangePointOptions& options, int slack) {
  Outcome o;
  for (const ChangePoint& c : FindChangePoints(h.values, options)) {
    long d = static_cast<long>(c.at) - static_cast<long>(h.step_at);
    if (h.step_at && !o.found && std::labs(d) <= slack && (c.change > 0) == (h.step > 0))
      o.found = true;
    else
      ++o.false_alarms;
  }
  return o;
}

Outcome ScoreWindowCheck(const History& h) {
  Outcome o;
  const size_t window = 10;
  bool alarm_before = false;  // a failing check just before: the same alarm, not a new one
  for (size_t t = window; t < h.values.size(); ++t) {
    std::vector<double> prev(h.values.begin() + static_cast<std::ptrdiff_t>(t - window),
                             h.values.begin() + static_cast<std::ptrdiff_t>(t));
    std::vector<double> series = prev;
    series.push_back(h.values[t]);
    double med = Median(prev), spread = 1.4826 * Mad(prev), x = h.values[t];
    double ch = RelativeChange(med, x);
    bool slower = ch >= 0.05 && spread > 0 && (x - med) / spread > 3;
    Step st = FindStep(series, {});
    bool fails = slower || (st.found && st.lasting && st.change > 0);
    bool near = h.step_at && t >= h.step_at && t < h.step_at + window;
    if (fails && near)
      o.found = true;
    else if (fails && !alarm_before)
      ++o.false_alarms;
    alarm_before = fails;
  }
  return o;
}

Rates Measure(Noise noise, int runs, double step, int count, uint64_t seed,
              const ChangePointOptions* detector) {
  std::mt19937_64 rng(seed);
  Rates r;
  for (int i = 0; i < count; ++i) {
    History h = Make(noise, runs, step, rng);
    Outcome o = detector ? Score(h, *detector) : ScoreWindowCheck(h);
    ++r.histories;
    r.found += o.found;
    r.with_false_alarm += o.false_alarms > 0;
    r.false_alarms += o.false_alarms;
  }
  return r;
}

}  // namespace dlb::report::synthetic
