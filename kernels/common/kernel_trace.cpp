#include "kernels/common/kernel_trace.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace dlb::trace {

std::vector<uint64_t> ExposedTimes(const std::vector<Interval>& intervals) {
  std::vector<size_t> order(intervals.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Interval &x = intervals[a], &y = intervals[b];
    return x.start != y.start ? x.start < y.start : x.end != y.end ? x.end < y.end : a < b;
  });
  std::vector<uint64_t> out(intervals.size(), 0);
  uint64_t frontier = 0;  // the latest end so far (no start is before 0)
  for (size_t i : order) {
    const Interval& v = intervals[i];
    if (v.end <= v.start) continue;
    const uint64_t from = std::max(v.start, frontier);
    out[i] = v.end > from ? v.end - from : 0;
    frontier = std::max(frontier, v.end);
  }
  return out;
}

namespace {
// A sum of exposed times: unknown (negative) where either is.
double AddExposed(double a, double b) { return a < 0 || b < 0 ? -1 : a + b; }
}  // namespace

void Tally::Add(const std::string& name, const std::string& kind, double seconds, int64_t count,
                double exposed_s) {
  auto [it, fresh] = by_key_.try_emplace({kind, name});
  Activity& a = it->second;
  if (fresh) {
    a.name = name;
    a.kind = kind;
    a.exposed_s = exposed_s < 0 ? -1 : 0;
  }
  a.count += count;
  a.total_s += seconds;
  a.exposed_s = AddExposed(a.exposed_s, exposed_s);
}

void Tally::Merge(const std::vector<Activity>& acts) {
  for (const Activity& a : acts) Add(a.name, a.kind, a.total_s, a.count, a.exposed_s);
}

std::vector<Activity> Tally::Activities() const {
  std::vector<Activity> out;
  out.reserve(by_key_.size());
  for (const auto& [key, a] : by_key_) out.push_back(a);
  return out;
}

namespace {
Row RowOf(const std::string& name, const std::string& kind, int64_t count, double total_s,
          double exposed_s, int64_t runs, double span_s) {
  Row r;
  r.name = name;
  r.kind = kind;
  r.launches_per_run = runs > 0 ? double(count) / double(runs) : 0;
  r.total_s = total_s;
  r.mean_s = count > 0 ? total_s / double(count) : 0;
  r.share = span_s > 0 ? total_s / span_s : 0;
  r.exposed_s = exposed_s;
  return r;
}
}  // namespace

Table MakeTable(Source source, const std::vector<Activity>& acts, int64_t runs, double span_s,
                size_t max_rows) {
  std::vector<Activity> sorted = acts;
  std::sort(sorted.begin(), sorted.end(), [](const Activity& a, const Activity& b) {
    if (a.total_s != b.total_s) return a.total_s > b.total_s;
    return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
  });
  Table t;
  t.source = source;
  t.runs = runs;
  t.span_s = span_s;
  int64_t other_count = 0;
  double other_s = 0, other_exposed_s = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const Activity& a = sorted[i];
    if (i < max_rows) {
      t.rows.push_back(RowOf(a.name, a.kind, a.count, a.total_s, a.exposed_s, runs, span_s));
    } else {
      other_count += a.count;
      other_s += a.total_s;
      other_exposed_s = AddExposed(other_exposed_s, a.exposed_s);
    }
  }
  if (sorted.size() > max_rows)
    t.rows.push_back(
        RowOf(kOtherName, kKindOther, other_count, other_s, other_exposed_s, runs, span_s));
  return t;
}

std::string Demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) {
    std::free(out);
    return name;
  }
  std::string s(out);
  std::free(out);
  return s;
}

namespace {

bool Opens(char c) { return c == '<' || c == '(' || c == '[' || c == '{'; }
bool Closes(char c) { return c == '>' || c == ')' || c == ']' || c == '}'; }

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s->find(from, at)) != std::string::npos; at += to.size())
    s->replace(at, from.size(), to);
}

// The index one past the bracket group that opens at `open` (or s.size() when it never closes).
size_t GroupEnd(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (Opens(s[i])) ++depth;
    if (Closes(s[i]) && --depth == 0) return i + 1;
  }
  return s.size();
}

