#!/bin/bash
# A/B of the host workers' idle policy on every core: bench/metg built with
# compile-time variants of src/base/idle.h (spin time, polls), run
# alternately in one script. From the root, after the devkit:
#     tests/gpu/host_spin.sh [ROUNDS]
set -u
rounds=${1:-1}
declare -A flags=(
    [base]=""
    [spin50]="-DWEFT__IDLE_SPIN_NS=50000"
    [spin200]="-DWEFT__IDLE_SPIN_NS=200000"
    [polls2k]="-DWEFT__IDLE_POLLS=2000"
)
names=${VARIANTS:-"base spin50 spin200 polls2k"}
for v in $names; do
    cmake -S . -B build-v-$v -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        "-DCMAKE_C_FLAGS=${flags[$v]}" >/dev/null 2>&1 &&
        cmake --build build-v-$v -j "$(nproc)" --target metg 2>&1 | grep -E " error" | head
done
for r in $(seq "$rounds"); do
    for v in $names; do
        echo "=== $v (round $r)"
        timeout 200 build-v-$v/bench/metg --max-us 250 --min-us 1 \
            --patterns ${MPAT:-nearest,stencil} --variants ${MVAR:-relaunch,first} 2>&1 |
            grep -E "^metg|^efficiency|^cpu .*relaunch|^peak"
    done
done
