"""The peers' common core: workload rows, names, timing, the CUDA-graph capture, JSON records.

Nothing here imports torch at module level: the command line, the names and the tests run where
torch is not installed; the timing functions import it when called.
"""
import collections
import csv
import glob
import json
import os
import statistics
import time

PROG = "pytorch-peer"
EXECUTABLE = "tools/peers/pytorch-peer"
WORKLOADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures",
                         "workloads")
# The dtypes of gemm, conv and attn: torch's names (tf32 is float32 with TF32 math on).
TORCH_DTYPES = {"f32": "float32", "tf32": "float32", "f16": "float16", "bf16": "bfloat16"}


def die(message):
    """Exits with one line on stderr, the program's name first."""
    raise SystemExit(f"{PROG}: {message}")


def rows(prefix):
    """The rows of fixtures/workloads/<prefix>*.csv, in file order, comments and blanks skipped."""
    for path in sorted(glob.glob(os.path.join(WORKLOADS, prefix + "*.csv"))):
        with open(path) as f:
            lines = [l for l in f if l.strip() and not l.lstrip().startswith("#")]
        yield from csv.DictReader(lines)


def ints(text):
    """"64,256" -> [64, 256]."""
    return [int(x) for x in text.split(",")]


def name(family, device, workload, keys):
    """dlbench's name with backend pytorch: <family>/<device>/pytorch/<workload>/<key:value>..."""
    return "/".join([family, device, "pytorch", workload] + list(keys))


