#!/usr/bin/env bash
# tools/ci-compare.sh as the workflow calls it: exit codes propagate, the Markdown lands in the job
# summary.  Usage: ci_compare_test.sh DLBENCH_REPORT CI_COMPARE_SH DATA_DIR
set -u
exe=$1 script=$2 data=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export DLBENCH_REPORT=$exe

GITHUB_STEP_SUMMARY=$tmp/summary.md bash "$script" "$data/compare_base.json" "$data/compare_new.json" >"$tmp/log"
rc=$?
[[ $rc -eq 3 ]] || fail "regression: exit $rc, want 3"
grep -q '^# dlbench compare' "$tmp/summary.md" || fail "no Markdown in the job summary"
grep -q 'REGRESSION' "$tmp/summary.md" || fail "the summary does not say REGRESSION"
grep -q '::error::' "$tmp/log" || fail "no ::error:: annotation"
# The log names each regressed case whole on its verdict's line (the tables split names into parts).
grep -q '^# slower .*: gemm/gpu/cublaslt/square\.1024/dt:f32/manual_time$' "$tmp/log" ||
  fail "no line in the log with the slower case's verdict and full name"

GITHUB_STEP_SUMMARY=$tmp/same.md bash "$script" "$data/compare_base.json" "$data/compare_base.json" --threshold 5% >"$tmp/log2"
rc=$?
[[ $rc -eq 0 ]] || fail "same files: exit $rc, want 0"
grep -q '\*\*OK\*\*' "$tmp/same.md" || fail "the summary does not say OK"

bash "$script" "$tmp/missing.json" "$data/compare_new.json" >"$tmp/log3" 2>&1
rc=$?
[[ $rc -eq 1 ]] || fail "missing base: exit $rc, want 1"
GITHUB_STEP_SUMMARY=$tmp/nobase.md bash "$script" --allow-missing-base "$tmp/missing.json" "$data/compare_new.json" >/dev/null
rc=$?
[[ $rc -eq 0 ]] || fail "--allow-missing-base: exit $rc, want 0"
grep -q 'No baseline' "$tmp/nobase.md" || fail "no 'No baseline' note"

mkdir "$tmp/base" "$tmp/new"
cp "$data/compare_base.json" "$tmp/base/gemm.json"
cp "$data/compare_new.json" "$tmp/new/gemm.json"
bash "$script" "$tmp/base" "$tmp/new" >/dev/null
rc=$?
[[ $rc -eq 3 ]] || fail "folders: exit $rc, want 3"
echo "ci-compare.sh: all checks passed"
