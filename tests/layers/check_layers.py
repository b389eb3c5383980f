#!/usr/bin/env python3
"""The include rules of the layers (docs/architecture.md), checked over the sources.

    kernels/ (backends, references, data pipelines)  <-  fixtures/ (the harness)  <-  benchmarks/
    tools/ are programs: they use kernels/ and fixtures/schema/ (the result schema and naming rules)

The harness is a ladder of rooms, each including only itself and the rooms below it:

    fixtures/schema/ < fixtures/base/ < fixtures/machine/ < fixtures/case/ < fixtures/run/ < fixtures/harness.h

the result schema, the run's services (flags, files, devices, libraries, deadlines, budget,
progress), what the machine can do, the case pipeline, the top of a run (main, launched, lockstep,
context, output), and the umbrella header a family includes, which sits alone directly in
fixtures/ and which no part of the harness includes. fixtures/workloads/ holds data only. Of the
harness, a family includes that header alone: it is the family's whole API.

Every "..." include of a source file must be allowed by the rules of the folder the file is in,
and the project's includes must form no cycle. Prints one line per violation (file:line: what)
and exits 1; exits 0 when the tree keeps the rules.

    check_layers.py [SOURCE_DIR]     check the tree (default: the repository this file is in)
    check_layers.py --self-test      check that a tree with one violation of each kind fails
"""
import os
import re
import sys
import tempfile

