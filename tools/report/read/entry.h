// What the reader makes of one Google Benchmark JSON file: its entries, with the status and
// verification dlbench writes into each, and the names the report groups by. The reader
// (gbench_json.h) and its parts build these; every analysis reads them.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures/schema/naming.h"

namespace dlb::report {

// Google Benchmark's own names, which fixtures/schema/schema.h leaves to it: its aggregates. The
// keys of dlbench benchmark names are the naming library's (dlb::key in fixtures/schema/naming.h).
namespace gbench {
inline constexpr std::string_view kMean = "mean";
inline constexpr std::string_view kMedian = "median";
inline constexpr std::string_view kStddev = "stddev";
inline constexpr std::string_view kCv = "cv";
}  // namespace gbench

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

// The "verification" object of dlbench's result fields (fixtures/schema/schema.h). Everything is
// optional: JSON written before it existed, or by anyone else, has none of it.
struct Verification {
  std::string disposition;  // schema::kVerified, kNotVerified, kMistrusted; empty: not known
  double error = std::numeric_limits<double>::quiet_NaN();  // in `metric`
  double tolerance = std::numeric_limits<double>::quiet_NaN();
  std::string metric;
  double checked = std::numeric_limits<double>::quiet_NaN();  // positions compared
  double of = std::numeric_limits<double>::quiet_NaN();       // positions in the output
  std::string detail;

  bool known() const { return !disposition.empty(); }
  // Known and anything but verified: not_verified, mistrusted (or a disposition this build does
  // not know, which it cannot vouch for either).
  bool doubtful() const;
  bool operator==(const Verification& o) const;
};

// The "roofline" object of dlbench's result fields: the roof the case was measured against.
struct Roofline {
  std::string bound;  // schema::kBoundCompute or kBoundMemory; empty: not said
  double roof_flop_per_s = std::numeric_limits<double>::quiet_NaN();
  double compute_peak_flop_per_s = std::numeric_limits<double>::quiet_NaN();
  double mem_bw_bytes_per_s = std::numeric_limits<double>::quiet_NaN();
  double bytes = std::numeric_limits<double>::quiet_NaN();  // of one Run()
  bool operator==(const Roofline& o) const;
};

// One row of the "kernels" object: what ran in the case's timed span under one name.
struct KernelRow {
  std::string name, kind;
  double launches_per_run = 0, total_s = 0, mean_s = 0, share = 0;
  bool operator==(const KernelRow& o) const;
};
// The "kernels" object (--dlb_kernels=on): every kernel, copy or primitive of the timed span.
struct KernelTable {
  std::string source;  // schema::kKernelsSourceCupti, kKernelsSourceOnednn
  double runs = 0;     // Run()s recorded: a row's time per Run() is total_s / runs
  double span_s = 0;
  std::vector<KernelRow> rows;
  bool operator==(const KernelTable& o) const;
};

// dlbench's object in an entry: where the result comes from and how it was checked.
struct ResultFields {
  std::string network, workload;  // the network comes from the workload file, never from a name
  Verification verification;
  std::optional<Roofline> roofline;
  std::optional<KernelTable> kernels;
  // Why a "roofline" or "kernels" object that is there was left out (malformed): one line each,
  // for the report to say; such an object never fails the file, the rest of the entry stands.
  std::string ignored;
  bool operator==(const ResultFields& o) const {
    return network == o.network && workload == o.workload && verification == o.verification &&
           roofline == o.roofline && kernels == o.kernels && ignored == o.ignored;
  }
};

// compare.py keeps run_type as written: absent, "iteration" or "aggregate".
enum class RunType { kAbsent, kIteration, kAggregate };

// One object of the "benchmarks" array.
struct Entry {
  std::string name;      // as written, e.g. "BM_x/8_median"
  std::string run_name;  // without the aggregate suffix; name when absent (old JSON)
  RunType run_type = RunType::kAbsent;
  bool aggregate = false;      // run_type "aggregate"
  std::string aggregate_name;  // mean, median, stddev, cv, min, max, a user statistic, or empty
  bool percentage = false;     // aggregate_unit "percentage" (cv): real_time is a fraction
  double real_ns = 0, cpu_ns = 0;
  double iterations = 0;
  // As written, for compare.py's view: it compares times in their own unit and only entries that
  // have time_unit, real_time and cpu_time (is_potentially_comparable_benchmark).
  std::string time_unit;
  double real_time = 0, cpu_time = 0;
  bool comparable = false;
  // Google Benchmark 1.6+; -1 when absent. compare.py sorts by them (sort_benchmark_results).
  double family_index = -1, per_family_instance_index = -1, repetition_index = -1;
  double repetitions = -1;  // the run's --benchmark_repetitions; -1 when absent
  std::vector<std::pair<std::string, double>> counters;  // user counters, in file order
  std::string label;
  Status status = Status::kMeasured;
  std::string message;  // error_message / skip_message
  // dlbench's result fields; null when the entry has none. The repetitions of a case share one.
  std::shared_ptr<const ResultFields> result;
  const ResultFields& fields() const;

  // An aggregate that names no statistic (Google Benchmark's test3_run0.json has them) is one
  // more measurement of its benchmark, as compare.py pools it with the runs of the same name.
  bool IsSample() const { return !aggregate || aggregate_name.empty(); }
};

struct FileData {
  std::string path;
  std::map<std::string, std::string> context;  // scalar context fields, as text
  std::vector<Entry> entries;
};

}  // namespace dlb::report
