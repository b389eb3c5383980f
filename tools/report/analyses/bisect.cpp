#include "tools/report/analyses/bisect.h"

#include <cmath>

#include "tools/report/analyses/common.h"
#include "tools/report/analyses/repro.h"
#include "tools/report/analyses/stats.h"

namespace dlb::report {

namespace {

// What Google Benchmark appends to a registered name: the time it reports.
constexpr const char* kTimeSuffixes[] = {"/manual_time", "/real_time"};

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string CaseBaseName(const std::string& name) {
  for (const char* suffix : kTimeSuffixes)
    if (EndsWith(name, suffix)) return name.substr(0, name.size() - std::string(suffix).size());
  return name;
}

std::string CaseFamily(const std::string& name) { return name.substr(0, name.find('/')); }

std::string CaseFilter(const std::string& name) {
  // Only ERE's special characters: libstdc++'s std::regex (extended), which Google Benchmark
  // uses, rejects an escaped ordinary character such as '\:'.
  std::string out = "^";
  for (char c : CaseBaseName(name)) {
    if (std::string_view(".[]{}()\\*+?^$|").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  out += "(";
  for (size_t i = 0; i < std::size(kTimeSuffixes); ++i)
    out += std::string(i ? "|" : "") + kTimeSuffixes[i];
  return out + ")?$";
}

std::string CleanRevision(const std::string& rev) {
  return EndsWith(rev, "-dirty") ? rev.substr(0, rev.size() - 6) : rev;
}

std::string BisectCommand(const std::string& good, const std::string& bad,
                          const std::string& case_name) {
  return "dlbench-report bisect --good " + ShellQuote(CleanRevision(good)) + " --bad " +
         ShellQuote(CleanRevision(bad)) + " --case " + ShellQuote(CaseBaseName(case_name));
}

std::string StepBisect(const std::string& before, const std::string& after,
                       const std::string& case_name) {
  auto unknown = [](const std::string& c) { return c.empty() || c == "unknown"; };
  if (unknown(before) || unknown(after)) return "no git revision stored for the runs";
  if (CleanRevision(before) == CleanRevision(after))
    return "the same commit on both sides: not a code change";
  return BisectCommand(before, after, case_name);
}

const char* CallName(StepCall c) {
  switch (c) {
    case StepCall::kGood:
      return "good";
    case StepCall::kBad:
      return "bad";
    case StepCall::kSkip:
      return "skip";
  }
  return "?";
}

CompareRow CompareOne(const Bench& base, const Bench& now, const CompareOptions& opt) {
  MergedRuns b, n;
  b.benches.push_back(base);
  n.benches.push_back(now);
  n.benches.back().name = b.benches.back().name;
  CompareResult r = Compare(b, n, opt);
  return r.rows.at(0);
}

double SmallestP(int n) {
  // 2 / C(2n, n), as a product to stay finite.
  double c = 1;
  for (int i = 1; i <= n; ++i) c = c * (n + i) / i;
  return 2 / c;
}

Judgement JudgeStep(const Bench& good, const Bench& bad, const Bench& step,
                    const CompareOptions& opt) {
  Judgement j;
  j.vs_good = CompareOne(good, step, opt);
  j.vs_bad = CompareOne(bad, step, opt);
  double g = j.vs_good.base_ns, b = j.vs_bad.base_ns, s = j.vs_good.new_ns;
  j.position = std::log(s / g) / std::log(b / g);
  const bool like_good = j.vs_good.verdict != Verdict::kSlower;
  const bool like_bad = j.vs_bad.verdict != Verdict::kFaster;
  auto by_position = [&](const std::string& where) {
    if (j.position <= 1.0 / 3) {
      j.call = StepCall::kGood;
      j.why = where + ", in the good third";
    } else if (j.position >= 2.0 / 3) {
      j.call = StepCall::kBad;
      j.why = where + ", in the bad third";
    } else {
      j.why = where + ", in the middle third: ambiguous";
    }
  };
  if (like_good && !like_bad) {
    j.call = StepCall::kGood;
    j.why = "not slower than good, faster than bad";
  } else if (like_bad && !like_good) {
    j.call = StepCall::kBad;
    j.why = "slower than good, not faster than bad";
  } else if (!like_good && !like_bad) {
    by_position("between good and bad");
  } else if (j.vs_good.verdict == Verdict::kSame && j.vs_bad.verdict == Verdict::kSame) {
    by_position("within the threshold of both");
  } else {
    j.why = "not significantly different from either: noisy";
  }
  return j;
}

namespace {

std::string Short(const std::string& hash) { return hash.substr(0, 12); }

Section StepsSection(const BisectResult& r) {
  Section s;
  s.title = "Steps";
  s.notes.push_back(
      "In the order measured; change and p against the good endpoint's repetitions; position: "
      "where the median lies between good (0) and bad (1) on a log scale.");
  Table t;
  t.columns = {{"commit", "commit"},
               {"subject", "subject"},
               {"role", "role"},
               {"median", "median_ns"},
               {"change vs good", "change"},
               {"p", "p"},
               {"position", "position"},
               {"reps", "reps"},
               {"verdict", "verdict"},
               {"note", "note"}};
  for (const auto& st : r.steps) {
    Cell verdict(CallName(st.call));
    if (st.call == StepCall::kBad) verdict.With(Tone::kBad);
    if (st.call == StepCall::kSkip) verdict.With(Tone::kWarn);
    bool m = st.measured;
    t.rows.push_back({Cell(Short(st.commit)), Cell(st.subject), Cell(st.role),
                      m ? Cell::Time(st.median_ns) : Cell("-"),
                      m ? Cell::Signed(st.change) : Cell("-"), m ? Cell::P(st.p) : Cell("-"),
                      m ? Cell::Number(st.position, 3) : Cell("-"), Cell::Count(st.reps), verdict,
                      Cell(st.note)});
  }
  s.tables.push_back(std::move(t));
  return s;
}

Section KernelSection(const BisectResult& r) {
  Section s;
  s.title = "Kernels across the first bad commit";
  s.notes.push_back(r.kernels_note);
  if (r.kernels) s.tables.push_back(KernelDiffTable(*r.kernels, ""));
  return s;
}

}  // namespace

Document BisectDocument(const BisectResult& r, const BisectOptions& opt) {
  Document d;
  d.title = "dlbench bisect";
  d.notes.push_back("Case " + CaseBaseName(r.case_name) + "; good " + Short(r.good) + ", bad " +
                    Short(r.bad) + "; " + std::to_string(opt.repeats) + " repetitions a step.");
  if (!r.first_bad.empty()) {
    d.notes.push_back("**First bad commit**: " + r.first_bad + " " + r.first_bad_subject);
  } else {
    std::string list;
    for (const auto& c : r.candidates) list += (list.empty() ? "" : ", ") + Short(c);
    d.notes.push_back("**Undecided**: skipped commits leave the first bad commit among " + list +
                      " (git bisect: only skipped commits left to test).");
  }
  std::vector<std::string> skipped;
  for (const auto& st : r.steps)
    if (st.call == StepCall::kSkip) skipped.push_back(Short(st.commit) + " (" + st.note + ")");
  d.notes.push_back(skipped.empty() ? std::string("Skipped: none.")
                                    : "Skipped: " + std::to_string(skipped.size()) + ": " +
                                          Join(skipped, "; ") + ".");
  d.notes.push_back(
      Prose({"A step is judged with compare's rules (threshold ",
             Cell::Percent(opt.compare.threshold, 1), ", U test at alpha ",
             Cell::Number(opt.compare.alpha, 3)}) +
      ") against both endpoints (good: its two runs, before and after bad's, pooled): good when "
      "not significantly slower than good and significantly "
      "faster than bad; bad the other way round; between both (or within the threshold of both) "
      "by its position, good up to 1/3 and bad from 2/3; otherwise skipped.");
  d.sections.push_back(StepsSection(r));
  if (!r.first_bad.empty()) d.sections.push_back(KernelSection(r));
  return d;
}

}  // namespace dlb::report
