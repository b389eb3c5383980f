#include "tools/report/render/document.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tools/report/render/text.h"

namespace dlb::report {

Format ParseFormat(const std::string& s) {
  if (s == "md" || s == "markdown") return Format::kMarkdown;
  if (s == "html") return Format::kHtml;
  if (s == "csv") return Format::kCsv;
  if (s == "json") return Format::kJson;
  throw std::invalid_argument("unknown format '" + s + "' (md, html, csv, json)");
}

Format FormatFromPath(const std::string& path, Format fallback) {
  auto dot = path.rfind('.');
  if (dot == std::string::npos) return fallback;
  try {
    return ParseFormat(path.substr(dot + 1));
  } catch (const std::invalid_argument&) {
    return fallback;
  }
}

std::string Render(const Document& doc, Format format) {
  switch (format) {
    case Format::kMarkdown:
      return RenderMarkdown(doc);
    case Format::kHtml:
      return RenderHtml(doc);
    case Format::kCsv:
      return RenderCsv(doc);
    case Format::kJson:
      return RenderJson(doc);
  }
  return {};
}

namespace {

// The entity of each character that HTML would read as markup, nullptr for the others: what both
// HTML text and a Markdown cell must not pass through raw.
const char* MarkupEntity(char c) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    default:
      return nullptr;
  }
}

// `s` with each character `replace` gives a replacement for replaced (nullptr: kept).
template <typename Replace>
std::string Replaced(const std::string& s, Replace replace) {
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    if (const char* r = replace(c))
      out += r;
    else
      out += c;
  return out;
}

}  // namespace

std::string HtmlEscape(const std::string& s) {
  return Replaced(s, [](char c) { return c == '"' ? "&quot;" : MarkupEntity(c); });
}

std::string HtmlInline(const std::string& md) {
  // Code spans first (their contents stay as written), then **strong** outside them; a marker
  // without its closing twin stays as it is.
  std::string out;
  size_t i = 0;
  bool strong = false;
  while (i < md.size()) {
    if (md[i] == '`') {
      const size_t end = md.find('`', i + 1);
      if (end != std::string::npos) {
        out += "<code>" + HtmlEscape(md.substr(i + 1, end - i - 1)) + "</code>";
        i = end + 1;
        continue;
      }
    }
    if (md.compare(i, 2, "**") == 0 && (strong || md.find("**", i + 2) != std::string::npos)) {
      out += strong ? "</strong>" : "<strong>";
      strong = !strong;
      i += 2;
      continue;
    }
    out += HtmlEscape(std::string(1, md[i]));
    ++i;
  }
  if (strong) out += "</strong>";
  return out;
}

namespace {

// A cell's text as Markdown shows it and nothing more: `|` would end the cell, and <, > and &
// would reach a Markdown viewer as HTML (a name or label "<script>...").
std::string MdEscape(const std::string& s) {
  return Replaced(s, [](char c) { return c == '|' ? "\\|" : c == '\n' ? " " : MarkupEntity(c); });
}

// A heading's or note's Markdown where nothing can start HTML: outside `code` spans (shown as
// written), a < that would open a tag ("<script", "</", "<!") and an & that would start an
// entity are written as entities; "q < 0.05" stays as it reads in a terminal.
std::string MdProse(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  bool code = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const unsigned char next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : ' ';
    if (c == '`') code = !code;
    if (!code && c == '<' && (std::isalpha(next) || next == '/' || next == '!' || next == '?'))
      out += "&lt;";
    else if (!code && c == '&' && (std::isalnum(next) || next == '#'))
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string CsvNumber(double v) { return Printf("%.17g", v); }

// The table as Markdown and HTML show it: without the columns only CSV and JSON carry.
Table PeopleColumns(const Table& t) {
  Table out;
  out.title = t.title;
  std::vector<size_t> keep;
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (!t.columns[i].machine) keep.push_back(i);
  for (size_t i : keep) out.columns.push_back(t.columns[i]);
  out.rows.reserve(t.rows.size());
  for (const auto& row : t.rows) {
    out.rows.emplace_back();
    for (size_t i : keep)
      if (i < row.size()) out.rows.back().push_back(row[i]);
  }
  return out;
}

// A column of numbers reads right-aligned, one of words left-aligned; the first is the row's name.
std::vector<bool> RightAligned(const Table& t) {
  std::vector<bool> right(t.columns.size(), false);
  for (const auto& row : t.rows)
    for (size_t i = 1; i < row.size() && i < right.size(); ++i) right[i] = right[i] || row[i].value;
  return right;
}

}  // namespace

namespace {

// Markdown read in a terminal or a diff: no line past ~200 characters outside code blocks.
constexpr size_t kMdMaxLine = 200;
// Prose wraps at the source's width; Markdown joins the lines of a paragraph again.
constexpr size_t kMdWrap = 100;
// The most rows a Markdown table of the details holds; the HTML and CSV hold them all.
constexpr size_t kMdMaxDetailRows = 60;

// Characters as a terminal counts them: UTF-8 continuation bytes take no column.
size_t Columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// A paragraph longer than kMdMaxLine broken at spaces into lines of at most kMdWrap columns (a
// longer word stands alone).
std::string Wrap(const std::string& text, bool compact) {
  if (!compact || Columns(text) <= kMdMaxLine) return text;
  std::string out, line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && Columns(line) + 1 + Columns(word) > kMdWrap) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  return out + line;
}

std::string MdRow(const std::vector<std::string>& cells, size_t n) {
  std::string line = "|";
  for (size_t i = 0; i < n && i < cells.size(); ++i) line += " " + cells[i] + " |";
  return line;
}

// `s`, a cell MdEscape made, cut to at most `columns` terminal columns, the last one an ellipsis
// (UTF-8 characters and entities kept whole: every & there starts one).
std::string CutToColumns(const std::string& s, size_t columns) {
  if (Columns(s) <= columns) return s;
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80 && ++n > columns - 1) break;
    out += s[i];
  }
  if (size_t amp = out.rfind('&');
      amp != std::string::npos && out.find(';', amp) == std::string::npos)
    out.resize(amp);
  return out + "…";
}

