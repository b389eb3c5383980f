// The history's storage: one interface, an SQLite and a PostgreSQL implementation. The SQL the
// history runs is written once, with `?` placeholders (the PostgreSQL store numbers them); only
// the table definitions differ per dialect. Every failure is an InputError naming the database
// (a URL without its password) and the step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace dlb::report {

class Query {
 public:
  virtual ~Query() = default;
  Query& Bind(int i, const std::string& v) {
    BindText(i, v);
    return *this;
  }
  Query& Bind(int i, double v) {  // NaN and infinities are stored as NULL
    BindReal(i, v);
    return *this;
  }
  Query& Bind(int i, int64_t v) {
    BindInt(i, v);
    return *this;
  }
  virtual bool Step() = 0;  // true: a row is there to read
  virtual void Reset() = 0;
  virtual int64_t Int(int c) const = 0;
  virtual double Real(int c) const = 0;  // NULL: NaN
  virtual std::string Text(int c) const = 0;

 protected:
  virtual void BindText(int i, const std::string& v) = 0;
  virtual void BindReal(int i, double v) = 0;
  virtual void BindInt(int i, int64_t v) = 0;
};

enum class Dialect { kSqlite, kPostgres };

class Store {
 public:
  virtual ~Store() = default;
  virtual Dialect dialect() const = 0;
  const std::string& name() const { return name_; }  // for messages: path or URL sans password
  virtual std::unique_ptr<Query> Prepare(const std::string& sql, const std::string& step) = 0;
  virtual void Exec(const std::string& sql, const std::string& step) = 0;  // may hold several
  // A write transaction that excludes every other writer until Commit or Rollback.
  virtual void BeginWrite() = 0;
  virtual void Commit() = 0;
  virtual void Rollback() noexcept = 0;
  virtual bool HasTable(const std::string& table) = 0;

 protected:
  std::string name_;
};

struct StoreOptions {
  int busy_timeout_ms = 10000;  // SQLite: wait for a locked database; PostgreSQL: for the lock
  int connect_timeout_s = 10;   // PostgreSQL, unless the URL or PGCONNECT_TIMEOUT says otherwise
};

// True for postgresql:// and postgres:// URLs.
bool IsPostgresUrl(const std::string& db);
// The URL with any password (user:password@ or password=) left out.
std::string RedactUrl(const std::string& url);

// `create`: an SQLite file that does not exist is made (a PostgreSQL database never is).
std::unique_ptr<Store> OpenStore(const std::string& db, bool create, const StoreOptions& options);
std::unique_ptr<Store> OpenSqliteStore(const std::string& path, bool create,
                                       const StoreOptions& options);
std::unique_ptr<Store> OpenPostgresStore(const std::string& url, const StoreOptions& options);

// Rolls back unless committed: a thrown error leaves the database as it was.
class WriteTransaction {
 public:
  explicit WriteTransaction(Store& s) : s_(s) { s_.BeginWrite(); }
  ~WriteTransaction() {
    if (!done_) s_.Rollback();
  }
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void Commit() {
    s_.Commit();
    done_ = true;
  }

 private:
  Store& s_;
  bool done_ = false;
};

}  // namespace dlb::report
