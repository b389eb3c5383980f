// Small Google Benchmark JSON documents for the report's analysis tests: cases by name, time and
// counters (three repetitions each unless said, 0.1% apart), optionally with dlbench's network
// field and a GPU name in the context.
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
  // More members of the "dlbench" object, as JSON text ("\"roofline\": {...}"); empty: none.
  std::string result_json;
  double spread = 0.001;  // the repetitions' relative step
  int reps = 3;
  std::string label;  // empty: none written
};

// `context_json`: more members of the context, as JSON text.
inline std::string CasesJson(const std::vector<Case>& cases, const std::string& gpu_name = "",
                             const std::string& context_json = "") {
  std::string b;
  for (const Case& c : cases)
    for (int rep = 0; rep < c.reps; ++rep) {
      if (!b.empty()) b += ",";
      b += R"({"name": ")" + c.name + R"(/manual_time", "run_type": "iteration", "real_time": )" +
           std::to_string(c.us * (1 + c.spread * rep)) + R"(, "time_unit": "us")";
      for (const auto& [k, v] : c.counters) b += ", \"" + k + "\": " + std::to_string(v);
      if (!c.label.empty()) b += R"(, "label": ")" + c.label + "\"";
      if (!c.network.empty() || !c.result_json.empty()) {
        std::string members;
        if (!c.network.empty()) members = R"("network": ")" + c.network + R"(", "workload": "x")";
        if (!c.result_json.empty()) members += (members.empty() ? "" : ", ") + c.result_json;
        b += R"(, "dlbench": {)" + members + "}";
      }
      b += "}";
    }
  std::string ctx = R"({"host_name": "test")" +
                    (gpu_name.empty() ? "" : R"(, "gpu_name": ")" + gpu_name + "\"") +
                    (context_json.empty() ? "" : ", " + context_json) + "}";
  return R"({"context": )" + ctx + R"(, "benchmarks": [)" + b + "]}";
}

inline MergedRuns CasesRuns(const std::vector<Case>& cases, const std::string& gpu_name = "",
                            const std::string& file = "cases.json") {
  return Merge({ParseBenchmarkJson(CasesJson(cases, gpu_name), file)});
}

}  // namespace dlb::report::testing
