/*
 * metg: the minimum effective task granularity of weft, beside OpenMP and
 * StarPU tasks.
 *
 * A task graph of W points (default: the cores) by T steps (default 1000)
 * in one of four patterns: point i at step t depends on points of step
 * t - 1:
 *   trivial  none;
 *   stencil  i - 1, i, i + 1;
 *   nearest  i - 2 .. i + 2;
 *   random   a random subset of 1 to 5 points, drawn once from a fixed seed
 *            per (step, point).
 * Each task runs the same compute-bound kernel: CHAINS independent chains
 * of dependent multiply-adds, 2 FLOPs each, ITERS times. The sweep halves
 * ITERS from a task of --max-us (default 10 ms) down to --min-us (0.25 us).
 *
 * Peak: the same kernel on one plain pthread per core, no runtime, in the
 * same run: the best of 3 before each pattern and 1 (shorter) before each
 * sweep point, since other work on the machine can only lower it. The
 * figures are computed at the end against that peak. For each sweep point
 * and variant, the best of R launches: efficiency = FLOPs / wall / peak,
 * granularity = wall x cores / tasks (us). METG(50%) is where efficiency
 * crosses 50% for the last time going down the sweep: between the last
 * point at or above 50% and the one after it, interpolated linearly in
 * efficiency against log(granularity) (a larger size that fell below 50%
 * between sizes above it was disturbed by other work, which can only lower
 * a point: a note names how many).
 * Where no task size reaches 50% the figure is the largest
 * granularity measured, marked "never 50%"; where no point fell below, the
 * smallest, marked "upper bound". Beside them, at the largest tasks, the
 * cores a launch kept busy (the process's CPU time over the wall time;
 * OpenMP's idle threads spin for a while, which counts too) and the tasks
 * it ran at once on average (each task's start and end recorded: the
 * runtime's parallelism, which other work on the machine does not lower).
 * With --latency every sweep point records them, and each point's note
 * adds, per variant, the hand-off latency (a task's start less the end of
 * the last task it must follow, its inputs' writers and its old cell's
 * readers, over the tasks of steps 1 on: the median, the
 * 90th and 99th percentiles and the mean) and the mean task time, against the
 * kernel's time on one plain thread: whether a launch's loss is the runtime's
 * hand-offs or tasks that ran slower than alone (other work, shared caches).
 *
 * Data: each point writes 16 bytes per step (a cell: its key, a function
 * of (launch, step, point), and a sum over its inputs' keys and the
 * kernel's result), each cell in its own 64-byte line, in a ring of 2
 * steps (trivial: one cell per step and point). Every task checks each
 * input cell against what its writer must have written in this launch;
 * after each launch every task's mark and the last cells are checked. A
 * mismatch ends the bench naming the first wrong task.
 *
 * Variants:
 *   first     weft, one host task per point and step (weft_graph_add_host,
 *             WEFT_WRITE on its cell and WEFT_READ on its inputs' cells,
 *             views of one buffer: weft infers the edges); instantiate +
 *             first launch + wait, timed (building the graph, the
 *             weft_graph_add_host calls, is not: each point's note gives
 *             its time);
 *   build     first, with the graph's build before it (weft_graph_add_host
 *             calls, once a point) added to its time: what a program that
 *             builds a graph and launches it once pays, as OpenMP's figure
 *             includes making its tasks;
 *   relaunch  the same executable graph launched again;
 *   kernels   weft, one host-driver kernel node per point and step (a
 *             module of C kernels, WEFT_SOURCE_HOST), relaunched (the
 *             first launch untimed);
 *   openmp    one `omp task` per point and step with depend(in/out) on the
 *             same cells, in one parallel region (where CMake found
 *             OpenMP);
 *   starpu    one StarPU task per point and step (where CMake found
 *             starpu-1.3): each cell a registered variable handle, the
 *             task STARPU_W on its cell and STARPU_R on its inputs' cells,
 *             so that StarPU infers the edges; as many CPU workers as
 *             cores and no other kind (STARPU_NCPU overrides); submission
 *             + starpu_task_wait_for_all timed. StarPU starts once, before
 *             the sweep, and its workers are paused outside its launches
 *             (idle, they poll).
 *   threads   no runtime: one plain thread per point runs its tasks step
 *             after step, spinning on flags until its inputs' writers and
 *             its old cell's readers are done (a static schedule with
 *             hand-offs of one cache line): a reference for the pattern
 *             on this machine at this width with no runtime, against which
 *             a runtime's loss at large tasks is its own or the machine's
 *             (not a bound: it cannot move work off a slow core).
 * The steps of a launch are cut at large granularities so that a launch
 * holds about 0.1 s of work (at least 10 steps).
 *
 *     metg [--json] [--width W] [--steps T] [--reps R] [--min-us G]
 *          [--max-us G] [--patterns trivial,stencil,nearest,random]
 *          [--variants first,build,relaunch,kernels,openmp,starpu,threads]
 *          [--quick]
 *          [--corrupt STEP] [--latency]
 * --quick: a short sweep (1 ms to 0.1 ms, 20 steps, 1 rep) for CI.
 * --corrupt STEP: point 0 of step STEP writes a wrong cell (the bench must
 * then fail, naming it).
 */
#include <weft.h>

#include "bench.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#ifdef METG_STARPU
#include <starpu.h>
#elif !defined(METG_STARPU_MISSING)
/* Why the starpu variant is not built (CMake may say otherwise). */
#define METG_STARPU_MISSING "libstarpu-dev not found at configure"
#endif

enum {
    MAXDEPS = 5,
    STRIDE = 64,    /* bytes between two cells */
    CHAINS = 8,     /* independent multiply-add chains of the kernel */
    MAXPOINTS = 64, /* sweep points */
    MAXREPS = 32,
    MIN_STEPS = 10, /* the fewest steps a cut launch keeps */
};

/* FLOPs per kernel iteration: CHAINS multiply-adds. */
static const double flops_per_iter = 2.0 * CHAINS;
/* The work of one launch at large granularities, us of the machine. */
static const double launch_budget_us = 100000;

/* ---- the kernel -------------------------------------------------------- */

/*
 * CHAINS chains x = x * m + c, each iteration depending on the last; the
 * chains converge to 1, so no value overflows or goes subnormal. The
 * result depends on iters alone, so a task's result can be checked.
 */
__attribute__((noinline)) static double kernel(long iters)
{
    const double m = 0.9999999, c = 1e-7;
    double a0 = 0.1, a1 = 0.2, a2 = 0.3, a3 = 0.4;
    double a4 = 0.5, a5 = 0.6, a6 = 0.7, a7 = 0.8;

    for (long k = 0; k < iters; k++) {
        a0 = a0 * m + c;
        a1 = a1 * m + c;
        a2 = a2 * m + c;
        a3 = a3 * m + c;
        a4 = a4 * m + c;
        a5 = a5 * m + c;
        a6 = a6 * m + c;
        a7 = a7 * m + c;
    }
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}

/* ---- patterns ---------------------------------------------------------- */

typedef enum pattern_kind {
    TRIVIAL,
    STENCIL,
    NEAREST,
    RANDOM,
    NPATTERNS
} pattern_kind;
static const char *const pattern_names[NPATTERNS] = {"trivial", "stencil",
                                                     "nearest", "random"};

/* One point at one step; its inputs are cells of step t - 1. */
typedef struct task {
    uint32_t t, i;
    uint32_t ndeps;
    uint32_t deps[MAXDEPS];
} task;

/* The output of a point at a step. */
typedef struct cell {
    uint64_t key; /* key_of(launch, t, i) */
    uint64_t sum; /* over key, the inputs' keys and the kernel's result */
} cell;

