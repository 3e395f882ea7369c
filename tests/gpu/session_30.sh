#!/bin/bash
# One device call of the 2026-11-27 (8) session, on the 2x H100 machine's
# 32 cores: build, then metg's stencil and nearest (first launch with its
# instantiate's share, relaunch, OpenMP) with every sweep point shown, and
# where perf exists, profiles of task_overhead and of metg's first launch.
# From the root:
#     source .devkit/setup.sh && tests/gpu/session_30.sh OUTDIR [STAGES]
# STAGES (default "build metg perf").
set -u
out=$1 stages=${2:-"build metg perf"}
mkdir -p "$out"
b=build-gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
nproc
if has build; then
    tests/gpu/mpi_20.sh "$out/m" build 2>&1 | tail -1
fi
if has overhead; then
    echo "=== task_overhead"
    timeout 60 $b/bench/task_overhead --reps 9 2>&1 |
        grep -E "pthread queue:|host tasks relaunch:|host nearest (instantiate|first|relaunch:)"
fi
if has metg; then
    echo "=== metg, every core"
    timeout ${METG_S:-240} $b/bench/metg --patterns ${PATTERNS:-stencil,nearest} \
        --variants ${VARIANTS:-relaunch,first,openmp} --max-us ${MAX_US:-10000} \
        --min-us 2 --reps 3 2>&1
fi
if has perf; then
    if ! command -v perf >/dev/null; then
        echo "perf: not on this machine"
    else
        echo "=== perf: metg nearest first launch at 20 us"
        perf record -F 999 -g -o "$out/metg.perf" $b/bench/metg --patterns nearest \
            --variants first --max-us 20 --min-us 20 --reps 3 2>&1 | grep "^# nearest"
        perf report -i "$out/metg.perf" --no-children --sort symbol 2>/dev/null |
            grep -E "^ +[0-9.]+%" | head -40
    fi
fi
