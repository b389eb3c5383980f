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
};

// The INSERT of a run, RETURNING its id; a run that is there already (same run_key) returns no row.
std::unique_ptr<Query> PrepareInsertRun(Store& db);
// Steps an INSERT ... RETURNING id: the new row's id, or nullopt when nothing was inserted.
std::optional<int64_t> InsertedId(Query& insert);

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

// The newest `n` runs (of `machine`, empty: of any), oldest first.
std::vector<RunRow> LastRuns(Store& db, const std::string& machine, int n);
// name -> median per run (NaN where not measured), for the given runs; names holding `filter`
// (empty: every name). `order`, where given, gets the names sorted.
std::map<std::string, std::vector<double>> Medians(Store& db, const std::vector<RunRow>& runs,
                                                   const std::string& filter,
                                                   std::vector<std::string>* order);

}  // namespace dlb::report::history
