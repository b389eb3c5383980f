// The train sections (TrainSections, TrainDocument): the epoch per model, the step's batch-size
// curves, phases and memory, and the eager/graph and backend pairs, from ComputeTrain's rows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/summary.h"
#include "tools/report/analyses/train.h"

namespace dlb::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Cell DurationCell(double s) { return std::isfinite(s) ? Cell::Duration(s) : Cell("-"); }
Cell NumberCell(double v, int digits = 6) {
  return std::isfinite(v) ? Cell::Number(v, digits) : Cell("-");
}
Cell ShareCell(double f) { return Cell::Percent(f); }

std::string DeviceName(const std::string& d) { return d == "cpu" ? "CPU" : "GPU"; }

std::string PairConfig(const TrainPair& p) { return p.a.NameKeys(true, false, false); }

Section EpochSection(const TrainResult& t) {
  Section s;
  s.title = "train: one epoch, CPU vs GPU";
  bool cpu = false, gpu = false;
  for (const TrainEpoch& e : t.epochs) {
    cpu |= e.cpu.has_value();
    gpu |= e.gpu.has_value();
  }
  std::string note =
      "One epoch = the model's dataset (epoch items) at the measured step time (epoch_s, else "
      "epoch_items x step time / bs). Best: per device the training configuration (backend, batch "
      "size, dtype, layout, graph) with the shortest epoch.";
  // A run on one device compares nothing: the comparison's terms would only be noise there.
  if (cpu && gpu)
    note +=
        " Same configuration: f32, nchw, eager, at the largest batch size both devices ran, the "
        "fastest backend of each. Speedup = CPU epoch / GPU epoch.";
  s.notes.push_back(note);
  Table best;
  best.title = "Best configuration of each device";
  best.columns = {{"model", "model"},           {"epoch items", std::string(schema::kEpochItems)},
                  {"CPU epoch", "cpu_epoch_s"}, {"CPU configuration", "cpu_config"},
                  {"GPU epoch", "gpu_epoch_s"}, {"GPU configuration", "gpu_config"},
                  {"speedup", "speedup"}};
  Table same;
  same.title = "Same configuration: f32, nchw, eager, training";
  same.columns = {{"model", "model"},           {"bs", "bs"},
                  {"CPU", "cpu_backend"},       {"GPU", "gpu_backend"},
                  {"CPU epoch", "cpu_epoch_s"}, {"GPU epoch", "gpu_epoch_s"},
                  {"speedup", "speedup"}};
  Chart bars;
  bars.kind = Chart::Kind::kBars;
  bars.title = "train: one epoch, GPU speedup over CPU";
  bars.x_label = "speedup (CPU epoch / GPU epoch)";
  bars.bar_reference = 1;
  double lo = INFINITY, hi = 0;
  bool doubtful = false;
  for (const TrainEpoch& e : t.epochs) {
    bool d = (e.cpu && e.cpu->doubtful) || (e.gpu && e.gpu->doubtful);
    doubtful |= d;
    best.rows.push_back(
        {Cell(e.model), Cell::Items(e.epoch_items), DurationCell(e.cpu ? e.cpu->epoch_s : kNaN),
         Cell(e.cpu ? e.cpu->Config() : "-"), DurationCell(e.gpu ? e.gpu->epoch_s : kNaN),
         Cell(e.gpu ? e.gpu->Config() : "-"), SpeedupCell(e.speedup, d)});
    if (std::isfinite(e.speedup)) {
      bars.bars.emplace_back(e.model + " best", e.speedup);
      bars.bar_dtypes.emplace_back();  // each side's best, of any dtype
      lo = std::min(lo, e.speedup);
      hi = std::max(hi, e.speedup);
    }
    if (e.same_cpu && e.same_gpu) {
      bool ds = e.same_cpu->doubtful || e.same_gpu->doubtful;
      doubtful |= ds;
      same.rows.push_back({Cell(e.model), NumberCell(e.same_cpu->bs), Cell(e.same_cpu->backend),
                           Cell(e.same_gpu->backend), DurationCell(e.same_cpu->epoch_s),
                           DurationCell(e.same_gpu->epoch_s), SpeedupCell(e.same_speedup, ds)});
      bars.bars.emplace_back(e.model + " f32 " + BatchSizeLabel(e.same_cpu->bs), e.same_speedup);
      bars.bar_dtypes.emplace_back("f32");
      lo = std::min(lo, e.same_speedup);
      hi = std::max(hi, e.same_speedup);
    }
  }
  if (doubtful)
    s.notes.push_back(
        "⚠: a result of the row was not verified or was mistrusted (see the summary).");
  for (const std::string& n : t.notes) s.notes.push_back("Left out: " + n);
  if (best.rows.empty())
    s.notes.push_back("No training case with an epoch: epochs need epoch_s or epoch_items.");
  else
    s.tables.push_back(std::move(best));
  if (!same.rows.empty()) s.tables.push_back(std::move(same));
  if (!bars.bars.empty()) {
    bars.log_x = lo > 0 && (hi / lo > 20 || lo < 1);
    s.charts.push_back(std::move(bars));
  }
  return s;
}

