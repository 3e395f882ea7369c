/*
 * Native nodes (weft_graph_add_native) on the devices of WEFT_DEVICES: the
 * host driver (the function computes through host pointers), the sim (it
 * enqueues sim copies and fills on its queue, in virtual time, checked for
 * races with check=1), OpenCL on PoCL (clEnqueueNDRangeKernel and
 * clEnqueueFillBuffer on the given queue, on cl_mem plus offset) and CUDA
 * (cuMemcpyDtoDAsync and cuMemsetD32Async on the given stream; exits 77,
 * skipped, where there is no GPU).
 *
 * Every case checks what a user sees: bytes a weft kernel wrote are what
 * the function reads, bytes the function wrote are what the weft kernels
 * and reads after it see, the function is called at every launch (never
 * replayed as a native graph), its failure fails the launch naming the
 * node and cancels what depends on it, and placement refuses a node with
 * no implementation for the devices there.
 */
#include "wt_test.h"

#include "drivers/sim/sim.h"
#include "sched/exec.h"
#include "wt_devices.h"
#include "wt_kernels.h"

#include "drivers/cuda/internal.h"
#include "drivers/opencl/opencl_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { N = 1024, HALF = N / 2, K = 7 };
#define PATTERN 0xA5A5A5A5u

static wt_devices devs;
static weft_module *mod;
static weft_kernel *k_advance;

static int setup(void **state)
{
    (void)state;
    return wt_kernels_setup(&devs, &mod, "advance", &k_advance);
}

static void ocl_release_kernels(void);

static int teardown(void **state)
{
    (void)state;
    ocl_release_kernels(); /* before their contexts go */
    return wt_kernels_teardown(&devs, mod);
}

/* ---- the function: copy access 0 into access 1, fill access 2 ----------- */

typedef struct native_run {
    unsigned calls;   /* atomic: calls of the function */
    unsigned bad;     /* atomic: calls that saw something wrong */
    int fail;         /* return this (0: succeed) */
    const char *want; /* the driver the function must see, or NULL */
} native_run;

static void native_bad(native_run *r, const char *what)
{
    fprintf(stderr, "native function: %s (%s)\n", what, weft_last_error());
    __atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
}

/* What every implementation checks of its ctx. */
static void native_common(const weft_native_ctx *c, native_run *r,
                          const char *driver)
{
    __atomic_add_fetch(&r->calls, 1, __ATOMIC_RELAXED);
    if (strcmp(weft_native_driver(c), driver) != 0)
        native_bad(r, "another driver");
    if (r->want && strcmp(r->want, driver) != 0)
        native_bad(r, "not the driver placement was given");
    if (weft_native_count(c) != 3 || weft_native_size(c, 0) != HALF * 4 ||
        weft_native_size(c, 2) != HALF * 4)
        native_bad(r, "the accesses");
    if (!weft_native_device(c))
        native_bad(r, "no device");
    if (weft_native_size(c, 3) != 0 || weft_native_ptr(c, 3) != NULL)
        native_bad(r, "access 3 of 3");
}

static int native_host(const weft_native_ctx *c, void *user)
{
    native_run *r = user;
    uint32_t *y = weft_native_ptr(c, 1), *z = weft_native_ptr(c, 2);
    const uint32_t *x = weft_native_ptr(c, 0);

    native_common(c, r, "host");
    if (weft_native_queue(c) || !x || !y || !z ||
        weft_native_address(c, 0) != (uint64_t)(uintptr_t)x)
        native_bad(r, "host handles");
    if (r->fail)
        return r->fail;
    if (x && y && z) {
        memcpy(y, x, HALF * 4);
        for (unsigned i = 0; i < HALF; i++)
            z[i] = PATTERN;
    }
    return 0;
}

