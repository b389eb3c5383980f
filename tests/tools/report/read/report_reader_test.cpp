#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "fixtures/schema/schema.h"
#include "tools/report/analyses/compare.h"
#include "tools/report/analyses/gbench_compare.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/speedup.h"
#include "tools/report/analyses/summary.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report {
namespace {

namespace fs = std::filesystem;

std::string Wrap(const std::string& benchmarks) {
  return R"({"context": {"date": "2026-11-20T10:00:00+00:00", "host_name": "h", "num_cpus": 2,
             "caches": [{"type": "Data", "level": 1}], "load_avg": [0.1]},
             "benchmarks": [)" +
         benchmarks + "]}";
}

// The error text, or "" when it parsed.
std::string ErrorOf(const std::string& text) {
  try {
    ParseBenchmarkJson(text, "in.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The merged context takes each key from the first file that gives it; a file that could not
// ("not measured ...", "not loaded") leaves the gap to a later one.
TEST(Reader, MergedContextTakesAMeasuredValueOverAnEarlierGap) {
  FileData comm, gemm, other;
  comm.context["gpu_peak_measured"] = "not measured (this family does no arithmetic)";
  comm.context["cudnn_version"] = "not loaded";
  comm.context["gpu_name"] = "NVIDIA H100";
  gemm.context["gpu_peak_measured"] = "bf16 768.3 TFLOP/s (cuBLASLt ...)";
  gemm.context["cudnn_version"] = "9.14.0";
  gemm.context["gpu_name"] = "NVIDIA H200";
  other.context["gpu_peak_measured"] = "f32 51.0 TFLOP/s (cuBLASLt ...)";
  const MergedRuns m = Merge({comm, gemm, other});
  EXPECT_EQ(m.context.at("gpu_peak_measured"), "bf16 768.3 TFLOP/s (cuBLASLt ...)");
  EXPECT_EQ(m.context.at("cudnn_version"), "9.14.0");
  EXPECT_EQ(m.context.at("gpu_name"), "NVIDIA H100");  // a value, kept: the first file's
  // Only gaps: the first file's words stay.
  EXPECT_EQ(Merge({comm}).context.at("gpu_peak_measured"),
            "not measured (this family does no arithmetic)");
}

// A run measures the peaks of its cases' dtypes only: the merged measured peak takes each dtype's
// figure from the first file that measured it.
TEST(Reader, MergedMeasuredPeakTakesEachDtypeFromTheFileThatMeasuredIt) {
  FileData bf16, f16;
  bf16.context["gpu_peak_measured"] =
      "f32 not measured (no f32 case in this run); bf16 768.3 TFLOP/s (cuBLASLt (a; b)); f16 not "
      "measured (no f16 case in this run)";
  f16.context["gpu_peak_measured"] =
      "f32 not measured (no f32 case in this run); bf16 not measured (no bf16 case in this run); "
      "f16 770.1 TFLOP/s (cuBLASLt ...)";
  EXPECT_EQ(Merge({bf16, f16}).context.at("gpu_peak_measured"),
            "f32 not measured (no f32 case in this run); bf16 768.3 TFLOP/s (cuBLASLt (a; b)); "
            "f16 770.1 TFLOP/s (cuBLASLt ...)");
}

// Google Benchmark's cv of a counter whose mean is 0 is NaN (Python's json reads it): the counter
// has no value there, and the file is read.
TEST(Reader, ANonFiniteCounterIsNoValueAndTheFileIsRead) {
  FileData f = ParseBenchmarkJson(Wrap(R"(
    {"name": "BM_a", "run_type": "iteration", "real_time": 1.5, "time_unit": "us",
     "throttled": 0, "label": "NaN \"Infinity\" in a string stays"},
    {"name": "BM_a_cv", "run_name": "BM_a", "run_type": "aggregate", "aggregate_name": "cv",
     "real_time": 0.1, "time_unit": "us", "throttled": NaN, "other": -Infinity, "x": 2})"),
                                  "in.json");
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[0].label, "NaN \"Infinity\" in a string stays");
  const auto& c = f.entries[1].counters;
  ASSERT_EQ(c.size(), 1u);  // throttled and other have no value
  EXPECT_EQ(c[0].first, "x");
  EXPECT_EQ(c[0].second, 2);
}

// NaN, -NaN, Infinity and -Infinity in a time, as Google Benchmark writes them and compare.py
// reads them: an aggregate keeps the value; a run measured nothing and is a failure.
TEST(Reader, ANonFiniteTimeIsKeptByAnAggregateAndFailsARun) {
  FileData f = ParseBenchmarkJson(Wrap(R"(
    {"name": "BM_a", "run_type": "iteration", "real_time": NaN, "cpu_time": 1, "time_unit": "us"},
    {"name": "BM_b", "run_type": "iteration", "real_time": 2, "cpu_time": 2, "time_unit": "us"},
    {"name": "BM_b_cv", "run_name": "BM_b", "run_type": "aggregate", "aggregate_name": "cv",
     "real_time": -NaN, "cpu_time": Infinity, "time_unit": "us"},
    {"name": "BM_b_zz", "run_name": "BM_b", "run_type": "aggregate", "aggregate_name": "zz",
     "real_time": -Infinity, "cpu_time": 1, "time_unit": "us"})"),
                                  "in.json");
  ASSERT_EQ(f.entries.size(), 4u);
  EXPECT_EQ(f.entries[0].status, Status::kFailed);
  EXPECT_EQ(f.entries[0].message, "real_time NaN in the file: no time");
  EXPECT_EQ(f.entries[1].status, Status::kMeasured);
  EXPECT_TRUE(std::isnan(f.entries[2].real_ns));
  EXPECT_TRUE(std::isinf(f.entries[2].cpu_ns));
  EXPECT_EQ(f.entries[3].real_ns, -std::numeric_limits<double>::infinity());
  const MergedRuns m = Merge({f});
  ASSERT_EQ(m.benches.size(), 2u);
  EXPECT_FALSE(m.benches[0].measured());
  EXPECT_TRUE(m.benches[1].measured());
  EXPECT_EQ(m.benches[1].MedianNs(), 2000);
}

// A context's booleans are values (Google Benchmark's cpu_scaling_enabled), not their type.
TEST(Reader, ContextBooleansAreKeptAsValues) {
  FileData f = ParseBenchmarkJson(
      R"({"context": {"cpu_scaling_enabled": false, "dlbench_cold": true, "n": 2},
          "benchmarks": [{"name": "a", "real_time": 1, "time_unit": "ns"}]})",
      "in.json");
  EXPECT_EQ(f.context.at("cpu_scaling_enabled"), "false");
  EXPECT_EQ(f.context.at("dlbench_cold"), "true");
  EXPECT_EQ(f.context.at("n"), "2");
  EXPECT_EQ(ReadBenchmarkFile(std::string(DLB_REPORT_TEST_DATA) + "/gbench/test4_run0.json")
                .context.at("cpu_scaling_enabled"),
            "false");
}

