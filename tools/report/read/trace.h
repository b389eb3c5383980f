// The device monitor's trace (a benchmark binary's --dlb_monitor_trace=FILE, the columns of
// fixtures/schema/schema.h), read and checked line by line; analyses/timeline.h draws it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dlb::report {

// One sample; NaN where the trace's cell is empty (the driver did not report it).
struct TraceSample {
  std::string case_name;
  double t_s = 0;
  double sm_clock_mhz = 0, mem_clock_mhz = 0, power_w = 0, temp_c = 0, gpu_util_pct = 0;
  bool has_reasons = false;
  uint64_t reasons = 0;
};

struct Trace {
  std::string path;
  std::vector<TraceSample> samples;  // in file order
};

// Parses trace CSV; `path` names the input in errors. Throws InputError naming the line.
Trace ParseTrace(std::string_view text, const std::string& path);
// Reads and parses a file, plain or gzip-compressed (ReadFileText). Throws InputError.
Trace ReadTrace(const std::string& path);

}  // namespace dlb::report
