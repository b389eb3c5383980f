#include "tools/report/gbench_json.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unordered_map>

#include "fixtures/schema/schema.h"
#include "tools/report/stats.h"

namespace dlb::report {

const char* StatusName(Status s) {
  switch (s) {
    case Status::kMeasured:
      return "measured";
    case Status::kUnsupported:
      return "unsupported";
    case Status::kFailed:
      return "failed";
  }
  return "?";
}

bool Verification::doubtful() const { return known() && disposition != schema::kVerified; }

bool Verification::operator==(const Verification& o) const {
  auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  return disposition == o.disposition && same(error, o.error) && same(tolerance, o.tolerance) &&
         metric == o.metric && same(checked, o.checked) && same(of, o.of) && detail == o.detail;
}

const ResultFields& Entry::fields() const {
  static const ResultFields kNone;
  return result ? *result : kNone;
}

namespace {

using json = nlohmann::json;

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
  kResult,  // dlbench's object (fixtures/schema/schema.h)
};

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
      {"repetitions", Field::kIgnoredNumber},
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

struct RawEntry {
  Entry e;
  bool has_name = false, has_real = false, has_cpu = false, has_unit = false;
  bool error_occurred = false, skipped = false, complexity = false;
  std::string run_type, aggregate_unit, error_message, skip_message;
  bool has_run_name = false;
  bool has_result = false;
  ResultFields result;
};

enum class Kind { kNull, kBoolean, kNumber, kString, kBinary };

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kNull:
      return "a null";
    case Kind::kBoolean:
      return "a boolean";
    case Kind::kNumber:
      return "a number";
    case Kind::kString:
      return "a string";
    case Kind::kBinary:
      return "binary";
  }
  return "?";
}

// Builds FileData straight from parser events: no DOM, so 100 MB of JSON reads in well under a
// second. Errors name the place as a JSON pointer; syntax errors as line:column.
class Handler {
 public:
  Handler(std::string_view text, const std::string& path, FileData* out)
      : text_(text), path_(path), out_(out) {}

