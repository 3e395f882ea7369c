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


def _cuda_or_skip(rt):
    if _driver(rt) != "cuda":
        pytest.skip("CUDA C++ needs a CUDA device (WEFT_DEVICES=%s has none)"
                    % os.environ.get("WEFT_DEVICES", "host"))


def test_cuda_source(rt):
    _cuda_or_skip(rt)
    try:
        m = rt.module(CUDA_CXX, kind="cuda", name="twice.cu")
    except (weft.NotSupported, weft.NoDevice) as e:    # libnvrtc absent
        pytest.skip("CUDA C++ needs NVRTC: %s" % e.message)
    _run_twice(rt, m, "twice_cu")
    assert isinstance(m.build_log(rt.devices[0]), str)
    # CUDA tells sizes, not types: (float *, unsigned)
    p = m.kernel("twice_cu").params
    if p is not None:                  # None: libcuda without cuFuncGetParamInfo
        assert [x.type for x in p] == [weft.ParamType.UNKNOWN] * 2
        assert [x.size for x in p] == [8, 4]
        g = rt.graph()
        with pytest.raises(weft.BadArguments, match="4 bytes"):
            g.kernel(m.kernel("twice_cu"), 64, rt.empty(64), np.uint64(64))
        with pytest.raises(weft.BadArguments, match="1 arguments given"):
            g.kernel(m.kernel("twice_cu"), 64, rt.empty(64))


def test_cuda_source_beside_portable_variant(rt):
    # One module: CUDA C++ for CUDA devices, the portable dialect for the rest.
    src = PORTABLE.replace("twice", "twice_cu")
    m = rt.module(variants=[(CUDA_CXX, "cuda", None, "twice.cu"),
                            (src, "portable", None, "twice.portable")])
    _run_twice(rt, m, "twice_cu")


def test_cuda_source_build_error(rt):
    _cuda_or_skip(rt)
    with pytest.raises((weft.BuildFailed, weft.NoDevice)) as ei:
        rt.module('extern "C" __global__ void bad(float *a) { a[0] = nope; }',
                  kind="cuda", name="bad.cu")
    if isinstance(ei.value, weft.BuildFailed):
        assert "nope" in ei.value.message


def test_kernel_params(rt, kernels):
    axpy = kernels.kernel("axpy")
    p = axpy.params
    assert axpy.params is p                      # asked once
    T = weft.ParamType
    # every driver: the portable signature tells the types
    assert [(x.type, x.size) for x in p] == [
        (T.BUFFER, 0), (T.BUFFER, 0), (T.F32, 4), (T.U32, 4)]
    assert str(p[2]) == "f32" and isinstance(p[0], weft.Param)
    b = rt.empty(16)
    g = rt.graph()
    with pytest.raises(weft.BadArguments) as ei:
        g.kernel(axpy, 16, b, np.float32(2), np.float32(2), np.uint32(16))
    assert ei.value.code == -9
    assert "argument 1 is np.float32, parameter 1 takes buffer" in ei.value.message
    with pytest.raises(weft.BadArguments, match="argument 3 is a Python int.*np.uint32"):
        g.kernel(axpy, 16, b, b, np.float32(2), 16)
    with pytest.raises(weft.BadArguments, match="argument 2 is np.float64.*f32"):
        g.kernel(axpy, 16, b, b, np.float64(2), np.uint32(16))
    with pytest.raises(weft.BadArguments, match="takes 4 .buffer, buffer, f32, u32"):
        g.kernel(axpy, 16, b, b, np.float32(2))
    with pytest.raises(weft.BadArguments, match="weft.local"):
        g.kernel(axpy, 16, b, weft.local(64), np.float32(2), np.uint32(16))
    assert g.node_count == 0
    g.kernel(axpy, 16, b, weft.read(b), np.float32(2), np.uint32(16))
    g.kernel(axpy, 16, b, weft.read(b), np.float32(3), np.uint32(16))   # checked once
    assert g.node_count == 2


OPENCL_STRUCT = r"""
typedef struct { int lo; int hi; } span;
__kernel void clamp_span(__global int *v, span s, __local int *t, uint n)
{
    size_t i = get_global_id(0);
    t[get_local_id(0)] = v[i];
    if (i < n) v[i] = min(max(t[get_local_id(0)], s.lo), s.hi);
}
"""


def test_opencl_params_partly_known(rt):
    # A struct parameter maps onto no weft type: unknown, the others told.
    if _driver(rt) != "opencl":
        pytest.skip("OpenCL C needs an OpenCL device")
    k = rt.module(OPENCL_STRUCT, kind="opencl", name="span.cl").kernel("clamp_span")
    T = weft.ParamType
    assert [x.type for x in k.params] == [T.BUFFER, T.UNKNOWN, T.LOCAL, T.U32]
    a = np.arange(-8, 8, dtype=np.int32)
    b = rt.wrap(a)
    g = rt.graph()
    with pytest.raises(weft.BadArguments, match="argument 3 is np.int32"):
        g.kernel(k, 16, b, np.array((-2, 3), dtype="i4,i4")[()], weft.local(64),
                 np.int32(16))
    g.kernel(k, 16, b, np.array((-2, 3), dtype="i4,i4")[()], weft.local(64),
             np.uint32(16), group=16)
    g.instantiate().run()
    b.sync()
    np.testing.assert_array_equal(a, np.clip(np.arange(-8, 8), -2, 3))


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
