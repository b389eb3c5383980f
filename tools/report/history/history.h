// Results of many runs in SQLite or PostgreSQL (history_store.h): add (idempotent, one
// transaction), show (trend), check (the newest run against the recent window: median and MAD;
// and the change points of each case over the longer history, changepoints.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tools/report/analyses/changepoints.h"
#include "tools/report/history/store.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

struct RunMeta {
  std::string commit, branch, machine, date;  // empty: taken from the JSON context
};

// How long the commands wait for their store: the store's own options.
using HistoryOptions = StoreOptions;

struct AddResult {
  bool new_run = false;  // the run (commit, machine, date) was not in the store
  int64_t added = 0;     // cases written
  int64_t present = 0;   // cases the run held already with the same figures: left as they are
  explicit operator bool() const { return added > 0; }
};

// Adds the cases of `files` (merged) to the run their commit, machine and date name: a new run, or
// one that other files (other binaries of the same run) were added to before. Each file's own
// context is stored with the cases it measured. A case the run holds already with the same
// figures is left as it is (adding a file twice adds nothing); with other figures it is an
// InputError and nothing is added. `before_commit` runs inside the transaction (tests use it to
// kill the process half-way). Throws InputError naming the database.
AddResult HistoryAdd(const std::string& db, const std::vector<FileData>& files, RunMeta meta,
                     const HistoryOptions& options = {},
                     const std::function<void()>& before_commit = {});

struct ShowOptions {
  int last = 10;        // runs in the trend
  std::string filter;   // substring of benchmark names
  int max_charts = 40;  // HTML charts, one per benchmark
  // The runs of one machine and branch; what is unset is the newest run's (of what is set).
  std::optional<std::string> machine, branch;
};
Document HistoryShow(const std::string& db, const ShowOptions& options,
                     const HistoryOptions& hopt = {});

struct CheckOptions {
  // The series judged: one machine's runs on one branch; what is unset is the newest run's (of
  // what is set), so a check judges the machine and branch of the run just added.
  std::optional<std::string> machine, branch;
  int window = 10;          // runs of that machine and branch before the judged ones
  double threshold = 0.05;  // relative change that matters
  double k = 3;             // and more than k times the run-to-run noise (gate.h)
  int min_history = 3;      // fewer previous values: no verdict
  // Change points (FindChangePoints, as the site finds them) over the newest `history` runs of the
  // machine of the newest run's build, and whether a slower last change point fails the check.
  int history = 100;
  ChangePointOptions changes;
  bool steps_fail = true;
  // A slowdown where the case's own libraries, driver or measuring flags changed (environment.h)
  // is named and, unless this is set, does not fail the check.
  bool fail_on_env_change = false;
  // The gate (analyses/gate.h): a newest-run slowdown fails once it holds for the newest `hold`
  // runs, each against the `window` runs before them. With `rerun` set (--confirm), the newest
  // run alone is judged and each slower case is re-run instead: `rerun` runs the case's repro
  // command and returns its repetitions' times in ns (empty, with `why`, when it could not), and
  // the U test against the window decides (at `confirm_alpha`, adjusted across the re-runs).
  int hold = 2;
  std::function<std::vector<double>(const std::string& name, const std::string& repro,
                                    std::string* why)>
      rerun;
  double confirm_alpha = 0.05;
};
struct CheckResult {
  Document doc;
  int regressions = 0;       // confirmed newest-run slowdowns (against the window's median)
  int unconfirmed = 0;       // newest-run slowdowns not confirmed: reported, not failed
  int step_regressions = 0;  // cases whose last change point is slower (some also counted above)
  // Cases slower (the newest run, or their last change point) where their environment changed:
  // not counted above.
  int environment_changes = 0;
  int exit_code = 0;
};
CheckResult HistoryCheck(const std::string& db, const CheckOptions& options,
                         const HistoryOptions& hopt = {});

struct CopyResult {
  int copied = 0;    // runs the destination did not have
  int extended = 0;  // runs it had (same commit, machine and date) that lacked some cases
  int present = 0;   // runs it had with every case: left as they are
  int64_t results = 0;
};
// Copies every run of `from` into `to` (either store; `to` is created or upgraded as by add), in
// one transaction of `to`: a failure leaves it as it was. A run `to` holds already gets the cases
// it lacks, each with its own file's context, as add gives them (copying twice copies nothing); a
// case it holds with other figures is an InputError. `export` and `import` are this.
CopyResult HistoryCopy(const std::string& from, const std::string& to,
                       const HistoryOptions& hopt = {});

}  // namespace dlb::report
