// The report's first screen: per family and network, CPU time, GPU time, speedup and the best
// batch size, with their charts; every per-benchmark table comes after it.
#include "tools/report/analyses/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/findings.h"
#include "tools/report/analyses/gpu_scaling.h"
#include "tools/report/analyses/roofline.h"
#include "tools/report/analyses/speedup.h"
#include "tools/report/analyses/summary.h"
#include "tools/report/analyses/sweep.h"
#include "tools/report/analyses/train.h"
#include "tools/report/analyses/transformer.h"

namespace dlb::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// "fmt:nchw/pass:fwd" -> "nchw fwd": legends have little room.
std::string KeyValues(const std::string& config) {
  std::string out;
  size_t start = 0;
  while (start <= config.size()) {
    size_t end = config.find('/', start);
    if (end == std::string::npos) end = config.size();
    std::string part = config.substr(start, end - start);
    auto colon = part.find(':');
    if (!part.empty()) out += (out.empty() ? "" : " ") + part.substr(colon + 1);
    start = end + 1;
  }
  return out;
}

// Families whose cases are never added up into a network: a data-loading pipeline reads a dataset
// (its network field) but two pipelines are no sum, nor are two collectives, nor the attention of
// one model at several sequence lengths.
bool ByWorkload(const std::string& family) {
  return family == "dataload" || family == kCommFamily || family == kAttnFamily;
}

// The most rows a table of the first screen holds.
constexpr size_t kFirstScreenRows = 40;
// The most throughput charts a family shows there.
constexpr size_t kFirstScreenCharts = 6;

Cell TimeCell(double ns) { return std::isfinite(ns) ? Cell(FormatTime(ns), ns) : Cell("-"); }

