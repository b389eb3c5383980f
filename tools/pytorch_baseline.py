#!/usr/bin/env python3
"""Times dlbench's workloads with PyTorch (eager) and writes Google Benchmark JSON.

The names are dlbench's with backend `pytorch`, so `dlbench-report summary` and `compare` read
the file next to dlbench's own, and a result lines up with its dlbench twin by workload and keys:

  tools/pytorch_baseline.py gemm --device gpu --dtypes bf16,tf32,f32 --filter 'square.8192$' -o pt.json
  tools/pytorch_baseline.py conv --device gpu --batch-sizes 64 --filter '^resnet18\\.' -o pt_conv.json
  tools/pytorch_baseline.py train --device gpu --models resnet18_cifar --batch-sizes 16,256 \
      --dtypes amp_bf16,f32 --fmt nhwc,nchw --graph 0,1 --pass train -o pt_train.json

gemm fp8 and int8 (GPU), dlbench's GEMMs of those dtypes: fp8 is torch._scaled_mm on e4m3
operands with per-tensor float32 scales (dlbench's: 2^-8 each) and a bf16 output, in its strongest
configuration, use_fast_accum=True (PyTorch's default is False; --fp8-accum full times that
instead, under the same name); fp8_e5m2 the same with A in e5m2 and B in e4m3. int8 is
torch._int_mm (int8 in, int32 out). Both read the layout their kernels need, A row-major m x k and
B column-major (stored n x k), as dlbench's 8-bit GEMMs do; the square rows' B is laid out so
once, off the clock.

GPU: CUDA events around back-to-back launches after a warm-up, cudnn.benchmark on (PyTorch then
times cuDNN's candidate engines itself, like dlbench's --dlb_conv_algo=search). CPU: the steady clock.
f32 disables TF32 in cuBLAS and cuDNN; tf32 enables it; f16/bf16 use channels-last for conv.

train: one training step of a model of fixtures/workloads/train_models.csv (forward, mean
cross-entropy, backward, SGD lr 0.01 momentum 0.9, fused on CUDA, foreach on the CPU; eager steps
set the gradients to None first), or its forward alone under inference_mode (--pass infer), on
seeded inputs already on the device. amp_bf16: autocast to bfloat16, no GradScaler; nhwc: model
and input channels-last. --graph 1 (GPU): the whole step captured in one CUDA graph after three
warm-up steps on a side stream, from static inputs, then one replay per step (PyTorch's "whole
network capture"). Names: train/<device>/pytorch/<model>/bs:B/dt:D/fmt:F/pass:P/graph:G, no fmt
for the MLP, no graph on the CPU. Counters: items_per_s, bs, epoch_s (epoch_items at the measured
rate), epoch_items, peak_mem_bytes (GPU: torch.cuda.max_memory_allocated of the case; CPU: the
process's peak RSS). Needs torchvision for resnet18, resnet50, densenet121 and vgg16.

train, transformers (--models gpt2s,bert_base): nanoGPT's GPT-2 small (model.py's layout: learned
positions, pre-LayerNorm blocks, one c_attn projection, F.scaled_dot_product_attention is_causal,
exact GELU, the head tied to wte, vocab 50304, dropout 0, its init) and a BERT-base encoder
(post-LayerNorm, bidirectional, an MLM-style head tied to the word embedding) as
fixtures/workloads/train_transformers.csv and kernels/torch/transformer.h define them; a step is
the forward, cross-entropy of every position's next token (random tokens), backward and
torch.optim.AdamW(lr 6e-4, betas (0.9, 0.95), weight decay 0.1 on 2-d parameters and 0 on the
rest, fused=True on CUDA, capturable when graphed; foreach on the CPU). Names:
train/<device>/pytorch/<model>/bs:B/dt:D/pass:train[/graph:G]/seq:S (--seq, default the model's
context). Counters: tokens_per_s, items_per_s (sequences), flop_per_s and mfu (nanoGPT's
estimate_mfu, 6 N + 12 L H Q T a token with N the parameters less the position embeddings, over
dlbench's peak: SMs x max SM clock x dense flop/clk/SM of the dtype, or --peak-tflops), epoch_s.
  tools/pytorch_baseline.py train --device gpu --models gpt2s --batch-sizes 8,16 \
      --dtypes amp_bf16 --graph 0,1 -o pt_gpt2.json

dataload: torchvision's input pipelines on the same ImageFolder dataset dlbench reads (--data).
CPU: ImageFolder + PIL decode, RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize
(ImageNet's statistics), DataLoader(batch, shuffle, --workers worker processes, pin_memory and a
non_blocking copy to the GPU when there is one, persistent workers, prefetch_factor 2). GPU: the
files' bytes read on the CPU, torchvision.io.decode_jpeg(device='cuda') on the batch, then per
image resized_crop (bilinear, antialias off, as dlbench) + flip on the GPU, Normalize, stacked; with
--decode-only just the decode. Each repetition times --batches batches after a warm-up of as many
batches as the loader prefetches. Names: dataload/<cpu|gpu>/torchvision/imagenet.rrc224/bs:B/
dt:f32/fmt:nchw[/workers:W].
  tools/pytorch_baseline.py dataload --device cpu --data DIR --batch-sizes 256 --workers 16 -o tv.json

ddp: the training step (amp_bf16, channels-last, as train) data parallel on --gpus GPUs of this
host, a process each (torch.multiprocessing, NCCL process group over 127.0.0.1), the model in
DistributedDataParallel with its defaults (25 MiB buckets, broadcast_buffers), eager, each GPU on
its own seeded batch of the per-GPU batch size; --graph 1: the whole DDP step (its all-reduces
included) in one CUDA graph per rank after 11 eager steps. A repetition times --steps steps on every rank
after 10 warm-up steps; the step time is the slowest rank's. Rank 0 also times the same step
without DDP on one GPU: scaling_efficiency = that time / the DDP step's. NVLink multicast stays
off (NCCL_NVLS_ENABLE=0 unless set). Names: train/gpu/pytorch/<model>/bs:B/dt:amp_bf16/fmt:nhwc/
pass:train/graph:G/gpus:N; counters items_per_s (all GPUs), per_gpu_items_per_s,
single_gpu_items_per_s, scaling_efficiency, exposed_comm_s.
  tools/pytorch_baseline.py ddp --models resnet18 --batch-sizes 64,256 --gpus 2 -o pt_ddp.json
attn: torch.nn.functional.scaled_dot_product_attention on the shapes of
fixtures/workloads/attn_models.csv, q/k/v (B, H, S, D) contiguous with requires_grad (the training
forward, which also writes the log-sum-exp the backward reads), dO seeded alike, is_causal per
row, the default scale 1/sqrt(D). Every case is timed with each of PyTorch's fused backends
(torch.nn.attention.sdpa_kernel: CUDNN_ATTENTION, FLASH_ATTENTION, EFFICIENT_ATTENTION) and the
fastest is the case's entry, the others' medians in its label. Grouped-query rows pass
enable_gqa=True; a backend that refuses it gets K/V repeat_interleave'd to the query heads outside
the timed span (the label says so). pass:fwd times the forward alone; pass:bwd runs the forward
once and times out.backward(dO, retain_graph=True) alone, the gradients set to None first (as
FlashAttention's benchmark_backward). Names: attn/gpu/pytorch/<workload>/bs:B/dt:D/pass:P/seq:S/
heads:H/kv_heads:G/head_dim:D/causal:C; counters flop_per_s (FlashAttention's convention:
4 B H S^2 D for the forward, halved when causal, 2.5x that for the backward), items_per_s, bs.
  tools/pytorch_baseline.py attn --filter '^gpt2s' --batch-sizes 16 --seqs 1024 -o pt_attn.json
"""
import argparse
import csv
import gc
import glob
import json
import math
import os
import re
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "..", "fixtures", "workloads")
DTYPES = {"f32": torch.float32, "tf32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# gemm's 8-bit dtypes: the operands' torch types (A, B).
EIGHT_BIT = {"fp8": ("float8_e4m3fn", "float8_e4m3fn"), "fp8_e5m2": ("float8_e5m2", "float8_e4m3fn"),
             "int8": ("int8", "int8")}


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


def eight_bit_gemm(m, n, k, dt, dev, args):
    """C = A B with A m x k row-major and B k x n column-major (stored n x k), as fp8/int8 need."""
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
                    if dt in EIGHT_BIT:
                        return eight_bit_gemm(m, n, k, dt, dev, args), 2.0 * m * n * k, \
                            m if r["m"] == "bs" else 0
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


TRAIN_MODELS = ("mlp", "resnet18_cifar", "resnet18", "resnet50", "densenet121", "vgg16",
                "catdog64", "catdog128")
# The datasets' sizes, for when train_models.csv is not at hand (it is the source).
EPOCH_ITEMS = {"mlp": 100000, "resnet18_cifar": 50000, "resnet18": 1281167, "resnet50": 1281167,
               "densenet121": 1281167, "vgg16": 1281167, "catdog64": 25000, "catdog128": 25000}


class BasicBlock(nn.Module):
    """kuangliu/pytorch-cifar's BasicBlock."""

    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet18(nn.Module):
    """kuangliu/pytorch-cifar's ResNet-18: a 3x3 stem without max-pool, 32x32 input, 10 classes."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, in_planes = [], 64
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            for s in (stride, 1):
                layers.append(BasicBlock(in_planes, planes, s))
                in_planes = planes
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(512, classes)

    def forward(self, x):
        out = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.linear(torch.flatten(F.adaptive_avg_pool2d(out, 1), 1))


def catdog(image):
    layers, c = [], 3
    for k in (32, 32, 64, 64):
        layers += [nn.Conv2d(c, k, 3), nn.ReLU(), nn.MaxPool2d(2)]
        c = k
    side = image
    for _ in range(4):
        side = (side - 2) // 2
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(64 * side * side, 512), nn.ReLU(),
                         nn.Linear(512, 2))


def make_model(name):
    """(module, input shape without the batch, classes)."""
    if name == "mlp":
        return (nn.Sequential(nn.Linear(1000, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                              nn.Linear(256, 2)), (1000,), 2)
    if name == "resnet18_cifar":
        return CifarResNet18(), (3, 32, 32), 10
    if name in ("catdog64", "catdog128"):
        image = int(name[len("catdog"):])
        return catdog(image), (3, image, image), 2
    import torchvision
    if name == "resnet18":
        return torchvision.models.resnet18(num_classes=1000), (3, 224, 224), 1000
    if name == "resnet50":
        return torchvision.models.resnet50(num_classes=1000), (3, 224, 224), 1000
    if name == "densenet121":
        return torchvision.models.densenet121(), (3, 224, 224), 1000
    if name == "vgg16":
        m = torchvision.models.vgg16()
        # dlbench's VGG-16 has no dropout: the classifier's two Dropout layers go.
        for i, layer in enumerate(m.classifier):
            if isinstance(layer, nn.Dropout):
                m.classifier[i] = nn.Identity()
        return m, (3, 224, 224), 1000
    raise ValueError(f"unknown model {name}")


# The transformers of fixtures/workloads/train_transformers.csv: (causal, layers, d, heads, ffn,
# vocab, positions, LayerNorm eps), and the tokens of an epoch (OpenWebText's 9,035,582,489 as
# nanoGPT's prepare.py counts them; BERT's 3.3B-word BooksCorpus + Wikipedia as 3.3e9 tokens).
TRANSFORMERS = {"gpt2s": (True, 12, 768, 12, 3072, 50304, 1024, 1e-5),
                "bert_base": (False, 12, 768, 12, 3072, 30522, 512, 1e-12)}
EPOCH_TOKENS = {"gpt2s": 9035582489, "bert_base": 3300000000}


class Block(nn.Module):
    """nanoGPT's Block (pre-LN: x + attn(ln_1(x)), x + mlp(ln_2(x))), or BERT's post-LN layer."""

    def __init__(self, causal, d, heads, ffn, eps):
        super().__init__()
        self.causal, self.heads = causal, heads
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.c_attn = nn.Linear(d, 3 * d)
        self.attn_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.fc = nn.Linear(d, ffn)
        self.mlp_proj = nn.Linear(ffn, d)

    def attn(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0,
                                           is_causal=self.causal)
        return self.attn_proj(y.transpose(1, 2).contiguous().view(b, t, c))

    def mlp(self, x):
        return self.mlp_proj(F.gelu(self.fc(x)))  # exact GELU: nanoGPT's nn.GELU()

    def forward(self, x):
        if self.causal:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))
        x = self.ln_1(x + self.attn(x))
        return self.ln_2(x + self.mlp(x))


class Transformer(nn.Module):
    """GPT-2 small as nanoGPT's model.py (tied head, dropout 0) or BERT-base with its MLM head."""

    def __init__(self, name):
        super().__init__()
        causal, layers, d, heads, ffn, vocab, positions, eps = TRANSFORMERS[name]
        self.causal = causal
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(positions, d)
        if not causal:
            self.wtt = nn.Embedding(2, d)
            self.ln_emb = nn.LayerNorm(d, eps=eps)
        self.h = nn.ModuleList(Block(causal, d, heads, ffn, eps) for _ in range(layers))
        if causal:
            self.ln_f = nn.LayerNorm(d, eps=eps)
        else:
            self.head_dense = nn.Linear(d, d)
            self.ln_head = nn.LayerNorm(d, eps=eps)
            self.head_bias = nn.Parameter(torch.zeros(vocab))
        proj_std = 0.02 / math.sqrt(2 * layers) if causal else 0.02
        for pn, p in self.named_parameters():
            if p.dim() >= 2:
                torch.nn.init.normal_(p, 0.0, proj_std if "_proj." in pn else 0.02)
            elif "ln" not in pn:
                torch.nn.init.zeros_(p)

    def forward(self, idx):
        pos = torch.arange(idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        if not self.causal:
            x = self.ln_emb(x + self.wtt.weight[0])
        for block in self.h:
            x = block(x)
        if self.causal:
            return F.linear(self.ln_f(x), self.wte.weight)
        return F.linear(self.ln_head(F.gelu(self.head_dense(x))), self.wte.weight, self.head_bias)


def transformer_flops_per_token(model, seq):
    """nanoGPT's estimate_mfu: 6 N + 12 L H Q T a token, N = the parameters less the position
    (and token type) embeddings, which are lookups; the tied head's matmul is the token
    embedding, counted once."""
    n = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
    if not model.causal:
        n -= model.wtt.weight.numel()
    layers, d = len(model.h), model.wpe.weight.size(1)
    return 6 * n + 12 * layers * d * seq


def gpu_peak(args, dt):
    """The dense peak dlbench divides by (fixtures/machine/peak.cpp): SMs x max SM clock x flop/clk/SM
    of the dtype (sm_90: f32 256, tf32 2048, bf16 4096; sm_80: 128, 1024, 2048); 0 if unknown.
    --peak-tflops overrides it."""
    if args.peak_tflops:
        return args.peak_tflops * 1e12
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


def transformer_step_fn(model_name, bs, seq, dt, graph, gpu):
    """nanoGPT's training step: forward, cross-entropy of every position's next token, backward,
    AdamW (lr 6e-4, betas (0.9, 0.95), weight decay 0.1 on 2-d parameters, fused on CUDA and
    capturable when graphed, foreach on the CPU). Graphed: three warm-up steps on a side stream,
    grads set to None, the step captured, one replay a call. Returns (step, FLOPs a step)."""
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
    flops = transformer_flops_per_token(model, seq) * bs * seq
    if not graph:
        return eager_step, flops
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            eager_step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        train_step()
    return g.replay, flops


def epoch_items():
    items = dict(EPOCH_ITEMS)
    for r in rows("train_models"):
        items[r["name"]] = int(r["epoch_items"])
    return items


def train_step_fn(model_name, bs, dt, fmt, pas, graph, gpu):
    """A function running one step of the case: model and inputs built, warmed up if graphed."""
    dev = torch.device("cuda" if gpu else "cpu")
    torch.manual_seed(0)
    model, shape, classes = make_model(model_name)
    model = model.to(dev)
    x = torch.randn((bs,) + shape, device=dev)
    y = torch.randint(0, classes, (bs,), device=dev)
    if fmt == "nhwc":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    amp = dt == "amp_bf16"

    def autocast():
        # A graph replays what was captured: autocast's weight cache must stay out of it.
        return torch.autocast("cuda" if gpu else "cpu", dtype=torch.bfloat16, enabled=amp,
                              cache_enabled=not graph)

    if pas == "infer":
        model.eval()

        def forward():
            with torch.inference_mode(), autocast():
                return model(x)
        step = forward
    else:
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9,
                              **({"fused": True} if gpu else {"foreach": True}))

        def train_step():
            with autocast():
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

        def eager_step():
            opt.zero_grad(set_to_none=True)
            train_step()
        step = eager_step
    if not graph:
        return step
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    if pas == "infer":
        with torch.cuda.graph(g):
            forward()
    else:
        # The backward of the capture allocates the gradients from the graph's pool.
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            train_step()
    return g.replay


def train_cases(args):
    """Yields (name, model, dt, fmt, pass, graph, bs) in a fixed order."""
    for model in args.models:
        if model in TRANSFORMERS:
            continue
        for bs in args.batch_sizes:
            for dt in args.dtypes:
                for fmt in (args.fmt if model != "mlp" else [""]):
                    for pas in args.passes:
                        for graph in (args.graph if args.device == "gpu" else [""]):
                            keys = [f"bs:{bs}", f"dt:{dt}"] + ([f"fmt:{fmt}"] if fmt else [])
                            keys += [f"pass:{pas}"] + ([f"graph:{graph}"] if graph else [])
                            name = "/".join(["train", args.device, "pytorch", model] + keys)
                            yield name, model, dt, fmt, pas, graph, bs


def train_benchmarks(args):
    gpu = args.device == "gpu"
    items = epoch_items()
    benchmarks = []
    for name, model, dt, fmt, pas, graph, bs in train_cases(args):
        if not re.search(args.filter, model) or (not gpu and dt == "tf32"):
            continue
        set_tf32(dt == "tf32")
        result = {"network": model, "workload": model}
        fn = None
        try:
            if gpu:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            fn = train_step_fn(model, bs, dt, fmt, pas, graph == "1", gpu)
            times = time_fn(fn, args.device, reps=args.repetitions)
            peak = (torch.cuda.max_memory_allocated() if gpu
                    else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        except RuntimeError as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            prefix = "out of memory: " if isinstance(e, torch.OutOfMemoryError) else "failed: "
            benchmarks.append({"name": name, "run_name": name, "run_type": "iteration",
                               "error_occurred": True, "error_message": prefix + first,
                               "dlbench": result})
            print(f"{name:90s} {prefix}{first}", flush=True)
            continue
        finally:
            del fn
            gc.collect()
        n = items[model]
        for i, t in enumerate(times):
            benchmarks.append({"name": name, "run_name": name, "run_type": "iteration",
                               "repetitions": len(times), "repetition_index": i, "threads": 1,
                               "iterations": 1, "real_time": t * 1e6, "cpu_time": t * 1e6,
                               "time_unit": "us", "items_per_s": bs / t, "bs": bs,
                               "epoch_s": n * t / bs, "epoch_items": n,
                               "peak_mem_bytes": peak, "dlbench": result})
        t = statistics.median(times)
        print(f"{name:90s} {t * 1e3:10.3f} ms {bs / t:12.1f} img/s "
              f"{peak / 2**30:7.2f} GiB", flush=True)
    return benchmarks


def transformer_benchmarks(args):
    """The transformer steps: train/<device>/pytorch/<model>/bs:B/dt:D/pass:train[/graph:G]/seq:S."""
    gpu = args.device == "gpu"
    benchmarks = []
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
                    name = "/".join(["train", args.device, "pytorch", model] + keys)
                    set_tf32(dt == "tf32")
                    result = {"network": model, "workload": model}
                    fn = None
                    try:
                        if gpu:
                            torch.cuda.empty_cache()
                            torch.cuda.reset_peak_memory_stats()
                        fn, flops = transformer_step_fn(model, bs, seq, dt, graph == "1", gpu)
                        times = time_fn(fn, args.device, reps=args.repetitions)
                        peak = (torch.cuda.max_memory_allocated() if gpu
                                else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
                    except RuntimeError as e:
                        first = str(e).splitlines()[0] if str(e) else type(e).__name__
                        prefix = ("out of memory: " if isinstance(e, torch.OutOfMemoryError)
                                  else "failed: ")
                        benchmarks.append({"name": name, "run_name": name,
                                           "run_type": "iteration", "error_occurred": True,
                                           "error_message": prefix + first, "dlbench": result})
                        print(f"{name:90s} {prefix}{first}", flush=True)
                        continue
                    finally:
                        del fn
                        gc.collect()
                    peak_flops = gpu_peak(args, dt) if gpu else 0
                    n = -(-EPOCH_TOKENS[model] // seq)  # sequences of an epoch
                    for i, t in enumerate(times):
                        b = {"name": name, "run_name": name, "run_type": "iteration",
                             "repetitions": len(times), "repetition_index": i, "threads": 1,
                             "iterations": 1, "real_time": t * 1e6, "cpu_time": t * 1e6,
                             "time_unit": "us", "items_per_s": bs / t, "bs": bs,
                             "tokens_per_s": bs * seq / t, "flop_per_s": flops / t,
                             "epoch_s": n * t / bs, "epoch_items": n,
                             "peak_mem_bytes": peak, "dlbench": result}
                        if peak_flops:
                            b["mfu"] = 100.0 * flops / t / peak_flops
                        benchmarks.append(b)
                    t = statistics.median(times)
                    mfu = f"{100.0 * flops / t / peak_flops:6.1f}% MFU" if peak_flops else ""
                    print(f"{name:90s} {t * 1e3:9.3f} ms {bs * seq / t:12.0f} tok/s {mfu} "
                          f"{peak / 2**30:7.2f} GiB", flush=True)
    return benchmarks


def dataload_benchmarks(args):
    import torchvision
    from torchvision import transforms
    import torchvision.transforms.v2.functional as TF
    gpu_present = torch.cuda.is_available()
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    benchmarks = []

    def record(name, times, bs, extra):
        for i, t in enumerate(times):
            b = {"name": name, "run_name": name, "run_type": "iteration",
                 "repetitions": len(times), "repetition_index": i, "threads": 1,
                 "iterations": args.batches, "real_time": t / args.batches * 1e6,
                 "cpu_time": t / args.batches * 1e6, "time_unit": "us",
                 "items_per_s": bs * args.batches / t, "bs": bs,
                 "dlbench": {"network": "imagenet", "workload": "imagenet.rrc224"}}
            b.update(extra)
            benchmarks.append(b)
        t = statistics.median(times)
        print(f"{name:90s} {bs * args.batches / t:12.1f} img/s", flush=True)

    if args.device == "cpu":
        tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor(), transforms.Normalize(mean, std)])
        ds = torchvision.datasets.ImageFolder(args.data, transform=tf)
        for bs in args.batch_sizes:
            for w in args.workers:
                loader = torch.utils.data.DataLoader(
                    ds, batch_size=bs, shuffle=True, num_workers=w, pin_memory=gpu_present,
                    drop_last=True, persistent_workers=w > 0, prefetch_factor=2 if w > 0 else None)
                it = iter(loader)

                def next_batch():
                    nonlocal it
                    try:
                        x, y = next(it)
                    except StopIteration:
                        it = iter(loader)
                        x, y = next(it)
                    if gpu_present:
                        x = x.to("cuda", non_blocking=True)
                        torch.cuda.synchronize()
                    return x
                # A DataLoader worker makes whole batches: once each has delivered its first, the
                # loader is in steady state. The timed batches stay inside that epoch: a new epoch
                # restarts the prefetching (seconds of a cold start), which is not throughput.
                per_epoch = len(ds) // bs
                if max(1, w) + args.repetitions * args.batches > per_epoch:
                    sys.exit(f"pytorch_baseline: {len(ds)} images make {per_epoch} batches of {bs}, "
                             f"fewer than {max(1, w)} warm-up + {args.repetitions} x {args.batches} "
                             f"timed: use a larger --data or fewer --batches")
                for _ in range(max(1, w)):
                    next_batch()
                times = []
                for _ in range(args.repetitions):
                    t0 = time.perf_counter()
                    for _ in range(args.batches):
                        next_batch()
                    times.append(time.perf_counter() - t0)
                name = f"dataload/cpu/torchvision/imagenet.rrc224/bs:{bs}/dt:f32/fmt:nchw/workers:{w}"
                record(name, times, bs, {"workers": w})
                del it, loader
                gc.collect()
        return benchmarks

    ds = torchvision.datasets.ImageFolder(args.data)
    files = [p for p, _ in ds.samples]
    gen = torch.Generator().manual_seed(0)
    m = torch.tensor(mean, device="cuda").view(3, 1, 1)
    sd = torch.tensor(std, device="cuda").view(3, 1, 1)
    for bs in args.batch_sizes:
        pos = 0

        def batch():
            nonlocal pos
            idx = [(pos + k) % len(files) for k in range(bs)]
            pos += bs
            datas = [torchvision.io.read_file(files[i]) for i in idx]
            imgs = torchvision.io.decode_jpeg(datas, device="cuda")
            if args.decode_only:
                torch.cuda.synchronize()
                return
            out = []
            for im in imgs:
                i, j, h, w = transforms.RandomResizedCrop.get_params(im, (0.08, 1.0), (3 / 4, 4 / 3))
                x = TF.resized_crop(im, i, j, h, w, [224, 224], antialias=False)
                if torch.rand(1, generator=gen).item() < 0.5:
                    x = TF.horizontal_flip(x)
                out.append(x)
            x = (torch.stack(out).float() / 255 - m) / sd
            torch.cuda.synchronize()
            return x
        for _ in range(3):
            batch()
        times = []
        for _ in range(args.repetitions):
            t0 = time.perf_counter()
            for _ in range(args.batches):
                batch()
            times.append(time.perf_counter() - t0)
        wl = "imagenet.decode" if args.decode_only else "imagenet.rrc224"
        name = f"dataload/gpu/torchvision/{wl}/bs:{bs}/dt:f32/fmt:nchw"
        record(name, times, bs, {})
    return benchmarks


def ddp_rank(rank, world, port, model_name, bs, steps, reps, out, graph=False):
    """One rank of a ddp case: times its steps; rank 0 writes {"times": [...], "single": [...]}.

    graph: the whole step (forward, DDP's bucketed all-reduces in backward, the optimizer)
    captured in one CUDA graph after 11 eager DDP steps on a side stream, as PyTorch's CUDA graphs
    notes ask for DDP (and NCCL's async error handling off)."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    if graph:
        os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
    torch.cuda.set_device(rank)
    torch.backends.cudnn.benchmark = True
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", world_size=world,
                            rank=rank, device_id=torch.device("cuda", rank))
    dev = torch.device("cuda", rank)
    torch.manual_seed(0)
    model, shape, classes = make_model(model_name)
    model = model.to(dev).to(memory_format=torch.channels_last).train()
    gen = torch.Generator(device="cpu").manual_seed(1 + rank)
    x = torch.randn((bs,) + shape, generator=gen).to(dev).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, classes, (bs,), generator=gen).to(dev)

    def stepper(make):
        # PyTorch's CUDA-graph notes for DDP: DDP built on a side stream, the warm-up and the
        # capture on that same stream (a retained AccumulateGrad node of another stream breaks the
        # capture).
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            net = make()
        torch.cuda.current_stream().wait_stream(side)
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, fused=True)

        def body():
            # A graph replays what was captured: autocast's weight cache stays out of it.
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=not graph):
                loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()

        def step():
            opt.zero_grad(set_to_none=True)
            body()
        if not graph:
            return step
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(11):
                step()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)  # backward in the capture allocates from its pool
        with torch.cuda.graph(g, stream=side):
            body()
        torch.cuda.current_stream().wait_stream(side)
        return g.replay

    def timed(step, together):
        for _ in range(10):
            step()
        out_times = []
        for _ in range(reps):
            torch.cuda.synchronize()
            if together:
                dist.barrier()
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            torch.cuda.synchronize()
            t = torch.tensor([(time.perf_counter() - t0) / steps], device=dev)
            if together:
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
            out_times.append(t.item())
        return out_times

    single = []
    if rank == 0:
        import copy
        single = timed(stepper(lambda: copy.deepcopy(model)), False)
    dist.barrier()
    times = timed(stepper(lambda: DDP(model, device_ids=[rank])), True)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"times": times, "single": single}, f)
    dist.barrier()
    dist.destroy_process_group()


def ddp_benchmarks(args):
    import socket
    import tempfile
    import torch.multiprocessing as mp
    for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        os.environ.setdefault(k, "0" if k == "NCCL_NVLS_ENABLE" else "1")
    if torch.cuda.device_count() < args.gpus:
        sys.exit(f"pytorch_baseline: --gpus {args.gpus}: this host has {torch.cuda.device_count()}")
    items = epoch_items()
    benchmarks = []
    for model in args.models:
        for bs, graph in [(b, g) for b in args.batch_sizes for g in args.graph]:
            name = (f"train/gpu/pytorch/{model}/bs:{bs}/dt:amp_bf16/fmt:nhwc/pass:train/"
                    f"graph:{graph}/gpus:{args.gpus}")
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "rank0.json")
                try:
                    mp.spawn(ddp_rank, nprocs=args.gpus,
                             args=(args.gpus, port, model, bs, args.steps, args.repetitions, out,
                                   graph == "1"))
                    with open(out) as f:
                        got = json.load(f)
                except Exception as e:  # a rank failed (out of memory, NCCL): the case's error
                    first = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
                    benchmarks.append({"name": name, "run_name": name, "run_type": "iteration",
                                       "error_occurred": True, "error_message": "failed: " + first,
                                       "dlbench": {"network": model, "workload": model}})
                    print(f"{name:90s} failed: {first}", flush=True)
                    continue
            single = statistics.median(got["single"])
            n = items[model]
            for i, t in enumerate(got["times"]):
                benchmarks.append({
                    "name": name, "run_name": name, "run_type": "iteration",
                    "repetitions": len(got["times"]), "repetition_index": i, "threads": 1,
                    "iterations": args.steps, "real_time": t * 1e6, "cpu_time": t * 1e6,
                    "time_unit": "us", "items_per_s": bs * args.gpus / t, "bs": bs,
                    "per_gpu_items_per_s": bs / t, "single_gpu_items_per_s": bs / single,
                    "scaling_efficiency": single / t, "exposed_comm_s": max(0.0, t - single),
                    "epoch_items": n, "epoch_s": n * t / (bs * args.gpus),
                    "dlbench": {"network": model, "workload": model}})
            t = statistics.median(got["times"])
            print(f"{name:90s} {t * 1e3:9.3f} ms {bs * args.gpus / t:10.1f} img/s "
                  f"scaling {single / t:.3f}", flush=True)
    return benchmarks


ATTN_BACKENDS = ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION")


def attn_cases(args):
    """Yields (name, workload, network, b, h, g, s, d, causal, dtype, pass) from attn_models.csv.

    A row names its workload and gives heads, kv_heads (default: heads), head_dim and causal
    (default 1); batch sizes and sequence lengths come from --batch-sizes/--seqs (the family's tier
    chooses them), or from bs/seq columns where a row has them (';'-separated lists)."""
    def ints(text):
        return [int(x) for x in re.split(r"[;|, ]+", str(text).strip()) if x]

    for r in rows("attn_"):
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
            sys.exit(f"pytorch_baseline: attn: {workload} has no sequence length: give --seqs")
        for b in batches:
            for s in seqs:
                for dt in args.dtypes:
                    for p in args.passes:
                        keys = [f"bs:{b}", f"dt:{dt}", f"pass:{p}", f"seq:{s}", f"heads:{h}",
                                f"kv_heads:{g}", f"head_dim:{d}", f"causal:{causal}"]
                        name = "/".join(["attn", "gpu", "pytorch", workload] + keys)
                        yield name, workload, r.get("network", ""), b, h, g, s, d, causal, dt, p


def attn_time(backend, b, h, g, s, d, causal, dt, p, reps):
    """Seconds per call (a list, one per repetition) of one pass with one backend, and a note."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    t = DTYPES[dt]
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
        times = time_fn(fn, "gpu", reps=reps)
    return times, note


def attn_benchmarks(args):
    benchmarks = []
    for name, workload, network, b, h, g, s, d, causal, dt, p in attn_cases(args):
        if not re.search(args.filter, workload):
            continue
        fwd_flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        flops = fwd_flops if p == "fwd" else 2.5 * fwd_flops
        tried = {}
        for backend in ATTN_BACKENDS:
            try:
                times, note = attn_time(backend, b, h, g, s, d, causal, dt, p, args.repetitions)
                tried[backend] = (statistics.median(times), times, note)
            except (RuntimeError, torch.OutOfMemoryError) as e:
                first = str(e).splitlines()[0] if str(e) else type(e).__name__
                tried[backend] = (None, None, first[:160])
            finally:
                gc.collect()
                torch.cuda.empty_cache()
        ran = {k: v for k, v in tried.items() if v[0] is not None}
        if not ran:
            why = "; ".join(f"{k}: {v[2]}" for k, v in tried.items())
            benchmarks.append({"name": name, "run_name": name, "run_type": "iteration",
                               "error_occurred": True, "error_message": "failed: " + why})
            print(f"{name:110s} failed: {why}", flush=True)
            continue
        best = min(ran, key=lambda k: ran[k][0])
        t_best, times, note = ran[best]
        others = ", ".join(f"{k.split('_')[0].lower()} {v[0] * 1e3:.3f} ms" if v[0] is not None
                           else f"{k.split('_')[0].lower()} refused ({v[2]})"
                           for k, v in tried.items())
        label = (f"torch.nn.functional.scaled_dot_product_attention, SDPBackend.{best}{note}, "
                 f"the fastest of: {others}; q/k/v (B,H,S,D) contiguous, requires_grad")
        for i, t in enumerate(times):
            benchmarks.append({"name": name, "run_name": name, "run_type": "iteration",
                               "repetitions": len(times), "repetition_index": i, "threads": 1,
                               "iterations": 1, "real_time": t * 1e6, "cpu_time": t * 1e6,
                               "time_unit": "us", "flop_per_s": flops / t, "items_per_s": b / t,
                               "bs": b, "label": label,
                               "dlbench": {"network": network, "workload": workload,
                                           "backend": best}})
        print(f"{name:110s} {t_best * 1e6:10.1f} us {flops / t_best / 1e12:8.1f} TFLOP/s "
              f"[{best}] {others}", flush=True)
    return benchmarks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", choices=["gemm", "conv", "train", "dataload", "ddp", "attn"])
    ap.add_argument("--device", choices=["cpu", "gpu"], default="gpu")
    ap.add_argument("--dtypes", default=None,
                    help="gemm, conv: f32,tf32,bf16 (default), f16; gemm on the GPU also fp8, "
                         "fp8_e5m2, int8; "
                         "train: f32,tf32,amp_bf16 (default)")
    ap.add_argument("--fp8-accum", choices=["fast", "full"], default="fast",
                    help="gemm fp8: torch._scaled_mm's use_fast_accum True (fast) or False (full)")
    ap.add_argument("--batch-sizes", default=None, help="default 64 (attn: the CSV's)")
    ap.add_argument("--seqs", default=None, help="attn: sequence lengths (default: the CSV's)")
    ap.add_argument("--filter", default=".*", help="regex on the workload (train: model) name")
    ap.add_argument("--models", default=",".join(TRAIN_MODELS), help="train: the models")
    ap.add_argument("--fmt", default="nchw", help="train: nchw,nhwc (the MLP has none)")
    ap.add_argument("--graph", default=None,
                    help="train, GPU: 0 eager, 1 the step in a CUDA graph (default 0,1); "
                         "ddp: the same (default 0)")
    ap.add_argument("--pass", dest="passes", default=None,
                    help="train: train (default),infer; attn: fwd,bwd (default both)")
    ap.add_argument("--seq", type=int, default=0,
                    help="train, transformers: sequence length (default: the model's, 1024 / 512)")
    ap.add_argument("--peak-tflops", type=float, default=0,
                    help="train, transformers: the peak mfu divides by (default: dlbench's)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--data", help="dataload: the ImageFolder dataset")
    ap.add_argument("--workers", default="16", help="dataload, CPU: DataLoader worker processes")
    ap.add_argument("--batches", type=int, default=20, help="dataload: batches per repetition")
    ap.add_argument("--decode-only", action="store_true", help="dataload, GPU: decode alone")
    ap.add_argument("--gpus", type=int, default=2, help="ddp: GPUs (a process each)")
    ap.add_argument("--steps", type=int, default=20, help="ddp: steps per repetition")
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args()
    args.batch_sizes_given = args.batch_sizes is not None
    args.batch_sizes = args.batch_sizes or "64"
    args.graph = args.graph or ("0" if args.family == "ddp" else "0,1")
    if args.family == "attn":
        args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
        args.seqs = [int(x) for x in args.seqs.split(",")] if args.seqs else []
        args.dtypes = (args.dtypes or "bf16").split(",")
        args.passes = (args.passes or "fwd,bwd").split(",")
        bad = [d for d in args.dtypes if d not in ("bf16", "f16")] + \
              [p for p in args.passes if p not in ("fwd", "bwd")]
        if bad:
            sys.exit(f"pytorch_baseline: attn: unknown dtype or pass {','.join(bad)} "
                     f"(dtypes: bf16,f16; passes: fwd,bwd)")
        if args.device != "gpu" or not torch.cuda.is_available():
            sys.exit("pytorch_baseline: attn times PyTorch's fused GPU backends: needs a CUDA device")
        benchmarks = attn_benchmarks(args)
        ctx = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "library": "pytorch",
               "torch_version": torch.__version__, "executable": "tools/pytorch_baseline.py",
               "num_cpus": os.cpu_count(), "gpu_name": torch.cuda.get_device_name(0),
               "cudnn_version": str(torch.backends.cudnn.version())}
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"context": ctx, "benchmarks": benchmarks}, f, indent=1)
        os.replace(tmp, args.out)
        return
    if args.family == "ddp":
        args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
        args.graph = args.graph.split(",")
        if any(g not in ("0", "1") for g in args.graph):
            sys.exit(f"pytorch_baseline: ddp: --graph {','.join(args.graph)}: expected 0 and/or 1")
        args.models = args.models.split(",")
        bad = [m for m in args.models if m not in TRAIN_MODELS]
        if bad or args.gpus < 1 or args.steps < 1:
            sys.exit(f"pytorch_baseline: ddp: unknown model {','.join(bad)}" if bad
                     else "pytorch_baseline: ddp: --gpus and --steps must be positive")
        benchmarks = ddp_benchmarks(args)
        ctx = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "library": "pytorch",
               "torch_version": torch.__version__, "executable": "tools/pytorch_baseline.py",
               "num_cpus": os.cpu_count(), "gpu_name": torch.cuda.get_device_name(0),
               "nccl_version": ".".join(map(str, torch.cuda.nccl.version()))}
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"context": ctx, "benchmarks": benchmarks}, f, indent=1)
        os.replace(tmp, args.out)
        return
    if args.family == "dataload":
        if not args.data or not os.path.isdir(args.data):
            sys.exit(f"pytorch_baseline: --data {args.data}: not a folder")
        args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
        args.workers = [int(w) for w in args.workers.split(",")]
        if args.device == "gpu" and not torch.cuda.is_available():
            sys.exit("pytorch_baseline: no CUDA device")
        benchmarks = dataload_benchmarks(args)
        import torchvision
        ctx = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "library": "pytorch",
               "torch_version": torch.__version__, "torchvision_version": torchvision.__version__,
               "executable": "tools/pytorch_baseline.py", "num_cpus": os.cpu_count()}
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"context": ctx, "benchmarks": benchmarks}, f, indent=1)
        os.replace(tmp, args.out)
        return
    train = args.family == "train"
    args.dtypes = (args.dtypes or ("f32,tf32,amp_bf16" if train else "f32,tf32,bf16")).split(",")
    args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    args.models = args.models.split(",")
    args.fmt = args.fmt.split(",")
    args.graph = args.graph.split(",")
    args.passes = (args.passes or "train").split(",")
    if train:
        for what, got, known in (("model", args.models, TRAIN_MODELS + tuple(TRANSFORMERS)),
                                 ("fmt", args.fmt, ("nchw", "nhwc")),
                                 ("graph", args.graph, ("0", "1")),
                                 ("pass", args.passes, ("train", "infer")),
                                 ("dtype", args.dtypes, ("f32", "tf32", "amp_bf16"))):
            bad = [g for g in got if g not in known]
            if bad:
                sys.exit(f"pytorch_baseline: unknown {what} {','.join(bad)} "
                         f"(known: {','.join(known)})")
    if args.device == "gpu" and not torch.cuda.is_available():
        sys.exit("pytorch_baseline: no CUDA device")
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.backends.cudnn.benchmark = True
    benchmarks = train_benchmarks(args) + transformer_benchmarks(args) if train else []
    cases = [] if train else gemm_cases(args) if args.family == "gemm" else conv_cases(args)
    for name, workload, dt, make in cases:
        if not re.search(args.filter, workload):
            continue
        if args.device == "cpu" and dt in ("tf32", "fp8", "fp8_e5m2", "int8"):
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
    if train and "torchvision" in sys.modules:
        ctx["torchvision_version"] = sys.modules["torchvision"].__version__
    if args.device == "gpu":
        ctx["gpu_name"] = torch.cuda.get_device_name(0)
        ctx["cudnn_version"] = str(torch.backends.cudnn.version())
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"context": ctx, "benchmarks": benchmarks}, f, indent=1)
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
