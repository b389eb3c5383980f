"""gemm: torch.matmul on the rows of fixtures/workloads/gemm_*.csv; fp8 through torch._scaled_mm,
int8 through torch._int_mm."""
import re

from . import core, ops

DESCRIPTION = """\
torch.matmul on dlbench's GEMMs (fixtures/workloads/gemm_*.csv). fp8 (GPU): torch._scaled_mm on
e4m3 operands, per-tensor scales, bf16 out, use_fast_accum=True (--fp8-accum full: False);
fp8_e5m2: A in e5m2. int8 (GPU): torch._int_mm. The 8-bit GEMMs read A row-major, B column-major.
tf32 and the 8-bit dtypes are skipped on the CPU.

  pytorch-peer gemm --device gpu --dtypes bf16,tf32,f32 --filter 'square.8192$' -o pt.json"""

# The 8-bit dtypes: the operands' torch types (A, B).
EIGHT_BIT = {"fp8": ("float8_e4m3fn", "float8_e4m3fn"), "fp8_e5m2": ("float8_e5m2", "float8_e4m3fn"),
             "int8": ("int8", "int8")}


def eight_bit_gemm(m, n, k, dt, dev, args):
    """C = A B with A m x k row-major and B k x n column-major (stored n x k), as fp8/int8 need."""
    import torch
    ta, tb = (getattr(torch, t) for t in EIGHT_BIT[dt])
    if dt == "int8":
        a = torch.randint(-128, 128, (m, k), device=dev, dtype=torch.int8)
        b = torch.randint(-128, 128, (n, k), device=dev, dtype=torch.int8).t()
        return lambda: torch._int_mm(a, b)
    # Uniform [-1, 1) in units of the scale: dlbench's values and scales (2^-8 for e4m3, 2^-15 for
    # e5m2).
    sa = torch.tensor(2.0 ** -15 if ta == torch.float8_e5m2 else 2.0 ** -8, device=dev)
    sb = torch.tensor(2.0 ** -8, device=dev)
    a = ((torch.rand(m, k, device=dev) * 2 - 1) / sa).to(ta)
    b = ((torch.rand(n, k, device=dev) * 2 - 1) / sb).to(tb).t()
    fast = args.fp8_accum == "fast"
    return lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                    use_fast_accum=fast)


def cases(args):
    """Yields (name, workload, dt, make) of the cases the flags select, in file order."""
    for r in core.rows("gemm_"):
        if not re.search(args.filter, r["name"]):
            continue
        ms = args.batch_sizes if r["m"] == "bs" else [int(r["m"])]
        for m in ms:
            n, k = int(r["n"]), int(r["k"])
            ta, tb = r["ta"] == "1", r["tb"] == "1"
            for dt in args.dtypes:
                if args.device == "cpu" and dt in ops.GPU_ONLY_DTYPES:
                    continue
                keys = ([f"bs:{m}"] if r["m"] == "bs" else []) + [f"dt:{dt}"]
                name = core.name("gemm", args.device, r["name"], keys)

                def make(r=r, m=m, n=n, k=k, ta=ta, tb=tb, dt=dt):
                    import torch
                    dev = "cuda" if args.device == "gpu" else "cpu"
                    if dt in EIGHT_BIT:
                        return eight_bit_gemm(m, n, k, dt, dev, args), 2.0 * m * n * k, \
                            m if r["m"] == "bs" else 0
                    t = core.torch_dtype(dt)
                    a = torch.rand((k, m) if ta else (m, k), device=dev, dtype=t) * 2 - 1
                    b = torch.rand((n, k) if tb else (k, n), device=dev, dtype=t) * 2 - 1
                    a = a.t() if ta else a
                    b = b.t() if tb else b
                    return (lambda: torch.matmul(a, b)), 2.0 * m * n * k, m if r["m"] == "bs" else 0
                yield name, r["name"], dt, make


prepare, names, run = ops.operator_family(cases)
