#!/bin/bash
# bench/metg of this tree against the older trees that TREES names
# (`git archive REV | tar -x -C _old`), alternated ROUNDS times (default 2;
# the order turned round every other round), each run's output appended
# to OUTDIR/ab_metg.log and its figures on standard output. From the root:
#     source .devkit/setup.sh && tests/gpu/ab_metg.sh OUTDIR
# VARIANTS (default kernels), PATTERNS (trivial,stencil,nearest,random),
# MAXUS (1000), MINUS (2), REPS (3): metg's options.
set -u
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
build() { # src dir
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_BUILD_TESTS=OFF \
        -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_MPI=OFF >/dev/null 2>&1 &&
        cmake --build "$2" -j "$(nproc)" --target metg >/dev/null 2>&1 ||
        echo "$1: build failed"
}
builds="build-ab"
build . build-ab
for t in ${TREES:-}; do
    build "$t" "build-ab$t"
    builds="build-ab$t $builds"
done
rev=$(echo $builds | tr ' ' '\n' | tac | tr '\n' ' ')
echo "$(nproc) cores; $(cat /proc/loadavg)"
for r in $(seq "${ROUNDS:-2}"); do
    order=$builds
    [ $((r % 2)) -eq 0 ] && order=$rev
    for b in $order; do
        echo "=== round $r: $b" | tee -a "$out/ab_metg.log"
        timeout 280 $b/bench/metg --patterns ${PATTERNS:-trivial,stencil,nearest,random} \
            --variants ${VARIANTS:-kernels} --max-us ${MAXUS:-1000} --min-us ${MINUS:-2} \
            --reps ${REPS:-3} --latency >"$out/ab_metg.run" 2>&1
        cat "$out/ab_metg.run" >>"$out/ab_metg.log"
        grep -E "^(metg|efficiency|in flight|peak)" "$out/ab_metg.run"
        grep -E "@ ?1ms|1ms x" "$out/ab_metg.run" | grep -oE "^# [a-z]+|hand-off [^;)]*" | paste - - 
    done
done
