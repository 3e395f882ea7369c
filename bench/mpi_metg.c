/*
 * mpi_metg: bench/metg's stencil pattern across MPI ranks, weft_mpi beside
 * the same pattern written in plain MPI here, in the same run.
 *
 * W = ranks x P points (--points P a rank, in one block of consecutive
 * points per rank) by T steps (--steps): point i at step t depends on
 * points i - 1, i, i + 1 of step t - 1. Each task runs metg's kind of
 * kernel (CHAINS independent chains of dependent multiply-adds, ITERS
 * times) and writes its cell (a key, a function of (launch, step, point),
 * and a value), in a ring of two cells per point; every task checks its
 * inputs' keys, so a wrong order or a lost transfer ends the bench.
 *
 * Variants (each launch of T steps timed between barriers, the best of
 * --reps after one untimed launch):
 *   weft_mpi  one weft_mpi host task per point and step, each point's
 *             cells one buffer owned by its rank: the edges come from the
 *             accesses, and the cells of the points next to another
 *             rank's cross as weft_mpi transfers;
 *   mpi       per rank a loop over the steps: the two edge cells of step
 *             t - 1 exchanged with the neighbouring ranks (MPI_Isend,
 *             MPI_Irecv, MPI_Waitall), then the P tasks of step t in order.
 * Both use one core a rank for the tasks (run it with WEFT_HOST_WORKERS=1,
 * WEFT_HOST_THREADS=1 for the host devices; the plain loop is
 * single-threaded). Defaults: 4 points a rank, 50 steps, 3 reps, 2000 us
 * down to 0.5 us.
 *
 * Peak: the P x T kernels of a launch on one core with no communication,
 * measured on each rank (the best of 3). Efficiency = peak / the slowest
 * rank's launch; granularity = launch time / (P x T) (us per task per
 * core). The sweep halves ITERS from --max-us down to --min-us of kernel;
 * METG(50%) is where efficiency crosses 50% (interpolated in log
 * granularity), as bench/metg computes it. Rank 0 prints, one line each,
 *
 *   mpi_metg weft_mpi 20 us: 0.93 efficiency
 *   metg_50 weft_mpi: 7.2 us
 *   metg_50 mpi: 1.1 us
 *
 *     WEFT_HOST_WORKERS=1 mpirun -np 2 mpi_metg [--points P] [--steps T]
 * [--reps R]
 *                           [--min-us G] [--max-us G]
 */
#include <weft_mpi.h>

#include "bench.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHAINS = 8, MAXPOINTS = 40 };

static int me, nranks;

/* Read once a call: the compiler may not fold two calls into one. */
static volatile double kernel_m = 0.9999999;