// CPU and GPU in their overview colours.
int DeviceColor(const std::string& device) { return device == "cpu" ? 0 : 1; }

// The batch-size table; per model a chart of each device's best curve and its fit.
void AddBatchSizes(const TrainResult& t, Section* s, std::map<std::string, Chart>* charts) {
  Table fits;
  fits.title = "Batch size";
  fits.columns = {{"model", "model"},
                  {"device", "device"},
                  {"configuration", "config"},
                  {"batch sizes", "points"},
                  {"best bs", "best_bs"},
                  {"best rate", "best_items_per_s"},
                  {"epoch at best bs", "best_epoch_s"},
                  {"α", "alpha"},
                  {"t_min per item", "t_min_ns"},
                  {"T_min epoch", "t_min_epoch_s"},
                  {"R²", "r2"}};
  for (const TrainCurve& c : t.curves) {
    const SweepCurve& sw = c.sweep;
    double items = c.at.epoch_items;
    double best_epoch = std::isfinite(items) ? items / sw.best_throughput : kNaN;
    fits.rows.push_back(
        {Cell(c.model), Cell(DeviceName(c.device)),
         Cell(c.at.backend + " " + c.at.NameKeys(false, false, true)),
         NumberCell(static_cast<double>(sw.points.size())), NumberCell(sw.best_bs),
         Cell::Rate(sw.best_throughput, ItemsPerSecond(std::string(kTrainFamily), c.model)),
         DurationCell(best_epoch), sw.fit_ok ? NumberCell(sw.alpha, 3) : Cell("-"),
         sw.fit_ok ? TimeCell(sw.t_min) : Cell("-"),
         sw.fit_ok ? DurationCell(items * sw.t_min / 1e9) : Cell("-"),
         sw.fit_ok ? NumberCell(sw.r2, 4) : Cell("-")});
    // One chart per model: each device's best curve in epoch seconds (time per item without
    // epoch items), with its fit.
    bool epoch = std::isfinite(items);
    double scale = epoch ? items / 1e9 : 1;
    Chart& ch = (*charts)[c.model];
    if (ch.series.empty()) {
      ch.width = 560;
      ch.title = c.model + (epoch ? ": epoch time over batch size" : ": time per item");
      ch.x_label = "batch size";
      ch.y_label = epoch ? "epoch (s)" : "time per item (ns)";
      ch.log_x = true;
    }
    Series pts{DeviceName(c.device) + " " + c.at.backend, {}, true, true, DeviceColor(c.device)};
    for (const SweepPoint& p : sw.points) pts.points.emplace_back(p.bs, p.per_sample_ns * scale);
    ch.series.push_back(std::move(pts));
    if (sw.fit_ok) {
      Series fit{DeviceName(c.device) + " fit", {}, true, false, DeviceColor(c.device)};
      double b0 = sw.points.front().bs, b1 = sw.points.back().bs;
      for (int i = 0; i <= 40; ++i) {
        double b = b0 * std::pow(b1 / b0, i / 40.0);
        fit.points.emplace_back(b, (sw.c / std::pow(b, sw.alpha) + sw.t_min) * scale);
      }
      ch.series.push_back(std::move(fit));
    }
  }
  if (fits.rows.empty())
    s->notes.push_back("No batch-size curve: a curve needs a configuration at two or more bs.");
  else
    s->tables.push_back(std::move(fits));
}

