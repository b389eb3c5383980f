// The history's writers: add (one run of benchmark JSON) and copy (every run of one store into
// another, as export and import). The tables are tables.h's; show.cpp and check.cpp read them.
#include "tools/report/history/history.h"

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>

#include "fixtures/schema/schema.h"
#include "tools/report/history/store.h"
#include "tools/report/history/tables.h"

namespace dlb::report {

using namespace history;  // the tables (tables.h)

namespace {

std::string NowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

bool HistoryAdd(const std::string& path, const std::vector<FileData>& files, RunMeta meta,
                const HistoryOptions& opt, const std::function<void()>& before_commit) {
  MergedRuns runs = Merge(files);
  if (meta.machine.empty()) meta.machine = ContextValue(runs.context, schema::kCtxHostName);
  if (meta.machine.empty()) meta.machine = "unknown";
  if (meta.date.empty()) meta.date = ContextValue(runs.context, schema::kCtxDate);
  if (meta.date.empty()) meta.date = NowUtc();
  if (meta.commit.empty()) meta.commit = ContextValue(runs.context, schema::kCtxGitRevision);
  if (meta.commit.empty()) meta.commit = "unknown";
  if (meta.branch.empty()) meta.branch = ContextValue(runs.context, schema::kCtxGitBranch);
  nlohmann::json ctx(runs.context);
  std::string key = meta.commit + "\x1f" + meta.machine + "\x1f" + meta.date;

  auto db = OpenStore(path, true, opt);
  WriteTransaction tx(*db);
  EnsureSchema(*db);
  auto run = PrepareInsertRun(*db);
  run->Bind(1, key).Bind(2, meta.commit).Bind(3, meta.branch).Bind(4, meta.machine);
  run->Bind(5, meta.date).Bind(6, NowUtc());
  run->Bind(7, JsonText(ctx));
  std::optional<int64_t> run_id = InsertedId(*run);
  if (!run_id) {  // the run is there already
    tx.Commit();
    return false;
  }
  std::vector<ResultRow> rows;
  rows.reserve(runs.benches.size());
  std::vector<std::pair<std::string, std::string>> kernel_tables;
  for (const Bench& b : runs.benches) {
    if (b.kernels) kernel_tables.emplace_back(b.name, KernelsJson(*b.kernels));
    nlohmann::json counters = nlohmann::json::object();
    for (const auto& c : b.CounterNames()) {
      double v = b.Counter(c);
      if (std::isfinite(v)) counters[c] = v;
    }
    bool m = b.measured();
    rows.push_back({b.name, b.family, m ? b.MedianNs() : NAN, m ? b.Cv() : NAN,
                    static_cast<int64_t>(b.Repetitions()), std::string(StatusName(b.status)),
                    b.message, JsonText(counters)});
  }
  InsertResults(*db, *run_id, rows);
  InsertKernels(*db, *run_id, kernel_tables);
  if (before_commit) before_commit();
  tx.Commit();
  return true;
}

CopyResult HistoryCopy(const std::string& from, const std::string& to, const HistoryOptions& hopt) {
  auto src = OpenStore(from, false, hopt);
  RequireSchema(*src);
  auto dst = OpenStore(to, true, hopt);
  WriteTransaction tx(*dst);
  EnsureSchema(*dst);
  CopyResult r;
  auto runs = src->Prepare(
      "SELECT id, run_key, commit_id, branch, machine, date, added, context FROM runs ORDER BY id",
      "read runs");
  auto results = src->Prepare(
      "SELECT name, family, median_ns, cv, reps, status, message, counters FROM results "
      "WHERE run_id = ? ORDER BY name",
      "read results");
  auto insert = PrepareInsertRun(*dst);
  // A version 2 source has no kernel tables to copy.
  std::unique_ptr<Query> kernels;
  if (src->HasTable("kernels"))
    kernels = src->Prepare("SELECT name, kernels FROM kernels WHERE run_id = ? ORDER BY name",
                           "read kernels");
  while (runs->Step()) {
    for (int c = 1; c <= 7; ++c) insert->Bind(c, runs->Text(c));
    std::optional<int64_t> id = InsertedId(*insert);
    insert->Reset();
    if (!id) {
      ++r.present;
      continue;
    }
    results->Bind(1, runs->Int(0));
    std::vector<ResultRow> rows;
    while (results->Step())
      rows.push_back({results->Text(0), results->Text(1), results->Real(2), results->Real(3),
                      results->Int(4), results->Text(5), results->Text(6), results->Text(7)});
    results->Reset();
    InsertResults(*dst, *id, rows);
    if (kernels) {
      kernels->Bind(1, runs->Int(0));
      std::vector<std::pair<std::string, std::string>> tables;
      while (kernels->Step()) tables.emplace_back(kernels->Text(0), kernels->Text(1));
      kernels->Reset();
      InsertKernels(*dst, *id, tables);
    }
    ++r.copied;
    r.results += static_cast<int64_t>(rows.size());
  }
  tx.Commit();
  return r;
}

}  // namespace dlb::report
