/*
 * External events (weft_graph_add_event_wait, weft_graph_add_event_record,
 * weft_exec_launch_after) on the first device of WEFT_DEVICES, against a
 * "program" with its own queue and events:
 *
 *   host, sim  a context, queue and events of the driver's own (weft's
 *              internal objects: these drivers have no public ones)
 *   opencl     its own cl_context and cl_command_queue on the first
 *              device, a marker event, and a user event to be signalled
 *              (so that weft bridges events of another context)
 *   cuda       its own stream and events in the primary context (exits
 *              77, skipped, where there is no GPU)
 *
 * The program's queue is held shut by a gate (a blocked host function, or
 * a marker waiting on a user event) until the test opens it: while it is
 * shut a launch that waits for it must not finish, and nothing after the
 * wait may have run; once open, it finishes. Nothing sleeps: the checks
 * while shut are of states that cannot change until the test opens it.
 */
#include "wt_test.h"

#include "drivers/cuda/internal.h"
#include "drivers/opencl/opencl_internal.h"
#include "sched/exec.h"
#include "wt_devices.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static wt_devices devs;
static const char *driver;

/* ---- the gate: a host function that blocks until opened ----------------- */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void gate_fn(void *user)
{
    (void)user;
    pthread_mutex_lock(&gate.lock);
    while (!gate.open)
        pthread_cond_wait(&gate.cond, &gate.lock);
    pthread_mutex_unlock(&gate.lock);
}

static void gate_set(int open)
{
    pthread_mutex_lock(&gate.lock);
    gate.open = open;
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
}

/* ---- the program, per driver -------------------------------------------- */

static struct {
    weft__context *ctx; /* host, sim */
    weft__queue *q;
    cl_context cl;
    cl_command_queue clq;
    cl_event gate_user; /* the OpenCL gate */
    CUcontext cu;
    CUstream stream;
} prog;

static int own_driver(void)
{
    return !strcmp(driver, "host") || !strcmp(driver, "sim");
}

static void prog_open(void)
{
    if (own_driver()) {
        check(weft__drv_context_create(wt_device(&devs, 0), &prog.ctx));
        check(weft__drv_queue_create(prog.ctx, NULL, &prog.q));
        return;
    }
    if (!strcmp(driver, "opencl")) {
        cl_platform_id pf;
        cl_device_id dev;
        cl_int err;

        assert_int_equal(weft__cl.GetPlatformIDs(1, &pf, NULL), CL_SUCCESS);
        assert_int_equal(
            weft__cl.GetDeviceIDs(pf, CL_DEVICE_TYPE_ALL, 1, &dev, NULL),
            CL_SUCCESS);
        prog.cl = weft__cl.CreateContext(NULL, 1, &dev, NULL, NULL, &err);
        assert_non_null(prog.cl);
        prog.clq = weft__cl.CreateCommandQueue(prog.cl, dev, 0, &err);
        assert_non_null(prog.clq);
        return;
    }
    if (!strcmp(driver, "cuda")) {
        CUdevice dev;

        assert_int_equal(weft__cu.DeviceGet(&dev, 0), CUDA_SUCCESS);
        assert_int_equal(weft__cu.DevicePrimaryCtxRetain(&prog.cu, dev),
                         CUDA_SUCCESS);
        assert_int_equal(weft__cu.CtxSetCurrent(prog.cu), CUDA_SUCCESS);
        assert_int_equal(weft__cu.StreamCreateWithPriority(&prog.stream, 1, 0),
                         CUDA_SUCCESS);
        return;
    }
    fail_msg("no program for driver %s", driver);
}

static void prog_close(void)
{
    if (own_driver()) {
        check(weft__drv_queue_destroy(prog.q));
        check(weft__drv_context_destroy(prog.ctx));
    }
    if (prog.cl) {
        weft__cl.Finish(prog.clq);
        weft__cl.ReleaseCommandQueue(prog.clq);
        weft__cl.ReleaseContext(prog.cl);
    }
    if (prog.stream) {
        CUdevice dev;

        weft__cu.CtxSetCurrent(prog.cu);
        weft__cu.StreamSynchronize(prog.stream);
        weft__cu.StreamDestroy(prog.stream);
        weft__cu.DeviceGet(&dev, 0);
        weft__cu.DevicePrimaryCtxRelease(dev);
    }
    memset(&prog, 0, sizeof prog);
}

/* The program's queue, as weft_exec_launch_after takes it. */
static void *prog_queue(void)
{
    if (prog.clq)
        return prog.clq;
    if (prog.stream)
        return prog.stream;
    return prog.q;
}

