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
 *   graph tile H2D / D2H         the block through a graph: a block write
 *                                (read) node between memory of
 *                                weft_host_alloc and a buffer, on the
 *                                device, R launches then one wait, beside
 *                                R raw copies then one synchronise
 *   graph/raw tile H2D / D2H     the ratio, in % (the target is >= 95)
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

static int noop(const weft_native_ctx *ctx, void *user)
{
    (void)ctx;
    (void)user;
    return 0;
}

/* R raw copies of the tile then one synchronise: GB/s. */
static double raw_burst(raw *r, CUcontext ctx, int dir, unsigned char *host,
                        CUdeviceptr dev, const weft__rect *up)
{
    CUDA_MEMCPY2D p;
    uint64_t t0;

    memset(&p, 0, sizeof p);
    p.WidthInBytes = up->width;
    p.Height = up->height;
    p.srcPitch = p.dstPitch = up->src.row_pitch;
    if (dir == 0) {
        p.srcMemoryType = CU_MEMORYTYPE_HOST;
        p.srcHost = host + up->src.off;
        p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        p.dstDevice = dev + up->dst.off;
    } else {
        p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        p.srcDevice = dev + up->src.off;
        p.dstMemoryType = CU_MEMORYTYPE_HOST;
        p.dstHost = host + up->dst.off;
    }
    t0 = bench_now_ns();
    for (int i = 0; i < reps; i++)
        if (r->CtxSetCurrent(ctx) || r->Memcpy2DAsync(&p, NULL))
            bench_die("raw cuMemcpy2DAsync failed");
    if (r->CtxSynchronize())
        bench_die("raw synchronise failed");
    return gbs(up->width * up->height * (size_t)reps, bench_now_ns() - t0);
}

/*
 * The tile through graphs: a block write node (H2D) and a block read node
 * (D2H) on the device, from and into memory of weft_host_alloc, each
 * launched R times then waited for, beside R raw copies (same tile, same
 * host memory kind, the device's own allocation) then one synchronise.
 */
static void graph_figures(weft_runtime *rt, unsigned idx, raw *r, CUcontext ctx,
                          weft__mem *dmem, unsigned char *pin,
                          const weft__rect *up)
{
    size_t row = up->src.row_pitch, bytes = row * n;
    weft_device *dev = weft_runtime_device(rt, idx);
    weft_block blk = weft_block2(up->src.off, up->width, up->height, row);
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    weft__native_mem nm;
    weft_graph *gw, *gr;
    weft_exec *ew, *er;
    weft_buffer *b;
    weft_node nw;
    unsigned char *hp;
    double v[64], w[64];
    void *mem;

    if (weft_host_alloc(rt, bytes, &mem) < 0)
        bench_die("weft_host_alloc: %s", weft_last_error());
    hp = mem;
    memset(hp, 2, bytes);
    o.device = dev;
    bench_check(weft_buffer_create(rt, bytes, &b));
    bench_check(weft_graph_create(rt, &gw));
    bench_check(
        weft_graph_add_write_block(gw, b, &blk, hp + blk.origin, row, 0, &nw));
    /* a reader on the device, so that the write goes there */
    {
        static const weft_native_impl impls[] = {{"cuda", 0, noop},
                                                 {"opencl", 0, noop},
                                                 {"host", 0, noop},
                                                 {"sim", 0, noop}};
        weft_access_desc acc = weft_access_block(b, blk, WEFT_READ);
        weft_node nn;

        bench_check(weft_graph_add_native(gw, impls, 4, &acc, 1, NULL, &nn));
        bench_check(weft_graph_set_device(gw, nn, dev));
        bench_check(weft_graph_set_native_capture(gw, nn, 1));
    }
    bench_check(weft_graph_instantiate(gw, &o, &ew));
    bench_check(weft_graph_create(rt, &gr));
    bench_check(
        weft_graph_add_read_block(gr, b, &blk, hp + blk.origin, row, 0, NULL));
    bench_check(weft_graph_instantiate(gr, &o, &er));
    /* first launches: the replica made, the native graphs recorded */
    for (int i = 0; i < 3; i++) {
        bench_check(weft_exec_launch(ew));
        bench_check(weft_exec_wait(ew));
        bench_check(weft_exec_launch(er));
        bench_check(weft_exec_wait(er));
    }
    if (r) {
        weft__drv_native_mem(dmem, 0, &nm);
        (void)pin;
    }
    for (int dir = 0; dir < 2; dir++) {
        weft_exec *e = dir == 0 ? ew : er;
        weft_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};

        bench_check(weft_runtime_get_stats(rt, &s0));
        for (int k = 0; k < 5; k++) {
            uint64_t t0 = bench_now_ns();

            for (int i = 0; i < reps; i++)
                bench_check(weft_exec_launch(e));
            bench_check(weft_exec_wait(e));
            v[k] =
                gbs(up->width * up->height * (size_t)reps, bench_now_ns() - t0);
            if (r)
                w[k] = raw_burst(r, ctx, dir, hp, nm.address, up);
        }
        bench_check(weft_runtime_get_stats(rt, &s1));
        bench_figure(dir == 0 ? "graph tile H2D" : "graph tile D2H",
                     bench_median(v, 5), "GB/s");
        /* the route: one block copy per launch, nothing else */
        bench_figure(dir == 0 ? "graph tile H2D copies per launch"
                              : "graph tile D2H copies per launch",
                     (double)(dir == 0 ? s1.h2d_copies - s0.h2d_copies
                                       : s1.d2h_copies - s0.d2h_copies) /
                         (5.0 * reps),
                     "copies");
        if (r) {
            bench_figure(dir == 0 ? "raw burst tile H2D" : "raw burst tile D2H",
                         bench_median(w, 5), "GB/s");
            bench_figure(dir == 0 ? "graph/raw tile H2D" : "graph/raw tile D2H",
                         100.0 * bench_median(v, 5) / bench_median(w, 5), "%");
        }
    }
    weft_exec_destroy(ew);
    weft_exec_destroy(er);
    weft_graph_destroy(gw);
    weft_graph_destroy(gr);
    weft_buffer_destroy(b);
    weft_host_free(rt, mem);
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
    graph_figures(rt, idx, have_raw ? &r : NULL, cu_ctx, dmem, host, &up);
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
