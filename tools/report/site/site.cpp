// The static history site (site.h): reads every machine's runs and series, finds their change
// points, and writes the pages (page.cpp's HTML).
#include "tools/report/site/site.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "fixtures/schema/naming.h"
#include "fixtures/schema/schema.h"
#include "tools/report/analyses/bisect.h"
#include "tools/report/analyses/kernel_diff.h"
#include "tools/report/analyses/libraries.h"
#include "tools/report/analyses/repro.h"
#include "tools/report/analyses/stats.h"
#include "tools/report/history/environment.h"
#include "tools/report/history/series.h"
#include "tools/report/history/tables.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/output.h"
#include "tools/report/site/page.h"

namespace dlb::report {

using namespace history;
using namespace site;

namespace {

// The context keys a machine page follows over time, and a change point names when they change
// across it: what moves a time without being a build of its own (series.h).
const std::string_view kMachineKeys[] = {
    schema::kCtxGpuName,       schema::kCtxGpuDriver,         schema::kCtxCudaDriverApi,
    schema::kCtxGpuMaxSmClock, schema::kCtxMonitorMaxSmClock, schema::kCtxGpuMaxMemClock,
    schema::kCtxCpuModel,      schema::kCtxCpuMaxMhz,         schema::kCtxMhzPerCpu,
    schema::kCtxCpuThreads,    schema::kCtxCompiler,          schema::kCtxCpuScalingEnabled};
// And the build's own keys, shown on the machine page beside them.
const std::string_view kBuildKeys[] = {
    schema::kCtxTier,         schema::kCtxBuildType,        schema::kCtxOnednnVersion,
    schema::kCtxCudaRuntime,  schema::kCtxCublasVersion,    schema::kCtxCudnnVersion,
    schema::kCtxTorchVersion, schema::kCtxTurboJpegVersion, schema::kCtxNcclVersion};

// The binary a file's context is of: its executable's name, else the family of a case it measured.
std::string BinaryOf(const Context& c, const std::string& family) {
  const std::string exe = ContextValue(c, schema::kCtxExecutable);
  const std::string name = exe.substr(exe.find_last_of('/') + 1);
  return name.empty() ? family : name;
}

// The machine page: per run the contexts of the files that measured its cases, each binary's own
// (a run of several binaries keeps each one's libraries, whichever file came first), a run
// without any its own context. A key on which every run's files agree is one column; one they
// differ on is a column per binary ("cudnn (bench_attn)").
MachinePage MachinePageOf(const std::string& machine, const std::vector<RunInfo>& runs,
                          const std::vector<CaseSeries>& series) {
  std::vector<std::map<std::string, const Context*>> files(runs.size());  // per run, by binary
  for (const CaseSeries& s : series)
    for (const Point& p : s.points)
      files[p.run].emplace(BinaryOf(*p.context, s.family), p.context.get());
  std::vector<std::map<std::string, std::string>> libraries(runs.size());  // per run and binary
  std::vector<std::string> names;  // the libraries some file loaded, first seen first
  for (size_t i = 0; i < runs.size(); ++i) {
    if (files[i].empty()) files[i][""] = &runs[i].context;
    for (const auto& [binary, c] : files[i])
      for (const auto& [name, version] : LibraryVersions(*c)) {
        libraries[i][binary + "\x1f" + name] = version;
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
  }
  // A value of `key` per run and binary; a library's from its versions.
  auto value = [&](size_t run, const std::string& binary, const std::string& key, bool library) {
    if (library) {
      auto it = libraries[run].find(binary + "\x1f" + key);
      return it == libraries[run].end() ? std::string() : it->second;
    }
    return ContextValue(*files[run].at(binary), key);
  };
  MachinePage mp;
  mp.name = machine;
  for (size_t i = 0; i < runs.size(); ++i)
    mp.runs.push_back({runs[i].row.date, runs[i].row.commit, runs[i].row.branch, {}});
  auto add = [&](const std::string& key, bool library) {
    std::vector<std::string> binaries;  // every binary that gives the key a value
    bool agree = true;
    for (size_t i = 0; i < runs.size(); ++i) {
      std::string seen;
      for (const auto& [binary, c] : files[i]) {
        const std::string v = value(i, binary, key, library);
        if (v.empty()) continue;
        if (std::find(binaries.begin(), binaries.end(), binary) == binaries.end())
          binaries.push_back(binary);
        agree &= seen.empty() || seen == v;
        seen = v;
      }
    }
    if (agree || binaries.size() < 2) {
      mp.keys.push_back(key);
      for (size_t i = 0; i < runs.size(); ++i) {
        std::string v;
        for (const auto& [binary, c] : files[i])
          if (v.empty()) v = value(i, binary, key, library);
        mp.runs[i].values.push_back(v);
      }
      return;
    }
    for (const std::string& binary : binaries) {
      mp.keys.push_back(key + " (" + binary + ")");
      for (size_t i = 0; i < runs.size(); ++i)
        mp.runs[i].values.push_back(files[i].count(binary) ? value(i, binary, key, library) : "");
    }
  };
  for (std::string_view k : kMachineKeys) add(std::string(k), false);
  for (std::string_view k : kBuildKeys) add(std::string(k), false);
  for (const std::string& name : names) add(name, true);
  return mp;
}

// What changed in the machine's context between two points of a case, as the files that measured
// them recorded it: "gpu_driver 550.54 → 560.28".
std::vector<std::string> ContextChanges(const Context& a, const Context& b) {
  std::vector<std::string> out;
  for (std::string_view k : kMachineKeys) {
    std::string x = ContextValue(a, k), y = ContextValue(b, k);
    if (x != y)
      out.push_back(std::string(k) + " " + (x.empty() ? "-" : x) + " → " + (y.empty() ? "-" : y));
  }
  return out;
}

Side Describe(const CaseSeries& s, size_t from, size_t to, const std::vector<RunInfo>& runs) {
  Side d;
  std::vector<double> v;
  for (size_t i = from; i < to; ++i) v.push_back(s.points[i].median_ns);
  d.runs = v.size();
  d.first_run = s.points[from].run + 1;
  d.last_run = s.points[to - 1].run + 1;
  d.first_commit = runs[s.points[from].run].row.commit;
  d.last_commit = runs[s.points[to - 1].run].row.commit;
  d.median = Median(v);
  d.min = *std::min_element(v.begin(), v.end());
  d.max = *std::max_element(v.begin(), v.end());
  double mean = Mean(v);
  d.cv = v.size() > 1 && mean > 0 ? StdDev(v) / mean : NAN;
  return d;
}

std::string SeriesVerdict(const std::vector<ChangePoint>& cps, bool searched) {
  if (!searched) return "short";
  if (cps.empty()) return "none";
  return cps.back().change > 0 ? "slower" : "faster";
}

}  // namespace

SiteResult WriteSite(const std::string& path, const SiteOptions& opt, const StoreOptions& sopt) {
  auto store = OpenStore(path, false, sopt);
  Store& db = *store;
  RequireSchema(db);
  namespace fs = std::filesystem;
  const fs::path out(opt.out_dir);
  auto make = [](const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw InputError(dir.string(), "", "cannot create the folder: " + ec.message());
  };
  make(out);
  SiteResult result;
  std::vector<MachineSummary> machines;
  nlohmann::json changes = nlohmann::json::array();
  const size_t min_points = 2 * static_cast<size_t>(std::max(opt.changes.min_segment, 1));
  const RunFilter chosen = NewestRunFilter(db, {opt.machine, opt.branch});
  std::vector<std::string> machine_list = Machines(db);
  if (opt.machine) machine_list = {*opt.machine};
  for (const std::string& machine : machine_list) {
    std::vector<RunInfo> runs = FilteredRuns(db, {machine, chosen.branch}, opt.last);
    if (runs.empty()) continue;
    MachineSummary ms;
    ms.name = machine;
    ms.dir = Slug(machine);
    ms.runs = runs.size();
    ms.first_date = runs.front().row.date;
    ms.last_date = runs.back().row.date;
    make(out / ms.dir / "case");
    std::vector<CaseSeries> series = ReadSeries(db, runs);
    KernelTables kernels(db, runs);
    std::vector<IndexRow> rows;
    // The series of one case name share a page: they are adjacent (ReadSeries' order).
    for (size_t i = 0; i < series.size();) {
      size_t j = i;
      while (j < series.size() && series[j].name == series[i].name) ++j;
      CasePage page;
      page.name = series[i].name;
      page.machine = machine;
      page.file = Slug(page.name) + ".html";
      std::map<size_t, std::string> ktables;
      bool kernels_read = false;
      for (size_t k = i; k < j; ++k) {
        const CaseSeries& s = series[k];
        SeriesView sv;
        sv.build = s.build;
        sv.anchor = "s" + std::to_string(k - i + 1);
        for (const Point& p : s.points) {
          const RunInfo& r = runs[p.run];
          sv.points.push_back(
              {p.run + 1, p.median_ns, p.cv, p.reps, r.row.date, r.row.commit, r.row.branch});
        }
        const bool searched = s.points.size() >= min_points;
        std::vector<ChangePoint> cps =
            searched ? FindChangePoints(s.Medians(), opt.changes) : std::vector<ChangePoint>{};
        if (!cps.empty() && !kernels_read) {
          ktables = kernels.Of(s.name);
          kernels_read = true;
        }
        for (size_t c = 0; c < cps.size(); ++c) {
          const ChangePoint& cp = cps[c];
          ChangeView v;
          v.anchor = sv.anchor + "-cp" + std::to_string(c + 1);
          v.index = c;
          v.point = cp.at;
          v.change = cp.change;
          v.p = cp.p;
          v.before = Describe(s, cp.from, cp.at, runs);
          v.after = Describe(s, cp.at, cp.to, runs);
          const RunInfo& last_before = runs[s.points[cp.at - 1].run];
          const RunInfo& first_after = runs[s.points[cp.at].run];
          const Context& before_ctx = *s.points[cp.at - 1].context;
          const Context& after_ctx = *s.points[cp.at].context;
          v.date = first_after.row.date;
          v.context = ContextChanges(before_ctx, after_ctx);
          v.environment = EnvironmentNote(EnvironmentChanges(before_ctx, after_ctx, s.family),
                                          s.points[cp.at].run + 1);
          v.repro = ReproCommand(after_ctx, s.name);
          v.bisect = cp.change > 0 && v.environment.empty()
                         ? StepBisect(last_before.row.commit, first_after.row.commit, s.name)
                         : "";
          KernelsAcross ka = KernelDiffAcross(s, cp, ktables);
          v.kernels = ka.summary;
          v.kernel_table = std::move(ka.table);
          changes.push_back({{"machine", machine},
                             {"case", s.name},
                             {"build", s.build},
                             {"run", s.points[cp.at].run + 1},
                             {"date", first_after.row.date},
                             {"commit", first_after.row.commit},
                             {"before_ns", cp.before},
                             {"after_ns", cp.after},
                             {"change", cp.change},
                             {"p", cp.p},
                             {"environment", v.environment}});
          sv.changes.push_back(std::move(v));
        }
        result.change_points += static_cast<int>(cps.size());
        IndexRow row;
        row.name = s.name;
        row.family = s.family;
        if (auto n = ParseName(s.name)) {
          if (row.family.empty()) row.family = n->family;
          row.device = n->device;
          row.backend = n->backend;
          row.dtype = n->Get(key::kDType);
        }
        row.build = s.build;
        row.page = "case/" + page.file + "#" + sv.anchor;
        row.medians = s.Medians();
        row.latest = s.points.back().median_ns;
        row.latest_run = s.points.back().run + 1;
        row.verdict = SeriesVerdict(cps, searched);
        row.changes = cps.size();
        if (!cps.empty()) {
          row.last_change = cps.back().change;
          row.last_change_run = s.points[cps.back().at].run + 1;
        }
        ms.regressed += row.verdict == "slower";
        ms.improved += row.verdict == "faster";
        rows.push_back(std::move(row));
        page.series.push_back(std::move(sv));
        ++result.cases;
      }
      WriteOutput((out / ms.dir / "case" / page.file).string(), CaseHtml(page));
      i = j;
    }
    std::stable_sort(rows.begin(), rows.end(), [](const IndexRow& a, const IndexRow& b) {
      double x = std::isfinite(a.last_change) ? std::fabs(a.last_change) : -1;
      double y = std::isfinite(b.last_change) ? std::fabs(b.last_change) : -1;
      return x > y;
    });
    ms.cases = rows.size();
    for (const IndexRow& r : rows) ms.families.push_back(r.family);
    std::sort(ms.families.begin(), ms.families.end());
    ms.families.erase(std::unique(ms.families.begin(), ms.families.end()), ms.families.end());
    WriteOutput((out / ms.dir / "index.html").string(), MachineIndexHtml(ms, rows));
    const MachinePage mp = MachinePageOf(machine, runs, series);
    WriteOutput((out / ms.dir / "machine.html").string(), MachineHtml(mp));
    result.runs += static_cast<int>(runs.size());
    machines.push_back(std::move(ms));
  }
  if (machines.empty()) throw InputError(db.name(), "runs", "the database holds no runs");
  result.machines = static_cast<int>(machines.size());
  WriteOutput((out / "changes.json").string(), JsonText(changes) + "\n");
  WriteOutput((out / "index.html").string(), SiteIndexHtml(machines, *chosen.branch, opt.changes));
  return result;
}

}  // namespace dlb::report