/* The sim's handles are its own objects: the work goes on its queue. */
static int native_sim(const weft_native_ctx *c, void *user)
{
    native_run *r = user;
    weft__queue *q = weft_native_queue(c);
    size_t o0, o1, o2;
    weft__mem *m0 = weft_native_mem(c, 0, &o0),
              *m1 = weft_native_mem(c, 1, &o1),
              *m2 = weft_native_mem(c, 2, &o2);
    uint32_t pat = PATTERN;
    int rc;

    native_common(c, r, "sim");
    if (!q || !m0 || !m1 || !m2 || weft_native_context(c) != q->ctx)
        native_bad(r, "sim handles");
    if (r->fail)
        return r->fail;
    rc = weft__drv_copy_d2d(q, m1, o1, m0, o0, HALF * 4);
    if (rc == 0)
        rc = weft__drv_fill(q, m2, o2, &pat, 4, HALF * 4);
    return rc;
}

/* One program per context (PoCL: one per device), built on first use. */
static struct {
    pthread_mutex_t lock;
    cl_context ctx[8];
    cl_program prog[8];
    cl_kernel kern[8];
    unsigned n;
} ocl = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, {0}, 0};

static const char ocl_copy_src[] =
    "__kernel void copy_u32(__global uint *dst, uint dst_at,\n"
    "                       __global const uint *src, uint src_at) {\n"
    "    size_t i = get_global_id(0);\n"
    "    dst[dst_at + i] = src[src_at + i];\n"
    "}\n";

static cl_kernel ocl_copy_kernel(cl_context ctx, cl_device_id dev)
{
    const char *src = ocl_copy_src;
    cl_kernel k = NULL;
    cl_int err;

    pthread_mutex_lock(&ocl.lock);
    for (unsigned i = 0; i < ocl.n; i++)
        if (ocl.ctx[i] == ctx)
            k = ocl.kern[i];
    if (!k && ocl.n < 8) {
        cl_program p =
            weft__cl.CreateProgramWithSource(ctx, 1, &src, NULL, &err);

        if (p &&
            weft__cl.BuildProgram(p, 1, &dev, NULL, NULL, NULL) == CL_SUCCESS)
            k = weft__cl.CreateKernel(p, "copy_u32", &err);
        if (k) {
            ocl.ctx[ocl.n] = ctx;
            ocl.prog[ocl.n] = p;
            ocl.kern[ocl.n++] = k;
        } else if (p) {
            weft__cl.ReleaseProgram(p);
        }
    }
    pthread_mutex_unlock(&ocl.lock);
    return k;
}

static void ocl_release_kernels(void)
{
    for (unsigned i = 0; i < ocl.n; i++) {
        weft__cl.ReleaseKernel(ocl.kern[i]);
        weft__cl.ReleaseProgram(ocl.prog[i]);
    }
    ocl.n = 0;
}

/* The function's own enqueues on weft's queue, on cl_mem plus offset. */
static int native_opencl(const weft_native_ctx *c, void *user)
{
    native_run *r = user;
    cl_command_queue q = weft_native_queue(c);
    size_t o0, o1, o2, items = HALF;
    cl_mem m0 = weft_native_mem(c, 0, &o0), m1 = weft_native_mem(c, 1, &o1),
           m2 = weft_native_mem(c, 2, &o2);
    cl_kernel k;
    cl_uint a0, a1, pat = PATTERN;
    cl_int err;

    native_common(c, r, "opencl");
    if (!q || !m0 || !m1 || !m2 || !weft_native_context(c) ||
        !weft_native_device_id(c) || weft_native_ptr(c, 0))
        native_bad(r, "opencl handles");
    if (r->fail)
        return r->fail;
    k = ocl_copy_kernel(weft_native_context(c), weft_native_device_id(c));
    if (!k)
        return -1;
    a1 = (cl_uint)(o1 / 4);
    a0 = (cl_uint)(o0 / 4);
    /* The kernel object is shared by the calls on this device: the
     * arguments and the enqueue go together. */
    pthread_mutex_lock(&ocl.lock);
    err = weft__cl.SetKernelArg(k, 0, sizeof m1, &m1);
    err |= weft__cl.SetKernelArg(k, 1, sizeof a1, &a1);
    err |= weft__cl.SetKernelArg(k, 2, sizeof m0, &m0);
    err |= weft__cl.SetKernelArg(k, 3, sizeof a0, &a0);
    if (err == CL_SUCCESS)
        err = weft__cl.EnqueueNDRangeKernel(q, k, 1, NULL, &items, NULL, 0,
                                            NULL, NULL);
    pthread_mutex_unlock(&ocl.lock);
    if (err == CL_SUCCESS)
        err = weft__cl.EnqueueFillBuffer(q, m2, &pat, sizeof pat, o2, HALF * 4,
                                         0, NULL, NULL);
    return err == CL_SUCCESS ? 0 : (int)err;
}

