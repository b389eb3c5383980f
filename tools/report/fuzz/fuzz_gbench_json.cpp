// libFuzzer entry: any bytes either parse into FileData or raise InputError; nothing else may
// escape (no crash, no other exception, no sanitizer report). Differential: the parallel reader
// (structural scan + direct lexing of plain elements) must give exactly what the sequential
// nlohmann parse gives, or the same error. Merging and the analyses run on what was accepted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tools/report/analyses.h"
#include "tools/report/gbench_json.h"

namespace {

using dlb::report::FileData;

bool Same(const FileData& a, const FileData& b) {
  if (a.entries.size() != b.entries.size() || a.context != b.context) return false;
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const auto &x = a.entries[i], &y = b.entries[i];
    if (x.name != y.name || x.run_name != y.run_name || x.aggregate != y.aggregate ||
        x.aggregate_name != y.aggregate_name || x.percentage != y.percentage ||
        x.real_ns != y.real_ns || x.cpu_ns != y.cpu_ns || x.counters != y.counters ||
        x.label != y.label || x.status != y.status || x.message != y.message ||
        x.run_type != y.run_type || x.time_unit != y.time_unit || x.real_time != y.real_time ||
        x.cpu_time != y.cpu_time || x.comparable != y.comparable ||
        x.family_index != y.family_index ||
        x.per_family_instance_index != y.per_family_instance_index ||
        x.repetition_index != y.repetition_index || !(x.fields() == y.fields()))
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string seq_error, par_error;
  FileData seq, par;
  try {
    seq = dlb::report::ParseBenchmarkJson(text, "fuzz", SIZE_MAX);
  } catch (const dlb::report::InputError& e) {
    seq_error = e.what();
  }
  try {
    par = dlb::report::ParseBenchmarkJson(text, "fuzz", 0);
  } catch (const dlb::report::InputError& e) {
    par_error = e.what();
  }
  if (seq_error != par_error || (seq_error.empty() && !Same(seq, par))) std::abort();
  if (!seq_error.empty()) return 0;
  auto runs = dlb::report::Merge({seq});
  auto doc = dlb::report::FullReport(runs, {"fuzz"});
  auto diff =
      dlb::report::DifferenceReport(dlb::report::SortLikeComparePy(seq.entries), seq.entries);
  auto cmp = dlb::report::Compare(runs, runs, {});
  return doc.sections.empty() && diff.size() + cmp.rows.size() > size ? 1 : 0;
}
