#include "tools/report/analyses/rerun.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "tools/report/analyses/bisect.h"
#include "tools/report/analyses/process.h"
#include "tools/report/analyses/repro.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report {

namespace {

namespace fs = std::filesystem;

struct TempFolder {
  std::string path;
  ~TempFolder() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

std::vector<double> RerunCase(const std::string& name, const std::string& repro, int repetitions,
                              std::string* why) {
  TempFolder tmp;
  std::string tmpl = (fs::temp_directory_path() / "dlbench-confirm-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    *why = std::string("cannot create a temporary folder: ") + std::strerror(errno);
    return {};
  }
  tmp.path = tmpl;
  const std::string json = tmp.path + "/rerun.json", log = tmp.path + "/rerun.log";
  // Google Benchmark reads its flags in order: the repetitions given last win over the recorded.
  const std::string command =
      repro + " " + ShellQuote("--benchmark_repetitions=" + std::to_string(repetitions)) + " " +
      ShellQuote("--benchmark_out=" + json) + " --benchmark_out_format=json";
  int rc;
  {
    SignalGuard signals;
    rc = RunProcess({"/bin/sh", "-c", command}, ".", log, {});
    if (CaughtSignal())
      throw std::runtime_error("history check --confirm: interrupted (signal " +
                               std::to_string(CaughtSignal()) + ") while re-running " + name);
  }
  if (rc != 0) {
    *why = "the re-run failed (exit " + std::to_string(rc) + "): " + LastLine(log);
    return {};
  }
  std::error_code ec;
  if (!fs::exists(json, ec) || fs::file_size(json, ec) == 0) {
    *why = "the re-run wrote no JSON (its filter matched no case?)";
    return {};
  }
  MergedRuns runs;
  try {
    runs = Merge({ReadBenchmarkFile(json)});
  } catch (const InputError& e) {
    *why = std::string("the re-run's JSON: ") + e.what();
    return {};
  }
  const std::string want = CaseBaseName(name);
  for (const Bench& b : runs.benches) {
    if (CaseBaseName(b.name) != want) continue;
    if (!b.measured() || b.real_ns.empty()) {
      *why = "the re-run did not measure it: " + std::string(StatusName(b.status)) +
             (b.message.empty() ? "" : ": " + b.message);
      return {};
    }
    return b.real_ns;
  }
  *why = "the re-run's output has no " + want;
  return {};
}

}  // namespace dlb::report
