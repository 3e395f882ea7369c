#!/bin/bash
# Where a metg launch's cores go at 1 ms tasks: each variant and pattern in
# a process of its own under tests/gpu/schedwait.py (per thread name: CPU
# time, time spent runnable without a core, context switches). From the
# root:  source .devkit/setup.sh && tests/gpu/schedwait_16.sh OUTDIR
# VARIANTS (default "relaunch kernels openmp"), PATTERNS ("trivial
# stencil"), ROUNDS (1), B (the build folder, default build-sw: metg only).
set -u
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
b=${B:-build-sw}
echo "$(nproc) cores; $(cat /proc/loadavg)"
ps -eo pcpu,comm --sort=-pcpu | head -6
if [ ! -x $b/bench/metg ]; then
    (cmake -S . -B $b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_BUILD_TESTS=OFF \
        -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_MPI=OFF >"$out/cmake.log" 2>&1 &&
        cmake --build $b -j "$(nproc)" --target metg >"$out/build.log" 2>&1) ||
        { echo "build failed"; tail -20 "$out/build.log"; exit 1; }
fi
for r in $(seq "${ROUNDS:-1}"); do
    for p in ${PATTERNS:-trivial stencil}; do
        for v in ${VARIANTS:-relaunch kernels openmp}; do
            log="$out/$p-$v-$r.log"
            timeout 120 python3 tests/gpu/schedwait.py $b/bench/metg --max-us 1000 \
                --min-us 1000 --reps 3 --latency --patterns $p --variants $v >"$log" 2>&1
            echo "=== round $r $p $v"
            grep -E "^(efficiency|in flight|cpu) |hand-off|^schedwait" "$log"
        done
    done
done
