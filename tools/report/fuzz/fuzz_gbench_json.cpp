// libFuzzer entry: any bytes either parse into FileData or raise InputError; nothing else may
// escape (no crash, no other exception, no sanitizer report). Merging and the analyses run on
// what was accepted.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tools/report/analyses/compare.h"
#include "tools/report/analyses/gbench_compare.h"
#include "tools/report/analyses/report.h"
#include "tools/report/read/gbench_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  dlb::report::FileData in;
  try {
    in = dlb::report::ParseBenchmarkJson(text, "fuzz");
  } catch (const dlb::report::InputError&) {
    return 0;
  }
  auto runs = dlb::report::Merge({in});
  auto doc = dlb::report::FullReport(runs, {"fuzz"});
  auto diff = dlb::report::DifferenceReport(dlb::report::SortLikeComparePy(in.entries), in.entries);
  auto cmp = dlb::report::Compare(runs, runs, {});
  return doc.sections.empty() && diff.size() + cmp.rows.size() > size ? 1 : 0;
}
