#!/bin/bash
# A first launch on a CUDA device, this tree against the older trees that
# TREES names (each unpacked at the root: `git archive REV | tar -x -C
# _old`), alternated ROUNDS times (default 3): bench/launch_overhead's
# chain and fan first launch at each of SIZES nodes (default "1000
# 4000"), raw stream beside, and bench/overlap's first launch / steady
# where OVERLAP=1. Benches only, RelWithDebInfo. From the root:
#     source .devkit/setup.sh && TREES=_old tests/gpu/ab_launch.sh OUTDIR
set -u
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
build() { # src dir
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_BUILD_TESTS=OFF \
        -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_MPI=OFF >/dev/null 2>&1 &&
        cmake --build "$2" -j "$(nproc)" --target launch_overhead overlap >/dev/null 2>&1 ||
        echo "$1: build failed"
}
build . build-ab
builds="build-ab"
for t in ${TREES:-}; do
    build "$t" "build-ab$t"
    builds="build-ab$t $builds"
done
for r in $(seq "${ROUNDS:-3}"); do
    for b in $builds; do
        for n in ${SIZES:-1000 4000}; do
            "$b/bench/launch_overhead" --nodes "$n" --reps 5 >"$out/lo-$b-$n-$r.log" 2>&1
            grep -E "^(weft (chain|fan) first launch|raw stream):" "$out/lo-$b-$n-$r.log" |
                sed "s/^/$b $n r$r: /"
        done
        if [ "${OVERLAP:-0}" = 1 ]; then
            "$b/bench/overlap" --reps 3 >"$out/ov-$b-$r.log" 2>&1
            grep -E "first/steady" "$out/ov-$b-$r.log" | sed "s/^/$b r$r: /"
        fi
    done
done
