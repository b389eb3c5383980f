// history show: the newest runs of a machine and branch and, per benchmark, its median over them
// (a sparkline and a chart each).
#include <algorithm>
#include <cmath>

#include "tools/report/analyses/stats.h"
#include "tools/report/history/history.h"
#include "tools/report/history/store.h"
#include "tools/report/history/tables.h"

namespace dlb::report {

using namespace history;  // the tables (tables.h)

namespace {

const char* kSpark[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

std::string Sparkline(const std::vector<double>& v) {
  double lo = INFINITY, hi = -INFINITY;
  for (double x : v)
    if (std::isfinite(x)) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  std::string out;
  for (double x : v) {
    if (!std::isfinite(x)) {
      out += " ";
      continue;
    }
    int i = hi > lo ? static_cast<int>(std::lround((x - lo) / (hi - lo) * 7)) : 3;
    out += kSpark[std::clamp(i, 0, 7)];
  }
  return out;
}

}  // namespace

Document HistoryShow(const std::string& path, const ShowOptions& opt, const HistoryOptions& hopt) {
  auto store = OpenStore(path, false, hopt);
  Store& db = *store;
  RequireSchema(db);
  Document d;
  d.title = "dlbench history";
  d.short_markdown_lines = true;
  // An empty store shows that it is empty; else the newest run names what is not chosen.
  RunFilter filter{opt.machine, opt.branch};
  if (!LastRuns(db, {}, 1).empty()) {
    filter = NewestRunFilter(db, filter);
    d.notes.push_back("Runs of machine " + *filter.machine + ", branch " +
                      (filter.branch->empty() ? "(none)" : *filter.branch) +
                      " (--machine and --branch choose another).");
  }
  std::vector<RunRow> runs = LastRuns(db, filter, opt.last);
  Section rs;
  rs.title = "Runs";
  Table rt;
  rt.columns = {{"#", "run"},
                {"date", "date"},
                {"commit", "commit"},
                {"branch", "branch"},
                {"machine", "machine"}};
  for (size_t i = 0; i < runs.size(); ++i)
    rt.rows.push_back({Cell(std::to_string(i + 1), static_cast<double>(runs[i].id)),
                       Cell(runs[i].date), Cell(runs[i].commit), Cell(runs[i].branch),
                       Cell(runs[i].machine)});
  rs.tables.push_back(std::move(rt));
  d.sections.push_back(std::move(rs));
  if (runs.empty()) {
    d.notes.push_back("The database holds no runs yet.");
    return d;
  }
  std::vector<std::string> names;
  auto results = Medians(db, runs, opt.filter, &names);
  Section ts;
  ts.title = "Trend (median time per run, oldest first)";
  Table t;
  t.columns = {{"benchmark", "name"}};
  for (size_t i = 0; i < runs.size(); ++i)
    t.columns.push_back({"#" + std::to_string(i + 1), "run_" + std::to_string(runs[i].id)});
  t.columns.push_back({"trend", "trend"});
  t.columns.push_back({"last vs first", "change"});
  int charts = 0;
  for (const auto& name : names) {
    const auto& v = results[name];
    std::vector<Cell> row{Cell(name)};
    double first = NAN, last = NAN;
    Series s{name, {}, true, true};
    for (size_t i = 0; i < v.size(); ++i) {
      row.emplace_back(FormatTime(v[i]), v[i]);
      if (std::isfinite(v[i])) {
        if (!std::isfinite(first)) first = v[i];
        last = v[i];
        s.points.emplace_back(static_cast<double>(i + 1), v[i]);
      }
    }
    row.emplace_back(Sparkline(v));
    double ch = std::isfinite(first) ? RelativeChange(first, last) : NAN;
    row.emplace_back(FormatSigned(ch), ch);
    t.rows.push_back(std::move(row));
    if (charts < opt.max_charts && s.points.size() >= 2) {
      Chart c;
      c.title = name;
      c.x_label = "run";
      c.y_label = "median time (ns)";
      c.series.push_back(std::move(s));
      ts.charts.push_back(std::move(c));
      ++charts;
    }
  }
  if (charts < static_cast<int>(names.size()))
    ts.notes.push_back("Charts for the first " + std::to_string(charts) + " of " +
                       std::to_string(names.size()) +
                       " benchmarks; narrow with --filter or raise --max-charts.");
  ts.tables.push_back(std::move(t));
  d.sections.push_back(std::move(ts));
  return d;
}

}  // namespace dlb::report
