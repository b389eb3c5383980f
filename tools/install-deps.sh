#!/usr/bin/env bash
# Installs the packages dlbench builds and tests with on Debian 12 and Ubuntu 24.04, from a
# minimal install on. Idempotent: installs only what is missing. As root it runs apt-get;
# otherwise it prints the exact command and exits 1 when something is missing.
#   tools/install-deps.sh            # build + tests (chromium renders the HTML report in a test)
#   tools/install-deps.sh --build    # only what the build needs
# CUDA, cuDNN and cuBLAS come from NVIDIA's toolkit (/usr/local/cuda), not from here: without
# them the GPU backend is off and configure says so.
set -euo pipefail

mode=${1:-all}
case $mode in
  all|--build) ;;
  *) echo "usage: tools/install-deps.sh [--build]" >&2; exit 2 ;;
esac

id=unknown version=""
if [[ -r /etc/os-release ]]; then
  id=$(. /etc/os-release && echo "${ID:-unknown}")
  version=$(. /etc/os-release && echo "${VERSION_ID:-}")
fi
case "$id:$version" in
  debian:12|ubuntu:24.04) ;;
  *) echo "install-deps: $id $version is neither Debian 12 nor Ubuntu 24.04; trying their package names" ;;
esac

# ca-certificates and git: a minimal install has neither (cloning, the build's git revision).
# ocl-icd-opencl-dev + opencl-headers: oneDNN's CMake config asks for OpenCL, and libdnnl-dev
# only recommends them. libpq-dev: the history's PostgreSQL store. libtorch-dev: the training-step
# family (Debian 12's LibTorch 1.13 is CPU-only and built on the system oneDNN).
# libturbojpeg0-dev + libpng-dev: the dataset generator (tools/dataset); libjpeg-dev because
# libjpeg-turbo's CMake config names libjpeg.a, which only that package installs (without it the
# config fails to load); python3-skimage ships the photographs the generator starts from (without
# them it makes procedural images). libopenmpi-dev + openmpi-bin: the collectives family's one
# process per GPU (mpirun also runs its two-process tests). zlib1g-dev: dlbench-report reads
# gzip-compressed JSON (libpng-dev pulls it in too, but the report needs it on its own).
packages=(build-essential cmake ninja-build pkg-config git ca-certificates
          libbenchmark-dev googletest libgtest-dev nlohmann-json3-dev libcli11-dev libsqlite3-dev
          zlib1g-dev libpq-dev libdnnl-dev ocl-icd-opencl-dev opencl-headers libtorch-dev
          libturbojpeg0-dev libjpeg-dev libpng-dev python3-skimage libopenmpi-dev openmpi-bin)
if [[ "$mode" != "--build" ]]; then
  # The PostgreSQL history tests start a private server of their own (initdb, pg_ctl).
  packages+=(postgresql python3)  # python3: the layers test (tests/layers)
  if [[ "$id" == ubuntu ]]; then
    # Ubuntu's chromium package is a wrapper around a snap, which does not run in containers.
    echo "install-deps: not installing chromium on Ubuntu (a snap); the HTML rendering test will skip"
  else
    packages+=(chromium)
  fi
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
  echo "install-deps: missing ${missing[*]}" >&2
  echo "install-deps: run as root:  apt-get update && $cmd" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt_install() { apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
# A fresh system has no package lists at all; stale ones can name .debs the mirror no longer
# has: then update and try again.
if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
  apt-get update -qq
  apt_install
elif ! apt_install; then
  echo "install-deps: installing failed; updating the package lists and trying again"
  apt-get update -qq
  apt_install
fi
echo "install-deps: done"
