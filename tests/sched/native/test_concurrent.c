/*
 * Native nodes of one launch on the host driver run side by side, each on
 * a thread of the driver: NODES native nodes with no edge between them
 * each meet, in their function, at a barrier of two (the first one in
 * waits until a second one is in), which gives up after TIMEOUT_NS and
 * fails the node rather than hang: a driver that ran them one after the
 * other on one thread fails the launch. Op by op (not capturable: every
 * launch issues them) and as a native graph (capturable and relaunched
 * until the launches replay it). And a failing native node among
 * concurrent ones: the launch fails naming it, its descendants are
 * canceled, the other nodes run.
 */
#include "wt_test.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { NODES = 8, LAUNCHES = 6, FAILING = 5 };
#define TIMEOUT_NS 20000000000ull /* 20 s: the machine may be loaded */

static weft_runtime *rt;

static int setup(void **state)
{
    (void)state;
    return weft_runtime_create(&rt, NULL) < 0;
}

static int teardown(void **state)
{
    (void)state;
    return weft_runtime_destroy(rt) < 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The barrier of one launch, and what the functions saw (atomic). */
typedef struct meet {
    unsigned arrived; /* functions that came in, this launch */
    unsigned calls;   /* every call, every launch */
    unsigned timeouts;
    unsigned fail; /* the node index that returns 5, or NODES: none */
} meet;

typedef struct node_arg {
    meet *m;
    unsigned index;
} node_arg;

/* Come in, then wait for a second function to have come in. */
static int native_meet(const weft_native_ctx *ctx, void *user)
{
    node_arg *a = user;
    meet *m = a->m;
    uint64_t t0 = now_ns();

    (void)ctx;
    __atomic_add_fetch(&m->calls, 1, __ATOMIC_SEQ_CST);
    if (a->index == __atomic_load_n(&m->fail, __ATOMIC_RELAXED))
        return 5;
    __atomic_add_fetch(&m->arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&m->arrived, __ATOMIC_SEQ_CST) < 2) {
        if (now_ns() - t0 > TIMEOUT_NS) {
            __atomic_add_fetch(&m->timeouts, 1, __ATOMIC_SEQ_CST);
            return 1; /* alone: the nodes ran one after the other */
        }
        sched_yield();
    }
    return 0;
}

/* The host device: the runtime's first (WEFT_DEVICES=host). */
static weft_device *host_device(void)
{
    weft_device *d = weft_runtime_device(rt, 0);

    assert_non_null(d);
    return d;
}

/*
 * NODES native nodes, node i writing bytes [16 i, 16 i + 16) of b (no two
 * share a byte: no edges), capturable or not.
 */
static void add_nodes(weft_graph *g, weft_buffer *b, node_arg *args,
                      weft_node *nodes, int capture)
{
    weft_native_impl impl = {"host", 0, native_meet};

    for (unsigned i = 0; i < NODES; i++) {
        weft_access_desc acc =
            weft_access_range(b, (size_t)16 * i, 16, WEFT_WRITE);

        check(weft_graph_add_native(g, &impl, 1, &acc, 1, &args[i], &nodes[i]));
        check(weft_graph_set_device(g, nodes[i], host_device()));
        if (capture)
            check(weft_graph_set_native_capture(g, nodes[i], 1));
    }
}

static void stats(weft_exec *e, weft_exec_stats *st)
{
    memset(st, 0, sizeof *st);
    st->size = sizeof *st;
    check(weft_exec_get_stats(e, st));
}

/* Every launch of the graph meets at the barrier; capture: it replays. */
static void run_launches(int capture)
{
    meet m = {0, 0, 0, NODES};
    node_arg args[NODES];
    weft_node nodes[NODES];
    weft_exec_stats st;
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;

    for (unsigned i = 0; i < NODES; i++)
        args[i] = (node_arg){&m, i};
    check(weft_buffer_create(rt, 16 * NODES, &b));
    check(weft_graph_create(rt, &g));
    add_nodes(g, b, args, nodes, capture);
    check(weft_graph_instantiate(g, NULL, &e));
    for (unsigned l = 0; l < LAUNCHES; l++) {
        __atomic_store_n(&m.arrived, 0, __ATOMIC_SEQ_CST);
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
    }
    stats(e, &st);
    printf("# capture %d: %u calls, %u timeouts, %llu native launches, "
           "%llu replays\n",
           capture, m.calls, m.timeouts, (unsigned long long)st.native_launches,
           (unsigned long long)st.native_replays);
    assert_int_equal(m.timeouts, 0);
    assert_int_equal(m.calls, NODES * LAUNCHES);
    if (capture)
        assert_true(st.native_replays >= 1);
    else
        assert_int_equal(st.native_launches, 0);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
}

/* Launches issued op by op: the calls run side by side. */
static void test_concurrent_first(void **state)
{
    (void)state;
    run_launches(0);
}

/* Launches that replay the host native graph: side by side too. */
static void test_concurrent_replay(void **state)
{
    (void)state;
    run_launches(1);
}

static void host_mark(void *const *ptrs, void *user)
{
    (void)ptrs;
    __atomic_add_fetch((unsigned *)user, 1, __ATOMIC_SEQ_CST);
}

static int native_mark(const weft_native_ctx *ctx, void *user)
{
    (void)ctx;
    __atomic_add_fetch((unsigned *)user, 1, __ATOMIC_SEQ_CST);
    return 0;
}

/*
 * Node FAILING fails among the others, which meet at the barrier: the
 * launch fails naming it, a host task and a native node after it (they
 * read what it writes) are canceled, the others run; the next launch,
 * with no failure, runs everything.
 */
static void test_concurrent_fails(void **state)
{
    meet m = {0, 0, 0, FAILING};
    node_arg args[NODES];
    weft_node nodes[NODES];
    weft_native_impl after_impl = {"host", 0, native_mark};
    weft_access_desc acc;
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;
    unsigned after = 0;
    char want[64];
    int rc;

    (void)state;
    for (unsigned i = 0; i < NODES; i++)
        args[i] = (node_arg){&m, i};
    check(weft_buffer_create(rt, 16 * NODES, &b));
    check(weft_graph_create(rt, &g));
    add_nodes(g, b, args, nodes, 0);
    acc = weft_access_range(b, (size_t)16 * FAILING, 16, WEFT_READ);
    check(weft_graph_add_host(g, host_mark, &after, &acc, 1, NULL));
    check(weft_graph_add_native(g, &after_impl, 1, &acc, 1, &after, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    rc = weft_exec_wait(e);
    assert_int_equal(rc, WEFT_EIO);
    snprintf(want, sizeof want, "node %u (native)", (unsigned)nodes[FAILING]);
    assert_non_null(strstr(weft_last_error(), want));
    assert_non_null(strstr(weft_last_error(), "returned 5"));
    assert_int_equal(after, 0);
    assert_int_equal(m.calls, NODES);
    assert_int_equal(m.timeouts, 0);
    __atomic_store_n(&m.fail, NODES, __ATOMIC_SEQ_CST);
    __atomic_store_n(&m.arrived, 0, __ATOMIC_SEQ_CST);
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    assert_int_equal(after, 2);
    assert_int_equal(m.calls, 2 * NODES);
    assert_int_equal(m.timeouts, 0);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_first),
        cmocka_unit_test(test_concurrent_replay),
        cmocka_unit_test(test_concurrent_fails),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
