// What only one store meets: a corrupt or locked SQLite file, a PostgreSQL connection that fails
// or dies, the URLs and their passwords.
#include "tests/tools/report/history/report_history_fixture.h"

namespace dlb::report {
namespace {

using SqliteHistory = History<SqliteStore>;

TEST_F(SqliteHistory, CorruptLockedAndMissingDatabases) {
  { std::ofstream(db_, std::ios::binary) << std::string(8192, 'x'); }
  std::string m = ErrorOf([&] { HistoryAdd(db_, {MakeRun(2, 1, 0, Date(0))}, {}); });
  EXPECT_NE(m.find("h.sqlite:"), std::string::npos) << m;
  EXPECT_NE(m.find("not a database"), std::string::npos) << m;
  EXPECT_THROW(HistoryCheck(db_, {}), InputError);
  EXPECT_THROW(HistoryShow(dir_ / "none.sqlite", {}), InputError);

  fs::remove(db_);
  HistoryAdd(db_, {MakeRun(2, 1, 0, Date(0))}, {});
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  HistoryOptions quick;
  quick.busy_timeout_ms = 100;
  m = ErrorOf([&] { HistoryAdd(db_, {MakeRun(2, 1, 1, Date(1))}, {}, quick); });
  EXPECT_NE(m.find("locked"), std::string::npos) << m;
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  EXPECT_EQ(Count("runs"), 1);
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

#ifdef DLBENCH_HAVE_LIBPQ
using PgHistory = History<PostgresStore>;
using dlb::testing::PgServer;

// Times come back as they went in (double precision, not float).
TEST_F(PgHistory, TimesAreStoredInDoublePrecision) {
  ASSERT_TRUE(HistoryAdd(db_, {MakeRun(2, 1, 0, Date(0))}, {"c0"}));
  EXPECT_EQ(store_->Query("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
                          "attrelid = 'results'::regclass AND attname = 'median_ns'"),
            "double precision");
}

TEST_F(PgHistory, AConnectionKilledMidAddIsOneLineAndWritesNothing) {
  HistoryAdd(db_, {MakeRun(5, 1, 0, Date(0))}, {"first"});
  std::string m = ErrorOf([&] {
    HistoryAdd(db_, {MakeRun(5, 1, 1, Date(1))}, {"cut"}, {}, [&] {
      // With a timeout it waits until the add's server process is gone (PostgreSQL 14 on).
      EXPECT_EQ(
          PostgresStore::server().Sql("postgres",
                                      "SELECT bool_and(pg_terminate_backend(pid, 10000)) FROM "
                                      "pg_stat_activity WHERE datname = '" +
                                          store_->db() + "'"),
          "t");
    });
  });
  EXPECT_NE(m.find(RedactUrl(db_) + ":commit: "), std::string::npos) << m;
  EXPECT_EQ(Count("runs"), 1);
  EXPECT_EQ(Count("results"), 5);
}

TEST_F(PgHistory, BadConnectionsSayWhatAndWhere) {
  const PgServer& server = PostgresStore::server();
  // Unreachable: no server on that socket.
  std::string nowhere = "postgresql://dlb:" + std::string(PgServer::kPassword) + "@/" +
                        store_->db() + "?host=" + (dir_ / "none");
  std::string m = ErrorOf([&] { HistoryAdd(nowhere, {MakeRun(2, 1, 0, Date(0))}, {}); });
  EXPECT_EQ(m.rfind(RedactUrl(nowhere) + ":connect: ", 0), 0u) << m;
  EXPECT_NE(m.find("No such file or directory"), std::string::npos) << m;
  // Unreachable over TCP: nothing listens on port 1.
  m = ErrorOf([&] { HistoryCheck("postgres://dlb@127.0.0.1:1/x", {}); });
  EXPECT_NE(m.find("postgres://dlb@127.0.0.1:1/x:connect: "), std::string::npos) << m;
  // Wrong password.
  m = ErrorOf(
      [&] { HistoryAdd(server.Url(store_->db(), "wrong"), {MakeRun(2, 1, 0, Date(0))}, {}); });
  EXPECT_NE(m.find("password authentication failed"), std::string::npos) << m;
  EXPECT_EQ(m.find("wrong"), std::string::npos) << m;
  // Missing database: never created by add.
  m = ErrorOf([&] { HistoryAdd(server.Url("nosuchdb"), {MakeRun(2, 1, 0, Date(0))}, {}); });
  EXPECT_NE(m.find("\"nosuchdb\" does not exist"), std::string::npos) << m;
  // A database that is no history.
  m = ErrorOf([&] { HistoryShow(db_, {}); });
  EXPECT_NE(m.find(":schema: not a dlbench history database"), std::string::npos) << m;
  EXPECT_EQ(Count("runs"), 0);
}

TEST_F(PgHistory, TheToolEndToEnd) {
  const PgServer& server = PostgresStore::server();
  std::string json = dir_ / "run.json";
  auto write = [&](double scale, int run) {
    std::string b;
    for (int i = 0; i < 3; ++i) {
      double t = (100.0 + i) * scale * (1 + 0.002 * ((run * 7 + i) % 5));
      b += std::string(b.empty() ? "" : ",") + R"({"name": "w)" + std::to_string(i) +
           R"(", "real_time": )" + std::to_string(t) + R"(, "time_unit": "us"})";
    }
    dir_.Write("run.json", R"({"context": {"date": ")" + Date(run) +
                               R"(", "host_name": "box"}, "benchmarks": [)" + b + "]}");
  };
  std::string exe = DLB_REPORT_EXE, err = dir_ / "err.txt";
  auto tool = [&](const std::string& args) {
    int st = std::system((exe + " " + args + " > /dev/null 2> '" + err + "'").c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  for (int i = 0; i < 6; ++i) {
    write(1, i);
    ASSERT_EQ(tool("history add '" + json + "' --db '" + db_ + "'"), 0);
  }
  EXPECT_EQ(tool("history check --db '" + db_ + "'"), 0);
  write(1.3, 6);
  ASSERT_EQ(tool("history add '" + json + "' --db '" + db_ + "'"), 0);
  EXPECT_EQ(tool("history check --db '" + db_ + "'"), 0);  // one slow run: unconfirmed
  write(1.3, 7);
  ASSERT_EQ(tool("history add '" + json + "' --db '" + db_ + "'"), 0);
  EXPECT_EQ(tool("history check --db '" + db_ + "'"), 3);
  // PG* variables fill in what the URL leaves out.
  std::string env = "PGHOST='" + server.dir() + "' PGUSER=dlb PGPASSWORD='" + PgServer::kPassword +
                    "' PGDATABASE=" + store_->db() + " ";
  EXPECT_EQ(std::system((env + exe + " history show --db postgresql:// > /dev/null 2>&1").c_str()),
            0);
  // export / import: the team's history into a local file, and a laptop's into the team's.
  std::string local = dir_ / "local.sqlite", laptop = dir_ / "laptop.sqlite";
  EXPECT_EQ(tool("history export --db '" + db_ + "' --to '" + local + "'"), 0);
  EXPECT_EQ(tool("history check --db '" + local + "'"), 3);
  HistoryAdd(laptop, {MakeRun(2, 1, 0, Date(20))}, {"laptop"});
  EXPECT_EQ(tool("history import --db '" + db_ + "' --from '" + laptop + "'"), 0);
  EXPECT_EQ(Count("runs"), 9);
  EXPECT_EQ(tool("history check --db '" + server.Url(store_->db(), "wrong") + "'"), 1);
  std::ifstream in(err);
  std::string line, rest;
  std::getline(in, line);
  EXPECT_FALSE(std::getline(in, rest)) << "more than one line: " << rest;
  EXPECT_EQ(line.rfind("dlbench-report: " + RedactUrl(server.Url(store_->db())) + ":connect: ", 0),
            0u)
      << line;
}
#endif

}  // namespace
}  // namespace dlb::report
