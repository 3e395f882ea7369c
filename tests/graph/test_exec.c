/*
 * The first executor end to end, on the first device of WEFT_DEVICES
 * (host, sim with real data, PoCL, CUDA): kernels over chunks, every node
 * kind, repeated launches without re-uploads, a failing node cancelling
 * its descendants only, a graph destroyed before its exec, two execs on
 * one buffer from two threads, and failure injection over instantiate and
 * launch.
 */
#include "wt_test.h"

#include "wt_kernels.h"
#include "drivers/sim/sim.h"
#include "sched/tape.h"
#include "mem/buffer.h"
#include "wt_devices.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static wt_devices devs;
static weft_module *mod;
static weft_kernel *k_scale, *k_advance, *k_addone, *k_twice;

static int setup(void **state)
{
    (void)state;
    wt_devices_open(&devs);
    if (wt_kernels_module(devs.rt, &mod) < 0 ||
        weft_module_get_kernel(mod, "scale", &k_scale) < 0 ||
        weft_module_get_kernel(mod, "advance", &k_advance) < 0 ||
        weft_module_get_kernel(mod, "addone", &k_addone) < 0 ||
        weft_module_get_kernel(mod, "twice", &k_twice) < 0) {
        fprintf(stderr, "setup: %s\n", weft_last_error());
        return -1;
    }
    printf("# device 0: %s (%s)\n", wt_device(&devs, 0)->name,
           wt_device(&devs, 0)->drv->name);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    weft_module_destroy(mod);
    return weft_runtime_destroy(devs.rt);
}

enum { N = 4096, CHUNKS = 16 };

/* The design's example: 16 chunk kernels over user memory, 3 launches. */
static void test_chunks(void **state)
{
    static float data[N];
    size_t chunk = N / CHUNKS;
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;

    (void)state;
    for (int i = 0; i < N; i++)
        data[i] = (float)i;
    check(weft_buffer_wrap(devs.rt, data, sizeof data, &x));
    check(weft_graph_create(devs.rt, &g));
    for (int c = 0; c < CHUNKS; c++) {
        weft_arg a[] = {weft_arg_buffer(x, c * chunk * sizeof(float),
                                        chunk * sizeof(float), WEFT_READ_WRITE),
                        weft_arg_f32(2.0f), weft_arg_i64((int64_t)chunk)};
        check(weft_graph_add_kernel(g, k_scale, weft_dims1((uint32_t)chunk), a,
                                    3, NULL));
    }
    assert_int_equal(weft_graph_edge_count(g), 0);
    check(weft_graph_instantiate(g, NULL, &e));
    for (int it = 0; it < 3; it++)
        check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_exec_status(e));
    check(weft_buffer_sync_host(x));
    for (int i = 0; i < N; i++)
        if (data[i] != (float)i * 8.0f)
            fail_msg("data[%d] = %g, want %g", i, data[i], (float)i * 8.0f);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

static void map_double(void *ptr, size_t size, void *user)
{
    uint32_t *p = ptr;

    (void)user;
    for (size_t i = 0; i < size / 4; i++)
        p[i] *= 2;
}

static void host_sum(void *const *ptrs, void *user)
{
    const uint32_t *src = ptrs[0];
    uint32_t *dst = ptrs[1];

    dst[0] = 0;
    for (int i = 0; i < *(int *)user; i++)
        dst[0] += src[i];
}

/*
 * Every node kind in one graph, checked against running the nodes one by
 * one on the host (the definition of the result).
 */
static void test_node_kinds(void **state)
{
    enum { M = 256 };
    static uint32_t in[M], out[M], sum_out, want[M];
    uint32_t pat = 5, sum = 0;
    int m = M;
    weft_buffer *a, *b, *s;
    weft_graph *g;
    weft_exec *e;
    weft_node last;

    (void)state;
    for (int i = 0; i < M; i++)
        in[i] = (uint32_t)i;
    check(weft_buffer_create(devs.rt, M * 4, &a));
    check(weft_buffer_create(devs.rt, M * 4, &b));
    check(weft_buffer_create(devs.rt, 4, &s));
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, a, 0, in, M * 4, NULL));
    {
        weft_arg adv[] = {weft_arg_buffer(a, 0, M * 4, WEFT_READ_WRITE),
                          weft_arg_u32(1), weft_arg_i64(M)};
        weft_arg tw[] = {weft_arg_buffer(b, 0, M * 4, WEFT_WRITE),
                         weft_arg_buffer(a, 0, M * 4, WEFT_READ),
                         weft_arg_i64(M)};
        check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), adv, 3, NULL));
        check(weft_graph_add_kernel(g, k_twice, weft_dims1(M), tw, 3, NULL));
    }
    check(weft_graph_add_fill(g, b, 0, 64, &pat, 4, NULL));
    check(weft_graph_add_map(g, b, 64, 64, WEFT_READ_WRITE, map_double, NULL,
                             NULL));
    check(weft_graph_add_copy(g, a, 0, b, 0, 128, NULL));
    {
        weft_access_desc acc[] = {weft_access_range(a, 0, M * 4, WEFT_READ),
                                  weft_access_range(s, 0, 4, WEFT_WRITE)};
        check(weft_graph_add_host(g, host_sum, &m, acc, 2, NULL));
    }
    {
        weft_arg inc[] = {weft_arg_buffer(a, 0, M * 4, WEFT_READ_WRITE),
                          weft_arg_i64(M)};
        check(weft_graph_add_kernel(g, k_addone, weft_dims1(M), inc, 2, NULL));
    }
    check(weft_graph_add_read(g, a, 0, out, M * 4, NULL));
    check(weft_graph_add_read(g, s, 0, &sum_out, 4, &last));
    assert_int_equal(last, 9);

    /* The same on the host, node by node. */
    {
        uint32_t ha[M], hb[M];

        for (int i = 0; i < M; i++)
            ha[i] = wt_advance_value((uint32_t)i, 1);
        for (int i = 0; i < M; i++)
            hb[i] = 2 * ha[i];
        for (int i = 0; i < 16; i++)
            hb[i] = 5;
        for (int i = 16; i < 32; i++)
            hb[i] *= 2;
        memcpy(ha, hb, 128);
        for (int i = 0; i < M; i++)
            sum += ha[i];
        for (int i = 0; i < M; i++)
            want[i] = ha[i] + 1;
    }
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_graph_destroy(g)); /* the exec lives on */
    for (int it = 0; it < 2; it++) {
        memset(out, 0, sizeof out);
        sum_out = 0;
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        assert_memory_equal(out, want, sizeof want);
        assert_int_equal(sum_out, sum);
    }
    /* The exec holds its buffers. */
    assert_int_equal(weft_buffer_destroy(a), WEFT_EBUSY);
    check(weft_exec_destroy(e));
    check(weft_buffer_destroy(a));
    check(weft_buffer_destroy(b));
    check(weft_buffer_destroy(s));
}

/*
 * A chain of advance kernels shows the order; the second launch runs on
 * the first's result and moves nothing to the device again.
 */
/*
 * An executable graph reads the graph's node and access arrays without a
 * copy until the graph changes: nodes added, an edge, a priority and a
 * device set after instantiate leave the executable graphs made before as
 * they were, whether the graph or they are destroyed first.
 */
enum { CH = 64 };

/* Launch e; every uint32 of b must then be want. */
static void run_expect(weft_exec *e, weft_buffer *b, uint32_t want)
{
    uint32_t got[CH];

    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_buffer_read(b, 0, got, CH * 4));
    for (unsigned i = 0; i < CH; i++)
        assert_int_equal(got[i], want);
}

