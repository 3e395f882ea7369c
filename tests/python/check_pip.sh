#!/bin/sh
# check_pip.sh PYTHON SRC SCRATCH: install the weft package from a copy of
# SRC with pip (offline: --no-index, setuptools from the system, no build
# isolation) into SCRATCH/site, and run examples/double.py with it alone.
set -eu
py=$1 src=$2 scratch=$3
if ! "$py" -m pip --version >/dev/null 2>&1; then
    echo "skipped: $py has no pip (python3-pip)"
    exit 77
fi
rm -rf "$scratch"
mkdir -p "$scratch"
cp -r "$src" "$scratch/src"   # pip builds in the tree it is given
rm -rf "$scratch/src/build" "$scratch/src/"*.egg-info
"$py" -m pip install -q --no-index --no-build-isolation --no-deps \
    --target "$scratch/site" "$scratch/src"
cd "$scratch"
PYTHONPATH="$scratch/site" "$py" -c "import weft, sys; assert weft.__file__.startswith('$scratch/site'), weft.__file__; print('weft', weft.version(), 'from', weft.__file__)"
PYTHONPATH="$scratch/site" "$py" "$src/examples/double.py" >/dev/null
echo "pip install: ok"
