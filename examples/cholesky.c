/*
 * cholesky: a tiled right-looking Cholesky factorisation A = L L^T (double
 * precision, lower) of an n x n symmetric positive definite matrix, as one
 * weft graph over every device of a driver.
 *
 * Layout: A is ROW-MAJOR, n rows of ld doubles in ONE buffer (ld = n). It
 * is seen as a weft_matrix and cut into b x b tiles, each a 2-D block of
 * that buffer (weft_matrix_tile): nothing is packed, and a tile keeps the
 * matrix's leading dimension on every device. Only the lower triangle is
 * read and written; L overwrites it.
 *
 * --layout tiles stores A tile by tile instead (tile (i, j) is b x b
 * contiguous doubles, row-major, ld = b, at tile index i * n/b + j; the
 * host side converts when it fills and checks the matrix). Out of core it
 * matters: a device copy of a row-major tile spans its whole band of b
 * rows (the tile's pitch is the matrix's), so eviction frees and moves
 * whole bands, n/b tiles at a time; a contiguous tile is evicted alone.
 *
 * For k = 0 .. n/b - 1 the graph has
 *
 *     POTRF  A(k,k) = L(k,k) L(k,k)^T
 *     TRSM   A(i,k) = A(i,k) L(k,k)^-T                  for i > k
 *     SYRK   A(i,i) -= A(i,k) A(i,k)^T                  for i > k
 *     GEMM   A(i,j) -= A(i,k) A(j,k)^T                  for i > j > k
 *
 * and weft infers every dependency from the tiles' bytes. The nodes that
 * write tile (i, j) go to its owner, device (i mod P) * Q + (j mod Q) of a
 * P x Q grid of the driver's devices, P >= Q (2-D block-cyclic; 2 x 1 for
 * two devices: block rows alternate, so that each panel's TRSMs run on
 * both); --place auto leaves them to placement.
 *
 * Tile kernels, by driver:
 *   cuda    native nodes calling cusolverDnDpotrf, cublasDtrsm, cublasDsyrk
 *           and cublasDgemm on the stream weft hands over (cuSOLVER, cuBLAS
 *           and libcuda loaded at run time with dlopen, so this builds
 *           without the CUDA toolkit). cuBLAS is column-major: a row-major
 *           lower tile is a column-major upper one, so the calls use the
 *           transposed forms (see cu_* below). POTRF's workspace and devInfo
 *           are allocated once per GPU (cuMemAlloc), outside the graph.
 *   host    native nodes calling LAPACKE_dpotrf_work and cblas_dtrsm, _dsyrk,
 *           _dgemm of OpenBLAS (one thread per task), where the example was
 *           built with OpenBLAS and LAPACKE (else the portable kernels).
 *   opencl, sim
 *           kernel nodes of one portable-dialect source (below), which also
 *           runs on host and cuda devices with --kernels portable. A tile
 *           is a kernel argument at an offset into the buffer: the offset
 *           must be a multiple of the devices' arg_offset_align (128 bytes
 *           on PoCL: b a multiple of 16).
 * The native nodes are capturable (weft_graph_set_native_capture: CUDA
 * graphs replay the cuSOLVER and cuBLAS calls from the second launch on;
 * --no-capture turns it off).
 *
 * The graph first sets A from a pristine copy A0 (a second buffer), tile
 * by tile on the owner of each tile (cuMemcpy2DAsync, memcpy, or a
 * portable copy kernel), so that every launch factors the same matrix and
 * is the same work (a native graph replays it). The first launch moves
 * A0's tiles to the devices; the --reps launches after it find them there
 * and are timed together. GFLOP/s count n^3/3 flops (the tile copies, 8 n^2
 * bytes read and written on the devices, included in the time).
 *
 * --once factors a matrix that starts on the host only: fresh buffers (A
 * wrapped anew, nothing of it on any device), a graph without the restore
 * from A0, one launch, then weft_buffer_sync_host(A); the time is the
 * launch, its wait and the sync. --mem-limit SIZE sets the runtime's
 * device_mem_limit (as WEFT_DEVICE_MEM_LIMIT, which overrides it): below
 * the matrix's n^2 doubles, the factorisation runs out of core (weft
 * evicts tiles, writing modified ones back) and the example prints the
 * evictions and write-backs.
 *
 * Bytes moved. The example prints, for the first launch and for a steady
 * one (the mean of the --reps launches; with --once, for the one launch
 * and its sync), the bytes that crossed each link (weft_runtime_get_stats:
 * host->device, device->host, peer; differences around the launches) and
 * the least a tiled Cholesky must move under the owner mapping above
 * (with --place auto the same minimum, of the mapping weft did not use).
 * With T = b^2 * 8 the bytes of a tile and nt = n / b:
 *
 *   host->device, first launch   nt (nt + 1) / 2 * T: each of A0's lower
 *                                tiles once (to its owner); with --once,
 *                                A's lower tiles once
 *   host->device, steady launch  0 (A0's tiles stay on their owners)
 *   device->host, a launch       0; with --once, nt (nt + 1) / 2 * T (the
 *                                sync brings L's tiles back once)
 *   peer, each launch            sum over the panel tiles L(i,k), i >= k,
 *                                of T * |R(i,k) \ {owner(i,k)}|, R(i,k)
 *                                the owners of the tiles whose nodes read
 *                                L(i,k): for i = k the TRSM tiles (r,k),
 *                                r > k; for i > k the SYRK tile (i,i) and
 *                                the GEMM tiles (i,j), k < j < i, and
 *                                (r,i), r > i. A reader device gets each
 *                                tile once; on one device this is 0.
 *
 * Where two devices in use cannot reach each other (PoCL's devices), the
 * panel tiles go through the host: the peer minimum is then 0, it is
 * added to host->device, and device->host gets T for each panel tile that
 * some other device reads (once to the host).
 *
 * Out of core, write-backs and re-reads add to host->device and
 * device->host. The public statistics sum each link over its devices: no
 * split per device pair.
 *
 * Check: ||A - L L^T||_F / ||A||_F, computed on the CPU in double over the
 * lower triangle (both triangles counted), must be below 1e-12 (the
 * backward error of Cholesky is a small multiple of n eps ||A||, and A
 * below is well conditioned: a residual above that bound is a wrong tile,
 * not rounding). Up to n = 4096 every row is checked; above, --check-rows
 * rows spread over the matrix (the residual and the norm of A over them).
 *
 *   cholesky [--n N] [--tile B] [--driver cuda|host|opencl|sim]
 *            [--kernels native|portable] [--reps R] [--place owner|auto]
 *            [--no-capture] [--check-rows S] [--once] [--mem-limit SIZE]
 *            [--no-lookahead] [--layout rows|tiles] [--grid wide|tall]
 *            [--map snake|cyclic]
 *
 * --grid wide makes the grid P x Q with P <= Q instead (block columns
 * alternate on two devices, but each panel's POTRF and TRSMs run on one
 * device; on two H200s at n 32768 in tiles of 2048 the tall grid ran at
 * 62.3-63.1 TFLOP/s, the wide one at 54.9, both before the two defaults
 * below).
 *
 * Lookahead (the default; --no-lookahead turns it off) gives the critical
 * path priority (weft_graph_set_priority): each step's POTRF(k), the TRSM
 * of the next panel's diagonal row (k+1, k) and the SYRK of its diagonal
 * tile (k+1, k+1) are WEFT_PRIORITY_HIGH, so that they run on the devices'
 * high-priority streams, in that order, ahead of the trailing updates:
 * POTRF(k+1) waits only for that chain, and a device that ran out of
 * trailing updates finds the next panel ready. Marking every TRSM high,
 * and the GEMMs of the next column, queued SYRK(k+1, k+1) behind all of a
 * panel's TRSMs on the one high stream, and POTRF(k+1) behind those GEMMs
 * (no faster than no priorities).
 *
 * The owner map (--map) deals tile rows (and columns) to the grid's
 * devices in cycles reflected every other cycle (snake, the default; see
 * cycle_place), which evens out the triangle's work, or in plain cycles
 * (cyclic). On two H100s at n 32768 in tiles of 2048, in one run of
 * bench/cholesky: 70.8 TFLOP/s with both defaults, 69.3 with lookahead and
 * plain cycles, 66.2 and 62.2 without lookahead; one GPU 38.0 with
 * lookahead and 35.1 without.
 *
 * bench/cholesky includes this file with CHOLESKY_NO_MAIN defined and
 * times the same graph (chol_open, chol_matrix, chol_use, chol_run,
 * chol_once, chol_min_links).
 *
 * Without --driver it runs on the driver of the runtime's first device
 * (WEFT_DEVICES); WEFT_DEVICES, where set, also holds for --driver, and
 * naming no device of that driver is a skip (exit 77). With --driver cuda and
 * no GPU, or no cuSOLVER/cuBLAS, it prints "skipped: no CUDA device" and
 * exits 77.
 */
