#!/bin/bash
# Issue 17's figures and checks on a machine with two GPUs (after
# tests/gpu/session_check.sh built build-gpu): the tiled cuBLAS product on
# one and two GPUs beside cuBLAS on one, the pipeline over both GPUs, and
# the two-device cases of the CUDA tests. From the root:
#     source .devkit/setup.sh && tests/gpu/session_multi.sh OUTDIR
set -u
out=$1
mkdir -p "$out"
b=build-gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi -L
for n in 16384 32768; do
    echo "=== cublas_gemm --n $n"
    timeout 240 $b/examples/cublas_gemm --n $n --tile 2048 --reps 5 2>&1 | tail -13
done
echo "=== overlap --ndev 2"
timeout 120 $b/bench/overlap --ndev 2 2>&1 | grep -E "^weft|hand|first"
echo "=== two-device tests on CUDA"
WEFT_DEVICES=cuda WEFT_TEST_CASE='test_replay_two*' timeout 60 $b/tests/graph/test_exec 2>&1 | grep -E "launch [0-9]|OK|FAIL|skipped"
