// What a case's series is, on both stores (a typed suite as report_history_test.cpp): each file's
// own context (a run of several binaries added file by file keeps every binary's cases and
// libraries), environment changes named instead of bisected, and series by branch and machine.
#include "tests/tools/report/history/report_history_fixture.h"
#include "tools/report/analyses/bisect.h"
#include "tools/report/analyses/repro.h"
#include "tools/report/history/series.h"

namespace dlb::report {
namespace {

#ifdef DLBENCH_HAVE_LIBPQ
using Stores = ::testing::Types<SqliteStore, PostgresStore>;
#else
using Stores = ::testing::Types<SqliteStore>;
#endif
template <typename Store>
using Setup = History<Store>;
TYPED_TEST_SUITE(Setup, Stores);

const std::string kGemm = "gemm/gpu/cublaslt/square.8192/dt:bf16/manual_time";
const std::string kAttn = "attn/gpu/cudnn/vitl.attn/bs:4/dt:bf16/pass:fwd/manual_time";
const std::string kCublas = "cublas 13.1.0 /usr/local/cuda/lib64/libcublas.so.13.1.0.3";

// One binary's file of run `run`: each case at `us` x its wobble (at most 0.8%), under the
// binary's own context fields (`context`: JSON members after the date and host).
FileData BinaryFile(const std::string& path, int run, const std::vector<std::string>& names,
                    double us, const std::string& context) {
  std::string b;
  for (size_t i = 0; i < names.size(); ++i) {
    double t = us * (1 + 0.002 * ((run * 7 + static_cast<int>(i)) % 5));
    b += std::string(b.empty() ? "" : ",") + R"({"name": ")" + names[i] +
         R"(", "run_type": "iteration", "real_time": )" + std::to_string(t) +
         R"(, "time_unit": "us"})";
  }
  return ParseBenchmarkJson(R"({"context": {"date": ")" + Date(run) + R"(", "host_name": "h200")" +
                                context + R"(}, "benchmarks": [)" + b + "]}",
                            path);
}

std::string Libraries(const std::string& libs) {
  return R"(, "libraries_loaded": ")" + libs + "\"";
}

// The GEMM binary's file (cuBLAS only) and the attention binary's (cuDNN `cudnn` too).
FileData GemmFile(int run, double us) {
  return BinaryFile("gemm.json", run, {kGemm}, us, Libraries(kCublas));
}
FileData AttnFile(int run, double us, const std::string& cudnn) {
  return BinaryFile(
      "attn.json", run, {kAttn}, us,
      Libraries("cudnn " + cudnn + " /opt/cudnn/lib/libcudnn.so." + cudnn + "; " + kCublas));
}

// The change-points table's row of `name`; its columns by key.
const std::vector<Cell>* StepRowOf(const CheckResult& r, const std::string& name) {
  for (const auto& row : r.doc.sections.at(1).tables.at(0).rows)
    if (row[0].text == name) return &row;
  return nullptr;
}
std::string Column(const Table& t, const std::vector<Cell>& row, const std::string& key) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].key == key) return row.at(i).text;
  ADD_FAILURE() << "no column " << key;
  return "";
}

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TYPED_TEST(Setup, TwoBinariesFilesAddedToOneRunAreBothKept) {
  const std::string& db = this->db_;
  const RunMeta meta{"abc1234", "main", "m1", "2026-12-05T00:00:00Z"};
  AddResult gemm = HistoryAdd(db, {GemmFile(0, 10)}, meta);
  EXPECT_TRUE(gemm.new_run);
  EXPECT_EQ(gemm.added, 1);
  AddResult attn = HistoryAdd(db, {AttnFile(0, 20, "9.14.0")}, meta);
  EXPECT_FALSE(attn.new_run);
  EXPECT_EQ(attn.added, 1);
  EXPECT_EQ(this->Count("runs"), 1);
  EXPECT_EQ(this->Count("results"), 2);
  EXPECT_EQ(this->Count("files"), 2);  // each binary's own context
  EXPECT_EQ(this->store_->Query("SELECT max(version) FROM dlbench_schema"), "4");

  // The same file again, alone or with the other: nothing added, and said so.
  AddResult again = HistoryAdd(db, {AttnFile(0, 20, "9.14.0")}, meta);
  EXPECT_FALSE(again);
  EXPECT_EQ(again.present, 1);
  again = HistoryAdd(db, {GemmFile(0, 10), AttnFile(0, 20, "9.14.0")}, meta);
  EXPECT_EQ(again.added, 0);
  EXPECT_EQ(again.present, 2);
  EXPECT_EQ(this->Count("files"), 2);

  // Other figures for a case the run holds: one line, and nothing of the file is added.
  const std::string m = this->ErrorOf([&] {
    HistoryAdd(
        db, {BinaryFile("attn-rerun.json", 0, {kAttn, "attn/gpu/cudnn/new/manual_time"}, 25, "")},
        meta);
  });
  EXPECT_NE(m.find(RedactUrl(db) + ":add: attn-rerun.json: " + kAttn +
                   " is in that run already with other figures"),
            std::string::npos)
      << m;
  EXPECT_EQ(this->Count("results"), 2);

  // Both binaries' cases are read, each against its own file's context.
  Document d = HistoryShow(db, {});
  ASSERT_EQ(d.sections.at(1).tables.at(0).rows.size(), 2u);
  const std::string out = this->dir_ / "site";
  SiteOptions so;
  so.out_dir = out;
  EXPECT_EQ(WriteSite(db, so).cases, 2);
}

