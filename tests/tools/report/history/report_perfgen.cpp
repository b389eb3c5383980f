// Inputs for timing dlbench-report (not a test; timings are never asserted):
//   report_perfgen json OUT.json BENCHES REPS SCALE SEED  Google Benchmark JSON, BENCHES x REPS
//   report_perfgen history DB RUNS BENCHES                 a history of RUNS runs of BENCHES each,
//                                                          the first 5 30% slower in the newest 2
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "fixtures/schema/schema.h"
#include "tools/report/history/history.h"
#include "tools/report/read/gbench_json.h"

namespace {

std::string Name(int i) {
  static const char* kFam[] = {"gemm", "conv", "dataload", "train"};
  return std::string(kFam[i % 4]) + "/" + (i % 2 ? "gpu/cudnn" : "cpu/onednn") + "/workload" +
         std::to_string(i / 8) + "/bs:" + std::to_string(1 << (i % 8)) + "/dt:f32/manual_time";
}

int Json(const char* path, int benches, int reps, double scale, unsigned seed) {
  std::FILE* f = std::fopen(path, "w");
  if (!f) return 1;
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(1.0, 0.01);
  std::fprintf(f,
               "{\n  \"context\": {\"date\": \"2026-11-22T00:00:00+00:00\", \"host_name\": "
               "\"perf\", \"num_cpus\": 2, \"library_build_type\": \"release\"},\n"
               "  \"benchmarks\": [\n");
  namespace schema = dlb::schema;
  auto q = [](std::string_view s) { return "\"" + std::string(s) + "\""; };
  // dlbench's result object, as the harness writes it: the reader's fast path must take it.
  const std::string verification =
      "{" + q(schema::kDisposition) + ": " + q(schema::kVerified) + ", " + q(schema::kError) +
      ": 3.1e-07, " + q(schema::kTolerance) + ": 1e-05, " + q(schema::kMetric) + ": \"rel_l2\", " +
      q(schema::kChecked) + ": 4096, " + q(schema::kOf) + ": 1048576, " + q(schema::kDetail) +
      ": \"rel_l2 3.1e-07 <= 1e-05 at 4096 of 1048576 positions\"}";
  bool first = true;
  for (int i = 0; i < benches; ++i) {
    std::string n = Name(i);
    std::string result = "{" + q(schema::kNetwork) + ": \"net" + std::to_string(i % 7) + "\", " +
                         q(schema::kWorkload) + ": \"workload" + std::to_string(i / 8) + "\", " +
                         q(schema::kVerification) + ": " + verification + "}";
    double base = 1000.0 + 37.0 * i;
    for (int r = 0; r < reps; ++r) {
      double t = base * scale * noise(rng);
      std::fprintf(f,
                   "%s    {\n      \"name\": \"%s\",\n      \"family_index\": %d,\n"
                   "      \"per_family_instance_index\": 0,\n      \"run_name\": \"%s\",\n"
                   "      \"run_type\": \"iteration\",\n      \"repetitions\": %d,\n"
                   "      \"repetition_index\": %d,\n      \"threads\": 1,\n"
                   "      \"iterations\": 1000,\n      \"real_time\": %.17g,\n"
                   "      \"cpu_time\": %.17g,\n      \"time_unit\": \"ns\",\n"
                   "      \"flop_per_s\": %.17g,\n      \"items_per_s\": %.17g,\n"
                   "      \"pct_peak\": %.6g,\n      \"label\": \"algo:3 verified:l2\",\n"
                   "      %s: %s\n    }",
                   first ? "" : ",\n", n.c_str(), i, n.c_str(), reps, r, t, t * 1.01, 1e15 / t,
                   1e9 / t, 100.0 * 1e3 / t, q(schema::kResult).c_str(), result.c_str());
      first = false;
    }
  }
  std::fprintf(f, "\n  ]\n}\n");
  return std::fclose(f) == 0 ? 0 : 1;
}

int History(const char* db, int runs, int benches) {
  std::mt19937 rng(1);
  std::normal_distribution<double> noise(1.0, 0.01);
  for (int r = 0; r < runs; ++r) {
    dlb::report::FileData f;
    f.path = "perf";
    f.context[std::string(dlb::schema::kCtxHostName)] = "perf";
    for (int i = 0; i < benches; ++i) {
      dlb::report::Entry e;
      e.name = e.run_name = Name(i);
      e.real_ns = e.cpu_ns = (1000.0 + i) * noise(rng) * (r >= runs - 2 && i < 5 ? 1.3 : 1.0);
      e.counters.emplace_back(dlb::schema::kFlopPerS, 1e12 / e.real_ns);
      f.entries.push_back(std::move(e));
    }
    char date[32];
    std::snprintf(date, sizeof date, "2026-%02d-%02dT%02d:00:00Z", 1 + r / 600, 1 + (r / 24) % 25,
                  r % 24);
    dlb::report::HistoryAdd(db, {f}, {"c" + std::to_string(r), "main", "", date});
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "json" && argc == 7)
    return Json(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), std::atof(argv[5]),
                static_cast<unsigned>(std::atoi(argv[6])));
  if (mode == "history" && argc == 5)
    return History(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  std::fprintf(
      stderr, "usage: report_perfgen json OUT BENCHES REPS SCALE SEED | history DB RUNS BENCHES\n");
  return 1;
}
