#!/usr/bin/env python3
"""Renders dlbench-report's report.html in headless Chromium, as a person would open it, and checks
what the first screen shows: the findings before any family's table, no column of a device the run
did not have, one line for a CPU-only run, the epoch figures the JSON holds, and a screenshot that
is a real, non-blank PNG.

Then, for every folder of REPORTS_DIR (reports/) that holds runs, `dlbench-report report FOLDER/`
as a person types it, and its first screen at 1400x1000: Problems (where the JSON has any: throttled
cases, values above 100%, failures, mixed inputs) then Findings, every problem present listed, no
table wider than the window, no cell whose text crosses into its neighbour's (anywhere on the page,
the details opened), no literal Markdown, no value above 100% unflagged, and each FLOP/s or
OP/s headline with its % and the peak it is of named. And `compare` of reports/h100's conv runs
with kernel tables at 1400x1000: its kernels column within the window.

  render_test.py DLBENCH_REPORT CPU_DIR GPU_DIR... [--reports REPORTS_DIR] [--keep DIR]

CPU_DIR: a CPU-only run (the smoke tier's JSON); GPU_DIR...: a run with a GPU (the H100 results).
Exits 77 (CTest's SKIP_RETURN_CODE) with one line when Chromium is not installed."""
import gzip
import html.parser
import json
import os
import pathlib
import re
import shlex
import statistics
import struct
import subprocess
import sys
import tempfile
import zlib

# headless.py, which the report's browser tests share, is in tests/tools/report/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from headless import FLAGS, find_chromium  # noqa: E402

SKIP = 77
CHROMIUM_TIMEOUT_S = 120
failures = []
checks = [0]
figures = [0]


def check(ok, what):
    checks[0] += 1
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


def load_json(path):
    """A run's JSON, plain or gzip-compressed (reports/ keeps its evidence as .json.gz)."""
    data = pathlib.Path(path).read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def runs_in(folder):
    """A folder's *.json and *.json.gz files that hold benchmarks, as dlbench-report takes them."""
    folder = pathlib.Path(folder)
    paths = sorted(list(folder.glob("*.json")) + list(folder.glob("*.json.gz")))
    return [str(p) for p in paths if load_json(p).get("benchmarks")]


def chromium(exe, profile, args):
    # A private profile, and a timeout so a stuck browser fails the test instead of hanging.
    cmd = [exe] + FLAGS + ["--hide-scrollbars", "--user-data-dir=" + str(profile)] + args
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          timeout=CHROMIUM_TIMEOUT_S, check=False)


# ---- the figures the report must show, computed here from the JSON on their own ----

def three_digits(v):
    a = abs(v)
    if a >= 99.95:
        return "%.0f" % v
    if a >= 9.995:
        return "%.1f" % v
    return "%.2f" % v


def format_time(ns):
    for unit, scale in (("ns", 1), ("µs", 1e3), ("ms", 1e6)):
        if abs(ns) < scale * 1e3:
            return three_digits(ns / scale) + " " + unit
    return three_digits(ns / 1e9) + " s"


def format_duration(s):
    if s >= 7200:
        return "%.3g h" % (s / 3600)
    if s >= 120:
        return "%.3g min" % (s / 60)
    return format_time(s * 1e9)


# The --dlb_ flags that only choose cases or watch the run (tools/report/analyses/setup.cpp).
NOT_SETUP_FLAGS = {"--dlb_tier", "--dlb_batch_sizes", "--dlb_dtypes", "--dlb_device",
                   "--dlb_workloads", "--dlb_verify", "--dlb_seed", "--dlb_monitor",
                   "--dlb_monitor_trace", "--dlb_monitor_interval_ms", "--dlb_budget",
                   "--dlb_case_timeout", "--dlb_comm_timeout", "--dlb_stdrel", "--dlb_stdrel_max_s",
                   "--dlb_comm_bytes", "--dlb_comm_gpus", "--dlb_train_gpus", "--dlb_help"}
SETUP_KEYS = ("executable", "dlbench_build_type", "dlbench_compiler", "dlbench_version",
              "dlbench_git_revision", "dlbench_git_branch", "dlbench_tier", "onednn_version",
              "libtorch_version", "turbojpeg_version", "cpu_threads", "comm_launch", "comm_buffers",
              "host_name", "cpu_model", "gpu_name", "gpu_driver")


