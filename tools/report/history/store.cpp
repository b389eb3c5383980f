#include "tools/report/history/store.h"

#include "tools/report/read/gbench_json.h"

namespace dlb::report {

namespace {
bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

bool IsPostgresUrl(const std::string& db) {
  return StartsWith(db, "postgresql://") || StartsWith(db, "postgres://");
}

std::string RedactUrl(const std::string& url) {
  std::string out = url;
  size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    size_t start = scheme + 3;
    size_t end = out.find_first_of("/?", start);
    if (end == std::string::npos) end = out.size();
    size_t at = out.rfind('@', end);
    if (at != std::string::npos && at >= start) {
      size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.erase(colon, at - colon);
    }
  }
  // password=... among the query parameters
  size_t q = out.find('?');
  if (q != std::string::npos) {
    std::string query = out.substr(q + 1), kept;
    out.erase(q);
    size_t pos = 0;
    while (pos <= query.size()) {
      size_t e = query.find('&', pos);
      if (e == std::string::npos) e = query.size();
      std::string param = query.substr(pos, e - pos);
      if (!param.empty() && !StartsWith(param, "password="))
        kept += (kept.empty() ? "" : "&") + param;
      pos = e + 1;
    }
    if (!kept.empty()) out += "?" + kept;
  }
  return out;
}

std::unique_ptr<Store> OpenStore(const std::string& db, bool create, const StoreOptions& options) {
  if (IsPostgresUrl(db)) return OpenPostgresStore(db, options);
  return OpenSqliteStore(db, create, options);
}

#ifndef DLBENCH_HAVE_LIBPQ
std::unique_ptr<Store> OpenPostgresStore(const std::string& url, const StoreOptions&) {
  throw InputError(RedactUrl(url), "connect",
                   "this dlbench-report was built without libpq (PostgreSQL); install libpq-dev "
                   "and configure again");
}
#endif

}  // namespace dlb::report
