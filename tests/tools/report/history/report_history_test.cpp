// The history's semantics on both stores (a typed suite): SQLite always, PostgreSQL on a real
// server that the test process starts itself (pg_server.h; the tests skip without the server
// binaries). What only one store meets is in report_history_store_test.cpp.
#include "tests/tools/report/history/report_history_fixture.h"

namespace dlb::report {
namespace {

#ifdef DLBENCH_HAVE_LIBPQ
using Stores = ::testing::Types<SqliteStore, PostgresStore>;
#else
using Stores = ::testing::Types<SqliteStore>;
#endif
TYPED_TEST_SUITE(History, Stores);

TYPED_TEST(History, AddIsIdempotentForTheSameRun) {
  const std::string& db = this->db_;
  RunMeta meta{"abc123", "main", "", ""};
  EXPECT_TRUE(HistoryAdd(db, {MakeRun(5, 1, 0, Date(0))}, meta));
  EXPECT_FALSE(HistoryAdd(db, {MakeRun(5, 1, 0, Date(0))}, meta));
  EXPECT_EQ(this->Count("runs"), 1);
  EXPECT_EQ(this->Count("results"), 5);
  EXPECT_TRUE(HistoryAdd(db, {MakeRun(5, 1, 1, Date(1))}, meta));  // another date: another run
  EXPECT_EQ(this->Count("runs"), 2);
  EXPECT_EQ(this->store_->Query("SELECT max(version) FROM dlbench_schema"), "4");
}

TYPED_TEST(History, CheckFindsARegressionAndShowsTheTrend) {
  const std::string& db = this->db_;
  for (int i = 0; i < 8; ++i)
    HistoryAdd(db, {MakeRun(4, 1, i, Date(i))}, {"c" + std::to_string(i)});
  CheckResult ok = HistoryCheck(db, {});
  EXPECT_EQ(ok.exit_code, 0);
  // The newest run: benchmark w0..w3 all 20% slower. One slow run is unconfirmed: reported in
  // every format, it fails nothing (--hold 1 fails it).
  HistoryAdd(db, {MakeRun(4, 1.2, 8, Date(8))}, {"c8"});
  CheckResult once = HistoryCheck(db, {});
  EXPECT_EQ(once.exit_code, 0);
  EXPECT_EQ(once.regressions, 0);
  EXPECT_EQ(once.unconfirmed, 4);
  const std::string md = Render(once.doc, Format::kMarkdown);
  EXPECT_NE(md.find("0 slower, 4 unconfirmed"), std::string::npos) << md;
  EXPECT_NE(md.find("held 1 of 2 runs"), std::string::npos) << md;
  auto json = nlohmann::json::parse(Render(once.doc, Format::kJson));
  EXPECT_EQ(json["sections"][0]["tables"][0]["rows"][0]["verdict"], "unconfirmed");
  EXPECT_EQ(json["sections"][0]["tables"][0]["rows"][0]["confirmation"], "held 1 of 2 runs");
  EXPECT_NE(Render(once.doc, Format::kHtml).find("unconfirmed"), std::string::npos);
  CheckOptions single;
  single.hold = 1;
  EXPECT_EQ(HistoryCheck(db, single).exit_code, 3);
  // The second slow run confirms it.
  HistoryAdd(db, {MakeRun(4, 1.2, 9, Date(9))}, {"c9"});
  CheckResult bad = HistoryCheck(db, {});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_EQ(bad.regressions, 4);
  EXPECT_EQ(bad.unconfirmed, 0);
  EXPECT_NE(Render(bad.doc, Format::kMarkdown).find("held 2 of 2 runs"), std::string::npos);
  Document d = HistoryShow(db, {});
  ASSERT_EQ(d.sections.size(), 2u);
  EXPECT_EQ(d.sections[0].tables[0].rows.size(), 10u);  // last 10 runs: all 10
  EXPECT_EQ(d.sections[1].tables[0].rows.size(), 4u);   // one row per benchmark
  EXPECT_EQ(d.sections[1].charts.size(), 4u);
  ShowOptions filtered;
  filtered.filter = "w1/";
  EXPECT_EQ(HistoryShow(db, filtered).sections[1].tables[0].rows.size(), 1u);
  // A benchmark only in an older run still has its row.
  HistoryAdd(db, {MakeRun(5, 1, 10, Date(10))}, {"c10"});
  EXPECT_EQ(HistoryShow(db, {}).sections[1].tables[0].rows.size(), 5u);
}

// Twenty runs at one level, then ten 20% slower: the window's runs are all slow, so the newest run
// is "same" to the median/MAD test, and only the change point says where the time went.
TYPED_TEST(History, CheckFindsAStepTheNewestRunTestMisses) {
  const std::string& db = this->db_;
  for (int i = 0; i < 30; ++i)
    HistoryAdd(db, {MakeRun(4, i < 20 ? 1 : 1.2, i, Date(i))}, {"c" + std::to_string(i)});
  CheckResult r = HistoryCheck(db, {});
  EXPECT_EQ(r.regressions, 0);
  EXPECT_EQ(r.step_regressions, 4);
  EXPECT_EQ(r.exit_code, 3);
  ASSERT_EQ(r.doc.sections.size(), 2u);
  const Table& newest = r.doc.sections[0].tables.at(0);
  ASSERT_EQ(newest.rows.size(), 4u);
  ASSERT_EQ(newest.columns.back().key, "step");
  for (const auto& row : newest.rows) {
    EXPECT_EQ(row[7].text, "same") << row[0].text;
    EXPECT_EQ(row[8].text, "slower") << row[0].text;
  }
  const Table& steps = r.doc.sections[1].tables.at(0);
  ASSERT_EQ(steps.rows.size(), 4u);
  // benchmark, step, at run, date, commit, before, after, change, p, runs before, runs after
  for (const auto& row : steps.rows) {
    ASSERT_EQ(row.size(), steps.columns.size());
    EXPECT_EQ(row[1].text, "slower") << row[0].text;
    EXPECT_EQ(row[2].text, "#21");
    EXPECT_EQ(row[3].text, Date(20));
    EXPECT_EQ(row[4].text, "c20");
    ASSERT_TRUE(row[5].value && row[6].value && row[7].value && row[8].value);
    EXPECT_NEAR(*row[6].value / *row[5].value, 1.2, 0.01);
    EXPECT_NEAR(*row[7].value, 0.2, 0.01);
    EXPECT_LT(*row[8].value, 1e-4);
    EXPECT_EQ(row[9].text, "20");
    EXPECT_EQ(row[10].text, "10");
  }
  // w0 is 100 us before the step and 120 us after, give or take the 0.8% wobble.
  ASSERT_EQ(steps.rows[0][0].text, "gemm/cpu/onednn/w0/dt:f32/manual_time");
  // The bisect command: the last run before the step (c19) is good, the first after (c20) bad.
  EXPECT_EQ(steps.rows[0][11].text,
            "dlbench-report bisect --good c19 --bad c20 --case gemm/cpu/onednn/w0/dt:f32");
  EXPECT_NEAR(*steps.rows[0][5].value, 100e3, 1e3);
  EXPECT_NEAR(*steps.rows[0][6].value, 120e3, 1.2e3);

  // Every format carries it: JSON by column key, Markdown and HTML as a table of their own.
  auto json = nlohmann::json::parse(Render(r.doc, Format::kJson));
  const auto& jrow = json["sections"][1]["tables"][0]["rows"][0];
  EXPECT_EQ(jrow["step"], "slower");
  EXPECT_EQ(jrow["step_run"], 21);
  EXPECT_EQ(jrow["step_date"], Date(20));
  EXPECT_EQ(jrow["step_commit"], "c20");
  EXPECT_NEAR(jrow["step_change"].get<double>(), 0.2, 0.01);
  EXPECT_EQ(json["sections"][0]["tables"][0]["rows"][0]["step"], "slower");
  for (Format f : {Format::kMarkdown, Format::kHtml, Format::kCsv}) {
    std::string out = Render(r.doc, f);
    EXPECT_NE(out.find(f == Format::kCsv ? "step_date" : "Change points"), std::string::npos);
    EXPECT_NE(out.find(Date(20)), std::string::npos);
  }

  // --steps report: shown, but the exit code is the newest-run test's alone.
  CheckOptions report_only;
  report_only.steps_fail = false;
  CheckResult shown = HistoryCheck(db, report_only);
  EXPECT_EQ(shown.step_regressions, 4);
  EXPECT_EQ(shown.exit_code, 0);

  // A history too short for two segments of five: no change point is looked for.
  CheckOptions short_window;
  short_window.history = 8;
  CheckResult few = HistoryCheck(db, short_window);
  EXPECT_EQ(few.step_regressions, 0);
  EXPECT_EQ(few.doc.sections[1].tables.at(0).rows[0][1].text, "short history");
  EXPECT_EQ(few.doc.sections[1].tables.at(0).rows[0][11].text, "-");
}

// The kernel tables a run recorded are stored with it (schema version 3), and check diffs the
// newest run's against the latest earlier one under the case it flags, with the repro command.
TYPED_TEST(History, CheckDiffsTheKernelTablesOfAFlaggedCase) {
  for (int i = 0; i < 5; ++i) {
    const bool newest = i == 4;
    const std::string kernel = newest ? "winograd" : "implicit_gemm";
    const std::string b =
        R"({"name": "conv/gpu/cudnn/l1/dt:f32/manual_time", "run_type": "iteration", )"
        R"("real_time": )" +
        std::to_string(newest ? 140 : 100) +
        R"(, "time_unit": "us", "dlbench": {"kernels": {"source": "cupti", "runs": 10, )"
        R"("span_s": 0.01, "rows": [{"name": ")" +
        kernel + R"(", "kind": "kernel", "launches_per_run": 1, "total_s": )" +
        (newest ? "0.0013" : "0.0009") + R"(, "mean_s": 0, "share": 0.9}]}}})";
    HistoryAdd(this->db_,
               {ParseBenchmarkJson(R"({"context": {"date": ")" + Date(i) +
                                       R"(", "host_name": "box", "executable": "./bench_conv", )"
                                       R"("dlbench_command": "./bench_conv --dlb_tier=full"}, )"
                                       R"("benchmarks": [)" +
                                       b + "]}",
                                   "run.json")},
               {"c" + std::to_string(i)});
  }
  EXPECT_EQ(this->Count("kernels"), 5);
  CheckResult r = HistoryCheck(this->db_, {});
  ASSERT_EQ(r.unconfirmed, 1);  // one slow run: flagged with its diagnosis, not failed
  const std::string md = Render(r.doc, Format::kMarkdown);
  EXPECT_NE(
      md.find("vs run #4: +winograd 325%, -implicit_gemm -225% (kernels: 100% of the change)"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("./bench_conv '--benchmark_filter=^conv/gpu/cudnn/l1/dt:f32/manual_time$' "
                    "--dlb_tier=full"),
            std::string::npos);
  // Exported, the tables go along.
  const std::string copy = this->dir_ / "copy.sqlite";
  HistoryCopy(this->db_, copy);
  EXPECT_EQ(Render(HistoryCheck(copy, {}).doc, Format::kMarkdown), md);
}