// The libraries each case of `db`'s newest run was measured with, by case, as the history reads
// them back (each case's own file's context).
std::map<std::string, std::string> LibrariesByCase(const std::string& db) {
  auto store = OpenStore(db, false, {});
  std::map<std::string, std::string> out;
  for (const history::CaseSeries& s :
       history::ReadSeries(*store, history::FilteredRuns(*store, {}, 1)))
    out[s.name] = ContextValue(*s.points.back().context, schema::kCtxLibraries);
  return out;
}

// export / import of a run of two binaries into a store that holds the run with one binary's
// file: the other binary's cases are added under their own file's context; copying again adds
// nothing; a case held there with other figures is refused, nothing copied.
TYPED_TEST(Setup, ExportImportAddsWhatARunLacksUnderEachFilesContext) {
  const std::string& db = this->db_;
  const RunMeta meta{"abc1234", "main", "m1", "2026-12-05T00:00:00Z"};
  const std::string laptop = this->dir_ / "laptop.sqlite";
  HistoryAdd(laptop, {GemmFile(0, 10)}, meta);
  HistoryAdd(laptop, {AttnFile(0, 20, "9.14.0")}, meta);
  HistoryAdd(db, {GemmFile(0, 10)}, meta);
  CopyResult c = HistoryCopy(laptop, db);
  EXPECT_EQ(c.copied, 0);
  EXPECT_EQ(c.extended, 1);
  EXPECT_EQ(c.present, 0);
  EXPECT_EQ(c.results, 1);
  EXPECT_EQ(this->Count("runs"), 1);
  EXPECT_EQ(this->Count("results"), 2);
  EXPECT_EQ(this->Count("files"), 2);
  std::map<std::string, std::string> libs = LibrariesByCase(db);
  EXPECT_EQ(libs[kGemm], kCublas);
  EXPECT_EQ(libs[kAttn], "cudnn 9.14.0 /opt/cudnn/lib/libcudnn.so.9.14.0; " + kCublas);

  c = HistoryCopy(laptop, db);
  EXPECT_EQ(c.copied + c.extended, 0);
  EXPECT_EQ(c.present, 1);
  EXPECT_EQ(c.results, 0);
  EXPECT_EQ(this->Count("results"), 2);
  EXPECT_EQ(this->Count("files"), 2);

  // The store into a new SQLite file: the run with both files, each case under its own.
  const std::string copy = this->dir_ / "copy.sqlite";
  c = HistoryCopy(db, copy);
  EXPECT_EQ(c.copied, 1);
  EXPECT_EQ(c.results, 2);
  EXPECT_EQ(LibrariesByCase(copy), libs);

  // Another store holds the attention case of that run with other figures, and a run of its own:
  // nothing of it is copied.
  const std::string other = this->dir_ / "other.sqlite";
  HistoryAdd(other, {GemmFile(1, 10)}, {"def5678", "main", "m1", "2026-12-06T00:00:00Z"});
  HistoryAdd(other, {AttnFile(0, 25, "9.14.0")}, meta);
  const std::string m = this->ErrorOf([&] { HistoryCopy(other, db); });
  EXPECT_NE(m.find(RedactUrl(db) + ":copy: " + kAttn +
                   " is in run abc1234 (machine m1, date 2026-12-05T00:00:00Z) already with "
                   "other figures"),
            std::string::npos)
      << m;
  EXPECT_EQ(this->Count("runs"), 1);
  EXPECT_EQ(this->Count("results"), 2);
}