static void test_graph_changes_after_instantiate(void **state)
{
    uint32_t zero[CH] = {0};
    weft_arg inc[] = {weft_arg_buffer(NULL, 0, CH * 4, WEFT_READ_WRITE),
                      weft_arg_i64(CH)};
    weft_exec *e1, *e2, *e3;
    weft_node n0, n1;
    weft_buffer *b;
    weft_graph *g;

    (void)state;
    check(weft_buffer_create(devs.rt, CH * 4, &b));
    inc[0] = weft_arg_buffer(b, 0, CH * 4, WEFT_READ_WRITE);
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_kernel(g, k_addone, weft_dims1(CH), inc, 2, &n0));
    check(weft_graph_instantiate(g, NULL, &e1)); /* one node */
    check(weft_graph_instantiate(g, NULL, &e2)); /* the same arrays */
    /* the graph changes: e1 and e2 keep one node each */
    check(weft_graph_add_kernel(g, k_addone, weft_dims1(CH), inc, 2, &n1));
    for (int k = 0; k < 1000; k++) /* the arrays grow: moved, were they
                                      not copied first (ASan would see) */
        check(weft_graph_add_empty(g, NULL));
    check(weft_graph_set_priority(g, n0, WEFT_PRIORITY_HIGH));
    check(weft_graph_set_device(g, n1, weft_runtime_device(devs.rt, 0)));
    check(weft_graph_instantiate(g, NULL, &e3)); /* three nodes */
    check(weft_graph_add_kernel(g, k_addone, weft_dims1(CH), inc, 2, NULL));
    check(weft_buffer_write(b, 0, zero, sizeof zero));
    run_expect(e1, b, 1);
    run_expect(e3, b, 3);
    /* the graph goes first: the executable graphs still hold its arrays */
    check(weft_graph_destroy(g));
    run_expect(e2, b, 4);
    check(weft_exec_destroy(e1));
    run_expect(e3, b, 6);
    check(weft_exec_destroy(e3));
    run_expect(e2, b, 7);
    check(weft_exec_destroy(e2));
    check(weft_buffer_destroy(b));
}

static void test_relaunch_keeps_copies(void **state)
{
    enum { M = 1024 };
    static uint32_t data[M];
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    long h2d_first, h2d_second;

    (void)state;
    for (int i = 0; i < M; i++)
        data[i] = (uint32_t)i;
    check(weft_buffer_wrap(devs.rt, data, sizeof data, &x));
    check(weft_graph_create(devs.rt, &g));
    for (uint32_t k = 1; k <= 5; k++) {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(k), weft_arg_i64(M)};
        check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), a, 3, NULL));
    }
    assert_int_equal(weft_graph_edge_count(g), 4);
    check(weft_graph_instantiate(g, NULL, &e));
    /* Count the uploads: an armed filter that never fires counts checks. */
    weft__fault_arm(1L << 40, "copy_h2d");
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    h2d_first = weft__fault_seen();
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    h2d_second = weft__fault_seen() - h2d_first;
    weft__fault_disarm();
    assert_int_equal(h2d_first, 1);
    assert_int_equal(h2d_second, 0);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    /* Destroying the buffer brings the final bytes home. */
    check(weft_buffer_destroy(x));
    for (int i = 0; i < M; i++) {
        uint32_t v = (uint32_t)i;

        for (int it = 0; it < 2; it++)
            for (uint32_t k = 1; k <= 5; k++)
                v = wt_advance_value(v, k);
        if (data[i] != v)
            fail_msg("data[%d] = %u, want %u", i, data[i], v);
    }
}

/* A failing kernel cancels what depends on it, and only that. */
/* The latest use of any of root's device copies (eviction's LRU). */
static uint64_t device_last_use(weft_buffer *root)
{
    uint64_t last = 0;

    weft__buffer_lock(root);
    for (unsigned d = 0;
         root->replicas && d < weft_runtime_device_count(devs.rt); d++)
        for (size_t k = 0; k < root->replicas[d].nextents; k++)
            if (root->replicas[d].extents[k]->last_use > last)
                last = root->replicas[d].extents[k]->last_use;
    weft__buffer_unlock(root);
    return last;
}

/*
 * Relaunches that issue the same work: a device with native graphs (CUDA;
 * OpenCL with cl_khr_command_buffer, as PoCL) replays the graph a launch was
 * recorded into once the buffers are as that launch found them (the first
 * launch uploads): at least half of 6 launches; the bytes must be those of
 * every launch having run, node by node. With the exec option native_graphs
 * OFF, none is native.
 */
static void test_native_relaunch(void **state)
{
    enum { M = 1024, LAUNCHES = 6 };
    static uint32_t data[M], out[M];
    weft_exec_stats st = {.size = sizeof st};
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    int native = weft__tape_supported(wt_device(&devs, 0), 0);

    (void)state;
    for (int i = 0; i < M; i++)
        data[i] = (uint32_t)i;
    check(weft_buffer_wrap(devs.rt, data, sizeof data, &x));
    check(weft_graph_create(devs.rt, &g));
    for (uint32_t k = 1; k <= 5; k++) {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(k), weft_arg_i64(M)};
        check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), a, 3, NULL));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    for (int l = 0; l < LAUNCHES; l++) {
        uint64_t next = x->next_use, last = device_last_use(x);

        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        /* Eviction's bookkeeping moves on with every launch, a replay
         * (which issues nothing) included. */
        assert_true(x->next_use > next);
        assert_true(device_last_use(x) > last);
    }
    /* Right after the wait: the bytes of the last launch are there. */
    check(weft_buffer_read(x, 0, out, sizeof out));
    for (int i = 0; i < M; i++) {
        uint32_t v = (uint32_t)i;

        for (int it = 0; it < LAUNCHES; it++)
            for (uint32_t k = 1; k <= 5; k++)
                v = wt_advance_value(v, k);
        if (out[i] != v)
            fail_msg("read after the wait: x[%d] = %u, want %u", i, out[i], v);
    }
    check(weft_exec_get_stats(e, &st));
    printf("# %d launches, %llu as a native graph, %llu of them replays\n",
           LAUNCHES, (unsigned long long)st.native_launches,
           (unsigned long long)st.native_replays);
    if (native) {
        assert_true(st.native_launches >= LAUNCHES / 2);
        /* The buffer stays on the device: once a launch was recorded
         * into the graph and left the copies as it found them, the next
         * ones replay, with no launch that issues and matches first. */
        assert_true(st.native_replays >= 1);
        assert_int_equal(st.native_replays, st.native_launches);
    } else {
        assert_int_equal(st.native_launches, 0);
        assert_int_equal(st.native_replays, 0);
    }
    check(weft_exec_destroy(e));
    /* The same graph with native graphs off: every launch op by op; a
     * value that is no weft_native_graphs is refused. */
    {
        weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;

        o.native_graphs = (weft_native_graphs)7;
        assert_int_equal(weft_graph_instantiate(g, &o, &e), WEFT_EINVAL);
        o.native_graphs = WEFT_NATIVE_GRAPHS_OFF;
        check(weft_graph_instantiate(g, &o, &e));
        for (int l = 0; l < LAUNCHES; l++) {
            check(weft_exec_launch(e));
            check(weft_exec_wait(e));
        }
        check(weft_exec_get_stats(e, &st));
        assert_int_equal(st.launches, LAUNCHES);
        assert_int_equal(st.native_launches, 0);
        assert_int_equal(st.native_replays, 0);
        check(weft_exec_destroy(e));
    }
    check(weft_graph_destroy(g));
    check(weft_buffer_sync_host(x));
    for (int i = 0; i < M; i++) {
        uint32_t v = (uint32_t)i;

        for (int it = 0; it < 2 * LAUNCHES; it++)
            for (uint32_t k = 1; k <= 5; k++)
                v = wt_advance_value(v, k);
        if (data[i] != v)
            fail_msg("data[%d] = %u, want %u", i, data[i], v);
    }
    check(weft_buffer_destroy(x));
}

/*
 * Named edges (tape.h): a host native graph runs independent kernels side
 * by side even where the plan put them on one lane. Four independent
 * kernels on a host device of two threads (two lanes): the first, armed,
 * waits (up to 5 s) for the third, which the plan puts after it on its
 * lane. Op by op (the first launch) lane order holds, so it is not armed
 * then; in the native graph of the second launch the third must run
 * beside the first.
 */
static int named_armed, named_set, named_saw;

/*
 * A runtime of one host device of the given threads with native graphs,
 * else the test skips, saying so (WEFT_DEVICES, WEFT_HOST_DEVICES,
 * WEFT_HOST_THREADS and WEFT_NATIVE_GRAPHS win over the options: the runs
 * of this file with them set skip the named-edge tests).
 */
static weft_runtime *named_open(unsigned threads)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_runtime *rt;

    o.devices = "host";
    o.host_threads = threads;
    check(weft_runtime_create(&rt, &o));
    if (weft_runtime_device_count(rt) != 1 ||
        strcmp(rt->devices[0]->drv->name, "host") != 0 ||
        rt->devices[0]->props.compute_units < threads ||
        !weft__tape_supported(rt->devices[0], 0)) {
        printf("# skipped: needs one host device of %u threads or more with "
               "native graphs (WEFT_DEVICES=host, as exec_host runs)\n",
               threads);
        check(weft_runtime_destroy(rt));
        skip();
    }
    return rt;
}