// Several change points in one history, a tier's runs that must not join its series, and the
// site: check and the site name the same change points, and the site is the same from either
// store (a PostgreSQL history and its SQLite copy give byte-identical pages).
TYPED_TEST(History, CheckAndTheSiteAgreeOnEveryChangePoint) {
  const std::string& db = this->db_;
  auto level = [](int i) { return i < 12 ? 1.0 : i < 24 ? 1.25 : 1.0; };
  for (int i = 0; i < 35; ++i) {
    HistoryAdd(db, {MakeRun(3, level(i), i, Date(i), "smoke")}, {"c" + std::to_string(i)});
    if (i % 3 == 0)  // another tier, 3x slower: a series of its own, never mixed in
      HistoryAdd(db, {MakeRun(3, 3, i, Date(i) + "x", "default")}, {"d" + std::to_string(i)});
  }
  HistoryAdd(db, {MakeRun(3, 1, 35, Date(35), "smoke")}, {"c35"});
  CheckResult r = HistoryCheck(db, {});
  EXPECT_EQ(r.exit_code, 0);  // back to the first level: faster last, nothing to fail
  std::set<std::string> from_check;
  for (const auto& row : r.doc.sections[1].tables.at(0).rows)
    if (row[1].text == "slower" || row[1].text == "faster")
      from_check.insert(row[0].text + " " + row[4].text + " " + row[1].text);
  EXPECT_EQ(from_check.size(), 6u);  // up at c12, down at c24, for each of 3 cases
  EXPECT_TRUE(from_check.count("gemm/cpu/onednn/w0/dt:f32/manual_time c12 slower"));
  EXPECT_TRUE(from_check.count("gemm/cpu/onednn/w0/dt:f32/manual_time c24 faster"));

  const fs::path out = this->dir_ / "site";
  SiteOptions so;
  so.out_dir = out;
  SiteResult sr = WriteSite(db, so);
  EXPECT_EQ(sr.machines, 1);
  EXPECT_EQ(sr.cases, 6);  // 3 cases x 2 tiers
  auto changes = nlohmann::json::parse(std::ifstream(out / "changes.json"));
  std::set<std::string> from_site;
  for (const auto& c : changes) {
    EXPECT_NE(c["build"].get<std::string>().find("tier smoke"), std::string::npos);
    from_site.insert(c["case"].get<std::string>() + " " + c["commit"].get<std::string>() + " " +
                     (c["change"].get<double>() > 0 ? "slower" : "faster"));
  }
  EXPECT_EQ(from_site, from_check);
  EXPECT_TRUE(fs::exists(out / site::Slug("box") / "index.html"));
  EXPECT_TRUE(fs::exists(out / site::Slug("box") / "machine.html"));
  EXPECT_TRUE(fs::exists(out / site::Slug("box") / "case" /
                         (site::Slug("gemm/cpu/onednn/w0/dt:f32/manual_time") + ".html")));

  const std::string copy = this->dir_ / "copy.sqlite";
  HistoryCopy(db, copy);
  so.out_dir = this->dir_ / "site-copy";
  WriteSite(copy, so);
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(out)) {
    if (!e.is_regular_file()) continue;
    ++files;
    fs::path twin = fs::path(so.out_dir) / fs::relative(e.path(), out);
    auto read = [](const fs::path& p) {
      std::ifstream in(p, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    EXPECT_EQ(read(e.path()), read(twin)) << twin;
  }
  EXPECT_EQ(files, 2u + 2u + 3u);  // index, changes.json; the machine's two pages; 3 case pages
}

// A slower change point that fails the check carries the kernel diff across it: the last run
// before it and the first after it, not the newest run, which may be many runs later.
TYPED_TEST(History, ASlowerChangePointCarriesItsKernelDiff) {
  for (int i = 0; i < 22; ++i) {
    const bool after = i >= 12;
    const std::string b =
        R"({"name": "conv/gpu/cudnn/l1/dt:f32/manual_time", "run_type": "iteration", )"
        R"("real_time": )" +
        std::to_string((after ? 140 : 100) * (1 + 0.002 * (i % 3))) +
        R"(, "time_unit": "us", "dlbench": {"kernels": {"source": "cupti", "runs": 10, )"
        R"("span_s": 0.01, "rows": [{"name": ")" +
        (after ? "winograd" : "implicit_gemm") +
        R"(", "kind": "kernel", "launches_per_run": 1, "total_s": )" +
        (after ? "0.0013" : "0.0009") + R"(, "mean_s": 0, "share": 0.9}]}}})";
    HistoryAdd(this->db_,
               {ParseBenchmarkJson(R"({"context": {"date": ")" + Date(i) +
                                       R"(", "host_name": "box"}, "benchmarks": [)" + b + "]}",
                                   "run.json")},
               {"c" + std::to_string(i)});
  }
  CheckResult r = HistoryCheck(this->db_, {});
  EXPECT_EQ(r.regressions, 0);
  ASSERT_EQ(r.step_regressions, 1);
  const Table& steps = r.doc.sections.at(1).tables.at(0);
  ASSERT_EQ(steps.columns.back().key, "step_kernels");
  EXPECT_EQ(steps.rows.at(0)[12].text.rfind("run #12 → run #13: +winograd", 0), 0u)
      << steps.rows[0][12].text;
  ASSERT_EQ(r.doc.sections.size(), 3u);
  EXPECT_NE(r.doc.sections[2].tables.back().title.find("kernels across the change point"),
            std::string::npos);
}