#include <weft.h>

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chol_tiles.h"

#ifdef WEFT_HAVE_OPENBLAS
#include <cblas.h>
#include <lapacke.h>
#endif

#define MAX_DEVICES CHOL_MAX_DEVICES

/* ---- the factorisation --------------------------------------------------- */

typedef struct chol {
    const char *driver;
    int native;          /* library calls in native nodes, else kernels */
    size_t n, b, nt, ld; /* elements; nt tiles per side */
    unsigned ndev, p, q; /* devices used, and their P x Q grid */
    unsigned ndev_all;   /* the driver's devices (dev[0, ndev) used) */
    unsigned align;      /* their largest arg_offset_align */
    int cuda;            /* cuSOLVER and cuBLAS loaded */
    int place_auto;
    int no_lookahead;   /* --no-lookahead: no node is high priority */
    int tiled;          /* --layout tiles: tile by tile, ld = b */
    int wide;           /* --grid wide: P <= Q (columns alternate on two) */
    int cyclic;         /* --map cyclic: cycles not reflected (cycle_place) */
    uint64_t mem_limit; /* device_mem_limit of the runtime (0: none) */
    weft_runtime *rt;
    double *a, *a0; /* the working matrix and the pristine one (host) */
    weft_buffer *ab, *a0b;
    weft_matrix A, A0;
    weft_module *mod;
    weft_kernel *kernel[OP_COUNT];
    chol_tiles tl; /* the devices (tl.dev), the tiles' shape, GPU state */
} chol;

