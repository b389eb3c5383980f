#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "tools/report/analyses/stats.h"

namespace dlb::report {
namespace {

// Golden values: scipy 1.10.1 (Debian 12 python3-scipy), the library compare.py calls:
//   from scipy.stats import mannwhitneyu
//   r = mannwhitneyu(x, y, alternative='two-sided'); print(r.statistic, r.pvalue)
struct Golden {
  const char* what;
  std::vector<double> x, y;
  double u1, p;
};

TEST(MannWhitneyU, MatchesScipy) {
  std::vector<double> r8, r20, r9a, r9b;
  for (int i = 0; i < 8; ++i) r8.push_back(i);
  for (int i = 0; i < 20; ++i) r20.push_back(i + 3.5);
  for (int i = 0; i < 9; ++i) {
    r9a.push_back(i);
    r9b.push_back(i + 4.5);
  }
  const Golden cases[] = {
      {"exact 3v3", {1, 2, 3}, {4, 5, 6}, 0.0, 0.1},
      {"exact 2v2", {10, 11}, {12, 13}, 0.0, 0.3333333333333333},
      {"exact 5v8",
       {1.1, 2.3, 0.7, 5.5, 3.2},
       {4.4, 6.1, 7.7, 2.9, 8.8, 9.9, 5.0, 6.6},
       4.0,
       0.018648018648018648},
      {"exact 8v20", r8, r20, 10.0, 8.751313099139186e-05},
      {"ties 3v3 (asymptotic)", {1, 2, 2}, {2, 3, 4}, 1.0, 0.16415972847851523},
      {"asymptotic 9v9", r9a, r9b, 10.0, 0.008071487425268009},
      {"asymptotic 10v12 ties",
       {1, 2, 2, 3, 3, 3, 4, 5, 6, 7},
       {3, 4, 4, 5, 6, 6, 7, 8, 9, 9, 10, 11},
       18.5,
       0.006520107731975264},
      {"all equal", {5, 5, 5}, {5, 5}, 3.0, 1.0},
      {"identical 9v9", r9a, r9a, 40.5, 1.0},
  };
  for (const Golden& g : cases) {
    UTest t = MannWhitneyU(g.x, g.y);
    EXPECT_DOUBLE_EQ(t.u1, g.u1) << g.what;
    EXPECT_NEAR(t.p, g.p, 1e-12 * std::max(1.0, g.p)) << g.what;
    EXPECT_NEAR(t.p / g.p, 1.0, 1e-9) << g.what;
  }
}

TEST(MannWhitneyU, SymmetricInItsSamples) {
  std::vector<double> a{3, 1, 4, 1.5, 9}, b{2, 6, 5.3, 5.8};
  EXPECT_DOUBLE_EQ(MannWhitneyU(a, b).p, MannWhitneyU(b, a).p);
}

TEST(BenjaminiHochberg, HandComputed) {
  // Sorted 0.005, 0.01, 0.03, 0.04 -> p*m/rank 0.02, 0.02, 0.04, 0.04; cumulative min from the top.
  std::vector<double> q = BenjaminiHochberg({0.01, 0.04, 0.03, 0.005, NAN});
  EXPECT_DOUBLE_EQ(q[0], 0.02);
  EXPECT_DOUBLE_EQ(q[1], 0.04);
  EXPECT_DOUBLE_EQ(q[2], 0.04);
  EXPECT_DOUBLE_EQ(q[3], 0.02);
  EXPECT_TRUE(std::isnan(q[4]));
  EXPECT_DOUBLE_EQ(BenjaminiHochberg({0.9, 0.8})[0], 0.9);
}

TEST(Stats, OrderStatistics) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(Median({})));
  EXPECT_DOUBLE_EQ(StdDev({2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7));
  EXPECT_DOUBLE_EQ(Mad({1, 1, 2, 2, 4, 6, 9}), 1);
  EXPECT_NEAR(GeoMean({1, 4, 16}), 4, 1e-12);
}

TEST(Stats, RelativeChangeAsComparePy) {
  EXPECT_DOUBLE_EQ(RelativeChange(100, 110), 0.1);
  EXPECT_DOUBLE_EQ(RelativeChange(100, 50), -0.5);
  EXPECT_DOUBLE_EQ(RelativeChange(0, 0), 0);
  EXPECT_DOUBLE_EQ(RelativeChange(0, 2), 2);  // (2-0)/((0+2)/2)
}

TEST(BatchFit, RecoversAKnownCurve) {
  std::vector<double> b{8, 16, 32, 64, 128, 256}, t;
  for (double x : b) t.push_back(500.0 / std::pow(x, 0.8) + 12.0);
  BatchFit f = FitBatchCurve(b, t);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.alpha, 0.8, 1e-4);
  EXPECT_NEAR(f.c, 500, 0.1);
  EXPECT_NEAR(f.t_min, 12, 0.01);
  EXPECT_NEAR(f.r2, 1, 1e-9);
  EXPECT_FALSE(FitBatchCurve({1, 2}, {3, 4}).ok);
}