/* CUDA through weft's own table of libcuda (this test has no CUDA header). */
static int native_cuda(const weft_native_ctx *c, void *user)
{
    native_run *r = user;
    CUstream s = weft_native_queue(c);
    CUdeviceptr x = weft_native_address(c, 0), y = weft_native_address(c, 1),
                z = weft_native_address(c, 2);
    CUcontext cur = NULL;
    CUresult res;

    native_common(c, r, "cuda");
    if (!x || !y || !z || !weft_native_context(c) ||
        weft__cu.CtxGetCurrent(&cur) != CUDA_SUCCESS ||
        cur != weft_native_context(c))
        native_bad(r, "cuda handles");
    if (r->fail)
        return r->fail;
    res = weft__cu.MemcpyDtoDAsync(y, x, HALF * 4, s);
    if (res == CUDA_SUCCESS)
        res = weft__cu.MemsetD32Async(z, PATTERN, HALF, s);
    return (int)res;
}

static const weft_native_impl impls[] = {
    {"host", 0, native_host},
    {"opencl", 0, native_opencl},
    {"cuda", WEFT_DEVICE_GPU, native_cuda},
    {"sim", 0, native_sim},
};

/* ---- helpers ----------------------------------------------------------- */

/* On the sim (check=1): no two operations on the same bytes unordered. */
static void no_races(void)
{
    weft__device *d = wt_device(&devs, 0);

    if (d->drv->virtual_time)
        assert_int_equal(weft__sim_hazards(d), 0);
}

static weft_arg advance_args(weft_buffer *b, weft_arg *args)
{
    args[0] = weft_arg_buffer(b, HALF * 4, HALF * 4, WEFT_READ_WRITE);
    args[1] = weft_arg_u32(K);
    args[2] = weft_arg_i64(HALF);
    return args[0];
}

static void add_advance(weft_graph *g, weft_buffer *b, weft_node *node)
{
    weft_arg args[3];

    advance_args(b, args);
    check(weft_graph_add_kernel(g, k_advance, weft_dims1(HALF), args, 3, node));
}

/* The native node over the second halves of x (read), y and z (written). */
static int add_native(weft_graph *g, weft_buffer *x, weft_buffer *y,
                      weft_buffer *z, native_run *run, weft_node *node)
{
    weft_access_desc acc[3] = {
        weft_access_range(x, HALF * 4, HALF * 4, WEFT_READ),
        weft_access_range(y, HALF * 4, HALF * 4, WEFT_WRITE),
        weft_access_range(z, HALF * 4, WEFT_WHOLE, WEFT_WRITE),
    };

    return weft_graph_add_native(g, impls, WEFT__COUNTOF(impls), acc, 3, run,
                                 node);
}

static void fill_u32(weft_buffer *b, uint32_t base)
{
    uint32_t h[N];

    for (unsigned i = 0; i < N; i++)
        h[i] = base + i;
    check(weft_buffer_write(b, 0, h, sizeof h));
}

/* ---- cases --------------------------------------------------------------- */

/*
 * advance(x); native: y = x, z = PATTERN; advance(y); read y and z. Three
 * launches: each calls the function once and gives the same result.
 */
