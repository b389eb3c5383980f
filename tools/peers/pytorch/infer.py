"""infer: a gpt-fast-shaped Llama decoder step (static KV cache, SDPA) on the models of
fixtures/workloads/infer_models.csv, decode and prefill, eager, in a CUDA graph and compiled."""
import gc
import os
import re
import statistics

from . import core

DESCRIPTION = """\
One step of a Llama-style decoder on the rows of fixtures/workloads/infer_models.csv, written as
gpt-fast writes it: random weights of the model's shapes, q/k/v and gate/up as one Linear each, a
static KV cache (B, kv_heads, capacity, head_dim) per layer written with index_copy_, rotary
embeddings from a precomputed table, scaled_dot_product_attention with enable_gqa. decode: one
token for each of B sequences whose cache holds --seqs positions (capacity + 1, every key seen);
prefill: B prompts of --seqs tokens (is_causal), the logits of each prompt's last token. Each
--modes configuration is timed (eager; graph: the whole step in one CUDA graph; compile:
torch.compile, then the graph, where it compiles); the fastest is the entry, the others in its
label. Needs a CUDA device.

  pytorch-peer infer --filter '^llama3_8b$' --batch-sizes 1,8,32,128 --seqs 2048 -o pt_infer.json"""

NEEDS_CUDA = "infer times the step on the GPU: needs a CUDA device"
PHASES = ("decode", "prefill")
MODES = ("eager", "graph", "compile")


def model_rows(args):
    """The rows of infer_models.csv that --filter selects, as dicts of ints (rope_theta float)."""
    for r in core.rows("infer_"):
        if not re.search(args.filter, r["name"]):
            continue
        m = {k: int(r[k]) for k in ("layers", "dim", "heads", "kv_heads", "head_dim", "ffn",
                                    "vocab")}
        m.update(name=r["name"], network=r.get("network", ""), rope_theta=float(r["rope_theta"]),
                 norm_eps=float(r["norm_eps"]))
        yield m


def cases(args):
    """Yields (name, model, phase, b, ctx, dt)."""
    for m in model_rows(args):
        for phase in args.phases:
            for dt in args.dtypes:
                for b in args.batch_sizes:
                    for ctx in args.seqs:
                        # The family's own key order (fixtures/schema/families.h).
                        keys = [f"phase:{phase}", f"bs:{b}", f"ctx:{ctx}", f"dt:{dt}"]
                        yield core.name("infer", "gpu", m["name"], keys), m, phase, b, ctx, dt


def step_cost(m, phase, b, ctx, elem):
    """FLOPs and bytes of one step, as dlbench counts them (kernels/common/infer.cpp)."""
    q, kv = m["heads"] * m["head_dim"], m["kv_heads"] * m["head_dim"]
    layer = m["dim"] * (q + 2 * kv) + q * m["dim"] + 3 * m["dim"] * m["ffn"]
    params = m["layers"] * (layer + 2 * m["dim"]) + m["dim"] + m["vocab"] * m["dim"]
    new = ctx if phase == "prefill" else 1
    first = 0 if phase == "prefill" else ctx
    keys = new * (first + 1) + new * (new - 1) / 2
    flops = (2.0 * b * new * layer * m["layers"] + 4.0 * q * keys * b * m["layers"]
             + 2.0 * b * m["dim"] * m["vocab"])
    kv_read = 2.0 * m["layers"] * b * kv * first * elem
    kv_written = 2.0 * m["layers"] * b * kv * new * elem
    nbytes = (params * elem + b * new * m["dim"] * elem + kv_read + kv_written
              + 4.0 * b * m["vocab"])
    return flops, nbytes, kv_read + kv_written


def build_step(m, phase, b, ctx, dt):
    """The step's tensors and its function: step() runs one decode or prefill step in place."""
    import torch
    import torch.nn.functional as F
    t = core.torch_dtype(dt)
    dev = "cuda"
    d, hd, h, g, ffn = m["dim"], m["head_dim"], m["heads"], m["kv_heads"], m["ffn"]
    new = ctx if phase == "prefill" else 1
    cap = ctx + (0 if phase == "prefill" else 1)
    gen = torch.Generator(device=dev).manual_seed(0)

    def weight(out_f, in_f):
        return (torch.rand(out_f, in_f, device=dev, generator=gen, dtype=t) * 2 - 1) / in_f ** 0.5
    layers = []
    for _ in range(m["layers"]):
        layers.append(dict(
            attn_norm=torch.ones(d, device=dev, dtype=t),
            ffn_norm=torch.ones(d, device=dev, dtype=t), wqkv=weight((h + 2 * g) * hd, d),
            wo=weight(d, h * hd), w13=weight(2 * ffn, d), w2=weight(d, ffn),
            k=torch.rand(b, g, cap, hd, device=dev, generator=gen, dtype=t),
            v=torch.rand(b, g, cap, hd, device=dev, generator=gen, dtype=t)))
    embed = torch.rand(m["vocab"], d, device=dev, generator=gen, dtype=t)
    final_norm = torch.ones(d, device=dev, dtype=t)
    lm_head = weight(m["vocab"], d)
    tokens = torch.randint(0, m["vocab"], (b, new), device=dev, generator=gen)
    pos = torch.arange(cap - new, cap, device=dev)
    freqs = 1.0 / (m["rope_theta"] ** (torch.arange(0, hd, 2, device=dev).float() / hd))
    angles = torch.outer(pos.float(), freqs)
    cos, sin = angles.cos().to(t), angles.sin().to(t)
    causal = phase == "prefill"

    def rope(x):  # (B, T, heads, hd), rotate-half pairs (i, i + hd/2)
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)

    def step():
        x = embed[tokens]
        for y in layers:
            hs = F.rms_norm(x, (d,), y["attn_norm"], m["norm_eps"])
            q, k, v = (hs @ y["wqkv"].T).split([h * hd, g * hd, g * hd], dim=-1)
            q = rope(q.view(b, new, h, hd)).transpose(1, 2)
            k = rope(k.view(b, new, g, hd)).transpose(1, 2)
            y["k"].index_copy_(2, pos, k)
            y["v"].index_copy_(2, pos, v.view(b, new, g, hd).transpose(1, 2))
            a = F.scaled_dot_product_attention(q, y["k"], y["v"], is_causal=causal,
                                               enable_gqa=g != h)
            x = x + a.transpose(1, 2).reshape(b, new, h * hd) @ y["wo"].T
            gate, up = (F.rms_norm(x, (d,), y["ffn_norm"], m["norm_eps"]) @ y["w13"].T).chunk(2, -1)
            x = x + (F.silu(gate) * up) @ y["w2"].T
        last = F.rms_norm(x[:, -1], (d,), final_norm, m["norm_eps"])
        return last @ lm_head.T
    return step


