// dlbench-report against Google Benchmark's own compare.py, on compare.py's own inputs
// (tests/tools/report/data/gbench/, copied from google/benchmark tools/gbench/Inputs):
//  - DifferenceReport gives what report.py's unit tests expect (the values are copied from
//    tools/gbench/report.py, class by class; changes to its 4 printed decimals, the rest exactly
//    or to 1e-12);
//  - on every input pair, DifferenceReport after SortLikeComparePy equals what compare.py itself
//    wrote (data/gbench/expected/*.json, from comparepy_expected.sh);
//  - the verdict rows of `compare` agree with it where both compute the same thing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <string>

#include "tools/report/analyses/compare.h"
#include "tools/report/analyses/gbench_compare.h"
#include "tools/report/read/gbench_json.h"

namespace dlb::report {
namespace {

std::string Data(const std::string& name) { return std::string(DLB_REPORT_TEST_DATA) + "/" + name; }

std::vector<Entry> Entries(const std::string& name) {
  return ReadBenchmarkFile(Data(name)).entries;
}

const GbenchDiff* Find(const std::vector<GbenchDiff>& d, const std::string& name) {
  for (const GbenchDiff& x : d)
    if (x.name == name) return &x;
  return nullptr;
}

const CompareRow* FindRow(const CompareResult& r, const std::string& name) {
  for (const auto& row : r.rows)
    if (row.name == name) return &row;
  return nullptr;
}

// report.py's assert_measurements: times exactly, changes to 4 places.
struct M {
  double real, cpu, real_other, cpu_other, time, cpu_change;
};
void ExpectMeasurements(const GbenchDiff& d, const std::vector<M>& want) {
  ASSERT_EQ(d.measurements.size(), want.size()) << d.name;
  for (size_t i = 0; i < want.size(); ++i) {
    const GbenchMeasurement& m = d.measurements[i];
    EXPECT_DOUBLE_EQ(m.real_time, want[i].real) << d.name;
    EXPECT_DOUBLE_EQ(m.cpu_time, want[i].cpu) << d.name;
    EXPECT_DOUBLE_EQ(m.real_time_other, want[i].real_other) << d.name;
    EXPECT_DOUBLE_EQ(m.cpu_time_other, want[i].cpu_other) << d.name;
    EXPECT_NEAR(m.time, want[i].time, 5e-5) << d.name;
    EXPECT_NEAR(m.cpu, want[i].cpu_change, 5e-5) << d.name;
  }
}

void ExpectRel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-12 * std::max(1.0, std::fabs(want))) << what;
}

// TestGetUniqueBenchmarkNames: test3_run0.json has aggregates without aggregate_name, which the
// reader used to reject; compare.py reads them as runs of their name.
TEST(ComparePy, ReadsTest3Run0AndKeepsItsNames) {
  std::vector<Entry> e = Entries("gbench/test3_run0.json");
  std::vector<std::string> names;
  for (const Entry& x : e)
    if (std::find(names.begin(), names.end(), x.name) == names.end()) names.push_back(x.name);
  EXPECT_EQ(names, (std::vector<std::string>{"BM_One", "BM_Two", "short", "medium"}));
  EXPECT_TRUE(e[0].aggregate);
  EXPECT_TRUE(e[0].aggregate_name.empty());
  MergedRuns m = Merge({ReadBenchmarkFile(Data("gbench/test3_run0.json"))});
  ASSERT_EQ(m.benches.size(), 4u);
  EXPECT_EQ(m.benches[0].Repetitions(), 1u);  // BM_One: its unnamed aggregate is its one run
  EXPECT_EQ(m.benches[2].Repetitions(), 2u);  // short: two of them
}

