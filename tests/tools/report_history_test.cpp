#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "fixtures/schema/schema.h"
#include "tools/report/history/history.h"
#include "tools/report/history/store.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {
namespace {

namespace fs = std::filesystem;

class History : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dlb_history_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "h.sqlite").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // One run: `n` benchmarks, each at `scale` x its base time, with a little per-run wobble.
  static FileData Run(int n, double scale, int run, const std::string& date) {
    std::string b;
    for (int i = 0; i < n; ++i) {
      double t = (100.0 + i) * scale * (1 + 0.002 * ((run * 7 + i) % 5));
      if (!b.empty()) b += ",";
      b += R"({"name": "gemm/cpu/onednn/w)" + std::to_string(i) +
           R"(/dt:f32/manual_time", "run_type": "iteration", "real_time": )" + std::to_string(t) +
           R"(, "time_unit": "us", "flop_per_s": 1e9})";
    }
    return ParseBenchmarkJson(R"({"context": {"date": ")" + date +
                                  R"(", "host_name": "box"}, "benchmarks": [)" + b + "]}",
                              "run.json");
  }
  static std::string Date(int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "2026-01-%02dT00:00:00Z", i + 1);
    return buf;
  }
  int64_t Count(const char* table) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(db_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    std::string sql = std::string("SELECT count(*) FROM ") + table;
    // No table at all counts as empty: a rolled-back first add leaves no schema either.
    int64_t n = 0;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK) {
      EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
      n = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n;
  }

  fs::path dir_;
  std::string db_;
};

TEST_F(History, AddIsIdempotentForTheSameRun) {
  RunMeta meta{"abc123", "main", "", ""};
  EXPECT_TRUE(HistoryAdd(db_, {Run(5, 1, 0, Date(0))}, meta));
  EXPECT_FALSE(HistoryAdd(db_, {Run(5, 1, 0, Date(0))}, meta));
  EXPECT_EQ(Count("runs"), 1);
  EXPECT_EQ(Count("results"), 5);
  EXPECT_TRUE(HistoryAdd(db_, {Run(5, 1, 1, Date(1))}, meta));  // another date: another run
  EXPECT_EQ(Count("runs"), 2);
}

TEST_F(History, CheckFindsARegressionAndShowsTheTrend) {
  for (int i = 0; i < 8; ++i) HistoryAdd(db_, {Run(4, 1, i, Date(i))}, {"c" + std::to_string(i)});
  CheckResult ok = HistoryCheck(db_, {});
  EXPECT_EQ(ok.exit_code, 0);
  // The newest run: benchmark w0..w3 all 20% slower.
  HistoryAdd(db_, {Run(4, 1.2, 8, Date(8))}, {"c8"});
  CheckResult bad = HistoryCheck(db_, {});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_EQ(bad.regressions, 4);
  Document d = HistoryShow(db_, {});
  ASSERT_EQ(d.sections.size(), 2u);
  EXPECT_EQ(d.sections[0].tables[0].rows.size(), 9u);  // last 10 runs: all 9
  EXPECT_EQ(d.sections[1].tables[0].rows.size(), 4u);  // one row per benchmark
  EXPECT_EQ(d.sections[1].charts.size(), 4u);
  ShowOptions filtered;
  filtered.filter = "w1/";
  EXPECT_EQ(HistoryShow(db_, filtered).sections[1].tables[0].rows.size(), 1u);
}

