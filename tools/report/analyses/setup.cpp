#include "tools/report/analyses/setup.h"

#include <algorithm>
#include <cctype>

#include "fixtures/schema/naming.h"
#include "fixtures/schema/schema.h"
#include "tools/report/analyses/common.h"
#include "tools/report/analyses/libraries.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report {

namespace {

// The flags that choose which cases run, or watch the run, without changing what one case
// measures (docs/flags.md).
constexpr std::string_view kNotSetupFlags[] = {"--dlb_tier",          "--dlb_batch_sizes",
                                               "--dlb_dtypes",        "--dlb_device",
                                               "--dlb_workloads",     "--dlb_verify",
                                               "--dlb_seed",          "--dlb_monitor",
                                               "--dlb_monitor_trace", "--dlb_monitor_interval_ms",
                                               "--dlb_budget",        "--dlb_case_timeout",
                                               "--dlb_comm_timeout",  "--dlb_stdrel",
                                               "--dlb_stdrel_max_s",  "--dlb_comm_bytes",
                                               "--dlb_comm_gpus",     "--dlb_train_gpus",
                                               "--dlb_help"};

// Context keys of a setup, by kind, with the word the report names them by.
constexpr std::pair<std::string_view, std::string_view> kBinaryKeys[] = {
    {schema::kCtxExecutable, "binary"},
    {schema::kCtxBuildType, "build"},
    {schema::kCtxCompiler, "compiler"},
    {schema::kCtxVersion, "dlbench"},
    {schema::kCtxGitRevision, "revision"},
    {schema::kCtxGitBranch, "branch"},
    {schema::kCtxTier, "tier"}};
constexpr std::pair<std::string_view, std::string_view> kLibraryKeys[] = {
    {schema::kCtxOnednnVersion, "onednn"},
    {schema::kCtxTorchVersion, "libtorch"},
    {schema::kCtxTurboJpegVersion, "turbojpeg"}};
constexpr std::pair<std::string_view, std::string_view> kRunKeys[] = {
    {schema::kCtxCpuThreads, "threads"},
    {schema::kCtxCommLaunch, "launch"},
    {schema::kCtxCommBuffers, "comm buffers"}};
constexpr std::pair<std::string_view, std::string_view> kMachineKeys[] = {
    {schema::kCtxHostName, "host"},
    {schema::kCtxCpuModel, "CPU"},
    {schema::kCtxGpuName, "GPU"},
    {schema::kCtxGpuDriver, "driver"}};

bool IsFlag(const std::string& what) { return what.rfind("--", 0) == 0; }

}  // namespace

std::string Setup::Get(const std::string& what) const {
  for (const auto& [w, v] : values)
    if (w == what) return v;
  return flags_known && IsFlag(what) ? "default" : "";
}

std::map<std::string, std::string> SetupFlags(const std::string& command) {
  std::map<std::string, std::string> out;
  const std::vector<std::string> words = ShellSplit(command);
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("--dlb_", 0) != 0) continue;
    const size_t eq = w.find('=');
    const std::string flag = w.substr(0, eq);
    if (std::find(std::begin(kNotSetupFlags), std::end(kNotSetupFlags), flag) !=
        std::end(kNotSetupFlags))
      continue;
    out[flag] = eq == std::string::npos ? "" : w.substr(eq + 1);
  }
  return out;
}

Setup SetupOf(const std::map<std::string, std::string>& context) {
  Setup s;
  auto add = [&](std::string_view key, std::string_view what) {
    const std::string v = ContextValue(context, key);
    if (!IsContextGap(v)) s.values.emplace_back(what, v);
  };
  for (const auto& [key, what] : kBinaryKeys) add(key, what);
  for (const auto& [name, version] : LibraryVersions(context)) {
    s.values.emplace_back(name, version);
    s.libraries.insert(name);
  }
  for (const auto& [key, what] : kLibraryKeys) {
    const size_t before = s.values.size();
    add(key, what);
    if (s.values.size() > before) s.libraries.insert(std::string(what));
  }
  if (const std::string command = ContextValue(context, schema::kCtxCommand); !command.empty()) {
    s.flags_known = true;
    for (const auto& [flag, value] : SetupFlags(command)) s.values.emplace_back(flag, value);
  }
  for (const auto& [key, what] : kRunKeys) add(key, what);
  for (const auto& [key, what] : kMachineKeys) add(key, what);
  return s;
}

std::vector<std::string> SetupDifferences(const Setup& a, const Setup& b) {
  std::vector<std::string> out;
  auto check = [&](const std::string& what) {
    if (std::find(out.begin(), out.end(), what) != out.end()) return;
    const std::string x = a.Get(what), y = b.Get(what);
    if (!x.empty() && !y.empty() && x != y) out.push_back(what);
  };
  for (const auto& [what, v] : a.values) check(what);
  for (const auto& [what, v] : b.values) check(what);
  return out;
}

