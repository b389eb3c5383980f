// The site's pages as HTML (site.h writes them): what each page shows, gathered by site.cpp, and
// the functions that turn it into one self-contained page each (inline style, script and SVG).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/report/analyses/changepoints.h"
#include "tools/report/render/document.h"

namespace dlb::report::site {

// A file name for a case or a machine: its characters that are safe in a URL and a file system,
// and a hash of the whole name, so that two names never share a file.
std::string Slug(const std::string& name);

// One side of a change point: its runs (#first..#last, positions among the machine's runs read)
// and their medians' figures.
struct Side {
  size_t runs = 0, first_run = 0, last_run = 0;
  std::string first_commit, last_commit;
  double median = NAN, min = NAN, max = NAN, cv = NAN;  // cv: between runs
};

struct ChangeView {
  std::string anchor;  // the element id the chart's marker links to
  size_t index = 0;    // its position among the series' change points
  size_t point = 0;    // index of the first point after it in the series
  double change = 0, p = 1;
  Side before, after;
  std::string date;                  // of the first run after it
  std::vector<std::string> context;  // the machine's context that changed across it
  // The case's own libraries, driver or measuring flags that changed across it
  // ("cuDNN 9.14.0 → 9.19.0 at #17", environment.h); then no bisect.
  std::string environment;
  std::string repro, bisect;  // bisect: slower changes only
  std::string kernels;        // the kernel diff's summary, or why there is none
  std::optional<Table> kernel_table;
};

struct PointView {
  size_t run = 0;  // #run among the machine's runs read
  double median = 0, cv = 0;
  int64_t reps = 0;
  std::string date, commit, branch;
};

struct SeriesView {
  std::string build, anchor;
  std::vector<PointView> points;
  std::vector<ChangeView> changes;
};

struct CasePage {
  std::string name, machine, file;
  std::vector<SeriesView> series;  // one per build the case ran in
};

struct IndexRow {
  std::string name, family, device, backend, dtype, build, page;
  std::vector<double> medians;
  double latest = NAN;
  size_t latest_run = 0;
  std::string verdict;  // slower, faster (the last change point), none, short (history)
  size_t changes = 0;
  double last_change = NAN;
  size_t last_change_run = 0;
};

struct MachineSummary {
  std::string name, dir, first_date, last_date;
  size_t runs = 0, cases = 0, regressed = 0, improved = 0;
  std::vector<std::string> families;  // sorted: each a link to the index filtered to it
};

struct MachinePage {
  std::string name;
  std::vector<std::string> keys;  // context keys, the columns
  struct Run {
    std::string date, commit, branch;
    std::vector<std::string> values;  // per key
  };
  std::vector<Run> runs;  // oldest first
};

std::string CaseHtml(const CasePage& page);
std::string MachineIndexHtml(const MachineSummary& machine, const std::vector<IndexRow>& rows);
std::string MachineHtml(const MachinePage& page);
// `branch`: the one branch whose runs the site shows.
std::string SiteIndexHtml(const std::vector<MachineSummary>& machines, const std::string& branch,
                          const ChangePointOptions& options);

}  // namespace dlb::report::site