def setup_of(context):
    """A file's setup, as the report keeps one case's setups apart: the context's build, library
    versions, the --dlb_ flags that change a measurement, threads, launch and machine."""
    libs = tuple(sorted(e.split()[0] + " " + e.split()[1]
                        for e in context.get("libraries_loaded", "").split("; ")
                        if len(e.split()) >= 2 and not e.startswith("cudnn_")))
    flags = tuple(sorted(w for w in shlex.split(context.get("dlbench_command", ""))[1:]
                         if w.startswith("--dlb_") and w.split("=")[0] not in NOT_SETUP_FLAGS))
    return tuple(context.get(k) for k in SETUP_KEYS) + (libs, flags)


def best_epochs(files):
    """Per model and device the shortest epoch_s of a dlbench training step (not the PyTorch
    peer's, backend pytorch) on one GPU or the CPU, fed by no loader: the median over every
    repetition of a name and setup, across files."""
    samples, model_of = {}, {}
    for f in files:
        doc = load_json(f)
        setup = setup_of(doc.get("context", {}))
        for b in doc["benchmarks"]:
            name = (b["name"], setup)
            parts = name[0].split("/")
            if parts[0] != "train" or b.get("run_type") == "aggregate" or parts[2] == "pytorch":
                continue
            if b.get("error_occurred") or b.get("skipped") or "epoch_s" not in b:
                continue
            keys = dict(p.split(":", 1) for p in parts[4:] if ":" in p)
            if keys.get("pass", "train") != "train" or "loader" in keys:
                continue
            if float(keys.get("gpus", "1")) > 1:
                continue
            samples.setdefault(name, []).append(b["epoch_s"])
            model_of[name] = ((b.get("dlbench") or {}).get("network") or parts[3], parts[1])
    best = {}
    for name, values in samples.items():
        key = model_of[name]
        best[key] = min(best.get(key, float("inf")), statistics.median(values))
    return best


# ---- the rendered page ----

class Page(html.parser.HTMLParser):
    """Headings and tables in document order: ("h2", text), ("h3", text), ("table", rows)."""

    def __init__(self):
        super().__init__()
        self.items, self._text, self._tag, self._rows, self._cell = [], "", None, None, None

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "h3"):
            self._tag, self._text = tag, ""
        elif tag == "table":
            self._rows = []
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == self._tag:
            self.items.append((tag, self._text.strip()))
            self._tag = None
        elif tag in ("td", "th") and self._cell is not None:
            self._rows[-1].append(self._cell.strip())
            self._cell = None
        elif tag == "table" and self._rows is not None:
            self.items.append(("table", self._rows))
            self._rows = None

    def handle_data(self, data):
        if self._tag:
            self._text += data
        if self._cell is not None:
            self._cell += data


def first_screen(items):
    out = []
    for kind, value in items:
        if kind == "h2" and value == "Details":
            break
        out.append((kind, value))
    return out


def png_pixels(path):
    """Width, height and the rows of an 8-bit RGB or RGBA PNG, unfiltered."""
    data = pathlib.Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color not in (2, 6):
                raise ValueError("unexpected PNG format: depth %d colour %d" % (depth, color))
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def check_screenshot(path, label):
    try:
        width, height, bpp, rows = png_pixels(path)
    except (OSError, ValueError, zlib.error, struct.error) as e:
        check(False, "%s: the screenshot is no valid PNG (%s)" % (label, e))
        return
    check((width, height) == (1280, 1600), "%s: screenshot is %dx%d" % (label, width, height))
    background = rows[0][:3]
    drawn = sum(1 for r in rows for x in range(0, len(r), bpp) if r[x:x + 3] != background)
    check(drawn > 0.01 * width * height,
          "%s: the screenshot is blank (%d pixels differ from the background)" % (label, drawn))


