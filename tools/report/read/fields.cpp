#include "tools/report/read/fields.h"

#include <cmath>
#include <unordered_map>

#include "fixtures/schema/schema.h"

namespace dlb::report::read {

namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& where, const std::string& what) {
  throw InputError(path, where, what);
}

}  // namespace

Field Classify(const std::string& key) {
  static const std::unordered_map<std::string, Field> kFields = {
      {"name", Field::kName},
      {"run_name", Field::kRunName},
      {"run_type", Field::kRunType},
      {"aggregate_name", Field::kAggregateName},
      {"aggregate_unit", Field::kAggregateUnit},
      {"time_unit", Field::kTimeUnit},
      {"error_occurred", Field::kErrorOccurred},
      {"error_message", Field::kErrorMessage},
      {"skipped", Field::kSkipped},
      {"skip_message", Field::kSkipMessage},
      {"label", Field::kLabel},
      {"big_o", Field::kBigO},
      {"real_time", Field::kRealTime},
      {"cpu_time", Field::kCpuTime},
      {"iterations", Field::kIterations},
      {"cpu_coefficient", Field::kComplexity},
      {"real_coefficient", Field::kComplexity},
      {"rms", Field::kComplexity},
      {"family_index", Field::kFamilyIndex},
      {"per_family_instance_index", Field::kInstanceIndex},
      {"repetitions", Field::kRepetitions},
      {"repetition_index", Field::kRepetitionIndex},
      {"threads", Field::kIgnoredNumber},
      {"allocs_per_iter", Field::kIgnoredNumber},
      {"max_bytes_used", Field::kIgnoredNumber},
      {"total_allocated_bytes", Field::kIgnoredNumber},
      {"net_heap_growth", Field::kIgnoredNumber},
      {"memory_iterations", Field::kIgnoredNumber},
      {std::string(schema::kResult), Field::kResult},
  };
  auto it = kFields.find(key);
  return it == kFields.end() ? Field::kCounter : it->second;
}

bool IsStringField(Field f) {
  switch (f) {
    case Field::kName:
    case Field::kRunName:
    case Field::kRunType:
    case Field::kAggregateName:
    case Field::kAggregateUnit:
    case Field::kTimeUnit:
    case Field::kErrorMessage:
    case Field::kSkipMessage:
    case Field::kLabel:
    case Field::kBigO:
      return true;
    default:
      return false;
  }
}

void BuildEntry(RawEntry* raw_entry, const std::string& path, const std::string& where,
                std::shared_ptr<const ResultFields>* last_result, std::vector<Entry>* out) {
  RawEntry& raw = *raw_entry;
  Entry& e = raw.e;
  if (!raw.has_name) Fail(path, where, "missing \"name\"");
  if (raw.run_type.empty()) {
    e.run_type = RunType::kAbsent;
  } else if (raw.run_type == "iteration") {
    e.run_type = RunType::kIteration;
  } else if (raw.run_type == "aggregate") {
    e.run_type = RunType::kAggregate;
  } else {
    Fail(path, where + "/run_type", "unknown run_type '" + raw.run_type + "'");
  }
  e.aggregate = e.run_type == RunType::kAggregate;
  // Complexity fits (BigO, RMS) are not times of one run.
  if (raw.complexity || e.aggregate_name == "BigO" || e.aggregate_name == "RMS") return;
  if (!raw.has_run_name) {
    e.run_name = e.name;
    std::string suffix = "_" + e.aggregate_name;
    if (e.aggregate && !e.aggregate_name.empty() && e.name.size() > suffix.size() &&
        e.name.compare(e.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      e.run_name.resize(e.name.size() - suffix.size());
  }
  double scale = 0;  // 0: unknown unit
  if (raw.has_unit) {
    if (e.time_unit == "ns") {
      scale = 1;
    } else if (e.time_unit == "us") {
      scale = 1e3;
    } else if (e.time_unit == "ms") {
      scale = 1e6;
    } else if (e.time_unit == "s") {
      scale = 1e9;
    }
  }
  if (raw.has_result) {
    if (!*last_result || !(**last_result == raw.result))
      *last_result = std::make_shared<const ResultFields>(std::move(raw.result));
    e.result = *last_result;
  }
  e.real_time = e.real_ns;
  e.cpu_time = raw.has_cpu ? e.cpu_ns : 0;
  e.comparable = raw.has_unit && raw.has_real && raw.has_cpu && scale > 0;
  if (raw.error_occurred || raw.skipped) {
    e.message = raw.error_occurred ? raw.error_message : raw.skip_message;
    if (e.message.empty()) e.message = raw.error_message + raw.skip_message;
    // A case --dlb_budget dropped was not run, like one that cannot run here: neither failed.
    const bool not_run = e.message.rfind(schema::kStatusUnsupported, 0) == 0 ||
                         e.message.rfind(schema::kStatusDropped, 0) == 0;
    e.status = not_run ? Status::kUnsupported : Status::kFailed;
    e.real_ns = e.cpu_ns = 0;
    out->push_back(std::move(e));
    return;
  }
  if (!raw.has_real) Fail(path, where, "missing \"real_time\"");
  if (!raw.has_unit) Fail(path, where, "missing \"time_unit\"");
  // A run whose time is NaN or Infinity (as Google Benchmark writes it) measured nothing; an
  // aggregate keeps its value, as compare.py does.
  if (!e.aggregate && !std::isfinite(e.real_ns)) {
    e.message = "real_time " + std::string(std::isnan(e.real_ns) ? "NaN" : "Infinity") +
                " in the file: no time";
    e.status = Status::kFailed;
    e.real_ns = e.cpu_ns = 0;
    out->push_back(std::move(e));
    return;
  }
  e.percentage = raw.aggregate_unit == "percentage";
  if (!raw.aggregate_unit.empty() && raw.aggregate_unit != "time" && !e.percentage)
    Fail(path, where + "/aggregate_unit", "unknown aggregate_unit '" + raw.aggregate_unit + "'");
  if (!raw.has_cpu) e.cpu_ns = e.real_ns;
  if (scale == 0) Fail(path, where + "/time_unit", "unknown time unit '" + e.time_unit + "'");
  // Google Benchmark 1.7/1.8 write the cv aggregate as a fraction without aggregate_unit.
  if (e.aggregate && e.aggregate_name == gbench::kCv) e.percentage = true;
  if (!e.percentage) {
    e.real_ns *= scale;
    e.cpu_ns *= scale;
  }
  out->push_back(std::move(e));
}

}  // namespace dlb::report::read