def valid_tap_pairs(size, out, taps, stride, pad, dilation):
    """(output, tap) pairs of one axis whose input position lies inside the input, as dlbench counts
    a convolution's work (kernels/common/shapes.h ValidTapPairs): the taps on the padding left out."""
    pairs = 0
    for t in range(taps):
        offset = t * dilation - pad
        lo = max(0, -(offset // stride))
        hi = min(out - 1, (size - 1 - offset) // stride)
        pairs += max(0, hi - lo + 1)
    return pairs


def conv_flops(bs, c, k, h, w, r, s, stride, pad, dilation, groups):
    """(work, conventional) FLOP of one pass: 2 x the multiply-adds at taps inside the input, and 2 x
    every tap at every output position (cuDNN's, PyTorch's and benchdnn's count)."""
    p = (h + 2 * pad - dilation * (r - 1) - 1) // stride + 1
    q = (w + 2 * pad - dilation * (s - 1) - 1) // stride + 1
    per = 2.0 * bs * k * (c // groups)
    return (per * valid_tap_pairs(h, p, r, stride, pad, dilation) *
            valid_tap_pairs(w, q, s, stride, pad, dilation), per * p * q * r * s)


def torch_dtype(dt):
    import torch
    return getattr(torch, TORCH_DTYPES[dt])


def set_tf32(on):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def time_fn(fn, device, min_span_s=1e-3, iters=50, reps=5):
    """Seconds per call: reps repetitions of iters timed batches (each >= min_span_s long)."""
    import torch
    for _ in range(5):
        fn()
    sync = torch.cuda.synchronize if device == "gpu" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    one = max(time.perf_counter() - t0, 1e-7)
    launches = max(1, min(1000, int(min_span_s / one) + 1))
    out = []
    for _ in range(reps):
        samples = []
        for _ in range(max(1, iters // launches) if one < 0.05 else 3):
            if device == "gpu":
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(launches):
                    fn()
                e.record()
                e.synchronize()
                samples.append(s.elapsed_time(e) / 1e3 / launches)
            else:
                t0 = time.perf_counter()
                for _ in range(launches):
                    fn()
                samples.append((time.perf_counter() - t0) / launches)
        out.append(statistics.median(samples))
    return out


def capture(warm_step, body, before_capture=None, warmups=3):
    """PyTorch's whole-network capture: warmups of warm_step on a side stream, then body captured
    in one CUDA graph (before_capture runs just before, outside it); returns the graph's replay."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmups):
            warm_step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    if before_capture:
        before_capture()
    with torch.cuda.graph(g):
        body()
    return g.replay


def time_step(build, device, reps, record=None):
    """Builds a step (build() -> (fn, extra)) and times it on a clean allocator: (times, peak
    memory in bytes, extra). With record (a GPU case's dlbench object, --kernels on), the step's
    kernel table goes into record["kernels"] after the timing. The step is freed before
    returning, whatever happens."""
    import gc
    import resource
    import torch
    gpu = device == "gpu"
    fn = None
    try:
        if gpu:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        fn, extra = build()
        times = time_fn(fn, device, reps=reps)
        peak = (torch.cuda.max_memory_allocated() if gpu
                else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        if record is not None and gpu:
            from . import kernels
            record["kernels"] = kernels.record(fn)
        return times, peak, extra
    finally:
        del fn
        gc.collect()


def time_configs(configs, time_one, errors=(Exception,), release=None):
    """Times each configuration of one case, as the peers that report PyTorch's fastest do:
    {config: (median s, times, note)} of time_one(config) -> (times, note), or (None, None, why)
    for one that raises one of errors (a configuration that does not build or run is a note, not
    a stop). After each, garbage is collected and release() runs (default: the CUDA caching
    allocator's empty_cache), so the next one starts with the memory free."""
    import gc
    if release is None:
        def release():
            import torch
            torch.cuda.empty_cache()
    tried = {}
    for c in configs:
        try:
            times, note = time_one(c)
            tried[c] = (statistics.median(times), times, note)
        except errors as e:
            tried[c] = (None, None, first_line(e)[:160])
        finally:
            gc.collect()
            release()
    return tried


Fastest = collections.namedtuple("Fastest", "config median times note others")


def fastest(tried, short=str, failed="failed"):
    """The fastest configuration of time_configs' result, with others: every configuration's
    median or why it did not run, in the order tried ("graph 5.061 ms, eager failed (...)"), for
    the label; None when none ran."""
    ran = {k: v for k, v in tried.items() if v[0] is not None}
    if not ran:
        return None
    best = min(ran, key=lambda k: ran[k][0])
    median, times, note = ran[best]
    others = ", ".join(f"{short(k)} {v[0] * 1e3:.3f} ms" if v[0] is not None
                       else f"{short(k)} {failed} ({v[2]})" for k, v in tried.items())
    return Fastest(best, median, times, note, others)


def none_ran(name, tried, width):
    """The record of a case none of whose configurations ran, each one's reason; printed."""
    why = "; ".join(f"{k}: {v[2]}" for k, v in tried.items())
    print(f"{name:{width}s} failed: {why}", flush=True)
    return error(name, "failed: " + why)


def repetitions(name, times, fields):
    """A case's records, one per repetition: iteration()'s fields, then fields(t) of its time."""
    records = []
    for i, t in enumerate(times):
        entry = iteration(name, i, len(times), t)
        entry.update(fields(t))
        records.append(entry)
    return records


def step_failure(name, e, result):
    """The record of a step that failed to build or run (out of memory said as such), printed."""
    import torch
    first = first_line(e)
    prefix = "out of memory: " if isinstance(e, torch.OutOfMemoryError) else "failed: "
    print(f"{name:90s} {prefix}{first}", flush=True)
    return error(name, prefix + first, result)


def first_line(e):
    """An exception's first line, or its type's name when it has no message."""
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def iteration(name, i, n, real_s, iterations=1):
    """The fields of a Google Benchmark repetition (i of n) that every record starts with."""
    return {"name": name, "run_name": name, "run_type": "iteration", "repetitions": n,
            "repetition_index": i, "threads": 1, "iterations": iterations,
            "real_time": real_s * 1e6, "cpu_time": real_s * 1e6, "time_unit": "us"}


def error(name, message, dlbench=None):
    """A case that did not run, as Google Benchmark records one."""
    b = {"name": name, "run_name": name, "run_type": "iteration", "error_occurred": True,
         "error_message": message}
    if dlbench is not None:
        b["dlbench"] = dlbench
    return b


def context(**extra):
    """The context every file starts with; extra adds the libraries' versions and the devices."""
    import torch
    ctx = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "library": "pytorch",
           "torch_version": torch.__version__}
    ctx.update(extra)
    return ctx


def write_gpu_run(out, make_benchmarks, needs_cuda):
    """A GPU family's run: dies with needs_cuda without a CUDA device, else times
    make_benchmarks() and writes its entries with the device and the cuDNN loaded."""
    import torch
    if not torch.cuda.is_available():
        die(needs_cuda)
    benchmarks = make_benchmarks()
    ctx = context(executable=EXECUTABLE, num_cpus=os.cpu_count(),
                  gpu_name=torch.cuda.get_device_name(0),
                  cudnn_version=cudnn_version_text(torch.backends.cudnn.version()))
    write(out, ctx, benchmarks)


def cudnn_version_text(v):
    """torch.backends.cudnn.version()'s integer as dlbench writes a version: 91900 -> "9.19.0"
    (cuDNN 9: major*10000 + minor*100 + patch), 8907 -> "8.9.7" (cuDNN 8: major*1000 + ...);
    None (no cuDNN loaded) -> "not loaded"."""
    if v is None:
        return "not loaded"
    v = int(v)
    if v >= 90000:
        return "%d.%d.%d" % (v // 10000, v % 10000 // 100, v % 100)
    return "%d.%d.%d" % (v // 1000, v % 1000 // 100, v % 100)


def write(out, ctx, benchmarks):
    """Writes the file whole or not at all: a run cut short leaves no half-written JSON."""
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"context": ctx, "benchmarks": benchmarks}, f, indent=1)
    os.replace(tmp, out)