TEST(Reader, GoogleBenchmark17RepetitionsAndAggregates) {
  FileData f = ParseBenchmarkJson(Wrap(R"(
    {"name": "BM_a/8", "run_name": "BM_a/8", "run_type": "iteration", "repetitions": 2,
     "repetition_index": 0, "threads": 1, "iterations": 10, "real_time": 1.5, "cpu_time": 1.4,
     "time_unit": "us", "items_per_second": 5.0},
    {"name": "BM_a/8", "run_name": "BM_a/8", "run_type": "iteration", "repetitions": 2,
     "repetition_index": 1, "threads": 1, "iterations": 10, "real_time": 2.5, "cpu_time": 2.4,
     "time_unit": "us", "items_per_second": 7.0},
    {"name": "BM_a/8_mean", "run_name": "BM_a/8", "run_type": "aggregate", "repetitions": 2,
     "threads": 1, "aggregate_name": "mean", "iterations": 2, "real_time": 2.0, "cpu_time": 1.9,
     "time_unit": "us"},
    {"name": "BM_a/8_cv", "run_name": "BM_a/8", "run_type": "aggregate", "repetitions": 2,
     "threads": 1, "aggregate_name": "cv", "iterations": 2, "real_time": 0.35, "cpu_time": 0.3,
     "time_unit": "us"},
    {"name": "BM_b_BigO", "run_name": "BM_b", "run_type": "aggregate", "aggregate_name": "BigO",
     "cpu_coefficient": 1.0, "real_coefficient": 1.0, "big_o": "N", "time_unit": "ns"},
    {"name": "BM_b_RMS", "run_name": "BM_b", "run_type": "aggregate", "aggregate_name": "RMS",
     "rms": 0.1}
  )"),
                                  "in.json");
  ASSERT_EQ(f.entries.size(), 4u);
  EXPECT_EQ(f.context.at("host_name"), "h");
  EXPECT_EQ(f.context.at("num_cpus"), "2");
  EXPECT_DOUBLE_EQ(f.entries[0].real_ns, 1500);
  EXPECT_DOUBLE_EQ(f.entries[0].cpu_ns, 1400);
  EXPECT_TRUE(f.entries[2].aggregate);
  EXPECT_EQ(f.entries[2].run_name, "BM_a/8");
  EXPECT_TRUE(f.entries[3].percentage);  // cv stays a fraction
  EXPECT_DOUBLE_EQ(f.entries[3].real_ns, 0.35);
  MergedRuns m = Merge({f});
  ASSERT_EQ(m.benches.size(), 1u);
  const Bench& b = m.benches[0];
  EXPECT_EQ(b.family, "BM_a");
  EXPECT_DOUBLE_EQ(b.MedianNs(), 2000);
  EXPECT_DOUBLE_EQ(b.Counter("items_per_second"), 6);
  EXPECT_EQ(b.Repetitions(), 2u);
}