def render(report, exe, inputs, out, label):
    d = out / label
    subprocess.run([report, "report"] + inputs + ["--out-dir", str(d)], check=True,
                   stdout=subprocess.DEVNULL, timeout=120)
    url = (d / "report.html").resolve().as_uri()
    dom = chromium(exe, out / ("profile-" + label), ["--dump-dom", url])
    check(dom.returncode == 0, "%s: chromium --dump-dom exited %d" % (label, dom.returncode))
    shot = d / "screenshot.png"
    run = chromium(exe, out / ("profile-" + label),
                   ["--screenshot=" + str(shot), "--window-size=1280,1600", url])
    check(run.returncode == 0 and shot.exists(), "%s: chromium --screenshot failed" % label)
    if shot.exists():
        check_screenshot(shot, label)
    page = Page()
    page.feed(dom.stdout.decode("utf-8", "replace"))
    return dom.stdout.decode("utf-8", "replace"), page.items


def check_page(label, dom, items, epochs, devices):
    first = first_screen(items)
    h2 = [v for k, v in first if k == "h2"]
    # Problems first where there are any, then Findings.
    lead = h2[1:2] if h2[:1] == ["Problems"] else h2[:1]
    check(lead == ["Findings"], "%s: the first sections are %r, not [Problems,] Findings" % (label, h2[:2]))
    check(h2[:1] != ["Problems"] or "<strong>" in dom,
          "%s: the Problems block shows no emphasis element" % label)
    check("**" not in dom, "%s: literal Markdown (**) in the HTML" % label)
    check_overflow(label, dom)
    tables = [i for i, (k, _) in enumerate(first) if k == "table"]
    check(bool(tables), "%s: no table on the first screen" % label)
    findings = [i for i, (k, v) in enumerate(first) if (k, v) == ("h2", "Findings")]
    if tables and findings:
        check(findings[0] < tables[0], "%s: a table comes before the findings" % label)
    # No column on the first screen says nothing ("-" in every row), and none names a device the
    # run did not measure on.
    for k, rows in first:
        if k != "table" or len(rows) < 2:
            continue
        header = rows[0]
        for i, title in enumerate(header):
            cells = [r[i] for r in rows[1:] if i < len(r)]
            check(not all(c == "-" for c in cells),
                  "%s: an empty column %r on the first screen" % (label, title))
            for device in ("CPU", "GPU"):
                if device not in devices:
                    check(not title.startswith(device),
                          "%s: a %s column %r in a run without one" % (label, device, title))
    # The epoch figures of the findings are the JSON's.
    table = None
    for i, (k, v) in enumerate(first):
        if k == "h3" and v.startswith("Training: one epoch per model"):
            table = next((rows for kk, rows in first[i + 1:] if kk == "table"), None)
            break
    check(table is not None, "%s: no training table among the findings" % label)
    if table is None:
        return
    header, rows = table[0], {r[0]: r for r in table[1:]}
    for (model, device), epoch in sorted(epochs.items()):
        column = ("CPU" if device == "cpu" else "GPU") + " epoch"
        row = rows.get(model)
        check(row is not None and column in header,
              "%s: no %s of %s in the findings" % (label, column, model))
        if row is not None and column in header:
            got, want = row[header.index(column)], format_duration(epoch)
            figures[0] += 1
            check(got == want, "%s: %s %s is %r, the JSON says %r" % (label, model, column, got,
                                                                     want))
    if "speedup" in header:
        for model, row in rows.items():
            cpu, gpu = epochs.get((model, "cpu")), epochs.get((model, "gpu"))
            if cpu and gpu:
                want = "%.3gx" % (cpu / gpu)
                figures[0] += 1
                got = row[header.index("speedup")].lstrip("⚠ ")
                check(got == want, "%s: %s speedup %r, the JSON says %r" % (label, model, got,
                                                                            want))


# ---- every folder of reports/, at 1400x1000 ----

