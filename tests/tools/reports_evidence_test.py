#!/usr/bin/env python3
"""Keeps reports/ what its README promises: small, compressed, and honest about % of peak.

  reports_evidence_test.py REPORTS_DIR

Checks, with one line per problem and exit 1 when there is any:
  - the folder's files (reports/latest/, which the main job writes and git ignores, left out) take
    at most 3,000,000 bytes, the budget the layout sets;
  - its evidence JSON is compressed: no *.json file, and every *.json.gz inflates to JSON;
  - every file with a case above 100% of its peak or roof (`pct_peak`, `pct_peak_at_clock`,
    `pct_roofline`) is a row of the README's "Cases above 100%" table with that many cases (and
    the table lists no other file), so that each one has its reason stated beside it."""
import gzip
import json
import pathlib
import re
import sys

BUDGET_BYTES = 3_000_000
OVER_100 = ("pct_peak", "pct_peak_at_clock", "pct_roofline")
TABLE_HEADING = "## Cases above 100%"


def files_of(root):
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and p.relative_to(root).parts[0] != "latest")


def cases_over_100(doc):
    """How many entries of a Google Benchmark document read above 100% of a peak or roof."""
    n = 0
    for b in doc.get("benchmarks", []) if isinstance(doc, dict) else []:
        values = [b.get(k) for k in OVER_100] if isinstance(b, dict) else []
        if any(isinstance(v, (int, float)) and v > 100 for v in values):
            n += 1
    return n


def table_rows(readme):
    """The README's table of cases above 100%: {"<folder>/<file>": count}."""
    text = readme.read_text()
    if TABLE_HEADING not in text:
        return None
    section = text.split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for m in re.finditer(r"^\| `([^`]+\.json\.gz)` \| (\d+) \|", section, re.M):
        rows[m.group(1)] = int(m.group(2))
    return rows


def main():
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    problems = []
    files = files_of(root)
    total = sum(p.stat().st_size for p in files)
    if total > BUDGET_BYTES:
        big = sorted(files, key=lambda p: p.stat().st_size, reverse=True)[:3]
        problems.append("%s: %d bytes, over the %d-byte budget (largest: %s)" % (
            root, total, BUDGET_BYTES,
            ", ".join("%s %d" % (p.relative_to(root), p.stat().st_size) for p in big)))
    found = {}
    for p in files:
        rel = str(p.relative_to(root))
        if p.name.endswith(".json"):
            problems.append("%s: evidence JSON is kept compressed (gzip -9 -n %s)" % (rel, rel))
        if not p.name.endswith(".json.gz"):
            continue
        try:
            doc = json.loads(gzip.decompress(p.read_bytes()))
        except (OSError, EOFError, ValueError) as e:
            problems.append("%s: not gzip-compressed JSON: %s" % (rel, e))
            continue
        n = cases_over_100(doc)
        if n:
            found[rel] = n
    listed = table_rows(root / "README.md")
    if listed is None:
        problems.append("%s: no '%s' section" % (root / "README.md", TABLE_HEADING))
        listed = {}
    for rel, n in sorted(found.items()):
        if rel not in listed:
            problems.append("%s: %d case(s) above 100%% of a peak or roof, not in the README's "
                            "table with a reason" % (rel, n))
        elif listed[rel] != n:
            problems.append("%s: %d case(s) above 100%%, the README's table says %d" % (
                rel, n, listed[rel]))
    for rel in sorted(set(listed) - set(found)):
        problems.append("%s: in the README's table of cases above 100%%, but it has none (or is "
                        "gone)" % rel)
    for line in problems:
        print(line)
    print("reports: %d files, %d bytes of %d; %d file(s) with cases above 100%%, %d problem(s)" % (
        len(files), total, BUDGET_BYTES, len(found), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
