/*
 * Capturable native nodes (weft_graph_set_native_capture) in native
 * graphs, on the devices of WEFT_DEVICES: the host driver (a replay calls
 * the function again), the sim with graphs=1 (a replay runs the sim copy
 * and fill the function enqueued, not the function), CUDA (the same with
 * cuMemcpyDtoDAsync and cuMemsetD32Async in a CUDA graph; exits 77,
 * skipped, where there is no GPU) and OpenCL (never recorded: a command
 * buffer cannot take the program's clEnqueue calls).
 *
 * The graph advance(x); native: y = x, z = PATTERN; advance(y) moves no
 * bytes to or from the host, so that relaunches of it replay. Each case
 * checks the bytes of every launch, how often the function was called,
 * and the statistics of native launches and replays.
 */
#include "wt_test.h"

#include "drivers/sim/sim.h"
#include "sched/exec.h"
#include "sched/tape.h"
#include "wt_devices.h"
#include "wt_kernels.h"

#include "drivers/cuda/internal.h"

#include <stdio.h>
#include <string.h>

enum { N = 1024, HALF = N / 2, K = 5, LAUNCHES = 6 };
#define PATTERN 0x5A5A5A5Au

static wt_devices devs;
static weft_module *mod;
static weft_kernel *k_advance;

static int setup(void **state)
{
    (void)state;
    return wt_kernels_setup(&devs, &mod, "advance", &k_advance);
}

static int teardown(void **state)
{
    (void)state;
    return wt_kernels_teardown(&devs, mod);
}

/* The driver of device 0, where every node of these graphs runs. */
static const char *driver(void)
{
    return wt_device(&devs, 0)->drv->name;
}

/* Whether launches of the graph can replay: the device makes native
 * graphs and can capture a native node there. */
static int replays_here(void)
{
    weft__device *d = wt_device(&devs, 0);

    return d->drv->native_capture &&
           weft__tape_supported(d, WEFT_NATIVE_GRAPHS_ON);
}

/* ---- the function: y = x, z = PATTERN (accesses 0, 1, 2) --------------- */

typedef struct capture_run {
    unsigned calls; /* atomic */
    int fail;       /* atomic: return this (0: succeed) */
} capture_run;

static int fn_host(const weft_native_ctx *c, void *user)
{
    capture_run *r = user;
    uint32_t *y = weft_native_ptr(c, 1), *z = weft_native_ptr(c, 2);
    const uint32_t *x = weft_native_ptr(c, 0);
    int fail = __atomic_load_n(&r->fail, __ATOMIC_RELAXED);

    __atomic_add_fetch(&r->calls, 1, __ATOMIC_RELAXED);
    if (fail)
        return fail;
    memcpy(y, x, HALF * 4);
    for (unsigned i = 0; i < HALF; i++)
        z[i] = PATTERN;
    return 0;
}

static int fn_sim(const weft_native_ctx *c, void *user)
{
    capture_run *r = user;
    weft__queue *q = weft_native_queue(c);
    size_t o0, o1, o2;
    weft__mem *m0 = weft_native_mem(c, 0, &o0),
              *m1 = weft_native_mem(c, 1, &o1),
              *m2 = weft_native_mem(c, 2, &o2);
    uint32_t pat = PATTERN;
    int rc;

    __atomic_add_fetch(&r->calls, 1, __ATOMIC_RELAXED);
    rc = weft__drv_copy_d2d(q, m1, o1, m0, o0, HALF * 4);
    if (rc == 0)
        rc = weft__drv_fill(q, m2, o2, &pat, 4, HALF * 4);
    return rc;
}

static int fn_cuda(const weft_native_ctx *c, void *user)
{
    capture_run *r = user;
    CUstream s = weft_native_queue(c);
    CUresult res;

    __atomic_add_fetch(&r->calls, 1, __ATOMIC_RELAXED);
    res = weft__cu.MemcpyDtoDAsync(weft_native_address(c, 1),
                                   weft_native_address(c, 0), HALF * 4, s);
    if (res == CUDA_SUCCESS)
        res = weft__cu.MemsetD32Async(weft_native_address(c, 2), PATTERN, HALF,
                                      s);
    return (int)res;
}

