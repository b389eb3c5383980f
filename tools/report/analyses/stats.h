// Statistics of the report: order statistics, the Mann-Whitney U test as scipy computes it (so the
// p-values equal those of Google Benchmark's compare.py), Benjamini-Hochberg, robust spread, the
// batch-size fit, a ratio interval and the change point (step) of a series.
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

// The single most likely step (change in level) of a series of finite values, oldest first: the
// split that minimises the summed absolute deviations of both segments from their own medians
// (the maximum-likelihood single change in location under Laplace noise; one outlier cannot pull
// the split towards itself as it pulls squared deviations), each segment at least `min_segment`
// points. It is significant when its two medians differ by at least `threshold` (relative) and
// by more than `k` scaled pooled MADs: 1.4826 x the median absolute deviation of every point from
// its own segment's median, leaving out the one zero deviation of each odd segment's median point
// (it is fitted exactly and would pull the spread of short segments towards zero).
struct StepOptions {
  int min_segment = 3;
  double k = 3;
  double threshold = 0.05;
};
struct Step {
  bool searched = false;         // the series had 2 x min_segment points; else no split was tried
  bool found = false;            // the best split is significant
  size_t at = 0;                 // index of the first point after the step (searched only)
  double before = 0, after = 0;  // medians of the two segments
  double change = 0;             // RelativeChange(before, after)
  double spread = 0;             // 1.4826 x pooled MAD
  double z = 0;                  // (after - before) / spread; +-inf when the spread is 0
  // The newest min_segment points are still at the new level: their median lies past the midpoint
  // of before and after, on the after side. False for a step that was undone later.
  bool lasting = false;
};
Step FindStep(const std::vector<double>& v, const StepOptions& options = {});

}  // namespace dlb::report