  bool null() {
    if (InResult()) return ResultValue(Kind::kNull, nullptr, 0);
    return Scalar("null");
  }
  bool boolean(bool v) {
    if (InResult()) return ResultValue(Kind::kBoolean, nullptr, 0);
    if (InEntryField()) {
      Field f = Classify(key_);
      if (f == Field::kErrorOccurred) {
        raw_.error_occurred = v;
        return true;
      }
      if (f == Field::kSkipped) {
        raw_.skipped = v;
        return true;
      }
    }
    return Scalar("boolean");
  }
  bool number_integer(json::number_integer_t v) { return Number(static_cast<double>(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Number(static_cast<double>(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return Number(v); }
  bool string(std::string& v) {
    if (InResult()) return ResultValue(Kind::kString, &v, 0);
    if (InEntryField()) {
      Field f = Classify(key_);
      switch (f) {
        case Field::kName:
          raw_.e.name = std::move(v);
          raw_.has_name = true;
          return true;
        case Field::kRunName:
          raw_.e.run_name = std::move(v);
          raw_.has_run_name = true;
          return true;
        case Field::kRunType:
          raw_.run_type = std::move(v);
          return true;
        case Field::kAggregateName:
          raw_.e.aggregate_name = std::move(v);
          return true;
        case Field::kAggregateUnit:
          raw_.aggregate_unit = std::move(v);
          return true;
        case Field::kTimeUnit:
          raw_.e.time_unit = std::move(v);
          raw_.has_unit = true;
          return true;
        case Field::kErrorMessage:
          raw_.error_message = std::move(v);
          return true;
        case Field::kSkipMessage:
          raw_.skip_message = std::move(v);
          return true;
        case Field::kLabel:
          raw_.e.label = std::move(v);
          return true;
        case Field::kBigO:
          raw_.complexity = true;
          return true;
        case Field::kErrorOccurred:
        case Field::kSkipped:
          Fail(EntryPointer(), "expected true or false, got a string");
        case Field::kResult:
          Fail(EntryPointer(), "expected an object, got a string");
        case Field::kCounter:
          return true;  // string-valued user fields carry no number: ignore them
        default:
          Fail(EntryPointer(), "expected a number, got a string");
      }
    }
    if (depth_ == 2 && section_ == Section::kContext) {
      out_->context[key_] = std::move(v);
      return true;
    }
    return Scalar("string");
  }
  bool binary(json::binary_t&) {
    if (InResult()) return ResultValue(Kind::kBinary, nullptr, 0);
    return Scalar("binary");
  }

  bool start_object(std::size_t) {
    if (depth_ == 0) {
      depth_ = 1;
      return true;
    }
    if (depth_ == 1) {
      if (key_ == "benchmarks") Fail("/benchmarks", "expected an array, got an object");
      section_ = key_ == "context" ? Section::kContext : Section::kOther;
    } else if (depth_ == 2 && section_ == Section::kBenchmarks) {
      raw_ = RawEntry();
      key_.clear();
      result_level_ = 0;
    } else if (InEntryField() && Classify(key_) == Field::kResult) {
      result_level_ = 1;
      result_key_.clear();
      raw_.has_result = true;
    } else if (InEntryField()) {
      NestedInEntry("an object");
    } else if (InResult()) {
      NestedInResult("an object");
    }
    ++depth_;
    return true;
  }
  bool end_object() {
    --depth_;
    if (result_level_ == 2 && depth_ == 4) result_level_ = 1;
    if (result_level_ == 1 && depth_ == 3) result_level_ = 0;
    if (depth_ == 2 && section_ == Section::kBenchmarks) FinishEntry();
    if (depth_ == 1) section_ = Section::kNone;
    return true;
  }
  bool start_array(std::size_t) {
    if (depth_ == 0) Fail("/", "the top level is an array, expected an object");
    if (depth_ == 1) {
      if (key_ == "context") Fail("/context", "expected an object, got an array");
      section_ = key_ == "benchmarks" ? Section::kBenchmarks : Section::kOther;
      if (section_ == Section::kBenchmarks) saw_benchmarks_ = true;
    } else if (depth_ == 2 && section_ == Section::kBenchmarks) {
      Fail("/benchmarks/" + std::to_string(index_), "expected an object, got an array");
    } else if (InEntryField()) {
      if (Classify(key_) == Field::kResult)
        Fail(EntryPointer(), "expected an object, got an array");
      NestedInEntry("an array");
    } else if (InResult()) {
      NestedInResult("an array");
    }
    ++depth_;
    return true;
  }
  bool end_array() {
    --depth_;
    if (depth_ == 1) section_ = Section::kNone;
    return true;
  }
  bool key(std::string& k) {
    if (depth_ == 1 || depth_ == 2 || depth_ == 3) {
      key_ = std::move(k);
    } else if (result_level_ == 1 && depth_ == 4) {
      result_key_ = std::move(k);
    } else if (result_level_ == 2 && depth_ == 5) {
      verification_key_ = std::move(k);
    }
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) {
    std::string what = ex.what();
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 2:
    // syntax error while parsing value - invalid literal; last read: 'N'". Keep the reason.
    auto pos = what.find("error while parsing");
    std::string reason = pos == std::string::npos ? what : what.substr(pos);
    if (auto lr = reason.find("; last read"); lr != std::string::npos) reason.resize(lr);
    if (what.find("number overflow") != std::string::npos) {
      // A literal beyond double's range (1e999): the place is known exactly.
      throw InputError(path_, InEntryField() ? EntryPointer() : LineCol(position - 1),
                       "not a finite number (" + last_token.substr(0, 40) + ")");
    }
    // NaN, Infinity and -Infinity are what Google Benchmark writes for non-finite values, and not
    // JSON: name them.
    size_t end = std::min(position > 0 ? position - 1 : 0, text_.size());
    size_t start = end;
    while (start > 0 && std::isalpha(static_cast<unsigned char>(text_[start - 1]))) --start;
    std::string_view word = text_.substr(start, 8);
    if (word.rfind("NaN", 0) == 0 || word.rfind("Infinity", 0) == 0 || word.rfind("Inf", 0) == 0 ||
        word.rfind("nan", 0) == 0 || word.rfind("inf", 0) == 0)
      reason = "NaN or Infinity is not a JSON number (" + reason + ")";
    else if (position >= text_.size())
      reason = "truncated JSON (" + reason + ")";
    throw InputError(path_, LineCol(position > 0 ? position - 1 : 0), "syntax " + reason);
  }

  // For parsing elements of the benchmarks array one by one: as if inside "benchmarks": [ ... ].
  void EnterArray() {
    depth_ = 2;
    section_ = Section::kBenchmarks;
    saw_benchmarks_ = true;
    key_.clear();
    result_level_ = 0;
  }

  void Finish() {
    if (depth_ != 0) throw InputError(path_, LineCol(text_.size()), "truncated JSON");
    if (!saw_benchmarks_) Fail("/benchmarks", "missing: not Google Benchmark JSON");
    if (out_->entries.empty()) Fail("/benchmarks", "no benchmarks");
  }

 private:
  enum class Section { kNone, kContext, kBenchmarks, kOther };

  [[noreturn]] void Fail(const std::string& where, const std::string& what) const {
    throw InputError(path_, where, what);
  }
  std::string LineCol(size_t pos) const {
    pos = std::min(pos, text_.size());
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos; ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return std::to_string(line) + ":" + std::to_string(col);
  }
  std::string EntryPointer() const {
    return "/benchmarks/" + std::to_string(index_) + (key_.empty() ? "" : "/" + key_);
  }
  bool InEntryField() const { return depth_ == 3 && section_ == Section::kBenchmarks; }
  // Inside the entry's "dlbench" object, at any depth.
  bool InResult() const { return result_level_ > 0 && depth_ >= 4; }
  std::string ResultPointer() const {
    std::string p = EntryPointer() + "/" + result_key_;
    if (result_level_ == 2) p += "/" + verification_key_;
    return p;
  }

  // What a field of the "dlbench" object must be: a string, a number, the verification object,
  // or anything (a field this build does not know, kept for later versions).
  enum class Want { kAny, kString, kNumber, kObject };
  Want ResultWant() const {
    if (result_level_ == 1) {
      if (result_key_ == schema::kNetwork || result_key_ == schema::kWorkload) return Want::kString;
      if (result_key_ == schema::kVerification) return Want::kObject;
      return Want::kAny;
    }
    const std::string& k = verification_key_;
    if (k == schema::kDisposition || k == schema::kMetric || k == schema::kDetail)
      return Want::kString;
    if (k == schema::kError || k == schema::kTolerance || k == schema::kChecked || k == schema::kOf)
      return Want::kNumber;
    return Want::kAny;
  }

  void NestedInResult(const char* what) {
    if (depth_ == 4 && result_level_ == 1 && ResultWant() == Want::kObject &&
        std::string_view(what) == "an object") {
      result_level_ = 2;
      verification_key_.clear();
      return;
    }
    bool direct = (depth_ == 4 && result_level_ == 1) || (depth_ == 5 && result_level_ == 2);
    if (!direct || ResultWant() == Want::kAny) return;
    static const char* kWanted[] = {"", "expected a string, got ", "expected a number, got ",
                                    "expected an object, got "};
    Fail(ResultPointer(), kWanted[static_cast<int>(ResultWant())] + std::string(what));
  }

  // A scalar inside the "dlbench" object. null stands for "not known", as for an absent field.
  bool ResultValue(Kind kind, std::string* s, double v) {
    bool direct = (depth_ == 4 && result_level_ == 1) || (depth_ == 5 && result_level_ == 2);
    if (!direct || kind == Kind::kNull) return true;
    Want want = ResultWant();
    if (want == Want::kAny) return true;
    if (want == Want::kObject)
      Fail(ResultPointer(), std::string("expected an object, got ") + KindName(kind));
    if (want == Want::kString && kind != Kind::kString)
      Fail(ResultPointer(), std::string("expected a string, got ") + KindName(kind));
    if (want == Want::kNumber && kind != Kind::kNumber)
      Fail(ResultPointer(), std::string("expected a number, got ") + KindName(kind));
    ResultFields& r = raw_.result;
    Verification& ver = r.verification;
    if (result_level_ == 1) {
      (result_key_ == schema::kNetwork ? r.network : r.workload) = std::move(*s);
      return true;
    }
    const std::string& k = verification_key_;
    if (k == schema::kDisposition) {
      ver.disposition = std::move(*s);
    } else if (k == schema::kMetric) {
      ver.metric = std::move(*s);
    } else if (k == schema::kDetail) {
      ver.detail = std::move(*s);
    } else if (k == schema::kError) {
      ver.error = v;
    } else if (k == schema::kTolerance) {
      ver.tolerance = v;
    } else if (k == schema::kChecked) {
      ver.checked = v;
    } else {
      ver.of = v;
    }
    return true;
  }

  void NestedInEntry(const char* what) {
    Field f = Classify(key_);
    if (f != Field::kCounter) Fail(EntryPointer(), std::string("expected a scalar, got ") + what);
  }

  bool Scalar(const char* type) {
    if (depth_ == 0) Fail("/", std::string("the top level is a ") + type + ", expected an object");
    if (depth_ == 1) {
      if (key_ == "benchmarks")
        Fail("/benchmarks", std::string("expected an array, got a ") + type);
      if (key_ == "context") Fail("/context", std::string("expected an object, got a ") + type);
      return true;
    }
    if (depth_ == 2 && section_ == Section::kBenchmarks)
      Fail("/benchmarks/" + std::to_string(index_),
           std::string("expected an object, got a ") + type);
    if (InEntryField()) {
      Field f = Classify(key_);
      if (f == Field::kErrorOccurred || f == Field::kSkipped)
        Fail(EntryPointer(), std::string("expected true or false, got a ") + type);
      if (f == Field::kResult) {
        if (std::string_view(type) == "null") return true;
        Fail(EntryPointer(), std::string("expected an object, got a ") + type);
      }
      if (IsStringField(f)) Fail(EntryPointer(), std::string("expected a string, got a ") + type);
      if (f != Field::kCounter)
        Fail(EntryPointer(), std::string("expected a number, got a ") + type);
    }
    if (depth_ == 2 && section_ == Section::kContext) {
      if (std::string_view(type) == "boolean") out_->context[key_] = "bool";
    }
    return true;
  }

  bool Number(double v) {
    if (InResult()) return ResultValue(Kind::kNumber, nullptr, v);
    if (InEntryField()) {
      if (!std::isfinite(v)) Fail(EntryPointer(), "not a finite number");
      Field f = Classify(key_);
      switch (f) {
        case Field::kRealTime:
          raw_.e.real_ns = v;
          raw_.has_real = true;
          return true;
        case Field::kCpuTime:
          raw_.e.cpu_ns = v;
          raw_.has_cpu = true;
          return true;
        case Field::kIterations:
          raw_.e.iterations = v;
          return true;
        case Field::kComplexity:
          raw_.complexity = true;
          return true;
        case Field::kIgnoredNumber:
          return true;
        case Field::kFamilyIndex:
          raw_.e.family_index = v;
          return true;
        case Field::kInstanceIndex:
          raw_.e.per_family_instance_index = v;
          return true;
        case Field::kRepetitionIndex:
          raw_.e.repetition_index = v;
          return true;
        case Field::kResult:
          Fail(EntryPointer(), "expected an object, got a number");
        case Field::kCounter:
          raw_.e.counters.emplace_back(key_, v);
          return true;
        case Field::kErrorOccurred:
        case Field::kSkipped:
          Fail(EntryPointer(), "expected true or false, got a number");
        default:
          Fail(EntryPointer(), "expected a string, got a number");
      }
    }
    if (depth_ == 2 && section_ == Section::kContext) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.15g", v);
      out_->context[key_] = buf;
      return true;
    }
    return Scalar("number");
  }

  void FinishEntry() {
    std::string where = "/benchmarks/" + std::to_string(index_);
    ++index_;
    key_.clear();
    Entry& e = raw_.e;
    if (!raw_.has_name) Fail(where, "missing \"name\"");
    if (raw_.run_type.empty()) {
      e.run_type = RunType::kAbsent;
    } else if (raw_.run_type == "iteration") {
      e.run_type = RunType::kIteration;
    } else if (raw_.run_type == "aggregate") {
      e.run_type = RunType::kAggregate;
    } else {
      Fail(where + "/run_type", "unknown run_type '" + raw_.run_type + "'");
    }
    e.aggregate = e.run_type == RunType::kAggregate;
    // Complexity fits (BigO, RMS) are not times of one run.
    if (raw_.complexity || e.aggregate_name == "BigO" || e.aggregate_name == "RMS") return;
    if (!raw_.has_run_name) {
      e.run_name = e.name;
      std::string suffix = "_" + e.aggregate_name;
      if (e.aggregate && !e.aggregate_name.empty() && e.name.size() > suffix.size() &&
          e.name.compare(e.name.size() - suffix.size(), suffix.size(), suffix) == 0)
        e.run_name.resize(e.name.size() - suffix.size());
    }
    double scale = 0;  // 0: unknown unit
    if (raw_.has_unit) {
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
    if (raw_.has_result) {
      if (!last_result_ || !(*last_result_ == raw_.result))
        last_result_ = std::make_shared<const ResultFields>(std::move(raw_.result));
      e.result = last_result_;
    }
    e.real_time = e.real_ns;
    e.cpu_time = raw_.has_cpu ? e.cpu_ns : 0;
    e.comparable = raw_.has_unit && raw_.has_real && raw_.has_cpu && scale > 0;
    if (raw_.error_occurred || raw_.skipped) {
      e.message = raw_.error_occurred ? raw_.error_message : raw_.skip_message;
      if (e.message.empty()) e.message = raw_.error_message + raw_.skip_message;
      e.status = e.message.rfind(schema::kStatusUnsupported, 0) == 0 ? Status::kUnsupported
                                                                     : Status::kFailed;
      e.real_ns = e.cpu_ns = 0;
      out_->entries.push_back(std::move(e));
      return;
    }
    if (!raw_.has_real) Fail(where, "missing \"real_time\"");
    if (!raw_.has_unit) Fail(where, "missing \"time_unit\"");
    e.percentage = raw_.aggregate_unit == "percentage";
    if (!raw_.aggregate_unit.empty() && raw_.aggregate_unit != "time" && !e.percentage)
      Fail(where + "/aggregate_unit", "unknown aggregate_unit '" + raw_.aggregate_unit + "'");
    if (!raw_.has_cpu) e.cpu_ns = e.real_ns;
    if (scale == 0) Fail(where + "/time_unit", "unknown time unit '" + e.time_unit + "'");
    // Google Benchmark 1.7/1.8 write the cv aggregate as a fraction without aggregate_unit.
    if (e.aggregate && e.aggregate_name == gbench::kCv) e.percentage = true;
    if (!e.percentage) {
      e.real_ns *= scale;
      e.cpu_ns *= scale;
    }
    out_->entries.push_back(std::move(e));
  }

  std::string_view text_;
  const std::string& path_;
  FileData* out_;
  int depth_ = 0;
  Section section_ = Section::kNone;
  std::string key_;
  size_t index_ = 0;
  bool saw_benchmarks_ = false;
  RawEntry raw_;
  // Inside an entry's "dlbench" object: 1 at its fields, 2 at those of its "verification".
  int result_level_ = 0;
  std::string result_key_, verification_key_;
  std::shared_ptr<const ResultFields> last_result_;
};

}  // namespace

namespace {

FileData ParseSequential(std::string_view text, const std::string& path) {
  FileData out;
  out.path = path;
  Handler h(text, path, &out);
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw InputError(path, "1:1", "empty file");
  json::sax_parse(text.data(), text.data() + text.size(), &h);
  h.Finish();
  return out;
}

// Where the elements of the top-level "benchmarks" array start, found by a quick structural scan
// (strings, escapes, nesting) that is much cheaper than lexing. Empty when the text is anything
// but a plain object with a "benchmarks" array of objects: the sequential parse then reports.
struct Layout {
  size_t open = 0, close = 0;  // offsets of '[' and ']'
  std::vector<size_t> starts;  // offsets of each element's '{'
  std::vector<size_t> ends;    // one past each element's '}'
};

std::optional<Layout> Scan(std::string_view t) {
  Layout l;
  int depth = 0;
  bool in_array = false, done = false;
  int commas = 0;
  size_t key_begin = 0, key_end = 0;  // the last string seen at depth 1
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '"') {
      size_t b = ++i;
      // memchr to the closing quote: one not preceded by an odd number of backslashes.
      while (true) {
        const void* q = std::memchr(t.data() + i, '"', t.size() - i);
        if (!q) return std::nullopt;
        i = static_cast<size_t>(static_cast<const char*>(q) - t.data());
        size_t bs = 0;
        while (i - bs > b && t[i - bs - 1] == '\\') ++bs;
        if (bs % 2 == 0) break;
        ++i;
      }
      if (depth == 1) {
        key_begin = b;
        key_end = i;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth == 1 && c == '[' && !done &&
          t.substr(key_begin, key_end - key_begin) == "benchmarks") {
        l.open = i;
        in_array = true;
      } else if (depth == 2 && in_array) {
        // Exactly one comma between elements, none before the first.
        if (c != '{' || commas != (l.starts.empty() ? 0 : 1)) return std::nullopt;
        l.starts.push_back(i);
        commas = 0;
      }
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth < 0) return std::nullopt;
      if (depth == 2 && in_array) l.ends.push_back(i + 1);
      if (depth == 1 && in_array && c == ']') {
        if (commas != 0) return std::nullopt;
        l.close = i;
        in_array = false;
        done = true;
      }
    } else if (depth == 2 && in_array && c == ',') {
      ++commas;
    } else if (depth == 2 && in_array && c != ' ' && c != '\n' && c != '\r' && c != '\t') {
      return std::nullopt;  // a scalar element: let the parser name it
    }
  }
  if (depth != 0 || !done || l.starts.empty()) return std::nullopt;
  return l;
}

// One element of the benchmarks array, `{"key": scalar, ...}`, lexed directly into the handler.
// Returns false on anything it does not handle with certainty (escapes, non-ASCII, nesting, odd
// numbers); the caller then hands the element to nlohmann's parser. Never accepts invalid JSON.
class FastElement {
 public:
  FastElement(std::string_view s, Handler* h) : s_(s), h_(h) {}

