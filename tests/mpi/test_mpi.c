/*
 * weft_mpi across ranks (run under mpiexec, every rank the same program):
 *
 *   test_mpi random [--seeds N] [--seed S] [--nodes N]
 *       random graphs of host tasks, kernels, writes and reads over a few
 *       buffers with random owners, launched twice; each rank checks the
 *       buffers it owns and the reads it ran against the same nodes run
 *       one by one on plain arrays (every rank computes the reference)
 *   test_mpi blocks [--seeds N] [--seed S] [--nodes N]
 *       random graphs of host tasks, native nodes and block kernels on
 *       tiles, blocks and ranges of a tiled matrix and a plain one,
 *       against the same nodes run one by one (see "blocks" below)
 *   test_mpi owners    owners change between two graphs (set_owner)
 *   test_mpi fail      a status task fails on the last rank in the second
 *                      launch, then a node added to its local graph
 *                      directly: every rank's wait fails, nothing hangs,
 *                      and a new graph then runs
 *   test_mpi direct    transfers between host copies: a send's bytes
 *                      written on its rank right after it (a completion
 *                      task between), receives posted into the host copy
 *                      (early) and not, over three launches, then a
 *                      launch of another graph on the same buffer
 *   test_mpi ipc       (one CUDA device a rank, ranks of one machine) a tile
 *                      and a range read on another rank, four launches:
 *                      right every launch, and device to device by CUDA
 *                      IPC from the second (with WEFT_MPI_IPC=0, through
 *                      MPI where every rank's is CUDA-aware; neither
 *                      without one CUDA device a rank: the same graph
 *                      through host memory); test_mpi_dev.c
 *   test_mpi aware     the CUDA-aware flags weft_mpi_create exchanges
 *                      (WEFT_MPI_CUDA_AWARE set per rank, then auto),
 *                      then the ipc mode; test_mpi_dev.c
 *   test_mpi bad       bad input to every weft_mpi function
 *   test_mpi serialized  MPI initialised at MPI_THREAD_SERIALIZED:
 *                      weft_mpi_create refuses it
 *
 * Several modes, comma-separated ("owners,fail"), run in turn in one job.
 * A failed check prints the rank and the line and aborts every rank
 * (MPI_Abort); a passing rank prints "rank R: ok".
 */
#include "test_mpi.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int me, nranks;

/* ---- the random graphs --------------------------------------------------- */

enum { NB = 4, NE = 32, MAXACC = 3, MAXNODES = 64 };

static const char mix_source[] =
    "WEFT_KERNEL void mix(WEFT_GLOBAL unsigned *y,\n"
    "                     WEFT_GLOBAL const unsigned *x, unsigned a,\n"
    "                     unsigned n)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < (long)n) y[i] = y[i] * 3u + x[i] + a;\n"
    "}\n";

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

typedef enum { N_HOST, N_KERNEL, N_WRITE, N_READ } node_kind;

typedef struct rnode {
    node_kind kind;
    unsigned id, nacc;
    int rank; /* WEFT_MPI_AUTO or a rank */
    unsigned buf[MAXACC], lo[MAXACC], hi[MAXACC];
    weft_access mode[MAXACC];
    uint32_t a;             /* kernel scalar */
    uint32_t host[NE];      /* write: the source; read: the destination */
    uint32_t expect[2][NE]; /* read: the reference, per launch */
} rnode;

/* What a host task does, on the task's pointers or the reference's. */
static void host_step(const rnode *n, uint32_t *const *p)
{
    uint32_t h = n->id * 7u + 1u;

    for (unsigned i = 0; i < n->nacc; i++)
        if (n->mode[i] & WEFT_READ)
            for (unsigned k = 0; k < n->hi[i] - n->lo[i]; k++)
                h = h * 31u + p[i][k];
    for (unsigned i = 0; i < n->nacc; i++)
        if (n->mode[i] & WEFT_WRITE)
            for (unsigned k = 0; k < n->hi[i] - n->lo[i]; k++)
                p[i][k] = (n->mode[i] & WEFT_READ) ? p[i][k] + h + k
                                                   : h ^ (k * 2654435761u);
}

static void host_task(void *const *ptrs, void *user)
{
    host_step(user, (uint32_t *const *)ptrs);
}

static void gen(rnode *nodes, unsigned count)
{
    for (unsigned id = 0; id < count; id++) {
        rnode *n = &nodes[id];
        uint32_t k = rnd(10), first;

        memset(n, 0, sizeof *n);
        n->id = id;
        n->rank = rnd(5) == 0 ? (int)rnd((uint32_t)nranks) : WEFT_MPI_AUTO;
        if (k < 6) {
            /* accesses on distinct buffers */
            n->kind = N_HOST;
            n->nacc = 1 + rnd(MAXACC);
            first = rnd(NB);
            for (unsigned i = 0; i < n->nacc; i++) {
                unsigned lo = rnd(NE), len = 1 + rnd(NE - lo);

                n->buf[i] = (first + i) % NB;
                n->lo[i] = lo;
                n->hi[i] = lo + len;
                n->mode[i] = (weft_access)(1 + rnd(3));
            }
        } else if (k < 8) {
            n->kind = N_KERNEL;
            n->nacc = 2;
            n->buf[0] = rnd(NB);
            n->buf[1] = (n->buf[0] + 1 + rnd(NB - 1)) % NB;
            n->lo[0] = n->lo[1] = 0;
            n->hi[0] = n->hi[1] = NE;
            n->mode[0] = WEFT_READ_WRITE;
            n->mode[1] = WEFT_READ;
            n->a = rnd(1000);
        } else {
            unsigned lo = rnd(NE), len = 1 + rnd(NE - lo);

            n->kind = k == 8 ? N_WRITE : N_READ;
            n->nacc = 1;
            n->buf[0] = rnd(NB);
            n->lo[0] = lo;
            n->hi[0] = lo + len;
            n->mode[0] = k == 8 ? WEFT_WRITE : WEFT_READ;
            for (unsigned e = 0; e < NE; e++)
                n->host[e] = k == 8 ? id * 1000u + e : 0xdeadbeefu;
        }
    }
}

/* The nodes one by one on the host: the result by definition. */
static void reference(rnode *nodes, unsigned count, uint32_t ref[NB][NE],
                      int launch)
{
    for (unsigned id = 0; id < count; id++) {
        rnode *n = &nodes[id];
        uint32_t *p[MAXACC];

        for (unsigned i = 0; i < n->nacc; i++)
            p[i] = &ref[n->buf[i]][n->lo[i]];
        switch (n->kind) {
        case N_HOST:
            host_step(n, p);
            break;
        case N_KERNEL:
            for (unsigned e = 0; e < NE; e++)
                ref[n->buf[0]][e] =
                    ref[n->buf[0]][e] * 3u + ref[n->buf[1]][e] + n->a;
            break;
        case N_WRITE:
            memcpy(p[0], n->host, (n->hi[0] - n->lo[0]) * 4);
            break;
        case N_READ:
            memcpy(n->expect[launch], p[0], (n->hi[0] - n->lo[0]) * 4);
            break;
        }
    }
}