/*
 * Tile row i's place in a cycle of k devices: block-cyclic (0, 1, .., k-1,
 * 0, 1, ..), or reflected on every other cycle (0, 1, .., k-1, k-1, ..,
 * 1, 0, 0, 1, ..) unless m->cyclic. Row i of the lower triangle
 * carries work in proportion to about i^2, so plain cycling gives the
 * last device of each cycle the most: on two devices and 16 tile rows the
 * odd rows hold 9.4% more flops than half the total, which caps two
 * devices at 1.83x one; reflected, 1.2% more (a cap of 1.98x).
 */
static size_t cycle_place(const chol *m, size_t i, size_t k)
{
    size_t r = i % k;

    return m->cyclic || (i / k) % 2 == 0 ? r : k - 1 - r;
}

/* The owner of tile (i, j): the P x Q grid of devices, block by block. */
static size_t owner_index(const chol *m, size_t i, size_t j)
{
    return cycle_place(m, i, m->p) * m->q + cycle_place(m, j, m->q);
}

static const weft_device *owner(const chol *m, size_t i, size_t j)
{
    return m->tl.dev[owner_index(m, i, j)];
}

/*
 * One tile operation as a node: acc[0..nacc) are the tiles, the last one
 * written; placed on the owner of the tile it writes.
 */
static int add_op(chol *m, weft_graph *g, int op, int capture,
                  const weft_access_desc *acc, unsigned nacc, size_t i,
                  size_t j, int high)
{
    weft_node node;
    int rc;

    if (m->native || (op == OP_COPY && !m->kernel[OP_COPY])) {
        const weft_native_impl impl = {m->driver, 0,
                                       chol_native_fn(m->driver, op)};

        rc = weft_graph_add_native(g, &impl, 1, acc, nacc, &m->tl, &node);
        /* Only enqueues on the stream, the same at every launch. */
        if (rc == 0 && capture)
            rc = weft_graph_set_native_capture(g, node, 1);
    } else {
        weft_arg args[5];
        weft_dims d = weft_dims2((uint32_t)m->b, (uint32_t)m->b);
        unsigned n = 0;

        /* the same tiles as block arguments */
        for (unsigned x = 0; x < nacc; x++) {
            const weft_block blk = {acc[x].offset,    acc[x].size,
                                    acc[x].rows,      acc[x].slices,
                                    acc[x].row_pitch, acc[x].slice_pitch};

            args[n++] = weft_arg_block(acc[x].buffer, blk, acc[x].mode);
        }
        args[n++] = weft_arg_u32((uint32_t)m->ld);
        args[n++] = weft_arg_u32((uint32_t)m->b);
        if (op == OP_POTRF) {
            weft_device_info info = {.size = sizeof info};
            uint32_t gs = (uint32_t)m->b;

            /* one group, as large as every device takes (at most b) */
            for (unsigned x = 0; x < m->ndev; x++)
                if (weft_device_get_info(m->tl.dev[x], &info) == 0 &&
                    info.max_group_size && info.max_group_size < gs)
                    gs = info.max_group_size;
            d = weft_dims1(gs);
            d.group[0] = gs;
        } else if (op == OP_TRSM) {
            d = weft_dims1((uint32_t)m->b);
        }
        rc = weft_graph_add_kernel(g, m->kernel[op], d, args, n, &node);
    }
    if (rc == 0 && (!m->place_auto || m->ndev == 1))
        rc = weft_graph_set_device(g, node, owner(m, i, j));
    if (rc == 0 && high && !m->no_lookahead)
        rc = weft_graph_set_priority(g, node, WEFT_PRIORITY_HIGH);
    return rc;
}

static weft_access_desc tile(const chol *m, const weft_matrix *x, size_t i,
                             size_t j, weft_access mode)
{
    if (m->tiled)
        return weft_access_block(
            x->buffer, weft_matrix_tile(*x, m->b, m->b, i * m->nt + j, 0),
            mode);
    return weft_access_block(x->buffer, weft_matrix_tile(*x, m->b, m->b, i, j),
                             mode);
}

/*
 * A = A0 on the lower tiles, each copied on its owner (where restore),
 * then the factorisation of A in place: one graph.
 */
static int factor_graph(chol *m, int capture, int restore, weft_graph **out,
                        size_t *nodes)
{
    weft_graph *g;
    int rc;

    *nodes = 0;
    if ((rc = weft_graph_create(m->rt, &g)) < 0)
        return rc;
    for (size_t i = 0; restore && i < m->nt && rc == 0; i++)
        for (size_t j = 0; j <= i && rc == 0; j++) {
            weft_access_desc c[2] = {tile(m, &m->A0, i, j, WEFT_READ),
                                     tile(m, &m->A, i, j, WEFT_WRITE)};

            rc = add_op(m, g, OP_COPY, capture, c, 2, i, j, 0);
            ++*nodes;
        }
    for (size_t k = 0; k < m->nt && rc == 0; k++) {
        weft_access_desc pk = tile(m, &m->A, k, k, WEFT_READ_WRITE);

        rc = add_op(m, g, OP_POTRF, capture, &pk, 1, k, k, 1);
        ++*nodes;
        for (size_t i = k + 1; i < m->nt && rc == 0; i++) {
            weft_access_desc t[2] = {tile(m, &m->A, k, k, WEFT_READ),
                                     tile(m, &m->A, i, k, WEFT_READ_WRITE)};

            rc = add_op(m, g, OP_TRSM, capture, t, 2, i, k, i == k + 1);
            ++*nodes;
        }
        for (size_t i = k + 1; i < m->nt && rc == 0; i++) {
            weft_access_desc s[2] = {tile(m, &m->A, i, k, WEFT_READ),
                                     tile(m, &m->A, i, i, WEFT_READ_WRITE)};

            rc = add_op(m, g, OP_SYRK, capture, s, 2, i, i, i == k + 1);
            ++*nodes;
            for (size_t j = k + 1; j < i && rc == 0; j++) {
                weft_access_desc u[3] = {tile(m, &m->A, i, k, WEFT_READ),
                                         tile(m, &m->A, j, k, WEFT_READ),
                                         tile(m, &m->A, i, j, WEFT_READ_WRITE)};

                rc = add_op(m, g, OP_GEMM, capture, u, 3, i, j, 0);
                ++*nodes;
            }
        }
    }
    if (rc < 0) {
        weft_graph_destroy(g);
        return rc;
    }
    *out = g;
    return 0;
}