// A row still longer than kMdMaxLine (long words: an error message, a command): its longest cell
// cut short so that the line fits, one after the first where that can (the first names the row:
// compare.py's "..._pvalue"); false where even that cannot make it fit.
bool CutLongestCell(std::vector<std::string>* row, size_t n) {
  const size_t line = Columns(MdRow(*row, n));
  if (line <= kMdMaxLine) return false;
  const size_t excess = line - kMdMaxLine;
  constexpr size_t kMinKept = 24;
  size_t longest = 1;
  for (size_t i = 2; i < n && i < row->size(); ++i)
    if (Columns((*row)[i]) > Columns((*row)[longest])) longest = i;
  if (longest >= n || longest >= row->size() || Columns((*row)[longest]) < excess + kMinKept)
    longest = 0;
  const size_t width = Columns((*row)[longest]);
  if (width < excess + kMinKept) return false;
  (*row)[longest] = CutToColumns((*row)[longest], width - excess);
  return true;
}

// `cut`: a table of the details (rows and columns past the limits left to the HTML and CSV);
// `compact`: Markdown whose lines stay within kMdMaxLine (a cell too long is cut short: the
// report's, compare's, whose commands are in a code block); otherwise every cell whole, as a
// history check in a CI log needs its repro.
void MdTable(const Table& whole, bool cut, bool compact, std::string* out) {
  const Table t = PeopleColumns(whole);
  if (!t.title.empty()) *out += "**" + MdEscape(t.title) + "**\n\n";
  std::vector<std::vector<std::string>> rows;
  rows.push_back({});
  for (const Column& c : t.columns) rows[0].push_back(MdEscape(c.title));
  const size_t shown_rows =
      cut && t.rows.size() > kMdMaxDetailRows ? kMdMaxDetailRows : t.rows.size();
  for (size_t r = 0; r < shown_rows; ++r) {
    rows.push_back({});
    for (const Cell& c : t.rows[r]) rows.back().push_back(MdEscape(CellText(c)));
  }
  // The columns, from the left, that keep every line within kMdMaxLine (the first always), in a
  // table of the details: HTML collapses them, CSV holds them whole. A table of the answers keeps
  // every column (a compare or history check in a CI log names its repro there).
  size_t n = t.columns.size();
  while (cut && n > 1 &&
         std::any_of(rows.begin(), rows.end(), [&](const std::vector<std::string>& r) {
           return Columns(MdRow(r, n)) > kMdMaxLine;
         }))
    --n;
  bool cells_cut = false;
  if (compact)
    for (size_t r = 1; r < rows.size(); ++r)
      while (CutLongestCell(&rows[r], n)) cells_cut = true;
  std::vector<bool> right = RightAligned(t);
  *out += MdRow(rows[0], n) + "\n|";
  for (size_t i = 0; i < n; ++i) *out += right[i] ? " ---: |" : " --- |";
  *out += "\n";
  for (size_t r = 1; r < rows.size(); ++r) *out += MdRow(rows[r], n) + "\n";
  *out += "\n";
  std::vector<std::string> left_out;
  for (size_t i = n; i < t.columns.size(); ++i) left_out.push_back(t.columns[i].title);
  std::string more;
  if (shown_rows < t.rows.size())
    more = "the first " + std::to_string(shown_rows) + " of " + std::to_string(t.rows.size()) +
           " rows";
  if (cells_cut) more += (more.empty() ? "" : "; ") + std::string("long cells cut short (…)");
  if (!left_out.empty()) {
    std::string cols;
    for (const std::string& c : left_out) cols += (cols.empty() ? "" : ", ") + c;
    more += (more.empty() ? "" : "; ") + std::string("without the columns ") + cols;
  }
  if (!more.empty())
    *out +=
        Wrap("Here " + more + ": the HTML and CSV reports hold the whole table.", true) + "\n\n";
}

}  // namespace