  bool Parse() {
    Ws();
    if (!Object(0)) return false;
    Ws();
    return i_ == s_.size();
  }

 private:
  // dlbench's entries nest two levels ("dlbench": {"verification": {...}}); deeper input goes to
  // nlohmann, which has its own limits.
  static constexpr int kMaxDepth = 8;

  bool Object(int depth) {
    if (!Eat('{')) return false;
    h_->start_object(0);
    Ws();
    if (Eat('}')) return h_->end_object();
    while (true) {
      std::string key;
      if (!String(&key)) return false;
      h_->key(key);
      Ws();
      if (!Eat(':')) return false;
      Ws();
      if (!Value(depth)) return false;
      Ws();
      if (Eat(',')) {
        Ws();
        continue;
      }
      if (Eat('}')) return h_->end_object();
      return false;
    }
  }
  bool Array(int depth) {
    if (!Eat('[')) return false;
    h_->start_array(0);
    Ws();
    if (Eat(']')) return h_->end_array();
    while (true) {
      if (!Value(depth)) return false;
      Ws();
      if (Eat(',')) {
        Ws();
        continue;
      }
      if (Eat(']')) return h_->end_array();
      return false;
    }
  }
  void Ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool Eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Lit(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  // Plain ASCII strings without escapes or control characters only.
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    size_t b = i_;
    while (i_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') break;
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++i_;
    }
    if (i_ >= s_.size()) return false;
    out->assign(s_.data() + b, i_ - b);
    ++i_;
    return true;
  }
  bool Digits() {
    size_t b = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > b;
  }
  // JSON's number grammar, then from_chars; out of range goes to nlohmann (which says overflow).
  bool Number() {
    size_t b = i_;
    Eat('-');
    if (Eat('0')) {
      if (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') return false;
    } else if (!Digits()) {
      return false;
    }
    if (Eat('.') && !Digits()) return false;
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (!Eat('+')) Eat('-');
      if (!Digits()) return false;
    }
    double v = 0;
    auto [ptr, ec] = std::from_chars(s_.data() + b, s_.data() + i_, v);
    if (ec != std::errc() || ptr != s_.data() + i_ || !std::isfinite(v)) return false;
    h_->number_float(v, kEmpty);
    return true;
  }
  bool Value(int depth) {
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '"') {
      std::string v;
      if (!String(&v)) return false;
      h_->string(v);
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return Number();
    if (c == 't' && Lit("true")) return h_->boolean(true);
    if (c == 'f' && Lit("false")) return h_->boolean(false);
    if (c == 'n' && Lit("null")) return h_->null();
    if (c == '{') return depth < kMaxDepth && Object(depth + 1);
    if (c == '[') return depth < kMaxDepth && Array(depth + 1);
    return false;
  }

