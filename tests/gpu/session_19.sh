#!/bin/bash
# Issue 17's last check and issue 19's first run on a machine with two GPUs:
# configure and build build-gpu, the CUDA event tests (under the hang dump),
# the Cholesky example's tests, then the example and the bench. From the
# root:
#     source .devkit/setup.sh && tests/gpu/session_19.sh OUTDIR [STAGES]
# STAGES (default "build 17 test chol bench") picks the parts to run.
set -u
out=$1 stages=${2:-"build 17 test chol bench"}
mkdir -p "$out"
b=build-gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi -L
if has build; then
    t0=$(date +%s)
    cmake -S . -B $b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_WERROR=ON >"$out/cmake.log" 2>&1 &&
        cmake --build $b -j 32 2>&1 | grep -E "error|warning" | head -20
    echo "build: $(($(date +%s) - t0)) s"
    grep -iE "cholesky|openblas|cusolver|cublas" "$out/cmake.log" | head
fi
if has 17; then
    # each run with an empty cache, so that it calibrates the links again
    for i in $(seq ${RUNS17:-3}); do
        mkdir -p "$out/ev$i/cache"
        echo "=== test_event_wait run $i"
        (cd "$out/ev$i" && WEFT_CACHE_DIR=$PWD/cache WEFT_DEVICES=cuda WEFT_TEST_CASE=test_event_wait \
            "$OLDPWD/tests/gpu/hang_dump.sh" 30 "$OLDPWD/$b/tests/sched/native/test_external" >dump.txt 2>&1;
            echo "rc=$?"; tail -3 dump.txt)
    done
    [ -n "${SKIP_CTEST17:-}" ] ||
    timeout 200 ctest --test-dir $b -R "external_events|failed_events|cuda" -j 4 --timeout 90 2>&1 |
        grep -E "tests passed|Failed|Timeout|Not Run|Passed" | tail -25
fi
if has test; then
    timeout 200 ctest --test-dir $b -R "cholesky" --timeout 150 --output-on-failure 2>&1 | tail -30
fi
if has chol; then
    for d in cuda:0 cuda; do
        echo "=== cholesky WEFT_DEVICES=$d n 16384 tile 1024"
        WEFT_DEVICES=$d timeout 120 $b/examples/cholesky --driver cuda --n 16384 --tile 1024 --reps 3 2>&1 | tail -12
    done
fi
if has bench; then
    echo "=== bench cholesky cuda"
    WEFT_DEVICES=cuda timeout 300 $b/bench/cholesky --driver cuda --sizes ${SIZES:-8192,16384,32768} \
        --tiles ${TILES:-1024,2048} --devices 1,2 --reps 3 2>&1 | tail -40
fi
if has mg; then
    grep -n "CUDALIBMG_GRID_MAPPING\|cusolverMgPotrf\b\|cusolverMgPotrf_bufferSize\|cusolverMgCreateDeviceGrid\|cusolverMgCreateMatrixDesc" \
        -A3 /usr/local/cuda/include/cusolverMg.h | head -60
    ls /usr/local/cuda/lib64/ | grep -i cusolverMg
fi
if has diag; then
    echo "=== cholesky cuda:0 n 16384 tile 2048, traced"
    WEFT_TRACE=$out/chol16k.json WEFT_STATS=1 WEFT_DEVICES=cuda:0 timeout 120 \
        $b/examples/cholesky --driver cuda --n 16384 --tile 2048 --reps 2 2>&1 | tail -40
fi
if has mgbench; then
    echo "=== bench cholesky cuda with cusolverMgPotrf"
    WEFT_DEVICES=cuda timeout 300 $b/bench/cholesky --driver cuda --sizes ${MGSIZES:-16384,32768} \
        --tiles ${MGTILES:-2048} --devices 1,2 --reps 3 2>&1 | tail -30
fi
if has host; then
    echo "=== bench cholesky host ($(nproc) cores)"
    timeout 300 $b/bench/cholesky --driver host --sizes ${HSIZES:-8192,16384} \
        --tiles ${HTILES:-256,512} --reps 2 2>&1 | tail -20
fi
if has check; then
    timeout 300 ctest --test-dir $b -R "staging_cuda|blocks_cuda|example_.*cuda|exec_cuda|external_events_cuda|conformance_cuda" \
        -j 4 --timeout 200 2>&1 | grep -E "tests passed|Failed|Timeout|Passed" | tail -12
    for d in cuda:0 cuda; do
        echo "=== cholesky WEFT_DEVICES=$d n 16384 tile 2048 (stats)"
        WEFT_STATS=1 WEFT_DEVICES=$d timeout 120 $b/examples/cholesky --driver cuda --n 16384 --tile 2048 --reps 3 2>&1 | tail -16
    done
fi
if has final; then
    # issue 19's figures in one run: 1, 2 (and 4) GPUs beside cusolverDnDpotrf
    # and cusolverMgPotrf, with and without lookahead priorities, and the
    # out-of-core figure; then the CPU figures; then one traced run
    ng=$(nvidia-smi -L | wc -l)
    devs=1,2; [ "$ng" -ge 4 ] && devs=1,2,4
    echo "=== bench cholesky cuda ($ng GPUs)"
    WEFT_DEVICES=cuda timeout ${FINAL_CUDA_S:-330} $b/bench/cholesky --driver cuda \
        --sizes ${FSIZES:-16384,32768} --tiles ${FTILES:-1024,2048} --devices $devs \
        --lookahead ${FLA:-0} --reps 3 --out-of-core ${OCN:-24576} >"$out/chol_cuda.txt" 2>&1
    echo "rc=$?"
    grep -v "steady launch" "$out/chol_cuda.txt" | tail -150
fi
if has finalhost; then
    echo "=== bench cholesky host ($(nproc) cores)"
    timeout ${FINAL_HOST_S:-150} $b/bench/cholesky --driver host --sizes ${HSIZES:-8192,16384} \
        --tiles ${HTILES:-256,512} --reps 2 2>&1 | grep -v "^#.*steady launch" | tail -20
fi
if has trace; then
    echo "=== cholesky 2 GPUs n 16384 tile 2048, traced"
    WEFT_TRACE=$out/chol_2gpu.json WEFT_DEVICES=cuda:0,cuda:1 timeout 120 \
        $b/examples/cholesky --driver cuda --n 16384 --tile 2048 --reps 2 --lookahead 2>&1 | tail -22
fi
if has grid; then
    # the two grids of two GPUs, alternately, at one size
    for g in tall wide tall wide; do
        echo "=== cholesky 2 GPUs --grid $g"
        WEFT_DEVICES=cuda:0,cuda:1 timeout 60 $b/examples/cholesky --driver cuda --n ${GN:-32768} \
            --tile 2048 --reps 5 --grid $g --check-rows 4 2>&1 | grep -E "grid|^weft:|ok|WRONG"
    done
fi
