#!/bin/bash
# Runs the benchmarks of this tree and of another (an earlier commit's
# sources) on the same machine, in alternation, so that a figure can be
# compared with its value before a change in the same session:
#     bench/compare.sh BASE_SRC [OUTDIR]
# BASE_SRC is a source tree of weft (e.g. from "git archive COMMIT");
# OUTDIR (default build-compare) gets both builds and one log per run.
# BENCHES (default: every benchmark below that the machine can run) picks
# some; ROUNDS (default 2) is how many times each pair runs. Each log line
# is the benchmark's own "name: value unit"; the summary at the end lists
# every figure of both trees, run by run.
set -u
base=${1:?usage: bench/compare.sh BASE_SRC [OUTDIR]}
out=${2:-build-compare}
rounds=${ROUNDS:-2}
jobs=$(nproc)
mkdir -p "$out"
build() { # build SRC DIR
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF >/dev/null &&
        cmake --build "$2" -j "$jobs" >"$2.log" 2>&1 || { tail -20 "$2.log"; return 1; }
}
build . "$out/new" & p1=$!
build "$base" "$out/base" & p2=$!
wait $p1 || exit 1
wait $p2 || exit 1
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
default="driver_overhead launch_overhead task_overhead overlap transfer"
[ "$ngpu" -ge 2 ] && default="$default overlap2 launch_overhead2 multigpu"
benches=${BENCHES:-$default}
cmd() { # cmd NAME BUILD: the command line of benchmark NAME in BUILD
    case $1 in
    driver_overhead) echo "$2/bench/driver_overhead --rounds 5" ;;
    overlap2) echo "$2/bench/overlap --ndev 2" ;;
    launch_overhead2) echo "$2/bench/launch_overhead --ndev 2" ;;
    multigpu) echo "$2/bench/multigpu --devices-max 2 --reps 3" ;;
    transfer) echo "$2/bench/transfer --reps 5" ;;
    *) echo "$2/bench/$1" ;;
    esac
}
for b in $benches; do
    for r in $(seq 1 "$rounds"); do
        for tree in base new; do
            log="$out/$b.$tree.$r.log"
            timeout 300 $(cmd "$b" "$out/$tree") >"$log" 2>&1
            echo "$b ($tree, run $r): rc=$?"
        done
    done
done
echo "=== figures (benchmark, tree, run: name: value unit)"
for b in $benches; do
    for r in $(seq 1 "$rounds"); do
        for tree in base new; do
            grep -E ': [-0-9.]+( |$)' "$out/$b.$tree.$r.log" |
                sed "s/^/$b $tree $r | /"
        done
    done
done
