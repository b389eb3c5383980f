// Change points over a whole history: several per series, each confirmed. A detector proposes
// where the level of a series of run medians moves (PELT with a penalty, the default, or E-Divisive
// with a permutation test); each proposal is then judged as compare judges two runs: the
// Mann-Whitney U test between the run medians of the segments on either side and a minimum
// relative change of their medians. A proposal that fails is dropped and its segments merged,
// until every change point left is confirmed. history check and the site both call this, so
// their change points are the same ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dlb::report {

enum class Detector { kPelt, kEDivisive };
Detector ParseDetector(const std::string& s);  // pelt|edivisive; throws std::invalid_argument
const char* DetectorName(Detector d);

struct ChangePointOptions {
  Detector detector = Detector::kPelt;
  int min_segment = 5;  // runs on each side of a change point at least
  // PELT: the penalty per change point, in multiples of log(n), on the Gaussian cost of the log
  // medians scaled by a robust noise estimate (MAD of successive differences).
  double penalty = 2.5;
  // E-Divisive: permutations of the significance test, its level, and the generator's seed (the
  // same series gives the same answer).
  int permutations = 199;
  double permutation_alpha = 0.01;
  uint64_t seed = 1;
  // Confirmation: the U test's p-value between neighbouring segments below alpha, and their
  // medians at least `threshold` apart (relative).
  double alpha = 0.0001;
  double threshold = 0.02;
};

struct ChangePoint {
  size_t at = 0;                 // index of the first value after the change
  size_t from = 0, to = 0;       // the segments: [from, at) before, [at, to) after
  double before = 0, after = 0;  // medians of the two segments
  double change = 0;             // RelativeChange(before, after): > 0 slower for a time
  double p = 1;                  // U test between the two segments' values
};

// The confirmed change points of `v` (finite values, oldest first), in order.
std::vector<ChangePoint> FindChangePoints(const std::vector<double>& v,
                                          const ChangePointOptions& options = {});

// The detector's proposals before confirmation (for measuring the detectors themselves).
std::vector<size_t> ProposeChangePoints(const std::vector<double>& v,
                                        const ChangePointOptions& options);

}  // namespace dlb::report