TEST(RatioInterval, ContainsTheTrueRatio) {
  std::vector<double> cpu, gpu;
  for (int i = 0; i < 10; ++i) {
    cpu.push_back(1000 + 7 * ((i * 3) % 10));
    gpu.push_back(100 + 0.7 * ((i * 7) % 10));
  }
  RatioInterval r = RatioOfSamples(cpu, gpu);
  ASSERT_TRUE(r.has_interval);
  EXPECT_NEAR(r.estimate, 10, 0.1);
  EXPECT_LE(r.lo, r.estimate);
  EXPECT_GE(r.hi, r.estimate);
  EXPECT_FALSE(RatioOfSamples({1, 2}, {1, 2}).has_interval);
}

// Two flat levels with a little spread, 8 runs at 100 then 5 at 120.
TEST(FindStep, FindsOneStepAtItsIndexWithItsLevels) {
  std::vector<double> v{100, 101, 99, 100.5, 99.5, 100, 101, 99, 120, 121, 119, 120.5, 119.5};
  Step s = FindStep(v);
  ASSERT_TRUE(s.searched);
  ASSERT_TRUE(s.found);
  EXPECT_EQ(s.at, 8u);
  EXPECT_DOUBLE_EQ(s.before, 100);
  EXPECT_DOUBLE_EQ(s.after, 120);
  EXPECT_DOUBLE_EQ(s.change, 0.2);
  // Deviations: 0 1 1 .5 .5 0 1 1 before; 1 1 .5 .5 after (its median point's 0 left out): the
  // median of the twelve is .75.
  EXPECT_DOUBLE_EQ(s.spread, 1.4826 * 0.75);
  EXPECT_NEAR(s.z, 20 / (1.4826 * 0.75), 1e-9);
  EXPECT_TRUE(s.lasting);

  // Downwards, with the shortest segment allowed after it.
  std::vector<double> down{50, 51, 49, 50, 52, 48, 50, 40, 41, 39};
  s = FindStep(down);
  ASSERT_TRUE(s.found);
  EXPECT_EQ(s.at, 7u);
  EXPECT_DOUBLE_EQ(s.before, 50);
  EXPECT_DOUBLE_EQ(s.after, 40);
  EXPECT_DOUBLE_EQ(s.change, -0.2);
  EXPECT_LT(s.z, -3);
  EXPECT_TRUE(s.lasting);
}

TEST(FindStep, FlatNoisySeriesHasNoStep) {
  // +-4% of zig-zag noise, no level change; threshold 0 leaves the MAD rule alone to decide.
  std::vector<double> v{100, 103, 98, 101, 97, 102, 99, 104, 96, 100, 102, 98, 101};
  StepOptions mads_only;
  mads_only.threshold = 0;
  Step s = FindStep(v, mads_only);
  EXPECT_TRUE(s.searched);
  EXPECT_FALSE(s.found) << "step at " << s.at << ", z " << s.z;
  EXPECT_LE(std::fabs(s.z), 3);
  EXPECT_FALSE(FindStep(v).found);
}