/* One random graph; returns its number of transfers. */
static unsigned random_graph(weft_runtime *rt, weft_mpi *mpi, weft_kernel *mix,
                             uint64_t seed, unsigned count)
{
    unsigned transfers;
    static rnode nodes[MAXNODES];
    uint32_t ref[NB][NE];
    weft_buffer *b[NB];
    weft_mpi_graph *g;
    weft_mpi_exec *e;
    int owner[NB];

    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int i = 0; i < NB; i++) {
        uint32_t init[NE];

        owner[i] = (int)rnd((uint32_t)nranks);
        for (unsigned k = 0; k < NE; k++) {
            ref[i][k] = (uint32_t)(i * 100 + k);
            /* only the owner's bytes count: the others hold garbage */
            init[k] = me == owner[i] ? ref[i][k] : 0xbad0000u + k;
        }
        OK(weft_buffer_create(rt, NE * 4, &b[i]));
        OK(weft_buffer_write(b[i], 0, init, NE * 4));
        OK(weft_mpi_buffer_register(mpi, b[i], owner[i]));
    }
    gen(nodes, count);
    OK(weft_mpi_graph_create(mpi, &g));
    for (unsigned id = 0; id < count; id++) {
        rnode *n = &nodes[id];
        uint32_t node = UINT32_MAX;

        if (n->kind == N_HOST) {
            weft_access_desc acc[MAXACC];

            for (unsigned i = 0; i < n->nacc; i++)
                acc[i] =
                    weft_access_range(b[n->buf[i]], n->lo[i] * 4,
                                      (n->hi[i] - n->lo[i]) * 4, n->mode[i]);
            OK(weft_mpi_graph_add_host(g, host_task, n, acc, n->nacc, n->rank,
                                       &node));
        } else if (n->kind == N_KERNEL) {
            weft_arg args[] = {
                weft_arg_buffer(b[n->buf[0]], 0, WEFT_WHOLE, WEFT_READ_WRITE),
                weft_arg_buffer(b[n->buf[1]], 0, WEFT_WHOLE, WEFT_READ),
                weft_arg_u32(n->a),
                weft_arg_u32(NE),
            };
            OK(weft_mpi_graph_add_kernel(g, mix, weft_dims1(NE), args, 4,
                                         n->rank, &node));
        } else if (n->kind == N_WRITE) {
            OK(weft_mpi_graph_add_write(g, b[n->buf[0]], n->lo[0] * 4, n->host,
                                        (n->hi[0] - n->lo[0]) * 4, n->rank,
                                        &node));
        } else {
            OK(weft_mpi_graph_add_read(g, b[n->buf[0]], n->lo[0] * 4, n->host,
                                       (n->hi[0] - n->lo[0]) * 4, n->rank,
                                       &node));
        }
        CHECK(node == id);
        /* the node's rank: named, else the first written (or read) owner */
        int want = n->rank;

        if (want == WEFT_MPI_AUTO) {
            want = -1;
            for (unsigned i = 0; i < n->nacc && want < 0; i++)
                if (n->mode[i] & WEFT_WRITE)
                    want = owner[n->buf[i]];
            if (want < 0)
                want = n->nacc ? owner[n->buf[0]] : 0;
        }
        CHECK(weft_mpi_graph_node_rank(g, id) == want);
    }
    OK(weft_mpi_graph_instantiate(g, NULL, &e));
    transfers = weft_mpi_graph_transfer_count(g);
    for (int launch = 0; launch < 2; launch++) {
        OK(weft_mpi_exec_launch(e));
        reference(nodes, count, ref, launch);
        OK(weft_mpi_exec_wait(e));
        for (unsigned id = 0; id < count; id++)
            if (nodes[id].kind == N_READ &&
                weft_mpi_graph_node_rank(g, id) == me)
                CHECK(memcmp(nodes[id].host, nodes[id].expect[launch],
                             (nodes[id].hi[0] - nodes[id].lo[0]) * 4) == 0);
        for (int i = 0; i < NB; i++) {
            uint32_t got[NE];

            if (owner[i] != me)
                continue;
            OK(weft_buffer_read(b[i], 0, got, NE * 4));
            if (memcmp(got, ref[i], sizeof got) != 0) {
                fprintf(stderr,
                        "rank %d: seed %llu launch %d: buffer %d differs\n", me,
                        (unsigned long long)seed, launch, i);
                CHECK(0);
            }
        }
    }
    OK(weft_mpi_exec_destroy(e));
    OK(weft_mpi_graph_destroy(g));
    for (int i = 0; i < NB; i++) {
        OK(weft_mpi_buffer_unregister(mpi, b[i]));
        OK(weft_buffer_destroy(b[i]));
    }
    return transfers;
}

/* ---- blocks ----------------------------------------------------------------
 *
 * Random graphs over a tiled matrix (MR x MC elements of 4 bytes, ld MLD,
 * tiles of MT x MT dealt block-cyclically) and a plain buffer seen as a
 * matrix of the same shape: host tasks, native nodes and block kernels on
 * tiles, on blocks of any shape and place (which cut across the tiles)
 * and on ranges; each rank checks the tiles and buffer it owns against
 * the nodes run one by one on arrays.
 */

enum { MR = 12, MC = 12, MLD = 13, MT = 4, BMAX = 3, BNODES = 40 };

static const char bmix_source[] =
    "WEFT_KERNEL void bmix(WEFT_GLOBAL unsigned *y,\n"
    "                      WEFT_GLOBAL const unsigned *x, unsigned a,\n"
    "                      unsigned rows, unsigned cols, unsigned ld)\n"
    "{\n"
    "    long c = weft_global_id(0), r = weft_global_id(1);\n"
    "    if (c < (long)cols && r < (long)rows)\n"
    "        y[r * ld + c] = y[r * ld + c] * 3u + x[r * ld + c] + a;\n"
    "}\n";

typedef struct bacc {
    unsigned buf, r0, c0, rows, cols; /* elements of the matrix */
    int range;                        /* rows of whole lines, as a range */
    weft_access mode;
} bacc;

typedef struct bnode {
    int kind; /* 0 host task, 1 native node, 2 kernel */
    unsigned id, nacc;
    int rank;
    uint32_t a;
    bacc acc[BMAX];
} bnode;

/* A host task or native node's step, on pointers to each block's start. */
static void bstep(const bnode *n, uint32_t *const *p)
{
    uint32_t h = n->id * 7u + 1u;

    for (unsigned i = 0; i < n->nacc; i++)
        if (n->acc[i].mode & WEFT_READ)
            for (unsigned r = 0; r < n->acc[i].rows; r++)
                for (unsigned c = 0; c < n->acc[i].cols; c++)
                    h = h * 31u + p[i][r * MLD + c];
    for (unsigned i = 0; i < n->nacc; i++)
        if (n->acc[i].mode & WEFT_WRITE)
            for (unsigned r = 0; r < n->acc[i].rows; r++)
                for (unsigned c = 0; c < n->acc[i].cols; c++) {
                    uint32_t *x = &p[i][r * MLD + c];

                    *x = (n->acc[i].mode & WEFT_READ)
                             ? *x + h + r * MC + c
                             : h ^ ((r * MC + c) * 2654435761u);
                }
}

static void bhost(void *const *ptrs, void *user)
{
    bstep(user, (uint32_t *const *)ptrs);
}

static int bnative(const weft_native_ctx *ctx, void *user)
{
    const bnode *n = user;
    uint32_t *p[BMAX];

    for (unsigned i = 0; i < n->nacc; i++)
        if (!(p[i] = weft_native_ptr(ctx, i)))
            return 1;
    bstep(n, p);
    return 0;
}

/*
 * native: whether native nodes are made (they compute on the host driver;
 * the sim's would have to enqueue their work on its queue).
 */
static void bgen(bnode *nodes, unsigned count, int native)
{
    for (unsigned id = 0; id < count; id++) {
        bnode *n = &nodes[id];
        uint32_t k = rnd(10);

        memset(n, 0, sizeof *n);
        n->id = id;
        n->rank = rnd(6) == 0 ? (int)rnd((uint32_t)nranks) : WEFT_MPI_AUTO;
        n->kind = k < 5 ? 0 : k < 7 ? (native ? 1 : 0) : 2;
        n->nacc = n->kind == 2 ? 2 : 1 + rnd(BMAX);
        n->a = rnd(1000);
        for (unsigned i = 0; i < n->nacc; i++) {
            bacc *a = &n->acc[i];
            uint32_t shape = rnd(8);

            /* distinct matrices in one node: 0 the tiled one, 1 the plain */
            a->buf = n->nacc == 2 ? i : rnd(2);
            if (n->nacc == 3)
                a->buf = i == 0 ? 0 : 1;
            if (shape < 5 || n->kind == 2) { /* a tile */
                a->r0 = rnd(MR / MT) * MT;
                a->c0 = rnd(MC / MT) * MT;
                a->rows = a->cols = MT;
            } else if (shape < 7) { /* a block anywhere */
                a->r0 = rnd(MR);
                a->c0 = rnd(MC);
                a->rows = 1 + rnd(MR - a->r0);
                a->cols = 1 + rnd(MC - a->c0);
            } else { /* whole lines with their padding, as a range */
                a->r0 = rnd(MR);
                a->c0 = 0;
                a->rows = 1 + rnd(MR - a->r0);
                a->cols = MLD;
                a->range = 1;
            }
            a->mode = (weft_access)(1 + rnd(3));
        }
        if (n->kind == 2) {
            /* y (READ_WRITE) and x (READ): same shape, other matrices */
            n->acc[0].mode = WEFT_READ_WRITE;
            n->acc[1].mode = WEFT_READ;
        }
        /* two accesses of one matrix in a node must not overlap */
        if (n->nacc == 3 && n->acc[1].buf == n->acc[2].buf)
            n->nacc = 2;
    }
}

