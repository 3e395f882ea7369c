/*
 * task_overhead: what the scheduler costs per node, with nothing to do.
 *
 * N empty nodes through the public API, in three shapes:
 *   independent  each node reads and writes its own small slice of one
 *                buffer: no edges, every node free to run;
 *   chained      every node reads and writes the same slice: a chain of
 *                N - 1 edges through one buffer;
 *   host tasks   as independent, but host tasks (weft_graph_add_host)
 *                instead of kernel nodes of a host-driver module: they run
 *                on weft's host workers and never as native graphs. Issue
 *                16's target: a relaunch at most 0.1 us/task
 *                ("host tasks relaunch / 0.1 us");
 *   host nearest host tasks in rows of NEAR_W, each writing its cell and
 *                reading the cells i - 2 .. i + 2 of the row before (metg's
 *                nearest pattern, cells in a ring of two rows): its
 *                instantiate and first launch are what a first launch of
 *                metg pays on one thread before the workers share the work,
 *                so that on P cores they add about P times as much to its
 *                granularity.
 * For each shape, per node: instantiate (building the graph is not timed),
 * the first launch of the executable graph (weft_exec_launch +
 * weft_exec_wait; a fresh buffer each time, filled on the host before, so
 * the first launch brings its bytes to the device as a program's would),
 * the second launch of that executable graph (where the first moved
 * bytes, it records its native graph before it replays it: the lookahead,
 * README "Native graphs"), and a relaunch of it; medians of R. A relaunch
 * is a replay of the host
 * driver's native graph where weft finds the buffers as the last launch
 * left them (README "Native graphs"; "relaunch replays" counts them), so
 * the same graph is also relaunched with native graphs off
 * (weft_exec_options.native_graphs): "relaunch op by op".
 * Targets (issue 6): relaunch at most 0.5 us/node, first launch at most
 * 1.5 us/node; "... / target" is the median over the target.
 *
 * Floors, measured in the same run with the same empty function:
 *   function call   N calls through a function pointer;
 *   pthread queue   N tasks pushed one by one into a mutex-protected FIFO
 *                   that one worker thread drains, then waited for: the
 *                   least a runtime with a worker thread can do.
 *
 *     task_overhead [--json] [--nodes N] [--reps R]
 */
#include <weft.h>

#include "bench.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAXREPS = 64 };

static uint32_t nodes = 10000;
static int reps = 7;
static double queue_floor; /* us/node, measured first */

/* Issue 6's targets, us per node. */
static const double target_relaunch = 0.5, target_first = 1.5;

static double us_per_node(uint64_t ns)
{
    return (double)ns / 1e3 / nodes;
}

/*
 * The task: it only counts its calls, so that a run that skipped nodes
 * cannot pass for a fast one. Weft's nodes and both floors run it. Each
 * thread counts in a line of its own: one count that every worker changes
 * would cost more than the tasks (about 0.1 us a call on 16 cores).
 */
enum { MAXCOUNTERS = 256 };
static struct {
    _Alignas(64) unsigned long n;
} counters[MAXCOUNTERS];
static unsigned ncounters;
static _Thread_local int counter = -1;

static void count_call(void)
{
    if (counter < 0) {
        unsigned k = __atomic_fetch_add(&ncounters, 1, __ATOMIC_RELAXED);

        /* Past the last, threads share it (still counted exactly). */
        counter = (int)(k < MAXCOUNTERS ? k : MAXCOUNTERS - 1);
    }
    __atomic_add_fetch(&counters[counter].n, 1, __ATOMIC_RELAXED);
}

/* The calls so far, every thread's; read once the counted work is done. */
static unsigned long calls_now(void)
{
    unsigned long n = 0;

    for (unsigned k = 0; k < MAXCOUNTERS; k++)
        n += __atomic_load_n(&counters[k].n, __ATOMIC_RELAXED);
    return n;
}

static void empty(const weft_host_group *g, void *const *args)
{
    (void)g;
    (void)args;
    count_call();
}

static const weft_param_type empty_params[] = {WEFT_PARAM_BUFFER};
static const weft_host_kernel host_kernels[] = {
    {"empty", empty, 1, empty_params, NULL, NULL, NULL},
};

static void expect_calls(const char *what, unsigned long before)
{
    unsigned long n = calls_now() - before;

    if (n != nodes)
        bench_die("%s ran %lu tasks, not %u", what, n, nodes);
}

/* ---- weft -------------------------------------------------------------- */

