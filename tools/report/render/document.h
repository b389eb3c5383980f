// What every subcommand produces: titled sections of tables and charts, rendered as Markdown, a
// self-contained HTML page with SVG charts, CSV or JSON. Subcommands never format output
// themselves.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace dlb::report {

// How a cell reads at a glance; HTML colours it.
enum class Tone { kNone, kGood, kBad, kWarn };

// A table cell: display text, and the raw number for CSV/JSON when it is one.
struct Cell {
  std::string text;
  std::optional<double> value;
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
};

struct Column {
  std::string title;  // for people: "median"
  std::string key;    // for machines: "median_ns"
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
};

struct Chart {
  enum class Kind { kLines, kBars, kStacked };
  Kind kind = Kind::kLines;
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  std::vector<Series> series;                        // kLines
  std::vector<std::pair<std::string, double>> bars;  // kBars: label, value
  double bar_reference = std::nan("");               // kBars: a vertical line (e.g. 1x)
  double width = 0;                                  // kLines: pixels; 0: the default
  // kLines: a dashed vertical line at each x, the text its tooltip (where each case begins).
  std::vector<std::pair<double, std::string>> marks;
  // kStacked: a bar per label, split into one segment per name of `segments` (a legend).
  std::vector<std::string> segments;
  std::vector<std::pair<std::string, std::vector<double>>> stacks;
};

struct Section {
  std::string title;
  std::vector<std::string> notes;  // paragraphs, plain text
  std::vector<Table> tables;
  std::vector<Chart> charts;  // after the tables
  // Details come after what answers the questions; HTML shows them collapsed.
  bool details = false;
};

struct Document {
  std::string title;
  std::vector<std::string> notes;
  std::vector<Section> sections;
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

// Number formatting shared by the subcommands.
std::string FormatTime(double ns);                           // "1.23 ms"
std::string FormatRate(double v);                            // "1.23 T" (SI)
std::string FormatPercent(double fraction, int digits = 1);  // "12.3%"
std::string FormatSigned(double fraction);                   // "+12.34%"
std::string FormatNumber(double v, int significant = 4);
std::string FormatP(double p);

}  // namespace dlb::report
