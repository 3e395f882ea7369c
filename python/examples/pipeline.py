"""A chunked pipeline over every device: copy a chunk in, hash it, copy it
out, for 16 chunks of one array. weft sees that chunks are independent,
overlaps one chunk's copies with another's kernel and spreads the kernels
over the devices (no device is named below); a relaunch reuses the plan.

    python3 pipeline.py [--trace trace.json]
"""
import argparse
import collections

import numpy as np
import weft

SOURCE = """
WEFT_KERNEL void hash(WEFT_GLOBAL weft_u32 *v, weft_u32 n)
{
    long i = weft_global_id(0);
    if (i < n) {
        weft_u32 x = v[i] * 2654435761u;
        v[i] = x ^ (x >> 15);
    }
}
"""

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--trace", help="write a Chrome trace of the runs here")
p.add_argument("--n", type=int, default=1 << 22, help="elements (default 4M)")
args = p.parse_args()

n, chunks = args.n, 16
size = n // chunks
data = np.arange(n, dtype=np.uint32)
out = np.zeros_like(data)
x = data * np.uint32(2654435761)
want = x ^ (x >> np.uint32(15))

with weft.Runtime(trace_file=args.trace) as rt:
    hash_ = rt.module(SOURCE).kernel("hash")
    work = rt.empty(n, np.uint32)
    g = rt.graph()
    kernels = []
    for c in range(chunks):
        part = work[c * size:(c + 1) * size]
        g.write(part, data[c * size:(c + 1) * size])
        kernels.append(g.kernel(hash_, size, part, np.uint32(size)))
        g.read(part, out[c * size:(c + 1) * size])
    with g.instantiate() as e:
        e.run()
        assert (out == want).all()
        out[:] = 0
        e.run()                      # the relaunch: same plan, same result
        assert (out == want).all()
        where = collections.Counter(e.node_device(k).name for k in kernels)
        stats = e.stats()
print("devices: " + ", ".join("%s (%d chunks)" % kv for kv in where.items()))
print("last launch: %d nodes, %d events, %d waits, %.2f ms" % (
    stats["nodes"], stats["events"], stats["waits"], stats["last_ns"] / 1e6))
print("ok")
