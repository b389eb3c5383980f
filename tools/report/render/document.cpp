#include "tools/report/render/document.h"

#include <algorithm>
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

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

namespace {

// Three significant digits without exponents: 123, 12.3, 1.23.
std::string ThreeDigits(double v) {
  double a = std::fabs(v);
  if (a >= 99.95) return Printf("%.0f", v);
  if (a >= 9.995) return Printf("%.1f", v);
  return Printf("%.2f", v);
}

}  // namespace

std::string HtmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
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

std::string MdEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
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

// A column of numbers reads right-aligned, one of words left-aligned; the first is the row's name.
std::vector<bool> RightAligned(const Table& t) {
  std::vector<bool> right(t.columns.size(), false);
  for (const auto& row : t.rows)
    for (size_t i = 1; i < row.size() && i < right.size(); ++i) right[i] = right[i] || row[i].value;
  return right;
}

}  // namespace

std::string FormatTime(double ns) {
  if (!std::isfinite(ns)) return "-";
  double a = std::fabs(ns);
  if (a < 1e3) return ThreeDigits(ns) + " ns";
  if (a < 1e6) return ThreeDigits(ns / 1e3) + " µs";
  if (a < 1e9) return ThreeDigits(ns / 1e6) + " ms";
  return ThreeDigits(ns / 1e9) + " s";
}

std::string FormatRate(double v) {
  if (!std::isfinite(v)) return "-";
  static const char* kPrefix[] = {"", " k", " M", " G", " T", " P", " E"};
  int i = 0;
  double a = std::fabs(v);
  while (a >= 999.5 && i < 6) {
    a /= 1000;
    v /= 1000;
    ++i;
  }
  return ThreeDigits(v) + kPrefix[i];
}

std::string FormatPercent(double fraction, int digits) {
  if (!std::isfinite(fraction)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%%", digits, fraction * 100);
  return buf;
}

std::string FormatSigned(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return Printf("%+.2f%%", fraction * 100);
}

std::string FormatNumber(double v, int significant) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

std::string FormatP(double p) {
  if (!std::isfinite(p)) return "-";
  if (p < 1e-4) return Printf("%.1e", p);
  return Printf("%.4f", p);
}

std::string RenderMarkdown(const Document& doc) {
  std::string out;
  out.reserve(1 << 20);
  out += "# " + doc.title + "\n\n";
  for (const auto& n : doc.notes) out += n + "\n\n";
  bool in_details = false;
  for (const Section& s : doc.sections) {
    if (s.details && !in_details) {
      out += "## Details\n\n";
      in_details = true;
    }
    out += (in_details ? "### " : "## ") + s.title + "\n\n";
    for (const auto& n : s.notes) out += n + "\n\n";
    for (const Table& t : s.tables) {
      if (!t.title.empty()) out += "**" + MdEscape(t.title) + "**\n\n";
      out += "|";
      for (const Column& c : t.columns) out += " " + MdEscape(c.title) + " |";
      out += "\n|";
      std::vector<bool> right = RightAligned(t);
      for (size_t i = 0; i < t.columns.size(); ++i) out += right[i] ? " ---: |" : " --- |";
      out += "\n";
      for (const auto& row : t.rows) {
        out += "|";
        for (const Cell& c : row) out += " " + MdEscape(c.text) + " |";
        out += "\n";
      }
      out += "\n";
    }
  }
  return out;
}

namespace {

std::string ToneClass(Tone t, bool left) {
  std::string c = left ? "l" : "";
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
  if (s.details)
    *out += "<details><summary><h2>" + HtmlEscape(s.title) + "</h2></summary>\n";
  else
    *out += "<h2>" + HtmlEscape(s.title) + "</h2>\n";
  for (const auto& n : s.notes) *out += "<p>" + HtmlInline(n) + "</p>\n";
  for (const Table& t : s.tables) {
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
        *out += std::string("<td") + ToneClass(c.tone, left) + ">" + HtmlEscape(c.text) + "</td>";
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
         "table{border-collapse:collapse;margin:8px 0 20px}div.tw{max-width:100%;overflow-x:auto}\n"
         "th,td{border:1px solid #ccc;padding:3px 8px;text-align:right;white-space:nowrap}\n"
         "th{background:#f2f2f2}td:first-child,th:first-child,td.l,th.l{text-align:left}\n"
         "tr:nth-child(even) td{background:#fafafa}\n"
         "h3{font-size:15px;margin:16px 0 4px}\n"
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
      "c.forEach(d=>d.open=false)}</script>\n</body></html>\n";
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
        for (const Cell& c : row) out += "," + (c.value ? CsvNumber(*c.value) : CsvField(c.text));
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

std::string RenderJson(const Document& doc) {
  using ojson = nlohmann::ordered_json;
  ojson j;
  j["title"] = doc.title;
  j["notes"] = doc.notes;
  j["sections"] = ojson::array();
  for (const Section& s : doc.sections) {
    ojson js;
    js["title"] = s.title;
    js["notes"] = s.notes;
    js["tables"] = ojson::array();
    for (const Table& t : s.tables) {
      ojson jt;
      jt["title"] = t.title;
      ojson cols = ojson::array();
      for (const Column& c : t.columns) cols.push_back(c.key);
      jt["columns"] = cols;
      ojson rows = ojson::array();
      for (const auto& row : t.rows) {
        ojson r = ojson::object();
        for (size_t i = 0; i < row.size() && i < t.columns.size(); ++i) {
          if (row[i].value)
            r[t.columns[i].key] = *row[i].value;
          else if (row[i].text == "-")
            r[t.columns[i].key] = nullptr;
          else
            r[t.columns[i].key] = row[i].text;
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
