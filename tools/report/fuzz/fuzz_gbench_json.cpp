// libFuzzer entry: any bytes either parse into FileData or raise InputError; nothing else may
// escape (no crash, no other exception, no sanitizer report). Merging and the summary run too, so
// whatever the reader accepts is also safe for the analyses.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tools/report/analyses.h"
#include "tools/report/gbench_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto f = dlb::report::ParseBenchmarkJson(text, "fuzz");
    auto runs = dlb::report::Merge({f});
    (void)dlb::report::Summary(runs, {"fuzz"});
    (void)dlb::report::SweepCurves(runs);
    (void)dlb::report::SpeedupRows(runs);
  } catch (const dlb::report::InputError&) {
  }
  return 0;
}
