#!/usr/bin/env python3
# Writes data/smoke_h100.json: a smoke-tier-shaped run (the smoke tier's workloads, two batch
# sizes, f32 and bf16) cut from the real H100 default-tier runs in reports/h100/, with the result
# fields dlbench writes since fixtures/schema.h: "network" and "workload" from the workload files,
# "verification" from the label those runs wrote ("verified rel-L2 E <= T at C of N positions").
# The report tests and the example report use it; the numbers are measurements, one repetition.
#   tests/tools/report/make_smoke_fixture.py   (from anywhere; paths are the repository's)
import csv, gzip, json, os, re

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
workloads = os.path.join(root, "fixtures", "workloads")

# Workload name -> (network, tier): conv files name their network, gemm files have a column.
rows = {}
for f in sorted(os.listdir(workloads)):
    with open(os.path.join(workloads, f)) as fh:
        lines = [l for l in fh if not l.startswith("#")]
    for r in csv.DictReader(lines):
        net = r.get("network")
        if net is None and f.startswith("conv_"):
            net = f[len("conv_"):-len(".csv")]
        rows[r["name"]] = (net or "", r["tier"])

VERIFIED = re.compile(r"verified rel-L2 ([0-9.e+-]+) <= ([0-9.e+-]+) at (\d+) of (\d+) positions")
KEEP_BS = {"conv": {"16", "32"}, "gemm": {"16", "64"}}

out, context = [], None
for fam, path in (("gemm", "gemm_default.json.gz"), ("conv", "conv_default.json.gz")):
    with gzip.open(os.path.join(root, "reports", "h100", path)) as fh:
        d = json.load(fh)
    context = context or d["context"]
    for b in d["benchmarks"]:
        parts = b["name"].split("/")
        workload = parts[3]
        keys = dict(p.split(":", 1) for p in parts[4:] if ":" in p)
        if rows.get(workload, ("", ""))[1] != "smoke" or keys.get("dt") not in ("f32", "bf16"):
            continue
        if "bs" in keys and keys["bs"] not in KEEP_BS[fam]:
            continue
        result = {"workload": workload}
        if rows[workload][0]:
            result["network"] = rows[workload][0]
        m = VERIFIED.search(b.get("label", ""))
        if m:
            result["verification"] = {
                "disposition": "verified", "error": float(m.group(1)),
                "tolerance": float(m.group(2)), "metric": "rel_l2", "checked": int(m.group(3)),
                "of": int(m.group(4)), "detail": m.group(0)}
        b["dlbench"] = result
        out.append(b)

context = dict(context, dlbench_tier="smoke (cut from the default tier)")
with open(os.path.join(os.path.dirname(__file__), "data", "smoke_h100.json"), "w") as fh:
    fh.write('{\n "context": ' + json.dumps(context) + ',\n "benchmarks": [\n')
    fh.write(",\n".join("  " + json.dumps(b) for b in out))
    fh.write("\n ]\n}\n")
print(len(out), "benchmarks")
