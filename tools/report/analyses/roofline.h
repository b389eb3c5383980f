// The roofline: every case with an arithmetic intensity (counter flop_per_byte) and a roof
// (counter pct_roofline, or the "roofline" object of its dlbench fields) as a point under its
// device's roofs, and the cases furthest below their roof. report draws one chart per device;
// report and summary list the cases.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

struct RooflinePoint {
  std::string name, family, device, dt;  // device: cpu | gpu (the name's), dt: its dtype key
  std::string bound;                     // compute | memory; empty: not known
  double intensity = 0;                  // FLOP per byte
  double achieved = 0;                   // FLOP/s (counter flop_per_s)
  double roof = 0;                       // FLOP/s at this intensity
  double pct = 0;                        // achieved / roof, in % (counter pct_roofline)
  double compute_peak = 0, mem_bw = 0;   // NaN where the "roofline" object does not say
  double time_ns = 0;                    // median time of one Run()
  double count = 1;                      // how often the case occurs in its network (counter)
  // Time a network loses to this case: count x (time - the time at its roof).
  double lost_ns = 0;
  // A GPU case shorter than kLaunchBoundNs a Run(): launch latency, not the roof, limits it.
  bool launch_bound = false;
};
inline constexpr double kLaunchBoundNs = 20e3;

struct RooflineResult {
  std::vector<RooflinePoint> points;  // in the runs' order
  std::vector<std::string> devices;   // cpu, gpu: those with points, in first-seen order
};

RooflineResult ComputeRoofline(const MergedRuns& runs);
// The `n` points with the lowest pct (furthest below their roof), lowest first; ties by name.
std::vector<RooflinePoint> FurthestBelow(const RooflineResult& r, size_t n);
// The `n` points that lose the most time below their roof (lost_ns), most first; ties by name.
// `launch_bound`: among the launch-bound points, else among the others.
std::vector<RooflinePoint> MostTimeLost(const RooflineResult& r, size_t n, bool launch_bound);
// One log-log chart of a device: a series of points per family, a roof line per compute peak
// (per dtype; dtypes of one peak share it) where the points carry their peaks.
Chart RooflineChart(const RooflineResult& r, const std::string& device,
                    const std::string& device_name);

inline constexpr size_t kRooflineListed = 10;
// The section: the cases that lose the most time below their roof, the launch-bound ones in a
// list apart, and, with `charts`, a chart per device. Empty when no case has a roofline.
std::vector<Section> RooflineSections(const RooflineResult& r,
                                      const std::map<std::string, std::string>& context,
                                      bool charts, size_t listed = kRooflineListed);

}  // namespace dlb::report