TEST(Reader, SkipsOf17And18AndTheirStates) {
  FileData f = ParseBenchmarkJson(Wrap(R"(
    {"name": "gemm/cpu/onednn/sq.64/dt:f16/manual_time", "run_type": "iteration",
     "error_occurred": true, "error_message": "unsupported: no avx512_fp16",
     "iterations": 0, "real_time": 0, "cpu_time": 0, "time_unit": "ns"},
    {"name": "gemm/gpu/cublas/sq.64/dt:f16/manual_time", "run_type": "iteration",
     "skipped": true, "skip_message": "unsupported: no GPU", "iterations": 0},
    {"name": "conv/gpu/cudnn/w/bs:512/manual_time", "run_type": "iteration",
     "error_occurred": true, "error_message": "out of memory: needed 9 GiB, had 8 GiB"}
  )"),
                                  "in.json");
  ASSERT_EQ(f.entries.size(), 3u);
  EXPECT_EQ(f.entries[0].status, Status::kUnsupported);
  EXPECT_EQ(f.entries[1].status, Status::kUnsupported);
  EXPECT_EQ(f.entries[1].message, "unsupported: no GPU");
  EXPECT_EQ(f.entries[2].status, Status::kFailed);
  MergedRuns m = Merge({f});
  EXPECT_EQ(m.benches[0].family, "gemm");
  EXPECT_FALSE(m.benches[2].measured());
}

// A case a --dlb_case_timeout ended (the entry fixtures/run/output.cpp writes for it) is a failure,
// and the cases before it in the same file read as usual.
TEST(Reader, ATimedOutCaseIsAFailure) {
  FileData f = ParseBenchmarkJson(Wrap(R"(
    {"name": "gemm/cpu/onednn/sq.64/dt:f32/manual_time", "run_type": "iteration",
     "iterations": 10, "real_time": 5, "cpu_time": 5, "time_unit": "us"},
    {"name": "gemm/cpu/onednn/sq.128/dt:f32/manual_time",
     "run_name": "gemm/cpu/onednn/sq.128/dt:f32/manual_time", "run_type": "iteration",
     "repetitions": 1, "repetition_index": 0, "threads": 1, "iterations": 0, "real_time": 0,
     "cpu_time": 0, "time_unit": "us", "error_occurred": true,
     "error_message": "timed out: ran past --dlb_case_timeout=2 s"}
  )"),
                                  "in.json");
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[0].status, Status::kMeasured);
  EXPECT_EQ(f.entries[1].status, Status::kFailed);
  EXPECT_EQ(f.entries[1].message.rfind(schema::kStatusTimedOut, 0), 0u);
}