static void named_wait(const weft_host_group *g, void *const *args)
{
    (void)g;
    *(uint32_t *)args[0] = 1;
    if (!__atomic_load_n(&named_armed, __ATOMIC_ACQUIRE))
        return;
    for (int i = 0; i < 50000 && !__atomic_load_n(&named_set, __ATOMIC_ACQUIRE);
         i++)
        usleep(100); /* (up to about 5 s; longer where sleeps overrun) */
    __atomic_store_n(&named_saw, __atomic_load_n(&named_set, __ATOMIC_ACQUIRE),
                     __ATOMIC_RELEASE);
}

static void named_mark(const weft_host_group *g, void *const *args)
{
    (void)g;
    *(uint32_t *)args[0] = 2;
    if (*(const uint32_t *)args[1])
        __atomic_store_n(&named_set, 1, __ATOMIC_RELEASE);
}

static void test_native_named_edges(void **state)
{
    static const weft_param_type pw[] = {WEFT_PARAM_BUFFER};
    static const weft_param_type pm[] = {WEFT_PARAM_BUFFER, WEFT_PARAM_U32};
    static const weft_host_kernel hk[] = {
        {"named_wait", named_wait, 1, pw, NULL, NULL, NULL},
        {"named_mark", named_mark, 2, pm, NULL, NULL, NULL},
    };
    const weft_module_source src = {WEFT_SOURCE_HOST, hk, 2, NULL, "named"};
    weft_exec_stats st = {.size = sizeof st};
    static uint32_t cell[4 * 16];
    weft_kernel *kw, *km;
    weft_runtime *rt;
    weft_module *m;
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;

    (void)state;
    rt = named_open(2);
    check(weft_module_create(rt, &src, 1, &m));
    check(weft_module_get_kernel(m, "named_wait", &kw));
    check(weft_module_get_kernel(m, "named_mark", &km));
    check(weft_buffer_wrap(rt, cell, sizeof cell, &b));
    check(weft_graph_create(rt, &g));
    for (uint32_t i = 0; i < 4; i++) {
        /* a cell a line apart for each: no edge between them */
        weft_arg a[] = {weft_arg_buffer(b, i * 64, 4, WEFT_WRITE),
                        weft_arg_u32(i == 2)};

        check(weft_graph_add_kernel(g, i ? km : kw, weft_dims1(1), a, i ? 2 : 1,
                                    NULL));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    __atomic_store_n(&named_set, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&named_armed, 1, __ATOMIC_RELEASE);
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    __atomic_store_n(&named_armed, 0, __ATOMIC_RELEASE);
    check(weft_exec_get_stats(e, &st));
    printf("# named edges: %llu of 2 launches native, the waiting kernel %s "
           "the third run\n",
           (unsigned long long)st.native_launches,
           named_saw ? "saw" : "did not see");
    assert_int_equal(st.native_launches, 1);
    assert_int_equal(named_saw, 1);
    check(weft_buffer_sync_host(b));
    for (int i = 0; i < 4; i++)
        assert_int_equal(cell[i * 16], i ? 2 : 1);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
    check(weft_module_destroy(m));
    check(weft_runtime_destroy(rt));
}

/*
 * Named edges keep what a lane knew through another: on three lanes, k and
 * j are independent kernels on one lane (j after k: j has no edge to k in
 * the native graph), n follows j on another, m follows n on a third, and x
 * follows m and a host task, and writes what k wrote: the plan issues no
 * wait for k on x's lane (its clock knows k through j, n and m), so the
 * graph must carry that knowledge along those records. k takes 300 ms
 * from the second launch on; x's write must land last every time.
 */
static int order_armed;

static void order_slow(const weft_host_group *g, void *const *args)
{
    (void)g;
    if (__atomic_load_n(&order_armed, __ATOMIC_ACQUIRE))
        usleep(300000);
    *(volatile uint32_t *)args[0] = 1;
}

static void order_last(const weft_host_group *g, void *const *args)
{
    (void)g;
    *(volatile uint32_t *)args[0] = 2;
}

static void order_host(void *const *ptrs, void *user)
{
    (void)ptrs;
    (void)user;
}

static void test_native_named_edges_order(void **state)
{
    static const weft_param_type pw[] = {WEFT_PARAM_BUFFER};
    static const weft_host_kernel hk[] = {
        {"order_slow", order_slow, 1, pw, NULL, NULL, NULL},
        {"order_mark", named_wait, 1, pw, NULL, NULL, NULL},
        {"order_last", order_last, 1, pw, NULL, NULL, NULL},
    };
    const weft_module_source src = {WEFT_SOURCE_HOST, hk, 3, NULL, "order"};
    weft_exec_stats st = {.size = sizeof st};
    static uint32_t cell[16 * 16];
    weft_kernel *ks, *km, *kl;
    weft_node nd[14];
    weft_runtime *rt;
    weft_module *m;
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;

    (void)state;
    rt = named_open(3);
    check(weft_module_create(rt, &src, 1, &m));
    check(weft_module_get_kernel(m, "order_slow", &ks));
    check(weft_module_get_kernel(m, "order_mark", &km));
    check(weft_module_get_kernel(m, "order_last", &kl));
    check(weft_buffer_wrap(rt, cell, sizeof cell, &b));
    check(weft_graph_create(rt, &g));
    /* 0 k, 1-2 fillers, 3 j, 4-6 fillers, 7 n, 8-10 fillers, 11 m, each
     * writing a cell of its own (k the first) */
    for (uint32_t i = 0; i < 12; i++) {
        weft_arg a[] = {
            weft_arg_buffer(b, i ? (i + 1) * 64 : 0, 4, WEFT_WRITE)};

        check(
            weft_graph_add_kernel(g, i ? km : ks, weft_dims1(1), a, 1, &nd[i]));
    }
    check(weft_graph_add_edge(g, nd[3], nd[7]));
    check(weft_graph_add_edge(g, nd[7], nd[11]));
    check(weft_graph_add_host(g, order_host, NULL, NULL, 0, &nd[12]));
    {
        weft_arg a[] = {weft_arg_buffer(b, 0, 4, WEFT_WRITE)};

        check(weft_graph_add_kernel(g, kl, weft_dims1(1), a, 1, &nd[13]));
    }
    check(weft_graph_add_edge(g, nd[11], nd[13]));
    check(weft_graph_add_edge(g, nd[12], nd[13]));
    check(weft_graph_instantiate(g, NULL, &e));
    for (int l = 0; l < 4; l++) {
        __atomic_store_n(&order_armed, l > 0, __ATOMIC_RELEASE);
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        check(weft_buffer_sync_host(b));
        if (cell[0] != 2)
            fail_msg("launch %d: the last write is k's (%u), not x's", l,
                     cell[0]);
    }
    __atomic_store_n(&order_armed, 0, __ATOMIC_RELEASE);
    check(weft_exec_get_stats(e, &st));
    printf("# named edges, order through three lanes: %llu of 4 launches "
           "native\n",
           (unsigned long long)st.native_launches);
    assert_true(st.native_launches >= 2);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
    check(weft_module_destroy(m));
    check(weft_runtime_destroy(rt));
}

static void sim_no_hazards(const weft_device *d);

/* native_replays of e after its launches so far. */
static uint64_t replays_of(weft_exec *e)
{
    weft_exec_stats st = {.size = sizeof st};

    check(weft_exec_get_stats(e, &st));
    return st.native_replays;
}

/*
 * Replays start at the second launch where that is right. Three graphs of
 * kernels on device 0, each launched 4 times: a chain over x (the first
 * launch uploads x, which the second does not: its graph is recorded
 * ahead, at the start of the second); a fan writing slices of y from
 * slices of z (z uploaded first); and a fan writing w from x where x is on
 * the device already (the first launch moves nothing, and what it
 * recorded is what the second issues: the second captures the graph from
 * that recording, the first leaves it uncaptured), once the others are
 * destroyed (a root
 * shared by live executable graphs has no native graph). The chain is
 * also launched after a write of x by the program: that launch may not
 * replay, the one after it does. The bytes are checked at the end.
 */
static void test_replay_from_second_launch(void **state)
{
    enum { M = 4096, NK = 6, LAUNCHES = 4 };
    static uint32_t x0[M], out[M], want[M], z0[M];
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    int native = weft__tape_supported(wt_device(&devs, 0), 0);
    weft_buffer *x, *y, *z, *w;
    weft_graph *gc, *gf, *gw;
    weft_exec *ec, *ef, *ew;
    weft_device_info info = {.size = sizeof info};
    size_t slice; /* elements per fan slice: 128 bytes, or the alignment */

    (void)state;
    o.device = weft_runtime_device(devs.rt, 0);
    check(weft_device_get_info(o.device, &info));
    slice = WEFT__MAX(128, info.arg_offset_align) / sizeof(uint32_t);
    assert_true(NK * slice <= M);
    for (int i = 0; i < M; i++) {
        x0[i] = (uint32_t)i;
        z0[i] = (uint32_t)(3 * i + 1);
    }
    check(weft_buffer_create(devs.rt, sizeof x0, &x));
    check(weft_buffer_write(x, 0, x0, sizeof x0));
    check(weft_buffer_create(devs.rt, sizeof x0, &y));
    check(weft_buffer_create(devs.rt, sizeof z0, &z));
    check(weft_buffer_write(z, 0, z0, sizeof z0));
    check(weft_buffer_create(devs.rt, sizeof x0, &w));
    check(weft_graph_create(devs.rt, &gc));
    check(weft_graph_create(devs.rt, &gf));
    check(weft_graph_create(devs.rt, &gw));
    for (uint32_t k = 0; k < NK; k++) {
        size_t at = k * slice * sizeof(uint32_t),
               len = slice * sizeof(uint32_t);
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(k + 1), weft_arg_i64(M)};
        weft_arg b[] = {weft_arg_buffer(y, at, len, WEFT_WRITE),
                        weft_arg_buffer(z, at, len, WEFT_READ),
                        weft_arg_i64((int64_t)slice)};
        weft_arg c[] = {weft_arg_buffer(w, at, len, WEFT_WRITE),
                        weft_arg_buffer(x, at, len, WEFT_READ),
                        weft_arg_i64((int64_t)slice)};

        check(weft_graph_add_kernel(gc, k_advance, weft_dims1(M), a, 3, NULL));
        check(weft_graph_add_kernel(gf, k_twice, weft_dims1((uint32_t)slice), b,
                                    3, NULL));
        check(weft_graph_add_kernel(gw, k_twice, weft_dims1((uint32_t)slice), c,
                                    3, NULL));
    }
    check(weft_graph_instantiate(gc, &o, &ec));
    check(weft_graph_instantiate(gf, &o, &ef));
    memcpy(want, x0, sizeof want);
    for (int l = 1; l <= LAUNCHES; l++) {
        check(weft_exec_launch(ec));
        check(weft_exec_wait(ec));
        check(weft_exec_launch(ef));
        check(weft_exec_wait(ef));
        for (int i = 0; i < M; i++)
            for (uint32_t k = 0; k < NK; k++)
                want[i] = wt_advance_value(want[i], k + 1);
        /* The first launch issues; every later one replays. */
        assert_int_equal(replays_of(ec), native ? l - 1 : 0);
        assert_int_equal(replays_of(ef), native ? l - 1 : 0);
    }
    /* (A read brings the bytes home: not between the launches, then.) */
    check(weft_buffer_read(x, 0, out, sizeof out));
    assert_memory_equal(out, want, sizeof out);
    check(weft_buffer_read(y, 0, out, NK * slice * sizeof *out));
    for (size_t i = 0; i < NK * slice; i++)
        assert_int_equal(out[i], 2 * z0[i]);
    /* The program writes x: the buffers' state changed, so the next
     * launch issues (it may not replay). */
    for (int i = 0; i < M; i++)
        want[i] = x0[i] = (uint32_t)(7 * i);
    check(weft_buffer_write(x, 0, x0, sizeof x0));
    check(weft_exec_launch(ec));
    check(weft_exec_wait(ec));
    assert_int_equal(replays_of(ec), native ? LAUNCHES - 1 : 0);
    /* ... and the one after it replays again. */
    check(weft_exec_launch(ec));
    check(weft_exec_wait(ec));
    assert_int_equal(replays_of(ec), native ? LAUNCHES : 0);
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < M; i++)
            for (uint32_t k = 0; k < NK; k++)
                want[i] = wt_advance_value(want[i], k + 1);
    check(weft_buffer_read(x, 0, out, sizeof out));
    assert_memory_equal(out, want, sizeof out);
    /* x is on the device now (and no other executable graph names it):
     * w's first launch moves nothing. */
    check(weft_exec_destroy(ec));
    check(weft_exec_destroy(ef));
    check(weft_graph_instantiate(gw, &o, &ew));
    for (int l = 1; l <= LAUNCHES; l++) {
        weft_exec_stats st = {.size = sizeof st};

        check(weft_exec_launch(ew));
        check(weft_exec_wait(ew));
        assert_int_equal(replays_of(ew), native ? l - 1 : 0);
        /* Launched once: recorded, no driver graph made yet. */
        check(weft_exec_get_stats(ew, &st));
        assert_true(l == 1 || !native ? st.native_graphs == 0
                                      : st.native_graphs >= 1);
    }
    check(weft_buffer_read(w, 0, out, NK * slice * sizeof *out));
    for (size_t i = 0; i < NK * slice; i++)
        assert_int_equal(out[i], 2 * want[i]);
    check(weft_exec_destroy(ew));
    check(weft_graph_destroy(gc));
    check(weft_graph_destroy(gf));
    check(weft_graph_destroy(gw));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_buffer_destroy(z));
    check(weft_buffer_destroy(w));
}

