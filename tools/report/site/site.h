// dlbench-report site: a static site of a history store, for a team to browse. No server and no
// CDN: every page carries its own style, script and SVG charts, and links only to pages of the
// site, so it opens from disk and from any static host. Per machine an index (a row per case and
// build: sparkline, latest median, last change point, filters), a page per case (medians over runs
// with their spread, change points marked and explained: both sides' figures, U test, kernel diff,
// repro and bisect commands) and a machine page (the context over time). Change points are
// history check's (changepoints.h over series.h), so the two never disagree.
#pragma once

#include <optional>
#include <string>

#include "tools/report/analyses/changepoints.h"
#include "tools/report/history/store.h"

namespace dlb::report {

struct SiteOptions {
  std::string out_dir;
  int last = 0;  // the newest runs per machine; 0: every run
  // One branch's runs (unset: the newest run's, of `machine` where set): a feature branch's runs
  // are never part of main's series. `machine`: that machine only (unset: every machine).
  std::optional<std::string> machine, branch;
  ChangePointOptions changes;
};

struct SiteResult {
  int machines = 0, cases = 0, runs = 0, change_points = 0;
};

// Writes the site under options.out_dir (made when missing; the pages it writes replace those of
// an earlier site there). Each file is written whole or not at all (WriteOutput). Throws
// InputError naming the database or the folder.
SiteResult WriteSite(const std::string& db, const SiteOptions& options,
                     const StoreOptions& store = {});

}  // namespace dlb::report
