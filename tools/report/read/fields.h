// Inside the reader: the fields of a "benchmarks" element and what one element collects before it
// becomes an Entry.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tools/report/read/entry.h"

namespace dlb::report::read {

// The fields of one "benchmarks" element that are not user counters.
enum class Field {
  kCounter,
  kIgnoredNumber,
  kName,
  kRunName,
  kRunType,
  kAggregateName,
  kAggregateUnit,
  kTimeUnit,
  kErrorOccurred,
  kErrorMessage,
  kSkipped,
  kSkipMessage,
  kLabel,
  kBigO,
  kRealTime,
  kCpuTime,
  kIterations,
  kComplexity,
  kFamilyIndex,
  kInstanceIndex,
  kRepetitionIndex,
  kRepetitions,
  kResult,  // dlbench's object (fixtures/schema/schema.h)
};

Field Classify(const std::string& key);
// Google Benchmark's fields whose value is a string.
bool IsStringField(Field f);

struct RawEntry {
  Entry e;
  bool has_name = false, has_real = false, has_cpu = false, has_unit = false;
  bool error_occurred = false, skipped = false, complexity = false;
  std::string run_type, aggregate_unit, error_message, skip_message;
  bool has_run_name = false;
  bool has_result = false;
  ResultFields result;
};

// The element at `where` of `path` as an Entry, appended to `out` (complexity fits are left out);
// equal result fields share `last_result`. Throws InputError for a missing or bad field.
void BuildEntry(RawEntry* raw, const std::string& path, const std::string& where,
                std::shared_ptr<const ResultFields>* last_result, std::vector<Entry>* out);

}  // namespace dlb::report::read