/*
 * A graph launched once records no native graph it will not run: the
 * first launch of a chain over x uploads x and issues op by op; the
 * native graph the second launch replays is recorded at that launch's
 * start (the lookahead), not at the end of the first. So after one
 * launch the executable graph holds no driver graph, and after two it
 * has replayed once. The bytes are checked at the end.
 */
static void test_lookahead_at_second_launch(void **state)
{
    enum { M = 4096, NK = 4, LAUNCHES = 4 };
    static uint32_t x0[M], out[M], want[M];
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    int native = weft__tape_supported(wt_device(&devs, 0), 0);
    weft_exec_stats st = {.size = sizeof st};
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;

    (void)state;
    o.device = weft_runtime_device(devs.rt, 0);
    for (int i = 0; i < M; i++)
        want[i] = x0[i] = (uint32_t)(5 * i + 2);
    check(weft_buffer_create(devs.rt, sizeof x0, &x));
    check(weft_buffer_write(x, 0, x0, sizeof x0));
    check(weft_graph_create(devs.rt, &g));
    for (uint32_t k = 0; k < NK; k++) {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(k + 1), weft_arg_i64(M)};

        check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), a, 3, NULL));
    }
    check(weft_graph_instantiate(g, &o, &e));
    for (int l = 1; l <= LAUNCHES; l++) {
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        for (int i = 0; i < M; i++)
            for (uint32_t k = 0; k < NK; k++)
                want[i] = wt_advance_value(want[i], k + 1);
        check(weft_exec_get_stats(e, &st));
        /* One launch: op by op, and no driver graph made for a next one;
         * from the second on, replays. */
        assert_int_equal(st.native_launches, native ? l - 1 : 0);
        assert_int_equal(st.native_replays, native ? l - 1 : 0);
        assert_true(l == 1 || !native ? st.native_graphs == 0
                                      : st.native_graphs >= 1);
    }
    check(weft_buffer_read(x, 0, out, sizeof out));
    assert_memory_equal(out, want, sizeof out);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

/*
 * Two devices: a kernel on device 0 doubles x into w, then one on device 1
 * doubles y into x. With x on device 0 and y on device 1 before the first
 * launch, that launch moves no bytes, but it leaves x on device 1: the next
 * one must bring x back to device 0 first, so it may not replay what the
 * first recorded (w would be doubled from the old x, at every launch).
 */
