// The SQLite store: WAL, a busy timeout, BEGIN IMMEDIATE for writers.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "tools/report/read/gbench_json.h"
#include "tools/report/history/store.h"

namespace dlb::report {

namespace {

class SqliteStore;

class SqliteQuery : public Query {
 public:
  SqliteQuery(SqliteStore& db, const std::string& sql, const std::string& step);
  ~SqliteQuery() override { sqlite3_finalize(s_); }
  SqliteQuery(const SqliteQuery&) = delete;
  SqliteQuery& operator=(const SqliteQuery&) = delete;
  bool Step() override;
  void Reset() override {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t Int(int c) const override { return sqlite3_column_int64(s_, c); }
  double Real(int c) const override {
    return sqlite3_column_type(s_, c) == SQLITE_NULL ? NAN : sqlite3_column_double(s_, c);
  }
  std::string Text(int c) const override {
    auto p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
  }

 protected:
  void BindText(int i, const std::string& v) override {
    Check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  void BindReal(int i, double v) override {
    Check(std::isfinite(v) ? sqlite3_bind_double(s_, i, v) : sqlite3_bind_null(s_, i));
  }
  void BindInt(int i, int64_t v) override { Check(sqlite3_bind_int64(s_, i, v)); }

 private:
  void Check(int rc);
  SqliteStore& db_;
  std::string step_;
  sqlite3_stmt* s_ = nullptr;
};

// One open database; every failure becomes InputError(path, <step>, sqlite's message).
class SqliteStore : public Store {
 public:
  SqliteStore(const std::string& path, bool create, int busy_ms) {
    name_ = path;
    int flags = create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READWRITE;
    if (!create) {
      if (FILE* f = std::fopen(path.c_str(), "rb")) {
        std::fclose(f);
      } else {
        throw InputError(path, "open", "no such database");
      }
    }
    // sqlite3_open_v2 allocates a handle even when it fails, and a throw from a constructor
    // skips the destructor: close the handle on every failure here.
    try {
      int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
      if (rc != SQLITE_OK) Fail("open", rc);
      sqlite3_busy_timeout(db_, busy_ms);
      SetWal(busy_ms);
      Exec("PRAGMA synchronous=NORMAL", "open");
      Exec("PRAGMA foreign_keys=ON", "open");
    } catch (...) {
      sqlite3_close_v2(db_);
      throw;
    }
  }
  ~SqliteStore() override { sqlite3_close_v2(db_); }
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  Dialect dialect() const override { return Dialect::kSqlite; }
  [[noreturn]] void Fail(const std::string& where, int rc) const {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    if (msg.empty() || msg == "not an error") msg = sqlite3_errstr(rc);
    throw InputError(name_, where, msg);
  }
  void Exec(const std::string& sql, const std::string& where) override {
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) Fail(where, rc);
  }
  std::unique_ptr<Query> Prepare(const std::string& sql, const std::string& step) override {
    return std::make_unique<SqliteQuery>(*this, sql, step);
  }
  void BeginWrite() override { Exec("BEGIN IMMEDIATE", "begin"); }
  void Commit() override { Exec("COMMIT", "commit"); }
  void Rollback() noexcept override { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }
  bool HasTable(const std::string& table) override {
    SqliteQuery q(*this, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name = ?",
                  "schema");
    q.Bind(1, table);
    return q.Step() && q.Int(0) > 0;
  }
  sqlite3* get() const { return db_; }

 private:
  // Switching a new database to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY at
  // once, without its busy handler, when two connections that both read the header want it (the
  // handler could deadlock there) — as two `history add` creating one database at the same moment
  // do. Retry until the busy timeout, then fail as any other busy database would.
  void SetWal(int busy_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_ms);
    for (int wait_ms = 1;; wait_ms = std::min(2 * wait_ms, 50)) {
      int rc = sqlite3_exec(db_, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
      if (rc == SQLITE_OK) return;
      if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline)
        Fail("open", rc);
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    }
  }

  sqlite3* db_ = nullptr;
};

SqliteQuery::SqliteQuery(SqliteStore& db, const std::string& sql, const std::string& step)
    : db_(db), step_(step) {
  int rc = sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &s_, nullptr);
  if (rc != SQLITE_OK) db.Fail(step, rc);
}

bool SqliteQuery::Step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.Fail(step_, rc);
}

void SqliteQuery::Check(int rc) {
  if (rc != SQLITE_OK) db_.Fail(step_, rc);
}

}  // namespace

std::unique_ptr<Store> OpenSqliteStore(const std::string& path, bool create,
                                       const StoreOptions& options) {
  return std::make_unique<SqliteStore>(path, create, options.busy_timeout_ms);
}

}  // namespace dlb::report
