// The history on a real PostgreSQL server that this test starts itself (pg_server.h); the same
// semantics as on SQLite, and the failures a team's shared store meets.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/tools/pg_server.h"
#include "tools/report/history/history.h"
#include "tools/report/history/store.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report {
namespace {

namespace fs = std::filesystem;
using dlb::testing::PgServer;

// One run: `n` benchmarks, each at `scale` x its base time, with a little per-run wobble.
FileData MakeRun(int n, double scale, int run, const std::string& date) {
  std::string b;
  for (int i = 0; i < n; ++i) {
    double t = (100.0 + i) * scale * (1 + 0.002 * ((run * 7 + i) % 5));
    if (!b.empty()) b += ",";
    b += R"({"name": "gemm/cpu/onednn/w)" + std::to_string(i) +
         R"(/dt:f32/manual_time", "run_type": "iteration", "real_time": )" + std::to_string(t) +
         R"(, "time_unit": "us", "flop_per_s": 1e9})";
  }
  return ParseBenchmarkJson(
      R"({"context": {"date": ")" + date + R"(", "host_name": "box"}, "benchmarks": [)" + b + "]}",
      "run.json");
}

std::string Date(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2026-01-%02dT00:00:00Z", i + 1);
  return buf;
}

class PgHistory : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new PgServer;
    why_ = server_->Start();
  }
  static void TearDownTestSuite() {
    server_->Stop();
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    // No server binaries: skip. Binaries that do not make a server: that is a failure.
    if (!why_.empty() && PgServer::BinDir().empty()) GTEST_SKIP() << why_;
    ASSERT_EQ(why_, "");
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    db_ = "t_";
    for (char c : name) db_ += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ASSERT_EQ(server_->Sql("postgres", "CREATE DATABASE " + db_), "");
    url_ = server_->Url(db_);
    dir_ = fs::temp_directory_path() / ("dlb_pghistory_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  int64_t Count(const char* table) {
    std::string v = server_->Sql(db_, std::string("SELECT count(*) FROM ") + table);
    return v.rfind("ERROR", 0) == 0 ? 0 : std::stoll(v);  // no table: a rolled-back first add
  }
  // The one-line error of `f`, checked for what every such error must say.
  template <typename F>
  std::string ErrorOf(F f) {
    try {
      f();
    } catch (const InputError& e) {
      std::string m = e.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      EXPECT_EQ(m.find(PgServer::kPassword), std::string::npos) << m;
      return m;
    }
    ADD_FAILURE() << "no error";
    return "";
  }

  static PgServer* server_;
  static std::string why_;
  std::string db_, url_;
  fs::path dir_;
};

PgServer* PgHistory::server_ = nullptr;
std::string PgHistory::why_;

TEST_F(PgHistory, AddIsIdempotentAndCheckFindsARegression) {
  RunMeta meta{"abc123", "main", "", ""};
  EXPECT_TRUE(HistoryAdd(url_, {MakeRun(5, 1, 0, Date(0))}, meta));
  EXPECT_FALSE(HistoryAdd(url_, {MakeRun(5, 1, 0, Date(0))}, meta));
  EXPECT_EQ(Count("runs"), 1);
  EXPECT_EQ(Count("results"), 5);
  for (int i = 1; i < 8; ++i)
    HistoryAdd(url_, {MakeRun(4, 1, i, Date(i))}, {"c" + std::to_string(i)});
  EXPECT_EQ(HistoryCheck(url_, {}).exit_code, 0);
  HistoryAdd(url_, {MakeRun(4, 1.2, 8, Date(8))}, {"c8"});
  CheckResult bad = HistoryCheck(url_, {});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_EQ(bad.regressions, 4);
  Document d = HistoryShow(url_, {});
  ASSERT_EQ(d.sections.size(), 2u);
  EXPECT_EQ(d.sections[0].tables[0].rows.size(), 9u);
  EXPECT_EQ(d.sections[1].tables[0].rows.size(), 5u);  // w0..w4 (w4 only in the first run)
  // Times come back as they went in (double precision, not float).
  EXPECT_EQ(server_->Sql(db_,
                         "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
                         "attrelid = 'results'::regclass AND attname = 'median_ns'"),
            "double precision");
  EXPECT_EQ(server_->Sql(db_, "SELECT max(version) FROM dlbench_schema"), "2");
}

