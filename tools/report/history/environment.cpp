#include "tools/report/history/environment.h"

#include <set>
#include <string_view>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/libraries.h"
#include "tools/report/analyses/setup.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report::history {

namespace {

// How a change names a library of libraries_loaded (fixtures/schema/libraries.h's names).
std::string LibraryLabel(const std::string& name) {
  static const std::map<std::string, std::string> kLabels = {
      {"cudnn", "cuDNN"},  {"cublas", "cuBLAS"},           {"cublasLt", "cuBLASLt"},
      {"nccl", "NCCL"},    {"cudart", "CUDA runtime"},     {"nvjpeg", "nvJPEG"},
      {"cuda", "libcuda"}, {"torch_cuda", "LibTorch CUDA"}};
  auto it = kLabels.find(name);
  return it == kLabels.end() ? name : it->second;
}

// The context's own version keys of what libraries_loaded does not cover (CPU libraries), and the
// driver.
constexpr std::pair<std::string_view, const char*> kVersionKeys[] = {
    {schema::kCtxGpuDriver, "driver"},
    {schema::kCtxOnednnVersion, "oneDNN"},
    {schema::kCtxTorchVersion, "LibTorch"},
    {schema::kCtxTurboJpegVersion, "TurboJPEG"}};

std::string Arrow(const std::string& label, const std::string& a, const std::string& b) {
  return label + " " + (a.empty() ? "-" : a) + " → " + (b.empty() ? "-" : b);
}

}  // namespace

std::map<std::string, std::string> MeasuringFlags(const Context& context,
                                                  const std::string& family) {
  std::string command;
  if (!family.empty()) command = ContextValue(context, std::string(kFamilyCommandKey) + family);
  if (command.empty()) command = ContextValue(context, schema::kCtxCommand);
  // The flags that make a setup in a report are those whose change a series names.
  return SetupFlags(command);
}

std::vector<std::string> EnvironmentChanges(const Context& before, const Context& after,
                                            const std::string& family) {
  std::vector<std::string> out;
  const auto la = LibraryVersions(before), lb = LibraryVersions(after);
  if (!la.empty() && !lb.empty()) {
    std::set<std::string> names;
    for (const auto& [n, v] : la) names.insert(n);
    for (const auto& [n, v] : lb) names.insert(n);
    for (const std::string& n : names) {
      const std::string x = la.count(n) ? la.at(n) : "", y = lb.count(n) ? lb.at(n) : "";
      if (x != y) out.push_back(Arrow(LibraryLabel(n), x, y));
    }
  }
  for (const auto& [key, label] : kVersionKeys) {
    const std::string x = ContextValue(before, key), y = ContextValue(after, key);
    if (x != y && !x.empty() && !y.empty()) out.push_back(Arrow(label, x, y));
  }
  const auto fa = MeasuringFlags(before, family), fb = MeasuringFlags(after, family);
  std::set<std::string> flags;
  for (const auto& [n, v] : fa) flags.insert(n);
  for (const auto& [n, v] : fb) flags.insert(n);
  for (const std::string& n : flags) {
    auto x = fa.find(n), y = fb.find(n);
    if (x != fa.end() && y != fb.end() && x->second == y->second) continue;
    auto shown = [&](const std::map<std::string, std::string>& f, auto it) {
      return it == f.end() ? std::string() : it->second.empty() ? std::string("on") : it->second;
    };
    out.push_back(Arrow(n, shown(fa, x), shown(fb, y)));
  }
  return out;
}

std::string EnvironmentNote(const std::vector<std::string>& changes, size_t run) {
  if (changes.empty()) return "";
  std::string out;
  for (const std::string& c : changes) out += (out.empty() ? "" : ", ") + c;
  return out + " at #" + std::to_string(run);
}

}  // namespace dlb::report::history