// TestReportDifference.
TEST(ComparePy, Test1AsReportPyExpects) {
  auto d =
      DifferenceReport(Entries("gbench/test1_run1.json"), Entries("gbench/test1_run2.json"), false);
  const std::vector<std::pair<std::string, M>> want = {
      {"BM_SameTimes", {10, 10, 10, 10, 0, 0}},
      {"BM_2xFaster", {50, 50, 25, 25, -0.5, -0.5}},
      {"BM_2xSlower", {50, 50, 100, 100, 1, 1}},
      {"BM_1PercentFaster", {100, 100, 98.9999999, 98.9999999, -0.01, -0.01}},
      {"BM_1PercentSlower", {100, 100, 100.9999999, 100.9999999, 0.01, 0.01}},
      {"BM_10PercentFaster", {100, 100, 90, 90, -0.1, -0.1}},
      {"BM_10PercentSlower", {100, 100, 110, 110, 0.1, 0.1}},
      {"BM_100xSlower", {100, 100, 10000, 10000, 99, 99}},
      {"BM_100xFaster", {10000, 10000, 100, 100, -0.99, -0.99}},
      {"BM_10PercentCPUToTime", {100, 100, 110, 90, 0.1, -0.1}},
      {"BM_ThirdFaster", {100, 100, 66.665, 66.664, -0.3333, -0.3334}},
      {"BM_NotBadTimeUnit", {0.4, 0.5, 0.04, 0.6, -0.9, 0.2}},
      {"BM_hasLabel", {1, 1, 1, 1, 0, 0}},
  };
  ASSERT_EQ(d.size(), want.size() + 1);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(d[i].name, want[i].first);
    EXPECT_FALSE(d[i].utest);
    ExpectMeasurements(d[i], {want[i].second});
  }
  // BM_DifferentTimeUnit is s in one file and ns in the other: compare.py leaves it out.
  EXPECT_EQ(Find(d, "BM_DifferentTimeUnit"), nullptr);
  EXPECT_EQ(Find(d, "BM_hasLabel")->label, "a label");
  EXPECT_EQ(Find(d, "BM_hasLabel")->time_unit, "s");
  const GbenchDiff& g = d.back();
  EXPECT_EQ(g.name, kOverallGeomean);
  EXPECT_EQ(g.time_unit, "s");
  // What report.py checks of it (assert_measurements): its "_other" times there are stale, and
  // unchecked; compare.py's real output (EqualsComparePyOutputOnEveryPair) has the right ones.
  ExpectRel(g.measurements[0].real_time, 3.1622776601683826e-06, "geomean real");
  ExpectRel(g.measurements[0].cpu_time, 3.2130844755623912e-06, "geomean cpu");
  ExpectRel(g.measurements[0].time, -0.8112976497120911, "geomean time");
  ExpectRel(g.measurements[0].cpu, -0.7778551721181174, "geomean cpu change");
  // test_json_diff_report_pretty_printing: name, time and CPU columns as printed.
  Section s = DifferenceSection(d, false, 0.05);
  const std::vector<std::vector<std::string>> printed = {
      {"BM_SameTimes", "+0.0000", "+0.0000"},       {"BM_2xFaster", "-0.5000", "-0.5000"},
      {"BM_2xSlower", "+1.0000", "+1.0000"},        {"BM_1PercentFaster", "-0.0100", "-0.0100"},
      {"BM_1PercentSlower", "+0.0100", "+0.0100"},  {"BM_10PercentFaster", "-0.1000", "-0.1000"},
      {"BM_10PercentSlower", "+0.1000", "+0.1000"}, {"BM_100xSlower", "+99.0000", "+99.0000"},
      {"BM_100xFaster", "-0.9900", "-0.9900"},      {"BM_10PercentCPUToTime", "+0.1000", "-0.1000"},
      {"BM_ThirdFaster", "-0.3333", "-0.3334"},     {"BM_NotBadTimeUnit", "-0.9000", "+0.2000"},
      {"BM_hasLabel", "+0.0000", "+0.0000"},        {"OVERALL_GEOMEAN", "-0.8113", "-0.7779"},
  };
  const Table& t = s.tables.at(0);
  ASSERT_EQ(t.rows.size(), printed.size());
  for (size_t i = 0; i < printed.size(); ++i)
    for (size_t c = 0; c < 3; ++c) EXPECT_EQ(t.rows[i][c].Text(), printed[i][c]) << i;
}