/* Shut the program's queue: later work on it waits for gate_set(1). */
static void prog_gate(void)
{
    gate_set(0);
    if (own_driver()) {
        check(weft__drv_host_fn(prog.q, gate_fn, NULL));
        return;
    }
    if (prog.clq) {
        cl_int err;

        prog.gate_user = weft__cl.CreateUserEvent(prog.cl, &err);
        assert_non_null(prog.gate_user);
        assert_int_equal(weft__cl.EnqueueMarkerWithWaitList(
                             prog.clq, 1, &prog.gate_user, NULL),
                         CL_SUCCESS);
        weft__cl.Flush(prog.clq);
        return;
    }
    weft__cu.CtxSetCurrent(prog.cu);
    assert_int_equal(weft__cu.LaunchHostFunc(prog.stream, gate_fn, NULL),
                     CUDA_SUCCESS);
}

static void prog_open_gate(void)
{
    gate_set(1);
    if (prog.gate_user) {
        weft__cl.SetUserEventStatus(prog.gate_user, CL_COMPLETE);
        weft__cl.ReleaseEvent(prog.gate_user);
        prog.gate_user = NULL;
    }
}

/* An event of the program's queue's work so far (to be waited for). */
static void *prog_mark(void)
{
    if (own_driver()) {
        weft__event *ev;

        check(weft__drv_event_create(prog.ctx, 0, &ev));
        check(weft__drv_event_record(ev, prog.q));
        return ev;
    }
    if (prog.clq) {
        cl_event ev;

        assert_int_equal(
            weft__cl.EnqueueMarkerWithWaitList(prog.clq, 0, NULL, &ev),
            CL_SUCCESS);
        weft__cl.Flush(prog.clq);
        return ev;
    }
    {
        CUevent ev;

        weft__cu.CtxSetCurrent(prog.cu);
        assert_int_equal(weft__cu.EventCreate(&ev, CU_EVENT_DISABLE_TIMING),
                         CUDA_SUCCESS);
        assert_int_equal(weft__cu.EventRecord(ev, prog.stream), CUDA_SUCCESS);
        return ev;
    }
}

/* An event for weft to record or signal. */
static void *prog_signal_event(void)
{
    if (own_driver()) {
        weft__event *ev;

        weft__context *ctx;

        /* Of weft's context of the device, where its queue records it. */
        check(weft__runtime_context(devs.rt, 0, &ctx));
        check(weft__drv_event_create(ctx, 0, &ev));
        return ev;
    }
    if (prog.clq) {
        cl_int err;
        cl_event ev = weft__cl.CreateUserEvent(prog.cl, &err);

        assert_non_null(ev);
        return ev;
    }
    {
        CUevent ev;

        weft__cu.CtxSetCurrent(prog.cu);
        assert_int_equal(weft__cu.EventCreate(&ev, CU_EVENT_DISABLE_TIMING),
                         CUDA_SUCCESS);
        return ev;
    }
}

/* Block until ev completed (OpenCL: signalled). */
static void prog_event_sync(void *ev)
{
    if (own_driver()) {
        check(weft__drv_event_sync(ev));
        return;
    }
    if (prog.clq) {
        cl_event e = ev;

        assert_int_equal(weft__cl.WaitForEvents(1, &e), CL_SUCCESS);
        return;
    }
    assert_int_equal(weft__cu.EventSynchronize(ev), CUDA_SUCCESS);
}

static void prog_event_free(void *ev)
{
    if (own_driver()) {
        check(weft__drv_event_destroy(ev));
        return;
    }
    if (prog.clq) {
        weft__cl.ReleaseEvent(ev);
        return;
    }
    weft__cu.EventDestroy(ev);
}

static int setup(void **state)
{
    (void)state;
    wt_devices_open(&devs);
    driver = wt_device(&devs, 0)->drv->name;
    printf("# device 0: %s (%s)\n", wt_device(&devs, 0)->name, driver);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return weft_runtime_destroy(devs.rt);
}

/* ---- host tasks that say when they ran ---------------------------------- */

static void mark_ran(void *const *ptrs, void *user)
{
    (void)ptrs;
    __atomic_store_n((int *)user, 1, __ATOMIC_RELEASE);
}

/* A task that must run after the gate opened: *user = 1 if it was open,
 * 2 if it ran while the gate was shut. */
static void after_gate(void *const *ptrs, void *user)
{
    int open;

    (void)ptrs;
    pthread_mutex_lock(&gate.lock);
    open = gate.open;
    pthread_mutex_unlock(&gate.lock);
    __atomic_store_n((int *)user, open ? 1 : 2, __ATOMIC_RELEASE);
}