static void breference(const bnode *nodes, unsigned count,
                       uint32_t ref[2][MR * MLD])
{
    for (unsigned id = 0; id < count; id++) {
        const bnode *n = &nodes[id];
        uint32_t *p[BMAX];

        for (unsigned i = 0; i < n->nacc; i++)
            p[i] = &ref[n->acc[i].buf][n->acc[i].r0 * MLD + n->acc[i].c0];
        if (n->kind != 2) {
            bstep(n, p);
            continue;
        }
        for (unsigned r = 0; r < MT; r++)
            for (unsigned c = 0; c < MT; c++)
                p[0][r * MLD + c] =
                    p[0][r * MLD + c] * 3u + p[1][r * MLD + c] + n->a;
    }
}

static weft_access_desc bdesc(weft_buffer *b, const bacc *a)
{
    size_t off = ((size_t)a->r0 * MLD + a->c0) * 4;

    if (a->range)
        return weft_access_range(b, off, (size_t)a->rows * MLD * 4, a->mode);
    return weft_access_block(b, weft_block2(off, a->cols * 4, a->rows, MLD * 4),
                             a->mode);
}

/*
 * A tile read on another rank is one message, and so is its way back
 * after a write there: the block moves, packed, not its rows' span.
 */
static void tile_inc(void *const *ptrs, void *user)
{
    uint32_t *a = ptrs[0];

    for (unsigned r = 0; r < MT; r++)
        for (unsigned c = 0; c < MT; c++)
            a[r * MLD + c] += 1;
}

static void tile_touch(void *const *ptrs, void *user)
{
    uint32_t *a = ptrs[0];

    for (unsigned r = 0; r < MT; r++)
        for (unsigned c = 0; c < MT; c++)
            a[r * MLD + c] = 7;
}

static void tile_read(void *const *ptrs, void *user)
{
    const uint32_t *a = ptrs[0];
    uint32_t sum = 0;

    for (unsigned r = 0; r < MT; r++)
        for (unsigned c = 0; c < MT; c++)
            sum += a[r * MLD + c];
    *(uint32_t *)user = sum;
}

static void tile_messages(weft_runtime *rt, weft_mpi *mpi)
{
    weft_buffer *b;
    weft_mpi_graph *g;
    weft_mpi_exec *e;
    weft_matrix m;
    weft_access_desc acc;
    uint32_t init[MR * MLD], got[MR * MLD], sum = 0, want = 0;
    int last = nranks - 1;

    OK(weft_buffer_create(rt, sizeof init, &b));
    for (unsigned k = 0; k < MR * MLD; k++)
        init[k] = k;
    OK(weft_buffer_write(b, 0, init, sizeof init));
    m = weft_matrix_of(b, 0, 4, MR, MC, MLD);
    /* one row of ranks: tile (i, j) on rank j mod nranks */
    OK(weft_mpi_buffer_register_tiles(mpi, m, MT, MT, 1, nranks));
    OK(weft_mpi_graph_create(mpi, &g));
    acc = weft_access_block(b, weft_matrix_tile(m, MT, MT, 0, 0), WEFT_READ);
    OK(weft_mpi_graph_add_host(g, tile_read, &sum, &acc, 1, last, NULL));
    CHECK(weft_mpi_graph_transfer_count(g) == (nranks > 1 ? 1u : 0u));
    acc.mode = WEFT_READ_WRITE;
    OK(weft_mpi_graph_add_host(g, tile_inc, NULL, &acc, 1, last, NULL));
    CHECK(weft_mpi_graph_transfer_count(g) == (nranks > 1 ? 1u : 0u));
    acc = weft_access_block(b, weft_matrix_tile(m, MT, MT, 0, 1), WEFT_WRITE);
    OK(weft_mpi_graph_add_host(g, tile_touch, NULL, &acc, 1, WEFT_MPI_AUTO,
                               NULL));
    CHECK(weft_mpi_graph_node_rank(g, 2) == 1 % nranks);
    /* tile (0, 0) goes back to rank 0, as one message */
    OK(weft_mpi_graph_instantiate(g, NULL, &e));
    CHECK(weft_mpi_graph_transfer_count(g) == (nranks > 1 ? 2u : 0u));
    OK(weft_mpi_exec_launch(e));
    OK(weft_mpi_exec_wait(e));
    for (unsigned r = 0; r < MT; r++)
        for (unsigned c = 0; c < MT; c++)
            want += r * MLD + c;
    if (me == last)
        CHECK(sum == want);
    OK(weft_buffer_read(b, 0, got, sizeof got));
    for (unsigned k = 0; k < MR * MLD; k++) {
        unsigned r = k / MLD, c = k % MLD;

        if (me == 0 && r < MT && c < MT)
            CHECK(got[k] == k + 1);
        if (me == 1 % nranks && r < MT && c >= MT && c < 2 * MT)
            CHECK(got[k] == 7);
    }
    OK(weft_mpi_exec_destroy(e));
    OK(weft_mpi_graph_destroy(g));
    OK(weft_mpi_buffer_unregister(mpi, b));
    OK(weft_buffer_destroy(b));
}

