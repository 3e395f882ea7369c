/*
 * mpi_cholesky: the tiled Cholesky factorisation of examples/cholesky.c
 * (A = L L^T, double, lower, row-major, b x b tiles as 2-D blocks of one
 * matrix) across MPI ranks with weft_mpi, one device per rank.
 *
 * Every rank holds the whole n x n matrix A and its pristine copy A0 in
 * page-locked host memory (weft_host_alloc, wrapped), registered as tiled
 * buffers (weft_mpi_buffer_register_tiles): tile (i, j) is owned by rank
 * (i mod P) * Q + j mod Q of a P x Q grid of ranks, P >= Q (2 x 1 for two
 * ranks: block rows alternate, as examples/cholesky's devices do). Each
 * rank fills A0's tiles it owns. Every rank adds the same graph (the
 * sequential task flow): A = A0 tile by tile, then for k = 0 .. n/b - 1
 * POTRF, TRSM, SYRK and GEMM on the tiles, each node running on the owner
 * of the tile it writes; weft_mpi sends a tile to the ranks that read it
 * (one packed message per tile, from the host copy weft brings it to,
 * which is pinned, so the device copies are direct). Each rank uses one
 * device of the driver: rank r takes device r mod (the driver's devices),
 * in a runtime of that device alone (where WEFT_DEVICES is not set; set,
 * the runtime has what it names and the rank uses the one it picks).
 *
 * Tile operations (chol_tiles.c, shared with examples/cholesky): cuSOLVER
 * and cuBLAS native nodes on CUDA, LAPACKE and CBLAS native nodes on the
 * host driver (where built with OpenBLAS), the portable kernels elsewhere.
 *
 * The graph is launched once (its time: weft_mpi_first_launch) and --reps
 * times more (weft_mpi: the mean), each between barriers; GFLOP/s count
 * n^3/3 flops. --once factors a matrix that starts on the host instead:
 * no restore from A0, one launch, then every rank's tiles back on its
 * host (weft_buffer_sync_host), timed together (weft_mpi_once).
 *
 * Check: rank 0 gathers L (a graph of host tasks on rank 0 that read
 * every lower tile) and prints ||A - L L^T||_F / ||A||_F as examples/
 * cholesky does (every row up to n = 4096, else --check-rows rows); above
 * 1e-12 it prints WRONG and every rank exits 1.
 *
 *   mpirun -np 2 mpi_cholesky [--driver cuda|host|opencl|sim] [--n N]
 *       [--tile B] [--reps R] [--once] [--check-rows S] [--no-capture]
 *       [--trace PREFIX]
 *
 * --trace PREFIX: each rank's trace in PREFIX.rankR.json and its transfers
 * in PREFIX.rankR.mpi.json, for tools/weft-mpi-trace.
 */
#include <weft_mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chol_tiles.h"

#ifdef WEFT_HAVE_OPENBLAS
#include <cblas.h>
#endif

static int me;

#define TRY(call)                                                              \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ < 0) {                                                         \
            fprintf(stderr, "rank %d: %s: %s (%s %s)\n", me, #call,            \
                    weft_strerror(rc_), weft_mpi_last_error(),                 \
                    weft_last_error());                                        \
            MPI_Abort(MPI_COMM_WORLD, 1);                                      \
        }                                                                      \
    } while (0)

typedef struct mchol {
    chol_tiles tl; /* tl.dev[0]: this rank's device */
    weft_runtime *rt;
    weft_mpi *mpi;
    int native, capture, cuda, p, q;
    double *a, *a0;
    weft_buffer *ab, *a0b;
    weft_matrix A, A0;
    weft_module *mod;
    weft_kernel *kernel[OP_COUNT];
} mchol;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static weft_access_desc tile(const mchol *m, const weft_matrix *x, size_t i,
                             size_t j, weft_access mode)
{
    return weft_access_block(
        x->buffer, weft_matrix_tile(*x, m->tl.b, m->tl.b, i, j), mode);
}

