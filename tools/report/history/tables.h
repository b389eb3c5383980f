// The history's tables, shared by its commands (history.cpp: add and copy; show.cpp; check.cpp):
// the schema version and its upgrade, the rows add and copy write, kernel tables as stored JSON,
// and the reads of the newest runs and their medians that show and check start from.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tools/report/history/store.h"
#include "tools/report/read/entry.h"

namespace dlb::report::history {

// For readers: a dlbench history of a version this build can read; else InputError.
void RequireSchema(Store& db);
// For writers, inside their transaction: creates or upgrades the tables, so the upgrade lands
// with the write or not at all.
void EnsureSchema(Store& db);

// JSON as the tables store it: compact, invalid UTF-8 replaced.
std::string JsonText(const nlohmann::json& j);

struct RunRow {
  int64_t id;
  std::string commit, branch, machine, date;
};

struct ResultRow {
  std::string name, family;
  double median_ns, cv;
  int64_t reps;
  std::string status, message, counters;
  int64_t file_id = 0;  // the files row of its context; 0: none (its run's context)
};

// The INSERT of a run, RETURNING its id; a run that is there already (same run_key) returns no row.
std::unique_ptr<Query> PrepareInsertRun(Store& db);
// Steps an INSERT ... RETURNING id: the new row's id, or nullopt when nothing was inserted.
std::optional<int64_t> InsertedId(Query& insert);
// The id of the run stored under `run_key`.
int64_t RunIdOf(Store& db, const std::string& run_key);

// A benchmark file's context (as JSON text) in a run: the id of the row holding that text, added
// when the run has none (a file added twice keeps one row).
int64_t FileId(Store& db, int64_t run_id, const std::string& context);
// Whether the store keeps files' contexts (version 4 on); older ones read the runs' contexts.
bool HasFileContexts(Store& db);

// A context as stored: its text fields (numbers and booleans as the JSON writes them).
std::map<std::string, std::string> ParseContext(const std::string& text);

void InsertResults(Store& db, int64_t run_id, const std::vector<ResultRow>& rows);
// (case name, kernel table as JSON) per case of the run that recorded one.
void InsertKernels(Store& db, int64_t run_id,
                   const std::vector<std::pair<std::string, std::string>>& tables);

// A kernel table as the JSON the harness writes (fixtures/schema/schema.h's names), and back.
std::string KernelsJson(const KernelTable& t);
// The stored table; nullopt (with `ignored` saying why) when the text is not one.
std::optional<KernelTable> ParseKernels(const std::string& text, std::string* ignored);

// The runs' ids for an SQL list, "4,5,7"; `column`, where given, maps each id to its run's index.
std::string RunIdList(const std::vector<RunRow>& runs,
                      std::unordered_map<int64_t, size_t>* column = nullptr);

// Which runs a command reads: those of one machine and one branch (each unset: any).
struct RunFilter {
  std::optional<std::string> machine, branch;
};
// The filter with what it leaves unset taken from the newest run that matches what it sets: by
// default a command reads the newest run's machine and branch. Throws InputError when no run
// matches.
RunFilter NewestRunFilter(Store& db, const RunFilter& given);
// The WHERE clause of `filter` over the runs table ("" when it sets nothing), and its binding from
// parameter `first` on (the next free parameter is returned).
std::string RunWhere(const RunFilter& filter);
int BindRunFilter(Query& q, const RunFilter& filter, int first);

// The newest `n` runs that `filter` selects, oldest first.
std::vector<RunRow> LastRuns(Store& db, const RunFilter& filter, int n);
// name -> median per run (NaN where not measured), for the given runs; names holding `filter`
// (empty: every name). `order`, where given, gets the names sorted.
std::map<std::string, std::vector<double>> Medians(Store& db, const std::vector<RunRow>& runs,
                                                   const std::string& filter,
                                                   std::vector<std::string>* order);

}  // namespace dlb::report::history
