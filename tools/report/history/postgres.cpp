// The PostgreSQL store, through libpq: a URL (and libpq's PG* environment variables for what it
// leaves out), text parameters, one advisory lock for writers (as SQLite's BEGIN IMMEDIATE).
#include <libpq-fe.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "tools/report/read/gbench_json.h"
#include "tools/report/history/store.h"

namespace dlb::report {

namespace {

// Writers of one database queue on this lock; the number is "dlb-hist" in ASCII.
constexpr const char* kWriterLock = "SELECT pg_advisory_xact_lock(7236837813064021876)";

// libpq's messages span lines ("...failed: FATAL:  ...\n\tThis probably means..."): one line.
std::string OneLine(const char* msg) {
  std::string out;
  bool space = false;
  for (const char* p = msg ? msg : ""; *p; ++p) {
    if (*p == '\n' || *p == '\t' || *p == '\r' || *p == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += *p;
  }
  return out.empty() ? "unknown error" : out;
}

// `?` -> `$1`, `$2`, ... (the history's SQL has no `?` inside a string literal).
std::string Number(const std::string& sql, int* count) {
  std::string out;
  int n = 0;
  for (char c : sql) {
    if (c == '?') {
      out += "$" + std::to_string(++n);
    } else {
      out += c;
    }
  }
  *count = n;
  return out;
}

class PgStore;

class PgQuery : public Query {
 public:
  PgQuery(PgStore& db, const std::string& sql, const std::string& step) : db_(db), step_(step) {
    int n = 0;
    sql_ = Number(sql, &n);
    params_.resize(n);
  }
  ~PgQuery() override { PQclear(res_); }
  PgQuery(const PgQuery&) = delete;
  PgQuery& operator=(const PgQuery&) = delete;
  bool Step() override;
  void Reset() override {
    PQclear(res_);
    res_ = nullptr;
    row_ = -1;
    for (auto& p : params_) p.reset();
  }
  int64_t Int(int c) const override { return std::strtoll(PQgetvalue(res_, row_, c), nullptr, 10); }
  double Real(int c) const override {
    return PQgetisnull(res_, row_, c) ? NAN : std::strtod(PQgetvalue(res_, row_, c), nullptr);
  }
  std::string Text(int c) const override {
    return std::string(PQgetvalue(res_, row_, c), PQgetlength(res_, row_, c));
  }

 protected:
  void BindText(int i, const std::string& v) override { params_.at(i - 1) = v; }
  void BindReal(int i, double v) override {
    if (!std::isfinite(v)) {
      params_.at(i - 1).reset();
      return;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    params_.at(i - 1) = buf;
  }
  void BindInt(int i, int64_t v) override { params_.at(i - 1) = std::to_string(v); }

 private:
  PgStore& db_;
  std::string step_, sql_;
  std::vector<std::optional<std::string>> params_;
  PGresult* res_ = nullptr;
  int row_ = -1;
};

class PgStore : public Store {
 public:
  PgStore(const std::string& url, const StoreOptions& opt) : lock_timeout_ms_(opt.busy_timeout_ms) {
    name_ = RedactUrl(url);
    // The URL's own parameters win over these defaults (libpq: later keywords override).
    std::string timeout = std::to_string(opt.connect_timeout_s);
    std::vector<const char*> keys, values;
    if (!std::getenv("PGCONNECT_TIMEOUT")) {
      keys.push_back("connect_timeout");
      values.push_back(timeout.c_str());
    }
    if (!std::getenv("PGAPPNAME")) {
      keys.push_back("application_name");
      values.push_back("dlbench-report");
    }
    keys.push_back("dbname");
    values.push_back(url.c_str());
    keys.push_back(nullptr);
    values.push_back(nullptr);
    conn_ = PQconnectdbParams(keys.data(), values.data(), 1);
    if (!conn_) throw InputError(name_, "connect", "out of memory");
    if (PQstatus(conn_) != CONNECTION_OK) {
      std::string msg = OneLine(PQerrorMessage(conn_));
      PQfinish(conn_);
      throw InputError(name_, "connect", msg);
    }
    // "relation already exists, skipping" and the like would go to stderr.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
  }
  ~PgStore() override { PQfinish(conn_); }
  PgStore(const PgStore&) = delete;
  PgStore& operator=(const PgStore&) = delete;

  Dialect dialect() const override { return Dialect::kPostgres; }
  [[noreturn]] void Fail(const std::string& step, const PGresult* res) const {
    const char* msg = res ? PQresultErrorMessage(res) : nullptr;
    throw InputError(name_, step, OneLine(msg && *msg ? msg : PQerrorMessage(conn_)));
  }
  void Exec(const std::string& sql, const std::string& step) override {
    PGresult* r = PQexec(conn_, sql.c_str());
    auto st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      std::string msg =
          OneLine(r && *PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
      PQclear(r);
      throw InputError(name_, step, msg);
    }
    PQclear(r);
  }
  std::unique_ptr<Query> Prepare(const std::string& sql, const std::string& step) override {
    return std::make_unique<PgQuery>(*this, sql, step);
  }
  void BeginWrite() override {
    Exec("BEGIN; SET LOCAL lock_timeout = " + std::to_string(lock_timeout_ms_) + "; " + kWriterLock,
         "begin");
  }
  void Commit() override { Exec("COMMIT", "commit"); }
  void Rollback() noexcept override {
    if (PQstatus(conn_) == CONNECTION_OK) PQclear(PQexec(conn_, "ROLLBACK"));
  }
  bool HasTable(const std::string& table) override {
    PgQuery q(*this,
              "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND "
              "tablename = ?",
              "schema");
    q.Bind(1, table);
    return q.Step() && q.Int(0) > 0;
  }
  PGconn* get() const { return conn_; }

 private:
  PGconn* conn_ = nullptr;
  int lock_timeout_ms_;
};

bool PgQuery::Step() {
  if (!res_) {
    std::vector<const char*> values;
    for (const auto& p : params_) values.push_back(p ? p->c_str() : nullptr);
    res_ = PQexecParams(db_.get(), sql_.c_str(), static_cast<int>(values.size()), nullptr,
                        values.data(), nullptr, nullptr, 0);
    auto st = PQresultStatus(res_);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) db_.Fail(step_, res_);
    row_ = -1;
  }
  return ++row_ < PQntuples(res_);
}

}  // namespace

std::unique_ptr<Store> OpenPostgresStore(const std::string& url, const StoreOptions& options) {
  return std::make_unique<PgStore>(url, options);
}

}  // namespace dlb::report