class Screen(html.parser.HTMLParser):
    """The first screen's parts outside <details>: h2 titles, the Problems section's text, tables
    (their data-right and rows), every cell's text; and the window's width."""

    def __init__(self):
        super().__init__()
        self.h2, self.tables, self.cells, self.problems = [], [], [], ""
        self.viewport, self._depth, self._tag, self._text = 0, 0, None, ""
        self._rows, self._cell, self._section = None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body" and a.get("data-viewport"):
            self.viewport = int(a["data-viewport"])
        if tag == "details":
            self._depth += 1
        if self._depth:
            return
        if tag == "h2":
            self._tag, self._text = "h2", ""
        elif tag == "table":
            self._rows = []
            self.tables.append({"right": int(a.get("data-right", "0")), "rows": self._rows,
                                "section": self._section})
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "details":
            self._depth -= 1
            return
        if self._depth:
            return
        if tag == "h2" and self._tag == "h2":
            self._section = self._text.strip()
            self.h2.append(self._section)
            self._tag = None
        elif tag in ("td", "th") and self._cell is not None:
            self._rows[-1].append(self._cell.strip())
            if tag == "td":
                self.cells.append(self._cell.strip())
            self._cell = None
        elif tag == "table":
            self._rows = None

    def handle_data(self, data):
        if self._depth:
            return
        if self._tag:
            self._text += data
        if self._cell is not None:
            self._cell += data
        if self._section == "Problems":
            self.problems += data


class Overflow(html.parser.HTMLParser):
    """The cells, in the details too, that the page marked data-overflow: text wider than its
    cell (scrollWidth > clientWidth), so that it crosses into the neighbouring cell."""

    def __init__(self):
        super().__init__()
        self.cells, self._cell, self._depth = [], None, 0

    def handle_starttag(self, tag, attrs):
        if tag in ("td", "th"):
            self._depth += 1
            if dict(attrs).get("data-overflow") == "1":
                self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._depth -= 1
            if self._cell is not None:
                self.cells.append(self._cell.strip())
                self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def check_overflow(label, dom):
    """No cell's text overprints its neighbour's: the page marks those that do not fit."""
    page = Overflow()
    page.feed(dom)
    check("data-viewport" in dom, "%s: the page measured nothing" % label)
    check(not page.cells, "%s: %d cell(s) whose text crosses into the next: %r" %
          (label, len(page.cells), page.cells[:3]))


DTYPES = {"f32", "tf32", "bf16", "f16", "fp8", "int8", "amp_bf16", "amp_f16"}


def dtype_of(name):
    """The one dtype word of a label or series name (split at " /,:()"); None for none or several."""
    found = {w for w in re.split(r"[ /,:()]", name) if w in DTYPES}
    return found.pop() if len(found) == 1 else None


class ChartColours(html.parser.HTMLParser):
    """Each dtype's colours in the charts: a bar's or a marker's fill by its tooltip, a roofline
    roof's stroke by its legend entry (the line right before its text)."""

    def __init__(self):
        super().__init__()
        self.colours = {}  # dtype -> {colour: what showed it}
        self._shape, self._title, self._prev, self._line, self._roof = None, None, None, None, None

    def _add(self, name, colour, what):
        dtype = dtype_of(name)
        if dtype and colour:
            self.colours.setdefault(dtype, {}).setdefault(colour, what + " " + name)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("rect", "circle", "polygon"):
            fill = a.get("fill")
            self._shape = a.get("stroke") if fill == "#fff" else fill
        elif tag == "title":
            self._title = ""
        elif tag == "text":
            self._roof = self._line if self._prev == "line" else None
        if tag == "line":
            self._line = a.get("stroke")
        if tag != "title":
            self._prev = tag

    def handle_endtag(self, tag):
        if tag == "title" and self._title is not None and self._shape:
            self._add(self._title.rsplit(": ", 1)[0], self._shape, "the mark of")
        if tag == "title":
            self._title = None
        if tag == "text":
            self._roof = None

    def handle_data(self, data):
        if self._title is not None:
            self._title += data
        elif self._roof and data.startswith("roof "):
            self._add(data, self._roof, "the legend of")


