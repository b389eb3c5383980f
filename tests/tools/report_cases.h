// Small Google Benchmark JSON documents for the report's analysis tests: cases by name, time and
// counters (three repetitions each, 0.1% apart), optionally with dlbench's network field and a
// GPU name in the context.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tools/report/read/gbench_json.h"

namespace dlb::report::testing {

struct Case {
  std::string name;
  double us;
  std::vector<std::pair<std::string, double>> counters;
  std::string network;  // dlbench's result field; empty: none written
};

inline std::string CasesJson(const std::vector<Case>& cases, const std::string& gpu_name = "") {
  std::string b;
  for (const Case& c : cases)
    for (int rep = 0; rep < 3; ++rep) {
      if (!b.empty()) b += ",";
      b += R"({"name": ")" + c.name + R"(/manual_time", "run_type": "iteration", "real_time": )" +
           std::to_string(c.us * (1 + 0.001 * rep)) + R"(, "time_unit": "us")";
      for (const auto& [k, v] : c.counters) b += ", \"" + k + "\": " + std::to_string(v);
      if (!c.network.empty())
        b += R"(, "dlbench": {"network": ")" + c.network + R"(", "workload": "x"})";
      b += "}";
    }
  std::string ctx = R"({"host_name": "test")" +
                    (gpu_name.empty() ? "" : R"(, "gpu_name": ")" + gpu_name + "\"") + "}";
  return R"({"context": )" + ctx + R"(, "benchmarks": [)" + b + "]}";
}

inline MergedRuns CasesRuns(const std::vector<Case>& cases, const std::string& gpu_name = "",
                            const std::string& file = "cases.json") {
  return Merge({ParseBenchmarkJson(CasesJson(cases, gpu_name), file)});
}

}  // namespace dlb::report::testing