  static inline const std::string kEmpty;
  std::string_view s_;
  Handler* h_;
  size_t i_ = 0;
};

FileData ParseElements(std::string_view text, const Layout& l, size_t first, size_t last,
                       const std::string& path) {
  FileData out;
  out.path = path;
  Handler h(text, path, &out);
  out.entries.reserve(last - first);
  for (size_t k = first; k < last; ++k) {
    std::string_view e = text.substr(l.starts[k], l.ends[k] - l.starts[k]);
    h.EnterArray();
    if (FastElement(e, &h).Parse()) continue;
    h.EnterArray();
    json::sax_parse(e.data(), e.data() + e.size(), &h);
  }
  return out;
}

}  // namespace

namespace {

// Google Benchmark writes NaN for a counter's cv aggregate when the counter's mean is 0 (a
// "throttled" flag that stayed 0, say), and Python's json, which compare.py reads with, accepts
// it. Such counter values become null (no value) here; NaN or Infinity where one of Google
// Benchmark's own fields stands (a time, the iterations) stays an error. Empty when the text has
// nothing to replace.
std::optional<std::string> NullNonFiniteCounters(std::string_view t) {
  if (t.find("NaN") == std::string_view::npos && t.find("Infinity") == std::string_view::npos)
    return std::nullopt;
  std::string out;
  size_t copied = 0;
  std::string key;  // the last string outside a value position, i.e. the key before ':'
  size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '"') {  // a string: skip it, remembering it as the candidate key
      size_t j = i + 1;
      while (j < t.size() && t[j] != '"') j += t[j] == '\\' ? 2 : 1;
      key.assign(t.substr(i + 1, std::min(j, t.size()) - i - 1));
      i = j + 1;
      continue;
    }
    for (std::string_view w : {std::string_view("-Infinity"), std::string_view("Infinity"),
                               std::string_view("NaN")}) {
      if (t.substr(i, w.size()) != w || Classify(key) != Field::kCounter) continue;
      out.append(t.substr(copied, i - copied));
      out.append("null");
      copied = i + w.size();
      i = copied - 1;
      break;
    }
    ++i;
  }
  if (copied == 0) return std::nullopt;
  out.append(t.substr(copied));
  return out;
}

}  // namespace

