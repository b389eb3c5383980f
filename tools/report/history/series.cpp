#include "tools/report/history/series.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/kernel_diff.h"
#include "tools/report/analyses/libraries.h"

namespace dlb::report::history {

std::string BuildKey(const std::map<std::string, std::string>& ctx) {
  static const std::pair<std::string_view, const char*> kParts[] = {{schema::kCtxTier, "tier "},
                                                                    {schema::kCtxBuildType, ""}};
  std::string key;
  for (const auto& [k, label] : kParts) {
    auto it = ctx.find(std::string(k));
    if (it == ctx.end() || it->second.empty()) continue;
    key += (key.empty() ? "" : ", ") + std::string(label) + it->second;
  }
  return key.empty() ? "unnamed build" : key;
}

std::vector<std::string> Machines(Store& db) {
  auto q = db.Prepare("SELECT DISTINCT machine FROM runs ORDER BY machine", "runs");
  std::vector<std::string> out;
  while (q->Step()) out.push_back(q->Text(0));
  return out;
}

std::vector<RunInfo> FilteredRuns(Store& db, const RunFilter& filter, int n) {
  std::string sql = "SELECT id, commit_id, branch, machine, date, context FROM runs" +
                    RunWhere(filter) + " ORDER BY date DESC, id DESC";
  if (n > 0) sql += " LIMIT " + std::to_string(n);
  auto q = db.Prepare(sql, "runs");
  BindRunFilter(*q, filter, 1);
  std::vector<RunInfo> out;
  while (q->Step())
    out.push_back(
        {{q->Int(0), q->Text(1), q->Text(2), q->Text(3), q->Text(4)}, ParseContext(q->Text(5))});
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<double> CaseSeries::Medians() const {
  std::vector<double> v;
  v.reserve(points.size());
  for (const Point& p : points) v.push_back(p.median_ns);
  return v;
}

std::vector<CaseSeries> ReadSeries(Store& db, const std::vector<RunInfo>& runs) {
  std::vector<CaseSeries> out;
  if (runs.empty()) return out;
  std::vector<RunRow> rows;
  for (const RunInfo& r : runs) rows.push_back(r.row);
  std::unordered_map<int64_t, size_t> col;
  const std::string ids = RunIdList(rows, &col);
  using Shared = std::shared_ptr<const Context>;
  struct Read {
    Shared context;
    std::string build;
  };
  std::vector<Read> run_contexts;
  for (const RunInfo& r : runs) run_contexts.push_back({std::make_shared<Context>(r.context), {}});
  for (Read& r : run_contexts) r.build = BuildKey(*r.context);
  std::unordered_map<int64_t, Read> files;
  const bool with_files = HasFileContexts(db);
  if (with_files) {
    auto f = db.Prepare("SELECT id, context FROM files WHERE run_id IN (" + ids + ")", "files");
    while (f->Step()) {
      auto c = std::make_shared<Context>(ParseContext(f->Text(1)));
      std::string build = BuildKey(*c);
      files[f->Int(0)] = {std::move(c), std::move(build)};
    }
  }
  auto q = db.Prepare(std::string("SELECT run_id, name, family, median_ns, cv, reps, ") +
                          (with_files ? "file_id" : "NULL") + " FROM results WHERE run_id IN (" +
                          ids + ")",
                      "results");
  std::map<std::pair<std::string, std::string>, CaseSeries> by;
  std::map<std::pair<std::string, std::string>, size_t> first;  // the build's first run
  while (q->Step()) {
    double median = q->Real(3);
    if (!std::isfinite(median) || median <= 0) continue;
    size_t run = col[q->Int(0)];
    auto file = files.find(q->Int(6));
    const Read& from = file == files.end() ? run_contexts[run] : file->second;
    std::pair<std::string, std::string> key{q->Text(1), from.build};
    CaseSeries& s = by[key];
    if (s.name.empty()) {
      s.name = key.first;
      s.family = q->Text(2);
      s.build = key.second;
    }
    s.points.push_back({run, median, q->Real(4), q->Int(5), from.context});
  }
  for (auto& [key, s] : by) {
    std::sort(s.points.begin(), s.points.end(),
              [](const Point& a, const Point& b) { return a.run < b.run; });
    first[key] = s.points.front().run;
  }
  for (auto& [key, s] : by) out.push_back(std::move(s));
  std::stable_sort(out.begin(), out.end(), [&](const CaseSeries& a, const CaseSeries& b) {
    if (a.name != b.name) return a.name < b.name;
    return first[{a.name, a.build}] < first[{b.name, b.build}];
  });
  return out;
}

KernelTables::KernelTables(Store& db, const std::vector<RunInfo>& runs) {
  if (!db.HasTable("kernels") || runs.empty()) return;
  std::vector<RunRow> rows;
  for (const RunInfo& r : runs) rows.push_back(r.row);
  q_ = db.Prepare("SELECT run_id, kernels FROM kernels WHERE name = ? AND run_id IN (" +
                      RunIdList(rows, &col_) + ")",
                  "kernels");
}

std::map<size_t, std::string> KernelTables::Of(const std::string& name) {
  std::map<size_t, std::string> out;
  if (!q_) return out;
  q_->Bind(1, name);
  while (q_->Step()) out[col_[q_->Int(0)]] = q_->Text(1);
  q_->Reset();
  return out;
}

KernelsAcross KernelDiffAcross(const CaseSeries& s, const ChangePoint& c,
                               const std::map<size_t, std::string>& k) {
  KernelsAcross out;
  if (k.empty()) {
    out.summary = "no kernel tables stored for this case (runs without --dlb_kernels=on)";
    return out;
  }
  const Point *before = nullptr, *after = nullptr;
  for (size_t i = c.at; i-- > c.from && !before;)
    if (k.count(s.points[i].run)) before = &s.points[i];
  for (size_t i = c.at; i < c.to && !after; ++i)
    if (k.count(s.points[i].run)) after = &s.points[i];
  if (!before || !after) {
    out.summary = "no run on each side of it recorded a kernel table";
    return out;
  }
  std::string why;
  std::optional<KernelTable> a = ParseKernels(k.at(before->run), &why);
  std::optional<KernelTable> b = a ? ParseKernels(k.at(after->run), &why) : std::nullopt;
  if (!a || !b) {
    out.summary = why;
    return out;
  }
  KernelDiff diff = DiffKernels(*a, *b, before->median_ns, after->median_ns);
  out.summary = "run #" + std::to_string(before->run + 1) + " → run #" +
                std::to_string(after->run + 1) + ": " + KernelDiffSummary(diff);
  out.table = KernelDiffTable(diff, s.name + ": kernels across the change point (run #" +
                                        std::to_string(before->run + 1) + " → run #" +
                                        std::to_string(after->run + 1) + ")");
  return out;
}

}  // namespace dlb::report::history
