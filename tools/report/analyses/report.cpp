// The whole report (FullReport): the machine and counts, the findings, each family's first screen
// (overview_sections.cpp; train's own sections in place of its overview), then the details,
// collapsed in HTML: long tables, summary, speedup, sweeps, GPU scaling, train, inputs, labels.
#include "tools/report/analyses/report.h"

#include <algorithm>
#include <map>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/findings.h"
#include "tools/report/analyses/gpu_scaling.h"
#include "tools/report/analyses/problems.h"
#include "tools/report/analyses/roofline.h"
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

// "host: CPU (16 CPUs), GPU; run DATE; dlbench 0.1.0 at REVISION".
// The GPU is named only where one measured something; otherwise the findings say why there is
// none, once.
std::string MachineLine(const std::map<std::string, std::string>& ctx, bool gpu) {
  std::string cpu = ContextValue(ctx, schema::kCtxCpuModel),
              cpus = ContextValue(ctx, schema::kCtxNumCpus);
  if (!cpus.empty()) cpu += (cpu.empty() ? "" : " ") + std::string("(") + cpus + " CPUs)";
  std::string machine =
      JoinNonEmpty({cpu, gpu ? ContextValue(ctx, schema::kCtxGpuName) : ""}, ", ");
  std::string host = ContextValue(ctx, schema::kCtxHostName);
  if (!host.empty()) machine = host + (machine.empty() ? "" : ": " + machine);
  std::string date = ContextValue(ctx, schema::kCtxDate);
  std::string version = ContextValue(ctx, schema::kCtxVersion),
              rev = ContextValue(ctx, schema::kCtxGitRevision);
  std::string build;
  if (!version.empty() || !rev.empty())
    build = "dlbench " + JoinNonEmpty({version, rev.empty() ? "" : "at " + rev}, " ");
  return JoinNonEmpty({machine, date.empty() ? "" : "run " + date, build}, "; ");
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

// Sections of one analysis as one collapsed section: the first, with the others' tables (titled
// by their section where untitled) and charts after its own.
Section OneCollapsedSection(std::vector<Section> sections) {
  Section out = std::move(sections.front());
  out.details = true;
  for (size_t i = 1; i < sections.size(); ++i) {
    for (Table& t : sections[i].tables) {
      if (t.title.empty()) t.title = sections[i].title;
      out.tables.push_back(std::move(t));
    }
    for (Chart& c : sections[i].charts) out.charts.push_back(std::move(c));
  }
  return out;
}

}  // namespace

Document FullReport(const MergedRuns& runs, const std::vector<std::string>& inputs,
                    const std::vector<std::map<std::string, std::string>>& contexts) {
  Document d;
  d.title = "dlbench report";
  // What a reader must know before trusting any figure: first, and only what applies.
  if (auto problems = ProblemsSection(FindProblems(runs, contexts)))
    d.sections.push_back(std::move(*problems));
  SummaryResult summary = ComputeSummary(runs);
  const Devices devices = DevicesOf(runs);
  if (auto m = MachineLine(runs.context, devices.gpu); !m.empty())
    d.notes.push_back("Machine: " + m + ".");
  d.notes.push_back(CountsNote(summary));

  Overview ov = ComputeOverview(runs);
  TrainResult train = ComputeTrain(runs);
  GpuScaling scaling = ComputeGpuScaling(runs);
  // The answers first: per model epoch, speedup and best batch size, starvation, scaling, the
  // best of each family, cliffs; the families' tables after them.
  d.sections.push_back(FindingsSection(runs, train, scaling, NetworkFindings(ov)));
  // Training steps answer per model (epoch, batch size, phases, memory, graph), not per layer:
  // their sections stand where the family's overview would.
  std::vector<Section> train_details;
  std::vector<Section> overview = OverviewSections(ov);
  // Tables and charts too long for the first screen, for the details.
  std::vector<Section> long_tables;
  for (size_t i = 0; i < overview.size(); ++i) {
    if (ov.families[i] != kTrainFamily || train.cases.empty()) {
      Section& s = overview[i];
      // GEMM dtypes side by side (fp8 and int8 beside bf16) before the per-dtype rows.
      if (ov.families[i] == kGemmFamily)
        if (Table t = GemmDtypeTable(runs); !t.rows.empty())
          s.tables.insert(s.tables.begin(), std::move(t));
      MoveLongParts(s, &long_tables);
      if (ov.families[i] == kAttnFamily) AddAttnSeqCharts(runs, s, &long_tables);
      d.sections.push_back(std::move(s));
      continue;
    }
    for (Section& t : TrainSections(train)) {
      // One device: its epoch stands alone, no "CPU vs GPU" in the title of an empty comparison.
      if (!(devices.cpu && devices.gpu))
        if (size_t at = t.title.find(", CPU vs GPU"); at != std::string::npos) t.title.erase(at);
      (t.details ? train_details : d.sections).push_back(std::move(t));
    }
  }
  // Multi-GPU steps answer "how does it scale": their summary stays on the first screen.
  std::vector<Section> gpu_details;
  for (Section& s : GpuScalingReportSections(scaling))
    (s.details ? gpu_details : d.sections).push_back(std::move(s));
  // How far each case is from the hardware's reachable limit: after the first screen's answers,
  // before the details.
  for (Section& s : RooflineSections(ComputeRoofline(runs), runs.context, true))
    d.sections.push_back(std::move(s));
  for (Section& s : long_tables) d.sections.push_back(std::move(s));
  std::vector<Section> summary_sections = SummarySections(summary);
  Section not_measured = std::move(summary_sections.back());
  summary_sections.pop_back();
  // A failure is an answer too: it stays on the first screen. Unsupported cases are expected.
  not_measured.details = summary.failed == 0;
  if (!not_measured.details) d.sections.push_back(not_measured);
  for (size_t i = 0; i < summary_sections.size(); ++i) {
    Section& s = summary_sections[i];
    s.title += " (" + std::to_string(summary.families[i].benches.size()) + " benchmarks)";
    s.details = true;
    d.sections.push_back(std::move(s));
  }
  // A run on one device has no CPU/GPU pairs: the findings said so once, no empty section here.
  if (SpeedupResult speedup = ComputeSpeedup(runs); !speedup.rows.empty())
    for (auto& s : SpeedupSections(speedup)) {
      s.details = true;
      d.sections.push_back(std::move(s));
    }
  // The overview draws each network's curve; here only sweeps with three or more batch sizes,
  // where the fit has something to show, all in one collapsed section.
  d.sections.push_back(OneCollapsedSection(SweepSections(SweepCurves(runs), 3)));
  // Loader scaling over worker threads, where a family sweeps them (data loading).
  if (std::vector<WorkerCurve> workers = WorkerCurves(runs); !workers.empty())
    d.sections.push_back(OneCollapsedSection(WorkerSections(workers)));
  for (Section& s : gpu_details) d.sections.push_back(std::move(s));
  for (Section& s : train_details) d.sections.push_back(std::move(s));
  if (not_measured.details) d.sections.push_back(std::move(not_measured));
  Section in;
  in.title = "Inputs";
  in.notes.push_back(Join(inputs, ", ") + ".");
  in.details = true;
  d.sections.push_back(std::move(in));
  d.sections.push_back(LabelSection(runs));
  // A run on one device leaves the other's columns empty: the first screen shows none of them.
  for (Section& s : d.sections)
    if (!s.details)
      for (Table& t : s.tables) DropEmptyColumns(&t);
  return d;
}

}  // namespace dlb::report
