"""ddp: the training step data parallel under PyTorch's DistributedDataParallel, a process per GPU
of this host."""
import json
import os
import statistics
import time

from . import core, train, transformer

DESCRIPTION = """\
The training step (amp_bf16; CNNs channels-last, SGD; gpt2s and bert_base at their own sequence
length, fused AdamW as the train subcommand's) under DistributedDataParallel on --gpus GPUs of
this host, a process each (NCCL over 127.0.0.1), each GPU on its own seeded batch of the per-GPU
batch size; --graph 1: the whole DDP step in one CUDA graph per rank; --bucket-view 1: DDP's
gradient_as_bucket_view (gradients are views of its buckets: no copy into them). The step time is
the slowest rank's; rank 0 also times the step without DDP (scaling_efficiency). NVLink multicast
stays off unless NCCL_NVLS_ENABLE is set. docs/families/train.md has the method.

  pytorch-peer ddp --models resnet18 --batch-sizes 64,256 --gpus 2 -o pt_ddp.json
  pytorch-peer ddp --models gpt2s --batch-sizes 8 --gpus 4 --graph 1 -o pt_ddp_gpt2.json"""


def cases(args):
    """Yields (name, model, bs, graph):
    train/gpu/pytorch/<model>/bs:B/dt:amp_bf16/fmt:nhwc/pass:train/graph:G/gpus:N, a
    transformer's train/gpu/pytorch/<model>/bs:B/dt:amp_bf16/pass:train/graph:G/seq:S/gpus:N."""
    for model in args.models:
        for bs, graph in [(b, g) for b in args.batch_sizes for g in args.graph]:
            if model in transformer.TRANSFORMERS:
                keys = [f"bs:{bs}", "dt:amp_bf16", "pass:train", f"graph:{graph}",
                        f"seq:{transformer.TRANSFORMERS[model][6]}"]
            else:
                keys = [f"bs:{bs}", "dt:amp_bf16", "fmt:nhwc", "pass:train", f"graph:{graph}"]
            yield core.name("train", "gpu", model, keys + [f"gpus:{args.gpus}"]), model, bs, graph


def make_inputs(model_name, bs, rank, dev):
    """(model on dev, x, y, optimizer factory, loss function) of one rank: the CNN as the train
    subcommand builds it, channels-last, SGD; a transformer with its tokens and fused AdamW."""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    gen = torch.Generator(device="cpu").manual_seed(1 + rank)
    if model_name in transformer.TRANSFORMERS:
        from .gpt import Transformer
        model = Transformer(model_name).to(dev).train()
        _, _, _, _, _, vocab, seq, _ = transformer.TRANSFORMERS[model_name]
        tokens = torch.randint(0, vocab, (bs, seq + 1), generator=gen).to(dev)
        x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

        def optimizer(net, graph):
            params = [p for p in net.parameters() if p.requires_grad]
            groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                      {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
            return torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True,
                                     capturable=graph)

        def loss_of(out):
            return F.cross_entropy(out.view(-1, out.size(-1)), y.view(-1))
        return model, x, optimizer, loss_of
    from .cnn import make_model
    model, shape, classes = make_model(model_name)
    model = model.to(dev).to(memory_format=torch.channels_last).train()
    x = torch.randn((bs,) + shape, generator=gen).to(dev).contiguous(
        memory_format=torch.channels_last)
    y = torch.randint(0, classes, (bs,), generator=gen).to(dev)

    def optimizer(net, graph):
        return torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, fused=True)

    def loss_of(out):
        return F.cross_entropy(out, y)
    return model, x, optimizer, loss_of