/* Never called: the OpenCL case only instantiates (test_capture_opencl). */
static int fn_opencl(const weft_native_ctx *c, void *user)
{
    (void)c;
    (void)user;
    return 1;
}

static const weft_native_impl impls[] = {
    {"host", 0, fn_host},
    {"sim", 0, fn_sim},
    {"cuda", 0, fn_cuda},
    {"opencl", 0, fn_opencl},
};

/* Not capturable after all: it waits for its queue on the host first. */
static int fn_sim_sync(const weft_native_ctx *c, void *user)
{
    int rc = weft__drv_queue_sync(weft_native_queue(c));

    return rc < 0 ? rc : fn_sim(c, user);
}

static const weft_native_impl impls_sync[] = {
    {"sim", 0, fn_sim_sync},
};

/* ---- helpers ----------------------------------------------------------- */

static void no_races(void)
{
    weft__device *d = wt_device(&devs, 0);

    if (d->drv->virtual_time)
        assert_int_equal(weft__sim_hazards(d), 0);
}

static void fill_u32(weft_buffer *b, uint32_t base)
{
    uint32_t h[N];

    for (unsigned i = 0; i < N; i++)
        h[i] = base + i;
    check(weft_buffer_write(b, 0, h, sizeof h));
}

static void add_advance(weft_graph *g, weft_buffer *b)
{
    weft_arg args[3] = {
        weft_arg_buffer(b, HALF * 4, HALF * 4, WEFT_READ_WRITE),
        weft_arg_u32(K),
        weft_arg_i64(HALF),
    };

    check(weft_graph_add_kernel(g, k_advance, weft_dims1(HALF), args, 3, NULL));
}

typedef struct capture_case {
    weft_buffer *x, *y, *z;
    weft_graph *g;
    weft_exec *e;
    capture_run run;
    uint32_t x0; /* x[i] = x0 + i before the first launch */
    unsigned launches;
} capture_case;

/* advance(x); native (capturable or not); advance(y); on device 0. */
static void case_make_with(capture_case *c, int capturable,
                           const weft_native_impl *im, unsigned nim)
{
    weft_access_desc acc[3];
    weft_exec_options opts = WEFT_EXEC_OPTIONS_INIT;
    weft_node nn;

    memset(c, 0, sizeof *c);
    check(weft_buffer_create(devs.rt, N * 4, &c->x));
    check(weft_buffer_create(devs.rt, N * 4, &c->y));
    check(weft_buffer_create(devs.rt, N * 4, &c->z));
    c->x0 = 100;
    fill_u32(c->x, c->x0);
    fill_u32(c->y, 0);
    fill_u32(c->z, 0);
    acc[0] = (weft_access_desc)weft_access_range(c->x, HALF * 4, HALF * 4,
                                                 WEFT_READ);
    acc[1] = (weft_access_desc)weft_access_range(c->y, HALF * 4, HALF * 4,
                                                 WEFT_WRITE);
    acc[2] = (weft_access_desc)weft_access_range(c->z, HALF * 4, WEFT_WHOLE,
                                                 WEFT_WRITE);
    check(weft_graph_create(devs.rt, &c->g));
    add_advance(c->g, c->x);
    check(weft_graph_add_native(c->g, im, nim, acc, 3, &c->run, &nn));
    if (capturable)
        check(weft_graph_set_native_capture(c->g, nn, 1));
    add_advance(c->g, c->y);
    opts.device = weft_runtime_device(devs.rt, 0);
    opts.native_graphs = WEFT_NATIVE_GRAPHS_ON;
    check(weft_graph_instantiate(c->g, &opts, &c->e));
}

static void case_make(capture_case *c, int capturable)
{
    case_make_with(c, capturable, impls, WEFT__COUNTOF(impls));
}

