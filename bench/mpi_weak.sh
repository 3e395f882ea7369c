#!/bin/sh
# Weak scaling of examples/mpi_stencil2d on sim devices: 1, 2, 4 and 8
# ranks, each with one simulated GPU and the same work (--weak A: A x A
# tiles of T x T a rank, each rank's tiles one block of the grid, halos
# crossing to the neighbouring ranks).
#
#   bench/mpi_weak.sh [--build DIR] [--tile T] [--weak A] [--launches L]
#                     [--ranks "1 2 4 8"]
#
# What is measured: the example times its last launch node by node
# (weft_exec_enable_timings) and prints the span, the latest end of a
# rank's kernels from the launch's start, in the sim's virtual time
# (WEFT_SIM, default devices=1,item_ns=20: a tile of 128 x 128 is 328 us of
# kernel). That is the simulated machine's time for the device work and
# the halo copies to and from the host; MPI's own transfers are not
# simulated (they take real time, and a kernel waiting for one is issued
# later in real time, not in virtual time). Efficiency is span(1 rank) /
# span(N ranks). The wall time of a launch is printed beside it, but the
# ranks share this machine's cores, so it measures oversubscription more
# than weft_mpi. Output:
#
#   weak scaling 1 ranks: 10619 us span, 5990 us wall
#   weak scaling 8 ranks: 0.98 efficiency (10793 us span; wall 0.14)
set -eu
build=build tile=128 weak=4 launches=3 ranks="1 2 4 8"
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --tile) tile=$2; shift 2 ;;
    --weak) weak=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--tile T] [--weak A] [--launches L] [--ranks LIST]" >&2
       exit 2 ;;
    esac
done
mpiexec=${MPIEXEC:-mpiexec}
flags=${MPIEXEC_FLAGS:-}
if "$mpiexec" --version 2>/dev/null | grep -Eq "Open MPI|OpenRTE"; then
    flags="$flags --oversubscribe"
    [ "$(id -u)" = 0 ] && flags="$flags --allow-run-as-root"
fi
export WEFT_DEVICES=sim WEFT_SIM="${WEFT_SIM:-devices=1,item_ns=20}"
export WEFT_HOST_THREADS="${WEFT_HOST_THREADS:-1}"
echo "sim: $WEFT_SIM"
echo "per rank: $weak x $weak tiles of $tile x $tile floats"
span1= wall1=
for np in $ranks; do
    out=$($mpiexec -np "$np" $flags "$build/examples/mpi_stencil2d" --tile "$tile" \
        --weak "$weak" --launches "$launches")
    echo "$out" | grep -q "max_abs_error: 0$" || { echo "$out" >&2; exit 1; }
    line=$(echo "$out" | grep "^launch: ")
    wall=$(echo "$line" | sed 's/^launch: \([0-9.]*\) us wall.*/\1/')
    span=$(echo "$line" | sed 's/.* us wall, \([0-9.]*\) us span.*/\1/')
    if [ -z "$span1" ]; then
        span1=$span wall1=$wall
        echo "weak scaling $np ranks: $span us span, $wall us wall"
    else
        awk -v n="$np" -v s="$span" -v w="$wall" -v s1="$span1" -v w1="$wall1" \
            'BEGIN { printf "weak scaling %d ranks: %.2f efficiency (%.0f us span; wall %.2f)\n", n, s1 / s, s, w1 / w }'
    fi
done
