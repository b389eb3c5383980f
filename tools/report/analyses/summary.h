// summary: a table per family (median, CV, counters, verification), then the cases not measured;
// and what every subcommand's notes share (the context line, the labels).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

struct SummaryFamily {
  std::string family;
  std::vector<std::string> counters;  // every counter of the family, the common ones first
  std::vector<const Bench*> benches;  // measured, in first-seen order
  bool verification = false;          // some bench has a known disposition
  std::vector<std::string> metrics;   // of their errors and tolerances
};
struct SummaryResult {
  std::vector<SummaryFamily> families;
  std::vector<const Bench*> not_measured;  // unsupported and failed
  size_t total = 0, measured = 0, unsupported = 0, failed = 0;
  std::map<std::string, size_t> dispositions;  // of measured benches that have one
};
SummaryResult ComputeSummary(const MergedRuns& runs);
// A table per family (median, CV, counters, verification), then unsupported and failed cases.
std::vector<Section> SummarySections(const SummaryResult& summary);
// Its two parts: the table per family, and the unsupported and failed cases.
std::vector<Section> FamilySummarySections(const SummaryResult& summary);
Section NotMeasuredSection(const SummaryResult& summary);
// "benchmark | label": the prose of each result, kept out of the tables; collapsed in HTML.
Section LabelSection(const MergedRuns& runs);
Document Summary(const MergedRuns& runs, const std::vector<std::string>& inputs);

// "host, CPU, GPU, date, revision" line from the context, for the notes.
std::string ContextLine(const std::map<std::string, std::string>& context);

}  // namespace dlb::report
