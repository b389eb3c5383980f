// Golden outputs: each subcommand on committed inputs, rendered as Markdown and CSV by the
// binary, must equal tests/tools/report/golden/<case>.<md|csv>: Markdown byte for byte, CSV field
// for field with numbers to 1e-9 (they carry 17 digits, the last of which may differ between one
// libm and another). After an intended change of the output, regenerate them and review the diff:
//   DLB_UPDATE_GOLDEN=1 ctest -R Golden
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> CsvFields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += c;
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

bool Number(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

bool SameField(const std::string& a, const std::string& b) {
  double x, y;
  if (a == b) return true;
  if (!Number(a, &x) || !Number(b, &y)) return false;
  return std::fabs(x - y) <= 1e-9 * std::max(std::fabs(x), std::fabs(y));
}

bool SameLine(const std::string& a, const std::string& b, bool csv) {
  if (!csv) return a == b;
  std::vector<std::string> x = CsvFields(a), y = CsvFields(b);
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!SameField(x[i], y[i])) return false;
  return true;
}

struct Case {
  const char* name;  // golden/<name>.md and .csv
  const char* args;  // after the binary, run in the data folder (names in the output stay short)
  int rc;
};

const Case kCases[] = {
    {"summary", "summary dlbench_v2_base.json", 0},
    {"summary_gb171", "summary real_gb171_cpu_gemm.json", 0},
    {"compare", "compare dlbench_v2_base.json dlbench_v2_new.json --as-compare-py", 3},
    // One repetition a side: the changes are unconfirmed and fail nothing, unless asked to.
    {"compare_test1", "compare gbench/test1_run1.json gbench/test1_run2.json --as-compare-py", 0},
    {"compare_test1_judged",
     "compare gbench/test1_run1.json gbench/test1_run2.json --as-compare-py --min-repetitions 1",
     3},
    {"compare_test3", "compare gbench/test3_run0.json gbench/test3_run1.json --as-compare-py -a",
     0},
    {"compare_aggregates_only", "compare aggregates_only_base.json aggregates_only_new.json", 3},
    {"speedup", "speedup dlbench_v2_base.json", 0},
    {"speedup_h100_gemm", "speedup real_gb183_h100_gemm.json", 0},
    {"sweep", "sweep dlbench_v2_base.json", 0},
    {"report", "report dlbench_v2_base.json", 0},
    {"train", "train train_synthetic.json", 0},
    {"report_train", "report train_synthetic.json", 0},
    {"summary_monitor", "summary monitor_new.json --trace monitor_trace.csv", 0},
    {"compare_monitor", "compare monitor_base.json monitor_new.json", 0},
    {"sweep_gpus", "sweep --axis gpus gpus_h2.json gpus_h4.json gpus_h8.json", 0},
    {"report_gpus", "report gpus_h2.json gpus_h4.json gpus_h8.json", 0},
    {"sweep_gpus_one_gpu_step",
     "sweep --axis gpus gpus_h1.json gpus_h2.json gpus_h4.json gpus_h8.json", 0},
    {"summary_fidelity", "summary fidelity_new.json", 0},
    {"compare_fidelity", "compare fidelity_base.json fidelity_new.json", 0},
};

TEST(Golden, MarkdownAndCsvOfEverySubcommand) {
  const fs::path golden = fs::path(DLB_REPORT_TEST_DATA).parent_path() / "golden";
  const bool update = std::getenv("DLB_UPDATE_GOLDEN") != nullptr;
  const dlb::testing::TempDir dir("golden");
  const fs::path& tmp = dir.path();
  for (const Case& c : kCases) {
    for (const char* fmt : {"md", "csv"}) {
      SCOPED_TRACE(std::string(c.name) + "." + fmt);
      fs::path out = tmp / (std::string(c.name) + "." + fmt);
      std::string cmd = "cd " + std::string(DLB_REPORT_TEST_DATA) + " && " + DLB_REPORT_EXE + " " +
                        c.args + " --format " + fmt + " >" + out.string() + " 2>" +
                        (tmp / "err").string();
      int status = std::system(cmd.c_str());
      ASSERT_TRUE(WIFEXITED(status)) << cmd;
      EXPECT_EQ(WEXITSTATUS(status), c.rc) << cmd << "\n" << Slurp(tmp / "err");
      fs::path want = golden / out.filename();
      if (update) {
        fs::create_directories(golden);
        fs::copy_file(out, want, fs::copy_options::overwrite_existing);
        continue;
      }
      ASSERT_TRUE(fs::exists(want)) << want << " missing: run with DLB_UPDATE_GOLDEN=1";
      std::istringstream g(Slurp(out)), e(Slurp(want));
      const bool csv = std::string(fmt) == "csv";
      std::string gl, el;
      int line = 0;
      bool more_g = true, more_e = true;
      while (true) {
        more_g = static_cast<bool>(std::getline(g, gl));
        more_e = static_cast<bool>(std::getline(e, el));
        ++line;
        if (!more_g || !more_e || !SameLine(gl, el, csv)) break;
      }
      if (!more_g && !more_e) continue;
      // The first line that differs, to start from; `diff` the two files for the rest.
      ADD_FAILURE() << want << " differs from the output at line " << line
                    << ":\n  want: " << (more_e ? el : "(end)")
                    << "\n  got:  " << (more_g ? gl : "(end)")
                    << "\nregenerate with DLB_UPDATE_GOLDEN=1 if intended";
    }
  }
}

}  // namespace