// --confirm: each case whose newest run is slower is re-run through its repro command (here a
// stand-in that returns the re-run's repetitions), and only a slowdown the re-run reproduces
// fails; one it does not, or that could not be re-run, is unconfirmed.
TYPED_TEST(History, ConfirmFailsOnlyWhatTheReRunReproduces) {
  for (int i = 0; i < 9; ++i) {
    FileData f = MakeRun(3, i == 8 ? 1.2 : 1, i, Date(i));
    f.context[std::string(schema::kCtxExecutable)] = "./bench_gemm";
    HistoryAdd(this->db_, {f}, {"c" + std::to_string(i)});
  }
  std::vector<std::string> commands;
  CheckOptions o;
  o.rerun = [&](const std::string& name, const std::string& repro, std::string* why) {
    commands.push_back(repro);
    std::vector<double> reps;
    const double base = name.find("/w0/") != std::string::npos ? 120e3 : 101e3;
    if (name.find("/w2/") != std::string::npos) {
      *why = "the re-run failed (exit 2): out of memory";
      return reps;
    }
    for (int k = 0; k < 10; ++k) reps.push_back(base * (1 + 0.001 * k));
    return reps;
  };
  CheckResult r = HistoryCheck(this->db_, o);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.regressions, 1);
  EXPECT_EQ(r.unconfirmed, 2);
  ASSERT_EQ(commands.size(), 3u);
  EXPECT_EQ(commands[0],
            "./bench_gemm '--benchmark_filter=^gemm/cpu/onednn/w0/dt:f32/manual_time$'");
  const std::string md = Render(r.doc, Format::kMarkdown);
  EXPECT_NE(md.find("re-run (10 repetitions): +20."), std::string::npos) << md;
  EXPECT_NE(md.find("not reproduced"), std::string::npos) << md;
  EXPECT_NE(md.find("not re-run: the re-run failed (exit 2): out of memory"), std::string::npos)
      << md;
  // Without --confirm the same run is one slow run: unconfirmed, nothing fails.
  EXPECT_EQ(HistoryCheck(this->db_, {}).exit_code, 0);
}

