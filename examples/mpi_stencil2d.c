/*
 * mpi_stencil2d: a 2-D Jacobi iteration across MPI ranks with weft_mpi,
 * halos exchanged between the ranks that own neighbouring tiles.
 *
 * The grid of n x n floats is cut into tiles of t x t, and the tiles are
 * dealt to a p x q grid of ranks block-cyclically (weft_mpi_block_cyclic;
 * p x q is the most square factorisation of the number of ranks). Each
 * tile is two buffers (the state now and the next state, used in turn)
 * and four edge buffers (its first and last rows and columns), all owned
 * by the tile's rank. A step is, for every tile, a host task that copies
 * the tile's edges into its edge buffers (it runs on the owner: it writes
 * them), then, for every tile, a kernel that reads the tile and the
 * neighbours' edges and writes the next state (on the owner too: it
 * writes the tile). A neighbour's edge owned by another rank is what
 * crosses between ranks: weft_mpi adds its send and receive. Points
 * outside the grid are 0. The graph is two steps, so that every launch
 * leaves the state where it found it, and is launched several times.
 *
 *     mpirun -np 4 mpi_stencil2d [--n N] [--tile T] [--launches L]
 *                                [--weak A] [--trace PREFIX]
 *
 * --trace PREFIX: each rank writes its trace to PREFIX.rankR.json and its
 * transfers to PREFIX.rankR.mpi.json (weft_mpi_exec_write_transfers), which
 * tools/weft-mpi-trace merges into one Perfetto file.
 *
 * --weak A (weak scaling, bench/mpi_weak.sh): each rank gets A x A tiles,
 * one block of a (p A) x (q A) grid of tiles (not dealt cyclically), so
 * that the work per rank is the same at any number of ranks. Each launch
 * runs between barriers; the last is timed node by node, and rank 0
 * prints the mean wall time of the launches after the first and the span
 * of the last: the latest end of any rank's kernels from its launch's
 * start, in the device's clock (on sim devices, virtual time).
 *
 * Every rank computes the same steps on the whole grid on the CPU and
 * checks the tiles it owns; rank 0 prints the largest difference over
 * every rank, the ranks' grid and the transfers of one launch:
 *
 *     ranks: 2 x 2, tiles: 4 x 4, transfers per launch: 96
 *     launch: 812.4 us wall, 301.2 us span (the latest end of a rank's
 *     kernels)
 *     max_abs_error: 0
 */
#include <weft_mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char jacobi_source[] =
    "WEFT_KERNEL void jacobi(WEFT_GLOBAL float *dst,\n"
    "                        WEFT_GLOBAL const float *src,\n"
    "                        WEFT_GLOBAL const float *nh,\n"
    "                        WEFT_GLOBAL const float *sh,\n"
    "                        WEFT_GLOBAL const float *wh,\n"
    "                        WEFT_GLOBAL const float *eh, unsigned t,\n"
    "                        unsigned flags)\n"
    "{\n"
    "    long x = weft_global_id(0), y = weft_global_id(1), n = t;\n"
    "    if (x < n && y < n) {\n"
    "        float up = y > 0 ? src[(y - 1) * n + x]\n"
    "                         : ((flags & 1u) ? nh[x] : 0.0f);\n"
    "        float dn = y < n - 1 ? src[(y + 1) * n + x]\n"
    "                             : ((flags & 2u) ? sh[x] : 0.0f);\n"
    "        float lf = x > 0 ? src[y * n + x - 1]\n"
    "                         : ((flags & 4u) ? wh[y] : 0.0f);\n"
    "        float rt = x < n - 1 ? src[y * n + x + 1]\n"
    "                             : ((flags & 8u) ? eh[y] : 0.0f);\n"
    "        dst[y * n + x] = 0.2f * (src[y * n + x] + up + dn + lf + rt);\n"
    "    }\n"
    "}\n";

enum { N_EDGE, S_EDGE, W_EDGE, E_EDGE };

typedef struct tile {
    weft_buffer *state[2];
    weft_buffer *edge[4];
    int owner;
} tile;

static unsigned tsize; /* t: the pack task's user data is its tile */