std::vector<std::string> NamingWhats(const std::vector<std::string>& whats, const Setup& setup) {
  const bool library = std::any_of(whats.begin(), whats.end(),
                                   [&](const std::string& w) { return setup.libraries.count(w); });
  if (!library) return whats;
  std::vector<std::string> out;
  for (const std::string& w : whats)
    if (w != "--dlb_cudnn" && w != "--dlb_cublas" && w != "--dlb_nccl") out.push_back(w);
  return out;
}

std::string SetupText(const Setup& s, const std::vector<std::string>& whats) {
  std::string out;
  for (const std::string& what : whats) {
    const std::string v = s.Get(what);
    std::string item = IsFlag(what) ? (v == "default" ? what + " default" : what + "=" + v)
                                    : what + " " + (v.empty() ? "unknown" : v);
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

std::string SetupSlug(const std::string& text) {
  std::string out;
  std::string_view t = text;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.substr(i, 6) == "--dlb_") {
      i += 5;
      continue;
    }
    const auto c = static_cast<unsigned char>(t[i]);
    char o = std::isalnum(c)          ? static_cast<char>(std::tolower(c))
             : (c == '_' || c == '.') ? c
                                      : '-';
    if (o == '-' && (out.empty() || out.back() == '-')) continue;
    out += o;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown" : out;
}

std::string SetupKeyValue(const Setup& s, const std::vector<std::string>& whats) {
  constexpr size_t kItems = 3, kValue = 16, kRevision = 7;
  std::string out;
  for (size_t i = 0; i < whats.size() && i < kItems; ++i) {
    const std::string& what = whats[i];
    std::string v = SetupSlug(s.Get(what));
    v = v.substr(0, what == "revision" ? kRevision : kValue);
    while (!v.empty() && v.back() == '-') v.pop_back();
    const bool named =
        IsFlag(what) || (!v.empty() && std::isdigit(static_cast<unsigned char>(v[0])));
    out += (out.empty() ? "" : "-") + (named ? SetupSlug(what) + "-" : std::string()) + v;
  }
  return out;
}

std::string NameWithSetup(const std::string& run_name, const std::string& text) {
  if (!ParseName(run_name)) return run_name + " [" + text + "]";
  // Google Benchmark's suffixes stay last, where ParseName looks for them.
  size_t at = run_name.size();
  while (at != std::string::npos && at > 0) {
    const size_t slash = run_name.rfind('/', at - 1);
    if (slash == std::string::npos) break;
    const std::string_view part = std::string_view(run_name).substr(slash + 1, at - slash - 1);
    const bool suffix = part == "manual_time" || part == "real_time" ||
                        part.rfind("repeats:", 0) == 0 || part.rfind("threads:", 0) == 0 ||
                        part.rfind("min_time:", 0) == 0 || part.rfind("iterations:", 0) == 0 ||
                        part.rfind("min_warmup_time:", 0) == 0;
    if (!suffix) break;
    at = slash;
  }
  return run_name.substr(0, at) + "/" + std::string(kSetupKey) + ":" + SetupSlug(text) +
         run_name.substr(at);
}

std::string NameWithoutSetup(std::string_view name) {
  const std::string key = "/" + std::string(kSetupKey) + ":";
  if (const size_t at = name.find(key); at != std::string_view::npos) {
    const size_t end = name.find('/', at + 1);
    return std::string(name.substr(0, at)) +
           std::string(end == std::string_view::npos ? "" : name.substr(end));
  }
  if (const size_t at = name.rfind(" ["); at != std::string_view::npos && name.back() == ']')
    return std::string(name.substr(0, at));
  return std::string(name);
}

std::string SetupNote(const std::map<std::string, std::string>& base,
                      const std::map<std::string, std::string>& now) {
  const Setup a = SetupOf(base), b = SetupOf(now);
  constexpr std::string_view kCode[] = {"binary", "dlbench", "revision", "branch"};
  std::string out;
  for (const std::string& what : SetupDifferences(a, b)) {
    if (a.libraries.count(what) || b.libraries.count(what) ||
        std::find(std::begin(kCode), std::end(kCode), what) != std::end(kCode))
      continue;
    const bool flag = IsFlag(what);
    out += (out.empty() ? "" : "; ") + what + (flag ? "=" : " ") + a.Get(what) + " (base) -> " +
           b.Get(what) + " (new)";
  }
  if (out.empty()) return "";
  return "⚠ Measured with different settings: " + out +
         ". A change may come from them rather than from the code.";
}

}  // namespace dlb::report
