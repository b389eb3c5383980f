#include "tools/report/document.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

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

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// Three significant digits without exponents: 123, 12.3, 1.23.
std::string ThreeDigits(double v) {
  double a = std::fabs(v);
  if (a >= 99.95) return Printf("%.0f", v);
  if (a >= 9.995) return Printf("%.1f", v);
  return Printf("%.2f", v);
}

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

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                          "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

// Round tick values on a linear axis.
std::vector<double> NiceTicks(double lo, double hi, int want) {
  std::vector<double> t;
  if (!(hi > lo)) return {lo};
  double raw = (hi - lo) / want, mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(v);
  return t;
}

// Axis labels: 3 significant digits, SI suffixes from a thousand up ("250k", "1.5M").
std::string TickLabel(double v) {
  double a = std::fabs(v);
  if (a == 0) return "0";
  static const char* kSuffix[] = {"", "k", "M", "G", "T", "P"};
  int i = 0;
  while (a >= 1000 && i < 5) {
    a /= 1000;
    v /= 1000;
    ++i;
  }
  if (i == 0 && a < 1e-2) return Printf("%.3g", v);
  return Printf("%.3g", v) + kSuffix[i];
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

std::string RenderSvg(const Chart& chart) {
  std::ostringstream o;
  const double right = 30, top = 36;
  if (chart.kind == Chart::Kind::kBars) {
    // Room for the longest label (about 6.2 px a character at 11 px).
    size_t longest = 0;
    for (const auto& bar : chart.bars) longest = std::max(longest, bar.first.size());
    const double left = std::clamp(12 + 6.2 * static_cast<double>(longest), 120.0, 520.0);
    const double W = left + 520;
    const double bar_h = 18, gap = 6;
    double H = top + static_cast<double>(chart.bars.size()) * (bar_h + gap) + 40;
    double lo = 0, hi = 0;
    bool any = false;
    for (const auto& [label, v] : chart.bars)
      if (std::isfinite(v) && (!chart.log_x || v > 0)) {
        lo = any ? std::min(lo, v) : v;
        hi = any ? std::max(hi, v) : v;
        any = true;
      }
    if (std::isfinite(chart.bar_reference)) {
      lo = std::min(lo, chart.bar_reference);
      hi = std::max(hi, chart.bar_reference);
    }
    auto tx = [&](double v) { return chart.log_x ? std::log10(v) : v; };
    double a = chart.log_x ? std::floor(tx(lo > 0 ? lo : 1)) : std::min(0.0, lo);
    double b = chart.log_x ? std::ceil(tx(hi > 0 ? hi : 1)) : hi * 1.05;
    if (!(b > a)) b = a + 1;
    double plot_w = W - left - right - 60;
    auto X = [&](double v) { return left + (tx(v) - a) / (b - a) * plot_w; };
    o << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\""
      << H << "\" viewBox=\"0 0 " << W << " " << H << "\">";
    o << "<text x=\"" << W / 2 << "\" y=\"20\" text-anchor=\"middle\" class=\"title\">"
      << HtmlEscape(chart.title) << "</text><g class=\"plot\">";
    double base = chart.log_x ? X(std::pow(10, a)) : X(std::max(0.0, a));
    for (size_t i = 0; i < chart.bars.size(); ++i) {
      const auto& [label, v] = chart.bars[i];
      double y = top + static_cast<double>(i) * (bar_h + gap);
      o << "<text x=\"" << left - 6 << "\" y=\"" << y + bar_h * 0.75
        << "\" text-anchor=\"end\" class=\"lbl\">" << HtmlEscape(label) << "</text>";
      if (!std::isfinite(v) || (chart.log_x && v <= 0)) continue;
      double x1 = X(v);
      o << "<rect x=\"" << std::min(base, x1) << "\" y=\"" << y << "\" width=\""
        << std::max(1.0, std::fabs(x1 - base)) << "\" height=\"" << bar_h << "\" fill=\""
        << kPalette[(v >= (std::isfinite(chart.bar_reference) ? chart.bar_reference : 0)) ? 0 : 1]
        << "\"><title>" << HtmlEscape(label) << ": " << FormatNumber(v, 3) << "</title></rect>";
      o << "<text x=\"" << std::max(base, x1) + 4 << "\" y=\"" << y + bar_h * 0.75
        << "\" class=\"val\">" << FormatNumber(v, 3) << "</text>";
    }
    o << "</g>";
    double axis_y = top + static_cast<double>(chart.bars.size()) * (bar_h + gap) + 4;
    o << "<line x1=\"" << left << "\" y1=\"" << axis_y << "\" x2=\"" << left + plot_w << "\" y2=\""
      << axis_y << "\" stroke=\"#444\"/>";
    std::vector<double> ticks;
    if (chart.log_x) {
      for (double e = a; e <= b + 1e-9; e += 1) ticks.push_back(std::pow(10, e));
    } else {
      ticks = NiceTicks(a, b, 5);
    }
    for (double t : ticks)
      o << "<text x=\"" << X(t) << "\" y=\"" << axis_y + 16 << "\" text-anchor=\"middle\" "
        << "class=\"tick\">" << TickLabel(t) << "</text>";
    if (std::isfinite(chart.bar_reference))
      o << "<line x1=\"" << X(chart.bar_reference) << "\" y1=\"" << top - 4 << "\" x2=\""
        << X(chart.bar_reference) << "\" y2=\"" << axis_y << "\" stroke=\"#444\" "
        << "stroke-dasharray=\"4 3\"/>";
    o << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << H - 4
      << "\" text-anchor=\"middle\" class=\"axis\">" << HtmlEscape(chart.x_label) << "</text>";
    o << "</svg>";
    return o.str();
  }

  if (chart.kind == Chart::Kind::kStacked) {
    size_t longest = 0;
    for (const auto& st : chart.stacks) longest = std::max(longest, st.first.size());
    const double left = std::clamp(12 + 6.2 * static_cast<double>(longest), 120.0, 520.0);
    const double W = left + 520, bar_h = 18, gap = 6;
    const double rows = static_cast<double>(chart.stacks.size());
    const double H = top + rows * (bar_h + gap) + 62;
    double hi = 0;
    for (const auto& st : chart.stacks) {
      double sum = 0;
      for (double v : st.second)
        if (std::isfinite(v) && v > 0) sum += v;
      hi = std::max(hi, sum);
    }
    if (!(hi > 0)) hi = 1;
    const double plot_w = W - left - right - 20;
    auto X = [&](double v) { return left + v / hi * plot_w; };
    o << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\""
      << H << "\" viewBox=\"0 0 " << W << " " << H << "\">";
    o << "<text x=\"" << W / 2 << "\" y=\"20\" text-anchor=\"middle\" class=\"title\">"
      << HtmlEscape(chart.title) << "</text><g class=\"plot\">";
    for (size_t i = 0; i < chart.stacks.size(); ++i) {
      const auto& [label, values] = chart.stacks[i];
      double y = top + static_cast<double>(i) * (bar_h + gap);
      o << "<text x=\"" << left - 6 << "\" y=\"" << y + bar_h * 0.75
        << "\" text-anchor=\"end\" class=\"lbl\">" << HtmlEscape(label) << "</text>";
      double at = 0;
      for (size_t k = 0; k < values.size(); ++k) {
        double v = values[k];
        if (!std::isfinite(v) || v <= 0) continue;
        std::string seg = k < chart.segments.size() ? chart.segments[k] : std::to_string(k);
        o << "<rect x=\"" << X(at) << "\" y=\"" << y << "\" width=\"" << X(at + v) - X(at)
          << "\" height=\"" << bar_h << "\" fill=\"" << kPalette[k % 10] << "\"><title>"
          << HtmlEscape(label) << ": " << HtmlEscape(seg) << " " << FormatNumber(v, 3)
          << "</title></rect>";
        at += v;
      }
    }
    o << "</g>";
    double axis_y = top + rows * (bar_h + gap) + 4;
    o << "<line x1=\"" << left << "\" y1=\"" << axis_y << "\" x2=\"" << left + plot_w << "\" y2=\""
      << axis_y << "\" stroke=\"#444\"/>";
    for (double t : NiceTicks(0, hi, 5))
      o << "<text x=\"" << X(t) << "\" y=\"" << axis_y + 16 << "\" text-anchor=\"middle\" "
        << "class=\"tick\">" << TickLabel(t) << "</text>";
    o << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << axis_y + 32
      << "\" text-anchor=\"middle\" class=\"axis\">" << HtmlEscape(chart.x_label) << "</text>";
    double lx = left;
    for (size_t k = 0; k < chart.segments.size(); ++k) {
      o << "<rect x=\"" << lx << "\" y=\"" << H - 16 << "\" width=\"12\" height=\"12\" fill=\""
        << kPalette[k % 10] << "\"/><text x=\"" << lx + 16 << "\" y=\"" << H - 6
        << "\" class=\"lbl\">" << HtmlEscape(chart.segments[k]) << "</text>";
      lx += 30 + 6.2 * static_cast<double>(chart.segments[k].size());
    }
    o << "</svg>";
    return o.str();
  }

  // Line chart.
  const double W = chart.width > 0 ? chart.width : 720, H = 340, lft = 70, bottom = 50, rgt = 170;
  auto fx = [&](double v) { return chart.log_x ? std::log2(v) : v; };
  auto fy = [&](double v) { return chart.log_y ? std::log10(v) : v; };
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  bool any = false;
  std::set<double> xs;
  for (const Series& s : chart.series)
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || (chart.log_x && x <= 0) ||
          (chart.log_y && y <= 0))
        continue;
      xs.insert(x);
      double X = fx(x), Y = fy(y);
      if (!any) {
        x0 = x1 = X;
        y0 = y1 = Y;
        any = true;
      }
      x0 = std::min(x0, X);
      x1 = std::max(x1, X);
      y0 = std::min(y0, Y);
      y1 = std::max(y1, Y);
    }
  if (!chart.log_y && y0 > 0) y0 = 0;
  if (!(x1 > x0)) {
    x0 -= 1;
    x1 += 1;
  }
  if (!(y1 > y0)) {
    y0 -= 1;
    y1 += 1;
  }
  double pad = (y1 - y0) * 0.06;
  y1 += pad;
  if (chart.log_y || y0 < 0) y0 -= pad;
  double pw = W - lft - rgt, ph = H - top - bottom;
  auto PX = [&](double x) { return lft + (fx(x) - x0) / (x1 - x0) * pw; };
  auto PY = [&](double y) { return top + ph - (fy(y) - y0) / (y1 - y0) * ph; };
  o << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\""
    << H << "\" viewBox=\"0 0 " << W << " " << H << "\">";
  o << "<text x=\"" << lft + pw / 2 << "\" y=\"20\" text-anchor=\"middle\" class=\"title\">"
    << HtmlEscape(chart.title) << "</text>";
  // Axes and ticks.
  o << "<rect x=\"" << lft << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#444\"/>";
  std::vector<double> xt;
  if (chart.log_x && xs.size() <= 12) {
    xt.assign(xs.begin(), xs.end());
  } else if (chart.log_x) {
    for (double e = std::ceil(x0); e <= x1 + 1e-9; e += 1) xt.push_back(std::pow(2, e));
  } else {
    xt = NiceTicks(x0, x1, 6);
  }
  for (double t : xt)
    o << "<line x1=\"" << PX(t) << "\" y1=\"" << top + ph << "\" x2=\"" << PX(t) << "\" y2=\""
      << top + ph + 5 << "\" stroke=\"#444\"/><text x=\"" << PX(t) << "\" y=\"" << top + ph + 18
      << "\" text-anchor=\"middle\" class=\"tick\">" << TickLabel(t) << "</text>";
  std::vector<double> yt;
  if (chart.log_y) {
    for (double e = std::ceil(y0); e <= y1 + 1e-9; e += 1) yt.push_back(std::pow(10, e));
    if (yt.size() < 2)
      yt = {std::pow(10, y0 + (y1 - y0) * 0.1), std::pow(10, y1 - (y1 - y0) * 0.1)};
  } else {
    yt = NiceTicks(y0, y1, 5);
  }
  for (double t : yt)
    o << "<line x1=\"" << lft << "\" y1=\"" << PY(t) << "\" x2=\"" << lft + pw << "\" y2=\""
      << PY(t) << "\" stroke=\"#ddd\"/><text x=\"" << lft - 6 << "\" y=\"" << PY(t) + 4
      << "\" text-anchor=\"end\" class=\"tick\">" << TickLabel(t) << "</text>";
  o << "<text x=\"" << lft + pw / 2 << "\" y=\"" << H - 10
    << "\" text-anchor=\"middle\" class=\"axis\">" << HtmlEscape(chart.x_label) << "</text>";
  o << "<text transform=\"translate(16," << top + ph / 2
    << ") rotate(-90)\" text-anchor=\"middle\" class=\"axis\">" << HtmlEscape(chart.y_label)
    << "</text><g class=\"plot\">";
  for (const auto& [x, text] : chart.marks) {
    if (!std::isfinite(x) || (chart.log_x && x <= 0) || fx(x) < x0 || fx(x) > x1) continue;
    o << "<line class=\"mark\" x1=\"" << PX(x) << "\" y1=\"" << top << "\" x2=\"" << PX(x)
      << "\" y2=\"" << top + ph << "\" stroke=\"#999\" stroke-dasharray=\"2 3\"><title>"
      << HtmlEscape(text) << "</title></line>";
  }
  for (size_t si = 0; si < chart.series.size(); ++si) {
    const Series& s = chart.series[si];
    const char* color = kPalette[(s.color >= 0 ? static_cast<size_t>(s.color) : si) % 10];
    std::string pts;
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || (chart.log_x && x <= 0) ||
          (chart.log_y && y <= 0))
        continue;
      pts += Printf("%.1f", PX(x)) + "," + Printf("%.1f", PY(y)) + " ";
      if (s.markers)
        o << "<circle cx=\"" << PX(x) << "\" cy=\"" << PY(y) << "\" r=\"3.5\" fill=\"" << color
          << "\"><title>" << HtmlEscape(s.name) << ": " << TickLabel(x) << ", "
          << FormatNumber(y, 4) << "</title></circle>";
    }
    if (s.line && !pts.empty())
      o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\""
        << (s.markers || s.solid ? "" : " stroke-dasharray=\"5 3\"") << " points=\"" << pts
        << "\"/>";
    if (chart.series.size() < 2) continue;  // one series: the title names it
    double ly = top + 10 + static_cast<double>(si) * 18;
    o << "<line x1=\"" << lft + pw + 10 << "\" y1=\"" << ly << "\" x2=\"" << lft + pw + 30
      << "\" y2=\"" << ly << "\" stroke=\"" << color << "\" stroke-width=\"2\""
      << (s.markers ? "" : " stroke-dasharray=\"5 3\"") << "/><text x=\"" << lft + pw + 34
      << "\" y=\"" << ly + 4 << "\" class=\"lbl\">" << HtmlEscape(s.name) << "</text>";
  }
  o << "</g></svg>";
  return o.str();
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
  for (const auto& n : s.notes) *out += "<p>" + HtmlEscape(n) + "</p>\n";
  for (const Table& t : s.tables) {
    if (!t.title.empty()) *out += "<h3>" + HtmlEscape(t.title) + "</h3>\n";
    std::vector<bool> right = RightAligned(t);
    *out += "<table><thead><tr>";
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
    *out += "</tbody></table>\n";
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
         "table{border-collapse:collapse;margin:8px 0 20px}\n"
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
  for (const auto& n : doc.notes) out += "<p>" + HtmlEscape(n) + "</p>\n";
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