// compare.py's filter_benchmark: entries whose name matches, the match replaced in the name.
std::vector<Entry> Filter(const std::vector<Entry>& in, const std::string& re,
                          const std::string& replacement) {
  std::regex r(re);
  std::vector<Entry> out;
  for (Entry e : in) {
    if (!std::regex_search(e.name, r)) continue;
    e.name = std::regex_replace(e.name, r, replacement);
    out.push_back(std::move(e));
  }
  return out;
}

// TestReportDifferenceBetweenFamilies.
TEST(ComparePy, Test2FamiliesAsReportPyExpects) {
  std::vector<Entry> all = Entries("gbench/test2_run.json");
  auto d = DifferenceReport(Filter(all, "BM_Z.ro", "."), Filter(all, "BM_O.e", "."), false);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].name, ".");
  ExpectMeasurements(d[0], {{10, 10, 5, 5, -0.5, -0.5}});
  EXPECT_EQ(d[1].name, "./4");
  ExpectMeasurements(d[1], {{40, 40, 20, 20, -0.5, -0.5}});
  EXPECT_EQ(d[2].name, "Prefix/.");
  ExpectMeasurements(d[2], {{20, 20, 10, 10, -0.5, -0.5}});
  EXPECT_EQ(d[3].name, "Prefix/./3");
  ExpectMeasurements(d[3], {{30, 30, 15, 15, -0.5, -0.5}});
  EXPECT_EQ(d[4].name, kOverallGeomean);
  ExpectRel(d[4].measurements[0].real_time, 2.213363839400641e-08, "geomean");
  ExpectRel(d[4].measurements[0].real_time_other, 1.1066819197003185e-08, "geomean other");
  ExpectRel(d[4].measurements[0].time, -0.5000000000000009, "geomean time");
}

// TestReportDifferenceWithUTest and ...WhileDisplayingAggregatesOnly.
TEST(ComparePy, Test3WithUTestAsReportPyExpects) {
  auto d = DifferenceReport(Entries("gbench/test3_run0.json"), Entries("gbench/test3_run1.json"));
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].name, "BM_One");
  ExpectMeasurements(d[0], {{10, 100, 9, 110, -0.1, 0.1}});
  EXPECT_FALSE(d[0].utest);
  EXPECT_EQ(d[1].name, "BM_Two");
  ExpectMeasurements(d[1], {{9, 90, 10, 89, 0.1111111111111111, -0.011111111111111112},
                            {8, 86, 7, 72, -0.125, -0.16279069767441862}});
  ASSERT_TRUE(d[1].utest);
  EXPECT_FALSE(d[1].utest->have_optimal_repetitions);
  EXPECT_NEAR(d[1].utest->cpu_pvalue, 0.6666666666666666, 1e-7);
  EXPECT_NEAR(d[1].utest->time_pvalue, 1.0, 1e-7);
  EXPECT_EQ(d[2].name, "short");
  ExpectMeasurements(
      d[2], {{8, 80, 7, 75, -0.125, -0.0625}, {8, 77, 4.54, 66.6, -0.4325, -0.13506493506493514}});
  ASSERT_TRUE(d[2].utest);
  EXPECT_NEAR(d[2].utest->cpu_pvalue, 0.2, 1e-7);
  EXPECT_NEAR(d[2].utest->time_pvalue, 0.7670968684102772, 1e-7);
  EXPECT_EQ(d[2].utest->repetitions, 2u);
  EXPECT_EQ(d[2].utest->repetitions_other, 3u);
  EXPECT_EQ(d[3].name, "medium");
  ExpectMeasurements(d[3], {{8, 80, 5, 53, -0.375, -0.3375}});
  EXPECT_FALSE(d[3].utest);
  const GbenchMeasurement& g = d[4].measurements.at(0);
  ExpectRel(g.real_time, 8.48528137423858e-09, "geomean real");
  ExpectRel(g.cpu_time, 8.441336246629233e-08, "geomean cpu");
  ExpectRel(g.real_time_other, 2.2405267593145244e-08, "geomean real other");
  ExpectRel(g.cpu_time_other, 2.5453661413660466e-08, "geomean cpu other");
  ExpectRel(g.time, 1.6404861082353634, "geomean time");
  ExpectRel(g.cpu, -0.6984640740519662, "geomean cpu change");

  // Printed with and without -a (test_json_diff_report_pretty_printing[_aggregates_only]).
  auto names = [](const Section& s) {
    std::vector<std::string> out;
    for (const auto& row : s.tables.at(0).rows) out.push_back(row[0].Text());
    return out;
  };
  EXPECT_EQ(names(DifferenceSection(d, false, 0.05)),
            (std::vector<std::string>{"BM_One", "BM_Two", "BM_Two", "BM_Two_pvalue", "short",
                                      "short", "short_pvalue", "medium", "OVERALL_GEOMEAN"}));
  Section agg = DifferenceSection(d, true, 0.05);
  EXPECT_EQ(names(agg), (std::vector<std::string>{"BM_One", "BM_Two_pvalue", "short", "short",
                                                  "short_pvalue", "OVERALL_GEOMEAN"}));
  const auto& pv = agg.tables.at(0).rows.at(1);
  EXPECT_EQ(pv[1].Text(), "1.0000");
  EXPECT_EQ(pv[2].Text(), "0.6667");
  EXPECT_EQ(pv.back().Text(),
            "U Test, Repetitions: 2 vs 2. WARNING: Results unreliable! 9+ repetitions "
            "recommended.");
}