def ddp_rank(rank, world, port, model_name, bs, steps, reps, out, graph=False,
             bucket_view=False):
    """One rank of a ddp case: times its steps; rank 0 writes {"times": [...], "single": [...]}.

    graph: the whole step (forward, DDP's bucketed all-reduces in backward, the optimizer)
    captured in one CUDA graph after 11 eager DDP steps on a side stream, as PyTorch's CUDA graphs
    notes ask for DDP (and NCCL's async error handling off)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    if graph:
        os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
    torch.cuda.set_device(rank)
    torch.backends.cudnn.benchmark = True
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", world_size=world,
                            rank=rank, device_id=torch.device("cuda", rank))
    dev = torch.device("cuda", rank)
    model, x, optimizer, loss_of = make_inputs(model_name, bs, rank, dev)

    def stepper(make):
        # PyTorch's CUDA-graph notes for DDP: DDP built on a side stream, the warm-up and the
        # capture on that same stream (a retained AccumulateGrad node of another stream breaks the
        # capture).
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            net = make()
        torch.cuda.current_stream().wait_stream(side)
        opt = optimizer(net, graph)

        def body():
            # A graph replays what was captured: autocast's weight cache stays out of it.
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=not graph):
                loss = loss_of(net(x))
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
    times = timed(stepper(lambda: DDP(model, device_ids=[rank],
                                      gradient_as_bucket_view=bucket_view)), True)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"times": times, "single": single}, f)
    dist.barrier()
    dist.destroy_process_group()


def ddp_benchmarks(args):
    import socket
    import tempfile
    import torch
    import torch.multiprocessing as mp
    for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        os.environ.setdefault(k, "0" if k == "NCCL_NVLS_ENABLE" else "1")
    if torch.cuda.device_count() < args.gpus:
        core.die(f"--gpus {args.gpus}: this host has {torch.cuda.device_count()}")
    items = train.epoch_items()
    benchmarks = []
    for name, model, bs, graph in cases(args):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "rank0.json")
            try:
                mp.spawn(ddp_rank, nprocs=args.gpus,
                         args=(args.gpus, port, model, bs, args.steps, args.repetitions, out,
                               graph == "1", args.bucket_view == 1))
                with open(out) as f:
                    got = json.load(f)
            except Exception as e:  # a rank failed (out of memory, NCCL): the case's error
                first = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
                benchmarks.append(core.error(name, "failed: " + first,
                                             {"network": model, "workload": model}))
                print(f"{name:90s} failed: {first}", flush=True)
                continue
        single = statistics.median(got["single"])
        seq = transformer.TRANSFORMERS[model][6] if model in transformer.TRANSFORMERS else 0
        # A transformer's epoch is tokens, counted in sequences as the train subcommand does.
        n = -(-transformer.EPOCH_TOKENS[model] // seq) if seq else items[model]
        for i, t in enumerate(got["times"]):
            b = core.iteration(name, i, len(got["times"]), t, iterations=args.steps)
            b.update({"items_per_s": bs * args.gpus / t, "bs": bs, "per_gpu_items_per_s": bs / t,
                      "single_gpu_items_per_s": bs / single, "scaling_efficiency": single / t,
                      "exposed_comm_s": max(0.0, t - single), "epoch_items": n,
                      "epoch_s": n * t / (bs * args.gpus),
                      "dlbench": {"network": model, "workload": model}})
            if seq:
                b.update({"tokens_per_s": bs * seq * args.gpus / t,
                          "per_gpu_tokens_per_s": bs * seq / t})
            benchmarks.append(b)
        t = statistics.median(got["times"])
        rate = f"{bs * seq / t:10.0f} tok/s/GPU" if seq else f"{bs * args.gpus / t:10.1f} img/s"
        print(f"{name:90s} {t * 1e3:9.3f} ms {rate} scaling {single / t:.3f}", flush=True)
    return benchmarks


def prepare(args):
    args.batch_sizes = core.ints(args.batch_sizes)
    args.graph = args.graph.split(",")
    if any(g not in ("0", "1") for g in args.graph):
        core.die(f"ddp: --graph {','.join(args.graph)}: expected 0 and/or 1")
    args.models = args.models.split(",")
    if args.bucket_view not in (0, 1):
        core.die(f"ddp: --bucket-view {args.bucket_view}: expected 0 or 1")
    bad = [m for m in args.models
           if m not in train.TRAIN_MODELS and m not in transformer.TRANSFORMERS]
    if bad or args.gpus < 1 or args.steps < 1:
        core.die(f"ddp: unknown model {','.join(bad)}" if bad
                 else "ddp: --gpus and --steps must be positive")


def names(args):
    return [c[0] for c in cases(args)]


def run(args):
    import torch
    benchmarks = ddp_benchmarks(args)
    ctx = core.context(executable=core.EXECUTABLE, num_cpus=os.cpu_count(),
                       gpu_name=torch.cuda.get_device_name(0),
                       nccl_version=".".join(map(str, torch.cuda.nccl.version())))
    core.write(args.out, ctx, benchmarks)
