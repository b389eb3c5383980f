#!/usr/bin/env python3
"""Times dlbench's workloads with PyTorch (eager) and writes Google Benchmark JSON.

The names are dlbench's with backend `pytorch`, so `dlbench-report summary` and `compare` read
the file next to dlbench's own, and a result lines up with its dlbench twin by workload and keys:

  tools/pytorch_baseline.py gemm --device gpu --dtypes bf16,tf32,f32 --filter 'square.8192$' -o pt.json
  tools/pytorch_baseline.py conv --device gpu --batch-sizes 64 --filter '^resnet18\\.' -o pt_conv.json

GPU: CUDA events around back-to-back launches after a warm-up, cudnn.benchmark on (PyTorch then
times cuDNN's candidate engines itself, like dlbench's --dlb_conv_algo=search). CPU: the steady clock.
f32 disables TF32 in cuBLAS and cuDNN; tf32 enables it; f16/bf16 use channels-last for conv.
"""
import argparse
import csv
import glob
import json
import os
import re
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "..", "fixtures", "workloads")
DTYPES = {"f32": torch.float32, "tf32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def rows(prefix):
    for path in sorted(glob.glob(os.path.join(WORKLOADS, prefix + "*.csv"))):
        with open(path) as f:
            lines = [l for l in f if l.strip() and not l.lstrip().startswith("#")]
        yield from csv.DictReader(lines)


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def time_fn(fn, device, min_span_s=1e-3, iters=50, reps=5):
    """Seconds per call: reps repetitions of iters timed batches (each >= min_span_s long)."""
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


def gemm_cases(args):
    for r in rows("gemm_"):
        ms = args.batch_sizes if r["m"] == "bs" else [int(r["m"])]
        for m in ms:
            n, k = int(r["n"]), int(r["k"])
            ta, tb = r["ta"] == "1", r["tb"] == "1"
            for dt in args.dtypes:
                keys = ([f"bs:{m}"] if r["m"] == "bs" else []) + [f"dt:{dt}"]
                name = "/".join(["gemm", args.device, "pytorch", r["name"]] + keys)

                def make(m=m, n=n, k=k, ta=ta, tb=tb, dt=dt):
                    dev = "cuda" if args.device == "gpu" else "cpu"
                    a = torch.rand((k, m) if ta else (m, k), device=dev, dtype=DTYPES[dt]) * 2 - 1
                    b = torch.rand((n, k) if tb else (k, n), device=dev, dtype=DTYPES[dt]) * 2 - 1
                    a = a.t() if ta else a
                    b = b.t() if tb else b
                    return (lambda: torch.matmul(a, b)), 2.0 * m * n * k, m if r["m"] == "bs" else 0
                yield name, r["name"], dt, make


def conv_cases(args):
    for r in rows("conv_"):
        for bs in args.batch_sizes:
            for dt in args.dtypes:
                fmt = "nhwc" if dt in ("f16", "bf16") else "nchw"
                for p in ("fwd", "bwd_data", "bwd_filter"):
                    keys = [f"bs:{bs}", f"dt:{dt}", f"fmt:{fmt}", f"pass:{p}"]
                    name = "/".join(["conv", args.device, "pytorch", r["name"]] + keys)

                    def make(r=r, bs=bs, dt=dt, fmt=fmt, p=p):
                        dev = "cuda" if args.device == "gpu" else "cpu"
                        c, h, w, k = int(r["c"]), int(r["h"]), int(r["w"]), int(r["k"])
                        kr, ks, st, pd = int(r["r"]), int(r["s"]), int(r["stride"]), int(r["pad"])
                        dl, g = int(r["dilation"]), int(r["groups"])
                        mf = torch.channels_last if fmt == "nhwc" else torch.contiguous_format
                        t = DTYPES[dt]
                        x = (torch.rand(bs, c, h, w, device=dev, dtype=t) * 2 - 1).to(memory_format=mf)
                        wt = (torch.rand(k, c // g, kr, ks, device=dev, dtype=t) * 2 - 1).to(memory_format=mf)
                        y = torch.nn.functional.conv2d(x, wt, None, st, pd, dl, g)
                        dy = (torch.rand_like(y) * 2 - 1).contiguous(memory_format=mf)
                        flops = 2.0 * bs * k * y.shape[2] * y.shape[3] * (c // g) * kr * ks
                        if p == "fwd":
                            fn = lambda: torch.nn.functional.conv2d(x, wt, None, st, pd, dl, g)
                        else:
                            mask = [p == "bwd_data", p == "bwd_filter", False]
                            fn = lambda: torch.ops.aten.convolution_backward(
                                dy, x, wt, None, [st, st], [pd, pd], [dl, dl], False, [0, 0], g, mask)
                        return fn, flops, bs
                    yield name, r["name"], dt, make


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", choices=["gemm", "conv"])
    ap.add_argument("--device", choices=["cpu", "gpu"], default="gpu")
    ap.add_argument("--dtypes", default="f32,tf32,bf16")
    ap.add_argument("--batch-sizes", default="64")
    ap.add_argument("--filter", default=".*", help="regex on the workload name")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args()
    args.dtypes = args.dtypes.split(",")
    args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    if args.device == "gpu" and not torch.cuda.is_available():
        sys.exit("pytorch_baseline: no CUDA device")
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.backends.cudnn.benchmark = True
    cases = gemm_cases(args) if args.family == "gemm" else conv_cases(args)
    benchmarks = []
    for name, workload, dt, make in cases:
        if not re.search(args.filter, workload):
            continue
        if args.device == "cpu" and dt in ("tf32",):
            continue
        set_tf32(dt == "tf32")
        try:
            fn, flops, items = make()
            times = time_fn(fn, args.device, reps=args.repetitions)
        except RuntimeError as e:
            benchmarks.append({"name": name, "run_name": name, "run_type": "iteration",
                               "error_occurred": True, "error_message": f"failed: {str(e).splitlines()[0]}"})
            continue
        for i, t in enumerate(times):
            b = {"name": name, "run_name": name, "run_type": "iteration",
                 "repetitions": len(times), "repetition_index": i, "threads": 1, "iterations": 1,
                 "real_time": t * 1e6, "cpu_time": t * 1e6, "time_unit": "us",
                 "flop_per_s": flops / t}
            if items:
                b["items_per_s"] = items / t
                b["bs"] = items
            benchmarks.append(b)
        print(f"{name:90s} {statistics.median(times) * 1e6:10.1f} us "
              f"{flops / statistics.median(times) / 1e12:8.1f} TFLOP/s", flush=True)
        torch.cuda.empty_cache() if args.device == "gpu" else None
    ctx = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "library": "pytorch",
           "torch_version": torch.__version__, "executable": "tools/pytorch_baseline.py",
           "num_cpus": os.cpu_count(), "torch_threads": torch.get_num_threads()}
    if args.device == "gpu":
        ctx["gpu_name"] = torch.cuda.get_device_name(0)
        ctx["cudnn_version"] = str(torch.backends.cudnn.version())
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"context": ctx, "benchmarks": benchmarks}, f, indent=1)
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