/* One tile operation on the owner of its last (written) tile. */
static void add_op(mchol *m, weft_mpi_graph *g, int op,
                   const weft_access_desc *acc, unsigned nacc)
{
    weft_graph *lg = weft_mpi_graph_local(g);
    uint32_t node;
    weft_node ln;

    if (m->native || (op == OP_COPY && !m->kernel[OP_COPY])) {
        const weft_native_impl impl = {m->tl.driver, 0,
                                       chol_native_fn(m->tl.driver, op)};

        TRY(weft_mpi_graph_add_native(g, &impl, 1, acc, nacc, &m->tl,
                                      WEFT_MPI_AUTO, &node));
    } else {
        weft_arg args[5];
        weft_dims d = weft_dims2((uint32_t)m->tl.b, (uint32_t)m->tl.b);
        unsigned n = 0;

        for (unsigned x = 0; x < nacc; x++) {
            const weft_block blk = {acc[x].offset,    acc[x].size,
                                    acc[x].rows,      acc[x].slices,
                                    acc[x].row_pitch, acc[x].slice_pitch};

            args[n++] = weft_arg_block(acc[x].buffer, blk, acc[x].mode);
        }
        args[n++] = weft_arg_u32((uint32_t)m->tl.ld);
        args[n++] = weft_arg_u32((uint32_t)m->tl.b);
        if (op == OP_POTRF) {
            weft_device_info info = {.size = sizeof info};
            uint32_t gs = (uint32_t)m->tl.b;

            if (weft_device_get_info(m->tl.dev[0], &info) == 0 &&
                info.max_group_size && info.max_group_size < gs)
                gs = info.max_group_size;
            d = weft_dims1(gs);
            d.group[0] = gs;
        } else if (op == OP_TRSM) {
            d = weft_dims1((uint32_t)m->tl.b);
        }
        TRY(weft_mpi_graph_add_kernel(g, m->kernel[op], d, args, n,
                                      WEFT_MPI_AUTO, &node));
    }
    if (weft_mpi_graph_local_node(g, node, &ln) == 0) {
        TRY(weft_graph_set_device(lg, ln, m->tl.dev[0]));
        if (m->native && m->capture)
            TRY(weft_graph_set_native_capture(lg, ln, 1));
    }
}

/* A = A0 on the lower tiles (where restore), then the factorisation. */
static weft_mpi_graph *factor_graph(mchol *m, int restore)
{
    size_t nt = m->tl.nt;
    weft_mpi_graph *g;

    TRY(weft_mpi_graph_create(m->mpi, &g));
    for (size_t i = 0; restore && i < nt; i++)
        for (size_t j = 0; j <= i; j++) {
            weft_access_desc c[2] = {tile(m, &m->A0, i, j, WEFT_READ),
                                     tile(m, &m->A, i, j, WEFT_WRITE)};

            add_op(m, g, OP_COPY, c, 2);
        }
    for (size_t k = 0; k < nt; k++) {
        weft_access_desc pk = tile(m, &m->A, k, k, WEFT_READ_WRITE);

        add_op(m, g, OP_POTRF, &pk, 1);
        for (size_t i = k + 1; i < nt; i++) {
            weft_access_desc t[2] = {tile(m, &m->A, k, k, WEFT_READ),
                                     tile(m, &m->A, i, k, WEFT_READ_WRITE)};

            add_op(m, g, OP_TRSM, t, 2);
        }
        for (size_t i = k + 1; i < nt; i++) {
            weft_access_desc s[2] = {tile(m, &m->A, i, k, WEFT_READ),
                                     tile(m, &m->A, i, i, WEFT_READ_WRITE)};

            add_op(m, g, OP_SYRK, s, 2);
            for (size_t j = k + 1; j < i; j++) {
                weft_access_desc u[3] = {tile(m, &m->A, i, k, WEFT_READ),
                                         tile(m, &m->A, j, k, WEFT_READ),
                                         tile(m, &m->A, i, j, WEFT_READ_WRITE)};

                add_op(m, g, OP_GEMM, u, 3);
            }
        }
    }
    return g;
}

static void nothing(void *const *ptrs, void *user)
{
    (void)ptrs;
    (void)user;
}

