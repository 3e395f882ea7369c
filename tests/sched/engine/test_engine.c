/*
 * The progress engine: every executable graph's launches run on one
 * bounded set of threads per runtime (src/sched/engine.h), on the first
 * device of WEFT_DEVICES (host, sim with real data, or a GPU).
 *
 * - 1,000 executable graphs launched at once (twice each) all complete
 *   with the right bytes, while the process's thread count stays within
 *   the engine's size above what one launch needed;
 * - launches of one graph run one at a time, in order, while other
 *   graphs' launches interleave;
 * - a thread that cannot be started fails the launch cleanly, and the
 *   next launch works;
 * - a runtime whose graphs never launched starts no engine thread;
 * - a chain of host tasks runs on one host worker, which carries the
 *   launch on (no hand-off between the tasks).
 */
#include "wt_test.h"

#include "wt_devices.h"

#include "base/base.h"
#include "sched/exec.h"
#include "mem/machine.h"
#include "runtime.h"
#include "sched/engine.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { NGRAPHS = 1000, BYTES = 64 };

/* What engine.h says the engine's size is by default. */
static unsigned engine_size(const weft_runtime *rt)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = 4;

    if (cores > 4)
        n = (unsigned)cores;
    if (2 * rt->ndevices > n)
        n = 2 * rt->ndevices;
    return n;
}

typedef struct task_state {
    unsigned char want; /* the fill's byte */
    unsigned runs;      /* atomic across graphs; each graph's own */
    unsigned bad;
    unsigned max_threads; /* the most seen from inside any task */
} task_state;

static task_state shared;

