#include "tools/report/analyses/common.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "fixtures/schema/families.h"
#include "fixtures/schema/schema.h"
#include "tools/report/analyses/stats.h"

namespace dlb::report {

std::string Join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string JoinNonEmpty(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v)
    if (!s.empty()) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string KeysExcept(const BenchName& n, std::initializer_list<std::string_view> skip) {
  std::string out;
  for (const auto& [k, v] : n.keys)
    if (std::find(skip.begin(), skip.end(), k) == skip.end())
      out += (out.empty() ? "" : "/") + k + ":" + v;
  return out;
}

std::string ConfigKeys(const BenchName& n) { return KeysExcept(n, {key::kBatch, key::kDType}); }

std::string ConfigValues(const std::string& keys) {
  std::string out;
  size_t start = 0;
  while (start <= keys.size()) {
    size_t end = keys.find('/', start);
    if (end == std::string::npos) end = keys.size();
    std::string part = keys.substr(start, end - start);
    auto colon = part.find(':');
    if (!part.empty()) out += (out.empty() ? "" : " ") + part.substr(colon + 1);
    start = end + 1;
  }
  return out;
}

std::vector<std::string> SplitNameColumn(Table* t, size_t col) {
  std::vector<BenchName> names;
  for (const auto& row : t->rows) {
    std::optional<BenchName> n = ParseName(row.at(col).text);
    if (!n) return {};
    names.push_back(std::move(*n));
  }
  if (names.empty()) return {};
  // The name's parts, then its keys in a column that SplitKeyColumn lays out.
  const auto at = static_cast<std::ptrdiff_t>(col);
  const std::vector<Column> parts = {{"family", "family"},
                                     {"device", "device"},
                                     {"backend", "backend"},
                                     {"workload", "workload"},
                                     {"keys", "keys"}};
  t->columns.erase(t->columns.begin() + at);
  t->columns.insert(t->columns.begin() + at, parts.begin(), parts.end());
  std::vector<NameKeys> keys;
  for (size_t r = 0; r < t->rows.size(); ++r) {
    const BenchName& n = names[r];
    const std::vector<Cell> cells = {Cell::Key(n.family), Cell::Key(n.device), Cell::Key(n.backend),
                                     Cell::Key(n.workload), Cell()};
    auto& row = t->rows[r];
    row.erase(row.begin() + at);
    row.insert(row.begin() + at, cells.begin(), cells.end());
    keys.push_back(n.keys);
  }
  return SplitKeyColumn(t, col + 4, keys);
}

std::vector<std::string> SplitKeyColumn(Table* t, size_t col, const std::vector<NameKeys>& names) {
  auto get = [](const NameKeys& keys, const std::string& k) {
    for (const auto& [key, v] : keys)
      if (key == k) return v;
    return std::string();
  };
  const auto at = static_cast<std::ptrdiff_t>(col);
  if (t->rows.empty()) {
    t->columns.erase(t->columns.begin() + at);
    return {};
  }
  // Every key in first-seen order; a key varies when a row lacks it or holds another value.
  std::vector<std::string> keys;
  for (const NameKeys& n : names)
    for (const auto& [k, v] : n)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  std::vector<std::string> varying, shared;
  for (const std::string& k : keys) {
    // A key the table has as a column already (a counter "bs") is not shown twice.
    if (std::any_of(t->columns.begin(), t->columns.end(),
                    [&](const Column& c) { return c.key == k; }))
      continue;
    const std::string first = get(names[0], k);
    bool varies = false;
    for (const NameKeys& n : names) varies = varies || get(n, k) != first || get(n, k).empty();
    (varies ? varying : shared).push_back(k);
    if (!varies) shared.back() += ":" + first;
  }
  // Past kMaxKeyColumns varying keys (a table mixing families: attention's heads and head dims,
  // training's formats and graphs) the rest share one column of "key:value" words, which wraps,
  // so that the table still fits a window's width.
  constexpr size_t kMaxKeyColumns = 6;
  std::vector<std::string> rest;
  if (varying.size() > kMaxKeyColumns) {
    rest.assign(varying.begin() + kMaxKeyColumns - 1, varying.end());
    varying.resize(kMaxKeyColumns - 1);
  }
  std::vector<Column> columns;
  for (const std::string& k : varying) columns.push_back({k, k});
  if (!rest.empty()) columns.push_back({"other keys", "keys"});
  t->columns.erase(t->columns.begin() + at);
  t->columns.insert(t->columns.begin() + at, columns.begin(), columns.end());
  for (size_t r = 0; r < t->rows.size(); ++r) {
    const NameKeys& n = names.at(r);
    std::vector<Cell> cells;
    for (const std::string& k : varying) {
      const std::string v = get(n, k);
      cells.push_back(Cell::Key(v.empty() ? "-" : v));
    }
    if (!rest.empty()) {
      std::string words;
      for (const std::string& k : rest)
        if (const std::string v = get(n, k); !v.empty())
          words += (words.empty() ? "" : " ") + k + ":" + v;
      cells.push_back(Cell::Key(words.empty() ? "-" : words));
    }
    auto& row = t->rows[r];
    row.erase(row.begin() + at);
    row.insert(row.begin() + at, cells.begin(), cells.end());
  }
  return shared;
}

void DropEmptyColumns(Table* t) {
  for (size_t i = t->columns.size(); i-- > 0;) {
    bool empty = std::all_of(t->rows.begin(), t->rows.end(),
                             [&](const std::vector<Cell>& r) { return CellText(r[i]) == "-"; });
    if (!empty) continue;
    t->columns.erase(t->columns.begin() + static_cast<std::ptrdiff_t>(i));
    for (auto& r : t->rows) r.erase(r.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void SayOnceInTitle(Table* t, const std::string& key, const std::string& label) {
  auto col = std::find_if(t->columns.begin(), t->columns.end(),
                          [&](const Column& c) { return c.key == key; });
  if (col == t->columns.end()) return;
  const auto i = col - t->columns.begin();
  std::string value;
  for (const std::vector<Cell>& r : t->rows) {
    const std::string v = CellText(r[static_cast<size_t>(i)]);
    if (v == "-" || v == value) continue;
    if (!value.empty()) return;
    value = v;
  }
  if (value.empty()) return;
  t->title += "; " + label + ": " + value;
  t->columns.erase(col);
  for (std::vector<Cell>& r : t->rows) r.erase(r.begin() + i);
}

std::string BatchSizeLabel(double bs) { return Prose({"bs ", Cell::Count(bs)}); }

Cell TimeCell(double ns) { return Cell::Time(ns); }

Cell SpeedupCell(double x, bool doubtful) {
  Cell c = Cell::Ratio(x);
  if (doubtful && c.value) c.Doubtful().With(Tone::kWarn);
  return c;
}

bool WideY(const Chart& chart) {
  double lo = INFINITY, hi = 0;
  for (const Series& s : chart.series)
    for (auto [x, y] : s.points) {
      lo = std::min(lo, y);
      hi = std::max(hi, y);
    }
  return lo > 0 && hi / lo > 20;
}

std::string ItemsPerSecond(const std::string& family, const std::string& model) {
  // A family whose rows count tokens counts them for every model; the guesses below tell what a
  // training model's items are (images, sequences, samples) by its name.
  const std::string_view unit = families::Of(family).item_unit;
  if (unit == "tokens/s") return std::string(unit);
  auto has = [&](const char* word) { return model.find(word) != std::string::npos; };
  if (has("gpt") || has("bert") || has("llama")) return "sequences/s";
  if (has("mlp")) return "samples/s";
  for (const char* cnn : {"resnet", "densenet", "vgg", "catdog", "mobilenet", "efficientnet",
                          "alexnet", "inception", "cnn", "vit"})
    if (has(cnn)) return "images/s";
  return std::string(unit);
}

std::string FlopUnit(const std::string& dtype) {
  return dtype.rfind("int", 0) == 0 ? "OP/s" : "FLOP/s";
}

std::string MeasuredPeakPart(const std::string& measured, std::string dtype) {
  if (dtype.rfind("amp_", 0) == 0) dtype = dtype.substr(4);
  // "f32 50.7 TFLOP/s (how; more); bf16 769.3 TFLOP/s (...)": parts at parenthesis depth 0.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= measured.size(); ++i) {
    const bool end = i == measured.size() || (depth == 0 && measured.compare(i, 2, "; ") == 0);
    if (!end) {
      depth += measured[i] == '(' ? 1 : measured[i] == ')' ? -1 : 0;
      continue;
    }
    std::string part = measured.substr(start, i - start);
    start = i + 2;
    // "bf16 not measured (no bf16 case in this run)": no figure.
    if (part.rfind(dtype + " ", 0) == 0)
      return part.compare(dtype.size() + 1, 12, "not measured") == 0 ? "" : part;
  }
  return "";
}

std::string MeasuredPeakOf(const std::map<std::string, std::string>& context,
                           const std::string& device, std::string dtype) {
  auto it = context.find(
      std::string(device == "gpu" ? schema::kCtxGpuPeakMeasured : schema::kCtxCpuPeakMeasured));
  if (it == context.end()) return "";
  const std::string part = MeasuredPeakPart(it->second, std::move(dtype));
  return part.empty() ? "" : "measured " + part.substr(0, part.find(" ("));
}

double MeasuredPeakClockMhz(const std::string& measured, const std::string& dtype) {
  // kernels/cublas/peak.cpp ends the method with "; SM clock %.0f MHz (median while timed)".
  // fp8_e5m2 takes fp8's peak (fixtures/machine/peak.h).
  const std::string part = MeasuredPeakPart(measured, dtype == "fp8_e5m2" ? "fp8" : dtype),
                    key = "; SM clock ", tail = " MHz (median while timed)";
  const size_t at = part.rfind(key);
  if (at == std::string::npos) return 0;
  const char* from = part.c_str() + at + key.size();
  char* end = nullptr;
  const double mhz = std::strtod(from, &end);
  if (end == from || part.compare(end - part.c_str(), tail.size(), tail) != 0) return 0;
  return std::isfinite(mhz) && mhz > 0 ? mhz : 0;
}

std::string InputsNote(const std::vector<std::string>& inputs) {
  return "Inputs: " + Join(inputs, ", ");
}

std::string FewerFlopsEngine(const Bench& b) {
  if (b.family != kConvFamily) return "";
  // The algorithm is named before the verification and the peak (" | ").
  std::string algo = b.label.substr(0, b.label.find(" | "));
  for (char& c : algo) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (algo.find("wino") != std::string::npos) return "Winograd";
  if (algo.find("fft") != std::string::npos) return "FFT";
  return "";
}

double RateAtMedianTime(const Bench& b, std::string_view counter) {
  auto it = b.counters.find(counter);
  if (it == b.counters.end() || it->second.size() != b.real_ns.size() || b.real_ns.empty())
    return b.Counter(counter);
  std::vector<double> work;
  for (size_t i = 0; i < b.real_ns.size(); ++i) work.push_back(it->second[i] * b.real_ns[i]);
  const double t = b.MedianNs();
  return t > 0 ? Median(work) / t : b.Counter(counter);
}

std::vector<std::string> ShellSplit(std::string_view line) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      size_t end = line.find('\'', i + 1);
      if (end == std::string_view::npos) end = line.size();
      word.append(line.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size() &&
            std::string_view("\"\\$`").find(line[i + 1]) != std::string_view::npos)
          ++i;
        word += line[i];
      }
    } else if (c == '\\' && i + 1 < line.size()) {
      word += line[++i];
    } else {
      word += c;
    }
  }
  if (in_word) out.push_back(std::move(word));
  return out;
}

}  // namespace dlb::report
