#!/bin/sh
# check_install.sh BUILD_DIR CONSUMER_SRC SCRATCH [plain|sanitized]
set -eu
build=$1 src=$2 scratch=$3 mode=${4:-plain}
if [ "$mode" = sanitized ]; then
    echo "skipped: a sanitizer build's library cannot be linked into a plain consumer; the plain build checks the install"
    exit 77
fi
rm -rf "$scratch"
mkdir -p "$scratch"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/weft.h"
test -f "$prefix/lib/pkgconfig/weft.pc" || test -f "$prefix"/lib/*/pkgconfig/weft.pc
# Where only the runtime libraries are installed there is no hwloc or ck
# pkg-config file: find_package and pkg-config must not need one (an empty
# PKG_CONFIG_LIBDIR hides every .pc file but weft's own).
nopc=$scratch/no-pc
mkdir -p "$nopc"
for kind in shared static; do
    PKG_CONFIG_LIBDIR=$nopc PKG_CONFIG_PATH= \
        cmake -S "$src" -B "$scratch/$kind" -DCMAKE_PREFIX_PATH="$prefix" -DWEFT_KIND=$kind >/dev/null
    cmake --build "$scratch/$kind" >/dev/null
    LD_LIBRARY_PATH="$prefix/lib:$(echo "$prefix"/lib/*-linux-gnu 2>/dev/null | tr ' ' ':')" \
        "$scratch/$kind/consumer" | grep -q "weft consumer ok"
    echo "find_package($kind): ok"
done
pcdir=$(dirname "$(find "$prefix" -name weft.pc | head -1)")
pc() { PKG_CONFIG_LIBDIR=$pcdir PKG_CONFIG_PATH= pkg-config "$@"; }
cc -o "$scratch/pc_consumer" "$src/main.c" $(pc --cflags --libs weft) \
    -Wl,-rpath,"$(pc --variable=libdir weft)"
"$scratch/pc_consumer" | grep -q "weft consumer ok"
cc -o "$scratch/pc_static" "$src/main.c" $(pc --cflags weft) \
    "$(pc --variable=libdir weft)/libweft.a" $(pc --libs-only-l --static weft | sed 's/-lweft//')
"$scratch/pc_static" | grep -q "weft consumer ok"
echo "pkg-config (shared and static, no other .pc file): ok"
# As a subproject (add_subdirectory), weft builds its libraries and neither
# its tests, nor its benchmarks, tools or examples.
sub=$scratch/subproject
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$sub"
printf '%s\n' 'cmake_minimum_required(VERSION 3.25)' 'project(weft_sub C)' \
    "add_subdirectory(\"$top\" weft)" "add_executable(consumer \"$src/main.c\")" \
    'target_link_libraries(consumer PRIVATE weft::weft)' >"$sub/CMakeLists.txt"
cmake -S "$sub" -B "$sub/build" >/dev/null
targets=$(cmake --build "$sub/build" --target help | sed -n 's/^\.\.\. //p' | awk '{print $1}')
for t in test_exec weft-info pipeline overlap; do
    if echo "$targets" | grep -qx "$t"; then
        echo "subproject: target $t is built by default" >&2
        exit 1
    fi
done
echo "$targets" | grep -qx weft
cmake --build "$sub/build" --target consumer >/dev/null
"$sub/build/consumer" | grep -q "weft consumer ok"
echo "subproject: ok"
# The shared library exports weft_ symbols only.
lib=$(find "$prefix" -name 'libweft.so.*' | head -1)
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v -E '^(weft_[a-z]|_init$|_fini$)' || true)
if [ -n "$bad" ]; then
    echo "unexpected exported symbols: $bad" >&2
    exit 1
fi
echo "exports: ok"
