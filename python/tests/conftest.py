"""Fixtures of weft's Python tests.

The devices come from WEFT_DEVICES, as for every weft test: CTest runs this
suite three times, on host, sim and OpenCL (PoCL, POCL_DEVICES="pthread
pthread"). Where the selected driver has no device the whole run says
"skipped: why" and exits 77, which CTest reports as skipped.
"""

import gc
import os
import sys

import numpy as np
import pytest

import weft

PORTABLE = r"""
WEFT_KERNEL void twice(WEFT_GLOBAL float *a, weft_u32 n)
{
    long i = weft_global_id(0);
    if (i < n) a[i] *= 2.0f;
}
WEFT_KERNEL void axpy(WEFT_GLOBAL float *y, WEFT_GLOBAL const float *x, float a, weft_u32 n)
{
    long i = weft_global_id(0);
    if (i < n) y[i] = a * y[i] + x[i];
}
WEFT_KERNEL void add_u32(WEFT_GLOBAL weft_u32 *v, weft_u32 k, long n)
{
    long i = weft_global_id(0);
    if (i < n) v[i] += k;
}
WEFT_KERNEL void tile_inc(WEFT_GLOBAL float *t, weft_u32 rows, weft_u32 cols, weft_u32 ld)
{
    long c = weft_global_id(0), r = weft_global_id(1);
    if (r < rows && c < cols) t[r * ld + c] += 1.0f;
}
"""


# The thread-sanitizer build runs half the random cases (WT_ORACLE_SCALE, as
# the C oracle does).
SCALE = float(os.environ.get("WT_ORACLE_SCALE", "1"))


def scaled(n):
    """n cases, scaled by WT_ORACLE_SCALE (at least 1)."""
    return max(1, int(n * SCALE))


def devices_selected():
    """The WEFT_DEVICES of this run ("host" when unset)."""
    return os.environ.get("WEFT_DEVICES", "host")


def pytest_configure(config):
    try:
        rt = weft.Runtime()
    except weft.WeftError as e:
        print("skipped: WEFT_DEVICES=%s: %s" % (devices_selected(), e))
        sys.stdout.flush()
        os._exit(77)
    n = len(rt.devices)
    rt.close()
    if n == 0:
        print("skipped: no device for WEFT_DEVICES=%s" % devices_selected())
        sys.stdout.flush()
        os._exit(77)


@pytest.fixture(scope="module")
def rt():
    """A runtime on the selected devices for the tests of one file (its
    first launch calibrates: once per file), closed and collected after."""
    r = weft.Runtime()
    yield r
    r.close()
    gc.collect()


@pytest.fixture(scope="module")
def kernels(rt):
    """The test kernels (PORTABLE) built for rt."""
    return rt.module(PORTABLE, name="tests.portable")


def f32(n, seed=0):
    """n random float32 values."""
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)