// TestReportDifferenceForPercentageAggregates.
TEST(ComparePy, Test4PercentageAggregatesAsReportPyExpects) {
  auto d = DifferenceReport(Entries("gbench/test4_run0.json"), Entries("gbench/test4_run1.json"));
  ASSERT_EQ(d.size(), 1u);  // only aggregates: no geomean
  EXPECT_EQ(d[0].name, "whocares");
  EXPECT_EQ(d[0].time_unit, "ns");
  ExpectMeasurements(d[0], {{0.01, 0.10, 0.005, 0.15, -0.5, 0.5}});
  EXPECT_FALSE(d[0].utest);
}

// TestReportDifferenceWithUTestWhileDisplayingAggregatesOnly2: each file's one entry x 1000.
TEST(ComparePy, Test5ThousandRepetitionsAsReportPyExpects) {
  auto thousand = [](const std::string& f) {
    std::vector<Entry> e = Entries(f);
    return std::vector<Entry>(1000, e.at(0));
  };
  auto d = DifferenceReport(thousand("gbench/test5_run0.json"), thousand("gbench/test5_run1.json"));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].name, "BM_ManyRepetitions");
  EXPECT_EQ(d[0].time_unit, "s");
  ASSERT_TRUE(d[0].utest);
  EXPECT_TRUE(d[0].utest->have_optimal_repetitions);
  EXPECT_NEAR(d[0].utest->cpu_pvalue, 0.0, 1e-7);
  EXPECT_NEAR(d[0].utest->time_pvalue, 0.0, 1e-7);
  EXPECT_EQ(d[0].utest->repetitions, 1000u);
  const GbenchMeasurement& g = d[1].measurements.at(0);
  ExpectRel(g.real_time, 1.0, "geomean real");
  ExpectRel(g.cpu_time, 1000.000000000069, "geomean cpu");
  ExpectRel(g.real_time_other, 1000.000000000069, "geomean real other");
  ExpectRel(g.time, 999.000000000069, "geomean time");
  ExpectRel(g.cpu, -0.9990000000000001, "geomean cpu change");
  bool printed = false;
  Section s = DifferenceSection(d, false, 0.05);
  for (const auto& row : s.tables.at(0).rows)
    printed = printed || (row[0].Text() == "BM_ManyRepetitions_pvalue" &&
                          row[1].Text() == "0.0000" && row[2].Text() == "0.0000" &&
                          row.back().Text() == "U Test, Repetitions: 1000 vs 1000");
  EXPECT_TRUE(printed);
}

