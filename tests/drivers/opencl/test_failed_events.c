/*
 * Failures that reach the OpenCL driver's gates and bridges (the user
 * events that hold a queue behind a host function or behind another
 * device's work). weft completes those user events with CL_COMPLETE and
 * carries the failure in its own state: PoCL 3 aborts on a user event set
 * to an error status, PoCL 5 hangs. The failure of the command before a
 * gate or a bridge is injected ("!opencl.failed.gate", "!opencl.failed.
 * bridge": the status the driver learns is CL_OUT_OF_RESOURCES) on PoCL's
 * two CPU devices. Each case checks that the launch fails with that error
 * (WEFT_EDEVMEM) and neither aborts nor hangs, that nothing after the
 * failure ran on its bytes (the read's host copy, a host task), that an
 * independent node still ran, and that the next launch, with nothing
 * injected, gives the right bytes.
 */
#include "wt_test.h"

#include "drivers/opencl/opencl_internal.h"
#include "wt_devices.h"
#include "wt_kernels.h"

#include <stdio.h>
#include <string.h>

enum { N = 4096 };

static wt_devices devs;
static weft_module *mod;
static weft_kernel *addone;

static int setup(void **state)
{
    (void)state;
    wt_devices_open(&devs);
    wt_devices_need(&devs, "opencl", 1, "the failure path of OpenCL's gates");
    check(wt_kernels_module(devs.rt, &mod));
    check(weft_module_get_kernel(mod, "addone", &addone));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    check(weft_module_destroy(mod));
    return weft_runtime_destroy(devs.rt);
}

/* addone over x's first n elements, on device dev. */
static void add_addone(weft_graph *g, weft_buffer *x, unsigned n, unsigned dev)
{
    weft_arg args[2] = {
        weft_arg_buffer(x, 0, n * 4, WEFT_READ_WRITE),
        weft_arg_i64(n),
    };
    weft_node k;

    check(weft_graph_add_kernel(g, addone, weft_dims1(n), args, 2, &k));
    check(weft_graph_set_device(g, k, weft_runtime_device(devs.rt, dev)));
}

/* A host task that says it ran, and copies out the bytes it reads. */
typedef struct ran_copy {
    int ran;
    uint32_t seen[N];
} ran_copy;

static void host_copy(void *const *ptrs, void *user)
{
    ran_copy *r = user;

    memcpy(r->seen, ptrs[0], sizeof r->seen);
    r->ran = 1;
}

/* A host task writing the second half of x: x[i] = 5 i there. */
static void host_second_half(void *const *ptrs, void *user)
{
    uint32_t *h = ptrs[0];

    (void)user;
    for (unsigned i = 0; i < N / 2; i++)
        h[i] = 5 * (N / 2 + i);
}

static void host_mark(void *const *ptrs, void *user)
{
    (void)ptrs;
    *(int *)user = 1;
}

/* The launch failed as a failure carried past a gate or bridge does. */
static void failed_as_carried(int rc)
{
    assert_int_equal(rc, WEFT_EDEVMEM);
    if (!strstr(weft_last_error(), "passed on by a gate or a bridge"))
        fail_msg("unexpected detail: %s", weft_last_error());
}

/*
 * write x -> addone(x's first half) on device 0, a host task writing its
 * second half -> read x into out, and apart from them a host task. The
 * host copy holds the second half, so
 * the read makes it valid (the first half copied to the host on a device
 * queue) and copies it into out from a host function on that queue: a
 * gate, before which the work fails. out keeps its bytes; the launch
 * fails; the next one works.
 */
static void test_failed_before_gate(void **state)
{
    static uint32_t in[N], out[N];
    weft_buffer *x, *v;
    weft_graph *g;
    weft_exec *e;
    weft_access_desc av =
        weft_access_range(NULL, 0, WEFT_WHOLE, WEFT_READ_WRITE);
    weft_access_desc a2 =
        weft_access_range(NULL, N / 2 * 4, N / 2 * 4, WEFT_WRITE);
    int apart = 0, rc;

    (void)state;
    for (unsigned i = 0; i < N; i++)
        in[i] = 3 * i;
    check(weft_buffer_create(devs.rt, N * 4, &x));
    check(weft_buffer_create(devs.rt, 64, &v));
    av.buffer = v;
    a2.buffer = x;
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, x, 0, in, sizeof in, NULL));
    add_addone(g, x, N / 2, 0);
    check(weft_graph_add_host(g, host_second_half, NULL, &a2, 1, NULL));
    check(weft_graph_add_read(g, x, 0, out, sizeof out, NULL));
    check(weft_graph_add_host(g, host_mark, &apart, &av, 1, NULL));
    check(weft_graph_instantiate(g, NULL, &e));

    memset(out, 0xab, sizeof out);
    weft__fault_arm(1, "!opencl.failed.gate");
    check(weft_exec_launch(e));
    rc = weft_exec_wait(e);
    assert_true(weft__fault_fired());
    weft__fault_disarm();
    failed_as_carried(rc);
    for (unsigned i = 0; i < N; i++)
        if (out[i] != 0xabababab)
            fail_msg("out[%u] was written after the failure: %u", i, out[i]);
    assert_int_equal(apart, 1);

    for (unsigned l = 0; l < 2; l++) {
        memset(out, 0, sizeof out);
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        for (unsigned i = 0; i < N; i++)
            assert_int_equal(out[i], i < N / 2 ? 3 * i + 1 : 5 * i);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(v));
}