/* L's lower tiles onto rank 0's host copy of A (a graph that reads them). */
static void gather(mchol *m)
{
    weft_mpi_graph *g;
    weft_mpi_exec *e;

    TRY(weft_mpi_graph_create(m->mpi, &g));
    for (size_t i = 0; i < m->tl.nt; i++)
        for (size_t j = 0; j <= i; j++) {
            weft_access_desc acc = tile(m, &m->A, i, j, WEFT_READ);

            TRY(weft_mpi_graph_add_host(g, nothing, NULL, &acc, 1, 0, NULL));
        }
    TRY(weft_mpi_graph_instantiate(g, NULL, &e));
    TRY(weft_mpi_exec_launch(e));
    TRY(weft_mpi_exec_wait(e));
    TRY(weft_mpi_exec_destroy(e));
    TRY(weft_mpi_graph_destroy(g));
    TRY(weft_buffer_sync_host(m->ab));
}

/* The runtime on driver (tracing to trace, where not NULL), this rank's
 * device, the tile functions. */
static int open_rt(mchol *m, const char *driver, int nranks, const char *trace)
{
    static const char *const names[OP_COUNT] = {
        "potrf_tile", "trsm_tile", "syrk_tile", "gemm_tile", "copy_tile"};
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    const weft_device *devs[CHOL_MAX_DEVICES];
    unsigned ndev = 0, total = 0;
    char why[256], only[64];

    o.devices = driver; /* (WEFT_DEVICES, where set, overrides it) */
    o.trace_file = trace;
    for (int pass = 0; pass < 2; pass++) {
        if (weft_runtime_create(&m->rt, &o) < 0 ||
            weft_runtime_device_count(m->rt) == 0) {
            if (me == 0)
                printf("mpi_cholesky: skipped: %s\n", weft_last_error());
            return 77;
        }
        ndev = 0;
        for (unsigned i = 0; i < weft_runtime_device_count(m->rt); i++) {
            weft_device_info info = {.size = sizeof info};
            const weft_device *d = weft_runtime_device(m->rt, i);

            if (weft_device_get_info(d, &info) < 0)
                continue;
            if (!driver)
                driver = info.driver;
            if (!strcmp(info.driver, driver) && ndev < CHOL_MAX_DEVICES)
                devs[ndev++] = d;
        }
        if (ndev == 0) {
            if (me == 0)
                printf("mpi_cholesky: skipped: no %s device\n", driver);
            return 77;
        }
        /*
         * A runtime of this rank's device alone (no context, pinned
         * memory or stager of the others'), unless WEFT_DEVICES chose.
         */
        if (pass == 1 || ndev == 1 || getenv("WEFT_DEVICES"))
            break;
        snprintf(only, sizeof only, "%s:%d", driver, me % (int)ndev);
        total = ndev;
        o.devices = only;
        weft_runtime_destroy(m->rt);
        m->rt = NULL;
    }
    m->tl.driver = driver;
    m->tl.ndev = 1;
    m->tl.dev[0] = devs[total ? 0 : me % ndev];
    if (!total)
        total = ndev;
    pthread_mutex_init(&m->tl.gpu[0].lock, NULL);
    if (!strcmp(driver, "cuda")) {
        if (chol_cuda_load(why, sizeof why) < 0) {
            if (me == 0)
                printf("skipped: no CUDA device (%s)\n", why);
            return 77;
        }
        m->native = m->cuda = 1;
    } else if (!strcmp(driver, "host")) {
#ifdef WEFT_HAVE_OPENBLAS
        m->native = 1;
        openblas_set_num_threads(1);
#endif
    }
    if (me == 0)
        printf("ranks: %d (%d x %d grid), one %s device each (%u of them)\n",
               nranks, m->p, m->q, driver, total);
    if (m->native)
        return 0;
    TRY(weft_module_create_portable(m->rt, chol_tile_source, NULL, &m->mod));
    for (int op = 0; op < OP_COUNT; op++)
        TRY(weft_module_get_kernel(m->mod, names[op], &m->kernel[op]));
    return 0;
}

/* A and A0 on every rank, pinned; this rank's tiles of A0 (and of A, for
 * --once) filled. */
