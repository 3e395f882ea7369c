/*
 * The lowered plan (src/sched/plan.h) on simulated devices: asserted on
 * the sim driver's record of what ran where and when, in virtual time, and
 * on the plan's own counts of events and waits.
 *
 * Runs with WEFT_DEVICES=sim WEFT_SIM=devices=2,real_data=1: real bytes,
 * so every case also checks the results.
 */
#include "wt_test.h"

#include "drivers/sim/sim.h"
#include "sched/exec.h"
#include "wt_devices.h"
#include "wt_kernels.h"

#include <stdlib.h>
#include <string.h>

enum {
    CHUNKS = 16,
    /* Floats per chunk: 32 KiB, about 2.6 us on the link, copied directly
     * (pageable copies from 64 KiB go through the stager, whose D2H
     * returns only once the bytes are home). */
    CHUNK = 1 << 13,
    KERNEL_NS = 500, /* plus the launch latency: 3.5 us */
};

static wt_devices devs;
static weft_module *mod;
static weft_kernel *k_work, *k_addone;

/* As long as a chunk's copy: the pipeline can hide one behind the other. */
static uint64_t work_cost(uint64_t items, void *const *args, void *user)
{
    (void)items;
    (void)args;
    (void)user;
    return KERNEL_NS;
}

static const weft_host_kernel kernels[] = {
    {"work", wt_host_affine, 3, wt_affine_params, NULL, work_cost, NULL},
    {"addone", wt_host_addone, 2, wt_addone_params, NULL, NULL, NULL},
};

static int setup(void **state)
{
    weft_module_source src = {WEFT_SOURCE_HOST, kernels,
                              sizeof kernels / sizeof kernels[0], NULL, "plan"};

    (void)state;
    wt_devices_open(&devs);
    wt_devices_need(&devs, "sim", 2,
                    "needs two sim devices (WEFT_DEVICES=sim)");
    check(weft_module_create(devs.rt, &src, 1, &mod));
    check(weft_module_get_kernel(mod, "work", &k_work));
    check(weft_module_get_kernel(mod, "addone", &k_addone));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    weft_module_destroy(mod);
    wt_devices_close(&devs);
    return 0;
}

static weft__device *sim0(void)
{
    return wt_device(&devs, 0);
}

/* Operations of one kind in the record, from index from on. */
static size_t count_ops(weft__sim_op_kind kind)
{
    size_t n, k = 0;
    const weft__sim_op *r = weft__sim_record(sim0(), &n);

    for (size_t i = 0; i < n; i++)
        k += r[i].kind == kind;
    return k;
}

static weft_exec *instantiate_on(weft_graph *g, unsigned dev)
{
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    weft_exec *e;

    o.device = weft_runtime_device(devs.rt, dev);
    check(weft_graph_instantiate(g, &o, &e));
    return e;
}

/*
 * 16 chunks of write, kernel, read on one device: copies overlap kernels
 * in virtual time, the whole takes well under the sum of its parts, the
 * independent kernels use more than one compute lane, and the record
 * holds exactly the events and waits the plan counted.
 */
