/*
 * runtime_create: how long weft_runtime_create takes, over many creations
 * in a row, on the devices of WEFT_DEVICES (default: every driver the
 * machine has, PoCL's devices included). The figure that matters is the
 * slowest creation: a program that starts weft should never wait seconds
 * (hwloc's CPU discovery once bound the thread to each CPU in turn and
 * stalled a creation now and then on small VMs). The baseline in the same
 * run is hwloc's own topology load with its default components.
 *     bench/runtime_create [--count N] [--json]
 */
#include "bench.h"

#include <weft.h>

#include <hwloc.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int count = 1000;
    const bench_option options[] = {{"--count", BENCH_INT, &count, "N"}};
    double *t, *h, sum = 0, hsum = 0, max = 0, hmax = 0;

    BENCH_OPTIONS(argc, argv, "runtime_create", options);
    if (count < 1)
        bench_die("--count must be at least 1");
    t = malloc((size_t)count * sizeof *t);
    h = malloc((size_t)count * sizeof *h);
    if (!t || !h)
        bench_die("out of memory");
    for (int i = 0; i < count; i++) {
        hwloc_topology_t topo;
        weft_runtime *rt;
        uint64_t t0 = bench_now_ns();

        bench_check(weft_runtime_create(&rt, NULL));
        t[i] = (double)(bench_now_ns() - t0) / 1e6;
        bench_check(weft_runtime_destroy(rt));
        t0 = bench_now_ns();
        if (hwloc_topology_init(&topo) < 0 || hwloc_topology_load(topo) < 0)
            bench_die("hwloc: topology load failed");
        h[i] = (double)(bench_now_ns() - t0) / 1e6;
        hwloc_topology_destroy(topo);
        sum += t[i];
        hsum += h[i];
        max = t[i] > max ? t[i] : max;
        hmax = h[i] > hmax ? h[i] : hmax;
    }
    bench_begin("\"count\": %d", count);
    bench_figure("weft runtime create mean", sum / count, "ms");
    bench_figure("weft runtime create median", bench_median(t, count), "ms");
    bench_figure("weft runtime create max", max, "ms");
    bench_figure("hwloc default topology load mean", hsum / count, "ms");
    bench_figure("hwloc default topology load max", hmax, "ms");
    bench_end();
    free(t);
    free(h);
    return 0;
}
