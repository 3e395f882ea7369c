#!/bin/bash
# Host scheduling on the GPU machine's cores (issue 16): metg for host
# tasks and host kernels beside OpenMP, task_overhead, and host kernels
# with fewer threads per host device.
# From the root, after build-gpu is built:
#     source .devkit/setup.sh && tests/gpu/cpu_sched.sh OUTDIR
set -u
out=$1
mkdir -p "$out"
b=build-gpu
nproc
echo "=== task_overhead"
timeout 100 $b/bench/task_overhead --reps 15 2>&1 | grep -E "host tasks|pthread"
echo "=== metg host tasks"
timeout 200 $b/bench/metg --max-us 1000 --min-us 2 --patterns stencil,nearest \
    --variants first,relaunch,openmp 2>&1 | grep -vE "^# (sweep|point)" | tail -30
echo "=== metg host kernels"
timeout 200 $b/bench/metg --max-us 1000 --min-us 16 --patterns stencil,trivial \
    --variants kernels,openmp 2>&1 | grep -vE "^# (sweep|point)" | tail -24
for th in 4 8 15; do
    echo "=== host kernels stencil 1 ms, WEFT_HOST_THREADS=$th"
    WEFT_HOST_THREADS=$th timeout 60 $b/bench/metg --max-us 1000 --min-us 1000 \
        --steps 40 --reps 2 --patterns stencil --variants kernels 2>&1 |
        grep -E "^(efficiency|cpu|in flight)"
done