std::string RenderMarkdown(const Document& doc) {
  std::string out;
  out.reserve(1 << 20);
  out += "# " + MdProse(doc.title) + "\n\n";
  const bool short_lines = doc.compact_markdown || doc.short_markdown_lines;
  for (const auto& n : doc.notes) out += Wrap(MdProse(n), short_lines) + "\n\n";
  bool in_details = false;
  for (const Section& s : doc.sections) {
    if (s.details && !in_details) {
      out += "## Details\n\n";
      in_details = true;
    }
    out += (in_details ? "### " : "## ") + MdProse(s.title) + "\n\n";
    for (const auto& n : s.notes) out += Wrap(MdProse(n), short_lines) + "\n\n";
    if (!s.code.empty()) {
      out += "```\n";
      for (const std::string& line : s.code) out += line + "\n";
      out += "```\n\n";
    }
    for (const Table& t : s.tables)
      MdTable(t, doc.compact_markdown && in_details, short_lines, &out);
    // Markdown draws no chart: a section of charts alone says where they are, not an empty
    // heading.
    if (doc.compact_markdown && s.notes.empty() && s.tables.empty() && !s.charts.empty())
      out += std::to_string(s.charts.size()) + " chart(s), in the HTML report.\n\n";
  }
  return out;
}

namespace {

// A case's name may break after each / ("gemm/gpu/cublaslt/<wbr>square.8192"), where a reader
// expects it to, before overflow-wrap breaks it anywhere.
std::string BreakAtSlashes(const std::string& escaped) {
  std::string out;
  out.reserve(escaped.size() + escaped.size() / 8);
  for (char ch : escaped) {
    out += ch;
    if (ch == '/') out += "<wbr>";
  }
  return out;
}

// Whether `text` holds a word (between spaces and slashes) longer than a column should be: such
// a cell may break inside its words, where a cell of short words keeps them whole.
bool HasLongWord(const std::string& text) {
  constexpr size_t kLongWord = 24;
  size_t run = 0;
  for (char ch : text) {
    run = ch == ' ' || ch == '/' ? 0 : run + 1;
    if (run > kLongWord) return true;
  }
  return false;
}

// `long_words`: a left cell that may break inside its words (HasLongWord).
std::string ToneClass(Tone t, bool left, bool long_words = false) {
  std::string c = left ? (long_words ? "l w" : "l") : "";
  switch (t) {
    case Tone::kGood:
      c += c.empty() ? "good" : " good";
      break;
    case Tone::kBad:
      c += c.empty() ? "bad" : " bad";
      break;
    case Tone::kWarn:
      c += c.empty() ? "warn" : " warn";
      break;
    case Tone::kNone:
      break;
  }
  return c.empty() ? "" : " class=\"" + c + "\"";
}

void HtmlSection(const Section& s, std::string* out) {
  const std::string h2 = (s.id.empty() ? "<h2>" : "<h2 id=\"" + HtmlEscape(s.id) + "\">") +
                         HtmlEscape(s.title) + "</h2>";
  if (s.details)
    *out += "<details><summary>" + h2 + "</summary>\n";
  else
    *out += h2 + "\n";
  for (const auto& n : s.notes) *out += "<p>" + HtmlInline(n) + "</p>\n";
  if (!s.code.empty()) {
    *out += "<pre><code>";
    for (const std::string& line : s.code) *out += HtmlEscape(line) + "\n";
    *out += "</code></pre>\n";
  }
  for (const Table& whole : s.tables) {
    const Table t = PeopleColumns(whole);
    if (!t.title.empty()) *out += "<h3>" + HtmlEscape(t.title) + "</h3>\n";
    std::vector<bool> right = RightAligned(t);
    // A wide table scrolls inside its box instead of widening the page.
    *out += "<div class=\"tw\"><table><thead><tr>";
    for (size_t i = 0; i < t.columns.size(); ++i)
      *out += std::string(right[i] ? "<th>" : "<th class=\"l\">") + HtmlEscape(t.columns[i].title) +
              "</th>";
    *out += "</tr></thead><tbody>\n";
    for (const auto& row : t.rows) {
      *out += "<tr>";
      for (size_t i = 0; i < row.size(); ++i) {
        const Cell& c = row[i];
        bool left = i < right.size() && !right[i];
        const std::string text = HtmlEscape(CellText(c));
        *out += std::string("<td") + ToneClass(c.tone, left, left && HasLongWord(text)) + ">" +
                (left ? BreakAtSlashes(text) : text) + "</td>";
      }
      *out += "</tr>\n";
    }
    *out += "</tbody></table></div>\n";
  }
  if (!s.charts.empty()) {
    *out += "<div class=\"charts\">\n";
    for (const Chart& c : s.charts) *out += RenderSvg(c) + "\n";
    *out += "</div>\n";
  }
  if (s.details) *out += "</details>\n";
}

}  // namespace

