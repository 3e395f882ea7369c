"""Native nodes (Graph.native) and external events (Graph.wait_event,
record_event, Exec.launch_after) on the selected driver.

A native function issues work of its own on weft's queue: on OpenCL a
clEnqueueFillBuffer through libOpenCL (ctypes, as PyOpenCL would), on
CUDA a cuMemsetD32Async through libcuda; on the host driver it writes the
bytes through the NumPy array it is given; on the sim it checks what it
was given (the sim's handles are weft's own objects). Live events are
OpenCL user events and markers, and CUDA events; the host and sim drivers'
events are weft's internal objects, which Python cannot make.
"""

import ctypes
import ctypes.util
import functools
import gc

import numpy as np
import pytest

import weft
from conftest import PORTABLE

PATTERN = 0x5EF75EF7


def _driver(rt):
    return rt.devices[0].driver


# ---- the program's own OpenCL and CUDA, through ctypes --------------------

@functools.lru_cache(maxsize=None)
def _opencl():
    name = ctypes.util.find_library("OpenCL") or "libOpenCL.so.1"
    cl = ctypes.CDLL(name)
    vp, u, sz = ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t
    i32 = ctypes.c_int32
    cl.clEnqueueFillBuffer.argtypes = [vp, vp, vp, sz, sz, sz, u, vp, vp]
    cl.clCreateUserEvent.argtypes = [vp, ctypes.POINTER(i32)]
    cl.clCreateUserEvent.restype = vp
    cl.clSetUserEventStatus.argtypes = [vp, i32]
    cl.clGetEventInfo.argtypes = [vp, u, sz, vp, vp]
    cl.clReleaseEvent.argtypes = [vp]
    cl.clCreateCommandQueue.argtypes = [vp, vp, ctypes.c_uint64, ctypes.POINTER(i32)]
    cl.clCreateCommandQueue.restype = vp
    cl.clReleaseCommandQueue.argtypes = [vp]
    cl.clEnqueueMarkerWithWaitList.argtypes = [vp, u, ctypes.POINTER(vp), ctypes.POINTER(vp)]
    cl.clFinish.argtypes = [vp]
    cl.clWaitForEvents.argtypes = [u, ctypes.POINTER(vp)]
    return cl


@functools.lru_cache(maxsize=None)
def _cuda():
    cu = ctypes.CDLL("libcuda.so.1")
    vp = ctypes.c_void_p
    cu.cuCtxPushCurrent_v2.argtypes = [vp]
    cu.cuCtxPopCurrent_v2.argtypes = [ctypes.POINTER(vp)]
    cu.cuEventCreate.argtypes = [ctypes.POINTER(vp), ctypes.c_uint]
    cu.cuEventDestroy_v2.argtypes = [vp]
    cu.cuEventQuery.argtypes = [vp]
    cu.cuEventSynchronize.argtypes = [vp]
    cu.cuMemsetD32Async.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, vp]
    return cu


CL_COMPLETE = 0
CL_EVENT_COMMAND_EXECUTION_STATUS = 0x11D3


def _cl_status(cl, ev):
    st = ctypes.c_int32(-99)
    assert cl.clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, 4,
                             ctypes.byref(st), None) == 0
    return st.value


# ---- native nodes ---------------------------------------------------------

def _fill(seen):
    """A native function that fills access 0 with PATTERN on any driver."""
    def fn(ctx):
        seen.append((ctx.driver, ctx.device, ctx.node, ctx.count, ctx.size(0),
                     ctx.queue))
        n = ctx.size(0)
        if ctx.driver == "host":
            ctx.array(0).view(np.uint32)[:] = PATTERN
        elif ctx.driver == "opencl":
            cl = _opencl()
            mem, off = ctx.mem(0)
            pat = ctypes.c_uint32(PATTERN)
            return cl.clEnqueueFillBuffer(ctx.queue, mem, ctypes.byref(pat), 4,
                                          off, n, 0, None, None)
        elif ctx.driver == "cuda":
            return _cuda().cuMemsetD32Async(ctx.address(0), PATTERN, n // 4,
                                            ctx.queue)
        return 0
    return fn