def problems_in(files):
    """What the Problems block must list, from the JSON on its own."""
    want, failed, measured = set(), set(), set()
    revisions, days, tiers = set(), set(), set()
    for f in files:
        doc = load_json(f)
        context = doc.get("context", {})
        revisions.add(context.get("dlbench_git_revision"))
        days.add(str(context.get("date", ""))[:10])
        tiers.add(context.get("dlbench_tier"))
        for b in doc["benchmarks"]:
            message = b.get("error_message") or b.get("skip_message") or ""
            if not b.get("error_occurred") and not b.get("skipped"):
                measured.add(b.get("run_name", b["name"]))
            elif not message.startswith("unsupported: "):
                failed.add(b.get("run_name", b["name"]))
            number = lambda k: b.get(k) if isinstance(b.get(k), (int, float)) else 0
            if number("throttled") > 0:
                want.add("Throttled")
            if max(number("pct_peak"), number("pct_roofline")) > 100:
                want.add("Above 100%")
    if len(revisions - {None}) > 1 or len(days - {""}) > 1 or len(tiers - {None}) > 1:
        want.add("Mixed inputs")
    # A case failed in one file and measured in another is measured: the report merges them.
    if failed - measured:
        want.add("Failed")
    return want


PERCENT = re.compile(r"^([0-9]+(?:\.[0-9]+)?)%")