static void test_no_replay_when_reads_moved(void **state)
{
    enum { M = 256, LAUNCHES = 4 };
    static uint32_t x0[M], y0[M], out[M];
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    const weft_device *d0, *d1;
    weft_buffer *x, *y, *w;
    weft_graph *g, *pre;
    weft_exec *e;
    weft_node n0, n1, p0, p1;

    (void)state;
    if (weft_runtime_device_count(devs.rt) < 2) {
        printf("skipped: test_no_replay_when_reads_moved needs two devices\n");
        return;
    }
    d0 = weft_runtime_device(devs.rt, 0);
    d1 = weft_runtime_device(devs.rt, 1);
    for (int i = 0; i < M; i++) {
        x0[i] = (uint32_t)i;
        y0[i] = (uint32_t)(5 * i + 2);
    }
    check(weft_buffer_create(devs.rt, sizeof x0, &x));
    check(weft_buffer_write(x, 0, x0, sizeof x0));
    check(weft_buffer_create(devs.rt, sizeof y0, &y));
    check(weft_buffer_write(y, 0, y0, sizeof y0));
    check(weft_buffer_create(devs.rt, sizeof x0, &w));
    /* x to device 0, y to device 1 (each advanced by 9 there). */
    check(weft_graph_create(devs.rt, &pre));
    {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(9), weft_arg_i64(M)};
        weft_arg b[] = {weft_arg_buffer(y, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(9), weft_arg_i64(M)};

        check(weft_graph_add_kernel(pre, k_advance, weft_dims1(M), a, 3, &p0));
        check(weft_graph_add_kernel(pre, k_advance, weft_dims1(M), b, 3, &p1));
    }
    check(weft_graph_set_device(pre, p0, d0));
    check(weft_graph_set_device(pre, p1, d1));
    /* No default device: each node's own. */
    check(weft_graph_instantiate(pre, &o, &e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(pre));
    for (int i = 0; i < M; i++) {
        x0[i] = wt_advance_value(x0[i], 9);
        y0[i] = wt_advance_value(y0[i], 9);
    }
    check(weft_graph_create(devs.rt, &g));
    {
        weft_arg a[] = {weft_arg_buffer(w, 0, WEFT_WHOLE, WEFT_WRITE),
                        weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ),
                        weft_arg_i64(M)};
        weft_arg b[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_WRITE),
                        weft_arg_buffer(y, 0, WEFT_WHOLE, WEFT_READ),
                        weft_arg_i64(M)};

        check(weft_graph_add_kernel(g, k_twice, weft_dims1(M), a, 3, &n0));
        check(weft_graph_add_kernel(g, k_twice, weft_dims1(M), b, 3, &n1));
    }
    check(weft_graph_set_device(g, n0, d0));
    check(weft_graph_set_device(g, n1, d1));
    check(weft_graph_instantiate(g, &o, &e));
    for (int l = 1; l <= LAUNCHES; l++) {
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        if (l == 2)
            assert_int_equal(replays_of(e), 0);
    }
    /* (No read between the launches: it would bring the bytes home.) */
    check(weft_buffer_read(w, 0, out, sizeof out));
    for (int i = 0; i < M; i++)
        assert_int_equal(out[i], 4 * y0[i]);
    check(weft_buffer_read(x, 0, out, sizeof out));
    for (int i = 0; i < M; i++)
        assert_int_equal(out[i], 2 * y0[i]);
    sim_no_hazards(d0);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_buffer_destroy(w));
}

/* wt_advance_value k times over v with the steps ks[0..n). */
static uint32_t advance_all(uint32_t v, const uint32_t *ks, int n)
{
    for (int i = 0; i < n; i++)
        v = wt_advance_value(v, ks[i]);
    return v;
}

/*
 * Between launches the program changes what the graph must do: a scalar
 * argument (weft_exec_set_arg), and the buffer's bytes (weft_buffer_write).
 * Each launch must do exactly what a fresh graph would: a native graph is
 * updated in place for the scalar, and not replayed blindly after the
 * write. Bad uses of weft_exec_set_arg are refused and change nothing.
 */