FileData ParseBenchmarkJson(std::string_view text, const std::string& path, size_t parallel_bytes) {
  const std::optional<std::string> nulled = NullNonFiniteCounters(text);
  if (nulled) text = *nulled;
  // Large files: a quick structural scan finds the elements of the benchmarks array; threads lex
  // slices of them (plain elements directly, others through nlohmann). Any error falls back to the
  // sequential nlohmann parse of the whole text, which names the place exactly.
  unsigned threads = std::min(4u, std::max(2u, std::thread::hardware_concurrency()));
  if (text.size() < parallel_bytes) return ParseSequential(text, path);
  std::optional<Layout> layout = Scan(text);
  if (!layout || layout->starts.size() < threads || layout->ends.size() != layout->starts.size())
    return ParseSequential(text, path);
  try {
    const Layout& l = *layout;
    size_t n = l.starts.size();
    std::vector<std::future<FileData>> parts;
    for (unsigned k = 1; k < threads; ++k)
      parts.push_back(std::async(std::launch::async, ParseElements, text, std::cref(l),
                                 n * k / threads, n * (k + 1) / threads, std::cref(path)));
    FileData out = ParseElements(text, l, 0, n / threads, path);
    for (auto& p : parts) {
      FileData f = p.get();
      out.entries.insert(out.entries.end(), std::make_move_iterator(f.entries.begin()),
                         std::make_move_iterator(f.entries.end()));
    }
    // The context (and the document's syntax around the array) from the text without the array.
    std::string skeleton(text.substr(0, l.open + 1));
    skeleton.append(text.substr(l.close));
    FileData skel;
    skel.path = path;
    Handler h(skeleton, path, &skel);
    json::sax_parse(skeleton.data(), skeleton.data() + skeleton.size(), &h);
    if (out.entries.empty()) throw InputError(path, "/benchmarks", "no benchmarks");
    out.context = std::move(skel.context);
    return out;
  } catch (const InputError&) {
    return ParseSequential(text, path);
  }
}