// A flat history with one slow run in the middle: the step test finds nothing.
TYPED_TEST(History, CheckFindsNoStepInAnOutlier) {
  for (int i = 0; i < 11; ++i)
    HistoryAdd(this->db_, {MakeRun(3, i == 5 ? 2 : 1, i, Date(i))}, {"c" + std::to_string(i)});
  CheckResult r = HistoryCheck(this->db_, {});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.step_regressions, 0);
  for (const auto& row : r.doc.sections[1].tables.at(0).rows) EXPECT_EQ(row[1].text, "none");
}

TYPED_TEST(History, TwoProcessesAddingAtOnceLoseNothing) {
  const int kPerProcess = 15;
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = ::fork();
    ASSERT_GE(kids[k], 0);
    if (kids[k] == 0) {
      int rc = 0;
      try {
        for (int i = 0; i < kPerProcess; ++i)
          HistoryAdd(this->db_, {MakeRun(50, 1, i, Date(i))}, {"p" + std::to_string(k)});
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        rc = 1;
      }
      ::_exit(rc);
    }
  }
  for (pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(this->Count("runs"), 2 * kPerProcess);
  EXPECT_EQ(this->Count("results"), 2 * kPerProcess * 50);
  EXPECT_EQ(this->Count("dlbench_schema"), 1);
}

