#!/bin/bash
# The GPU machine's runs for issues 16, 19, 20 and 21: build build-gpu,
# then the stages named. From the root:
#     source .devkit/setup.sh && tests/gpu/session_20.sh OUTDIR [STAGES]
# Stages: build; cudatest (the CUDA cases of the suite this session
# touched); final (issue 19's figures in one run: FSIZES, FTILES, OCN);
# finalhost (the CPU figures: HSIZES, HTILES); ooc (bench/cholesky out of
# core, one GPU: OCN, OCT);
# metg (bench/metg on every core: MPAT, MVAR); chol2 (1 and 2 GPUs, n 32768:
# FSIZES, FTILES); trace (a traced 2-GPU factorisation); python
# (tests/gpu/python.sh); mpi (tests/gpu/mpi_20.sh's stages: MSTAGES).
set -u
out=$1 stages=${2:-"build ooc"}
mkdir -p "$out"
b=build-gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi -L
echo "cores: $(nproc)"
if has build; then
    t0=$(date +%s)
    cmake -S . -B $b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_WERROR=ON >"$out/cmake.log" 2>&1 &&
        cmake --build $b -j "$(nproc)" 2>&1 | grep -E "error|warning" | head -20
    echo "build: $(($(date +%s) - t0)) s"
fi
if has cudatest; then
    timeout 300 ctest --test-dir $b -R "cuda|module|api_bad_input|evict" -j 4 --timeout 200 2>&1 |
        grep -E "tests passed|Failed|Timeout|\*\*\*" | tail -20
fi
if has final; then
    ng=$(nvidia-smi -L | wc -l)
    devs=1,2; [ "$ng" -ge 4 ] && devs=1,2,4
    echo "=== bench cholesky cuda ($ng GPUs)"
    WEFT_DEVICES=cuda timeout ${FINAL_CUDA_S:-420} $b/bench/cholesky --driver cuda \
        --sizes ${FSIZES:-8192,16384,32768} --tiles ${FTILES:-2048} --devices $devs \
        --reps 3 --out-of-core ${OCN:-24576} >"$out/chol_cuda.txt" 2>&1
    echo "rc=$?"
    grep -v "steady launch" "$out/chol_cuda.txt" | tail -80
fi
if has finalhost; then
    echo "=== bench cholesky host ($(nproc) cores)"
    timeout ${FINAL_HOST_S:-200} $b/bench/cholesky --driver host --sizes ${HSIZES:-8192,16384} \
        --tiles ${HTILES:-512} --reps 2 2>&1 | grep -v "^#.*steady launch" | tail -20
fi
if has ooc; then
    echo "=== bench cholesky out of core, n ${OCN:-24576}"
    WEFT_DEVICES=cuda:0 timeout ${OC_S:-240} $b/bench/cholesky --driver cuda --sizes "" \
        --tiles ${OCT:-2048} --reps ${OCR:-2} --out-of-core ${OCN:-24576} 2>&1 | tail -12
fi
if has ooctest; then
    timeout 200 ctest --test-dir $b -R "evict|cholesky_cuda|blocks_cuda|staging_cuda|oracle_cuda" \
        -j 4 --timeout 150 2>&1 | grep -E "tests passed|Failed|Timeout|Passed" | tail -12
fi
if has metg; then
    echo "=== bench metg ($(nproc) cores)"
    timeout ${METG_S:-300} $b/bench/metg --max-us 1000 --min-us 1 \
        --patterns ${MPAT:-stencil,nearest,random,trivial} \
        --variants ${MVAR:-first,relaunch,openmp} 2>&1 | tail -40
fi
if has chol2; then
    echo "=== bench cholesky cuda 1 and 2 GPUs"
    WEFT_DEVICES=cuda timeout ${FINAL_CUDA_S:-300} $b/bench/cholesky --driver cuda \
        --sizes ${FSIZES:-32768} --tiles ${FTILES:-2048} --devices ${FDEVS:-1,2} --reps 3 --map ${FMAP:-cyclic} \
        2>&1 | grep -v "steady launch" | tail -30
fi
if has trace; then
    echo "=== cholesky 2 GPUs n 16384 tile 2048, traced"
    WEFT_TRACE=$out/chol_2gpu.json WEFT_DEVICES=cuda:0,cuda:1 timeout 120 \
        $b/examples/cholesky --driver cuda --n ${TN:-16384} --tile 2048 --reps 2 2>&1 | tail -22
fi
if has python; then
    [ -x tests/gpu/python.sh ] && timeout 300 tests/gpu/python.sh $b "$out/python" 2>&1 | tail -60
fi
if has mpi; then
    # issue 20's runs: tests/gpu/mpi_20.sh's stages (MSTAGES)
    tests/gpu/mpi_20.sh "$out/mpi" "${MSTAGES:-test chol metg trace}"
fi
