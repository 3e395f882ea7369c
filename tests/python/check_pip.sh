#!/bin/sh
# check_pip.sh PYTHON SRC SCRATCH: pip-install the weft package, offline
# (--no-index; setuptools from the system, no build isolation), from a copy
# of SRC in a tree whose build/libweft.so is this build's, into
# SCRATCH/site; then, from another folder and without PYWEFT_LIBRARY, the
# installed package finds that library and runs examples/double.py.
set -eu
py=$1 src=$2 scratch=$3
if ! "$py" -m pip --version >/dev/null 2>&1; then
    echo "skipped: $py has no pip (python3-pip)"
    exit 77
fi
lib=$PYWEFT_LIBRARY
unset PYWEFT_LIBRARY
rm -rf "$scratch"
mkdir -p "$scratch/tree/build" "$scratch/run"
cp -r "$src" "$scratch/tree/python" # pip builds in the tree it is given
rm -rf "$scratch/tree/python/build" "$scratch/tree/python/"*.egg-info
ln -s "$lib" "$scratch/tree/build/libweft.so"
"$py" -m pip install -q --no-index --no-build-isolation --no-deps \
    --target "$scratch/site" "$scratch/tree/python"
cd "$scratch/run"
PYTHONPATH="$scratch/site" "$py" -c "
import weft
assert weft.__file__.startswith('$scratch/site'), weft.__file__
assert weft.library_path == '$scratch/tree/build/libweft.so', weft.library_path
print('weft', weft.version(), 'from', weft.__file__, 'over', weft.library_path)"
PYTHONPATH="$scratch/site" "$py" "$src/examples/double.py" >/dev/null
echo "pip install: ok"