def test_native_node_does_its_work(rt):
    drv = _driver(rt)
    a = np.zeros(256, dtype=np.uint32)
    b = rt.wrap(a)
    seen = []
    g = rt.graph()
    node = g.native(_fill(seen), weft.write(b[64:192]))
    assert g.node_count == 1
    e = g.instantiate()
    e.run()
    assert len(seen) == 1
    d, dev, n, count, size, queue = seen[0]
    assert (d, n, count, size) == (drv, node, 1, 512)
    assert dev is e.node_device(node)
    assert (queue == 0) == (drv == "host")
    b.sync()
    if drv != "sim":   # the sim's function enqueues nothing
        assert (a[64:192] == PATTERN).all()
        assert (a[:64] == 0).all() and (a[192:] == 0).all()
    e.close()


def test_native_after_a_kernel_and_before_a_host_task(rt, kernels):
    # kernel -> native (reads and writes the bytes) -> host task: the
    # native function's work is ordered between them.
    drv = _driver(rt)
    a = np.zeros(64, dtype=np.uint32)
    b = rt.wrap(a)
    g = rt.graph()
    g.kernel(kernels.kernel("add_u32"), 64, b, np.uint32(3), np.int64(64))
    g.native(_fill([]), weft.rw(b[0:32]))
    got = []
    g.host(lambda x: got.append(x.copy()), weft.read(b))
    g.instantiate().run()
    want = np.full(64, 3, dtype=np.uint32)
    if drv != "sim":
        want[:32] = PATTERN
    np.testing.assert_array_equal(got[0], want)


def test_native_failures_fail_the_node(rt):
    a = np.zeros(16, dtype=np.float32)
    b = rt.wrap(a)
    ran = []
    for fn, what in ((lambda ctx: 7, "returned 7"),
                     (lambda ctx: 1 / 0, "ZeroDivisionError")):
        g = rt.graph()
        g.native(fn, weft.rw(b))
        g.host(lambda x: ran.append(1), weft.read(b))   # canceled
        e = g.instantiate()
        with pytest.raises(weft.IOFailure) as ei:
            e.run()
        assert what in str(ei.value)
        if what == "ZeroDivisionError":
            assert isinstance(ei.value.__cause__, ZeroDivisionError)
        e.close()
        g.close()
    assert ran == []


def test_native_per_driver_functions_and_context(rt):
    drv = _driver(rt)
    calls = []
    seen = {}

    def look(ctx):
        calls.append(ctx.driver)
        seen["ctx"] = ctx
        seen["native"] = (ctx.context, ctx.device_id)
        seen["device"] = ctx.device
        assert ctx.device.driver == ctx.driver
        with pytest.raises(IndexError):
            ctx.size(1)
        if ctx.driver == "opencl":
            assert ctx.mem(0)[0] and ctx.ptr(0) == 0 and ctx.array(0) is None
        if ctx.driver == "host":
            assert ctx.ptr(0) and ctx.address(0) == ctx.ptr(0)

    b = rt.empty(64)
    g = rt.graph()
    g.native({"host": look, "sim": look, "opencl": look, "cuda": look}, weft.read(b))
    g.instantiate().run()
    assert calls == [drv]
    # the handles are those weft_device_native gives (host: none)
    assert seen["native"] == seen["device"].native()
    with pytest.raises(weft.BadState):    # valid during the call only
        seen["ctx"].size(0)
    # only other drivers: no device can run it
    other = "sim" if drv != "sim" else "host"
    h = rt.graph()
    h.native(look, weft.read(b), drivers=[other])
    with pytest.raises(weft.NoDevice):
        h.instantiate()
    with pytest.raises(weft.InvalidArgument):
        rt.graph().native(look, drivers="nosuch")
    with pytest.raises(TypeError):
        rt.graph().native({"host": 3})
    with pytest.raises(ValueError):
        rt.graph().native(look, drivers=[])


