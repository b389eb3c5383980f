#!/usr/bin/env python3
# Writes data/train_synthetic.json: a SYNTHETIC train-family run (no machine measured it) for the
# report's train sections and their golden outputs. Three models (the MLP, ResNet-18 on CIFAR-10,
# ResNet-18 on ImageNet) on a 16-core CPU and an H100, backends native (MLP, CPU), libtorch and the
# PyTorch peer (pytorch), f32 and amp_bf16, eager and graphed, training and inference. Times follow
# a time per image t(b) = c/b^alpha + t_min chosen near the figures of the studies dlbench
# replaces (ResNet-18 CIFAR: ~415 s an epoch on the CPU, 11.7k / 143k img/s at bs 16 / 256
# graphed on the GPU); phases, peak memory and epochs are derived from them. Three repetitions
# each, the median being the nominal time. Also: one unsupported and one out-of-memory case, the
# peer's cases without phase counters (it does not time phases), one CPU case whose epoch comes
# from epoch_items alone.
#   tests/tools/report/make_train_fixture.py   (from anywhere)
import json, os

EPOCH = {"mlp": 100000, "resnet18_cifar": 50000, "resnet18": 1281167}
# (model, device, backend, dt, fmt, graph, pass) -> (c [s], alpha, t_min [s]) of the time per image.
CURVES = {}


def curve(model, device, backend, dt, fmt, graph, pas, c, alpha, t_min):
    CURVES[(model, device, backend, dt, fmt, graph, pas)] = (c, alpha, t_min)


# The MLP: launch-bound on the GPU, so the step's fixed cost c dominates and a graph removes most.
for b, c, t in (("native", 200e-6, 5e-6), ("libtorch", 1e-3, 6e-6)):
    curve("mlp", "cpu", b, "f32", "", "", "train", c, 1.0, t)
for b, eager, graphed in (("libtorch", 250e-6, 60e-6), ("pytorch", 400e-6, 70e-6)):
    for dt, t_min in (("f32", 0.05e-6), ("amp_bf16", 0.04e-6)):
        curve("mlp", "gpu", b, dt, "", "0", "train", eager, 1.0, t_min)
        curve("mlp", "gpu", b, dt, "", "1", "train", graphed, 1.0, t_min)
# ResNet-18 on CIFAR-10. On the GPU a step has a fixed cost c (kernel launches; the peer's Python
# eager loop the most) that a graph mostly removes, so alpha stays near 1 and the step time grows
# with the batch.
curve("resnet18_cifar", "cpu", "libtorch", "f32", "nchw", "", "train", 32e-3, 1.0, 7.6e-3)
curve("resnet18_cifar", "cpu", "libtorch", "amp_bf16", "nhwc", "", "train", 24e-3, 1.0, 5.4e-3)
curve("resnet18_cifar", "cpu", "libtorch", "f32", "nchw", "", "infer", 10e-3, 1.0, 2.5e-3)
for b, graph, c, alpha, t_amp, t_f32 in (("libtorch", "1", 1.2e-3, 0.95, 2.3e-6, 12e-6),
                                         ("libtorch", "0", 4.2e-3, 1.0, 2.5e-6, 12.5e-6),
                                         ("pytorch", "1", 1.25e-3, 0.95, 2.35e-6, 12.2e-6),
                                         ("pytorch", "0", 9.4e-3, 1.0, 2.6e-6, 13e-6)):
    curve("resnet18_cifar", "gpu", b, "amp_bf16", "nhwc", graph, "train", c, alpha, t_amp)
    curve("resnet18_cifar", "gpu", b, "f32", "nchw", graph, "train", c * 1.05, alpha, t_f32)
curve("resnet18_cifar", "gpu", "libtorch", "amp_bf16", "nhwc", "1", "infer", 0.4e-3, 0.95, 0.8e-6)
curve("resnet18_cifar", "gpu", "libtorch", "amp_bf16", "nhwc", "0", "infer", 1.4e-3, 1.0, 0.85e-6)
# ResNet-18 on ImageNet: compute-bound at these batch sizes; a graph saves little.
curve("resnet18", "cpu", "libtorch", "f32", "nchw", "", "train", 40e-3, 1.0, 15.8e-3)
for dt, fmt, t_min in (("f32", "nchw", 200e-6), ("amp_bf16", "nhwc", 78e-6)):
    curve("resnet18", "gpu", "libtorch", dt, fmt, "1", "train", 0.6e-3, 1.0, t_min)
    curve("resnet18", "gpu", "libtorch", dt, fmt, "0", "train", 0.9e-3, 1.0, t_min)

BATCHES = {("mlp", "cpu"): (64, 256, 1024), ("mlp", "gpu"): (64, 256, 1024),
           ("resnet18_cifar", "cpu"): (16, 64, 256), ("resnet18_cifar", "gpu"): (16, 64, 256),
           ("resnet18", "cpu"): (32, 64), ("resnet18", "gpu"): (64, 128, 256)}
# Bytes: weights + gradients + momentum (f32) and activations per image.
PARAMS = {"mlp": 0.65e6, "resnet18_cifar": 11.2e6, "resnet18": 11.7e6}
ACT = {"mlp": 12e3, "resnet18_cifar": 3.1e6, "resnet18": 41e6}
JITTER = (1.0, 1.004, 0.997)