// TestReportSorting: test4_run.json's entries have no times (compare.py fails on it as input:
// KeyError 'real_time'; dlbench-report says so in one line), so the entries are built here.
TEST(ComparePy, SortsAsUtilSortBenchmarkResults) {
  std::ifstream in(Data("gbench/test4_run.json"));
  nlohmann::json j = nlohmann::json::parse(in);
  std::vector<Entry> entries;
  for (const auto& b : j["benchmarks"]) {
    Entry e;
    e.name = b["name"];
    e.run_type = b["run_type"] == "aggregate" ? RunType::kAggregate : RunType::kIteration;
    e.family_index = b.value("family_index", -1.0);
    e.per_family_instance_index = b.value("per_family_instance_index", -1.0);
    e.repetition_index = b.value("repetition_index", -1.0);
    entries.push_back(e);
  }
  const std::vector<std::string> want = {
      "99 family 0 instance 0 repetition 0", "98 family 0 instance 0 repetition 1",
      "97 family 0 instance 0 aggregate",    "96 family 0 instance 1 repetition 0",
      "95 family 0 instance 1 repetition 1", "94 family 0 instance 1 aggregate",
      "93 family 1 instance 0 repetition 0", "92 family 1 instance 0 repetition 1",
      "91 family 1 instance 0 aggregate",    "90 family 1 instance 1 repetition 0",
      "89 family 1 instance 1 repetition 1", "88 family 1 instance 1 aggregate"};
  std::mt19937 rng(7);
  for (int round = 0; round < 144; ++round) {
    std::shuffle(entries.begin(), entries.end(), rng);
    std::vector<Entry> sorted = SortLikeComparePy(entries);
    ASSERT_EQ(sorted.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(sorted[i].name, want[i]) << round;
  }
  try {
    ReadBenchmarkFile(Data("gbench/test4_run.json"));
    ADD_FAILURE() << "read an entry without times";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/benchmarks/0: missing \"real_time\""), std::string::npos)
        << e.what();
  }
}

// compare.py's own output (--dump_to_json) for each pair, as the command line runs it: both files
// sorted by sort_benchmark_results, then get_difference_report with the U test.
struct Pair {
  const char* expected;
  const char* base;
  const char* now;
};
const Pair kPairs[] = {
    {"test1", "gbench/test1_run1.json", "gbench/test1_run2.json"},
    {"test3", "gbench/test3_run0.json", "gbench/test3_run1.json"},
    {"test4", "gbench/test4_run0.json", "gbench/test4_run1.json"},
    {"test5", "gbench/test5_run0.json", "gbench/test5_run1.json"},
    {"aggregates_only", "aggregates_only_base.json", "aggregates_only_new.json"},
    {"compare", "compare_base.json", "compare_new.json"},
    {"dlbench_v2", "dlbench_v2_base.json", "dlbench_v2_new.json"},
};

const char* RunTypeName(RunType t) {
  switch (t) {
    case RunType::kIteration:
      return "iteration";
    case RunType::kAggregate:
      return "aggregate";
    case RunType::kAbsent:
      break;
  }
  return "";
}

TEST(ComparePy, EqualsComparePyOutputOnEveryPair) {
  for (const Pair& p : kPairs) {
    SCOPED_TRACE(p.expected);
    auto d =
        DifferenceReport(SortLikeComparePy(Entries(p.base)), SortLikeComparePy(Entries(p.now)));
    std::ifstream in(Data(std::string("gbench/expected/") + p.expected + ".json"));
    nlohmann::json want = nlohmann::json::parse(in);
    ASSERT_EQ(d.size(), want.size());
    for (size_t i = 0; i < d.size(); ++i) {
      const nlohmann::json& w = want[i];
      const GbenchDiff& g = d[i];
      SCOPED_TRACE(g.name);
      EXPECT_EQ(g.name, w["name"].get<std::string>());
      EXPECT_EQ(g.label, w["label"].get<std::string>());
      EXPECT_EQ(g.time_unit, w["time_unit"].get<std::string>());
      EXPECT_EQ(RunTypeName(g.run_type), w["run_type"].get<std::string>());
      EXPECT_EQ(g.aggregate_name, w["aggregate_name"].get<std::string>());
      ASSERT_EQ(g.measurements.size(), w["measurements"].size());
      for (size_t k = 0; k < g.measurements.size(); ++k) {
        const auto& m = g.measurements[k];
        const auto& wm = w["measurements"][k];
        ExpectRel(m.real_time, wm["real_time"], "real_time");
        ExpectRel(m.cpu_time, wm["cpu_time"], "cpu_time");
        ExpectRel(m.real_time_other, wm["real_time_other"], "real_time_other");
        ExpectRel(m.cpu_time_other, wm["cpu_time_other"], "cpu_time_other");
        ExpectRel(m.time, wm["time"], "time");
        ExpectRel(m.cpu, wm["cpu"], "cpu");
      }
      ASSERT_EQ(g.utest.has_value(), !w["utest"].empty());
      if (!g.utest) continue;
      EXPECT_EQ(g.utest->have_optimal_repetitions,
                w["utest"]["have_optimal_repetitions"].get<bool>());
      EXPECT_NEAR(g.utest->time_pvalue, w["utest"]["time_pvalue"].get<double>(), 1e-12);
      EXPECT_NEAR(g.utest->cpu_pvalue, w["utest"]["cpu_pvalue"].get<double>(), 1e-12);
      EXPECT_EQ(g.utest->repetitions, w["utest"]["nr_of_repetitions"].get<size_t>());
      EXPECT_EQ(g.utest->repetitions_other, w["utest"]["nr_of_repetitions_other"].get<size_t>());
    }
  }
}

