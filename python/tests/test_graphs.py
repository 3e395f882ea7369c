"""Graphs: every kind of node, instantiate, launch, wait, set_arg, stats."""

import threading

import numpy as np
import pytest

import weft
from conftest import PORTABLE, f32


def test_kernel_write_read_copy_fill(rt, kernels):
    n = 512
    x, y0 = f32(n, 1), f32(n, 2)
    out, out2 = np.empty(n, np.float32), np.empty(n, np.float32)
    bx, by, bz = rt.empty(n), rt.empty(n), rt.empty(n)
    g = rt.graph()
    g.write(bx, x)
    g.write(by, y0)
    k = g.kernel(kernels.kernel("axpy"), n, weft.rw(by), weft.read(bx),
                 np.float32(3), np.uint32(n))
    g.copy(bz, by)
    g.fill(bx[0:n // 2], np.float32(1.5))
    g.read(by, out)
    g.read(bx, out2)
    assert g.node_count == 7 and g.edge_count > 0
    with g.instantiate() as e:
        e.run()
        assert isinstance(e.node_device(k), weft.Device)
    want = 3 * y0 + x
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)   # FMA or not
    np.testing.assert_allclose(bz.read(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out2[:n // 2], 1.5)
    np.testing.assert_array_equal(out2[n // 2:], x[n // 2:])


def test_write_reads_the_array_at_every_launch(rt, kernels):
    src = np.zeros(8, np.float32)
    dst = np.empty(8, np.float32)
    b = rt.empty(8)
    g = rt.graph()
    g.write(b, src)
    g.kernel(kernels.kernel("twice"), 8, b, np.uint32(8))
    g.read(b, dst)
    e = g.instantiate()
    for i in range(3):
        src[:] = i
        e.run()
        np.testing.assert_array_equal(dst, 2.0 * i)


def test_arguments_checked_against_numpy_types(rt, kernels):
    b = rt.empty(16)
    g = rt.graph()
    k = kernels.kernel("axpy")
    with pytest.raises(TypeError, match="NumPy scalar"):
        g.kernel(k, 16, b, b, 2.0, np.uint32(16))
    # One missing: refused at the add where weft knows the parameters (host,
    # sim) or their number (OpenCL), else possibly by the driver at the
    # launch. (On CUDA a missing argument may go unnoticed: not checked.)
    if rt.devices[0].driver in ("host", "sim", "opencl"):
        fresh = rt.module(PORTABLE).kernel("axpy")
        with pytest.raises(weft.BadArguments) as ei:
            h = rt.graph()
            h.kernel(fresh, 16, b, b, np.float32(2))
            h.instantiate().run()
        assert ei.value.code == -9 and "axpy" in ei.value.message
        if ei.value.driver == "opencl":
            assert ei.value.driver_code == -52
            assert ei.value.driver_name == "CL_INVALID_KERNEL_ARGS"
    if rt.devices[0].driver in ("host", "sim"):   # types are known
        with pytest.raises(weft.BadArguments, match="f32"):
            g.kernel(k, 16, b, b, np.uint32(2), np.uint32(16))
    with pytest.raises(TypeError):
        g.kernel(k, 16, b, "b", np.float32(2), np.uint32(16))
    assert g.node_count == 0   # a failed add leaves the graph as it was


def test_host_task_runs_on_a_weft_thread(rt):
    a = np.arange(10, dtype=np.float64)
    b = rt.wrap(a)
    seen = {}

    def task(x):
        seen["thread"] = threading.get_ident()
        x *= 10

    g = rt.graph()
    g.host(task, b)
    g.instantiate().run()
    b.sync()
    np.testing.assert_array_equal(a, np.arange(10) * 10.0)
    assert seen["thread"] != threading.get_ident()


def test_failing_host_task_fails_the_launch(rt, kernels):
    a = np.zeros(8, np.float32)
    b = rt.wrap(a)
    after = []

    def bad(x):
        raise ValueError("the task's own message")

    g = rt.graph()
    n = g.host(bad, b)
    g.host(lambda x: after.append(1), weft.read(b))   # depends on it
    e = g.instantiate()
    e.launch()
    with pytest.raises(weft.IOFailure) as ei:
        e.wait()
    err = ei.value
    assert err.code == -15
    assert "the task's own message" in str(err) and "ValueError" in err.message
    assert "node %d" % n in err.message
    assert isinstance(err.__cause__, ValueError)
    assert after == []     # its dependent was canceled
    with pytest.raises(weft.IOFailure):
        e.status()


def test_map_nodes_and_blocks(rt, kernels):
    # Rows of 128 bytes: a kernel's block starts where OpenCL devices
    # take it (arg_offset_align).
    m = np.zeros((8, 32), np.float32)
    b = rt.wrap(m)
    g = rt.graph()
    t = b.tile(2, 0, 3, 4)             # rows 2-4, columns 0-3
    assert t.offset % rt.devices[0].arg_offset_align == 0
    g.kernel(kernels.kernel("tile_inc"), (4, 3), weft.rw(t),
             np.uint32(3), np.uint32(4), np.uint32(32))
    sums = []
    g.host(lambda x: sums.append(x.sum()), weft.read(t))
    g.map(weft.rw(b[0:32]), lambda x: x.__iadd__(5))
    tile_out = np.zeros((3, 4), np.float32)
    g.read(t, tile_out)
    g.fill(b.tile(6, 0, 2, 2), np.float32(9))
    g.instantiate().run()
    b.sync()
    want = np.zeros((8, 32), np.float32)
    want[2:5, 0:4] += 1
    want[0, :] += 5
    want[6:8, 0:2] = 9
    np.testing.assert_array_equal(m, want)
    np.testing.assert_array_equal(tile_out, 1)
    assert sums == [12.0]


def test_block_write_and_copy(rt):
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = rt.zeros((5, 5))
    n = rt.zeros((5, 5))
    g = rt.graph()
    g.write(m.tile(1, 1, 3, 4), src)
    g.copy(n.tile(0, 0, 3, 4), m.tile(1, 1, 3, 4))
    g.instantiate().run()
    np.testing.assert_array_equal(m.read()[1:4, 1:5], src)
    np.testing.assert_array_equal(n.read()[0:3, 0:4], src)


def test_edges_cycles_empty_priority_devices(rt):
    g = rt.graph()
    order = []
    a = g.host(lambda: order.append("a"))
    b = g.host(lambda: order.append("b"))
    j = g.empty()
    g.edge(b, j)
    g.edge(j, a)
    with pytest.raises(weft.Cycle):
        g.edge(a, b)
    g.set_priority(b, "high")
    assert g.candidate_devices(a) == []
    assert "explicit" in g.dot()
    e = g.instantiate(policy="single", native_graphs="off")
    e.run()
    assert order == ["b", "a"]


def test_set_arg_stats_timings_dot(rt, kernels):
    a = np.zeros(64, np.uint32)
    b = rt.wrap(a)
    g = rt.graph()
    k = g.kernel(kernels.kernel("add_u32"), 64, b, np.uint32(1), np.int64(64))
    e = g.instantiate(device=rt.devices[0])
    e.run()
    e.set_arg(k, 1, np.uint32(10))
    e.enable_timings()
    e.run()
    with pytest.raises(weft.BadArguments, match="u32"):
        e.set_arg(k, 1, np.float64(1))    # checked by the package first
    with pytest.raises(weft.BadArguments, match="Python int"):
        e.set_arg(k, 1, 10)
    b.sync()
    np.testing.assert_array_equal(a, 11)
    s = e.stats()
    assert s["launches"] == 2 and s["nodes"] >= 1 and s["lanes"]
    assert s["lanes"][0]["device"] is rt.devices[0]
    t = e.node_timing(k)
    assert t["timed"] and t["end_ns"] >= t["start_ns"]
    assert "digraph" in e.dot()
    assert e.status() is True
    assert e.node_device(k) is rt.devices[0]


def test_closed_objects_refuse_use(rt, kernels):
    g = rt.graph()
    g.close()
    with pytest.raises(weft.Destroyed):
        g.empty()
    e = rt.graph().instantiate()
    e.close()
    with pytest.raises(weft.Destroyed):
        e.launch()


def test_map_callback_exception_is_raised_by_wait(rt):
    b = rt.zeros(8)
    g = rt.graph()

    def bad(x):
        raise KeyError("from the map")

    g.map(weft.read(b), bad)
    e = g.instantiate()
    e.launch()
    with pytest.raises(KeyError, match="from the map"):
        e.wait()
    with pytest.raises(KeyError):   # each launch that runs it
        e.run()
    with pytest.raises(ValueError, match="C-contiguous"):
        g.write(b, np.zeros((4, 4), np.float32)[:, :2])


def test_launch_after_refuses_an_unknown_driver(rt):
    e = rt.graph().instantiate()
    with pytest.raises(weft.InvalidArgument) as ei:
        e.launch_after("nosuch", 0)
    assert "nosuch" in ei.value.message


NINE = r"""
WEFT_KERNEL void nine(WEFT_GLOBAL float *a, float b, float c, float d, float e,
                      float f, float g, float h, weft_u32 n)
{
    long i = weft_global_id(0);
    if (i < n) a[i] += b + c + d + e + f + g + h;
}
"""


def test_kernel_argument_signatures_alternate(rt, kernels):
    # Graph.kernel packs the arguments of a signature of types it has seen
    # in one go: alternating signatures, more than 8 arguments, a closed
    # buffer and wrong types after a signature was seen behave as the first
    # time.
    k = kernels.kernel("add_u32")
    n, m = 128, 32          # ranges of 128 bytes: OpenCL's sub-buffer alignment
    v = rt.zeros(n, np.uint32)
    g = rt.graph()
    for i in range(6):
        r = v[(i % 4) * m:(i % 4 + 1) * m]
        arg = (v, r, weft.rw(r), weft.rw(r), v, r)[i]
        cnt = n if i in (0, 4) else m
        g.kernel(k, cnt, arg, np.uint32(i + 1), np.int64(cnt))
    assert g.node_count == 6
    driver = rt.devices[0].driver
    if driver in ("host", "sim"):      # the parameters' types are known
        with pytest.raises(weft.BadArguments, match="u32"):
            g.kernel(k, m, v, np.float32(1), np.int64(m))
    with pytest.raises(TypeError, match="NumPy scalar"):
        g.kernel(k, m, v, 1, np.int64(m))
    if driver in ("host", "sim", "opencl"):   # their number is
        with pytest.raises(weft.BadArguments, match="arguments given"):
            g.kernel(k, m, v, np.uint32(1))
    assert g.node_count == 6
    g.instantiate().run()
    want = np.zeros(n, np.uint32)
    want += 1 + 5                  # the whole buffer, twice
    for i in (1, 2, 3, 5):
        want[(i % 4) * m:(i % 4 + 1) * m] += i + 1
    np.testing.assert_array_equal(v.read(), want)

    nine = rt.module(NINE).kernel("nine")
    a = rt.zeros(8)
    h = rt.graph()
    for i in range(3):
        h.kernel(nine, 8, a, *[np.float32(j) for j in range(7)], np.uint32(8),
                 group=None if i else 8)
    h.instantiate().run()
    np.testing.assert_array_equal(a.read(), 3 * 21.0)
    b = rt.zeros(16)
    h.kernel(nine, 8, b, *[np.float32(0)] * 7, np.uint32(8))
    b.close()
    with pytest.raises(weft.Destroyed):
        h.kernel(nine, 8, b, *[np.float32(0)] * 7, np.uint32(8))
    assert h.node_count == 4


def test_write_read_of_views_and_read_only_arrays(rt):
    # Graph.write and read take a range's array by address: a view's own
    # first byte, a read-only source's too.
    n, m = 128, 32
    src = np.arange(2 * n, dtype=np.float32)
    ro = src[n:].copy()
    ro.flags.writeable = False
    out = np.zeros(2 * n, np.float32)
    b = rt.empty(n)
    g = rt.graph()
    for i in range(n // m):
        g.write(b[i * m:(i + 1) * m], src[n + i * m:n + (i + 1) * m])
    g.read(b, out[:n])
    g.write(b, ro)
    for i in range(n // m):
        g.read(b[i * m:(i + 1) * m], out[n + i * m:n + (i + 1) * m])
    g.instantiate().run()
    np.testing.assert_array_equal(out[:n], src[n:])
    np.testing.assert_array_equal(out[n:], ro)
    with pytest.raises(ValueError, match="not writeable"):
        g.read(b, ro)


def test_kernel_argument_out_of_range_is_refused(rt, kernels):
    k = kernels.kernel("add_u32")
    v = rt.zeros(32, np.uint32)
    g = rt.graph()
    g.kernel(k, 32, v, np.uint32(1), np.int64(32))
    with pytest.raises(OverflowError, match="add_u32"):
        g.kernel(k, 32, v.range(0, 2 ** 70), np.uint32(1), np.int64(32))
    assert g.node_count == 1


def test_kernel_nodes_gathered_behave_as_added_one_by_one(rt, kernels):
    # Graph.kernel gathers the nodes whose checks are known to pass and
    # adds them together before the graph is used otherwise: the indices,
    # edges and results are those of nodes added one by one, across
    # batches, other node kinds and graphs built side by side.
    k = kernels.kernel("add_u32")
    n, m = 32 * 100, 32      # 100 ranges of 128 bytes (OpenCL's alignment)
    v, w = rt.zeros(n, np.uint32), rt.zeros(n, np.uint32)
    host = np.zeros(n, np.uint32)
    g, h = rt.graph(), rt.graph()
    direct = rt.graph()
    want = np.zeros(n, np.uint32)
    for i in range(300):
        j = (i * 7) % 100
        r = v[j * m:(j + 1) * m]
        assert g.kernel(k, m, r, np.uint32(i % 5 + 1), np.int64(m)) == i + i // 50
        assert h.kernel(k, m, w[j * m:(j + 1) * m], np.uint32(1), np.int64(m)) == i
        assert direct._kernel(k, m, (r, np.uint32(i % 5 + 1), np.int64(m)), None) \
            == i + i // 50
        want[j * m:(j + 1) * m] += i % 5 + 1
        if i % 50 == 49:      # another kind of node: the batch goes first
            assert g.empty() == i + 1 + i // 50
            assert direct.empty() == i + 1 + i // 50
    assert g.node_count == 306 and h.node_count == 300
    assert g.dot() == direct.dot()
    g.read(v, host)
    g.instantiate().run()
    np.testing.assert_array_equal(host, want)
    h.instantiate().run()
    np.testing.assert_array_equal(w.read(), np.full(n, 3, np.uint32))


def test_gathered_kernel_nodes_raise_at_the_call(rt, kernels):
    # Once a signature and grid were accepted, a node that weft would refuse
    # is still refused by its own Graph.kernel call, with weft's message, and
    # the nodes gathered before it are added.
    k = kernels.kernel("add_u32")
    v = rt.zeros(64, np.uint32)
    g = rt.graph()
    for i in range(3):
        assert g.kernel(k, 32, v[0:32], np.uint32(1), np.int64(32)) == i
    with pytest.raises(weft.OutOfRange, match="argument 0: range"):
        g.kernel(k, 32, v.range(128, 256), np.uint32(1), np.int64(32))
    with pytest.raises(weft.OutOfRange, match="argument 0: offset 260"):
        g.kernel(k, 32, v.range(260, 0), np.uint32(1), np.int64(32))
    with pytest.raises(weft.InvalidArgument, match="empty grid"):
        g.kernel(k, 0, v[0:32], np.uint32(1), np.int64(32))
    with pytest.raises(TypeError):
        g.kernel(k, 33.0, v[0:32], np.uint32(1), np.int64(32))
    with pytest.raises(OverflowError, match="add_u32"):
        g.kernel(k, 32, v.range(2 ** 70, 0), np.uint32(1), np.int64(32))
    with pytest.raises(OverflowError, match="add_u32"):
        g.kernel(k, 32, v.range(-8, 8), np.uint32(1), np.int64(32))
    other = weft.Runtime()
    try:
        with pytest.raises(weft.InvalidArgument, match="another runtime"):
            g.kernel(k, 32, other.zeros(64, np.uint32)[0:32], np.uint32(1), np.int64(32))
    finally:
        other.close()
    assert g.node_count == 3
    # A range to the end (WHOLE), an access mode, a 2-D grid.
    assert g.kernel(k, 32, v.range(128, weft.WHOLE), np.uint32(1), np.int64(32)) == 3
    assert g.kernel(k, 32, weft.read(v[0:32]), np.uint32(1), np.int64(32)) == 4
    assert g.kernel(k, 32, weft.read(v[0:32]), np.uint32(1), np.int64(32)) == 5
    acc = weft.read(v[0:32])
    acc.mode = 9
    with pytest.raises(weft.InvalidArgument, match="unknown access mode 9"):
        g.kernel(k, 32, acc, np.uint32(1), np.int64(32))
    assert g.kernel(k, (32, 1), v[32:64], np.uint32(1), np.int64(32)) == 6
    assert g.kernel(k, (32, 1), v[32:64], np.uint32(1), np.int64(32)) == 7
    with pytest.raises(TypeError):
        g.kernel(k, (32.0, 1), v[32:64], np.uint32(1), np.int64(32))
    assert g.node_count == 8
    # Closed objects: the buffer, then the graph, then the module.
    b = rt.zeros(64, np.uint32)
    assert g.kernel(k, 32, b[0:32], np.uint32(1), np.int64(32)) == 8
    b.close()
    with pytest.raises(weft.Destroyed, match="buffer"):
        g.kernel(k, 32, b[0:32], np.uint32(1), np.int64(32))
    e = g.instantiate()
    e.run()
    assert g.kernel(k, 32, v[0:32], np.uint32(1), np.int64(32)) == 9
    g.close()
    with pytest.raises(weft.Destroyed, match="graph"):
        g.kernel(k, 32, v[0:32], np.uint32(1), np.int64(32))
    mod = rt.module(PORTABLE)
    k2 = mod.kernel("add_u32")
    g2 = rt.graph()
    assert g2.kernel(k2, 32, v[0:32], np.uint32(1), np.int64(32)) == 0
    assert g2.kernel(k2, 32, v[0:32], np.uint32(1), np.int64(32)) == 1
    mod.close()
    with pytest.raises(weft.Destroyed, match="module"):
        g2.kernel(k2, 32, v[0:32], np.uint32(1), np.int64(32))
    assert g2.node_count == 2
    g2.instantiate().run()
    e.close()


def test_set_arg_checks_a_gathered_node(rt, kernels):
    k = kernels.kernel("add_u32")
    v = rt.zeros(32, np.uint32)
    g = rt.graph()
    nodes = [g.kernel(k, 32, v, np.uint32(1), np.int64(32)) for _ in range(3)]
    e = g.instantiate()
    if k.params is not None and k.params[1].type == weft.ParamType.U32:
        with pytest.raises(weft.BadArguments, match="add_u32"):
            e.set_arg(nodes[2], 1, np.float32(2))
    e.set_arg(nodes[2], 1, np.uint32(5))
    e.run()
    np.testing.assert_array_equal(v.read(), np.full(32, 7, np.uint32))
