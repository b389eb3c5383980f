// compare and history check say when runs were measured on different library builds (the
// context's libraries_loaded, tools/report/analyses/libraries.h), next to their verdict.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "fixtures/schema/schema.h"
#include "tests/support/temp_dir.h"
#include "tools/report/analyses/libraries.h"
#include "tools/report/history/history.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {
namespace {

const std::string kSystem =
    "cublas 13.1.0 /usr/local/cuda/lib64/libcublas.so.13; cudnn 9.14.0 "
    "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0; cudnn_graph 9.14.0 "
    "/usr/lib/x86_64-linux-gnu/libcudnn_graph.so.9.14.0";
const std::string kWheel =
    "cublas 13.1.0 /usr/local/cuda/lib64/libcublas.so.13; cudnn 9.19.0 "
    "/venv/site-packages/nvidia/cudnn/lib/libcudnn.so.9";

Context WithLibraries(const std::string& loaded) {
  return {{std::string(schema::kCtxLibraries), loaded}};
}

TEST(LibraryNotes, VersionsComeFromTheLoadedListElseFromTheOlderKeys) {
  const auto v = LibraryVersions(WithLibraries(kSystem));
  EXPECT_EQ(v.size(), 2u);  // cuDNN's parts are cuDNN
  EXPECT_EQ(v.at("cudnn"), "9.14.0");
  EXPECT_EQ(v.at("cublas"), "13.1.0");
  const auto legacy = LibraryVersions({{std::string(schema::kCtxCudnnVersion), "9.14.0"},
                                       {std::string(schema::kCtxNcclVersion), "not built"}});
  EXPECT_EQ(legacy.size(), 1u);
  EXPECT_EQ(legacy.at("cudnn"), "9.14.0");
}

TEST(LibraryNotes, CompareNamesEachVersionThatDiffers) {
  EXPECT_EQ(LibrariesNote(WithLibraries(kSystem), WithLibraries(kSystem)), "");
  const std::string note = LibrariesNote(WithLibraries(kSystem), WithLibraries(kWheel));
  EXPECT_EQ(note,
            "⚠ Measured on different library versions: cudnn 9.14.0 (base) -> 9.19.0 (new). A "
            "change may come from the libraries rather than from the code (the contexts' "
            "libraries_loaded name the files).");
  // The same version from another file (the wheel's copy of the system's build) is said, plainly.
  const std::string moved = LibrariesNote(
      WithLibraries("cudnn 9.19.0 /usr/lib/libcudnn.so.9"),
      WithLibraries("cudnn 9.19.0 /venv/site-packages/nvidia/cudnn/lib/libcudnn.so.9"));
  EXPECT_EQ(moved,
            "Same library versions, loaded from other files: cudnn /usr/lib/libcudnn.so.9 (base) "
            "-> /venv/site-packages/nvidia/cudnn/lib/libcudnn.so.9 (new).");
  // A file that records no library (another tool's JSON) gets no note.
  EXPECT_EQ(LibrariesNote({}, WithLibraries(kWheel)), "");
}

// Two result files of one binary, one run against the system's cuDNN and one against the wheel's:
// dlbench-report compare prints the verdict and, beside it, both versions.
TEST(LibraryNotes, CompareOfTwoFilesSaysBothVersionsNextToTheVerdict) {
  testing::TempDir tmp("libs");
  nlohmann::json j =
      nlohmann::json::parse(tmp.Read(std::string(DLB_REPORT_TEST_DATA) + "/compare_base.json"));
  j["context"][std::string(schema::kCtxLibraries)] = kSystem;
  tmp.Write("system.json", j.dump());
  j["context"][std::string(schema::kCtxLibraries)] = kWheel;
  tmp.Write("wheel.json", j.dump());
  const std::string cmd = std::string(DLB_REPORT_EXE) + " compare '" + tmp / "system.json" + "' '" +
                          tmp / "wheel.json" + "' >'" + tmp / "out" + "' 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string out = tmp.Read("out");
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  const size_t verdict = out.find("**OK**");
  const size_t note = out.find("cudnn 9.14.0 (base) -> 9.19.0 (new)");
  ASSERT_NE(verdict, std::string::npos) << out;
  ASSERT_NE(note, std::string::npos) << out;
  EXPECT_LT(verdict, note);
  // Next to the verdict: the note right after its line (a blank line between, in Markdown).
  const std::string between = out.substr(verdict, note - verdict);
  EXPECT_LE(std::count(between.begin(), between.end(), '\n'), 2) << between;
}

TEST(LibraryNotes, HistoryCheckCountsTheWindowsRunsOnOtherVersions) {
  const std::vector<Context> window = {WithLibraries(kSystem), WithLibraries(kSystem),
                                       WithLibraries(kWheel)};
  EXPECT_EQ(LibrariesAcrossRunsNote(window, WithLibraries(kWheel)),
            "⚠ Measured on different library versions: cudnn 9.14.0 in 2 of the window's 3 runs, "
            "9.19.0 in the newest. A change may come from the libraries rather than from the "
            "code.");
  EXPECT_EQ(LibrariesAcrossRunsNote({WithLibraries(kWheel)}, WithLibraries(kWheel)), "");

  testing::TempDir tmp("libs");
  const std::string db = tmp / "history.sqlite";
  for (int i = 0; i < 5; ++i) {
    const std::string libs = i < 4 ? kSystem : kWheel;
    const std::string run =
        R"({"context": {"date": "2026-01-0)" + std::to_string(i + 1) +
        R"(T00:00:00Z", "host_name": "box", "libraries_loaded": ")" + libs +
        R"("}, "benchmarks": [{"name": "conv/gpu/cudnn/l1/dt:bf16/manual_time", )"
        R"("run_type": "iteration", "real_time": )" +
        std::to_string(100 + i % 2) + R"(, "time_unit": "us"}]})";
    HistoryAdd(db, {ParseBenchmarkJson(run, "run.json")}, {"c" + std::to_string(i)});
  }
  const std::string md = Render(HistoryCheck(db, {}).doc, Format::kMarkdown);
  EXPECT_NE(md.find("cudnn 9.14.0 in 4 of the window's 4 runs, 9.19.0 in the newest"),
            std::string::npos)
      << md;
}

}  // namespace
}  // namespace dlb::report
