#!/usr/bin/env bash
# CI regression gate: compares this run's benchmark JSON with the stored baseline, prints the
# Markdown report, appends it to the GitHub job summary ($GITHUB_STEP_SUMMARY) when set, and exits
# with dlbench-report's code: 0 no significant regression, 3 a significant regression beyond the
# threshold, 1 bad input or usage.
#
#   tools/ci-compare.sh [--allow-missing-base] BASE NEW [compare options, e.g. --threshold 5%]
#
# BASE and NEW are JSON files or folders of them. DLBENCH_REPORT names the binary (default: the
# one on PATH, else build/release/ or build/). CI_COMPARE_OUT keeps the Markdown (default:
# a temporary file).
set -uo pipefail

allow_missing=0
if [[ "${1:-}" == "--allow-missing-base" ]]; then
  allow_missing=1
  shift
fi
if [[ $# -lt 2 ]]; then
  echo "usage: $0 [--allow-missing-base] BASE NEW [compare options]" >&2
  exit 1
fi
base=$1
new=$2
shift 2

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exe=${DLBENCH_REPORT:-}
if [[ -z "$exe" ]]; then
  exe=dlbench-report
  for candidate in "$here/../build/release/tools/report/dlbench-report" \
                   "$here/../build/tools/report/dlbench-report"; do
    if ! command -v dlbench-report >/dev/null 2>&1 && [[ -x "$candidate" ]]; then
      exe=$candidate
      break
    fi
  done
fi

summary() {
  if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then cat >>"$GITHUB_STEP_SUMMARY"; else cat >/dev/null; fi
}

if [[ ! -e "$base" && $allow_missing -eq 1 ]]; then
  msg="No baseline at \`$base\` yet: nothing to compare against (the gate passes)."
  echo "$msg"
  printf '# dlbench compare\n\n%s\n' "$msg" | summary
  exit 0
fi

out=${CI_COMPARE_OUT:-}
tmp=""
if [[ -z "$out" ]]; then
  tmp=$(mktemp)
  out=$tmp
fi
# The job summary holds 1 MiB: unchanged rows are left out unless CI_COMPARE_ALL=1.
only=(--only-changes)
[[ "${CI_COMPARE_ALL:-0}" == 1 ]] && only=()
"$exe" compare "$base" "$new" --format md -o "$out" "${only[@]}" "$@"
rc=$?
if [[ -s "$out" && $rc -ne 1 ]]; then
  cat "$out"
  summary <"$out"
fi
[[ -n "$tmp" ]] && rm -f "$tmp"
case $rc in
  0) echo "dlbench: no significant regression" ;;
  3) echo "::error::dlbench: significant performance regression (see the job summary)" ;;
  *) echo "::error::dlbench-report compare failed (exit $rc)"
     printf '# dlbench compare\n\ndlbench-report failed with exit code %s; see the log.\n' "$rc" | summary ;;
esac
exit $rc