def name(model, device, backend, bs, dt, fmt, pas, graph):
    keys = [f"bs:{bs}", f"dt:{dt}"] + ([f"fmt:{fmt}"] if fmt else []) + [f"pass:{pas}"]
    keys += [f"graph:{graph}"] if graph else []
    return "/".join(["train", device, backend, model] + keys + ["manual_time"])


def step_s(key, bs):
    c, alpha, t_min = CURVES[key]
    return bs * (c / bs ** alpha + t_min)


benchmarks = []
family = 0
for key in CURVES:
    model, device, backend, dt, fmt, graph, pas = key
    for bs in BATCHES[(model, device)]:
        n = name(model, device, backend, bs, dt, fmt, pas, graph)
        t = step_s(key, bs)
        # Phases come from a separate un-graphed pass: the eager twin's step, split.
        eager = (model, device, backend, dt, fmt, "0" if graph else "", pas)
        te = step_s(eager, bs) if eager in CURVES else t
        split = (0.32, 0.60, 0.05) if device == "cpu" else (0.30, 0.58, 0.07)
        act = ACT[model] * (0.55 if dt == "amp_bf16" else 1.0) * (0.35 if pas == "infer" else 1)
        mem = PARAMS[model] * 4 * (1 if pas == "infer" else 3) + bs * act
        if device == "cpu":
            mem += 1.2 * 2**30  # the process: LibTorch, oneDNN, the data
        result = {"network": model, "workload": model}
        if backend != "pytorch":
            result["verification"] = {
                "disposition": "verified", "error": 2.1e-06 if dt == "f32" else 3.4e-03,
                "tolerance": 1e-04 if dt == "f32" else 2e-02, "metric": "rel_l2",
                "checked": 4096, "of": int(PARAMS[model]),
                "detail": "loss and sampled gradients against the float64 reference"}
        for i, j in enumerate(JITTER):
            tr = t * j
            b = {"name": n, "family_index": family, "per_family_instance_index": 0,
                 "run_name": n, "run_type": "iteration", "repetitions": len(JITTER),
                 "repetition_index": i, "threads": 1, "iterations": max(3, int(2.0 / t)),
                 "real_time": round(tr * 1e3, 6), "cpu_time": round(tr * 1e3 * 1.01, 6),
                 "time_unit": "ms", "items_per_s": bs / tr, "bs": bs,
                 "epoch_s": EPOCH[model] * tr / bs, "epoch_items": EPOCH[model],
                 "peak_mem_bytes": float(int(mem))}
            if backend != "pytorch":
                b["fwd_s"] = te * split[0]
                if pas == "train":
                    b["bwd_s"] = te * split[1]
                    b["opt_s"] = te * split[2]
            if (model, device, bs) == ("resnet18", "cpu", 32):
                del b["epoch_s"]  # an older harness wrote only epoch_items
            b["label"] = (f"{backend} {'graph' if graph == '1' else 'eager'} step, {dt}"
                          + (f", {fmt}" if fmt else ""))
            b["dlbench"] = result
            benchmarks.append(b)
        family += 1

for n, msg in (
        (name("resnet18", "cpu", "libtorch", 32, "amp_bf16", "nhwc", "train", ""),
         "unsupported: amp_bf16 needs avx512_bf16 or amx_bf16"),
        (name("resnet18", "gpu", "libtorch", 1024, "f32", "nchw", "train", "0"),
         "out of memory: needed 92.4 GiB, 79.1 GiB free")):
    benchmarks.append({"name": n, "family_index": family, "per_family_instance_index": 0,
                       "run_name": n, "run_type": "iteration", "repetitions": 1,
                       "repetition_index": 0, "threads": 1, "iterations": 0, "real_time": 0,
                       "cpu_time": 0, "time_unit": "ms", "error_occurred": True,
                       "error_message": msg,
                       "dlbench": {"network": "resnet18", "workload": "resnet18"}})
    family += 1

context = {"date": "2026-11-24T09:00:00+00:00", "host_name": "gpu-host",
           "executable": "./bench_train", "num_cpus": 16, "mhz_per_cpu": 2100,
           "cpu_scaling_enabled": False, "library_build_type": "release",
           "json_schema_version": 1, "cpu_model": "Intel(R) Xeon(R) Processor",
           "gpu_name": "NVIDIA H100 80GB HBM3", "dlbench_version": "0.2.0",
           "dlbench_git_revision": "4567cdef", "dlbench_git_branch": "main",
           "dlbench_tier": "synthetic", "dlbench_verify": "on",
           "comment": "synthetic fixture (tests/tools/report/make_train_fixture.py): no machine "
                      "measured these numbers"}
with open(os.path.join(os.path.dirname(__file__), "data", "train_synthetic.json"), "w") as fh:
    fh.write('{\n "context": ' + json.dumps(context) + ',\n "benchmarks": [\n')
    fh.write(",\n".join("  " + json.dumps(b) for b in benchmarks))
    fh.write("\n ]\n}\n")
print(len(benchmarks), "entries")