typedef struct pattern {
    pattern_kind kind;
    uint32_t width, steps; /* steps: the most any launch runs */
    uint32_t depth;        /* ring slots: 2, or steps for trivial */
    task *tasks;           /* [steps][width] */
    /* The readers of cell (t, i): the points of step t + 1 whose inputs
     * hold i, readers[rd_first[t * width + i] .. rd_first[... + 1]). */
    uint32_t *rd_first, *readers;
} pattern;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* p's readers from its tasks' inputs (counted, then placed). */
static void pattern_readers(pattern *p)
{
    size_t cells = (size_t)p->steps * p->width, all = 0;
    uint32_t w = p->width;

    for (size_t k = 0; k < cells; k++)
        all += p->tasks[k].ndeps;
    p->rd_first = calloc(cells + 1, sizeof *p->rd_first);
    p->readers = malloc((all ? all : 1) * sizeof *p->readers);
    if (!p->rd_first || !p->readers)
        bench_die("out of memory");
    for (uint32_t t = 1; t < p->steps; t++)
        for (uint32_t i = 0; i < w; i++) {
            const task *tk = &p->tasks[(size_t)t * w + i];

            for (uint32_t d = 0; d < tk->ndeps; d++)
                p->rd_first[(size_t)(t - 1) * w + tk->deps[d] + 1]++;
        }
    for (size_t k = 0; k < cells; k++)
        p->rd_first[k + 1] += p->rd_first[k];
    for (uint32_t t = 1; t < p->steps; t++)
        for (uint32_t i = 0; i < w; i++) {
            const task *tk = &p->tasks[(size_t)t * w + i];

            for (uint32_t d = 0; d < tk->ndeps; d++) {
                size_t c = (size_t)(t - 1) * w + tk->deps[d];

                /* placed in increasing i: rd_first[c] counts up to
                 * rd_first[c + 1], then is set back below */
                p->readers[p->rd_first[c]++] = i;
            }
        }
    for (size_t k = cells; k > 0; k--)
        p->rd_first[k] = p->rd_first[k - 1];
    p->rd_first[0] = 0;
}

static void pattern_make(pattern *p, pattern_kind kind, uint32_t width,
                         uint32_t steps)
{
    p->kind = kind;
    p->width = width;
    p->steps = steps;
    p->depth = kind == TRIVIAL ? steps : 2;
    p->tasks = calloc((size_t)steps * width, sizeof *p->tasks);
    if (!p->tasks)
        bench_die("out of memory");
    for (uint32_t t = 0; t < steps; t++)
        for (uint32_t i = 0; i < width; i++) {
            task *tk = &p->tasks[(size_t)t * width + i];
            int lo = 0, hi = -1;

            tk->t = t;
            tk->i = i;
            if (t == 0 || kind == TRIVIAL)
                continue;
            if (kind == STENCIL || kind == NEAREST) {
                int r = kind == STENCIL ? 1 : 2;

                lo = (int)i - r < 0 ? 0 : (int)i - r;
                hi = (int)i + r >= (int)width ? (int)width - 1 : (int)i + r;
                for (int d = lo; d <= hi; d++)
                    tk->deps[tk->ndeps++] = (uint32_t)d;
                continue;
            }
            /* random: 1 to 5 distinct points, from (t, i) alone */
            uint64_t s = mix(((uint64_t)t << 32) ^ i ^ 0x72616e64u);
            uint32_t want = 1 + (uint32_t)(s % MAXDEPS);

            if (want > width)
                want = width;
            while (tk->ndeps < want) {
                uint32_t d, k;

                s = mix(s);
                d = (uint32_t)(s % width);
                for (k = 0; k < tk->ndeps && tk->deps[k] != d; k++)
                    ;
                if (k == tk->ndeps)
                    tk->deps[tk->ndeps++] = d;
            }
        }
    pattern_readers(p);
}

/* ---- what a launch must produce ---------------------------------------- */

/*
 * The launch in flight, set by the main thread before it launches and
 * read by the tasks: what names a failure, the kernel's length, the cells
 * each task must read and write, and where each task marks itself done.
 */
static struct launch_state {
    char what[64]; /* "stencil weft relaunch" */
    const pattern *p;
    uint32_t steps; /* of this launch */
    uint32_t epoch; /* this launch's number, in every key */
    long iters;
    uint64_t result_bits; /* kernel(iters), computed once by main */
    cell *expect;         /* [steps][width] */
    /* What each task writes besides its cell: [steps][width]. */
    struct mark *marks;
    /* With probe set (the largest tasks only, where two clock reads per
     * task cost nothing, or every size with --latency), each task's start
     * and end go to its mark. */
    int probe;
    int own_order; /* a point's tasks run in order (the static threads) */
    int corrupt_step;
} cur = {.corrupt_step = -1};

/*
 * A task's own line: the epoch of its last run, and with probe its start
 * and end (ns). A line each, so that the bench's bookkeeping shares no
 * line between tasks that run at once on different cores (which tasks
 * those are depends on the pattern: with trivial's, the same point's
 * tasks of nearby steps).
 */
struct mark {
    _Alignas(64) uint64_t started, ended;
    uint32_t epoch;
};

static uint64_t key_of(uint32_t epoch, uint32_t t, uint32_t i)
{
    return mix(((uint64_t)epoch << 42) ^ ((uint64_t)t << 21) ^ i);
}

static uint64_t double_bits(double v)
{
    uint64_t b;

    memcpy(&b, &v, sizeof b);
    return b;
}

/*
 * The next launch, of variant (which names a failure): a new epoch and the
 * cells it must produce.
 */
static void launch_prepare(const char *variant)
{
    const pattern *p = cur.p;
    uint32_t w = p->width;

    snprintf(cur.what, sizeof cur.what, "%s %s", pattern_names[p->kind],
             variant);
    cur.epoch++;
    for (uint32_t t = 0; t < cur.steps; t++)
        for (uint32_t i = 0; i < w; i++) {
            const task *tk = &p->tasks[(size_t)t * w + i];
            cell *c = &cur.expect[(size_t)t * w + i];

            c->key = key_of(cur.epoch, t, i);
            c->sum = c->key;
            for (uint32_t d = 0; d < tk->ndeps; d++)
                c->sum = mix(c->sum ^
                             cur.expect[(size_t)(t - 1) * w + tk->deps[d]].key);
            c->sum = mix(c->sum ^ cur.result_bits);
        }
}

static void fail_once(void)
{
    static int failed;

    if (__atomic_exchange_n(&failed, 1, __ATOMIC_ACQ_REL))
        for (;;)
            pause(); /* the first failure ends the process */
    fflush(stdout);
}

static _Noreturn void input_failed(const task *tk, uint32_t dep,
                                   const cell *got, const cell *want)
{
    fail_once();
    fprintf(stderr,
            "metg: %s: validation failed: task (step %u, point %u) read the "
            "output of (step %u, point %u) as {%016llx, %016llx}, want "
            "{%016llx, %016llx}\n",
            cur.what, tk->t, tk->i, tk->t - 1, dep,
            (unsigned long long)got->key, (unsigned long long)got->sum,
            (unsigned long long)want->key, (unsigned long long)want->sum);
    _exit(1);
}

/* Every task, whatever runs it: check the inputs, compute, write. */
static void task_run(const task *tk, cell *out, const cell *const *in)
{
    uint32_t w = cur.p->width;
    const cell *want = &cur.expect[(size_t)tk->t * w + tk->i];
    uint64_t sum = want->key;
    uint64_t t0 = cur.probe ? bench_now_ns() : 0;
    double r;

    for (uint32_t d = 0; d < tk->ndeps; d++) {
        const cell *e = &cur.expect[(size_t)(tk->t - 1) * w + tk->deps[d]];

        if (in[d]->key != e->key || in[d]->sum != e->sum)
            input_failed(tk, tk->deps[d], in[d], e);
        sum = mix(sum ^ in[d]->key);
    }
    r = kernel(cur.iters);
    out->key = want->key;
    out->sum = mix(sum ^ double_bits(r));
    if ((int)tk->t == cur.corrupt_step && tk->i == 0)
        out->sum ^= 1;
    struct mark *m = &cur.marks[(size_t)tk->t * w + tk->i];

    m->epoch = cur.epoch;
    if (cur.probe) {
        m->started = t0;
        m->ended = bench_now_ns();
    }
}

/*
 * The tasks the last launch ran at once, on average, from its first task's
 * start to its last task's end: the runtime's parallelism, which other work
 * on the machine does not lower (a task that waits for a core is still
 * running). 0 without probe.
 */
static double tasks_in_flight(void)
{
    size_t n = (size_t)cur.steps * cur.p->width;
    uint64_t lo = UINT64_MAX, hi = 0;
    double sum = 0;

    if (!cur.probe)
        return 0;
    for (size_t k = 0; k < n; k++) {
        const struct mark *m = &cur.marks[k];

        sum += (double)(m->ended - m->started);
        lo = m->started < lo ? m->started : lo;
        hi = m->ended > hi ? m->ended : hi;
    }
    return hi > lo ? sum / (double)(hi - lo) : 0;
}

