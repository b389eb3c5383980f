// A case's setup: what changes its measurement without changing its name. The binary (its path,
// build type, compiler, version, revision and branch), the libraries it loaded and their versions,
// the --dlb_* flags that change what is measured, the CPU threads, how a multi-GPU run was
// launched and where its buffers came from, the tier, the machine (host, CPU, GPU, driver). Two
// files of one case with other setups are two measurements, never one distribution: Merge keeps
// them apart, the report shows each as its own row (key `setup`) and compare names what differs.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dlb::report {

struct Setup {
  // What -> value, in the words the report shows: "cudnn" -> "9.19.0", "--dlb_gemm_fp8_accum" ->
  // "fast", "revision" -> "a7faaa86a30b". A context value that is a gap (IsContextGap) is left out.
  // In kind order (binary, libraries, flags, machine).
  std::vector<std::pair<std::string, std::string>> values;
  // The run recorded its command line: a --dlb_* flag it does not hold was at its default.
  bool flags_known = false;
  // The whats that are a library's version.
  std::set<std::string> libraries;

  // The value of `what`; "default" for a flag a recorded command line does not set; "" unknown.
  std::string Get(const std::string& what) const;
};

// The setup of a file's context (`context`: FileData::context).
Setup SetupOf(const std::map<std::string, std::string>& context);

// Which flags of a recorded command line make a setup: every --dlb_* flag but those that only
// choose which cases run or how the run is watched (tier, batch sizes, dtypes, device, workloads,
// verify, seed, monitor, budget, deadlines, stdrel, the collectives' and data-parallel GPU and
// size lists, help). Their values, by flag ("--dlb_gemm_fp8_accum" -> "fast").
std::map<std::string, std::string> SetupFlags(const std::string& command);

// What differs between two setups, in SetupOf's order of kinds (binary, libraries, flags,
// machine): a what one of them does not know is no difference.
std::vector<std::string> SetupDifferences(const Setup& a, const Setup& b);

// The whats that name setups apart: `whats` but the library-folder flags (--dlb_cudnn,
// --dlb_cublas, --dlb_nccl) where a library's version is among them, as the version says what the
// folder held. `setup`: any of the setups, for which whats are libraries.
std::vector<std::string> NamingWhats(const std::vector<std::string>& whats, const Setup& setup);

// "cudnn 9.14.0, --dlb_gemm_fp8_accum=fast": the setup's values of `whats`.
std::string SetupText(const Setup& s, const std::vector<std::string>& whats);

// The short value of a benchmark name's key setup: at most three of `whats`, each its value cut
// to 16 characters (a revision to its first 7), named where the value is a version or a count or
// the what a flag ("cudnn-9.14.0", "gemm_fp8_accum-fast", "9a671e4-mpi-2-processes"): a
// column a table can hold; the Problems section names the setups in full.
std::string SetupKeyValue(const Setup& s, const std::vector<std::string>& whats);

// The same as a value of a benchmark name's key (lowercase [a-z0-9_.-]): "cudnn-9.14.0",
// "gemm_fp8_accum-fast", items joined by "-".
std::string SetupSlug(const std::string& text);

// The name under which Merge keeps one setup of a case: the key setup:<slug> before Google
// Benchmark's suffixes (/manual_time) where the name follows dlbench's scheme, else the name and
// " [text]".
std::string NameWithSetup(const std::string& run_name, const std::string& text);
// The name a case ran under, its setup key taken off (a repro filters on it).
std::string NameWithoutSetup(std::string_view name);

// compare: "" where two runs' setups differ in nothing but their code (binary, dlbench version,
// revision, branch: what compare compares) and their libraries (LibrariesNote names those); else
// one line naming each flag and setting that differs: "--dlb_gemm_fp8_accum=full (base) -> fast
// (new); threads 16 (base) -> 8 (new)".
std::string SetupNote(const std::map<std::string, std::string>& base,
                      const std::map<std::string, std::string>& now);

// The key of a benchmark name that holds a setup.
inline constexpr std::string_view kSetupKey = "setup";

}  // namespace dlb::report