/* ---- the matrix and the check -------------------------------------------- */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/*
 * Use the first ndev of the driver's devices, as a P x Q grid with Q the
 * largest divisor of ndev up to its square root (P >= Q; --grid wide: the
 * transpose).
 */
static void chol_use(chol *m, unsigned ndev)
{
    m->ndev = ndev;
    for (m->p = 1; (m->p + 1) * (m->p + 1) <= ndev; m->p++)
        ;
    while (ndev % m->p)
        m->p--;
    m->q = ndev / m->p;
    if (!m->wide) {
        unsigned t = m->p;

        m->p = m->q;
        m->q = t;
    }
}

enum { CHOL_SKIP = 1 };

/*
 * The runtime on driver (NULL: WEFT_DEVICES, then the first device's
 * driver), every device of that driver, and the tile kernels: native
 * (kernels 1), portable (0), or by driver (-1). CHOL_SKIP, with why, where
 * the driver or its library is missing.
 */
static int chol_open(chol *m, const char *driver, int kernels, char *why,
                     size_t size)
{
    static const char *const names[OP_COUNT] = {
        "potrf_tile", "trsm_tile", "syrk_tile", "gemm_tile", "copy_tile"};
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    int rc;

    m->align = 1;
    m->driver = driver;
    o.devices = driver; /* (WEFT_DEVICES, where set, overrides it) */
    o.device_mem_limit = m->mem_limit; /* (as WEFT_DEVICE_MEM_LIMIT) */
    rc = weft_runtime_create(&m->rt, &o);
    if (rc < 0 || weft_runtime_device_count(m->rt) == 0) {
        snprintf(why, size, "%s", rc < 0 ? weft_last_error() : "no device");
        return CHOL_SKIP;
    }
    for (unsigned i = 0; i < weft_runtime_device_count(m->rt); i++) {
        weft_device_info info = {.size = sizeof info};
        const weft_device *d = weft_runtime_device(m->rt, i);

        if (weft_device_get_info(d, &info) < 0)
            continue;
        if (!m->driver)
            m->driver = info.driver;
        if (!strcmp(info.driver, m->driver) && m->ndev_all < MAX_DEVICES) {
            pthread_mutex_init(&m->tl.gpu[m->ndev_all].lock, NULL);
            m->tl.dev[m->ndev_all++] = d;
            if (info.arg_offset_align > m->align)
                m->align = info.arg_offset_align;
        }
    }
    m->tl.driver = m->driver;
    m->tl.ndev = m->ndev_all;
    if (m->ndev_all == 0) { /* WEFT_DEVICES named other drivers */
        snprintf(why, size, "no %s device among WEFT_DEVICES=%s", driver,
                 getenv("WEFT_DEVICES") ? getenv("WEFT_DEVICES") : "");
        return CHOL_SKIP;
    }
    chol_use(m, m->ndev_all);
    /* native library calls on cuda and host (with OpenBLAS), else kernels */
    if (!strcmp(m->driver, "cuda")) {
        m->native = kernels != 0;
        if (chol_cuda_load(why, size) < 0)
            return CHOL_SKIP;
        m->cuda = 1;
    } else if (!strcmp(m->driver, "host")) {
#ifdef WEFT_HAVE_OPENBLAS
        m->native = kernels != 0;
        openblas_set_num_threads(1);
#else
        if (kernels == 1) {
            snprintf(why, size, "built without OpenBLAS");
            return CHOL_SKIP;
        }
#endif
    } else if (kernels == 1) {
        snprintf(why, size, "native tile kernels exist for cuda and host only");
        return CHOL_SKIP;
    }
    if (m->native)
        return 0;
    if ((rc = weft_module_create_portable(m->rt, chol_tile_source, NULL,
                                          &m->mod)) < 0)
        return rc;
    for (int op = 0; op < OP_COUNT; op++)
        if ((rc = weft_module_get_kernel(m->mod, names[op], &m->kernel[op])) <
            0)
            return rc;
    return 0;
}

/*
 * A and A0 as matrices whose tiles tile() names: n x n of ld n, or in
 * tiles, (n/b)^2 tiles of b x b one below the other.
 */