// The phase table; the stacked bars it returns go after the model charts.
Chart AddPhases(const TrainResult& t, Section* s) {
  Table ph;
  ph.title = "Where a step goes";
  ph.columns = {{"model", "model"},  {"device", "device"}, {"configuration", "config"},
                {"step", "step_ns"}, {"fwd", "fwd"},       {"bwd", "bwd"},
                {"opt", "opt"},      {"other", "other"}};
  Chart stacked;
  stacked.kind = Chart::Kind::kStacked;
  stacked.title = "train: share of a step (%)";
  stacked.x_label = "% of the step";
  stacked.segments = {"fwd", "bwd", "opt", "other"};
  bool over = false;
  for (const TrainPhases& p : t.phases) {
    over |= p.over_step;
    ph.rows.push_back({Cell(p.model), Cell(DeviceName(p.device)),
                       Cell(p.at.Config() + (p.over_step ? " †" : "")), TimeCell(p.at.step_ns),
                       ShareCell(p.fwd), ShareCell(p.bwd), ShareCell(p.opt), ShareCell(p.other)});
    stacked.stacks.push_back({p.model + " " + DeviceName(p.device),
                              {100 * p.fwd, 100 * p.bwd, 100 * p.opt, 100 * p.other}});
  }
  if (ph.rows.empty()) {
    s->notes.push_back("No phase bars: no training case carries fwd_s, bwd_s and opt_s.");
  } else {
    s->notes.push_back(
        "Where a step goes: forward, backward and optimizer (timed in a separate un-graphed pass) "
        "as shares of the step time, at each device's fastest configuration that has them; "
        "other: the rest of the step (loss, zero_grad, launch gaps)." +
        std::string(over ? " †: the phases add up to more than the (graphed) step; shares of "
                           "their sum."
                         : ""));
    s->tables.push_back(std::move(ph));
  }

  return stacked;
}

// The peak memory table; per model a chart of each device's curve.
void AddMemory(const TrainResult& t, Section* s, std::map<std::string, Chart>* charts) {
  Table mem;
  mem.title = "Peak memory over batch size";
  mem.columns = {{"model", "model"},
                 {"device", "device"},
                 {"configuration", "config"},
                 {"bs", "bs"},
                 {"peak memory", std::string(schema::kPeakMemBytes)}};
  for (const TrainMemory& m : t.memory) {
    for (auto [bs, bytes] : m.points)
      mem.rows.push_back({Cell(m.model), Cell(DeviceName(m.device)),
                          Cell(m.at.backend + " " + m.at.NameKeys(false, false, true)),
                          NumberCell(bs), Cell::Bytes(bytes, 3)});
    if (m.points.size() < 2) continue;
    Chart& ch = (*charts)[m.model];
    if (ch.series.empty()) {
      ch.width = 560;
      ch.title = m.model + ": peak memory over batch size";
      ch.x_label = "batch size";
      ch.y_label = "GiB";
      ch.log_x = true;
    }
    Series se{DeviceName(m.device) + " " + m.at.backend, {}, true, true, DeviceColor(m.device)};
    for (auto [bs, bytes] : m.points) se.points.emplace_back(bs, bytes / (1024.0 * 1024 * 1024));
    ch.series.push_back(std::move(se));
  }
  if (mem.rows.empty()) {
    s->notes.push_back("No peak memory: no training case carries peak_mem_bytes.");
  } else {
    s->notes.push_back(
        "Peak memory: GPU, the device's peak (caching allocator); CPU, the process's peak host "
        "RSS, which only grows over a run, so a case's figure may hold an earlier case's peak.");
    s->tables.push_back(std::move(mem));
  }
}

