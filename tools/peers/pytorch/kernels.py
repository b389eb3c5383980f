"""--kernels on: what a step ran on the GPU, as dlbench's per-kernel table (docs/schema.md), so
that `dlbench-report compare` sets PyTorch's kernels beside dlbench's, row by row.

torch.profiler records the CUDA activity through Kineto, which reads CUPTI's activity API as
dlbench's recorder does (kernels of CUDA graph replays included); the names are shortened as
kernels/common/kernel_trace.cpp's ShortenKernelName shortens them, so the same kernel has the same
row on both sides. Nothing here imports torch at module level (the tests run without it)."""
import time

MAX_ROWS = 30  # the rows kept; the rest summed into one "(other)" row, as dlbench's tables
OTHER = "(other)"


def _opens(c):
    return c in "<([{"


def _closes(c):
    return c in ">)]}"


def _group_end(s, start):
    depth = 0
    for i in range(start, len(s)):
        if _opens(s[i]):
            depth += 1
        if _closes(s[i]):
            depth -= 1
            if depth == 0:
                return i + 1
    return len(s)


def _arguments(s, start, end):
    args, depth, begin = [], 0, start + 1
    for i in range(start + 1, end - 1):
        if _opens(s[i]):
            depth += 1
        if _closes(s[i]):
            depth -= 1
        if depth == 0 and s[i] == ",":
            args.append(s[begin:i])
            begin = i + 1
    args.append(s[begin:end - 1])
    return args


def _cut_templates(s, max_len):
    out, i = "", 0
    while i < len(s):
        if s[i] != "<":
            out += s[i]
            i += 1
            continue
        end = _group_end(s, i)
        args = _arguments(s, i, end)
        tail = len(s) - end
        out += "<"
        for k, arg in enumerate(args):
            sep = "" if k == 0 else ","
            if len(out) + len(sep) + len(arg) + 1 + tail <= max_len:
                out += sep + arg
                continue
            lt = arg.find("<")
            if k == 0 and lt >= 0 and len(out) + lt + 6 + tail <= max_len:
                out += arg[:lt] + "<...>"
            else:
                out += sep + "..."
            break
        out += ">"
        i = end
    return out


def shorten(name, max_len=100):
    """A demangled kernel name as dlbench's tables show it: no return type, no parameter list,
    template arguments without spaces, cut to max_len where they make it longer."""
    s = name.replace("(anonymous namespace)", "(anon)")
    if s.startswith("void "):
        s = s[5:]
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            if s[i] == ")":
                depth += 1
            if s[i] == "(":
                depth -= 1
                if depth == 0:
                    if i > 0:
                        s = s[:i]
                    break
    s = s.replace(", ", ",").replace(" >", ">").rstrip(" ")
    if len(s) <= max_len or "<" not in s:
        return s
    return _cut_templates(s, max_len)


def kind_and_name(name):
    """(kind, row name) of a profiler event: Kineto's "Memcpy DtoD (Device -> Device)" is
    dlbench's "memcpy DtoD", "Memset (Device)" its "memset"."""
    if name.startswith("Memcpy "):
        return "memcpy", "memcpy " + name.split()[1]
    if name.startswith("Memset"):
        return "memset", "memset"
    return "kernel", shorten(name)


def table(activities, runs, span_s, max_rows=MAX_ROWS):
    """The kernels object of (name, seconds) activities over `runs` calls taking span_s seconds."""
    rows = {}
    for name, seconds in activities:
        kind, short = kind_and_name(name)
        row = rows.setdefault(short, {"name": short, "kind": kind, "calls": 0, "total_s": 0.0})
        row["calls"] += 1
        row["total_s"] += seconds
    ordered = sorted(rows.values(), key=lambda r: (-r["total_s"], r["name"]))
    kept, rest = ordered[:max_rows], ordered[max_rows:]
    if rest:
        kept.append({"name": OTHER, "kind": "other", "calls": sum(r["calls"] for r in rest),
                     "total_s": sum(r["total_s"] for r in rest)})
    out = []
    for r in kept:
        out.append({"name": r["name"], "kind": r["kind"], "launches_per_run": r["calls"] / runs,
                    "total_s": r["total_s"], "mean_s": r["total_s"] / r["calls"],
                    "share": r["total_s"] / span_s if span_s > 0 else 0.0})
    return {"source": "cupti", "runs": runs, "span_s": span_s, "rows": out}


def record(fn, runs=20):
    """Calls fn `runs` times under torch.profiler's CUDA activity and returns the table."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(runs):
            fn()
        torch.cuda.synchronize()
        span = time.perf_counter() - t0
    cuda = torch.autograd.DeviceType.CUDA
    acts = [(e.name, e.time_range.elapsed_us() / 1e6) for e in prof.events()
            if e.device_type == cuda]
    return table(acts, runs, span)
