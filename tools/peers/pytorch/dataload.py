"""dataload: torchvision's input pipelines on the ImageFolder dataset dlbench's dataload family
reads."""
import gc
import os
import statistics
import time

from . import core

DESCRIPTION = """\
torchvision's input pipelines on the ImageFolder dataset dlbench reads (--data). CPU: ImageFolder,
PIL, RandomResizedCrop(224), flip, ToTensor, Normalize in a DataLoader of --workers processes
(pin_memory and a copy to the GPU where there is one). GPU: torchvision.io.decode_jpeg on the GPU,
then resized_crop + flip per image; --decode-only: the decode alone. Each repetition times
--batches batches after a warm-up. docs/families/dataload.md has the method.

  pytorch-peer dataload --device cpu --data DIR --batch-sizes 256 --workers 16 -o tv.json"""


def cases(args):
    """Yields (name, bs, workers): dataload/<cpu|gpu>/torchvision/imagenet.rrc224/bs:B/dt:f32/
    fmt:nchw, /workers:W on the CPU; on the GPU imagenet.decode with --decode-only."""
    for bs in args.batch_sizes:
        if args.device == "cpu":
            for w in args.workers:
                yield (f"dataload/cpu/torchvision/imagenet.rrc224/bs:{bs}/dt:f32/fmt:nchw/"
                       f"workers:{w}"), bs, w
        else:
            wl = "imagenet.decode" if args.decode_only else "imagenet.rrc224"
            yield f"dataload/gpu/torchvision/{wl}/bs:{bs}/dt:f32/fmt:nchw", bs, None


def dataload_benchmarks(args):
    import torch
    import torchvision
    from torchvision import transforms
    import torchvision.transforms.v2.functional as TF
    gpu_present = torch.cuda.is_available()
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    benchmarks = []

    def record(name, times, bs, extra):
        for i, t in enumerate(times):
            b = core.iteration(name, i, len(times), t / args.batches, iterations=args.batches)
            b.update({"items_per_s": bs * args.batches / t, "bs": bs,
                      "dlbench": {"network": "imagenet", "workload": "imagenet.rrc224"}})
            b.update(extra)
            benchmarks.append(b)
        t = statistics.median(times)
        print(f"{name:90s} {bs * args.batches / t:12.1f} img/s", flush=True)

    if args.device == "cpu":
        tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor(), transforms.Normalize(mean, std)])
        ds = torchvision.datasets.ImageFolder(args.data, transform=tf)
        for name, bs, w in cases(args):
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
                core.die(f"{len(ds)} images make {per_epoch} batches of {bs}, "
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
            record(name, times, bs, {"workers": w})
            del it, loader
            gc.collect()
        return benchmarks

    ds = torchvision.datasets.ImageFolder(args.data)
    files = [p for p, _ in ds.samples]
    gen = torch.Generator().manual_seed(0)
    m = torch.tensor(mean, device="cuda").view(3, 1, 1)
    sd = torch.tensor(std, device="cuda").view(3, 1, 1)
    for name, bs, _ in cases(args):
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
        record(name, times, bs, {})
    return benchmarks


def prepare(args):
    if not args.listing and (not args.data or not os.path.isdir(args.data)):
        core.die(f"--data {args.data}: not a folder")
    args.batch_sizes = core.ints(args.batch_sizes)
    args.workers = core.ints(args.workers)


def names(args):
    return [c[0] for c in cases(args)]


def run(args):
    import torch
    if args.device == "gpu" and not torch.cuda.is_available():
        core.die("no CUDA device")
    benchmarks = dataload_benchmarks(args)
    import torchvision
    ctx = core.context(torchvision_version=torchvision.__version__, executable=core.EXECUTABLE,
                       num_cpus=os.cpu_count())
    core.write(args.out, ctx, benchmarks)
