// Reading Google Benchmark JSON (versions 1.7 to 1.9, ours and anyone's) and merging several files
// into one result per benchmark. Everything is converted to nanoseconds on the way in.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tools/report/read/entry.h"

namespace dlb::report {

// Parses JSON text; `path` only names the input in errors. Throws InputError.
FileData ParseBenchmarkJson(std::string_view text, const std::string& path);
// Reads and parses a file ("-" is stdin), plain or gzip-compressed (ReadFileText). Throws
// InputError.
FileData ReadBenchmarkFile(const std::string& path);
// Reads several files, two at a time (the machine has two cores); results in argument order.
std::vector<FileData> ReadBenchmarkFiles(const std::vector<std::string>& paths);

// One benchmark after merging every entry with its run_name across files.
struct Bench {
  // run_name, and where the case was measured under several setups (analyses/setup.h) the setup
  // key that tells them apart (NameWithSetup): each setup is a benchmark of its own.
  std::string name;
  std::string run_name;             // as the files wrote it
  std::string setup;                // "cudnn 9.14.0": what sets this setup apart; "" for one setup
  std::optional<BenchName> parsed;  // when the name follows dlbench's scheme
  std::string family;               // parsed family, else the first path segment, else "other"
  std::vector<double> real_ns;      // iteration runs (repetitions), pooled over files
  std::vector<double> cpu_ns;
  std::map<std::string, std::vector<double>, std::less<>> counters;  // per repetition
  std::map<std::string, double, std::less<>> aggregates;  // aggregate_name -> real_ns (or fraction)
  std::map<std::string, double, std::less<>> aggregate_counters;  // of the median/mean aggregate
  std::string label;
  Status status = Status::kMeasured;
  std::string message;
  std::vector<std::string> files;  // where it came from
  std::string network, workload;   // dlbench's result fields; empty when not written
  Verification verification;
  std::optional<Roofline> roofline;    // the last entry's that has one
  std::optional<KernelTable> kernels;  // the last entry's that has one
  std::string ignored;                 // why a malformed roofline or kernels object was left out
  std::string time_unit;               // of the first measured entry, as written

  bool measured() const { return status == Status::kMeasured && (!real_ns.empty() || HasCenter()); }
  bool HasCenter() const;
  // Median over repetitions; else the median aggregate; else the mean aggregate.
  double MedianNs() const;
  // Coefficient of variation (fraction) over repetitions, else from the aggregates; NaN if unknown.
  double Cv() const;
  // Median of a counter over repetitions, else the aggregate's value; NaN when absent.
  double Counter(std::string_view name) const;
  std::vector<std::string> CounterNames() const;
  size_t Repetitions() const { return real_ns.size(); }
  // The repetitions behind the figures: the runs' own, else what an aggregate-only file's
  // aggregates were computed over (their "repetitions"), else 0.
  size_t RepetitionsBehind() const {
    return real_ns.empty() ? aggregate_repetitions : real_ns.size();
  }
  size_t aggregate_repetitions = 0;
};

struct MergedRuns {
  std::vector<Bench> benches;                  // in first-seen order
  std::map<std::string, std::string> context;  // of the first file; later files fill gaps
  // Each file's own context, by its path (Bench::files): what a case was measured against.
  std::map<std::string, std::map<std::string, std::string>> file_contexts;
  // The cases measured under more than one setup: run_name -> each setup's text, in first-seen
  // order; and every what that set two setups of a case apart ("cudnn", "--dlb_gemm_fp8_accum").
  std::map<std::string, std::vector<std::string>> split_setups;
  std::vector<std::string> setup_whats;
};

// Files of several binaries merged into one run keep one context, whose command line is one
// binary's. So that a case's repro runs its own binary with its own flags, Merge also keeps, for
// each family of dlbench's names, the command line and executable of the first file holding one
// of its cases, under these prefixes + the family ("dlbench_command@conv").
inline constexpr std::string_view kFamilyCommandKey = "dlbench_command@";
inline constexpr std::string_view kFamilyExecutableKey = "executable@";

// Merge rule (also in the README of the tool):
//  - entries are grouped by run_name and setup across all files: files whose setups differ
//    (SetupDifferences) hold different benchmarks of one name, each named by its setup
//    (NameWithSetup), never one distribution;
//  - iteration entries are pooled as repetitions, in file order; so is an aggregate that names no
//    statistic (compare.py compares it as a run of its name);
//  - aggregate entries are kept only as a fallback: when a benchmark has no iteration entries
//    (--benchmark_report_aggregates_only) the last file's aggregates win;
//  - a measured entry beats a skipped or failed one; among skipped/failed, the last message wins;
//  - label, network, workload, verification, roofline and kernels: the last entry that has one
//    wins.
MergedRuns Merge(const std::vector<FileData>& files);

// A context value a file could not give ("", "not measured (...)", "not loaded", "not reported"): a
// gap, not a value (the merged context fills it from a later file; mixed inputs do not count it).
bool IsContextGap(const std::string& value);

// A context field as text (FileData::context, MergedRuns::context); empty when it is not there.
std::string ContextValue(const std::map<std::string, std::string>& context, std::string_view key);

std::string FamilyOf(const std::string& name, const std::optional<BenchName>& parsed);

}  // namespace dlb::report