TEST_F(PgHistory, TwoProcessesAddingAtOnceLoseNothing) {
  const int kPerProcess = 15;
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = ::fork();
    ASSERT_GE(kids[k], 0);
    if (kids[k] == 0) {
      int rc = 0;
      try {
        for (int i = 0; i < kPerProcess; ++i)
          HistoryAdd(url_, {MakeRun(50, 1, i, Date(i))}, {"p" + std::to_string(k)});
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
  EXPECT_EQ(Count("runs"), 2 * kPerProcess);
  EXPECT_EQ(Count("results"), 2 * kPerProcess * 50);
  EXPECT_EQ(Count("dlbench_schema"), 1);
}

TEST_F(PgHistory, AnAddKilledHalfWayLeavesTheDatabaseAsItWas) {
  HistoryAdd(url_, {MakeRun(5, 1, 0, Date(0))}, {"first"});
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    HistoryAdd(url_, {MakeRun(5, 1, 1, Date(1))}, {"killed"}, {}, [] { ::raise(SIGKILL); });
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(Count("runs"), 1);
  EXPECT_EQ(Count("results"), 5);
  EXPECT_TRUE(HistoryAdd(url_, {MakeRun(5, 1, 2, Date(2))}, {"after"}));
  EXPECT_EQ(Count("runs"), 2);
}

TEST_F(PgHistory, AConnectionKilledMidAddIsOneLineAndWritesNothing) {
  HistoryAdd(url_, {MakeRun(5, 1, 0, Date(0))}, {"first"});
  std::string m = ErrorOf([&] {
    HistoryAdd(url_, {MakeRun(5, 1, 1, Date(1))}, {"cut"}, {}, [&] {
      // With a timeout it waits until the add's server process is gone (PostgreSQL 14 on).
      EXPECT_EQ(server_->Sql("postgres",
                             "SELECT bool_and(pg_terminate_backend(pid, 10000)) FROM "
                             "pg_stat_activity WHERE datname = '" +
                                 db_ + "'"),
                "t");
    });
  });
  EXPECT_NE(m.find(RedactUrl(url_) + ":commit: "), std::string::npos) << m;
  EXPECT_EQ(Count("runs"), 1);
  EXPECT_EQ(Count("results"), 5);
}

TEST_F(PgHistory, BadConnectionsSayWhatAndWhere) {
  // Unreachable: no server on that socket.
  std::string nowhere = "postgresql://dlb:" + std::string(PgServer::kPassword) + "@/" + db_ +
                        "?host=" + (dir_ / "none").string();
  std::string m = ErrorOf([&] { HistoryAdd(nowhere, {MakeRun(2, 1, 0, Date(0))}, {}); });
  EXPECT_EQ(m.rfind(RedactUrl(nowhere) + ":connect: ", 0), 0u) << m;
  EXPECT_NE(m.find("No such file or directory"), std::string::npos) << m;
  // Unreachable over TCP: nothing listens on port 1.
  m = ErrorOf([&] { HistoryCheck("postgres://dlb@127.0.0.1:1/x", {}); });
  EXPECT_NE(m.find("postgres://dlb@127.0.0.1:1/x:connect: "), std::string::npos) << m;
  // Wrong password.
  m = ErrorOf([&] { HistoryAdd(server_->Url(db_, "wrong"), {MakeRun(2, 1, 0, Date(0))}, {}); });
  EXPECT_NE(m.find("password authentication failed"), std::string::npos) << m;
  EXPECT_EQ(m.find("wrong"), std::string::npos) << m;
  // Missing database: never created by add.
  m = ErrorOf([&] { HistoryAdd(server_->Url("nosuchdb"), {MakeRun(2, 1, 0, Date(0))}, {}); });
  EXPECT_NE(m.find("\"nosuchdb\" does not exist"), std::string::npos) << m;
  // A database that is no history.
  m = ErrorOf([&] { HistoryShow(url_, {}); });
  EXPECT_NE(m.find(":schema: not a dlbench history database"), std::string::npos) << m;
  EXPECT_EQ(Count("runs"), 0);
}

TEST_F(PgHistory, ASchemaFromTheFutureIsRefusedAndAnOldOneUpgraded) {
  // A version-1 store: the tables, no version table.
  ASSERT_EQ(server_->Sql(db_,
                         "CREATE TABLE runs(id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
                         " run_key TEXT NOT NULL UNIQUE, commit_id TEXT NOT NULL, branch TEXT NOT "
                         "NULL, machine TEXT NOT NULL, date TEXT NOT NULL, added TEXT NOT NULL,"
                         " context TEXT NOT NULL);"
                         "CREATE TABLE results(run_id BIGINT NOT NULL REFERENCES runs(id), name "
                         "TEXT NOT NULL, family TEXT NOT NULL, median_ns DOUBLE PRECISION, cv "
                         "DOUBLE PRECISION, reps INTEGER NOT NULL, status TEXT NOT NULL, message "
                         "TEXT NOT NULL, counters TEXT NOT NULL, PRIMARY KEY(run_id, name));"
                         "INSERT INTO runs(run_key, commit_id, branch, machine, date, added, "
                         "context) VALUES ('k', 'old', '', 'box', '2025-01-01', '', '{}');"),
            "");
  EXPECT_EQ(HistoryShow(url_, {}).sections[0].tables[0].rows.size(), 1u);  // readable as it is
  // A failed add rolls the upgrade back with it.
  EXPECT_THROW(HistoryAdd(url_, {MakeRun(2, 1, 0, Date(0))}, {"x"}, {},
                          [] { throw InputError("db", "test", "abort"); }),
               InputError);
  EXPECT_EQ(Count("dlbench_schema"), 0);
  EXPECT_TRUE(HistoryAdd(url_, {MakeRun(2, 1, 0, Date(0))}, {"new"}));
  EXPECT_EQ(server_->Sql(db_, "SELECT max(version) FROM dlbench_schema"), "2");
  EXPECT_EQ(Count("runs"), 2);

  ASSERT_EQ(server_->Sql(db_, "UPDATE dlbench_schema SET version = 99"), "");
  for (auto f : {+[](const std::string& u) { HistoryAdd(u, {MakeRun(2, 1, 1, Date(1))}, {}); },
                 +[](const std::string& u) { HistoryCheck(u, {}); },
                 +[](const std::string& u) { HistoryShow(u, {}); }}) {
    std::string m = ErrorOf([&] { f(url_); });
    EXPECT_NE(m.find(":schema: schema version 99 is newer"), std::string::npos) << m;
  }
  EXPECT_EQ(Count("runs"), 2);
}

TEST_F(PgHistory, ExportAndImportBetweenTheStores) {
  std::string laptop = (dir_ / "laptop.sqlite").string();
  for (int i = 0; i < 6; ++i)
    HistoryAdd(laptop, {MakeRun(3, 1, i, Date(i))}, {"l" + std::to_string(i)});
  HistoryAdd(url_, {MakeRun(3, 1, 0, Date(0))}, {"l0"});  // one of them is there already
  CopyResult c = HistoryCopy(laptop, url_);
  EXPECT_EQ(c.copied, 5);
  EXPECT_EQ(c.present, 1);
  EXPECT_EQ(c.results, 15);
  EXPECT_EQ(Count("runs"), 6);
  EXPECT_EQ(Count("results"), 18);
  EXPECT_EQ(HistoryCopy(laptop, url_).copied, 0);
  // And back into a new SQLite file: the same trend either way.
  std::string copy = (dir_ / "copy.sqlite").string();
  EXPECT_EQ(HistoryCopy(url_, copy).copied, 6);
  Document a = HistoryShow(laptop, {}), b = HistoryShow(copy, {});
  ASSERT_EQ(a.sections.size(), 2u);
  ASSERT_EQ(b.sections.size(), 2u);
  const Table &ta = a.sections[1].tables[0], &tb = b.sections[1].tables[0];
  ASSERT_EQ(ta.rows.size(), tb.rows.size());
  for (size_t r = 0; r < ta.rows.size(); ++r)
    for (size_t col = 1; col + 2 < ta.rows[r].size(); ++col)
      EXPECT_EQ(ta.rows[r][col].text, tb.rows[r][col].text);
  // A failed copy leaves the destination as it was: a source that is no history.
  EXPECT_THROW(HistoryCopy((dir_ / "none.sqlite").string(), url_), InputError);
  EXPECT_EQ(Count("runs"), 6);
}

TEST_F(PgHistory, TheToolEndToEnd) {
  std::string json = (dir_ / "run.json").string();
  auto write = [&](double scale, int run) {
    FILE* f = std::fopen(json.c_str(), "w");
    std::string b;
    for (int i = 0; i < 3; ++i) {
      double t = (100.0 + i) * scale * (1 + 0.002 * ((run * 7 + i) % 5));
      b += std::string(b.empty() ? "" : ",") + R"({"name": "w)" + std::to_string(i) +
           R"(", "real_time": )" + std::to_string(t) + R"(, "time_unit": "us"})";
    }
    std::fprintf(f, R"({"context": {"date": "%s", "host_name": "box"}, "benchmarks": [%s]})",
                 Date(run).c_str(), b.c_str());
    std::fclose(f);
  };
  std::string exe = DLB_REPORT_EXE, err = (dir_ / "err.txt").string();
  auto tool = [&](const std::string& args) {
    int st = std::system((exe + " " + args + " > /dev/null 2> '" + err + "'").c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  for (int i = 0; i < 6; ++i) {
    write(1, i);
    ASSERT_EQ(tool("history add '" + json + "' --db '" + url_ + "'"), 0);
  }
  EXPECT_EQ(tool("history check --db '" + url_ + "'"), 0);
  write(1.3, 6);
  ASSERT_EQ(tool("history add '" + json + "' --db '" + url_ + "'"), 0);
  EXPECT_EQ(tool("history check --db '" + url_ + "'"), 3);
  // PG* variables fill in what the URL leaves out.
  std::string env = "PGHOST='" + server_->dir() + "' PGUSER=dlb PGPASSWORD='" +
                    PgServer::kPassword + "' PGDATABASE=" + db_ + " ";
  EXPECT_EQ(std::system((env + exe + " history show --db postgresql:// > /dev/null 2>&1").c_str()),
            0);
  // export / import: the team's history into a local file, and a laptop's into the team's.
  std::string local = (dir_ / "local.sqlite").string(), laptop = (dir_ / "laptop.sqlite").string();
  EXPECT_EQ(tool("history export --db '" + url_ + "' --to '" + local + "'"), 0);
  EXPECT_EQ(tool("history check --db '" + local + "'"), 3);
  HistoryAdd(laptop, {MakeRun(2, 1, 0, Date(20))}, {"laptop"});
  EXPECT_EQ(tool("history import --db '" + url_ + "' --from '" + laptop + "'"), 0);
  EXPECT_EQ(Count("runs"), 8);
  EXPECT_EQ(tool("history check --db '" + server_->Url(db_, "wrong") + "'"), 1);
  std::ifstream in(err);
  std::string line, rest;
  std::getline(in, line);
  EXPECT_FALSE(std::getline(in, rest)) << "more than one line: " << rest;
  EXPECT_EQ(line.rfind("dlbench-report: " + RedactUrl(server_->Url(db_)) + ":connect: ", 0), 0u)
      << line;
}

}  // namespace
}  // namespace dlb::report