def time_mode(mode, m, phase, b, ctx, dt, reps):
    """Seconds per step (one per repetition) of one configuration."""
    import torch
    step = build_step(m, phase, b, ctx, dt)
    fn = step
    if mode == "compile":
        fn = torch.compile(step, mode="max-autotune-no-cudagraphs", fullgraph=True)
    if mode in ("graph", "compile"):
        run = fn
        fn = core.capture(run, run)
    return core.time_fn(fn, "gpu", reps=reps)


def infer_benchmarks(args):
    import torch
    benchmarks = []
    for name, m, phase, b, ctx, dt in cases(args):
        elem = 4 if dt == "f32" else 2
        flops, nbytes, kv = step_cost(m, phase, b, ctx, elem)
        tried = {}
        for mode in args.modes:
            try:
                with torch.no_grad():
                    times = time_mode(mode, m, phase, b, ctx, dt, args.repetitions)
                tried[mode] = (statistics.median(times), times, "")
            except Exception as e:  # a configuration that does not build is a note, not a stop
                tried[mode] = (None, None, core.first_line(e)[:160])
            finally:
                gc.collect()
                torch.cuda.empty_cache()
        ran = {k: v for k, v in tried.items() if v[0] is not None}
        if not ran:
            why = "; ".join(f"{k}: {v[2]}" for k, v in tried.items())
            benchmarks.append(core.error(name, "failed: " + why))
            print(f"{name:90s} failed: {why}", flush=True)
            continue
        best = min(ran, key=lambda k: ran[k][0])
        t_best, times, _ = ran[best]
        others = ", ".join(f"{k} {v[0] * 1e3:.3f} ms" if v[0] is not None
                           else f"{k} failed ({v[2]})" for k, v in tried.items())
        label = (f"gpt-fast-shaped step, {best} the fastest of: {others}; static KV cache, "
                 f"SDPA enable_gqa, {dt} weights")
        tokens = b * (ctx if phase == "prefill" else 1)
        for i, t in enumerate(times):
            entry = core.iteration(name, i, len(times), t)
            entry.update({"flop_per_s": flops / t, "bytes_per_s": nbytes / t,
                          "items_per_s": tokens / t, "tokens_per_s": tokens / t, "bs": b,
                          "step_bytes": nbytes, "kv_bytes": kv,
                          ("ttft_s" if phase == "prefill" else "tpot_s"): t, "label": label,
                          "dlbench": {"network": m["network"], "workload": m["name"],
                                      "mode": best}})
            benchmarks.append(entry)
        print(f"{name:90s} {t_best * 1e3:10.3f} ms {tokens / t_best:12.1f} tokens/s [{best}] "
              f"{others}", flush=True)
    return benchmarks


def prepare(args):
    args.batch_sizes = core.ints(args.batch_sizes)
    args.seqs = core.ints(args.seqs) if args.seqs else [2048]
    args.dtypes = (args.dtypes or "bf16").split(",")
    args.phases = (args.phases or ",".join(PHASES)).split(",")
    args.modes = (args.modes or "graph,compile").split(",")
    bad = ([d for d in args.dtypes if d not in ("bf16", "f16", "f32")]
           + [p for p in args.phases if p not in PHASES]
           + [x for x in args.modes if x not in MODES])
    if bad:
        core.die(f"infer: unknown dtype, phase or mode {','.join(bad)} (dtypes: bf16,f16,f32; "
                 f"phases: {','.join(PHASES)}; modes: {','.join(MODES)})")
    if args.device != "gpu":
        core.die(NEEDS_CUDA)


def names(args):
    return [c[0] for c in cases(args)]


def run(args):
    import torch
    if not torch.cuda.is_available():
        core.die(NEEDS_CUDA)
    benchmarks = infer_benchmarks(args)
    ctx = core.context(executable=core.EXECUTABLE, num_cpus=os.cpu_count(),
                       gpu_name=torch.cuda.get_device_name(0),
                       cudnn_version=core.cudnn_version_text(torch.backends.cudnn.version()))
    core.write(args.out, ctx, benchmarks)
