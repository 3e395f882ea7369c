#!/usr/bin/env python3
"""Writes the fuzz target's seed corpus (tests/fuzz/corpus/): for each
runtime choice and each group of four calls of the target, one file: a
prefix that makes objects (two buffers, a view, a module, a graph), then
those calls with pseudo-random arguments from a fixed seed (the files are
the same on every run), then instantiate, launch, wait and random calls.
The target reads byte 0 as the runtime, then an opcode byte (mod 32) and
its arguments per call: see LLVMFuzzerTestOneInput in fuzz_api.c.
    tests/fuzz/gen_corpus.py [DIR]"""
import os
import random
import sys

OPS = 32
PREFIX = [2, 0, 3, 0, 0, 5, 3, 0, 0, 0, 0, 0, 0, 11, 1, 5, 13, 0]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for runtime in range(5):  # host, host, sim, sim, host+sim
        for op in range(0, OPS, 4):
            rnd = random.Random(runtime * 100 + op)
            data = [runtime + 5 * rnd.randrange(51)] + PREFIX
            for _ in range(24):
                data.append(op + rnd.randrange(4))
                data += [rnd.randrange(256) for _ in range(rnd.randrange(3, 12))]
            data += [26, 0, 0, 27, 0, 0, 29, 0, 1]
            data += [rnd.randrange(256) for _ in range(120)]
            name = "rt%d-ops%02d-%02d" % (runtime, op, op + 3)
            with open(os.path.join(out, name), "wb") as f:
                f.write(bytes(b & 0xFF for b in data))


if __name__ == "__main__":
    main()
