"""train's transformers: GPT-2 small and BERT-base training steps (fixtures/workloads/
train_transformers.csv), with tokens/s and nanoGPT's MFU."""
import re
import statistics

from . import core

# The transformers of fixtures/workloads/train_transformers.csv: (causal, layers, d, heads, ffn,
# vocab, positions, LayerNorm eps), and the tokens of an epoch (OpenWebText's 9,035,582,489 as
# nanoGPT's prepare.py counts them; BERT's 3.3B-word BooksCorpus + Wikipedia as 3.3e9 tokens).
TRANSFORMERS = {"gpt2s": (True, 12, 768, 12, 3072, 50304, 1024, 1e-5),
                "bert_base": (False, 12, 768, 12, 3072, 30522, 512, 1e-12)}
EPOCH_TOKENS = {"gpt2s": 9035582489, "bert_base": 3300000000}


def cases(args):
    """Yields (name, model, seq, bs, dt, graph):
    train/<device>/pytorch/<model>/bs:B/dt:D/pass:train[/graph:G]/seq:S (no tf32 on the CPU)."""
    gpu = args.device == "gpu"
    for model in args.models:
        if model not in TRANSFORMERS or not re.search(args.filter, model):
            continue
        seq = args.seq or TRANSFORMERS[model][6]
        for bs in args.batch_sizes:
            for dt in args.dtypes:
                if not gpu and dt == "tf32":
                    continue
                for graph in (args.graph if gpu else [""]):
                    keys = [f"bs:{bs}", f"dt:{dt}", "pass:train"]
                    keys += ([f"graph:{graph}"] if graph else []) + [f"seq:{seq}"]
                    yield core.name("train", args.device, model, keys), model, seq, bs, dt, graph


def gpu_peak(args, dt):
    """The dense peak dlbench divides by (fixtures/machine/peak.cpp): SMs x max SM clock x flop/clk/SM
    of the dtype (sm_90: f32 256, tf32 2048, bf16 4096; sm_80: 128, 1024, 2048); 0 if unknown.
    --peak-tflops overrides it."""
    if args.peak_tflops:
        return args.peak_tflops * 1e12
    import torch
    props = torch.cuda.get_device_properties(0)
    table = {(9, 0): (256, 2048, 4096), (8, 0): (128, 1024, 2048)}.get((props.major, props.minor))
    if not table:
        return 0
    per = table[("f32", "tf32", "amp_bf16").index(dt)]
    try:
        import subprocess
        out = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=clocks.max.sm",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True)
        mhz = float(out.stdout.strip().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return per * props.multi_processor_count * mhz * 1e6


def step_fn(model_name, bs, seq, dt, graph, gpu):
    """nanoGPT's training step: forward, cross-entropy of every position's next token, backward,
    AdamW (lr 6e-4, betas (0.9, 0.95), weight decay 0.1 on 2-d parameters, fused on CUDA and
    capturable when graphed, foreach on the CPU). Graphed: three warm-up steps on a side stream,
    grads set to None, the step captured, one replay a call. Returns (step, FLOPs a step)."""
    import torch
    import torch.nn.functional as F
    from .gpt import Transformer, flops_per_token
    dev = torch.device("cuda" if gpu else "cpu")
    torch.manual_seed(0)
    model = Transformer(model_name).to(dev)
    vocab = TRANSFORMERS[model_name][5]
    tokens = torch.randint(0, vocab, (bs, seq + 1), device=dev)
    x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    extra = {"fused": True, "capturable": graph} if gpu else {"foreach": True}
    opt = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), eps=1e-8, **extra)
    amp = dt == "amp_bf16"

    def train_step():
        with torch.autocast("cuda" if gpu else "cpu", dtype=torch.bfloat16, enabled=amp,
                            cache_enabled=not graph):
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        loss.backward()
        opt.step()
        return loss

    def eager_step():
        opt.zero_grad(set_to_none=True)
        return train_step()
    flops = flops_per_token(model, seq) * bs * seq
    if not graph:
        return eager_step, flops
    return core.capture(eager_step, train_step, lambda: opt.zero_grad(set_to_none=True)), flops


def benchmarks(args):
    """The transformer steps the flags select, timed."""
    gpu = args.device == "gpu"
    out = []
    for name, model, seq, bs, dt, graph in cases(args):
        core.set_tf32(dt == "tf32")
        result = {"network": model, "workload": model}
        try:
            times, peak, flops = core.time_step(
                lambda: step_fn(model, bs, seq, dt, graph == "1", gpu), args.device,
                args.repetitions, result if args.kernels == "on" else None)
        except RuntimeError as e:
            out.append(core.step_failure(name, e, result))
            continue
        peak_flops = gpu_peak(args, dt) if gpu else 0
        n = -(-EPOCH_TOKENS[model] // seq)  # sequences of an epoch
        for i, t in enumerate(times):
            b = core.iteration(name, i, len(times), t)
            b.update({"items_per_s": bs / t, "bs": bs, "tokens_per_s": bs * seq / t,
                      "flop_per_s": flops / t, "epoch_s": n * t / bs, "epoch_items": n,
                      "peak_mem_bytes": peak, "dlbench": result})
            if peak_flops:
                b["mfu"] = 100.0 * flops / t / peak_flops
            out.append(b)
        t = statistics.median(times)
        mfu = f"{100.0 * flops / t / peak_flops:6.1f}% MFU" if peak_flops else ""
        print(f"{name:90s} {t * 1e3:9.3f} ms {bs * seq / t:12.0f} tok/s {mfu} "
              f"{peak / 2**30:7.2f} GiB", flush=True)
    return out