static unsigned block_graph(weft_runtime *rt, weft_mpi *mpi, weft_kernel *bmix,
                            uint64_t seed, unsigned count)
{
    static bnode nodes[BNODES];
    static uint32_t ref[2][MR * MLD];
    weft_native_impl impls[] = {{"host", 0, bnative}};
    weft_buffer *b[2];
    weft_mpi_graph *g;
    weft_mpi_exec *e;
    int p = nranks >= 4 ? 2 : 1, q = nranks >= 4 ? nranks / 2 : nranks;
    int plain_owner, owner_at[MR][MC];
    unsigned transfers;

    rng_state = seed * 0x9e3779b97f4a7c15ull + 7;
    plain_owner = (int)rnd((uint32_t)nranks);
    for (unsigned r = 0; r < MR; r++)
        for (unsigned c = 0; c < MC; c++)
            owner_at[r][c] = weft_mpi_block_cyclic(r / MT, c / MT, p, q);
    for (int i = 0; i < 2; i++) {
        uint32_t init[MR * MLD];

        for (unsigned k = 0; k < MR * MLD; k++) {
            unsigned r = k / MLD, c = k % MLD;
            int own = i ? plain_owner : c < MC ? owner_at[r][c] : 0;

            ref[i][k] = (uint32_t)(i * 1000 + k);
            init[k] = me == own ? ref[i][k] : 0xbad0000u + k;
        }
        OK(weft_buffer_create(rt, sizeof init, &b[i]));
        OK(weft_buffer_write(b[i], 0, init, sizeof init));
    }
    OK(weft_mpi_buffer_register_tiles(
        mpi, weft_matrix_of(b[0], 0, 4, MR, MC, MLD), MT, MT, p, q));
    OK(weft_mpi_buffer_register(mpi, b[1], plain_owner));
    {
        weft_device_info info = {.size = sizeof info};

        OK(weft_device_get_info(weft_runtime_device(rt, 0), &info));
        bgen(nodes, count, strcmp(info.driver, "host") == 0);
    }
    OK(weft_mpi_graph_create(mpi, &g));
    for (unsigned id = 0; id < count; id++) {
        bnode *n = &nodes[id];
        weft_access_desc acc[BMAX];
        uint32_t node = UINT32_MAX;

        for (unsigned i = 0; i < n->nacc; i++)
            acc[i] = bdesc(b[n->acc[i].buf], &n->acc[i]);
        if (n->kind == 0) {
            OK(weft_mpi_graph_add_host(g, bhost, n, acc, n->nacc, n->rank,
                                       &node));
        } else if (n->kind == 1) {
            OK(weft_mpi_graph_add_native(g, impls, 1, acc, n->nacc, n, n->rank,
                                         &node));
        } else {
            weft_block y = weft_block2(acc[0].offset, MT * 4, MT, MLD * 4);
            weft_block x = weft_block2(acc[1].offset, MT * 4, MT, MLD * 4);
            weft_arg args[] = {
                weft_arg_block(b[n->acc[0].buf], y, WEFT_READ_WRITE),
                weft_arg_block(b[n->acc[1].buf], x, WEFT_READ),
                weft_arg_u32(n->a),
                weft_arg_u32(MT),
                weft_arg_u32(MT),
                weft_arg_u32(MLD),
            };
            OK(weft_mpi_graph_add_kernel(g, bmix, weft_dims2(MT, MT), args, 6,
                                         n->rank, &node));
        }
        CHECK(node == id);
        if (n->rank == WEFT_MPI_AUTO) {
            /* the owner of the first written (else read) block's start */
            unsigned w = 0;
            int want;

            while (w < n->nacc && !(n->acc[w].mode & WEFT_WRITE))
                w++;
            if (w == n->nacc)
                w = 0;
            want = n->acc[w].buf ? plain_owner
                                 : owner_at[n->acc[w].r0][n->acc[w].c0];
            CHECK(weft_mpi_graph_node_rank(g, id) == want);
        }
    }
    OK(weft_mpi_graph_instantiate(g, NULL, &e));
    transfers = weft_mpi_graph_transfer_count(g);
    for (int launch = 0; launch < 2; launch++) {
        uint32_t got[MR * MLD];

        OK(weft_mpi_exec_launch(e));
        breference(nodes, count, ref);
        OK(weft_mpi_exec_wait(e));
        for (int i = 0; i < 2; i++) {
            OK(weft_buffer_read(b[i], 0, got, sizeof got));
            for (unsigned k = 0; k < MR * MLD; k++) {
                unsigned r = k / MLD, c = k % MLD;
                int own = i ? plain_owner : c < MC ? owner_at[r][c] : 0;

                if (own == me && got[k] != ref[i][k]) {
                    fprintf(stderr,
                            "rank %d: seed %llu launch %d: matrix %d (%u, "
                            "%u) is %u, not %u\n",
                            me, (unsigned long long)seed, launch, i, r, c,
                            got[k], ref[i][k]);
                    CHECK(0);
                }
            }
        }
    }
    OK(weft_mpi_exec_destroy(e));
    OK(weft_mpi_graph_destroy(g));
    for (int i = 0; i < 2; i++) {
        OK(weft_mpi_buffer_unregister(mpi, b[i]));
        OK(weft_buffer_destroy(b[i]));
    }
    return transfers;
}

/* ---- owners that change -------------------------------------------------- */

static void add_one(void *const *ptrs, void *user)
{
    uint32_t *a = ptrs[0];

    for (unsigned k = 0; k < 16; k++)
        a[k] += 1;
}

static void double_into(void *const *ptrs, void *user)
{
    const uint32_t *a = ptrs[0];
    uint32_t *b = ptrs[1];

    for (unsigned k = 0; k < 16; k++)
        b[k] = a[k] * 2 + b[k];
}

/* A += 1 on A's owner; B = 2 A + B on B's owner; launched twice. */
static void owners_graph(weft_mpi *mpi, weft_buffer *a, weft_buffer *b,
                         uint32_t ra[16], uint32_t rb[16])
{
    weft_mpi_graph *g;
    weft_mpi_exec *e;
    weft_access_desc acc[2] = {
        weft_access_range(a, 0, WEFT_WHOLE, WEFT_READ),
        weft_access_range(b, 0, WEFT_WHOLE, WEFT_READ_WRITE)};
    weft_access_desc inc = weft_access_range(a, 0, WEFT_WHOLE, WEFT_READ_WRITE);

    OK(weft_mpi_graph_create(mpi, &g));
    OK(weft_mpi_graph_add_host(g, add_one, NULL, &inc, 1, WEFT_MPI_AUTO, NULL));
    OK(weft_mpi_graph_add_host(g, double_into, NULL, acc, 2, WEFT_MPI_AUTO,
                               NULL));
    CHECK(weft_mpi_graph_node_rank(g, 0) == weft_mpi_buffer_owner(mpi, a));
    CHECK(weft_mpi_graph_node_rank(g, 1) == weft_mpi_buffer_owner(mpi, b));
    OK(weft_mpi_graph_instantiate(g, NULL, &e));
    CHECK(weft_mpi_buffer_set_owner(mpi, a, 0) == WEFT_EBUSY);
    for (int l = 0; l < 2; l++) {
        OK(weft_mpi_exec_launch(e));
        for (unsigned k = 0; k < 16; k++) {
            ra[k] += 1;
            rb[k] = ra[k] * 2 + rb[k];
        }
    }
    OK(weft_mpi_exec_wait(e));
    OK(weft_mpi_exec_destroy(e));
    OK(weft_mpi_graph_destroy(g));
}

static void check_owned(weft_mpi *mpi, weft_buffer *buf, const uint32_t *ref)
{
    uint32_t got[16];

    if (weft_mpi_buffer_owner(mpi, buf) != me)
        return;
    OK(weft_buffer_read(buf, 0, got, sizeof got));
    CHECK(memcmp(got, ref, sizeof got) == 0);
}

static void owners_test(weft_runtime *rt, weft_mpi *mpi)
{
    uint32_t ra[16], rb[16];
    weft_buffer *a, *b;

    for (unsigned k = 0; k < 16; k++) {
        ra[k] = k;
        rb[k] = 100 + k;
    }
    OK(weft_buffer_create(rt, sizeof ra, &a));
    OK(weft_buffer_create(rt, sizeof rb, &b));
    OK(weft_buffer_write(a, 0, ra, sizeof ra));
    OK(weft_buffer_write(b, 0, rb, sizeof rb));
    OK(weft_mpi_buffer_register(mpi, a, 0));
    OK(weft_mpi_buffer_register(mpi, b, nranks - 1));
    owners_graph(mpi, a, b, ra, rb);
    check_owned(mpi, a, ra);
    check_owned(mpi, b, rb);
    /* the bytes move with the owners; a new graph follows them */
    OK(weft_mpi_buffer_set_owner(mpi, a, nranks - 1));
    OK(weft_mpi_buffer_set_owner(mpi, b, nranks > 2 ? 1 : 0));
    CHECK(weft_mpi_buffer_owner(mpi, a) == nranks - 1);
    check_owned(mpi, a, ra);
    check_owned(mpi, b, rb);
    owners_graph(mpi, a, b, ra, rb);
    check_owned(mpi, a, ra);
    check_owned(mpi, b, rb);
    /* and once more: both on one rank, no transfer at all */
    OK(weft_mpi_buffer_set_owner(mpi, a, 0));
    OK(weft_mpi_buffer_set_owner(mpi, b, 0));
    owners_graph(mpi, a, b, ra, rb);
    check_owned(mpi, a, ra);
    check_owned(mpi, b, rb);
    OK(weft_mpi_buffer_unregister(mpi, a));
    OK(weft_mpi_buffer_unregister(mpi, b));
    OK(weft_buffer_destroy(a));
    OK(weft_buffer_destroy(b));
}

/* ---- transfers between host copies --------------------------------------- */

void d_add(void *const *ptrs, void *user)
{
    uint32_t *x = ptrs[0], add = *(const uint32_t *)user;

    for (unsigned k = 0; k < DN; k++)
        x[k] += add;
}