typedef enum shape {
    INDEPENDENT,
    CHAINED,
    HOST_TASKS,
    HOST_NEAREST,
    NSHAPES
} shape;
static const char *const shape_names[NSHAPES] = {"independent", "chained",
                                                 "host tasks", "host nearest"};
enum { NEAR_W = 32 }; /* host nearest: cells a row */

static void empty_task(void *const *ptrs, void *user)
{
    (void)ptrs;
    (void)user;
    count_call();
}

/* A fresh buffer (filled, so that its bytes are defined) and the graph. */
static void build(weft_runtime *rt, weft_kernel *k, shape s, size_t slice,
                  weft_buffer **buf, weft_graph **g)
{
    size_t size = (size_t)(nodes > 2 * NEAR_W ? nodes : 2 * NEAR_W) * slice;
    uint32_t zero = 0;

    bench_check(weft_buffer_create(rt, size, buf));
    bench_check(weft_buffer_fill(*buf, 0, size, &zero, sizeof zero));
    bench_check(weft_graph_create(rt, g));
    for (uint32_t i = 0; s == HOST_NEAREST && i < nodes; i++) {
        uint32_t t = i / NEAR_W, c = i % NEAR_W;
        weft_access_desc acc[6];
        unsigned n = 0;

        acc[n++] = (weft_access_desc)weft_access_range(
            *buf, ((size_t)(t % 2) * NEAR_W + c) * slice, slice, WEFT_WRITE);
        for (int d = -2; t > 0 && d <= 2; d++)
            if ((int)c + d >= 0 && (int)c + d < NEAR_W)
                acc[n++] = (weft_access_desc)weft_access_range(
                    *buf, ((size_t)((t - 1) % 2) * NEAR_W + c + d) * slice,
                    slice, WEFT_READ);
        bench_check(weft_graph_add_host(*g, empty_task, NULL, acc, n, NULL));
    }
    for (uint32_t i = 0; s != HOST_NEAREST && i < nodes; i++) {
        size_t off = s == CHAINED ? 0 : (size_t)i * slice;
        weft_arg arg = weft_arg_buffer(*buf, off, slice, WEFT_READ_WRITE);
        weft_access_desc acc =
            weft_access_range(*buf, off, slice, WEFT_READ_WRITE);

        if (s == HOST_TASKS)
            bench_check(
                weft_graph_add_host(*g, empty_task, NULL, &acc, 1, NULL));
        else
            bench_check(
                weft_graph_add_kernel(*g, k, weft_dims1(1), &arg, 1, NULL));
    }
    if (s != HOST_NEAREST &&
        weft_graph_edge_count(*g) != (s == CHAINED ? nodes - 1 : 0))
        bench_die("%s: %u edges", shape_names[s], weft_graph_edge_count(*g));
}

/* reps relaunches of e, timed into t[]. */
static void relaunch(weft_exec *e, double *t, const char *what)
{
    for (int r = 0; r < reps; r++) {
        unsigned long before = calls_now();
        uint64_t t0 = bench_now_ns();

        bench_check(weft_exec_launch(e));
        bench_check(weft_exec_wait(e));
        t[r] = us_per_node(bench_now_ns() - t0);
        expect_calls(what, before);
    }
}

