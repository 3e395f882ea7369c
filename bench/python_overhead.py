#!/usr/bin/env python3
"""python_overhead: what the weft Python package adds to weft's C API.

Figures (issue 21, point 5), medians over rounds, one "name: value unit"
line each:
  python build        Graph.kernel(k, 16, b[i*16:(i+1)*16], np.uint32(16))
                      for N nodes on disjoint ranges, per node;
  c build             the same N weft_graph_add_kernel calls made from C
                      (bench/python_helper.c, built as
                      build/bench/libweft_pybench.so and loaded here beside
                      the same libweft), per node;
  python relaunch     e.launch(); e.wait() of one executable graph (K
                      kernel nodes), per relaunch;
  c relaunch          weft_exec_launch + weft_exec_wait of the same Exec in
                      a C loop, per relaunch; rounds alternate with the
                      Python ones so that both see the same machine;
  python relaunch - c the median of the differences of paired rounds
                      (target: at most 2 us); on a loaded machine the
                      relaunch itself varies by more than that, so also:
  python launch+wait wrappers   e.launch(); e.wait() with weft's two calls
                      replaced by a C function that returns 0 (what Python
                      adds to a relaunch, whatever weft's work costs);
  ... cpu             the same figures in the calling thread's CPU time
                      (time.thread_time_ns, taken around the C calls too):
                      what the caller spends, which other programs on the
                      machine disturb far less than the wall clock;
  before: ...         with --before DIR, the build figures of the weft
                      package in DIR (a copy of python/weft of another
                      version, e.g. git archive REV python/weft | tar -x -C
                      DIR --strip-components=1), timed in the same rounds
                      over its own runtime and the same libweft.
Targets: building at most 3 us per node; a relaunch at most 2 us more than
from C.

    PYTHONPATH=python python3 bench/python_overhead.py [--nodes N]
        [--reps R] [--rounds K] [--graph-nodes G] [--helper PATH]
        [--before DIR]

The devices are WEFT_DEVICES's (default here: host).
"""
import argparse
import ctypes
import importlib.util
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python"))
os.environ.setdefault("WEFT_DEVICES", "host")

import numpy as np  # noqa: E402
import weft  # noqa: E402

SOURCE = """
WEFT_KERNEL void touch(WEFT_GLOBAL weft_u32 *v, weft_u32 n)
{
    long i = weft_global_id(0);
    if (i < n) v[i] += 1;
}
"""


