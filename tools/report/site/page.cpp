// The site's HTML (page.h). Every page is whole on its own: the style and the index's filter
// script are inline, charts are SVG drawn here, and links stay inside the site's folder.
#include "tools/report/site/page.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "tools/report/render/text.h"

namespace dlb::report::site {

namespace {

constexpr const char* kStyle = R"(<style>
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222}
h1{font-size:20px;margin:0 0 4px;overflow-wrap:anywhere}h2{font-size:17px;margin:20px 0 6px}h3{font-size:15px;margin:14px 0 4px}
table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}
th{background:#f4f4f4;position:sticky;top:0}td:first-child{overflow-wrap:anywhere;max-width:560px}p{overflow-wrap:anywhere}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.slower{color:#b00020}.faster{color:#0a7a32}.muted{color:#777}code{font-size:12px;word-break:break-all}
nav a{margin-right:14px}.filters{margin:8px 0;display:flex;gap:10px;flex-wrap:wrap;align-items:center}
section.cp{border-left:3px solid #ccc;padding:2px 10px;margin:10px 0}section.cp:target{border-color:#b00020;background:#fff6f6}
svg .pt{fill:#1f5fa8}svg .wh{stroke:#9bb7d8;stroke-width:1}svg .seg{stroke:#444;stroke-width:1.5}
svg .cp line{stroke:#b00020;stroke-dasharray:4 3;stroke-width:1.5}svg .cp rect{fill:transparent;cursor:pointer}
svg .ax{stroke:#999;fill:none}svg text{font-size:11px;fill:#555}td.chg{background:#fff2cc}
table.kv td{overflow-wrap:anywhere;max-width:720px}
</style>)";

std::string H(const std::string& s) { return HtmlEscape(s); }

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string Page(const std::string& title, const std::string& body,
                 const std::string& script = "") {
  return "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width\"><title>" +
         H(title) + "</title>" + kStyle + "</head><body>\n" + body + script + "</body></html>\n";
}

std::string Signed(double v) { return std::isfinite(v) ? FormatSigned(v) : "-"; }

// A 120 x 24 sparkline of at most 60 points: the medians in 60 buckets, each the median of its
// runs, so 2,000 rows of 200 runs stay a page that paints at once.
std::string Sparkline(const std::vector<double>& v, const std::string& cls) {
  const size_t kMax = 60;
  std::vector<double> pts;
  if (v.size() <= kMax) {
    pts = v;
  } else {
    for (size_t b = 0; b < kMax; ++b) {
      size_t from = b * v.size() / kMax, to = (b + 1) * v.size() / kMax;
      std::vector<double> part(v.begin() + static_cast<std::ptrdiff_t>(from),
                               v.begin() + static_cast<std::ptrdiff_t>(to));
      std::sort(part.begin(), part.end());
      pts.push_back(part[part.size() / 2]);
    }
  }
  double lo = *std::min_element(pts.begin(), pts.end());
  double hi = *std::max_element(pts.begin(), pts.end());
  std::string s = "<svg width=\"120\" height=\"24\" class=\"" + cls + "\"><polyline points=\"";
  for (size_t i = 0; i < pts.size(); ++i) {
    // Whole pixels: the index is mostly these numbers, and a sparkline needs no finer.
    long x = std::lround(pts.size() > 1 ? 118.0 * i / (pts.size() - 1) + 1 : 60);
    long y = std::lround(hi > lo ? 22 - 20 * (pts[i] - lo) / (hi - lo) : 12);
    s += (i ? " " : "") + std::to_string(x) + "," + std::to_string(y);
  }
  s += "\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.2\"/></svg>";
  return s;
}

std::string TableHtml(const Table& t) {
  std::string s = "<table><thead><tr>";
  for (const Column& c : t.columns) s += "<th>" + H(c.title) + "</th>";
  s += "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    s += "<tr>";
    for (const Cell& c : row)
      s += std::string(c.value ? "<td class=n>" : "<td>") + H(c.Text()) + "</td>";
    s += "</tr>";
  }
  return s + "</tbody></table>";
}

std::string PointTitle(const PointView& p, const std::string& build) {
  std::string t = "run #" + std::to_string(p.run) + ", " + p.date + ", " + p.commit;
  if (!p.branch.empty()) t += " (" + p.branch + ")";
  t += "\nmedian " + FormatTime(p.median);
  if (std::isfinite(p.cv))
    t += ", CV " + FormatPercent(p.cv) + " over " + std::to_string(p.reps) + " repetitions";
  return t + "\n" + build;
}

// The chart of one series: medians (dots, a tooltip each), their spread (median x (1 +- CV) of
// the run's repetitions), the segments' medians and a dashed marker per change point that links
// to its explanation.
std::string Chart(const SeriesView& s) {
  const double W = 960, Hh = 280, L = 72, R = 12, T = 10, B = 28;
  double lo = INFINITY, hi = -INFINITY;
  for (const PointView& p : s.points) {
    lo = std::min(lo, p.median);
    hi = std::max(hi, p.median);
  }
  double pad = hi > lo ? (hi - lo) * 0.08 : std::max(hi * 0.02, 1.0);
  lo -= pad;
  hi += pad;
  double r0 = static_cast<double>(s.points.front().run);
  double r1 = std::max(static_cast<double>(s.points.back().run), r0 + 1);
  auto X = [&](double run) { return L + (run - r0) / (r1 - r0) * (W - L - R); };
  auto Y = [&](double v) { return std::clamp(T + (hi - v) / (hi - lo) * (Hh - T - B), T, Hh - B); };
  std::string svg = "<svg viewBox=\"0 0 960 280\" width=\"960\" height=\"280\" role=\"img\">";
  svg += "<rect class=ax x=\"" + Num(L) + "\" y=\"" + Num(T) + "\" width=\"" + Num(W - L - R) +
         "\" height=\"" + Num(Hh - T - B) + "\"/>";
  for (int i = 0; i <= 4; ++i) {
    double v = lo + (hi - lo) * i / 4;
    svg += "<text x=\"" + Num(L - 4) + "\" y=\"" + Num(Y(v) + 4) + "\" text-anchor=\"end\">" +
           H(FormatTime(v)) + "</text>";
  }
  for (double run : {r0, std::round((r0 + r1) / 2), r1})
    svg += "<text x=\"" + Num(X(run)) + "\" y=\"" + Num(Hh - 10) + "\" text-anchor=\"middle\">#" +
           std::to_string(static_cast<long>(run)) + "</text>";
  std::string wh;
  for (const PointView& p : s.points)
    if (std::isfinite(p.cv) && p.cv > 0)
      wh += "M" + Num(X(p.run)) + " " + Num(Y(p.median * (1 + p.cv))) + "V" +
            Num(Y(p.median * (1 - p.cv)));
  if (!wh.empty()) svg += "<path class=wh d=\"" + wh + "\"/>";
  // The segments between change points, each at its median.
  size_t from = 0;
  for (size_t c = 0; c <= s.changes.size(); ++c) {
    size_t to = c < s.changes.size() ? s.changes[c].point : s.points.size();
    double med = c < s.changes.size() ? s.changes[c].before.median
                                      : (s.changes.empty() ? NAN : s.changes.back().after.median);
    if (std::isfinite(med))
      svg += "<line class=seg x1=\"" + Num(X(s.points[from].run)) + "\" x2=\"" +
             Num(X(s.points[to - 1].run)) + "\" y1=\"" + Num(Y(med)) + "\" y2=\"" + Num(Y(med)) +
             "\"/>";
    from = to;
  }
  for (const PointView& p : s.points)
    svg += "<circle class=pt cx=\"" + Num(X(p.run)) + "\" cy=\"" + Num(Y(p.median)) +
           "\" r=\"2.5\"><title>" + H(PointTitle(p, s.build)) + "</title></circle>";
  for (const ChangeView& c : s.changes) {
    double x = (X(s.points[c.point - 1].run) + X(s.points[c.point].run)) / 2;
    svg += "<a class=cp href=\"#" + c.anchor + "\"><line x1=\"" + Num(x) + "\" x2=\"" + Num(x) +
           "\" y1=\"" + Num(T) + "\" y2=\"" + Num(Hh - B) + "\"/><rect x=\"" + Num(x - 5) +
           "\" y=\"" + Num(T) + "\" width=\"10\" height=\"" + Num(Hh - T - B) + "\"/><title>" +
           H("change point " + std::to_string(c.index + 1) + ": " + Signed(c.change) + " at run #" +
             std::to_string(c.after.first_run) + " (click for the figures)") +
           "</title></a>";
  }
  return svg + "</svg>";
}

std::string SideRow(const char* label, const Side& d) {
  return std::string("<tr><td>") + label + "</td><td class=n>" + std::to_string(d.runs) +
         "</td><td>#" + std::to_string(d.first_run) + " " + H(d.first_commit) + " … #" +
         std::to_string(d.last_run) + " " + H(d.last_commit) + "</td><td class=n>" +
         H(FormatTime(d.median)) + "</td><td class=n>" + H(FormatTime(d.min)) +
         "</td><td class=n>" + H(FormatTime(d.max)) + "</td><td class=n>" +
         (std::isfinite(d.cv) ? H(FormatPercent(d.cv)) : "-") + "</td></tr>";
}

std::string ChangeSection(const ChangeView& c) {
  const char* dir = c.change > 0 ? "slower" : "faster";
  std::string s = "<section class=cp id=\"" + c.anchor + "\"><h3>Change point " +
                  std::to_string(c.index + 1) + ": <span class=" + dir + ">" + dir + " " +
                  H(Signed(c.change)) + "</span> at run #" + std::to_string(c.after.first_run) +
                  " (" + H(c.date) + ", " + H(c.after.first_commit) + ")</h3>";
  s += "<table><thead><tr><th>side</th><th>runs</th><th>from … to</th><th>median</th><th>min</th>"
       "<th>max</th><th>CV between runs</th></tr></thead><tbody>" +
       SideRow("before", c.before) + SideRow("after", c.after) + "</tbody></table>";
  s +=
      "<p>Mann-Whitney U test between the two sides' run medians: p = " + H(FormatP(c.p)) + ".</p>";
  if (!c.environment.empty())
    s += "<p><strong>Environment change:</strong> " + H(c.environment) +
         ". The case's own libraries, driver or measuring flags changed here, not only the code: "
         "named, not sent to bisect.</p>";
  s += "<p>Machine context across it: " +
       (c.context.empty() ? std::string("unchanged (driver, clocks, CPU, compiler)")
                          : "<strong>lines up with</strong> " + H([&] {
                              std::string j;
                              for (const auto& x : c.context) j += (j.empty() ? "" : "; ") + x;
                              return j;
                            }())) +
       ".</p>";
  s += "<p>Kernels: " + H(c.kernels) + "</p>";
  if (c.kernel_table) s += TableHtml(*c.kernel_table);
  if (!c.repro.empty()) s += "<p>Repro: <code>" + H(c.repro) + "</code></p>";
  if (!c.bisect.empty()) s += "<p>Bisect: <code>" + H(c.bisect) + "</code></p>";
  return s + "</section>";
}

}  // namespace

std::string Slug(const std::string& name) {
  std::string s;
  for (char ch : name) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
    s += ok ? ch : (ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : '_');
  }
  if (s.size() > 80) s.resize(80);
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  char b[24];
  std::snprintf(b, sizeof b, "-%08llx", static_cast<unsigned long long>(h & 0xffffffffull));
  return s + b;
}

std::string CaseHtml(const CasePage& page) {
  std::string b = "<nav><a href=\"../index.html\">" + H(page.machine) +
                  ": every case</a><a href=\"../machine.html\">machine context</a>"
                  "<a href=\"../../index.html\">machines</a></nav><h1>" +
                  H(page.name) + "</h1><p class=muted>Median time per run on " + H(page.machine) +
                  ", oldest first; the bars are each run's spread (median ± CV of its "
                  "repetitions), the lines the segments' medians, a dashed line a change point "
                  "(click it). Hover a point for its figures.</p>";
  for (const SeriesView& s : page.series) {
    b += "<h2 id=\"" + s.anchor + "\">" + H(s.build) + "</h2><p>" +
         std::to_string(s.points.size()) + " runs, " + std::to_string(s.changes.size()) +
         " change point" + (s.changes.size() == 1 ? "" : "s") + ".</p>" + Chart(s);
    for (const ChangeView& c : s.changes) b += ChangeSection(c);
    b += "<details><summary>Runs</summary><table><thead><tr><th>run</th><th>date</th><th>commit"
         "</th><th>branch</th><th>median</th><th>CV</th><th>repetitions</th></tr></thead><tbody>";
    for (const PointView& p : s.points)
      b += "<tr><td>#" + std::to_string(p.run) + "</td><td>" + H(p.date) + "</td><td>" +
           H(p.commit) + "</td><td>" + H(p.branch) + "</td><td class=n>" + H(FormatTime(p.median)) +
           "</td><td class=n>" + (std::isfinite(p.cv) ? H(FormatPercent(p.cv)) : "-") +
           "</td><td class=n>" + std::to_string(p.reps) + "</td></tr>";
    b += "</tbody></table></details>";
  }
  return Page(page.name + " — " + page.machine, b);
}

namespace {

// The index's filters: read on every change and from the URL's fragment (#only=regressed&q=...),
// so a filtered view is a link; rows are hidden, never re-built.
constexpr const char* kFilterScript = R"(<script>
(function(){
var rows=Array.prototype.slice.call(document.querySelectorAll('#cases tbody tr'));
var ids=['family','device','backend','dtype'],q=document.getElementById('q'),n=document.getElementById('shown');
function only(){var r=document.querySelector('input[name=only]:checked');return r?r.value:'all';}
function apply(){
 var want={},text=q.value.toLowerCase(),o=only(),shown=0;
 ids.forEach(function(k){want[k]=document.getElementById('f-'+k).value;});
 rows.forEach(function(r){var d=r.dataset,ok=true;
  ids.forEach(function(k){if(want[k]&&d[k]!==want[k])ok=false;});
  if(o==='regressed'&&d.verdict!=='slower')ok=false;
  if(o==='improved'&&d.verdict!=='faster')ok=false;
  if(o==='changed'&&d.changes==='0')ok=false;
  if(text&&d.search.indexOf(text)<0)ok=false;
  r.hidden=!ok;if(ok)shown++;});
 n.textContent=shown+' of '+rows.length+' shown';
 var h=[];ids.forEach(function(k){if(want[k])h.push(k+'='+encodeURIComponent(want[k]));});
 if(o!=='all')h.push('only='+o);if(text)h.push('q='+encodeURIComponent(text));
 try{history.replaceState(null,'',h.length?'#'+h.join('&'):location.pathname);}catch(e){}
}
var p={};location.hash.slice(1).split('&').forEach(function(kv){var i=kv.indexOf('=');if(i>0)p[kv.slice(0,i)]=decodeURIComponent(kv.slice(i+1));});
ids.forEach(function(k){if(p[k])document.getElementById('f-'+k).value=p[k];});
if(p.q)q.value=p.q;
if(p.only){var r=document.querySelector('input[name=only][value='+p.only+']');if(r)r.checked=true;}
document.querySelectorAll('.filters select,.filters input').forEach(function(e){e.addEventListener('input',apply);e.addEventListener('change',apply);});
apply();
})();
</script>)";

std::string Select(const char* id, const char* label, const std::set<std::string>& values) {
  std::string s = std::string("<label>") + label + " <select id=\"f-" + id +
                  "\"><option value=\"\">all</option>";
  for (const std::string& v : values)
    if (!v.empty()) s += "<option>" + H(v) + "</option>";
  return s + "</select></label>";
}

}  // namespace