/*
 * Another task of the launch, apart from the gated ones: the test waits
 * (30 s at most) until it ran, so that the launch was being issued while
 * the gate is still shut.
 */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int ran;
} apart = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void apart_fn(void *const *ptrs, void *user)
{
    (void)ptrs;
    (void)user;
    pthread_mutex_lock(&apart.lock);
    apart.ran = 1;
    pthread_cond_broadcast(&apart.cond);
    pthread_mutex_unlock(&apart.lock);
}

static void apart_wait(void)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&apart.lock);
    while (!apart.ran &&
           pthread_cond_timedwait(&apart.cond, &apart.lock, &until) == 0)
        ;
    apart.ran = 0;
    pthread_mutex_unlock(&apart.lock);
}

static int ran_now(const int *flag)
{
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

/*
 * A record node of the program's event on device 0, whose context made it
 * (a CUDA event records only on its own device's queues: with several
 * GPUs, placement could choose another).
 */
static void add_record(weft_graph *g, void *ev, const weft_access_desc *acc,
                       unsigned nacc, weft_node *node)
{
    weft_node n;

    check(weft_graph_add_event_record(g, driver, ev, acc, nacc, &n));
    check(weft_graph_set_device(g, n, weft_runtime_device(devs.rt, 0)));
    if (node)
        *node = n;
}

/* ---- cases --------------------------------------------------------------- */

/*
 * wait(E) -> a host task on the bytes the wait node names: the task runs
 * only once the program's queue passed E.
 */
static void test_event_wait(void **state)
{
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    weft_access_desc acc =
        weft_access_range(NULL, 0, WEFT_WHOLE, WEFT_READ_WRITE);
    weft_node w;
    int ran = 0;
    void *ev;

    (void)state;
    prog_open();
    check(weft_buffer_create(devs.rt, 256, &x));
    acc.buffer = x;
    prog_gate();
    ev = prog_mark();
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_host(g, apart_fn, NULL, NULL, 0, NULL));
    check(weft_graph_add_event_wait(g, driver, ev, &acc, 1, &w));
    check(weft_graph_add_host(g, after_gate, &ran, &acc, 1, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    apart_wait();
    assert_int_equal(weft_exec_status(e), WEFT_ENOTREADY);
    prog_open_gate();
    check(weft_exec_wait(e));
    assert_int_equal(ran_now(&ran), 1); /* after the gate, not before */
    /* A second launch waits for the event again: it has completed. */
    ran = 0;
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    assert_int_equal(ran, 1);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    prog_event_free(ev);
    prog_close();
}

/* A host task writes x -> record(E) reading x: E completes after it. */
static void test_event_record(void **state)
{
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    weft_access_desc wr = weft_access_range(NULL, 0, WEFT_WHOLE, WEFT_WRITE);
    weft_access_desc rd = weft_access_range(NULL, 0, WEFT_WHOLE, WEFT_READ);
    int ran = 0;
    void *ev;

    (void)state;
    prog_open();
    check(weft_buffer_create(devs.rt, 256, &x));
    wr.buffer = rd.buffer = x;
    ev = prog_signal_event();
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_host(g, mark_ran, &ran, &wr, 1, NULL));
    add_record(g, ev, &rd, 1, NULL);
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    /* OpenCL: a user event, waited for before weft has signalled it. */
    if (!own_driver() && strcmp(driver, "cuda") != 0) {
        prog_event_sync(ev);
        assert_int_equal(ran_now(&ran), 1);
    }
    check(weft_exec_wait(e));
    prog_event_sync(ev);
    assert_int_equal(ran, 1);
    ran = 0;
    check(weft_exec_launch(e));
    if (prog.clq) {
        /* A user event completes once: a relaunch cannot signal it. */
        assert_int_equal(weft_exec_wait(e), WEFT_EINVAL);
        assert_non_null(strstr(weft_last_error(), "node 1 (event record)"));
        assert_non_null(strstr(weft_last_error(), "was set already"));
    } else {
        check(weft_exec_wait(e));
        prog_event_sync(ev);
        assert_int_equal(ran, 1);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    prog_event_free(ev);
    prog_close();
}

/*
 * OpenCL: two executable graphs wait for the program's gate, then record
 * one user event. Whichever launch claims the event first signals it once
 * the gate opens; the other fails at its record node (WEFT_EINVAL: the
 * event is claimed by a launch still running, or, if the first was over
 * by then, set already), and so does a relaunch of either. A graph with a
 * new event then signals it.
 */
static weft_exec *record_after_gate(void *wait_ev, void *ev, weft_graph **g)
{
    weft_exec *e;
    weft_node w, r;

    check(weft_graph_create(devs.rt, g));
    check(weft_graph_add_event_wait(*g, driver, wait_ev, NULL, 0, &w));
    add_record(*g, ev, NULL, 0, &r);
    check(weft_graph_add_edge(*g, w, r));
    check(weft_graph_instantiate(*g, NULL, &e));
    return e;
}

static void test_event_record_claimed(void **state)
{
    weft_graph *g1, *g2, *g3;
    weft_exec *e1, *e2, *e3;
    void *wait_ev, *ev, *ev2;
    int rc1, rc2;
    char err[512];

    (void)state;
    if (strcmp(driver, "opencl") != 0)
        skip();
    prog_open();
    prog_gate();
    wait_ev = prog_mark();
    ev = prog_signal_event();
    e1 = record_after_gate(wait_ev, ev, &g1);
    e2 = record_after_gate(wait_ev, ev, &g2);
    check(weft_exec_launch(e1));
    check(weft_exec_launch(e2));
    prog_open_gate();
    rc1 = weft_exec_wait(e1);
    if (rc1 < 0)
        snprintf(err, sizeof err, "%s", weft_last_error());
    rc2 = weft_exec_wait(e2);
    if (rc2 < 0)
        snprintf(err, sizeof err, "%s", weft_last_error());
    /* One signalled it, the other was refused. */
    assert_true((rc1 == 0 && rc2 == WEFT_EINVAL) ||
                (rc1 == WEFT_EINVAL && rc2 == 0));
    if (!strstr(err, "by a launch still running") &&
        !strstr(err, "was set already"))
        fail_msg("unexpected detail: %s", err);
    prog_event_sync(ev);
    check(weft_exec_launch(e1));
    assert_int_equal(weft_exec_wait(e1), WEFT_EINVAL);
    assert_non_null(strstr(weft_last_error(), "was set already"));
    /* A new graph with a new event. */
    ev2 = prog_signal_event();
    check(weft_graph_create(devs.rt, &g3));
    add_record(g3, ev2, NULL, 0, NULL);
    check(weft_graph_instantiate(g3, NULL, &e3));
    check(weft_exec_launch(e3));
    check(weft_exec_wait(e3));
    prog_event_sync(ev2);
    check(weft_exec_destroy(e1));
    check(weft_exec_destroy(e2));
    check(weft_exec_destroy(e3));
    check(weft_graph_destroy(g1));
    check(weft_graph_destroy(g2));
    check(weft_graph_destroy(g3));
    prog_event_free(wait_ev);
    prog_event_free(ev);
    prog_event_free(ev2);
    prog_close();
}

/* launch_after(program's queue): nothing of the launch before the gate. */
static void test_launch_after(void **state)
{
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    weft_access_desc acc =
        weft_access_range(NULL, 0, WEFT_WHOLE, WEFT_READ_WRITE);
    int ran = 0;

    (void)state;
    prog_open();
    check(weft_buffer_create(devs.rt, 256, &x));
    acc.buffer = x;
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_host(g, after_gate, &ran, &acc, 1, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    prog_gate();
    check(weft_exec_launch_after(e, driver, prog_queue()));
    check(weft_exec_launch(e)); /* after the one before, as always */
    assert_int_equal(weft_exec_status(e), WEFT_ENOTREADY);
    prog_open_gate();
    check(weft_exec_wait(e));
    assert_int_equal(ran, 1); /* after the gate, not before */
    {
        weft_exec_stats st = {.size = sizeof st};

        check(weft_exec_get_stats(e, &st));
        assert_int_equal(st.launches, 2);
    }
    /* The queue is idle now: the launch goes at once. */
    ran = 0;
    check(weft_exec_launch_after(e, driver, prog_queue()));
    check(weft_exec_wait(e));
    assert_int_equal(ran, 1);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    prog_close();
}

/* An event node of a driver with no device here: WEFT_ENODEV naming it. */
static void test_event_other_driver(void **state)
{
    const char *other = strcmp(driver, "sim") == 0 ? "host" : "sim";
    weft_graph *g;
    weft_exec *e = NULL;
    int dummy;

    (void)state;
    for (unsigned d = 0; d < devs.n; d++)
        if (!strcmp(wt_device(&devs, d)->drv->name, other))
            skip();
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_event_record(g, other, &dummy, NULL, 0, NULL));
    assert_int_equal(weft_graph_instantiate(g, NULL, &e), WEFT_ENODEV);
    assert_non_null(strstr(weft_last_error(), "node 0 (event record)"));
    check(weft_graph_add_empty(g, NULL));
    assert_int_equal(weft_graph_node_count(g), 2);
    check(weft_graph_destroy(g));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_wait),
        cmocka_unit_test(test_event_record),
        cmocka_unit_test(test_event_record_claimed),
        cmocka_unit_test(test_launch_after),
        cmocka_unit_test(test_event_other_driver),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
