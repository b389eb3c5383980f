// Change points (changepoints.h): the two detectors and the confirmation both share.
#include "tools/report/analyses/changepoints.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "tools/report/analyses/stats.h"

namespace dlb::report {

Detector ParseDetector(const std::string& s) {
  if (s == "pelt") return Detector::kPelt;
  if (s == "edivisive") return Detector::kEDivisive;
  throw std::invalid_argument("--detector " + s + ": expects pelt or edivisive");
}

const char* DetectorName(Detector d) { return d == Detector::kPelt ? "pelt" : "edivisive"; }

namespace {

// Logs: a step is a ratio, and noise grows with the level, so a 5% step weighs the same on a
// microsecond case as on a second one.
std::vector<double> Logs(const std::vector<double>& v) {
  std::vector<double> y(v.size());
  for (size_t i = 0; i < v.size(); ++i) y[i] = std::log(std::max(v[i], 1e-300));
  return y;
}

// The noise's standard deviation, robust to the steps themselves: successive differences cancel
// the level, so only the few differences across a step are outliers, and their median ignores
// them (a difference of two values has twice the variance: hence sqrt(2)).
double NoiseSigma(const std::vector<double>& y) {
  std::vector<double> d;
  d.reserve(y.size());
  for (size_t i = 1; i < y.size(); ++i) d.push_back(std::fabs(y[i] - y[i - 1]));
  double s = 1.4826 * Median(std::move(d)) / std::sqrt(2.0);
  // Identical values (a deterministic counter): any change stands out, but not infinitely.
  return s > 0 ? s : 1e-9;
}

// Penalised optimal partitioning, the objective PELT solves: the segmentation minimising the
// Gaussian cost of every segment around its mean (in units of the noise's variance) plus
// penalty x log(n) per change point, each segment at least min_segment long. Solved exactly over
// every earlier boundary: a history of a few hundred runs needs no pruning.
std::vector<size_t> Pelt(const std::vector<double>& v, const ChangePointOptions& o) {
  const size_t n = v.size(), m = static_cast<size_t>(std::max(o.min_segment, 1));
  if (n < 2 * m) return {};
  std::vector<double> y = Logs(v);
  double sigma = NoiseSigma(y);
  std::vector<double> s1(n + 1, 0), s2(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    double z = (y[i] - y[0]) / sigma;  // shifted: sums of squares of small numbers stay exact
    s1[i + 1] = s1[i] + z;
    s2[i + 1] = s2[i] + z * z;
  }
  auto cost = [&](size_t a, size_t b) {
    double k = static_cast<double>(b - a), s = s1[b] - s1[a];
    return s2[b] - s2[a] - s * s / k;
  };
  const double beta = o.penalty * std::log(static_cast<double>(n));
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> f(n + 1, inf);
  std::vector<size_t> last(n + 1, 0);
  f[0] = -beta;
  for (size_t t = m; t <= n; ++t)
    for (size_t s = 0; s + m <= t; ++s) {
      if (s != 0 && s < m) continue;
      if (!std::isfinite(f[s])) continue;
      double c = f[s] + cost(s, t) + beta;
      if (c < f[t]) {
        f[t] = c;
        last[t] = s;
      }
    }
  std::vector<size_t> cps;
  for (size_t t = last[n]; t > 0; t = last[t]) cps.push_back(t);
  std::reverse(cps.begin(), cps.end());
  return cps;
}

// E-Divisive (Matteson and James, 2014; the test Apache Otava and MongoDB run), alpha = 1: the
// split of a segment that maximises the energy statistic between its two sides; significant when
// fewer than permutation_alpha of the segment's random permutations reach it. Best split of
// [a, b) over every segment, tested, kept, repeated until one is not significant.
struct Split {
  size_t at = 0;
  double q = -1;
};

Split BestSplit(const double* x, size_t len, size_t m) {
  Split best;
  if (len < 2 * m) return best;
  // r[t]: sum of |x_t - x_i| over i < t; s[t]: over i > t. The within-sums of both sides are
  // their prefix and suffix sums, the between-sum the rest of the total.
  std::vector<double> r(len, 0), s(len, 0);
  for (size_t t = 0; t < len; ++t)
    for (size_t i = t + 1; i < len; ++i) {
      double d = std::fabs(x[t] - x[i]);
      s[t] += d;
      r[i] += d;
    }
  double total = 0;
  for (size_t t = 0; t < len; ++t) total += r[t];
  std::vector<double> left(len + 1, 0), right(len + 1, 0);
  for (size_t t = 0; t < len; ++t) left[t + 1] = left[t] + r[t];
  for (size_t t = len; t-- > 0;) right[t] = right[t + 1] + s[t];
  for (size_t tau = m; tau + m <= len; ++tau) {
    double nl = static_cast<double>(tau), nr = static_cast<double>(len - tau);
    double wl = left[tau], wr = right[tau], between = total - wl - wr;
    double e = 2 * between / (nl * nr) - wl / (nl * (nl - 1) / 2) - wr / (nr * (nr - 1) / 2);
    double q = nl * nr / (nl + nr) * e;
    if (q > best.q) best = {tau, q};
  }
  return best;
}

std::vector<size_t> EDivisive(const std::vector<double>& v, const ChangePointOptions& o) {
  const size_t m = static_cast<size_t>(std::max(o.min_segment, 2));
  std::vector<double> y = Logs(v);
  std::mt19937_64 rng(o.seed);
  std::vector<size_t> bounds{0, y.size()};
  std::vector<double> shuffled;
  for (;;) {
    size_t seg = 0;
    Split best;
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
      Split s = BestSplit(y.data() + bounds[i], bounds[i + 1] - bounds[i], m);
      if (s.q > best.q) {
        best = s;
        seg = i;
      }
    }
    if (best.q < 0) break;
    size_t a = bounds[seg], len = bounds[seg + 1] - a;
    // The permutation test, stopped as soon as it cannot pass: a flat series costs a few
    // permutations, not all of them.
    const int limit = static_cast<int>(o.permutation_alpha * (o.permutations + 1));
    int reached = 0;
    shuffled.assign(y.begin() + static_cast<std::ptrdiff_t>(a),
                    y.begin() + static_cast<std::ptrdiff_t>(a + len));
    for (int i = 0; i < o.permutations && reached <= limit; ++i) {
      std::shuffle(shuffled.begin(), shuffled.end(), rng);
      reached += BestSplit(shuffled.data(), len, m).q >= best.q;
    }
    double p = (1.0 + reached) / (o.permutations + 1.0);
    if (reached > limit || p >= o.permutation_alpha) break;
    bounds.insert(bounds.begin() + static_cast<std::ptrdiff_t>(seg + 1), a + best.at);
  }
  return std::vector<size_t>(bounds.begin() + 1, bounds.end() - 1);
}

ChangePoint Judge(const std::vector<double>& v, size_t from, size_t at, size_t to) {
  ChangePoint c;
  c.from = from;
  c.at = at;
  c.to = to;
  auto it = [&v](size_t i) { return v.begin() + static_cast<std::ptrdiff_t>(i); };
  std::vector<double> a(it(from), it(at)), b(it(at), it(to));
  c.before = Median(a);
  c.after = Median(b);
  c.change = RelativeChange(c.before, c.after);
  c.p = MannWhitneyU(a, b).p;
  return c;
}

}  // namespace