static void chol_views(chol *m)
{
    size_t rows = m->tiled ? m->nt * m->nt * m->b : m->n;
    size_t cols = m->tiled ? m->b : m->n;

    m->A = weft_matrix_of(m->ab, 0, sizeof(double), rows, cols, m->ld);
    m->A0 = weft_matrix_of(m->a0b, 0, sizeof(double), rows, cols, m->ld);
}

/* The matrix A (and A0) of n x n in b x b tiles, replacing the last. */
static int chol_matrix(chol *m, size_t n, size_t b)
{
    int rc;

    weft_buffer_destroy(m->ab);
    weft_buffer_destroy(m->a0b);
    m->ab = m->a0b = NULL;
    free(m->a);
    free(m->a0);
    m->n = n;
    m->b = b;
    m->nt = n / b;
    m->ld = m->tiled ? b : n;
    m->tl.n = n;
    m->tl.b = b;
    m->tl.nt = m->nt;
    m->tl.ld = m->ld;
    m->tl.tiled = m->tiled;
    if (!m->native && (b * sizeof(double)) % m->align) {
        fprintf(stderr,
                "cholesky: tiles are kernel arguments at offsets that must "
                "be multiples of %u bytes on these devices: a tile a "
                "multiple of %zu\n",
                m->align, (m->align + sizeof(double) - 1) / sizeof(double));
        return WEFT_EINVAL;
    }
    m->a = malloc(n * n * sizeof *m->a);
    m->a0 = malloc(n * n * sizeof *m->a0);
    if (!m->a || !m->a0)
        return WEFT_ENOMEM;
    for (size_t r = 0; r < n; r++)
        for (size_t c = 0; c < n; c++)
            m->a[chol_at(&m->tl, r, c)] = m->a0[chol_at(&m->tl, r, c)] =
                chol_a_at(n, r, c);
    if ((rc = weft_buffer_wrap(m->rt, m->a, n * n * sizeof *m->a, &m->ab)) <
            0 ||
        (rc = weft_buffer_wrap(m->rt, m->a0, n * n * sizeof *m->a0, &m->a0b)) <
            0)
        return rc;
    chol_views(m);
    return m->cuda && m->native ? chol_gpu_setup(&m->tl, m->rt) : 0;
}

/* Bytes that crossed each link (weft_stats, summed over devices). */
typedef struct chol_bytes {
    uint64_t h2d, d2h, peer;
} chol_bytes;

/* What chol_run and chol_once measured. */
typedef struct chol_result {
    double first;  /* seconds: the first launch (--once: launch and sync) */
    double steady; /* seconds per launch of the --reps after it */
    size_t nodes;
    int bad; /* the last devInfo of a GPU that was not 0 */
    weft_exec_stats st;
    chol_bytes first_bytes;  /* moved by the first launch (and sync) */
    chol_bytes steady_bytes; /* per steady launch: the mean of reps */
    /* over the whole run: replica extents evicted, written back first,
     * and the bytes those write-backs moved */
    uint64_t evictions, writebacks, evict_bytes;
} chol_result;

/*
 * The least a tiled Cholesky moves (the file's header comment). Where two
 * of the devices cannot reach each other (PoCL's), the panel tiles go
 * through the host: peer is then 0, and each panel tile that another
 * device reads goes to the host once (staged) and back to every other
 * reader (peer's bytes, on host->device).
 */
typedef struct chol_minimum {
    uint64_t lower;  /* bytes of the lower tiles, nt (nt + 1) / 2 of them */
    uint64_t peer;   /* bytes to other devices per launch, owner mapping */
    uint64_t staged; /* where not direct: device->host bytes per launch */
    int direct;      /* 1: the devices in use reach each other directly */
} chol_minimum;

static void stats_now(const chol *m, weft_stats *s)
{
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    weft_runtime_get_stats(m->rt, s); /* (cannot fail on a live runtime) */
}

static chol_bytes bytes_between(const weft_stats *a, const weft_stats *b,
                                uint64_t per)
{
    chol_bytes d = {(b->h2d_bytes - a->h2d_bytes) / per,
                    (b->d2h_bytes - a->d2h_bytes) / per,
                    (b->peer_bytes - a->peer_bytes) / per};
    return d;
}

static void evictions_between(chol_result *r, const weft_stats *a,
                              const weft_stats *b)
{
    r->evictions = b->evictions - a->evictions;
    r->writebacks = b->writebacks - a->writebacks;
    r->evict_bytes = b->evict_bytes - a->evict_bytes;
}

/* Adds to r->peer the tile's bytes for each device of seen[] other than
 * the owner, and to r->staged once where there is one; clears seen[]. */
static void count_readers(const chol *m, unsigned char *seen, size_t owner,
                          uint64_t tile, chol_minimum *r)
{
    uint64_t before = r->peer;

    for (unsigned d = 0; d < m->ndev; d++) {
        if (seen[d] && d != owner)
            r->peer += tile;
        seen[d] = 0;
    }
    if (r->peer != before)
        r->staged += tile;
}

