// Reading Google Benchmark JSON (versions 1.7 to 1.9, ours and anyone's) and merging several files
// into one result per benchmark. Everything is converted to nanoseconds on the way in.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures/naming.h"

namespace dlb::report {

// Bad input: printed as "dlbench-report: <file>:<where>: <what>", exit 1.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string where, std::string what)
      : std::runtime_error(file + (where.empty() ? "" : ":" + where) + ": " + what),
        file_(std::move(file)),
        where_(std::move(where)),
        what_(std::move(what)) {}
  const std::string& file() const { return file_; }
  const std::string& where() const { return where_; }

 private:
  std::string file_, where_, what_;
};

enum class Status { kMeasured, kUnsupported, kFailed };
const char* StatusName(Status s);

// One object of the "benchmarks" array.
struct Entry {
  std::string name;      // as written, e.g. "BM_x/8_median"
  std::string run_name;  // without the aggregate suffix; name when absent (old JSON)
  bool aggregate = false;
  std::string aggregate_name;  // mean, median, stddev, cv, min, max, or a user statistic
  bool percentage = false;     // aggregate_unit "percentage" (cv): real_time is a fraction
  double real_ns = 0, cpu_ns = 0;
  double iterations = 0;
  std::vector<std::pair<std::string, double>> counters;  // user counters, in file order
  std::string label;
  Status status = Status::kMeasured;
  std::string message;  // error_message / skip_message
};

struct FileData {
  std::string path;
  std::map<std::string, std::string> context;  // scalar context fields, as text
  std::vector<Entry> entries;
};

// Parses JSON text; `path` only names the input in errors. Throws InputError. Texts of at least
// `parallel_bytes` are lexed on several threads (same result; tests and the fuzzer lower it).
FileData ParseBenchmarkJson(std::string_view text, const std::string& path,
                            size_t parallel_bytes = size_t{1} << 20);
// Reads and parses a file ("-" is stdin). Throws InputError.
FileData ReadBenchmarkFile(const std::string& path);
// Reads several files, two at a time (the machine has two cores); results in argument order.
std::vector<FileData> ReadBenchmarkFiles(const std::vector<std::string>& paths);

// One benchmark after merging every entry with its run_name across files.
struct Bench {
  std::string name;                 // run_name
  std::optional<BenchName> parsed;  // when the name follows dlbench's scheme
  std::string family;               // parsed family, else the first path segment, else "other"
  std::vector<double> real_ns;      // iteration runs (repetitions), pooled over files
  std::vector<double> cpu_ns;
  std::map<std::string, std::vector<double>> counters;  // per repetition
  std::map<std::string, double> aggregates;             // aggregate_name -> real_ns (or fraction)
  std::map<std::string, double> aggregate_counters;     // counters of the median/mean aggregate
  std::string label;
  Status status = Status::kMeasured;
  std::string message;
  std::vector<std::string> files;  // where it came from

  bool measured() const { return status == Status::kMeasured && (!real_ns.empty() || HasCenter()); }
  bool HasCenter() const { return aggregates.count("median") || aggregates.count("mean"); }
  // Median over repetitions; else the median aggregate; else the mean aggregate.
  double MedianNs() const;
  // Coefficient of variation (fraction) over repetitions, else from the aggregates; NaN if unknown.
  double Cv() const;
  // Median of a counter over repetitions, else the aggregate's value; NaN when absent.
  double Counter(const std::string& name) const;
  std::vector<std::string> CounterNames() const;
  size_t Repetitions() const { return real_ns.size(); }
};

struct MergedRuns {
  std::vector<Bench> benches;                  // in first-seen order
  std::map<std::string, std::string> context;  // of the first file; later files fill gaps
};

// Merge rule (also in the README of the tool):
//  - entries are grouped by run_name across all files;
//  - iteration entries are pooled as repetitions, in file order;
//  - aggregate entries are kept only as a fallback: when a benchmark has no iteration entries
//    (--benchmark_report_aggregates_only) the last file's aggregates win;
//  - a measured entry beats a skipped or failed one; among skipped/failed, the last message wins.
MergedRuns Merge(const std::vector<FileData>& files);

std::string FamilyOf(const std::string& name, const std::optional<BenchName>& parsed);

}  // namespace dlb::report