// Gaussian noise over 11 runs (the default window and the newest run), no threshold: the rule
// alone flags about 6% of flat series, half of them slower (what fails a check), as the
// newest-run test flags about 5% of newest runs, half of them slower.
TEST(FindStep, RarelyFlagsGaussianNoise) {
  std::mt19937_64 gen(20261123);
  auto uniform = [&gen] { return (static_cast<double>(gen() >> 11) + 0.5) * 0x1.0p-53; };
  StepOptions mads_only;
  mads_only.threshold = 0;
  const int kSeries = 2000;
  int flagged = 0, slower = 0;
  for (int i = 0; i < kSeries; ++i) {
    std::vector<double> v;
    for (int j = 0; j < 11; ++j)  // Box-Muller
      v.push_back(100 + std::sqrt(-2 * std::log(uniform())) * std::cos(2 * M_PI * uniform()));
    Step s = FindStep(v, mads_only);
    flagged += s.found;
    slower += s.found && s.lasting && s.change > 0;
  }
  EXPECT_LT(flagged, kSeries * 8 / 100) << flagged;
  EXPECT_LT(slower, kSeries * 4 / 100) << slower;
}

TEST(FindStep, OneOutlierIsNoStep) {
  std::vector<double> flat{100, 101, 99, 100.5, 99.5, 100, 101, 99, 100, 100.5, 99.5};
  StepOptions mads_only;
  mads_only.threshold = 0;
  for (size_t at : {size_t{0}, size_t{3}, size_t{5}, size_t{8}, flat.size() - 1}) {
    std::vector<double> v = flat;
    v[at] = 300;
    Step s = FindStep(v, mads_only);
    EXPECT_TRUE(s.searched);
    EXPECT_FALSE(s.found) << "outlier at " << at << ": step at " << s.at << ", z " << s.z;
    EXPECT_FALSE(FindStep(v).found) << "outlier at " << at;
  }
}

TEST(FindStep, AStepBackIsUndone) {
  std::vector<double> v{100, 101, 99, 100, 120, 121, 119, 120, 100, 101, 99};
  Step s = FindStep(v);
  ASSERT_TRUE(s.found);
  EXPECT_EQ(s.at, 4u);
  EXPECT_GT(s.change, 0);
  EXPECT_FALSE(s.lasting);  // the newest three are back at 100
}

TEST(FindStep, TooShortASeriesIsNotSearched) {
  Step s = FindStep({100, 100, 100, 200, 200});
  EXPECT_FALSE(s.searched);
  EXPECT_FALSE(s.found);
  StepOptions two;
  two.min_segment = 2;
  s = FindStep({100, 100, 100, 200, 200}, two);
  EXPECT_TRUE(s.found);
  EXPECT_EQ(s.at, 3u);
}

// The running-median costs pick the same split as summing each candidate's deviations directly.
TEST(FindStep, SplitHasTheLeastAbsoluteDeviation) {
  std::mt19937_64 gen(7);
  auto cost = [](std::vector<double> seg) {
    double m = Median(seg), c = 0;
    for (double x : seg) c += std::fabs(x - m);
    return c;
  };
  for (int trial = 0; trial < 200; ++trial) {
    size_t n = 6 + gen() % 30;
    std::vector<double> v;
    for (size_t i = 0; i < n; ++i)
      v.push_back(static_cast<double>(gen() % 100000) / 7 + (i >= n / 3 ? 2000 : 0));
    // The first of the least, as FindStep breaks ties (within a billionth of the unsplit cost).
    size_t best = 3;
    double least = INFINITY, tie = 1e-9 * cost(v);
    for (size_t at = 3; at + 3 <= n; ++at) {
      double c = cost({v.begin(), v.begin() + static_cast<std::ptrdiff_t>(at)}) +
                 cost({v.begin() + static_cast<std::ptrdiff_t>(at), v.end()});
      if (c < least - tie) {
        least = c;
        best = at;
      }
    }
    EXPECT_EQ(FindStep(v).at, best) << "trial " << trial << ", n " << n;
  }
}

}  // namespace
}  // namespace dlb::report
