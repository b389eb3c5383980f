"""infer: a gpt-fast-shaped Llama decoder step (static KV cache, SDPA) on the models of
fixtures/workloads/infer_models.csv, decode and prefill, eager, in a CUDA graph and compiled."""
import gc
import itertools
import re
import time

from . import core

DESCRIPTION = """\
One step of a Llama-style decoder on the rows of fixtures/workloads/infer_models.csv, written as
gpt-fast writes it: random weights of the model's shapes, q/k/v and gate/up as one Linear each, a
static KV cache (B, kv_heads, capacity, head_dim) per layer written with index_copy_, rotary
embeddings from a precomputed table, scaled_dot_product_attention with enable_gqa. decode: one
token for each of B sequences whose cache holds --seqs positions (capacity + 1, every key seen);
prefill: B prompts of --seqs tokens (is_causal), the logits of each prompt's last token. The
weights are made once per model and dtype, on the device, and every case of the run uses them;
each case makes its own KV cache and inputs. Each --modes configuration is timed (eager; graph:
the whole step in one CUDA graph; compile: gpt-fast's torch.compile of the case's static shapes
(fullgraph, coordinate-descent tuning), then the graph, some 20 s a shape; autotune: the same in
max-autotune-no-cudagraphs mode, Triton GEMMs autotuned per shape, minutes a shape); a mode that
does not compile or run is left out with its reason. The fastest is the entry, the others in its
label. Needs a CUDA device.

  pytorch-peer infer --filter '^llama3_8b$' --batch-sizes 1,8,32,128 --seqs 2048 -o pt_infer.json"""

NEEDS_CUDA = "infer times the step on the GPU: needs a CUDA device"
PHASES = ("decode", "prefill")
MODES = ("eager", "graph", "compile", "autotune")
# torch.compile's arguments in each compiled mode (both then captured whole, as graph is).
# compile is gpt-fast's own configuration: generate.py compiles the decode step with
# fullgraph=True in mode "reduce-overhead" and turns inductor's coordinate_descent_tuning on for
# the process. What reduce-overhead adds to the default mode is CUDA graphs through cudagraph
# trees, which keep a module's parameters and buffers in place but may copy other tensors in at
# each replay, or skip the graph for one written in place (the KV cache here is a closure's, not
# a buffer). The default mode with the whole step captured by hand is gpt-fast's step in one
# graph without either. autotune is max-autotune without its graphs: Triton GEMM templates
# benchmarked against cuBLAS for every shape, minutes a shape on an H200.
COMPILE_ARGS = {"compile": dict(options={"coordinate_descent_tuning": True}),
                "autotune": dict(mode="max-autotune-no-cudagraphs")}


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
    """Yields (name, model, phase, b, ctx, dt), each model's and dtype's cases together (they share
    the weights: by_weights)."""
    for m in model_rows(args):
        for dt in args.dtypes:
            for phase in args.phases:
                for b in args.batch_sizes:
                    for ctx in args.seqs:
                        # The family's own key order (fixtures/schema/families.h).
                        keys = [f"phase:{phase}", f"bs:{b}", f"ctx:{ctx}", f"dt:{dt}"]
                        yield core.name("infer", "gpu", m["name"], keys), m, phase, b, ctx, dt


def by_weights(args):
    """The cases in runs that share one set of weights: ((model, dt), [case, ...]) in cases'
    order."""
    for (_, dt), group in itertools.groupby(cases(args), key=lambda c: (c[1]["name"], c[5])):
        group = list(group)
        yield (group[0][1], dt), group


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


def make_weights(m, dt):
    """The model's weights, made once per model and dtype and shared by every case of the run:
    seeded uniform values drawn on the device, in place (a Llama-3-8B's 16 GB never pass through
    the host nor a temporary)."""
    import torch
    t = core.torch_dtype(dt)
    gen = torch.Generator(device="cuda").manual_seed(0)
    d, hd, h, g, ffn = m["dim"], m["head_dim"], m["heads"], m["kv_heads"], m["ffn"]

    def uniform(*shape, bound=1.0):
        return torch.empty(*shape, device="cuda", dtype=t).uniform_(-bound, bound, generator=gen)

    def linear(out_f, in_f):
        return uniform(out_f, in_f, bound=in_f ** -0.5)

    def ones():
        return torch.ones(d, device="cuda", dtype=t)
    layers = [dict(attn_norm=ones(), ffn_norm=ones(), wqkv=linear((h + 2 * g) * hd, d),
                   wo=linear(d, h * hd), w13=linear(2 * ffn, d), w2=linear(d, ffn))
              for _ in range(m["layers"])]
    return dict(layers=layers, embed=uniform(m["vocab"], d), final_norm=ones(),
                lm_head=linear(m["vocab"], d))


