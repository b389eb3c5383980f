// Renders the HTML report in headless Chromium and checks that every SVG chart has a drawn plot.
// Skips when Chromium is absent (CI installs Debian's `chromium`). Set DLB_REPORT_SCREENSHOT=x.png
// to keep a screenshot for a look by eye.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "tests/support/temp_dir.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/roofline.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {
namespace {

namespace fs = std::filesystem;

std::string FindChromium() {
  for (const char* c : {"chromium", "chromium-browser", "google-chrome"}) {
    std::string cmd = std::string("command -v ") + c + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return c;
  }
  return "";
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string SweepJson() {
  std::string b;
  auto add = [&](const std::string& name, double us) {
    for (int rep = 0; rep < 3; ++rep) {
      if (!b.empty()) b += ",";
      b += R"({"name": ")" + name + R"(", "run_type": "iteration", "real_time": )" +
           std::to_string(us * (1 + 0.01 * rep)) + R"(, "time_unit": "us"})";
    }
  };
  for (int bs : {16, 32, 64, 128, 256}) {
    add("train/gpu/libtorch/resnet18.cifar/bs:" + std::to_string(bs) + "/dt:f32/manual_time",
        bs * (300 / std::pow(bs, 0.85) + 1.5));
    add("train/cpu/libtorch/resnet18.cifar/bs:" + std::to_string(bs) + "/dt:f32/manual_time",
        bs * (60 + 200.0 / bs));
  }
  add("gemm/cpu/onednn/square.1024/dt:f32/manual_time", 2000);
  add("gemm/gpu/cublaslt/square.1024/dt:f32/manual_time", 20);
  add("gemm/gpu/cublas/square.1024/dt:f32/manual_time", 25);
  return R"({"context": {"host_name": "test"}, "benchmarks": [)" + b + "]}";
}

TEST(Html, ChartsAreDrawnInChromium) {
  std::string chromium = FindChromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed (apt-get install chromium)";
  const dlb::testing::TempDir tmp("html");
  const fs::path& dir = tmp.path();
  fs::create_directories(dir / "profile");
  MergedRuns m = Merge({ParseBenchmarkJson(SweepJson(), "sweep.json")});
  std::string html = RenderHtml(FullReport(m, {"sweep.json"}));
  std::ofstream(dir / "report.html") << html;

  size_t charts = 0;
  for (size_t p = html.find("<svg class=\"chart\""); p != std::string::npos;
       p = html.find("<svg class=\"chart\"", p + 1))
    ++charts;
  ASSERT_GE(charts, 3u);  // speedup bars, sweep throughput, sweep time per sample with fit

  std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-quic "
      "--no-first-run --disable-background-networking --disable-component-update "
      "--disable-sync --user-data-dir=" +
      (dir / "profile").string();
  std::string url = "file://" + (dir / "report.html").string();
  std::string cmd = "timeout 120 " + chromium + flags + " --dump-dom " + url + " >" +
                    (dir / "dom.html").string() + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string dom = Slurp(dir / "dom.html");
  size_t drawn = 0, not_drawn = 0;
  for (size_t p = dom.find("data-drawn=\"1\""); p != std::string::npos;
       p = dom.find("data-drawn=\"1\"", p + 1))
    ++drawn;
  for (size_t p = dom.find("data-drawn=\"0\""); p != std::string::npos;
       p = dom.find("data-drawn=\"0\"", p + 1))
    ++not_drawn;
  EXPECT_EQ(drawn, charts) << "the page's script marks each chart whose plot has an extent";
  EXPECT_EQ(not_drawn, 0u);

  if (const char* shot = std::getenv("DLB_REPORT_SCREENSHOT")) {
    std::string s = "timeout 120 " + chromium + flags +
                    " --window-size=1300,2600 --screenshot=" + shot + " " + url +
                    " >/dev/null 2>&1";
    EXPECT_EQ(std::system(s.c_str()), 0);
  }
}

size_t Count(const std::string& text, const std::string& what, size_t from = 0,
             size_t to = std::string::npos) {
  size_t n = 0;
  for (size_t p = text.find(what, from); p < to && p != std::string::npos;
       p = text.find(what, p + 1))
    ++n;
  return n;
}

// The first screen answers the questions: per family a short table per network with CPU time,
// GPU time, speedup and the best batch size, and its charts; per-benchmark tables and the labels
// come after, collapsed. Checked on a smoke-tier-shaped run of the H100 (data/smoke_h100.json).
TEST(Html, TheReportLeadsWithTheAnswers) {
  MergedRuns m = Merge({ReadBenchmarkFile(std::string(DLB_REPORT_TEST_DATA) + "/smoke_h100.json")});
  std::string html = RenderHtml(FullReport(m, {"smoke_h100.json"}));
  size_t details = html.find("<details>");
  ASSERT_NE(details, std::string::npos);
  // Families first, each with its networks and the workloads that have none.
  EXPECT_LT(html.find("\">gemm</h2>"), details);
  EXPECT_LT(html.find("\">conv</h2>"), details);
  for (const char* t : {"Network mlp", "Network catdog64", "Network resnet18_cifar",
                        "Shapes without a network", "GPU FLOP/s", "GPU images/s", "★"})
    EXPECT_LT(html.find(t), details) << t;
  // The findings come before every family's table.
  size_t findings = html.find("<h2 id=\"findings\">Findings</h2>");
  ASSERT_NE(findings, std::string::npos);
  EXPECT_LT(findings, html.find("\">gemm</h2>"));
  EXPECT_LT(findings, html.find("\">conv</h2>"));
  // Without training steps the findings answer per network of layers (GEMM's MLP, conv's).
  size_t networks = html.find("Networks of layers");
  EXPECT_LT(findings, networks);
  EXPECT_LT(networks, html.find("\">gemm</h2>"));
  EXPECT_LT(html.find(">resnet18_cifar</td>", findings), html.find("\">gemm</h2>"));
  // Square GEMMs and DeepBench shapes are no network.
  EXPECT_EQ(html.find("Network square"), std::string::npos);
  EXPECT_EQ(html.find("Network deepbench"), std::string::npos);
  // A few charts up front (speedup bars, a curve per network and dtype); after them only the
  // per-workload speedup bars of each family, none of the 48 two-point sweeps. No label before the
  // details, and every table of benchmarks in them.
  size_t charts = Count(html, "<svg class=\"chart\"", 0, details);
  EXPECT_GE(charts, 4u);
  EXPECT_LE(charts, 8u);
  EXPECT_EQ(Count(html, "<svg class=\"chart\"", details), 2u);
  EXPECT_EQ(html.find(m.benches[0].label), html.rfind(m.benches[0].label));
  EXPECT_GT(html.find(m.benches[0].label), html.rfind("<details>"));
  EXPECT_GT(html.find("/manual_time"), details);
  EXPECT_LT(html.size(), 250u << 10);
}

// Analyses hand render/ typed cells; how each kind reads is decided here alone.
TEST(Cells, EachKindReadsByItsKindAndCarriesItsNumber) {
  EXPECT_EQ(Cell::Time(1234567).Text(), "1.23 ms");
  EXPECT_EQ(Cell::Rate(7.6e14, "FLOP/s").Text(), "760 TFLOP/s");
  EXPECT_EQ(Cell::Rate(1.41e15, "OP/s").Text(), "1.41 POP/s");
  EXPECT_EQ(Cell::Rate(12300, "images/s").Text(), "12.3 k images/s");
  EXPECT_EQ(Cell::Ratio(14.31).Text(), "14.3x");
  EXPECT_EQ(Cell::Percent(0.123).Text(), "12.3%");
  EXPECT_EQ(Cell::Signed(0.1234).Text(), "+12.34%");
  EXPECT_EQ(Cell::Count(8192).Text(), "8192");  // never "8.19k"
  EXPECT_EQ(Cell::Count(2, "GPUs").Text(), "2 GPUs");
  EXPECT_EQ(Cell::Items(50000).Text(), "50,000");
  EXPECT_EQ(Cell::Bytes(1 << 30).Text(), "1 GiB");
  EXPECT_EQ(Cell::Duration(400).Text(), "6.67 min");
  EXPECT_EQ(Cell::Fixed(0.1, 4, true).Text(), "+0.1000");
  EXPECT_EQ(Cell::Number(101.6, 4).After("%").Doubtful().Text(), "⚠ 101.6%");
  EXPECT_EQ(Cell::Time(std::nan("")).Text(), "-");
  EXPECT_FALSE(Cell::Time(std::nan("")).value);
  EXPECT_EQ(*Cell::Rate(7.6e14, "FLOP/s").value, 7.6e14);
  EXPECT_EQ(Prose({"took ", Cell::Time(2e9), " at ", Cell::Count(256)}), "took 2.00 s at 256");
  // CSV and JSON carry the number, Markdown and HTML the text.
  Document d;
  Section s;
  s.id = "x";
  s.title = "X";
  Table t;
  t.columns = {{"case", "name"}, {"time", "time_ns"}};
  t.rows = {{Cell::Key("a"), Cell::Time(1500)}};
  s.tables.push_back(t);
  d.sections.push_back(s);
  EXPECT_NE(RenderMarkdown(d).find("| a | 1.50 µs |"), std::string::npos);
  EXPECT_NE(RenderCsv(d).find("X,,a,1500"), std::string::npos);
  EXPECT_NE(RenderJson(d).find("\"time_ns\": 1500"), std::string::npos);
  EXPECT_NE(RenderJson(d).find("\"id\": \"x\""), std::string::npos);
  const auto j = nlohmann::json::parse(RenderJson(d));
  EXPECT_EQ(j["sections"][0]["tables"][0]["kinds"]["time_ns"], "time_ns");
  EXPECT_EQ(j["sections"][0]["tables"][0]["kinds"]["name"], "key");
  EXPECT_NE(RenderHtml(d).find("<h2 id=\"x\">X</h2>"), std::string::npos);
}

// report.md reads in a terminal: no line past 200 characters outside code blocks; a long table of
// the details shows its first rows and the columns that fit, and says where the rest is.
TEST(Markdown, TheReportsLinesStayUnder200Characters) {
  Document d;
  d.compact_markdown = true;
  d.notes.push_back(std::string(50, 'a') + " " + std::string(300, 'b') + " " +
                    std::string(120, 'c') + std::string(40, ' ') + "d");
  Section s;
  s.title = "Wide";
  s.details = true;
  Table t;
  for (int c = 0; c < 12; ++c) t.columns.push_back({"column " + std::to_string(c), "c"});
  for (int r = 0; r < 100; ++r) {
    std::vector<Cell> row;
    for (int c = 0; c < 12; ++c) row.push_back(Cell(std::string(20, 'x')));
    t.rows.push_back(row);
  }
  s.tables.push_back(t);
  d.sections.push_back(s);
  const std::string md = RenderMarkdown(d);
  std::istringstream in(md);
  size_t longest = 0, lines = 0;
  for (std::string line; std::getline(in, line); ++lines)
    if (line.size() != 300) longest = std::max(longest, line.size());  // a word alone may be long
  EXPECT_LE(longest, 200u) << md.substr(0, 600);
  EXPECT_NE(md.find("Here the first 60 of 100 rows; without the columns"), std::string::npos);
  EXPECT_LT(lines, 80u);
  // The HTML and the CSV keep every row and column.
  EXPECT_EQ(RenderCsv(d).find("column"), std::string::npos);  // CSV heads with the keys
  size_t csv_rows = 0;
  for (char c : RenderCsv(d)) csv_rows += c == '\n';
  EXPECT_EQ(csv_rows, 101u);
  // Without compact_markdown (compare, history) nothing is cut.
  d.compact_markdown = false;
  EXPECT_EQ(RenderMarkdown(d).find("Here the first"), std::string::npos);
}

// Integer axes tick as integers ("8192", not "8.19k"); a dtype has one colour in every chart.
TEST(Charts, IntegerTicksAndOneColourPerDtype) {
  Chart c;
  c.log_x = true;
  c.series = {Series{"bf16 fwd", {{1024, 1}, {4096, 2}, {8192, 3}}},
              Series{"f32 fwd", {{1024, 2}, {4096, 3}, {8192, 4}}}};
  const std::string svg = RenderSvg(c);
  EXPECT_NE(svg.find(">8192</text>"), std::string::npos);
  EXPECT_EQ(svg.find("8.19k"), std::string::npos);
  Chart other;
  other.series = {Series{"roof f32/bf16 50 T", {{1, 1}, {2, 2}}},
                  Series{"bf16 nhwc", {{1, 1}, {2, 3}}}};
  const std::string svg2 = RenderSvg(other);
  auto colour_of = [](const std::string& s, const std::string& name) {
    const size_t at = s.find(">" + name + "</text>");
    const size_t stroke = s.rfind("stroke=\"#", at);
    return s.substr(stroke + 8, 7);
  };
  EXPECT_EQ(colour_of(svg, "bf16 fwd"), colour_of(svg2, "bf16 nhwc"));
  EXPECT_NE(colour_of(svg, "bf16 fwd"), colour_of(svg, "f32 fwd"));
}

// The dtype a chart's label or series name stands for: its one dtype word (split at " /,:()"),
// empty where it names none or several ("roof f16/bf16": a roof two dtypes share).
std::string DtypeWord(const std::string& name) {
  static const std::set<std::string> kDtypes = {"f32", "tf32", "bf16",     "f16",
                                                "fp8", "int8", "amp_bf16", "amp_f16"};
  std::set<std::string> found;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find_first_of(" /,:()", start);
    if (end == std::string::npos) end = name.size();
    if (const std::string w = name.substr(start, end - start); kDtypes.count(w)) found.insert(w);
    start = end + 1;
  }
  return found.size() == 1 ? *found.begin() : std::string();
}

// An attribute of the SVG element that opens at `at`.
std::string Attribute(const std::string& html, size_t at, const std::string& name) {
  const size_t end = html.find('>', at);
  const size_t a = html.find(" " + name + "=\"", at);
  if (a == std::string::npos || a > end) return "";
  const size_t from = a + name.size() + 3;
  return html.substr(from, html.find('"', from) - from);
}

// Every colour each dtype takes in the charts of `html`, by what shows it: "bar" (a bar's fill,
// by its tooltip), "marker" (a point's fill, by its tooltip), "roof" (a roofline's roof, by its
// legend entry).
std::map<std::string, std::map<std::string, std::set<std::string>>> DtypeColours(
    const std::string& html) {
  std::map<std::string, std::map<std::string, std::set<std::string>>> out;
  for (size_t at = html.find("<title>"); at != std::string::npos;
       at = html.find("<title>", at + 1)) {
    const size_t open = html.rfind('<', at - 1);
    const std::string tag = html.substr(open + 1, html.find_first_of(" >", open) - open - 1);
    if (tag != "rect" && tag != "circle" && tag != "polygon") continue;
    const std::string tip = html.substr(at + 7, html.find("</title>", at) - at - 7);
    const std::string dtype = DtypeWord(tip.substr(0, tip.rfind(": ")));
    std::string fill = Attribute(html, open, "fill");
    if (fill == "#fff") fill = Attribute(html, open, "stroke");  // a hollow marker
    if (!dtype.empty())
      out[dtype][tag == "rect" && tip.find(", ") == std::string::npos ? "bar" : "marker"].insert(
          fill);
  }
  for (size_t at = html.find(">roof "); at != std::string::npos; at = html.find(">roof ", at + 1)) {
    const std::string name = html.substr(at + 1, html.find('<', at) - at - 1);
    const size_t line = html.rfind("<line ", at);
    if (const std::string dtype = DtypeWord(name); !dtype.empty())
      out[dtype]["roof"].insert(Attribute(html, line, "stroke"));
  }
  return out;
}

// One colour per dtype across the report's charts: the speedup bars, the throughput curves over
// batch size (a dtype's CPU and GPU lines apart by their markers) and the roofline's roofs.
TEST(Charts, ADtypeHasOneColourInEveryChartOfTheReport) {
  MergedRuns m = Merge({ReadBenchmarkFile(std::string(DLB_REPORT_TEST_DATA) + "/smoke_h100.json")});
  std::string html = RenderHtml(FullReport(m, {"smoke_h100.json"}));
  // The fixture's cases carry no roof: a roofline of a bf16 and an f32 case beside it.
  RooflineResult roofs;
  for (const char* dt : {"bf16", "f32"}) {
    RooflinePoint p;
    p.family = "gemm";
    p.device = "gpu";
    p.dt = dt;
    p.intensity = 100;
    p.achieved = 1e14;
    p.compute_peak = std::string(dt) == "bf16" ? 8e14 : 5e13;
    p.mem_bw = 3e12;
    roofs.points.push_back(p);
  }
  roofs.devices = {"gpu"};
  html += RenderSvg(RooflineChart(roofs, "gpu", "H100"));
  const auto colours = DtypeColours(html);
  std::map<std::string, std::string> colour_of;
  for (const auto& [dtype, by_what] : colours) {
    std::set<std::string> all;
    for (const auto& [what, set] : by_what) all.insert(set.begin(), set.end());
    EXPECT_EQ(all.size(), 1u) << dtype << " in " << by_what.size() << " kinds of mark";
    if (all.size() == 1) {
      EXPECT_TRUE(colour_of.emplace(*all.begin(), dtype).second)
          << dtype << " shares " << *all.begin() << " with " << colour_of[*all.begin()];
    }
  }
  // The report holds bf16 bars and curves and a bf16 roof: the comparison above is not empty.
  ASSERT_TRUE(colours.count("bf16"));
  const auto& bf16 = colours.at("bf16");
  EXPECT_TRUE(bf16.count("bar"));
  EXPECT_TRUE(bf16.count("marker"));
  EXPECT_TRUE(bf16.count("roof"));
  if (bf16.count("bar") && bf16.count("roof")) EXPECT_EQ(bf16.at("bar"), bf16.at("roof"));
}

// Series of one dtype in a chart share its colour and differ by their markers' shapes (the legend
// shows them); what stands for no dtype (a stacked chart's phases) takes no dtype's colour.
TEST(Charts, SeriesOfOneDtypeDifferByMarkerAndOtherChartsKeepOffDtypeColours) {
  Chart c;
  Series cpu{"cpu", {{1, 1}, {2, 2}}}, gpu{"gpu", {{1, 3}, {2, 4}}};
  cpu.dtype = gpu.dtype = "bf16";
  cpu.shape = 0;
  gpu.shape = 1;
  c.series = {cpu, gpu};
  const std::string svg = RenderSvg(c);
  Chart roof;
  roof.series = {Series{"gemm", {{1, 1}, {2, 2}}}, Series{"roof bf16 800 T", {{1, 1}, {2, 3}}}};
  roof.series[1].markers = false;
  const std::string roof_svg = RenderSvg(roof);
  const auto bf16 = DtypeColours(roof_svg).at("bf16").at("roof");
  ASSERT_EQ(bf16.size(), 1u);
  const std::string colour = *bf16.begin();
  EXPECT_NE(svg.find("<circle class=\"mk\" cx=\""), std::string::npos);
  EXPECT_NE(svg.find("<rect class=\"mk\" x=\""), std::string::npos);
  for (size_t at = svg.find("class=\"mk\""); at != std::string::npos;
       at = svg.find("class=\"mk\"", at + 1))
    EXPECT_EQ(Attribute(svg, svg.rfind('<', at), "fill"), colour);
  Chart stacked;
  stacked.kind = Chart::Kind::kStacked;
  stacked.segments = {"fwd", "bwd", "opt", "other"};
  stacked.stacks = {{"mlp GPU", {1, 2, 3, 4}}};
  const std::string st = RenderSvg(stacked);
  for (const char* dtype_colour : {"#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd"})
    EXPECT_EQ(st.find(dtype_colour), std::string::npos) << dtype_colour;
  // A bar of a dtype (said or in its label) in its colour, short of the reference paler.
  Chart bars;
  bars.kind = Chart::Kind::kBars;
  bars.bar_reference = 1;
  bars.bars = {{"square.1024", 4}, {"square.2048 bf16", 0.5}, {"best", 2}};
  bars.bar_dtypes = {"bf16"};
  const auto bar = DtypeColours(RenderSvg(bars));
  EXPECT_EQ(bar.at("bf16").at("bar"), std::set<std::string>{colour});
  EXPECT_NE(RenderSvg(bars).find("fill-opacity=\"0.5\"><title>square.2048 bf16"),
            std::string::npos);
}

// Columns only machines read (a full name beside its parts, a command) are in CSV and JSON, not in
// Markdown or HTML; a section's code lines are a code block in Markdown, <pre> in HTML, "code" in
// JSON; short Markdown lines cut a long cell after the row's name before the name itself.
TEST(Markdown, MachineColumnsCodeBlocksAndShortLines) {
  Document d;
  d.short_markdown_lines = true;
  Section s;
  s.title = "T";
  s.code = {"# slower: " + std::string(230, 'n'), "./bench '--benchmark_filter=^x$'"};
  Table t;
  t.columns = {{"benchmark", "name", true}, {"case", "case"}, {"note", "note"}};
  t.rows.push_back(
      {Cell("gemm/gpu/x/full"), Cell(std::string(120, 'c')), Cell(std::string(150, 'w'))});
  s.tables.push_back(t);
  d.sections.push_back(s);
  const std::string md = RenderMarkdown(d);
  EXPECT_EQ(md.find("gemm/gpu/x/full"), std::string::npos);
  EXPECT_EQ(md.find("| benchmark"), std::string::npos);
  EXPECT_NE(md.find("```\n# slower: " + std::string(230, 'n') + "\n./bench"), std::string::npos);
  EXPECT_NE(md.find("| " + std::string(120, 'c') + " | www"), std::string::npos) << md;
  EXPECT_NE(md.find("w… |"), std::string::npos);
  const std::string html = RenderHtml(d);
  EXPECT_EQ(html.find("gemm/gpu/x/full"), std::string::npos);
  EXPECT_NE(html.find("<pre><code># slower: "), std::string::npos);
  EXPECT_EQ(html.find("```"), std::string::npos);
  EXPECT_NE(RenderCsv(d).find("T,,gemm/gpu/x/full,"), std::string::npos);
  const auto j = nlohmann::json::parse(RenderJson(d));
  EXPECT_EQ(j["sections"][0]["tables"][0]["rows"][0]["name"], "gemm/gpu/x/full");
  EXPECT_EQ(j["sections"][0]["code"].size(), 2u);
}

// The report is its declared sections in order: each carries its id, the first screen before
// the details.
TEST(Html, TheReportIsItsDeclaredSections) {
  MergedRuns m = Merge({ReadBenchmarkFile(std::string(DLB_REPORT_TEST_DATA) + "/smoke_h100.json")});
  Document d = FullReport(m, {"smoke_h100.json"});
  ASSERT_FALSE(d.sections.empty());
  bool details = false;
  std::set<std::string> ids;
  for (const Section& s : d.sections) {
    EXPECT_FALSE(s.id.empty()) << s.title;
    EXPECT_TRUE(ids.insert(s.id).second) << s.id << " twice";
    EXPECT_FALSE(details && !s.details) << s.title << " of the first screen after the details";
    details = details || s.details;
  }
  EXPECT_EQ(d.sections.back().id, "labels");
  EXPECT_EQ(d.sections.front().id, "problems");
  EXPECT_TRUE(ids.count("findings"));
  EXPECT_TRUE(ids.count("family-gemm"));  // a family's section: its name in its id
  EXPECT_TRUE(d.compact_markdown);
}

}  // namespace
}  // namespace dlb::report
