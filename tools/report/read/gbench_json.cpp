#include "tools/report/read/gbench_json.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <future>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "fixtures/schema/schema.h"
#include "tools/report/read/fields.h"
#include "tools/report/read/file_text.h"
#include "tools/report/read/result_objects.h"

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
using read::BuildEntry;
using read::Classify;
using read::Field;
using read::IsStringField;
using read::RawEntry;

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
    if (capturing_) return CaptureValue(json());
    if (InResult()) return ResultValue(Kind::kNull, nullptr, 0);
    return Scalar("null");
  }
  bool boolean(bool v) {
    if (capturing_) return CaptureValue(json(v));
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
    // Google Benchmark's cpu_scaling_enabled: a timing hazard the report names (problems.h).
    if (depth_ == 2 && section_ == Section::kContext) {
      out_->context[key_] = v ? "true" : "false";
      return true;
    }
    return Scalar("boolean");
  }
  bool number_integer(json::number_integer_t v) { return Number(static_cast<double>(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Number(static_cast<double>(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return Number(v); }
  bool string(std::string& v) {
    if (capturing_) return CaptureValue(json(std::move(v)));
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
        case Field::kRealTime:
        case Field::kCpuTime:
          if (v == "NaN" || v == "Infinity" || v == "-Infinity") {
            const double x = v == "NaN"        ? std::numeric_limits<double>::quiet_NaN()
                             : v == "Infinity" ? std::numeric_limits<double>::infinity()
                                               : -std::numeric_limits<double>::infinity();
            (f == Field::kRealTime ? raw_.e.real_ns : raw_.e.cpu_ns) = x;
            (f == Field::kRealTime ? raw_.has_real : raw_.has_cpu) = true;
            return true;
          }
          Fail(EntryPointer(), "expected a number, got a string");
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
    if (capturing_) return CaptureValue(json());
    if (InResult()) return ResultValue(Kind::kBinary, nullptr, 0);
    return Scalar("binary");
  }

  bool start_object(std::size_t) {
    if (capturing_ || StartsResultObject()) return CaptureStart(json::object());
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
    if (capturing_) return CaptureEnd();
    --depth_;
    if (result_level_ == 2 && depth_ == 4) result_level_ = 1;
    if (result_level_ == 1 && depth_ == 3) result_level_ = 0;
    if (depth_ == 2 && section_ == Section::kBenchmarks) FinishEntry();
    if (depth_ == 1) section_ = Section::kNone;
    return true;
  }
  bool start_array(std::size_t) {
    if (capturing_ || StartsResultObject()) return CaptureStart(json::array());
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
    if (capturing_) return CaptureEnd();
    --depth_;
    if (depth_ == 1) section_ = Section::kNone;
    return true;
  }
  bool key(std::string& k) {
    if (capturing_) {
      if (cap_.skipped == 0) cap_.member = std::move(k);
      return true;
    }
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
    if (result_level_ == 1 && read::IsResultObject(result_key_)) {
      json value = kind == Kind::kString    ? json(*s)
                   : kind == Kind::kNumber  ? json(v)
                   : kind == Kind::kBoolean ? json(false)
                                            : json();
      read::ReadResultObject(result_key_, value, false, &raw_.result);
      return true;
    }
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

  // The value of "roofline" or "kernels" in the "dlbench" object is an object or an array: it is
  // built as a small DOM (a table of kernels is all it holds) and read once it ends. Events
  // inside it touch nothing else of the parser's state.
  bool StartsResultObject() const {
    return result_level_ == 1 && depth_ == 4 && read::IsResultObject(result_key_);
  }
  bool CaptureStart(json container) {
    if (!capturing_) {
      capturing_ = true;
      cap_ = Capture();
      cap_.root = std::move(container);
      cap_.stack.push_back(&cap_.root);
      return true;
    }
    if (cap_.skipped > 0 || cap_.stack.size() >= kCaptureDepth) {
      ++cap_.skipped;
      cap_.truncated = true;
      return true;
    }
    cap_.stack.push_back(CaptureAdd(std::move(container)));
    return true;
  }
  bool CaptureValue(json v) {
    if (cap_.skipped == 0) CaptureAdd(std::move(v));
    return true;
  }
  bool CaptureEnd() {
    if (cap_.skipped > 0) {
      --cap_.skipped;
      return true;
    }
    cap_.stack.pop_back();
    if (cap_.stack.empty()) {
      capturing_ = false;
      read::ReadResultObject(result_key_, cap_.root, cap_.truncated, &raw_.result);
      cap_ = Capture();
    }
    return true;
  }
  // Into the innermost open object (under the last key) or array; where the value now lives
  // (an object's members are nodes of a map, and only the innermost array grows: the pointers
  // held stay valid).
  json* CaptureAdd(json v) {
    json& top = *cap_.stack.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[cap_.member];
    slot = std::move(v);
    return &slot;
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
    return true;
  }

  bool Number(double v) {
    if (capturing_) return CaptureValue(json(v));
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
        case Field::kRepetitions:
          raw_.e.repetitions = v;
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
    BuildEntry(&raw_, path_, where, &last_result_, &out_->entries);
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
  // A "roofline" or "kernels" value being captured; levels beyond kCaptureDepth are skipped (a
  // kernel table is three deep) and the object reported as malformed.
  static constexpr size_t kCaptureDepth = 4;
  struct Capture {
    json root;
    std::vector<json*> stack;
    std::string member;
    int skipped = 0;
    bool truncated = false;
  };
  bool capturing_ = false;
  Capture cap_;
};

// Google Benchmark writes NaN, -NaN, Infinity and -Infinity for non-finite values (a counter's cv
// aggregate when its mean is 0, a custom statistic, a rate over a time of 0), and Python's json,
// which compare.py reads with, accepts them. A counter's becomes null (no value) here; a time's
// the string "NaN" or "Infinity", which the reader turns back into the number (an aggregate keeps
// it, a run without a finite time is read as failed); elsewhere (the iterations) it stays an
// error. Empty when the text has nothing to replace.
std::optional<std::string> ReplaceNonFinite(std::string_view t) {
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
                               std::string_view("-NaN"), std::string_view("NaN")}) {
      if (t.substr(i, w.size()) != w) continue;
      const Field f = Classify(key);
      const bool time = f == Field::kRealTime || f == Field::kCpuTime;
      if (f != Field::kCounter && !time) continue;
      out.append(t.substr(copied, i - copied));
      // -NaN is NaN: the sign of a NaN carries nothing.
      out.append(!time ? "null" : w == "-NaN" ? "\"NaN\"" : "\"" + std::string(w) + "\"");
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

FileData ParseBenchmarkJson(std::string_view text, const std::string& path) {
  const std::optional<std::string> nulled = ReplaceNonFinite(text);
  if (nulled) text = *nulled;
  FileData out;
  out.path = path;
  Handler h(text, path, &out);
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw InputError(path, "1:1", "empty file");
  json::sax_parse(text.data(), text.data() + text.size(), &h);
  h.Finish();
  return out;
}

FileData ReadBenchmarkFile(const std::string& path) {
  return ParseBenchmarkJson(ReadFileText(path), path);
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

}  // namespace dlb::report
