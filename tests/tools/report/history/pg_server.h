// A private PostgreSQL server for one test process: initdb into a temporary folder, listening on a
// Unix socket in that folder only, password authentication (SCRAM), stopped and removed by
// Stop(). initdb refuses to run as root: as root the server runs as the `postgres` user (else
// `nobody`) through runuser. Without the server binaries Start() says so and the tests skip.
#pragma once

#include <libpq-fe.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dlb::testing {

class PgServer {
 public:
  static constexpr const char* kUser = "dlb";
  static constexpr const char* kPassword = "s3cret-pw";

  // The folder holding initdb and pg_ctl: $DLB_PG_BINDIR, Debian's newest
  // /usr/lib/postgresql/<v>/bin, or PATH.
  static std::string BinDir() {
    namespace fs = std::filesystem;
    if (const char* d = std::getenv("DLB_PG_BINDIR"))
      return fs::exists(fs::path(d) / "initdb") ? d : "";
    std::vector<fs::path> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec))
      if (fs::exists(e.path() / "bin" / "initdb") && fs::exists(e.path() / "bin" / "pg_ctl"))
        found.push_back(e.path() / "bin");
    if (!found.empty()) {
      std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
        return std::atoi(a.parent_path().filename().c_str()) <
               std::atoi(b.parent_path().filename().c_str());
      });
      return found.back().string();
    }
    if (const char* path = std::getenv("PATH")) {
      std::string p = path;
      for (size_t at = 0; at <= p.size();) {
        size_t e = p.find(':', at);
        if (e == std::string::npos) e = p.size();
        fs::path dir = p.substr(at, e - at);
        if (!dir.empty() && fs::exists(dir / "initdb") && fs::exists(dir / "pg_ctl"))
          return dir.string();
        at = e + 1;
      }
    }
    return "";
  }

  // Empty on success, else one line saying why there is no server.
  std::string Start() {
    std::string bin = BinDir();
    if (bin.empty())
      return "no PostgreSQL server binaries (initdb, pg_ctl): apt install postgresql";
    char tmpl[] = "/tmp/dlbpg.XXXXXX";
    if (!::mkdtemp(tmpl)) return "mkdtemp failed";
    dir_ = tmpl;
    {
      std::ofstream pw(dir_ + "/pw");
      pw << kPassword << "\n";
    }
    std::string as;
    if (::geteuid() == 0) {
      const char* user = ::getpwnam("postgres") ? "postgres" : "nobody";
      struct passwd* pw = ::getpwnam(user);
      if (!pw) return "running as root and neither a postgres nor a nobody user to run the server";
      if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0 ||
          ::chown((dir_ + "/pw").c_str(), pw->pw_uid, pw->pw_gid) != 0)
        return "cannot hand " + dir_ + " to " + user;
      as = std::string("runuser -u ") + user + " -- ";
    }
    std::string cd = "cd '" + dir_ + "' && ";
    std::string init = cd + as + "'" + bin + "/initdb' -D '" + dir_ + "/data' -U " + kUser +
                       " --auth=scram-sha-256 --pwfile='" + dir_ +
                       "/pw' --no-sync -E UTF8 --locale=C > '" + dir_ + "/initdb.log' 2>&1";
    if (std::system(init.c_str()) != 0) return "initdb failed: " + LastLine(dir_ + "/initdb.log");
    ctl_ = cd + as + "'" + bin + "/pg_ctl' -D '" + dir_ + "/data' -w -t 60 ";
    std::string start = ctl_ + "-l '" + dir_ +
                        "/server.log' -o \"-c listen_addresses='' -c unix_socket_directories='" +
                        dir_ + "' -c fsync=off -c max_connections=40\" start > /dev/null 2>&1";
    if (std::system(start.c_str()) != 0)
      return "the server did not start: " + LastLine(dir_ + "/server.log");
    started_ = true;
    return "";
  }

  void Stop() {
    if (started_) std::system((ctl_ + "-m immediate stop > /dev/null 2>&1").c_str());
    started_ = false;
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
    dir_.clear();
  }

  const std::string& dir() const { return dir_; }

  std::string Url(const std::string& db, const std::string& password = kPassword) const {
    return "postgresql://" + std::string(kUser) + ":" + password + "@/" + db + "?host=" + dir_;
  }

  // Runs `sql` on `db` as the server's superuser; returns the first value, or "" on none.
  // Errors: "ERROR: <message>".
  std::string Sql(const std::string& db, const std::string& sql) const {
    PGconn* c = PQconnectdb(Url(db).c_str());
    std::string out;
    if (PQstatus(c) != CONNECTION_OK) {
      out = std::string("ERROR: ") + PQerrorMessage(c);
    } else {
      PGresult* r = PQexec(c, sql.c_str());
      auto st = PQresultStatus(r);
      if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        out = std::string("ERROR: ") + PQresultErrorMessage(r);
      else if (PQntuples(r) > 0 && PQnfields(r) > 0)
        out = PQgetvalue(r, 0, 0);
      PQclear(r);
    }
    PQfinish(c);
    return out;
  }

 private:
  // The last non-empty line of a log, which says why initdb or the server gave up.
  static std::string LastLine(const std::string& path) {
    std::ifstream in(path);
    std::string line, last = "(" + path + " is empty or unreadable)";
    while (std::getline(in, line))
      if (!line.empty()) last = line;
    return last;
  }

  std::string dir_, ctl_;
  bool started_ = false;
};

}  // namespace dlb::testing
