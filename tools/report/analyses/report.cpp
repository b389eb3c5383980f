// The whole report (FullReport): the machine and counts, the findings, each family's first screen
// (overview_sections.cpp; train's own sections in place of its overview), then the details,
// collapsed in HTML: long tables, summary, speedup, sweeps, GPU scaling, train, inputs, labels.
#include "tools/report/analyses/report.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/findings.h"
#include "tools/report/analyses/gpu_scaling.h"
#include "tools/report/analyses/problems.h"
#include "tools/report/analyses/roofline.h"
#include "tools/report/analyses/serving.h"
#include "tools/report/analyses/speedup.h"
#include "tools/report/analyses/summary.h"
#include "tools/report/analyses/sweep.h"
#include "tools/report/analyses/train.h"
#include "tools/report/analyses/transformer.h"

namespace dlb::report {

namespace {

// The most rows a table of the first screen holds.
constexpr size_t kFirstScreenRows = 40;
// The most throughput charts a family shows there.
constexpr size_t kFirstScreenCharts = 6;

// "host: CPU (16 CPUs), GPU; run DATE; dlbench 0.1.0 at REVISION", of the runs' context.
// Where the input files span several hosts, CPU or GPU models, days or revisions (`mixed`, the
// Problems section's MixedInputs) it says so in their place: "3 hosts (a, b, c): ...; runs
// 2026-11-20..2026-11-27 (5 days); dlbench 0.1.0 at 9 revisions", never one file's as all's.
// The GPU is named only where one measured something; otherwise the findings say why there is
// none, once.
std::string MachineLine(const std::map<std::string, std::string>& ctx, bool gpu,
                        const std::map<std::string, std::vector<std::string>>& mixed) {
  auto spread = [&](const char* what) -> std::string {
    auto it = mixed.find(what);
    return it == mixed.end() ? "" : SpreadText(what, it->second);
  };
  std::string cpu = spread("CPU models");
  if (cpu.empty()) {
    cpu = ContextValue(ctx, schema::kCtxCpuModel);
    auto counts = mixed.find("CPU counts");
    const std::string cpus =
        counts == mixed.end() ? ContextValue(ctx, schema::kCtxNumCpus) : Join(counts->second, ", ");
    if (!cpus.empty()) cpu += (cpu.empty() ? "" : " ") + std::string("(") + cpus + " CPUs)";
  }
  std::string gpu_name;
  if (gpu) {
    gpu_name = spread("GPUs");
    if (gpu_name.empty()) gpu_name = ContextValue(ctx, schema::kCtxGpuName);
    // Cards alike by name but not the same card (the UUIDs differ): say how many.
    if (std::string cards = spread("GPU UUIDs"); !cards.empty())
      gpu_name = JoinNonEmpty({gpu_name, cards}, ", ");
  }
  std::string machine = JoinNonEmpty({cpu, gpu_name}, ", ");
  std::string host = spread("hosts");
  if (host.empty()) host = ContextValue(ctx, schema::kCtxHostName);
  if (!host.empty()) machine = host + (machine.empty() ? "" : ": " + machine);
  std::string date = ContextValue(ctx, schema::kCtxDate);
  date = date.empty() ? "" : "run " + date;
  if (auto it = mixed.find("dates"); it != mixed.end())
    date = "runs " + it->second.front() + ".." + it->second.back() + " (" +
           std::to_string(it->second.size()) + " days)";
  std::string version = ContextValue(ctx, schema::kCtxVersion),
              rev = ContextValue(ctx, schema::kCtxGitRevision);
  if (auto it = mixed.find("revisions"); it != mixed.end())
    rev = std::to_string(it->second.size()) + " revisions";
  std::string build;
  if (!version.empty() || !rev.empty())
    build = "dlbench " + JoinNonEmpty({version, rev.empty() ? "" : "at " + rev}, " ");
  return JoinNonEmpty({machine, date, build}, "; ");
}

// "12 benchmarks: 10 measured, 1 unsupported, 1 failed." and how many were verified.
std::string CountsNote(const SummaryResult& summary) {
  std::string counts = std::to_string(summary.total) +
                       " benchmarks: " + std::to_string(summary.measured) + " measured, " +
                       std::to_string(summary.unsupported) + " unsupported, " +
                       std::to_string(summary.failed) + " failed.";
  if (!summary.dispositions.empty()) {
    std::vector<std::string> parts;
    size_t doubtful = 0;
    for (const auto& [disp, n] : summary.dispositions) {
      parts.push_back(std::to_string(n) + " " + disp);
      if (disp != schema::kVerified) doubtful += n;
    }
    counts +=
        " Verification: " + JoinNonEmpty(parts, ", ") + (doubtful ? " (⚠ see the summary)." : ".");
  }
  return counts;
}

// A table longer than a screen (every layer of a full conv run) would bury the families after it:
// it moves into `long_tables` (shown in the details, collapsed) and a note says where it went; so
// do a bar chart of as many bars and a family's throughput curves beyond kFirstScreenCharts.
void MoveLongParts(Section& s, std::vector<Section>* long_tables) {
  for (size_t k = s.tables.size(); k-- > 0;) {
    Table& t = s.tables[k];
    if (t.rows.size() <= kFirstScreenRows) continue;
    Section moved;
    moved.title = s.title + ": " + t.title + " (" + std::to_string(t.rows.size()) + " rows)";
    moved.details = true;
    s.notes.push_back(t.title + ": " + std::to_string(t.rows.size()) +
                      " rows, in the details below (collapsed).");
    t.title.clear();
    moved.tables.push_back(std::move(t));
    s.tables.erase(s.tables.begin() + static_cast<std::ptrdiff_t>(k));
    long_tables->insert(long_tables->begin(), std::move(moved));
  }
  for (size_t k = s.charts.size(); k-- > 0;) {
    Chart& c = s.charts[k];
    if (c.bars.size() <= kFirstScreenRows) continue;
    Section moved;
    moved.title = c.title + " (" + std::to_string(c.bars.size()) + " bars)";
    moved.details = true;
    s.notes.push_back(c.title + ": " + std::to_string(c.bars.size()) +
                      " bars, in the details below (collapsed).");
    moved.charts.push_back(std::move(c));
    s.charts.erase(s.charts.begin() + static_cast<std::ptrdiff_t>(k));
    long_tables->push_back(std::move(moved));
  }
  size_t curves = std::count_if(s.charts.begin(), s.charts.end(),
                                [](const Chart& c) { return c.kind == Chart::Kind::kLines; });
  if (curves > kFirstScreenCharts) {
    Section moved;
    moved.title = s.title + ": throughput over batch size (" + std::to_string(curves) + " charts)";
    moved.details = true;
    s.notes.push_back("Throughput over batch size: " + std::to_string(curves) +
                      " charts, in the details below (collapsed).");
    for (size_t k = s.charts.size(); k-- > 0;)
      if (s.charts[k].kind == Chart::Kind::kLines) {
        moved.charts.insert(moved.charts.begin(), std::move(s.charts[k]));
        s.charts.erase(s.charts.begin() + static_cast<std::ptrdiff_t>(k));
      }
    long_tables->push_back(std::move(moved));
  }
}

// Attention answers over sequence length: the first few charts stay on the first screen, the rest
// collapse into `long_tables`.
void AddAttnSeqCharts(const MergedRuns& runs, Section& s, std::vector<Section>* long_tables) {
  std::vector<Chart> seq = AttnSeqCharts(runs);
  Section moved;
  moved.title = s.title + ": FLOP/s over sequence length, the rest (" +
                std::to_string(seq.size() - std::min(seq.size(), kFirstScreenCharts)) + " charts)";
  moved.details = true;
  for (size_t k = 0; k < seq.size(); ++k)
    (k < kFirstScreenCharts ? s.charts : moved.charts).push_back(std::move(seq[k]));
  if (!moved.charts.empty()) {
    s.notes.push_back("FLOP/s over sequence length: " + std::to_string(seq.size()) +
                      " charts, the first " + std::to_string(kFirstScreenCharts) +
                      " here, the rest in the details below (collapsed).");
    long_tables->push_back(std::move(moved));
  }
}

// Sections of one analysis as one: the first, with the others' tables (titled by their section
// where untitled) and charts after its own.
std::vector<Section> OneSection(std::vector<Section> sections) {
  if (sections.empty()) return {};
  Section out = std::move(sections[0]);
  for (size_t i = 1; i < sections.size(); ++i) {
    for (Table& t : sections[i].tables) {
      if (t.title.empty()) t.title = sections[i].title;
      out.tables.push_back(std::move(t));
    }
    for (Chart& c : sections[i].charts) out.charts.push_back(std::move(c));
  }
  return {std::move(out)};
}

// What the report's sections are built from: each analysis computed once, and the first screen's
// family sections with the parts too long for it already moved out.
struct ReportData {
  const MergedRuns& runs;
  const std::vector<std::string>& inputs;
  SummaryResult summary;
  ProblemsFound problems;
  Devices devices;
  Overview overview;
  TrainResult train;
  GpuScaling scaling;
  std::vector<Section> families, long_parts, train_details;

