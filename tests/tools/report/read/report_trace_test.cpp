// The device monitor's trace in the report: read line by line, refused with the file and line of
// what is wrong, and drawn as SVG timelines in the HTML summary.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.h"
#include "tools/report/analyses/timeline.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/read/trace.h"

namespace dlb::report {
namespace {

namespace fs = std::filesystem;

const std::string kHeader =
    "case,t_s,sm_clock_mhz,mem_clock_mhz,power_mw,temp_c,gpu_util_pct,mem_util_pct,"
    "mem_used_bytes,clocks_event_reasons,energy_mj\n";

std::string Data(const std::string& name) { return std::string(DLB_REPORT_TEST_DATA) + "/" + name; }

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The message of the InputError that parsing `text` throws ("" when it parses).
std::string ErrorOf(const std::string& text) {
  try {
    ParseTrace(text, "t.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Trace, ReadsEveryColumnAndEmptyCellsAreAbsent) {
  const Trace t = ReadTrace(Data("monitor_trace.csv"));
  ASSERT_EQ(t.samples.size(), 8u);
  const TraceSample& capped = t.samples[3];
  EXPECT_EQ(capped.case_name, "gemm/gpu/cublaslt/square.8192/dt:bf16");
  EXPECT_DOUBLE_EQ(capped.t_s, 0.531);
  EXPECT_DOUBLE_EQ(capped.sm_clock_mhz, 1755);
  EXPECT_DOUBLE_EQ(capped.mem_clock_mhz, 2619);
  EXPECT_DOUBLE_EQ(capped.power_w, 700);
  EXPECT_DOUBLE_EQ(capped.temp_c, 57);
  EXPECT_DOUBLE_EQ(capped.gpu_util_pct, 100);
  EXPECT_TRUE(capped.has_reasons);
  EXPECT_EQ(capped.reasons, 0x4u);
  EXPECT_TRUE(std::isnan(t.samples[5].gpu_util_pct));
  EXPECT_EQ(t.samples[7].case_name, "gemm/gpu/cublaslt/square,odd/dt:bf16") << "a quoted name";
  EXPECT_FALSE(t.samples[7].has_reasons);
  EXPECT_TRUE(std::isnan(t.samples[7].sm_clock_mhz));
}

TEST(Trace, ColumnsAreFoundByNameAndUnknownOnesAreReadPast) {
  const Trace t = ParseTrace("t_s,future_column,case,sm_clock_mhz\r\n0.5,x,a,1980\r\n\n", "t.csv");
  ASSERT_EQ(t.samples.size(), 1u);
  EXPECT_EQ(t.samples[0].case_name, "a");
  EXPECT_DOUBLE_EQ(t.samples[0].sm_clock_mhz, 1980);
  EXPECT_TRUE(std::isnan(t.samples[0].power_w)) << "no such column";
}

TEST(Trace, MalformedLinesAreRefusedNamingTheFileAndLine) {
  const std::string ok = "a,0.1,1980,2619,300000,60,99,40,1024,0x0,5000\n";
  struct Bad {
    std::string text, want;
  };
  for (const Bad& b : {
           Bad{"", "t.csv:1: empty: not a monitor trace"},
           Bad{"name,time\nx,1\n", "t.csv:1: not a monitor trace"},
           Bad{kHeader + ok + "a,0.2,1980\n", "t.csv:3: 3 fields where the header has 11"},
           Bad{kHeader + ok + "a,0.2,fast,2619,300000,60,99,40,1024,0x0,5000\n",
               "t.csv:3: sm_clock_mhz is not a number: 'fast'"},
           Bad{kHeader + "a,,1980,2619,300000,60,99,40,1024,0x0,5000\n", "t.csv:2: no time"},
           Bad{kHeader + "a,0.1,1980,2619,nan,60,99,40,1024,0x0,5000\n",
               "t.csv:2: power_mw is not a number: 'nan'"},
           Bad{kHeader + "a,0.1,1980,2619,300000,60,99,40,1024,4,5000\n",
               "t.csv:2: clocks_event_reasons is not a hexadecimal mask: '4'"},
           Bad{kHeader + "\"a,0.1,1980,2619,300000,60,99,40,1024,0x0,5000\n",
               "t.csv:2: a quote is not closed"},
           Bad{"case,t_s,case\n", "t.csv:1: column case twice"},
       }) {
    const std::string err = ErrorOf(b.text);
    EXPECT_EQ(err.rfind(b.want, 0), 0u) << "got: " << err << "\nwant: " << b.want;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(Trace, SectionSummarisesEachCaseAndChartsEveryQuantity) {
  const Section s = TraceSection(ReadTrace(Data("monitor_trace.csv")));
  ASSERT_EQ(s.tables.size(), 1u);
  ASSERT_EQ(s.tables[0].rows.size(), 3u) << "one row per case";
  EXPECT_EQ(s.tables[0].rows[0][8].Text(), "yes: sw_power_cap") << "idle (0x1) is no throttle";
  EXPECT_EQ(s.tables[0].rows[1][8].Text(), "no");
  ASSERT_EQ(s.charts.size(), 4u);
  for (const Chart& c : s.charts) {
    EXPECT_EQ(c.marks.size(), 3u) << c.title << ": one mark where each case begins";
    ASSERT_EQ(c.series.size(), 1u);
  }
  EXPECT_EQ(s.charts[0].series[0].points.size(), 7u) << "every sample that has a clock";
  EXPECT_EQ(ParseTrace(kHeader, "t.csv").samples.size(), 0u);
  EXPECT_TRUE(TraceSection(ParseTrace(kHeader, "t.csv")).charts.empty());
}

// End to end: `summary --format html --trace` plots the samples; a malformed trace is one line,
// a non-zero exit and no output file.
TEST(Trace, HtmlSummaryPlotsTheTraceAndAMalformedOneLeavesNoFile) {
  const dlb::testing::TempDir tmp("trace");
  const fs::path& dir = tmp.path();
  const fs::path html = dir / "summary.html";
  auto run = [&](const std::string& trace) {
    const std::string cmd = std::string(DLB_REPORT_EXE) + " summary " + Data("monitor_new.json") +
                            " --trace " + trace + " --format html -o " + html.string() + " 2>" +
                            (dir / "err").string();
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  ASSERT_EQ(run(Data("monitor_trace.csv")), 0) << Slurp(dir / "err");
  const std::string page = Slurp(html);
  EXPECT_NE(page.find("Device timeline"), std::string::npos);
  // The SM clock chart: an <svg> whose solid polyline holds the 7 samples that carry a clock.
  const size_t title = page.find(">SM clock</text>");
  ASSERT_NE(title, std::string::npos) << "no SM clock chart";
  const size_t begin = page.rfind("<svg", title), end = page.find("</svg>", title);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const std::string svg = page.substr(begin, end - begin);
  const size_t line = svg.find("<polyline");
  ASSERT_NE(line, std::string::npos) << svg;
  const std::string polyline = svg.substr(line, svg.find("/>", line) - line);
  EXPECT_EQ(polyline.find("stroke-dasharray"), std::string::npos) << "a measured trace is solid";
  const size_t at = polyline.find("points=\"") + 8;
  std::istringstream points(polyline.substr(at, polyline.find('"', at) - at));
  int n = 0;
  for (std::string p; points >> p;) ++n;
  EXPECT_EQ(n, 7);
  EXPECT_NE(page.find("<title>gemm/gpu/cublaslt/square.4096/dt:bf16</title>"), std::string::npos)
      << "each case's start is marked";

  fs::remove(html);
  const fs::path bad = dir / "bad.csv";
  std::ofstream(bad) << kHeader << "a,0.1,1980\n";
  EXPECT_EQ(run(bad.string()), 1);
  const std::string err = Slurp(dir / "err");
  EXPECT_EQ(err, "dlbench-report: " + bad.string() + ":2: 3 fields where the header has 11\n");
  EXPECT_FALSE(fs::exists(html)) << "no partial output";
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2)
      << "only bad.csv and err: no temporary file left";
}

}  // namespace
}  // namespace dlb::report
