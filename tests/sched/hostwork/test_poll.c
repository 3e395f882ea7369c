/*
 * Poll tasks (weft_graph_add_host_poll) on the first device of
 * WEFT_DEVICES, with the number of host workers the test run sets:
 *   - with one worker, a poll task that waits for an independent host
 *     task of the same launch completes: between its calls the worker
 *     runs the other task (a poll that held its worker would wait for
 *     ever, and fails here after POLL_LIMIT_S instead);
 *   - its successors run after its last call, and see what it wrote;
 *   - it fails the launch, naming the node, with its other return, and
 *     cancels its successors while independent nodes complete; the next
 *     launch polls afresh;
 *   - with no workers (WEFT_HOST_WORKERS=0) the issuing thread calls it
 *     until it is done.
 * Nothing here measures time.
 */
#include "wt_test.h"

#include "wt_devices.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { POLL_LIMIT_S = 30, MIN_CALLS = 3 };

static wt_devices devs;

static int setup(void **state)
{
    (void)state;
    wt_devices_open(&devs);
    printf("# device 0: %s, WEFT_HOST_WORKERS=%s\n", wt_device(&devs, 0)->name,
           getenv("WEFT_HOST_WORKERS") ? getenv("WEFT_HOST_WORKERS") : "-");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return weft_runtime_destroy(devs.rt);
}

/* One launch's shared state (reset before each launch). */
typedef struct poll_state {
    unsigned flag;      /* set by the independent task (atomic) */
    unsigned calls;     /* the poll's calls (atomic) */
    unsigned seq;       /* a counter of events, for their order (atomic) */
    unsigned poll_done; /* seq when the poll returned 0 */
    unsigned after_ran; /* seq when its successor ran */
    int wait_flag;      /* 1: poll until flag is set; 0: MIN_CALLS calls */
    int fail;           /* non-zero: returned after MIN_CALLS calls */
    time_t t0;
} poll_state;

static int workers(void)
{
    const char *w = getenv("WEFT_HOST_WORKERS");

    return w ? atoi(w) : -1;
}

/* Waits for the flag (or MIN_CALLS calls); writes its call count. */
static int poll_fn(void *const *ptrs, void *user)
{
    poll_state *s = user;
    unsigned calls = __atomic_add_fetch(&s->calls, 1, __ATOMIC_RELAXED);

    if (time(NULL) - s->t0 > POLL_LIMIT_S)
        return 99; /* the other task never ran: the poll held the worker */
    if (calls < MIN_CALLS ||
        (s->wait_flag && !__atomic_load_n(&s->flag, __ATOMIC_ACQUIRE)))
        return WEFT_HOST_AGAIN;
    if (s->fail)
        return s->fail;
    *(uint32_t *)ptrs[0] = calls;
    s->poll_done = __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELAXED);
    return 0;
}

static void set_flag(void *const *ptrs, void *user)
{
    poll_state *s = user;

    (void)ptrs;
    __atomic_store_n(&s->flag, 1, __ATOMIC_RELEASE);
}

/* The poll's successor: checks the count it wrote, notes its turn. */
static void after_fn(void *const *ptrs, void *user)
{
    poll_state *s = user;
    uint32_t *x = ptrs[0];

    x[1] = x[0] + 1000;
    s->after_ran = __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELAXED);
}

/*
 * poll (writes x[0]) -> after (reads x[0], writes x[1]); set_flag beside
 * them, no accesses. With no workers the poll cannot wait for the flag
 * (the issuing thread calls it until done), so it counts calls.
 */
static void test_poll_waits_without_holding_a_worker(void **state)
{
    poll_state s;
    weft_access_desc a0, a01;
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;
    weft_node np;
    uint32_t x[2];
    int rc;

    (void)state;
    check(weft_buffer_create(devs.rt, sizeof x, &b));
    check(weft_graph_create(devs.rt, &g));
    a0 = (weft_access_desc)weft_access_range(b, 0, 4, WEFT_WRITE);
    a01 = (weft_access_desc)weft_access_range(b, 0, 8, WEFT_READ_WRITE);
    check(weft_graph_add_host_poll(g, poll_fn, &s, &a0, 1, &np));
    check(weft_graph_add_host(g, after_fn, &s, &a01, 1, NULL));
    check(weft_graph_add_host(g, set_flag, &s, NULL, 0, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    for (int launch = 0; launch < 4; launch++) {
        memset(&s, 0, sizeof s);
        s.wait_flag = workers() != 0;
        s.fail = launch == 2 ? -4 : 0;
        s.t0 = time(NULL);
        check(weft_buffer_write(b, 0, (uint32_t[2]){7, 7}, sizeof x));
        check(weft_exec_launch(e));
        rc = weft_exec_wait(e);
        check(weft_buffer_read(b, 0, x, sizeof x));
        printf("# launch %d: %u calls, rc %d\n", launch, s.calls, rc);
        assert_int_equal(s.flag, 1); /* the independent task ran */
        if (launch == 2) {
            char node[32];

            assert_int_equal(rc, WEFT_EIO);
            assert_non_null(strstr(weft_last_error(), "returned -4"));
            snprintf(node, sizeof node, "node %u", np);
            assert_non_null(strstr(weft_last_error(), node));
            assert_int_equal(s.after_ran, 0); /* canceled */
            assert_int_equal(x[0], 7);
            assert_int_equal(x[1], 7);
            continue;
        }
        check(rc);
        assert_true(s.calls >= MIN_CALLS);
        assert_int_equal(x[0], s.calls);
        assert_int_equal(x[1], s.calls + 1000);
        assert_true(s.poll_done > 0 && s.after_ran > s.poll_done);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
}

/*
 * Several poll tasks that each wait for the next one's partner, fewer
 * workers than polls: every one is called in turn until all are done.
 */
enum { NPOLL = 8 };

typedef struct ring_poll {
    unsigned *ready; /* NPOLL flags (atomic) */
    unsigned i;
    unsigned calls;
} ring_poll;

/* Poll i marks itself, then waits until every poll has marked itself. */
static int ring_fn(void *const *ptrs, void *user)
{
    ring_poll *r = user;
    unsigned n = 0;

    (void)ptrs;
    r->calls++;
    __atomic_store_n(&r->ready[r->i], 1, __ATOMIC_RELEASE);
    for (unsigned k = 0; k < NPOLL; k++)
        n += __atomic_load_n(&r->ready[k], __ATOMIC_ACQUIRE);
    return n == NPOLL ? 0 : WEFT_HOST_AGAIN;
}

static void test_many_polls_meet(void **state)
{
    unsigned ready[NPOLL];
    ring_poll r[NPOLL];
    weft_graph *g;
    weft_exec *e;

    (void)state;
    if (workers() == 0) {
        /* one at a time to its end: polls that wait for each other
         * cannot meet without workers */
        printf("# skipped: no host workers (WEFT_HOST_WORKERS=0)\n");
        skip();
    }
    check(weft_graph_create(devs.rt, &g));
    for (unsigned i = 0; i < NPOLL; i++) {
        r[i] = (ring_poll){ready, i, 0};
        check(weft_graph_add_host_poll(g, ring_fn, &r[i], NULL, 0, NULL));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    for (int launch = 0; launch < 3; launch++) {
        memset(ready, 0, sizeof ready);
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        for (unsigned i = 0; i < NPOLL; i++)
            assert_int_equal(ready[i], 1);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poll_waits_without_holding_a_worker),
        cmocka_unit_test(test_many_polls_meet),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
