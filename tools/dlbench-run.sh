#!/usr/bin/env bash
# The main job: builds dlbench, runs every benchmark family at the default tier on this machine's
# CPU and, if present, its GPU, writes reports/latest/<family>.json, then reports/latest/report.md
# and report.html (findings first, then each family's tables), and prints their paths.
#   tools/dlbench-run.sh [--dlb_* and --benchmark_* flags passed to every binary]
# DLB_TIER=smoke|default|full (and every other DLB_* variable) works as the flags do.
# DLB_BUDGET=MIN (or --dlb_budget=MIN): the minutes the whole job's benchmarks may take, shared
# among the families (what one leaves goes to the next); the default tier's is 15, off for none.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash tools/install-deps.sh --build
# Only the configure summary: which backends are on, and why the others are off.
cmake --preset release | awk '/^-- dlbench /{p=1} /^-- Configuring done/{p=0} p'
# Only what this job runs (the benchmark binaries, dlbench-report, dlbench-dataset): the tests are
# tools/dlbench-test.sh's.
cmake --build --preset release -j "$(nproc)" --target dlbench-main

tier=${DLB_TIER:-default}
budget=${DLB_BUDGET:-}
for a in "$@"; do
  case $a in
    --dlb_tier=*) tier=${a#--dlb_tier=} ;;
    --dlb_budget=*) budget=${a#--dlb_budget=} ;;
  esac
done
if [[ -z $budget ]]; then
  if [[ $tier == default ]]; then budget=15; else budget=off; fi
fi
if [[ $budget != off && $budget != 0 ]] &&
   ! awk -v b="$budget" 'BEGIN { exit !(b + 0 > 0 && b ~ /^[0-9.]+$/) }'; then
  echo "dlbench: DLB_BUDGET/--dlb_budget=$budget: expects a positive number of minutes, or off" >&2
  exit 2
fi

out=reports/latest
mkdir -p "$out"
bin=build/release/benchmarks
# train_native: the training family's native MLP step, a binary of its own (benchmarks/CMakeLists.txt).
# comm: the collectives over this host's GPUs in one process (mpirun for one process per GPU: README).
# dataload: input pipelines on a dataset generated once into ~/.cache/dlbench (DLB_DATA=DIR for yours).
families=(gemm conv attn infer train train_native dataload comm)
# Each family's share of the budget, by what its default tier takes on a 2-core CPU-only machine
# and on the H100 host (README: gemm 2.5 / 3, conv 1.5 / 3.4, attn 0.6 / 1, train 5 / 3 min, the
# rest well under a minute), so that no family's share is short of its tier on either; what a
# family leaves goes to the ones after it.
declare -A weight=([gemm]=4 [conv]=4 [attn]=1 [infer]=1 [train]=5 [train_native]=1 [dataload]=1 [comm]=1)
start=$(date +%s)
times=""
timed_out=()
for i in "${!families[@]}"; do
  family=${families[$i]}
  [[ -x "$bin/bench_$family" ]] || { echo "dlbench: bench_$family not built, skipped"; continue; }
  extra=()
  if [[ $budget != off && $budget != 0 ]]; then
    left_weights=0
    for f in "${families[@]:$i}"; do left_weights=$((left_weights + weight[$f])); done
    share=$(awk -v b="$budget" -v s="$(($(date +%s) - start))" -v w="${weight[$family]}" \
      -v all="$left_weights" 'BEGIN { m = (b * 60 - s) / 60 * w / all; printf "%.3f", (m > 0.01 ? m : 0.01) }')
    extra=(--dlb_budget="$share")
  fi
  # Write to a temporary file and rename: an interrupted run leaves no half-written JSON.
  tmp=$(mktemp "$out/.$family.XXXXXX")
  trap 'rm -f "$tmp"' EXIT
  echo "dlbench: running bench_$family (tier $tier${extra:+, budget ${extra[0]#--dlb_budget=} min})"
  t0=$(date +%s)
  rc=0
  "$bin/bench_$family" --benchmark_out="$tmp" --benchmark_out_format=json "$@" "${extra[@]}" || rc=$?
  # 124: a case ran past --dlb_case_timeout (DLB_CASE_TIMEOUT); the binary wrote the cases before
  # it and that one ("timed out: ...") whole: keep them and go on with the next family. Any other
  # failure stops the job, as before.
  if ((rc == 124)); then
    echo "dlbench: bench_$family: a case timed out (--dlb_case_timeout); its finished cases are kept, going on"
    timed_out+=("$family")
  elif ((rc != 0)); then
    exit "$rc"
  fi
  t=$(($(date +%s) - t0))
  times+="${times:+, }$family $((t / 60)):$(printf %02d $((t % 60)))"
  chmod 644 "$tmp"  # mktemp makes it private; results are for sharing
  mv "$tmp" "$out/$family.json"
  trap - EXIT
done
total=$(($(date +%s) - start))
echo "dlbench: benchmark time $((total / 60)):$(printf %02d $((total % 60))) ($times)"

jsons=()
for f in "$out"/*.json; do
  # A family with no case on this machine (the collectives without a GPU) wrote its context and
  # no case: nothing to report.
  if grep -q '"benchmarks": \[\]' "$f"; then echo "dlbench: $(basename "$f" .json): no case ran here"; continue; fi
  jsons+=("$f")
done
build/release/tools/report/dlbench-report report "${jsons[@]}" --out-dir "$out" >/dev/null
echo "dlbench: results in:"
for f in "${jsons[@]}" "$out/report.md" "$out/report.html"; do echo "  $root/$f"; done
if ((${#timed_out[@]} > 0)); then
  echo "dlbench: timed out (--dlb_case_timeout), the rest of the family not run: ${timed_out[*]}" >&2
  exit 1
fi
