#!/usr/bin/env bash
# Rewrites every report in this folder from the JSON beside it (and the two test inputs that
# synthetic/ uses) with the dlbench-report given, e.g. after a change of the report's layout:
#   reports/examples/regenerate.sh build/release/tools/report/dlbench-report \
#                                  build/release/tests/tools/report_perfgen
# Exit codes 3 (a regression found) are what the compare examples show, not failures.
set -uo pipefail
exe=$(realpath "${1:?usage: $0 DLBENCH_REPORT REPORT_PERFGEN}")
perfgen=$(realpath "${2:?usage: $0 DLBENCH_REPORT REPORT_PERFGEN}")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
run() { "$@"; local rc=$?; [[ $rc -eq 0 || $rc -eq 3 ]] || { echo "failed ($rc): $*" >&2; exit 1; }; }

cd "$here/h100"
rm -f report.md report.html
run "$exe" report gemm.json conv.json --out-dir . >/dev/null
for sub in summary speedup sweep; do
  for fmt in md html csv json; do run "$exe" "$sub" gemm.json conv.json -o "$sub.$fmt"; done
done

# Its input is a test fixture; run beside it so the report names it plainly.
cd "$root/tests/tools/report/data"
run "$exe" report smoke_h100.json --out-dir "$here/h100-smoke" >/dev/null

cd "$here/cpu-2core"
for new in 1thread rerun; do
  for fmt in md html; do
    run "$exe" compare gemm-base.json "gemm-$new.json" --as-compare-py -o "compare-$new.$fmt"
  done
done

cd "$root"
for fmt in md html json; do
  run "$exe" compare tests/tools/report/data/compare_base.json \
    tests/tools/report/data/compare_new.json -o "$here/synthetic/compare.$fmt"
done
db=$(mktemp -d)/history.sqlite
run "$perfgen" history "$db" 16 12
run "$exe" history show --db "$db" --last 16 -o "$here/synthetic/history-show.md"
run "$exe" history show --db "$db" --last 16 -o "$here/synthetic/history-show.html"
run "$exe" history check --db "$db" -o "$here/synthetic/history-check.md"
rm -rf "$(dirname "$db")"
