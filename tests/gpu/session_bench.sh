#!/bin/bash
# The benchmarks of issues 16 and 17 on the GPU machine, in one batch
# (after tests/gpu/session_check.sh built build-gpu). From the root:
#     source .devkit/setup.sh && tests/gpu/session_bench.sh OUTDIR
set -u
out=$1
mkdir -p "$out"
b=build-gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "=== cublas_gemm"
timeout 150 $b/examples/cublas_gemm --n 8192 --tile 2048 --reps 5 2>&1 | tail -14
echo "=== overlap"
timeout 100 $b/bench/overlap 2>&1 | grep -E "first|pageable|^weft|hand"
echo "=== task_overhead"
timeout 100 $b/bench/task_overhead --reps 15 2>&1 | grep -E "host tasks|pthread|independent relaunch|chained relaunch"
echo "=== metg"
timeout 240 $b/bench/metg --max-us 1000 2>&1 | grep -vE "^# (sweep|point)" | tail -40