TYPED_TEST(History, AnAddKilledHalfWayLeavesTheDatabaseAsItWas) {
  const std::string& db = this->db_;
  HistoryAdd(db, {MakeRun(5, 1, 0, Date(0))}, {"first"});
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    HistoryAdd(db, {MakeRun(5, 1, 1, Date(1))}, {"killed"}, {}, [] { ::raise(SIGKILL); });
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(this->Count("runs"), 1);
  EXPECT_EQ(this->Count("results"), 5);
  // And the database still takes the next run.
  EXPECT_TRUE(HistoryAdd(db, {MakeRun(5, 1, 2, Date(2))}, {"after"}));
  EXPECT_EQ(this->Count("runs"), 2);
}

TYPED_TEST(History, AFailedAddRollsBack) {
  EXPECT_THROW(HistoryAdd(this->db_, {MakeRun(5, 1, 0, Date(0))}, {"x"}, {},
                          [] { throw InputError("db", "test", "abort"); }),
               InputError);
  EXPECT_EQ(this->Count("runs"), 0);
}

// The drift this fixes: the harness writes its revision and branch under schema.h's context keys
// (dlbench_git_revision, dlbench_git_branch) and `history add` used to read "git_revision", so a
// run added without --commit was stored as "unknown". Both sides now use the schema's names.
TYPED_TEST(History, AddTakesCommitAndBranchFromTheHarnessContext) {
  const std::string& db = this->db_;
  auto kv = [](std::string_view k, const std::string& v) {
    return "\"" + std::string(k) + "\": \"" + v + "\"";
  };
  auto run = [&](const std::string& date, const std::string& more) {
    return ParseBenchmarkJson(R"({"context": {)" + kv(schema::kCtxDate, date) + ", " +
                                  kv(schema::kCtxHostName, "gpu-host") + more +
                                  R"(}, "benchmarks": [{"name": "a", "real_time": 1,)"
                                  R"( "time_unit": "ns"}]})",
                              "run.json");
  };
  const std::string harness =
      ", " + kv(schema::kCtxGitRevision, "0123abcd") + ", " + kv(schema::kCtxGitBranch, "feature");
  ASSERT_TRUE(HistoryAdd(db, {run("2026-11-20T10:00:00+00:00", harness)}, {}));
  // The name the old reader wanted is no revision.
  ASSERT_TRUE(HistoryAdd(db, {run("2026-11-21T10:00:00+00:00", R"(, "git_revision": "x")")}, {}));
  // --commit and --branch still win over the context.
  ASSERT_TRUE(
      HistoryAdd(db, {run("2026-11-22T10:00:00+00:00", harness)}, {"given", "release", "", ""}));
  // Each branch is its own series: show reads one, by default the newest run's.
  auto runs = [&](std::optional<std::string> branch) {
    ShowOptions o;
    o.branch = std::move(branch);
    Document d = HistoryShow(db, o);
    return d.sections.at(0).tables.at(0).rows;  // #, date, commit, branch, machine
  };
  auto feature = runs("feature");
  ASSERT_EQ(feature.size(), 1u);
  EXPECT_EQ(feature[0][2].text, "0123abcd");
  EXPECT_EQ(feature[0][3].text, "feature");
  EXPECT_EQ(feature[0][4].text, "gpu-host");
  auto none = runs("");
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0][2].text, "unknown");
  auto newest = runs(std::nullopt);
  ASSERT_EQ(newest.size(), 1u);
  EXPECT_EQ(newest[0][2].text, "given");
  EXPECT_EQ(newest[0][3].text, "release");
}

