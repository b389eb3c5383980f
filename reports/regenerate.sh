#!/usr/bin/env bash
# Rewrites the generated reports under reports/ with the dlbench-report given, e.g. after a change
# of the report's layout:
#   reports/regenerate.sh build/release/tools/report/dlbench-report \
#                         build/release/tests/tools/report_perfgen
# h100/report.md comes from a test fixture in the tree. The examples' inputs (raw Google Benchmark
# JSON, 0.9 MB) left the tree and are read from the repository's history at commit 8be1521, so this
# needs a clone with that commit. Exit codes 3 (a regression found) are what the compare examples
# show, not failures.
set -uo pipefail
exe=$(realpath "${1:?usage: $0 DLBENCH_REPORT REPORT_PERFGEN}")
perfgen=$(realpath "${2:?usage: $0 DLBENCH_REPORT REPORT_PERFGEN}")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
inputs=8be1521
run() { "$@"; local rc=$?; [[ $rc -eq 0 || $rc -eq 3 ]] || { echo "failed ($rc): $*" >&2; exit 1; }; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each input under its own name in a scratch folder, so the reports name it as before.
from_history() {
  local dir=$1; shift
  mkdir -p "$tmp/$dir"
  for f in "$@"; do
    git -C "$root" show "$inputs:reports/examples/$dir/$f" >"$tmp/$dir/$f" ||
      { echo "cannot read $f at $inputs (a shallow clone?)" >&2; exit 1; }
  done
}

# Its input is a test fixture; run beside it so the report names it plainly.
cd "$root/tests/tools/report/data"
run "$exe" report smoke_h100.json --out-dir "$tmp/h100-report" >/dev/null
cp "$tmp/h100-report/report.md" "$here/h100/report.md"

from_history h100 gemm.json conv.json
cd "$tmp/h100"
run "$exe" report gemm.json conv.json --out-dir . >/dev/null
cp report.md "$here/examples/h100/report.md"
run "$exe" speedup gemm.json conv.json -o "$here/examples/h100/speedup.md"
run "$exe" speedup gemm.json conv.json -o "$here/examples/h100/speedup.html"
run "$exe" sweep gemm.json conv.json -o "$here/examples/h100/sweep.md"

from_history cpu-2core gemm-base.json gemm-rerun.json gemm-1thread.json
cd "$tmp/cpu-2core"
for new in 1thread rerun; do
  run "$exe" compare gemm-base.json "gemm-$new.json" --as-compare-py \
    -o "$here/examples/cpu-2core/compare-$new.md"
done

cd "$root"
run "$exe" compare tests/tools/report/data/compare_base.json \
  tests/tools/report/data/compare_new.json -o "$here/examples/synthetic/compare.md"
db=$tmp/history.sqlite
run "$perfgen" history "$db" 16 12
run "$exe" history show --db "$db" --last 16 -o "$here/examples/synthetic/history-show.md"
run "$exe" history check --db "$db" -o "$here/examples/synthetic/history-check.md"
