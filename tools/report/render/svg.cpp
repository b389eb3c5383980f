// Charts as inline SVG: bars (a value per label), stacked bars (shares per label) and lines (series
// over x, optionally log-scaled, with marks). Every chart is self-contained: no script, no fonts.
#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "tools/report/render/document.h"
#include "tools/report/render/text.h"

namespace dlb::report {

namespace {

// One colour per dtype in every chart, so that bf16 reads the same in the roofline's roofs, the
// speedup bars and the throughput curves; what stands for no dtype (a backend's curve, a training
// phase) takes the colours no dtype holds, so that a dtype's colour never means anything else.
struct DtypeColour {
  const char* dtype;
  const char* colour;
};
const DtypeColour kDtypeColours[] = {
    {"f32", "#1f77b4"}, {"tf32", "#9467bd"}, {"bf16", "#d62728"},     {"f16", "#ff7f0e"},
    {"fp8", "#2ca02c"}, {"int8", "#8c564b"}, {"amp_bf16", "#e377c2"}, {"amp_f16", "#bcbd22"},
};
const char* kOtherColours[] = {"#17becf", "#7f7f7f", "#222222", "#6b8fd6",
                               "#98df8a", "#c5b0d5", "#c49c94", "#dbdb8d"};

constexpr size_t kOthers = sizeof kOtherColours / sizeof *kOtherColours;
const char* OtherColour(size_t i) { return kOtherColours[i % kOthers]; }

// The colour of a dtype named exactly ("bf16"); nullptr for another word.
const char* ColourOfDtype(const std::string& dtype) {
  for (const DtypeColour& d : kDtypeColours)
    if (dtype == d.dtype) return d.colour;
  return nullptr;
}

// The dtype a series' name holds as a word ("bf16 nhwc fwd", "roof bf16/fp8 800 T"): the first.
const char* DtypeColourOf(const std::string& name) {
  size_t start = 0;
  while (start < name.size()) {
    size_t end = name.find_first_of(" /,:()", start);
    if (end == std::string::npos) end = name.size();
    if (const char* c = ColourOfDtype(name.substr(start, end - start))) return c;
    start = end + 1;
  }
  return nullptr;
}

// The colour of what stands for a dtype: the one it names, else the one its label holds.
const char* DtypeColourOf(const std::string& dtype, const std::string& label) {
  if (const char* c = ColourOfDtype(dtype)) return c;
  return DtypeColourOf(label);
}

// Each series' colour and marker in a line chart: its dtype's colour, else one of the others (the
// series' own or its position's); series of one colour (a dtype's CPU and GPU curves) are told
// apart by their markers' shapes.
struct SeriesStyle {
  const char* colour = nullptr;
  int shape = 0;
  bool shared = false;  // another series with markers has its colour: the legend shows the shape
};
std::vector<SeriesStyle> SeriesStyles(const Chart& chart) {
  std::vector<SeriesStyle> out(chart.series.size());
  std::map<std::string, int> rank;  // per colour, the series with markers so far
  size_t other = 0;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    out[i].colour = DtypeColourOf(s.dtype, s.name);
    if (!out[i].colour)
      out[i].colour = OtherColour(s.color >= 0 ? static_cast<size_t>(s.color) : other++);
    int& n = rank[out[i].colour];
    out[i].shape = s.shape >= 0 ? s.shape : n;
    n += s.markers;
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].shared = rank[out[i].colour] > 1;
  return out;
}

// A marker at (x, y): filled circle, square, triangle, diamond, then the same hollow.
void Marker(std::ostream& o, int shape, double x, double y, const char* colour,
            const std::string& title) {
  const bool hollow = (shape / 4) % 2 == 1;
  const std::string paint =
      hollow ? std::string("fill=\"#fff\" stroke=\"") + colour + "\" stroke-width=\"1.5\""
             : std::string("fill=\"") + colour + "\"";
  const std::string tip = title.empty() ? "" : "<title>" + HtmlEscape(title) + "</title>";
  switch (shape % 4) {
    case 1:
      o << "<rect class=\"mk\" x=\"" << x - 3.2 << "\" y=\"" << y - 3.2
        << "\" width=\"6.4\" height=\"6.4\" " << paint << ">" << tip << "</rect>";
      return;
    case 2:
      o << "<polygon class=\"mk\" points=\"" << x << "," << y - 4.4 << " " << x + 4.2 << ","
        << y + 3.2 << " " << x - 4.2 << "," << y + 3.2 << "\" " << paint << ">" << tip
        << "</polygon>";
      return;
    case 3:
      o << "<polygon class=\"mk\" points=\"" << x << "," << y - 4.6 << " " << x + 4.6 << "," << y
        << " " << x << "," << y + 4.6 << " " << x - 4.6 << "," << y << "\" " << paint << ">" << tip
        << "</polygon>";
      return;
    default:
      o << "<circle class=\"mk\" cx=\"" << x << "\" cy=\"" << y << "\" r=\"3.5\" " << paint << ">"
        << tip << "</circle>";
  }
}

// Whether every x of a chart is a whole number small enough to print in full (batch sizes,
// sequence lengths, workers, GPUs): its ticks then read "1024", never "1.02k".
bool IntegerX(const std::set<double>& xs) {
  return !xs.empty() && std::all_of(xs.begin(), xs.end(), [](double x) {
    return std::fabs(x) < 1e6 && x == std::round(x);
  });
}

constexpr double kRight = 30, kTop = 36;        // margins every chart keeps
constexpr double kBarHeight = 18, kBarGap = 6;  // bar and stacked charts

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

// Room for the longest label (about 6.2 px a character at 11 px).
template <typename Labelled>
double LabelRoom(const std::vector<Labelled>& rows) {
  size_t longest = 0;
  for (const auto& row : rows) longest = std::max(longest, row.first.size());
  return std::clamp(12 + 6.2 * static_cast<double>(longest), 120.0, 520.0);
}

void OpenSvg(std::ostream& o, double w, double h) {
  o << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\""
    << h << "\" viewBox=\"0 0 " << w << " " << h << "\">";
}

// The row's label left of a bar at height y.
void BarLabel(std::ostream& o, double left, double y, const std::string& label) {
  o << "<text x=\"" << left - 6 << "\" y=\"" << y + kBarHeight * 0.75
    << "\" text-anchor=\"end\" class=\"lbl\">" << HtmlEscape(label) << "</text>";
}

// The x axis under bars: its line and the tick labels.
template <typename X>
void BarAxis(std::ostream& o, double left, double plot_w, double axis_y,
             const std::vector<double>& ticks, X x_of) {
  o << "<line x1=\"" << left << "\" y1=\"" << axis_y << "\" x2=\"" << left + plot_w << "\" y2=\""
    << axis_y << "\" stroke=\"#444\"/>";
  for (double t : ticks)
    o << "<text x=\"" << x_of(t) << "\" y=\"" << axis_y + 16 << "\" text-anchor=\"middle\" "
      << "class=\"tick\">" << TickLabel(t) << "</text>";
}

std::string BarsSvg(const Chart& chart) {
  std::ostringstream o;
  const double left = LabelRoom(chart.bars);
  const double W = left + 520;
  double H = kTop + static_cast<double>(chart.bars.size()) * (kBarHeight + kBarGap) + 40;
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
  auto axis_x = [&](double v) { return chart.log_x ? std::log10(v) : v; };
  double a = chart.log_x ? std::floor(axis_x(lo > 0 ? lo : 1)) : std::min(0.0, lo);
  double b = chart.log_x ? std::ceil(axis_x(hi > 0 ? hi : 1)) : hi * 1.05;
  if (!(b > a)) b = a + 1;
  double plot_w = W - left - kRight - 60;
  auto pixel_x = [&](double v) { return left + (axis_x(v) - a) / (b - a) * plot_w; };
  OpenSvg(o, W, H);
  o << "<text x=\"" << W / 2 << "\" y=\"20\" text-anchor=\"middle\" class=\"title\">"
    << HtmlEscape(chart.title) << "</text><g class=\"plot\">";
  double base = chart.log_x ? pixel_x(std::pow(10, a)) : pixel_x(std::max(0.0, a));
  const double reference = std::isfinite(chart.bar_reference) ? chart.bar_reference : 0;
  for (size_t i = 0; i < chart.bars.size(); ++i) {
    const auto& [label, v] = chart.bars[i];
    double y = kTop + static_cast<double>(i) * (kBarHeight + kBarGap);
    BarLabel(o, left, y, label);
    if (!std::isfinite(v) || (chart.log_x && v <= 0)) continue;
    double x1 = pixel_x(v);
    // A bar of a dtype in its colour, others in one no dtype holds; short of the reference (a GPU
    // slower than the CPU) paler, besides ending left of the dashed line.
    const char* colour =
        DtypeColourOf(i < chart.bar_dtypes.size() ? chart.bar_dtypes[i] : std::string(), label);
    o << "<rect x=\"" << std::min(base, x1) << "\" y=\"" << y << "\" width=\""
      << std::max(1.0, std::fabs(x1 - base)) << "\" height=\"" << kBarHeight << "\" fill=\""
      << (colour ? colour : OtherColour(1)) << "\""
      << (v < reference ? " fill-opacity=\"0.5\"" : "") << "><title>" << HtmlEscape(label) << ": "
      << FormatNumber(v, 3) << "</title></rect>";
    o << "<text x=\"" << std::max(base, x1) + 4 << "\" y=\"" << y + kBarHeight * 0.75
      << "\" class=\"val\">" << FormatNumber(v, 3) << "</text>";
  }
  o << "</g>";
  double axis_y = kTop + static_cast<double>(chart.bars.size()) * (kBarHeight + kBarGap) + 4;
  std::vector<double> ticks;
  if (chart.log_x) {
    for (double e = a; e <= b + 1e-9; e += 1) ticks.push_back(std::pow(10, e));
  } else {
    ticks = NiceTicks(a, b, 5);
  }
  BarAxis(o, left, plot_w, axis_y, ticks, pixel_x);
  if (std::isfinite(chart.bar_reference))
    o << "<line x1=\"" << pixel_x(chart.bar_reference) << "\" y1=\"" << kTop - 4 << "\" x2=\""
      << pixel_x(chart.bar_reference) << "\" y2=\"" << axis_y << "\" stroke=\"#444\" "
      << "stroke-dasharray=\"4 3\"/>";
  o << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << H - 4
    << "\" text-anchor=\"middle\" class=\"axis\">" << HtmlEscape(chart.x_label) << "</text>";
  o << "</svg>";
  return o.str();
}

std::string StackedSvg(const Chart& chart) {
  std::ostringstream o;
  const double left = LabelRoom(chart.stacks);
  const double W = left + 520;
  const double rows = static_cast<double>(chart.stacks.size());
  const double H = kTop + rows * (kBarHeight + kBarGap) + 62;
  double hi = 0;
  for (const auto& st : chart.stacks) {
    double sum = 0;
    for (double v : st.second)
      if (std::isfinite(v) && v > 0) sum += v;
    hi = std::max(hi, sum);
  }
  if (!(hi > 0)) hi = 1;
  const double plot_w = W - left - kRight - 20;
  auto pixel_x = [&](double v) { return left + v / hi * plot_w; };
  OpenSvg(o, W, H);
  o << "<text x=\"" << W / 2 << "\" y=\"20\" text-anchor=\"middle\" class=\"title\">"
    << HtmlEscape(chart.title) << "</text><g class=\"plot\">";
  for (size_t i = 0; i < chart.stacks.size(); ++i) {
    const auto& [label, values] = chart.stacks[i];
    double y = kTop + static_cast<double>(i) * (kBarHeight + kBarGap);
    BarLabel(o, left, y, label);
    double at = 0;
    for (size_t k = 0; k < values.size(); ++k) {
      double v = values[k];
      if (!std::isfinite(v) || v <= 0) continue;
      std::string seg = k < chart.segments.size() ? chart.segments[k] : std::to_string(k);
      o << "<rect x=\"" << pixel_x(at) << "\" y=\"" << y << "\" width=\""
        << pixel_x(at + v) - pixel_x(at) << "\" height=\"" << kBarHeight << "\" fill=\""
        << OtherColour(k) << "\"><title>" << HtmlEscape(label) << ": " << HtmlEscape(seg) << " "
        << FormatNumber(v, 3) << "</title></rect>";
      at += v;
    }
  }
  o << "</g>";
  double axis_y = kTop + rows * (kBarHeight + kBarGap) + 4;
  BarAxis(o, left, plot_w, axis_y, NiceTicks(0, hi, 5), pixel_x);
  o << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << axis_y + 32
    << "\" text-anchor=\"middle\" class=\"axis\">" << HtmlEscape(chart.x_label) << "</text>";
  double lx = left;
  for (size_t k = 0; k < chart.segments.size(); ++k) {
    o << "<rect x=\"" << lx << "\" y=\"" << H - 16 << "\" width=\"12\" height=\"12\" fill=\""
      << OtherColour(k) << "\"/><text x=\"" << lx + 16 << "\" y=\"" << H - 6 << "\" class=\"lbl\">"
      << HtmlEscape(chart.segments[k]) << "</text>";
    lx += 30 + 6.2 * static_cast<double>(chart.segments[k].size());
  }
  o << "</svg>";
  return o.str();
}

// A line chart's frame: its size, the data's range on the transformed axes (log2 for x, log10 for
// y where the chart says), and how a point maps to pixels.
struct LineFrame {
  const Chart& chart;
  double W = 0, H = 340, left = 70, bottom = 50, right = 170;
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0, plot_w = 0, plot_h = 0;
  std::set<double> xs;  // every x drawn

