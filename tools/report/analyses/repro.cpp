#include "tools/report/analyses/repro.h"

#include <filesystem>
#include <optional>

#include "fixtures/schema/naming.h"
#include "fixtures/schema/schema.h"
#include "tools/report/analyses/setup.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report {

std::string ShellQuote(std::string_view word) {
  constexpr std::string_view kSafe =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%";
  if (!word.empty() && word.find_first_not_of(kSafe) == std::string_view::npos)
    return std::string(word);
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string AnchoredFilter(std::string_view name) {
  for (std::string_view suffix : {"_mean", "_median", "_stddev", "_cv"})
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      name.remove_suffix(suffix.size());
      break;
    }
  std::string out = "^";
  for (char c : name) {
    // ']' and '}' alone are literal, and libstdc++ (Google Benchmark's std::regex, extended)
    // rejects them escaped.
    if (std::string_view(".[{()\\*+?^$|").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out + "$";
}

std::vector<std::string> ReproFlags(const std::vector<std::string>& argv) {
  static constexpr std::string_view kKept[] = {"--benchmark_repetitions", "--benchmark_min_time",
                                               "--benchmark_min_warmup_time",
                                               "--benchmark_enable_random_interleaving"};
  std::vector<std::string> out;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    bool keep = a.rfind("--dlb_", 0) == 0;
    for (std::string_view k : kKept)
      keep |= a.rfind(k, 0) == 0 && (a.size() == k.size() || a[k.size()] == '=');
    if (keep) out.push_back(a);
  }
  return out;
}

std::string ReproCommand(const std::map<std::string, std::string>& context,
                         std::string_view shown) {
  // A case Merge split by setup filters on the name it ran under.
  const std::string name = NameWithoutSetup(shown);
  // The case's own family's command and binary where the run merged several binaries' files
  // (Merge keeps them per family), else the run's.
  const std::optional<BenchName> parsed = ParseName(name);
  const std::string family = parsed ? parsed->family : "";
  auto own = [&](std::string_view prefix) {
    return family.empty() ? std::string() : ContextValue(context, std::string(prefix) + family);
  };
  const std::string own_command = own(kFamilyCommandKey), own_binary = own(kFamilyExecutableKey);
  const bool family_kept = !own_command.empty() || !own_binary.empty();
  auto value = [&](const std::string& kept, std::string_view key) {
    return kept.empty() ? ContextValue(context, key) : kept;
  };
  std::vector<std::string> recorded;
  if (std::string command = value(own_command, schema::kCtxCommand); !command.empty())
    recorded = ShellSplit(command);
  // The recorded command's binary where it is absolute (the harness records it so), else Google
  // Benchmark's executable (argv[0] as typed).
  std::string binary;
  if (!recorded.empty() && !recorded.front().empty() && recorded.front()[0] == '/')
    binary = recorded.front();
  if (binary.empty()) binary = value(own_binary, schema::kCtxExecutable);
  if (binary.empty() && !recorded.empty()) binary = recorded.front();
  if (binary.empty()) return {};
  // A context that kept no command of this family (a history run stored before Merge kept them)
  // may name another family's binary: the case's own, bench_<family>, sits beside it.
  const std::filesystem::path path(binary);
  const std::string mine = "bench_" + family;
  if (!family_kept && !family.empty() && path.filename().string().rfind("bench_", 0) == 0 &&
      path.filename() != mine)
    binary = (path.parent_path() / mine).string();
  std::string out =
      ShellQuote(binary) + " " + ShellQuote("--benchmark_filter=" + AnchoredFilter(name));
  for (const std::string& f : ReproFlags(recorded)) out += " " + ShellQuote(f);
  return out;
}

}  // namespace dlb::report