/* Copy the tile's first and last rows and columns into its edges. */
static void pack(void *const *ptrs, void *user)
{
    const float *a = ptrs[0];
    float *nh = ptrs[1], *sh = ptrs[2], *wh = ptrs[3], *eh = ptrs[4];
    unsigned t = tsize;

    for (unsigned k = 0; k < t; k++) {
        nh[k] = a[k];
        sh[k] = a[(t - 1) * t + k];
        wh[k] = a[k * t];
        eh[k] = a[k * t + t - 1];
    }
}

/* One step on the whole grid (ny rows of nx), points outside it 0. */
static void jacobi_host(float *dst, const float *src, int ny, int nx)
{
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++) {
            float up = y > 0 ? src[(y - 1) * nx + x] : 0.0f;
            float dn = y < ny - 1 ? src[(y + 1) * nx + x] : 0.0f;
            float lf = x > 0 ? src[y * nx + x - 1] : 0.0f;
            float rt = x < nx - 1 ? src[y * nx + x + 1] : 0.0f;

            dst[y * nx + x] = 0.2f * (src[y * nx + x] + up + dn + lf + rt);
        }
}

static float initial(int y, int x, int ny)
{
    return (float)((x * 7 + y * 13) % 17) + (y == ny / 3 ? 50.0f : 0.0f);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/*
 * The span of this rank's last launch: the latest end of its kernels'
 * work from the launch's start, in the device's clock (the sim's virtual
 * one on sim devices). g's kernel nodes are the second half of each step.
 */
static uint64_t span_ns(weft_mpi_graph *g, weft_exec *e, int ntiles)
{
    uint64_t end = 0;

    for (int step = 0; step < 2; step++)
        for (int k = 0; k < ntiles; k++) {
            weft_node_timing t = {.size = sizeof t};
            uint32_t node = (uint32_t)((2 * step + 1) * ntiles + k);
            weft_node ln;

            if (weft_mpi_graph_local_node(g, node, &ln) == 0 &&
                weft_exec_node_timing(e, ln, &t) == 0 && t.timed &&
                t.end_ns > end)
                end = t.end_ns;
        }
    return end;
}

#define TRY(call)                                                              \
    do {                                                                       \
        if ((rc = (call)) < 0) {                                               \
            fprintf(stderr, "rank %d: %s: %s (%s %s)\n", me, #call,            \
                    weft_strerror(rc), weft_mpi_last_error(),                  \
                    weft_last_error());                                        \
            MPI_Abort(MPI_COMM_WORLD, 1);                                      \
        }                                                                      \
    } while (0)

int main(int argc, char **argv)
{
    int n = 64, t = 16, launches = 3, weak = 0, me, size, provided, rc, p, q;
    int ny, nx, nty, ntx;
    double wall = 0, t0;
    const char *trace = NULL;
    char path[4096];
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    uint64_t span = 0, max_span = 0;
    float *grid, *next, *host, err = 0.0f, all_err = 0.0f;
    weft_runtime *rt;
    weft_module *mod;
    weft_kernel *jacobi;
    weft_mpi *mpi;
    weft_mpi_graph *g;
    weft_mpi_exec *e;
    tile *tiles;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--n") == 0)
            n = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--tile") == 0)
            t = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--launches") == 0)
            launches = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--weak") == 0)
            weak = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--trace") == 0)
            trace = argv[i + 1];
    }
    if (t < 2 || (!weak && (n < t || n % t != 0)) || launches < 1 || weak < 0) {
        if (me == 0)
            fprintf(stderr, "usage: mpi_stencil2d [--n N] [--tile T, a "
                            "divisor of N, at least 2] [--launches L] "
                            "[--weak A] [--trace PREFIX]\n");
        MPI_Finalize();
        return 2;
    }
    tsize = (unsigned)t;
    for (p = 1; (p + 1) * (p + 1) <= size; p++)
        ;
    while (size % p)
        p--;
    q = size / p;
    /* --weak A: A x A tiles a rank, (p A) x (q A) in all */
    nty = weak ? p * weak : n / t;
    ntx = weak ? q * weak : n / t;
    ny = nty * t;
    nx = ntx * t;

    /* --trace PREFIX: this rank's trace and transfers, for weft-mpi-trace */
    if (trace) {
        snprintf(path, sizeof path, "%s.rank%d.json", trace, me);
        o.trace_file = path;
    }
    TRY(weft_runtime_create(&rt, &o));
    TRY(weft_mpi_create(rt, MPI_COMM_WORLD, &mpi));
    TRY(weft_module_create_portable(rt, jacobi_source, NULL, &mod));
    TRY(weft_module_get_kernel(mod, "jacobi", &jacobi));

    /* The tiles: every rank makes every buffer (the owners' bytes count). */
    grid = malloc((size_t)ny * nx * sizeof *grid);
    next = malloc((size_t)ny * nx * sizeof *next);
    host = malloc((size_t)t * t * sizeof *host);
    tiles = calloc((size_t)nty * ntx, sizeof *tiles);
    if (!grid || !next || !host || !tiles)
        TRY(WEFT_ENOMEM);
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++)
            grid[y * nx + x] = initial(y, x, ny);
    for (int i = 0; i < nty; i++)
        for (int j = 0; j < ntx; j++) {
            tile *tl = &tiles[i * ntx + j];

            /* --weak: each rank's A x A tiles in one block */
            tl->owner = weak
                            ? (i / weak) * q + j / weak
                            : weft_mpi_block_cyclic((size_t)i, (size_t)j, p, q);
            for (int s = 0; s < 2; s++) {
                TRY(weft_buffer_create(rt, (size_t)t * t * sizeof(float),
                                       &tl->state[s]));
                TRY(weft_mpi_buffer_register(mpi, tl->state[s], tl->owner));
            }
            for (int d = 0; d < 4; d++) {
                TRY(weft_buffer_create(rt, (size_t)t * sizeof(float),
                                       &tl->edge[d]));
                TRY(weft_mpi_buffer_register(mpi, tl->edge[d], tl->owner));
            }
            if (tl->owner == me) {
                for (int y = 0; y < t; y++)
                    for (int x = 0; x < t; x++)
                        host[y * t + x] = grid[(i * t + y) * nx + j * t + x];
                TRY(weft_buffer_write(tl->state[0], 0, host,
                                      (size_t)t * t * sizeof(float)));
            }
        }

    /* Two steps: state 0 -> 1, then 1 -> 0. */
    TRY(weft_mpi_graph_create(mpi, &g));
    for (int step = 0; step < 2; step++) {
        for (int k = 0; k < nty * ntx; k++) {
            tile *tl = &tiles[k];
            weft_access_desc acc[5] = {
                weft_access_range(tl->state[step], 0, WEFT_WHOLE, WEFT_READ),
                weft_access_range(tl->edge[N_EDGE], 0, WEFT_WHOLE, WEFT_WRITE),
                weft_access_range(tl->edge[S_EDGE], 0, WEFT_WHOLE, WEFT_WRITE),
                weft_access_range(tl->edge[W_EDGE], 0, WEFT_WHOLE, WEFT_WRITE),
                weft_access_range(tl->edge[E_EDGE], 0, WEFT_WHOLE, WEFT_WRITE),
            };

            TRY(weft_mpi_graph_add_host(g, pack, NULL, acc, 5, WEFT_MPI_AUTO,
                                        NULL));
        }
        for (int i = 0; i < nty; i++)
            for (int j = 0; j < ntx; j++) {
                tile *tl = &tiles[i * ntx + j];
                /* the neighbours' edges facing this tile; none: its own */
                weft_buffer *nh = i > 0 ? tiles[(i - 1) * ntx + j].edge[S_EDGE]
                                        : tl->edge[N_EDGE];
                weft_buffer *sh = i < nty - 1
                                      ? tiles[(i + 1) * ntx + j].edge[N_EDGE]
                                      : tl->edge[S_EDGE];
                weft_buffer *wh = j > 0 ? tiles[i * ntx + j - 1].edge[E_EDGE]
                                        : tl->edge[W_EDGE];
                weft_buffer *eh = j < ntx - 1
                                      ? tiles[i * ntx + j + 1].edge[W_EDGE]
                                      : tl->edge[E_EDGE];
                unsigned flags = (i > 0 ? 1u : 0u) | (i < nty - 1 ? 2u : 0u) |
                                 (j > 0 ? 4u : 0u) | (j < ntx - 1 ? 8u : 0u);
                weft_arg args[] = {
                    weft_arg_buffer(tl->state[1 - step], 0, WEFT_WHOLE,
                                    WEFT_WRITE),
                    weft_arg_buffer(tl->state[step], 0, WEFT_WHOLE, WEFT_READ),
                    weft_arg_buffer(nh, 0, WEFT_WHOLE, WEFT_READ),
                    weft_arg_buffer(sh, 0, WEFT_WHOLE, WEFT_READ),
                    weft_arg_buffer(wh, 0, WEFT_WHOLE, WEFT_READ),
                    weft_arg_buffer(eh, 0, WEFT_WHOLE, WEFT_READ),
                    weft_arg_u32((uint32_t)t),
                    weft_arg_u32(flags),
                };

                TRY(weft_mpi_graph_add_kernel(
                    g, jacobi, weft_dims2((uint32_t)t, (uint32_t)t), args, 8,
                    WEFT_MPI_AUTO, NULL));
            }
    }
    TRY(weft_mpi_graph_instantiate(g, NULL, &e));
    if (trace) {
        snprintf(path, sizeof path, "%s.rank%d.mpi.json", trace, me);
        TRY(weft_mpi_exec_write_transfers(e, path));
    }
    /* each launch between barriers; the last one timed node by node */
    for (int l = 0; l < launches; l++) {
        if (l == launches - 1)
            TRY(weft_exec_enable_timings(weft_mpi_exec_local(e), 1));
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        TRY(weft_mpi_exec_launch(e));
        TRY(weft_mpi_exec_wait(e));
        MPI_Barrier(MPI_COMM_WORLD);
        if (l > 0 || launches == 1)
            wall += now() - t0;
        for (int s = 0; s < 2; s++) {
            float *tmp;

            jacobi_host(next, grid, ny, nx);
            tmp = grid;
            grid = next;
            next = tmp;
        }
    }
    wall /= launches > 1 ? launches - 1 : 1;
    span = span_ns(g, weft_mpi_exec_local(e), nty * ntx);
    MPI_Allreduce(&span, &max_span, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);

    /* The owner of each tile holds its bytes after the launch. */
    for (int i = 0; i < nty; i++)
        for (int j = 0; j < ntx; j++) {
            tile *tl = &tiles[i * ntx + j];

            if (tl->owner != me)
                continue;
            TRY(weft_buffer_read(tl->state[0], 0, host,
                                 (size_t)t * t * sizeof(float)));
            for (int y = 0; y < t; y++)
                for (int x = 0; x < t; x++) {
                    float d = fabsf(host[y * t + x] -
                                    grid[(i * t + y) * nx + j * t + x]);

                    if (d > err)
                        err = d;
                }
        }
    MPI_Allreduce(&err, &all_err, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0) {
        printf("ranks: %d x %d, tiles: %d x %d, transfers per launch: %u\n", p,
               q, nty, ntx, weft_mpi_graph_transfer_count(g));
        printf("launch: %.1f us wall, %.1f us span (the latest end of a "
               "rank's kernels)\n",
               wall * 1e6, (double)max_span * 1e-3);
        printf("max_abs_error: %g\n", (double)all_err);
    }

    TRY(weft_mpi_exec_destroy(e));
    TRY(weft_mpi_graph_destroy(g));
    for (int k = 0; k < nty * ntx; k++) {
        for (int s = 0; s < 2; s++) {
            TRY(weft_mpi_buffer_unregister(mpi, tiles[k].state[s]));
            TRY(weft_buffer_destroy(tiles[k].state[s]));
        }
        for (int d = 0; d < 4; d++) {
            TRY(weft_mpi_buffer_unregister(mpi, tiles[k].edge[d]));
            TRY(weft_buffer_destroy(tiles[k].edge[d]));
        }
    }
    TRY(weft_mpi_destroy(mpi));
    TRY(weft_module_destroy(mod));
    TRY(weft_runtime_destroy(rt));
    free(grid);
    free(next);
    free(host);
    free(tiles);
    MPI_Finalize();
    return all_err <= 1e-4f ? 0 : 1;
}