def test_native_capture_replays(rt):
    # A capturable function in a graph launched many times with native
    # graphs on: each launch's result is the function's (the host driver
    # calls it at each replay; CUDA and the sim replay what it enqueued).
    drv = _driver(rt)
    a = np.zeros(64, dtype=np.uint32)
    b = rt.wrap(a)
    g = rt.graph()
    calls = []
    g.native(_fill(calls), weft.write(b), capture=True)
    e = g.instantiate(native_graphs="on")
    for _ in range(3):
        e.run()
    b.sync()
    if drv != "sim":
        assert (a == PATTERN).all()
    assert 1 <= len(calls) <= 6
    with pytest.raises(weft.InvalidArgument):    # not a native node
        h = rt.graph()
        h.empty()
        weft.check(weft._L.weft_graph_set_native_capture(h._ptr(), 0, 1))


def test_native_graph_dropped_before_its_exec(rt):
    a = np.zeros(16, dtype=np.uint32)
    b = rt.wrap(a)
    g = rt.graph()
    g.native(_fill([]), weft.write(b))
    e = g.instantiate()
    del g
    gc.collect()
    e.run()
    e.run()
    b.sync()
    if _driver(rt) != "sim":
        assert (a == PATTERN).all()


# ---- external events ------------------------------------------------------

def test_native_handle():
    class CuPyLike:
        ptr = 0x1000

    class PyOpenCLLike:
        int_ptr = 0x2000

    class PyCUDALike:
        handle = 0x3000

    assert weft.native_handle(None) == 0
    assert weft.native_handle(0x10) == 0x10
    assert weft.native_handle(np.uint64(0x20)) == 0x20
    assert weft.native_handle(ctypes.c_void_p(0x30)) == 0x30
    assert weft.native_handle(CuPyLike()) == 0x1000
    assert weft.native_handle(PyOpenCLLike()) == 0x2000
    assert weft.native_handle(PyCUDALike()) == 0x3000
    with pytest.raises(TypeError):
        weft.native_handle("event")


def test_event_nodes_refuse_bad_input(rt):
    g = rt.graph()
    with pytest.raises(weft.InvalidArgument, match="nosuch"):
        g.wait_event("nosuch", 0x10)
    with pytest.raises(weft.InvalidArgument):
        g.record_event(_driver(rt), 0)        # a NULL event
    with pytest.raises(TypeError):
        g.wait_event(_driver(rt), "event")
    assert g.node_count == 0


def _live_events(rt):
    drv = _driver(rt)
    if drv in ("host", "sim"):
        pytest.skip("%s events are weft's internal objects, which Python cannot "
                    "make (live events are tested on OpenCL and CUDA)" % drv)
    return drv


def test_event_wait_holds_the_graph(rt, kernels):
    drv = _live_events(rt)
    a = np.arange(64, dtype=np.float32)
    b = rt.wrap(a)
    if drv == "opencl":
        cl = _opencl()
        err = ctypes.c_int32()
        ev = cl.clCreateUserEvent(rt.devices[0].native()[0], ctypes.byref(err))
        assert ev and err.value == 0
    else:
        cu = _cuda()
        ctx = rt.devices[0].native()[0]
        assert cu.cuCtxPushCurrent_v2(ctx) == 0
        ev = ctypes.c_void_p()
        assert cu.cuEventCreate(ctypes.byref(ev), 0) == 0
        ev = ev.value
    g = rt.graph()
    g.wait_event(drv, ev, weft.rw(b))
    g.kernel(kernels.kernel("twice"), 64, b, np.uint32(64))
    # the event belongs to device 0's context: the nodes run there
    e = g.instantiate(device=rt.devices[0])
    e.launch()
    if drv == "opencl":
        # held until the program sets its event
        assert e.status() is False
        assert cl.clSetUserEventStatus(ev, CL_COMPLETE) == 0
    # (CUDA: an event never recorded counts as complete)
    e.wait()
    b.sync()
    np.testing.assert_array_equal(a, np.arange(64, dtype=np.float32) * 2)
    e.close()
    g.close()
    if drv == "opencl":
        cl.clReleaseEvent(ev)
    else:
        cu.cuEventDestroy_v2(ev)
        cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))


