#include "tools/report/analyses/stats.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>

namespace dlb::report {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  size_t n = v.size(), mid = n / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double hi = v[mid];
  if (n % 2) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + mid);
  return (lo + hi) / 2;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double StdDev(const std::vector<double>& v) {
  if (v.size() < 2) return kNaN;
  double m = Mean(v), ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

double Mad(const std::vector<double>& v) {
  double m = Median(v);
  std::vector<double> d;
  d.reserve(v.size());
  for (double x : v) d.push_back(std::fabs(x - m));
  return Median(std::move(d));
}

double GeoMean(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

double RelativeChange(double old_value, double new_value) {
  if (old_value == 0 && new_value == 0) return 0.0;
  if (old_value == 0) return (new_value - old_value) / ((old_value + new_value) / 2);
  return (new_value - old_value) / std::fabs(old_value);
}

UTest MannWhitneyU(const std::vector<double>& x, const std::vector<double>& y) {
  UTest r;
  size_t n1 = x.size(), n2 = y.size();
  if (n1 == 0 || n2 == 0) {
    r.p = kNaN;
    return r;
  }
  size_t n = n1 + n2;
  std::vector<std::pair<double, int>> xy;
  xy.reserve(n);
  for (double v : x) xy.emplace_back(v, 0);
  for (double v : y) xy.emplace_back(v, 1);
  std::sort(xy.begin(), xy.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Average ranks over ties; tie term sum(t^3 - t).
  double r1 = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && xy[j].first == xy[i].first) ++j;
    double t = static_cast<double>(j - i);
    double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (xy[k].second == 0) r1 += rank;
    if (j - i > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2), dn = static_cast<double>(n);
  double u1 = r1 - dn1 * (dn1 + 1) / 2;
  double u2 = dn1 * dn2 - u1;
  double u = std::max(u1, u2);
  r.u1 = u1;
  bool exact = !(n1 > 8 && n2 > 8) && !ties;
  double p;
  if (exact) {
    // Counts of U = k are the coefficients of the Gaussian binomial [m+n choose m]_q
    //   = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i).
    size_t m = std::min(n1, n2), nn = std::max(n1, n2);
    std::vector<double> c(m * nn + 1, 0.0);
    c[0] = 1;
    for (size_t i = 1; i <= m; ++i) {
      size_t shift = nn + i, deg = i * nn;
      for (size_t k = deg; k >= shift; --k) {
        c[k] -= c[k - shift];
        if (k == shift) break;
      }
      for (size_t k = i; k <= deg; ++k) c[k] += c[k - i];
    }
    double total = std::accumulate(c.begin(), c.end(), 0.0);
    // sf(U) = P(U' >= U) = cdf(mn - U) by symmetry.
    size_t kmax = static_cast<size_t>(std::llround(dn1 * dn2 - u));
    double cdf = 0;
    for (size_t k = 0; k <= kmax && k < c.size(); ++k) cdf += c[k];
    p = 2 * cdf / total;
  } else {
    double mu = dn1 * dn2 / 2;
    double s = std::sqrt(dn1 * dn2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1))));
    double z = (u - mu - 0.5) / s;
    p = std::erfc(z / std::sqrt(2.0));  // 2 * norm.sf(z)
    if (std::isnan(p)) p = 1;
  }
  r.p = std::clamp(p, 0.0, 1.0);
  r.exact = exact;
  return r;
}

std::vector<double> BenjaminiHochberg(const std::vector<double>& p) {
  std::vector<double> q(p.size(), kNaN);
  std::vector<size_t> idx;
  for (size_t i = 0; i < p.size(); ++i)
    if (!std::isnan(p[i])) idx.push_back(i);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  double m = static_cast<double>(idx.size()), running = 1.0;
  for (size_t r = idx.size(); r-- > 0;) {
    running = std::min(running, p[idx[r]] * m / static_cast<double>(r + 1));
    q[idx[r]] = std::min(running, 1.0);
  }
  return q;
}

double BatchFit::operator()(double b) const { return c / std::pow(b, alpha) + t_min; }