static void measure(weft_runtime *rt, weft_kernel *k, shape s, size_t slice)
{
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    double inst[MAXREPS], first[MAXREPS], second[MAXREPS], again[MAXREPS],
        ops[MAXREPS];
    weft_exec_stats st = {.size = sizeof st};
    uint64_t replays0;
    weft_buffer *buf = NULL;
    weft_graph *g = NULL;
    weft_exec *e = NULL;
    char name[96], unit[16];

    /*
     * Every first launch is the program's first on its bytes: a fresh
     * buffer, graph and executable graph each round (the last stays for
     * the relaunches). One executable graph at a time: a buffer shared by
     * two live ones costs fences that are not what this measures.
     */
    o.device = weft_runtime_device(rt, 0); /* one device, however many */
    for (int r = 0; r < reps; r++) {
        unsigned long before;
        uint64_t t0, t1, t2, t3;

        bench_progress(shape_names[s]);
        if (e) {
            bench_check(weft_exec_destroy(e));
            bench_check(weft_graph_destroy(g));
            bench_check(weft_buffer_destroy(buf));
        }
        build(rt, k, s, slice, &buf, &g);
        before = calls_now();
        t0 = bench_now_ns();
        bench_check(weft_graph_instantiate(g, &o, &e));
        t1 = bench_now_ns();
        bench_check(weft_exec_launch(e));
        bench_check(weft_exec_wait(e));
        t2 = bench_now_ns();
        expect_calls("a first launch", before);
        before = calls_now();
        bench_check(weft_exec_launch(e));
        bench_check(weft_exec_wait(e));
        t3 = bench_now_ns();
        expect_calls("a second launch", before);
        inst[r] = us_per_node(t1 - t0);
        first[r] = us_per_node(t2 - t1);
        second[r] = us_per_node(t3 - t2);
    }
    bench_check(weft_exec_get_stats(e, &st));
    replays0 = st.native_replays;
    relaunch(e, again, "a relaunch");
    bench_check(weft_exec_get_stats(e, &st));
    bench_check(weft_exec_destroy(e));
    /* The baseline: the same graph, every launch op by op. */
    o.native_graphs = WEFT_NATIVE_GRAPHS_OFF;
    bench_check(weft_graph_instantiate(g, &o, &e));
    bench_check(weft_exec_launch(e));
    bench_check(weft_exec_wait(e));
    relaunch(e, ops, "a relaunch op by op");
    bench_progress("");
    bench_check(weft_exec_destroy(e));
    bench_check(weft_graph_destroy(g));
    bench_check(weft_buffer_destroy(buf));

    double mi = bench_median(inst, reps), mf = bench_median(first, reps);
    double ms = bench_median(second, reps);
    double mr = bench_median(again, reps), mo = bench_median(ops, reps);

    snprintf(name, sizeof name, "%s instantiate", shape_names[s]);
    bench_figure(name, mi, "us/node");
    snprintf(name, sizeof name, "%s first launch", shape_names[s]);
    bench_figure(name, mf, "us/node");
    snprintf(name, sizeof name, "%s second launch", shape_names[s]);
    bench_figure(name, ms, "us/node");
    snprintf(name, sizeof name, "%s relaunch", shape_names[s]);
    bench_figure(name, mr, "us/node");
    snprintf(name, sizeof name, "%s relaunch replays", shape_names[s]);
    snprintf(unit, sizeof unit, "of %d", reps);
    bench_figure(name, (double)(st.native_replays - replays0), unit);
    snprintf(name, sizeof name, "%s relaunch op by op", shape_names[s]);
    bench_figure(name, mo, "us/node");
    snprintf(name, sizeof name, "%s first launch / target", shape_names[s]);
    bench_figure(name, mf / target_first, "x");
    snprintf(name, sizeof name, "%s relaunch / target", shape_names[s]);
    bench_figure(name, mr / target_relaunch, "x");
    snprintf(name, sizeof name, "%s relaunch / pthread queue", shape_names[s]);
    bench_figure(name, mr / queue_floor, "x");
    snprintf(name, sizeof name, "%s relaunch op by op / target",
             shape_names[s]);
    bench_figure(name, mo / target_relaunch, "x");
    if (s == HOST_TASKS)
        bench_figure("host tasks relaunch / 0.1 us", mr / 0.1, "x");
}

/* ---- floors ------------------------------------------------------------ */

static double floor_calls(void)
{
    /* volatile: the compiler must call through the pointer every time */
    weft_host_kernel_fn *volatile fn = empty;
    weft_host_group grp = {{0, 0, 0}, {1, 1, 1}, {1, 1, 1}};
    void *arg = NULL;
    double t[MAXREPS];

    for (int r = 0; r < reps; r++) {
        unsigned long before = calls_now();
        uint64_t t0 = bench_now_ns();

        for (uint32_t i = 0; i < nodes; i++)
            fn(&grp, &arg);
        t[r] = us_per_node(bench_now_ns() - t0);
        expect_calls("the function-call floor", before);
    }
    return bench_median(t, reps);
}

/*
 * One worker thread and a FIFO under one mutex: the producer pushes one
 * task at a time (lock, store, signal if the worker sleeps, unlock), the
 * worker pops one at a time and runs it outside the lock, and the last
 * one wakes the producer.
 */
typedef struct task_queue {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    weft_host_kernel_fn **tasks; /* nodes slots: a round never wraps */
    uint32_t head, tail, finished;
    int idle, stop;
    pthread_t worker;
} task_queue;