/* X as sent after launch l's first add: k + base + 1001 (l - 1) + 1 */
static void d_check(void *const *ptrs, void *user)
{
    const uint32_t *x = ptrs[0];
    dcheck *c = user;

    c->launch++;
    for (unsigned k = 0; k < DN; k++)
        if (x[k] != k + c->base + 1001u * (c->launch - 1) + 1)
            c->bad++;
}

/* X is k + base */
static void d_check_base(void *const *ptrs, void *user)
{
    const uint32_t *x = ptrs[0];
    dcheck *c = user;

    c->launch++;
    for (unsigned k = 0; k < DN; k++)
        if (x[k] != k + c->base)
            c->bad++;
}

/* The number of "early":true in this rank's transfers file. */
static unsigned early_receives(weft_mpi_exec *e)
{
    char path[256], text[4096];
    const char *tmp = getenv("TMPDIR"), *p = text;
    unsigned n = 0;
    size_t len;
    FILE *f;

    snprintf(path, sizeof path, "%s/weft_test_mpi_%d_%d.json",
             tmp ? tmp : "/tmp", (int)getpid(), me);
    OK(weft_mpi_exec_write_transfers(e, path));
    f = fopen(path, "r");
    CHECK(f != NULL);
    len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    remove(path);
    text[len] = 0;
    while ((p = strstr(p, "\"early\":true")) != NULL) {
        n++;
        p++;
    }
    return n;
}

/*
 * X (rank 0's): X += 1 on rank 0, read on the last rank, X += 1000 on rank
 * 0 while the send may still be reading it; Y (rank 0's): Y += 1 on the
 * last rank, back to rank 0. Three launches.
 */
static void direct_test(weft_runtime *rt, weft_mpi *mpi)
{
    static uint32_t x0[DN], got[DN];
    const uint32_t one = 1, many = 1000;
    int last = nranks - 1;
    weft_buffer *x, *y;
    weft_mpi_graph *g, *g2;
    weft_mpi_exec *e, *e2;
    weft_access_desc acc;
    dcheck c = {0, 0, 0}, c2 = {0, 0, 0};

    for (unsigned k = 0; k < DN; k++)
        x0[k] = k;
    OK(weft_buffer_create(rt, sizeof x0, &x));
    OK(weft_buffer_create(rt, 64 * sizeof(uint32_t), &y));
    OK(weft_buffer_write(x, 0, x0, sizeof x0));
    OK(weft_buffer_write(y, 0, x0, 64 * sizeof(uint32_t)));
    OK(weft_mpi_buffer_register(mpi, x, 0));
    OK(weft_mpi_buffer_register(mpi, y, 0));
    OK(weft_mpi_graph_create(mpi, &g));
    acc = weft_access_range(x, 0, WEFT_WHOLE, WEFT_READ_WRITE);
    OK(weft_mpi_graph_add_host(g, d_add, (void *)&one, &acc, 1, WEFT_MPI_AUTO,
                               NULL));
    acc.mode = WEFT_READ;
    OK(weft_mpi_graph_add_host(g, d_check, &c, &acc, 1, last, NULL));
    acc.mode = WEFT_READ_WRITE;
    OK(weft_mpi_graph_add_host(g, d_add, (void *)&many, &acc, 1, WEFT_MPI_AUTO,
                               NULL));
    /* rank 0: add, send, the send's completion, add */
    if (me == 0 && nranks > 1)
        CHECK(weft_graph_node_count(weft_mpi_graph_local(g)) == 4);
    acc = weft_access_range(y, 0, 64 * sizeof(uint32_t), WEFT_READ_WRITE);
    OK(weft_mpi_graph_add_host(g, add_one, NULL, &acc, 1, last, NULL));
    OK(weft_mpi_graph_instantiate(g, NULL, &e));
    /* the last rank's receive of X is early; of Y (written there) not, nor
     * rank 0's of Y coming back (rank 0 sent it) */
    CHECK(early_receives(e) == (nranks > 1 && me == last ? 1u : 0u));
    /*
     * Another graph on X (X += 1, read on the last rank), launched once
     * (its receive learns the host copy), then e three times, then it
     * again: its receive, early, goes into the host copy from its launch's
     * start, so that launch waits for e's last.
     */
    OK(weft_mpi_graph_create(mpi, &g2));
    acc = weft_access_range(x, 0, WEFT_WHOLE, WEFT_READ_WRITE);
    OK(weft_mpi_graph_add_host(g2, d_add, (void *)&one, &acc, 1, 0, NULL));
    acc.mode = WEFT_READ;
    OK(weft_mpi_graph_add_host(g2, d_check_base, &c2, &acc, 1, last, NULL));
    OK(weft_mpi_graph_instantiate(g2, NULL, &e2));
    c2.base = 1;
    OK(weft_mpi_exec_launch(e2));
    OK(weft_mpi_exec_wait(e2));
    c.base = 1;
    for (int l = 0; l < 3; l++)
        OK(weft_mpi_exec_launch(e));
    c2.base = 1 + 3 * 1001u + 1;
    OK(weft_mpi_exec_launch(e2));
    OK(weft_mpi_exec_wait(e2));
    OK(weft_mpi_exec_wait(e));
    OK(weft_mpi_exec_destroy(e2));
    OK(weft_mpi_graph_destroy(g2));
    if (me == last) {
        CHECK(c.launch == 3);
        CHECK(c.bad == 0);
        CHECK(c2.launch == 2);
        CHECK(c2.bad == 0);
    }
    if (me == 0) {
        OK(weft_buffer_read(x, 0, got, sizeof got));
        for (unsigned k = 0; k < DN; k++)
            CHECK(got[k] == k + 3 * 1001u + 2);
        OK(weft_buffer_read(y, 0, got, 64 * sizeof(uint32_t)));
        for (unsigned k = 0; k < 64; k++)
            CHECK(got[k] == k + (k < 16 ? 3u : 0u));
    }
    OK(weft_mpi_exec_destroy(e));
    OK(weft_mpi_graph_destroy(g));
    OK(weft_mpi_buffer_unregister(mpi, x));
    OK(weft_mpi_buffer_unregister(mpi, y));
    OK(weft_buffer_destroy(x));
    OK(weft_buffer_destroy(y));
}

/* ---- a rank whose node fails --------------------------------------------- */

static int launch_no;

static int produce(void *const *ptrs, void *user)
{
    uint32_t *x = ptrs[0];
    int fail = *(int *)user;

    for (unsigned k = 0; k < 16; k++)
        x[k] = (uint32_t)(launch_no * 10 + (int)k);
    return fail && launch_no == 2 ? 5 : 0;
}

static int fail_local(void *const *ptrs, void *user)
{
    return launch_no == 2 ? 7 : 0;
}

static void consume(void *const *ptrs, void *user)
{
    const uint32_t *x = ptrs[0];
    uint32_t *y = ptrs[1];

    for (unsigned k = 0; k < 16; k++)
        y[k] = x[k] + 1;
}

