"""Buffers: wrapped NumPy arrays (no copy), weft's own memory, regions."""

import ctypes
import gc
import weakref

import numpy as np
import pytest

import weft
from conftest import f32


def test_wrap_does_not_copy_and_keeps_the_array(rt, kernels):
    a = f32(1000)
    want = a * 2
    b = rt.wrap(a)
    assert b.array is a and b.size == a.nbytes
    assert b.dtype == np.float32 and b.shape == (1000,)
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is not None  # the buffer keeps the array alive
    g = rt.graph()
    g.kernel(kernels.kernel("twice"), 1000, b, np.uint32(1000))
    g.instantiate().run()
    b.sync()
    np.testing.assert_array_equal(ref(), want)  # the same memory, synced
    del g
    b.close()      # closed and dropped: weft destroys it, the array goes
    del b
    gc.collect()
    assert ref() is None


def test_wrap_refuses_what_it_cannot_wrap(rt):
    with pytest.raises(ValueError):
        rt.wrap(np.zeros((4, 4), np.float32)[:, 1])
    with pytest.raises(ValueError):
        rt.wrap(np.zeros(0, np.float32))
    ro = np.zeros(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        rt.wrap(ro)
    with pytest.raises(TypeError):
        rt.wrap([1, 2, 3])


def test_new_buffers_write_read_fill(rt):
    b = rt.empty((4, 8), np.int32)
    assert b.size == 128 and b.shape == (4, 8)
    src = np.arange(32, dtype=np.int32).reshape(4, 8)
    b.write(src)
    np.testing.assert_array_equal(b.read(), src)
    b.fill(np.int32(7), offset=16, size=32)
    got = b.read()
    assert (got.ravel()[4:12] == 7).all() and got.ravel()[3] == 3
    out = np.empty(8, np.int32)
    b.read(out, offset=64)
    np.testing.assert_array_equal(out, np.arange(16, 24))
    z = rt.zeros(10, np.float64)
    np.testing.assert_array_equal(z.read(), np.zeros(10))
    raw = rt.buffer(64)
    assert raw.dtype == np.uint8 and raw.size == 64
    with pytest.raises(TypeError):
        b.fill(7)


def test_ranges_out_of_bounds_raise(rt):
    b = rt.empty(16, np.float32)
    with pytest.raises(weft.OutOfRange) as ei:
        b.read(np.empty(32, np.float32))
    assert ei.value.code == -8 and "weft_buffer_read" in ei.value.message
    with pytest.raises(weft.OutOfRange):
        b.view(100)


def test_views_and_slices(rt):
    a = np.arange(100, dtype=np.float32)
    b = rt.wrap(a)
    v = b.view(40, 40)
    assert v.parent is b and v.size == 40 and v.shape == (10,)
    np.testing.assert_array_equal(v.read(), a[10:20])
    r = b[10:20]
    assert (r.offset, r.size) == (40, 40)
    b.close()          # the view still uses it: weft destroys it later
    v.write(np.zeros(10, np.float32))
    np.testing.assert_array_equal(v.read(), np.zeros(10))
    with pytest.raises(weft.Destroyed):
        b.read()


def test_map_and_invalidate(rt):
    a = np.arange(16, dtype=np.uint32)
    b = rt.wrap(a)
    with b.map(weft.AccessMode.READ_WRITE) as m:
        assert m.dtype == np.uint32
        m[:] += 1
    np.testing.assert_array_equal(b.read(), np.arange(1, 17))
    a[:] = 5
    b.invalidate()
    np.testing.assert_array_equal(b.read(), np.full(16, 5))


def test_pinned_host_memory(rt):
    p = rt.host_empty((8, 8), np.float32)
    p[:] = 3
    b = rt.wrap(p)
    np.testing.assert_array_equal(b.read(), np.full((8, 8), 3, np.float32))
    b.close()
    del b, p
    gc.collect()


def test_device_addresses_and_program_memory(rt):
    dev = rt.devices[0]
    ctx, did = dev.native()
    assert isinstance(ctx, int) and isinstance(did, int)
    a = np.arange(32, dtype=np.float32)
    b = rt.wrap(a)
    where = b.device_address(dev, 0, 64)
    assert set(where) == {"address", "mem", "offset", "ptr"}
    if dev.driver == "host":
        # host memory: write through the address, tell weft, read it back
        view = np.ctypeslib.as_array((ctypes.c_float * 16).from_address(where["ptr"]))
        view[:] = -1
        b.mark_device_written(dev, 0, 64)
        np.testing.assert_array_equal(b.read()[:16], -1)
        mine = np.full(8, 5, np.float32)
        w = rt.wrap_device(dev, mine.ctypes.data, mine.nbytes, dtype=np.float32)
        np.testing.assert_array_equal(w.read(), 5)
        w.close()
    with pytest.raises(weft.OutOfRange):
        b.device_address(dev, 0, 4096)
