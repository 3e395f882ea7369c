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
for kind in shared static; do
    cmake -S "$src" -B "$scratch/$kind" -DCMAKE_PREFIX_PATH="$prefix" -DWEFT_KIND=$kind >/dev/null
    cmake --build "$scratch/$kind" >/dev/null
    LD_LIBRARY_PATH="$prefix/lib:$(echo "$prefix"/lib/*-linux-gnu 2>/dev/null | tr ' ' ':')" \
        "$scratch/$kind/consumer" | grep -q "weft consumer ok"
    echo "find_package($kind): ok"
done
pcdir=$(dirname "$(find "$prefix" -name weft.pc | head -1)")
cc -o "$scratch/pc_consumer" "$src/main.c" $(PKG_CONFIG_PATH=$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} pkg-config --cflags --libs weft) \
    -Wl,-rpath,"$(PKG_CONFIG_PATH=$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} pkg-config --variable=libdir weft)"
"$scratch/pc_consumer" | grep -q "weft consumer ok"
echo "pkg-config: ok"
# The shared library exports weft_ symbols only.
lib=$(find "$prefix" -name 'libweft.so.*' | head -1)
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v -E '^(weft_[a-z]|_init$|_fini$)' || true)
if [ -n "$bad" ]; then
    echo "unexpected exported symbols: $bad" >&2
    exit 1
fi
echo "exports: ok"