def load_before(path):
    """The weft package in path/weft, imported as weft_before."""
    init = os.path.join(path, "weft", "__init__.py")
    spec = importlib.util.spec_from_file_location(
        "weft_before", init, submodule_search_locations=[os.path.dirname(init)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["weft_before"] = mod
    spec.loader.exec_module(mod)
    return mod


def main():
    p = argparse.ArgumentParser(description="the weft Python package's overhead")
    p.add_argument("--nodes", type=int, default=2000, help="nodes per graph built")
    p.add_argument("--reps", type=int, default=2000, help="relaunches per round")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--graph-nodes", type=int, default=1,
                   help="kernel nodes of the relaunched graph")
    p.add_argument("--helper", default=None,
                   help="libweft_pybench.so (default: next to the libweft loaded)")
    p.add_argument("--before", default=None, metavar="DIR",
                   help="also time the weft package in DIR/weft")
    a = p.parse_args()

    helper_path = a.helper or os.path.join(os.path.dirname(weft.library_path), "bench",
                                           "libweft_pybench.so")
    helper = ctypes.CDLL(helper_path)
    helper.weft_pybench_build.restype = ctypes.c_double
    helper.weft_pybench_build.argtypes = [ctypes.c_void_p] * 3 + [
        ctypes.c_uint, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_uint32]
    helper.weft_pybench_relaunch.restype = ctypes.c_double
    helper.weft_pybench_relaunch.argtypes = [ctypes.c_void_p, ctypes.c_uint]
    nop = helper["weft_pybench_nop"]
    nop.restype = ctypes.c_int

    rt = weft.Runtime()
    dev = rt.devices[0]
    k = rt.module(SOURCE).kernel("touch")
    n = a.nodes
    buf = rt.zeros(16 * n, np.uint32)
    u16 = np.uint32(16)

    before = None
    if a.before:
        before = load_before(a.before)
        brt = before.Runtime()
        bk = brt.module(SOURCE).kernel("touch")
        bbuf = brt.zeros(16 * n, np.uint32)

    def py_round(rt, k, buf, wall, cpu):
        g = rt.graph()
        c0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        for i in range(n):
            g.kernel(k, 16, buf[i * 16:(i + 1) * 16], u16)
        t1 = time.perf_counter_ns()
        c1 = time.thread_time_ns()
        wall.append((t1 - t0) / n)
        cpu.append((c1 - c0) / n)
        g.close()

    py_build, c_build, py_cpu, c_cpu, b_build, b_cpu = [], [], [], [], [], []
    for _ in range(a.rounds):
        py_round(rt, k, buf, py_build, py_cpu)
        g = rt.graph()
        g._use([buf._h, k.module._h])   # the nodes the helper adds use them
        c0 = time.thread_time_ns()
        ns = helper.weft_pybench_build(g._ptr(), k._ptr(), buf._ptr(), n, 64, 16, 16)
        c1 = time.thread_time_ns()
        if ns < 0:
            raise weft.errors.from_last(int(ns))
        c_build.append(ns)
        c_cpu.append((c1 - c0) / n)
        g.close()
        if before:
            py_round(brt, bk, bbuf, b_build, b_cpu)

    g = rt.graph()
    for i in range(a.graph_nodes):
        g.kernel(k, 16, buf[i * 16:(i + 1) * 16], u16)
    e = g.instantiate()
    e.run()
    for _ in range(a.reps // 4):         # warm: placement settles
        e.launch()
        e.wait()
    py_rl, c_rl, diff, py_rl_cpu, c_rl_cpu = [], [], [], [], []
    for rnd in range(a.rounds * 4):
        # Short rounds, in turn Python first and C first: each pair's
        # difference is taken on the same stretch of the machine.
        t = {}
        for side in (("py", "c") if rnd % 2 == 0 else ("c", "py")):
            c0 = time.thread_time_ns()
            if side == "py":
                t0 = time.perf_counter_ns()
                for _ in range(a.reps // 4):
                    e.launch()
                    e.wait()
                t["py"] = (time.perf_counter_ns() - t0) / (a.reps // 4)
            else:
                ns = helper.weft_pybench_relaunch(e._ptr(), a.reps // 4)
                if ns < 0:
                    raise weft.errors.from_last(int(ns))
                t["c"] = ns
            t[side + " cpu"] = (time.thread_time_ns() - c0) / (a.reps // 4)
        py_rl.append(t["py"])
        c_rl.append(t["c"])
        diff.append(t["py"] - t["c"])
        py_rl_cpu.append(t["py cpu"])
        c_rl_cpu.append(t["c cpu"])

    # The wrappers alone: weft's calls swapped for a C function that
    # returns 0 (unprototyped, as the package calls weft's).
    saved = weft._exec_launch, weft._exec_wait
    weft._exec_launch = weft._exec_wait = nop
    wrap = []
    try:
        for _ in range(a.rounds):
            t0 = time.perf_counter_ns()
            for _ in range(a.reps):
                e.launch()
                e.wait()
            wrap.append((time.perf_counter_ns() - t0) / a.reps)
    finally:
        weft._exec_launch, weft._exec_wait = saved

    def med(x):
        return statistics.median(x) / 1000.0

    print("device: %s (%s)" % (dev.name, dev.driver))
    print("python build: %.3f us/node" % med(py_build))
    print("c build: %.3f us/node" % med(c_build))
    print("python build - c: %.3f us/node" % (med(py_build) - med(c_build)))
    print("python relaunch (%d kernel nodes): %.3f us" % (a.graph_nodes, med(py_rl)))
    print("c relaunch (%d kernel nodes): %.3f us" % (a.graph_nodes, med(c_rl)))
    print("python relaunch - c: %.3f us (median of the rounds' differences)" % med(diff))
    print("python launch+wait wrappers: %.3f us" % med(wrap))
    print("python build cpu: %.3f us/node" % med(py_cpu))
    print("c build cpu: %.3f us/node" % med(c_cpu))
    print("python build - c cpu: %.3f us/node" % (med(py_cpu) - med(c_cpu)))
    print("python relaunch cpu: %.3f us" % med(py_rl_cpu))
    print("c relaunch cpu: %.3f us" % med(c_rl_cpu))
    print("python relaunch - c cpu: %.3f us" % (med(py_rl_cpu) - med(c_rl_cpu)))
    if before:
        print("before: python build: %.3f us/node" % med(b_build))
        print("before: python build - c: %.3f us/node" % (med(b_build) - med(c_build)))
        print("before: python build cpu: %.3f us/node" % med(b_cpu))
        print("before: python build - c cpu: %.3f us/node" % (med(b_cpu) - med(c_cpu)))
        brt.close()
    e.close()
    g.close()


if __name__ == "__main__":
    main()
