// Per-kernel tables (--dlb_kernels=on): what a library ran inside a case's timed span, one row per
// kernel (GPU) or primitive (CPU) name. A backend records (kernels/cuda/kernel_trace.h: CUPTI;
// kernels/onednn/verbose_trace.h: oneDNN's verbose mode) and registers its recorder here; the
// harness starts and stops the recorder of the case's device around the timed span without
// naming a backend, and turns what it collected into a table (MakeTable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dlb::trace {

// Kinds of rows.
inline constexpr const char* kKindKernel = "kernel";
inline constexpr const char* kKindMemcpy = "memcpy";
inline constexpr const char* kKindMemset = "memset";
inline constexpr const char* kKindPrimitive = "primitive";
// The row that sums up every row past the table's first kMaxRows.
inline constexpr const char* kKindOther = "other";
inline constexpr const char* kOtherName = "(other)";
// A table keeps the kMaxRows largest rows by total time, then one kOtherName row: a ResNet step
// runs a few hundred kernel names, and a regression lives in the large ones.
inline constexpr size_t kMaxRows = 30;

// Where the rows come from.
enum class Source { kCupti, kOnednnVerbose };

// One name's calls over a recorded span. exposed_s: the part of their time that no activity
// which started earlier covered (ExposedTimes); negative where the recorder cannot tell (oneDNN's
// verbose mode has durations, not times).
struct Activity {
  std::string name, kind;
  int64_t count = 0;
  double total_s = 0;
  double exposed_s = -1;
};

// A recorded activity's start and end, in one clock's ticks.
struct Interval {
  uint64_t start = 0, end = 0;
};
// Each interval's exposed time, in the order given: what it adds to the union of the intervals
// that started before it (sorted by start, then end), that is its end past the latest end before
// it, or its whole length after a gap, and 0 for one that ends before that. The exposed times sum
// to the union's length, so where kernels overlap (a programmatic dependent launch starts while
// the kernel before it ends) each moment of a busy GPU counts once, for the kernel that extends the
// span: what a kernel's time costs the step, where a total counts overlapped time twice. An
// interval that ends before it starts counts nothing.
std::vector<uint64_t> ExposedTimes(const std::vector<Interval>& intervals);

// Sums activities by (kind, name); an exposed time where every added one has one.
class Tally {
 public:
  void Add(const std::string& name, const std::string& kind, double seconds, int64_t count = 1,
           double exposed_s = -1);
  void Merge(const std::vector<Activity>& acts);
  std::vector<Activity> Activities() const;
  bool empty() const { return by_key_.empty(); }

 private:
  std::map<std::pair<std::string, std::string>, Activity> by_key_;
};

struct Row {
  std::string name, kind;
  double launches_per_run = 0;  // calls / the Run()s of the span
  double total_s = 0, mean_s = 0;
  double share = 0;       // total_s / span_s
  double exposed_s = -1;  // Activity's: negative where not known
};

struct Table {
  Source source = Source::kCupti;
  int64_t runs = 0;   // Run()s in the recorded span
  double span_s = 0;  // wall seconds of the recorded span
  std::vector<Row> rows;
};

// The table of a span: rows sorted by total time, largest first (ties by name), the first
// max_rows kept and the rest summed into one kOtherName row.
Table MakeTable(Source source, const std::vector<Activity>& acts, int64_t runs, double span_s,
                size_t max_rows = kMaxRows);

// A mangled C++ name demangled ("_Z..."); anything else as it is.
std::string Demangle(const std::string& name);
// A kernel name as a table shows it: demangled, without the return type and the parameter list,
// template arguments without spaces, and, where the name is longer than max_len, its template
// arguments cut to those that fit, then "...":
//   "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<...>(...)"
//     -> "at::native::elementwise_kernel<128,4,...>".
// A name without template arguments (a C name: "sm90_xmma_gemm_bf16bf16_...") stays whole. A
// mangled name the demangler cannot read becomes its leading names and a hash of it:
// "cutlass__5x_cudnn::Kernel<...> #1a2b3c4d".
std::string ShortenKernelName(const std::string& name, size_t max_len = 100);

// A backend's recorder: collects what its library runs between Start() and Stop(). Start() throws
// dlb::Error when it cannot record; Stop() returns the span's activities, by name.
class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual Source source() const = 0;
  virtual void Start() = 0;
  virtual std::vector<Activity> Stop() = 0;
};

// The recorder of GPU cases or of CPU cases (nullptr: none in this build or process).
void SetRecorder(bool gpu, std::shared_ptr<Recorder> recorder);
Recorder* RecorderFor(bool gpu);

}  // namespace dlb::trace
