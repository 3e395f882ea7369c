#!/bin/bash
# Issue 16 on a GPU machine's cores: where a host-only launch of metg's
# nearest pattern spends its time, first launch and relaunch, with perf
# where it can run there (a perf binary and its libraries carried in
# .perfkit/: perf, lib/), and against older trees unpacked in the folders
# TREES names (`git archive REV | tar -x -C _old`), alternated ROUNDS times.
# Builds with frame pointers (call graphs without DWARF), RelWithDebInfo.
# Each stage's output goes to its own file under OUTDIR. From the root:
#     source .devkit/setup.sh && tests/gpu/profile_32.sh OUTDIR [STAGES]
# STAGES (default "topo build ab perf"): topo (cores, NUMA, SMT), build,
# ab (task_overhead's host nearest, and metg nearest and stencil first
# launch and relaunch, or the VARIANTS named, each tree in turn), perf (perf record of metg's
# nearest first launches and relaunches at small tasks: report by thread
# and symbol, and call graphs of the launching thread).
set -u
out=$1 stages=${2:-"topo build ab perf"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
flags="-fno-omit-frame-pointer"
build() { # src dir
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_BUILD_TESTS=OFF \
        -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_MPI=OFF \
        "-DCMAKE_C_FLAGS=$flags" >/dev/null 2>&1 &&
        cmake --build "$2" -j "$(nproc)" --target metg task_overhead >/dev/null 2>&1 ||
        echo "$1: build failed"
}
builds="build-prof"
for t in ${TREES:-}; do builds="build-prof$t $builds"; done
if has topo; then
    {
        nproc
        lscpu | grep -E "Model name|Socket|Core|Thread|NUMA|L3|MHz"
        cat /proc/sys/kernel/perf_event_paranoid
    } >"$out/topo.log" 2>&1
    cat "$out/topo.log"
fi
if has build; then
    t0=$(date +%s)
    build . build-prof
    for t in ${TREES:-}; do build "$t" "build-prof$t"; done
    echo "build: $(($(date +%s) - t0)) s"
fi
if has ab; then
    rev=$(echo $builds | tr ' ' '\n' | tac | tr '\n' ' ')
    for r in $(seq "${ROUNDS:-2}"); do
        # (the order turned round every other round)
        order=$builds
        [ $((r % 2)) -eq 0 ] && order=$rev
        for b in $order; do
            echo "=== round $r: $b" >>"$out/ab.log"
            timeout 60 $b/bench/task_overhead --reps 5 --nodes 32000 2>&1 |
                grep -E "^host nearest (instantiate|first launch|relaunch):" >>"$out/ab.log"
            timeout 200 $b/bench/metg --patterns nearest,stencil \
                --variants ${VARIANTS:-first,relaunch} --max-us 64 --min-us 2 --reps 5 \
                --latency >>"$out/ab.log" 2>&1
        done
    done
    grep -E "===|host nearest|^metg|efficiency.*@64" "$out/ab.log"
fi
if has perf; then
    pk=$PWD/.perfkit
    p() { LD_LIBRARY_PATH=$pk/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$pk/perf" "$@"; }
    for v in first relaunch; do
        p record -F 4000 -g -o "$out/perf-$v.data" build-prof/bench/metg --patterns nearest \
            --variants $v --max-us 8 --min-us 8 --reps 20 >"$out/perf-$v.run" 2>&1
        p report -i "$out/perf-$v.data" --no-children --sort comm,sym --stdio 2>/dev/null |
            grep -E "%" | grep -v " kernel$" | head -60 >"$out/perf-$v.txt"
        p report -i "$out/perf-$v.data" --children --comm metg --sort sym --stdio \
            --percent-limit 0.5 2>/dev/null | grep -E "^ +[0-9]" | head -60 >"$out/perf-$v-main.txt"
        echo "== $v"
        head -25 "$out/perf-$v.txt"
    done
fi
