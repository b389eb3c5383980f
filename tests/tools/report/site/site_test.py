#!/usr/bin/env python3
"""Builds a history and its static site with dlbench-report, opens the site from disk in headless
Chromium (driven over the DevTools protocol on a pipe) and checks it as a person would use it: the
machines' index, a machine's index with its filters ("only regressed"), a case page with its change
point (click the marker: both sides, U test, repro and bisect commands), a GPU case page whose
change point shows its kernel diff and is named as the driver upgrade it lines up with (no bisect
command), the machine page, and that no request leaves the site's folder. Prints the first
contentful paint of each page (never asserted).

  site_test.py DLBENCH_REPORT CPU_DIR GPU_DIR [--keep DIR]
  site_test.py --paint PAGE.html        the first contentful paint of a page, in ms

The history: 60 runs of the CPU smoke tier (CPU_DIR's JSON, as the smoke tier wrote it on a
2-core machine) and 12 runs of the same cases relabelled tier "default", each run's times the
recorded ones with 1% seeded noise, and from commit c030 on the gemm cases 30% slower (the planted
slowdown); then 24 runs of GPU_DIR's two recorded conv runs (cuDNN heuristic, then autotuned
search, whose kernels differ), the second dozen with a newer driver in the context.
Exits 77 (CTest's SKIP_RETURN_CODE) with one line when Chromium is not installed."""
import gzip
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile
import time

# headless.py, which the report's browser tests share, is in tests/tools/report/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from headless import FLAGS, find_chromium  # noqa: E402

SKIP = 77
TIMEOUT_S = 60
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


class Browser:
    """Headless Chromium over --remote-debugging-pipe: JSON messages ending in NUL on fds 3 and 4,
    so no websocket library and no port is needed."""

    def __init__(self, exe, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # Keep the child's ends clear of 3 and 4, which dup2 is about to fill.
        if to_chrome_r < 5:
            to_chrome_r = os.dup(to_chrome_r)
        if from_chrome_w < 5:
            from_chrome_w = os.dup(from_chrome_w)

        # The pipes are close-on-exec; dup2 makes 3 and 4 inheritable, so only they reach Chromium.
        def child():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        cmd = [exe] + FLAGS + ["--remote-debugging-pipe", "--user-data-dir=" + str(profile),
                               "--window-size=1280,900", "about:blank"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     close_fds=False, preexec_fn=child)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.urls = []  # every request the page made, in order
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Network.enable", session=True)
        self.call("Runtime.enable", session=True)

    def _read(self, deadline):
        while b"\0" not in self.buf:
            if time.time() > deadline:
                raise TimeoutError("chromium did not answer in %d s" % TIMEOUT_S)
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        m = json.loads(msg)
        if m.get("method") == "Network.requestWillBeSent":
            self.urls.append(m["params"]["request"]["url"])
        return m

    def call(self, method, params=None, session=False):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + TIMEOUT_S
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name):
        deadline = time.time() + TIMEOUT_S
        for i, m in enumerate(self.events):
            if m.get("method") == name:
                del self.events[:i + 1]
                return m
        while True:
            m = self._read(deadline)
            if m.get("method") == name:
                self.events = []
                return m
            self.events.append(m)

    def open(self, path, fragment=""):
        self.events = []
        url = pathlib.Path(path).resolve().as_uri() + fragment
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired")

    def eval(self, js):
        r = self.call("Runtime.evaluate", {"expression": js, "returnByValue": True,
                                           "awaitPromise": True}, session=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (js, r["exceptionDetails"]))
        return r["result"].get("value")


    def first_paint_ms(self):
        return self.eval("new Promise(r=>{const f=()=>{const e=performance.getEntriesByName("
                         "'first-contentful-paint');if(e.length)r(e[0].startTime);"
                         "else setTimeout(f,20);};f();})")

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def scaled(doc, factor_of):
    out = json.loads(json.dumps(doc))
    for b in out["benchmarks"]:
        f = factor_of(b["name"])
        for k in ("real_time", "cpu_time"):
            if isinstance(b.get(k), (int, float)):
                b[k] = b[k] * f
    return out


