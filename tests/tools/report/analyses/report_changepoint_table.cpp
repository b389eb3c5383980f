// Not a test: prints the table of docs/ci-and-history.md — detection rate of planted steps and
// false alarms on flat histories, per noise class, for PELT and E-Divisive (each confirmed by the
// U test) and for the single-step window check history check ran before — and how long each
// detector takes per history. Run:
//   build/release/tests/tools/report_changepoint_table [--flat 1000] [--stepped 200] [--runs 100]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>

#include "tests/tools/report/analyses/report_synthetic.h"
#include "tools/report/render/document.h"

using namespace dlb::report;
using namespace dlb::report::synthetic;

int main(int argc, char** argv) {
  CLI::App app{"detection and false-alarm rates of the change-point detectors"};
  int flat = 1000, stepped = 200, runs = 100;
  uint64_t seed = 37;
  ChangePointOptions base;
  app.add_option("--flat", flat, "flat histories per noise class (1000)");
  app.add_option("--stepped", stepped, "histories per noise class and step size (200)");
  app.add_option("--runs", runs, "runs per history (100)");
  app.add_option("--seed", seed, "generator seed (37)");
  app.add_option("--penalty", base.penalty, "PELT penalty, x log(n)");
  app.add_option("--alpha", base.alpha, "U test level of the confirmation");
  app.add_option("--threshold", base.threshold, "confirmation: least relative change");
  app.add_option("--min-segment", base.min_segment, "runs on each side at least");
  std::string only;
  app.add_option("--only", only, "pelt|edivisive|window: one detector");
  CLI11_PARSE(app, argc, argv);

  struct Row {
    const char* name;
    const ChangePointOptions* options;
  };
  ChangePointOptions pelt = base, ediv = base;
  ediv.detector = Detector::kEDivisive;
  std::vector<Row> rows = {
      {"PELT + U test", &pelt}, {"E-Divisive + U test", &ediv}, {"window check (before)", nullptr}};
  const double steps[] = {0.02, 0.05, 0.10, 0.30};
  std::printf(
      "| noise | detector | 2%% step | 5%% step | 10%% step | 30%% step | flat histories with a "
      "false alarm | false alarms per 100 flat | ms per history |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (Noise noise : {Noise::kGpu, Noise::kCpu, Noise::kBimodal, Noise::kDrift}) {
    for (const Row& row : rows) {
      if (!only.empty() && only != (row.options ? DetectorName(row.options->detector) : "window"))
        continue;
      std::string line = std::string("| ") + NoiseName(noise) + " | " + row.name + " |";
      auto t0 = std::chrono::steady_clock::now();
      int histories = 0;
      for (double s : steps) {
        Rates r =
            Measure(noise, runs, s, stepped, seed + static_cast<uint64_t>(s * 1000), row.options);
        histories += r.histories;
        line += " " + FormatPercent(static_cast<double>(r.found) / r.histories, 1) + " |";
      }
      Rates f = Measure(noise, runs, 0, flat, seed, row.options);
      histories += f.histories;
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
          histories;
      line += " " + FormatPercent(static_cast<double>(f.with_false_alarm) / f.histories, 1) +
              " | " + FormatNumber(100.0 * f.false_alarms / f.histories, 3) + " | " +
              FormatNumber(ms, 2) + " |";
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
  }
  std::printf(
      "\n%d runs per history; %d flat and %d stepped histories per noise class and step size; "
      "seed %llu; PELT penalty %g x log(n), min segment %d, U test alpha %g, threshold %s.\n",
      runs, flat, stepped, static_cast<unsigned long long>(seed), base.penalty, base.min_segment,
      base.alpha, FormatPercent(base.threshold).c_str());
  return 0;
}