/*
 * After a launch: every task ran in it, and the cells the ring still
 * holds (cells at base + (t % depth * width + i) * STRIDE) are this
 * launch's; cells is NULL to check the marks only.
 */
static void launch_check(const unsigned char *cells)
{
    const pattern *p = cur.p;
    uint32_t w = p->width;
    uint32_t first = cur.steps > p->depth ? cur.steps - p->depth : 0;

    for (uint32_t i = 0; i < w; i++)
        for (uint32_t t = 0; t < cur.steps; t++)
            if (cur.marks[(size_t)t * w + i].epoch != cur.epoch) {
                fail_once();
                fprintf(stderr,
                        "metg: %s: validation failed: task (step %u, point "
                        "%u) did not run\n",
                        cur.what, t, i);
                _exit(1);
            }
    for (uint32_t t = first; cells && t < cur.steps; t++)
        for (uint32_t i = 0; i < w; i++) {
            const cell *got =
                (const cell *)(cells +
                               ((size_t)(t % p->depth) * w + i) * STRIDE);
            const cell *e = &cur.expect[(size_t)t * w + i];

            if (got->key != e->key || got->sum != e->sum) {
                fail_once();
                fprintf(stderr,
                        "metg: %s: validation failed: task (step %u, point "
                        "%u) wrote {%016llx, %016llx}, want {%016llx, "
                        "%016llx}\n",
                        cur.what, t, i, (unsigned long long)got->key,
                        (unsigned long long)got->sum,
                        (unsigned long long)e->key, (unsigned long long)e->sum);
                _exit(1);
            }
        }
}

/* ---- peak -------------------------------------------------------------- */

/*
 * A start for threads that the clock can trust: each counts itself in,
 * then waits for go; the main thread reads the clock once all are in, then
 * sets go. (Read after a barrier, the clock could start late: with as
 * many threads as cores, the main thread may get its core back only after
 * the others have run for a while.)
 */
static double cpu_now(void);

typedef struct gate {
    _Alignas(64) unsigned in;
    _Alignas(64) int go;
} gate;

static void gate_wait(gate *g)
{
    __atomic_fetch_add(&g->in, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&g->go, __ATOMIC_ACQUIRE))
        sched_yield();
}

/*
 * Once n threads are in: the clock (and with cpu, the process's CPU time,
 * so that the threads' wait to start is not counted), then go.
 */
static uint64_t gate_open(gate *g, unsigned n, double *cpu)
{
    uint64_t t0;

    while (__atomic_load_n(&g->in, __ATOMIC_ACQUIRE) < n)
        sched_yield();
    if (cpu)
        *cpu = cpu_now();
    t0 = bench_now_ns();
    __atomic_store_n(&g->go, 1, __ATOMIC_RELEASE);
    return t0;
}

typedef struct peak_thread {
    pthread_t thread;
    gate *start;
    long iters;
    double result;
} peak_thread;

static void *peak_main(void *arg)
{
    peak_thread *pt = arg;

    gate_wait(pt->start);
    pt->result = kernel(pt->iters);
    return NULL;
}

/* FLOP/s of the kernel on one plain thread per core: the best of reps. */
static double peak_measure(unsigned cores, long iters, int reps)
{
    peak_thread *pt = calloc(cores, sizeof *pt);
    gate start;
    double best = 0;

    if (!pt)
        bench_die("out of memory");
    for (int r = 0; r < reps; r++) {
        uint64_t t0;
        double rate;

        memset(&start, 0, sizeof start);
        for (unsigned c = 0; c < cores; c++) {
            pt[c].start = &start;
            pt[c].iters = iters;
            if (pthread_create(&pt[c].thread, NULL, peak_main, &pt[c]))
                bench_die("pthread_create failed");
        }
        t0 = gate_open(&start, cores, NULL);
        for (unsigned c = 0; c < cores; c++)
            if (pthread_join(pt[c].thread, NULL))
                bench_die("pthread_join failed");
        rate = (double)cores * (double)iters * flops_per_iter /
               ((double)(bench_now_ns() - t0) / 1e9);
        for (unsigned c = 0; c < cores; c++)
            if (pt[c].result != pt[0].result)
                bench_die("the kernel gave two results for one length");
        if (rate > best)
            best = rate;
    }
    free(pt);
    return best;
}

/* ---- weft -------------------------------------------------------------- */

typedef struct weft_side {
    weft_runtime *rt;
    const weft_device *host;
    weft_module *mod;
    weft_kernel *kern[MAXDEPS + 1]; /* by number of inputs */
    /* the current pattern's cells: one buffer, a view per ring slot */
    weft_buffer *buf;
    weft_buffer **rows; /* [depth] */
    uint32_t nrows;
    unsigned char *readback; /* depth x width x STRIDE */
} weft_side;

static void weft_task_fn(void *const *ptrs, void *user)
{
    task_run(user, ptrs[0], (const cell *const *)(ptrs + 1));
}

/* args: the task (bytes), its cell, its inputs' cells. */
static void weft_kernel_fn(const weft_host_group *g, void *const *args)
{
    task tk;

    (void)g;
    memcpy(&tk, args[0], sizeof tk);
    task_run(&tk, args[1], (const cell *const *)(args + 2));
}

static const weft_param_type kparams[2 + MAXDEPS] = {
    WEFT_PARAM_BYTES,  WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER,
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER,
};
static const size_t ksizes[2 + MAXDEPS] = {sizeof(task)};
static const weft_host_kernel host_kernels[MAXDEPS + 1] = {
    {"task0", weft_kernel_fn, 2, kparams, ksizes, NULL, NULL},
    {"task1", weft_kernel_fn, 3, kparams, ksizes, NULL, NULL},
    {"task2", weft_kernel_fn, 4, kparams, ksizes, NULL, NULL},
    {"task3", weft_kernel_fn, 5, kparams, ksizes, NULL, NULL},
    {"task4", weft_kernel_fn, 6, kparams, ksizes, NULL, NULL},
    {"task5", weft_kernel_fn, 7, kparams, ksizes, NULL, NULL},
};

static void weft_open(weft_side *ws)
{
    weft_runtime_options opts = WEFT_RUNTIME_OPTIONS_INIT;
    const weft_module_source src = {WEFT_SOURCE_HOST, host_kernels, MAXDEPS + 1,
                                    NULL, "metg"};
    weft_device_info info;

    memset(ws, 0, sizeof *ws);
    opts.devices = "host"; /* WEFT_DEVICES overrides */
    bench_check(weft_runtime_create(&ws->rt, &opts));
    for (unsigned d = 0; d < weft_runtime_device_count(ws->rt) && !ws->host;
         d++) {
        memset(&info, 0, sizeof info);
        info.size = sizeof info;
        bench_check(
            weft_device_get_info(weft_runtime_device(ws->rt, d), &info));
        if (strcmp(info.driver, "host") == 0)
            ws->host = weft_runtime_device(ws->rt, d);
    }
    if (!ws->host)
        bench_die("no host device (WEFT_DEVICES must include host)");
    if (info.arg_offset_align > STRIDE)
        bench_die("the host device aligns arguments to %u bytes, more than %d",
                  info.arg_offset_align, STRIDE);
    bench_check(weft_module_create(ws->rt, &src, 1, &ws->mod));
    for (int k = 0; k <= MAXDEPS; k++)
        bench_check(weft_module_get_kernel(ws->mod, host_kernels[k].name,
                                           &ws->kern[k]));
}

/* The cells of pattern p: one buffer, zeroed, a view per ring slot. */
static void weft_cells(weft_side *ws, const pattern *p)
{
    size_t row = (size_t)p->width * STRIDE;
    uint32_t zero = 0;

    bench_check(weft_buffer_create(ws->rt, row * p->depth, &ws->buf));
    bench_check(weft_buffer_fill(ws->buf, 0, row * p->depth, &zero, 4));
    ws->nrows = p->depth;
    ws->rows = calloc(p->depth, sizeof *ws->rows);
    ws->readback = malloc(row * p->depth);
    if (!ws->rows || !ws->readback)
        bench_die("out of memory");
    for (uint32_t s = 0; s < p->depth; s++)
        bench_check(weft_buffer_view(ws->buf, s * row, row, &ws->rows[s]));
}

