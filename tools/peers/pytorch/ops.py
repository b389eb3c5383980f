"""What gemm, conv and train share: their flags' lists, the run's set-up, the op-timing loop, the
file's context."""
import os
import statistics
import sys

from . import core

# Dtypes an op family skips on the CPU: TF32 is a GPU math mode, the 8-bit GEMMs are GPU kernels.
GPU_ONLY_DTYPES = ("tf32", "fp8", "fp8_e5m2", "int8")


def prepare(args, train):
    """The list flags of gemm, conv and train, split; defaults filled in."""
    args.dtypes = (args.dtypes or ("f32,tf32,amp_bf16" if train else "f32,tf32,bf16")).split(",")
    args.batch_sizes = core.ints(args.batch_sizes)
    args.models = args.models.split(",")
    args.fmt = args.fmt.split(",")
    args.graph = args.graph.split(",")
    args.passes = (args.passes or "train").split(",")


def setup(args):
    """Torch's state for a run: a CUDA device where asked for, threads, cuDNN's own search."""
    import torch
    if args.device == "gpu" and not torch.cuda.is_available():
        core.die("no CUDA device")
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.backends.cudnn.benchmark = True


def time_cases(args, cases):
    """Times each (name, workload, dt, make) case; make() returns (fn, flops a call, items a call)
    and, for a convolution, the conventional count's FLOP a call (dlbench's conventional_flop_per_s)."""
    import torch
    benchmarks = []
    for name, workload, dt, make in cases:
        core.set_tf32(dt == "tf32")
        try:
            fn, flops, items, *conventional = make()
            times = core.time_fn(fn, args.device, reps=args.repetitions)
        except RuntimeError as e:
            benchmarks.append(core.error(name, f"failed: {str(e).splitlines()[0]}"))
            continue
        for i, t in enumerate(times):
            b = core.iteration(name, i, len(times), t)
            b["flop_per_s"] = flops / t
            if conventional:
                b["conventional_flop_per_s"] = conventional[0] / t
            if items:
                b["items_per_s"] = items / t
                b["bs"] = items
            benchmarks.append(b)
        print(f"{name:90s} {statistics.median(times) * 1e6:10.1f} us "
              f"{flops / statistics.median(times) / 1e12:8.1f} TFLOP/s", flush=True)
        torch.cuda.empty_cache() if args.device == "gpu" else None
    return benchmarks


def write(args, benchmarks, train):
    import torch
    ctx = core.context(executable=core.EXECUTABLE, num_cpus=os.cpu_count(),
                       torch_threads=torch.get_num_threads())
    if train and "torchvision" in sys.modules:
        ctx["torchvision_version"] = sys.modules["torchvision"].__version__
    if args.device == "gpu":
        ctx["gpu_name"] = torch.cuda.get_device_name(0)
        ctx["cudnn_version"] = core.cudnn_version_text(torch.backends.cudnn.version())
    core.write(args.out, ctx, benchmarks)


def operator_family(cases):
    """prepare, names and run of a family of single operators (gemm, conv) timed from `cases`."""
    def prepare_family(args):
        prepare(args, train=False)

    def names(args):
        return [c[0] for c in cases(args)]

    def run(args):
        setup(args)
        write(args, time_cases(args, cases(args)), train=False)

    return prepare_family, names, run

