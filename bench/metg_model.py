#!/usr/bin/env python3
"""A model of bench/metg's efficiency at large tasks, with no runtime at all.

metg's stencil and nearest patterns at width = cores read 0.8-0.9 efficiency
at 1 ms tasks on shared machines, for weft's variants and OpenMP's alike,
while trivial (no dependencies) reads 1.0-1.2. This discrete-event model
asks whether a scheduler could do better: P cores run a pattern's tasks
(width P, T steps) with zero hand-off cost, under two policies:

  lifo   a core keeps the tasks it made ready and runs the newest first;
         idle cores steal the oldest of another's (weft's host pools);
  prio   every core takes the ready task of the oldest step first (the
         critical path first).

Task times: a per-core speed drawn once (spread), a little noise per task,
and, with probability q, a delay drawn from an exponential of mean d task
times (a core taken by other work for a while). Efficiency is measured as
metg does: against the peak of one static thread per core, whose wall time
is its slowest core's.

    bench/metg_model.py [--cores P] [--steps T]

Prints `model <pattern> <policy> spread S q Q d D: <efficiency>` lines.
What it showed (32 cores, 200 steps): with speeds spread by up to 20% and
10% noise, stencil stays at 0.96 and nearest at 0.94 under either policy;
with 1% of tasks
delayed by 2 task times on average, stencil falls to 0.75-0.80 and nearest
to 0.70-0.76 while trivial stays at 1.05; the policy changes little (prio
is no better). A wavefront of width = cores has no spare tasks to cover a
late one, whatever the scheduler.
"""
import heapq
import random
import sys


def run(cores, width, steps, pattern, policy, speeds, noise, delay, seed):
    rnd = random.Random(seed)
    radius = {"trivial": -1, "stencil": 1, "nearest": 2}[pattern]
    succ, pending = {}, {}
    for t in range(steps):
        for i in range(width):
            preds = [] if t == 0 or radius < 0 else [
                (j, t - 1) for j in range(i - radius, i + radius + 1)
                if 0 <= j < width]
            pending[(i, t)] = len(preds)
            for p in preds:
                succ.setdefault(p, []).append((i, t))
    ready0 = [x for x, n in pending.items() if n == 0]
    own = [[] for _ in range(cores)]
    heap = []
    if policy == "prio":
        for i, t in ready0:
            heapq.heappush(heap, (t, i))
    else:
        for k, x in enumerate(sorted(ready0, key=lambda x: (x[1], x[0]))):
            own[k % cores].insert(0, x)

    def take(c):
        if policy == "prio":
            if heap:
                t, i = heapq.heappop(heap)
                return (i, t)
            return None
        if own[c]:
            return own[c].pop()  # newest
        victims = [v for v in range(cores) if own[v]]
        if not victims:
            return None
        return own[rnd.choice(victims)].pop(0)  # oldest

    events, idle, now = [], set(range(cores)), 0.0

    def start(c, x):
        d = speeds[c] * (1 + rnd.gauss(0, noise))
        if rnd.random() < delay[0]:
            d += rnd.expovariate(1 / delay[1])
        heapq.heappush(events, (now + d, c, x))

    for c in range(cores):
        x = take(c)
        if x:
            idle.discard(c)
            start(c, x)
    while events:
        now, c, x = heapq.heappop(events)
        for s in succ.get(x, []):
            pending[s] -= 1
            if pending[s] == 0:
                if policy == "prio":
                    heapq.heappush(heap, (s[1], s[0]))
                else:
                    own[c].append(s)
        idle.add(c)
        for k in sorted(idle, key=lambda k: k != c):
            y = take(k)
            if y is not None:
                idle.discard(k)
                start(k, y)
    return now


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    cores = int(args.get("--cores", 32))
    steps = int(args.get("--steps", 200))
    for spread, noise, q, d in ((0.2, 0.1, 0, 0), (0.15, 0.03, 0.01, 2),
                                (0.15, 0.03, 0.03, 2)):
        r = random.Random(1)
        speeds = [1 + spread * r.random() for _ in range(cores)]
        peak_wall = steps * max(speeds)  # one static thread per core
        for pattern in ("trivial", "stencil", "nearest"):
            for policy in ("lifo", "prio"):
                wall = run(cores, cores, steps, pattern, policy, speeds,
                           noise, (q, d), 2)
                print("model %s %s spread %.2f q %.2f d %g: %.3f" %
                      (pattern, policy, spread, q, d, peak_wall / wall))


if __name__ == "__main__":
    main()
