#!/bin/sh
# The tiled Cholesky on two devices, in one run: examples/cholesky in one
# process over both devices, then examples/mpi_cholesky with 2 ranks x 1
# device (rank r on device r), at the same n and tile; prints each one's
# steady GFLOP/s (n^3/3 flops a launch) and their ratio (issue 20's target:
# 2 ranks x 1 GPU at least 0.9x one rank with 2 GPUs).
#
#   bench/mpi_cholesky.sh [--build DIR] [--driver cuda|host|sim] [--n N]
#                         [--tile B] [--reps R]
#
# Defaults: build, cuda, n 32768, tile 2048, reps 5. MPIEXEC (default
# mpiexec) and MPIEXEC_FLAGS add to the mpiexec line (as root, Open MPI
# needs --allow-run-as-root, which the script adds). Open MPI binds each of
# two ranks to one core by default, which would put all of a rank's weft
# threads (engine, host workers, stager, weft_mpi's progress) on that core
# while the one process runs unbound: the script passes --bind-to none
# (weft binds its own threads), unless MPIEXEC_FLAGS names a --bind-to.
# Output, one line each:
#
# (and the size, the transfers a launch, and those of them that go device
# to device from the second launch on, by CUDA IPC, WEFT_MPI_IPC=0 turning
# that off for a comparison, and through a CUDA-aware MPI)
#
#   cholesky_1rank_2dev: 61234.5 GFLOP/s
#   mpi_cholesky_2rank_1dev: 58000.1 GFLOP/s
#   ratio_2rank_over_1rank: 0.947 x
set -eu
build=build driver=cuda n=32768 tile=2048 reps=5
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --driver) driver=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --tile) tile=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--driver D] [--n N] [--tile B] [--reps R]" >&2
       exit 2 ;;
    esac
done
mpiexec=${MPIEXEC:-mpiexec}
flags=${MPIEXEC_FLAGS:-}
if "$mpiexec" --version 2>/dev/null | grep -Eq "Open MPI|OpenRTE"; then
    [ "$(id -u)" = 0 ] && flags="$flags --allow-run-as-root --oversubscribe"
    case "$flags" in *--bind-to*) ;; *) flags="$flags --bind-to none" ;; esac
fi
# the first two devices of the driver (the host driver: two host devices;
# the sim's default machine has two GPUs)
devices="$driver:0,$driver:1"
[ "$driver" = host ] && export WEFT_HOST_DEVICES=2
args="--driver $driver --n $n --tile $tile --reps $reps"

one=$(WEFT_DEVICES=$devices "$build/examples/cholesky" $args)
echo "$one" | grep -q "cholesky: ok" || { echo "$one" >&2; echo "cholesky failed" >&2; exit 1; }
# (WEFT_DEVICES unset: each rank makes a runtime of device rank mod 2 alone)
two=$(env -u WEFT_DEVICES $mpiexec -np 2 $flags "$build/examples/mpi_cholesky" $args)
echo "$two" | grep -q "mpi_cholesky: ok" || { echo "$two" >&2; echo "mpi_cholesky failed" >&2; exit 1; }

g1=$(echo "$one" | sed -n 's/^weft: \([0-9.]*\) GFLOP\/s.*/\1/p')
g2=$(echo "$two" | sed -n 's/^weft_mpi: \([0-9.]*\) GFLOP\/s.*/\1/p')
echo "n: $n elements"
echo "tile: $tile elements"
echo "transfers_per_launch: $(echo "$two" | sed -n 's/^transfers per launch: //p') transfers"
echo "ipc_transfers_per_launch: $(echo "$two" | sed -n 's/^transfers by CUDA IPC: \([0-9]*\).*/\1/p') transfers"
echo "aware_transfers_per_launch: $(echo "$two" | sed -n 's/^transfers through CUDA-aware MPI: \([0-9]*\).*/\1/p') transfers"
echo "cholesky_1rank_2dev: $g1 GFLOP/s"
echo "mpi_cholesky_2rank_1dev: $g2 GFLOP/s"
echo "ratio_2rank_over_1rank: $(awk -v a="$g2" -v b="$g1" 'BEGIN { printf "%.3f", a / b }') x"