static chol_minimum chol_min(const chol *m)
{
    uint64_t tile = (uint64_t)m->b * m->b * sizeof(double);
    unsigned char seen[MAX_DEVICES] = {0};
    chol_minimum r = {(uint64_t)m->nt * (m->nt + 1) / 2 * tile, 0, 0, 1};

    for (unsigned x = 0; x < m->ndev; x++)
        for (unsigned y = 0; y < m->ndev; y++) {
            int can = 1;

            if (x != y && (weft_device_can_access_peer(
                               m->tl.dev[x], m->tl.dev[y], &can) < 0 ||
                           !can))
                r.direct = 0;
        }
    for (size_t k = 0; m->ndev > 1 && k < m->nt; k++) {
        /* L(k,k): the TRSMs of (r, k) */
        for (size_t i = k + 1; i < m->nt; i++)
            seen[owner_index(m, i, k)] = 1;
        count_readers(m, seen, owner_index(m, k, k), tile, &r);
        /* L(i,k), i > k: SYRK (i,i), GEMM (i,j) k < j < i and (r,i) r > i */
        for (size_t i = k + 1; i < m->nt; i++) {
            for (size_t j = k + 1; j <= i; j++)
                seen[owner_index(m, i, j)] = 1;
            for (size_t x = i + 1; x < m->nt; x++)
                seen[owner_index(m, x, i)] = 1;
            count_readers(m, seen, owner_index(m, i, k), tile, &r);
        }
    }
    if (r.direct)
        r.staged = 0;
    return r;
}

/*
 * The least each link moves in a launch: the first (with the restore from
 * A0 on the host), a steady one, or --once's (the sync included).
 */
enum { LAUNCH_FIRST, LAUNCH_STEADY, LAUNCH_ONCE };
static chol_bytes chol_min_links(const chol *m, int launch)
{
    chol_minimum l = chol_min(m);
    uint64_t via_host = l.direct ? 0 : l.peer;
    chol_bytes b = {via_host, l.staged, l.direct ? l.peer : 0};

    if (launch != LAUNCH_STEADY)
        b.h2d += l.lower;
    if (launch == LAUNCH_ONCE)
        b.d2h += l.lower;
    return b;
}

/*
 * The graph on the devices in use, launched once (r->first: seconds) and
 * reps times more (r->steady: seconds per launch), then A's bytes on the
 * host.
 */
static int chol_run(chol *m, int reps, int capture, chol_result *r)
{
    weft_graph *g = NULL;
    weft_exec *e = NULL;
    weft_stats s0, s1, s2;
    double t0;
    int rc;

    r->bad = 0;
    r->st.size = sizeof r->st;
    if ((rc = factor_graph(m, capture, 1, &g, &r->nodes)) < 0 ||
        (rc = weft_graph_instantiate(g, NULL, &e)) < 0)
        goto out;
    /* The first launch moves A0's tiles; the later ones find them there. */
    stats_now(m, &s0);
    t0 = now();
    if ((rc = weft_exec_launch(e)) < 0 || (rc = weft_exec_wait(e)) < 0)
        goto out;
    r->first = now() - t0;
    stats_now(m, &s1);
    t0 = now();
    for (int x = 0; x < reps && rc == 0; x++)
        rc = weft_exec_launch(e);
    if (rc < 0 || (rc = weft_exec_wait(e)) < 0)
        goto out;
    r->steady = (now() - t0) / reps;
    stats_now(m, &s2);
    r->first_bytes = bytes_between(&s0, &s1, 1);
    r->steady_bytes = bytes_between(&s1, &s2, (uint64_t)reps);
    evictions_between(r, &s0, &s2);
    if ((rc = weft_exec_get_stats(e, &r->st)) < 0 ||
        (rc = weft_buffer_sync_host(m->ab)) < 0)
        goto out;
    if (m->cuda && m->native && (r->bad = chol_gpu_info(&m->tl)) != 0)
        fprintf(stderr, "cholesky: cusolverDnDpotrf: devInfo %d\n", r->bad);
out:
    weft_exec_destroy(e);
    if (m->cuda && m->native)
        chol_gpu_forget_streams(&m->tl);
    weft_graph_destroy(g);
    return rc;
}

/*
 * Fresh buffers over the same host arrays, nothing of them on a device: A
 * (set from A0 on the host first where reset), and A0 where both.
 */
static int chol_rewrap(chol *m, int reset, int both)
{
    size_t bytes = m->n * m->n * sizeof *m->a;
    int rc;

    if ((rc = weft_buffer_destroy(m->ab)) < 0 ||
        (both && (rc = weft_buffer_destroy(m->a0b)) < 0))
        return rc;
    m->ab = NULL;
    if (both)
        m->a0b = NULL;
    if (reset)
        memcpy(m->a, m->a0, bytes);
    if ((rc = weft_buffer_wrap(m->rt, m->a, bytes, &m->ab)) < 0 ||
        (both && (rc = weft_buffer_wrap(m->rt, m->a0, bytes, &m->a0b)) < 0))
        return rc;
    chol_views(m);
    return 0;
}

/*
 * The matrix from the host only: A set from A0 on the host and wrapped
 * anew, the graph without the restore, one launch and A's bytes brought
 * back to the host, timed together (r->first; r->first_bytes moved).
 */
