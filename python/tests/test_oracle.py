"""Random graphs against NumPy: weft's result is that of the nodes run one
by one in insertion order (the oracle), whatever weft placed and overlapped.

Each graph: 4 buffers of 256 float32 in chunks of 32 elements (128 bytes,
so that ranges start where every device takes them), 30 random nodes
(writes, axpy and doubling kernels, copies, fills, Python host tasks, reads)
launched twice; every read is compared with NumPy's run of the same nodes.
"""

import numpy as np
import pytest

import weft
from conftest import scaled

NBUF, N, CHUNK, NODES = 4, 256, 32, 30


def _range(rng):
    c0 = int(rng.integers(0, N // CHUNK))
    c1 = int(rng.integers(c0 + 1, N // CHUNK + 1))
    return c0 * CHUNK, c1 * CHUNK


def _build(rng, rt, kernels, bufs, wrapped):
    g = rt.graph()
    model_ops = []   # functions over the model's arrays, in order
    reads = []       # (host array, model snapshot slot)
    axpy, twice = kernels.kernel("axpy"), kernels.kernel("twice")
    for _ in range(NODES):
        kind = rng.choice(["write", "axpy", "twice", "copy", "fill", "host", "read"])
        i = int(rng.integers(NBUF))
        lo, hi = _range(rng)
        if kind == "write":
            src = rng.integers(-4, 5, hi - lo).astype(np.float32)
            g.write(bufs[i][lo:hi], src)
            model_ops.append(lambda m, i=i, lo=lo, hi=hi, s=src: m[i].__setitem__(slice(lo, hi), s))
        elif kind == "axpy":
            j = (i + 1 + int(rng.integers(NBUF - 1))) % NBUF
            lo2 = int(rng.integers(0, (N - (hi - lo)) // CHUNK + 1)) * CHUNK
            a = np.float32(rng.integers(-2, 3) * 0.5)
            n = hi - lo
            g.kernel(axpy, n, weft.rw(bufs[i][lo:hi]), weft.read(bufs[j][lo2:lo2 + n]),
                     a, np.uint32(n))

            def op(m, i=i, j=j, lo=lo, hi=hi, lo2=lo2, a=a):
                m[i][lo:hi] = a * m[i][lo:hi] + m[j][lo2:lo2 + hi - lo]
            model_ops.append(op)
        elif kind == "twice":
            g.kernel(twice, hi - lo, bufs[i][lo:hi], np.uint32(hi - lo))
            model_ops.append(lambda m, i=i, lo=lo, hi=hi: m[i].__setitem__(
                slice(lo, hi), m[i][lo:hi] * 2))
        elif kind == "copy":
            j = int(rng.integers(NBUF))
            lo2 = int(rng.integers(0, (N - (hi - lo)) // CHUNK + 1)) * CHUNK
            if j == i and not (lo2 + hi - lo <= lo or hi <= lo2):
                j = (i + 1) % NBUF
            g.copy(bufs[j][lo2:lo2 + hi - lo], bufs[i][lo:hi])
            model_ops.append(lambda m, i=i, j=j, lo=lo, hi=hi, lo2=lo2: m[j].__setitem__(
                slice(lo2, lo2 + hi - lo), m[i][lo:hi].copy()))
        elif kind == "fill":
            v = np.float32(rng.integers(-3, 4))
            g.fill(bufs[i][lo:hi], v)
            model_ops.append(lambda m, i=i, lo=lo, hi=hi, v=v: m[i].__setitem__(slice(lo, hi), v))
        elif kind == "host":
            def task(x):
                x *= np.float32(0.5)
                x += np.float32(1)
            g.host(task, weft.rw(bufs[i][lo:hi]))
            model_ops.append(lambda m, i=i, lo=lo, hi=hi: m[i].__setitem__(
                slice(lo, hi), m[i][lo:hi] * np.float32(0.5) + np.float32(1)))
        else:
            out = np.full(hi - lo, np.nan, np.float32)
            g.read(bufs[i][lo:hi], out)
            slot = len(reads)
            reads.append([out, None])
            model_ops.append(lambda m, i=i, lo=lo, hi=hi, slot=slot: reads[slot].__setitem__(
                1, m[i][lo:hi].copy()))
    return g, model_ops, reads


@pytest.mark.parametrize("seed", range(scaled(6)))
def test_random_graph_matches_numpy(rt, kernels, seed):
    rng = np.random.default_rng(1000 + seed)
    wrapped = [rng.integers(-4, 5, N).astype(np.float32) for _ in range(NBUF)]
    model = [w.copy() for w in wrapped]
    bufs = [rt.wrap(w) for w in wrapped]
    g, ops, reads = _build(rng, rt, kernels, bufs, wrapped)
    e = g.instantiate()
    for launch in range(2):
        e.run()
        for op in ops:
            op(model)
        for got, want in reads:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5,
                                       err_msg="seed %d launch %d" % (seed, launch))
    for b in bufs:
        b.sync()
    for w, m in zip(wrapped, model):
        np.testing.assert_allclose(w, m, rtol=1e-5, atol=1e-5)