std::string RenderHtml(const Document& doc) {
  std::string out;
  out.reserve(1 << 20);
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
         HtmlEscape(doc.title) +
         "</title>\n<style>\n"
         "body{font:14px/1.4 -apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px;"
         "color:#222;max-width:1400px}\n"
         "table{border-collapse:collapse;margin:8px 0 20px;font-size:13px}\n"
         "div.tw{max-width:100%;overflow-x:auto}\n"
         "th,td{border:1px solid #ccc;padding:2px 5px;text-align:right;white-space:nowrap}\n"
         // Words (a failure's reason, a label, a case's name) wrap inside their cell, at a /
         // where one is, and a cell with a long word (a kernel's name) anywhere in it, so that
         // a table fits the window and no text crosses into the next cell; short words and
         // numbers stay whole.
         "td.l,th.l{white-space:normal;max-width:26em;overflow-wrap:break-word}\n"
         "td.w{overflow-wrap:anywhere}\n"
         "th{background:#f2f2f2}td:first-child,th:first-child,td.l,th.l{text-align:left}\n"
         "tr:nth-child(even) td{background:#fafafa}\n"
         "h3{font-size:15px;margin:16px 0 4px}\n"
         "pre{background:#f6f6f6;padding:6px 8px;overflow-x:auto;font-size:12px}\n"
         "div.charts{display:flex;flex-wrap:wrap;gap:0 24px}\n"
         "svg.chart{display:block;margin:8px 0 20px;background:#fff}\n"
         "svg .title{font-weight:bold;font-size:14px}svg .tick,svg .val{font-size:11px}\n"
         "svg .lbl{font-size:11px}svg .axis{font-size:12px}\n"
         "td.bad{color:#b00020;font-weight:bold}td.good{color:#1b7f1b;font-weight:bold}\n"
         "td.warn{color:#8a5a00;background:#fff4d6 !important}\n"
         "details{margin:4px 0}summary{cursor:pointer}summary h2{display:inline;font-size:18px}\n"
         "</style></head><body>\n";
  out += "<h1>" + HtmlEscape(doc.title) + "</h1>\n";
  for (const auto& n : doc.notes) out += "<p>" + HtmlInline(n) + "</p>\n";
  bool in_details = false;
  for (const Section& s : doc.sections) {
    if (s.details && !in_details) {
      out += "<h2>Details</h2>\n";
      in_details = true;
    }
    HtmlSection(s, &out);
  }
  // Marks each chart whose plot has a visible extent once laid out: the rendering test reads it.
  // Collapsed details lay nothing out, so they are opened for the measurement and closed again.
  out +=
      "<script>{const c=[...document.querySelectorAll('details:not([open])')];"
      "c.forEach(d=>d.open=true);for(const s of document.querySelectorAll('svg.chart')){"
      "const g=s.querySelector('g.plot');const b=g?g.getBBox():{width:0,height:0};"
      "s.setAttribute('data-drawn',(b.width>0&&b.height>0)?'1':'0')}"
      "c.forEach(d=>d.open=false);"
      // And each table's right edge against the window's width: whether a reader sees its last
      // column without scrolling.
      "document.body.setAttribute('data-viewport',String(window.innerWidth));"
      "for(const t of document.querySelectorAll('table'))"
      "t.setAttribute('data-right',String(Math.ceil(t.getBoundingClientRect().right)));"
      // And each cell whose text does not fit its box, so crosses into the next cell's.
      "c.forEach(d=>d.open=true);for(const e of document.querySelectorAll('td,th'))"
      "if(e.scrollWidth>e.clientWidth+1)e.setAttribute('data-overflow','1');"
      "c.forEach(d=>d.open=false)}"
      "</script>\n</body></html>\n";
  return out;
}

