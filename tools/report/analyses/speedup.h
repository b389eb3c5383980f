// speedup: CPU against GPU per workload (pairs by dlb::PairKey), summed per network.
#pragma once

#include <string>
#include <vector>

#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

struct SpeedupRow {
  std::string family, pair_key, workload, dt, bs, config;
  std::string network;                   // of the CPU result, else the GPU's; empty: none
  std::string cpu_backend, gpu_backend;  // "best" rows name the winners
  bool best = false;
  double cpu_ns = 0, gpu_ns = 0, speedup = 0, lo = 0, hi = 0;
  double count = 0;  // the layer's repeat count in its network (counter "count"); 0 if absent
  bool has_interval = false;
  bool doubtful = false;  // either side not verified or mistrusted
};
// The layers of one network at one dtype, batch size and config, each weighted by its repeat
// count (as benchdnn weighs a model's layers), fastest backend of each device.
struct NetworkRow {
  std::string family, network, dt, bs, config;
  int layers = 0;
  double cpu_ns = 0, gpu_ns = 0, speedup = 0;
  bool doubtful = false;  // a layer's result was not verified or was mistrusted
};
struct SpeedupResult {
  std::vector<SpeedupRow> rows;
  std::vector<NetworkRow> networks;
};
SpeedupResult ComputeSpeedup(const MergedRuns& runs);
std::vector<SpeedupRow> SpeedupRows(const MergedRuns& runs);
std::vector<Section> SpeedupSections(const SpeedupResult& speedup);

Document SpeedupDocument(const MergedRuns& runs, const std::vector<std::string>& inputs);

}  // namespace dlb::report
