/*
 * transfer: host <-> device bandwidth through weft's staging and
 * registration paths, beside the raw driver API and the host's own memcpy,
 * in one run, on the first CUDA device (else the first device there is,
 * without the raw CUDA figures).
 *
 *     transfer [--json] [--mib N] [--reps R] [--threads T] [--chunk-mib C]
 *
 * Figures (GB/s = 1e9 bytes/s, medians of R repetitions):
 *   host memcpy 1 thread / 4 threads   pageable -> pinned, the staging bound
 *   raw pageable H2D / D2H             cuMemcpyHtoD/DtoH on malloc'd memory
 *   raw pinned H2D / D2H               cuMemcpy*Async on cuMemHostAlloc memory
 *   weft pageable H2D / D2H            weft__stager one-shot from malloc'd
 *   weft registered H2D                user memory registered once, then
 *                                      copied again and again
 *   weft wrapped H2D                   through the public API: a wrapped
 *                                      buffer read by a kernel node, the
 *                                      graph relaunched after
 *                                      weft_buffer_invalidate each time, so
 *                                      each launch moves every byte (weft
 *                                      registers the buffer when it sees it
 *                                      used again); launches 3.. counted
 */
#include "drivers/cuda/cuda_api.h"
#include "mem/staging.h"
#include "bench.h"
#include "runtime.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t bytes = (size_t)1 << 30;
static int reps = 5;
static double v_wrapped[70];
static unsigned stage_threads; /* 0: the stager's default */
static size_t chunk;           /* 0: the stager's default */

static double gbs(uint64_t ns)
{
    return (double)bytes / (double)ns;
}

/* ---- host memcpy with n threads ---------------------------------------- */

typedef struct part {
    char *dst;
    const char *src;
    size_t n;
} part;

static void *copy_part(void *arg)
{
    part *p = arg;
    memcpy(p->dst, p->src, p->n);
    return NULL;
}

static uint64_t threaded_memcpy(void *dst, const void *src, size_t n,
                                int threads)
{
    pthread_t t[16];
    part p[16];
    size_t per = n / (size_t)threads;
    uint64_t t0 = bench_now_ns();

    for (int i = 0; i < threads; i++) {
        p[i].dst = (char *)dst + (size_t)i * per;
        p[i].src = (const char *)src + (size_t)i * per;
        p[i].n = i + 1 == threads ? n - (size_t)i * per : per;
        if (i && pthread_create(&t[i], NULL, copy_part, &p[i]))
            bench_die("pthread_create");
    }
    copy_part(&p[0]);
    for (int i = 1; i < threads; i++)
        pthread_join(t[i], NULL);
    return bench_now_ns() - t0;
}

/* ---- raw CUDA ------------------------------------------------------------ */

typedef struct raw {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*CtxSynchronize)(void);
    CUdeviceptr dbuf;
    void *pinned;
} raw;

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        bench_die("libcuda has no %s", name);
    return p;
}

static int raw_open(raw *r, int ordinal)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CUdevice dev;
    CUcontext ctx;

    if (!lib)
        return -1;
    *(void **)&r->Init = sym(lib, "cuInit");
    *(void **)&r->DeviceGet = sym(lib, "cuDeviceGet");
    *(void **)&r->PrimaryCtxRetain = sym(lib, "cuDevicePrimaryCtxRetain");
    *(void **)&r->CtxSetCurrent = sym(lib, "cuCtxSetCurrent");
    *(void **)&r->MemAlloc = sym(lib, "cuMemAlloc_v2");
    *(void **)&r->MemHostAlloc = sym(lib, "cuMemHostAlloc");
    *(void **)&r->MemcpyHtoD = sym(lib, "cuMemcpyHtoD_v2");
    *(void **)&r->MemcpyDtoH = sym(lib, "cuMemcpyDtoH_v2");
    *(void **)&r->MemcpyHtoDAsync = sym(lib, "cuMemcpyHtoDAsync_v2");
    *(void **)&r->MemcpyDtoHAsync = sym(lib, "cuMemcpyDtoHAsync_v2");
    *(void **)&r->CtxSynchronize = sym(lib, "cuCtxSynchronize");
    if (r->Init(0) || r->DeviceGet(&dev, ordinal) ||
        r->PrimaryCtxRetain(&ctx, dev) || r->CtxSetCurrent(ctx) ||
        r->MemAlloc(&r->dbuf, bytes) ||
        r->MemHostAlloc(&r->pinned, bytes, CU_MEMHOSTALLOC_PORTABLE))
        bench_die("raw CUDA set-up failed");
    return 0;
}

/* A kernel that reads one element: the launch is the transfer. */
static const char touch_src[] =
    "WEFT_KERNEL void touch(WEFT_GLOBAL const int *x, WEFT_GLOBAL int *y)\n"
    "{ if (weft_global_id(0) == 0) y[0] = x[0]; }\n";

static void touch_host(const weft_host_group *g, void *const *args)
{
    (void)g;
    ((int *)args[1])[0] = ((const int *)args[0])[0];
}