def build_step(w, m, phase, b, ctx, dt):
    """The step of one case on the model's weights w: its KV cache and inputs made here, on the
    device; step() runs one decode or prefill step in place."""
    import torch
    import torch.nn.functional as F
    t = core.torch_dtype(dt)
    dev = "cuda"
    d, hd, h, g = m["dim"], m["head_dim"], m["heads"], m["kv_heads"]
    new = ctx if phase == "prefill" else 1
    cap = ctx + (0 if phase == "prefill" else 1)
    gen = torch.Generator(device=dev).manual_seed(1)

    def cache():
        return torch.empty(b, g, cap, hd, device=dev, dtype=t).uniform_(generator=gen)
    kv = [(cache(), cache()) for _ in range(m["layers"])]
    tokens = torch.randint(0, m["vocab"], (b, new), device=dev, generator=gen)
    pos = torch.arange(cap - new, cap, device=dev)
    freqs = 1.0 / (m["rope_theta"] ** (torch.arange(0, hd, 2, device=dev).float() / hd))
    angles = torch.outer(pos.float(), freqs)
    cos, sin = angles.cos().to(t), angles.sin().to(t)
    causal = phase == "prefill"
    embed, final_norm, lm_head = w["embed"], w["final_norm"], w["lm_head"]

    def rope(x):  # (B, T, heads, hd), rotate-half pairs (i, i + hd/2)
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)

    def step():
        x = embed[tokens]
        for y, (k_cache, v_cache) in zip(w["layers"], kv):
            hs = F.rms_norm(x, (d,), y["attn_norm"], m["norm_eps"])
            q, k, v = (hs @ y["wqkv"].T).split([h * hd, g * hd, g * hd], dim=-1)
            q = rope(q.view(b, new, h, hd)).transpose(1, 2)
            k = rope(k.view(b, new, g, hd)).transpose(1, 2)
            k_cache.index_copy_(2, pos, k)
            v_cache.index_copy_(2, pos, v.view(b, new, g, hd).transpose(1, 2))
            a = F.scaled_dot_product_attention(q, k_cache, v_cache, is_causal=causal,
                                               enable_gqa=g != h)
            x = x + a.transpose(1, 2).reshape(b, new, h * hd) @ y["wo"].T
            gate, up = (F.rms_norm(x, (d,), y["ffn_norm"], m["norm_eps"]) @ y["w13"].T).chunk(2, -1)
            x = x + (F.silu(gate) * up) @ y["w2"].T
        last = F.rms_norm(x[:, -1], (d,), final_norm, m["norm_eps"])
        return last @ lm_head.T
    return step


def time_mode(mode, w, m, phase, b, ctx, dt, reps):
    """Seconds per step (one per repetition) of one configuration on the weights w, and a note:
    what compiling and capturing the step took."""
    import torch
    step = build_step(w, m, phase, b, ctx, dt)
    fn = step
    t0 = time.perf_counter()
    if mode in COMPILE_ARGS:
        # Each case's static shapes compiled afresh, as a user compiling that one shape would:
        # Dynamo caches by the step's code, which every case and mode shares, so without the
        # reset a case would add a recompile to the earlier ones' (after eight, the default
        # limit, it runs eager).
        torch._dynamo.reset()
        fn = torch.compile(step, fullgraph=True, dynamic=False, **COMPILE_ARGS[mode])
    note = ""
    if mode != "eager":
        run = fn
        fn = core.capture(run, run)  # the warm-up runs compile the step
        note = f"; {mode} built in {time.perf_counter() - t0:.1f} s"
    return core.time_fn(fn, "gpu", reps=reps), note


def case_records(name, m, phase, b, ctx, dt, best):
    """The records of a case's fastest configuration, one per repetition; printed."""
    elem = 4 if dt == "f32" else 2
    flops, nbytes, kv = step_cost(m, phase, b, ctx, elem)
    label = (f"gpt-fast-shaped step, {best.config} the fastest of: {best.others}; static KV "
             f"cache, SDPA enable_gqa, {dt} weights made once on the device for every case"
             f"{best.note}")
    tokens = b * (ctx if phase == "prefill" else 1)
    print(f"{name:90s} {best.median * 1e3:10.3f} ms {tokens / best.median:12.1f} tokens/s "
          f"[{best.config}] {best.others}", flush=True)
    return core.repetitions(name, best.times, lambda t: {
        "flop_per_s": flops / t, "bytes_per_s": nbytes / t, "items_per_s": tokens / t,
        "tokens_per_s": tokens / t, "bs": b, "step_bytes": nbytes, "kv_bytes": kv,
        ("ttft_s" if phase == "prefill" else "tpot_s"): t, "label": label,
        "dlbench": {"network": m["network"], "workload": m["name"], "mode": best.config}})


def infer_benchmarks(args):
    import torch
    benchmarks = []
    for (m, dt), group in by_weights(args):
        try:
            w = make_weights(m, dt)
        except Exception as e:  # every case of the weights fails, the run goes on
            why = f"failed: weights: {core.first_line(e)[:160]}"
            for name, *_ in group:
                print(f"{name:90s} {why}", flush=True)
                benchmarks.append(core.error(name, why))
            gc.collect()
            torch.cuda.empty_cache()
            continue
        for name, _, phase, b, ctx, _ in group:
            with torch.no_grad():
                tried = core.time_configs(
                    args.modes, lambda mode: time_mode(mode, w, m, phase, b, ctx, dt,
                                                       args.repetitions))
            best = core.fastest(tried)
            benchmarks += ([core.none_ran(name, tried, 90)] if best is None
                           else case_records(name, m, phase, b, ctx, dt, best))
        del w
        gc.collect()
        torch.cuda.empty_cache()
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
    core.write_gpu_run(args.out, lambda: infer_benchmarks(args), NEEDS_CUDA)
