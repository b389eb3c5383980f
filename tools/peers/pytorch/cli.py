"""The command line: a subcommand per family, the flags each takes, and the names it would emit."""
import argparse
import shlex
import sys

from . import attn, conv, core, dataload, ddp, gemm, infer, train

FAMILIES = {"gemm": gemm, "conv": conv, "train": train, "dataload": dataload, "ddp": ddp,
            "attn": attn, "infer": infer}
SUMMARY = {"gemm": "torch.matmul, _scaled_mm, _int_mm on dlbench's GEMMs",
           "conv": "conv2d and its backward passes on dlbench's conv layers",
           "train": "training steps of dlbench's models (CNNs, MLP, GPT-2, BERT)",
           "dataload": "torchvision's input pipelines on dlbench's dataset",
           "ddp": "the training step under DistributedDataParallel, a process per GPU",
           "attn": "scaled_dot_product_attention with each fused GPU backend",
           "infer": "a gpt-fast-shaped Llama decode and prefill step"}

# (flags, argparse keywords, {subcommand: help}). Every subcommand accepts every flag, as the
# single command line before it did, so no recorded command breaks; its --help shows those it uses.
FLAGS = [
    (("--device",), dict(choices=["cpu", "gpu"], default="gpu"),
     dict.fromkeys(("gemm", "conv", "train", "dataload"), "cpu or gpu (default)")
     | {"attn": "gpu (the default) only", "infer": "gpu (the default) only"}),
    (("--dtypes",), dict(default=None),
     {"gemm": "f32,tf32,bf16 (default), f16; on the GPU also fp8, fp8_e5m2, int8",
      "conv": "f32,tf32,bf16 (default), f16",
      "train": "f32,tf32,amp_bf16 (default)", "attn": "bf16 (default), f16",
      "infer": "bf16 (default), f16, f32"}),
    (("--fp8-accum",), dict(choices=["fast", "full"], default="fast"),
     {"gemm": "fp8: torch._scaled_mm's use_fast_accum True (fast) or False (full)"}),
    (("--batch-sizes",), dict(default=None),
     dict.fromkeys(("gemm", "conv", "train", "dataload"), "default 64")
     | {"gemm": "the rows whose m is bs (default 64)", "ddp": "per GPU (default 64)",
        "attn": "default 64 (a row's bs column where it has one)",
        "infer": "sequences (decode) or prompts (prefill) a step (default 64)"}),
    (("--seqs",), dict(default=None),
     {"attn": "sequence lengths (default: a row's seq column)",
      "infer": "contexts: decode's cached positions, prefill's prompt tokens (default 2048)"}),
    (("--phases",), dict(default=None), {"infer": "decode,prefill (default both)"}),
    (("--modes",), dict(default=None),
     {"infer": "eager,graph,compile,autotune (default graph,compile): the configurations "
               "timed, the fastest the entry; autotune (max-autotune) takes minutes a shape"}),
    (("--filter",), dict(default=".*"),
     dict.fromkeys(("gemm", "conv", "attn", "infer"), "regex on the workload name")
     | {"train": "regex on the model name"}),
    (("--models",), dict(default=",".join(train.TRAIN_MODELS)),
     {"train": "the models (default: every CNN and the MLP; also gpt2s, bert_base)",
      "ddp": "the models (default: every CNN and the MLP; also gpt2s, bert_base)"}),
    (("--fmt",), dict(default="nchw"), {"train": "nchw (default),nhwc (the MLP has none)"}),
    (("--graph",), dict(default=None),
     {"train": "GPU: 0 eager, 1 the step in a CUDA graph (default 0,1)",
      "ddp": "0 eager, 1 the DDP step in a CUDA graph (default 0)"}),
    (("--pass",), dict(dest="passes", default=None),
     {"train": "train (default),infer", "attn": "fwd,bwd (default both)"}),
    (("--seq",), dict(type=int, default=0),
     {"train": "transformers: sequence length (default: the model's, 1024 / 512)"}),
    (("--peak-tflops",), dict(type=float, default=0),
     {"train": "transformers: the peak mfu divides by (default: dlbench's)"}),
    (("--threads",), dict(type=int, default=0),
     dict.fromkeys(("gemm", "conv", "train"), "torch's intra-op threads (default: torch's)")),
    (("--repetitions",), dict(type=int, default=5), dict.fromkeys(FAMILIES, "default 5")),
    (("--kernels",), dict(choices=["on", "off"], default="off"),
     {"train": "GPU: on records each step's kernels (torch.profiler) into its JSON as dlbench's "
               "--dlb_kernels=on does, for compare's kernel diff (default off)"}),
    (("--data",), dict(), {"dataload": "the ImageFolder dataset"}),
    (("--workers",), dict(default="16"), {"dataload": "CPU: DataLoader worker processes (default 16)"}),
    (("--batches",), dict(type=int, default=20), {"dataload": "batches per repetition (default 20)"}),
    (("--decode-only",), dict(action="store_true"), {"dataload": "GPU: the decode alone"}),
    (("--gpus",), dict(type=int, default=2), {"ddp": "GPUs, a process each (default 2)"}),
    (("--steps",), dict(type=int, default=20), {"ddp": "steps per repetition (default 20)"}),
    (("--bucket-view",), dict(type=int, default=0),
     {"ddp": "1: DDP's gradient_as_bucket_view (default 0, DDP's default)"}),
]
# Flags that take no value: the rest take the next word (or one after '=').
VALUELESS = ("-h", "--help", "--decode-only")