TEST(Reader, Version19AggregateUnitAndTimeUnits) {
  FileData f = ParseBenchmarkJson(Wrap(R"(
    {"name": "a", "family_index": 0, "per_family_instance_index": 0, "run_name": "a",
     "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
     "iterations": 1, "real_time": 2, "cpu_time": 2, "time_unit": "s"},
    {"name": "b", "run_type": "iteration", "real_time": 2, "time_unit": "ms"},
    {"name": "c_cv", "run_name": "c", "run_type": "aggregate", "aggregate_name": "cv",
     "aggregate_unit": "percentage", "real_time": 0.02, "cpu_time": 0.02, "time_unit": "ns"},
    {"name": "c_median", "run_name": "c", "run_type": "aggregate", "aggregate_name": "median",
     "aggregate_unit": "time", "real_time": 4, "cpu_time": 4, "time_unit": "us",
     "flop_per_s": 1e12}
  )"),
                                  "in.json");
  MergedRuns m = Merge({f});
  EXPECT_DOUBLE_EQ(m.benches[0].MedianNs(), 2e9);
  EXPECT_DOUBLE_EQ(m.benches[1].MedianNs(), 2e6);
  EXPECT_DOUBLE_EQ(m.benches[2].MedianNs(), 4000);
  EXPECT_DOUBLE_EQ(m.benches[2].Cv(), 0.02);
  EXPECT_DOUBLE_EQ(m.benches[2].Counter("flop_per_s"), 1e12);
}

TEST(Reader, MergeRulePoolsRepetitionsAcrossFiles) {
  auto one = [](double t, const char* extra = "") {
    return Wrap(std::string(R"({"name": "x/cpu", "run_type": "iteration", "real_time": )") +
                std::to_string(t) + R"(, "time_unit": "ns")" + extra + "}");
  };
  FileData a = ParseBenchmarkJson(one(1), "a.json"), b = ParseBenchmarkJson(one(3), "b.json");
  FileData c = ParseBenchmarkJson(Wrap(R"({"name": "x/cpu", "error_occurred": true,
                                           "error_message": "boom"})"),
                                  "c.json");
  MergedRuns m = Merge({a, c, b});
  ASSERT_EQ(m.benches.size(), 1u);
  EXPECT_EQ(m.benches[0].Repetitions(), 2u);
  EXPECT_DOUBLE_EQ(m.benches[0].MedianNs(), 2);
  EXPECT_TRUE(m.benches[0].measured());  // a measurement beats a failure
  EXPECT_EQ(m.benches[0].files.size(), 3u);
  MergedRuns only_failed = Merge({c});
  EXPECT_EQ(only_failed.benches[0].status, Status::kFailed);
  EXPECT_EQ(only_failed.benches[0].message, "boom");
}