// Per model its epoch chart, then its memory chart, log-scaled where the values span much.
void AddModelCharts(const TrainResult& t, std::map<std::string, Chart>* epoch_charts,
                    std::map<std::string, Chart>* memory_charts, Section* s) {
  for (const std::string& model : t.models)
    for (auto* charts : {epoch_charts, memory_charts}) {
      auto it = charts->find(model);
      if (it == charts->end()) continue;
      Chart& ch = it->second;
      ch.log_y = WideY(ch);
      s->charts.push_back(std::move(ch));
    }
}

Section StepSection(const TrainResult& t) {
  Section s;
  s.title = "train: batch size, phases, memory";
  s.notes.push_back(
      "Batch size: the curve of each device's best configuration (every curve: the details or "
      "`dlbench-report sweep`), fitted as the time per item t(b) = c/b^α + t_min over three or "
      "more batch sizes; the epoch time is T(b) = epoch items x t(b), its floor T_min = epoch "
      "items x t_min. Best bs: the most items/s, in the model's item (images, sequences, "
      "samples).");
  std::map<std::string, Chart> epoch_charts, memory_charts;
  AddBatchSizes(t, &s, &epoch_charts);
  Chart stacked = AddPhases(t, &s);
  AddMemory(t, &s, &memory_charts);
  AddModelCharts(t, &epoch_charts, &memory_charts, &s);
  if (!stacked.stacks.empty()) s.charts.push_back(std::move(stacked));
  return s;
}

Table SummaryTable(const std::vector<TrainPairSummary>& rows, bool graph) {
  Table t;
  t.title = graph ? "Eager vs CUDA graph" : "Backends";
  t.columns = {{"model", "model"}};
  if (graph) {
    t.columns.push_back({"backend", "backend"});
  } else {
    t.columns.push_back({"device", "device"});
    t.columns.push_back({"A", "a_backend"});
    t.columns.push_back({"B", "b_backend"});
  }
  for (Column c : std::vector<Column>{{"pass", "pass"},
                                      {"pairs", "pairs"},
                                      {"geomean", "geomean"},
                                      {"lowest", "lowest"},
                                      {"at", "lowest_at"},
                                      {"highest", "highest"},
                                      {"at", "highest_at"}})
    t.columns.push_back(c);
  for (const TrainPairSummary& s : rows) {
    std::vector<Cell> r{Cell(s.model)};
    if (graph) {
      r.emplace_back(s.a);
    } else {
      r.emplace_back(DeviceName(s.device));
      r.emplace_back(s.a);
      r.emplace_back(s.b);
    }
    bool d = s.lo.a.doubtful || s.lo.b.doubtful || s.hi.a.doubtful || s.hi.b.doubtful;
    r.emplace_back(s.pass.empty() ? "-" : s.pass);
    r.push_back(NumberCell(static_cast<double>(s.n)));
    r.push_back(SpeedupCell(s.geomean, false));
    r.push_back(SpeedupCell(s.lo.speedup, d));
    r.emplace_back(PairConfig(s.lo));
    r.push_back(SpeedupCell(s.hi.speedup, d));
    r.emplace_back(PairConfig(s.hi));
    t.rows.push_back(std::move(r));
  }
  return t;
}