FileData ReadBenchmarkFile(const std::string& path) {
  std::FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) throw InputError(path, "", std::string("cannot open: ") + std::strerror(errno));
  std::string text;
  struct stat st {};
  if (::fstat(::fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    text.reserve(static_cast<size_t>(st.st_size) + 1);
  // Read straight into the string's storage: no regrowth copies for 100 MB files.
  size_t used = 0;
  while (true) {
    if (text.size() == used)
      text.resize(std::max<size_t>(used * 2, std::max<size_t>(text.capacity(), 1 << 16)));
    size_t n = std::fread(text.data() + used, 1, text.size() - used, f);
    used += n;
    if (n == 0) break;
  }
  text.resize(used);
  bool bad = std::ferror(f);
  int err = errno;
  if (f != stdin) std::fclose(f);
  if (bad) throw InputError(path, "", std::string("cannot read: ") + std::strerror(err));
  return ParseBenchmarkJson(text, path);
}

std::vector<FileData> ReadBenchmarkFiles(const std::vector<std::string>& paths) {
  std::vector<FileData> out(paths.size());
  for (size_t i = 0; i < paths.size(); i += 2) {
    std::future<FileData> second;
    if (i + 1 < paths.size() && paths[i + 1] != "-")
      second = std::async(std::launch::async, ReadBenchmarkFile, paths[i + 1]);
    out[i] = ReadBenchmarkFile(paths[i]);
    if (i + 1 < paths.size())
      out[i + 1] = second.valid() ? second.get() : ReadBenchmarkFile(paths[i + 1]);
  }
  return out;
}

std::string FamilyOf(const std::string& name, const std::optional<BenchName>& parsed) {
  if (parsed) return parsed->family;
  auto slash = name.find('/');
  std::string first = name.substr(0, slash);
  if (slash == std::string::npos || first.empty()) return "other";
  return first;
}

bool Bench::HasCenter() const {
  return aggregates.count(gbench::kMedian) || aggregates.count(gbench::kMean);
}

double Bench::MedianNs() const {
  if (!real_ns.empty()) return Median(real_ns);
  if (auto it = aggregates.find(gbench::kMedian); it != aggregates.end()) return it->second;
  if (auto it = aggregates.find(gbench::kMean); it != aggregates.end()) return it->second;
  return std::numeric_limits<double>::quiet_NaN();
}

double Bench::Cv() const {
  if (real_ns.size() >= 2) {
    double m = Mean(real_ns);
    return m != 0 ? StdDev(real_ns) / m : std::numeric_limits<double>::quiet_NaN();
  }
  if (auto it = aggregates.find(gbench::kCv); it != aggregates.end()) return it->second;
  auto sd = aggregates.find(gbench::kStddev), mean = aggregates.find(gbench::kMean);
  if (sd != aggregates.end() && mean != aggregates.end() && mean->second != 0)
    return sd->second / mean->second;
  return std::numeric_limits<double>::quiet_NaN();
}

double Bench::Counter(std::string_view name) const {
  if (auto it = counters.find(name); it != counters.end() && !it->second.empty())
    return Median(it->second);
  if (auto it = aggregate_counters.find(name); it != aggregate_counters.end()) return it->second;
  return std::numeric_limits<double>::quiet_NaN();
}

std::vector<std::string> Bench::CounterNames() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : counters) out.push_back(k);
  for (const auto& [k, v] : aggregate_counters)
    if (!counters.count(k)) out.push_back(k);
  return out;
}

