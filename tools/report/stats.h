// Statistics of the report: order statistics, the Mann-Whitney U test as scipy computes it (so the
// p-values equal those of Google Benchmark's compare.py), Benjamini-Hochberg, robust spread, the
// batch-size fit and a ratio interval.
#pragma once

#include <string>
#include <vector>

namespace dlb::report {

double Median(std::vector<double> v);  // NaN when empty; mean of the middle two when even
double Mean(const std::vector<double>& v);
double StdDev(const std::vector<double>& v);  // sample (n-1), as Google Benchmark's stddev
double Mad(const std::vector<double>& v);     // median absolute deviation (unscaled)
double GeoMean(const std::vector<double>& v);

struct UTest {
  double u1 = 0;  // U of the first sample, as scipy's statistic
  double p = 1;   // two-sided p-value
  bool exact = false;
};
// scipy.stats.mannwhitneyu(x, y, use_continuity=True, alternative='two-sided', method='auto')
// of scipy 1.7 to 1.13: exact distribution when either sample has at most 8 values and there are
// no ties, else the normal approximation with tie and continuity correction.
UTest MannWhitneyU(const std::vector<double>& x, const std::vector<double>& y);

// Benjamini-Hochberg adjusted p-values (q-values); NaN entries are left out and stay NaN.
std::vector<double> BenjaminiHochberg(const std::vector<double>& p);

// compare.py's calculate_change: (new - old) / |old|.
double RelativeChange(double old_value, double new_value);

// T(b) = c / b^alpha + t_min, least squares over (b, t) points; needs 3 points.
struct BatchFit {
  bool ok = false;
  double c = 0, alpha = 0, t_min = 0, r2 = 0;
  double operator()(double b) const;
};
BatchFit FitBatchCurve(const std::vector<double>& b, const std::vector<double>& t);

// Ratio a/b of two samples: the Hodges-Lehmann estimate of the ratio of locations (median of all
// pairwise ratios) with its distribution-free 95% interval (inverted Mann-Whitney test on logs).
struct RatioInterval {
  double estimate = 0, lo = 0, hi = 0;
  bool has_interval = false;
};
RatioInterval RatioOfSamples(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace dlb::report
