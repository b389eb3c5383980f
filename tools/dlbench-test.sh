#!/usr/bin/env bash
# Builds dlbench (Release, every backend that is present, GPU code compiled when the CUDA toolkit
# is) and runs the tests with ctest. GPU tests (label gpu) skip themselves without a device.
#   tools/dlbench-test.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash tools/install-deps.sh
jobs=$(nproc)
cmake --preset release "$@"
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"
