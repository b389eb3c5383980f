#!/usr/bin/env python3
"""Prints this folder's collectives table (Markdown) from the files beside it: every row of
comm_<G>gpu_<launch>_r<N>.json.gz beside the same row of nccltests_<G>gpu_<launch>_r<N>.txt.
Per row, the best (lowest) time of each side over the rounds; a row passes when dlbench's time is
within 5% of nccl-tests' or, from 64 MiB up, its busbw is at least 0.98x nccl-tests'.
Arguments, if any, are the rounds to read (`tables.py 3`: round 3 alone); else every round."""
import glob, gzip, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
COLL = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
        "broadcast": "broadcast", "alltoall": "all_to_all"}
DT = {"bfloat16": "bf16", "float": "f32"}
ROUNDS = set(sys.argv[1:])


def nccl_tests():
    rows = {}
    for p in sorted(glob.glob(os.path.join(HERE, "nccltests_*.txt"))):
        g, launch, rnd = re.match(r"nccltests_(\d)gpu_(one|mpi)_r(\d)\.txt", os.path.basename(p)).groups()
        if ROUNDS and rnd not in ROUNDS:
            continue
        coll = dt = None
        for line in open(p):
            m = re.match(r"### nt_\d_\w+?_(all_reduce|all_gather|reduce_scatter|broadcast|alltoall)_(bfloat16|float)", line)
            if m:
                coll, dt = COLL[m.group(1)], DT[m.group(2)]
                continue
            f = line.split()
            if len(f) < 9 or not f[0].isdigit() or coll is None:
                continue
            try:
                oop = (float(f[5]), float(f[7]))
            except ValueError:
                continue
            rows.setdefault((g, launch, coll, dt, int(f[0]), False), []).append(oop)
            try:
                rows.setdefault((g, launch, coll, dt, int(f[0]), True), []).append((float(f[9]), float(f[11])))
            except (ValueError, IndexError):
                pass
    return rows


def dlbench():
    rows = {}
    for p in sorted(glob.glob(os.path.join(HERE, "comm_*gpu_*_r*.json.gz"))):
        g, launch, rnd = re.match(r"comm_(\d)gpu_(one|mpi)_r(\d)\.json\.gz",
                                  os.path.basename(p)).groups()
        if ROUNDS and rnd not in ROUNDS:
            continue
        for e in json.load(gzip.open(p))["benchmarks"]:
            m = re.search(r"nccl/(\w+)\.(\d+)/dt:(\w+)/gpus:\d+(/inplace:1)?", e["name"])
            if not m or e.get("error_occurred"):
                continue
            k = (g, launch, m.group(1), m.group(3), int(m.group(2)), bool(m.group(4)))
            rows.setdefault(k, []).append((e["real_time"], e["busbw_bytes_per_s"] / 1e9, e.get("vs_plain_loop", 0)))
    return rows


def main():
    nt, ours = nccl_tests(), dlbench()
    out, failed, total = [], [], 0
    out.append("| GPUs | launch | collective | dtype | bytes | place | nccl-tests µs | dlbench µs | time ratio | busbw ratio | vs plain loop | within |")
    out.append("| ---: | --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for k in sorted(ours, key=lambda k: (k[0], k[1], k[2], k[3], k[5], k[4])):
        if k not in nt:
            continue
        t_nt = min(x[0] for x in nt[k]); bw_nt = max(x[1] for x in nt[k])
        t_us = min(x[0] for x in ours[k]); bw_us = max(x[1] for x in ours[k])
        plain = "/".join(f"{x[2]:.2f}" for x in ours[k])
        ratio = t_us / t_nt
        bw = bw_us / bw_nt if bw_nt > 0 and bw_us > 0 else float("nan")
        ok = ratio <= 1.05 or (k[4] >= 64 << 20 and bw >= 0.98)
        total += 1
        if not ok:
            failed.append(k)
        bws = f"{bw:.3f}" if bw == bw else "–"  # no busbw at 8 B (nccl-tests prints 0.00)
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {'in' if k[5] else 'out'} | {t_nt:.2f} | {t_us:.2f} | {ratio:.3f} | {bws} | {plain} | {'yes' if ok else '**no**'} |")
    print(f"{total} rows, {total - len(failed)} within, {len(failed)} not")
    print("\n".join(out))


if __name__ == "__main__":
    main()
