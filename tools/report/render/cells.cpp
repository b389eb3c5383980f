// The cells' text: numbers with their units (FormatTime, FormatRate, ...), a Cell as every
// renderer writes it (CellText), and prose made of cells. document.cpp renders whole documents.
#include <cmath>
#include <cstdio>

#include "tools/report/render/document.h"
#include "tools/report/render/text.h"

namespace dlb::report {

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

std::string FormatDuration(double s) {
  if (!std::isfinite(s)) return "-";
  if (s >= 7200) return FormatNumber(s / 3600, 3) + " h";
  if (s >= 120) return FormatNumber(s / 60, 3) + " min";
  return FormatTime(s * 1e9);
}

std::string FormatBytes(double b, int significant) {
  if (!std::isfinite(b)) return "-";
  static const char* kUnit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) {
    b /= 1024;
    ++i;
  }
  return FormatNumber(b, significant) + " " + kUnit[i];
}

std::string WithUnit(double v, const std::string& unit) {
  std::string r = FormatRate(v);
  bool join = (unit.rfind("FLOP/s", 0) == 0 || unit.rfind("OP/s", 0) == 0 ||
               unit.rfind("B/s", 0) == 0 || unit == "B") &&
              !r.empty() && !std::isdigit(static_cast<unsigned char>(r.back()));
  return r + (join ? "" : " ") + unit;
}

Cell Cell::Of(Kind kind, double v, std::string unit, int digits) {
  Cell c;
  c.kind = kind;
  if (std::isfinite(v)) c.value = v;
  c.unit = std::move(unit);
  c.digits = digits;
  return c;
}

Cell Cell::Key(std::string k) {
  Cell c(std::move(k));
  c.kind = Kind::kKey;
  return c;
}

namespace {

// "50,000".
std::string Grouped(double n) {
  std::string s = Printf("%.0f", n), out;
  const size_t sign = !s.empty() && s[0] == '-' ? 1 : 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > sign && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

std::string NumberText(const Cell& c) {
  const double v = *c.value;
  auto with_word = [&](std::string s) { return c.unit.empty() ? s : s + " " + c.unit; };
  switch (c.kind) {
    case Kind::kText:
    case Kind::kKey:
      return c.text;
    case Kind::kTime:
      return FormatTime(v);
    case Kind::kRate:
      return c.unit.empty() ? FormatRate(v) : WithUnit(v, c.unit);
    case Kind::kRatio:
      return FormatNumber(v, c.digits < 0 ? 3 : c.digits) + "x";
    case Kind::kPercent:
      return FormatPercent(v, c.digits < 0 ? 1 : c.digits);
    case Kind::kSigned:
      return FormatSigned(v);
    case Kind::kCount:
      return with_word(c.grouped ? Grouped(v) : Printf("%.0f", v));
    case Kind::kFixed: {
      char buf[64];
      std::snprintf(buf, sizeof buf, c.plus ? "%+.*f" : "%.*f", c.digits < 0 ? 4 : c.digits, v);
      return buf;
    }
    case Kind::kNumber:
      return with_word(FormatNumber(v, c.digits < 0 ? 4 : c.digits));
    case Kind::kBytes:
      return FormatBytes(v, c.digits < 0 ? 4 : c.digits);
    case Kind::kDuration:
      return FormatDuration(v);
    case Kind::kP:
      return FormatP(v);
  }
  return c.text;
}

}  // namespace

std::string CellText(const Cell& c) {
  std::string s;
  if (c.kind == Kind::kText || c.kind == Kind::kKey)
    s = c.text;
  else
    s = c.value ? NumberText(c) : "-";
  if (s == "-") return s;
  if (c.doubtful) s = "⚠ " + s;
  s += c.after;
  return s;
}

std::string Cell::Text() const { return CellText(*this); }

std::string Prose(std::initializer_list<Cell> parts) {
  std::string out;
  for (const Cell& c : parts) out += CellText(c);
  return out;
}

}  // namespace dlb::report
