/*
 * Device memory of the program's own (weft_buffer_wrap_device) and device
 * addresses handed out (weft_buffer_device_address,
 * weft_buffer_mark_device_written) on the first device of WEFT_DEVICES,
 * against a "program" that allocates, reads and writes device memory with
 * the driver's own calls:
 *
 *   host    malloc'd memory
 *   sim     the sim's memory (real_data=1), made on weft's own context
 *   opencl  a cl_mem made in weft's cl_context for the device; one of
 *           another context is refused
 *   cuda    cuMemAlloc in the primary context (exits 77, skipped, where
 *           there is no GPU)
 */
#include "wt_test.h"

#include "drivers/cuda/internal.h"
#include "drivers/opencl/opencl_internal.h"
#include "mem/buffer.h"
#include "wt_devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wt_devices devs;
static const char *driver;
static const weft_device *dev0;

/* ---- the program's memory, per driver ----------------------------------- */

typedef struct prog_mem {
    uint64_t handle; /* what weft_buffer_wrap_device takes */
    weft__mem *sim;  /* sim */
    void *host;      /* host */
    CUdeviceptr cu;  /* cuda */
    size_t size;
} prog_mem;

static weft__context *ctx0;
static cl_command_queue clq; /* the program's queue in weft's cl_context */

static void prog_setup(void)
{
    check(weft__runtime_context(devs.rt, 0, &ctx0));
    if (!strcmp(driver, "opencl")) {
        ocl_context *c = (ocl_context *)ctx0;
        cl_int err;

        clq = weft__cl.CreateCommandQueue(c->cl, c->dev, 0, &err);
        assert_non_null(clq);
    }
    if (!strcmp(driver, "cuda"))
        assert_int_equal(weft__cu.CtxSetCurrent(((cuda_context *)ctx0)->cu),
                         CUDA_SUCCESS);
}

/* The program works in ctx from now on (NULL: back to the first). */
static void prog_switch(weft__context *ctx)
{
    static weft__context *first;
    static cl_command_queue firstq;

    if (ctx && !first) {
        first = ctx0;
        firstq = clq;
    }
    if (clq && clq != firstq)
        weft__cl.ReleaseCommandQueue(clq);
    ctx0 = ctx ? ctx : first;
    clq = ctx ? NULL : firstq;
    if (ctx && !strcmp(driver, "opencl")) {
        ocl_context *c = (ocl_context *)ctx;
        cl_int err;

        clq = weft__cl.CreateCommandQueue(c->cl, c->dev, 0, &err);
        assert_non_null(clq);
    }
    if (!ctx)
        first = NULL;
}

static void prog_alloc(prog_mem *m, size_t size)
{
    memset(m, 0, sizeof *m);
    m->size = size;
    if (!strcmp(driver, "host")) {
        m->host = malloc(size);
        assert_non_null(m->host);
        m->handle = (uint64_t)(uintptr_t)m->host;
    } else if (!strcmp(driver, "sim")) {
        check(weft__drv_mem_alloc(ctx0, size, &m->sim));
        m->handle = (uint64_t)(uintptr_t)m->sim;
    } else if (!strcmp(driver, "opencl")) {
        cl_int err;
        cl_mem cl = weft__cl.CreateBuffer(((ocl_context *)ctx0)->cl,
                                          CL_MEM_READ_WRITE, size, NULL, &err);

        assert_non_null(cl);
        m->handle = (uint64_t)(uintptr_t)cl;
    } else {
        /* weft's calls on this thread may have left another context
         * current (or none): the program's allocation names its own. */
        assert_int_equal(weft__cu.CtxSetCurrent(((cuda_context *)ctx0)->cu),
                         CUDA_SUCCESS);
        assert_int_equal(weft__cu.MemAlloc(&m->cu, size), CUDA_SUCCESS);
        m->handle = (uint64_t)m->cu;
    }
}

static void prog_free(prog_mem *m)
{
    if (m->host)
        free(m->host);
    if (m->sim)
        check(weft__drv_mem_free(m->sim));
    if (!strcmp(driver, "opencl"))
        assert_int_equal(
            weft__cl.ReleaseMemObject((cl_mem)(uintptr_t)m->handle),
            CL_SUCCESS);
    if (m->cu) {
        assert_int_equal(weft__cu.CtxSetCurrent(((cuda_context *)ctx0)->cu),
                         CUDA_SUCCESS);
        assert_int_equal(weft__cu.MemFree(m->cu), CUDA_SUCCESS);
    }
}

/* n bytes at a device address (as weft_buffer_device_address says one)
 * to or from the host, with the driver's own calls. */
