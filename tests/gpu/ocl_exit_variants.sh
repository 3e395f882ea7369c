#!/bin/bash
# A crash that comes in some runs only, by build variant: each variant
# builds the oracle with extra C flags (e.g. -D switches of an experiment)
# and runs it N times on NVIDIA's OpenCL under segv_hunt.sh, printing how
# many runs died and the weft frames of their stacks.
#     tests/gpu/ocl_exit_variants.sh N OUTDIR 'name:flags' ...
# e.g. tests/gpu/ocl_exit_variants.sh 24 out 'base:' 'try:-DSOMETHING=1'
set -u
n=$1 out=$2
shift 2
for v in "$@"; do
    name=${v%%:*} flags=${v#*:}
    b=build-$name
    cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="$flags" >/dev/null &&
        cmake --build "$b" -j 16 --target oracle >/dev/null 2>&1 || { echo "$name: build failed"; continue; }
    echo "=== $name ($flags)"
    WEFT_DEVICES=opencl WEFT_PLACE=single tests/gpu/segv_hunt.sh "$n" "$out/$name" \
        "$b/tests/oracle/oracle" --graphs 50 --seed 10000 | grep -E "segv_hunt:|^=== run|at /work" | grep -E "segv_hunt|ocl_|pool_" | sort | uniq -c
done