/*
 * A user event of weft's own context of device 0, which the graph waits
 * for there (a barrier, no bridge: one context), and a host task that sets
 * it: the task is added after the nodes that must be issued first, so that
 * device 0's work is still held when they are.
 */
static cl_event gate_ev;
static cl_int gate_rc; /* of the first opening (on a host worker) */

static void gate_open(void *const *ptrs, void *user)
{
    cl_int st = CL_COMPLETE;

    (void)ptrs;
    (void)user;
    weft__cl.GetEventInfo(gate_ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st,
                          &st, NULL);
    if (st == CL_SUBMITTED)
        gate_rc = weft__cl.SetUserEventStatus(gate_ev, CL_COMPLETE);
}

static void gate_make(void)
{
    void *ctx = NULL;
    cl_int err;

    check(weft_device_native(devs.rt, weft_runtime_device(devs.rt, 0), &ctx,
                             NULL));
    gate_ev = weft__cl.CreateUserEvent(ctx, &err);
    assert_non_null(gate_ev);
}

static void gate_free(void)
{
    weft__cl.ReleaseEvent(gate_ev);
    gate_ev = NULL;
}

/*
 * wait(gate) on device 0 -> write x -> addone(x) on device 0 -> addone(x)
 * on device 1 -> a host task reading x; then the task that opens the gate,
 * and apart from them all a host task. Device 1 waits for device 0's work
 * through a bridge (another context; device 0's work is held by the gate
 * when device 1's is issued), whose source fails: device 1's later work is
 * reported failed, the host task after it does not run, the launch fails;
 * the next one gives x + 2.
 */
static void test_failed_before_bridge(void **state)
{
    static uint32_t in[N];
    static ran_copy r;
    weft_buffer *x, *v;
    weft_graph *g;
    weft_exec *e;
    weft_access_desc ax = weft_access_range(NULL, 0, WEFT_WHOLE, WEFT_READ);
    weft_access_desc av =
        weft_access_range(NULL, 0, WEFT_WHOLE, WEFT_READ_WRITE);
    weft_node w;
    int apart = 0, rc;

    (void)state;
    if (devs.n < 2)
        skip();
    for (unsigned i = 0; i < N; i++)
        in[i] = 7 * i;
    /*
     * The task that opens the gate depends on nothing, so it may open it
     * before device 1's work is issued; then no bridge is needed and none
     * fails (the launch works). That is the test's race, not weft's: try
     * again with a new gate, a few times.
     */
    for (int attempt = 0;; attempt++) {
        int fired;

        check(weft_buffer_create(devs.rt, N * 4, &x));
        check(weft_buffer_create(devs.rt, 64, &v));
        ax.buffer = x;
        av.buffer = v;
        check(weft_graph_create(devs.rt, &g));
        gate_make();
        check(weft_graph_add_event_wait(g, "opencl", gate_ev, &ax, 1, &w));
        check(weft_graph_set_device(g, w, weft_runtime_device(devs.rt, 0)));
        check(weft_graph_add_write(g, x, 0, in, sizeof in, NULL));
        add_addone(g, x, N, 0);
        add_addone(g, x, N, 1);
        check(weft_graph_add_host(g, host_copy, &r, &ax, 1, NULL));
        check(weft_graph_add_host(g, gate_open, NULL, NULL, 0, NULL));
        check(weft_graph_add_host(g, host_mark, &apart, &av, 1, NULL));
        check(weft_graph_instantiate(g, NULL, &e));

        memset(&r, 0, sizeof r);
        apart = 0;
        weft__fault_arm(1, "!opencl.failed.bridge");
        check(weft_exec_launch(e));
        rc = weft_exec_wait(e);
        fired = weft__fault_fired();
        weft__fault_disarm();
        if (fired)
            break;
        check(rc);
        if (attempt == 4)
            fail_msg("in 5 launches the gate opened before device 1's work "
                     "was issued");
        check(weft_exec_destroy(e));
        check(weft_graph_destroy(g));
        gate_free();
        check(weft_buffer_destroy(x));
        check(weft_buffer_destroy(v));
    }
    failed_as_carried(rc);
    assert_int_equal(gate_rc, CL_SUCCESS);
    assert_int_equal(r.ran, 0);
    assert_int_equal(apart, 1);

    /* The gate is open from now on: a user event completes once. */
    for (unsigned l = 0; l < 2; l++) {
        memset(&r, 0, sizeof r);
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        assert_int_equal(r.ran, 1);
        for (unsigned i = 0; i < N; i++)
            assert_int_equal(r.seen[i], 7 * i + 2);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    gate_free();
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(v));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_before_gate),
        cmocka_unit_test(test_failed_before_bridge),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
