#!/bin/bash
# Issue 16 on one GPU machine, in one call, each stage's output in its own
# file under OUTDIR: build-gpu (this tree); the CUDA tests of the scheduler
# (cuda); bench/task_overhead's op-by-op launches against an older tree in
# _old/ (`git archive REV | tar -x -C _old`), alternated (lanes); bench/metg
# --latency on every core: hand-off latency and task time at each task size
# (latency), also for compile-time variants of src/base/idle.h named
# in VARIANTS, each built apart (e.g. "spin50=-DWEFT__IDLE_SPIN_NS=50000"),
# and for older trees unpacked in the folders TREES names (e.g. "_old").
# From the root:
#     source .devkit/setup.sh && tests/gpu/latency_31.sh OUTDIR [STAGES]
set -u
out=$1 stages=${2:-"build cuda lanes latency"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
nproc
if has build; then
    tests/gpu/mpi_20.sh "$out/m" build >"$out/build.log" 2>&1
    tail -3 "$out/build.log"
fi
if has cuda; then
    timeout 240 ctest --test-dir build-gpu -R "cuda|sched_|exec" --timeout 120 \
        --output-on-failure >"$out/cuda.log" 2>&1
    grep -E "tests passed|Failed|Timeout|Not Run" "$out/cuda.log" | tail -20
fi
if has lanes; then
    (cmake -S _old -B build_old -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_BUILD_TESTS=OFF \
        -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_MPI=OFF >/dev/null &&
        cmake --build build_old -j 16 --target task_overhead >/dev/null) ||
        echo "_old: build failed"
    for r in 1 2 3; do
        for b in build_old build-gpu; do
            echo "=== round $r: $b" >>"$out/lanes.log"
            timeout 60 $b/bench/task_overhead --reps 5 --nodes 10000 >>"$out/lanes.log" 2>&1
        done
    done
    grep -E "===|(first launch|op by op):" "$out/lanes.log" | grep -v "/ target"
fi
if has latency; then
    builds="build-gpu"
    for v in ${VARIANTS:-}; do
        name=${v%%=*} flags=${v#*=}
        cmake -S . -B build-v-$name -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_BUILD_TESTS=OFF \
            -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_MPI=OFF \
            "-DCMAKE_C_FLAGS=$flags" >/dev/null 2>&1 &&
            cmake --build build-v-$name -j 16 --target metg >/dev/null 2>&1 ||
            echo "$name: build failed"
        builds="$builds build-v-$name"
    done
    for t in ${TREES:-}; do
        (cmake -S $t -B build$t -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_BUILD_TESTS=OFF \
            -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_MPI=OFF >/dev/null &&
            cmake --build build$t -j 16 --target metg >/dev/null) || echo "$t: build failed"
        builds="build$t $builds"
    done
    for r in $(seq "${ROUNDS:-1}"); do
        for b in $builds; do
            f="$out/latency-$b-$r.log"
            timeout ${METG_S:-200} $b/bench/metg --latency --patterns ${MPAT:-nearest,stencil} \
                --variants ${MVAR:-relaunch,first,openmp} --max-us ${MAXUS:-200} \
                --min-us 2 --reps 3 >"$f" 2>&1
            echo "=== $b round $r"
            grep -E "^metg|^peak" "$f"
        done
    done
fi