static void test_native_roundtrip(void **state)
{
    weft_buffer *x, *y, *z;
    weft_graph *g;
    weft_exec *e;
    weft_exec_stats st = {.size = sizeof st};
    native_run run = {0};
    uint32_t hy[HALF], hz[HALF];
    weft_node nn;

    (void)state;
    run.want = wt_device(&devs, 0)->drv->name;
    check(weft_buffer_create(devs.rt, N * 4, &x));
    check(weft_buffer_create(devs.rt, N * 4, &y));
    check(weft_buffer_create(devs.rt, N * 4, &z));
    check(weft_graph_create(devs.rt, &g));
    fill_u32(y, 0);
    fill_u32(z, 0);
    add_advance(g, x, NULL);
    check(add_native(g, x, y, z, &run, &nn));
    add_advance(g, y, NULL);
    check(weft_graph_add_read(g, y, HALF * 4, hy, sizeof hy, NULL));
    check(weft_graph_add_read(g, z, HALF * 4, hz, sizeof hz, NULL));
    assert_int_equal(nn, 1);
    check(weft_graph_instantiate(g, NULL, &e));
    for (unsigned l = 0; l < 3; l++) {
        fill_u32(x, 100);
        memset(hy, 0, sizeof hy);
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        for (unsigned i = 0; i < HALF; i++) {
            uint32_t xi = wt_advance_value(100 + HALF + i, K);

            if (hy[i] != wt_advance_value(xi, K) || hz[i] != PATTERN)
                fail_msg("launch %u: y[%u] = %u, z[%u] = %#x; want %u, %#x", l,
                         i, hy[i], i, hz[i], wt_advance_value(xi, K), PATTERN);
        }
    }
    assert_int_equal(__atomic_load_n(&run.calls, __ATOMIC_RELAXED), 3);
    assert_int_equal(__atomic_load_n(&run.bad, __ATOMIC_RELAXED), 0);
    /* The first halves were never touched. */
    {
        uint32_t h[HALF];

        check(weft_buffer_read(z, 0, h, sizeof h));
        for (unsigned i = 0; i < HALF; i++)
            assert_int_equal(h[i], i);
    }
    check(weft_exec_get_stats(e, &st));
    assert_int_equal(st.launches, 3);
    assert_int_equal(st.native_launches, 0);
    assert_int_equal(st.native_replays, 0);
    no_races();
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_buffer_destroy(z));
}

/*
 * Two native nodes placed on two devices (where there are two): the
 * second reads what the first wrote on the other device; a host task reads
 * the end of the chain.
 */
static void host_sum(void *const *ptrs, void *user)
{
    const uint32_t *a = ptrs[0];
    uint64_t *sum = user;

    for (unsigned i = 0; i < HALF; i++)
        *sum += a[i];
}

static void test_native_two_devices(void **state)
{
    weft_buffer *x, *y, *z, *w;
    weft_graph *g;
    weft_exec *e;
    native_run run = {0};
    weft_node a, b;
    uint64_t sum = 0, want = 0;
    unsigned d1 = devs.n > 1 ? 1 : 0;
    weft_access_desc acc =
        weft_access_range(NULL, HALF * 4, HALF * 4, WEFT_READ);

    (void)state;
    check(weft_buffer_create(devs.rt, N * 4, &x));
    check(weft_buffer_create(devs.rt, N * 4, &y));
    check(weft_buffer_create(devs.rt, N * 4, &z));
    check(weft_buffer_create(devs.rt, N * 4, &w));
    fill_u32(x, 5);
    fill_u32(w, 0);
    check(weft_graph_create(devs.rt, &g));
    check(add_native(g, x, y, z, &run, &a));
    add_advance(g, y, NULL);
    check(add_native(g, y, w, z, &run, &b));
    acc.buffer = w;
    check(weft_graph_add_host(g, host_sum, &sum, &acc, 1, NULL));
    check(weft_graph_set_device(g, a, weft_runtime_device(devs.rt, 0)));
    check(weft_graph_set_device(g, b, weft_runtime_device(devs.rt, d1)));
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    assert_ptr_equal(weft_exec_node_device(e, b),
                     weft_runtime_device(devs.rt, d1));
    for (unsigned i = 0; i < HALF; i++)
        want += wt_advance_value(5 + HALF + i, K);
    assert_int_equal(sum, want);
    assert_int_equal(run.calls, 2);
    assert_int_equal(run.bad, 0);
    no_races();
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_buffer_destroy(z));
    check(weft_buffer_destroy(w));
}

