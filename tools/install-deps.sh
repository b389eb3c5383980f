#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages dlbench builds and tests with. Idempotent: installs only
# what is missing. As root it runs apt-get; otherwise it prints the exact command and exits 1
# when something is missing.
#   tools/install-deps.sh            # build + tests (chromium renders the HTML report in a test)
#   tools/install-deps.sh --build    # only what the build needs
# CUDA, cuDNN and cuBLAS come from NVIDIA's toolkit (/usr/local/cuda), not from here: without
# them the GPU backend is off and configure says so.
set -euo pipefail

packages=(build-essential cmake ninja-build git pkg-config libbenchmark-dev googletest
          libgtest-dev nlohmann-json3-dev libcli11-dev libsqlite3-dev libdnnl-dev)
if [[ "${1:-}" != "--build" ]]; then
  packages+=(chromium)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages; run as root:  apt-get update && $cmd" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
