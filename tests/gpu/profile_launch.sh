#!/bin/bash
# Where a CUDA device graph's first launch spends its time: perf (carried
# in .perfkit/: perf, lib/) over bench/launch_overhead, built with frame
# pointers (RelWithDebInfo, benches only), call graphs by DWARF (libcuda
# keeps no frame pointers). Output under OUTDIR. From the root:
#     source .devkit/setup.sh && tests/gpu/profile_launch.sh OUTDIR [ARGS]
# ARGS go to launch_overhead (default: --nodes 4000 --reps 3).
set -u
out=$1
shift
args=${*:-"--nodes 4000 --reps 3"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
b=build-lof
cmake -S . -B $b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_BUILD_TESTS=OFF \
    -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_MPI=OFF \
    -DCMAKE_C_FLAGS=-fno-omit-frame-pointer >"$out/build.log" 2>&1 &&
    cmake --build $b -j "$(nproc)" --target launch_overhead >>"$out/build.log" 2>&1 ||
    { echo "build failed"; tail "$out/build.log"; exit 1; }
perf=.perfkit/perf
pl() { LD_LIBRARY_PATH=.perfkit/lib:$LD_LIBRARY_PATH $perf "$@"; }
# shellcheck disable=SC2086
$b/bench/launch_overhead $args | tee "$out/plain.log" | grep -E "weft chain|raw (stream|graph chain)"
# shellcheck disable=SC2086
pl record -F 4000 --call-graph dwarf,32768 -o "$out/lo.data" $b/bench/launch_overhead $args \
    >"$out/rec.log" 2>&1 || { echo "perf record failed"; tail -5 "$out/rec.log"; }
pl report -i "$out/lo.data" --no-children --stdio -g none --sort dso,sym 2>/dev/null |
    grep -E "^ +[0-9]" | head -60 >"$out/self.txt"
pl report -i "$out/lo.data" --children --stdio -g none --sort sym 2>/dev/null |
    grep -E "^ +[0-9]" | head -120 >"$out/children.txt"
# What the first launches call: the samples under weft_first.
pl script -i "$out/lo.data" 2>/dev/null | python3 tests/gpu/perf_under.py weft_first 3 >"$out/tree.txt"
rm -f "$out/lo.data"
# The first launch's fixed and per-node parts: a first launch at each size.
for n in ${SIZES:-1000 4000 16000}; do
    $b/bench/launch_overhead --nodes "$n" --reps 3 | grep -E "weft chain first|raw stream" |
        sed "s/^/$n: /"
done | tee "$out/sizes.log"
head -70 "$out/tree.txt"