def check_folder(report, exe, folder, out):
    label = folder.name
    d = out / ("folder-" + label)
    run = subprocess.run([report, "report", str(folder) + "/", "--out-dir", str(d)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
    check(run.returncode == 0, "%s: dlbench-report report %s/ exited %d: %s" %
          (label, folder, run.returncode, run.stderr.decode(errors="replace")[-300:]))
    if run.returncode != 0:
        return
    md = (d / "report.md").read_text()
    check(len(md.encode()) < 300_000, "%s: report.md is %d bytes" % (label, len(md.encode())))
    code = False
    for line in md.splitlines():
        code = code != line.startswith("```")
        check(code or len(line) <= 200, "%s: a Markdown line of %d characters: %.80s..." %
              (label, len(line), line))
    url = (d / "report.html").resolve().as_uri()
    dom = chromium(exe, out / ("profile-folder-" + label),
                   ["--window-size=1400,1000", "--virtual-time-budget=5000", "--dump-dom", url])
    check(dom.returncode == 0, "%s: chromium --dump-dom exited %d" % (label, dom.returncode))
    page = Screen()
    page.feed(dom.stdout.decode("utf-8", "replace"))
    check(page.viewport > 0, "%s: the page measured no window width" % label)
    files = runs_in(folder)
    present = problems_in(files)
    lead = page.h2[1:2] if page.h2[:1] == ["Problems"] else page.h2[:1]
    check(lead == ["Findings"], "%s: the first sections are %r" % (label, page.h2[:2]))
    check(not present or page.h2[:1] == ["Problems"],
          "%s: %s in the JSON, no Problems section first" % (label, sorted(present)))
    for p in sorted(present):
        check(p in page.problems, "%s: the Problems section does not list %r" % (label, p))
    check("**" not in "".join(page.cells) + page.problems, "%s: literal Markdown (**)" % label)
    check_overflow(label, dom.stdout.decode("utf-8", "replace"))
    for t in page.tables:
        title = t["rows"][0] if t["rows"] else []
        check(t["right"] <= page.viewport, "%s: a table of %r is %d px wide in a %d px window: %r" %
              (label, t["section"], t["right"], page.viewport, title[:4]))
    # One colour per dtype in every chart: bars, curves and roofs of a dtype alike, and no two
    # dtypes alike.
    colours = ChartColours()
    colours.feed(dom.stdout.decode("utf-8", "replace"))
    seen = {}
    for dtype, by_colour in sorted(colours.colours.items()):
        check(len(by_colour) == 1, "%s: %s in %d colours: %r" % (label, dtype, len(by_colour),
                                                                 sorted(by_colour.values())[:4]))
        for colour in by_colour:
            check(seen.setdefault(colour, dtype) == dtype,
                  "%s: %s and %s share %s" % (label, seen[colour], dtype, colour))
    for cell in page.cells:
        m = PERCENT.match(cell)
        check(not m or float(m.group(1)) <= 100, "%s: %r above 100%% unflagged" % (label, cell))
    for t in page.tables:
        if not t["rows"] or "best" not in t["rows"][0]:
            continue
        header = t["rows"][0]
        for row in t["rows"][1:]:
            rate = row[header.index("best")] if len(row) == len(header) else ""
            if not re.search(r"(FLOP|OP)/s$", rate):
                continue
            for column in ("% of peak", "peak"):
                ok = column in header and row[header.index(column)] not in ("", "-")
                check(ok, "%s: the headline %r has no %r" % (label, rate, column))


def check_compare(report, exe, folder, out):
    """`compare` of two runs with kernel tables (reports/h100's conv runs, heuristic against
    search) at 1400x1000: every column, the kernels' included, within the window, and no cell's
    text crossing into the next."""
    base = folder / "kernels_conv_resnet18_heuristic.json.gz"
    new = folder / "kernels_conv_resnet18_search.json.gz"
    if not (base.exists() and new.exists()):
        check(False, "no kernel runs to compare in %s" % folder)
        return
    html_out = out / "compare.html"
    run = subprocess.run([report, "compare", str(base), str(new), "--threshold", "0.5%",
                          "-o", str(html_out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         timeout=120)
    check(run.returncode in (0, 3) and html_out.exists(), "compare exited %d: %s" %
          (run.returncode, run.stderr.decode(errors="replace")[-300:]))
    if not html_out.exists():
        return
    dom = chromium(exe, out / "profile-compare", ["--window-size=1400,1000",
                                                  "--virtual-time-budget=5000", "--dump-dom",
                                                  html_out.resolve().as_uri()])
    text = dom.stdout.decode("utf-8", "replace")
    page = Screen()
    page.feed(text)
    kernels = [t for t in page.tables if t["rows"] and "kernels" in t["rows"][0]]
    check(bool(kernels), "compare: no table with a kernels column")
    for t in kernels:
        check(t["right"] <= page.viewport, "compare: a table with the kernels column is %d px "
              "wide in a %d px window" % (t["right"], page.viewport))
    check_overflow("compare", text)


def main():
    args = sys.argv[1:]
    keep = None
    reports = None
    if "--reports" in args:
        reports = pathlib.Path(args[args.index("--reports") + 1])
        del args[args.index("--reports"):args.index("--reports") + 2]
    if "--keep" in args:
        keep = pathlib.Path(args[args.index("--keep") + 1])
        del args[args.index("--keep"):args.index("--keep") + 2]
    if len(args) < 3:
        print(__doc__)
        return 2
    exe = find_chromium()
    if exe is None:
        print("SKIP: chromium not installed (apt-get install chromium; tools/install-deps.sh)")
        return SKIP
    report, cpu_dir, gpu_dirs = args[0], args[1], args[2:]

    def files(dirs):
        # Files of a run that timed no case (a context only: the measured peaks) are no input.
        return sorted(f for d in dirs for f in runs_in(d))

    with tempfile.TemporaryDirectory(prefix="dlb-render-") as tmp:
        out = pathlib.Path(keep) if keep else pathlib.Path(tmp)
        out.mkdir(parents=True, exist_ok=True)

        cpu_files = files([cpu_dir])
        dom, items = render(report, exe, cpu_files, out, "cpu")
        check(dom.count("CPU only: no GPU in this run") == 1,
              "cpu: the CPU-only line appears %d times" % dom.count("CPU only: no GPU in this run"))
        check_page("cpu", dom, items, best_epochs(cpu_files), {"CPU"})

        gpu_files = files(gpu_dirs)
        dom, items = render(report, exe, gpu_files, out, "gpu")
        check("CPU only" not in dom and "GPU only" not in dom, "gpu: a one-device line")
        for h3 in ("Loader starvation", "GPU scaling of data-parallel training steps"):
            check(any(k == "h3" and v.startswith(h3) for k, v in first_screen(items)),
                  "gpu: no %r among the findings" % h3)
        check_page("gpu", dom, items, best_epochs(gpu_files), {"CPU", "GPU"})

        if reports is not None:
            folders = [f for f in sorted(reports.iterdir()) if f.is_dir() and files([f])]
            check(bool(folders), "no folder of %s holds a run" % reports)
            for folder in folders:
                check_folder(report, exe, folder, out)
            check_compare(report, exe, reports / "h100", out)

    check(figures[0] > 0, "no epoch figure was compared")
    if failures:
        print("%d of %d checks failed" % (len(failures), checks[0]))
        return 1
    print("rendered the CPU-only and the GPU report in %s: %d checks passed, %d of them epoch "
          "figures and speedups against the JSON" % (exe, checks[0], figures[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