static void make_matrix(mchol *m, size_t n, size_t b, int fill_all)
{
    size_t bytes = n * n * sizeof(double);

    m->tl.n = n;
    m->tl.b = b;
    m->tl.nt = n / b;
    m->tl.ld = n;
    TRY(weft_host_alloc(m->rt, bytes, (void **)&m->a));
    TRY(weft_host_alloc(m->rt, bytes, (void **)&m->a0));
    for (size_t i = 0; i < m->tl.nt; i++)
        for (size_t j = 0; j <= i; j++) {
            if (!fill_all && weft_mpi_block_cyclic(i, j, m->p, m->q) != me)
                continue;
            for (size_t r = i * b; r < (i + 1) * b; r++)
                for (size_t c = j * b; c < (j + 1) * b; c++)
                    m->a[r * n + c] = m->a0[r * n + c] = chol_a_at(n, r, c);
        }
    TRY(weft_buffer_wrap(m->rt, m->a, bytes, &m->ab));
    TRY(weft_buffer_wrap(m->rt, m->a0, bytes, &m->a0b));
    m->A = weft_matrix_of(m->ab, 0, sizeof(double), n, n, n);
    m->A0 = weft_matrix_of(m->a0b, 0, sizeof(double), n, n, n);
    TRY(weft_mpi_buffer_register_tiles(m->mpi, m->A, b, b, m->p, m->q));
    TRY(weft_mpi_buffer_register_tiles(m->mpi, m->A0, b, b, m->p, m->q));
    if (m->cuda)
        TRY(chol_gpu_setup(&m->tl, m->rt));
}

static void usage(void)
{
    if (me == 0)
        fprintf(stderr, "usage: mpi_cholesky [--driver cuda|host|opencl|sim] "
                        "[--n N] [--tile B] [--reps R] [--once] "
                        "[--check-rows S] [--no-capture] [--trace PREFIX]\n");
    MPI_Finalize();
    exit(2);
}