def test_event_record_after_the_work(rt, kernels):
    drv = _live_events(rt)
    a = np.ones(64, dtype=np.float32)
    b = rt.wrap(a)
    if drv == "opencl":
        cl = _opencl()
        err = ctypes.c_int32()
        ev = cl.clCreateUserEvent(rt.devices[0].native()[0], ctypes.byref(err))
        assert ev and err.value == 0
        assert _cl_status(cl, ev) != CL_COMPLETE
    else:
        cu = _cuda()
        assert cu.cuCtxPushCurrent_v2(rt.devices[0].native()[0]) == 0
        p = ctypes.c_void_p()
        assert cu.cuEventCreate(ctypes.byref(p), 0) == 0
        ev = p.value
    g = rt.graph()
    g.kernel(kernels.kernel("twice"), 64, b, np.uint32(64))
    g.record_event(drv, ev, weft.read(b))
    # the event belongs to device 0's context: the nodes run there
    e = g.instantiate(device=rt.devices[0])
    e.run()
    if drv == "opencl":
        # weft sets it from the driver's callback once the work is done,
        # which may be just after the wait returned
        evs = (ctypes.c_void_p * 1)(ev)
        assert cl.clWaitForEvents(1, evs) == 0
        assert _cl_status(cl, ev) == CL_COMPLETE
    else:
        assert cu.cuEventSynchronize(ev) == 0 and cu.cuEventQuery(ev) == 0
    b.sync()
    assert (a == 2).all()
    e.close()
    g.close()
    if drv == "opencl":
        cl.clReleaseEvent(ev)
    else:
        cu.cuEventDestroy_v2(ev)
        cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))


def test_launch_after_the_programs_queue(rt, kernels):
    drv = _driver(rt)
    if drv != "opencl":
        pytest.skip("launch_after on %s: a queue of the driver's own (OpenCL's "
                    "is tested; CUDA's in the C suite)" % drv)
    cl = _opencl()
    ctx, dev = rt.devices[0].native()
    err = ctypes.c_int32()
    q = cl.clCreateCommandQueue(ctx, dev, 0, ctypes.byref(err))
    gate = cl.clCreateUserEvent(ctx, ctypes.byref(err))
    assert q and gate
    marker = ctypes.c_void_p()
    gates = (ctypes.c_void_p * 1)(gate)
    assert cl.clEnqueueMarkerWithWaitList(q, 1, gates, ctypes.byref(marker)) == 0
    a = np.arange(32, dtype=np.float32)
    b = rt.wrap(a)
    g = rt.graph()
    g.kernel(kernels.kernel("twice"), 32, b, np.uint32(32))
    e = g.instantiate()
    e.launch_after("opencl", q)
    assert e.status() is False      # behind the program's shut queue
    assert cl.clSetUserEventStatus(gate, CL_COMPLETE) == 0
    e.wait()
    b.sync()
    np.testing.assert_array_equal(a, np.arange(32, dtype=np.float32) * 2)
    e.close()
    cl.clFinish(q)
    cl.clReleaseEvent(marker)
    cl.clReleaseEvent(gate)
    cl.clReleaseCommandQueue(q)


def test_portable_source_is_the_tests(kernels):
    assert "twice" in PORTABLE and kernels.kernel("twice").params is not None