def build_history(report, cpu_dir, gpu_dir, work):
    rng = random.Random(37)
    db = work / "history.sqlite"
    cpu = [json.loads(p.read_text()) for p in sorted(pathlib.Path(cpu_dir).glob("*.json"))]
    run_dir = work / "run"

    def add(docs, commit, date, machine):
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir()
        for i, d in enumerate(docs):
            d["context"]["date"] = date
            (run_dir / ("%d.json" % i)).write_text(json.dumps(d))
        r = subprocess.run([report, "history", "add"] + sorted(str(p) for p in run_dir.iterdir())
                           + ["--db", str(db), "--commit", commit, "--machine", machine],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(r.returncode == 0, "history add %s: %s" % (commit, r.stderr.strip()))

    for i in range(72):
        default = i >= 60
        n = i - 60 if default else i
        noise = {}

        def factor(name, n=n, noise=noise):
            if name not in noise:
                noise[name] = 1 + 0.01 * rng.gauss(0, 1)
            slow = 1.3 if name.startswith("gemm/") and n >= 30 and not default else 1.0
            return noise[name] * slow

        docs = [scaled(d, factor) for d in cpu]
        if default:
            for d in docs:
                d["context"]["dlbench_tier"] = "default"
        add(docs, ("d%03d" if default else "c%03d") % n,
            "2026-10-%02dT%02d:00:00+00:00" % (1 + i // 24, i % 24), "cpu-2core")
    # reports/ keeps its evidence gzip-compressed.
    gpu = [json.loads(gzip.decompress(
               (pathlib.Path(gpu_dir) / ("kernels_conv_resnet18_%s.json.gz" % k)).read_bytes()))
           for k in ("heuristic", "search")]
    for i in range(24):
        doc = scaled(gpu[i // 12], lambda name: 1 + 0.005 * rng.gauss(0, 1))
        if i >= 12:
            doc["context"]["gpu_driver"] = "580.170.01"
        add([doc], "g%03d" % i, "2026-11-%02dT00:00:00+00:00" % (1 + i), "h100")
    return db


def main():
    args = sys.argv[1:]
    exe = find_chromium()
    if not exe:
        print("SKIP: chromium not installed (apt-get install chromium; tools/install-deps.sh)")
        return SKIP
    if args[:1] == ["--paint"]:
        with tempfile.TemporaryDirectory() as tmp:
            b = Browser(exe, pathlib.Path(tmp) / "profile")
            try:
                t0 = time.time()
                b.open(args[1])
                print("first contentful paint %.0f ms, load %.0f ms" %
                      (b.first_paint_ms(), 1000 * (time.time() - t0)))
            finally:
                b.close()
        return 0
    keep = None
    if "--keep" in args:
        keep = pathlib.Path(args[args.index("--keep") + 1])
        del args[args.index("--keep"):args.index("--keep") + 2]
    report, cpu_dir, gpu_dir = args
    tmp = tempfile.mkdtemp(prefix="dlb-site-")
    work = pathlib.Path(tmp)
    browser = None
    try:
        db = build_history(report, cpu_dir, gpu_dir, work)
        site = work / "site"
        r = subprocess.run([report, "site", "--db", str(db), "-o", str(site)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(r.returncode == 0, "site: exit %d: %s" % (r.returncode, r.stderr.strip()))
        print(r.stderr.strip())
        changes = json.loads((site / "changes.json").read_text())
        # history check reads the newest run's machine (h100, added last): the same change points.
        r = subprocess.run([report, "history", "check", "--db", str(db), "--history", "1000",
                            "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        check(r.returncode in (0, 3), "history check: exit %d: %s" % (r.returncode, r.stderr))
        rows = json.loads(r.stdout)["sections"][1]["tables"][0]["rows"] if r.stdout else []
        from_check = sorted((row["name"], row["step_commit"]) for row in rows
                            if row["step"].split(" ")[0] in ("slower", "faster"))
        from_site = sorted((c["case"], c["commit"]) for c in changes if c["machine"] == "h100")
        check(from_check and from_check == from_site,
              "check and site disagree: %s vs %s" % (from_check, from_site))
        browser = Browser(exe, work / "profile")
        inside = site.resolve().as_uri() + "/"

        def visit(path):
            browser.open(path)
            ms = browser.first_paint_ms()
            print("%s: first contentful paint %.0f ms" % (path.relative_to(site), ms))

        visit(site / "index.html")
        machines = browser.eval("[...document.querySelectorAll('tbody a')].map(a=>a.textContent)")
        check("cpu-2core" in machines and "h100" in machines, "index: machines %s" % machines)
        families = browser.eval("[...document.querySelectorAll('a[href*=\"#family=\"]')]"
                                ".map(a=>a.textContent)")
        check("gemm" in families and "conv" in families, "index: family links %s" % families)
        cpu_index = next(site.glob("cpu-2core-*/index.html"))
        # A family's index is the machine's index filtered by the link's fragment.
        browser.open(cpu_index, "#family=conv")
        conv = browser.eval("[...document.querySelectorAll('#cases tbody tr')].filter(r=>!r.hidden)"
                            ".map(r=>r.dataset.family)")
        check(conv and set(conv) == {"conv"}, "#family=conv shows %s" % sorted(set(conv or [])))
        visit(cpu_index)
        rows = browser.eval("document.querySelectorAll('#cases tbody tr').length")
        check(rows > 10, "cpu index: %s rows" % rows)
        browser.eval("document.querySelector('input[name=only][value=regressed]').click()")
        shown = browser.eval("[...document.querySelectorAll('#cases tbody tr')].filter(r=>!r.hidden)"
                             ".map(r=>[r.dataset.verdict, r.querySelector('a').textContent,"
                             " r.querySelector('td:nth-child(2)').textContent])")
        check(len(shown) > 0 and all(v == "slower" for v, _, _ in shown),
              "only regressed: %s" % shown[:5])
        check(all(n.startswith("gemm/") for _, n, _ in shown),
              "only regressed shows only the planted gemm cases: %s" % shown)
        check(all("tier smoke" in b for _, _, b in shown), "regressed rows are smoke: %s" % shown)
        text = browser.eval("document.getElementById('shown').textContent")
        check(text.startswith("%d of %d" % (len(shown), rows)), "count line: %s" % text)
        check(browser.eval("location.hash") == "#only=regressed", "the filter is in the URL")
        # The first row is the largest latest change: a planted gemm case.
        first = browser.eval("document.querySelector('#cases tbody tr a').getAttribute('href')")
        visit(cpu_index.parent / first.split("#")[0])
        marker = browser.eval("document.querySelector('a.cp').getAttribute('href')")
        check(marker is not None, "case page: no change point marker")
        browser.eval("document.querySelector('a.cp').dispatchEvent(new MouseEvent('click',"
                     "{bubbles:true}))")
        target = browser.eval("(document.querySelector(':target')||{}).id")
        check(target is not None and "#" + target == marker, "click: :target %s, marker %s"
              % (target, marker))
        section = browser.eval("document.querySelector(':target').textContent")
        check("slower +" in section, "change point section: %s" % section[:200])
        check("--good c029 --bad c030" in section, "bisect command: %s" % section)
        check("bench_gemm '--benchmark_filter=^gemm/" in section, "repro command: %s" % section)
        check("p = " in section and "before" in section and "after" in section,
              "both sides and the U test: %s" % section[:300])
        tip = browser.eval("document.querySelector('circle.pt title').textContent")
        check(tip.startswith("run #1, 2026-10-01") and "median" in tip, "point tooltip: %s" % tip)
        gpu_index = next(site.glob("h100-*/index.html"))
        visit(gpu_index)
        browser.eval("document.querySelector('input[name=only][value=changed]').click()")
        href = browser.eval("([...document.querySelectorAll('#cases tbody tr')].filter(r=>!r.hidden)"
                            "[0]||{querySelector:()=>null}).querySelector('a')?.getAttribute('href')")
        check(href is not None, "gpu index: no changed case")
        if href:
            visit(gpu_index.parent / href.split("#")[0])
            sec = browser.eval("document.querySelector('section.cp').textContent")
            check("lines up with gpu_driver 580.159.04 → 580.170.01" in sec,
                  "driver upgrade: %s" % sec[:400])
            check("Environment change: " in sec and "driver 580.159.04 → 580.170.01" in sec
                  and "Bisect:" not in sec, "driver upgrade not named as one: %s" % sec[:600])
            check("Kernels: run #12 → run #13" in sec, "kernel diff: %s" % sec[:600])
        visit(gpu_index.parent / "machine.html")
        check(browser.eval("document.querySelectorAll('td.chg').length") >= 1,
              "machine page: the driver change is not highlighted")
        chg = browser.eval("[...document.querySelectorAll('td.chg')]"
                           ".map(c=>c.textContent).join('|')")
        check("gpu_driver 580.159.04 → 580.170.01" in chg, "machine page: changes %r" % chg[:300])
        # What changed, compactly: no wider than the window (1280 px) however many keys and runs.
        width = browser.eval("document.documentElement.scrollWidth")
        check(width <= 1280, "machine page: %s px wide in a 1280 px window" % width)
        seen = browser.urls
        outside = [u for u in seen if not u.startswith(inside)]
        check(not outside, "requests outside the site's folder: %s" % outside[:5])
        check(len(seen) >= 6, "requests seen: %d" % len(seen))
        check(any(c["case"].startswith("gemm/") and c["commit"] == "c030" for c in changes),
              "changes.json: no planted change at c030")
        check(not any(c["case"].startswith("gemm/") and c["build"].startswith("tier default")
                      for c in changes), "the default tier's series got a change point")
    finally:
        if browser:
            browser.close()
        if keep:
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(work / "site", keep) if (work / "site").exists() else None
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("site: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