std::string MachineIndexHtml(const MachineSummary& m, const std::vector<IndexRow>& rows) {
  std::set<std::string> fam, dev, back, dt;
  for (const IndexRow& r : rows) {
    fam.insert(r.family);
    dev.insert(r.device);
    back.insert(r.backend);
    dt.insert(r.dtype);
  }
  std::string b =
      "<nav><a href=\"../index.html\">machines</a><a href=\"machine.html\">machine "
      "context over time</a></nav><h1>" +
      H(m.name) + "</h1><p>" + std::to_string(m.runs) + " runs (" + H(m.first_date) + " … " +
      H(m.last_date) + "), " + std::to_string(m.cases) + " series; " + std::to_string(m.regressed) +
      " slower and " + std::to_string(m.improved) +
      " faster since their last change point. Sorted by the size of the latest "
      "change.</p>";
  b += "<div class=filters>" + Select("family", "family", fam) + Select("device", "device", dev) +
       Select("backend", "backend", back) + Select("dtype", "dtype", dt) +
       "<label><input type=radio name=only value=all checked> all</label>"
       "<label><input type=radio name=only value=regressed> only regressed</label>"
       "<label><input type=radio name=only value=improved> only improved</label>"
       "<label><input type=radio name=only value=changed> only changed</label>"
       "<input id=q type=search placeholder=\"search names\" size=30><span id=shown class=muted>" +
       std::to_string(rows.size()) + " shown</span></div>";
  b += "<table id=cases><thead><tr><th>case</th><th>build</th><th>trend</th><th>latest</th>"
       "<th>last change</th><th>verdict</th><th>change points</th></tr></thead><tbody>\n";
  for (const IndexRow& r : rows) {
    std::string search = r.name + " " + r.build;
    std::transform(search.begin(), search.end(), search.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const std::string cls = r.verdict == "slower" || r.verdict == "faster" ? r.verdict : "muted";
    b += "<tr data-family=\"" + H(r.family) + "\" data-device=\"" + H(r.device) +
         "\" data-backend=\"" + H(r.backend) + "\" data-dtype=\"" + H(r.dtype) +
         "\" data-verdict=\"" + r.verdict + "\" data-changes=\"" + std::to_string(r.changes) +
         "\" data-search=\"" + H(search) + "\"><td><a href=\"" + H(r.page) + "\">" + H(r.name) +
         "</a></td><td class=muted title=\"" + H(r.build) + "\">" +
         H(r.build.substr(0, r.build.find(", "))) + "</td><td class=" + cls + ">" +
         Sparkline(r.medians, cls) + "</td><td class=n>" + H(FormatTime(r.latest)) +
         "</td><td class=n>" +
         (std::isfinite(r.last_change)
              ? H(Signed(r.last_change)) + " at #" + std::to_string(r.last_change_run)
              : std::string("-")) +
         "</td><td class=" + cls + ">" +
         (r.verdict == "short" ? std::string("short history") : r.verdict) + "</td><td class=n>" +
         std::to_string(r.changes) + "</td></tr>\n";
  }
  b += "</tbody></table>";
  return Page(m.name + " — dlbench history", b, kFilterScript);
}

// The machine's context now (a short table of key and value, with the run each value holds
// since) and what changed from run to run, one row per run that changed something: a page as
// wide as its longest value, however many keys and runs.
std::string MachineHtml(const MachinePage& page) {
  std::vector<size_t> used;  // the keys some run has
  for (size_t k = 0; k < page.keys.size(); ++k)
    for (const auto& r : page.runs)
      if (!r.values[k].empty()) {
        used.push_back(k);
        break;
      }
  std::string b = "<nav><a href=\"index.html\">" + H(page.name) +
                  ": every case</a><a href=\"../index.html\">machines</a></nav><h1>" +
                  H(page.name) +
                  ": context over time</h1><p class=muted>The driver, clocks, CPU and library "
                  "versions of the newest run, each read from the files of the binaries that "
                  "measured its cases (a key its binaries differ on is named per binary), and "
                  "each run that changed one of them, oldest first. A case's change point that "
                  "lines up with such a change says so on its "
                  "page.</p>";
  auto run_label = [&](size_t i) {
    const auto& r = page.runs[i];
    return "#" + std::to_string(i + 1) + " " + r.date;
  };
  if (used.empty()) {
    b += "<p>No run of this machine records its driver, clocks, CPU or library versions.</p>";
  } else if (!page.runs.empty()) {
    const size_t last = page.runs.size() - 1;
    b += "<h2>Now (run " + H(run_label(last)) +
         ")</h2><table class=kv><thead><tr><th>key</th>"
         "<th>value</th><th>since</th></tr></thead><tbody>";
    for (size_t k : used) {
      size_t since = last;
      while (since > 0 && page.runs[since - 1].values[k] == page.runs[last].values[k]) --since;
      const std::string& v = page.runs[last].values[k];
      b += "<tr><td>" + H(page.keys[k]) + "</td><td>" + (v.empty() ? "-" : H(v)) + "</td><td>" +
           (since == 0 ? std::string("the first run") : H(run_label(since))) + "</td></tr>";
    }
    b += "</tbody></table>";
  }
  b += "<h2>Changes</h2><table class=kv><thead><tr><th>run</th><th>commit</th><th>branch</th>"
       "<th>what changed</th></tr></thead><tbody>";
  size_t quiet = 0;  // runs since the last row that changed nothing
  auto flush_quiet = [&](size_t upto) {
    if (quiet == 0) return;
    b += "<tr><td class=muted colspan=4>" +
         (quiet == 1
              ? "run #" + std::to_string(upto)
              : "runs #" + std::to_string(upto - quiet + 1) + " to #" + std::to_string(upto)) +
         ": no change</td></tr>";
    quiet = 0;
  };
  for (size_t i = 0; i < page.runs.size(); ++i) {
    const auto& r = page.runs[i];
    std::string what = i == 0 ? "the first run" : "";
    for (size_t k : used) {
      if (i == 0 || page.runs[i - 1].values[k] == r.values[k]) continue;
      const std::string &before = page.runs[i - 1].values[k], &now = r.values[k];
      what += (what.empty() ? "" : "<br>") + std::string("<b>") + H(page.keys[k]) + "</b> " +
              H(before.empty() ? "-" : before) + " → " + H(now.empty() ? "-" : now);
    }
    if (what.empty()) {
      ++quiet;
      continue;
    }
    flush_quiet(i);
    b += "<tr><td>" + H(run_label(i)) + "</td><td>" + H(r.commit) + "</td><td>" + H(r.branch) +
         "</td><td" + (i > 0 ? " class=chg>" : ">") + what + "</td></tr>";
  }
  flush_quiet(page.runs.size());
  b += "</tbody></table>";
  return Page(page.name + " — machine context", b);
}

std::string SiteIndexHtml(const std::vector<MachineSummary>& machines, const std::string& branch,
                          const ChangePointOptions& o) {
  std::string b = "<h1>dlbench history</h1><p class=muted>Change points: " +
                  std::string(DetectorName(o.detector)) +
                  ", each confirmed by the U test "
                  "between its two sides (p &lt; " +
                  H(FormatNumber(o.alpha, 3)) + ") and a change of at least " +
                  H(FormatPercent(o.threshold)) + ", at least " + std::to_string(o.min_segment) +
                  " runs a side; tiers and build types are separate series, and a change point "
                  "where a case's own libraries, driver or measuring flags changed is named as "
                  "such. Runs of branch " +
                  H(branch.empty() ? "(none)" : branch) +
                  " only (site --branch chooses another).</p>"
                  "<table><thead><tr><th>machine</th><th>runs</th><th>from</th><th>to</th>"
                  "<th>series</th><th>slower</th><th>faster</th><th>families</th><th></th></tr>"
                  "</thead><tbody>";
  for (const MachineSummary& m : machines) {
    std::string fams;
    for (const std::string& f : m.families)
      fams += (fams.empty() ? "" : " ") +
              ("<a href=\"" + H(m.dir) + "/index.html#family=" + H(f) + "\">" + H(f) + "</a>");
    b += "<tr><td><a href=\"" + H(m.dir) + "/index.html\">" + H(m.name) + "</a></td><td class=n>" +
         std::to_string(m.runs) + "</td><td>" + H(m.first_date) + "</td><td>" + H(m.last_date) +
         "</td><td class=n>" + std::to_string(m.cases) + "</td><td class=\"n slower\">" +
         std::to_string(m.regressed) + "</td><td class=\"n faster\">" + std::to_string(m.improved) +
         "</td><td>" + fams + "</td><td><a href=\"" + H(m.dir) +
         "/machine.html\">context over time</a></td></tr>";
  }
  b += "</tbody></table>";
  return Page("dlbench history", b);
}

}  // namespace dlb::report::site