static void test_relaunch_changes(void **state)
{
    enum { M = 512, NK = 4 };
    static uint32_t data[M], out[M];
    uint32_t ks[NK] = {1, 2, 3, 4};
    weft_exec_stats st = {.size = sizeof st};
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    weft_node nodes[NK];
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    int native = weft__tape_supported(wt_device(&devs, 0), 0);

    (void)state;
    o.device = weft_runtime_device(devs.rt, 0);
    for (int i = 0; i < M; i++)
        data[i] = (uint32_t)i;
    check(weft_buffer_create(devs.rt, sizeof data, &x));
    check(weft_buffer_write(x, 0, data, sizeof data));
    check(weft_graph_create(devs.rt, &g));
    for (int k = 0; k < NK; k++) {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(ks[k]), weft_arg_i64(M)};
        check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), a, 3,
                                    &nodes[k]));
    }
    check(weft_graph_instantiate(g, &o, &e));
    /* Refused: a buffer, another type, a node that is no kernel, an index
     * past the arguments. */
    assert_int_equal(
        weft_exec_set_arg(e, nodes[0], 0,
                          weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE)),
        WEFT_EARGS);
    assert_int_equal(weft_exec_set_arg(e, nodes[0], 1, weft_arg_u64(7)),
                     WEFT_EARGS);
    assert_int_equal(weft_exec_set_arg(e, nodes[0], 3, weft_arg_u32(7)),
                     WEFT_EARGS);
    assert_int_equal(weft_exec_set_arg(e, 99, 1, weft_arg_u32(7)), WEFT_EINVAL);
    for (int round = 0; round < 4; round++) {
        /* Launches that repeat themselves (a native graph, replays). */
        for (int l = 0; l < 4; l++) {
            check(weft_exec_launch(e));
            check(weft_exec_wait(e));
            for (int i = 0; i < M; i++)
                data[i] = advance_all(data[i], ks, NK);
        }
        check(weft_buffer_read(x, 0, out, sizeof out));
        for (int i = 0; i < M; i++)
            if (out[i] != data[i])
                fail_msg("round %d: x[%d] = %u, want %u", round, i, out[i],
                         data[i]);
        if (round == 1) {
            /* New bytes from the program: the next launch starts there. */
            for (int i = 0; i < M; i++)
                data[i] = (uint32_t)(i * 7 + 1);
            check(weft_buffer_write(x, 0, data, sizeof data));
        } else {
            /* A new step for one node. */
            int j = 1 + round % (NK - 1);

            ks[j] = (uint32_t)(10 + round);
            check(weft_exec_set_arg(e, nodes[j], 1, weft_arg_u32(ks[j])));
        }
    }
    check(weft_exec_get_stats(e, &st));
    printf("# %llu launches: %llu native, %llu replays, %llu graph updates\n",
           (unsigned long long)st.launches,
           (unsigned long long)st.native_launches,
           (unsigned long long)st.native_replays,
           (unsigned long long)st.native_updates);
    if (native) {
        /* Two scalar changes took the graph along (no new recording). */
        assert_true(st.native_updates >= 2);
        assert_true(st.native_replays >= 2);
    } else {
        assert_int_equal(st.native_updates, 0);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

/*
 * A graph over two devices of one driver: x goes through a kernel on
 * device 0, then one on device 1, and back, every launch (the bytes move
 * between the devices). Where the driver's graphs wait for each other
 * (CUDA, the sim with graphs=1) its relaunches run as one native graph per
 * device, else op by op; the bytes are right either way.
 */
static void test_native_two_devices(void **state)
{
    enum { M = 512, LAUNCHES = 6 };
    static uint32_t out[M];
    weft_exec_stats st = {.size = sizeof st};
    weft_device_info i0 = {.size = sizeof i0}, i1 = {.size = sizeof i1};
    const weft_device *d0, *d1;
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    weft_node n0, n1;
    const uint32_t zero = 0;
    int across;

    (void)state;
    if (weft_runtime_device_count(devs.rt) < 2) {
        printf("skipped: test_native_two_devices needs two devices\n");
        return;
    }
    d0 = weft_runtime_device(devs.rt, 0);
    d1 = weft_runtime_device(devs.rt, 1);
    check(weft_device_get_info(d0, &i0));
    check(weft_device_get_info(d1, &i1));
    if (strcmp(i0.driver, i1.driver) != 0) {
        printf("skipped: test_native_two_devices needs two devices of one "
               "driver\n");
        return;
    }
    across = weft__tape_supported(weft__device_of(d0), 0) &&
             weft__tape_supported(weft__device_of(d1), 0) &&
             weft__tape_joins_devices(weft__device_of(d0)->drv);
    check(weft_buffer_create(devs.rt, sizeof out, &x));
    check(weft_buffer_fill(x, 0, WEFT_WHOLE, &zero, sizeof zero));
    check(weft_graph_create(devs.rt, &g));
    {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(1), weft_arg_i64(M)};
        weft_arg b[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(2), weft_arg_i64(M)};

        check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), a, 3, &n0));
        check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), b, 3, &n1));
    }
    check(weft_graph_set_device(g, n0, d0));
    check(weft_graph_set_device(g, n1, d1));
    check(weft_graph_instantiate(g, NULL, &e));
    for (int l = 0; l < LAUNCHES; l++) {
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
    }
    check(weft_exec_get_stats(e, &st));
    printf("# two devices: %d launches, %llu native, %llu replays\n", LAUNCHES,
           (unsigned long long)st.native_launches,
           (unsigned long long)st.native_replays);
    assert_int_equal(st.devices_used, 2);
    if (across) {
        assert_true(st.native_launches >= LAUNCHES / 2);
        assert_int_equal(st.native_graphs, 2);
    }
    check(weft_buffer_read(x, 0, out, sizeof out));
    for (int i = 0; i < M; i++) {
        uint32_t v = 0;

        for (int l = 0; l < LAUNCHES; l++)
            v = wt_advance_value(wt_advance_value(v, 1), 2);
        if (out[i] != v)
            fail_msg("x[%d] = %u, want %u", i, out[i], v);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

/*
 * Two devices, no byte between them: each doubles the shared input r into
 * its own half of y (one buffer, so that the halves' views share a root),
 * then advances its half. The first launch uploads r to both devices; the
 * next launch moves nothing, so it is recorded ahead at the end of the
 * first and every launch from the second replays. Then a graph whose
 * device 1 kernel reads what device 0's writes (x) never replays ahead of
 * the move (test_no_replay_when_reads_moved has the rest of that case).
 */
static void test_replay_two_devices_from_second(void **state)
{
    enum { M = 1024, H = M / 2, LAUNCHES = 4 };
    static uint32_t r0[M], out[M];
    weft_device_info i0 = {.size = sizeof i0}, i1 = {.size = sizeof i1};
    const weft_device *d[2];
    weft_buffer *r, *y;
    weft_graph *g;
    weft_exec *e;
    int across;

    (void)state;
    if (weft_runtime_device_count(devs.rt) < 2) {
        printf("skipped: test_replay_two_devices_from_second needs two "
               "devices\n");
        return;
    }
    d[0] = weft_runtime_device(devs.rt, 0);
    d[1] = weft_runtime_device(devs.rt, 1);
    check(weft_device_get_info(d[0], &i0));
    check(weft_device_get_info(d[1], &i1));
    across = strcmp(i0.driver, i1.driver) == 0 &&
             weft__tape_supported(weft__device_of(d[0]), 0) &&
             weft__tape_supported(weft__device_of(d[1]), 0) &&
             weft__tape_joins_devices(weft__device_of(d[0])->drv);
    for (int i = 0; i < M; i++)
        r0[i] = (uint32_t)(11 * i + 3);
    check(weft_buffer_create(devs.rt, sizeof r0, &r));
    check(weft_buffer_write(r, 0, r0, sizeof r0));
    check(weft_buffer_create(devs.rt, sizeof r0, &y));
    check(weft_graph_create(devs.rt, &g));
    for (int k = 0; k < 2; k++) {
        size_t at = (size_t)k * H * sizeof(uint32_t),
               len = H * sizeof(uint32_t);
        weft_arg a[] = {weft_arg_buffer(y, at, len, WEFT_WRITE),
                        weft_arg_buffer(r, at, len, WEFT_READ),
                        weft_arg_i64(H)};
        weft_arg b[] = {weft_arg_buffer(y, at, len, WEFT_READ_WRITE),
                        weft_arg_u32((uint32_t)k + 1), weft_arg_i64(H)};
        weft_node n0, n1;

        check(weft_graph_add_kernel(g, k_twice, weft_dims1(H), a, 3, &n0));
        check(weft_graph_add_kernel(g, k_advance, weft_dims1(H), b, 3, &n1));
        check(weft_graph_set_device(g, n0, d[k]));
        check(weft_graph_set_device(g, n1, d[k]));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    for (int l = 1; l <= LAUNCHES; l++) {
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        printf("# launch %d: %llu replays\n", l,
               (unsigned long long)replays_of(e));
        assert_int_equal(replays_of(e), across ? l - 1 : 0);
    }
    check(weft_buffer_read(y, 0, out, sizeof out));
    for (int i = 0; i < M; i++) {
        uint32_t want = wt_advance_value(2 * r0[i], i < H ? 1 : 2);

        if (out[i] != want)
            fail_msg("y[%d] = %u, want %u", i, out[i], want);
    }
    sim_no_hazards(d[0]);
    sim_no_hazards(d[1]);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(r));
    check(weft_buffer_destroy(y));
}

/* On the sim (its check=1 counts them): no work on the same bytes that
 * nothing ordered, so far in this process. */
static void sim_no_hazards(const weft_device *d)
{
    weft_device_info info = {.size = sizeof info};

    check(weft_device_get_info(d, &info));
    if (info.type == WEFT_DEVICE_SIMULATED)
        assert_int_equal(weft__sim_hazards(weft__device_of(d)), 0);
}

/*
 * Within one launch x goes from device 0 to device 1 and back: kernels on
 * 0, 1, 0, 1, 0, each after the one before. Native, that is five driver
 * graphs (device 0's work cut in three), launched in an order that keeps
 * every wait for another device's record (tape.h); a wrong order waits
 * for the launch before's record and shows as wrong bytes, or on the sim
 * with check=1 as hazards.
 */
static void test_native_back_and_forth(void **state)
{
    enum { M = 1024, HOPS = 5, LAUNCHES = 6 };
    static uint32_t out[M];
    weft_exec_stats st = {.size = sizeof st};
    weft_device_info i0 = {.size = sizeof i0}, i1 = {.size = sizeof i1};
    const weft_device *d[2];
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    const uint32_t zero = 0;
    int across;

    (void)state;
    if (weft_runtime_device_count(devs.rt) < 2) {
        printf("skipped: test_native_back_and_forth needs two devices\n");
        return;
    }
    d[0] = weft_runtime_device(devs.rt, 0);
    d[1] = weft_runtime_device(devs.rt, 1);
    check(weft_device_get_info(d[0], &i0));
    check(weft_device_get_info(d[1], &i1));
    if (strcmp(i0.driver, i1.driver) != 0) {
        printf("skipped: test_native_back_and_forth needs two devices of "
               "one driver\n");
        return;
    }
    across = weft__tape_supported(weft__device_of(d[0]), 0) &&
             weft__tape_supported(weft__device_of(d[1]), 0) &&
             weft__tape_joins_devices(weft__device_of(d[0])->drv);
    check(weft_buffer_create(devs.rt, sizeof out, &x));
    check(weft_buffer_fill(x, 0, WEFT_WHOLE, &zero, sizeof zero));
    check(weft_graph_create(devs.rt, &g));
    for (int h = 0; h < HOPS; h++) {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32((uint32_t)h + 1), weft_arg_i64(M)};
        weft_node n;

        check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), a, 3, &n));
        check(weft_graph_set_device(g, n, d[h % 2]));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    for (int l = 0; l < LAUNCHES; l++) {
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
    }
    check(weft_exec_get_stats(e, &st));
    printf("# back and forth: %d launches, %llu native (%u graphs), %llu "
           "replays\n",
           LAUNCHES, (unsigned long long)st.native_launches, st.native_graphs,
           (unsigned long long)st.native_replays);
    if (across) {
        assert_true(st.native_launches >= LAUNCHES / 2);
        assert_int_equal(st.native_graphs, HOPS);
    }
    check(weft_buffer_read(x, 0, out, sizeof out));
    for (int i = 0; i < M; i++) {
        uint32_t v = 0;

        for (int l = 0; l < LAUNCHES; l++)
            for (int h = 0; h < HOPS; h++)
                v = wt_advance_value(v, (uint32_t)h + 1);
        if (out[i] != v)
            fail_msg("x[%d] = %u, want %u", i, out[i], v);
    }
    sim_no_hazards(d[0]);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

static void count_call(void *const *ptrs, void *user)
{
    (void)ptrs;
    __atomic_add_fetch((int *)user, 1, __ATOMIC_RELAXED);
}

/*
 * A graph whose host task waits for nothing (no accesses) beside kernels
 * whose buffer stays on the device: a native graph holds only the device
 * work, so no launch may be replayed without the task. It runs once per
 * launch, and the kernels' bytes are right.
 */
