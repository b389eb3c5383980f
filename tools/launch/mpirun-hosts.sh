#!/bin/bash
# bench_comm and the data-parallel training step over N hosts x G GPUs with Open MPI's mpirun,
# one process per GPU, each binary writing one JSON (rank 0's):
#   tools/launch/mpirun-hosts.sh HOST1,HOST2[,...] GPUS_PER_HOST [OUT_DIR]
# e.g. tools/launch/mpirun-hosts.sh node1,node2 8 runs `mpirun -np 16 -H node1:8,node2:8 ...`.
# The build (DLBENCH_BUILD, default build/release) must be at the same path on every host;
# DLBENCH_ARGS adds flags to both binaries; MPIRUN_ARGS to mpirun (e.g. --mca btl_tcp_if_include
# eth0).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 HOST1,HOST2[,...] GPUS_PER_HOST [OUT_DIR]" >&2
  exit 2
fi
IFS=, read -r -a hosts <<<"$1"
per_host=$2
case $per_host in '' | *[!0-9]* | 0) echo "$0: GPUS_PER_HOST must be a positive number" >&2; exit 2 ;; esac
out=${3:-dlbench-$(date +%Y%m%d-%H%M%S)}
build=${DLBENCH_BUILD:-build/release}
mkdir -p "$out"
slots=""
for h in "${hosts[@]}"; do slots+="${slots:+,}$h:$per_host"; done
np=$((${#hosts[@]} * per_host))
# --bind-to none: Open MPI binds each process to one core by default, which the GPU monitor's
# thread then shares with the launches (docs/families/comm.md). NVLink multicast stays off.
run=(mpirun -np "$np" -H "$slots" --bind-to none -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH -x PATH
     ${MPIRUN_ARGS:-})
extra=(${DLBENCH_ARGS:-})
"${run[@]}" "$build/benchmarks/bench_comm" --dlb_device=gpu "${extra[@]}" \
  --benchmark_out="$out/comm_gpus${np}.json" --benchmark_out_format=json
"${run[@]}" "$build/benchmarks/bench_train" --dlb_device=gpu "${extra[@]}" \
  --benchmark_out="$out/train_gpus${np}.json" --benchmark_out_format=json
echo "dlbench: $out/comm_gpus${np}.json $out/train_gpus${np}.json"