TEST(Reader, BadInputIsOneLineNamingThePlace) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "in.json:1:1: empty file"},
      {"{\"benchmarks\": [", "in.json:1:17: syntax truncated JSON"},
      {Wrap(R"({"name": "a", "real_time": 1, "time_unit": "ns"})").substr(0, 150), "truncated"},
      {"[1, 2]", "in.json:/: the top level is an array"},
      {"42", "in.json:/: the top level is a number"},
      {R"({"context": {}})", "in.json:/benchmarks: missing"},
      {R"({"benchmarks": []})", "in.json:/benchmarks: no benchmarks"},
      {R"({"benchmarks": {}})", "in.json:/benchmarks: expected an array"},
      {R"({"benchmarks": [1]})", "in.json:/benchmarks/0: expected an object"},
      {Wrap(R"({"real_time": 1, "time_unit": "ns"})"), "in.json:/benchmarks/0: missing \"name\""},
      {Wrap(R"({"name": 5, "real_time": 1, "time_unit": "ns"})"),
       "in.json:/benchmarks/0/name: expected a string, got a number"},
      {Wrap(R"({"name": "a", "real_time": "1", "time_unit": "ns"})"),
       "in.json:/benchmarks/0/real_time: expected a number, got a string"},
      {Wrap(R"({"name": "a", "real_time": [1], "time_unit": "ns"})"),
       "in.json:/benchmarks/0/real_time: expected a scalar, got an array"},
      {Wrap(R"({"name": "a", "real_time": null, "time_unit": "ns"})"),
       "/benchmarks/0/real_time: expected a number, got a null"},
      {Wrap(R"({"name": "a", "time_unit": "ns"})"), "/benchmarks/0: missing \"real_time\""},
      {Wrap(R"({"name": "a", "real_time": 1})"), "/benchmarks/0: missing \"time_unit\""},
      {Wrap(R"({"name": "a", "real_time": 1, "time_unit": "fortnights"})"),
       "/benchmarks/0/time_unit: unknown time unit 'fortnights'"},
      {Wrap(R"({"name": "a", "iterations": NaN, "real_time": 1, "time_unit": "ns"})"),
       "NaN or Infinity"},
      {Wrap(R"({"name": "a", "iterations": Infinity, "real_time": 1, "time_unit": "ns"})"),
       "NaN or Infinity"},
      {Wrap(R"({"name": "a", "real_time": nan, "time_unit": "ns"})"), "NaN or Infinity"},
      {Wrap(R"({"name": "a", "real_time": "fast", "time_unit": "ns"})"),
       "/benchmarks/0/real_time: expected a number, got a string"},
      {Wrap(R"({"name": "a", "real_time": 1e999, "time_unit": "ns"})"),
       "/benchmarks/0/real_time: not a finite number"},
      {Wrap(R"({"name": "a", "real_time": 1, "time_unit": "ns", "c": 1e400})"),
       "/benchmarks/0/c: not a finite number"},
      {Wrap(R"({"name": "a", "run_type": "sometimes", "real_time": 1, "time_unit": "ns"})"),
       "/benchmarks/0/run_type: unknown run_type"},
      {Wrap(R"({"name": "a", "error_occurred": "yes"})"),
       "/benchmarks/0/error_occurred: expected true or false"},
  };
  for (const auto& [text, want] : cases) {
    std::string err = ErrorOf(text);
    EXPECT_NE(err.find(want), std::string::npos) << "input: " << text << "\nerror: " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// A file over 4 MB: every entry in order, and an error deep inside named exactly.
TEST(Reader, LargeFilesKeepEveryEntryAndNameErrorsExactly) {
  std::string b;
  for (int i = 0; i < 40000; ++i) {
    if (i) b += ",\n";
    b += R"({"name": "gemm/cpu/onednn/w)" + std::to_string(i) +
         R"(/manual_time", "run_type": "iteration", "label": "a \"quoted\" {brace} [x]\\",)"
         R"( "real_time": )" +
         std::to_string(i + 1) + R"(, "time_unit": "ns", "flop_per_s": 2})";
  }
  std::string text = Wrap(b);
  ASSERT_GT(text.size(), 4u << 20);
  FileData f = ParseBenchmarkJson(text, "big.json");
  ASSERT_EQ(f.entries.size(), 40000u);
  for (int i = 0; i < 40000; i += 997) {
    EXPECT_EQ(f.entries[i].name, "gemm/cpu/onednn/w" + std::to_string(i) + "/manual_time");
    EXPECT_DOUBLE_EQ(f.entries[i].real_ns, i + 1);
  }
  EXPECT_EQ(f.entries[5].label, "a \"quoted\" {brace} [x]\\");
  EXPECT_EQ(f.context.at("host_name"), "h");
  // An error deep inside: the exact place.
  std::string bad = text;
  size_t at = bad.find("\"real_time\": 30001,");
  bad.replace(at, 19, "\"real_time\": nan,  ");
  std::string err = ErrorOf(bad);
  EXPECT_NE(err.find("NaN or Infinity"), std::string::npos) << err;
  EXPECT_EQ(err.rfind("in.json:30003:", 0), 0u) << err;
  std::string missing_comma = text;
  size_t cut = missing_comma.find(",\n", missing_comma.size() / 2);
  missing_comma[cut] = ' ';
  EXPECT_NE(ErrorOf(missing_comma).find("syntax"), std::string::npos);
}