static void host_mark(void *const *ptrs, void *user)
{
    (void)ptrs;
    *(int *)user = 1;
}

/* A function that fails: the launch fails naming the node; its successor
 * is canceled; an independent node still runs; the next launch works. */
static void test_native_fails(void **state)
{
    weft_buffer *x, *y, *z, *v;
    weft_graph *g;
    weft_exec *e;
    native_run run = {0};
    int after = 0, apart = 0, rc;
    weft_access_desc ay = weft_access_range(NULL, 0, WEFT_WHOLE, WEFT_READ);
    weft_access_desc av =
        weft_access_range(NULL, 0, WEFT_WHOLE, WEFT_READ_WRITE);

    (void)state;
    check(weft_buffer_create(devs.rt, N * 4, &x));
    check(weft_buffer_create(devs.rt, N * 4, &y));
    check(weft_buffer_create(devs.rt, N * 4, &z));
    check(weft_buffer_create(devs.rt, 64, &v));
    fill_u32(x, 1);
    ay.buffer = y;
    av.buffer = v;
    check(weft_graph_create(devs.rt, &g));
    check(add_native(g, x, y, z, &run, NULL));
    check(weft_graph_add_host(g, host_mark, &after, &ay, 1, NULL));
    check(weft_graph_add_host(g, host_mark, &apart, &av, 1, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    run.fail = 7;
    check(weft_exec_launch(e));
    rc = weft_exec_wait(e);
    assert_int_equal(rc, WEFT_EIO);
    assert_non_null(strstr(weft_last_error(), "node 0 (native)"));
    assert_non_null(strstr(weft_last_error(), "returned 7"));
    assert_int_equal(after, 0);
    assert_int_equal(apart, 1);
    run.fail = 0;
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    assert_int_equal(after, 1);
    assert_int_equal(run.calls, 2);
    no_races();
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_buffer_destroy(z));
    check(weft_buffer_destroy(v));
}

/*
 * The driver's native_call fails (injected): the launch fails at the node,
 * the function is not called, and the bytes the node was to write are
 * those from before the launch; the next launch works.
 */
static void test_native_call_fails(void **state)
{
    weft_buffer *x, *y, *z;
    weft_graph *g;
    weft_exec *e;
    native_run run = {0};
    uint32_t h[HALF];
    int rc;

    (void)state;
    check(weft_buffer_create(devs.rt, N * 4, &x));
    check(weft_buffer_create(devs.rt, N * 4, &y));
    check(weft_buffer_create(devs.rt, N * 4, &z));
    fill_u32(x, 40);
    fill_u32(y, 9);
    fill_u32(z, 9);
    check(weft_graph_create(devs.rt, &g));
    check(add_native(g, x, y, z, &run, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    weft__fault_arm(1, ".native_");
    check(weft_exec_launch(e));
    rc = weft_exec_wait(e);
    assert_true(weft__fault_fired());
    weft__fault_disarm();
    assert_int_equal(rc, WEFT_EDRIVER);
    assert_non_null(strstr(weft_last_error(), "node 0 (native)"));
    assert_int_equal(run.calls, 0);
    check(weft_buffer_read(y, HALF * 4, h, sizeof h));
    for (unsigned i = 0; i < HALF; i++)
        assert_int_equal(h[i], 9 + HALF + i);
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    assert_int_equal(run.calls, 1);
    check(weft_buffer_read(y, HALF * 4, h, sizeof h));
    for (unsigned i = 0; i < HALF; i++)
        assert_int_equal(h[i], 40 + HALF + i);
    no_races();
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_buffer_destroy(z));
}

/* Only an implementation for a driver with no device here: WEFT_ENODEV at
 * instantiate, naming the node; the DOT output names the node's kind. */
static void test_native_no_impl(void **state)
{
    const char *other =
        strcmp(wt_device(&devs, 0)->drv->name, "sim") == 0 ? "host" : "sim";
    weft_native_impl only = {other, 0, native_host};
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e = NULL;
    weft_access_desc acc =
        weft_access_range(NULL, 0, WEFT_WHOLE, WEFT_READ_WRITE);
    char *text = NULL;
    size_t len = 0;
    FILE *f;
    int have_other = 0;

    (void)state;
    for (unsigned d = 0; d < devs.n; d++)
        have_other |= strcmp(wt_device(&devs, d)->drv->name, other) == 0;
    if (have_other)
        skip();
    check(weft_buffer_create(devs.rt, 64, &x));
    acc.buffer = x;
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_empty(g, NULL));
    check(weft_graph_add_native(g, &only, 1, &acc, 1, NULL, NULL));
    assert_int_equal(weft_graph_instantiate(g, NULL, &e), WEFT_ENODEV);
    assert_non_null(strstr(weft_last_error(), "node 1 (native)"));
    assert_null(e);
    assert_int_equal(
        weft_graph_set_device(g, 1, weft_runtime_device(devs.rt, 0)),
        WEFT_ENODEV);
    f = open_memstream(&text, &len);
    assert_non_null(f);
    check(weft_graph_write_dot(g, f));
    fclose(f);
    assert_non_null(strstr(text, "native"));
    free(text);
    check(weft_graph_destroy(g));
    /* The buffer is free again once the graph is gone. */
    check(weft_buffer_destroy(x));
}

/* The graph holds its buffers; the impls table is copied at the add. */
static void test_native_lifetime(void **state)
{
    weft_native_impl tab[WEFT__COUNTOF(impls)];
    weft_buffer *x, *y, *z;
    weft_graph *g;
    weft_exec *e;
    native_run run = {0};

    (void)state;
    memcpy(tab, impls, sizeof tab);
    check(weft_buffer_create(devs.rt, N * 4, &x));
    check(weft_buffer_create(devs.rt, N * 4, &y));
    check(weft_buffer_create(devs.rt, N * 4, &z));
    fill_u32(x, 3);
    check(weft_graph_create(devs.rt, &g));
    {
        weft_access_desc acc[3] = {
            weft_access_range(x, HALF * 4, HALF * 4, WEFT_READ),
            weft_access_range(y, HALF * 4, HALF * 4, WEFT_WRITE),
            weft_access_range(z, HALF * 4, HALF * 4, WEFT_WRITE),
        };

        check(weft_graph_add_native(g, tab, WEFT__COUNTOF(tab), acc, 3, &run,
                                    NULL));
    }
    memset(tab, 0, sizeof tab);
    assert_int_equal(weft_buffer_destroy(y), WEFT_EBUSY);
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_graph_destroy(g));
    assert_int_equal(weft_buffer_destroy(z), WEFT_EBUSY);
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    assert_int_equal(run.calls, 1);
    no_races();
    check(weft_exec_destroy(e));
    {
        uint32_t h[HALF];

        check(weft_buffer_read(y, HALF * 4, h, sizeof h));
        for (unsigned i = 0; i < HALF; i++)
            assert_int_equal(h[i], 3 + HALF + i);
    }
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_buffer_destroy(z));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_roundtrip),
        cmocka_unit_test(test_native_two_devices),
        cmocka_unit_test(test_native_fails),
        cmocka_unit_test(test_native_call_fails),
        cmocka_unit_test(test_native_no_impl),
        cmocka_unit_test(test_native_lifetime),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