static void addr_copy(const weft_device_address *a, size_t off, void *host,
                      size_t n, int to_device)
{
    if (!strcmp(driver, "opencl")) {
        cl_mem cl = a->mem;

        assert_int_equal(
            to_device
                ? weft__cl.EnqueueWriteBuffer(clq, cl, CL_TRUE, a->offset + off,
                                              n, host, 0, NULL, NULL)
                : weft__cl.EnqueueReadBuffer(clq, cl, CL_TRUE, a->offset + off,
                                             n, host, 0, NULL, NULL),
            CL_SUCCESS);
        return;
    }
    if (!strcmp(driver, "cuda")) {
        CUdeviceptr p = (CUdeviceptr)a->address + off;

        assert_int_equal(to_device ? weft__cu.MemcpyHtoDAsync(p, host, n, NULL)
                                   : weft__cu.MemcpyDtoHAsync(host, p, n, NULL),
                         CUDA_SUCCESS);
        assert_int_equal(weft__cu.StreamSynchronize(NULL), CUDA_SUCCESS);
        return;
    }
    assert_non_null(a->ptr);
    if (to_device)
        memcpy((char *)a->ptr + off, host, n);
    else
        memcpy(host, (char *)a->ptr + off, n);
}

/* The program's memory m at off, as an address of m. */
static weft_device_address prog_addr(const prog_mem *m)
{
    weft_device_address a = {0, NULL, 0, NULL};
    weft__native_mem nm;

    if (m->sim) {
        weft__drv_native_mem(m->sim, 0, &nm);
        a.ptr = nm.host;
    }
    a.ptr = m->host ? m->host : a.ptr;
    a.address = m->cu;
    if (!strcmp(driver, "opencl"))
        a.mem = (void *)(uintptr_t)m->handle;
    return a;
}

static void prog_write(const prog_mem *m, size_t off, const void *src, size_t n)
{
    weft_device_address a = prog_addr(m);

    addr_copy(&a, off, (void *)src, n, 1);
}

static void prog_read(const prog_mem *m, size_t off, void *dst, size_t n)
{
    weft_device_address a = prog_addr(m);

    addr_copy(&a, off, dst, n, 0);
}

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7 + seed);
}

static int setup(void **state)
{
    (void)state;
    wt_devices_open(&devs);
    driver = wt_device(&devs, 0)->drv->name;
    dev0 = weft_runtime_device(devs.rt, 0);
    printf("# device 0: %s (%s)\n", wt_device(&devs, 0)->name, driver);
    prog_setup();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (clq)
        weft__cl.ReleaseCommandQueue(clq);
    return weft_runtime_destroy(devs.rt);
}

enum { N = 64 << 10, OFF = 4096 };

/* ---- wrapping ----------------------------------------------------------- */

/*
 * A wrapped buffer starts with the program's bytes, valid on the device
 * alone: its address there is the program's memory, handed out without
 * a copy; a read brings the bytes home.
 */
static void test_wrap_reads(void **state)
{
    static unsigned char in[N], out[N];
    weft_device_address a;
    weft_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
    weft_buffer *b;
    prog_mem m;

    (void)state;
    prog_alloc(&m, OFF + N);
    pattern(in, N, 3);
    prog_write(&m, OFF, in, N);
    check(weft_buffer_wrap_device(devs.rt, dev0, m.handle, OFF, N, &b));
    assert_true(weft__buffer_is_valid(b, 0, 0, N));
    assert_false(weft__buffer_is_valid(b, WEFT__HOST, 0, N));
    check(weft_runtime_get_stats(devs.rt, &s0));
    check(weft_buffer_device_address(b, dev0, 256, 512, &a));
    check(weft_runtime_get_stats(devs.rt, &s1));
    assert_int_equal(s1.h2d_bytes, s0.h2d_bytes); /* no copy */
    if (!strcmp(driver, "cuda"))
        assert_int_equal(a.address, m.handle + OFF + 256);
    else if (!strcmp(driver, "opencl"))
        assert_true(a.mem == (void *)(uintptr_t)m.handle &&
                    a.offset == OFF + 256);
    else
        assert_ptr_equal(a.ptr, (char *)prog_addr(&m).ptr + OFF + 256);
    check(weft_buffer_read(b, 0, out, N));
    assert_memory_equal(in, out, N);
    check(weft_buffer_destroy(b));
    /* The program's memory is still its own, and as it was. */
    prog_read(&m, OFF, out, N);
    assert_memory_equal(in, out, N);
    prog_free(&m);
}