// Real output of dlbench's bench_gemm: Google Benchmark 1.7.1 (this machine's CPU) and 1.8.3 (the
// H100 host). Our median over repetitions equals Google Benchmark's own median aggregate.
TEST(Reader, RealGoogleBenchmark171And183Output) {
  for (const char* name : {"real_gb171_cpu_gemm.json", "real_gb183_h100_gemm.json"}) {
    FileData f = ReadBenchmarkFile(std::string(DLB_REPORT_TEST_DATA) + "/" + name);
    MergedRuns m = Merge({f});
    ASSERT_FALSE(m.benches.empty()) << name;
    for (const Bench& b : m.benches) {
      ASSERT_TRUE(b.measured()) << b.name;
      ASSERT_TRUE(b.aggregates.count("median")) << b.name;
      EXPECT_NEAR(b.MedianNs() / b.aggregates.at("median"), 1, 1e-9) << b.name;
      EXPECT_NEAR(b.Cv(), b.aggregates.at("cv"), 1e-6) << b.name;
      EXPECT_GT(b.Counter("flop_per_s"), 0) << b.name;
      ASSERT_TRUE(b.parsed) << b.name;
      EXPECT_EQ(b.family, "gemm");
    }
  }
  MergedRuns h100 =
      Merge({ReadBenchmarkFile(std::string(DLB_REPORT_TEST_DATA) + "/real_gb183_h100_gemm.json")});
  // 3 sizes x 2 dtypes, each oneDNN against cuBLAS and cuBLASLt, plus the best pair.
  auto rows = SpeedupRows(h100);
  EXPECT_EQ(rows.size(), 18u);
  for (const auto& r : rows) {
    EXPECT_GT(r.speedup, 10) << r.pair_key;
    EXPECT_TRUE(r.has_interval) << r.pair_key;  // 5 x 5 repetitions
  }
}

// Every input of compare.py's own tests reads, except test4_run.json, whose entries have no times
// (compare.py fails on it too); that one is rejected in one line.
TEST(Reader, ReadsWhatComparePyReads) {
  for (const char* name : {"test1_run1", "test1_run2", "test2_run", "test3_run0", "test3_run1",
                           "test4_run0", "test4_run1", "test5_run0", "test5_run1"}) {
    FileData f = ReadBenchmarkFile(std::string(DLB_REPORT_TEST_DATA) + "/gbench/" + name + ".json");
    EXPECT_FALSE(f.entries.empty()) << name;
  }
  // test3_run0: "aggregate" entries that name no statistic are runs of their name.
  FileData t3 = ReadBenchmarkFile(std::string(DLB_REPORT_TEST_DATA) + "/gbench/test3_run0.json");
  ASSERT_EQ(t3.entries.size(), 7u);
  EXPECT_EQ(t3.entries[0].run_type, RunType::kAggregate);
  EXPECT_TRUE(t3.entries[0].IsSample());
  EXPECT_EQ(t3.entries[5].run_type, RunType::kIteration);
  EXPECT_EQ(t3.entries[1].run_type, RunType::kAbsent);
  MergedRuns m = Merge({t3});
  EXPECT_DOUBLE_EQ(m.benches[0].MedianNs(), 10);
  EXPECT_TRUE(m.benches[0].measured());
  // The times as written stay for compare.py's view.
  FileData t1 = ReadBenchmarkFile(std::string(DLB_REPORT_TEST_DATA) + "/gbench/test1_run1.json");
  const Entry& s = t1.entries.at(11);  // BM_NotBadTimeUnit (BigO and RMS are dropped)
  EXPECT_EQ(s.name, "BM_NotBadTimeUnit");
  EXPECT_EQ(s.time_unit, "s");
  EXPECT_DOUBLE_EQ(s.real_time, 0.4);
  EXPECT_DOUBLE_EQ(s.real_ns, 0.4e9);
  EXPECT_TRUE(s.comparable);
}

