#include "tools/report/analyses/libraries.h"

#include <cctype>
#include <set>

#include "fixtures/schema/libraries.h"
#include "fixtures/schema/schema.h"

namespace dlb::report {

namespace {

std::string Get(const Context& c, std::string_view key) {
  auto it = c.find(std::string(key));
  return it == c.end() ? "" : it->second;
}

// name -> the files it was loaded from (", " joined), as LibraryVersions reads versions.
std::map<std::string, std::string> Joined(const Context& context, bool paths) {
  std::map<std::string, std::set<std::string>> sets;
  for (const schema::LoadedLibrary& l : schema::ParseLibraries(Get(context, schema::kCtxLibraries)))
    if (l.name.rfind("cudnn_", 0) != 0) sets[l.name].insert(paths ? l.path : l.version);
  if (sets.empty() && !paths) {
    const std::pair<const char*, std::string_view> legacy[] = {
        {"cudnn", schema::kCtxCudnnVersion},
        {"cublas", schema::kCtxCublasVersion},
        {"nccl", schema::kCtxNcclVersion}};
    for (const auto& [name, key] : legacy)
      if (const std::string v = Get(context, key);
          !v.empty() && std::isdigit(static_cast<unsigned char>(v[0])))
        sets[name].insert(v);
  }
  std::map<std::string, std::string> out;
  for (const auto& [name, values] : sets) {
    std::string joined;
    for (const std::string& v : values) joined += (joined.empty() ? "" : ", ") + v;
    out[name] = joined;
  }
  return out;
}

// "cudnn 9.14.0 (base) -> 9.19.0 (new); ..." over the union of both maps' names; "-": not loaded.
std::string Differences(const std::map<std::string, std::string>& a,
                        const std::map<std::string, std::string>& b) {
  std::set<std::string> names;
  for (const auto& [k, v] : a) names.insert(k);
  for (const auto& [k, v] : b) names.insert(k);
  std::string out;
  for (const std::string& n : names) {
    const std::string x = a.count(n) ? a.at(n) : "not loaded";
    const std::string y = b.count(n) ? b.at(n) : "not loaded";
    if (x != y) out += (out.empty() ? "" : "; ") + n + " " + x + " (base) -> " + y + " (new)";
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> LibraryVersions(const Context& context) {
  return Joined(context, false);
}

std::string LibrariesNote(const Context& base, const Context& now) {
  const auto vb = LibraryVersions(base), vn = LibraryVersions(now);
  if (vb.empty() || vn.empty()) return "";  // a side that records none (not a dlbench file)
  if (const std::string d = Differences(vb, vn); !d.empty())
    return "⚠ Measured on different library versions: " + d +
           ". A change may come from the libraries rather than from the code (the contexts' " +
           std::string(schema::kCtxLibraries) + " name the files).";
  if (const std::string d = Differences(Joined(base, true), Joined(now, true)); !d.empty())
    return "Same library versions, loaded from other files: " + d + ".";
  return "";
}

std::string LibrariesAcrossRunsNote(const std::vector<Context>& window, const Context& newest) {
  return LibrariesAcrossRunsNote(std::vector<LibraryRuns>{{"", window, newest}});
}

std::string LibrariesAcrossRunsNote(const std::vector<LibraryRuns>& binaries) {
  std::string out;
  for (const LibraryRuns& b : binaries) {
    const auto vn = LibraryVersions(b.newest);
    if (vn.empty()) continue;
    // name -> (a window version that differs from the newest's -> how many runs had it)
    std::map<std::string, std::map<std::string, int>> differ;
    for (const Context& c : b.window) {
      const auto vw = LibraryVersions(c);
      if (vw.empty()) continue;
      for (const auto& [name, version] : vn)
        if (!vw.count(name) || vw.at(name) != version)
          ++differ[name][vw.count(name) ? vw.at(name) : "not loaded"];
    }
    std::string part;
    for (const auto& [name, versions] : differ)
      for (const auto& [version, runs] : versions)
        part += (part.empty() ? "" : "; ") + name + " " + version + " in " + std::to_string(runs) +
                " of the window's " + std::to_string(b.window.size()) + " runs, " + vn.at(name) +
                " in the newest";
    if (!part.empty())
      out += (out.empty() ? "" : "; ") + (b.who.empty() ? "" : b.who + ": ") + part;
  }
  if (out.empty()) return "";
  return "⚠ Measured on different library versions: " + out +
         ". A change may come from the libraries rather than from the code.";
}

}  // namespace dlb::report