static void test_replay_keeps_host_work(void **state)
{
    enum { M = 256, LAUNCHES = 8 };
    static uint32_t out[M];
    weft_exec_stats st = {.size = sizeof st};
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    int calls = 0;
    const uint32_t zero = 0;

    (void)state;
    o.device = weft_runtime_device(devs.rt, 0);
    check(weft_buffer_create(devs.rt, sizeof out, &x));
    check(weft_buffer_fill(x, 0, WEFT_WHOLE, &zero, sizeof zero));
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_host(g, count_call, &calls, NULL, 0, NULL));
    {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(3), weft_arg_i64(M)};

        check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), a, 3, NULL));
    }
    check(weft_graph_instantiate(g, &o, &e));
    for (int l = 0; l < LAUNCHES; l++) {
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
    }
    check(weft_exec_get_stats(e, &st));
    printf("# host task ran %d times in %d launches (%llu native, %llu "
           "replays)\n",
           calls, LAUNCHES, (unsigned long long)st.native_launches,
           (unsigned long long)st.native_replays);
    assert_int_equal(calls, LAUNCHES);
    assert_int_equal(st.native_replays, 0);
    check(weft_buffer_read(x, 0, out, sizeof out));
    for (int i = 0; i < M; i++) {
        uint32_t v = 0;

        for (int l = 0; l < LAUNCHES; l++)
            v = wt_advance_value(v, 3);
        if (out[i] != v)
            fail_msg("x[%d] = %u, want %u", i, out[i], v);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

/*
 * Work that fails only when the host waits for it (here: the drain's
 * first queue sync, injected) is reported with the device nodes that
 * were still in flight, so that the user has the culprit's name.
 */
static void test_async_failure_names_nodes(void **state)
{
    enum { M = 256 };
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    int rc;

    (void)state;
    o.device = weft_runtime_device(devs.rt, 0);
    check(weft_buffer_create(devs.rt, M * sizeof(uint32_t), &x));
    {
        static const uint32_t zero = 0;

        check(weft_buffer_fill(x, 0, WEFT_WHOLE, &zero, sizeof zero));
    }
    check(weft_graph_create(devs.rt, &g));
    for (uint32_t k = 1; k <= 3; k++) {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(k), weft_arg_i64(M)};
        check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), a, 3, NULL));
    }
    check(weft_graph_instantiate(g, &o, &e));
    /* The first sync of the launch is the drain's: nothing before it waits
     * (the buffer is already on the device after the fill). */
    weft__fault_arm(1, "queue_sync");
    check(weft_exec_launch(e));
    rc = weft_exec_wait(e);
    weft__fault_disarm();
    assert_int_equal(rc, WEFT_EDRIVER);
    /* No node's completion was seen: all three are named. */
    if (!strstr(weft_last_error(), "in flight then: node 0 (kernel advance)") ||
        !strstr(weft_last_error(), "node 2 (kernel advance)"))
        fail_msg("the error names no node in flight: %s", weft_last_error());
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

static void test_failure_cancels(void **state)
{
    static uint32_t a_in[64], a_out[64], b_in[64], b_out[64];
    weft_buffer *a, *b;
    weft_graph *g;
    weft_exec *e;
    int rc;

    (void)state;
    for (int i = 0; i < 64; i++) {
        a_in[i] = (uint32_t)i;
        b_in[i] = 1000u + (uint32_t)i;
    }
    check(weft_buffer_create(devs.rt, sizeof a_in, &a));
    check(weft_buffer_create(devs.rt, sizeof b_in, &b));
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, a, 0, a_in, sizeof a_in, NULL));
    {
        weft_arg k[] = {weft_arg_buffer(a, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_i64(64)};
        check(weft_graph_add_kernel(g, k_addone, weft_dims1(64), k, 2, NULL));
    }
    check(weft_graph_add_read(g, a, 0, a_out, sizeof a_out, NULL));
    check(weft_graph_add_write(g, b, 0, b_in, sizeof b_in, NULL));
    check(weft_graph_add_read(g, b, 0, b_out, sizeof b_out, NULL));
    check(weft_graph_instantiate(g, NULL, &e));

    memset(a_out, 0xee, sizeof a_out);
    weft__fault_arm(1, ".launch");
    check(weft_exec_launch(e));
    rc = weft_exec_wait(e);
    weft__fault_disarm();
    assert_int_equal(rc, weft_exec_status(e));
    assert_true(rc < 0);
    if (!strstr(weft_last_error(), "node 1 (kernel addone)"))
        fail_msg("detail: %s", weft_last_error());
    assert_int_equal(a_out[0], 0xeeeeeeeeu);       /* canceled */
    assert_memory_equal(b_out, b_in, sizeof b_in); /* independent: ran */
    /* The error was reported; a good launch clears the status. */
    check(weft_exec_wait(e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_exec_status(e));
    for (int i = 0; i < 64; i++)
        assert_int_equal(a_out[i], (uint32_t)i + 1);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(a));
    check(weft_buffer_destroy(b));
}

/* Two execs on one buffer, launched from two threads. */
typedef struct launcher {
    weft_exec *e;
    int n, rc;
} launcher;

static void *launch_many(void *arg)
{
    launcher *l = arg;

    for (int i = 0; i < l->n && l->rc == 0; i++)
        l->rc = weft_exec_launch(l->e);
    if (l->rc == 0)
        l->rc = weft_exec_wait(l->e);
    return NULL;
}

static void test_two_threads(void **state)
{
    enum { M = 512, LAUNCHES = 25 };
    static uint32_t data[M];
    launcher l[2];
    pthread_t t[2];
    weft_buffer *x;

    (void)state;
    memset(data, 0, sizeof data);
    check(weft_buffer_wrap(devs.rt, data, sizeof data, &x));
    for (int i = 0; i < 2; i++) {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_i64(M)};
        weft_graph *g;

        check(weft_graph_create(devs.rt, &g));
        check(weft_graph_add_kernel(g, k_addone, weft_dims1(M), a, 2, NULL));
        check(weft_graph_instantiate(g, NULL, &l[i].e));
        check(weft_graph_destroy(g));
        l[i].n = LAUNCHES;
        l[i].rc = 0;
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, launch_many, &l[i]), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        check(l[i].rc);
    }
    check(weft_buffer_sync_host(x));
    for (int i = 0; i < M; i++)
        assert_int_equal(data[i], 2 * LAUNCHES);
    for (int i = 0; i < 2; i++)
        check(weft_exec_destroy(l[i].e));
    check(weft_buffer_destroy(x));
}

/* A launch while a buffer of the graph is mapped is refused. */
static void test_mapped_launch(void **state)
{
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    uint32_t one = 0;
    void *p;

    (void)state;
    check(weft_buffer_create(devs.rt, 256, &x));
    check(weft_graph_create(devs.rt, &g));
    {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_i64(64)};
        check(weft_graph_add_kernel(g, k_addone, weft_dims1(64), a, 2, NULL));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_buffer_map(x, 0, 256, WEFT_WRITE, &p));
    memset(p, 0, 256);
    assert_int_equal(weft_exec_launch(e), WEFT_EBUSY);
    check(weft_buffer_unmap(x, p));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_buffer_read(x, 0, &one, 4));
    assert_int_equal(one, 1);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

/*
 * Every failure point of instantiate and launch, in turn: each fails with
 * a weft error, leaves the bytes right or untouched, and leaks nothing.
 */
static void test_fault_injection(void **state)
{
    enum { M = 256 };
    static uint32_t in[M], out[M];
    long n;

    (void)state;
    for (n = 1;; n++) {
        weft_buffer *x, *y;
        weft_graph *g;
        weft_exec *e = NULL;
        int rc, fired;

        for (int i = 0; i < M; i++)
            in[i] = (uint32_t)i;
        memset(out, 0, sizeof out);
        check(weft_buffer_create(devs.rt, sizeof in, &x));
        check(weft_buffer_create(devs.rt, sizeof in, &y));
        check(weft_graph_create(devs.rt, &g));
        {
            weft_arg adv[] = {
                weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                weft_arg_u32(7), weft_arg_i64(M)};
            weft_arg tw[] = {weft_arg_buffer(y, 0, WEFT_WHOLE, WEFT_WRITE),
                             weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ),
                             weft_arg_i64(M)};

            check(weft_graph_add_write(g, x, 0, in, sizeof in, NULL));
            check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), adv, 3,
                                        NULL));
            check(
                weft_graph_add_kernel(g, k_twice, weft_dims1(M), tw, 3, NULL));
            check(weft_graph_add_read(g, y, 0, out, sizeof out, NULL));
        }
        weft__fault_arm(n, NULL);
        rc = weft_graph_instantiate(g, NULL, &e);
        if (rc == 0)
            rc = weft_exec_launch(e);
        if (rc == 0)
            rc = weft_exec_wait(e);
        fired = weft__fault_fired();
        weft__fault_disarm();
        if (rc < 0) {
            assert_true(fired);
            assert_true(weft_last_error()[0] != '\0');
        } else {
            for (int i = 0; i < M; i++)
                assert_int_equal(out[i], 2 * wt_advance_value((uint32_t)i, 7));
        }
        /* A launch after the failure computes the right bytes. */
        if (e) {
            memset(out, 0, sizeof out);
            check(weft_exec_launch(e));
            check(weft_exec_wait(e));
            for (int i = 0; i < M; i++)
                assert_int_equal(out[i], 2 * wt_advance_value((uint32_t)i, 7));
            check(weft_exec_destroy(e));
        }
        check(weft_graph_destroy(g));
        check(weft_buffer_destroy(x));
        check(weft_buffer_destroy(y));
        if (!fired)
            break;
    }
    printf("# %ld failure points over instantiate and launch\n", n - 1);
    assert_true(n > 5);
}