// Two binaries of each run, added in alternating order; only the attention binary's cuDNN
// changes (9.14.0 -> 9.19.0 from run #10), and the binaries load different cuBLAS builds. check's
// libraries note and the machine page read each binary's own files, never the run's first.
TYPED_TEST(Setup, EachBinaryKeepsItsOwnLibrariesInCheckAndSite) {
  const std::string& db = this->db_;
  const std::string wheel_cublas = "cublas 13.0.2 /torch/lib/libcublas.so.13.0.2";
  auto gemm = [&](int i) {
    return BinaryFile("gemm.json", i, {kGemm}, 100,
                      R"(, "executable": "/b/bench_gemm")" + Libraries(kCublas));
  };
  auto attn = [&](int i) {
    const std::string cudnn = i >= 9 ? "9.19.0" : "9.14.0";
    return BinaryFile("attn.json", i, {kAttn}, 200,
                      R"(, "executable": "/b/bench_attn")" +
                          Libraries("cudnn " + cudnn + " /opt/cudnn/lib/libcudnn.so." + cudnn +
                                    "; " + wheel_cublas));
  };
  for (int i = 0; i < 12; ++i) {
    const RunMeta meta{"c" + std::to_string(i), "main", "", ""};
    if (i % 2) {
      HistoryAdd(db, {gemm(i)}, meta);
      HistoryAdd(db, {attn(i)}, meta);
    } else {
      HistoryAdd(db, {attn(i)}, meta);
      HistoryAdd(db, {gemm(i)}, meta);
    }
  }
  // The newest run's first file is the GEMM binary's; the note is of the attention binary alone.
  const CheckResult r = HistoryCheck(db, {});
  std::string note;
  for (const std::string& n : r.doc.notes)
    if (n.find("different library versions") != std::string::npos) note = n;
  EXPECT_EQ(note,
            "⚠ Measured on different library versions: bench_attn (1 case): cudnn 9.14.0 in 9 of "
            "the window's 11 runs, 9.19.0 in the newest. A change may come from the libraries "
            "rather than from the code.");

  SiteOptions so;
  so.out_dir = this->dir_ / "site";
  WriteSite(db, so);
  const std::string page = Read(fs::path(so.out_dir) / site::Slug("h200") / "machine.html");
  // One change in twelve runs: cuDNN at #10. Each binary's cuBLAS under its own name.
  size_t changed = 0;
  for (size_t at = page.find("class=chg>"); at != std::string::npos;
       at = page.find("class=chg>", at + 1))
    ++changed;
  EXPECT_EQ(changed, 1u) << page;
  EXPECT_NE(page.find("<b>cudnn</b> 9.14.0 → 9.19.0"), std::string::npos) << page;
  EXPECT_NE(page.find("<td>cublas (bench_gemm)</td><td>13.1.0</td>"), std::string::npos) << page;
  EXPECT_NE(page.find("<td>cublas (bench_attn)</td><td>13.0.2</td>"), std::string::npos) << page;
}

