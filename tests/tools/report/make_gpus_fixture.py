#!/usr/bin/env python3
# Writes data/gpus_h2.json, gpus_h4.json, gpus_h8.json: SYNTHETIC multi-GPU runs (no machine
# measured them) as three hosts of 2, 4 and 8 GPUs would write them, for the report's GPU scaling
# sections (`sweep --axis gpus`, the full report) and their golden outputs. ResNet-18 224 DDP steps
# (amp_bf16, NHWC, graphed) at a per-GPU batch of 256 (the 2-GPU host also ran the one-GPU step,
# gpus:1) and 64 (no gpus:1 point anywhere: the report falls back on each case's own
# scaling_efficiency), and NCCL all_reduce (out of place, and in place at 1 GiB on 2 GPUs) and
# all_gather at a few sizes, busbw near nccl-tests' on NVLink. One all_reduce case is mistrusted.
# And data/gpus_h1.json: a one-GPU run's ordinary steps (no gpus key): bs 64 (the curve's 1-GPU
# point, 2% faster than the one-GPU step the multi-GPU processes timed), bs 256 (the curve's own
# gpus:1 point wins) and bs 128 (no multi-GPU twin: no curve).
#   tests/tools/report/make_gpus_fixture.py   (from anywhere)
import json, os

HOSTS = (2, 4, 8)
# per-GPU batch -> (one-GPU images/s, {gpus: (scaling efficiency, exposed comm s per step)})
STEPS = {
    256: (12300.0, {2: (0.9675, 0.5e-3), 4: (0.951, 0.8e-3), 8: (0.935, 1.2e-3)}),
    64: (11000.0, {2: (0.88, 0.7e-3), 4: (0.86, 0.85e-3), 8: (0.83, 1.1e-3)}),
}
# collective -> {gpus: {bytes: busbw GB/s}}
MIB = 1 << 20
BUSBW = {
    "all_reduce": {2: {MIB: 40, 64 * MIB: 300, 1024 * MIB: 345},
                   4: {MIB: 35, 64 * MIB: 280, 1024 * MIB: 330},
                   8: {MIB: 30, 64 * MIB: 260, 1024 * MIB: 320}},
    "all_gather": {2: {64 * MIB: 290, 1024 * MIB: 340}, 8: {64 * MIB: 250, 1024 * MIB: 315}},
}
FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n}


def verification(disposition="verified"):
    return {"verification": {"disposition": disposition, "error": 0.0, "tolerance": 0.0,
                             "metric": "wrong_elements"}}


def step(bs, n, one, eff, comm, counters=True, gpus_key=True):
    total = one * n * eff
    name = f"train/gpu/libtorch/resnet18/bs:{bs}/dt:amp_bf16/fmt:nhwc/pass:train/graph:1"
    name += f"/gpus:{n}" if gpus_key else ""
    e = {"name": name + "/manual_time", "run_name": name + "/manual_time", "run_type": "iteration",
         "repetitions": 1, "repetition_index": 0, "threads": 1, "iterations": 100,
         "real_time": bs * n / total * 1e3, "cpu_time": bs * n / total * 1e3, "time_unit": "ms",
         "bs": bs, "items_per_s": total}
    if gpus_key:
        e["per_gpu_items_per_s"] = total / n
    if counters:
        e.update({"scaling_efficiency": eff, "single_gpu_items_per_s": one, "exposed_comm_s": comm})
    e["dlbench"] = {"network": "resnet18", "workload": "resnet18"}
    return e


def collective(c, n, size, busbw, inplace=False, disposition="verified"):
    alg = busbw / FACTOR[c](n) * 1e9
    name = f"comm/gpu/nccl/{c}.{size}/dt:bf16/gpus:{n}" + ("/inplace:1" if inplace else "")
    t_us = size / alg * 1e6
    return {"name": name + "/manual_time", "run_name": name + "/manual_time",
            "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
            "iterations": 100, "real_time": t_us, "cpu_time": t_us, "time_unit": "us",
            "algbw_bytes_per_s": alg, "busbw_bytes_per_s": busbw * 1e9,
            "dlbench": {"workload": f"{c}.{size}", **verification(disposition)}}


def write(host, benches):
    doc = {"context": {"date": "2026-11-23T12:00:00+00:00", "host_name": f"synthetic-{host}gpu",
                       "num_cpus": 16, "library_build_type": "release",
                       "comment": "synthetic fixture (tests/tools/report/make_gpus_fixture.py): no "
                                  "machine measured it"},
           "benchmarks": benches}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", f"gpus_h{host}.json")
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


# The one-GPU run: the ordinary step, no gpus key, as bench_train writes it without --dlb_train_gpus.
write(1, [step(64, 1, STEPS[64][0] * 1.02, 1.0, 0.0, counters=False, gpus_key=False),
          step(128, 1, 11800.0, 1.0, 0.0, counters=False, gpus_key=False),
          step(256, 1, 12000.0, 1.0, 0.0, counters=False, gpus_key=False)])

for host in HOSTS:
    benches = []
    for bs, (one, by_n) in STEPS.items():
        if host == 2 and bs == 256:
            benches.append(step(bs, 1, one, 1.0, 0.0, counters=False))
        eff, comm = by_n[host]
        # The 4-GPU host measured its one-GPU step 1% faster than the 2-GPU host.
        benches.append(step(bs, host, one * (1.01 if host == 4 else 1), eff, comm))
    for c, by_n in BUSBW.items():
        for size, bw in sorted(by_n.get(host, {}).items()):
            bad = c == "all_reduce" and host == 8 and size == MIB
            benches.append(collective(c, host, size, bw,
                                      disposition="mistrusted" if bad else "verified"))
    if host == 2:
        benches.append(collective("all_reduce", 2, 1024 * MIB, 348, inplace=True))
    write(host, benches)