/* The most threads seen, from any thread. */
static void note_threads(unsigned n)
{
    unsigned seen = __atomic_load_n(&shared.max_threads, __ATOMIC_RELAXED);

    while (n > seen &&
           !__atomic_compare_exchange_n(&shared.max_threads, &seen, n, 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* Checks the graph's bytes, counts the run, and samples the threads. */
static void check_bytes(void *const *ptrs, void *user)
{
    const unsigned char *p = ptrs[0];
    task_state *ts = user;
    unsigned n = wt_threads_now();

    for (unsigned i = 0; i < BYTES; i++)
        if (p[i] != ts->want)
            __atomic_add_fetch(&shared.bad, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&ts->runs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&shared.runs, 1, __ATOMIC_RELAXED);
    note_threads(n);
}

/* A fill of one byte value, then a host task that checks it. */
static void make_graph(weft_runtime *rt, weft_buffer *b, task_state *ts,
                       weft_exec **e)
{
    weft_access_desc acc = weft_access_range(b, 0, BYTES, WEFT_READ);
    weft_graph *g;

    check(weft_graph_create(rt, &g));
    check(weft_graph_add_fill(g, b, 0, BYTES, &ts->want, 1, NULL));
    check(weft_graph_add_host(g, check_bytes, ts, &acc, 1, NULL));
    check(weft_graph_instantiate(g, NULL, e));
    check(weft_graph_destroy(g));
}

static void thousand_graphs(void **state)
{
    static weft_buffer *bufs[NGRAPHS];
    static weft_exec *execs[NGRAPHS];
    static task_state ts[NGRAPHS];
    weft_runtime *rt;
    unsigned before, size;

    (void)state;
    memset(&shared, 0, sizeof shared);
    check(weft_runtime_create(&rt, NULL));
    size = engine_size(rt);
    assert_int_equal(weft__engine_threads(rt), 0);
    /*
     * One graph launched first, so that the host workers and the driver's
     * own threads exist; the other graphs may add no thread but the
     * engine's (at most its size).
     */
    ts[0].want = 1;
    check(weft_buffer_create(rt, BYTES, &bufs[0]));
    make_graph(rt, bufs[0], &ts[0], &execs[0]);
    check(weft_exec_launch(execs[0]));
    check(weft_exec_wait(execs[0]));
    weft__machine_settle(rt); /* a GPU's stager threads, made meanwhile */
    before = wt_threads_now() - weft__engine_threads(rt);
    for (unsigned i = 1; i < NGRAPHS; i++) {
        ts[i].want = (unsigned char)(i * 7 + 1);
        check(weft_buffer_create(rt, BYTES, &bufs[i]));
        make_graph(rt, bufs[i], &ts[i], &execs[i]);
    }
    for (int round = 0; round < 2; round++)
        for (unsigned i = 0; i < NGRAPHS; i++)
            check(weft_exec_launch(execs[i]));
    note_threads(wt_threads_now());
    for (unsigned i = 0; i < NGRAPHS; i++)
        check(weft_exec_wait(execs[i]));
    print_message("# %u graphs: threads %u before, at most %u during "
                  "(engine: %u started, size %u)\n",
                  NGRAPHS, before,
                  __atomic_load_n(&shared.max_threads, __ATOMIC_RELAXED),
                  weft__engine_threads(rt), size);
    assert_int_equal(shared.bad, 0);
    assert_int_equal(shared.runs, 2 * NGRAPHS + 1);
    for (unsigned i = 0; i < NGRAPHS; i++)
        assert_int_equal(ts[i].runs, i == 0 ? 3 : 2);
    assert_true(weft__engine_threads(rt) <= size);
    assert_true(__atomic_load_n(&shared.max_threads, __ATOMIC_RELAXED) <=
                before + size);
    for (unsigned i = 0; i < NGRAPHS; i++) {
        check(weft_exec_destroy(execs[i]));
        check(weft_buffer_destroy(bufs[i]));
    }
    check(weft_runtime_destroy(rt));
}

/* ---- one graph's launches stay in order -------------------------------- */

typedef struct order_state {
    unsigned next; /* the launch expected next */
    unsigned inside;
    unsigned bad;
} order_state;

static void in_order(void *const *ptrs, void *user)
{
    order_state *os = user;
    unsigned *launch_no = ptrs[0];

    if (__atomic_add_fetch(&os->inside, 1, __ATOMIC_ACQ_REL) != 1)
        os->bad++;
    if (*launch_no != os->next)
        os->bad++;
    os->next++;
    (*launch_no)++;
    __atomic_sub_fetch(&os->inside, 1, __ATOMIC_ACQ_REL);
}

static void launches_in_order(void **state)
{
    enum { NEXEC = 8, NLAUNCH = 50 };
    weft_runtime *rt;
    weft_buffer *b[NEXEC];
    weft_exec *e[NEXEC];
    order_state os[NEXEC];
    unsigned zero = 0;

    (void)state;
    memset(os, 0, sizeof os);
    check(weft_runtime_create(&rt, NULL));
    for (int i = 0; i < NEXEC; i++) {
        weft_access_desc acc;
        weft_graph *g;

        check(weft_buffer_create(rt, sizeof zero, &b[i]));
        acc = (weft_access_desc)weft_access_range(b[i], 0, sizeof zero,
                                                  WEFT_READ_WRITE);
        check(weft_graph_create(rt, &g));
        check(weft_graph_add_host(g, in_order, &os[i], &acc, 1, NULL));
        check(weft_graph_instantiate(g, NULL, &e[i]));
        check(weft_graph_destroy(g));
        check(weft_buffer_write(b[i], 0, &zero, sizeof zero));
    }
    for (int l = 0; l < NLAUNCH; l++)
        for (int i = 0; i < NEXEC; i++)
            check(weft_exec_launch(e[i]));
    for (int i = 0; i < NEXEC; i++) {
        unsigned got = 0;

        check(weft_exec_wait(e[i]));
        check(weft_buffer_read(b[i], 0, &got, sizeof got));
        assert_int_equal(got, NLAUNCH);
        assert_int_equal(os[i].next, NLAUNCH);
        assert_int_equal(os[i].bad, 0);
        check(weft_exec_destroy(e[i]));
        check(weft_buffer_destroy(b[i]));
    }
    check(weft_runtime_destroy(rt));
}

/* ---- a chain of host tasks runs on one thread -----------------------------
 */

enum { CHAIN = 64 };

typedef struct chain_state {
    weft_exec *e;
    pthread_t who[CHAIN];
    unsigned n;
    unsigned parked_seen;
    int issued; /* 0: the launch goes with no issue (weft__exec_fast) */
} chain_state;

/* Whether the thread that started e's launch has left it parked. */
static int launch_parked(weft_exec *e)
{
    int parked;

    pthread_mutex_lock(&e->host_lock);
    parked = e->parked != 0;
    pthread_mutex_unlock(&e->host_lock);
    return parked;
}

static void chain_step(void *const *ptrs, void *user)
{
    chain_state *cs = user;
    unsigned *x = ptrs[0];

    /*
     * The first task waits (10 s at most) until the engine thread has
     * parked the launch, so that this worker, finishing it, carries the
     * launch on: from then on the test depends on no timing.
     */
    if (cs->n == 0 && cs->issued) {
        for (int t = 0; t < 100000 && !launch_parked(cs->e); t++)
            usleep(100);
        cs->parked_seen = launch_parked(cs->e);
    }
    cs->who[cs->n++] = pthread_self();
    (*x)++;
}

/*
 * The host worker that finishes a task runs the next task of the chain
 * itself: after the first, no task changes thread (no hand-off), and the
 * chain's result is whole. Issued (a write node first, so that the launch
 * is issued): the worker carries the parked launch on. Not issued (host
 * tasks alone): the launch goes with no issue (weft__exec_fast).
 */
static void host_chain(int issued)
{
    weft_runtime *rt;
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;
    chain_state cs;
    unsigned zero = 0, got = 0;

    check(weft_runtime_create(&rt, NULL));
    check(weft_buffer_create(rt, sizeof zero, &b));
    check(weft_buffer_write(b, 0, &zero, sizeof zero));
    check(weft_graph_create(rt, &g));
    if (issued)
        check(weft_graph_add_write(g, b, 0, &zero, sizeof zero, NULL));
    for (int i = 0; i < CHAIN; i++) {
        weft_access_desc acc =
            weft_access_range(b, 0, sizeof zero, WEFT_READ_WRITE);

        check(weft_graph_add_host(g, chain_step, &cs, &acc, 1, NULL));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    cs.e = e;
    cs.issued = issued;
    for (int l = 0; l < 3; l++) {
        unsigned moved = 0;

        cs.n = 0;
        cs.parked_seen = 0;
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        assert_int_equal(cs.n, CHAIN);
        assert_true(cs.parked_seen == (unsigned)issued);
        for (int i = 1; i < CHAIN; i++)
            moved += !pthread_equal(cs.who[i], cs.who[0]);
        print_message("# launch %d: %u of %d tasks on another thread than "
                      "the first\n",
                      l, moved, CHAIN - 1);
        assert_int_equal(moved, 0);
    }
    check(weft_buffer_read(b, 0, &got, sizeof got));
    assert_int_equal(got, issued ? CHAIN : 3 * CHAIN);
    pthread_mutex_lock(&e->lock);
    assert_int_equal(e->fast_launches, issued ? 0 : 3);
    pthread_mutex_unlock(&e->lock);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
    check(weft_runtime_destroy(rt));
}

static void host_chain_one_thread(void **state)
{
    (void)state;
    host_chain(1);
}

static void host_chain_one_thread_no_issue(void **state)
{
    (void)state;
    host_chain(0);
}

/* ---- a thread that cannot start ---------------------------------------- */

static void thread_start_fails(void **state)
{
    weft_runtime *rt;
    weft_buffer *b;
    weft_exec *e;
    task_state ts = {.want = 5};
    int rc;

    (void)state;
    memset(&shared, 0, sizeof shared);
    check(weft_runtime_create(&rt, NULL));
    check(weft_buffer_create(rt, BYTES, &b));
    make_graph(rt, b, &ts, &e);
    weft__fault_arm(1, "engine.pthread_create");
    rc = weft_exec_launch(e);
    assert_true(weft__fault_fired());
    weft__fault_disarm();
    assert_int_equal(rc, WEFT_ENOMEM);
    assert_non_null(strstr(weft_last_error(), "cannot start a thread"));
    assert_int_equal(weft__engine_threads(rt), 0);
    /* The failed launch did not count: nothing to wait for, nothing ran. */
    check(weft_exec_wait(e));
    assert_int_equal(ts.runs, 0);
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    assert_int_equal(ts.runs, 1);
    assert_int_equal(shared.bad, 0);
    check(weft_exec_destroy(e));
    check(weft_buffer_destroy(b));
    check(weft_runtime_destroy(rt));
}

int main(int argc, char **argv)
{
    wt_devices devs;

    /* Skipped (exit 77) where WEFT_DEVICES names a driver with no device. */
    wt_devices_open(&devs);
    wt_devices_close(&devs);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thousand_graphs),
        cmocka_unit_test(launches_in_order),
        cmocka_unit_test(thread_start_fails),
        cmocka_unit_test(host_chain_one_thread),
        cmocka_unit_test(host_chain_one_thread_no_issue),
    };

    return wt_run_group_name(argc, argv, "engine", tests, NULL, NULL);
}