// A 24-run history of two binaries added file by file, the GEMM file first: the attention binary
// moves from cuDNN 9.14.0 to 9.19.0 at run #17 and is 5.5% slower from there; the GEMM case is 10%
// slower from run #13 on with its libraries unchanged. The code regression is found with its
// bisect command; the cuDNN change is named, has none, and fails nothing unless asked to.
TYPED_TEST(Setup, ALibrarySwapIsNamedAndACodeRegressionBisected) {
  auto build = [](const std::string& db, bool gemm_regresses) {
    for (int i = 0; i < 24; ++i) {
      const RunMeta meta{"c" + std::to_string(i), "main", "", ""};
      HistoryAdd(db, {GemmFile(i, gemm_regresses && i >= 12 ? 110 : 100)}, meta);
      HistoryAdd(db, {AttnFile(i, i >= 16 ? 211 : 200, i >= 16 ? "9.19.0" : "9.14.0")}, meta);
    }
  };
  const std::string& db = this->db_;
  build(db, true);
  CheckResult r = HistoryCheck(db, {});
  EXPECT_EQ(r.step_regressions, 1);
  EXPECT_EQ(r.environment_changes, 1);
  EXPECT_EQ(r.exit_code, 3);
  const Table& steps = r.doc.sections.at(1).tables.at(0);
  const std::vector<Cell>* gemm = StepRowOf(r, kGemm);
  const std::vector<Cell>* attn = StepRowOf(r, kAttn);
  ASSERT_TRUE(gemm && attn);
  EXPECT_EQ(Column(steps, *gemm, "step"), "slower");
  EXPECT_EQ(Column(steps, *gemm, "bisect"),
            "dlbench-report bisect --good c11 --bad c12 --case " + CaseBaseName(kGemm));
  EXPECT_EQ(Column(steps, *gemm, "step_environment"), "-");
  EXPECT_EQ(Column(steps, *attn, "step"), "slower (environment)");
  EXPECT_EQ(Column(steps, *attn, "step_commit"), "c16");
  EXPECT_EQ(Column(steps, *attn, "bisect"), "-");
  EXPECT_EQ(Column(steps, *attn, "step_environment"), "cuDNN 9.14.0 → 9.19.0 at #17");
  const std::string md = Render(r.doc, Format::kMarkdown);
  EXPECT_EQ(md.find("--case " + CaseBaseName(kAttn)), std::string::npos) << md;

  // The site names the same change, on the case's page and in changes.json, without a bisect.
  SiteOptions so;
  so.out_dir = this->dir_ / "site";
  WriteSite(db, so);
  std::map<std::string, std::string> env;
  for (const auto& c : nlohmann::json::parse(std::ifstream(fs::path(so.out_dir) / "changes.json")))
    env[c["case"].get<std::string>()] = c["environment"].get<std::string>();
  EXPECT_EQ(env[kAttn], "cuDNN 9.14.0 → 9.19.0 at #17");
  EXPECT_EQ(env[kGemm], "");
  const fs::path cases = fs::path(so.out_dir) / site::Slug("h200") / "case";
  const std::string attn_page = Read(cases / (site::Slug(kAttn) + ".html"));
  EXPECT_NE(attn_page.find("Environment change:</strong> cuDNN 9.14.0 → 9.19.0 at #17"),
            std::string::npos);
  EXPECT_EQ(attn_page.find("Bisect:"), std::string::npos);
  EXPECT_NE(Read(cases / (site::Slug(kGemm) + ".html")).find("Bisect: <code>dlbench-report"),
            std::string::npos);

  // The cuDNN change alone: named, exit 0; --fail-on-env-change makes it fail.
  const std::string lib_only = this->dir_ / "lib-only.sqlite";
  build(lib_only, false);
  CheckResult named = HistoryCheck(lib_only, {});
  EXPECT_EQ(named.step_regressions, 0);
  EXPECT_EQ(named.environment_changes, 1);
  EXPECT_EQ(named.exit_code, 0);
  CheckOptions strict;
  strict.fail_on_env_change = true;
  EXPECT_EQ(HistoryCheck(lib_only, strict).exit_code, 3);
}