static void fail_test(weft_runtime *rt, weft_mpi *mpi)
{
    int f = nranks - 1, fail = 1, nofail = 0;
    weft_buffer *x, *z, *y[16];
    weft_mpi_graph *g;
    weft_mpi_exec *e;
    char msg[64];
    int rc;

    CHECK(nranks <= 16);
    OK(weft_buffer_create(rt, 64, &x));
    OK(weft_buffer_create(rt, 64, &z));
    OK(weft_mpi_buffer_register(mpi, x, f));
    OK(weft_mpi_buffer_register(mpi, z, 0));
    for (int r = 0; r < nranks; r++) {
        OK(weft_buffer_create(rt, 64, &y[r]));
        OK(weft_mpi_buffer_register(mpi, y[r], r));
    }
    /* round 0: the producer of x on f fails (a weft_mpi status task);
     * round 1: a node that f added to its local graph directly fails (seen
     * at the end of f's launch); round 2: nothing fails */
    for (int round = 0; round < 3; round++) {
        weft_access_desc wx = weft_access_range(x, 0, 64, WEFT_WRITE);
        weft_access_desc wz = weft_access_range(z, 0, 64, WEFT_WRITE);

        OK(weft_mpi_graph_create(mpi, &g));
        OK(weft_mpi_graph_add_host_status(g, produce,
                                          round == 0 ? &fail : &nofail, &wx, 1,
                                          WEFT_MPI_AUTO, NULL));
        if (round == 1 && me == f) {
            weft_access_desc rwx = weft_access_range(x, 0, 64, WEFT_READ_WRITE);

            OK(weft_graph_add_host_status(weft_mpi_graph_local(g), fail_local,
                                          NULL, &rwx, 1, NULL));
        }
        /* an independent producer on 0, whose bytes f receives */
        OK(weft_mpi_graph_add_host_status(g, produce, &nofail, &wz, 1,
                                          WEFT_MPI_AUTO, NULL));
        for (int r = 0; r < nranks; r++) {
            weft_access_desc acc[2] = {
                weft_access_range(r == f ? z : x, 0, 64, WEFT_READ),
                weft_access_range(y[r], 0, 64, WEFT_WRITE)};

            OK(weft_mpi_graph_add_host(g, consume, NULL, acc, 2, WEFT_MPI_AUTO,
                                       NULL));
        }
        OK(weft_mpi_graph_instantiate(g, NULL, &e));
        for (launch_no = 1; launch_no <= 3; launch_no++) {
            rc = weft_mpi_exec_launch(e);
            if (rc == 0)
                rc = weft_mpi_exec_wait(e);
            if (round == 2 || launch_no == 1) {
                uint32_t got[16];

                OK(rc);
                OK(weft_buffer_read(y[me], 0, got, sizeof got));
                CHECK(got[3] == (uint32_t)(launch_no * 10 + 3 + 1));
            } else if (launch_no == 2) {
                CHECK(rc == WEFT_EIO);
                snprintf(msg, sizeof msg, "rank %d failed", f);
                if (me != f)
                    CHECK(strstr(weft_mpi_last_error(), msg) != NULL);
            } else {
                CHECK(rc == WEFT_ESTATE);
            }
        }
        OK(weft_mpi_exec_destroy(e));
        OK(weft_mpi_graph_destroy(g));
    }
    for (int r = 0; r < nranks; r++) {
        OK(weft_mpi_buffer_unregister(mpi, y[r]));
        OK(weft_buffer_destroy(y[r]));
    }
    OK(weft_mpi_buffer_unregister(mpi, x));
    OK(weft_mpi_buffer_unregister(mpi, z));
    OK(weft_buffer_destroy(x));
    OK(weft_buffer_destroy(z));
}

/* ---- bad input ----------------------------------------------------------- */

/*
 * Every WEFT_API function of weft_mpi.h is called in this file's bad
 * input case: the names in the header, each found in bad_test's text.
 */
static void every_function_checked(void)
{
    static char header[1 << 15], source[1 << 17];
    const char *paths[2] = {WT_WEFT_MPI_H, WT_TEST_SOURCE};
    char *texts[2] = {header, source}, *body, *p;
    size_t sizes[2] = {sizeof header, sizeof source};
    unsigned n = 0;

    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(paths[i], "r");
        size_t len;

        CHECK(f != NULL);
        len = fread(texts[i], 1, sizes[i] - 1, f);
        fclose(f);
        CHECK(len > 0 && len < sizes[i] - 1);
        texts[i][len] = 0;
    }
    body = strstr(source, "static void bad_test(");
    CHECK(body != NULL && strstr(body, "\nint main(") != NULL);
    *strstr(body, "\nint main(") = 0;
    for (p = header; (p = strstr(p, "WEFT_API ")) != NULL; p += 9) {
        char name[64], *paren = strchr(p, '('), *start = paren;
        size_t len;

        while (start > p &&
               (start[-1] == '_' || (start[-1] >= 'a' && start[-1] <= 'z')))
            start--;
        len = (size_t)(paren - start);
        CHECK(len > 0 && len + 2 < sizeof name);
        memcpy(name, start, len);
        strcpy(name + len, "(");
        if (!strstr(body, name)) {
            fprintf(stderr, "rank %d: %s) has no bad input case\n", me, name);
            CHECK(0);
        }
        n++;
    }
    CHECK(n >= 25);
}

static void nop(void *const *ptrs, void *user)
{
}

static int nop_status(void *const *ptrs, void *user)
{
    return 0;
}

static int nop_native(const weft_native_ctx *ctx, void *user)
{
    return 0;
}