/*
 * weft_device_native: the handles a native node gets, outside nodes. On
 * OpenCL the program makes its memory in weft's cl_context through them
 * (no internal header), wraps it and reads it back.
 */
static void test_device_native(void **state)
{
    static unsigned char in[N], out[N];
    void *context = NULL, *id = NULL;
    weft_buffer *b;

    (void)state;
    check(weft_device_native(devs.rt, dev0, &context, &id));
    if (!strcmp(driver, "host")) {
        assert_null(context);
        assert_null(id);
        return;
    }
    if (!strcmp(driver, "sim")) {
        assert_ptr_equal(context, ctx0);
        return;
    }
    if (!strcmp(driver, "cuda")) {
        assert_ptr_equal(context, ((cuda_context *)ctx0)->cu);
        return;
    }
    assert_ptr_equal(context, ((ocl_context *)ctx0)->cl);
    assert_ptr_equal(id, ((ocl_context *)ctx0)->dev);
    {
        cl_int err;
        cl_mem cl = weft__cl.CreateBuffer((cl_context)context,
                                          CL_MEM_READ_WRITE, N, NULL, &err);
        cl_command_queue q = weft__cl.CreateCommandQueue(
            (cl_context)context, (cl_device_id)id, 0, &err);

        assert_non_null(cl);
        assert_non_null(q);
        pattern(in, N, 9);
        assert_int_equal(weft__cl.EnqueueWriteBuffer(q, cl, CL_TRUE, 0, N, in,
                                                     0, NULL, NULL),
                         CL_SUCCESS);
        check(weft_buffer_wrap_device(devs.rt, dev0, (uint64_t)(uintptr_t)cl, 0,
                                      N, &b));
        check(weft_buffer_read(b, 0, out, N));
        assert_memory_equal(in, out, N);
        check(weft_buffer_destroy(b));
        weft__cl.ReleaseCommandQueue(q);
        weft__cl.ReleaseMemObject(cl);
    }
}

/* A host task adds one to every byte; destroying the buffer puts the
 * final bytes into the program's memory, which it then frees itself. */
static void addone(void *const *ptrs, void *user)
{
    unsigned char *p = ptrs[0];

    for (size_t i = 0; i < *(size_t *)user; i++)
        p[i]++;
}