// dlbench's result fields (fixtures/schema/schema.h), spelled here through the schema as the
// harness does.
std::string Result(const std::string& fields) {
  return R"(, ")" + std::string(schema::kResult) + R"(": )" + fields;
}

std::string Key(std::string_view k) { return "\"" + std::string(k) + "\""; }

TEST(Reader, DlbenchResultFields) {
  const std::string verification =
      "{" + Key(schema::kDisposition) + ": \"" + std::string(schema::kMistrusted) + "\", " +
      Key(schema::kError) + ": 3.1e-06, " + Key(schema::kTolerance) + ": 1e-05, " +
      Key(schema::kMetric) + ": \"rel_l2\", " + Key(schema::kChecked) + ": 4096, " +
      Key(schema::kOf) + ": 67108864, " + Key(schema::kDetail) + ": \"above the peak \u2264\", " +
      "\"later\": {\"x\": [1]}}";
  const std::string fields = "{" + Key(schema::kNetwork) + ": \"resnet18\", " +
                             Key(schema::kWorkload) + ": \"resnet18.layer1.conv3x3\", " +
                             Key(schema::kVerification) + ": " + verification + "}";
  std::string entry =
      R"({"name": "conv/gpu/cudnn/resnet18.layer1.conv3x3/bs:64/dt:f32/manual_time",)"
      R"( "real_time": 1, "time_unit": "ms")" +
      Result(fields) + R"(, "flop_per_s": 5})";
  {
    std::string b;
    for (int i = 0; i < 8; ++i) b += (i ? "," : "") + entry;
    FileData f = ParseBenchmarkJson(Wrap(b), "in.json");
    ASSERT_EQ(f.entries.size(), 8u);
    const ResultFields& e = f.entries[3].fields();
    EXPECT_EQ(e.network, "resnet18");
    EXPECT_EQ(e.workload, "resnet18.layer1.conv3x3");
    EXPECT_EQ(e.verification.disposition, schema::kMistrusted);
    EXPECT_TRUE(e.verification.doubtful());
    EXPECT_DOUBLE_EQ(e.verification.error, 3.1e-06);
    EXPECT_DOUBLE_EQ(e.verification.tolerance, 1e-05);
    EXPECT_EQ(e.verification.metric, "rel_l2");
    EXPECT_DOUBLE_EQ(e.verification.checked, 4096);
    EXPECT_DOUBLE_EQ(e.verification.of, 67108864);
    EXPECT_EQ(e.verification.detail, "above the peak \u2264");
    EXPECT_EQ(f.entries[0].result, f.entries[1].result);  // one object for equal fields
    ASSERT_EQ(f.entries[3].counters.size(),
              1u);  // the object is no counter, and flop_per_s after it is one
    MergedRuns m = Merge({f});
    EXPECT_EQ(m.benches[0].network, "resnet18");
    EXPECT_EQ(m.benches[0].verification.disposition, schema::kMistrusted);
  }
  // JSON without the object (anyone's, and dlbench's before it): nothing known, nothing guessed.
  FileData old = ParseBenchmarkJson(
      Wrap(R"({"name": "gemm/cpu/onednn/square.64/dt:f32/manual_time", "real_time": 1,)"
           R"( "time_unit": "ns", "label": "verified rel-L2 1e-07 <= 1e-05"})"),
      "old.json");
  EXPECT_FALSE(old.entries[0].result);
  EXPECT_TRUE(old.entries[0].fields().network.empty());
  EXPECT_FALSE(old.entries[0].fields().verification.known());
  EXPECT_FALSE(old.entries[0].fields().verification.doubtful());
  // null stands for absent; unknown fields are kept for later versions and ignored.
  FileData nulls = ParseBenchmarkJson(
      Wrap(R"({"name": "a", "real_time": 1, "time_unit": "ns")" +
           Result("{" + Key(schema::kNetwork) + ": null, \"future\": [1, {}], " +
                  Key(schema::kVerification) + ": {" + Key(schema::kError) + ": null}}") +
           "}"),
      "n.json");
  EXPECT_TRUE(nulls.entries[0].fields().network.empty());
  EXPECT_TRUE(std::isnan(nulls.entries[0].fields().verification.error));
}