/*
 * Every failure point of a second launch that makes the native graph: the
 * first launch (x on the device already, y written there) moves nothing,
 * so it leaves its recording uncaptured and the second replays it, the
 * graph captured and made at that launch's start. Each failure there
 * fails that launch with a weft error or leaves the launch to run op by
 * op; the launch after computes the right bytes, and nothing leaks. y =
 * 2x at every launch, so a launch that failed part-way leaves y right or
 * untouched.
 */
static void test_fault_injection_second_launch(void **state)
{
    enum { M = 256 };
    static uint32_t in[M], out[M];
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    long n, replayed = 0;

    (void)state;
    o.device = weft_runtime_device(devs.rt, 0);
    for (int i = 0; i < M; i++)
        in[i] = (uint32_t)(3 * i + 1);
    for (n = 1;; n++) {
        weft_buffer *x, *y, *z;
        weft_graph *g, *gw;
        weft_exec *e, *ew;
        weft_exec_stats st = {.size = sizeof st};
        int rc, fired;
        weft_arg a[] = {weft_arg_buffer(NULL, 0, WEFT_WHOLE, WEFT_WRITE),
                        weft_arg_buffer(NULL, 0, WEFT_WHOLE, WEFT_READ),
                        weft_arg_i64(M)};

        check(weft_buffer_create(devs.rt, sizeof in, &x));
        check(weft_buffer_write(x, 0, in, sizeof in));
        check(weft_buffer_create(devs.rt, sizeof in, &y));
        check(weft_buffer_create(devs.rt, sizeof in, &z));
        /* x onto the device: a graph of its own, launched once. */
        a[0] = weft_arg_buffer(z, 0, WEFT_WHOLE, WEFT_WRITE);
        a[1] = weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ);
        check(weft_graph_create(devs.rt, &gw));
        check(weft_graph_add_kernel(gw, k_twice, weft_dims1(M), a, 3, NULL));
        check(weft_graph_instantiate(gw, &o, &ew));
        check(weft_exec_launch(ew));
        check(weft_exec_wait(ew));
        check(weft_exec_destroy(ew));
        a[0] = weft_arg_buffer(y, 0, WEFT_WHOLE, WEFT_WRITE);
        check(weft_graph_create(devs.rt, &g));
        check(weft_graph_add_kernel(g, k_twice, weft_dims1(M), a, 3, NULL));
        check(weft_graph_instantiate(g, &o, &e));
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        weft__fault_arm(n, NULL);
        rc = weft_exec_launch(e);
        if (rc == 0)
            rc = weft_exec_wait(e);
        fired = weft__fault_fired();
        weft__fault_disarm();
        if (rc < 0) {
            assert_true(fired);
            assert_true(weft_last_error()[0] != '\0');
        }
        check(weft_exec_get_stats(e, &st));
        replayed += st.native_replays > 0;
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        check(weft_buffer_read(y, 0, out, sizeof out));
        for (int i = 0; i < M; i++)
            assert_int_equal(out[i], 2 * in[i]);
        check(weft_exec_destroy(e));
        check(weft_graph_destroy(g));
        check(weft_graph_destroy(gw));
        check(weft_buffer_destroy(x));
        check(weft_buffer_destroy(y));
        check(weft_buffer_destroy(z));
        if (!fired)
            break;
    }
    printf("# %ld failure points over a second launch that makes the native "
           "graph (%ld second launches replayed)\n",
           n - 1, replayed);
    /* With native graphs, the clean one (the last) replayed. */
    if (weft__tape_supported(wt_device(&devs, 0), 0))
        assert_true(replayed >= 1);
}

/*
 * A first launch that moves nothing leaves its recording unbuilt; the
 * next launch is no replay (weft_exec_set_arg came between) and issues
 * against that recording. same=1: set_arg with the value it had (the
 * issue matches the whole recording: the graph is built at its end and
 * run); same=0: a new value (the graph is made from the recording with
 * the new parameter, counted as an update). Later launches replay. The
 * bytes are checked at the end.
 */
static void defer_after_recording(int same)
{
    enum { M = 4096, NK = 4, LAUNCHES = 5 };
    static uint32_t x0[M], out[M], want[M];
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    int native = weft__tape_supported(wt_device(&devs, 0), 0);
    uint32_t ks[NK];
    weft_node nodes[NK];
    weft_buffer *x;
    weft_graph *g, *gw;
    weft_exec *e, *ew;

    o.device = weft_runtime_device(devs.rt, 0);
    for (int i = 0; i < M; i++)
        want[i] = x0[i] = (uint32_t)(3 * i + 1);
    check(weft_buffer_create(devs.rt, sizeof x0, &x));
    check(weft_buffer_write(x, 0, x0, sizeof x0));
    /* x onto the device first: e's first launch moves nothing (steady). */
    check(weft_graph_create(devs.rt, &gw));
    {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(0), weft_arg_i64(M)};
        check(weft_graph_add_kernel(gw, k_advance, weft_dims1(M), a, 3, NULL));
    }
    check(weft_graph_instantiate(gw, &o, &ew));
    check(weft_exec_launch(ew));
    check(weft_exec_wait(ew));
    check(weft_exec_destroy(ew));
    check(weft_graph_destroy(gw));
    for (int i = 0; i < M; i++)
        want[i] = wt_advance_value(want[i], 0);
    check(weft_graph_create(devs.rt, &g));
    for (uint32_t k = 0; k < NK; k++)
        ks[k] = k + 1;
    for (uint32_t k = 0; k < NK; k++) {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(ks[k]), weft_arg_i64(M)};
        check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), a, 3,
                                    &nodes[k]));
    }
    check(weft_graph_instantiate(g, &o, &e));
    for (int l = 1; l <= LAUNCHES; l++) {
        weft_exec_stats st = {.size = sizeof st};

        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        for (int i = 0; i < M; i++)
            for (uint32_t k = 0; k < NK; k++)
                want[i] = wt_advance_value(want[i], ks[k]);
        check(weft_exec_get_stats(e, &st));
        printf("# same=%d launch %d: native %llu replays %llu updates %llu "
               "graphs %u\n",
               same, l, (unsigned long long)st.native_launches,
               (unsigned long long)st.native_replays,
               (unsigned long long)st.native_updates, st.native_graphs);
        if (native && l == 2) {
            /* The DEFER launch built the recording and ran it. */
            assert_int_equal(st.native_launches, 1);
            assert_int_equal(st.native_replays, 0);
            assert_int_equal(st.native_updates, same ? 0 : 1);
            assert_true(st.native_graphs >= 1);
        }
        if (l == 1) {
            if (!same)
                ks[1] = 77;
            check(weft_exec_set_arg(e, nodes[1], 1, weft_arg_u32(ks[1])));
        }
    }
    check(weft_buffer_read(x, 0, out, sizeof out));
    assert_memory_equal(out, want, sizeof out);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

static void test_defer_after_recording_same(void **state)
{
    (void)state;
    defer_after_recording(1);
}

static void test_defer_after_recording_changed(void **state)
{
    (void)state;
    defer_after_recording(0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_node_kinds),
        cmocka_unit_test(test_graph_changes_after_instantiate),
        cmocka_unit_test(test_relaunch_keeps_copies),
        cmocka_unit_test(test_native_relaunch),
        cmocka_unit_test(test_native_named_edges),
        cmocka_unit_test(test_native_named_edges_order),
        cmocka_unit_test(test_relaunch_changes),
        cmocka_unit_test(test_replay_keeps_host_work),
        cmocka_unit_test(test_replay_from_second_launch),
        cmocka_unit_test(test_lookahead_at_second_launch),
        cmocka_unit_test(test_no_replay_when_reads_moved),
        cmocka_unit_test(test_native_two_devices),
        cmocka_unit_test(test_native_back_and_forth),
        cmocka_unit_test(test_replay_two_devices_from_second),
        cmocka_unit_test(test_async_failure_names_nodes),
        cmocka_unit_test(test_failure_cancels),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_mapped_launch),
        cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_fault_injection_second_launch),
        cmocka_unit_test(test_defer_after_recording_same),
        cmocka_unit_test(test_defer_after_recording_changed),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
