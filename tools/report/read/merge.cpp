// Several files' entries into one result per benchmark (the merge rule of gbench_json.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/setup.h"
#include "tools/report/analyses/stats.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report {

std::string ContextValue(const std::map<std::string, std::string>& context, std::string_view key) {
  auto it = context.find(std::string(key));
  return it == context.end() ? std::string() : it->second;
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

bool IsContextGap(const std::string& value) {
  return value.empty() || value.rfind("not measured", 0) == 0 ||
         value.rfind("not loaded", 0) == 0 || value.rfind("not reported", 0) == 0;
}

namespace {

// For each case name, which of its setups each file holds: the files of a name grouped so that no
// two setups of a group differ (a what only one file knows is no difference), in file order.
struct SetupGroups {
  // (run_name, file index) -> group; run_name -> each group's setup text where there are several.
  std::map<std::pair<std::string, size_t>, size_t> group;
  std::map<std::string, std::vector<std::string>> texts, keys;  // keys: SetupKeyValue
  std::vector<std::string> whats;
};

SetupGroups GroupSetups(const std::vector<FileData>& files) {
  SetupGroups out;
  std::vector<Setup> setups;
  for (const FileData& f : files) setups.push_back(SetupOf(f.context));
  std::map<std::string, std::vector<size_t>> files_of;  // run_name -> file indices, in order
  for (size_t i = 0; i < files.size(); ++i)
    for (const Entry& e : files[i].entries) {
      std::vector<size_t>& v = files_of[e.run_name];
      if (v.empty() || v.back() != i) v.push_back(i);
    }
  for (const auto& [name, indices] : files_of) {
    std::vector<size_t> reps;  // each group's first file
    for (size_t i : indices) {
      size_t g = 0;
      while (g < reps.size() && !SetupDifferences(setups[reps[g]], setups[i]).empty()) ++g;
      if (g == reps.size()) reps.push_back(i);
      out.group[{name, i}] = g;
    }
    if (reps.size() < 2) continue;
    std::vector<std::string> whats;
    for (size_t a = 0; a < reps.size(); ++a)
      for (size_t b = a + 1; b < reps.size(); ++b)
        for (const std::string& w : SetupDifferences(setups[reps[a]], setups[reps[b]]))
          if (std::find(whats.begin(), whats.end(), w) == whats.end()) whats.push_back(w);
    const std::vector<std::string> naming = NamingWhats(whats, setups[reps.front()]);
    for (size_t r : reps) {
      out.texts[name].push_back(SetupText(setups[r], naming));
      out.keys[name].push_back(SetupKeyValue(setups[r], naming));
    }
    for (const std::string& w : whats)
      if (std::find(out.whats.begin(), out.whats.end(), w) == out.whats.end())
        out.whats.push_back(w);
  }
  return out;
}

// "f32 50.7 TFLOP/s (how; more); bf16 not measured (...)": the parts at parenthesis depth 0.
std::vector<std::string> PeakParts(const std::string& measured) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= measured.size(); ++i) {
    if (i == measured.size() || (depth == 0 && measured.compare(i, 2, "; ") == 0)) {
      parts.push_back(measured.substr(start, i - start));
      start = i + 2;
      ++i;
    } else {
      depth += measured[i] == '(' ? 1 : measured[i] == ')' ? -1 : 0;
    }
  }
  return parts;
}

// A run measures the peaks of its cases' dtypes only: per dtype, a part a file could not give
// ("bf16 not measured (no bf16 case in this run)") takes a later file's measured one.
std::string MergePeaks(const std::string& kept, const std::string& later) {
  std::vector<std::string> parts = PeakParts(kept);
  const std::vector<std::string> more = PeakParts(later);
  for (std::string& part : parts) {
    const std::string dtype = part.substr(0, part.find(' ') + 1);
    if (!IsContextGap(part.substr(dtype.size()))) continue;
    for (const std::string& m : more)
      if (m.rfind(dtype, 0) == 0 && !IsContextGap(m.substr(dtype.size()))) part = m;
  }
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : "; ") + part;
  return out;
}
}  // namespace

MergedRuns Merge(const std::vector<FileData>& files) {
  MergedRuns out;
  const SetupGroups setups = GroupSetups(files);
  out.split_setups = setups.texts;
  out.setup_whats = setups.whats;
  std::map<std::pair<std::string, size_t>, size_t> index;  // (run_name, setup group) -> bench
  std::vector<char> any_measured;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const FileData& f = files[fi];
    out.file_contexts.emplace(f.path, f.context);
    for (const auto& [k, v] : f.context) {
      // A value a file could not give ("not measured (this family does no arithmetic)", "not
      // loaded") is a gap that a later file fills: a collectives run first must not hide the
      // GEMM run's measured peak.
      auto [it, inserted] = out.context.emplace(k, v);
      if (!inserted && IsContextGap(it->second) && !IsContextGap(v)) it->second = v;
      if (!inserted && !IsContextGap(v) &&
          (k == schema::kCtxGpuPeakMeasured || k == schema::kCtxCpuPeakMeasured))
        it->second = MergePeaks(it->second, v);
    }
    for (const Entry& e : f.entries) {
      const size_t group = setups.group.at({e.run_name, fi});
      auto [it, inserted] = index.emplace(std::pair{e.run_name, group}, out.benches.size());
      if (inserted) {
        Bench b;
        b.run_name = e.run_name;
        b.name = e.run_name;
        if (auto split = setups.texts.find(e.run_name); split != setups.texts.end()) {
          b.setup = split->second[group];
          b.name = NameWithSetup(e.run_name, setups.keys.at(e.run_name)[group]);
        }
        b.parsed = ParseName(b.name);
        b.family = FamilyOf(b.name, b.parsed);
        out.benches.push_back(std::move(b));
        any_measured.push_back(0);
      }
      Bench& b = out.benches[it->second];
      if (b.files.empty() || b.files.back() != f.path) b.files.push_back(f.path);
      if (inserted && b.parsed) {  // a family's first case comes with its first file
        for (auto [key, prefix] : {std::pair{schema::kCtxCommand, kFamilyCommandKey},
                                   std::pair{schema::kCtxExecutable, kFamilyExecutableKey}})
          if (auto v = f.context.find(std::string(key)); v != f.context.end() && !v->second.empty())
            out.context.emplace(std::string(prefix) + b.family, v->second);
      }
      if (!e.label.empty()) b.label = e.label;
      if (e.result) {
        const ResultFields& r = *e.result;
        if (!r.network.empty()) b.network = r.network;
        if (!r.workload.empty()) b.workload = r.workload;
        if (r.verification.known()) b.verification = r.verification;
        if (r.roofline) b.roofline = r.roofline;
        if (r.kernels) b.kernels = r.kernels;
        if (!r.ignored.empty()) b.ignored = r.ignored;
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
        if (e.repetitions > 0)
          b.aggregate_repetitions = std::max(b.aggregate_repetitions, size_t(e.repetitions));
        if (e.aggregate_name == gbench::kMedian ||
            (e.aggregate_name == gbench::kMean && !b.aggregates.count(gbench::kMedian)))
          for (const auto& [k, v] : e.counters) b.aggregate_counters[k] = v;
      }
    }
  }
  return out;
}

}  // namespace dlb::report