Section PairsSection(const TrainResult& t) {
  Section s;
  bool any_gpu = std::any_of(t.cases.begin(), t.cases.end(),
                             [](const TrainCase& c) { return c.device == "gpu"; });
  // CUDA graphs are a GPU's: a CPU-only run's title names only what it can hold.
  s.title = any_gpu ? "train: eager vs CUDA graph, backends" : "train: backends";
  if (t.graph_summary.empty()) {
    // Without any GPU case there is nothing to pair, and the report said so once already.
    if (any_gpu)
      s.notes.push_back(
          "No eager/graph pairs: they need GPU cases at graph:1 and graph:0 of one "
          "configuration.");
  } else {
    s.notes.push_back(
        "Eager vs CUDA graph: speedup = eager step time (graph:0) / graph step time (graph:1, the "
        "whole step captured once and replayed) at the same backend, model, batch size, dtype, "
        "layout and pass; geomean over those pairs, the lowest and the highest with where.");
    s.tables.push_back(SummaryTable(t.graph_summary, true));
  }
  if (t.backend_summary.empty()) {
    s.notes.push_back(
        "No backend pairs: native vs libtorch and libtorch vs pytorch need both at one "
        "configuration.");
  } else {
    s.notes.push_back(
        "Backends: speedup of A over B = B's step time / A's at the same configuration (native "
        "vs libtorch: dlbench's own MLP against LibTorch's; libtorch vs pytorch: the C++ step "
        "against the Python peer).");
    s.tables.push_back(SummaryTable(t.backend_summary, false));
  }
  return s;
}

Section AllPairsSection(const TrainResult& t) {
  Section s;
  s.title = "train: every eager/graph and backend pair";
  s.details = true;
  Table g;
  g.title = "Eager vs CUDA graph";
  g.columns = {{"model", "model"},    {"backend", "backend"}, {"configuration", "config"},
               {"pass", "pass"},      {"eager", "eager_ns"},  {"graph", "graph_ns"},
               {"speedup", "speedup"}};
  for (const TrainPair& p : t.graphs)
    g.rows.push_back({Cell(p.model), Cell(p.a.backend), Cell(PairConfig(p)),
                      Cell(p.a.pass.empty() ? "-" : p.a.pass), TimeCell(p.b.step_ns),
                      TimeCell(p.a.step_ns), SpeedupCell(p.speedup, p.a.doubtful || p.b.doubtful)});
  Table b;
  b.title = "Backends";
  b.columns = {{"model", "model"},    {"device", "device"}, {"configuration", "config"},
               {"pass", "pass"},      {"graph", "graph"},   {"A", "a_backend"},
               {"B", "b_backend"},    {"A time", "a_ns"},   {"B time", "b_ns"},
               {"speedup", "speedup"}};
  for (const TrainPair& p : t.backends)
    b.rows.push_back({Cell(p.model), Cell(DeviceName(p.device)), Cell(PairConfig(p)),
                      Cell(p.a.pass.empty() ? "-" : p.a.pass),
                      Cell(p.a.graph.empty() ? "-" : p.a.graph), Cell(p.a.backend),
                      Cell(p.b.backend), TimeCell(p.a.step_ns), TimeCell(p.b.step_ns),
                      SpeedupCell(p.speedup, p.a.doubtful || p.b.doubtful)});
  if (!g.rows.empty()) s.tables.push_back(std::move(g));
  if (!b.rows.empty()) s.tables.push_back(std::move(b));
  if (s.tables.empty()) s.notes.push_back("No pairs.");
  return s;
}

}  // namespace

std::vector<Section> TrainSections(const TrainResult& train) {
  if (train.cases.empty()) {
    Section s;
    s.title = std::string(kTrainFamily);
    s.notes.push_back("No train results: names train/<cpu|gpu>/<backend>/<model>/bs:.../...");
    for (const std::string& n : train.notes) s.notes.push_back("Left out: " + n);
    return {s};
  }
  return {EpochSection(train), StepSection(train), PairsSection(train), AllPairsSection(train)};
}

Document TrainDocument(const MergedRuns& runs, const std::vector<std::string>& inputs) {
  Document d;
  d.title = "dlbench training steps";
  d.notes.push_back(InputsNote(inputs));
  if (auto c = ContextLine(runs.context); !c.empty()) d.notes.push_back("Context: " + c);
  d.sections = TrainSections(ComputeTrain(runs));
  return d;
}

}  // namespace dlb::report
