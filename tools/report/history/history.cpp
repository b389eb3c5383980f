// The history's writers: add (one run of benchmark JSON) and copy (every run of one store into
// another, as export and import). The tables are tables.h's; show.cpp and check.cpp read them.
#include "tools/report/history/history.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "fixtures/schema/schema.h"
#include "tools/report/history/store.h"
#include "tools/report/history/tables.h"
#include "tools/report/render/document.h"

namespace dlb::report {

using namespace history;  // the tables (tables.h)

namespace {

// A result the run holds already, as add compares it with a file's.
struct StoredResult {
  double median_ns, cv;
  int64_t reps;
  std::string status;
  // The same figures: what the same file gives again (times round-trip through the store).
  bool Same(const ResultRow& r) const {
    auto same = [](double a, double b) {
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
      return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
    };
    return same(median_ns, r.median_ns) && same(cv, r.cv) && reps == r.reps && status == r.status;
  }
};

std::map<std::string, StoredResult> StoredResults(Store& db, int64_t run_id) {
  auto q = db.Prepare("SELECT name, median_ns, cv, reps, status FROM results WHERE run_id = ?",
                      "results");
  q->Bind(1, run_id);
  std::map<std::string, StoredResult> out;
  while (q->Step()) out[q->Text(0)] = {q->Real(1), q->Real(2), q->Int(3), q->Text(4)};
  return out;
}

std::string NowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

AddResult HistoryAdd(const std::string& path, const std::vector<FileData>& files, RunMeta meta,
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
  AddResult result;
  std::optional<int64_t> inserted = InsertedId(*run);
  result.new_run = inserted.has_value();
  const int64_t run_id = inserted ? *inserted : RunIdOf(*db, key);
  const std::map<std::string, StoredResult> stored =
      result.new_run ? std::map<std::string, StoredResult>{} : StoredResults(*db, run_id);
  std::vector<ResultRow> rows;
  std::vector<std::pair<std::string, std::string>> kernel_tables;
  std::map<std::string, int64_t> file_ids;  // by the file's path
  std::string conflict;
  int conflicts = 0;
  for (const Bench& b : runs.benches) {
    nlohmann::json counters = nlohmann::json::object();
    for (const auto& c : b.CounterNames()) {
      double v = b.Counter(c);
      if (std::isfinite(v)) counters[c] = v;
    }
    bool m = b.measured();
    ResultRow row{b.name,
                  b.family,
                  m ? b.MedianNs() : NAN,
                  m ? b.Cv() : NAN,
                  static_cast<int64_t>(b.Repetitions()),
                  std::string(StatusName(b.status)),
                  b.message,
                  JsonText(counters)};
    const std::string file = b.files.empty() ? std::string() : b.files.front();
    if (auto it = stored.find(b.name); it != stored.end()) {
      if (it->second.Same(row)) {
        ++result.present;
      } else if (conflicts++ == 0) {
        conflict = file + ": " + b.name + " is in that run already with other figures (median " +
                   FormatTime(it->second.median_ns) + " stored, " + FormatTime(row.median_ns) +
                   " here";
      }
      continue;
    }
    auto [fid, fresh] = file_ids.emplace(file, 0);
    if (fresh) {
      auto fc = runs.file_contexts.find(file);
      fid->second = FileId(
          *db, run_id,
          JsonText(nlohmann::json(fc == runs.file_contexts.end() ? runs.context : fc->second)));
    }
    row.file_id = fid->second;
    if (b.kernels) kernel_tables.emplace_back(b.name, KernelsJson(*b.kernels));
    rows.push_back(std::move(row));
  }
  if (conflicts)
    throw InputError(
        db->name(), "add",
        conflict +
            (conflicts > 1 ? "; " + std::to_string(conflicts - 1) + " more cases differ"
                           : std::string()) +
            ") for commit " + meta.commit + ", machine " + meta.machine + ", date " + meta.date +
            "; nothing added (another --date makes it a run of its own)");
  InsertResults(*db, run_id, rows);
  InsertKernels(*db, run_id, kernel_tables);
  result.added = static_cast<int64_t>(rows.size());
  if (before_commit) before_commit();
  tx.Commit();
  return result;
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
  // A source older than version 4 has no files' contexts: its results keep their runs'.
  const bool files = HasFileContexts(*src);
  auto results = src->Prepare(
      std::string("SELECT name, family, median_ns, cv, reps, status, message, counters, ") +
          (files ? "file_id" : "NULL") + " FROM results WHERE run_id = ? ORDER BY name",
      "read results");
  std::unique_ptr<Query> contexts;
  if (files)
    contexts =
        src->Prepare("SELECT id, context FROM files WHERE run_id = ? ORDER BY id", "read files");
  auto insert = PrepareInsertRun(*dst);
  // A version 2 source has no kernel tables to copy.
  std::unique_ptr<Query> kernels;
  if (src->HasTable("kernels"))
    kernels = src->Prepare("SELECT name, kernels FROM kernels WHERE run_id = ? ORDER BY name",
                           "read kernels");
  while (runs->Step()) {
    for (int c = 1; c <= 7; ++c) insert->Bind(c, runs->Text(c));
    std::optional<int64_t> inserted = InsertedId(*insert);
    insert->Reset();
    // A run the destination has already (another binary's files added there, say) gets the cases
    // it lacks, as add gives them; those it holds with the same figures stay as they are.
    const int64_t id = inserted ? *inserted : RunIdOf(*dst, runs->Text(1));
    const std::map<std::string, StoredResult> stored =
        inserted ? std::map<std::string, StoredResult>{} : StoredResults(*dst, id);
    std::map<int64_t, std::string> file_contexts;  // the source's file id -> its context
    if (contexts) {
      contexts->Bind(1, runs->Int(0));
      while (contexts->Step()) file_contexts[contexts->Int(0)] = contexts->Text(1);
      contexts->Reset();
    }
    std::map<int64_t, int64_t> file_ids;  // the source's file id -> the destination's
    results->Bind(1, runs->Int(0));
    std::vector<ResultRow> rows;
    std::set<std::string> names;
    while (results->Step()) {
      ResultRow row{results->Text(0), results->Text(1), results->Real(2), results->Real(3),
                    results->Int(4),  results->Text(5), results->Text(6), results->Text(7)};
      if (auto it = stored.find(row.name); it != stored.end()) {
        if (!it->second.Same(row))
          throw InputError(dst->name(), "copy",
                           row.name + " is in run " + runs->Text(2) + " (machine " + runs->Text(4) +
                               ", date " + runs->Text(5) + ") already with other figures (median " +
                               FormatTime(it->second.median_ns) + " there, " +
                               FormatTime(row.median_ns) + " in " + RedactUrl(from) +
                               "); nothing copied");
        continue;
      }
      const int64_t source_file = results->Int(8);
      if (auto ctx = file_contexts.find(source_file); ctx != file_contexts.end()) {
        auto [fid, fresh] = file_ids.emplace(source_file, 0);
        if (fresh) fid->second = FileId(*dst, id, ctx->second);
        row.file_id = fid->second;
      }
      names.insert(row.name);
      rows.push_back(std::move(row));
    }
    results->Reset();
    InsertResults(*dst, id, rows);
    if (kernels) {
      kernels->Bind(1, runs->Int(0));
      std::vector<std::pair<std::string, std::string>> tables;
      while (kernels->Step())
        if (names.count(kernels->Text(0))) tables.emplace_back(kernels->Text(0), kernels->Text(1));
      kernels->Reset();
      InsertKernels(*dst, id, tables);
    }
    if (inserted)
      ++r.copied;
    else if (rows.empty())
      ++r.present;
    else
      ++r.extended;
    r.results += static_cast<int64_t>(rows.size());
  }
  tx.Commit();
  return r;
}

}  // namespace dlb::report
