#!/bin/bash
# One batch for the GPU machine after a merge: build, the exit crash hunt on
# NVIDIA's OpenCL (N runs of the oracle), then the whole test suite with a
# time cap. From the repository root:
#     source .devkit/setup.sh && tests/gpu/session_check.sh OUTDIR [N]
set -u
out=$1 n=${2:-24}
mkdir -p "$out"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_WERROR=ON >/dev/null &&
    cmake --build build-gpu -j 16 2>&1 | grep -E "error|warning"
WEFT_DEVICES=opencl WEFT_PLACE=single tests/gpu/segv_hunt.sh "$n" "$out/segv" \
    build-gpu/tests/oracle/oracle --graphs 50 --seed 10000 | grep -E "segv_hunt:|ocl_|pool_" | sort | uniq -c
grep -h "oracle: 50 graphs" "$out"/segv/run1.log | cut -c1-200
timeout 330 ctest --test-dir build-gpu -j 4 --timeout 240 >"$out/ctest.log" 2>&1
echo "ctest rc=$?"
grep -E "tests passed|\*\*\*Failed|Timeout|Not Run" "$out/ctest.log" | head -20