static void *queue_worker(void *arg)
{
    task_queue *q = arg;
    weft_host_group grp = {{0, 0, 0}, {1, 1, 1}, {1, 1, 1}};
    void *targ = NULL;

    pthread_mutex_lock(&q->lock);
    for (;;) {
        weft_host_kernel_fn *fn;

        while (q->head == q->tail && !q->stop) {
            q->idle = 1;
            pthread_cond_wait(&q->work, &q->lock);
            q->idle = 0;
        }
        if (q->head == q->tail)
            break;
        fn = q->tasks[q->head++];
        pthread_mutex_unlock(&q->lock);
        fn(&grp, &targ);
        pthread_mutex_lock(&q->lock);
        if (++q->finished == nodes)
            pthread_cond_signal(&q->done);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

static double floor_queue(void)
{
    task_queue q;
    double t[MAXREPS];

    memset(&q, 0, sizeof q);
    q.tasks = calloc(nodes, sizeof *q.tasks);
    if (!q.tasks)
        bench_die("out of memory");
    pthread_mutex_init(&q.lock, NULL);
    pthread_cond_init(&q.work, NULL);
    pthread_cond_init(&q.done, NULL);
    if (pthread_create(&q.worker, NULL, queue_worker, &q))
        bench_die("pthread_create failed");
    /* Round -1 warms the worker up and is not counted. */
    for (int r = -1; r < reps; r++) {
        unsigned long before = calls_now();
        uint64_t t0 = bench_now_ns();

        pthread_mutex_lock(&q.lock);
        q.head = q.tail = q.finished = 0;
        pthread_mutex_unlock(&q.lock);
        for (uint32_t i = 0; i < nodes; i++) {
            pthread_mutex_lock(&q.lock);
            q.tasks[q.tail++] = empty;
            if (q.idle)
                pthread_cond_signal(&q.work);
            pthread_mutex_unlock(&q.lock);
        }
        pthread_mutex_lock(&q.lock);
        while (q.finished < nodes)
            pthread_cond_wait(&q.done, &q.lock);
        pthread_mutex_unlock(&q.lock);
        if (r >= 0)
            t[r] = us_per_node(bench_now_ns() - t0);
        expect_calls("the pthread-queue floor", before);
    }
    pthread_mutex_lock(&q.lock);
    q.stop = 1;
    pthread_cond_signal(&q.work);
    pthread_mutex_unlock(&q.lock);
    pthread_join(q.worker, NULL);
    pthread_cond_destroy(&q.done);
    pthread_cond_destroy(&q.work);
    pthread_mutex_destroy(&q.lock);
    free(q.tasks);
    return bench_median(t, reps);
}

/* ---- main -------------------------------------------------------------- */

int main(int argc, char **argv)
{
    weft_runtime_options opts = WEFT_RUNTIME_OPTIONS_INIT;
    const weft_module_source src = {WEFT_SOURCE_HOST, host_kernels, 1, NULL,
                                    "task_overhead"};
    weft_device_info info;
    weft_runtime *rt;
    weft_module *mod;
    weft_kernel *k;
    size_t slice;
    const bench_option options[] = {
        {"--nodes", BENCH_U32, &nodes, "N"},
        {"--reps", BENCH_INT, &reps, "R"},
    };

    BENCH_OPTIONS(argc, argv, "task_overhead", options);
    if (nodes < 2 || reps < 1 || reps > MAXREPS)
        bench_die("--nodes >= 2 and 1 <= --reps <= %d", MAXREPS);

    opts.devices = "host";
    bench_check(weft_runtime_create(&rt, &opts));
    if (weft_runtime_device_count(rt) == 0)
        bench_die("no host device");
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    bench_check(weft_device_get_info(weft_runtime_device(rt, 0), &info));
    slice = info.arg_offset_align > 16 ? info.arg_offset_align : 16;
    bench_check(weft_module_create(rt, &src, 1, &mod));
    bench_check(weft_module_get_kernel(mod, "empty", &k));

    bench_begin("\"device\": \"%s\", \"nodes\": %u, \"reps\": %d", info.name,
                nodes, reps);
    bench_note("%s (%u cores), %u empty nodes, medians of %d", info.name,
               info.ncores, nodes, reps);
    bench_figure("function call", floor_calls(), "us/node");
    queue_floor = floor_queue();
    bench_figure("pthread queue", queue_floor, "us/node");
    for (int s = 0; s < NSHAPES; s++)
        measure(rt, k, (shape)s, slice);
    bench_end();

    bench_check(weft_module_destroy(mod));
    bench_check(weft_runtime_destroy(rt));
    return 0;
}
