#include "tools/report/read/result_objects.h"

#include <cmath>
#include <string>

#include "fixtures/schema/schema.h"

namespace dlb::report {

bool Roofline::operator==(const Roofline& o) const {
  auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  return bound == o.bound && same(roof_flop_per_s, o.roof_flop_per_s) &&
         same(compute_peak_flop_per_s, o.compute_peak_flop_per_s) &&
         same(mem_bw_bytes_per_s, o.mem_bw_bytes_per_s) && same(bytes, o.bytes);
}

bool KernelRow::operator==(const KernelRow& o) const {
  return name == o.name && kind == o.kind && launches_per_run == o.launches_per_run &&
         total_s == o.total_s && mean_s == o.mean_s && share == o.share;
}

bool KernelTable::operator==(const KernelTable& o) const {
  return source == o.source && runs == o.runs && span_s == o.span_s && rows == o.rows;
}

namespace read {

namespace {

using json = nlohmann::json;

// A malformed object: what was wrong, where in it.
struct Bad {
  std::string what;
};

const char* TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::binary:
      return "binary";
    case json::value_t::discarded:
      return "nothing";
    default:
      return "a number";
  }
}

std::string Key(std::string_view k) { return std::string(k); }

// A number field: absent or null gives `fallback`; anything else but a finite number is bad.
double Number(const json& obj, std::string_view key, const std::string& where, double fallback,
              bool required = false) {
  auto it = obj.find(Key(key));
  if (it == obj.end() || it->is_null()) {
    if (required) throw Bad{where + Key(key) + " is missing"};
    return fallback;
  }
  if (!it->is_number()) throw Bad{where + Key(key) + " is " + TypeName(*it) + ", not a number"};
  double v = it->get<double>();
  if (!std::isfinite(v)) throw Bad{where + Key(key) + " is not finite"};
  return v;
}

std::string Text(const json& obj, std::string_view key, const std::string& where,
                 bool required = false) {
  auto it = obj.find(Key(key));
  if (it == obj.end() || it->is_null()) {
    if (required) throw Bad{where + Key(key) + " is missing"};
    return {};
  }
  if (!it->is_string()) throw Bad{where + Key(key) + " is " + TypeName(*it) + ", not a string"};
  return it->get<std::string>();
}

Roofline ReadRoofline(const json& v) {
  if (!v.is_object()) throw Bad{std::string("is ") + TypeName(v) + ", not an object"};
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  Roofline r;
  r.bound = Text(v, schema::kBound, "");
  if (!r.bound.empty() && r.bound != schema::kBoundCompute && r.bound != schema::kBoundMemory)
    throw Bad{"bound \"" + r.bound.substr(0, 40) + "\" is neither compute nor memory"};
  r.roof_flop_per_s = Number(v, schema::kRoofFlopPerS, "", kNaN);
  r.compute_peak_flop_per_s = Number(v, schema::kComputePeakFlopPerS, "", kNaN);
  r.mem_bw_bytes_per_s = Number(v, schema::kMemBwBytesPerS, "", kNaN);
  r.bytes = Number(v, schema::kBytes, "", kNaN);
  return r;
}

KernelTable ReadKernels(const json& v) {
  if (!v.is_object()) throw Bad{std::string("is ") + TypeName(v) + ", not an object"};
  KernelTable t;
  t.source = Text(v, schema::kKernelsSource, "");
  t.runs = Number(v, schema::kKernelsRuns, "", 0, true);
  if (!(t.runs > 0)) throw Bad{"runs is not positive"};
  t.span_s = Number(v, schema::kKernelsSpanS, "", 0);
  auto rows = v.find(Key(schema::kKernelsRows));
  if (rows == v.end()) throw Bad{"rows is missing"};
  if (!rows->is_array()) throw Bad{std::string("rows is ") + TypeName(*rows) + ", not an array"};
  for (size_t i = 0; i < rows->size(); ++i) {
    const json& row = (*rows)[i];
    const std::string where = "rows[" + std::to_string(i) + "].";
    if (!row.is_object())
      throw Bad{"rows[" + std::to_string(i) + "] is " + TypeName(row) + ", not an object"};
    KernelRow k;
    k.name = Text(row, schema::kKernelName, where, true);
    k.kind = Text(row, schema::kKernelKind, where);
    k.total_s = Number(row, schema::kKernelTotalS, where, 0, true);
    if (k.total_s < 0) throw Bad{where + "total_s is negative"};
    k.launches_per_run = Number(row, schema::kKernelLaunchesPerRun, where, 0);
    k.mean_s = Number(row, schema::kKernelMeanS, where, 0);
    k.share = Number(row, schema::kKernelShare, where, 0);
    t.rows.push_back(std::move(k));
  }
  return t;
}

}  // namespace

bool IsResultObject(std::string_view key) {
  return key == schema::kRoofline || key == schema::kKernels;
}

void ReadResultObject(std::string_view key, const json& value, bool truncated, ResultFields* out) {
  if (value.is_null()) return;  // null stands for "not known", as for an absent field
  try {
    if (truncated) throw Bad{"nested too deep"};
    if (key == schema::kRoofline)
      out->roofline = ReadRoofline(value);
    else
      out->kernels = ReadKernels(value);
  } catch (const Bad& bad) {
    if (!out->ignored.empty()) out->ignored += "; ";
    out->ignored += Key(key) + " left out: " + bad.what;
  }
}

}  // namespace read
}  // namespace dlb::report