/* After launch l (from 1): x = adv^l(x0), y = adv(x), z = PATTERN. */
static void case_check(capture_case *c)
{
    uint32_t hy[HALF], hz[HALF];

    check(weft_buffer_read(c->y, HALF * 4, hy, sizeof hy));
    check(weft_buffer_read(c->z, HALF * 4, hz, sizeof hz));
    for (unsigned i = 0; i < HALF; i++) {
        uint32_t x = c->x0 + HALF + i;

        for (unsigned l = 0; l < c->launches; l++)
            x = wt_advance_value(x, K);
        if (hy[i] != wt_advance_value(x, K) || hz[i] != PATTERN)
            fail_msg("after %u launches: y[%u] = %u, z[%u] = %#x; want %u, %#x",
                     c->launches, i, hy[i], i, hz[i], wt_advance_value(x, K),
                     PATTERN);
    }
}

static void case_launch(capture_case *c)
{
    check(weft_exec_launch(c->e));
    check(weft_exec_wait(c->e));
    c->launches++;
}

static void case_stats(capture_case *c, weft_exec_stats *st)
{
    memset(st, 0, sizeof *st);
    st->size = sizeof *st;
    check(weft_exec_get_stats(c->e, st));
    printf("# %u launches: %u calls, %llu native launches, %llu replays\n",
           c->launches, __atomic_load_n(&c->run.calls, __ATOMIC_RELAXED),
           (unsigned long long)st->native_launches,
           (unsigned long long)st->native_replays);
}

static void case_free(capture_case *c)
{
    no_races();
    check(weft_exec_destroy(c->e));
    check(weft_graph_destroy(c->g));
    check(weft_buffer_destroy(c->x));
    check(weft_buffer_destroy(c->y));
    check(weft_buffer_destroy(c->z));
}

/* ---- cases --------------------------------------------------------------- */

/*
 * Relaunched with nothing read between: the launches after the first run
 * as the native graph, and replay it. On the host every launch calls the
 * function (a replay calls it again); where the work is captured (sim,
 * CUDA) the replays do not.
 */
static void test_capture_replays(void **state)
{
    capture_case c;
    weft_exec_stats st;
    unsigned calls;

    (void)state;
    if (!strcmp(driver(), "opencl"))
        skip(); /* test_capture_opencl */
    case_make(&c, 1);
    for (unsigned l = 0; l < LAUNCHES; l++)
        case_launch(&c);
    case_check(&c);
    case_stats(&c, &st);
    calls = __atomic_load_n(&c.run.calls, __ATOMIC_RELAXED);
    assert_int_equal(st.launches, LAUNCHES);
    if (!replays_here()) {
        assert_int_equal(st.native_launches, 0);
        assert_int_equal(calls, LAUNCHES);
        case_free(&c);
        return;
    }
    assert_true(st.native_launches >= LAUNCHES - 2);
    assert_true(st.native_replays >= 1);
    if (!strcmp(driver(), "host"))
        assert_int_equal(calls, LAUNCHES);
    else
        assert_true(calls < LAUNCHES);
    /* Read between launches: each still gives the sequential bytes. */
    for (unsigned l = 0; l < 3; l++) {
        case_launch(&c);
        case_check(&c);
    }
    case_stats(&c, &st);
    assert_true(st.native_launches >= LAUNCHES + 1);
    case_free(&c);
}

/* Not capturable (the default): never recorded, called at every launch. */
static void test_capture_off(void **state)
{
    capture_case c;
    weft_exec_stats st;

    (void)state;
    if (!strcmp(driver(), "opencl"))
        skip();
    case_make(&c, 0);
    for (unsigned l = 0; l < LAUNCHES; l++)
        case_launch(&c);
    case_check(&c);
    case_stats(&c, &st);
    assert_int_equal(st.native_launches, 0);
    assert_int_equal(st.native_replays, 0);
    assert_int_equal(__atomic_load_n(&c.run.calls, __ATOMIC_RELAXED), LAUNCHES);
    case_free(&c);
}

/*
 * Host driver: a replay calls the function, and a non-zero return there
 * fails that launch (WEFT_EIO, the value in the message); the next launch
 * runs op by op and succeeds.
 */