// The newest run alone on a new setting of a measuring flag: its slowdown is named with the flag
// (a flag that only chooses cases is not a change of what is measured), and not failed.
TYPED_TEST(Setup, ANewestRunOnAnotherFlagIsNamedNotFailed) {
  for (int i = 0; i < 8; ++i) {
    const bool newest = i == 7;
    const std::string command = std::string(R"(, "dlbench_command": "/b/bench_gemm )") +
                                "--dlb_gemm_fp8_accum=" + (newest ? "fast" : "full") +
                                " --dlb_dtypes=" + (newest ? "fp8" : "bf16,fp8") + "\"";
    HistoryAdd(
        this->db_,
        {BinaryFile("gemm.json", i, {kGemm}, newest ? 130 : 100, Libraries(kCublas) + command)},
        {"c" + std::to_string(i), "main", "", ""});
  }
  // The newest run is judged alone (--hold 1): what is tested is the naming, not the gate.
  CheckOptions single;
  single.hold = 1;
  CheckResult r = HistoryCheck(this->db_, single);
  EXPECT_EQ(r.regressions, 0);
  EXPECT_EQ(r.environment_changes, 1);
  EXPECT_EQ(r.exit_code, 0);
  const Table& t = r.doc.sections.at(0).tables.at(0);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(Column(t, t.rows[0], "verdict"), "slower (environment)");
  EXPECT_EQ(Column(t, t.rows[0], "environment"), "--dlb_gemm_fp8_accum full → fast at #8");
  CheckOptions strict = single;
  strict.fail_on_env_change = true;
  EXPECT_EQ(HistoryCheck(this->db_, strict).exit_code, 3);
  // With the default gate the one slow run is unconfirmed: named, and no failure even then.
  CheckOptions held;
  held.fail_on_env_change = true;
  CheckResult unconfirmed = HistoryCheck(this->db_, held);
  EXPECT_EQ(unconfirmed.exit_code, 0);
  const Table& u = unconfirmed.doc.sections.at(0).tables.at(0);
  EXPECT_EQ(Column(u, u.rows.at(0), "verdict"), "unconfirmed (environment)");

  // The flag changed eight runs before the newest, whose window is mostly on the new setting: its
  // slowdown is the code's.
  const std::string later = this->dir_ / "later.sqlite";
  for (int i = 0; i < 12; ++i) {
    const std::string command = std::string(R"(, "dlbench_command": "/b/bench_gemm )") +
                                "--dlb_gemm_fp8_accum=" + (i >= 3 ? "fast" : "full") + "\"";
    HistoryAdd(
        later,
        {BinaryFile("gemm.json", i, {kGemm}, i == 11 ? 130 : 100, Libraries(kCublas) + command)},
        {"c" + std::to_string(i), "main", "", ""});
  }
  CheckResult code = HistoryCheck(later, single);
  EXPECT_EQ(code.regressions, 1);
  EXPECT_EQ(code.environment_changes, 0);
  EXPECT_EQ(code.exit_code, 3);
}

// Runs added file by file, the GEMM binary's first: the attention case flagged by the newest run
// is re-run by its own binary with its own flags, not by the run's first file's.
TYPED_TEST(Setup, AFlaggedCaseIsReproducedByItsOwnBinary) {
  auto command = [](const std::string& cmd) { return R"(, "dlbench_command": ")" + cmd + "\""; };
  for (int i = 0; i < 6; ++i) {
    const RunMeta meta{"c" + std::to_string(i), "main", "", ""};
    HistoryAdd(this->db_, {BinaryFile("gemm.json", i, {kGemm}, 100, command("/b/bench_gemm"))},
               meta);
    HistoryAdd(this->db_,
               {BinaryFile("attn.json", i, {kAttn}, i == 5 ? 260 : 200,
                           command("/b/bench_attn --dlb_cold=1"))},
               meta);
  }
  // Slower in the newest run alone: unconfirmed under the default gate, flagged all the same,
  // with the command that re-runs it.
  CheckResult r = HistoryCheck(this->db_, {});
  ASSERT_EQ(r.unconfirmed, 1);
  const Table& t = r.doc.sections.at(0).tables.at(0);
  ASSERT_EQ(t.rows.at(0)[0].text, kAttn);  // the flagged case first
  EXPECT_EQ(Column(t, t.rows[0], "repro"),
            "/b/bench_attn " + ShellQuote("--benchmark_filter=" + AnchoredFilter(kAttn)) +
                " --dlb_cold=1");
}

