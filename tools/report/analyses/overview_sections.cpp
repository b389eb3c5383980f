// The report's first screen laid out (OverviewSections): per family, a table per network and one
// of the workloads without a network, the speedup bars and the throughput curves over batch size.
#include <algorithm>
#include <cmath>
#include <map>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/gpu_scaling.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/train.h"
#include "tools/report/analyses/transformer.h"

namespace dlb::report {

namespace {

Cell RateCell(double per_s, bool best) {
  if (!std::isfinite(per_s)) return Cell("-");
  Cell c = Cell::Rate(per_s).After(best ? " ★" : "");
  return best ? c.With(Tone::kGood) : c;
}

// Rows of one (family, subject) with the same dt and config, over batch size.
struct Group {
  std::string dt, config;
  std::vector<const OverviewRow*> rows;
};

std::vector<Group> Groups(const std::vector<const OverviewRow*>& rows) {
  std::vector<Group> out;
  for (const OverviewRow* r : rows) {
    if (out.empty() || out.back().dt != r->dt || out.back().config != r->config)
      out.push_back({r->dt, r->config, {}});
    out.back().rows.push_back(r);
  }
  return out;
}

// The row a group is judged by: the GPU's best batch size, else the largest with a speedup.
const OverviewRow* Headline(const Group& g) {
  const OverviewRow* pick = nullptr;
  for (const OverviewRow* r : g.rows) {
    if (r->gpu_best && std::isfinite(r->speedup)) return r;
    if (std::isfinite(r->speedup)) pick = r;
  }
  return pick;
}

// Throughput over batch size for one subject: a series per device, dtype and config; split by
// dtype, then by config, while a chart would hold more than six.
std::vector<Chart> Curves(const std::string& subject, const std::vector<Group>& groups,
                          const std::string& per_s) {
  struct Line {
    std::string device, dt, config;
    std::vector<std::pair<double, double>> points;
  };
  std::vector<Line> lines;
  for (const Group& g : groups)
    for (const char* device : {"cpu", "gpu"}) {
      Line l{device, g.dt, g.config, {}};
      for (const OverviewRow* r : g.rows) {
        double v = std::string(device) == "cpu" ? r->cpu_per_s : r->gpu_per_s;
        if (std::isfinite(v) && r->bs > 0) l.points.emplace_back(r->bs, v);
      }
      if (l.points.size() >= 2) lines.push_back(std::move(l));
    }
  if (lines.empty()) return {};
  auto split = [](const std::vector<Line>& in, auto key) {
    std::vector<std::vector<Line>> out;
    std::vector<std::string> keys;
    for (const Line& l : in) {
      auto it = std::find(keys.begin(), keys.end(), key(l));
      if (it == keys.end()) {
        keys.push_back(key(l));
        out.emplace_back();
        it = keys.end() - 1;
      }
      out[static_cast<size_t>(it - keys.begin())].push_back(l);
    }
    return out;
  };
  constexpr size_t kMaxSeries = 6;
  std::vector<std::vector<Line>> charts{lines};
  bool by_dt = false, by_config = false;
  if (lines.size() > kMaxSeries) {
    charts = split(lines, [](const Line& l) { return l.dt; });
    by_dt = true;
    size_t most = 0;
    for (const auto& c : charts) most = std::max(most, c.size());
    if (most > kMaxSeries) {
      charts = split(lines, [](const Line& l) { return l.dt + "|" + l.config; });
      by_config = true;
    }
  }
  std::vector<Chart> out;
  for (const auto& ls : charts) {
    Chart c;
    c.width = 560;
    c.title = subject + (by_dt ? " " + ls[0].dt : "") +
              (by_config ? " " + ConfigValues(ls[0].config) : "") + ": " + per_s;
    c.x_label = "batch size";
    c.y_label = per_s;
    c.log_x = true;
    std::vector<std::string> pairs;
    std::map<std::string, std::vector<std::string>> configs_of_dt;
    for (const Line& l : ls) {
      std::string name =
          JoinNonEmpty({l.device, by_dt ? "" : l.dt, by_config ? "" : ConfigValues(l.config)}, " ");
      // A CPU line and its GPU twin (same dtype and config) take neighbouring palette colours
      // where they stand for no dtype.
      std::string pair = l.dt + "|" + l.config;
      auto at = std::find(pairs.begin(), pairs.end(), pair);
      if (at == pairs.end()) at = pairs.insert(pairs.end(), pair);
      int color = 2 * static_cast<int>(at - pairs.begin()) + (l.device == "cpu" ? 0 : 1);
      Series series{name, l.points, true, true, color};
      // The dtype's colour, as in every chart; the CPU and GPU lines of each of its configs apart
      // by their markers: circle and square, then triangle and diamond.
      series.dtype = l.dt;
      std::vector<std::string>& configs = configs_of_dt[l.dt];
      auto config = std::find(configs.begin(), configs.end(), l.config);
      if (config == configs.end()) config = configs.insert(configs.end(), l.config);
      series.shape = 2 * static_cast<int>(config - configs.begin()) + (l.device == "cpu" ? 0 : 1);
      c.series.push_back(std::move(series));
    }
    c.log_y = WideY(c);
    out.push_back(std::move(c));
  }
  return out;
}

// What a family's tables call their rows and rates: GEMM has shapes and FLOP/s, conv layers,
// data loading pipelines and images/s, collectives sizes and bus bandwidth.
struct Words {
  std::string item = "workload";                      // the loose table's first column
  std::string loose = "Workloads without a network";  // its title
  std::string network = "Network ";                   // a network table's title, before the name
  std::string per_s = "samples/s";
  std::string time = "time";
  bool layers = true;        // a network's table counts its layers
  bool flops = false;        // FLOP/s in place of samples/s
  bool collectives = false;  // size, time and bandwidths: one device, no speedup
  bool by_workload = false;  // one table of every case, whatever network or dataset it names
};

Words WordsOf(const std::string& fam) {
  Words w;
  if (fam == "gemm") {
    w.item = "shape";
    w.loose = "Shapes without a network";
    w.flops = true;
  } else if (fam == kAttnFamily) {
    w.item = "attention";
    w.loose = "Attention shapes";
    w.flops = true;
    w.by_workload = true;
  } else if (fam == "infer") {
    w.item = "model";
    w.loose = "Models: prefill and decode steps";
    w.per_s = "tokens/s";
    w.time = "time per step";
    w.by_workload = true;
  } else if (fam == "conv") {
    w.item = "layer";
    w.loose = "Layers without a network";
    w.per_s = "images/s";
  } else if (fam == "dataload") {
    w.item = "pipeline";
    w.loose = "Pipelines";
    w.per_s = "images/s";
    w.time = "time per batch";
    w.by_workload = OverviewByWorkload(fam);
  } else if (fam == kCommFamily) {
    w.item = "collective";
    w.loose = "Collectives: message sizes and bus bandwidth";
    w.collectives = true;
    w.by_workload = OverviewByWorkload(fam);
  } else if (fam == kTrainFamily) {
    w.item = "model";
    w.loose = "Models";
    w.per_s = "images/s";
  }
  return w;
}

// "all_reduce.1073741824" -> "all_reduce", 1073741824; bytes 0 where the name holds none.
std::pair<std::string, double> CollectiveOf(const std::string& workload) {
  size_t dot = workload.rfind('.');
  if (dot == std::string::npos) return {workload, 0};
  double bytes = std::atof(workload.c_str() + dot + 1);
  if (!(bytes > 0)) return {workload, 0};
  return {workload.substr(0, dot), bytes};
}

Cell RateUnitCell(double v, const std::string& unit, bool best) {
  if (!std::isfinite(v)) return Cell("-");
  Cell c = Cell::Rate(v, unit).After(best ? " ★" : "");
  return best ? c.With(Tone::kGood) : c;
}

// The overview table's columns: a network's table or the loose workloads', with or without bs.
std::vector<Column> OverviewColumns(const Words& w, bool network, bool bs) {
  std::vector<Column> c;
  if (w.collectives) {
    c = {{w.item, "collective"},
         {"size", "bytes"},
         {"keys", "keys"},
         {"GPU time", "gpu_ns"},
         {"bus bandwidth", std::string(schema::kBusBw)},
         {"algorithm bandwidth", std::string(schema::kAlgBw)}};
    return c;
  }
  if (!network) c.push_back({w.item, "workload"});
  c.push_back({"keys", "keys"});  // SplitKeys makes it a column per key that varies
  if (bs) c.push_back({"bs", "bs"});
  if (network && w.layers) c.push_back({"layers", "layers"});
  c.push_back({"CPU " + w.time, "cpu_ns"});
  c.push_back({"GPU " + w.time, "gpu_ns"});
  c.push_back({"speedup", "speedup"});
  if (w.flops) {
    c.push_back({"CPU FLOP/s", "cpu_flop_per_s"});
    c.push_back({"GPU FLOP/s", "gpu_flop_per_s"});
  } else if (bs) {
    c.push_back({"CPU " + w.per_s, "cpu_per_s"});
    c.push_back({"GPU " + w.per_s, "gpu_per_s"});
  }
  c.push_back({"CPU % of peak", "cpu_pct_peak"});
  c.push_back({"GPU % of peak", "gpu_pct_peak"});
  return c;
}

std::vector<Cell> OverviewCells(const Words& w, const OverviewRow& r, bool bs) {
  std::vector<Cell> c;
  if (w.collectives) {
    auto [name, bytes] = CollectiveOf(r.subject);
    c.emplace_back(name);
    c.push_back(bytes > 0 ? Cell::Bytes(bytes) : Cell("-"));
    c.emplace_back();  // the keys
    c.push_back(TimeCell(r.gpu_ns));
    c.push_back(RateUnitCell(r.busbw, "B/s", false));
    c.push_back(RateUnitCell(r.algbw, "B/s", false));
    if (r.doubtful && std::isfinite(r.busbw)) c[4].Doubtful().With(Tone::kWarn);
    return c;
  }
  if (!r.network) c.emplace_back(r.subject);
  c.emplace_back();  // the keys
  if (bs) c.push_back(r.bs > 0 ? Cell::Count(r.bs) : Cell("-"));
  if (r.network && w.layers) {
    std::string layers =
        r.cpu_layers == r.gpu_layers || r.gpu_layers == 0 ? std::to_string(r.cpu_layers)
        : r.cpu_layers == 0
            ? std::to_string(r.gpu_layers)
            : std::to_string(r.cpu_layers) + " CPU, " + std::to_string(r.gpu_layers) + " GPU";
    c.emplace_back(layers, std::max(r.cpu_layers, r.gpu_layers));
  }
  c.push_back(TimeCell(r.cpu_ns));
  c.push_back(TimeCell(r.gpu_ns));
  c.push_back(SpeedupCell(r.speedup, r.doubtful));
  if (w.flops) {
    // At one shape, dtype and config the FLOP per sample is fixed: most FLOP/s is most samples/s.
    c.push_back(RateUnitCell(r.cpu_flop_per_s, FlopUnit(r.dt), r.cpu_best));
    c.push_back(RateUnitCell(r.gpu_flop_per_s, FlopUnit(r.dt), r.gpu_best));
  } else if (bs) {
    c.push_back(RateCell(r.cpu_per_s, r.cpu_best));
    c.push_back(RateCell(r.gpu_per_s, r.gpu_best));
  }
  c.push_back(PeakCells(&r, false).first);
  c.push_back(PeakCells(&r, true).first);
  return c;
}

// The table's keys column as one column per key that varies over `rows` (those of its rows, in
// order), as the summary's tables show a name's keys; the keys every row shares go into its title.
void SplitKeys(Table* t, const std::vector<const OverviewRow*>& rows) {
  auto at = std::find_if(t->columns.begin(), t->columns.end(),
                         [](const Column& c) { return c.key == "keys"; });
  if (at == t->columns.end()) return;
  std::vector<NameKeys> keys;
  for (const OverviewRow* r : rows) keys.push_back(r->keys);
  const std::vector<std::string> shared =
      SplitKeyColumn(t, static_cast<size_t>(at - t->columns.begin()), keys);
  if (!shared.empty()) t->title += " (every row: " + Join(shared, ", ") + ")";
}

// What a family's rows hold, for its note, its bar chart's title and scale.
struct FamilyRange {
  bool any_bs = false, any_speedup = false, any_doubtful = false, any_network = false;
  bool any_cpu = false, any_gpu = false;
  double lo = INFINITY, hi = 0;  // of the finite speedups
  // The peaks the rows' % of peak are of, per device, each once; whether a row has none.
  std::vector<std::string> cpu_peaks, gpu_peaks;
  bool any_no_peak = false;
};

FamilyRange RangeOf(const Overview& ov, const std::string& fam) {
  FamilyRange f;
  for (const OverviewRow& r : ov.rows)
    if (r.family == fam) {
      f.any_bs |= r.bs > 0;
      f.any_doubtful |= r.doubtful;
      f.any_network |= r.network;
      f.any_cpu |= r.cpu_layers > 0;
      f.any_gpu |= r.gpu_layers > 0;
      for (bool gpu : {false, true}) {
        if ((gpu ? r.gpu_layers : r.cpu_layers) == 0) continue;
        const std::string& peak = gpu ? r.gpu_peak : r.cpu_peak;
        std::vector<std::string>& peaks = gpu ? f.gpu_peaks : f.cpu_peaks;
        // A peak the case's figures alone give ("bf16 989 TFLOP/s (the case's own)") differs
        // from case to case: said once.
        const std::string named =
            peak.find(" (the case's own)") != std::string::npos ? "each case's own peak" : peak;
        if (peak.empty())
          f.any_no_peak = true;
        else if (std::find(peaks.begin(), peaks.end(), named) == peaks.end())
          peaks.push_back(named);
      }
      if (std::isfinite(r.speedup)) {
        f.any_speedup = true;
        f.lo = std::min(f.lo, r.speedup);
        f.hi = std::max(f.hi, r.speedup);
      }
    }
  return f;
}

// " % of peak (a network: its layers' shares, weighted by their time): against CPU: measured
// bf16 19.1 TFLOP/s; GPU: spec bf16 1.07 PFLOP/s at max clock, each case's own peak; -: no peak
// known.",
// or " % of peak: no peak known for these rates." where no row has one.
std::string PeakNote(const FamilyRange& f) {
  if (f.cpu_peaks.empty() && f.gpu_peaks.empty())
    return " % of peak: no peak known for these rates.";
  std::vector<std::string> parts;
  if (!f.cpu_peaks.empty()) parts.push_back("CPU: " + Join(f.cpu_peaks, ", "));
  if (!f.gpu_peaks.empty()) parts.push_back("GPU: " + Join(f.gpu_peaks, ", "));
  return std::string(" % of peak") +
         (f.any_network ? " (a network: its layers' shares, weighted by their time)" : "") +
         ": against " + Join(parts, "; ") + (f.any_no_peak ? "; -: no peak known." : ".");
}

std::string FamilyNote(const Words& w, const FamilyRange& f) {
  if (w.collectives)
    return std::string(
               "Per collective and message size: the time of one collective, and nccl-tests' "
               "bus bandwidth (algorithm bandwidth x the collective's factor) and algorithm "
               "bandwidth; no peak known for them.") +
           (f.any_doubtful ? " ⚠: not verified or mistrusted (see the summary)." : "");
  std::string head =
      f.any_cpu && f.any_gpu
          ? "CPU and GPU " + w.time + ": the fastest backend of each device"
          : std::string(f.any_cpu ? "CPU " : "GPU ") + w.time + ": the fastest backend";
  if (f.any_network && w.layers)
    head += "; a network adds up its measured layers, each times its repeat count in the network.";
  else
    head += ".";
  if (f.any_speedup)
    head += Prose({" Speedup = CPU ", w.time, " / GPU ", w.time, ": ", Cell::Ratio(f.lo), " to ",
                   Cell::Ratio(f.hi), " here."});
  if (f.any_bs)
    head += std::string(" ★ marks ") + (f.any_cpu && f.any_gpu ? "each device's" : "the") +
            " best batch size (most " + (w.flops ? "FLOP/s" : w.per_s) + ").";
  if (f.any_doubtful)
    head += " ⚠: a result the row adds up was not verified or was mistrusted (see the summary).";
  return head + PeakNote(f);
}

// One family: a table per network and one for the workloads without a network, the speedup bars
// and the throughput curves.
Section FamilySection(const Overview& ov, const std::string& fam) {
  std::vector<std::string> subjects;
  std::map<std::string, std::vector<const OverviewRow*>> by_subject;
  for (const OverviewRow& r : ov.rows) {
    if (r.family != fam) continue;
    if (!by_subject.count(r.subject)) subjects.push_back(r.subject);
    by_subject[r.subject].push_back(&r);
  }
  const FamilyRange f = RangeOf(ov, fam);
  const Words w = WordsOf(fam);
  Section s;
  s.title = fam;
  s.notes.push_back(FamilyNote(w, f));
  Chart bars;
  bars.kind = Chart::Kind::kBars;
  bars.title = fam + ": GPU speedup over CPU" + (f.any_bs ? " at the GPU's best batch size" : "");
  bars.x_label = "speedup (CPU " + w.time + " / GPU " + w.time + ")";
  bars.bar_reference = 1;
  std::vector<Chart> curves;
  Table loose;  // workloads that belong to no network
  loose.title = w.loose;
  bool loose_bs = false;
  for (const auto& subj : subjects)
    for (const OverviewRow* r : by_subject[subj])
      if (!r->network || w.by_workload) loose_bs |= r->bs > 0;
  loose.columns = OverviewColumns(w, false, loose_bs);
  std::vector<const OverviewRow*> loose_rows;
  for (const auto& subj : subjects) {
    const auto& rows = by_subject[subj];
    bool network = rows.front()->network && !w.by_workload;
    bool bs = false;
    for (const OverviewRow* r : rows) bs |= r->bs > 0;
    std::vector<Group> groups = Groups(rows);
    if (network) {
      Table t;
      t.title = w.network + subj;
      t.columns = OverviewColumns(w, true, bs);
      for (const OverviewRow* r : rows) t.rows.push_back(OverviewCells(w, *r, bs));
      SplitKeys(&t, rows);
      DropEmptyColumns(&t);
      s.tables.push_back(std::move(t));
    } else {
      for (const OverviewRow* r : rows) {
        loose.rows.push_back(OverviewCells(w, *r, loose_bs));
        loose_rows.push_back(r);
      }
    }
    for (const Group& g : groups)
      if (const OverviewRow* h = Headline(g)) {
        bars.bars.emplace_back(JoinNonEmpty({subj, g.dt, ConfigValues(g.config),
                                             h->bs > 0 ? BatchSizeLabel(h->bs) : std::string()},
                                            " "),
                               h->speedup);
        bars.bar_dtypes.push_back(g.dt);
      }
    for (Chart& c : Curves(subj, groups, w.per_s)) curves.push_back(std::move(c));
  }
  if (!loose.rows.empty()) {
    SplitKeys(&loose, loose_rows);
    DropEmptyColumns(&loose);
    s.tables.push_back(std::move(loose));
  }
  if (!bars.bars.empty()) {
    bars.log_x = f.lo > 0 && (f.hi / f.lo > 20 || f.lo < 1);
    s.charts.push_back(std::move(bars));
  }
  for (Chart& c : curves) s.charts.push_back(std::move(c));
  return s;
}

}  // namespace

std::vector<Section> OverviewSections(const Overview& ov) {
  std::vector<Section> out;
  for (const std::string& fam : ov.families) out.push_back(FamilySection(ov, fam));
  return out;
}

}  // namespace dlb::report