static const weft_param_type touch_params[] = {WEFT_PARAM_BUFFER,
                                               WEFT_PARAM_BUFFER};
static const weft_host_kernel touch_table[] = {
    {"touch", touch_host, 2, touch_params, NULL, NULL, NULL}};

static void wrapped_figure(weft_runtime *rt, unsigned idx, char *mem)
{
    const weft_module_source v[] = {
        {WEFT_SOURCE_HOST, touch_table, 1, NULL, "touch (C)"},
        {WEFT_SOURCE_PORTABLE, touch_src, 0, NULL, "touch"},
    };
    weft_exec_options eo = WEFT_EXEC_OPTIONS_INIT;
    weft_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
    weft_module *mod;
    weft_kernel *k;
    weft_buffer *bx, *by;
    weft_graph *g;
    weft_exec *e;
    int n = 0;

    eo.device = weft_runtime_device(rt, idx);
    if (weft_module_create(rt, v, 2, &mod) < 0 ||
        weft_module_get_kernel(mod, "touch", &k) < 0 ||
        weft_buffer_wrap(rt, mem, bytes, &bx) < 0 ||
        weft_buffer_create(rt, 4096, &by) < 0 || weft_graph_create(rt, &g) < 0)
        bench_die("wrapped: %s", weft_last_error());
    weft_arg args[] = {weft_arg_buffer(bx, 0, WEFT_WHOLE, WEFT_READ),
                       weft_arg_buffer(by, 0, 4096, WEFT_WRITE)};
    if (weft_graph_add_kernel(g, k, weft_dims1(1), args, 2, NULL) < 0 ||
        weft_graph_instantiate(g, &eo, &e) < 0)
        bench_die("wrapped: %s", weft_last_error());
    weft_runtime_get_stats(rt, &s0);
    for (int i = 0; i < reps + 2; i++) {
        uint64_t t0;

        /* the program wrote the memory: every byte must move again */
        if (weft_buffer_invalidate(bx, 0, bytes) < 0)
            bench_die("invalidate: %s", weft_last_error());
        t0 = bench_now_ns();
        if (weft_exec_launch(e) < 0 || weft_exec_wait(e) < 0)
            bench_die("wrapped launch: %s", weft_last_error());
        if (i >= 2)
            v_wrapped[n++] = gbs(bench_now_ns() - t0);
    }
    weft_runtime_get_stats(rt, &s1);
    bench_figure("weft wrapped H2D", bench_median(v_wrapped, n), "GB/s");
    bench_note(
        "wrapped: %llu bytes moved host to device, %llu staged, "
        "%llu from registered memory, %llu buffer(s) registered",
        (unsigned long long)(s1.h2d_bytes - s0.h2d_bytes),
        (unsigned long long)(s1.staged_bytes - s0.staged_bytes),
        (unsigned long long)(s1.pinned_bytes - s0.pinned_bytes),
        (unsigned long long)(s1.registered_buffers - s0.registered_buffers));
    weft_exec_destroy(e);
    weft_graph_destroy(g);
    weft_buffer_destroy(by);
    weft_buffer_destroy(bx);
    weft_module_destroy(mod);
}