namespace {
// For a fixed alpha the model is linear in (c, t_min): least squares with c >= 0 and t_min >= 0
// (a time per sample has no negative floor; a negative c would make bigger batches slower per
// sample than the floor, which the model does not describe). When the free optimum breaks a bound,
// the optimum lies on that bound.
BatchFit FitFixedAlpha(const std::vector<double>& b, const std::vector<double>& t, double alpha) {
  BatchFit f;
  f.alpha = alpha;
  size_t n = b.size();
  std::vector<double> x(n);
  double mx = 0, mt = 0, sxx0 = 0, sxt0 = 0;
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::pow(b[i], -alpha);
    mx += x[i];
    mt += t[i];
    sxx0 += x[i] * x[i];
    sxt0 += x[i] * t[i];
  }
  mx /= static_cast<double>(n);
  mt /= static_cast<double>(n);
  double sxx = 0, sxt = 0, stt = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxt += (x[i] - mx) * (t[i] - mt);
    stt += (t[i] - mt) * (t[i] - mt);
  }
  if (sxx <= 0 || sxx0 <= 0) return f;
  auto sse = [&](double c, double t0) {
    double e2 = 0;
    for (size_t i = 0; i < n; ++i) {
      double e = t[i] - (c * x[i] + t0);
      e2 += e * e;
    }
    return e2;
  };
  double c = sxt / sxx, t0 = mt - c * mx;
  if (c < 0 || t0 < 0) {
    // Candidates on the bounds: c = 0 (a flat line at the mean), t_min = 0 (through the origin).
    double c1 = 0, t1 = std::max(0.0, mt);
    double c2 = std::max(0.0, sxt0 / sxx0), t2 = 0;
    if (sse(c1, t1) <= sse(c2, t2)) {
      c = c1;
      t0 = t1;
    } else {
      c = c2;
      t0 = t2;
    }
  }
  f.c = c;
  f.t_min = t0;
  double e2 = sse(c, t0);
  f.r2 = stt > 0 ? 1 - e2 / stt : (e2 == 0 ? 1.0 : 0.0);
  f.ok = true;
  return f;
}
}  // namespace

BatchFit FitBatchCurve(const std::vector<double>& b, const std::vector<double>& t) {
  BatchFit best;
  if (b.size() < 3 || b.size() != t.size()) return best;
  // alpha in [0.05, 3]: R^2 is 1 - SSE/SST with SST fixed, so maximising R^2 minimises SSE; a grid,
  // then golden-section search around the best grid point.
  constexpr double kMin = 0.05, kMax = 3.0, kStep = 0.05;
  double best_alpha = kMin;
  for (double a = kMin; a <= kMax + 1e-9; a += kStep) {
    BatchFit f = FitFixedAlpha(b, t, a);
    if (f.ok && (!best.ok || f.r2 > best.r2)) {
      best = f;
      best_alpha = a;
    }
  }
  if (!best.ok) return best;
  double lo = std::max(kMin, best_alpha - kStep), hi = std::min(kMax, best_alpha + kStep);
  const double g = (std::sqrt(5.0) - 1) / 2;
  for (int it = 0; it < 60; ++it) {
    double a1 = hi - g * (hi - lo), a2 = lo + g * (hi - lo);
    BatchFit f1 = FitFixedAlpha(b, t, a1), f2 = FitFixedAlpha(b, t, a2);
    if (f1.ok && (!f2.ok || f1.r2 >= f2.r2))
      hi = a2;
    else
      lo = a1;
  }
  BatchFit f = FitFixedAlpha(b, t, (lo + hi) / 2);
  if (f.ok && f.r2 >= best.r2) best = f;
  return best;
}

RatioInterval RatioOfSamples(const std::vector<double>& a, const std::vector<double>& b) {
  RatioInterval r;
  if (a.empty() || b.empty()) return r;
  std::vector<double> d;
  d.reserve(a.size() * b.size());
  for (double x : a)
    for (double y : b) d.push_back(std::log(x) - std::log(y));
  std::sort(d.begin(), d.end());
  r.estimate = std::exp(Median(d));
  double mn = static_cast<double>(d.size());
  double k = std::floor(
      mn / 2 - 1.959963985 * std::sqrt(mn * static_cast<double>(a.size() + b.size() + 1) / 12));
  if (k >= 1) {
    size_t ki = static_cast<size_t>(k);
    r.lo = std::exp(d[ki - 1]);
    r.hi = std::exp(d[d.size() - ki]);
    r.has_interval = true;
  }
  return r;
}

