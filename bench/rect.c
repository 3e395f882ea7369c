/*
 * rect: a 2-D tile of a row-major matrix moved by the driver layer's block
 * copies (weft__drv_copy_h2d_rect / _d2h_rect), beside raw cuMemcpy2DAsync
 * of the same block between the same memories, in one run, on the first
 * CUDA device (else the first device there is, without the raw figures).
 *
 *     rect [--json] [--n N] [--tile T] [--reps R] [--rows-reps S]
 *
 * The matrix is N x N floats (default 8192) in pinned host memory where the
 * device has it, and its replica on the device has the same layout; the
 * tile is T x T floats (default 2048) at tile index (1, 1). Figures (GB/s =
 * 1e9 bytes of the tile per second, medians of R repetitions, each one
 * enqueue and one wait):
 *   weft tile H2D / D2H          the block through weft's entry point
 *   raw cuMemcpy2DAsync H2D/D2H  the same block, CUDA called directly
 *   weft/raw tile H2D / D2H      the ratio, in % (the target is >= 95)
 *   weft tile H2D by rows        the fallback forced: one copy per row
 *   host memcpy tile             the rows by memcpy, one thread (a bound
 *                                for the host and sim drivers)
 */
#include "drivers/cuda/cuda_api.h"
#include "bench.h"
#include "runtime.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned n = 8192, tile = 2048;
static int reps = 20, rows_reps = 3;

typedef struct raw {
    weft__cu_Memcpy2DAsync_fn *Memcpy2DAsync;
    CUresult (*CtxSynchronize)(void);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxSetCurrent)(CUcontext);
} raw;

static int raw_open(raw *r)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    if (!lib)
        return -1;
    *(void **)&r->Memcpy2DAsync = dlsym(lib, "cuMemcpy2DAsync_v2");
    *(void **)&r->CtxSynchronize = dlsym(lib, "cuCtxSynchronize");
    *(void **)&r->CtxGetCurrent = dlsym(lib, "cuCtxGetCurrent");
    *(void **)&r->CtxSetCurrent = dlsym(lib, "cuCtxSetCurrent");
    return r->Memcpy2DAsync && r->CtxSynchronize && r->CtxGetCurrent &&
                   r->CtxSetCurrent
               ? 0
               : -1;
}

static double gbs(size_t bytes, uint64_t ns)
{
    return (double)bytes / (double)ns;
}

