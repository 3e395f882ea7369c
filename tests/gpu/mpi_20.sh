#!/bin/bash
# Issue 20 on a machine with two GPUs and Open MPI (not CUDA-aware):
# configure and build build-gpu, the MPI tests and the Cholesky tests, the
# tiled Cholesky across 2 ranks x 1 GPU beside one process on both GPUs
# (bench/mpi_cholesky.sh), metg's stencil across ranks against plain MPI,
# and a merged trace of the Cholesky on 2 ranks. From the root:
#     source .devkit/setup.sh && tests/gpu/mpi_20.sh OUTDIR [STAGES]
# STAGES (default "build test ipc chol metg trace") picks the parts to run
# (ipc: CUDA IPC's tests, and the Cholesky with it on and off; cholab:
# only bench/mpi_cholesky.sh with IPC on, then off; aware: transfers
# through a CUDA-aware MPI, which tests/mpi/cuda_aware_shim.c stands in
# for, IPC off: its CTest cases, test_mpi and the Cholesky with the counts
# of transfer ends that went device to device through MPI and of the
# messages the shim saw on device memory; aware1: the same with both ranks
# on GPU 0, test_mpi's blocks, random and owners graphs, 40 seeds each;
# SHIM, where set, is the shim library these two stages load, MODES the
# modes of aware1);
# N and TILE (default 32768 and 2048) the Cholesky's size.
set -u
out=$1 stages=${2:-"build test ipc chol metg trace"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
b=build-gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi -L
mpiexec --version | head -1
root=""
[ "$(id -u)" = 0 ] && root="--allow-run-as-root"
if has build; then
    t0=$(date +%s)
    cmake -S . -B $b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_WERROR=ON >"$out/cmake.log" 2>&1 &&
        cmake --build $b -j 32 2>&1 | grep -E "error|warning" | head -20
    echo "build: $(($(date +%s) - t0)) s"
    grep -iE "weft_mpi|openblas" "$out/cmake.log" | head
fi
if has test; then
    timeout 300 ctest --test-dir $b -R "mpi_|cholesky" --timeout 150 --output-on-failure 2>&1 |
        grep -E "tests passed|Failed|Timeout|Not Run" | tail -20
fi
if has ipc; then
    # CUDA IPC: export, map, read and write in a forked child (ipc_cuda);
    # weft_mpi's device endpoints, 2 ranks on CUDA, IPC on and off
    # (mpi_ipc_cuda_np2, mpi_ipc_cuda_off_np2); the Cholesky on 2 ranks
    # with IPC's count (its CTest cases run host and sim only)
    timeout 300 ctest --test-dir $b -R "^ipc_|mpi_ipc_" --timeout 150 \
        --output-on-failure 2>&1 | grep -E "Test #|tests passed|Failed|rank|child" | tail -20
    echo "=== test_mpi ipc and random, 2 ranks, rank r on GPU r"
    timeout 200 mpiexec $root -np 2 sh -c \
        'WEFT_DEVICES=cuda:$OMPI_COMM_WORLD_RANK exec '$b'/tests/mpi/test_mpi ipc,random --seeds 10' \
        2>&1 | tail -6
    echo "=== mpi_cholesky 2 ranks, n 8192 tile 2048, IPC on, then off"
    timeout 300 mpiexec $root -np 2 --bind-to none $b/examples/mpi_cholesky \
        --driver cuda --n 8192 --tile 2048 --reps 3 2>&1 | grep -E "IPC|weft_mpi:|residual|ok"
    WEFT_MPI_IPC=0 timeout 300 mpiexec $root -np 2 --bind-to none -x WEFT_MPI_IPC \
        $b/examples/mpi_cholesky --driver cuda --n 8192 --tile 2048 --reps 3 2>&1 |
        grep -E "IPC|weft_mpi:|residual|ok"
fi
if has aware; then
    # Open MPI here is not CUDA-aware: the shim (LD_PRELOAD into the ranks)
    # says it is and stages device memory through host memory as such an
    # MPI would, so these check behaviour and counts, not speed.
    shim=${SHIM:-$PWD/$b/tests/mpi/libweft_cuda_aware_shim.so}
    ls -la "$shim"
    timeout 400 ctest --test-dir $b -R "mpi_aware|mpi_shim" --timeout 180 -V 2>&1 |
        grep -E "Test +#|tests passed|Failed|check failed|shim:|device ends|CUDA-aware|residual|WRONG" |
        tail -40
    echo "=== test_mpi aware,blocks,random: 2 ranks, rank r on GPU r, IPC off, the shim"
    WEFT_MPI_IPC=0 timeout 200 mpiexec $root -np 2 -x WEFT_MPI_IPC sh -c \
        'WEFT_DEVICES=cuda:$OMPI_COMM_WORLD_RANK LD_PRELOAD='"$shim"' exec '$b'/tests/mpi/test_mpi aware,blocks,random --seeds 10' \
        2>&1 | tail -10
    echo "=== mpi_cholesky 2 ranks, n 8192 tile 2048, IPC off, the shim"
    WEFT_MPI_IPC=0 timeout 300 mpiexec $root -np 2 --bind-to none -x WEFT_MPI_IPC \
        -x LD_PRELOAD="$shim" $b/examples/mpi_cholesky --driver cuda --n 8192 --tile 2048 \
        --reps 3 2>&1 | grep -E "IPC|CUDA-aware|weft_mpi:|residual|ok|shim|WRONG"
    echo "=== the same, the shim loaded but WEFT_MPI_CUDA_AWARE=0 (through pinned staging)"
    WEFT_MPI_IPC=0 WEFT_MPI_CUDA_AWARE=0 timeout 300 mpiexec $root -np 2 --bind-to none \
        -x WEFT_MPI_IPC -x WEFT_MPI_CUDA_AWARE -x LD_PRELOAD="$shim" $b/examples/mpi_cholesky \
        --driver cuda --n 8192 --tile 2048 --reps 3 2>&1 |
        grep -E "IPC|CUDA-aware|weft_mpi:|residual|ok|shim|WRONG"
fi
if has aware1; then
    shim=${SHIM:-$PWD/$b/tests/mpi/libweft_cuda_aware_shim.so}
    for mode in ${MODES:-blocks random owners}; do
        echo "=== test_mpi $mode --seeds 40: 2 ranks both on GPU 0, IPC off, $(basename "$shim")"
        WEFT_MPI_IPC=0 timeout 200 mpiexec $root -np 2 -x WEFT_MPI_IPC -x WEFT_DEVICES=cuda:0 \
            -x LD_PRELOAD="$shim" $b/tests/mpi/test_mpi $mode --seeds 40 2>&1 | tail -4
    done
fi
if has cholab; then
    # only the comparison of CUDA IPC on and off, in one script
    echo "=== bench/mpi_cholesky.sh cuda n ${N:-32768} tile ${TILE:-2048}, IPC on"
    timeout 280 bench/mpi_cholesky.sh --build $b --driver cuda --n ${N:-32768} \
        --tile ${TILE:-2048} --reps 5 2>&1 | tail -8
    echo "=== the same, CUDA IPC off (WEFT_MPI_IPC=0)"
    WEFT_MPI_IPC=0 MPIEXEC_FLAGS="-x WEFT_MPI_IPC" timeout 280 bench/mpi_cholesky.sh \
        --build $b --driver cuda --n ${N:-32768} --tile ${TILE:-2048} --reps 5 2>&1 | tail -4
fi
if has chol; then
    echo "=== bench/mpi_cholesky.sh cuda n ${N:-32768} tile ${TILE:-2048}"
    timeout 580 bench/mpi_cholesky.sh --build $b --driver cuda --n ${N:-32768} \
        --tile ${TILE:-2048} --reps 5 2>&1 | tail -12
    echo "=== the same, CUDA IPC off (WEFT_MPI_IPC=0: tiles through host memory and MPI)"
    WEFT_MPI_IPC=0 MPIEXEC_FLAGS="-x WEFT_MPI_IPC" timeout 580 bench/mpi_cholesky.sh \
        --build $b --driver cuda --n ${N:-32768} --tile ${TILE:-2048} --reps 5 2>&1 | tail -4
    echo "=== the same, ranks bound to one core each (Open MPI's default)"
    MPIEXEC_FLAGS="--bind-to core" timeout 580 bench/mpi_cholesky.sh --build $b \
        --driver cuda --n ${N:-32768} --tile ${TILE:-2048} --reps 5 2>&1 | tail -3
    echo "=== the same, Open MPI's single-copy transport off (copy in, copy out)"
    OMPI_MCA_btl_vader_single_copy_mechanism=none timeout 580 bench/mpi_cholesky.sh \
        --build $b --driver cuda --n ${N:-32768} --tile ${TILE:-2048} --reps 5 2>&1 | tail -3
    echo "=== mpi_cholesky 2 ranks, --once"
    timeout 300 mpiexec $root -np 2 $b/examples/mpi_cholesky --driver cuda \
        --n ${N:-32768} --tile ${TILE:-2048} --once 2>&1 | tail -8
fi
if has metg; then
    echo "=== mpi_metg, 2 ranks, one host worker each"
    WEFT_DEVICES=host WEFT_HOST_WORKERS=1 WEFT_HOST_THREADS=1 timeout 300 \
        mpiexec $root -np 2 --bind-to core $b/bench/mpi_metg 2>&1 | tail -40
    echo "=== mpi_metg, 2 ranks of 2 cores (the worker beside weft's other threads)"
    WEFT_DEVICES=host WEFT_HOST_WORKERS=1 WEFT_HOST_THREADS=1 timeout 300 \
        mpiexec $root -np 2 --map-by slot:PE=2 --bind-to core $b/bench/mpi_metg 2>&1 |
        grep metg_50
fi
if has trace; then
    echo "=== merged trace of mpi_cholesky, 2 ranks, n 8192 tile 2048"
    rm -f "$out"/chol.rank*.json
    timeout 300 mpiexec $root -np 2 $b/examples/mpi_cholesky --driver cuda \
        --n 8192 --tile 2048 --reps 1 --trace "$out/chol" 2>&1 | tail -4
    /usr/bin/python3 tools/weft-mpi-trace -o "$out/chol.merged.json" "$out/chol"
    ls -la "$out"/chol*.json
fi