static int chol_once(chol *m, int capture, chol_result *r)
{
    weft_graph *g = NULL;
    weft_exec *e = NULL;
    weft_stats s0, s1;
    double t0;
    int rc;

    memset(r, 0, sizeof *r);
    r->st.size = sizeof r->st;
    if ((rc = chol_rewrap(m, 1, 0)) < 0)
        return rc;
    if ((rc = factor_graph(m, capture, 0, &g, &r->nodes)) < 0 ||
        (rc = weft_graph_instantiate(g, NULL, &e)) < 0)
        goto out;
    stats_now(m, &s0);
    t0 = now();
    if ((rc = weft_exec_launch(e)) < 0 || (rc = weft_exec_wait(e)) < 0 ||
        (rc = weft_buffer_sync_host(m->ab)) < 0)
        goto out;
    r->first = r->steady = now() - t0;
    stats_now(m, &s1);
    r->first_bytes = bytes_between(&s0, &s1, 1);
    evictions_between(r, &s0, &s1);
    if ((rc = weft_exec_get_stats(e, &r->st)) < 0)
        goto out;
    if (m->cuda && m->native && (r->bad = chol_gpu_info(&m->tl)) != 0)
        fprintf(stderr, "cholesky: cusolverDnDpotrf: devInfo %d\n", r->bad);
out:
    weft_exec_destroy(e);
    if (m->cuda && m->native)
        chol_gpu_forget_streams(&m->tl);
    weft_graph_destroy(g);
    return rc;
}

static void chol_close(chol *m)
{
    weft_buffer_destroy(m->ab);
    weft_buffer_destroy(m->a0b);
    weft_module_destroy(m->mod);
    if (m->cuda)
        chol_gpu_teardown(&m->tl);
    weft_runtime_destroy(m->rt);
    free(m->a);
    free(m->a0);
}

#ifndef CHOLESKY_NO_MAIN
/* "1.23 GB": bytes in decimal units. */
static const char *human(char *buf, size_t size, uint64_t bytes)
{
    static const char *const unit[] = {"kB", "MB", "GB", "TB"};
    double v = (double)bytes;
    int u = -1;

    while (v >= 1000 && u < 3) {
        v /= 1000;
        u++;
    }
    if (u < 0)
        snprintf(buf, size, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, size, "%.2f %s", v, unit[u]);
    return buf;
}

/* "<what> bytes: 1.23 GB (minimum 1.20 GB, 1.025x)" */
static void print_bytes(const char *what, uint64_t moved, uint64_t least)
{
    char a[32], b[32];

    if (least)
        printf("%s bytes: %s (minimum %s, %.3fx)\n", what,
               human(a, sizeof a, moved), human(b, sizeof b, least),
               (double)moved / (double)least);
    else
        printf("%s bytes: %s (minimum 0 B)\n", what, human(a, sizeof a, moved));
}

static void usage(void)
{
    fprintf(stderr,
            "usage: cholesky [--n N] [--tile B] [--driver "
            "cuda|host|opencl|sim] [--kernels native|portable] [--reps R] "
            "[--place owner|auto] [--no-capture] [--check-rows S] [--once] "
            "[--mem-limit SIZE] [--no-lookahead] [--layout rows|tiles] "
            "[--grid wide|tall] [--map snake|cyclic]\n");
    exit(2);
}

