// What every subcommand produces: titled sections of tables and charts, rendered as Markdown, a
// self-contained HTML page with SVG charts, CSV or JSON. Subcommands never format output
// themselves.
#pragma once

#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace dlb::report {

// How a cell reads at a glance; HTML colours it.
enum class Tone { kNone, kGood, kBad, kWarn };

// What a cell holds, so that only render/ decides how it reads: words (a verdict, a label), a key
// of a benchmark's name (a column per key, as nvbench shows its axes), or a number of a kind.
enum class Kind {
  kText,
  kKey,       // a name's part: family, device, backend, workload, or a key's value
  kTime,      // ns: "1.23 ms"
  kRate,      // per second, SI prefix and `unit`: "760 TFLOP/s", "12.3 k images/s"
  kRatio,     // "1.23x"
  kPercent,   // a fraction: "12.3%"
  kSigned,    // a fraction as a change: "+12.34%"
  kCount,     // an integer: "1024" (never "1.02k"); grouped: "50,000"
  kNumber,    // `digits` significant digits
  kBytes,     // powers of 1024: "1 GiB"
  kDuration,  // seconds as an epoch reads: "6.19 h", "3.66 min", "988 ms"
  kP,         // a p-value: "0.0123", "1.2e-05"
  kFixed,     // `digits` decimals, signed where `plus`: "+0.1000" (compare.py's columns)
};

// A table cell: words, or a typed number (value, unit, kind) that the renderers format; CSV and
// JSON carry the raw number.
struct Cell {
  std::string text;  // the words of kText/kKey; typed cells leave it empty, CellText() formats them
  std::optional<double> value;
  Kind kind = Kind::kText;
  std::string unit;       // kRate: "FLOP/s", "images/s"; kCount, kNumber: a word after the number
  int digits = -1;        // kNumber: significant digits; kPercent: decimals; -1: the kind's default
  bool grouped = false;   // kCount: thousands separated by commas
  bool plus = false;      // kFixed: a sign on positive numbers too
  bool doubtful = false;  // a result behind it was not verified or was mistrusted: "⚠" before it
  std::string after;      // words right after the number: " ★" (the best), "%", " (cublaslt)"
  Tone tone = Tone::kNone;
  Cell() = default;
  Cell(std::string t) : text(std::move(t)) {}  // NOLINT: cells are built from text all the time
  Cell(const char* t) : text(t) {}             // NOLINT
  Cell(std::string t, double v) : text(std::move(t)) {
    if (std::isfinite(v)) value = v;
  }
  Cell& With(Tone t) {
    tone = t;
    return *this;
  }
  Cell& Doubtful(bool d = true) {
    doubtful = d;
    return *this;
  }
  // How it reads (CellText).
  std::string Text() const;
  Cell& After(std::string words) {
    after = std::move(words);
    return *this;
  }
  // Typed cells; a value that is not finite reads "-" and carries no number.
  static Cell Of(Kind kind, double v, std::string unit = "", int digits = -1);
  static Cell Key(std::string k);
  static Cell Time(double ns) { return Of(Kind::kTime, ns); }
  static Cell Rate(double v, std::string unit = "") { return Of(Kind::kRate, v, std::move(unit)); }
  static Cell Ratio(double x, int digits = 3) { return Of(Kind::kRatio, x, "", digits); }
  static Cell Percent(double fraction, int decimals = 1) {
    return Of(Kind::kPercent, fraction, "", decimals);
  }
  static Cell Signed(double fraction) { return Of(Kind::kSigned, fraction); }
  static Cell Count(double n, std::string unit = "") {
    return Of(Kind::kCount, n, std::move(unit));
  }
  static Cell Number(double v, int digits = 4, std::string unit = "") {
    return Of(Kind::kNumber, v, std::move(unit), digits);
  }
  static Cell Bytes(double b, int digits = 4) { return Of(Kind::kBytes, b, "", digits); }
  static Cell Duration(double s) { return Of(Kind::kDuration, s); }
  static Cell P(double p) { return Of(Kind::kP, p); }
  static Cell Items(double n) {
    Cell c = Of(Kind::kCount, n);
    c.grouped = true;
    return c;
  }
  static Cell Fixed(double v, int decimals, bool plus = false) {
    Cell c = Of(Kind::kFixed, v, "", decimals);
    c.plus = plus;
    return c;
  }
};

// How a cell reads in Markdown, HTML and charts: its words, or its number formatted by its kind.
std::string CellText(const Cell& c);
// Prose from words and typed numbers: Prose({"took ", Cell::Time(ns), " at ", Cell::Count(bs)}).
// Notes, labels and titles are written with it, so that numbers in them read as in the tables.
std::string Prose(std::initializer_list<Cell> parts);

