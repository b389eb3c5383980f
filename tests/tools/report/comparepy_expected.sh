#!/usr/bin/env bash
# Writes data/gbench/expected/<pair>.json: what Google Benchmark's own tools/compare.py reports
# (its --dump_to_json output) for each input pair the golden tests use. report_comparepy_test
# checks DifferenceReport against these files.
#   tests/tools/report/comparepy_expected.sh /path/to/google/benchmark/tools
# Needs python3 with numpy and scipy (Debian: python3-scipy).
set -euo pipefail
tools=${1:?usage: $0 GOOGLE_BENCHMARK_TOOLS_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
data=$here/data
out=$data/gbench/expected
mkdir -p "$out"
pairs=(
  "test1 gbench/test1_run1.json gbench/test1_run2.json"
  "test3 gbench/test3_run0.json gbench/test3_run1.json"
  "test4 gbench/test4_run0.json gbench/test4_run1.json"
  "test5 gbench/test5_run0.json gbench/test5_run1.json"
  "aggregates_only aggregates_only_base.json aggregates_only_new.json"
  "compare compare_base.json compare_new.json"
  "dlbench_v2 dlbench_v2_base.json dlbench_v2_new.json"
)
for p in "${pairs[@]}"; do
  read -r name base new <<<"$p"
  python3 "$tools/compare.py" --no-color -d "$out/$name.json" benchmarks "$data/$base" "$data/$new" \
    >/dev/null
  echo "$out/$name.json"
done