// Five runs at one level, then six 20% slower: the window's median sits between the levels, so
// the newest run is "same" to the median/MAD test, and only the step says where the time went.
TEST_F(History, CheckFindsAStepTheNewestRunTestMisses) {
  for (int i = 0; i < 11; ++i)
    HistoryAdd(db_, {Run(4, i < 5 ? 1 : 1.2, i, Date(i))}, {"c" + std::to_string(i)});
  CheckResult r = HistoryCheck(db_, {});
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
  // benchmark, step, at run, date, commit, before, after, change, z, runs before, runs after
  for (const auto& row : steps.rows) {
    ASSERT_EQ(row.size(), steps.columns.size());
    EXPECT_EQ(row[1].text, "slower") << row[0].text;
    EXPECT_EQ(row[2].text, "#6");
    EXPECT_EQ(row[3].text, Date(5));
    EXPECT_EQ(row[4].text, "c5");
    ASSERT_TRUE(row[5].value && row[6].value && row[7].value);
    EXPECT_NEAR(*row[6].value / *row[5].value, 1.2, 0.01);
    EXPECT_NEAR(*row[7].value, 0.2, 0.01);
    EXPECT_GT(*row[8].value, 3);
    EXPECT_EQ(row[9].text, "5");
    EXPECT_EQ(row[10].text, "6");
  }
  // w0 is 100 us before the step and 120 us after, give or take the 0.8% wobble.
  ASSERT_EQ(steps.rows[0][0].text, "gemm/cpu/onednn/w0/dt:f32/manual_time");
  EXPECT_NEAR(*steps.rows[0][5].value, 100e3, 1e3);
  EXPECT_NEAR(*steps.rows[0][6].value, 120e3, 1.2e3);

  // Every format carries it: JSON by column key, Markdown and HTML as a table of their own.
  auto json = nlohmann::json::parse(Render(r.doc, Format::kJson));
  const auto& jrow = json["sections"][1]["tables"][0]["rows"][0];
  EXPECT_EQ(jrow["step"], "slower");
  EXPECT_EQ(jrow["step_run"], 6);
  EXPECT_EQ(jrow["step_date"], Date(5));
  EXPECT_EQ(jrow["step_commit"], "c5");
  EXPECT_NEAR(jrow["step_change"].get<double>(), 0.2, 0.01);
  EXPECT_EQ(json["sections"][0]["tables"][0]["rows"][0]["step"], "slower");
  for (Format f : {Format::kMarkdown, Format::kHtml, Format::kCsv}) {
    std::string out = Render(r.doc, f);
    EXPECT_NE(out.find(f == Format::kCsv ? "step_date" : "Steps in the window"), std::string::npos);
    EXPECT_NE(out.find(Date(5)), std::string::npos);
  }

  // --steps report: shown, but the exit code is the newest-run test's alone.
  CheckOptions report_only;
  report_only.steps_fail = false;
  CheckResult shown = HistoryCheck(db_, report_only);
  EXPECT_EQ(shown.step_regressions, 4);
  EXPECT_EQ(shown.exit_code, 0);

  // A window too short for two segments of three: no step is looked for.
  CheckOptions short_window;
  short_window.window = 4;
  CheckResult few = HistoryCheck(db_, short_window);
  EXPECT_EQ(few.step_regressions, 0);
  EXPECT_EQ(few.doc.sections[1].tables.at(0).rows[0][1].text, "short history");
}

// A flat history with one slow run in the middle: the step test finds nothing.
TEST_F(History, CheckFindsNoStepInAnOutlier) {
  for (int i = 0; i < 11; ++i)
    HistoryAdd(db_, {Run(3, i == 5 ? 2 : 1, i, Date(i))}, {"c" + std::to_string(i)});
  CheckResult r = HistoryCheck(db_, {});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.step_regressions, 0);
  for (const auto& row : r.doc.sections[1].tables.at(0).rows) EXPECT_EQ(row[1].text, "none");
}