struct Column {
  std::string title;  // for people: "median"
  std::string key;    // for machines: "median_ns"
  // Only CSV and JSON carry it (a benchmark's full name beside its parts in columns, a command):
  // Markdown and HTML leave it out.
  bool machine = false;
};

struct Table {
  std::string title;
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
};

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
  bool line = true;     // joined by a line
  bool markers = true;  // a dot per point
  int color = -1;       // palette index; -1: the series' position
  bool solid = false;   // a line without markers is dashed (a fit) unless solid (a measured trace)
  // The dtype the series stands for ("bf16"): its colour is that dtype's in every chart (else a
  // dtype its name holds as a word; else one of the colours no dtype holds, by `color`).
  std::string dtype = {};
  // Its markers' shape where series share a colour: 0 circle, 1 square, 2 triangle, 3 diamond,
  // then hollow; -1: by its rank among the series of its colour.
  int shape = -1;
};

struct Chart {
  enum class Kind { kLines, kBars, kStacked };
  Kind kind = Kind::kLines;
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  std::vector<Series> series;                        // kLines
  std::vector<std::pair<std::string, double>> bars;  // kBars: label, value
  // kBars: each bar's dtype, in the order of `bars` (missing or empty: a dtype its label holds as
  // a word, else none): a bar of a dtype takes that dtype's colour, as a series does.
  std::vector<std::string> bar_dtypes;
  double bar_reference = std::nan("");  // kBars: a vertical line (e.g. 1x)
  double width = 0;                     // kLines: pixels; 0: the default
  // kLines: a dashed vertical line at each x, the text its tooltip (where each case begins).
  std::vector<std::pair<double, std::string>> marks;
  // kStacked: a bar per label, split into one segment per name of `segments` (a legend).
  std::vector<std::string> segments;
  std::vector<std::pair<std::string, std::vector<double>>> stacks;
};

struct Section {
  std::string id;  // the report's declared id: the HTML anchor, the JSON's "id"; may be empty
  std::string title;
  std::vector<std::string> notes;  // paragraphs, plain text
  // Lines shown as written, after the notes (commands to copy): a code block in Markdown, whose
  // lines may be long, <pre> in HTML, "code" in JSON.
  std::vector<std::string> code;
  std::vector<Table> tables;
  std::vector<Chart> charts;  // after the tables
  // Details come after what answers the questions; HTML shows them collapsed.
  bool details = false;
};

struct Document {
  std::string title;
  std::vector<std::string> notes;
  std::vector<Section> sections;
  // Markdown for a terminal (the report's report.md): no line past ~200 characters outside code
  // blocks, the details' long or wide tables cut (HTML and CSV hold them whole).
  bool compact_markdown = false;
  // Markdown lines within ~200 characters outside code blocks too (notes wrapped, a cell too long
  // cut short), but every row and column of the details kept: compare in a CI log.
  bool short_markdown_lines = false;
};

enum class Format { kMarkdown, kHtml, kCsv, kJson };
Format ParseFormat(
    const std::string& s);  // md|markdown|html|csv|json; throws std::invalid_argument
Format FormatFromPath(const std::string& path, Format fallback);

std::string Render(const Document& doc, Format format);
std::string RenderMarkdown(const Document& doc);
std::string RenderHtml(const Document& doc);
std::string RenderCsv(const Document& doc);
std::string RenderJson(const Document& doc);
std::string RenderSvg(const Chart& chart);

// Number formatting, for render/ and the history's tables; analyses build typed cells instead.
std::string FormatTime(double ns);                           // "1.23 ms"
std::string FormatRate(double v);                            // "1.23 T" (SI)
std::string FormatPercent(double fraction, int digits = 1);  // "12.3%"
std::string FormatSigned(double fraction);                   // "+12.34%"
std::string FormatNumber(double v, int significant = 4);
std::string FormatP(double p);
// Seconds as people read an epoch: "6.19 h", "3.66 min", "988 ms"; "-" when not finite.
std::string FormatDuration(double s);
// "1 GiB", "512 KiB": bytes in powers of 1024 (collective sizes are powers of two); "-" when not
// finite.
std::string FormatBytes(double bytes, int significant = 4);
// "760 TFLOP/s", "914 FLOP/s", "12.3 GB/s": an SI prefix joins a unit that starts a rate;
// "12.3 k images/s" keeps the prefix apart from a count.
std::string WithUnit(double v, const std::string& unit);

}  // namespace dlb::report