MergedRuns Merge(const std::vector<FileData>& files) {
  MergedRuns out;
  std::unordered_map<std::string, size_t> index;
  std::vector<char> any_measured;
  for (const FileData& f : files) {
    for (const auto& [k, v] : f.context) out.context.emplace(k, v);
    for (const Entry& e : f.entries) {
      auto [it, inserted] = index.emplace(e.run_name, out.benches.size());
      if (inserted) {
        Bench b;
        b.name = e.run_name;
        b.parsed = ParseName(e.run_name);
        b.family = FamilyOf(b.name, b.parsed);
        out.benches.push_back(std::move(b));
        any_measured.push_back(0);
      }
      Bench& b = out.benches[it->second];
      if (b.files.empty() || b.files.back() != f.path) b.files.push_back(f.path);
      if (!e.label.empty()) b.label = e.label;
      if (e.result) {
        const ResultFields& r = *e.result;
        if (!r.network.empty()) b.network = r.network;
        if (!r.workload.empty()) b.workload = r.workload;
        if (r.verification.known()) b.verification = r.verification;
      }
      if (e.status != Status::kMeasured) {
        if (!any_measured[it->second]) {
          b.status = e.status;
          b.message = e.message;
        }
        continue;
      }
      any_measured[it->second] = 1;
      b.status = Status::kMeasured;
      b.message.clear();
      if (b.time_unit.empty()) b.time_unit = e.time_unit;
      if (e.IsSample()) {
        b.real_ns.push_back(e.real_ns);
        b.cpu_ns.push_back(e.cpu_ns);
        for (const auto& [k, v] : e.counters) b.counters[k].push_back(v);
      } else {
        b.aggregates[e.aggregate_name] = e.real_ns;
        if (e.aggregate_name == gbench::kMedian ||
            (e.aggregate_name == gbench::kMean && !b.aggregates.count(gbench::kMedian)))
          for (const auto& [k, v] : e.counters) b.aggregate_counters[k] = v;
      }
    }
  }
  return out;
}

}  // namespace dlb::report