static void test_pipeline_overlaps(void **state)
{
    static float in[CHUNKS * CHUNK], out[CHUNKS * CHUNK];
    const size_t bytes = (size_t)CHUNK * sizeof(float);
    weft_buffer *x, *y;
    weft_graph *g;
    weft_exec *e;
    weft__plan_counts c;
    weft_stats s0, s1;
    const weft__sim_op *r;
    size_t n, records = 0, waits = 0;
    uint64_t first = UINT64_MAX, last = 0, busy = 0;
    unsigned kq[2] = {0, 0};
    int overlap = 0;

    (void)state;
    for (size_t i = 0; i < CHUNKS * (size_t)CHUNK; i++)
        in[i] = (float)(i % 1000);
    check(weft_buffer_create(devs.rt, sizeof in, &x));
    check(weft_buffer_create(devs.rt, sizeof in, &y));
    check(weft_graph_create(devs.rt, &g));
    for (size_t ch = 0; ch < CHUNKS; ch++) {
        weft_arg a[] = {weft_arg_buffer(y, ch * bytes, bytes, WEFT_WRITE),
                        weft_arg_buffer(x, ch * bytes, bytes, WEFT_READ),
                        weft_arg_i64(CHUNK)};

        check(weft_graph_add_write(g, x, ch * bytes, in + ch * CHUNK, bytes,
                                   NULL));
        check(weft_graph_add_kernel(g, k_work, weft_dims1(CHUNK), a, 3, NULL));
        check(weft_graph_add_read(g, y, ch * bytes, out + ch * CHUNK, bytes,
                                  NULL));
    }
    e = instantiate_on(g, 0);
    memset(&s0, 0, sizeof s0);
    memset(&s1, 0, sizeof s1);
    s0.size = s1.size = sizeof s0;
    check(weft_runtime_get_stats(devs.rt, &s0));
    weft__sim_record_clear(sim0());
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_runtime_get_stats(devs.rt, &s1));
    for (size_t i = 0; i < CHUNKS * (size_t)CHUNK; i++)
        if (out[i] != 2 * in[i] + 1)
            fail_msg("out[%zu] = %g, want %g", i, out[i], 2 * in[i] + 1);

    r = weft__sim_record(sim0(), &n);
    for (size_t i = 0; i < n; i++) {
        const weft__sim_op *o = &r[i];

        records += o->kind == WEFT__SIM_EVENT_RECORD;
        waits += o->kind == WEFT__SIM_EVENT_WAIT;
        if (o->kind != WEFT__SIM_H2D && o->kind != WEFT__SIM_D2H &&
            o->kind != WEFT__SIM_KERNEL)
            continue;
        first = o->start_ns < first ? o->start_ns : first;
        last = o->end_ns > last ? o->end_ns : last;
        busy += o->end_ns - o->start_ns;
        if (o->kind == WEFT__SIM_KERNEL) {
            if (!kq[0] || kq[0] == o->queue)
                kq[0] = o->queue;
            else
                kq[1] = o->queue;
            for (size_t j = 0; j < n; j++)
                if (r[j].kind == WEFT__SIM_H2D && r[j].start_ns < o->end_ns &&
                    o->start_ns < r[j].end_ns)
                    overlap = 1;
        }
    }
    assert_int_equal(count_ops(WEFT__SIM_KERNEL), CHUNKS);
    assert_int_equal(count_ops(WEFT__SIM_H2D), CHUNKS);
    assert_int_equal(count_ops(WEFT__SIM_D2H), CHUNKS);
    assert_true(overlap);
    /* Serialised, the parts would take busy; pipelined, about half. */
    printf("# makespan %llu ns, parts %llu ns\n",
           (unsigned long long)(last - first), (unsigned long long)busy);
    assert_true((last - first) * 10 < busy * 7);
    assert_true(kq[1] != 0); /* a second compute lane */
    weft__exec_plan_counts(e, &c);
    printf("# %llu events, %llu waits, %llu host syncs, %u lanes\n",
           (unsigned long long)c.events, (unsigned long long)c.waits,
           (unsigned long long)c.host_syncs, c.lanes_used);
    /* Per chunk: copy -> kernel (one event, one wait), kernel -> read. */
    assert_int_equal(c.events, 2 * CHUNKS);
    assert_int_equal(c.waits, 2 * CHUNKS);
    assert_int_equal(c.host_syncs, 0);
    assert_int_equal(c.fences, 0); /* no other graph shares the buffers */
    assert_int_equal(records, c.events);
    assert_int_equal(waits, c.waits);
    assert_int_equal(s1.plan_events - s0.plan_events, c.events);
    assert_int_equal(s1.plan_waits - s0.plan_waits, c.waits);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
}

/*
 * A chain of kernels on one buffer stays on one lane: the first launch
 * needs one event and one wait (the upload on the copy lane before the
 * first kernel), a relaunch on the cached copy none at all.
 */