// Main is 10.7% slower from m12 on; a feature branch, faster, runs beside it. Main's series never
// holds a feature run: its step is found whichever branch ran last, and --branch selects.
TYPED_TEST(Setup, AFeatureBranchNeverMasksMain) {
  const std::string& db = this->db_;
  for (int i = 0; i < 24; ++i) {
    HistoryAdd(db, {MakeRun(3, i >= 12 ? 1.107 : 1, i, Date(i))},
               {"m" + std::to_string(i), "main", "", ""});
    if (i % 2 == 0)
      HistoryAdd(db, {MakeRun(3, 0.9, i, Date(i) + "f")},
                 {"f" + std::to_string(i), "feature", "", ""});
  }
  CheckResult main = HistoryCheck(db, {});  // the newest run is main's
  EXPECT_EQ(main.step_regressions, 3);
  EXPECT_EQ(main.exit_code, 3);
  const Table& steps = main.doc.sections.at(1).tables.at(0);
  for (const auto& row : steps.rows) EXPECT_EQ(Column(steps, row, "step_commit"), "m12");

  // A feature run is now the newest: by default it judges the feature branch (flat), and
  // --branch main still finds main's step.
  HistoryAdd(db, {MakeRun(3, 0.9, 24, Date(24))}, {"f24", "feature", "", ""});
  CheckResult feature = HistoryCheck(db, {});
  EXPECT_EQ(feature.step_regressions, 0);
  EXPECT_EQ(feature.exit_code, 0);
  CheckOptions on_main;
  on_main.branch = "main";
  EXPECT_EQ(HistoryCheck(db, on_main).step_regressions, 3);

  ShowOptions show;
  const Document feature_runs = HistoryShow(db, show);
  for (const auto& row : feature_runs.sections.at(0).tables.at(0).rows)
    EXPECT_EQ(row[3].text, "feature");
  show.branch = "main";
  const Document main_runs = HistoryShow(db, show);
  const Table& runs = main_runs.sections.at(0).tables.at(0);
  ASSERT_EQ(runs.rows.size(), 10u);
  for (const auto& row : runs.rows) EXPECT_EQ(row[3].text, "main");

  SiteOptions so;
  so.out_dir = this->dir_ / "site";
  so.branch = "main";
  WriteSite(db, so);
  auto changes = nlohmann::json::parse(std::ifstream(fs::path(so.out_dir) / "changes.json"));
  ASSERT_EQ(changes.size(), 3u);
  for (const auto& c : changes) {
    EXPECT_EQ(c["commit"], "m12");
    EXPECT_GT(c["change"].get<double>(), 0.1);
  }
  so.branch.reset();  // the newest run's: feature, flat
  EXPECT_EQ(WriteSite(db, so).change_points, 0);
}

// Two runners share the store; the newest run is m1's (flat). Runner m2's slowdown is judged with
// --machine m2, and never mixed into m1's verdict.
TYPED_TEST(Setup, MachineSelectsAnotherRunnersSeries) {
  const std::string& db = this->db_;
  for (int i = 0; i < 24; ++i) {
    HistoryAdd(db, {MakeRun(3, i >= 12 ? 1.2 : 1, i, Date(i))},
               {"b" + std::to_string(i), "main", "m2", ""});
    HistoryAdd(db, {MakeRun(3, 1, i, Date(i) + "x")}, {"a" + std::to_string(i), "main", "m1", ""});
  }
  CheckResult m1 = HistoryCheck(db, {});
  EXPECT_EQ(m1.step_regressions, 0);
  EXPECT_EQ(m1.exit_code, 0);
  CheckOptions other;
  other.machine = "m2";
  CheckResult m2 = HistoryCheck(db, other);
  EXPECT_EQ(m2.step_regressions, 3);
  EXPECT_EQ(m2.exit_code, 3);
  EXPECT_NE(m2.doc.notes.at(0).find("machine m2, branch main"), std::string::npos);
  other.machine = "m3";
  EXPECT_NE(this->ErrorOf([&] { HistoryCheck(db, other); }).find(":runs: no run of machine 'm3'"),
            std::string::npos);

  ShowOptions show;
  show.machine = "m2";
  const Document m2_runs = HistoryShow(db, show);
  for (const auto& row : m2_runs.sections.at(0).tables.at(0).rows) EXPECT_EQ(row[4].text, "m2");
  SiteOptions so;
  so.out_dir = this->dir_ / "site";
  so.machine = "m2";
  EXPECT_EQ(WriteSite(db, so).machines, 1);
  EXPECT_TRUE(fs::exists(fs::path(so.out_dir) / site::Slug("m2") / "index.html"));
  EXPECT_FALSE(fs::exists(fs::path(so.out_dir) / site::Slug("m1")));
}