  ReportData(const MergedRuns& r, const std::vector<std::string>& in,
             const std::vector<std::map<std::string, std::string>>& ctx)
      : runs(r),
        inputs(in),
        summary(ComputeSummary(r)),
        problems(FindProblems(r, ctx)),
        devices(DevicesOf(r)),
        overview(ComputeOverview(r)),
        train(ComputeTrain(r)),
        scaling(ComputeGpuScaling(r)) {
    std::vector<Section> per_family = OverviewSections(overview);
    for (size_t i = 0; i < per_family.size(); ++i) {
      const std::string& family = overview.families[i];
      // Training steps answer per model (epoch, batch size, phases, memory, graph), not per
      // layer: their sections stand where the family's overview would.
      if (family == kTrainFamily && !train.cases.empty()) {
        for (Section& t : TrainSections(train)) {
          // One device: its epoch stands alone, no "CPU vs GPU" in an empty comparison's title.
          if (!(devices.cpu && devices.gpu))
            if (size_t at = t.title.find(", CPU vs GPU"); at != std::string::npos)
              t.title.erase(at);
          (t.details ? train_details : families).push_back(std::move(t));
        }
        continue;
      }
      Section& s = per_family[i];
      // GEMM dtypes side by side (fp8 and int8 beside bf16) before the per-dtype rows.
      if (family == kGemmFamily)
        if (Table t = GemmDtypeTable(runs); !t.rows.empty())
          s.tables.insert(s.tables.begin(), std::move(t));
      MoveLongParts(s, &long_parts);
      if (family == kAttnFamily) AddAttnSeqCharts(runs, s, &long_parts);
      families.push_back(std::move(s));
    }
  }
};

std::vector<Section> One(Section s) { return {std::move(s)}; }

// "train: one epoch, CPU vs GPU" -> "train-one-epoch-cpu-vs-gpu": a section's part of its anchor.
// What a title says in parentheses (a count of rows or benchmarks) stays out: anchors keep from
// one run to the next.
std::string Slug(const std::string& title) {
  std::string out;
  for (char c : title.substr(0, title.find(" ("))) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.substr(0, 48);
}

// Where a declared section stands: on the first screen, or in the details (collapsed in HTML).
enum class Place { kFirstScreen, kDetails };

// A section of the report: its id (the HTML anchor, the JSON's "id"), its title where the builder
// leaves it open, where it stands, and what builds it (nothing: the section does not apply).
struct SectionSpec {
  const char* id;
  const char* title;
  Place place;
  std::vector<Section> (*build)(const ReportData&);
};

// The report, in order. The first screen: what a reader must know before trusting any figure,
// then the answers (per model epoch, speedup and best batch size, starvation, scaling, the best of
// each family, cliffs), the families' tables, how far each case is from its roof, failures. The
// details after it.
const SectionSpec kSections[] = {
    {"problems", "Problems", Place::kFirstScreen,
     [](const ReportData& d) {
       auto p = ProblemsSection(d.problems);
       return p ? One(std::move(*p)) : std::vector<Section>{};
     }},
    {"findings", "Findings", Place::kFirstScreen,
     [](const ReportData& d) {
       return One(FindingsSection(d.runs, d.train, d.scaling, NetworkFindings(d.overview)));
     }},
    {"family", "", Place::kFirstScreen, [](const ReportData& d) { return d.families; }},
    // Multi-GPU steps answer "how does it scale": their summary stays on the first screen.
    {"gpu-scaling", "", Place::kFirstScreen,
     [](const ReportData& d) {
       std::vector<Section> out;
       for (Section& s : GpuScalingReportSections(d.scaling))
         if (!s.details) out.push_back(std::move(s));
       return out;
     }},
    // Inference: decode's latency-throughput frontier, knee, budgets, CPU vs GPU, energy.
    {"serving", "Serving", Place::kFirstScreen,
     [](const ReportData& d) { return ServingSections(ComputeServing(d.runs)); }},
    {"roofline", "Roofline", Place::kFirstScreen,
     [](const ReportData& d) {
       return RooflineSections(ComputeRoofline(d.runs), d.runs.context, true);
     }},
    // A failure is an answer too: it stays on the first screen. Unsupported cases are expected.
    {"failed", "Unsupported and failed", Place::kFirstScreen,
     [](const ReportData& d) {
       return d.summary.failed ? One(NotMeasuredSection(d.summary)) : std::vector<Section>{};
     }},
    {"long", "", Place::kDetails, [](const ReportData& d) { return d.long_parts; }},
    {"summary", "", Place::kDetails,
     [](const ReportData& d) {
       std::vector<Section> out = FamilySummarySections(d.summary);
       for (size_t i = 0; i < out.size(); ++i)
         out[i].title +=
             " (" + std::to_string(d.summary.families[i].benches.size()) + " benchmarks)";
       return out;
     }},
    // A run on one device has no CPU/GPU pairs: the findings said so once, no empty section.
    {"speedup", "", Place::kDetails,
     [](const ReportData& d) {
       SpeedupResult speedup = ComputeSpeedup(d.runs);
       return speedup.rows.empty() ? std::vector<Section>{} : SpeedupSections(speedup);
     }},
    // The overview draws each network's curve; here only sweeps with three or more batch sizes,
    // where the fit has something to show.
    {"sweeps", "", Place::kDetails,
     [](const ReportData& d) { return OneSection(SweepSections(SweepCurves(d.runs), 3)); }},
    // Loader scaling over worker threads, where a family sweeps them (data loading).
    {"workers", "", Place::kDetails,
     [](const ReportData& d) {
       std::vector<WorkerCurve> workers = WorkerCurves(d.runs);
       return workers.empty() ? std::vector<Section>{} : OneSection(WorkerSections(workers));
     }},
    {"gpu-scaling-details", "", Place::kDetails,
     [](const ReportData& d) {
       std::vector<Section> out;
       for (Section& s : GpuScalingReportSections(d.scaling))
         if (s.details) out.push_back(std::move(s));
       return out;
     }},
    {"train-details", "", Place::kDetails, [](const ReportData& d) { return d.train_details; }},
    {"not-measured", "Unsupported and failed", Place::kDetails,
     [](const ReportData& d) {
       return d.summary.failed ? std::vector<Section>{} : One(NotMeasuredSection(d.summary));
     }},
    {"inputs", "Inputs", Place::kDetails,
     [](const ReportData& d) {
       Section in;
       in.notes.push_back(Join(d.inputs, ", ") + ".");
       return One(std::move(in));
     }},
    {"labels", "Labels", Place::kDetails,
     [](const ReportData& d) { return One(LabelSection(d.runs)); }},
};

}  // namespace

Document FullReport(const MergedRuns& runs, const std::vector<std::string>& inputs,
                    const std::vector<std::map<std::string, std::string>>& contexts) {
  Document d;
  d.title = "dlbench report";
  d.compact_markdown = true;
  const ReportData data(runs, inputs, contexts);
  if (auto m = MachineLine(runs.context, data.devices.gpu, data.problems.mixed); !m.empty())
    d.notes.push_back((data.problems.mixed.count("hosts") ? "Machines: " : "Machine: ") + m + ".");
  d.notes.push_back(CountsNote(data.summary));
  std::set<std::string> ids;
  for (const SectionSpec& spec : kSections) {
    std::vector<Section> built = spec.build(data);
    for (size_t i = 0; i < built.size(); ++i) {
      Section& s = built[i];
      s.id = built.size() == 1 ? spec.id : std::string(spec.id) + "-" + Slug(s.title);
      if (!ids.insert(s.id).second) s.id += "-" + std::to_string(i + 1);
      if (s.title.empty()) s.title = spec.title;
      s.details = spec.place == Place::kDetails;
      // A run on one device leaves the other's columns empty: the first screen shows none.
      if (!s.details)
        for (Table& t : s.tables) DropEmptyColumns(&t);
      d.sections.push_back(std::move(s));
    }
  }
  return d;
}

}  // namespace dlb::report