/* CHAINS chains x = x m + c, converging to 1; depends on iters alone. */
__attribute__((noinline)) static double kernel(long iters)
{
    double a[CHAINS], m = kernel_m;

    for (int c = 0; c < CHAINS; c++)
        a[c] = 0.1 * (c + 1);
    for (long k = 0; k < iters; k++)
        for (int c = 0; c < CHAINS; c++)
            a[c] = a[c] * m + 1e-7;
    return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

/* A point's cell at one step. */
typedef struct cell {
    uint64_t key;
    double value;
} cell;

static uint64_t key_of(long launch, int t, int i, int w)
{
    return ((uint64_t)launch * 100000u + (uint64_t)t) * (uint64_t)w +
           (uint64_t)i + 1;
}

/* What every task of a launch shares. */
typedef struct run {
    long iters;
    long launch;
    int w, steps;
    int failed;
} run;

typedef struct task {
    run *r;
    int t, i, nin; /* inputs: points i - 1 .. i + 1 in range, t > 0 */
    int in[3];
} task;

/* One task: check the inputs' keys, compute, write the cell. */
static void step(run *r, int t, int i, const cell *const *in, const int *pts,
                 int nin, cell *out)
{
    double v = kernel(r->iters);

    for (int k = 0; k < nin; k++) {
        if (in[k]->key != key_of(r->launch, t - 1, pts[k], r->w))
            r->failed = 1;
        v += in[k]->value * 1e-9;
    }
    out->key = key_of(r->launch, t, i, r->w);
    out->value = v;
}

static void weft_task(void *const *ptrs, void *user)
{
    task *k = user;
    const cell *in[3];

    for (int x = 0; x < k->nin; x++)
        in[x] = ptrs[1 + x];
    step(k->r, k->t, k->i, in, k->in, k->nin, ptrs[0]);
}

/* ---- weft_mpi ----------------------------------------------------------- */

typedef struct wvariant {
    weft_mpi_graph *g;
    weft_mpi_exec *e;
    task *tasks;
} wvariant;

static void weft_build(weft_mpi *mpi, weft_buffer **cells, run *r, wvariant *v)
{
    int w = r->w;

    v->tasks = calloc((size_t)w * (size_t)r->steps, sizeof *v->tasks);
    if (!v->tasks)
        bench_die("out of memory");
    bench_check(weft_mpi_graph_create(mpi, &v->g));
    for (int t = 0; t < r->steps; t++)
        for (int i = 0; i < w; i++) {
            task *k = &v->tasks[t * w + i];
            weft_access_desc acc[4];

            k->r = r;
            k->t = t;
            k->i = i;
            acc[0] = weft_access_range(cells[i], (size_t)(t % 2) * sizeof(cell),
                                       sizeof(cell), WEFT_WRITE);
            for (int j = i - 1; t > 0 && j <= i + 1; j++)
                if (j >= 0 && j < w) {
                    acc[1 + k->nin] = weft_access_range(
                        cells[j], (size_t)((t - 1) % 2) * sizeof(cell),
                        sizeof(cell), WEFT_READ);
                    k->in[k->nin++] = j;
                }
            bench_check(weft_mpi_graph_add_host(v->g, weft_task, k, acc,
                                                1 + (unsigned)k->nin,
                                                WEFT_MPI_AUTO, NULL));
        }
    bench_check(weft_mpi_graph_instantiate(v->g, NULL, &v->e));
}

static void weft_free(wvariant *v)
{
    bench_check(weft_mpi_exec_destroy(v->e));
    bench_check(weft_mpi_graph_destroy(v->g));
    free(v->tasks);
}

/* ---- plain MPI ---------------------------------------------------------- */

/*
 * One launch: this rank's points [lo, lo + p) in a ring of two cells each,
 * plus the neighbours' edge cells of the step before.
 */
static void mpi_launch(run *r, int p, cell (*mine)[2])
{
    int lo = me * p, w = r->w;
    cell left, right; /* points lo - 1 and lo + p, step t - 1 */

    for (int t = 0; t < r->steps; t++) {
        MPI_Request req[4];
        int n = 0;

        if (t > 0 && me > 0) {
            MPI_Irecv(&left, sizeof left, MPI_BYTE, me - 1, 1, MPI_COMM_WORLD,
                      &req[n++]);
            MPI_Isend(&mine[0][(t - 1) % 2], sizeof(cell), MPI_BYTE, me - 1, 2,
                      MPI_COMM_WORLD, &req[n++]);
        }
        if (t > 0 && me < nranks - 1) {
            MPI_Irecv(&right, sizeof right, MPI_BYTE, me + 1, 2, MPI_COMM_WORLD,
                      &req[n++]);
            MPI_Isend(&mine[p - 1][(t - 1) % 2], sizeof(cell), MPI_BYTE, me + 1,
                      1, MPI_COMM_WORLD, &req[n++]);
        }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        for (int x = 0; x < p; x++) {
            const cell *in[3];
            int pts[3], nin = 0, i = lo + x;

            for (int j = i - 1; t > 0 && j <= i + 1; j++) {
                if (j < 0 || j >= w)
                    continue;
                in[nin] = j < lo        ? &left
                          : j >= lo + p ? &right
                                        : &mine[j - lo][(t - 1) % 2];
                pts[nin++] = j;
            }
            step(r, t, i, in, pts, nin, &mine[x][t % 2]);
        }
    }
}

/* ---- the sweep ---------------------------------------------------------- */

/* Seconds of the slowest rank for f, between barriers. */
static double timed(void (*f)(void *), void *arg)
{
    double t0, dt, worst;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = (double)bench_now_ns() * 1e-9;
    f(arg);
    dt = (double)bench_now_ns() * 1e-9 - t0;
    MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

typedef struct ctx {
    run *r;
    wvariant *wv;
    cell (*mine)[2];
    int p;
} ctx;

static void run_weft(void *arg)
{
    ctx *c = arg;

    bench_check(weft_mpi_exec_launch(c->wv->e));
    bench_check(weft_mpi_exec_wait(c->wv->e));
}

static void run_mpi(void *arg)
{
    ctx *c = arg;

    mpi_launch(c->r, c->p, c->mine);
}

static void run_peak(void *arg)
{
    ctx *c = arg;
    volatile double sink = 0;

    for (int k = 0; k < c->p * c->r->steps; k++)
        sink += kernel(c->r->iters);
    (void)sink;
}

/* The best of reps launches of f (one untimed first); launch counts up. */
static double best(void (*f)(void *), ctx *c, int reps)
{
    double b = INFINITY;

    for (int x = 0; x <= reps; x++) {
        double s;
        int bad = 0;

        c->r->launch++;
        c->r->failed = 0;
        s = timed(f, c);
        MPI_Allreduce(&c->r->failed, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (bad)
            bench_die("a task saw a wrong input (launch %ld)", c->r->launch);
        if (x > 0 && s < b)
            b = s;
    }
    return b;
}

/* METG(50%): where eff (by decreasing granularity g) crosses 0.5. */
static double metg50(const double *g, const double *eff, int n, int *mark)
{
    *mark = 0;
    if (n == 0 || eff[0] < 0.5) {
        *mark = 1; /* never 50% */
        return g[0];
    }
    for (int x = 1; x < n; x++)
        if (eff[x] < 0.5) {
            double f = (eff[x - 1] - 0.5) / (eff[x - 1] - eff[x]);

            return exp(log(g[x - 1]) + f * (log(g[x]) - log(g[x - 1])));
        }
    *mark = 2; /* upper bound */
    return g[n - 1];
}

int main(int argc, char **argv)
{
    int points = 4, steps = 50, reps = 3, provided, npts = 0;
    double min_us = 0.5, max_us = 2000, per_iter;
    static double gw[MAXPOINTS], ew[MAXPOINTS], gm[MAXPOINTS], em[MAXPOINTS];
    const bench_option opts[] = {
        {"--points", BENCH_INT, &points, "P"},
        {"--steps", BENCH_INT, &steps, "T"},
        {"--reps", BENCH_INT, &reps, "R"},
        {"--min-us", BENCH_DOUBLE, &min_us, "G"},
        {"--max-us", BENCH_DOUBLE, &max_us, "G"},
    };
    weft_runtime *rt;
    weft_mpi *mpi;
    weft_buffer **cells;
    cell(*mine)[2];
    run r = {0};
    ctx c;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    BENCH_OPTIONS(argc, argv, "mpi_metg", opts);
    if (points < 1 || steps < 2 || reps < 1 || min_us <= 0 || max_us < min_us)
        bench_usage();
    r.w = nranks * points;
    r.steps = steps;
    bench_check(weft_runtime_create(&rt, NULL));
    bench_check(weft_mpi_create(rt, MPI_COMM_WORLD, &mpi));
    cells = calloc((size_t)r.w, sizeof *cells);
    mine = calloc((size_t)points, sizeof *mine);
    if (!cells || !mine)
        bench_die("out of memory");
    for (int i = 0; i < r.w; i++) {
        bench_check(weft_buffer_create(rt, 2 * sizeof(cell), &cells[i]));
        bench_check(weft_mpi_buffer_register(mpi, cells[i], i / points));
    }
    /* the kernel's time per iteration, for the sweep's task sizes */
    {
        uint64_t t0 = bench_now_ns();
        double mean = 0;
        volatile double sink = kernel(2000000);

        (void)sink;
        per_iter = (double)(bench_now_ns() - t0) * 1e-3 / 2000000;
        MPI_Allreduce(&per_iter, &mean, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        per_iter = mean / nranks;
    }
    c = (ctx){&r, NULL, mine, points};
    bench_begin("\"ranks\": %d, \"points\": %d, \"steps\": %d", nranks, points,
                steps);
    for (double us = max_us; us >= min_us && npts < MAXPOINTS; us /= 2) {
        wvariant wv = {0};
        double tw, tm, peak = INFINITY;
        char name[64];

        r.iters = (long)(us / per_iter) > 0 ? (long)(us / per_iter) : 1;
        for (int x = 0; x < 3; x++) {
            double s = timed(run_peak, &c);

            if (s < peak)
                peak = s;
        }
        weft_build(mpi, cells, &r, &wv);
        c.wv = &wv;
        tw = best(run_weft, &c, reps);
        weft_free(&wv);
        tm = best(run_mpi, &c, reps);
        gw[npts] = tw * 1e6 / (points * steps);
        ew[npts] = peak / tw;
        gm[npts] = tm * 1e6 / (points * steps);
        em[npts] = peak / tm;
        snprintf(name, sizeof name, "mpi_metg weft_mpi %.3g us", us);
        if (me == 0)
            bench_figure(name, ew[npts], "efficiency");
        snprintf(name, sizeof name, "mpi_metg mpi %.3g us", us);
        if (me == 0)
            bench_figure(name, em[npts], "efficiency");
        npts++;
    }
    if (me == 0) {
        int mark;
        double m = metg50(gw, ew, npts, &mark);

        bench_figure(mark == 1   ? "metg_50 weft_mpi (never 50%)"
                     : mark == 2 ? "metg_50 weft_mpi (upper bound)"
                                 : "metg_50 weft_mpi",
                     m, "us");
        m = metg50(gm, em, npts, &mark);
        bench_figure(mark == 1   ? "metg_50 mpi (never 50%)"
                     : mark == 2 ? "metg_50 mpi (upper bound)"
                                 : "metg_50 mpi",
                     m, "us");
        bench_end();
    }
    for (int i = 0; i < r.w; i++) {
        bench_check(weft_mpi_buffer_unregister(mpi, cells[i]));
        bench_check(weft_buffer_destroy(cells[i]));
    }
    bench_check(weft_mpi_destroy(mpi));
    bench_check(weft_runtime_destroy(rt));
    free(cells);
    free(mine);
    MPI_Finalize();
    return 0;
}