static void test_capture_host_fails(void **state)
{
    capture_case c;
    weft_exec_stats st;
    uint64_t before;
    int rc;

    (void)state;
    if (strcmp(driver(), "host") != 0 || !replays_here())
        skip();
    case_make(&c, 1);
    for (unsigned l = 0; l < 4; l++)
        case_launch(&c);
    case_stats(&c, &st);
    assert_true(st.native_replays >= 1);
    before = st.native_launches;
    __atomic_store_n(&c.run.fail, 7, __ATOMIC_RELAXED);
    check(weft_exec_launch(c.e));
    rc = weft_exec_wait(c.e);
    assert_int_equal(rc, WEFT_EIO);
    assert_non_null(strstr(weft_last_error(), "returned 7"));
    case_stats(&c, &st);
    /* The launch that failed ran as the graph: the function ran there. */
    assert_true(st.native_launches >= before);
    __atomic_store_n(&c.run.fail, 0, __ATOMIC_RELAXED);
    /* Bytes after the failed launch: its kernels ran, y and z kept what
     * the launch before left. Two launches that succeed make x and y
     * consistent again: launch count as if the failed one ran. */
    c.launches++;
    case_launch(&c);
    case_launch(&c);
    case_check(&c);
    case_free(&c);
}

/*
 * Sim: a function marked capturable that is not (it syncs its queue,
 * which the sim refuses in a capture): the capture fails, no native graph
 * is made, and every launch runs op by op with the right bytes.
 */
static void test_capture_not_capturable(void **state)
{
    capture_case c;
    weft_exec_stats st;

    (void)state;
    if (strcmp(driver(), "sim") != 0 || !replays_here())
        skip();
    case_make_with(&c, 1, impls_sync, WEFT__COUNTOF(impls_sync));
    for (unsigned l = 0; l < LAUNCHES; l++)
        case_launch(&c);
    case_check(&c);
    case_stats(&c, &st);
    assert_int_equal(st.native_launches, 0);
    /* Once a launch (the capture's call fails at its sync, uncounted). */
    assert_int_equal(__atomic_load_n(&c.run.calls, __ATOMIC_RELAXED), LAUNCHES);
    case_free(&c);
}

/*
 * OpenCL: a capturable native node keeps the launch off the tape (a
 * command buffer cannot record the function's clEnqueue calls): the plan
 * of such a graph has no native graph, whatever the options ask.
 */
static void test_capture_opencl(void **state)
{
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    weft_exec_options opts = WEFT_EXEC_OPTIONS_INIT;
    weft_access_desc acc = weft_access_range(NULL, 0, WEFT_WHOLE, WEFT_READ);
    weft_node nn;

    (void)state;
    if (strcmp(driver(), "opencl") != 0)
        skip();
    check(weft_buffer_create(devs.rt, N * 4, &x));
    acc.buffer = x;
    check(weft_graph_create(devs.rt, &g));
    opts.device = weft_runtime_device(devs.rt, 0);
    opts.native_graphs = WEFT_NATIVE_GRAPHS_ON;
    /* Where the device makes command buffers, a kernel's plan has a tape. */
    add_advance(g, x);
    check(weft_graph_instantiate(g, &opts, &e));
    assert_int_equal(
        weft__plan_native_able(e->plan),
        weft__tape_supported(wt_device(&devs, 0), WEFT_NATIVE_GRAPHS_ON));
    printf("# command buffers on %s: %d\n", wt_device(&devs, 0)->name,
           weft__plan_native_able(e->plan));
    check(weft_exec_destroy(e));
    check(weft_graph_add_native(g, impls, WEFT__COUNTOF(impls), &acc, 1, NULL,
                                &nn));
    check(weft_graph_set_native_capture(g, nn, 1));
    check(weft_graph_instantiate(g, &opts, &e));
    assert_false(weft__plan_native_able(e->plan));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_replays),
        cmocka_unit_test(test_capture_off),
        cmocka_unit_test(test_capture_host_fails),
        cmocka_unit_test(test_capture_not_capturable),
        cmocka_unit_test(test_capture_opencl),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