static void test_chain_needs_no_events(void **state)
{
    enum { M = 1024 };
    float v[M];
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    weft__plan_counts c;

    (void)state;
    for (int i = 0; i < M; i++)
        v[i] = (float)i;
    check(weft_buffer_create(devs.rt, sizeof v, &x));
    check(weft_buffer_write(x, 0, v, sizeof v));
    check(weft_graph_create(devs.rt, &g));
    for (int k = 0; k < 4; k++) {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_i64(M)};

        check(weft_graph_add_kernel(g, k_addone, weft_dims1(M), a, 2, NULL));
    }
    e = instantiate_on(g, 0);
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    weft__exec_plan_counts(e, &c);
    assert_int_equal(c.events, 1);
    assert_int_equal(c.waits, 1);
    weft__sim_record_clear(sim0());
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    weft__exec_plan_counts(e, &c);
    assert_int_equal(c.events, 0);
    assert_int_equal(c.waits, 0);
    assert_int_equal(count_ops(WEFT__SIM_EVENT_WAIT), 0);
    assert_int_equal(count_ops(WEFT__SIM_KERNEL), 4);
    check(weft_buffer_read(x, 0, v, sizeof v));
    for (int i = 0; i < M; i++)
        assert_true(v[i] == (float)(i + 8));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

/*
 * A producer on device 0 and its consumer on device 1: the peer copy on
 * device 1 waits for the producer through an event of device 0, on the
 * device, not by the host.
 */
static void test_cross_device_wait(void **state)
{
    enum { M = 4096 };
    static float in[M], out[M];
    weft_buffer *x, *y, *z;
    weft_graph *g;
    weft_exec *e;
    weft_node prod, cons;
    weft__plan_counts c;
    const weft__sim_op *r;
    size_t n;
    const weft__sim_op *kernel0 = NULL, *peer = NULL, *wait = NULL;

    (void)state;
    for (int i = 0; i < M; i++)
        in[i] = (float)i;
    check(weft_buffer_create(devs.rt, sizeof in, &x));
    check(weft_buffer_create(devs.rt, sizeof in, &y));
    check(weft_buffer_create(devs.rt, sizeof in, &z));
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, x, 0, in, sizeof in, NULL));
    {
        weft_arg a[] = {weft_arg_buffer(y, 0, WEFT_WHOLE, WEFT_WRITE),
                        weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ),
                        weft_arg_i64(M)};
        weft_arg b[] = {weft_arg_buffer(z, 0, WEFT_WHOLE, WEFT_WRITE),
                        weft_arg_buffer(y, 0, WEFT_WHOLE, WEFT_READ),
                        weft_arg_i64(M)};

        check(weft_graph_add_kernel(g, k_work, weft_dims1(M), a, 3, &prod));
        check(weft_graph_add_kernel(g, k_work, weft_dims1(M), b, 3, &cons));
    }
    check(weft_graph_add_read(g, z, 0, out, sizeof out, NULL));
    check(weft_graph_set_device(g, prod, weft_runtime_device(devs.rt, 0)));
    check(weft_graph_set_device(g, cons, weft_runtime_device(devs.rt, 1)));
    check(weft_graph_instantiate(g, NULL, &e));
    weft__sim_record_clear(sim0());
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    for (int i = 0; i < M; i++)
        assert_true(out[i] == 2 * (2 * in[i] + 1) + 1);

    r = weft__sim_record(sim0(), &n);
    for (size_t i = 0; i < n; i++) {
        if (r[i].kind == WEFT__SIM_KERNEL && r[i].device == 0)
            kernel0 = &r[i];
        if (r[i].kind == WEFT__SIM_PEER && !peer)
            peer = &r[i];
        if (r[i].kind == WEFT__SIM_EVENT_WAIT && r[i].device == 1 &&
            r[i].event_device == 0 && !wait)
            wait = &r[i];
    }
    assert_non_null(kernel0);
    assert_non_null(peer);
    assert_non_null(wait);
    assert_int_equal(peer->device, 1);
    assert_true(wait->seq < peer->seq);
    assert_int_equal(wait->queue, peer->queue);
    assert_true(peer->start_ns >= kernel0->end_ns);
    weft__exec_plan_counts(e, &c);
    assert_int_equal(c.host_syncs, 0);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_buffer_destroy(z));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_overlaps),
        cmocka_unit_test(test_chain_needs_no_events),
        cmocka_unit_test(test_cross_device_wait),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
