"""train: one training step (or forward) of the models of fixtures/workloads/train_models.csv; the
transformers of train_transformers.csv are transformer.py's."""
import re
import statistics

from . import core, ops, transformer

DESCRIPTION = """\
One training step of a model of fixtures/workloads/train_models.csv: forward, mean cross-entropy,
backward, SGD (lr 0.01, momentum 0.9; fused on CUDA, foreach on the CPU), or the forward alone
under inference_mode (--pass infer), on seeded inputs on the device. amp_bf16: bf16 autocast;
nhwc: channels-last. --graph 1 (GPU): the whole step in one CUDA graph. gpt2s and bert_base (train_
transformers.csv): forward, next-token cross-entropy, backward, AdamW, with tokens_per_s and mfu.
resnet18, resnet50, densenet121 and vgg16 need torchvision. docs/families/train.md has the method.

  pytorch-peer train --device gpu --models resnet18_cifar --batch-sizes 16,256 \\
      --dtypes amp_bf16,f32 --fmt nhwc,nchw --graph 0,1 --pass train -o pt_train.json
  pytorch-peer train --device gpu --models gpt2s --batch-sizes 8,16 --dtypes amp_bf16 \\
      --graph 0,1 -o pt_gpt2.json"""

TRAIN_MODELS = ("mlp", "resnet18_cifar", "resnet18", "resnet50", "densenet121", "vgg16",
                "catdog64", "catdog128")
# The datasets' sizes, for when train_models.csv is not at hand (it is the source).
EPOCH_ITEMS = {"mlp": 100000, "resnet18_cifar": 50000, "resnet18": 1281167, "resnet50": 1281167,
               "densenet121": 1281167, "vgg16": 1281167, "catdog64": 25000, "catdog128": 25000}


def epoch_items():
    items = dict(EPOCH_ITEMS)
    for r in core.rows("train_models"):
        items[r["name"]] = int(r["epoch_items"])
    return items


def cases(args):
    """Yields (name, model, dt, fmt, pass, graph, bs) of the CNN and MLP cases, in a fixed order:
    train/<device>/pytorch/<model>/bs:B/dt:D[/fmt:F]/pass:P[/graph:G] (no fmt for the MLP, no
    graph on the CPU, no tf32 on the CPU)."""
    for model in args.models:
        if model in transformer.TRANSFORMERS or not re.search(args.filter, model):
            continue
        for bs in args.batch_sizes:
            for dt in args.dtypes:
                if args.device != "gpu" and dt == "tf32":
                    continue
                for fmt in (args.fmt if model != "mlp" else [""]):
                    for pas in args.passes:
                        for graph in (args.graph if args.device == "gpu" else [""]):
                            keys = [f"bs:{bs}", f"dt:{dt}"] + ([f"fmt:{fmt}"] if fmt else [])
                            keys += [f"pass:{pas}"] + ([f"graph:{graph}"] if graph else [])
                            name = core.name("train", args.device, model, keys)
                            yield name, model, dt, fmt, pas, graph, bs


def train_step_fn(model_name, bs, dt, fmt, pas, graph, gpu):
    """A function running one step of the case: model and inputs built, warmed up if graphed."""
    import torch
    import torch.nn.functional as F
    from .cnn import make_model
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
    if pas == "infer":
        return core.capture(step, forward)
    # The backward of the capture allocates the gradients from the graph's pool.
    return core.capture(step, train_step, lambda: opt.zero_grad(set_to_none=True))


def train_benchmarks(args):
    gpu = args.device == "gpu"
    items = epoch_items()
    benchmarks = []
    for name, model, dt, fmt, pas, graph, bs in cases(args):
        core.set_tf32(dt == "tf32")
        result = {"network": model, "workload": model}
        try:
            times, peak, _ = core.time_step(
                lambda: (train_step_fn(model, bs, dt, fmt, pas, graph == "1", gpu), None),
                args.device, args.repetitions, result if args.kernels == "on" else None)
        except RuntimeError as e:
            benchmarks.append(core.step_failure(name, e, result))
            continue
        n = items[model]
        for i, t in enumerate(times):
            b = core.iteration(name, i, len(times), t)
            b.update({"items_per_s": bs / t, "bs": bs, "epoch_s": n * t / bs, "epoch_items": n,
                      "peak_mem_bytes": peak, "dlbench": result})
            benchmarks.append(b)
        t = statistics.median(times)
        print(f"{name:90s} {t * 1e3:10.3f} ms {bs / t:12.1f} img/s "
              f"{peak / 2**30:7.2f} GiB", flush=True)
    return benchmarks


def prepare(args):
    ops.prepare(args, train=True)
    for what, got, known in (("model", args.models, TRAIN_MODELS + tuple(transformer.TRANSFORMERS)),
                             ("fmt", args.fmt, ("nchw", "nhwc")),
                             ("graph", args.graph, ("0", "1")),
                             ("pass", args.passes, ("train", "infer")),
                             ("dtype", args.dtypes, ("f32", "tf32", "amp_bf16"))):
        bad = [g for g in got if g not in known]
        if bad:
            core.die(f"unknown {what} {','.join(bad)} (known: {','.join(known)})")


def names(args):
    return [c[0] for c in cases(args)] + [c[0] for c in transformer.cases(args)]


def run(args):
    ops.setup(args)
    benchmarks = train_benchmarks(args) + transformer.benchmarks(args)
    ops.write(args, benchmarks, train=True)
