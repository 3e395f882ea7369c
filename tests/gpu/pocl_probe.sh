#!/bin/bash
# Where PoCL aborts at exit on the GPU machine (pocl_release_dlhandle_cache:
# Assertion 'found->ref_count > 0'): the OpenCL oracle with a cold PoCL
# kernel cache, with and without NVIDIA's OpenCL beside PoCL, with one and
# two PoCL devices. From the repository root, after tests/gpu/run.sh built
# build-gpu:
#     tests/gpu/pocl_probe.sh [OUTDIR]
set -u
out=${1:-build-gpu/pocl}
mkdir -p "$out"
oracle=./build-gpu/tests/oracle/oracle
pocl=$(ls /etc/OpenCL/vendors/*pocl*.icd 2>/dev/null | head -1)
pocl_lib=$(cat "$pocl" 2>/dev/null)
echo "PoCL ICD: ${pocl:-none} -> ${pocl_lib:-?}"
run() { # run NAME ENV...: the oracle in env, with a fresh PoCL cache
    local name=$1
    shift
    local cache
    cache=$(mktemp -d)
    mkdir -p "$cache/weft"
    # weft's compiled-kernel cache: fresh, or WEFT_CACHE shared between runs
    env POCL_CACHE_DIR="$cache" WEFT_CACHE_DIR="${WEFT_CACHE:-$cache/weft}" \
        WEFT_DEVICES=opencl "$@" \
        timeout 300 "$oracle" --graphs "${ORACLE_GRAPHS:-60}" --seed 3000 >"$out/$name.log" 2>&1
    local rc=$?
    echo "$name: rc=$rc $(grep -m1 -o 'Assertion.*' "$out/$name.log")"
    rm -rf "$cache"
}
only=(OCL_ICD_VENDORS=/nonexistent OCL_ICD_FILENAMES="$pocl_lib")
for i in 1 2 3; do
    run "both-2dev-$i" "POCL_DEVICES=pthread pthread"
    run "pocl-only-1dev-$i" "POCL_DEVICES=pthread" "${only[@]}"
    # PoCL keeps at most 128 loaded work-group functions (one per kernel,
    # local size, grid width, offset and specialisation) and evicts beyond
    # that: fewer variants, or no specialisation, stay under it
    run "pocl-only-nospec-$i" "POCL_DEVICES=pthread" "${only[@]}" POCL_WORK_GROUP_SPECIALIZATION=0
    ORACLE_GRAPHS=8 run "pocl-only-8graphs-$i" "POCL_DEVICES=pthread" "${only[@]}"
done
# weft's cache warm (PoCL binaries from the first run), PoCL's cold
shared=$(mktemp -d)
for i in 1 2 3; do
    WEFT_CACHE=$shared run "pocl-only-weftwarm-$i" "POCL_DEVICES=pthread" "${only[@]}"
done
rm -rf "$shared"