TEST(Reader, BadDlbenchFieldsAreOneLineNamingThePlace) {
  auto entry = [](const std::string& fields) {
    return Wrap(R"({"name": "a", "real_time": 1, "time_unit": "ns")" + Result(fields) + "}");
  };
  const std::pair<std::string, std::string> cases[] = {
      {entry("\"x\""), "in.json:/benchmarks/0/dlbench: expected an object, got a string"},
      {entry("[1]"), "in.json:/benchmarks/0/dlbench: expected an object, got an array"},
      {entry("{" + Key(schema::kNetwork) + ": 5}"),
       "in.json:/benchmarks/0/dlbench/network: expected a string, got a number"},
      {entry("{" + Key(schema::kWorkload) + ": {}}"),
       "in.json:/benchmarks/0/dlbench/workload: expected a string, got an object"},
      {entry("{" + Key(schema::kVerification) + ": \"verified\"}"),
       "in.json:/benchmarks/0/dlbench/verification: expected an object, got a string"},
      {entry("{" + Key(schema::kVerification) + ": {" + Key(schema::kError) + ": \"small\"}}"),
       "in.json:/benchmarks/0/dlbench/verification/error: expected a number, got a string"},
      {entry("{" + Key(schema::kVerification) + ": {" + Key(schema::kDisposition) + ": true}}"),
       "in.json:/benchmarks/0/dlbench/verification/disposition: expected a string, got a boolean"},
  };
  for (const auto& [text, want] : cases) {
    {
      std::string err;
      try {
        ParseBenchmarkJson(text, "in.json");
      } catch (const InputError& e) {
        err = e.what();
      }
      EXPECT_NE(err.find(want), std::string::npos) << "input: " << text << "\nerror: " << err;
    }
  }
}

TEST(Reader, MissingFile) {
  try {
    ReadBenchmarkFile("/nonexistent/x.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/x.json: cannot open: No such file or directory");
  }
}

TEST(Reader, IgnoresWhatItDoesNotKnow) {
  FileData f = ParseBenchmarkJson(
      R"({"extra": {"a": [1, {"b": null}]}, "context": {"nested": {"x": 1}},
          "benchmarks": [{"name": "a", "real_time": 1, "time_unit": "ns", "note": "hi",
                          "obj": {"k": [1, 2]}, "flag": true, "n": null}]})",
      "in.json");
  ASSERT_EQ(f.entries.size(), 1u);
  EXPECT_TRUE(f.entries[0].counters.empty());
}

// Inputs the fuzzer found (and the seed corpus) go through the reader and the analyses: each
// either parses or is rejected with InputError; nothing crashes.
TEST(Reader, ReplaysFuzzCorpus) {
  fs::path dir = fs::path(DLB_REPORT_TEST_DATA) / "fuzz";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      FileData f = ParseBenchmarkJson(ss.str(), entry.path().string());
      MergedRuns m = Merge({f});
      Summary(m, {"x"});
      FullReport(m, {"x"});
      Compare(m, m, {});
      DifferenceReport(SortLikeComparePy(f.entries), f.entries);
    } catch (const InputError&) {
    }
    ++n;
  }
  EXPECT_GT(n, 5);
}

}  // namespace
}  // namespace dlb::report