// The top-level arguments of the template group s[open] == '<' .. s[end - 1] == '>'.
std::vector<std::string> Arguments(const std::string& s, size_t open, size_t end) {
  std::vector<std::string> args;
  int depth = 0;
  size_t begin = open + 1;
  for (size_t i = open + 1; i + 1 < end; ++i) {
    if (Opens(s[i])) ++depth;
    if (Closes(s[i])) --depth;
    if (depth == 0 && s[i] == ',') {
      args.push_back(s.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  args.push_back(s.substr(begin, end - 1 - begin));
  return args;
}

// Copies `s`, cutting the arguments of each template group to what fits in max_len.
std::string CutTemplates(const std::string& s, size_t max_len) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '<') {
      out += s[i++];
      continue;
    }
    const size_t end = GroupEnd(s, i);
    const std::vector<std::string> args = Arguments(s, i, end);
    // Room for what follows the group stays: "::kernel" after a class template.
    const size_t tail = s.size() - end;
    out += '<';
    for (size_t k = 0; k < args.size(); ++k) {
      const std::string sep = k == 0 ? "" : ",";
      if (out.size() + sep.size() + args[k].size() + 1 + tail <= max_len) {
        out += sep + args[k];
        continue;
      }
      // The first argument of a group names the kernel's configuration: keep its head.
      const size_t lt = args[k].find('<');
      if (k == 0 && lt != std::string::npos && out.size() + lt + 6 + tail <= max_len)
        out += args[k].substr(0, lt) + "<...>";
      else
        out += sep + "...";
      break;
    }
    out += '>';
    i = end;
  }
  return out;
}

// A mangled name the demangler gave up on (a CUTLASS kernel's 1,700 characters of nested
// templates did, on an H100 host): its leading names, "<...>" where template arguments follow, and
// a hash of the whole name, so that two such kernels keep rows of their own, the same in every run:
//   "_ZN17cutlass__5x_cudnn6KernelINS_4conv..." -> "cutlass__5x_cudnn::Kernel<...> #1a2b3c4d".
std::string MangledHead(const std::string& s) {
  uint32_t hash = 2166136261u;  // FNV-1a
  for (unsigned char c : s) hash = (hash ^ c) * 16777619u;
  char tag[16];
  std::snprintf(tag, sizeof tag, " #%08x", hash);
  size_t i = s[2] == 'N' ? 3 : 2;
  while (i < s.size() && (s[i] == 'K' || s[i] == 'V' || s[i] == 'r')) ++i;
  std::string head;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    size_t n = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
      n = n * 10 + size_t(s[i++] - '0');
    if (n == 0 || i + n > s.size()) break;
    head += (head.empty() ? "" : "::") + s.substr(i, n);
    i += n;
    if (i < s.size() && s[i] == 'I') {
      head += "<...>";
      break;
    }
  }
  return (head.empty() ? s.substr(0, 40) : head) + tag;
}

}  // namespace

std::string ShortenKernelName(const std::string& name, size_t max_len) {
  std::string s = Demangle(name);
  if (s.rfind("_Z", 0) == 0) return MangledHead(s);
  ReplaceAll(&s, "(anonymous namespace)", "(anon)");
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  // The parameter list: the last balanced (...) group that ends the name.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        if (i > 0) s.erase(i);
        break;
      }
    }
  }
  ReplaceAll(&s, ", ", ",");
  ReplaceAll(&s, " >", ">");
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.size() <= max_len || s.find('<') == std::string::npos) return s;
  return CutTemplates(s, max_len);
}

namespace {
std::shared_ptr<Recorder>& Slot(bool gpu) {
  static std::shared_ptr<Recorder> recorders[2];
  return recorders[gpu ? 1 : 0];
}
}  // namespace

void SetRecorder(bool gpu, std::shared_ptr<Recorder> recorder) { Slot(gpu) = std::move(recorder); }

Recorder* RecorderFor(bool gpu) { return Slot(gpu).get(); }

}  // namespace dlb::trace