std::string RenderCsv(const Document& doc) {
  std::string out;
  out.reserve(1 << 20);
  bool first = true;
  for (const Section& s : doc.sections)
    for (const Table& t : s.tables) {
      if (!first) out += "\n";
      first = false;
      out += "section,table";
      for (const Column& c : t.columns) out += "," + CsvField(c.key);
      out += "\n";
      std::string prefix = CsvField(s.title) + "," + CsvField(t.title);
      for (const auto& row : t.rows) {
        out += prefix;
        for (const Cell& c : row)
          out += "," + (c.value ? CsvNumber(*c.value) : CsvField(CellText(c)));
        out += "\n";
      }
    }
  if (first) {  // no table at all: say why, in the notes
    out += "section,note\n";
    for (const Section& s : doc.sections)
      for (const auto& n : s.notes) out += CsvField(s.title) + "," + CsvField(n) + "\n";
  }
  return out;
}

namespace {

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kText:
      return "text";
    case Kind::kKey:
      return "key";
    case Kind::kTime:
      return "time_ns";
    case Kind::kRate:
      return "rate";
    case Kind::kRatio:
      return "ratio";
    case Kind::kPercent:
      return "fraction";
    case Kind::kSigned:
      return "change";
    case Kind::kCount:
      return "count";
    case Kind::kNumber:
      return "number";
    case Kind::kBytes:
      return "bytes";
    case Kind::kDuration:
      return "seconds";
    case Kind::kP:
      return "p";
    case Kind::kFixed:
      return "number";
  }
  return "text";
}

}  // namespace

std::string RenderJson(const Document& doc) {
  using ojson = nlohmann::ordered_json;
  ojson j;
  j["title"] = doc.title;
  j["notes"] = doc.notes;
  j["sections"] = ojson::array();
  for (const Section& s : doc.sections) {
    ojson js;
    if (!s.id.empty()) js["id"] = s.id;
    js["title"] = s.title;
    js["notes"] = s.notes;
    if (!s.code.empty()) js["code"] = s.code;
    js["tables"] = ojson::array();
    for (const Table& t : s.tables) {
      ojson jt;
      jt["title"] = t.title;
      ojson cols = ojson::array();
      for (const Column& c : t.columns) cols.push_back(c.key);
      jt["columns"] = cols;
      // What each typed column holds, for machines: its kind and unit ("time": ns, "rate":
      // per second in `units`), from its first typed cell.
      ojson kinds = ojson::object(), units = ojson::object();
      for (size_t i = 0; i < t.columns.size(); ++i)
        for (const auto& row : t.rows)
          if (i < row.size() && row[i].kind != Kind::kText) {
            kinds[t.columns[i].key] = KindName(row[i].kind);
            if (!row[i].unit.empty()) units[t.columns[i].key] = row[i].unit;
            break;
          }
      if (!kinds.empty()) jt["kinds"] = std::move(kinds);
      if (!units.empty()) jt["units"] = std::move(units);
      ojson rows = ojson::array();
      for (const auto& row : t.rows) {
        ojson r = ojson::object();
        for (size_t i = 0; i < row.size() && i < t.columns.size(); ++i) {
          if (row[i].value)
            r[t.columns[i].key] = *row[i].value;
          else if (std::string text = CellText(row[i]); text == "-")
            r[t.columns[i].key] = nullptr;
          else
            r[t.columns[i].key] = text;
        }
        rows.push_back(std::move(r));
      }
      jt["rows"] = std::move(rows);
      js["tables"].push_back(std::move(jt));
    }
    j["sections"].push_back(std::move(js));
  }
  return j.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace dlb::report
