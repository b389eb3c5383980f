// The outcome of checking an op's result, shared by the harness's float64 comparisons
// (fixtures/case/verify.h) and by ops that check themselves (an optional `Verdict Verify()` member:
// a training step's loss and gradients, decoded pixels' PSNR). Its fields are written to the JSON
// (fixtures/schema/schema.h), not only the sentence in `detail`.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace dlb {

// How far a result can be trusted, as CUTLASS's profiler keeps one per result.
enum class Disposition {
  kVerified,     // checked against an independent reference, within tolerance
  kNotVerified,  // not checked (--dlb_verify=off, or no reference for the op)
  kMistrusted,   // the check passed but was not conclusive, or the result is implausible
};

struct Verdict {
  bool ok = false;  // false: the case fails with "verification failed: <detail>" and gets no time
  Disposition disposition = Disposition::kNotVerified;
  double error = 0;      // the measured error, in `metric`
  double tolerance = 0;  // the largest error accepted
  std::string metric;    // "rel_l2" for outputs against a float64 reference, "psnr_db", ...
  double zero_fraction = 0;
  size_t checked = 0;  // positions compared
  size_t of = 0;       // positions in the output
  std::string detail;  // "rel-L2 3.1e-06 <= 1e-05 at 4096 of 67108864 positions"

  static Verdict NotVerified(std::string why) {
    Verdict v;
    v.ok = true;
    v.detail = std::move(why);
    return v;
  }
};

}  // namespace dlb
