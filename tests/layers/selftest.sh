#!/bin/sh
# selftest.sh CHECK CC: check-layers refuses a tree that breaks each of its
# rules, names every violation, and passes the same tree once it is fixed.
set -eu
check=$1
cc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp/src/base" "$tmp/src/drivers" "$tmp/src/mem" "$tmp/src/sched" "$tmp/src/mpi"

printf '#include "base.h"\nint weft__low(void) { return 1; }\n' >"$tmp/src/base/base.c"
printf 'int weft__low(void);\n' >"$tmp/src/base/base.h"
printf 'const int weft__driver_x = 1;\n' >"$tmp/src/drivers/x.c"
printf 'int weft__top(void);\n' >"$tmp/src/runtime.h"
cat >"$tmp/src/runtime.c" <<'C'
#include "runtime.h"
extern const int weft__driver_x;
int weft__top(void) { return weft__driver_x; }
C
# mem: an include and a call that go up, besides one that goes down
cat >"$tmp/src/mem/bad.c" <<'C'
#include "../base/base.h"
#include "../runtime.h"
int weft__mem_bad(void);
int weft__mem_bad(void) { return weft__low() + weft__top(); }
C
# sched: the address of a driver's table
cat >"$tmp/src/sched/bad.c" <<'C'
extern const int weft__driver_x;
int weft__sched_bad(void);
int weft__sched_bad(void) { return weft__driver_x; }
C
# mpi (weft_mpi): an internal header and an internal function, though it
# sits above the API
cat >"$tmp/src/mpi/bad.c" <<'C'
#include "../runtime.h"
int weft_mpi_bad(void);
int weft_mpi_bad(void) { return weft__top(); }
C

build() {
    : >"$tmp/objects"
    for f in $(cd "$tmp/src" && find . -name '*.c' | sed 's|^\./||'); do
        mkdir -p "$tmp/obj/src/$(dirname "$f")"
        "$cc" -c "$tmp/src/$f" -o "$tmp/obj/src/$f.o"
        echo "$tmp/obj/src/$f.o" >>"$tmp/objects"
    done
}

build
rc=0
sh "$check" "$tmp/src" -l "$tmp/objects" >"$tmp/out" 2>&1 || rc=$?
cat "$tmp/out"
[ $rc -eq 1 ] || { echo "selftest: check-layers exited $rc on a bad tree, not 1"; exit 1; }
for want in \
    'src/mem/bad.c:2: layer mem includes "../runtime.h" of layer api above it' \
    'src/mem/bad.c: layer mem uses weft__top, defined in src/runtime.c of layer api above it' \
    'src/sched/bad.c: layer sched names the driver table weft__driver_x' \
    'src/mpi/bad.c:1: weft_mpi includes "../runtime.h" of layer api: it uses weft.h only' \
    'src/mpi/bad.c: weft_mpi uses the internal weft__top: it uses weft.h only'; do
    grep -qF "$want" "$tmp/out" || { echo "selftest: missing: $want"; exit 1; }
done
[ "$(grep -c '^src/' "$tmp/out")" -eq 5 ] || { echo "selftest: other violations reported"; exit 1; }

# Fixed: the same tree without the bad files passes.
rm -rf "$tmp/src/mem/bad.c" "$tmp/src/sched/bad.c" "$tmp/src/mpi/bad.c" "$tmp/obj"
build
sh "$check" "$tmp/src" -l "$tmp/objects" || { echo "selftest: a good tree was refused"; exit 1; }
echo "selftest: ok"