static void test_wrap_destroy_writes_back(void **state)
{
    static unsigned char in[N], out[N];
    size_t n = N;
    weft_access_desc acc = weft_access_range(NULL, 0, N, WEFT_READ_WRITE);
    weft_graph *g;
    weft_exec *e;
    weft_buffer *b;
    prog_mem m;

    (void)state;
    prog_alloc(&m, N);
    pattern(in, N, 11);
    prog_write(&m, 0, in, N);
    check(weft_buffer_wrap_device(devs.rt, dev0, m.handle, 0, N, &b));
    acc.buffer = b;
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_host(g, addone, &n, &acc, 1, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    /* Lifetimes: the graphs name it. */
    assert_int_equal(weft_buffer_destroy(b), WEFT_EBUSY);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
    prog_read(&m, 0, out, N);
    for (size_t i = 0; i < N; i++)
        in[i]++;
    assert_memory_equal(in, out, N);
    prog_free(&m);
}

/*
 * The wrapped replica is not counted against the device's limit and is
 * never evicted: with a limit below its size, other buffers fill the
 * limit on the device (exported, so that they stay) while its bytes stay
 * where the program put them.
 */
static void test_wrap_not_evicted(void **state)
{
    static unsigned char in[N], out[N];
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_device_address a;
    weft_runtime *rt;
    const weft_device *d;
    weft_buffer *b, *other[3];
    weft__context *ctx;
    prog_mem m;

    (void)state;
    o.device_mem_limit = N; /* the wrapped buffer alone is 2N */
    o.devices = devs.selection;
    check(weft_runtime_create(&rt, &o));
    d = weft_runtime_device(rt, 0);
    check(weft__runtime_context(rt, 0, &ctx));
    /* The program's memory and queue in this runtime's context. */
    prog_switch(ctx);
    prog_alloc(&m, 2 * N);
    pattern(in, N, 5);
    prog_write(&m, N, in, N);
    prog_switch(NULL);
    check(weft_buffer_wrap_device(rt, d, m.handle, 0, 2 * N, &b));
    for (int i = 0; i < 3; i++) {
        check(weft_buffer_create(rt, N / 2, &other[i]));
        check(weft_buffer_fill(other[i], 0, N / 2, &i, 1));
        if (i < 2)
            check(weft_buffer_device_address(other[i], d, 0, N / 2, &a));
    }
    /* The limit is full of exported ranges: a third does not fit. */
    assert_int_equal(weft_buffer_device_address(other[2], d, 0, N / 2, &a),
                     WEFT_EDEVMEM);
    check(weft_buffer_device_address(b, d, N, N, &a));
    assert_true(weft__buffer_is_valid(b, 0, 0, 2 * N));
    check(weft_buffer_read(b, N, out, N));
    assert_memory_equal(in, out, N);
    for (int i = 0; i < 3; i++)
        check(weft_buffer_destroy(other[i]));
    check(weft_buffer_destroy(b));
    prog_switch(ctx);
    prog_free(&m);
    prog_switch(NULL);
    check(weft_runtime_destroy(rt));
}

/*
 * A native node on the device writes the wrapped bytes in place (its
 * address is the program's memory: a fill with the driver's own call)
 * under a limit smaller than the buffer: the node's need leaves the
 * wrapped replica out.
 */
static weft_device_address native_seen;

static int native_fill(const weft_native_ctx *c, void *user)
{
    size_t n = weft_native_size(c, 0);
    unsigned char v = 0x5a;

    (void)user;
    native_seen.address = weft_native_address(c, 0);
    native_seen.mem = weft_native_mem(c, 0, &native_seen.offset);
    native_seen.ptr = weft_native_ptr(c, 0);
    if (!strcmp(driver, "cuda"))
        return weft__cu.MemsetD8Async((CUdeviceptr)native_seen.address, v, n,
                                      weft_native_queue(c)) != CUDA_SUCCESS;
    if (!strcmp(driver, "opencl"))
        return weft__cl.EnqueueFillBuffer(weft_native_queue(c), native_seen.mem,
                                          &v, 1, native_seen.offset, n, 0, NULL,
                                          NULL) != CL_SUCCESS;
    memset(native_seen.ptr, v, n);
    return 0;
}

static void test_wrap_in_native_node(void **state)
{
    static unsigned char in[N], out[N];
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_native_impl impl = {NULL, 0, native_fill};
    weft_access_desc acc = weft_access_range(NULL, 0, N, WEFT_WRITE);
    weft__context *ctx;
    weft_runtime *rt;
    weft_graph *g;
    weft_exec *e;
    weft_buffer *b;
    prog_mem m;

    (void)state;
    o.device_mem_limit = N / 2;
    o.devices = devs.selection;
    check(weft_runtime_create(&rt, &o));
    check(weft__runtime_context(rt, 0, &ctx));
    prog_switch(ctx);
    prog_alloc(&m, OFF + N);
    pattern(in, N, 9);
    prog_write(&m, OFF, in, N);
    check(weft_buffer_wrap_device(rt, weft_runtime_device(rt, 0), m.handle, OFF,
                                  N, &b));
    impl.driver = driver;
    acc.buffer = b;
    check(weft_graph_create(rt, &g));
    check(weft_graph_add_native(g, &impl, 1, &acc, 1, NULL, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    for (int i = 0; i < 2; i++) {
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
    }
    if (!strcmp(driver, "cuda"))
        assert_int_equal(native_seen.address, m.handle + OFF);
    else if (!strcmp(driver, "opencl"))
        assert_true(native_seen.mem == (void *)(uintptr_t)m.handle &&
                    native_seen.offset == OFF);
    else
        assert_ptr_equal(native_seen.ptr, (char *)prog_addr(&m).ptr + OFF);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
    prog_read(&m, OFF, out, N);
    memset(in, 0x5a, N);
    assert_memory_equal(in, out, N);
    prog_free(&m);
    prog_switch(NULL);
    check(weft_runtime_destroy(rt));
}

/* Memory of another cl_context: weft's queues could not use it. */
static void test_wrap_other_context(void **state)
{
    cl_platform_id pf;
    cl_device_id dev;
    cl_context other;
    cl_mem cl;
    cl_int err;
    weft_buffer *b = NULL;

    (void)state;
    if (strcmp(driver, "opencl"))
        skip();
    assert_int_equal(weft__cl.GetPlatformIDs(1, &pf, NULL), CL_SUCCESS);
    assert_int_equal(
        weft__cl.GetDeviceIDs(pf, CL_DEVICE_TYPE_ALL, 1, &dev, NULL),
        CL_SUCCESS);
    other = weft__cl.CreateContext(NULL, 1, &dev, NULL, NULL, &err);
    assert_non_null(other);
    cl = weft__cl.CreateBuffer(other, CL_MEM_READ_WRITE, 4096, NULL, &err);
    assert_non_null(cl);
    assert_int_equal(weft_buffer_wrap_device(
                         devs.rt, dev0, (uint64_t)(uintptr_t)cl, 0, 4096, &b),
                     WEFT_EINVAL);
    assert_non_null(strstr(weft_last_error(), "another cl_context"));
    assert_null(b);
    weft__cl.ReleaseMemObject(cl);
    weft__cl.ReleaseContext(other);
}

/* Outside the program's allocation, where the driver can tell. */
static void test_wrap_out_of_range(void **state)
{
    weft_buffer *b = NULL;
    prog_mem m;

    (void)state;
    if (!strcmp(driver, "host"))
        skip(); /* a host pointer has no size to check */
    prog_alloc(&m, 4096);
    assert_int_equal(
        weft_buffer_wrap_device(devs.rt, dev0, m.handle, 0, 8192, &b),
        WEFT_ERANGE);
    assert_null(b);
    prog_free(&m);
}

/* ---- exporting ---------------------------------------------------------- */

/*
 * weft's own buffer: the address holds the current bytes; the program
 * writes some through it and says so; weft's reads see them, and its host
 * copy's stale bytes are not used.
 */
static void test_export_and_mark_written(void **state)
{
    static unsigned char in[N], out[N], mine[1024];
    weft_device_address a;
    weft_buffer *b, *v;

    (void)state;
    pattern(in, N, 1);
    check(weft_buffer_create(devs.rt, N, &b));
    check(weft_buffer_write(b, 0, in, N));
    check(weft_buffer_view(b, 8192, 8192, &v));
    check(weft_buffer_device_address(v, dev0, 1024, 2048, &a));
    addr_copy(&a, 0, out, 2048, 0);
    assert_memory_equal(in + 8192 + 1024, out, 2048);
    /* Written without telling: weft need not see it. Told: it must. */
    pattern(mine, sizeof mine, 77);
    addr_copy(&a, 512, mine, sizeof mine, 1);
    check(weft_buffer_mark_device_written(v, dev0, 1024 + 512, sizeof mine));
    assert_false(weft__buffer_is_valid(b, WEFT__HOST, 8192 + 1536, 1024));
    check(weft_buffer_read(b, 0, out, N));
    memcpy(in + 8192 + 1536, mine, sizeof mine);
    assert_memory_equal(in, out, N);
    check(weft_buffer_destroy(v));
    check(weft_buffer_destroy(b));
    /* A buffer with no copy on the device: nothing to have written. */
    check(weft_buffer_create(devs.rt, N, &b));
    assert_int_equal(weft_buffer_mark_device_written(b, dev0, 0, 64),
                     WEFT_ESTATE);
    check(weft_buffer_destroy(b));
}

/* An exported range stays until a launch uses its buffer. */
static void test_export_kept_until_launch(void **state)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_device_address a, a2;
    weft_access_desc acc = weft_access_range(NULL, 0, 4096, WEFT_READ);
    const weft_device *d;
    weft_runtime *rt;
    weft_buffer *x, *y;
    weft_graph *g;
    weft_exec *e;
    int one = 1;

    (void)state;
    o.device_mem_limit = 3 * N / 2;
    o.devices = devs.selection;
    check(weft_runtime_create(&rt, &o));
    d = weft_runtime_device(rt, 0);
    check(weft_buffer_create(rt, N, &x));
    check(weft_buffer_create(rt, N, &y));
    check(weft_buffer_fill(x, 0, N, &one, 1));
    check(weft_buffer_fill(y, 0, N, &one, 1));
    check(weft_buffer_device_address(x, d, 0, N, &a));
    /* y does not fit beside x, and x may not go. */
    assert_int_equal(weft_buffer_device_address(y, d, 0, N, &a2), WEFT_EDEVMEM);
    /* A launch that uses x ends the export: now x may go. */
    acc.buffer = x;
    check(weft_graph_create(rt, &g));
    check(weft_graph_add_host(g, addone, &(size_t){0}, &acc, 1, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_buffer_device_address(y, d, 0, N, &a2));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_runtime_destroy(rt));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrap_reads),
        cmocka_unit_test(test_wrap_destroy_writes_back),
        cmocka_unit_test(test_wrap_not_evicted),
        cmocka_unit_test(test_wrap_in_native_node),
        cmocka_unit_test(test_wrap_other_context),
        cmocka_unit_test(test_wrap_out_of_range),
        cmocka_unit_test(test_export_and_mark_written),
        cmocka_unit_test(test_export_kept_until_launch),
        cmocka_unit_test(test_device_native),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