# What `names` lists with no arguments: every subcommand at its defaults and at every value its
# flags know, on both devices.
SWEEP = [
    "gemm", "conv", "train", "dataload", "ddp", "attn --seqs 1024",
    *(f"gemm --device {d} --dtypes f32,tf32,bf16,f16,fp8,fp8_e5m2,int8 --batch-sizes 1,64"
      for d in ("cpu", "gpu")),
    *(f"conv --device {d} --dtypes f32,tf32,bf16,f16 --batch-sizes 1,64" for d in ("cpu", "gpu")),
    *(f"train --device {d} --models {','.join(train.TRAIN_MODELS)},gpt2s,bert_base "
      "--dtypes f32,tf32,amp_bf16 --fmt nchw,nhwc --graph 0,1 --pass train,infer "
      "--batch-sizes 1,256" for d in ("cpu", "gpu")),
    "train --models gpt2s,bert_base --seq 128 --batch-sizes 8",
    "dataload --device cpu --batch-sizes 1,256 --workers 0,16",
    "dataload --device gpu --batch-sizes 256", "dataload --device gpu --decode-only",
    f"ddp --models {','.join(train.TRAIN_MODELS)} --graph 0,1 --gpus 1",
    "ddp --models resnet18 --batch-sizes 64,256 --gpus 8",
    "attn --batch-sizes 1,16 --seqs 128,4096 --dtypes bf16,f16 --pass fwd,bwd",
    "infer", "infer --batch-sizes 1,8,32,128 --seqs 2048,8192 --dtypes bf16,f32 --phases decode",
]


DESCRIPTION = """\
Times dlbench's workloads in PyTorch (eager, or the step in a CUDA graph) and writes Google
Benchmark JSON under dlbench's names with backend pytorch (dataload: torchvision), so
dlbench-report reads the file beside dlbench's own and pairs each result with its dlbench twin.

  pytorch-peer gemm --device gpu --dtypes bf16,tf32,f32 --filter 'square.8192$' -o pt.json"""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        """One line: what is wrong, and where the usage is."""
        self.exit(2, f"{self.prog}: error: {message} (--help for usage)\n")


def parser(out_required=True):
    top = Parser(prog=core.PROG, description=DESCRIPTION,
                 formatter_class=argparse.RawDescriptionHelpFormatter,
                 epilog=f"{core.PROG} <subcommand> --help: its flags and method.")
    sub = top.add_subparsers(dest="family", required=True, metavar="{" + ",".join(FAMILIES) + "}")
    for family, module in FAMILIES.items():
        p = sub.add_parser(family, help=SUMMARY[family], description=module.DESCRIPTION,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        for flags, kwargs, helps in FLAGS:
            p.add_argument(*flags, **kwargs, help=helps.get(family, argparse.SUPPRESS))
        p.add_argument("-o", "--out", required=out_required, help="the JSON file to write")
    # Not listed: the names a command would emit, one a line, without torch (the tests' check).
    names = sub.add_parser("names", description="names [SUBCOMMAND FLAGS...]: the benchmark names "
                           "that command would emit; with none, those of every subcommand and "
                           "flag value.")
    names.add_argument("command", nargs=argparse.REMAINDER)
    return top


def subcommand_first(argv):
    """Moves the subcommand to the front: flags may come before it, as they always could."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if not a.startswith("-") or a == "-":
            return [a] + argv[:i] + argv[i + 1:]
        takes_value = not (a in VALUELESS or "=" in a or (a.startswith("--dec") and
                                                           "--decode-only".startswith(a))
                           or (not a.startswith("--") and len(a) > 2))
        i += 2 if takes_value else 1
    return argv


def prepare(args, listing):
    """The defaults that depend on the subcommand, then the subcommand's own checks."""
    args.listing = listing
    args.batch_sizes_given = args.batch_sizes is not None
    args.batch_sizes = args.batch_sizes or "64"
    args.graph = args.graph or ("0" if args.family == "ddp" else "0,1")
    FAMILIES[args.family].prepare(args)


def names(command):
    """The names the command would emit, or, with none, those of every command of SWEEP."""
    lines = []
    for argv in ([command] if command else [shlex.split(c) for c in SWEEP]):
        args = parser(out_required=False).parse_args(subcommand_first(argv))
        if args.family == "names":
            core.die("names: give a subcommand to list, not names")
        prepare(args, listing=True)
        lines += FAMILIES[args.family].names(args)
    return list(dict.fromkeys(lines))


def main(argv=None):
    argv = subcommand_first(sys.argv[1:] if argv is None else argv)
    # names takes the listed command's flags as they are: argparse would read them as its own.
    if argv[:1] == ["names"] and argv[1:2] not in (["-h"], ["--help"]):
        print("\n".join(names(argv[1:])))
        return
    args = parser().parse_args(argv)
    prepare(args, listing=False)
    try:
        FAMILIES[args.family].run(args)
    except ModuleNotFoundError as e:
        if e.name not in ("torch", "torchvision"):
            raise
        core.die(f"{args.family}: needs {e.name}, which this Python does not have")
