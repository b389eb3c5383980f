"""conv: torch.nn.functional.conv2d and its two backward passes on the rows of
fixtures/workloads/conv_*.csv."""
import re

from . import core, ops

DESCRIPTION = """\
The layers of fixtures/workloads/conv_*.csv in PyTorch: conv2d (pass:fwd) and
aten.convolution_backward for the input (bwd_data) or the weight (bwd_filter) alone, cudnn.benchmark
on. f16/bf16 run channels-last (fmt:nhwc), f32/tf32 NCHW; tf32 is skipped on the CPU.

  pytorch-peer conv --device gpu --batch-sizes 64 --filter '^resnet18\\.' -o pt_conv.json"""


def cases(args):
    """Yields (name, workload, dt, make) of the cases the flags select, in file order."""
    for r in core.rows("conv_"):
        if not re.search(args.filter, r["name"]):
            continue
        for bs in args.batch_sizes:
            for dt in args.dtypes:
                if args.device == "cpu" and dt in ops.GPU_ONLY_DTYPES:
                    continue
                fmt = "nhwc" if dt in ("f16", "bf16") else "nchw"
                for p in ("fwd", "bwd_data", "bwd_filter"):
                    keys = [f"bs:{bs}", f"dt:{dt}", f"fmt:{fmt}", f"pass:{p}"]
                    name = core.name("conv", args.device, r["name"], keys)

                    def make(r=r, bs=bs, dt=dt, fmt=fmt, p=p):
                        import torch
                        dev = "cuda" if args.device == "gpu" else "cpu"
                        c, h, w, k = int(r["c"]), int(r["h"]), int(r["w"]), int(r["k"])
                        kr, ks, st, pd = int(r["r"]), int(r["s"]), int(r["stride"]), int(r["pad"])
                        dl, g = int(r["dilation"]), int(r["groups"])
                        mf = torch.channels_last if fmt == "nhwc" else torch.contiguous_format
                        t = core.torch_dtype(dt)
                        x = (torch.rand(bs, c, h, w, device=dev, dtype=t) * 2 - 1).to(memory_format=mf)
                        wt = (torch.rand(k, c // g, kr, ks, device=dev, dtype=t) * 2 - 1).to(memory_format=mf)
                        y = torch.nn.functional.conv2d(x, wt, None, st, pd, dl, g)
                        dy = (torch.rand_like(y) * 2 - 1).contiguous(memory_format=mf)
                        flops, conventional = core.conv_flops(bs, c, k, h, w, kr, ks, st, pd, dl, g)
                        if p == "fwd":
                            fn = lambda: torch.nn.functional.conv2d(x, wt, None, st, pd, dl, g)
                        else:
                            mask = [p == "bwd_data", p == "bwd_filter", False]
                            fn = lambda: torch.ops.aten.convolution_backward(
                                dy, x, wt, None, [st, st], [pd, pd], [dl, dl], False, [0, 0], g, mask)
                        return fn, flops, bs, conventional
                    yield name, r["name"], dt, make


prepare, names, run = ops.operator_family(cases)
