#!/usr/bin/env python3
"""Samples under one function, from `perf script` on standard input.

    perf script -i DATA | tests/gpu/perf_under.py FUNCTION [DEPTH]

For each sample whose call chain holds FUNCTION: the share of those
samples under each of FUNCTION's callees (DEPTH levels below it, default
2), and under each CUDA Driver API entry (a cu* frame) they reach.
"""
import collections
import sys

func = sys.argv[1]
depth = int(sys.argv[2]) if len(sys.argv) > 2 else 2
paths, cuda, total, under = collections.Counter(), collections.Counter(), 0, 0


def take(frames):
    global total, under
    total += 1
    # frames: leaf first
    names = [f for f in frames]
    if func not in names:
        return
    under += 1
    i = names.index(func)
    below = names[max(0, i - depth):i][::-1]
    for k in range(1, len(below) + 1):
        paths[" > ".join(below[:k])] += 1
    for n in names[:i]:
        if n.startswith("cu") and n[2:3].isupper():
            cuda[n] += 1
            break


frames = []
for line in sys.stdin:
    s = line.strip()
    if not s:
        if frames:
            take(frames)
        frames = []
        continue
    if line[0] in " \t":
        parts = s.split()
        if len(parts) >= 2:
            sym = parts[1].split("+")[0]
            frames.append(sym)
if frames:
    take(frames)
print(f"# {under} of {total} samples under {func}")
for p, c in sorted(paths.items(), key=lambda x: -x[1]):
    if c * 100 >= under * 0.5:
        print(f"{100.0 * c / max(under, 1):6.1f}%  {p}")
print("# CUDA entries reached")
for p, c in cuda.most_common(20):
    print(f"{100.0 * c / max(under, 1):6.1f}%  {p}")
