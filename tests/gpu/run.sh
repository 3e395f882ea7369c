#!/bin/bash
# Builds weft and runs the whole test suite and the benchmarks on a machine
# with NVIDIA GPUs (CUDA and NVIDIA's OpenCL), then an address+undefined
# sanitizer build of the CUDA tests. From the repository root:
#     source .devkit/setup.sh && tests/gpu/run.sh [OUTDIR]
# Logs go to OUTDIR (default build-gpu/out); the summary is printed last.
set -u
out=${1:-build-gpu/out}
mkdir -p "$out"
jobs=$(nproc)
summary=()
step() { # step NAME TIMEOUT COMMAND...
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    echo "=== $name"
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    summary+=("$name: rc=$rc ($((SECONDS - t0)) s)")
    tail -n 25 "$out/$name.log"
    return $rc
}
nvidia-smi -L 2>&1 | tee "$out/gpus.log"
# PARTS (default "all"): "tests" builds and tests, "bench" builds and runs
# the benchmarks, "asan" the sanitizer build; the device tool limits one
# command to 10 minutes, so a session runs them one at a time.
parts=${PARTS:-all}
want() { [[ $parts == all || $parts == *$1* ]]; }
step build 300 bash -c "cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_WERROR=ON && cmake --build build-gpu -j $jobs"
step calibrate 120 ./build-gpu/tools/weft-info --calibrate
if want tests; then
step weft-info 60 ./build-gpu/tools/weft-info
step ctest 400 ctest --test-dir build-gpu -j 4 --output-on-failure --timeout 240 ${CTEST_REGEX:+-R "$CTEST_REGEX"}
grep -h -E "^skipped:|^# " build-gpu/Testing/Temporary/LastTest.log | sort -u | head -40
# what an event wait node in a CUDA graph waits for (driver.h relies on it)
if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
step event-nodes 120 bash -c "PATH=\$PATH:/usr/local/cuda/bin && nvcc -O2 -o build-gpu/event_nodes tests/gpu/event_nodes.cu && ./build-gpu/event_nodes"
fi
fi
if want bench; then
step driver_overhead 120 ./build-gpu/bench/driver_overhead --rounds 5
step launch_overhead 180 ./build-gpu/bench/launch_overhead
step task_overhead 120 ./build-gpu/bench/task_overhead
step overlap 180 ./build-gpu/bench/overlap
step overlap-2gpu 180 ./build-gpu/bench/overlap --ndev 2
# one traced run of overlap, and its timeline as a picture
step overlap-trace 180 ./build-gpu/bench/overlap --reps 1 --trace "$out/overlap-trace.json"
step overlap-svg 60 ./build-gpu/tools/weft-trace "$out/overlap-trace.json" -o "$out/overlap-timeline.svg"
step multigpu 300 ./build-gpu/bench/multigpu --devices-max 8 --reps 3
# the sim's prediction of the same tiled workload on 2, 4 and 8 H200s
step multigpu-sim 240 env WEFT_DEVICES=sim WEFT_SIM=devices=8 ./build-gpu/bench/multigpu --devices-max 8 --reps 2
fi
if want asan; then
step asan-build 300 bash -c "cmake -S . -B build-gpu-asan -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=ON -DWEFT_WERROR=ON && cmake --build build-gpu-asan -j $jobs"
ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
    step asan-ctest 300 ctest --test-dir build-gpu-asan -j 4 --output-on-failure --timeout 240 \
    -R "cuda|module|kcache|conformance_opencl|api_|lifetime|union|fuzz_replay"
fi
printf '%s\n' "${summary[@]}" | tee "$out/summary.log"