// Columns that say nothing here ("-" in every row: a CPU-only run's GPU time, a dtype no case
// names) are left out.
void DropEmptyColumns(Table* t) {
  for (size_t i = t->columns.size(); i-- > 0;) {
    bool empty = std::all_of(t->rows.begin(), t->rows.end(),
                             [&](const std::vector<Cell>& r) { return r[i].text == "-"; });
    if (!empty) continue;
    t->columns.erase(t->columns.begin() + static_cast<std::ptrdiff_t>(i));
    for (auto& r : t->rows) r.erase(r.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

std::string Context(const std::map<std::string, std::string>& ctx, std::string_view key) {
  auto it = ctx.find(std::string(key));
  return it == ctx.end() ? std::string() : it->second;
}

// "host: CPU (16 CPUs), GPU; run DATE; dlbench 0.1.0 at REVISION".
// The GPU is named only where one measured something; otherwise the findings say why there is
// none, once.
std::string MachineLine(const std::map<std::string, std::string>& ctx, bool gpu) {
  std::string cpu = Context(ctx, schema::kCtxCpuModel), cpus = Context(ctx, schema::kCtxNumCpus);
  if (!cpus.empty()) cpu += (cpu.empty() ? "" : " ") + std::string("(") + cpus + " CPUs)";
  std::string machine = JoinNonEmpty({cpu, gpu ? Context(ctx, schema::kCtxGpuName) : ""}, ", ");
  std::string host = Context(ctx, schema::kCtxHostName);
  if (!host.empty()) machine = host + (machine.empty() ? "" : ": " + machine);
  std::string date = Context(ctx, schema::kCtxDate);
  std::string version = Context(ctx, schema::kCtxVersion),
              rev = Context(ctx, schema::kCtxGitRevision);
  std::string build;
  if (!version.empty() || !rev.empty())
    build = "dlbench " + JoinNonEmpty({version, rev.empty() ? "" : "at " + rev}, " ");
  return JoinNonEmpty({machine, date.empty() ? "" : "run " + date, build}, "; ");
}

Cell RateCell(double per_s, bool best) {
  if (!std::isfinite(per_s)) return Cell("-");
  Cell c(FormatRate(per_s) + (best ? " ★" : ""), per_s);
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
              (by_config ? " " + KeyValues(ls[0].config) : "") + ": " + per_s;
    c.x_label = "batch size";
    c.y_label = per_s;
    c.log_x = true;
    std::vector<std::string> pairs;
    for (const Line& l : ls) {
      std::string name =
          JoinNonEmpty({l.device, by_dt ? "" : l.dt, by_config ? "" : KeyValues(l.config)}, " ");
      // A CPU line and its GPU twin (same dtype and config) take neighbouring palette colours.
      std::string pair = l.dt + "|" + l.config;
      auto at = std::find(pairs.begin(), pairs.end(), pair);
      if (at == pairs.end()) at = pairs.insert(pairs.end(), pair);
      int color = 2 * static_cast<int>(at - pairs.begin()) + (l.device == "cpu" ? 0 : 1);
      c.series.push_back(Series{name, l.points, true, true, color});
    }
    c.log_y = WideY(c);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

Overview ComputeOverview(const MergedRuns& runs) {
  // The fastest backend of each device per layer (pair key), at each batch size.
  struct Layer {
    double ns = INFINITY;
    double weight = 1;
    bool doubtful = false;  // the fastest backend's result was not verified or was mistrusted
    double flop = kNaN;     // per run, of the fastest backend
    double busbw = kNaN, algbw = kNaN;
  };
  using RowKey = std::tuple<std::string, std::string, std::string, std::string, double>;
  struct Acc {
    bool network = false;
    std::map<std::string, Layer> cpu, gpu;  // by pair key
  };
  std::map<RowKey, Acc> acc;
  std::map<std::string, size_t> family_order, subject_order, group_order;
  Overview out;
  for (const Bench& b : runs.benches) {
    if (!b.parsed || !b.measured() || !(b.MedianNs() > 0)) continue;
    const BenchName& n = *b.parsed;
    if (n.device != "cpu" && n.device != "gpu") continue;
    bool network = !b.network.empty() && !ByWorkload(b.family);
    std::string subject = network ? b.network : n.workload;
    std::string dt = n.Get(key::kDType), config = ConfigKeys(n);
    double bs = std::atof(n.Get(key::kBatch).c_str());
    if (!(bs > 0)) bs = 0;
    if (family_order.emplace(b.family, family_order.size()).second)
      out.families.push_back(b.family);
    subject_order.emplace(b.family + "|" + subject, subject_order.size());
    group_order.emplace(b.family + "|" + subject + "|" + dt + "|" + config, group_order.size());
    Acc& a = acc[{b.family, subject, dt, config, bs}];
    a.network = network;
    Layer& l = (n.device == "cpu" ? a.cpu : a.gpu)[PairKey(n)];
    double count = b.Counter(schema::kCount);
    if (b.MedianNs() < l.ns) {
      l.ns = b.MedianNs();
      l.doubtful = b.verification.doubtful();
      l.flop = b.Counter(schema::kFlopPerS) * l.ns * 1e-9;
      l.busbw = b.Counter(schema::kBusBw);
      l.algbw = b.Counter(schema::kAlgBw);
    }
    l.weight = network && std::isfinite(count) && count > 0 ? count : 1;
  }
  for (const auto& [key, a] : acc) {
    OverviewRow r;
    std::tie(r.family, r.subject, r.dt, r.config, r.bs) = key;
    r.network = a.network;
    auto sum = [](const std::map<std::string, Layer>& layers) {
      double t = 0;
      for (const auto& [k, l] : layers) t += l.weight * l.ns;
      return layers.empty() ? kNaN : t;
    };
    r.cpu_layers = static_cast<int>(a.cpu.size());
    r.gpu_layers = static_cast<int>(a.gpu.size());
    r.cpu_ns = sum(a.cpu);
    r.gpu_ns = sum(a.gpu);
    // A speedup only over the same layers on both devices.
    bool same = a.cpu.size() == a.gpu.size() &&
                std::equal(a.cpu.begin(), a.cpu.end(), a.gpu.begin(),
                           [](const auto& x, const auto& y) { return x.first == y.first; });
    r.speedup = same ? r.cpu_ns / r.gpu_ns : kNaN;
    for (const auto* layers : {&a.cpu, &a.gpu})
      for (const auto& [k, l] : *layers) r.doubtful = r.doubtful || l.doubtful;
    r.cpu_per_s = r.bs > 0 ? r.bs / r.cpu_ns * 1e9 : kNaN;
    r.gpu_per_s = r.bs > 0 ? r.bs / r.gpu_ns * 1e9 : kNaN;
    auto flop_rate = [](const std::map<std::string, Layer>& layers) {
      double flop = 0, ns = 0;
      for (const auto& [k, l] : layers) {
        if (!(l.flop > 0)) return kNaN;
        flop += l.weight * l.flop;
        ns += l.weight * l.ns;
      }
      return layers.empty() ? kNaN : flop / ns * 1e9;
    };
    r.cpu_flop_per_s = flop_rate(a.cpu);
    r.gpu_flop_per_s = flop_rate(a.gpu);
    r.busbw = a.gpu.size() == 1 && a.cpu.empty() ? a.gpu.begin()->second.busbw : kNaN;
    r.algbw = a.gpu.size() == 1 && a.cpu.empty() ? a.gpu.begin()->second.algbw : kNaN;
    out.rows.push_back(r);
  }
  auto order = [&](const OverviewRow& r) {
    return std::make_tuple(family_order[r.family], subject_order[r.family + "|" + r.subject],
                           group_order[r.family + "|" + r.subject + "|" + r.dt + "|" + r.config],
                           r.bs);
  };
  std::sort(out.rows.begin(), out.rows.end(),
            [&](const OverviewRow& a, const OverviewRow& b) { return order(a) < order(b); });
  // The best batch size per device: the most samples/s, when there are at least two to choose.
  for (size_t i = 0; i < out.rows.size();) {
    size_t j = i;
    while (j < out.rows.size() && out.rows[j].family == out.rows[i].family &&
           out.rows[j].subject == out.rows[i].subject && out.rows[j].dt == out.rows[i].dt &&
           out.rows[j].config == out.rows[i].config)
      ++j;
    for (bool gpu : {false, true}) {
      size_t best = j, points = 0;
      for (size_t k = i; k < j; ++k) {
        double v = gpu ? out.rows[k].gpu_per_s : out.rows[k].cpu_per_s;
        if (!std::isfinite(v)) continue;
        ++points;
        if (best == j || v > (gpu ? out.rows[best].gpu_per_s : out.rows[best].cpu_per_s)) best = k;
      }
      if (points >= 2) (gpu ? out.rows[best].gpu_best : out.rows[best].cpu_best) = true;
    }
    i = j;
  }
  return out;
}

namespace {

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
  } else if (fam == "conv") {
    w.item = "layer";
    w.loose = "Layers without a network";
    w.per_s = "images/s";
  } else if (fam == "dataload") {
    w.item = "pipeline";
    w.loose = "Pipelines";
    w.per_s = "images/s";
    w.time = "time per batch";
    w.by_workload = ByWorkload(fam);
  } else if (fam == kCommFamily) {
    w.item = "collective";
    w.loose = "Collectives: message sizes and bus bandwidth";
    w.collectives = true;
    w.by_workload = ByWorkload(fam);
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
  Cell c(WithUnit(v, unit) + (best ? " ★" : ""), v);
  return best ? c.With(Tone::kGood) : c;
}

// The overview table's columns: a network's table or the loose workloads', with or without bs.
std::vector<Column> OverviewColumns(const Words& w, bool network, bool bs) {
  std::vector<Column> c;
  if (w.collectives) {
    c = {{w.item, "collective"},
         {"size", "bytes"},
         {"dt", "dt"},
         {"config", "config"},
         {"GPU time", "gpu_ns"},
         {"bus bandwidth", std::string(schema::kBusBw)},
         {"algorithm bandwidth", std::string(schema::kAlgBw)}};
    return c;
  }
  if (!network) c.push_back({w.item, "workload"});
  c.push_back({"dt", "dt"});
  c.push_back({"config", "config"});
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
  return c;
}

std::vector<Cell> OverviewCells(const Words& w, const OverviewRow& r, bool bs) {
  std::vector<Cell> c;
  if (w.collectives) {
    auto [name, bytes] = CollectiveOf(r.subject);
    c.emplace_back(name);
    c.push_back(bytes > 0 ? Cell(FormatBytes(bytes), bytes) : Cell("-"));
    c.emplace_back(r.dt.empty() ? "-" : r.dt);
    c.emplace_back(r.config.empty() ? "-" : r.config);
    c.push_back(TimeCell(r.gpu_ns));
    c.push_back(RateUnitCell(r.busbw, "B/s", false));
    c.push_back(RateUnitCell(r.algbw, "B/s", false));
    if (r.doubtful && std::isfinite(r.busbw))
      c[5] = Cell("⚠ " + c[5].text, r.busbw).With(Tone::kWarn);
    return c;
  }
  if (!r.network) c.emplace_back(r.subject);
  c.emplace_back(r.dt.empty() ? "-" : r.dt);
  c.emplace_back(r.config.empty() ? "-" : r.config);
  if (bs) c.push_back(r.bs > 0 ? Cell(FormatNumber(r.bs, 6), r.bs) : Cell("-"));
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
    c.push_back(RateUnitCell(r.cpu_flop_per_s, "FLOP/s", r.cpu_best));
    c.push_back(RateUnitCell(r.gpu_flop_per_s, "FLOP/s", r.gpu_best));
  } else if (bs) {
    c.push_back(RateCell(r.cpu_per_s, r.cpu_best));
    c.push_back(RateCell(r.gpu_per_s, r.gpu_best));
  }
  return c;
}

// What a family's rows hold, for its note, its bar chart's title and scale.
struct FamilyRange {
  bool any_bs = false, any_speedup = false, any_doubtful = false, any_network = false;
  bool any_cpu = false, any_gpu = false;
  double lo = INFINITY, hi = 0;  // of the finite speedups
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
      if (std::isfinite(r.speedup)) {
        f.any_speedup = true;
        f.lo = std::min(f.lo, r.speedup);
        f.hi = std::max(f.hi, r.speedup);
      }
    }
  return f;
}

std::string FamilyNote(const Words& w, const FamilyRange& f) {
  if (w.collectives)
    return std::string(
               "Per collective and message size: the time of one collective, and nccl-tests' "
               "bus bandwidth (algorithm bandwidth x the collective's factor) and algorithm "
               "bandwidth.") +
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
    head += " Speedup = CPU " + w.time + " / GPU " + w.time + ": " + FormatNumber(f.lo, 3) +
            "x to " + FormatNumber(f.hi, 3) + "x here.";
  if (f.any_bs)
    head += std::string(" ★ marks ") + (f.any_cpu && f.any_gpu ? "each device's" : "the") +
            " best batch size (most " + (w.flops ? "FLOP/s" : w.per_s) + ").";
  if (f.any_doubtful)
    head += " ⚠: a result the row adds up was not verified or was mistrusted (see the summary).";
  return head;
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
      DropEmptyColumns(&t);
      s.tables.push_back(std::move(t));
    } else {
      for (const OverviewRow* r : rows) loose.rows.push_back(OverviewCells(w, *r, loose_bs));
    }
    for (const Group& g : groups)
      if (const OverviewRow* h = Headline(g))
        bars.bars.emplace_back(JoinNonEmpty({subj, g.dt, KeyValues(g.config),
                                             h->bs > 0 ? BatchSizeLabel(h->bs) : std::string()},
                                            " "),
                               h->speedup);
    for (Chart& c : Curves(subj, groups, w.per_s)) curves.push_back(std::move(c));
  }
  if (!loose.rows.empty()) {
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

// Networks of layers (conv, GEMM; train has its epoch table): per network the speedup at the
// GPU's best batch size over its dtypes and configs, and per device the best batch size of its
// fastest configuration.
Table NetworkFindings(const Overview& ov) {
  Table t;
  t.title =
      "Networks of layers: speedup at the GPU's best batch size, and each device's best batch "
      "size (most samples/s)";
  t.columns = {{"family", "family"},
               {"network", "network"},
               {"speedup", "speedup"},
               {"CPU best", "cpu_best"},
               {"GPU best", "gpu_best"}};
  struct Acc {
    double lo = INFINITY, hi = 0;
    bool doubtful = false;
    const OverviewRow *cpu = nullptr, *gpu = nullptr;    // the most samples/s of each device
    std::map<std::string, const OverviewRow*> headline;  // per dt|config
  };
  std::vector<std::string> order;
  std::map<std::string, Acc> acc;
  for (const OverviewRow& r : ov.rows) {
    if (!r.network || r.family == kTrainFamily) continue;
    std::string key = r.family + "|" + r.subject;
    if (!acc.count(key)) order.push_back(key);
    Acc& a = acc[key];
    if (std::isfinite(r.cpu_per_s) && (!a.cpu || r.cpu_per_s > a.cpu->cpu_per_s)) a.cpu = &r;
    if (std::isfinite(r.gpu_per_s) && (!a.gpu || r.gpu_per_s > a.gpu->gpu_per_s)) a.gpu = &r;
    // The group's headline: its GPU's best batch size, else its largest with a speedup.
    const OverviewRow*& h = a.headline[r.dt + "|" + r.config];
    if (std::isfinite(r.speedup) && (!h || !h->gpu_best)) h = &r;
  }
  auto best = [](const OverviewRow* r, bool gpu) {
    if (!r) return Cell("-");
    double v = gpu ? r->gpu_per_s : r->cpu_per_s;
    // "fmt:nhwc/pass:fwd" reads "nhwc fwd" here: the table's title says what it is.
    std::string config;
    for (const std::string& part : {r->dt, r->config}) {
      size_t start = 0;
      while (start < part.size()) {
        size_t end = std::min(part.find('/', start), part.size());
        std::string kv = part.substr(start, end - start);
        config += (config.empty() ? "" : " ") + kv.substr(kv.find(':') + 1);
        start = end + 1;
      }
    }
    return Cell(BatchSizeLabel(r->bs) + " · " +
                    WithUnit(v, r->family == "conv" ? "images/s" : "samples/s") +
                    (config.empty() ? "" : " (" + config + ")"),
                r->bs);
  };
  for (const std::string& key : order) {
    Acc& a = acc[key];
    for (const auto& [g, h] : a.headline) {
      if (!h) continue;
      a.lo = std::min(a.lo, h->speedup);
      a.hi = std::max(a.hi, h->speedup);
      a.doubtful |= h->doubtful;
    }
    Cell speedup("-");
    if (a.hi > 0)
      speedup = a.lo == a.hi ? SpeedupCell(a.hi, a.doubtful)
                             : Cell((a.doubtful ? "⚠ " : "") + FormatNumber(a.lo, 3) + "x to " +
                                        FormatNumber(a.hi, 3) + "x",
                                    a.hi);
    size_t bar = key.find('|');
    t.rows.push_back({Cell(key.substr(0, bar)), Cell(key.substr(bar + 1)), speedup,
                      best(a.cpu, false), best(a.gpu, true)});
  }
  DropEmptyColumns(&t);
  if (std::none_of(t.columns.begin(), t.columns.end(),
                   [](const Column& c) { return c.key == "speedup"; }))
    t.title = "Networks of layers: the best batch size (most samples/s)";
  return t;
}

std::vector<Section> OverviewSections(const Overview& ov) {
  std::vector<Section> out;
  for (const std::string& fam : ov.families) out.push_back(FamilySection(ov, fam));
  return out;
}

Document FullReport(const MergedRuns& runs, const std::vector<std::string>& inputs) {
  Document d;
  d.title = "dlbench report";
  SummaryResult summary = ComputeSummary(runs);
  const Devices devices = DevicesOf(runs);
  if (auto m = MachineLine(runs.context, devices.gpu); !m.empty())
    d.notes.push_back("Machine: " + m + ".");
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
  d.notes.push_back(counts);

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
  // A table longer than a screen (every layer of a full conv run) would bury the families after
  // it: it moves into the details, collapsed, and a line says where it went.
  std::vector<Section> long_tables;
  for (size_t i = 0; i < overview.size(); ++i) {
    if (ov.families[i] != kTrainFamily || train.cases.empty()) {
      Section& s = overview[i];
      // GEMM dtypes side by side (fp8 and int8 beside bf16) before the per-dtype rows.
      if (ov.families[i] == kGemmFamily)
        if (Table t = GemmDtypeTable(runs); !t.rows.empty())
          s.tables.insert(s.tables.begin(), std::move(t));
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
        long_tables.insert(long_tables.begin(), std::move(moved));
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
        long_tables.push_back(std::move(moved));
      }
      size_t curves = std::count_if(s.charts.begin(), s.charts.end(),
                                    [](const Chart& c) { return c.kind == Chart::Kind::kLines; });
      if (curves > kFirstScreenCharts) {
        Section moved;
        moved.title =
            s.title + ": throughput over batch size (" + std::to_string(curves) + " charts)";
        moved.details = true;
        s.notes.push_back("Throughput over batch size: " + std::to_string(curves) +
                          " charts, in the details below (collapsed).");
        for (size_t k = s.charts.size(); k-- > 0;)
          if (s.charts[k].kind == Chart::Kind::kLines) {
            moved.charts.insert(moved.charts.begin(), std::move(s.charts[k]));
            s.charts.erase(s.charts.begin() + static_cast<std::ptrdiff_t>(k));
          }
        long_tables.push_back(std::move(moved));
      }
      // Attention answers over sequence length: the first few charts stay, the rest collapse.
      if (ov.families[i] == kAttnFamily) {
        std::vector<Chart> seq = AttnSeqCharts(runs);
        Section moved;
        moved.title = s.title + ": FLOP/s over sequence length, the rest (" +
                      std::to_string(seq.size() - std::min(seq.size(), kFirstScreenCharts)) +
                      " charts)";
        moved.details = true;
        for (size_t k = 0; k < seq.size(); ++k)
          (k < kFirstScreenCharts ? s.charts : moved.charts).push_back(std::move(seq[k]));
        if (!moved.charts.empty()) {
          s.notes.push_back("FLOP/s over sequence length: " + std::to_string(seq.size()) +
                            " charts, the first " + std::to_string(kFirstScreenCharts) +
                            " here, the rest in the details below (collapsed).");
          long_tables.push_back(std::move(moved));
        }
      }
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
  std::vector<Section> sweeps = SweepSections(SweepCurves(runs), 3);
  Section sweep = std::move(sweeps.front());
  sweep.details = true;
  for (size_t i = 1; i < sweeps.size(); ++i) {
    for (Table& t : sweeps[i].tables) {
      if (t.title.empty()) t.title = sweeps[i].title;
      sweep.tables.push_back(std::move(t));
    }
    for (Chart& c : sweeps[i].charts) sweep.charts.push_back(std::move(c));
  }
  d.sections.push_back(std::move(sweep));
  // Loader scaling over worker threads, where a family sweeps them (data loading).
  if (std::vector<WorkerCurve> workers = WorkerCurves(runs); !workers.empty()) {
    std::vector<Section> ws = WorkerSections(workers);
    Section w = std::move(ws.front());
    w.details = true;
    for (size_t i = 1; i < ws.size(); ++i) {
      for (Table& t : ws[i].tables) {
        if (t.title.empty()) t.title = ws[i].title;
        w.tables.push_back(std::move(t));
      }
      for (Chart& c : ws[i].charts) w.charts.push_back(std::move(c));
    }
    d.sections.push_back(std::move(w));
  }
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
