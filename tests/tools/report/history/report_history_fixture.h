// What the history tests share: runs to add (MakeRun, Date), the two stores a typed suite runs on
// (SQLite always, PostgreSQL on a server the test process starts itself: pg_server.h; skipped
// without the server binaries), and the fixture over a store (History<Store>).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "fixtures/schema/schema.h"
#include "tests/support/temp_dir.h"
#include "tools/report/history/history.h"
#include "tools/report/history/store.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"
#include "tools/report/site/page.h"
#include "tools/report/site/site.h"
#ifdef DLBENCH_HAVE_LIBPQ
#include "tests/tools/report/history/pg_server.h"
#endif

namespace dlb::report {
namespace {

namespace fs = std::filesystem;
using dlb::testing::TempDir;

// One run: `n` benchmarks, each at `scale` x its base time, with a little per-run wobble.
FileData MakeRun(int n, double scale, int run, const std::string& date,
                 const std::string& tier = "") {
  std::string b;
  for (int i = 0; i < n; ++i) {
    double t = (100.0 + i) * scale * (1 + 0.002 * ((run * 7 + i) % 5));
    if (!b.empty()) b += ",";
    b += R"({"name": "gemm/cpu/onednn/w)" + std::to_string(i) +
         R"(/dt:f32/manual_time", "run_type": "iteration", "real_time": )" + std::to_string(t) +
         R"(, "time_unit": "us", "flop_per_s": 1e9})";
  }
  return ParseBenchmarkJson(R"({"context": {"date": ")" + date + R"(", "host_name": "box")" +
                                (tier.empty() ? "" : R"(, "dlbench_tier": ")" + tier + "\"") +
                                R"(}, "benchmarks": [)" + b + "]}",
                            "run.json");
}

std::string Date(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2026-%02d-%02dT00:00:00Z", 1 + i / 28, i % 28 + 1);
  return buf;
}

}  // namespace

// The stores the typed suite runs on (outside the anonymous namespace: ctest names the tests after
// them).

// The SQLite store: a file in the test's folder.
class SqliteStore {
 public:
  static void Start() {}
  static void Stop() {}
  static std::string Unavailable() { return ""; }
  static bool MaySkip() { return false; }
  // Every store before the version table: version 1, the tables as they were then.
  static constexpr const char* kVersion1 =
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
      " 100000, 0, 1, 'ok', '', '{}');";

  explicit SqliteStore(const TempDir& dir) : url_(dir / "h.sqlite") {}
  std::string Create() { return ""; }
  const std::string& url() const { return url_; }

  // The first value `sql` gives; "ERROR: ..." when it fails (no such table, say).
  std::string Query(const std::string& sql) const {
    sqlite3* db = nullptr;
    std::string out;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_open_v2(url_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK ||
        sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      out = std::string("ERROR: ") + sqlite3_errmsg(db);
    } else if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return out;
  }
  // Runs statements that change the store; "" or "ERROR: ...".
  std::string Exec(const std::string& sql) const {
    sqlite3* db = nullptr;
    std::string out;
    if (sqlite3_open(url_.c_str(), &db) != SQLITE_OK ||
        sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
      out = std::string("ERROR: ") + sqlite3_errmsg(db);
    sqlite3_close(db);
    return out;
  }

 private:
  std::string url_;
};

#ifdef DLBENCH_HAVE_LIBPQ
// The PostgreSQL store: a database per test on the process's own server.
class PostgresStore {
 public:
  static void Start() {
    server_ = new dlb::testing::PgServer;
    why_ = server_->Start();
  }
  static void Stop() {
    server_->Stop();
    delete server_;
    server_ = nullptr;
  }
  static const std::string& Unavailable() { return why_; }
  // No server binaries: skip. Binaries that do not make a server: that is a failure.
  static bool MaySkip() { return dlb::testing::PgServer::BinDir().empty(); }
  static constexpr const char* kVersion1 =
      "CREATE TABLE runs(id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
      " run_key TEXT NOT NULL UNIQUE, commit_id TEXT NOT NULL, branch TEXT NOT "
      "NULL, machine TEXT NOT NULL, date TEXT NOT NULL, added TEXT NOT NULL,"
      " context TEXT NOT NULL);"
      "CREATE TABLE results(run_id BIGINT NOT NULL REFERENCES runs(id), name "
      "TEXT NOT NULL, family TEXT NOT NULL, median_ns DOUBLE PRECISION, cv "
      "DOUBLE PRECISION, reps INTEGER NOT NULL, status TEXT NOT NULL, message "
      "TEXT NOT NULL, counters TEXT NOT NULL, PRIMARY KEY(run_id, name));"
      "INSERT INTO runs(run_key, commit_id, branch, machine, date, added, "
      "context) VALUES ('k', 'old', '', 'box', '2025-01-01', '', '{}');"
      "INSERT INTO results VALUES (1, 'gemm/cpu/onednn/w0/dt:f32/manual_time', 'gemm',"
      " 100000, 0, 1, 'ok', '', '{}');";

  explicit PostgresStore(const TempDir&) {
    db_ = "t_";
    for (char c : std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()))
      db_ += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    url_ = server_->Url(db_);
  }
  std::string Create() { return server_->Sql("postgres", "CREATE DATABASE " + db_); }
  const std::string& url() const { return url_; }
  const std::string& db() const { return db_; }
  static const dlb::testing::PgServer& server() { return *server_; }
  std::string Query(const std::string& sql) const { return server_->Sql(db_, sql); }
  std::string Exec(const std::string& sql) const { return server_->Sql(db_, sql); }

 private:
  static inline dlb::testing::PgServer* server_ = nullptr;
  static inline std::string why_;
  std::string db_, url_;
};
#endif

namespace {

template <typename Store>
class History : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Store::Start(); }
  static void TearDownTestSuite() { Store::Stop(); }
  void SetUp() override {
    if (!Store::Unavailable().empty() && Store::MaySkip()) GTEST_SKIP() << Store::Unavailable();
    ASSERT_EQ(Store::Unavailable(), "");
    store_ = std::make_unique<Store>(dir_);
    ASSERT_EQ(store_->Create(), "");
    db_ = store_->url();
  }
  int64_t Count(const char* table) const {
    std::string v = store_->Query(std::string("SELECT count(*) FROM ") + table);
    // No table at all counts as empty: a rolled-back first add leaves no schema either.
    return v.rfind("ERROR", 0) == 0 ? 0 : std::stoll(v);
  }
  // The one-line error of `f`, checked for what every such error must say.
  template <typename F>
  static std::string ErrorOf(F f) {
    try {
      f();
    } catch (const InputError& e) {
      std::string m = e.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
#ifdef DLBENCH_HAVE_LIBPQ
      EXPECT_EQ(m.find(dlb::testing::PgServer::kPassword), std::string::npos) << m;
#endif
      return m;
    }
    ADD_FAILURE() << "no error";
    return "";
  }

  TempDir dir_{"history"};
  std::unique_ptr<Store> store_;
  std::string db_;
};

}  // namespace
}  // namespace dlb::report