int main(int argc, char **argv)
{
    size_t n = 1024, b = 128, check_rows = 32;
    int reps = 3, once = 0, provided, nranks, rc = 0, skip;
    const char *driver = NULL, *trace = NULL;
    char path[4096];
    double first = 0, steady = 0, t0, flops, res = 0;
    weft_mpi_graph *g;
    weft_mpi_exec *e;
    mchol m;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    memset(&m, 0, sizeof m);
    m.capture = 1;
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
        else if (!strcmp(argv[i], "--once"))
            once = 1;
        else if (!strcmp(argv[i], "--no-capture"))
            m.capture = 0;
        else if (!strcmp(argv[i], "--trace") && v)
            trace = argv[++i];
        else
            usage();
    }
    if (b == 0 || n == 0 || n % b || n > 65536 || reps < 1 || !check_rows) {
        if (me == 0)
            fprintf(stderr, "mpi_cholesky: --n must be a multiple of --tile "
                            "(up to 65536), --reps and --check-rows at "
                            "least 1\n");
        MPI_Finalize();
        return 2;
    }
    /* the P x Q grid of ranks: Q the largest divisor up to the root */
    for (m.q = 1; (m.q + 1) * (m.q + 1) <= nranks; m.q++)
        ;
    while (nranks % m.q)
        m.q--;
    m.p = nranks / m.q;
    if (trace) /* this rank's trace, and its transfers below */
        snprintf(path, sizeof path, "%s.rank%d.json", trace, me);
    skip = open_rt(&m, driver, nranks, trace ? path : NULL);
    MPI_Allreduce(MPI_IN_PLACE, &skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (skip) {
        MPI_Finalize();
        return skip;
    }
    TRY(weft_mpi_create(m.rt, MPI_COMM_WORLD, &m.mpi));
    make_matrix(&m, n, b, me == 0);
    g = factor_graph(&m, !once);
    TRY(weft_mpi_graph_instantiate(g, NULL, &e));
    if (trace) {
        snprintf(path, sizeof path, "%s.rank%d.mpi.json", trace, me);
        TRY(weft_mpi_exec_write_transfers(e, path));
    }
    if (me == 0)
        printf("n: %zu elements\ntile: %zu elements\nkernels: %s\n"
               "transfers per launch: %u\n",
               n, b,
               !m.native ? "portable"
               : m.cuda  ? "cuSOLVER/cuBLAS"
                         : "OpenBLAS",
               weft_mpi_graph_transfer_count(g));
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    TRY(weft_mpi_exec_launch(e));
    TRY(weft_mpi_exec_wait(e));
    if (once)
        TRY(weft_buffer_sync_host(m.ab));
    MPI_Barrier(MPI_COMM_WORLD);
    first = now() - t0;
    for (int x = 0; !once && x < reps; x++)
        TRY(weft_mpi_exec_launch(e));
    if (!once)
        TRY(weft_mpi_exec_wait(e));
    MPI_Barrier(MPI_COMM_WORLD);
    steady = (now() - t0 - first) / reps;
    {
        weft_exec_stats st = {.size = sizeof st};

        unsigned ends[2] = {weft_mpi_exec_ipc_transfers(e),
                            weft_mpi_exec_aware_transfers(e)},
                 all[2] = {0, 0};

        if (weft_exec_get_stats(weft_mpi_exec_local(e), &st) == 0 && me == 0)
            printf("rank 0 replayed: %llu of %llu launches (%llu as native "
                   "graphs)\n",
                   (unsigned long long)st.native_replays,
                   (unsigned long long)st.launches,
                   (unsigned long long)st.native_launches);
        /* each transfer has two ends: a send and a receive */
        MPI_Reduce(ends, all, 2, MPI_UNSIGNED, MPI_SUM, 0, MPI_COMM_WORLD);
        if (me == 0)
            printf("transfers by CUDA IPC: %u of %u a launch (from the "
                   "second)\ntransfers through CUDA-aware MPI: %u of %u a "
                   "launch (from the second)\n",
                   all[0] / 2, weft_mpi_graph_transfer_count(g), all[1] / 2,
                   weft_mpi_graph_transfer_count(g));
    }
    if (m.cuda && chol_gpu_info(&m.tl) != 0) {
        fprintf(stderr, "rank %d: cusolverDnDpotrf: devInfo %d\n", me,
                chol_gpu_info(&m.tl));
        rc = 1;
    }
    TRY(weft_mpi_exec_destroy(e));
    if (m.cuda)
        chol_gpu_forget_streams(&m.tl);
    TRY(weft_mpi_graph_destroy(g));
    gather(&m);
    flops = (double)n * (double)n * (double)n / 3.0;
    if (me == 0) {
        res = chol_residual(&m.tl, m.a, m.a0, n <= 4096 ? n : check_rows);
        if (once) {
            printf("weft_mpi_once: %.2f GFLOP/s (%.4f s: launch, wait and "
                   "sync_host)\n",
                   flops / first * 1e-9, first);
        } else {
            printf("weft_mpi_first_launch: %.2f GFLOP/s (%.4f s)\n",
                   flops / first * 1e-9, first);
            printf("weft_mpi: %.2f GFLOP/s (%d launches, %.4f s each)\n",
                   flops / steady * 1e-9, reps, steady);
        }
        printf("residual: %.3g (||A - L L^T||_F / ||A||_F over %s)\n", res,
               n <= 4096 ? "every row" : "sampled rows");
        if (!(res <= 1e-12)) {
            fprintf(stderr,
                    "mpi_cholesky: WRONG: residual %.3g above "
                    "1e-12\n",
                    res);
            rc = 1;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0 && rc == 0)
        printf("mpi_cholesky: ok\n");
    TRY(weft_mpi_buffer_unregister(m.mpi, m.ab));
    TRY(weft_mpi_buffer_unregister(m.mpi, m.a0b));
    TRY(weft_mpi_destroy(m.mpi));
    TRY(weft_buffer_destroy(m.ab));
    TRY(weft_buffer_destroy(m.a0b));
    TRY(weft_host_free(m.rt, m.a));
    TRY(weft_host_free(m.rt, m.a0));
    weft_module_destroy(m.mod);
    if (m.cuda)
        chol_gpu_teardown(&m.tl);
    TRY(weft_runtime_destroy(m.rt));
    MPI_Finalize();
    return rc;
}
