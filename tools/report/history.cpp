#include "tools/report/history.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <unordered_map>

#include "fixtures/schema.h"
#include "tools/report/stats.h"

namespace dlb::report {

namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS runs("
    " id INTEGER PRIMARY KEY,"
    " run_key TEXT NOT NULL UNIQUE,"
    " commit_id TEXT NOT NULL, branch TEXT NOT NULL, machine TEXT NOT NULL, date TEXT NOT NULL,"
    " added TEXT NOT NULL, context TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS runs_machine_date ON runs(machine, date, id);"
    "CREATE TABLE IF NOT EXISTS results("
    " run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, family TEXT NOT NULL,"
    " median_ns REAL, cv REAL, reps INTEGER NOT NULL, status TEXT NOT NULL, message TEXT NOT NULL,"
    " counters TEXT NOT NULL, PRIMARY KEY(run_id, name)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS results_name ON results(name, run_id);";

// One open database; every failure becomes InputError(db, <step>, sqlite's message).
class Db {
 public:
  Db(const std::string& path, bool create, int busy_ms) : path_(path) {
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
  ~Db() { sqlite3_close_v2(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  [[noreturn]] void Fail(const std::string& where, int rc) const {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    if (msg.empty() || msg == "not an error") msg = sqlite3_errstr(rc);
    throw InputError(path_, where, msg);
  }
  void Exec(const char* sql, const std::string& where) {
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) Fail(where, rc);
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

  std::string path_;
  sqlite3* db_ = nullptr;
};

class Stmt {
 public:
  Stmt(Db& db, const char* sql, const std::string& where) : db_(db), where_(where) {
    int rc = sqlite3_prepare_v2(db.get(), sql, -1, &s_, nullptr);
    if (rc != SQLITE_OK) db.Fail(where, rc);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& Bind(int i, const std::string& v) {
    Check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& Bind(int i, double v) {
    Check(std::isfinite(v) ? sqlite3_bind_double(s_, i, v) : sqlite3_bind_null(s_, i));
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    Check(sqlite3_bind_int64(s_, i, v));
    return *this;
  }
  bool Step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    db_.Fail(where_, rc);
  }
  void Reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t Int(int c) const { return sqlite3_column_int64(s_, c); }
  double Real(int c) const {
    return sqlite3_column_type(s_, c) == SQLITE_NULL ? NAN : sqlite3_column_double(s_, c);
  }
  std::string Text(int c) const {
    auto p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
  }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK) db_.Fail(where_, rc);
  }
  Db& db_;
  std::string where_;
  sqlite3_stmt* s_ = nullptr;
};

// Rolls back unless committed: a thrown error leaves the database as it was.
class Transaction {
 public:
  explicit Transaction(Db& db) : db_(db) { db_.Exec("BEGIN IMMEDIATE", "begin"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void Commit() {
    db_.Exec("COMMIT", "commit");
    done_ = true;
  }

 private:
  Db& db_;
  bool done_ = false;
};

std::string NowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Get(const std::map<std::string, std::string>& m, std::string_view k) {
  auto it = m.find(std::string(k));
  return it == m.end() ? std::string() : it->second;
}

void RequireSchema(Db& db, const std::string& path) {
  Stmt s(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN ('runs','results')",
         "schema");
  s.Step();
  if (s.Int(0) != 2)
    throw InputError(path, "schema", "not a dlbench history database (no runs/results tables)");
}

const char* kSpark[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

std::string Sparkline(const std::vector<double>& v) {
  double lo = INFINITY, hi = -INFINITY;
  for (double x : v)
    if (std::isfinite(x)) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  std::string out;
  for (double x : v) {
    if (!std::isfinite(x)) {
      out += " ";
      continue;
    }
    int i = hi > lo ? static_cast<int>(std::lround((x - lo) / (hi - lo) * 7)) : 3;
    out += kSpark[std::clamp(i, 0, 7)];
  }
  return out;
}

struct RunRow {
  int64_t id;
  std::string commit, branch, machine, date;
};

}  // namespace

bool HistoryAdd(const std::string& path, const std::vector<FileData>& files, RunMeta meta,
                const HistoryOptions& opt, const std::function<void()>& before_commit) {
  MergedRuns runs = Merge(files);
  if (meta.machine.empty()) meta.machine = Get(runs.context, schema::kCtxHostName);
  if (meta.machine.empty()) meta.machine = "unknown";
  if (meta.date.empty()) meta.date = Get(runs.context, schema::kCtxDate);
  if (meta.date.empty()) meta.date = NowUtc();
  if (meta.commit.empty()) meta.commit = Get(runs.context, schema::kCtxGitRevision);
  if (meta.commit.empty()) meta.commit = "unknown";
  if (meta.branch.empty()) meta.branch = Get(runs.context, schema::kCtxGitBranch);
  nlohmann::json ctx(runs.context);
  std::string key = meta.commit + "\x1f" + meta.machine + "\x1f" + meta.date;

  Db db(path, true, opt.busy_timeout_ms);
  Transaction tx(db);
  db.Exec(kSchema, "schema");
  Stmt run(db,
           "INSERT OR IGNORE INTO runs(run_key, commit_id, branch, machine, date, added, context) "
           "VALUES (?,?,?,?,?,?,?)",
           "insert run");
  run.Bind(1, key).Bind(2, meta.commit).Bind(3, meta.branch).Bind(4, meta.machine);
  run.Bind(5, meta.date).Bind(6, NowUtc());
  run.Bind(7, ctx.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  run.Step();
  if (sqlite3_changes(db.get()) == 0) {
    tx.Commit();
    return false;
  }
  int64_t run_id = sqlite3_last_insert_rowid(db.get());
  Stmt res(db,
           "INSERT INTO results(run_id, name, family, median_ns, cv, reps, status, message, "
           "counters) VALUES (?,?,?,?,?,?,?,?,?)",
           "insert result");
  for (const Bench& b : runs.benches) {
    nlohmann::json counters = nlohmann::json::object();
    for (const auto& c : b.CounterNames()) {
      double v = b.Counter(c);
      if (std::isfinite(v)) counters[c] = v;
    }
    bool m = b.measured();
    res.Bind(1, run_id).Bind(2, b.name).Bind(3, b.family);
    res.Bind(4, m ? b.MedianNs() : NAN).Bind(5, m ? b.Cv() : NAN);
    res.Bind(6, static_cast<int64_t>(b.Repetitions()));
    res.Bind(7, std::string(StatusName(b.status))).Bind(8, b.message);
    res.Bind(9, counters.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    res.Step();
    res.Reset();
  }
  if (before_commit) before_commit();
  tx.Commit();
  return true;
}

namespace {

std::vector<RunRow> LastRuns(Db& db, const std::string& machine, int n) {
  std::string sql = "SELECT id, commit_id, branch, machine, date FROM runs";
  if (!machine.empty()) sql += " WHERE machine = ?1";
  sql += " ORDER BY date DESC, id DESC LIMIT " + std::to_string(std::max(n, 1));
  Stmt s(db, sql.c_str(), "runs");
  if (!machine.empty()) s.Bind(1, machine);
  std::vector<RunRow> out;
  while (s.Step()) out.push_back({s.Int(0), s.Text(1), s.Text(2), s.Text(3), s.Text(4)});
  std::reverse(out.begin(), out.end());  // oldest first
  return out;
}

// name -> median per run (NaN where not measured), for the given runs.
std::map<std::string, std::vector<double>> Results(Db& db, const std::vector<RunRow>& runs,
                                                   const std::string& filter,
                                                   std::vector<std::string>* order) {
  std::map<std::string, std::vector<double>> out;
  if (runs.empty()) return out;
  std::unordered_map<int64_t, size_t> col;
  std::string ids;
  for (size_t i = 0; i < runs.size(); ++i) {
    col[runs[i].id] = i;
    ids += (i ? "," : "") + std::to_string(runs[i].id);
  }
  std::string sql = "SELECT run_id, name, median_ns FROM results WHERE run_id IN (" + ids + ")";
  Stmt s(db, sql.c_str(), "results");
  while (s.Step()) {
    std::string name = s.Text(1);
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    auto [it, inserted] = out.emplace(name, std::vector<double>(runs.size(), NAN));
    if (inserted && order) order->push_back(name);
    it->second[col[s.Int(0)]] = s.Real(2);
  }
  if (order) std::sort(order->begin(), order->end());
  return out;
}

}  // namespace

Document HistoryShow(const std::string& path, const ShowOptions& opt, const HistoryOptions& hopt) {
  Db db(path, false, hopt.busy_timeout_ms);
  RequireSchema(db, path);
  Document d;
  d.title = "dlbench history";
  std::vector<RunRow> runs = LastRuns(db, opt.machine, opt.last);
  Section rs;
  rs.title = "Runs";
  Table rt;
  rt.columns = {{"#", "run"},
                {"date", "date"},
                {"commit", "commit"},
                {"branch", "branch"},
                {"machine", "machine"}};
  for (size_t i = 0; i < runs.size(); ++i)
    rt.rows.push_back({Cell(std::to_string(i + 1), static_cast<double>(runs[i].id)),
                       Cell(runs[i].date), Cell(runs[i].commit), Cell(runs[i].branch),
                       Cell(runs[i].machine)});
  rs.tables.push_back(std::move(rt));
  d.sections.push_back(std::move(rs));
  if (runs.empty()) {
    d.notes.push_back("The database holds no runs yet.");
    return d;
  }
  std::vector<std::string> names;
  auto results = Results(db, runs, opt.filter, &names);
  Section ts;
  ts.title = "Trend (median time per run, oldest first)";
  Table t;
  t.columns = {{"benchmark", "name"}};
  for (size_t i = 0; i < runs.size(); ++i)
    t.columns.push_back({"#" + std::to_string(i + 1), "run_" + std::to_string(runs[i].id)});
  t.columns.push_back({"trend", "trend"});
  t.columns.push_back({"last vs first", "change"});
  int charts = 0;
  for (const auto& name : names) {
    const auto& v = results[name];
    std::vector<Cell> row{Cell(name)};
    double first = NAN, last = NAN;
    Series s{name, {}, true, true};
    for (size_t i = 0; i < v.size(); ++i) {
      row.emplace_back(FormatTime(v[i]), v[i]);
      if (std::isfinite(v[i])) {
        if (!std::isfinite(first)) first = v[i];
        last = v[i];
        s.points.emplace_back(static_cast<double>(i + 1), v[i]);
      }
    }
    row.emplace_back(Sparkline(v));
    double ch = std::isfinite(first) ? RelativeChange(first, last) : NAN;
    row.emplace_back(FormatSigned(ch), ch);
    t.rows.push_back(std::move(row));
    if (charts < opt.max_charts && s.points.size() >= 2) {
      Chart c;
      c.title = name;
      c.x_label = "run";
      c.y_label = "median time (ns)";
      c.series.push_back(std::move(s));
      ts.charts.push_back(std::move(c));
      ++charts;
    }
  }
  if (charts < static_cast<int>(names.size()))
    ts.notes.push_back("Charts for the first " + std::to_string(charts) + " of " +
                       std::to_string(names.size()) +
                       " benchmarks; narrow with --filter or raise --max-charts.");
  ts.tables.push_back(std::move(t));
  d.sections.push_back(std::move(ts));
  return d;
}

CheckResult HistoryCheck(const std::string& path, const CheckOptions& opt,
                         const HistoryOptions& hopt) {
  Db db(path, false, hopt.busy_timeout_ms);
  RequireSchema(db, path);
  CheckResult r;
  Document& d = r.doc;
  d.title = "dlbench history check";
  std::vector<RunRow> newest = LastRuns(db, "", 1);
  if (newest.empty()) throw InputError(path, "runs", "the database holds no runs");
  std::vector<RunRow> runs = LastRuns(db, newest.back().machine, opt.window + 1);
  const RunRow& now = runs.back();
  std::vector<std::string> names;
  auto results = Results(db, runs, "", &names);
  Table t;
  t.columns = {{"benchmark", "name"}, {"newest", "new_ns"},  {"window median", "median_ns"},
               {"MAD", "mad_ns"},     {"change", "change"},  {"z (MAD)", "z"},
               {"history", "n"},      {"verdict", "verdict"}};
  std::vector<std::vector<Cell>> slower, other;
  int counts[5] = {0, 0, 0, 0, 0};  // slower faster same new short
  for (const auto& name : names) {
    const auto& v = results[name];
    double x = v.back();
    if (!std::isfinite(x)) continue;
    std::vector<double> prev;
    for (size_t i = 0; i + 1 < v.size(); ++i)
      if (std::isfinite(v[i])) prev.push_back(v[i]);
    std::string verdict;
    double med = NAN, mad = NAN, ch = NAN, z = NAN;
    if (prev.empty()) {
      verdict = "new";
      ++counts[3];
    } else if (static_cast<int>(prev.size()) < opt.min_history) {
      verdict = "short history";
      ++counts[4];
    } else {
      med = Median(prev);
      mad = Mad(prev);
      ch = RelativeChange(med, x);
      double spread = 1.4826 * mad;
      z = spread > 0 ? (x - med) / spread : (x == med ? 0 : INFINITY * (x > med ? 1 : -1));
      bool beyond = std::fabs(ch) >= opt.threshold && std::fabs(z) > opt.k;
      verdict = !beyond ? "same" : ch > 0 ? "slower" : "faster";
      ++counts[verdict == "slower" ? 0 : verdict == "faster" ? 1 : 2];
    }
    std::vector<Cell> row{Cell(name),
                          Cell(FormatTime(x), x),
                          Cell(FormatTime(med), med),
                          Cell(FormatTime(mad), mad),
                          Cell(FormatSigned(ch), ch),
                          Cell(FormatNumber(z, 3), z),
                          Cell(std::to_string(prev.size()), static_cast<double>(prev.size())),
                          Cell(verdict)};
    (verdict == "slower" ? slower : other).push_back(std::move(row));
  }
  r.regressions = counts[0];
  r.exit_code = r.regressions ? 3 : 0;
  d.notes.push_back("Newest run: " + now.date + ", commit " + now.commit + ", machine " +
                    now.machine + "; window: the " + std::to_string(runs.size() - 1) +
                    " runs before it on that machine.");
  d.notes.push_back(std::string(r.regressions ? "**REGRESSION**: " : "**OK**: ") +
                    std::to_string(counts[0]) + " slower, " + std::to_string(counts[1]) +
                    " faster, " + std::to_string(counts[2]) + " same, " +
                    std::to_string(counts[3]) + " new, " + std::to_string(counts[4]) +
                    " with too short a history. A change counts when it is at least " +
                    FormatPercent(opt.threshold) + " and more than " + FormatNumber(opt.k, 3) +
                    " scaled MADs (1.4826 x MAD) from the window's median.");
  Section s;
  s.title = "Newest run against the window";
  for (auto& row : slower) t.rows.push_back(std::move(row));
  for (auto& row : other) t.rows.push_back(std::move(row));
  s.tables.push_back(std::move(t));
  d.sections.push_back(std::move(s));
  return r;
}

}  // namespace dlb::report
