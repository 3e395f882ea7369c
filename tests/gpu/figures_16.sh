#!/bin/bash
# Issue 16's figures on one GPU machine, in one call or several (STAGES),
# each stage's output in its own file under OUTDIR and its figures on
# standard output. From the root:
#     source .devkit/setup.sh && tests/gpu/figures_16.sh OUTDIR [STAGES]
# STAGES (default "build cuda metg tasks gpu"; also overlapab, below):
#   build  build-gpu, as tests/gpu/mpi_20.sh builds it (CUDA, tests);
#   cuda   the scheduler's and the CUDA driver's CTest cases;
#   metg   bench/metg, every pattern and variant (OpenMP beside weft), tasks
#          from 1 ms down to 1 us, ROUNDS times (default 2);
#   tasks  bench/task_overhead (10,000 independent empty host tasks:
#          issue 16's 0.1 us a task; host nearest; host-driver kernels'
#          first and second launch, issue 6's 1.5 us a node);
#   gpu    bench/launch_overhead and bench/overlap (first launch / steady).
set -u
out=$1 stages=${2:-"build cuda metg tasks gpu"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
b=build-gpu
echo "$(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null || echo "?")"
if has build; then
    tests/gpu/mpi_20.sh "$out/m" build >"$out/build.log" 2>&1
    tail -3 "$out/build.log"
fi
if has cuda; then
    timeout 300 ctest --test-dir $b -R "cuda|sched_|exec|graph" --timeout 120 \
        --output-on-failure >"$out/cuda.log" 2>&1
    grep -E "tests passed|Failed|Timeout|Not Run" "$out/cuda.log" | tail -20
fi
if has metg; then
    for r in $(seq "${ROUNDS:-2}"); do
        timeout 280 $b/bench/metg --max-us 1000 --min-us ${MINUS:-1} --reps 3 >"$out/metg-$r.log" 2>&1
        echo "=== metg round $r"
        grep -E "^(metg|efficiency .*@1ms|peak)" "$out/metg-$r.log"
    done
fi
if has tasks; then
    timeout 120 $b/bench/task_overhead --reps 9 >"$out/tasks.log" 2>&1
    grep -E "^host (tasks|nearest) (instantiate|first launch|relaunch)(:| / 0.1)|^(independent|chained) (first|second) launch:" "$out/tasks.log"
fi
if has gpu; then
    timeout 120 $b/bench/launch_overhead >"$out/launch.log" 2>&1
    grep -E "chain|fan" "$out/launch.log" | head -20
    timeout 200 $b/bench/overlap --reps 3 >"$out/overlap.log" 2>&1
    grep -E "first|steady|hand|weft" "$out/overlap.log" | head -20
fi
# overlapab: bench/overlap of this tree against the older trees in TREES
# (`git archive REV | tar -x -C _old`), alternated ROUNDS times.
if has overlapab; then
    builds=$b
    for t in ${TREES:-}; do
        (cmake -S $t -B build$t -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_BUILD_TESTS=OFF \
            -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_MPI=OFF >/dev/null &&
            cmake --build build$t -j "$(nproc)" --target overlap >/dev/null) || echo "$t: build failed"
        builds="build$t $builds"
    done
    for r in $(seq "${ROUNDS:-2}"); do
        for x in $builds; do
            echo "=== round $r: $x" >>"$out/overlapab.log"
            timeout 120 $x/bench/overlap --reps 3 >>"$out/overlapab.log" 2>&1
        done
    done
    grep -E "===|first/steady|^weft pageable:|^weft:" "$out/overlapab.log"
fi
