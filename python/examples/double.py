"""Double an array on a GPU (or whatever weft finds): PyCUDA's first example.

    python3 double.py
"""
import numpy as np
import weft

SOURCE = """
WEFT_KERNEL void twice(WEFT_GLOBAL float *a, weft_u32 n)
{
    long i = weft_global_id(0);
    if (i < n) a[i] *= 2;
}
"""

a = np.random.randn(4, 4).astype(np.float32)
expected = 2 * a
with weft.Runtime() as rt:
    twice = rt.module(SOURCE).kernel("twice")
    buf = rt.wrap(a)                  # a's memory, no copy
    g = rt.graph()
    g.kernel(twice, a.size, buf, np.uint32(a.size))
    g.instantiate().run()
    doubled = buf.read()              # a holds the result too, from here
print(doubled)
assert np.array_equal(doubled, expected) and np.array_equal(a, expected)
