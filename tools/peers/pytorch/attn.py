"""attn: torch.nn.functional.scaled_dot_product_attention with each of PyTorch's fused GPU backends
on the shapes of fixtures/workloads/attn_models.csv."""
import re

from . import core

DESCRIPTION = """\
scaled_dot_product_attention on the rows of fixtures/workloads/attn_models.csv: q/k/v (B, H, S, D)
contiguous with requires_grad, is_causal per row, timed with each fused backend (cuDNN, Flash,
memory-efficient); the fastest is the entry, the others' medians in its label. pass:fwd the
forward alone; pass:bwd out.backward(dO) alone. Needs a CUDA device. The FLOPs are FlashAttention's
convention (docs/families/attn.md).

  pytorch-peer attn --filter '^gpt2s' --batch-sizes 16 --seqs 1024 -o pt_attn.json"""

ATTN_BACKENDS = ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION")
NEEDS_CUDA = "attn times PyTorch's fused GPU backends: needs a CUDA device"


def attn_cases(args):
    """Yields (name, workload, network, b, h, g, s, d, causal, dtype, pass) from attn_models.csv.

    A row names its workload and gives heads, kv_heads (default: heads), head_dim and causal
    (default 1); batch sizes and sequence lengths come from --batch-sizes/--seqs (the family's tier
    chooses them), or from bs/seq columns where a row has them (';'-separated lists)."""
    def ints(text):
        return [int(x) for x in re.split(r"[;|, ]+", str(text).strip()) if x]

    for r in core.rows("attn_"):
        model = r.get("name") or r.get("model") or r.get("workload")
        workload = model if "." in model else model + ".attn"
        h = int(r["heads"])
        g = int(r.get("kv_heads") or h)
        d = int(r["head_dim"])
        causal = int(r.get("causal") or 1)
        row_bs = r.get("bs") or r.get("batch") or ""
        row_seq = r.get("seq") or r.get("seqs") or ""
        batches = (args.batch_sizes if args.batch_sizes_given or row_bs in ("", "bs")
                   else ints(row_bs))
        seqs = args.seqs if (args.seqs or not row_seq) else ints(row_seq)
        if not seqs:
            core.die(f"attn: {workload} has no sequence length: give --seqs")
        for b in batches:
            for s in seqs:
                for dt in args.dtypes:
                    for p in args.passes:
                        keys = [f"bs:{b}", f"dt:{dt}", f"pass:{p}", f"seq:{s}", f"heads:{h}",
                                f"kv_heads:{g}", f"head_dim:{d}", f"causal:{causal}"]
                        name = core.name("attn", "gpu", workload, keys)
                        yield name, workload, r.get("network", ""), b, h, g, s, d, causal, dt, p


def cases(args):
    """attn_cases of the workloads --filter selects."""
    for case in attn_cases(args):
        if re.search(args.filter, case[1]):
            yield case


def attn_time(backend, b, h, g, s, d, causal, dt, p, reps):
    """Seconds per call (a list, one per repetition) of one pass with one backend, and a note."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    t = core.torch_dtype(dt)
    gen = torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape):
        return (torch.rand(*shape, device="cuda", dtype=t, generator=gen) * 2 - 1)
    q = rand(b, h, s, d).requires_grad_()
    k = rand(b, g, s, d).requires_grad_()
    v = rand(b, g, s, d).requires_grad_()
    do = rand(b, h, s, d)
    note = ""
    kw = {}
    if g != h:
        kw["enable_gqa"] = True
    with sdpa_kernel([getattr(SDPBackend, backend)]):
        try:
            F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), **kw)
        except RuntimeError:
            if not kw:
                raise
            # This backend takes no grouped K/V: each kv head repeated for its query heads.
            k = k.detach().repeat_interleave(h // g, dim=1).requires_grad_()
            v = v.detach().repeat_interleave(h // g, dim=1).requires_grad_()
            kw = {}
            note = " (K/V repeat_interleave'd: no enable_gqa)"

        def fwd():
            return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), **kw)
        if p == "fwd":
            fn = fwd
        else:
            out = fwd()

            def fn():
                q.grad = k.grad = v.grad = None
                out.backward(do, retain_graph=True)
        times = core.time_fn(fn, "gpu", reps=reps)
    return times, note


def attn_benchmarks(args):
    import torch
    benchmarks = []
    for name, workload, network, b, h, g, s, d, causal, dt, p in cases(args):
        fwd_flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        flops = fwd_flops if p == "fwd" else 2.5 * fwd_flops
        tried = core.time_configs(
            ATTN_BACKENDS,
            lambda backend: attn_time(backend, b, h, g, s, d, causal, dt, p, args.repetitions),
            (RuntimeError, torch.OutOfMemoryError))
        best = core.fastest(tried, short=lambda k: k.split("_")[0].lower(), failed="refused")
        if best is None:
            benchmarks.append(core.none_ran(name, tried, 110))
            continue
        label = (f"torch.nn.functional.scaled_dot_product_attention, SDPBackend.{best.config}"
                 f"{best.note}, the fastest of: {best.others}; q/k/v (B,H,S,D) contiguous, "
                 "requires_grad")
        benchmarks += core.repetitions(name, best.times, lambda t: {
            "flop_per_s": flops / t, "items_per_s": b / t, "bs": b, "label": label,
            "dlbench": {"network": network, "workload": workload, "backend": best.config}})
        print(f"{name:110s} {best.median * 1e6:10.1f} us {flops / best.median / 1e12:8.1f} TFLOP/s "
              f"[{best.config}] {best.others}", flush=True)
    return benchmarks


def prepare(args):
    args.batch_sizes = core.ints(args.batch_sizes)
    args.seqs = core.ints(args.seqs) if args.seqs else []
    args.dtypes = (args.dtypes or "bf16").split(",")
    args.passes = (args.passes or "fwd,bwd").split(",")
    bad = [d for d in args.dtypes if d not in ("bf16", "f16")] + \
          [p for p in args.passes if p not in ("fwd", "bwd")]
    if bad:
        core.die(f"attn: unknown dtype or pass {','.join(bad)} (dtypes: bf16,f16; passes: fwd,bwd)")
    if args.device != "gpu":
        core.die(NEEDS_CUDA)


def names(args):
    return [c[0] for c in cases(args)]


def run(args):
    core.write_gpu_run(args.out, lambda: attn_benchmarks(args), NEEDS_CUDA)