// `compare`'s rows (one per benchmark, medians) agree with compare.py where both say the same
// thing: the change on a single run or on the "_median" aggregate row, and the p-values of the U
// test over the runs of a name.
TEST(ComparePy, VerdictRowsAgreeWithComparePy) {
  for (const Pair& p : kPairs) {
    SCOPED_TRACE(p.expected);
    FileData base = ReadBenchmarkFile(Data(p.base)), now = ReadBenchmarkFile(Data(p.now));
    CompareResult r = Compare(Merge({base}), Merge({now}), {});
    if (std::string(p.expected) == "test4") {
      // A percentage aggregate is no time: compare.py shows its change, `compare` no verdict.
      EXPECT_TRUE(r.rows.empty());
      EXPECT_EQ(r.not_compared, 1u);
      continue;
    }
    auto d = DifferenceReport(SortLikeComparePy(base.entries), SortLikeComparePy(now.entries));
    size_t checked = 0;
    for (const GbenchDiff& g : d) {
      if (g.name == kOverallGeomean) continue;
      const std::string suffix = "_median";
      bool median_row = g.aggregate_name == gbench::kMedian && g.name.size() > suffix.size() &&
                        g.name.compare(g.name.size() - suffix.size(), suffix.size(), suffix) == 0;
      std::string bench = median_row ? g.name.substr(0, g.name.size() - suffix.size()) : g.name;
      const CompareRow* row = FindRow(r, bench);
      if (g.utest) {
        ASSERT_NE(row, nullptr) << bench;
        EXPECT_NEAR(row->p, g.utest->time_pvalue, 1e-12) << bench;
        EXPECT_NEAR(row->cpu_p, g.utest->cpu_pvalue, 1e-12) << bench;
        ++checked;
      }
      bool single = g.measurements.size() == 1 && g.run_type != RunType::kAggregate && row &&
                    row->base_reps == 1 && row->new_reps == 1;
      if (median_row || single) {
        ASSERT_NE(row, nullptr) << bench;
        if (!std::isfinite(row->delta)) continue;  // failed on a side: compare.py compares 0s
        EXPECT_NEAR(row->delta, g.measurements[0].time, 1e-12) << bench;
        if (single) EXPECT_NEAR(row->cpu_delta, g.measurements[0].cpu, 1e-12) << bench;
        ++checked;
      }
    }
    EXPECT_GT(checked, 0u);
  }
  // Where they differ on purpose: a unit change is compared in ns, with a note.
  CompareResult r = Compare(Merge({ReadBenchmarkFile(Data("gbench/test1_run1.json"))}),
                            Merge({ReadBenchmarkFile(Data("gbench/test1_run2.json"))}), {});
  const CompareRow* unit = FindRow(r, "BM_DifferentTimeUnit");
  ASSERT_NE(unit, nullptr);
  EXPECT_NEAR(unit->delta, 1e-9 - 1, 1e-12);
  EXPECT_NE(unit->note.find("time unit s in base, ns in new"), std::string::npos) << unit->note;
}

}  // namespace
}  // namespace dlb::report
