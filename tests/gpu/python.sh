#!/bin/bash
# The Python package on the CUDA driver: the pytest suite (python/tests)
# with WEFT_DEVICES=cuda, the examples (python/examples/*.py) on CUDA, and
# bench/python_overhead.py (Python's cost per node and per relaunch beside
# C's). Uses a build of weft that exists already, with the system's
# python3 (numpy needed; pytest for the suite); installs nothing. From the
# repository root:
#     tests/gpu/python.sh BUILD_DIR [OUTDIR]
# e.g. tests/gpu/python.sh build-gpu. Logs go to OUTDIR (default
# BUILD_DIR/python-out); a summary of every step is printed last, each
# "passed", "FAILED (rc N)" or "skipped: why". Exits 1 if a step failed.
set -u
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 BUILD_DIR [OUTDIR]" >&2
    exit 2
fi
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
out=${2:-$build/python-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The first interpreter that has numpy: PYTHON, /usr/bin/python3, then
# every python3 on PATH (the GPU machine's system one has none, a venv on
# its PATH has).
py=
for c in ${PYTHON:-} /usr/bin/python3 $(which -a python3 2>/dev/null); do
    if [ -x "$c" ] && "$c" -c "import numpy" 2>/dev/null; then
        py=$c
        break
    fi
done
[ -n "$py" ] || py=${PYTHON:-/usr/bin/python3}

export PYWEFT_LIBRARY=$build/libweft.so
export PYTHONPATH=$src/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
export WEFT_DEVICES=cuda

summary=()
failed=0
note() { summary+=("$1: $2"); }
step() { # step NAME TIMEOUT COMMAND...: passed, FAILED, or skipped (rc 77)
    local name=$1 limit=$2 rc t0=$SECONDS
    shift 2
    echo "=== $name: $*"
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    tail -n 30 "$out/$name.log"
    if [ $rc -eq 0 ]; then
        note "$name" "passed ($((SECONDS - t0)) s)"
    elif [ $rc -eq 77 ]; then
        note "$name" "skipped: $(grep -m1 -o 'skipped: .*' "$out/$name.log" | cut -c10-)"
    else
        note "$name" "FAILED (rc $rc, $((SECONDS - t0)) s; log $out/$name.log)"
        failed=1
    fi
}
finish() {
    echo
    echo "=== summary (WEFT_DEVICES=cuda, $PYWEFT_LIBRARY, ${py:-no python3})"
    printf '  %s\n' "${summary[@]}"
    exit $failed
}

if [ ! -f "$PYWEFT_LIBRARY" ]; then
    note all "skipped: no $PYWEFT_LIBRARY (build weft first)"
    finish
fi
if [ -z "$py" ]; then
    note all "skipped: no python3"
    finish
fi
if ! "$py" -c "import numpy" 2>/dev/null; then
    note all "skipped: $py has no numpy (Debian/Ubuntu: python3-numpy)"
    finish
fi
# Is there a CUDA device for weft at all?
if ! "$py" -c "
import sys, weft
r = weft.Runtime()
if not r.devices:
    print('; '.join('%s: %s' % (d.name, d.reason) for d in r.drivers if d.name == 'cuda'))
    sys.exit(3)" >"$out/probe.log" 2>&1; then
    note all "skipped: weft finds no CUDA device: $(tail -n 1 "$out/probe.log")"
    finish
fi
"$py" -c "import weft; r = weft.Runtime(); print('devices:', r.devices)"

if "$py" -c "import pytest" 2>/dev/null; then
    # a test still running after 60 s prints every thread's Python stack
    step pytest 600 "$py" -m pytest -q -rs -p no:cacheprovider \
        -o console_output_style=classic -o faulthandler_timeout=60 \
        "$src/python/tests"
else
    note pytest "skipped: $py has no pytest (Debian/Ubuntu: python3-pytest)"
fi
for ex in "$src"/python/examples/*.py; do
    name=$(basename "$ex" .py)
    args=()
    [ "$name" = pipeline ] && args=(--trace "$out/pipeline-trace.json")
    step "example_$name" 300 "$py" "$ex" "${args[@]}"
done
helper=$build/bench/libweft_pybench.so
if [ -f "$helper" ]; then
    step bench 300 "$py" "$src/bench/python_overhead.py" --helper "$helper"
else
    step bench 300 "$py" "$src/bench/python_overhead.py"
fi
finish