TEST_F(History, TwoProcessesAddingAtOnceLoseNothing) {
  const int kPerProcess = 15;
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = ::fork();
    ASSERT_GE(kids[k], 0);
    if (kids[k] == 0) {
      int rc = 0;
      try {
        for (int i = 0; i < kPerProcess; ++i)
          HistoryAdd(db_, {Run(50, 1, i, Date(i))}, {"p" + std::to_string(k)});
      } catch (...) {
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
  EXPECT_EQ(Count("runs"), 2 * kPerProcess);
  EXPECT_EQ(Count("results"), 2 * kPerProcess * 50);
}

TEST_F(History, AnAddKilledHalfWayLeavesTheDatabaseAsItWas) {
  HistoryAdd(db_, {Run(5, 1, 0, Date(0))}, {"first"});
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    HistoryAdd(db_, {Run(5, 1, 1, Date(1))}, {"killed"}, {}, [] { ::raise(SIGKILL); });
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(Count("runs"), 1);
  EXPECT_EQ(Count("results"), 5);
  // And the database still takes the next run.
  EXPECT_TRUE(HistoryAdd(db_, {Run(5, 1, 2, Date(2))}, {"after"}));
  EXPECT_EQ(Count("runs"), 2);
}

TEST_F(History, AFailedAddRollsBack) {
  EXPECT_THROW(HistoryAdd(db_, {Run(5, 1, 0, Date(0))}, {"x"}, {},
                          [] { throw InputError("db", "test", "abort"); }),
               InputError);
  EXPECT_EQ(Count("runs"), 0);
}

// The drift this fixes: the harness writes its revision and branch under schema.h's context keys
// (dlbench_git_revision, dlbench_git_branch) and `history add` used to read "git_revision", so a
// run added without --commit was stored as "unknown". Both sides now use the schema's names.
TEST_F(History, AddTakesCommitAndBranchFromTheHarnessContext) {
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
  ASSERT_TRUE(HistoryAdd(db_, {run("2026-11-20T10:00:00+00:00", harness)}, {}));
  // The name the old reader wanted is no revision.
  ASSERT_TRUE(HistoryAdd(db_, {run("2026-11-21T10:00:00+00:00", R"(, "git_revision": "x")")}, {}));
  // --commit and --branch still win over the context.
  ASSERT_TRUE(
      HistoryAdd(db_, {run("2026-11-22T10:00:00+00:00", harness)}, {"given", "release", "", ""}));
  Document d = HistoryShow(db_, {});
  const Table& runs = d.sections.at(0).tables.at(0);  // #, date, commit, branch, machine
  ASSERT_EQ(runs.rows.size(), 3u);
  EXPECT_EQ(runs.rows[0][2].text, "0123abcd");
  EXPECT_EQ(runs.rows[0][3].text, "feature");
  EXPECT_EQ(runs.rows[0][4].text, "gpu-host");
  EXPECT_EQ(runs.rows[1][2].text, "unknown");
  EXPECT_EQ(runs.rows[2][2].text, "given");
  EXPECT_EQ(runs.rows[2][3].text, "release");
}

TEST_F(History, CorruptLockedAndMissingDatabases) {
  {
    std::ofstream f(db_, std::ios::binary);
    f << std::string(8192, 'x');
  }
  try {
    HistoryAdd(db_, {Run(2, 1, 0, Date(0))}, {});
    FAIL() << "corrupt database accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("h.sqlite:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a database"), std::string::npos) << e.what();
  }
  EXPECT_THROW(HistoryCheck(db_, {}), InputError);
  EXPECT_THROW(HistoryShow((dir_ / "none.sqlite").string(), {}), InputError);

  fs::remove(db_);
  HistoryAdd(db_, {Run(2, 1, 0, Date(0))}, {});
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  HistoryOptions quick;
  quick.busy_timeout_ms = 100;
  try {
    HistoryAdd(db_, {Run(2, 1, 1, Date(1))}, {}, quick);
    FAIL() << "locked database written";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("locked"), std::string::npos) << e.what();
  }
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  EXPECT_EQ(Count("runs"), 1);
}

// Every store before the version table: version 1, the tables as they were then.
TEST_F(History, AnOldStoreIsUpgradedInOneTransactionAndAFutureOneRefused) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(
                db,
                "CREATE TABLE runs(id INTEGER PRIMARY KEY, run_key TEXT NOT NULL UNIQUE,"
                " commit_id TEXT NOT NULL, branch TEXT NOT NULL, machine TEXT NOT NULL, date TEXT"
                " NOT NULL, added TEXT NOT NULL, context TEXT NOT NULL);"
                "CREATE INDEX runs_machine_date ON runs(machine, date, id);"
                "CREATE TABLE results(run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT"
                " NULL, family TEXT NOT NULL, median_ns REAL, cv REAL, reps INTEGER NOT NULL,"
                " status TEXT NOT NULL, message TEXT NOT NULL, counters TEXT NOT NULL,"
                " PRIMARY KEY(run_id, name)) WITHOUT ROWID;"
                "CREATE INDEX results_name ON results(name, run_id);"
                "INSERT INTO runs VALUES (1, 'k', 'old', '', 'box', '2025-12-01', '', '{}');"
                "INSERT INTO results VALUES (1, 'gemm/cpu/onednn/w0/dt:f32/manual_time', 'gemm',"
                " 100000, 0, 1, 'ok', '', '{}');",
                nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(HistoryShow(db_, {}).sections.at(0).tables.at(0).rows.size(), 1u);
  EXPECT_THROW(HistoryAdd(db_, {Run(2, 1, 0, Date(0))}, {"x"}, {},
                          [] { throw InputError("db", "test", "abort"); }),
               InputError);
  EXPECT_EQ(Count("dlbench_schema"), 0);  // the upgrade went with the failed add
  EXPECT_TRUE(HistoryAdd(db_, {Run(2, 1, 0, Date(0))}, {"new"}));
  EXPECT_EQ(Count("dlbench_schema"), 1);
  EXPECT_EQ(Count("runs"), 2);
  EXPECT_EQ(HistoryShow(db_, {}).sections.at(1).tables.at(0).rows.size(), 2u);

  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE dlbench_schema SET version = 7", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  for (auto f : {+[](const std::string& p) { HistoryAdd(p, {Run(2, 1, 1, Date(1))}, {}); },
                 +[](const std::string& p) { HistoryCheck(p, {}); },
                 +[](const std::string& p) { HistoryShow(p, {}); }}) {
    try {
      f(db_);
      ADD_FAILURE() << "a store from the future accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("h.sqlite:schema: schema version 7 is newer"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(Count("runs"), 2);
}

TEST_F(History, ExportImportCopiesTheRunsTheOtherLacks) {
  for (int i = 0; i < 4; ++i) HistoryAdd(db_, {Run(3, 1, i, Date(i))}, {"c" + std::to_string(i)});
  std::string other = (dir_ / "other.sqlite").string();
  HistoryAdd(other, {Run(3, 1, 9, Date(9))}, {"theirs"});
  CopyResult c = HistoryCopy(db_, other);
  EXPECT_EQ(c.copied, 4);
  EXPECT_EQ(c.present, 0);
  EXPECT_EQ(c.results, 12);
  c = HistoryCopy(db_, other);
  EXPECT_EQ(c.copied, 0);
  EXPECT_EQ(c.present, 4);
  EXPECT_EQ(HistoryShow(other, {}).sections.at(0).tables.at(0).rows.size(), 5u);
  EXPECT_THROW(HistoryCopy((dir_ / "none.sqlite").string(), other), InputError);
  EXPECT_FALSE(fs::exists(dir_ / "none.sqlite"));
}

TEST(HistoryStore, UrlsArePostgresAndLoseTheirPassword) {
  EXPECT_TRUE(IsPostgresUrl("postgresql://u@h/d"));
  EXPECT_TRUE(IsPostgresUrl("postgres://h"));
  EXPECT_FALSE(IsPostgresUrl("history.sqlite"));
  EXPECT_FALSE(IsPostgresUrl("./postgresql://x"));
  EXPECT_EQ(RedactUrl("postgresql://u:pw@h:5432/d"), "postgresql://u@h:5432/d");
  EXPECT_EQ(RedactUrl("postgres://u@h/d"), "postgres://u@h/d");
  EXPECT_EQ(RedactUrl("postgresql://u:p%40w@h/d?sslmode=require&password=x&connect_timeout=3"),
            "postgresql://u@h/d?sslmode=require&connect_timeout=3");
  EXPECT_EQ(RedactUrl("postgresql:///d?password=x"), "postgresql:///d");
  EXPECT_EQ(RedactUrl("postgresql://h:5/d"), "postgresql://h:5/d");  // a port is no password
}

}  // namespace
}  // namespace dlb::report
