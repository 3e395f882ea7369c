#!/bin/bash
# Two probes of OpenCL on the GPU machine, from the repository root after
# build-gpu is built:
#  1. tests/gpu/ocl_failed_event.c on every platform: what the implementation
#     does with commands that wait on a user event set to an error status;
#  2. the staging test's failure points on NVIDIA's OpenCL alone, each point
#     in its own process, REPEAT times, to find the ones after which the
#     context's teardown blocks. Logs of those runs go to OUTDIR.
#     tests/gpu/ocl_probe.sh [OUTDIR]
set -u
out=${1:-build-gpu/oclprobe}
mkdir -p "$out"
cc -O1 -o "$out/failed_event" tests/gpu/ocl_failed_event.c -lOpenCL || exit 1
nplat=$(clinfo -l 2>/dev/null | grep -c '^Platform' || echo 2)
for p in $(seq 0 $((${nplat:-2} - 1))); do
    for c in 0 1 2; do
        for s in 0 -5; do
            echo "== platform $p case $c status $s"
            timeout 30 "$out/failed_event" "$p" "$c" "$s" 2>&1 | tail -n +1
            echo "rc=${PIPESTATUS[0]}"
        done
    done
done
t=./build-gpu/tests/mem/staging/test_staging
echo "== staging, all points, 6 runs"
for r in 1 2 3 4 5 6; do
    WEFT_OPENCL_POCL5=0 WEFT_DEVICES=opencl timeout 60 $t >"$out/all.$r.log" 2>&1
    echo "run $r: rc=$?"
done
one() { # one POINT RUN
    WEFT_OPENCL_POCL5=0 WEFT_DEVICES=opencl WEFT_LOG=debug WT_STAGING_FAULTS=$1-$1 \
        timeout 20 $t >"$out/p$1.$2.log" 2>&1
    local rc=$?
    [ $rc -eq 0 ] && rm -f "$out/p$1.$2.log"
    echo "point $1 run $2: rc=$rc"
}
export -f one
export t out
echo "== staging, one point per process"
for r in $(seq 1 "${REPEAT:-3}"); do
    for i in $(seq "${FIRST:-1}" "${LAST:-175}"); do echo "$i $r"; done
done | xargs -P 8 -n 2 bash -c 'one "$0" "$1"' | grep -v 'rc=0$' | sort -V
echo "== done"
