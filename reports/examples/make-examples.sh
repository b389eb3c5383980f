#!/usr/bin/env bash
# How the example reports in this folder were made: a real run on the GPU host (H100, 16 cores),
# small enough for ten minutes: GEMMs on both devices and one ResNet-18 convolution swept over
# batch sizes on both devices, 5 repetitions each; then every dlbench-report output.
#   OUT=<folder> bash reports/examples/make-examples.sh
set -uo pipefail
out=${OUT:?set OUT}
# The GPU host's staged dependencies (see .gpu-deps/env.sh), when unpacked.
if [[ -d /opt/deps/usr ]]; then
  export CMAKE_PREFIX_PATH="/opt/deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="/opt/deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CPATH="/opt/deps/usr/include${CPATH:+:$CPATH}"
  export PATH="/usr/local/cuda/bin:$PATH" CUDAARCHS=90
fi
b=/tmp/build-examples
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >$out/configure.log 2>&1 ||
  { tail -30 $out/configure.log; exit 1; }
cmake --build $b -j "$(nproc)" --target bench_gemm bench_conv dlbench-report >$out/build.log 2>&1 ||
  { grep -E "error|FAILED" -A3 $out/build.log | head -40; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
common=(--dlb_device=all --benchmark_repetitions=5 --benchmark_out_format=json)
timeout 200 $b/benchmarks/bench_gemm "${common[@]}" \
  --benchmark_filter='square\.(1024|2048|4096)/dt:(f32|bf16)' \
  --benchmark_out=$out/gemm.json >$out/gemm.log 2>&1
echo "bench_gemm rc=$?"
timeout 240 $b/benchmarks/bench_conv "${common[@]}" --dlb_batch_sizes=8,16,32,64,128,256 \
  --benchmark_filter='resnet18.layer1.conv3x3/.*pass:fwd' \
  --benchmark_out=$out/conv.json >$out/conv.log 2>&1
echo "bench_conv rc=$?"
r=$b/tools/report/dlbench-report
$r report $out/gemm.json $out/conv.json --out-dir $out
for f in md html csv json; do
  $r summary $out/gemm.json $out/conv.json -o $out/summary.$f
  $r speedup $out/gemm.json $out/conv.json -o $out/speedup.$f
  $r sweep $out/conv.json -o $out/sweep.$f
done
ls -la $out