static void weft_cells_free(weft_side *ws)
{
    for (uint32_t s = 0; s < ws->nrows; s++)
        bench_check(weft_buffer_destroy(ws->rows[s]));
    bench_check(weft_buffer_destroy(ws->buf));
    free(ws->rows);
    free(ws->readback);
    ws->rows = NULL;
    ws->readback = NULL;
    ws->buf = NULL;
    ws->nrows = 0;
}

/* steps x width nodes: host tasks, or kernel nodes if kernels. */
static weft_graph *weft_build(weft_side *ws, const pattern *p, uint32_t steps,
                              int kernels)
{
    weft_graph *g;

    bench_check(weft_graph_create(ws->rt, &g));
    for (uint32_t t = 0; t < steps; t++)
        for (uint32_t i = 0; i < p->width; i++) {
            const task *tk = &p->tasks[(size_t)t * p->width + i];
            weft_buffer *out = ws->rows[t % p->depth];
            weft_buffer *in = ws->rows[(t + p->depth - 1) % p->depth];

            if (kernels) {
                weft_arg a[2 + MAXDEPS];

                a[0] = weft_arg_bytes(tk, sizeof *tk);
                a[1] = weft_arg_buffer(out, (size_t)i * STRIDE, sizeof(cell),
                                       WEFT_WRITE);
                for (uint32_t d = 0; d < tk->ndeps; d++)
                    a[2 + d] = weft_arg_buffer(in, (size_t)tk->deps[d] * STRIDE,
                                               sizeof(cell), WEFT_READ);
                bench_check(weft_graph_add_kernel(g, ws->kern[tk->ndeps],
                                                  weft_dims1(1), a,
                                                  2 + tk->ndeps, NULL));
            } else {
                weft_access_desc acc[1 + MAXDEPS];

                acc[0] = weft_access_range(out, (size_t)i * STRIDE,
                                           sizeof(cell), WEFT_WRITE);
                for (uint32_t d = 0; d < tk->ndeps; d++)
                    acc[1 + d] =
                        weft_access_range(in, (size_t)tk->deps[d] * STRIDE,
                                          sizeof(cell), WEFT_READ);
                bench_check(weft_graph_add_host(g, weft_task_fn, (void *)tk,
                                                acc, 1 + tk->ndeps, NULL));
            }
        }
    return g;
}

/*
 * A launch's wall time, the CPU time of every thread of the process, and
 * the tasks it ran at once on average (with probe).
 */
typedef struct span {
    double wall, cpu; /* seconds */
    double in_flight;
    double setup; /* of wall: the instantiate's (first launches) */
    /* With probe: hand-off latency (median, 90th and 99th percentiles,
     * mean) and mean task time, us (tasks_latency). */
    double lat50, lat90, lat99, lat_mean, task_us;
} span;

