#!/bin/bash
# A/B on one GPU machine, in one call: this tree's bench/metg and
# bench/task_overhead against an older tree's, alternated, with every core
# (the older tree unpacked, untracked, in _old/ by the caller:
# `git archive REV | tar -x -C _old`; TREES, where set, names more such
# folders, each built and run in turn). From the root:
#     source .devkit/setup.sh && tests/gpu/ab_30.sh OUTDIR [ROUNDS]
set -u
out=$1 rounds=${2:-2}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nproc
tests/gpu/mpi_20.sh "$out/m" build 2>&1 | tail -1
builds=""
for t in ${TREES:-_old}; do
    (cmake -S $t -B build$t -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF \
        -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_MPI=OFF >/dev/null &&
        cmake --build build$t -j 16 --target metg task_overhead >/dev/null) ||
        echo "$t: build failed"
    builds="$builds build$t"
done
for r in $(seq "$rounds"); do
    for b in $builds build-gpu; do
        echo "=== round $r: $b"
        timeout 60 $b/bench/task_overhead --reps 7 2>&1 |
            grep -E "host nearest (instantiate|first launch|relaunch):"
        timeout ${METG_S:-150} $b/bench/metg --patterns stencil,nearest \
            --variants relaunch,first,openmp --max-us 1000 --min-us 2 --reps 3 2>&1 |
            grep -E "^metg|^peak|instantiate .* of|^# the peak"
    done
done