std::vector<size_t> ProposeChangePoints(const std::vector<double>& v, const ChangePointOptions& o) {
  return o.detector == Detector::kPelt ? Pelt(v, o) : EDivisive(v, o);
}

std::vector<ChangePoint> FindChangePoints(const std::vector<double>& v,
                                          const ChangePointOptions& o) {
  std::vector<size_t> cps = ProposeChangePoints(v, o);
  // Drop the least convincing proposal and judge its merged neighbours again, until every one
  // left passes: a change point is only as good as the segments it separates.
  for (;;) {
    std::vector<ChangePoint> judged;
    size_t worst = cps.size();
    double worst_score = 0;
    for (size_t i = 0; i < cps.size(); ++i) {
      size_t from = i ? cps[i - 1] : 0, to = i + 1 < cps.size() ? cps[i + 1] : v.size();
      ChangePoint c = Judge(v, from, cps[i], to);
      bool ok = c.p < o.alpha && std::fabs(c.change) >= o.threshold;
      // The first to go: one below the threshold (the further below, the sooner), else the one
      // of the largest p-value.
      const double size = std::fabs(c.change);
      double score = ok ? 0 : size < o.threshold ? 2 - size / o.threshold : c.p;
      if (!ok && score > worst_score) {
        worst = i;
        worst_score = score;
      }
      judged.push_back(c);
    }
    if (worst == cps.size()) return judged;
    cps.erase(cps.begin() + static_cast<std::ptrdiff_t>(worst));
  }
}

}  // namespace dlb::report
