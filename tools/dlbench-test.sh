#!/usr/bin/env bash
# Builds dlbench (Release, every backend that is present, GPU code compiled when the CUDA toolkit
# is) and runs the tests with ctest. GPU tests (label gpu) skip themselves without a device.
#   tools/dlbench-test.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=$(nproc)
times=()
step() {  # step NAME COMMAND...: runs it and keeps its wall time for the closing line
  local start=$SECONDS
  "${@:2}"
  times+=("$1 $((SECONDS - start)) s")
}
step install-deps bash tools/install-deps.sh
step configure cmake --preset release "$@"
step build cmake --build --preset release -j "$jobs"
step ctest ctest --preset release -j "$jobs"
(IFS=,; echo "dlbench-test: ${times[*]}" | sed 's/,/, /g')