/* "64M", "2G", "4096": bytes, with a K, M, G or T suffix (powers of 1024). */
static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;

    if (end == s)
        return -1;
    if (*end) {
        const char *u = strchr("KMGT", *end);

        if (!u || end[1])
            return -1;
        shift = 10 * (int)(u - "KMGT" + 1);
    }
    *out = (uint64_t)v << shift;
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = 1024, b = 128, check_rows = 32;
    int reps = 3, capture = 1, kernels = -1, once = 0; /* -1: by driver */
    const char *driver = NULL;
    chol_result r;
    chol_bytes least[3];
    double res, flops;
    char why[512], h[32];
    chol m;
    int rc = 0;

    memset(&m, 0, sizeof m);
    memset(&r, 0, sizeof r);
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(argv[i], "--n") && v)
            n = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--tile") && v)
            b = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--reps") && v)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--check-rows") && v)
            check_rows = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--driver") && v)
            driver = argv[++i];
        else if (!strcmp(argv[i], "--kernels") && v &&
                 (!strcmp(v, "native") || !strcmp(v, "portable")))
            kernels = !strcmp(argv[++i], "native");
        else if (!strcmp(argv[i], "--place") && v)
            m.place_auto = !strcmp(argv[++i], "auto");
        else if (!strcmp(argv[i], "--no-capture"))
            capture = 0;
        else if (!strcmp(argv[i], "--no-lookahead"))
            m.no_lookahead = 1;
        else if (!strcmp(argv[i], "--lookahead")) /* the default */
            m.no_lookahead = 0;
        else if (!strcmp(argv[i], "--grid") && v &&
                 (!strcmp(v, "wide") || !strcmp(v, "tall")))
            m.wide = !strcmp(argv[++i], "wide");
        else if (!strcmp(argv[i], "--map") && v &&
                 (!strcmp(v, "snake") || !strcmp(v, "cyclic")))
            m.cyclic = !strcmp(argv[++i], "cyclic");
        else if (!strcmp(argv[i], "--layout") && v &&
                 (!strcmp(v, "rows") || !strcmp(v, "tiles")))
            m.tiled = !strcmp(argv[++i], "tiles");
        else if (!strcmp(argv[i], "--once"))
            once = 1;
        else if (!strcmp(argv[i], "--mem-limit") && v &&
                 parse_size(v, &m.mem_limit) == 0)
            i++;
        else
            usage();
    }
    if (b == 0 || n == 0 || n % b || n > 65536 || reps < 1 || check_rows == 0) {
        fprintf(stderr, "cholesky: --n must be a multiple of --tile (up to "
                        "65536), --reps and --check-rows at least 1\n");
        return 2;
    }
    rc = chol_open(&m, driver, kernels, why, sizeof why);
    if (rc == CHOL_SKIP) {
        /* as the other examples say it where CUDA or its libraries are not */
        if ((driver && !strcmp(driver, "cuda")) ||
            (m.driver && !strcmp(m.driver, "cuda")))
            printf("skipped: no CUDA device (%s)\n", why);
        else
            printf("cholesky: skipped: %s\n", why);
        chol_close(&m);
        return 77;
    }
    if (rc == 0)
        rc = chol_matrix(&m, n, b);
    if (rc == 0)
        rc =
            once ? chol_once(&m, capture, &r) : chol_run(&m, reps, capture, &r);
    if (rc < 0) {
        if (*weft_last_error()) /* (else the message is out already) */
            fprintf(stderr, "cholesky: %s: %s\n", weft_strerror(rc),
                    weft_last_error());
        chol_close(&m);
        return 1;
    }

    res = chol_residual(&m.tl, m.a, m.a0, n <= 4096 ? n : check_rows);
    flops = (double)n * (double)n * (double)n / 3.0;
    for (int x = LAUNCH_FIRST; x <= LAUNCH_ONCE; x++)
        least[x] = chol_min_links(&m, x);
    printf("n: %zu elements\ntile: %zu elements\n", n, b);
    printf("devices: %u (%s, %u x %u grid, %s%s%s)\n", m.ndev, m.driver, m.p,
           m.q, m.cyclic ? "block-cyclic" : "snake",
           m.place_auto ? ", placed by weft" : "",
           m.no_lookahead ? "" : ", lookahead priorities");
    printf("layout: %s\n", m.tiled ? "tiles (contiguous b x b tiles)"
                                   : "rows (one row-major matrix)");
    printf("kernels: %s\n", !m.native                   ? "portable"
                            : !strcmp(m.driver, "cuda") ? "cuSOLVER/cuBLAS"
                                                        : "OpenBLAS");
    if (m.mem_limit || getenv("WEFT_DEVICE_MEM_LIMIT"))
        printf("device memory limit: %s per device (matrix %s)\n",
               getenv("WEFT_DEVICE_MEM_LIMIT")
                   ? getenv("WEFT_DEVICE_MEM_LIMIT")
                   : human(why, sizeof why, m.mem_limit),
               human(h, sizeof h, (uint64_t)n * n * sizeof(double)));
    printf("nodes: %zu\n", r.nodes);
    if (once) {
        printf("weft_once: %.2f GFLOP/s (%.4f s: launch, wait and "
               "sync_host)\n",
               flops / r.first * 1e-9, r.first);
        print_bytes("once host->device", r.first_bytes.h2d,
                    least[LAUNCH_ONCE].h2d);
        print_bytes("once device->host", r.first_bytes.d2h,
                    least[LAUNCH_ONCE].d2h);
        print_bytes("once peer", r.first_bytes.peer, least[LAUNCH_ONCE].peer);
    } else {
        printf("weft_first_launch: %.2f GFLOP/s (%.4f s)\n",
               flops / r.first * 1e-9, r.first);
        printf("weft: %.2f GFLOP/s (%d launches, %.4f s each)\n",
               flops / r.steady * 1e-9, reps, r.steady);
        printf("replayed: %llu of %llu launches (%llu as native graphs, %u "
               "graphs)\n",
               (unsigned long long)r.st.native_replays,
               (unsigned long long)r.st.launches,
               (unsigned long long)r.st.native_launches, r.st.native_graphs);
        print_bytes("first host->device", r.first_bytes.h2d,
                    least[LAUNCH_FIRST].h2d);
        print_bytes("first device->host", r.first_bytes.d2h,
                    least[LAUNCH_FIRST].d2h);
        print_bytes("first peer", r.first_bytes.peer, least[LAUNCH_FIRST].peer);
        print_bytes("steady host->device", r.steady_bytes.h2d,
                    least[LAUNCH_STEADY].h2d);
        print_bytes("steady device->host", r.steady_bytes.d2h,
                    least[LAUNCH_STEADY].d2h);
        print_bytes("steady peer", r.steady_bytes.peer,
                    least[LAUNCH_STEADY].peer);
    }
    printf("evictions: %llu (%llu written back, %s)\n",
           (unsigned long long)r.evictions, (unsigned long long)r.writebacks,
           human(h, sizeof h, r.evict_bytes));
    printf("residual: %.3g (||A - L L^T||_F / ||A||_F over %s)\n", res,
           n <= 4096 ? "every row" : "sampled rows");
    rc = 0;
    if (!(res <= 1e-12) || r.bad) {
        fprintf(stderr, "cholesky: WRONG: residual %.3g above 1e-12\n", res);
        rc = 1;
    } else {
        printf("cholesky: ok\n");
    }
    chol_close(&m);
    return rc;
}
#endif
