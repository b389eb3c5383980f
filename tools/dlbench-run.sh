#!/usr/bin/env bash
# The main job: builds dlbench, runs every benchmark family at the default tier on this machine's
# CPU and, if present, its GPU, writes reports/latest/<family>.json, then reports/latest/report.md
# and report.html (summary, CPU-vs-GPU speedups, batch-size sweeps), and prints their paths.
#   tools/dlbench-run.sh [--dlb_* and --benchmark_* flags passed to every binary]
# DLB_TIER=smoke|default|full (and every other DLB_* variable) works as the flags do.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash tools/install-deps.sh --build
# Only the configure summary: which backends are on, and why the others are off.
cmake --preset release | awk '/^-- dlbench /{p=1} /^-- Configuring done/{p=0} p'
# Only what this job runs (the benchmark binaries, dlbench-report, dlbench-dataset): the tests are
# tools/dlbench-test.sh's.
cmake --build --preset release -j "$(nproc)" --target dlbench-main

out=reports/latest
mkdir -p "$out"
bin=build/release/benchmarks
# train_native: the training family's native MLP step, a binary of its own (benchmarks/CMakeLists.txt).
# comm: the collectives over this host's GPUs in one process (mpirun for one process per GPU: README).
# dataload: input pipelines on a dataset generated once into ~/.cache/dlbench (DLB_DATA=DIR for yours).
for family in gemm conv train train_native dataload comm; do
  [[ -x "$bin/bench_$family" ]] || { echo "dlbench: bench_$family not built, skipped"; continue; }
  # Write to a temporary file and rename: an interrupted run leaves no half-written JSON.
  tmp=$(mktemp "$out/.$family.XXXXXX")
  trap 'rm -f "$tmp"' EXIT
  echo "dlbench: running bench_$family (tier ${DLB_TIER:-default})"
  "$bin/bench_$family" --benchmark_out="$tmp" --benchmark_out_format=json "$@"
  chmod 644 "$tmp"  # mktemp makes it private; results are for sharing
  mv "$tmp" "$out/$family.json"
  trap - EXIT
done

jsons=("$out"/*.json)
build/release/tools/report/dlbench-report report "${jsons[@]}" --out-dir "$out" >/dev/null
echo "dlbench: results in:"
for f in "${jsons[@]}" "$out/report.md" "$out/report.html"; do echo "  $root/$f"; done