int main(int argc, char **argv)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft__stager_options so = {0};
    weft_runtime *rt;
    weft__context *ctx;
    weft__device *dev = NULL;
    weft__stager *st;
    weft__queue *q;
    weft__mem *dmem, *reg;
    unsigned idx = 0;
    double v[64];
    char *pageable, *pinned_sink;
    raw r = {0};
    int have_raw = 0;
    const bench_option options[] = {
        {"--mib", BENCH_MIB, &bytes, "N"},
        {"--reps", BENCH_INT, &reps, "R"},
        {"--threads", BENCH_UNSIGNED, &stage_threads, "T"},
        {"--chunk-mib", BENCH_MIB, &chunk, "C"},
    };

    BENCH_OPTIONS(argc, argv, "transfer", options);
    if (bytes == 0 || reps < 1 || reps > 64)
        bench_die("--mib > 0 and 1 <= --reps <= 64");
    if (weft_runtime_create(&rt, &o) < 0 || !weft_runtime_device_count(rt))
        bench_die("no device: %s", weft_last_error());
    for (unsigned i = 0; i < weft_runtime_device_count(rt) && !dev; i++)
        if (strcmp(weft__runtime_device(rt, i)->drv->name, "cuda") == 0)
            dev = weft__runtime_device(rt, idx = i);
    if (!dev)
        dev = weft__runtime_device(rt, idx = 0);
    if (weft__runtime_context(rt, idx, &ctx) < 0 ||
        weft__drv_queue_create(ctx, NULL, &q) < 0 ||
        weft__drv_mem_alloc(ctx, bytes, &dmem) < 0)
        bench_die("%s", weft_last_error());
    bench_begin("\"device\": \"%s\", \"bytes\": %zu", dev->name, bytes);
    bench_note("%s:%u (%s), %zu MiB, median of %d", dev->drv->name,
               dev->driver_index, dev->name, bytes >> 20, reps);

    /* pageable memory, touched so that page faults are not measured */
    pageable = malloc(bytes);
    pinned_sink = malloc(bytes);
    if (!pageable || !pinned_sink)
        bench_die("out of memory");
    memset(pageable, 1, bytes);
    memset(pinned_sink, 2, bytes);

    bench_progress("host memcpy");
    for (int t = 1; t <= 8; t = t == 1 ? 4 : t * 2) {
        char name[64];
        for (int i = 0; i < reps; i++)
            v[i] = gbs(threaded_memcpy(pinned_sink, pageable, bytes, t));
        snprintf(name, sizeof name, "host memcpy %d thread%s", t,
                 t > 1 ? "s" : "");
        bench_figure(name, bench_median(v, reps), "GB/s");
    }
    free(pinned_sink);

    if (strcmp(dev->drv->name, "cuda") == 0 &&
        raw_open(&r, (int)dev->driver_index) == 0) {
        have_raw = 1;
        bench_progress("raw CUDA");
        memset(r.pinned, 3, bytes);
        for (int i = 0; i < reps; i++) {
            uint64_t t0 = bench_now_ns();
            if (r.MemcpyHtoD(r.dbuf, pageable, bytes))
                bench_die("cuMemcpyHtoD");
            v[i] = gbs(bench_now_ns() - t0);
        }
        bench_figure("raw pageable H2D", bench_median(v, reps), "GB/s");
        for (int i = 0; i < reps; i++) {
            uint64_t t0 = bench_now_ns();
            if (r.MemcpyDtoH(pageable, r.dbuf, bytes))
                bench_die("cuMemcpyDtoH");
            v[i] = gbs(bench_now_ns() - t0);
        }
        bench_figure("raw pageable D2H", bench_median(v, reps), "GB/s");
        for (int i = 0; i < reps; i++) {
            uint64_t t0 = bench_now_ns();
            if (r.MemcpyHtoDAsync(r.dbuf, r.pinned, bytes, NULL) ||
                r.CtxSynchronize())
                bench_die("cuMemcpyHtoDAsync");
            v[i] = gbs(bench_now_ns() - t0);
        }
        bench_figure("raw pinned H2D", bench_median(v, reps), "GB/s");
        for (int i = 0; i < reps; i++) {
            uint64_t t0 = bench_now_ns();
            if (r.MemcpyDtoHAsync(r.pinned, r.dbuf, bytes, NULL) ||
                r.CtxSynchronize())
                bench_die("cuMemcpyDtoHAsync");
            v[i] = gbs(bench_now_ns() - t0);
        }
        bench_figure("raw pinned D2H", bench_median(v, reps), "GB/s");
    } else {
        bench_note("raw CUDA figures: skipped (not a CUDA device)");
    }

    bench_progress("weft staging");
    so.topology = rt->topology;
    so.cpuset = dev->props.cpuset;
    so.threads = stage_threads;
    so.chunk = chunk;
    if (weft__stager_create(ctx, &so, &st) < 0)
        bench_die("stager: %s", weft_last_error());
    for (int i = 0; i < reps; i++) {
        uint64_t t0 = bench_now_ns();
        if (weft__stager_h2d(st, NULL, q, dmem, 0, pageable, bytes) < 0 ||
            weft__drv_queue_sync(q) < 0)
            bench_die("stager h2d: %s", weft_last_error());
        v[i] = gbs(bench_now_ns() - t0);
    }
    bench_figure("weft pageable H2D", bench_median(v, reps), "GB/s");
    for (int i = 0; i < reps; i++) {
        uint64_t t0 = bench_now_ns();
        if (weft__stager_d2h(st, NULL, q, pageable, dmem, 0, bytes) < 0)
            bench_die("stager d2h: %s", weft_last_error());
        v[i] = gbs(bench_now_ns() - t0);
    }
    bench_figure("weft pageable D2H", bench_median(v, reps), "GB/s");
    weft__stager_destroy(st);

    bench_progress("weft registered");
    if (dev->props.host_register) {
        uint64_t t0 = bench_now_ns();
        if (weft__drv_host_register(ctx, pageable, bytes, &reg) < 0)
            bench_die("register: %s", weft_last_error());
        bench_figure("weft register once", (double)(bench_now_ns() - t0) / 1e6,
                     "ms");
        for (int i = 0; i < reps; i++) {
            t0 = bench_now_ns();
            if (weft__drv_copy_h2d(q, dmem, 0, reg->host, bytes) < 0 ||
                weft__drv_queue_sync(q) < 0)
                bench_die("registered h2d: %s", weft_last_error());
            v[i] = gbs(bench_now_ns() - t0);
        }
        bench_figure("weft registered H2D", bench_median(v, reps), "GB/s");
        weft__drv_mem_free(reg);
    }
    bench_progress("weft wrapped");
    wrapped_figure(rt, idx, pageable);
    bench_progress("");
    bench_end();
    (void)have_raw;
    weft__drv_mem_free(dmem);
    weft__drv_queue_destroy(q);
    free(pageable);
    weft_runtime_destroy(rt);
    return 0;
}
