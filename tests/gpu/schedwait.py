#!/usr/bin/env python3
"""Run a command and report, per thread name, what its threads ran and how
long they waited runnable for a core (/proc/PID/task/*/schedstat), sampled
until the command ends, with the voluntary and involuntary context switches
(status). Whether a launch's loss is its own threads competing for the
cores (or other work on the machine) rather than its hand-offs.

    tests/gpu/schedwait.py COMMAND ARGS...
"""
import collections
import os
import subprocess
import sys
import time


def snapshot(pid, seen):
    base = "/proc/%d/task" % pid
    try:
        tids = os.listdir(base)
    except OSError:
        return
    for tid in tids:
        try:
            with open("%s/%s/schedstat" % (base, tid)) as f:
                run, wait, slices = (int(x) for x in f.read().split())
            with open("%s/%s/comm" % (base, tid)) as f:
                comm = f.read().strip()
            vol = invol = 0
            with open("%s/%s/status" % (base, tid)) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol = int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        invol = int(line.split()[1])
        except (OSError, ValueError):
            continue
        seen[tid] = (comm, run, wait, slices, vol, invol)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    seen = {}
    t0 = time.monotonic()
    p = subprocess.Popen(sys.argv[1:])
    while p.poll() is None:
        snapshot(p.pid, seen)
        time.sleep(0.05)
    wall = time.monotonic() - t0
    by = collections.OrderedDict()
    for comm, run, wait, slices, vol, invol in seen.values():
        a = by.setdefault(comm, [0, 0, 0, 0, 0, 0])
        for i, v in enumerate((1, run, wait, slices, vol, invol)):
            a[i] += v
    print("schedwait: wall %.2f s, loadavg %s" %
          (wall, open("/proc/loadavg").read().split()[0]))
    for comm, (n, run, wait, slices, vol, invol) in by.items():
        print("schedwait %-16s threads %3d  ran %8.3f s  waited runnable "
              "%7.3f s  slices %8d  voluntary %8d  involuntary %7d" %
              (comm, n, run / 1e9, wait / 1e9, slices, vol, invol))
    sys.exit(p.returncode)


if __name__ == "__main__":
    main()