// A store from before the version table (version 1) is read as it is and upgraded by the next
// write, in that write's transaction; a store of a newer version is refused by every subcommand.
TYPED_TEST(History, AnOldStoreIsUpgradedInOneTransactionAndAFutureOneRefused) {
  const std::string& db = this->db_;
  ASSERT_EQ(this->store_->Exec(TypeParam::kVersion1), "");
  // Read as it is (its results against their runs' contexts), by every reader.
  EXPECT_EQ(HistoryShow(db, {}).sections.at(0).tables.at(0).rows.size(), 1u);
  EXPECT_EQ(HistoryCheck(db, {}).doc.sections.at(0).tables.at(0).rows.size(), 1u);
  SiteOptions so;
  so.out_dir = this->dir_ / "site";
  EXPECT_EQ(WriteSite(db, so).cases, 1);
  EXPECT_THROW(HistoryAdd(db, {MakeRun(2, 1, 0, Date(0))}, {"x"}, {},
                          [] { throw InputError("db", "test", "abort"); }),
               InputError);
  EXPECT_EQ(this->Count("dlbench_schema"), 0);  // the upgrade went with the failed add
  EXPECT_TRUE(HistoryAdd(db, {MakeRun(2, 1, 0, Date(0))}, {"new"}));
  EXPECT_EQ(this->Count("dlbench_schema"), 1);
  EXPECT_EQ(this->store_->Query("SELECT max(version) FROM dlbench_schema"), "4");
  EXPECT_EQ(this->Count("runs"), 2);
  EXPECT_EQ(HistoryShow(db, {}).sections.at(1).tables.at(0).rows.size(), 2u);
  // The old run's result has no file; the new run's names its own.
  EXPECT_EQ(this->store_->Query("SELECT count(*) FROM results WHERE file_id IS NULL"), "1");
  EXPECT_EQ(this->Count("files"), 1);

  ASSERT_EQ(this->store_->Exec("UPDATE dlbench_schema SET version = 99"), "");
  for (auto f : {+[](const std::string& u) { HistoryAdd(u, {MakeRun(2, 1, 1, Date(1))}, {}); },
                 +[](const std::string& u) { HistoryCheck(u, {}); },
                 +[](const std::string& u) { HistoryShow(u, {}); }}) {
    std::string m = this->ErrorOf([&] { f(db); });
    EXPECT_NE(m.find(RedactUrl(db) + ":schema: schema version 99 is newer"), std::string::npos)
        << m;
  }
  EXPECT_EQ(this->Count("runs"), 2);
}