int main(int argc, char **argv)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_runtime *rt;
    weft__context *ctx;
    weft__device *dev = NULL;
    weft__queue *q;
    weft__mem *dmem, *pin = NULL;
    weft__native_queue nq;
    weft__native_mem nm;
    weft__rect up, down;
    unsigned idx = 0;
    size_t row, bytes, tile_bytes;
    double v[64], w[64], rh = 0, rd = 0, wh, wd;
    unsigned char *host;
    CUcontext cu_ctx = NULL;
    raw r = {0};
    int cuda, have_raw = 0;
    const bench_option options[] = {
        {"--n", BENCH_UNSIGNED, &n, "N"},
        {"--tile", BENCH_UNSIGNED, &tile, "T"},
        {"--reps", BENCH_INT, &reps, "R"},
        {"--rows-reps", BENCH_INT, &rows_reps, "S"},
    };

    BENCH_OPTIONS(argc, argv, "rect", options);
    if (n < 2 || tile < 1 || 2 * (size_t)tile > n || reps < 1 || reps > 64 ||
        rows_reps < 0 || rows_reps > 64)
        bench_die("--n >= 2, 1 <= --tile <= n/2, 1 <= --reps <= 64, "
                  "0 <= --rows-reps <= 64");
    row = (size_t)n * sizeof(float);
    bytes = row * n;
    tile_bytes = (size_t)tile * sizeof(float) * tile;
    if (weft_runtime_create(&rt, &o) < 0 || !weft_runtime_device_count(rt))
        bench_die("no device: %s", weft_last_error());
    for (unsigned i = 0; i < weft_runtime_device_count(rt) && !dev; i++)
        if (strcmp(weft__runtime_device(rt, i)->drv->name, "cuda") == 0)
            dev = weft__runtime_device(rt, idx = i);
    if (!dev)
        dev = weft__runtime_device(rt, idx = 0);
    cuda = strcmp(dev->drv->name, "cuda") == 0;
    if (weft__runtime_context(rt, idx, &ctx) < 0 ||
        weft__drv_queue_create(ctx, NULL, &q) < 0 ||
        weft__drv_mem_alloc(ctx, bytes, &dmem) < 0)
        bench_die("%s", weft_last_error());
    if (dev->props.pinned_host) {
        bench_check(weft__drv_host_alloc(ctx, bytes, &pin));
        host = pin->host;
    } else if (!(host = malloc(bytes))) {
        bench_die("out of memory");
    }
    memset(host, 1, bytes);
    bench_check(weft__drv_copy_h2d(q, dmem, 0, host, bytes));
    bench_check(weft__drv_queue_sync(q));

    /* tile (1, 1): the same place on both sides */
    memset(&up, 0, sizeof up);
    up.width = (size_t)tile * sizeof(float);
    up.height = tile;
    up.depth = 1;
    up.dst.off = up.src.off = (size_t)tile * row + up.width;
    up.dst.row_pitch = up.src.row_pitch = row;
    down = up;

    bench_begin("\"device\": \"%s\", \"n\": %u, \"tile\": %u", dev->name, n,
                tile);
    bench_note("%s:%u (%s), tile %ux%u floats of a %ux%u matrix, %s host "
               "memory, median of %d",
               dev->drv->name, dev->driver_index, dev->name, tile, tile, n, n,
               pin ? "pinned" : "pageable", reps);

    if (cuda && raw_open(&r) == 0) {
        weft__drv_native_context(ctx, &nq);
        cu_ctx = nq.context;
        have_raw = cu_ctx != NULL;
    }
    if (!cuda)
        bench_note("no CUDA device: the raw cuMemcpy2DAsync figures are "
                   "skipped");
    else if (!have_raw)
        bench_note("libcuda without cuMemcpy2DAsync_v2: raw figures skipped");

    /* weft and raw in turns, so that drift hits both alike */
    weft__drv_native_mem(dmem, 0, &nm);
    for (int dir = 0; dir < 2; dir++) {
        for (int i = 0; i < reps; i++) {
            uint64_t t0 = bench_now_ns();

            if (dir == 0)
                bench_check(weft__drv_copy_h2d_rect(q, dmem, host, &up));
            else
                bench_check(weft__drv_copy_d2h_rect(q, host, dmem, &down));
            bench_check(weft__drv_queue_sync(q));
            v[i] = gbs(tile_bytes, bench_now_ns() - t0);
            if (have_raw) {
                CUDA_MEMCPY2D p;

                memset(&p, 0, sizeof p);
                p.WidthInBytes = up.width;
                p.Height = up.height;
                p.srcPitch = p.dstPitch = row;
                if (dir == 0) {
                    p.srcMemoryType = CU_MEMORYTYPE_HOST;
                    p.srcHost = host + up.src.off;
                    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
                    p.dstDevice = nm.address + up.dst.off;
                } else {
                    p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
                    p.srcDevice = nm.address + up.src.off;
                    p.dstMemoryType = CU_MEMORYTYPE_HOST;
                    p.dstHost = host + up.dst.off;
                }
                t0 = bench_now_ns();
                if (r.CtxSetCurrent(cu_ctx) || r.Memcpy2DAsync(&p, NULL) ||
                    r.CtxSynchronize())
                    bench_die("raw cuMemcpy2DAsync failed");
                w[i] = gbs(tile_bytes, bench_now_ns() - t0);
            }
        }
        if (dir == 0) {
            wh = bench_median(v, reps);
            bench_figure("weft tile H2D", wh, "GB/s");
            if (have_raw) {
                rh = bench_median(w, reps);
                bench_figure("raw cuMemcpy2DAsync H2D", rh, "GB/s");
                bench_figure("weft/raw tile H2D", 100.0 * wh / rh, "%");
            }
        } else {
            wd = bench_median(v, reps);
            bench_figure("weft tile D2H", wd, "GB/s");
            if (have_raw) {
                rd = bench_median(w, reps);
                bench_figure("raw cuMemcpy2DAsync D2H", rd, "GB/s");
                bench_figure("weft/raw tile D2H", 100.0 * wd / rd, "%");
            }
        }
    }

    if (rows_reps > 0) {
        weft__drv_rect_rows = 1;
        for (int i = 0; i < rows_reps; i++) {
            uint64_t t0 = bench_now_ns();

            bench_check(weft__drv_copy_h2d_rect(q, dmem, host, &up));
            bench_check(weft__drv_queue_sync(q));
            v[i] = gbs(tile_bytes, bench_now_ns() - t0);
        }
        weft__drv_rect_rows = 0;
        bench_figure("weft tile H2D by rows", bench_median(v, rows_reps),
                     "GB/s");
    }
    {
        unsigned char *dst = malloc(tile_bytes);

        if (!dst)
            bench_die("out of memory");
        for (int i = 0; i < reps; i++) {
            uint64_t t0 = bench_now_ns();

            for (size_t y = 0; y < up.height; y++)
                memcpy(dst + y * up.width, host + up.src.off + y * row,
                       up.width);
            v[i] = gbs(tile_bytes, bench_now_ns() - t0);
            /* keep the copy: the compiler must not drop it */
            __asm__ volatile("" : : "r"(dst) : "memory");
        }
        free(dst);
        bench_figure("host memcpy tile", bench_median(v, reps), "GB/s");
    }
    bench_end();

    if (pin)
        weft__drv_mem_free(pin);
    else
        free(host);
    weft__drv_mem_free(dmem);
    weft__drv_queue_destroy(q);
    weft_runtime_destroy(rt);
    return 0;
}