SOURCE_EXT = (".h", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

# The harness may use the bottom of kernels/ and the CUDA-free device interface, never a backend.
HARNESS_KERNELS = ("kernels/common/", "kernels/cuda/device.h", "kernels/backends.h")


def allowed(src, inc):
    """None when `src` may include `inc`, else why not."""
    if not inc.startswith(("kernels/", "fixtures/", "benchmarks/", "tools/", "tests/")):
        return None  # a generated header or a third-party one
    if inc.startswith("tests/") and not src.startswith("tests/"):
        return "only tests include tests/"
    if inc.startswith("tools/") and not src.startswith(("tools/", "tests/")):
        return "tools/ holds programs: nothing but tests includes tools/"
    if src.startswith("kernels/"):
        if not inc.startswith("kernels/"):
            return "kernels/ includes only kernels/ (the code under test knows no harness)"
        if src.startswith("kernels/common/") and not inc.startswith("kernels/common/"):
            return "kernels/common/ is the bottom: it includes only kernels/common/"
        if src.startswith("kernels/reference/") and not inc.startswith(
                ("kernels/common/", "kernels/reference/")):
            return "references include only kernels/common/ and kernels/reference/"
        return None
    if src.startswith("fixtures/schema/"):
        if not inc.startswith(("fixtures/schema/", "kernels/common/")):
            return "the schema library includes only fixtures/schema/ and kernels/common/"
        return None
    if src.startswith("fixtures/"):
        if inc.startswith("benchmarks/"):
            return "the harness includes no family"
        if inc.startswith("kernels/") and not inc.startswith(HARNESS_KERNELS):
            return "the harness includes no backend (only " + ", ".join(HARNESS_KERNELS) + ")"
        if inc in UMBRELLAS and src not in UMBRELLAS:
            return "the umbrella header is for families: a part of the harness includes its room"
        if inc.startswith("fixtures/") and rung(inc) > rung(src):
            return (f"the harness's includes point down the ladder ({' < '.join(LADDER)}): "
                    f"{room(src)} includes no {room(inc)}")
        return None
    if src.startswith("benchmarks/"):
        if inc.startswith("benchmarks/") and family(inc) != family(src):
            return "a family never includes another family"
        if inc.startswith("fixtures/") and inc not in UMBRELLAS:
            return "a family includes the harness's API, fixtures/harness.h, not its rooms"
        return None
    if src.startswith("tools/"):
        if inc.startswith("benchmarks/"):
            return "tools/ include no family"
        if inc.startswith("fixtures/") and not inc.startswith("fixtures/schema/"):
            return "tools/ include only fixtures/schema/ of the harness"
        if inc.startswith("tools/") and inc.split("/")[1] != src.split("/")[1]:
            return "a program includes no other program"
        return None
    return None


# The harness's ladder, bottom first: a room includes only itself and the rooms below it. The
# umbrella header, the top rung, is what sits directly in fixtures/ alone.
LADDER = ("fixtures/schema/", "fixtures/base/", "fixtures/machine/", "fixtures/case/",
          "fixtures/run/", "fixtures/harness.h")
ROOMS = LADDER[:-1] + ("fixtures/workloads/",)
UMBRELLAS = ("fixtures/harness.h",)


def room(path):
    """The rung of the ladder `path` is on ("fixtures/case/"); "" off the ladder."""
    return next((r for r in LADDER if path.startswith(r)), "")


def rung(path):
    """How high `path` sits on the ladder; -1 off it (fixtures/workloads/, a stray file)."""
    return LADDER.index(room(path)) if room(path) else -1


def placement(src):
    """None when `src` sits where the layout allows, else why not."""
    if src.startswith("fixtures/") and src not in UMBRELLAS and not src.startswith(ROOMS):
        return "the harness is in rooms (" + ", ".join(ROOMS) + "): no source directly in fixtures/"
    return None


# Binaries of a family beyond its own bench_<family>: benchmarks/<binary>.cpp -> <family>.
EXTRA_BINARIES = {"train_native": "train"}


def family(path):
    """benchmarks/<family>/... or benchmarks/<binary>.cpp -> the family's name."""
    name = path.split("/")[1].split(".")[0]
    return EXTRA_BINARIES.get(name, name)


def sources(root):
    for top in ("kernels", "fixtures", "benchmarks", "tools", "tests"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")


def check(root):
    problems, graph = [], {}
    for src in sources(root):
        graph[src] = []
        where = placement(src)
        if where:
            problems.append(f"{src}:1: {where}")
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                why = allowed(src, inc)
                if why:
                    problems.append(f"{src}:{n}: includes {inc}: {why}")
                if os.path.exists(os.path.join(root, inc)):
                    graph[src].append(inc)
    return problems + cycles(components(graph))


def components(graph):
    """The include graph over components: a header and its .cpp/.cu are one node, so a .cpp that
    includes a header that leads back to the .cpp's own header closes a loop too. A private
    header (no .cpp of its own, included only by files of its own folder) is part of the files
    that include it: its includes count as theirs."""
    stem = lambda p: os.path.splitext(p)[0]
    impl = {stem(p) for p in graph if not p.endswith(".h")}
    includers = {}
    for src, incs in graph.items():
        for i in incs:
            includers.setdefault(i, []).append(src)
    private = {h for h in graph if h.endswith(".h") and stem(h) not in impl and includers.get(h)
               and all(os.path.dirname(s) == os.path.dirname(h) for s in includers[h])}

    def expand(incs, seen):
        for i in incs:
            if i in private:
                if i not in seen:
                    seen.add(i)
                    yield from expand(graph.get(i, []), seen)
            else:
                yield i

    out = {}
    for src, incs in graph.items():
        if src in private:
            continue
        node = stem(src)
        out.setdefault(node, [])
        out[node] += [stem(i) for i in expand(incs, set()) if stem(i) != node]
    return out


def cycles(graph):
    """One line per include cycle found by a depth-first walk."""
    out, state, stack = [], {}, []

    def walk(node):
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                loop = stack[stack.index(nxt):] + [nxt]
                out.append(f"{node}: include cycle: {' -> '.join(loop)}")
            elif nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    return out


def self_test():
    bad = {
        "kernels/common/a.h": '#include "kernels/onednn/b.h"\n',
        "kernels/onednn/b.h": '#include "fixtures/harness.h"\n',
        "kernels/reference/r.h": '#include "kernels/data/d.h"\n',
        "kernels/data/d.h": "\n",
        "fixtures/harness.h": '#include "kernels/cudnn/conv.h"\n#include "fixtures/case/loop.h"\n',
        "fixtures/case/loop.h": "\n",
        "fixtures/case/loop.cpp": '#include "fixtures/case/loop.h"\n#include "fixtures/harness.h"\n',
        "fixtures/stray.h": "\n",
        "fixtures/machine/m.h": '#include "fixtures/case/loop.h"\n',
        "fixtures/case/c.h": '#include "fixtures/run/main.h"\n#include "fixtures/harness.h"\n',
        "fixtures/run/main.h": "\n",
        "fixtures/base/b.h": '#include "fixtures/machine/m.h"\n',
        "fixtures/base/b.cpp": '#include "fixtures/case/c.h"\n',
        "fixtures/schema/t.h": '#include "fixtures/base/ok.h"\n',
        "fixtures/run/up.h": '#include "fixtures/harness.h"\n',
        "fixtures/schema/s.h": '#include "fixtures/harness.h"\n',
        "benchmarks/train.cpp": '#include "benchmarks/dataload/family.h"\n',
        "benchmarks/conv/family.h": '#include "fixtures/harness.h"\n#include "fixtures/case/steps.h"\n',
        "benchmarks/dataload/family.h": '#include "tools/dataset/generator.h"\n',
        "tools/report/r.cpp": '#include "fixtures/harness.h"\n',
        "benchmarks/train_native.cpp": '#include "benchmarks/train/family.h"\n',
        "tests/tools/t.cpp": '#include "tools/report/r.h"\n',
        "kernels/torch/engine.h": '#include "kernels/torch/step.h"\n',
        "kernels/torch/step.h": "\n",
        "kernels/torch/step.cpp": '#include "kernels/torch/step.h"\n#include "kernels/torch/engine.h"\n',
        "tools/dataset/generator.h": "\n",
    }
    expected = ["kernels/common/a.h:1", "kernels/onednn/b.h:1", "kernels/reference/r.h:1",
                "fixtures/harness.h:1", "fixtures/schema/s.h:1", "benchmarks/train.cpp:1",
                "benchmarks/dataload/family.h:1", "tools/report/r.cpp:1", "include cycle",
                "fixtures/stray.h:1", "fixtures/machine/m.h:1", "fixtures/case/c.h:1:",
                "fixtures/case/c.h:2", "fixtures/base/b.h:1", "fixtures/base/b.cpp:1",
                "fixtures/schema/t.h:1", "fixtures/run/up.h:1", "benchmarks/conv/family.h:2"]
    good = {"fixtures/base/ok.h": '#include "kernels/common/error.h"\n#include "kernels/cuda/device.h"\n'
                                  '#include "fixtures/schema/s.h"\n',
            "fixtures/machine/ok.h": '#include "fixtures/base/ok.h"\n',
            "fixtures/case/ok.h": '#include "fixtures/machine/ok.h"\n#include "fixtures/base/ok.h"\n',
            "fixtures/run/ok.h": '#include "fixtures/case/ok.h"\n#include "fixtures/run/main.h"\n',
            "benchmarks/gemm/f.h": '#include "fixtures/harness.h"\n#include "kernels/onednn/b.h"\n',
            "tools/report/ok.cpp": '#include "fixtures/schema/naming.h"\n'}
    with tempfile.TemporaryDirectory() as root:
        for path, text in {**bad, **good}.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        problems = check(root)
    failed = [e for e in expected if not any(e in p for p in problems)]
    wrong = [p for p in problems if p.startswith(tuple(good) + ("benchmarks/train_native", "tests/", "kernels/torch"))]
    for e in failed:
        print(f"self-test: a violation at {e} was not reported")
    for p in wrong:
        print(f"self-test: an allowed include was reported: {p}")
    return 1 if failed or wrong else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
