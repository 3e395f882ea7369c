#!/bin/bash
# One device call of the 2026-11-27 (6) session, on two GPUs: build, CUDA
# IPC's tests (tests/gpu/mpi_20.sh ipc), the Python package on CUDA
# (tests/gpu/python.sh), mpi_metg with poll tasks, task_overhead and metg
# on every core of the machine beside OpenMP. From the root:
#     source .devkit/setup.sh && tests/gpu/session_29.sh OUTDIR
set -u
out=$1
mkdir -p "$out"
b=build-gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
root=""
[ "$(id -u)" = 0 ] && root="--allow-run-as-root"
nproc
tests/gpu/mpi_20.sh "$out/m" "build ipc" 2>&1 | grep -v "^GPU\|^mpiexec"
echo "=== ctest: hostwork, poll, features, exec on CUDA"
timeout 120 ctest --test-dir $b -R "hostwork|poll_|features_cuda|exec_cuda" --timeout 60 2>&1 |
    grep -E "tests passed|Failed|Timeout"
echo "=== python"
timeout 150 tests/gpu/python.sh $b "$out/py" 2>&1 | grep -E "python|c build|c relaunch|wrappers|passed|FAILED|skipped" | grep -v "^=== " | tail -22
echo "=== mpi_metg, 2 ranks, one host worker each"
WEFT_DEVICES=host WEFT_HOST_WORKERS=1 WEFT_HOST_THREADS=1 timeout 120 \
    mpiexec $root -np 2 --bind-to core $b/bench/mpi_metg 2>&1 | grep -E "metg_50"
echo "=== task_overhead"
timeout 60 $b/bench/task_overhead --reps 9 2>&1 | grep -E "host tasks relaunch|host nearest (instantiate|first|relaunch:)"
echo "=== metg, every core"
timeout ${METG_S:-200} $b/bench/metg --patterns stencil,nearest \
    --variants relaunch,first,openmp --max-us 10000 --min-us 2 --reps 3 2>&1 |
    grep -vE "^# (stencil|nearest) [0-9]"