  explicit LineFrame(const Chart& c) : chart(c), W(c.width > 0 ? c.width : 720) {
    Fit();
    plot_w = W - left - right;
    plot_h = H - kTop - bottom;
  }
  double AxisX(double v) const { return chart.log_x ? std::log2(v) : v; }
  double AxisY(double v) const { return chart.log_y ? std::log10(v) : v; }
  double PixelX(double x) const { return left + (AxisX(x) - x0) / (x1 - x0) * plot_w; }
  double PixelY(double y) const { return kTop + plot_h - (AxisY(y) - y0) / (y1 - y0) * plot_h; }
  bool Drawn(double x, double y) const {
    return std::isfinite(x) && std::isfinite(y) && !(chart.log_x && x <= 0) &&
           !(chart.log_y && y <= 0);
  }

 private:
  void Fit() {
    bool any = false;
    for (const Series& s : chart.series)
      for (auto [x, y] : s.points) {
        if (!Drawn(x, y)) continue;
        xs.insert(x);
        double ax = AxisX(x), ay = AxisY(y);
        if (!any) {
          x0 = x1 = ax;
          y0 = y1 = ay;
          any = true;
        }
        x0 = std::min(x0, ax);
        x1 = std::max(x1, ax);
        y0 = std::min(y0, ay);
        y1 = std::max(y1, ay);
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
  }
};

// The frame, the ticks and grid lines of both axes, and the axis titles.
void LineAxes(std::ostream& o, const LineFrame& f) {
  const Chart& chart = f.chart;
  const double top = kTop, left = f.left, plot_w = f.plot_w, plot_h = f.plot_h;
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << plot_w << "\" height=\""
    << plot_h << "\" fill=\"none\" stroke=\"#444\"/>";
  std::vector<double> xt;
  if (chart.log_x && f.xs.size() <= 12) {
    xt.assign(f.xs.begin(), f.xs.end());
  } else if (chart.log_x) {
    for (double e = std::ceil(f.x0); e <= f.x1 + 1e-9; e += 1) xt.push_back(std::pow(2, e));
  } else {
    xt = NiceTicks(f.x0, f.x1, 6);
  }
  const bool integer_x = IntegerX(f.xs);
  for (double t : xt)
    o << "<line x1=\"" << f.PixelX(t) << "\" y1=\"" << top + plot_h << "\" x2=\"" << f.PixelX(t)
      << "\" y2=\"" << top + plot_h + 5 << "\" stroke=\"#444\"/><text x=\"" << f.PixelX(t)
      << "\" y=\"" << top + plot_h + 18 << "\" text-anchor=\"middle\" class=\"tick\">"
      << (integer_x && t == std::round(t) ? Printf("%.0f", t) : TickLabel(t)) << "</text>";
  std::vector<double> yt;
  if (chart.log_y) {
    for (double e = std::ceil(f.y0); e <= f.y1 + 1e-9; e += 1) yt.push_back(std::pow(10, e));
    if (yt.size() < 2)
      yt = {std::pow(10, f.y0 + (f.y1 - f.y0) * 0.1), std::pow(10, f.y1 - (f.y1 - f.y0) * 0.1)};
  } else {
    yt = NiceTicks(f.y0, f.y1, 5);
  }
  for (double t : yt)
    o << "<line x1=\"" << left << "\" y1=\"" << f.PixelY(t) << "\" x2=\"" << left + plot_w
      << "\" y2=\"" << f.PixelY(t) << "\" stroke=\"#ddd\"/><text x=\"" << left - 6 << "\" y=\""
      << f.PixelY(t) + 4 << "\" text-anchor=\"end\" class=\"tick\">" << TickLabel(t) << "</text>";
  o << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << f.H - 10
    << "\" text-anchor=\"middle\" class=\"axis\">" << HtmlEscape(chart.x_label) << "</text>";
  o << "<text transform=\"translate(16," << top + plot_h / 2
    << ") rotate(-90)\" text-anchor=\"middle\" class=\"axis\">" << HtmlEscape(chart.y_label)
    << "</text>";
}

// One series: its markers, its line, and (with several series) its legend entry.
void LineSeries(std::ostream& o, const LineFrame& f, size_t si, const SeriesStyle& style) {
  const char* color = style.colour;
  const Chart& chart = f.chart;
  const Series& s = chart.series[si];
  const bool integer_x = IntegerX(f.xs);
  std::string pts;
  for (auto [x, y] : s.points) {
    if (!f.Drawn(x, y)) continue;
    pts += Printf("%.1f", f.PixelX(x)) + "," + Printf("%.1f", f.PixelY(y)) + " ";
    if (s.markers)
      Marker(o, style.shape, f.PixelX(x), f.PixelY(y), color,
             s.name + ": " + (integer_x ? Printf("%.0f", x) : TickLabel(x)) + ", " +
                 FormatNumber(y, 4));
  }
  if (s.line && !pts.empty())
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\""
      << (s.markers || s.solid ? "" : " stroke-dasharray=\"5 3\"") << " points=\"" << pts << "\"/>";
  if (chart.series.size() < 2) return;  // one series: the title names it
  const double lx = f.left + f.plot_w, ly = kTop + 10 + static_cast<double>(si) * 18;
  o << "<line x1=\"" << lx + 10 << "\" y1=\"" << ly << "\" x2=\"" << lx + 30 << "\" y2=\"" << ly
    << "\" stroke=\"" << color << "\" stroke-width=\"2\""
    << (s.markers || s.solid ? "" : " stroke-dasharray=\"5 3\"") << "/>";
  if (s.markers && style.shared) Marker(o, style.shape, lx + 20, ly, color, "");
  o << "<text x=\"" << lx + 34 << "\" y=\"" << ly + 4 << "\" class=\"lbl\">" << HtmlEscape(s.name)
    << "</text>";
}

std::string LinesSvg(const Chart& chart) {
  std::ostringstream o;
  const LineFrame f(chart);
  OpenSvg(o, f.W, f.H);
  o << "<text x=\"" << f.left + f.plot_w / 2
    << "\" y=\"20\" text-anchor=\"middle\" class=\"title\">" << HtmlEscape(chart.title)
    << "</text>";
  LineAxes(o, f);
  o << "<g class=\"plot\">";
  for (const auto& [x, text] : chart.marks) {
    if (!std::isfinite(x) || (chart.log_x && x <= 0) || f.AxisX(x) < f.x0 || f.AxisX(x) > f.x1)
      continue;
    o << "<line class=\"mark\" x1=\"" << f.PixelX(x) << "\" y1=\"" << kTop << "\" x2=\""
      << f.PixelX(x) << "\" y2=\"" << kTop + f.plot_h
      << "\" stroke=\"#999\" stroke-dasharray=\"2 3\"><title>" << HtmlEscape(text)
      << "</title></line>";
  }
  const std::vector<SeriesStyle> styles = SeriesStyles(chart);
  for (size_t si = 0; si < chart.series.size(); ++si) LineSeries(o, f, si, styles[si]);
  o << "</g></svg>";
  return o.str();
}

}  // namespace

std::string RenderSvg(const Chart& chart) {
  switch (chart.kind) {
    case Chart::Kind::kBars:
      return BarsSvg(chart);
    case Chart::Kind::kStacked:
      return StackedSvg(chart);
    case Chart::Kind::kLines:
      break;
  }
  return LinesSvg(chart);
}

}  // namespace dlb::report