namespace {

// cost[i] = sum over j < i of |v[j] - median(v[0..i))|, for every prefix in O(n log n): a running
// median in two heaps (the lower half, which holds the extra point of an odd count, and the upper
// half) with their sums. For a sorted set with median m, sum |x - m| = sum(upper) - sum(lower) + m
// when the count is odd (the lower half holds m itself) and sum(upper) - sum(lower) when even.
std::vector<double> PrefixAbsCosts(const std::vector<double>& v) {
  std::priority_queue<double> lower;
  std::priority_queue<double, std::vector<double>, std::greater<double>> upper;
  double sum_lower = 0, sum_upper = 0;
  std::vector<double> cost(v.size() + 1, 0.0);
  for (size_t i = 0; i < v.size(); ++i) {
    if (lower.empty() || v[i] <= lower.top()) {
      lower.push(v[i]);
      sum_lower += v[i];
    } else {
      upper.push(v[i]);
      sum_upper += v[i];
    }
    if (lower.size() > upper.size() + 1) {
      sum_lower -= lower.top();
      sum_upper += lower.top();
      upper.push(lower.top());
      lower.pop();
    } else if (upper.size() > lower.size()) {
      sum_upper -= upper.top();
      sum_lower += upper.top();
      lower.push(upper.top());
      upper.pop();
    }
    double c = sum_upper - sum_lower + (lower.size() > upper.size() ? lower.top() : 0.0);
    cost[i + 1] = std::max(c, 0.0);  // rounding must not make a cost negative
  }
  return cost;
}

// The absolute deviations of a segment from its median; for an odd count, without the median
// point's own zero.
void AppendDeviations(std::vector<double>::const_iterator first,
                      std::vector<double>::const_iterator last, double median,
                      std::vector<double>* out) {
  size_t start = out->size();
  for (auto it = first; it != last; ++it) out->push_back(std::fabs(*it - median));
  if ((last - first) % 2 == 1) {
    auto zero = std::min_element(out->begin() + static_cast<std::ptrdiff_t>(start), out->end());
    out->erase(zero);
  }
}

}  // namespace

Step FindStep(const std::vector<double>& v, const StepOptions& o) {
  Step s;
  size_t n = v.size(), m = static_cast<size_t>(std::max(o.min_segment, 1));
  if (n < 2 * m) return s;
  s.searched = true;
  std::vector<double> rev(v.rbegin(), v.rend());
  std::vector<double> head = PrefixAbsCosts(v), tail = PrefixAbsCosts(rev);
  // The first split of least cost. Sums of absolute deviations tie exactly more often than one
  // would think (a flat series: every split), and the running sums round differently per split,
  // so costs within a billionth of the unsplit cost (no split costs more) count as equal.
  size_t best = m;
  double tie = 1e-9 * head[n];
  for (size_t at = m + 1; at + m <= n; ++at)
    if (head[at] + tail[n - at] < head[best] + tail[n - best] - tie) best = at;
  auto split = v.begin() + static_cast<std::ptrdiff_t>(best);
  s.at = best;
  s.before = Median(std::vector<double>(v.begin(), split));
  s.after = Median(std::vector<double>(split, v.end()));
  s.change = RelativeChange(s.before, s.after);
  std::vector<double> dev;
  dev.reserve(n);
  AppendDeviations(v.begin(), split, s.before, &dev);
  AppendDeviations(split, v.end(), s.after, &dev);
  s.spread = 1.4826 * Median(std::move(dev));
  double d = s.after - s.before;
  s.z = s.spread > 0 ? d / s.spread : (d == 0 ? 0 : (d > 0 ? INFINITY : -INFINITY));
  s.found = std::fabs(s.change) >= o.threshold && std::fabs(s.z) > o.k;
  double newest = Median(std::vector<double>(v.end() - static_cast<std::ptrdiff_t>(m), v.end()));
  double midpoint = (s.before + s.after) / 2;
  s.lasting = d > 0 ? newest > midpoint : d < 0 ? newest < midpoint : true;
  return s;
}

}  // namespace dlb::report