static void bad_test(weft_runtime *rt, weft_mpi *mpi, weft_kernel *mix)
{
    weft_buffer *a, *u;
    weft_mpi_graph *g;
    weft_mpi_exec *e;
    weft_node ln;
    uint32_t host[8] = {0};
    weft_access_desc acc;
    weft_arg karg[4];

    every_function_checked();
    CHECK(weft_mpi_create(NULL, MPI_COMM_WORLD, &(weft_mpi *){0}) ==
          WEFT_EINVAL);
    CHECK(weft_mpi_create(rt, MPI_COMM_WORLD, NULL) == WEFT_EINVAL);
    CHECK(strstr(weft_mpi_last_error(), "mpi is NULL") != NULL);
    OK(weft_mpi_destroy(NULL));
    CHECK(weft_mpi_rank(NULL) == WEFT_EINVAL);
    CHECK(weft_mpi_size(NULL) == WEFT_EINVAL);
    CHECK(weft_mpi_rank(mpi) == me && weft_mpi_size(mpi) == nranks);
    CHECK(weft_mpi_cuda_aware(NULL, 0) == WEFT_EINVAL);
    CHECK(weft_mpi_cuda_aware(mpi, -1) == WEFT_ERANGE);
    CHECK(weft_mpi_cuda_aware(mpi, nranks) == WEFT_ERANGE);
    CHECK(weft_mpi_cuda_aware(mpi, me) == 0 ||
          weft_mpi_cuda_aware(mpi, me) == 1);
    CHECK(weft_mpi_block_cyclic(3, 5, 2, 2) == 3);
    CHECK(weft_mpi_block_cyclic(2, 4, 2, 3) == 1);

    OK(weft_buffer_create(rt, 64, &a));
    OK(weft_buffer_create(rt, 64, &u));
    CHECK(weft_mpi_buffer_register(NULL, a, 0) == WEFT_EINVAL);
    CHECK(weft_mpi_buffer_register(mpi, NULL, 0) == WEFT_EINVAL);
    CHECK(weft_mpi_buffer_register(mpi, a, nranks) == WEFT_ERANGE);
    CHECK(weft_mpi_buffer_register(mpi, a, -1) == WEFT_ERANGE);
    OK(weft_mpi_buffer_register(mpi, a, 0));
    CHECK(weft_mpi_buffer_register(mpi, a, 0) == WEFT_EINVAL);
    CHECK(weft_mpi_buffer_owner(mpi, a) == 0);
    CHECK(weft_mpi_buffer_owner(mpi, u) == WEFT_ENOTFOUND);
    CHECK(weft_mpi_buffer_owner(NULL, a) == WEFT_EINVAL);
    CHECK(weft_mpi_buffer_unregister(mpi, u) == WEFT_ENOTFOUND);
    CHECK(weft_mpi_buffer_unregister(NULL, a) == WEFT_EINVAL);
    CHECK(weft_mpi_buffer_set_owner(mpi, u, 0) == WEFT_ENOTFOUND);
    CHECK(weft_mpi_buffer_set_owner(mpi, a, nranks) == WEFT_ERANGE);
    CHECK(weft_mpi_buffer_set_owner(NULL, a, 0) == WEFT_EINVAL);
    CHECK(weft_mpi_destroy(mpi) == WEFT_EBUSY);
    /* u as a 4 x 4 matrix of 4-byte elements, tiles of 2 x 2 */
    {
        weft_matrix m = weft_matrix_of(u, 0, 4, 4, 4, 4);
        weft_matrix none = weft_matrix_of(NULL, 0, 4, 4, 4, 4);
        weft_matrix big = weft_matrix_of(u, 0, 4, 5, 4, 4);
        weft_matrix thin = weft_matrix_of(u, 0, 4, 4, 4, 3);

        CHECK(weft_mpi_buffer_register_tiles(NULL, m, 2, 2, 1, 1) ==
              WEFT_EINVAL);
        CHECK(weft_mpi_buffer_register_tiles(mpi, none, 2, 2, 1, 1) ==
              WEFT_EINVAL);
        CHECK(weft_mpi_buffer_register_tiles(mpi, thin, 2, 2, 1, 1) ==
              WEFT_EINVAL);
        CHECK(weft_mpi_buffer_register_tiles(mpi, m, 0, 2, 1, 1) ==
              WEFT_EINVAL);
        CHECK(weft_mpi_buffer_register_tiles(mpi, big, 2, 2, 1, 1) ==
              WEFT_ERANGE);
        CHECK(weft_mpi_buffer_register_tiles(mpi, m, 2, 2, nranks, 2) ==
              WEFT_ERANGE);
        CHECK(weft_mpi_buffer_register_tiles(mpi, m, 2, 2, 0, 1) ==
              WEFT_ERANGE);
        OK(weft_mpi_buffer_register_tiles(mpi, m, 2, 2, 1, nranks));
        CHECK(weft_mpi_buffer_register_tiles(mpi, m, 2, 2, 1, 1) ==
              WEFT_EINVAL);
        CHECK(weft_mpi_buffer_owner(mpi, u) == 0);
        CHECK(weft_mpi_buffer_set_owner(mpi, u, 0) == WEFT_ENOTSUP);
        OK(weft_mpi_buffer_unregister(mpi, u));
    }

    CHECK(weft_mpi_graph_create(NULL, &g) == WEFT_EINVAL);
    CHECK(weft_mpi_graph_create(mpi, NULL) == WEFT_EINVAL);
    OK(weft_mpi_graph_create(mpi, &g));
    CHECK(weft_mpi_graph_local(NULL) == NULL);
    CHECK(weft_mpi_graph_local(g) != NULL);
    CHECK(weft_mpi_graph_transfer_count(NULL) == 0);
    acc = weft_access_range(u, 0, 8, WEFT_READ);
    CHECK(weft_mpi_graph_add_host(g, nop, NULL, &acc, 1, WEFT_MPI_AUTO, NULL) ==
          WEFT_EINVAL);
    CHECK(strstr(weft_mpi_last_error(), "not registered") != NULL);
    acc = weft_access_range(a, 60, 8, WEFT_READ);
    CHECK(weft_mpi_graph_add_host(g, nop, NULL, &acc, 1, WEFT_MPI_AUTO, NULL) ==
          WEFT_ERANGE);
    /* blocks are checked on every rank as weft checks them */
    acc = weft_access_block(a, weft_block2(0, 8, 2, 4), WEFT_READ);
    CHECK(weft_mpi_graph_add_host(g, nop, NULL, &acc, 1, WEFT_MPI_AUTO, NULL) ==
          WEFT_EINVAL);
    acc = weft_access_block(a, weft_block2(16, 8, 4, 16), WEFT_READ);
    CHECK(weft_mpi_graph_add_host(g, nop, NULL, &acc, 1, WEFT_MPI_AUTO, NULL) ==
          WEFT_ERANGE);
    acc = weft_access_block(a, weft_block3(0, 8, 2, 2, 16, 16), WEFT_READ);
    CHECK(weft_mpi_graph_add_host(g, nop, NULL, &acc, 1, WEFT_MPI_AUTO, NULL) ==
          WEFT_EINVAL);
    acc = weft_access_range(a, 0, 8, WEFT_READ);
    {
        weft_native_impl impl = {"host", 0, nop_native};
        weft_native_impl bad_impl = {"cudaa", 0, nop_native};
        weft_native_impl no_fn = {"host", 0, NULL};

        CHECK(weft_mpi_graph_add_native(NULL, &impl, 1, &acc, 1, NULL, 0,
                                        NULL) == WEFT_EINVAL);
        CHECK(weft_mpi_graph_add_native(g, NULL, 1, &acc, 1, NULL, 0, NULL) ==
              WEFT_EINVAL);
        CHECK(weft_mpi_graph_add_native(g, &impl, 0, &acc, 1, NULL, 0, NULL) ==
              WEFT_EINVAL);
        CHECK(weft_mpi_graph_add_native(g, &bad_impl, 1, &acc, 1, NULL, 0,
                                        NULL) == WEFT_EINVAL);
        CHECK(weft_mpi_graph_add_native(g, &no_fn, 1, &acc, 1, NULL, 0, NULL) ==
              WEFT_EINVAL);
        CHECK(weft_mpi_graph_add_native(g, &impl, 1, NULL, 1, NULL, 0, NULL) ==
              WEFT_EINVAL);
        CHECK(weft_mpi_graph_add_native(g, &impl, 1, &acc, 1, NULL, nranks,
                                        NULL) == WEFT_ERANGE);
    }
    acc = weft_access_range(a, 0, 8, (weft_access)7);
    CHECK(weft_mpi_graph_add_host(g, nop, NULL, &acc, 1, WEFT_MPI_AUTO, NULL) ==
          WEFT_EINVAL);
    acc = weft_access_range(a, 0, 8, WEFT_READ);
    CHECK(weft_mpi_graph_add_host(NULL, nop, NULL, &acc, 1, 0, NULL) ==
          WEFT_EINVAL);
    CHECK(weft_mpi_graph_add_host(g, NULL, NULL, &acc, 1, 0, NULL) ==
          WEFT_EINVAL);
    CHECK(weft_mpi_graph_add_host(g, nop, NULL, NULL, 1, 0, NULL) ==
          WEFT_EINVAL);
    CHECK(weft_mpi_graph_add_host(g, nop, NULL, &acc, 1, nranks, NULL) ==
          WEFT_ERANGE);
    CHECK(weft_mpi_graph_add_host_status(g, NULL, NULL, &acc, 1, 0, NULL) ==
          WEFT_EINVAL);
    CHECK(weft_mpi_graph_add_host_status(NULL, nop_status, NULL, &acc, 1, 0,
                                         NULL) == WEFT_EINVAL);
    karg[0] = weft_arg_buffer(u, 0, WEFT_WHOLE, WEFT_READ_WRITE);
    karg[1] = weft_arg_buffer(a, 0, WEFT_WHOLE, WEFT_READ);
    karg[2] = weft_arg_u32(1);
    karg[3] = weft_arg_u32(8);
    CHECK(weft_mpi_graph_add_kernel(g, mix, weft_dims1(8), karg, 4,
                                    WEFT_MPI_AUTO, NULL) == WEFT_EINVAL);
    CHECK(weft_mpi_graph_add_kernel(NULL, mix, weft_dims1(8), karg, 4, 0,
                                    NULL) == WEFT_EINVAL);
    CHECK(weft_mpi_graph_add_kernel(g, NULL, weft_dims1(8), karg, 4, 0, NULL) ==
          WEFT_EINVAL);
    karg[0] = weft_arg_block(a, weft_block2(0, 8, 9, 8), WEFT_READ_WRITE);
    CHECK(weft_mpi_graph_add_kernel(g, mix, weft_dims1(8), karg, 4, 0, NULL) ==
          WEFT_ERANGE);
    CHECK(weft_mpi_graph_add_write(g, u, 0, host, 8, 0, NULL) == WEFT_EINVAL);
    CHECK(weft_mpi_graph_add_write(g, a, 0, NULL, 8, 0, NULL) == WEFT_EINVAL);
    CHECK(weft_mpi_graph_add_write(NULL, a, 0, host, 8, 0, NULL) ==
          WEFT_EINVAL);
    CHECK(weft_mpi_graph_add_read(g, a, 64, host, 8, 0, NULL) == WEFT_ERANGE);
    CHECK(weft_mpi_graph_add_read(g, NULL, 0, host, 8, 0, NULL) == WEFT_EINVAL);
    CHECK(weft_mpi_graph_add_read(NULL, a, 0, host, 8, 0, NULL) == WEFT_EINVAL);
    /* a failed add changed nothing: the graph is empty */
    CHECK(weft_graph_node_count(weft_mpi_graph_local(g)) == 0);
    CHECK(weft_mpi_graph_transfer_count(g) == 0);
    /* a node on the last rank that reads a (owner 0): one transfer */
    OK(weft_mpi_graph_add_read(g, a, 0, host, 8, nranks - 1, NULL));
    CHECK(weft_mpi_graph_transfer_count(g) == (nranks > 1 ? 1u : 0u));
    /* a second reader there: the bytes it received are still valid */
    OK(weft_mpi_graph_add_read(g, a, 0, host + 2, 8, nranks - 1, NULL));
    CHECK(weft_mpi_graph_transfer_count(g) == (nranks > 1 ? 1u : 0u));
    CHECK(weft_mpi_graph_node_rank(g, 0) == nranks - 1);
    CHECK(weft_mpi_graph_node_rank(g, 2) == WEFT_EINVAL);
    CHECK(weft_mpi_graph_node_rank(NULL, 0) == WEFT_EINVAL);
    CHECK(weft_mpi_graph_local_node(g, 0, &ln) ==
          (me == nranks - 1 ? 0 : WEFT_ENOTFOUND));
    CHECK(weft_mpi_graph_local_node(g, 2, &ln) == WEFT_EINVAL);
    CHECK(weft_mpi_graph_local_node(NULL, 0, &ln) == WEFT_EINVAL);
    CHECK(weft_mpi_graph_local_node(g, 0, NULL) == WEFT_EINVAL);
    CHECK(weft_mpi_buffer_unregister(mpi, a) == WEFT_EBUSY);
    CHECK(weft_mpi_buffer_set_owner(mpi, a, 0) == WEFT_EBUSY);

    CHECK(weft_mpi_graph_instantiate(NULL, NULL, &e) == WEFT_EINVAL);
    CHECK(weft_mpi_graph_instantiate(g, NULL, NULL) == WEFT_EINVAL);
    OK(weft_mpi_graph_instantiate(g, NULL, &e));
    CHECK(weft_mpi_graph_instantiate(g, NULL, &(weft_mpi_exec *){0}) ==
          WEFT_EBUSY);
    CHECK(weft_mpi_graph_destroy(g) == WEFT_EBUSY);
    CHECK(weft_mpi_exec_local(NULL) == NULL);
    CHECK(weft_mpi_exec_ipc_transfers(NULL) == 0);
    CHECK(weft_mpi_exec_ipc_transfers(e) == 0); /* none before a launch */
    CHECK(weft_mpi_exec_aware_transfers(NULL) == 0);
    CHECK(weft_mpi_exec_aware_transfers(e) == 0);
    CHECK(weft_mpi_exec_write_transfers(NULL, "x.json") == WEFT_EINVAL);
    CHECK(weft_mpi_exec_write_transfers(e, NULL) == WEFT_EINVAL);
    CHECK(weft_mpi_exec_write_transfers(e, "/nonexistent/dir/x.json") ==
          WEFT_EIO);
    CHECK(weft_mpi_exec_local(e) != NULL);
    CHECK(weft_mpi_exec_launch(NULL) == WEFT_EINVAL);
    CHECK(weft_mpi_exec_wait(NULL) == WEFT_EINVAL);
    OK(weft_mpi_exec_wait(e)); /* nothing in flight */
    OK(weft_mpi_exec_launch(e));
    OK(weft_mpi_exec_destroy(e)); /* waits */
    OK(weft_mpi_exec_destroy(NULL));
    OK(weft_mpi_graph_destroy(g));
    OK(weft_mpi_graph_destroy(NULL));
    OK(weft_mpi_buffer_unregister(mpi, a));
    OK(weft_buffer_destroy(a));
    OK(weft_buffer_destroy(u));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "random";
    unsigned seeds = 6, count = 30;
    uint64_t seed = 1;
    weft_runtime *rt;
    weft_module *mod;
    weft_kernel *mix;
    weft_mpi *mpi;
    int provided, rc;

    MPI_Init_thread(&argc, &argv,
                    strcmp(mode, "serialized") == 0 ? MPI_THREAD_SERIALIZED
                                                    : MPI_THREAD_MULTIPLE,
                    &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--seeds") == 0)
            seeds = (unsigned)atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--nodes") == 0)
            count = (unsigned)atoi(argv[i + 1]);
    }
    CHECK(count <= MAXNODES);
    rc = weft_runtime_create(&rt, NULL);
    if (rc < 0) {
        fprintf(stderr, "rank %d: skipped: no runtime: %s\n", me,
                weft_last_error());
        MPI_Finalize();
        return 77;
    }
    if (weft_runtime_device_count(rt) == 0) { /* WEFT_DEVICES=cuda, say */
        printf("rank %d: skipped: no device\n", me);
        OK(weft_runtime_destroy(rt));
        MPI_Finalize();
        return 77;
    }
    if (strcmp(mode, "serialized") == 0) {
        CHECK(provided < MPI_THREAD_MULTIPLE);
        CHECK(weft_mpi_create(rt, MPI_COMM_WORLD, &mpi) == WEFT_ENOTSUP);
        CHECK(strstr(weft_mpi_last_error(), "MPI_THREAD_MULTIPLE") != NULL);
        OK(weft_runtime_destroy(rt));
        printf("rank %d: ok\n", me);
        MPI_Finalize();
        return 0;
    }
    OK(weft_mpi_create(rt, MPI_COMM_WORLD, &mpi));
    OK(weft_module_create_portable(rt, mix_source, NULL, &mod));
    OK(weft_module_get_kernel(mod, "mix", &mix));
    /* MODE: one mode or several, comma-separated, run in turn */
    for (const char *m = mode; *m;
         m += strcspn(m, ",") + (m[strcspn(m, ",")] != 0)) {
        size_t len = strcspn(m, ",");

        if (len == 6 && strncmp(m, "random", len) == 0) {
            unsigned transfers = 0;

            for (unsigned s = 0; s < seeds; s++)
                transfers += random_graph(rt, mpi, mix, seed + s, count);
            /* the graphs crossed ranks */
            CHECK(nranks == 1 || transfers >= seeds);
            if (me == 0)
                printf("%u graphs of %u nodes on %d ranks: %u transfers\n",
                       seeds, count, nranks, transfers);
        } else if (len == 6 && strncmp(m, "blocks", len) == 0) {
            weft_module *bmod;
            weft_kernel *bmix;
            unsigned transfers = 0;

            tile_messages(rt, mpi);
            OK(weft_module_create_portable(rt, bmix_source, NULL, &bmod));
            OK(weft_module_get_kernel(bmod, "bmix", &bmix));
            for (unsigned s = 0; s < seeds; s++)
                transfers += block_graph(rt, mpi, bmix, seed + s,
                                         count < BNODES ? count : BNODES);
            CHECK(nranks == 1 || transfers >= seeds);
            OK(weft_module_destroy(bmod));
            if (me == 0)
                printf("%u block graphs on %d ranks: %u transfers\n", seeds,
                       nranks, transfers);
        } else if (len == 6 && strncmp(m, "owners", len) == 0) {
            owners_test(rt, mpi);
        } else if (len == 6 && strncmp(m, "direct", len) == 0) {
            direct_test(rt, mpi);
        } else if (len == 4 && strncmp(m, "fail", len) == 0) {
            fail_test(rt, mpi);
        } else if (len == 3 && strncmp(m, "ipc", len) == 0) {
            dev_test(rt, mpi);
        } else if (len == 5 && strncmp(m, "aware", len) == 0) {
            aware_test(rt, mpi);
        } else if (len == 3 && strncmp(m, "bad", len) == 0) {
            bad_test(rt, mpi, mix);
        } else {
            CHECK(!"unknown mode");
        }
    }
    OK(weft_mpi_destroy(mpi));
    OK(weft_module_destroy(mod));
    OK(weft_runtime_destroy(rt));
    printf("rank %d: ok\n", me);
    MPI_Finalize();
    return 0;
}
