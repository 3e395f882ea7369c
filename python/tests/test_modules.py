"""Modules from source strings, kernels by name, build logs and errors."""

import os

import numpy as np
import pytest

import weft
from conftest import PORTABLE

OPENCL_C = r"""
__kernel void twice_cl(__global float *a, uint n)
{
    size_t i = get_global_id(0);
    if (i < n) a[i] *= 2.0f;
}
"""

CUDA_CXX = r"""
extern "C" __global__ void twice_cu(float *a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] *= 2.0f;
}
"""


def _driver(rt):
    return rt.devices[0].driver


def test_portable_module_and_kernels(rt, kernels):
    assert kernels.name == "tests.portable"
    k = kernels.kernel("axpy")
    assert k.name == "axpy" and kernels["axpy"] is k
    assert all(k.supports(d) for d in rt.devices)
    assert isinstance(kernels.build_log(rt.devices[0]), str)
    with pytest.raises(weft.NotFound) as ei:
        kernels.kernel("nope")
    assert "nope" in ei.value.message and ei.value.code == -7


def test_build_error_has_the_log(rt):
    with pytest.raises(weft.BuildFailed) as ei:
        rt.module("WEFT_KERNEL void broken(WEFT_GLOBAL float *a) { a[0] = ; }",
                  name="broken.src")
    assert ei.value.code == -10 and "broken" in ei.value.message


def _run_twice(rt, mod, name):
    a = np.arange(64, dtype=np.float32)
    b = rt.wrap(a)
    g = rt.graph()
    g.kernel(mod.kernel(name), a.size, b, np.uint32(a.size))
    g.instantiate().run()
    b.sync()
    np.testing.assert_array_equal(a, np.arange(64, dtype=np.float32) * 2)


def test_opencl_c_source(rt):
    if _driver(rt) != "opencl":
        pytest.skip("OpenCL C needs an OpenCL device")
    _run_twice(rt, rt.module(OPENCL_C, kind="opencl", name="twice.cl"), "twice_cl")


def test_cuda_source(rt):
    if _driver(rt) != "cuda":
        pytest.skip("CUDA C++ needs a CUDA device")
    _run_twice(rt, rt.module(CUDA_CXX, kind="cuda", name="twice.cu"), "twice_cu")


def test_variants(rt):
    # OpenCL C for OpenCL devices, the portable dialect for every other.
    src = PORTABLE.replace("twice", "twice_cl")
    m = rt.module(variants=[(OPENCL_C, "opencl", None, "v.cl"),
                            (src, "portable", "-DUNUSED=1", "v.portable")])
    _run_twice(rt, m, "twice_cl")


def test_no_device_for_source(rt):
    if _driver(rt) in ("opencl", "cuda"):
        pytest.skip("this device takes the source")
    with pytest.raises(weft.WeftError) as ei:
        rt.module(OPENCL_C, kind="opencl")
    assert ei.value.code in (-4, -5)


def test_kind_names(rt):
    with pytest.raises(KeyError):
        rt.module(PORTABLE, kind="fortran")
    assert os.environ.get("WEFT_DEVICES", "host")
