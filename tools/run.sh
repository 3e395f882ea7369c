#!/bin/sh
# weft's two entry points, as the README gives them:
#   tools/run.sh demo   install what is missing, build, run the demo (the
#                       pipeline example on every device, after weft-info's
#                       device list), and draw its trace as an SVG timeline
#   tools/run.sh test   install what is missing, build and run the whole test
#                       suite: a -Werror build, then the address+undefined
#                       sanitizer build, then the thread-sanitizer build,
#                       then the API fuzzer (clang's libFuzzer) for
#                       WEFT_FUZZ_SECONDS (default 120) on the seed corpus
# Needs a Debian 12 machine (or newer) and root for apt-get when packages
# are missing. WEFT_JOBS sets the build parallelism (default: all cores).
set -eu
cd "$(dirname "$0")/.."
mode=${1:-}
jobs=${WEFT_JOBS:-$(nproc)}

# The Python package (python/) needs NumPy; its tests pytest, and the
# offline "pip install ./python" setuptools and pip (venv: the README's
# install into a virtual environment).
packages="build-essential cmake pkg-config libhwloc-dev libck-dev libcmocka-dev
ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd libopenblas-dev
liblapacke-dev python3-numpy python3-pytest python3-setuptools python3-pip
python3-venv libopenmpi-dev openmpi-bin"
# The test command also renders trace timelines with headless Chromium and
# decodes the picture with zlib, and builds the fuzzer with clang and its
# libFuzzer runtime (libclang-rt-14-dev: libclang_rt.fuzzer for clang 14,
# Debian 12's clang).
test_packages="chromium zlib1g-dev clang libclang-rt-14-dev"

install_missing() { # install_missing [EXTRA PACKAGES...]
    missing=""
    for p in $packages "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
            missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "weft: installing$missing"
    if [ "$(id -u)" != 0 ]; then
        echo "weft: these Debian packages are missing and installing them needs root:$missing" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

build_target="" # build only this target where set
build() { # build DIR [cmake options...]
    dir=$1
    shift
    cmake -S . -B "$dir" -DWEFT_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs" ${build_target:+--target "$build_target"}
}

run_suite() { # run_suite DIR NAME
    echo "weft: == tests: $2 =="
    status=0
    ctest --test-dir "$1" --output-on-failure -j "$jobs" || status=$?
    # Say visibly which tests were skipped, and why.
    log="$1/Testing/Temporary/LastTest.log"
    if [ -f "$log" ]; then
        awk '/^[0-9]+\/[0-9]+ Test: /{t=$3} /^skipped: /{print "weft: skipped " t ": " substr($0, 10)}' "$log" | sort -u
    fi
    return $status
}

run_fuzz() { # the API fuzzer for WEFT_FUZZ_SECONDS on a copy of the seed corpus
    seconds=${WEFT_FUZZ_SECONDS:-120}
    echo "weft: == fuzzer: tests/fuzz/fuzz_api.c, $seconds s =="
    # Only libweft and the target, with clang, libFuzzer and ASan+UBSan.
    (
        CC=clang
        build_target=fuzz_api
        export CC
        build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_DEBUG_LEVEL=1 \
            -DWEFT_FUZZ=ON -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_TOOLS=OFF \
            -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_BENCH=OFF
    )
    out=$PWD/build-fuzz/run
    rm -rf "$out"
    mkdir -p "$out/corpus" "$out/crashes"
    cp tests/fuzz/corpus/* tests/fuzz/regress/* "$out/corpus/"
    status=0
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
        LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp} \
        ./build-fuzz/tests/fuzz/fuzz_api -max_total_time="$seconds" -timeout=60 \
        -max_len=4096 -print_final_stats=1 -artifact_prefix="$out/crashes/" \
        "$out/corpus" >"$out/log" 2>&1 || status=$?
    if [ "$status" != 0 ] || [ -n "$(ls "$out/crashes")" ]; then
        tail -n 60 "$out/log"
        echo "weft: the fuzzer found a bug; the input: $(ls "$out"/crashes/* 2>/dev/null | head -n 1)" >&2
        echo "weft: the whole log: $out/log; replay with build/tests/fuzz/fuzz_replay FILE" >&2
        exit 1
    fi
    grep -E '^(Done |stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb))' "$out/log"
}

case $mode in
demo)
    install_missing
    build build -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF
    # PoCL shows the CPU as one OpenCL device; as two (sharing the cores),
    # the demo has devices to spread its chunks over. GPUs come first when
    # there are any, and a machine without OpenCL runs on the host driver.
    export POCL_DEVICES="${POCL_DEVICES:-pthread pthread}"
    ./build/tools/weft-info | sed -n '/^Drivers:/,/^Devices:/p'
    out=build/weft-demo
    mkdir -p "$out"
    # The pipeline on every device of the first driver that has some: it
    # checks its result, prints where the kernels ran and what moved, and
    # writes the trace; weft-trace sums the trace up and draws it.
    ./build/examples/pipeline --trace "$out/pipeline-trace.json"
    echo "weft: == the trace, summed up (build/tools/weft-trace) =="
    ./build/tools/weft-trace "$out/pipeline-trace.json" -o "$out/pipeline-timeline.svg"
    ./build/tools/weft-trace "$out/pipeline-trace.json" -o "$out/pipeline-timeline.html" -q
    echo "weft: trace:    $PWD/$out/pipeline-trace.json (ui.perfetto.dev or chrome://tracing opens it)"
    echo "weft: timeline: $PWD/$out/pipeline-timeline.svg (any browser), $PWD/$out/pipeline-timeline.html (with the summary as tables)"
    echo "weft: more: build/tools/weft-info (every device), build/examples/{saxpy,stencil}, WEFT_STATS=1, WEFT_PLACE=round-robin"
    ;;
test)
    install_missing $test_packages
    # Optimised, so that gcc's flow warnings (-Werror) see what a release
    # build sees, with the debug assertions kept on.
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_DEBUG_LEVEL=1
    run_suite build "optimised build with assertions, -Werror"
    build build-asan -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=ON
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
        LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp} \
        run_suite build-asan "address+undefined sanitizers"
    build build-tsan -DCMAKE_BUILD_TYPE=Debug -DWEFT_TSAN=ON
    TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$PWD/tests/tsan.supp halt_on_error=1} \
        run_suite build-tsan "thread sanitizer"
    run_fuzz
    echo "weft: all tests passed"
    ;;
*)
    echo "usage: tools/run.sh demo|test" >&2
    exit 2
    ;;
esac
