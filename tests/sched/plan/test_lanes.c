/*
 * Compute lanes per device (weft__plan_compute_lanes): a host-driver
 * device gets one per thread, from 2 to WEFT__COMPUTE_LANES, so that
 * independent kernels of one work-group each can keep a core busy; the
 * lanes a launch used show in weft_exec_get_stats, and the results are
 * the sequential ones op by op and as native graphs.
 */
#include "wt_test.h"

#include "sched/plan.h"
#include "wt_kernels.h"

#include <stdint.h>
#include <string.h>

enum { NODES = 24, N = 256 };

static const weft_host_kernel kernels[] = {
    {"addone", wt_host_addone, 2, wt_addone_params, NULL, NULL, NULL},
};

/* Compute lanes one launch of NODES independent kernels used, on a host
 * device of `threads` threads; every result checked after each launch. */
static unsigned lanes_used(unsigned threads, int native, int launches,
                           uint64_t *native_launches)
{
    weft_runtime_options ro = WEFT_RUNTIME_OPTIONS_INIT;
    weft_module_source src = {WEFT_SOURCE_HOST, kernels, 1, NULL, "lanes"};
    weft_exec_options eo = WEFT_EXEC_OPTIONS_INIT;
    weft_exec_stats st;
    weft_runtime *rt;
    weft_module *mod;
    weft_kernel *k;
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;
    static float host[NODES * N];
    unsigned used = 0;

    ro.devices = "host";
    ro.host_threads = threads;
    check(weft_runtime_create(&rt, &ro));
    assert_int_equal(weft__plan_compute_lanes(weft__runtime_device(rt, 0)),
                     threads < 2                     ? 2
                     : threads > WEFT__COMPUTE_LANES ? WEFT__COMPUTE_LANES
                                                     : threads);
    check(weft_module_create(rt, &src, 1, &mod));
    check(weft_module_get_kernel(mod, "addone", &k));
    memset(host, 0, sizeof host);
    check(weft_buffer_create(rt, sizeof host, &b));
    check(weft_buffer_write(b, 0, host, sizeof host));
    check(weft_graph_create(rt, &g));
    for (unsigned i = 0; i < NODES; i++) {
        weft_arg a[] = {weft_arg_buffer(b, (size_t)i * N * sizeof(float),
                                        N * sizeof(float), WEFT_READ_WRITE),
                        weft_arg_i64(N)};

        /* one work-group: a node keeps one thread busy */
        check(weft_graph_add_kernel(g, k, weft_dims1(N), a, 2, NULL));
    }
    eo.native_graphs = native ? WEFT_NATIVE_GRAPHS_ON : WEFT_NATIVE_GRAPHS_OFF;
    check(weft_graph_instantiate(g, &eo, &e));
    for (int r = 1; r <= launches; r++) {
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        check(weft_buffer_read(b, 0, host, sizeof host));
        for (size_t i = 0; i < NODES * (size_t)N; i++)
            assert_true(host[i] == (float)r);
    }
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    check(weft_exec_get_stats(e, &st));
    for (unsigned l = 0; l < st.nlanes; l++)
        used += strncmp(st.lanes[l].role, "compute", 7) == 0;
    if (native_launches)
        *native_launches = st.native_launches;
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
    check(weft_module_destroy(mod));
    check(weft_runtime_destroy(rt));
    return used;
}

static void one_thread_gets_two_lanes(void **state)
{
    (void)state;
    assert_int_equal(lanes_used(1, 0, 2, NULL), 2);
}

static void six_threads_get_six_lanes(void **state)
{
    (void)state;
    assert_int_equal(lanes_used(6, 0, 2, NULL), 6);
}

static void twelve_threads_get_twelve_lanes(void **state)
{
    (void)state;
    assert_int_equal(lanes_used(12, 0, 2, NULL), 12);
}

/* As native graphs: the host driver's graph runs the lanes' kernels side
 * by side, and every relaunch gives the sequential result. */
static void native_relaunches_stay_right(void **state)
{
    uint64_t native = 0;

    (void)state;
    lanes_used(6, 1, 6, &native);
    assert_true(native >= 1); /* the last launch ran as a native graph */
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_thread_gets_two_lanes),
        cmocka_unit_test(six_threads_get_six_lanes),
        cmocka_unit_test(twelve_threads_get_twelve_lanes),
        cmocka_unit_test(native_relaunches_stay_right),
    };

    return wt_run_group(argc, argv, tests, NULL, NULL);
}