static double cpu_now(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static span span_start(void)
{
    span s = {.wall = (double)bench_now_ns() / 1e9, .cpu = cpu_now()};

    return s;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/*
 * With probe: over the tasks of steps 1 on, the time from the end of the
 * last task it must follow (its inputs' writers, and the readers of the
 * cell it overwrites, whose order the ring makes as real as the inputs')
 * to its start (the hand-off: what the runtime took to see it ready and
 * start it), its median, 90th and 99th
 * percentiles and mean, and the mean task time, into s (us).
 */
static void tasks_latency(span *s)
{
    const pattern *p = cur.p;
    uint32_t w = p->width;
    size_t n = 0, all = (size_t)cur.steps * w;
    int64_t *lat;
    double busy = 0, sum = 0;

    if (!cur.probe || cur.steps < 2)
        return;
    lat = malloc(all * sizeof *lat);
    if (!lat)
        bench_die("out of memory");
    for (size_t k = 0; k < all; k++)
        busy += (double)(cur.marks[k].ended - cur.marks[k].started);
    for (uint32_t t = 1; t < cur.steps; t++)
        for (uint32_t i = 0; i < w; i++) {
            const task *tk = &p->tasks[(size_t)t * w + i];
            uint64_t ready = 0;

            if (!tk->ndeps)
                continue;
            for (uint32_t d = 0; d < tk->ndeps; d++) {
                uint64_t e = cur.marks[(size_t)(t - 1) * w + tk->deps[d]].ended;

                ready = e > ready ? e : ready;
            }
            /* The cell it overwrites, a ring's turn ago: its writer and
             * its readers. */
            if (p->kind != TRIVIAL && t >= p->depth) {
                size_t c = (size_t)(t - p->depth) * w + i;
                uint64_t e = cur.marks[c].ended;

                ready = e > ready ? e : ready;
                for (uint32_t k = p->rd_first[c]; k < p->rd_first[c + 1]; k++) {
                    e = cur.marks[(size_t)(t - p->depth + 1) * w +
                                  p->readers[k]]
                            .ended;
                    ready = e > ready ? e : ready;
                }
            }
            /* The static threads run a point's tasks in order. */
            if (cur.own_order) {
                uint64_t e = cur.marks[(size_t)(t - 1) * w + i].ended;

                ready = e > ready ? e : ready;
            }
            lat[n] = (int64_t)(cur.marks[(size_t)t * w + i].started - ready);
            sum += (double)lat[n++];
        }
    s->task_us = busy / (double)all / 1e3;
    if (n) {
        qsort(lat, n, sizeof *lat, cmp_i64);
        s->lat50 = (double)lat[n / 2] / 1e3;
        s->lat90 = (double)lat[n * 9 / 10] / 1e3;
        s->lat99 = (double)lat[n * 99 / 100] / 1e3;
        s->lat_mean = sum / (double)n / 1e3;
    }
    free(lat);
}

static span span_since(span s0)
{
    span s = {.wall = (double)bench_now_ns() / 1e9 - s0.wall,
              .cpu = cpu_now() - s0.cpu};

    s.in_flight = tasks_in_flight();
    tasks_latency(&s);

    return s;
}

static void launch_wait(weft_exec *e)
{
    bench_check(weft_exec_launch(e));
    bench_check(weft_exec_wait(e));
}

/* The last launch's cells, read back (which may move bytes: untimed). */
static void weft_check_cells(weft_side *ws, const pattern *p)
{
    bench_check(weft_buffer_read(ws->buf, 0, ws->readback,
                                 (size_t)p->width * STRIDE * p->depth));
    launch_check(ws->readback);
}

/*
 * Host tasks: reps times, instantiate + first launch (first[r]), then a
 * relaunch (again[r]); seconds.
 */
static void weft_tasks(weft_side *ws, weft_graph *g, int reps, span *first,
                       span *again)
{
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;

    o.device = ws->host;
    for (int r = 0; r < reps; r++) {
        weft_exec *e;
        span s0;
        double t1;

        launch_prepare("weft first launch");
        s0 = span_start();
        bench_check(weft_graph_instantiate(g, &o, &e));
        t1 = (double)bench_now_ns() / 1e9;
        launch_wait(e);
        first[r] = span_since(s0);
        first[r].setup = t1 - s0.wall;
        launch_check(NULL);
        if (again) {
            launch_prepare("weft relaunch");
            s0 = span_start();
            launch_wait(e);
            again[r] = span_since(s0);
            launch_check(NULL);
        }
        weft_check_cells(ws, cur.p);
        bench_check(weft_exec_destroy(e));
    }
}

/* Kernel nodes: a first launch, untimed, then reps relaunches. */
static void weft_kernels(weft_side *ws, weft_graph *g, int reps, span *again)
{
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    weft_exec *e;

    o.device = ws->host;
    bench_check(weft_graph_instantiate(g, &o, &e));
    launch_prepare("weft kernels first launch");
    launch_wait(e);
    launch_check(NULL);
    for (int r = 0; r < reps; r++) {
        span s0;

        launch_prepare("weft kernels relaunch");
        s0 = span_start();
        launch_wait(e);
        again[r] = span_since(s0);
        launch_check(NULL);
    }
    weft_check_cells(ws, cur.p);
    /* Relaunches that did not run as a host native graph are op by op,
     * through the device's queues: say so, they are slower. */
    weft_exec_stats st = {.size = sizeof st};
    bench_check(weft_exec_get_stats(e, &st));
    if (st.native_launches < (uint64_t)reps)
        bench_note("%s: %llu of %llu launches ran as a native graph", cur.what,
                   (unsigned long long)st.native_launches,
                   (unsigned long long)st.launches);
    bench_check(weft_exec_destroy(e));
}

/* ---- the OpenMP and static threads' cells ------------------------------ */

/* The current pattern's cells: depth x width x STRIDE. */
static unsigned char *ring;

static cell *ring_cell(const pattern *p, uint32_t t, uint32_t i)
{
    return (cell *)(ring + ((size_t)(t % p->depth) * p->width + i) * STRIDE);
}

/* ---- static threads ---------------------------------------------------- */

/*
 * The pattern on this machine with no runtime: one plain thread
 * per point runs that point's tasks step after step, each once its inputs'
 * writers and its old cell's readers (the ring's earlier step) have raised
 * their flags; it spins on them (then yields, where points outnumber
 * cores). A static schedule with hand-offs of one cache line: what a
 * pattern of this width reaches when every task starts the moment its
 * inputs are done, with no runtime in between, while the machine's other
 * work delays some of them. A reference, not a bound: a runtime that moves
 * work off a slow core can do better (trivial's tasks, for one).
 */
static struct thr_flag *thr_done; /* [width]: steps of the point done */
static gate thr_start;

struct thr_flag {
    _Alignas(64) uint32_t steps;
};

static void thr_wait(uint32_t point, uint32_t steps)
{
    for (unsigned spins = 0;
         __atomic_load_n(&thr_done[point].steps, __ATOMIC_ACQUIRE) < steps;
         spins++)
        if (spins >= 4096)
            sched_yield();
#if defined(__x86_64__) || defined(__i386__)
        else
            __builtin_ia32_pause();
#endif
}

static void *thr_main(void *arg)
{
    const pattern *p = cur.p;
    uint32_t i = (uint32_t)(uintptr_t)arg, w = p->width;

    gate_wait(&thr_start);
    for (uint32_t t = 0; t < cur.steps; t++) {
        const task *tk = &p->tasks[(size_t)t * w + i];
        const cell *in[MAXDEPS];

        for (uint32_t d = 0; d < tk->ndeps; d++) {
            thr_wait(tk->deps[d], t);
            in[d] = ring_cell(p, t - 1, tk->deps[d]);
        }
        /* The cell this task overwrites was read by step t - depth + 1. */
        if (p->kind != TRIVIAL && t >= p->depth) {
            size_t c = (size_t)(t - p->depth) * w + i;

            for (uint32_t k = p->rd_first[c]; k < p->rd_first[c + 1]; k++)
                thr_wait(p->readers[k], t - p->depth + 2);
        }
        task_run(tk, ring_cell(p, t, i), in);
        __atomic_store_n(&thr_done[i].steps, t + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void thr_run(int reps, span *wall)
{
    const pattern *p = cur.p;
    pthread_t *th = malloc(p->width * sizeof *th);

    if (!th)
        bench_die("out of memory");
    cur.own_order = 1;
    for (int r = 0; r < reps; r++) {
        span s0 = {0};

        launch_prepare("static threads");
        for (uint32_t i = 0; i < p->width; i++)
            thr_done[i].steps = 0;
        memset(&thr_start, 0, sizeof thr_start);
        for (uint32_t i = 0; i < p->width; i++)
            if (pthread_create(&th[i], NULL, thr_main, (void *)(uintptr_t)i))
                bench_die("pthread_create failed");
        s0.wall = (double)gate_open(&thr_start, p->width, &s0.cpu) / 1e9;
        for (uint32_t i = 0; i < p->width; i++)
            if (pthread_join(th[i], NULL))
                bench_die("pthread_join failed");
        wall[r] = span_since(s0);
        launch_check(ring);
    }
    cur.own_order = 0;
    free(th);
}

/* ---- OpenMP ------------------------------------------------------------ */

#ifdef _OPENMP
static void omp_task_body(const pattern *p, const task *tk)
{
    const cell *in[MAXDEPS];

    for (uint32_t d = 0; d < tk->ndeps; d++)
        in[d] = ring_cell(p, tk->t - 1, tk->deps[d]);
    task_run(tk, ring_cell(p, tk->t, tk->i), in);
}

/* One launch: every task of cur's steps, in one parallel region. */
static void omp_launch(void)
{
    const pattern *p = cur.p;
    uint32_t steps = cur.steps;

#pragma omp parallel
#pragma omp single
    for (uint32_t t = 0; t < steps; t++)
        for (uint32_t i = 0; i < p->width; i++) {
            const task *tk = &p->tasks[(size_t)t * p->width + i];
            cell *o = ring_cell(p, t, i);
            const cell *a, *b, *c, *d, *e;

            switch (tk->ndeps) {
            case 0:
#pragma omp task firstprivate(tk) depend(out : *o)
                omp_task_body(p, tk);
                break;
            case 1:
                a = ring_cell(p, t - 1, tk->deps[0]);
#pragma omp task firstprivate(tk) depend(in : *a) depend(out : *o)
                omp_task_body(p, tk);
                break;
            case 2:
                a = ring_cell(p, t - 1, tk->deps[0]);
                b = ring_cell(p, t - 1, tk->deps[1]);
#pragma omp task firstprivate(tk) depend(in : *a, *b) depend(out : *o)
                omp_task_body(p, tk);
                break;
            case 3:
                a = ring_cell(p, t - 1, tk->deps[0]);
                b = ring_cell(p, t - 1, tk->deps[1]);
                c = ring_cell(p, t - 1, tk->deps[2]);
#pragma omp task firstprivate(tk) depend(in : *a, *b, *c) depend(out : *o)
                omp_task_body(p, tk);
                break;
            case 4:
                a = ring_cell(p, t - 1, tk->deps[0]);
                b = ring_cell(p, t - 1, tk->deps[1]);
                c = ring_cell(p, t - 1, tk->deps[2]);
                d = ring_cell(p, t - 1, tk->deps[3]);
#pragma omp task firstprivate(tk) depend(in : *a, *b, *c, *d) depend(out : *o)
                omp_task_body(p, tk);
                break;
            default:
                a = ring_cell(p, t - 1, tk->deps[0]);
                b = ring_cell(p, t - 1, tk->deps[1]);
                c = ring_cell(p, t - 1, tk->deps[2]);
                d = ring_cell(p, t - 1, tk->deps[3]);
                e = ring_cell(p, t - 1, tk->deps[4]);
#pragma omp task firstprivate(tk) depend(in                                    \
                                         : *a, *b, *c, *d, *e) depend(out      \
                                                                      : *o)
                omp_task_body(p, tk);
                break;
            }
        }
}

static void omp_run(int reps, span *wall)
{
    for (int r = 0; r < reps; r++) {
        span s0;

        launch_prepare("openmp");
        s0 = span_start();
        omp_launch();
        wall[r] = span_since(s0);
        launch_check(ring);
    }
}
#endif

/* ---- StarPU ------------------------------------------------------------ */

#ifdef METG_STARPU
_Static_assert(1 + MAXDEPS <= STARPU_NMAXBUFS,
               "a task's cells must fit in starpu_task.handles");

/*
 * The current pattern's cells, laid out as ring's, each registered as
 * a StarPU variable at its home in main memory: with CPU workers only,
 * StarPU never copies one, and after starpu_task_wait_for_all every cell
 * is valid in place.
 */
static unsigned char *sp_ring;         /* depth x width x STRIDE */
static starpu_data_handle_t *sp_cells; /* [depth][width] */
static size_t sp_ncells;
/* By number of inputs: STARPU_W on the task's cell, STARPU_R on each input. */
static struct starpu_codelet sp_codelets[MAXDEPS + 1];

static void sp_task_fn(void *buffers[], void *arg)
{
    const task *tk = arg;
    const cell *in[MAXDEPS];

    for (uint32_t d = 0; d < tk->ndeps; d++)
        in[d] = (const cell *)STARPU_VARIABLE_GET_PTR(buffers[1 + d]);
    task_run(tk, (cell *)STARPU_VARIABLE_GET_PTR(buffers[0]), in);
}

/*
 * StarPU with ncpus CPU workers and no accelerator (none is probed), its
 * workers paused. Says which StarPU, scheduler and workers ran.
 */
static void sp_open(unsigned ncpus)
{
    struct starpu_conf conf;
    int major, minor, release, rc, pci_off;
    const struct starpu_sched_policy *policy;

    starpu_conf_init(&conf);
    conf.ncpus = ncpus > STARPU_MAXCPUS ? STARPU_MAXCPUS : (int)ncpus;
    conf.ncuda = 0;
    conf.nopencl = 0;
    conf.nmic = 0;
    conf.nmpi_ms = 0;
    conf.catch_signals = 0; /* a failure ends the bench as in any variant */
    /*
     * StarPU's topology asks hwloc for PCI devices, to place accelerators
     * that it does not drive here; hwloc's PCI discovery (libpciaccess)
     * leaves allocations behind that LeakSanitizer reports. It is left out
     * unless the user has set HWLOC_COMPONENTS, which hwloc reads at each
     * topology load: weft's own loads are not affected.
     */
    pci_off = !getenv("HWLOC_COMPONENTS") &&
              setenv("HWLOC_COMPONENTS", "-pci", 0) == 0;
    rc = starpu_init(&conf);
    if (pci_off)
        unsetenv("HWLOC_COMPONENTS");
    if (rc)
        bench_die("starpu_init failed: %s", strerror(-rc));
    for (int k = 0; k <= MAXDEPS; k++) {
        struct starpu_codelet *cl = &sp_codelets[k];

        starpu_codelet_init(cl);
        cl->where = STARPU_CPU;
        cl->cpu_funcs[0] = sp_task_fn;
        cl->nbuffers = 1 + k;
        cl->modes[0] = STARPU_W;
        for (int d = 1; d <= k; d++)
            cl->modes[d] = STARPU_R;
        cl->name = "metg_task";
    }
    starpu_get_version(&major, &minor, &release);
    /* context 0: the one starpu_init made */
    policy = starpu_sched_ctx_get_sched_policy(0);
    bench_note("starpu %d.%d.%d: %u CPU workers, scheduler %s", major, minor,
               release, starpu_cpu_worker_get_count(),
               policy && policy->policy_name ? policy->policy_name : "?");
    if (starpu_cpu_worker_get_count() != ncpus)
        bench_note("starpu: %u CPU workers for %u cores (STARPU_NCPU, or this "
                   "StarPU's STARPU_MAXCPUS %d)",
                   starpu_cpu_worker_get_count(), ncpus, STARPU_MAXCPUS);
    starpu_pause();
}

static void sp_close(void)
{
    starpu_resume();
    starpu_shutdown();
}

static starpu_data_handle_t sp_cell(const pattern *p, uint32_t t, uint32_t i)
{
    return sp_cells[(size_t)(t % p->depth) * p->width + i];
}

/* The cells of pattern p, zeroed, each registered. */
static void sp_cells_make(const pattern *p)
{
    sp_ncells = (size_t)p->depth * p->width;
    sp_ring = aligned_alloc(STRIDE, sp_ncells * STRIDE);
    sp_cells = calloc(sp_ncells, sizeof *sp_cells);
    if (!sp_ring || !sp_cells)
        bench_die("out of memory");
    memset(sp_ring, 0, sp_ncells * STRIDE);
    for (size_t k = 0; k < sp_ncells; k++)
        starpu_variable_data_register(&sp_cells[k], STARPU_MAIN_RAM,
                                      (uintptr_t)(sp_ring + k * STRIDE),
                                      sizeof(cell));
}

static void sp_cells_free(void)
{
    for (size_t k = 0; k < sp_ncells; k++)
        starpu_data_unregister(sp_cells[k]);
    free(sp_cells);
    free(sp_ring);
    sp_cells = NULL;
    sp_ring = NULL;
    sp_ncells = 0;
}

/* One launch: a task per point of cur's steps, submitted, then waited for. */
static void sp_launch(void)
{
    const pattern *p = cur.p;
    int rc;

    for (uint32_t t = 0; t < cur.steps; t++)
        for (uint32_t i = 0; i < p->width; i++) {
            const task *tk = &p->tasks[(size_t)t * p->width + i];
            struct starpu_task *st = starpu_task_create();

            if (!st)
                bench_die("starpu_task_create failed");
            st->cl = &sp_codelets[tk->ndeps];
            st->cl_arg = (void *)tk; /* CPU workers get it as it is */
            st->cl_arg_size = sizeof *tk;
            st->handles[0] = sp_cell(p, t, i);
            for (uint32_t d = 0; d < tk->ndeps; d++)
                st->handles[1 + d] = sp_cell(p, t - 1, tk->deps[d]);
            rc = starpu_task_submit(st);
            if (rc)
                bench_die("starpu_task_submit failed: %s", strerror(-rc));
        }
    rc = starpu_task_wait_for_all();
    if (rc)
        bench_die("starpu_task_wait_for_all failed: %s", strerror(-rc));
}

/* The cells, read as StarPU lets the program read registered data. */
static void sp_check_cells(void)
{
    for (size_t k = 0; k < sp_ncells; k++)
        if (starpu_data_acquire(sp_cells[k], STARPU_R))
            bench_die("starpu_data_acquire failed");
    launch_check(sp_ring);
    for (size_t k = 0; k < sp_ncells; k++)
        starpu_data_release(sp_cells[k]);
}

static void sp_run(int reps, span *wall)
{
    starpu_resume();
    for (int r = 0; r < reps; r++) {
        span s0;

        launch_prepare("starpu");
        s0 = span_start();
        sp_launch();
        wall[r] = span_since(s0);
        sp_check_cells();
    }
    starpu_pause();
}
#endif

/* ---- the sweep --------------------------------------------------------- */

typedef enum variant {
    V_FIRST,
    V_BUILD,
    V_RELAUNCH,
    V_KERNELS,
    V_OPENMP,
    V_STARPU,
    V_THREADS,
    NVARIANTS
} variant;
static const char *const variant_words[NVARIANTS] = {
    "first", "build", "relaunch", "kernels", "openmp", "starpu", "threads"};
static const char *const variant_names[NVARIANTS] = {
    "weft first launch",
    "weft build + first launch",
    "weft relaunch",
    "weft kernels relaunch",
    "openmp",
    "starpu",
    "static threads"};

/* One sweep point: what every variant's best launch took. */
typedef struct sweep_point {
    double g_us; /* the nominal task length */
    uint32_t steps;
    long iters;
    double build_ms;      /* the host tasks' graph built (not timed in first) */
    double build_cpu;     /* seconds of the process's CPU time meanwhile */
    span best[NVARIANTS]; /* the launch of least wall time */
} sweep_point;

/* A point's figures for one variant. */
typedef struct point {
    double gran_us; /* wall x cores / tasks */
    double eff;     /* FLOP/s over peak */
} point;

typedef struct sweep {
    uint32_t width, steps;
    int reps;
    double min_us, max_us;
    int variants;
    int npts[NPATTERNS];
    sweep_point pts[NPATTERNS][MAXPOINTS];
} sweep;

static unsigned cores;
static double peak_flops, ns_per_iter;
static int latency;     /* --latency: probe every sweep point */
static long peak_iters; /* per thread, for about 0.3 s (--quick: 0.05 s) */

/*
 * The peak is measured before each pattern (reps 3) and each sweep point
 * (reps 1, a third as long), and the best kept: on a machine shared with
 * other work the capacity is what the best measurement saw.
 */
static void peak_sample(long iters, int reps)
{
    double peak = peak_measure(cores, iters, reps);

    if (peak > peak_flops)
        peak_flops = peak;
}

static span best_of(const span *v, int n)
{
    span b = v[0];

    for (int k = 1; k < n; k++)
        if (v[k].wall < b.wall)
            b = v[k];
    return b;
}

/*
 * The build variant: the best first launch with the graph's build before
 * it (one build a point: the program's calls, on its thread, with no task
 * running meanwhile), as a program that builds a graph and launches it
 * once pays, and as OpenMP's figure includes making its tasks.
 */
static span built_of(const sweep_point *sp)
{
    span b = sp->best[V_FIRST];
    double build = sp->build_ms / 1e3;

    b.in_flight *= b.wall / (b.wall + build);
    b.wall += build;
    b.cpu += sp->build_cpu;
    b.setup = 0;
    b.task_us = 0; /* (the first launch's hand-offs: said once) */
    return b;
}

static point point_of(const sweep *sw, const sweep_point *sp, variant v)
{
    double tasks = (double)sp->steps * sw->width;
    point pt;

    pt.gran_us = sp->best[v].wall * 1e6 * cores / tasks;
    pt.eff = tasks * (double)sp->iters * flops_per_iter / sp->best[v].wall /
             peak_flops;
    return pt;
}

/*
 * METG(50%): down the sweep (largest tasks first), the last point at or
 * above 50% and the one after it bound the crossing; between them
 * efficiency is taken as linear in log(granularity). Other work on the
 * machine can only lower a point, so a point below 50% above that one is
 * a disturbance, not the crossing: *dips counts them (the caller says
 * so). *unit says when no point bounds it from below or above.
 */
static double metg_of(const point *pts, int n, const char **unit, int *dips)
{
    int last = -1;

    *unit = "us";
    *dips = 0;
    for (int k = 0; k < n; k++)
        if (pts[k].eff >= 0.5)
            last = k;
    for (int k = 0; k < last; k++)
        *dips += pts[k].eff < 0.5;
    if (last < 0) {
        *unit = "us (never 50%)";
        return pts[0].gran_us;
    }
    if (last == n - 1) {
        *unit = "us (upper bound)";
        return pts[n - 1].gran_us;
    }
    {
        const point *a = &pts[last], *b = &pts[last + 1];
        double f = (a->eff - 0.5) / (a->eff - b->eff);

        return exp(log(a->gran_us) + f * (log(b->gran_us) - log(a->gran_us)));
    }
}

/* "10ms", "625us" */
static void format_us(char *s, size_t n, double us)
{
    if (us >= 1000)
        snprintf(s, n, "%gms", us / 1000);
    else
        snprintf(s, n, "%gus", us);
}

/* Parses a comma-separated list of words into a mask; -1 if one is bad. */
static int parse_words(const char *list, const char *const *words, int n)
{
    int mask = 0;

    while (*list) {
        size_t len = strcspn(list, ",");
        int k;

        for (k = 0; k < n; k++)
            if (strlen(words[k]) == len && strncmp(list, words[k], len) == 0)
                break;
        if (k == n)
            return -1;
        mask |= 1 << k;
        list += len + (list[len] == ',');
    }
    return mask;
}

/* Every sweep point of one pattern, each variant's best launch. */
static void sweep_pattern(weft_side *ws, sweep *sw, pattern_kind kind)
{
    pattern p;
    span first[MAXREPS], again[MAXREPS];
    int want_tasks =
        sw->variants & (1 << V_FIRST | 1 << V_BUILD | 1 << V_RELAUNCH);
    char at[32], progress[64];
    int npts = 0;

    pattern_make(&p, kind, sw->width, sw->steps);
    cur.p = &p;
    cur.expect = calloc((size_t)p.steps * p.width, sizeof *cur.expect);
    cur.marks =
        aligned_alloc(64, (size_t)p.steps * p.width * sizeof *cur.marks);
    if (cur.marks)
        memset(cur.marks, 0, (size_t)p.steps * p.width * sizeof *cur.marks);
    if (!cur.expect || !cur.marks)
        bench_die("out of memory");
    weft_cells(ws, &p);
    ring = aligned_alloc(STRIDE, (size_t)p.depth * p.width * STRIDE);
    if (!ring)
        bench_die("out of memory");
    memset(ring, 0, (size_t)p.depth * p.width * STRIDE);
#ifdef METG_STARPU
    if (sw->variants & 1 << V_STARPU)
        sp_cells_make(&p);
#endif
    thr_done = aligned_alloc(64, (size_t)p.width * sizeof *thr_done);
    if (!thr_done)
        bench_die("out of memory");

    for (double g = sw->max_us; g >= sw->min_us * 0.999 && npts < MAXPOINTS;
         g /= 2, npts++) {
        sweep_point *sp = &sw->pts[kind][npts];
        double cut = launch_budget_us * cores / (g * sw->width);

        sp->g_us = g;
        sp->iters = lround(g * 1000 / ns_per_iter);
        if (sp->iters < 1)
            sp->iters = 1;
        sp->steps = cut < sw->steps ? (uint32_t)cut : sw->steps;
        if (sp->steps < MIN_STEPS)
            sp->steps = sw->steps < MIN_STEPS ? sw->steps : MIN_STEPS;
        peak_sample(peak_iters / 3, 1);
        cur.iters = sp->iters;
        cur.steps = sp->steps;
        cur.probe = npts == 0 || latency;
        cur.result_bits = double_bits(kernel(sp->iters));
        format_us(at, sizeof at, g);
        snprintf(progress, sizeof progress, "%s %s", pattern_names[kind], at);
        bench_progress(progress);
        if (want_tasks) {
            uint64_t t0 = bench_now_ns();
            double c0 = cpu_now();
            weft_graph *g0 = weft_build(ws, &p, sp->steps, 0);

            sp->build_ms = (double)(bench_now_ns() - t0) / 1e6;
            sp->build_cpu = cpu_now() - c0;
            weft_tasks(ws, g0, sw->reps, first,
                       sw->variants & 1 << V_RELAUNCH ? again : NULL);
            bench_check(weft_graph_destroy(g0));
            sp->best[V_FIRST] = best_of(first, sw->reps);
            sp->best[V_BUILD] = built_of(sp);
            if (sw->variants & 1 << V_RELAUNCH)
                sp->best[V_RELAUNCH] = best_of(again, sw->reps);
        }
        if (sw->variants & 1 << V_KERNELS) {
            weft_graph *g1 = weft_build(ws, &p, sp->steps, 1);

            weft_kernels(ws, g1, sw->reps, again);
            bench_check(weft_graph_destroy(g1));
            sp->best[V_KERNELS] = best_of(again, sw->reps);
        }
#ifdef _OPENMP
        if (sw->variants & 1 << V_OPENMP) {
            omp_run(sw->reps, again);
            sp->best[V_OPENMP] = best_of(again, sw->reps);
        }
#endif
#ifdef METG_STARPU
        if (sw->variants & 1 << V_STARPU) {
            sp_run(sw->reps, again);
            sp->best[V_STARPU] = best_of(again, sw->reps);
        }
#endif
        if (sw->variants & 1 << V_THREADS) {
            thr_run(sw->reps, again);
            sp->best[V_THREADS] = best_of(again, sw->reps);
        }
    }
    bench_progress("");
    sw->npts[kind] = npts;

    free(ring);
#ifdef METG_STARPU
    if (sw->variants & 1 << V_STARPU)
        sp_cells_free();
#endif
    free(thr_done);
    weft_cells_free(ws);
    free(cur.expect);
    free(cur.marks);
    free(p.tasks);
    free(p.rd_first);
    free(p.readers);
    cur.p = NULL;
}

/* Set when a launch beat the peak: the peak was measured while the
 * machine was busier than during that launch. */
static int above_peak;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/*
 * Variant v's efficiency over the static threads' at the same task size,
 * the median over the sizes of 1 ms and up (or the largest alone): how
 * near the runtime comes to a schedule with no runtime at large tasks, each
 * size's two launches a few seconds apart at most.
 */
static double over_static(const sweep *sw, point pts[][MAXPOINTS],
                          pattern_kind kind, variant v)
{
    double r[MAXPOINTS];
    int n = 0;

    for (int k = 0; k < sw->npts[kind]; k++)
        if ((k == 0 || sw->pts[kind][k].g_us >= 1000 * 0.999) &&
            pts[V_THREADS][k].eff > 0)
            r[n++] = pts[v][k].eff / pts[V_THREADS][k].eff;
    if (!n)
        return 0;
    qsort(r, (size_t)n, sizeof *r, cmp_double);
    return n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
}

/* The note on "X / static threads" is said once. */
static int said_static;

/* One pattern's sweep as notes, then its figures, against the peak. */
static void report_pattern(const sweep *sw, pattern_kind kind)
{
    static point pts[NVARIANTS][MAXPOINTS];
    int npts = sw->npts[kind];
    char name[128], at[32];

    for (int k = 0; k < npts; k++) {
        const sweep_point *sp = &sw->pts[kind][k];
        char line[1024];
        int len;

        format_us(at, sizeof at, sp->g_us);
        len = snprintf(line, sizeof line,
                       "%s %s x %u steps:", pattern_names[kind], at, sp->steps);
        for (int v = 0; v < NVARIANTS; v++) {
            if (!(sw->variants & 1 << v))
                continue;
            pts[v][k] = point_of(sw, sp, (variant)v);
            if (pts[v][k].eff > 1.05)
                above_peak = 1;
            if (len < (int)sizeof line)
                len +=
                    snprintf(line + len, sizeof line - (size_t)len,
                             " | %s %.1f us %.2f (%.2f cores", variant_words[v],
                             pts[v][k].gran_us, pts[v][k].eff,
                             sp->best[v].cpu / sp->best[v].wall);
            if (len < (int)sizeof line && sp->best[v].task_us > 0)
                len += snprintf(line + len, sizeof line - (size_t)len,
                                "; hand-off %.2f / %.2f / %.2f us, mean %.2f, "
                                "task %.2f us",
                                sp->best[v].lat50, sp->best[v].lat90,
                                sp->best[v].lat99, sp->best[v].lat_mean,
                                sp->best[v].task_us);
            if (len < (int)sizeof line && sp->best[v].setup > 0)
                len += snprintf(line + len, sizeof line - (size_t)len,
                                "; instantiate %.2f of %.2f ms, the graph "
                                "built in %.2f ms before",
                                sp->best[v].setup * 1e3, sp->best[v].wall * 1e3,
                                sp->build_ms);
            if (len < (int)sizeof line)
                len += snprintf(line + len, sizeof line - (size_t)len, ")");
        }
        bench_note("%s", line);
    }
    format_us(at, sizeof at, sw->max_us);
    for (int v = 0; v < NVARIANTS; v++) {
        const char *unit;
        double m;
        int dips;

        if (!(sw->variants & 1 << v))
            continue;
        m = metg_of(pts[v], npts, &unit, &dips);
        if (dips)
            bench_note("%s %s: %d larger task size(s) fell below 50%% between "
                       "sizes above it (other work on the machine); the "
                       "crossing is the last one",
                       pattern_names[kind], variant_names[v], dips);
        snprintf(name, sizeof name, "metg %s %s", pattern_names[kind],
                 variant_names[v]);
        bench_figure(name, m, unit);
        snprintf(name, sizeof name, "efficiency %s %s @%s", pattern_names[kind],
                 variant_names[v], at);
        bench_figure(name, pts[v][0].eff, "");
        snprintf(name, sizeof name, "cpu %s %s @%s", pattern_names[kind],
                 variant_names[v], at);
        bench_figure(
            name, sw->pts[kind][0].best[v].cpu / sw->pts[kind][0].best[v].wall,
            "cores");
        snprintf(name, sizeof name, "in flight %s %s @%s", pattern_names[kind],
                 variant_names[v], at);
        bench_figure(name, sw->pts[kind][0].best[v].in_flight, "tasks");
        if (v != V_THREADS && sw->variants & 1 << V_THREADS &&
            kind != TRIVIAL) {
            double r = over_static(sw, pts, kind, (variant)v);

            snprintf(name, sizeof name, "%s %s / static threads",
                     pattern_names[kind], variant_names[v]);
            if (!said_static++)
                bench_note("X / static threads: the median, over the task "
                           "sizes of 1 ms and up (or the largest alone), of "
                           "X's efficiency over the static threads' at the "
                           "same size");
            bench_figure(name, r, "x");
        }
    }
}

/* ---- main -------------------------------------------------------------- */

static unsigned count_cores(void)
{
    cpu_set_t set;

    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

/* The kernel's time per iteration on this thread: the best of 5. */
static double calibrate(void)
{
    const long iters = 1 << 20;
    double best = 0;

    for (int r = 0; r < 5; r++) {
        uint64_t t0 = bench_now_ns();
        double ns;

        if (kernel(iters) <= 0)
            bench_die("the kernel went wrong");
        ns = (double)(bench_now_ns() - t0) / (double)iters;
        if (r == 0 || ns < best)
            best = ns;
    }
    return best;
}

int main(int argc, char **argv)
{
    static sweep sw; /* zero: the defaults below */
    const char *patterns = "trivial,stencil,nearest,random";
#ifdef METG_STARPU
    const char *variants = "first,build,relaunch,kernels,openmp,starpu,threads";
#else
    const char *variants = "first,build,relaunch,kernels,openmp,threads";
#endif
    int full = 1, pmask;
    weft_side ws;
    const bench_option options[] = {
        {"--width", BENCH_U32, &sw.width, "W"},
        {"--steps", BENCH_U32, &sw.steps, "T"},
        {"--reps", BENCH_INT, &sw.reps, "R"},
        {"--min-us", BENCH_DOUBLE, &sw.min_us, "US"},
        {"--max-us", BENCH_DOUBLE, &sw.max_us, "US"},
        {"--patterns", BENCH_STRING, &patterns, "trivial,stencil,..."},
        {"--variants", BENCH_STRING, &variants,
         "first,build,relaunch,...,starpu,threads"},
        {"--quick", BENCH_OFF, &full, ""},
        {"--corrupt", BENCH_INT, &cur.corrupt_step, "STEP"},
        {"--latency", BENCH_ON, &latency, ""},
    };

    BENCH_OPTIONS(argc, argv, "metg", options);
    cores = count_cores();
    /* 0: the default, which --quick makes smaller */
    if (!sw.width)
        sw.width = cores;
    if (!sw.steps)
        sw.steps = full ? 1000 : 20;
    if (!sw.reps)
        sw.reps = full ? 3 : 1;
    if (sw.max_us <= 0)
        sw.max_us = full ? 10000 : 1000;
    if (sw.min_us <= 0)
        sw.min_us = full ? 0.25 : 100;
    if (sw.width < 1 || sw.width >= 1u << 21 || sw.steps < 1 ||
        sw.steps >= 1u << 21 || sw.reps < 1 || sw.reps > MAXREPS ||
        sw.min_us > sw.max_us)
        bench_usage();
    pmask = parse_words(patterns, pattern_names, NPATTERNS);
    sw.variants = parse_words(variants, variant_words, NVARIANTS);
    if (pmask <= 0 || sw.variants <= 0)
        bench_usage();
#ifndef _OPENMP
    if (sw.variants & 1 << V_OPENMP) {
        bench_note("openmp: skipped: built without OpenMP (CMake's "
                   "find_package(OpenMP) found none)");
        sw.variants &= ~(1 << V_OPENMP);
        if (!sw.variants)
            return 0;
    }
#endif
#ifndef METG_STARPU
    if (sw.variants & 1 << V_STARPU) {
        bench_note("starpu: skipped (not built: %s)", METG_STARPU_MISSING);
        sw.variants &= ~(1 << V_STARPU);
        if (!sw.variants)
            return 0;
    }
#endif

    weft_open(&ws);
    ns_per_iter = calibrate();
    peak_iters = lround((full ? 3e8 : 5e7) / ns_per_iter);
#ifdef _OPENMP
    /* the team's threads start outside the timed launches */
#pragma omp parallel
    (void)0;
#endif
#ifdef METG_STARPU
    if (sw.variants & 1 << V_STARPU)
        sp_open(cores);
#endif

    for (int k = 0; k < NPATTERNS; k++)
        if (pmask & 1 << k) {
            peak_sample(peak_iters, 3);
            sweep_pattern(&ws, &sw, (pattern_kind)k);
        }

    bench_begin("\"cores\": %u, \"width\": %u, \"steps\": %u, \"reps\": %d",
                cores, sw.width, sw.steps, sw.reps);
    bench_note("%u cores, width %u, up to %u steps, best of %d launches; "
               "kernel %.3f ns per iteration (%g FLOPs) on one thread, "
               "%.2f GFLOP/s x %u cores = %.2f",
               cores, sw.width, sw.steps, sw.reps, ns_per_iter, flops_per_iter,
               flops_per_iter / ns_per_iter, cores,
               flops_per_iter / ns_per_iter * cores);
    bench_figure("peak", peak_flops / 1e9, "GFLOP/s");
    for (int k = 0; k < NPATTERNS; k++)
        if (pmask & 1 << k)
            report_pattern(&sw, (pattern_kind)k);
    if (peak_flops < 0.9 * flops_per_iter / ns_per_iter * 1e9 * cores)
        bench_note("the peak is %.0f%% of one thread's rate x %u cores: "
                   "other work held part of the machine, which lowers the "
                   "peak more than a launch that uses fewer cores",
                   100 * peak_flops / (flops_per_iter / ns_per_iter * 1e9) /
                       cores,
                   cores);
    if (above_peak)
        bench_note("efficiency above 1.05: the machine was busier while the "
                   "peak was measured than in some launches; the figures "
                   "are not reliable");
    bench_end();

#ifdef METG_STARPU
    if (sw.variants & 1 << V_STARPU)
        sp_close();
#endif
    bench_check(weft_module_destroy(ws.mod));
    bench_check(weft_runtime_destroy(ws.rt));
    return 0;
}
