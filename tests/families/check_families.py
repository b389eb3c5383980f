#!/usr/bin/env python3
"""The families table (fixtures/schema/families.h) against the tree: the recipe of
docs/architecture.md ("Adding a family"), checked.

Every family of the table has its own files, and every family's folder is in the table:
    benchmarks/<family>/ and a dlb_add_family(<family> ...) line in benchmarks/CMakeLists.txt,
    docs/families/<family>.md,
    fixtures/workloads/<family>_*.csv (unless its folder reads no workload file: the collectives),
and every binary bench_<name> of a family its benchmarks/<name>.cpp and its smoke test
tests/benchmarks/<name>_test.cpp.

No code that serves every family writes a family's name: the harness (fixtures/, but the table),
dlbench-report (tools/report/), the scripts (tools/*.sh), the CI workflows and the CMake test lists
(the top-level CMakeLists.txt and those of tests/, tests/benchmarks/, tests/fixtures/, tests/docs/)
read the table (through `dlbench-report families`) or the family's own files. A name there is a
string literal ("gemm") in C++, or a word in a script, workflow or CMake list (`foreach(f gemm)`).

Prints one line per problem (file:line: what, or what is missing) and exits 1; exits 0 when the
tree keeps the recipe.

    check_families.py SOURCE_DIR DLBENCH_REPORT   the table from `DLBENCH_REPORT families`
    check_families.py --self-test                 a tree with one problem of each kind must fail
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

# Where the table lives, and the names' own vocabulary: pass values (pass:train, pass:infer) share
# words with family names.
ALLOWED = {"fixtures/schema/families.h", "fixtures/schema/naming.h"}
CPP_EXT = (".h", ".cpp", ".cu", ".cuh")
WORD_EXT = (".sh", ".yml", ".yaml", ".txt", ".cmake")


def read_table(lines):
    """{family: [binary, ...]} from `dlbench-report families`' lines, in the table's order."""
    table = {}
    for line in lines:
        if not line.strip():
            continue
        binary, family, _weight = line.split("\t")
        table.setdefault(family, []).append(binary[len("bench_"):])
    return table


def scanned(root):
    """The files that serve every family, relative to root."""
    out = []
    for top in ("fixtures", "tools/report"):
        for d, _, files in os.walk(os.path.join(root, top)):
            out += [os.path.relpath(os.path.join(d, f), root) for f in files]
    out += [os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "tools", "*.sh"))]
    out += [os.path.relpath(p, root)
            for p in glob.glob(os.path.join(root, ".github", "workflows", "*.y*ml"))]
    out += ["CMakeLists.txt"] + [f"tests/{d}CMakeLists.txt"
                                 for d in ("", "benchmarks/", "fixtures/", "docs/")]
    return sorted(p for p in out if p not in ALLOWED and p.endswith(CPP_EXT + WORD_EXT)
                  and os.path.isfile(os.path.join(root, p)))


def code_of(line, cpp):
    """The line without its comment (a // outside a string in C++, a # starting a word else)."""
    if cpp:
        quotes = 0
        for i, c in enumerate(line):
            if c == '"':
                quotes += 1
            elif line.startswith("//", i) and quotes % 2 == 0:
                return line[:i]
        return line
    return re.sub(r"(^|\s)#.*$", "", line)


def names_in(root, names):
    """file:line: problems for every family or binary name written in a scanned file."""
    alternatives = "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))
    literal = re.compile(r'"(' + alternatives + r')"')
    word = re.compile(r"(?<![\w./-])(" + alternatives + r")(?![\w/-])")
    problems = []
    for rel in scanned(root):
        cpp = rel.endswith(CPP_EXT)
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = (literal if cpp else word).search(code_of(line, cpp))
                if m:
                    problems.append(f"{rel}:{n}: names the family or binary '{m.group(1)}': read "
                                    "fixtures/schema/families.h (or `dlbench-report families`)")
    return problems


def exists(root, rel):
    return os.path.exists(os.path.join(root, rel))


def reads_workloads(root, family):
    for path in glob.glob(os.path.join(root, "benchmarks", family, "*")):
        with open(path, encoding="utf-8", errors="replace") as f:
            if re.search(r"\b(TierRows|LoadCsv)\b", f.read()):
                return True
    return False


def missing(root, table):
    """What a family of the table lacks, and what the tree has that the table lacks."""
    problems = []
    with open(os.path.join(root, "benchmarks", "CMakeLists.txt"), encoding="utf-8") as f:
        cmake = f.read()
    binaries = set()
    for family, bins in table.items():
        for rel in (f"benchmarks/{family}", f"docs/families/{family}.md"):
            if not exists(root, rel):
                problems.append(f"{rel}: missing (family '{family}' of the table)")
        if not re.search(r"^\s*dlb_add_family\(" + re.escape(family) + r"\b", cmake, re.M):
            problems.append(f"benchmarks/CMakeLists.txt: no dlb_add_family({family} ...)")
        if reads_workloads(root, family) and not glob.glob(
                os.path.join(root, "fixtures", "workloads", family + "_*.csv")):
            problems.append(f"fixtures/workloads/{family}_*.csv: missing (family '{family}')")
        for b in bins:
            binaries.add(b)
            for rel in (f"benchmarks/{b}.cpp", f"tests/benchmarks/{b}_test.cpp"):
                if not exists(root, rel):
                    problems.append(f"{rel}: missing (binary bench_{b} of family '{family}')")
    for path in sorted(glob.glob(os.path.join(root, "benchmarks", "*"))):
        name = os.path.basename(path)
        if os.path.isdir(path) and name not in table:
            problems.append(f"benchmarks/{name}/: a family folder the table lacks")
        if name.endswith(".cpp") and name[:-4] not in binaries:
            problems.append(f"benchmarks/{name}: a binary the table lacks")
    for path in sorted(glob.glob(os.path.join(root, "docs", "families", "*.md"))):
        if os.path.basename(path)[:-3] not in table:
            problems.append(f"docs/families/{os.path.basename(path)}: a family the table lacks")
    return problems


def check(root, table):
    names = set(table) | {b for bins in table.values() for b in bins}
    return missing(root, table) + names_in(root, names)


def self_test():
    table = read_table(["bench_gemm\tgemm\t4", "bench_gemm_extra\tgemm\t1", "bench_conv\tconv\t1"])
    files = {
        "benchmarks/CMakeLists.txt": "dlb_add_family(gemm dlb_onednn)\n",
        "benchmarks/gemm/family.cpp": 'TierRows<W>("gemm_", t, Load);\n',
        "benchmarks/gemm.cpp": "", "benchmarks/gemm_extra.cpp": "", "benchmarks/conv.cpp": "",
        "benchmarks/conv/family.cpp": "", "benchmarks/norm/family.cpp": "",
        "benchmarks/norm.cpp": "",
        "docs/families/gemm.md": "", "docs/families/conv.md": "",
        "tests/benchmarks/gemm_test.cpp": "", "tests/benchmarks/gemm_extra_test.cpp": "",
        "tests/benchmarks/conv_test.cpp": "",
        "tests/benchmarks/CMakeLists.txt": "# gemm in a comment\nforeach(f gemm conv)\n",
        "CMakeLists.txt": "add_dependencies(all bench_gemm)\n",
        "fixtures/schema/families.h": '{"gemm", "conv"}\n',
        "fixtures/run/main.cpp": '// "gemm" in a comment\nif (f == "conv") return;\n',
        "tools/report/analyses/a.cpp": 'x = "gemm/cpu/onednn/sq";\ny = "gemm_extra";\n',
        "tools/dlbench-run.sh": "families=(gemm)\nout=$dir/bench_gemm.json\n",
        ".github/workflows/ci.yml": "FAMILIES: conv\n",
    }
    expected = [
        "benchmarks/CMakeLists.txt: no dlb_add_family(conv ...)",
        "fixtures/workloads/gemm_*.csv: missing (family 'gemm')",
        "benchmarks/norm/: a family folder the table lacks",
        "benchmarks/norm.cpp: a binary the table lacks",
        "tests/benchmarks/CMakeLists.txt:2:",
        "fixtures/run/main.cpp:2:",
        "tools/report/analyses/a.cpp:2:",
        "tools/dlbench-run.sh:1:",
        ".github/workflows/ci.yml:1:",
    ]
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        problems = check(root, table)
    failed = 0
    for e in expected:
        if not any(p.startswith(e) for p in problems):
            print(f"self-test: not reported: {e}")
            failed = 1
    for p in problems:
        if not any(p.startswith(e) for e in expected):
            print(f"self-test: reported, but fine: {p}")
            failed = 1
    return failed


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 3:
        print("usage: check_families.py SOURCE_DIR DLBENCH_REPORT | --self-test", file=sys.stderr)
        return 2
    root, report = argv[1], argv[2]
    try:
        out = subprocess.run([report, "families"], check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"check_families: {report} families: {e}", file=sys.stderr)
        return 2
    problems = check(root, read_table(out.stdout.splitlines()))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