// The tool as CI calls it: a file per binary, the same file again, a file that disagrees, and
// check's --machine, --branch and --fail-on-env-change.
using SqliteSetup = Setup<SqliteStore>;
TEST_F(SqliteSetup, TheToolAddsFileByFileAndChecksASeries) {
  const std::string exe = DLB_REPORT_EXE, err = dir_ / "err.txt";
  auto tool = [&](const std::string& args) {
    int st = std::system((exe + " " + args + " > /dev/null 2> '" + err + "'").c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  auto said = [&] { return Read(err); };
  auto write = [&](const std::string& name, const std::string& cudnn, double us) {
    dir_.Write(name, R"({"context": {"date": "2026-12-05T00:00:00Z", "host_name": "m1", )"
                     R"("libraries_loaded": "cudnn )" +
                         cudnn + R"( /x/libcudnn.so"}, "benchmarks": [{"name": ")" + kAttn +
                         R"(", "run_type": "iteration", "real_time": )" + std::to_string(us) +
                         R"(, "time_unit": "us"}]})");
    dir_.Write("gemm.json", R"({"context": {"date": "2026-12-05T00:00:00Z", "host_name": "m1"}, )"
                            R"("benchmarks": [{"name": ")" +
                                kGemm + R"(", "real_time": 10, "time_unit": "us"}]})");
  };
  write("attn.json", "9.14.0", 20);
  write("attn-other.json", "9.14.0", 25);
  const std::string add = "history add --db '" + db_ + "' --commit abc1234 --machine m1 ";
  ASSERT_EQ(tool(add + "'" + (dir_ / "gemm.json") + "'"), 0);
  EXPECT_NE(said().find("added the run to"), std::string::npos) << said();
  ASSERT_EQ(tool(add + "'" + (dir_ / "attn.json") + "'"), 0);
  EXPECT_NE(said().find("added 1 case to the run already in"), std::string::npos) << said();
  ASSERT_EQ(tool(add + "'" + (dir_ / "attn.json") + "'"), 0);
  EXPECT_NE(said().find("with the same 1 case; nothing added"), std::string::npos) << said();
  EXPECT_EQ(tool(add + "'" + (dir_ / "attn-other.json") + "'"), 1);
  const std::string refused = said();
  EXPECT_EQ(std::count(refused.begin(), refused.end(), '\n'), 1) << refused;
  EXPECT_NE(refused.find("with other figures"), std::string::npos) << refused;
  EXPECT_EQ(Count("results"), 2);

  // Eight later runs of the attention binary on main, the newest two on cuDNN 9.19.0 and 30%
  // slower: a slowdown the default gate confirms, named as the library's.
  for (int i = 1; i <= 8; ++i) {
    write("attn.json", i >= 7 ? "9.19.0" : "9.14.0", i >= 7 ? 26 : 20);
    ASSERT_EQ(tool("history add --db '" + db_ + "' --commit c" + std::to_string(i) +
                   " --machine m1 --branch main --date 2026-12-" + std::to_string(10 + i) +
                   "T00:00:00Z '" + (dir_ / "attn.json") + "'"),
              0);
  }
  const std::string check = "history check --db '" + db_ + "' ";
  EXPECT_EQ(tool(check), 0);
  EXPECT_EQ(tool(check + "--fail-on-env-change"), 3);
  EXPECT_EQ(tool(check + "--machine m1 --branch main --fail-on-env-change"), 3);
  EXPECT_EQ(tool(check + "--branch nosuch"), 1);
  EXPECT_NE(said().find("no run of branch 'nosuch'"), std::string::npos) << said();
  EXPECT_EQ(tool("history show --db '" + db_ + "' --machine m1 --branch main"), 0);
  EXPECT_EQ(tool("site --db '" + db_ + "' -o '" + (dir_ / "site") + "' --branch main"), 0);
}

}  // namespace
}  // namespace dlb::report
