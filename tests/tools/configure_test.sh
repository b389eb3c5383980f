#!/usr/bin/env bash
# Configure never dies inside a dependency's CMake config when its backend is AUTO: a dnnl config
# that fails (message(FATAL_ERROR), or a REQUIRED dependency of its own that is missing, as
# Debian's oneDNN 2.6 without the OpenCL headers) turns oneDNN OFF with the reason in the summary;
# DLBENCH_WITH_ONEDNN=ON stops configure with that reason.
#   configure_test.sh CMAKE SOURCE_DIR
set -u
cmake=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [[ -f "$tmp/log" ]] && sed 's/^/  | /' "$tmp/log"; exit 1; }

mkdir "$tmp/fatal" "$tmp/dep"
echo 'message(FATAL_ERROR "dnnl config broken on purpose")' >"$tmp/fatal/dnnl-config.cmake"
echo 'find_package(DlbNoSuchDependency REQUIRED)' >"$tmp/dep/dnnl-config.cmake"

configure() {  # configure BUILD_DIR ARGS... -> exit status, output in $tmp/log
  "$cmake" -S "$src" -B "$1" -DCMAKE_BUILD_TYPE=Release -DDLBENCH_WITH_CUDA=OFF \
    -DBUILD_TESTING=OFF "${@:2}" >"$tmp/log" 2>&1
}

configure "$tmp/b1" -Ddnnl_DIR="$tmp/fatal" -DDLBENCH_WITH_ONEDNN=AUTO ||
  fail "AUTO with a dnnl config that calls FATAL_ERROR: configure failed"
grep -q '^  oneDNN: OFF (dnnl config broken on purpose (raised at .*/fatal/dnnl-config.cmake:1)' \
  "$tmp/log" || fail "AUTO: the summary does not say oneDNN OFF with the config's error"
grep -q '^  CUDA: OFF (DLBENCH_WITH_CUDA=OFF)' "$tmp/log" || fail "AUTO: no CUDA line in the summary"

configure "$tmp/b1" -Ddnnl_DIR="$tmp/fatal" -DDLBENCH_WITH_ONEDNN=ON &&
  fail "ON with a dnnl config that calls FATAL_ERROR: configure succeeded"
grep -q 'DLBENCH_WITH_ONEDNN=ON but oneDNN cannot be used: dnnl config broken on' "$tmp/log" ||
  fail "ON: the error does not give the reason"

configure "$tmp/b2" -Ddnnl_DIR="$tmp/dep" -DDLBENCH_WITH_ONEDNN=AUTO ||
  fail "AUTO with a dnnl config whose REQUIRED dependency is missing: configure failed"
grep -q '^  oneDNN: OFF (.*DlbNoSuchDependency.*(raised at .*/dep/dnnl-config.cmake:1)' "$tmp/log" ||
  fail "AUTO: the summary does not name the config's missing dependency"

configure "$tmp/b2" -Ddnnl_DIR="$tmp/dep" -DDLBENCH_WITH_ONEDNN=OFF ||
  fail "OFF: configure failed"
grep -q '^  oneDNN: OFF (DLBENCH_WITH_ONEDNN=OFF)' "$tmp/log" || fail "OFF: summary"
grep -q 'Probing dnnl' "$tmp/log" && fail "OFF: the package was probed"

echo "configure_test: 4 configures, all checks passed"