// The store's runs into another SQLite file: only those it lacks, and never from no history.
TYPED_TEST(History, ExportImportCopiesTheRunsTheOtherLacks) {
  const std::string& db = this->db_;
  for (int i = 0; i < 4; ++i)
    HistoryAdd(db, {MakeRun(3, 1, i, Date(i))}, {"c" + std::to_string(i)});
  std::string other = this->dir_ / "other.sqlite";
  HistoryAdd(other, {MakeRun(3, 1, 9, Date(9))}, {"theirs"});
  CopyResult c = HistoryCopy(db, other);
  EXPECT_EQ(c.copied, 4);
  EXPECT_EQ(c.present, 0);
  EXPECT_EQ(c.results, 12);
  c = HistoryCopy(db, other);
  EXPECT_EQ(c.copied, 0);
  EXPECT_EQ(c.present, 4);
  EXPECT_EQ(HistoryShow(other, {}).sections.at(0).tables.at(0).rows.size(), 5u);
  EXPECT_THROW(HistoryCopy(this->dir_ / "none.sqlite", other), InputError);
  EXPECT_FALSE(fs::exists(this->dir_.path() / "none.sqlite"));
}

// A laptop's SQLite history into the store, and the store into a new SQLite file.
TYPED_TEST(History, ExportAndImportBetweenTheStores) {
  const std::string& db = this->db_;
  std::string laptop = this->dir_ / "laptop.sqlite";
  for (int i = 0; i < 6; ++i)
    HistoryAdd(laptop, {MakeRun(3, 1, i, Date(i))}, {"l" + std::to_string(i)});
  HistoryAdd(db, {MakeRun(3, 1, 0, Date(0))}, {"l0"});  // one of them is there already
  CopyResult c = HistoryCopy(laptop, db);
  EXPECT_EQ(c.copied, 5);
  EXPECT_EQ(c.present, 1);
  EXPECT_EQ(c.results, 15);
  EXPECT_EQ(this->Count("runs"), 6);
  EXPECT_EQ(this->Count("results"), 18);
  EXPECT_EQ(HistoryCopy(laptop, db).copied, 0);
  // And back into a new SQLite file: the same trend either way.
  std::string copy = this->dir_ / "copy.sqlite";
  EXPECT_EQ(HistoryCopy(db, copy).copied, 6);
  Document a = HistoryShow(laptop, {}), b = HistoryShow(copy, {});
  ASSERT_EQ(a.sections.size(), 2u);
  ASSERT_EQ(b.sections.size(), 2u);
  const Table &ta = a.sections[1].tables[0], &tb = b.sections[1].tables[0];
  ASSERT_EQ(ta.rows.size(), tb.rows.size());
  for (size_t r = 0; r < ta.rows.size(); ++r)
    for (size_t col = 1; col + 2 < ta.rows[r].size(); ++col)
      EXPECT_EQ(ta.rows[r][col].text, tb.rows[r][col].text);
  // A failed copy leaves the destination as it was: a source that is no history.
  EXPECT_THROW(HistoryCopy(this->dir_ / "none.sqlite", db), InputError);
  EXPECT_EQ(this->Count("runs"), 6);
}

}  // namespace
}  // namespace dlb::report
