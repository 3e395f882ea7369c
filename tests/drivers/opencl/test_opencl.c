/*
 * The OpenCL driver: what is specific to it (the generic behaviour is the
 * conformance suite's). Runs on whatever OpenCL devices exist, PoCL in CI;
 * CTest sets POCL_DEVICES="pthread pthread" so that the cross-device cases
 * have two devices. Without any OpenCL device it exits 77.
 *
 * Nothing sleeps: where work must be held back, a host function on the
 * queue blocks on a gate that the test opens.
 */
#include "wt_test.h"

#include "drivers/driver.h"
#include "drivers/opencl/opencl.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OK(call) assert_int_equal((call), 0)

typedef struct fixture {
    weft__platform **platforms;
    unsigned nplatforms;
    unsigned ndev;
    weft__device *dev[2];
    weft__context *ctx[2];
    weft__queue *q[2];
    weft__module *mod[2];
} fixture;

static fixture the_fixture;

static const char kernels_src[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "__kernel void iota(__global int *x, int base, uint n)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    if (i < n)\n"
    "        x[i] = base + (int)i;\n"
    "}\n"
    "__kernel void typed(__global float *a, int b, uint c, long d, ulong e,\n"
    "                    float f, double g, __local float *h,\n"
    "                    __constant int *k)\n"
    "{\n"
    "    h[get_local_id(0)] = f;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    if (get_global_id(0) == 0)\n"
    "        a[0] = (float)(b + c + d + e + g + k[0]) + h[0];\n"
    "}\n"
    "__kernel void odd(__global char *a, char c, float4 v)\n"
    "{\n"
    "    a[0] = c + (char)v.x;\n"
    "}\n"
    "__kernel void plus(__global int *dst, __global const int *src, int add,\n"
    "                   uint n)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    if (i < n)\n"
    "        dst[i] = src[i] + add;\n"
    "}\n"
    "__kernel void group_sum(__global int *out, __global const int *in,\n"
    "                        __local int *tmp)\n"
    "{\n"
    "    uint l = get_local_id(0), n = get_local_size(0);\n"
    "    tmp[l] = in[get_global_id(0)];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    if (l == 0) {\n"
    "        int s = 0;\n"
    "        for (uint i = 0; i < n; i++)\n"
    "            s += tmp[i];\n"
    "        out[get_group_id(0)] = s;\n"
    "    }\n"
    "}\n";

static weft__module_source cl_source(const char *text, const char *name)
{
    weft__module_source s = {WEFT__SRC_OPENCL_C, text, 0, NULL, name};
    return s;
}

static weft__grid grid1(uint32_t groups, uint32_t group_size)
{
    weft__grid g = {{groups, 1, 1}, {group_size, 1, 1}, 0};
    return g;
}

static weft__karg arg_buf(weft__mem *m, size_t off)
{
    weft__karg a;

    memset(&a, 0, sizeof a);
    a.type = WEFT_PARAM_BUFFER;
    a.u.buf.mem = m;
    a.u.buf.offset = off;
    return a;
}

static weft__karg arg_val(weft_param_type t, const void *v, size_t size)
{
    weft__karg a;

    memset(&a, 0, sizeof a);
    a.type = t;
    a.size = size;
    a.u.value = v;
    return a;
}

static weft__karg arg_local(size_t size)
{
    weft__karg a;

    memset(&a, 0, sizeof a);
    a.type = WEFT_PARAM_LOCAL;
    a.size = size;
    return a;
}

/* WT_TRACE=1 prints the steps, to find where a scenario stops. */
static void trace(const char *step, int rc)
{
    static int on = -1;

    if (on < 0)
        on = getenv("WT_TRACE") != NULL;
    if (on) {
        fprintf(stderr, "  %s: %d (fired %d)\n", step, rc, weft__fault_fired());
        fflush(stderr);
    }
}

static int setup(void **state)
{
    fixture *f = &the_fixture;

    for (unsigned i = 0; i < f->ndev; i++) {
        weft__module_source s = cl_source(kernels_src, "kernels.cl");
        weft__queue_desc qd = {WEFT__QUEUE_COMPUTE, 0, 1};

        if (weft__drv_context_create(f->dev[i], &f->ctx[i]) ||
            weft__drv_queue_create(f->ctx[i], &qd, &f->q[i]) ||
            weft__drv_module_create(f->ctx[i], &s, &f->mod[i])) {
            fprintf(stderr, "setup: %s\n", weft_last_error());
            return -1;
        }
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    int bad = 0;

    weft__fault_disarm();
    for (unsigned i = 0; i < f->ndev; i++) {
        if (f->mod[i])
            bad |= weft__drv_module_destroy(f->mod[i]);
        trace("teardown: module", i);
        if (f->q[i])
            bad |= weft__drv_queue_destroy(f->q[i]);
        trace("teardown: queue", i);
        /* EBUSY here means a test left an object behind */
        if (f->ctx[i])
            bad |= weft__drv_context_destroy(f->ctx[i]);
        trace("teardown: context", i);
        f->mod[i] = NULL;
        f->q[i] = NULL;
        f->ctx[i] = NULL;
    }
    return bad ? -1 : 0;
}

static void need_two(const fixture *f)
{
    if (f->ndev < 2) {
        print_message("needs two OpenCL devices\n");
        skip();
    }
}

/* ---- a gate that holds a queue back until the test opens it ---------- */

typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;
    int passed;
} gate;

static void gate_init(gate *g)
{
    OK(pthread_mutex_init(&g->lock, NULL));
    OK(pthread_cond_init(&g->cond, NULL));
    g->open = 0;
    g->passed = 0;
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->open = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

static void gate_fn(void *user)
{
    gate *g = user;

    pthread_mutex_lock(&g->lock);
    while (!g->open)
        pthread_cond_wait(&g->cond, &g->lock);
    g->passed = 1;
    pthread_mutex_unlock(&g->lock);
}

static void gate_destroy(gate *g)
{
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
}

/* ---- tests ------------------------------------------------------------- */

static void device_properties(void **state)
{
    fixture *f = *state;

    for (unsigned i = 0; i < f->ndev; i++) {
        const weft_device_info *p = &f->dev[i]->props;

        assert_int_equal(p->size, sizeof *p);
        assert_string_equal(p->driver, "opencl");
        assert_int_equal(p->driver_index, i);
        assert_true(p->name[0] && p->vendor[0] && p->platform[0] &&
                    p->driver_version[0]);
        assert_true(p->type >= WEFT_DEVICE_GPU &&
                    p->type <= WEFT_DEVICE_ACCELERATOR);
        assert_true(p->global_mem >= p->max_alloc && p->max_alloc > 0);
        assert_true(p->local_mem > 0 && p->compute_units > 0 &&
                    p->max_group_size > 0);
        assert_int_equal(p->copy_engines, 1);
        assert_int_equal(p->pinned_host, 1);
        assert_int_equal(p->host_register, 1);
        assert_non_null(p->pci_bus_id);
        if (p->pci_bus_id[0]) /* "dddd:bb:dd.f", lower case */
            assert_int_equal(strlen(p->pci_bus_id), 12);
        assert_ptr_equal(f->dev[i]->platform->devices[0]->platform,
                         f->dev[i]->platform);
        print_message("device %u: %s (%s, %s) pci \"%s\" cc %d.%d "
                      "unified %u svm %u timing %u\n",
                      i, p->name, p->platform, p->driver_version, p->pci_bus_id,
                      p->cc_major, p->cc_minor, p->unified_memory, p->svm,
                      p->timing_events);
    }
}

static void kernel_runs(void **state)
{
    fixture *f = *state;
    enum { N = 1000 };
    int out[N], base = 7;
    unsigned n = N;
    weft__kernel *k;
    weft__mem *m;

    OK(weft__drv_kernel_get(f->mod[0], "iota", &k));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof out, &m));
    {
        weft__karg args[] = {arg_buf(m, 0), arg_val(WEFT_PARAM_I32, &base, 4),
                             arg_val(WEFT_PARAM_U32, &n, 4)};
        weft__grid g = grid1(N / 8, 8);

        OK(weft__drv_launch(f->q[0], k, &g, args, 3));
    }
    OK(weft__drv_copy_d2h(f->q[0], out, m, 0, sizeof out));
    OK(weft__drv_queue_sync(f->q[0]));
    for (int i = 0; i < N; i++)
        assert_int_equal(out[i], 7 + i);
    OK(weft__drv_mem_free(m));
}

/*
 * A kernel whose parameter types weft cannot map (a float2) still has a
 * known number of them: a launch with another number is refused before
 * the driver sees it (OpenCL keeps arguments set on a kernel, so a short
 * launch after a full one would run with the old value).
 */
static void argument_count_checked(void **state)
{
    fixture *f = *state;
    weft__module_source s =
        cl_source("__kernel void two(__global float *a, float2 v) "
                  "{ a[0] = v.x + v.y; }\n",
                  "two.cl");
    weft__module *mod = NULL;
    weft__kernel *k;
    weft__mem *m;
    float v[2] = {1, 2};

    OK(weft__drv_module_create(f->ctx[0], &s, &mod));
    OK(weft__drv_kernel_get(mod, "two", &k));
    assert_int_equal(k->nparams, 2);
    OK(weft__drv_mem_alloc(f->ctx[0], 64, &m));
    {
        weft__karg full[] = {arg_buf(m, 0), arg_val(WEFT_PARAM_BYTES, v, 8)};
        weft__grid g = grid1(1, 1);

        OK(weft__drv_launch(f->q[0], k, &g, full, 2));
        assert_int_equal(weft__drv_launch(f->q[0], k, &g, full, 1), WEFT_EARGS);
        assert_non_null(strstr(weft_last_error(), "1 arguments given"));
    }
    OK(weft__drv_queue_sync(f->q[0]));
    OK(weft__drv_mem_free(m));
    OK(weft__drv_module_destroy(mod));
}

static void build_failure_has_log(void **state)
{
    fixture *f = *state;
    weft__module_source s = cl_source(
        "__kernel void broken(__global int *x) { x[0] = no_such_name; }\n",
        "broken.cl");
    weft__module *m = NULL;
    const weft_error_detail *d;

    assert_int_equal(weft__drv_module_create(f->ctx[0], &s, &m), WEFT_EBUILD);
    assert_null(m);
    d = weft_last_error_detail();
    assert_int_equal(d->code, WEFT_EBUILD);
    assert_string_equal(d->driver, "opencl");
    assert_string_equal(d->driver_name, "CL_BUILD_PROGRAM_FAILURE");
    /* the compiler's own words, naming the culprit */
    assert_non_null(strstr(weft_last_error(), "no_such_name"));
    assert_non_null(strstr(weft_last_error(), "broken.cl"));
}

static void missing_kernel_is_not_found(void **state)
{
    fixture *f = *state;
    weft__kernel *k = NULL;

    assert_int_equal(weft__drv_kernel_get(f->mod[0], "nope", &k),
                     WEFT_ENOTFOUND);
    assert_non_null(strstr(weft_last_error(), "nope"));
}

static void other_source_kinds(void **state)
{
    fixture *f = *state;
    static const uint32_t not_spirv[] = {0x07230203, 0x00010000, 0, 1, 0};
    weft__module_source s = {WEFT__SRC_SPIRV, not_spirv, sizeof not_spirv, NULL,
                             "x.spv"};
    weft__module_source ptx = {WEFT__SRC_PTX, ".version 7.0", 0, NULL, NULL};
    weft__module *m = NULL;
    int rc;

    assert_int_equal(weft__drv_module_create(f->ctx[0], &ptx, &m),
                     WEFT_ENOTSUP);
    /* a device without IL support says so; one with it rejects the junk */
    rc = weft__drv_module_create(f->ctx[0], &s, &m);
    assert_true(rc == WEFT_ENOTSUP || rc == WEFT_EBUILD || rc == WEFT_EINVAL);
    assert_null(m);
}

static void binary_save_and_reload(void **state)
{
    fixture *f = *state;
    weft__module_source s;
    weft__module *m = NULL;
    weft__kernel *k;
    weft__mem *buf;
    void *bytes;
    size_t size;
    int out[64], base = -5;
    unsigned n = 64;

    OK(weft__opencl_module_binary(f->mod[0], &bytes, &size));
    assert_true(size > 0);
    s.kind = WEFT__SRC_CL_BINARY;
    s.data = bytes;
    s.size = size;
    s.options = NULL;
    s.name = "saved";
    OK(weft__drv_module_create(f->ctx[0], &s, &m));
    OK(weft__drv_kernel_get(m, "iota", &k));
    assert_int_equal(k->nparams, 3);
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof out, &buf));
    {
        weft__karg args[] = {arg_buf(buf, 0), arg_val(WEFT_PARAM_I32, &base, 4),
                             arg_val(WEFT_PARAM_U32, &n, 4)};
        weft__grid g = grid1(8, 8);

        OK(weft__drv_launch(f->q[0], k, &g, args, 3));
    }
    OK(weft__drv_copy_d2h(f->q[0], out, buf, 0, sizeof out));
    OK(weft__drv_queue_sync(f->q[0]));
    for (int i = 0; i < 64; i++)
        assert_int_equal(out[i], i - 5);
    OK(weft__drv_mem_free(buf));
    OK(weft__drv_module_destroy(m));

    /* a damaged binary is refused, cleanly */
    memset(bytes, 0x5a, size < 64 ? size : 64);
    m = NULL;
    assert_true(weft__drv_module_create(f->ctx[0], &s, &m) < 0);
    assert_null(m);
    weft__free(bytes);
}

static void argument_info(void **state)
{
    fixture *f = *state;
    static const weft_param_type want[] = {
        WEFT_PARAM_BUFFER, WEFT_PARAM_I32,   WEFT_PARAM_U32,
        WEFT_PARAM_I64,    WEFT_PARAM_U64,   WEFT_PARAM_F32,
        WEFT_PARAM_F64,    WEFT_PARAM_LOCAL, WEFT_PARAM_BUFFER};
    weft__kernel *k, *again, *odd;

    OK(weft__drv_kernel_get(f->mod[0], "typed", &k));
    OK(weft__drv_kernel_get(f->mod[0], "typed", &again));
    assert_ptr_equal(k, again);
    assert_int_equal(k->params_known, 1);
    assert_int_equal(k->nparams, 9);
    assert_non_null(k->params);
    for (unsigned i = 0; i < 9; i++) {
        assert_int_equal(k->params[i], want[i]);
        if (want[i] != WEFT_PARAM_BUFFER && want[i] != WEFT_PARAM_LOCAL)
            assert_int_equal(k->param_sizes[i], weft_param_type_size(want[i]));
    }
    /* char and float4 have no weft type: only the count is known */
    OK(weft__drv_kernel_get(f->mod[0], "odd", &odd));
    assert_int_equal(odd->params_known, 0);
    assert_int_equal(odd->nparams, 3);
}

/* Launch typed with every kind of argument and check the arithmetic. */
static void typed_arguments_arrive(void **state)
{
    fixture *f = *state;
    weft__kernel *k;
    weft__mem *a, *c;
    int b = -3, kval = 1000;
    unsigned cu = 10;
    long long d = 1LL << 33;
    unsigned long long e = 5;
    float fl = 0.5f, out;
    double g = 0.25;
    weft__grid grid = grid1(1, 4);

    OK(weft__drv_kernel_get(f->mod[0], "typed", &k));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof out, &a));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof kval, &c));
    OK(weft__drv_copy_h2d(f->q[0], c, 0, &kval, sizeof kval));
    {
        weft__karg args[] = {arg_buf(a, 0),
                             arg_val(WEFT_PARAM_I32, &b, 4),
                             arg_val(WEFT_PARAM_U32, &cu, 4),
                             arg_val(WEFT_PARAM_I64, &d, 8),
                             arg_val(WEFT_PARAM_U64, &e, 8),
                             arg_val(WEFT_PARAM_F32, &fl, 4),
                             arg_val(WEFT_PARAM_F64, &g, 8),
                             arg_local(4 * sizeof(float)),
                             arg_buf(c, 0)};

        OK(weft__drv_launch(f->q[0], k, &grid, args, 9));
        /* checked against the parameters: an i32 where a buffer goes */
        args[0] = arg_val(WEFT_PARAM_I32, &b, 4);
        assert_int_equal(weft__drv_launch(f->q[0], k, &grid, args, 9),
                         WEFT_EARGS);
    }
    OK(weft__drv_copy_d2h(f->q[0], &out, a, 0, sizeof out));
    OK(weft__drv_queue_sync(f->q[0]));
    assert_true(out == (float)(-3 + 10 + (1LL << 33) + 5 + 0.25 + 1000) + 0.5f);
    OK(weft__drv_mem_free(a));
    OK(weft__drv_mem_free(c));
}

static void local_scratch(void **state)
{
    fixture *f = *state;
    enum { GROUPS = 16, GS = 32 };
    int in[GROUPS * GS], out[GROUPS];
    weft__kernel *k;
    weft__mem *mi, *mo;
    weft__grid g = grid1(GROUPS, GS);

    for (int i = 0; i < GROUPS * GS; i++)
        in[i] = i;
    OK(weft__drv_kernel_get(f->mod[0], "group_sum", &k));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof in, &mi));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof out, &mo));
    OK(weft__drv_copy_h2d(f->q[0], mi, 0, in, sizeof in));
    {
        weft__karg args[] = {arg_buf(mo, 0), arg_buf(mi, 0),
                             arg_local(GS * sizeof(int))};

        OK(weft__drv_launch(f->q[0], k, &g, args, 3));
    }
    OK(weft__drv_copy_d2h(f->q[0], out, mo, 0, sizeof out));
    OK(weft__drv_queue_sync(f->q[0]));
    for (int j = 0; j < GROUPS; j++)
        assert_int_equal(out[j], GS * GS * j + GS * (GS - 1) / 2);
    OK(weft__drv_mem_free(mi));
    OK(weft__drv_mem_free(mo));
}

/*
 * Buffer arguments at an offset: each launch writes its own window of one
 * buffer; more distinct offsets than the driver caches, so that both the
 * cached and the one-off sub-buffers are used. Windows of 4 KiB satisfy
 * the base address alignment of every device (PoCL 128 bytes, NVIDIA 512).
 */
static void sub_buffer_offsets(void **state)
{
    fixture *f = *state;
    const unsigned align = 4096, windows = 300, per = align / sizeof(int);
    const size_t size = (size_t)windows * align;
    weft__kernel *k;
    weft__mem *m;
    int *out = malloc(size);
    weft__grid g = grid1(per / 64, 64);

    assert_non_null(out);
    OK(weft__drv_kernel_get(f->mod[0], "iota", &k));
    OK(weft__drv_mem_alloc(f->ctx[0], size, &m));
    for (int rep = 0; rep < 2; rep++)
        for (unsigned w = 0; w < windows; w++) {
            int base = (int)(w * per) + rep * 1000000;
            weft__karg args[] = {arg_buf(m, (size_t)w * align),
                                 arg_val(WEFT_PARAM_I32, &base, 4),
                                 arg_val(WEFT_PARAM_U32, &per, 4)};

            OK(weft__drv_launch(f->q[0], k, &g, args, 3));
        }
    OK(weft__drv_copy_d2h(f->q[0], out, m, 0, size));
    OK(weft__drv_queue_sync(f->q[0]));
    for (size_t i = 0; i < size / sizeof(int); i++)
        assert_int_equal(out[i], (int)i + 1000000);

    /*
     * An offset below the device's base address alignment is refused
     * where arguments at offsets are sub-buffers; with SVM (NVIDIA's) any
     * offset is an argument.
     */
    {
        int base = 0;
        weft__karg args[] = {arg_buf(m, 4), arg_val(WEFT_PARAM_I32, &base, 4),
                             arg_val(WEFT_PARAM_U32, &per, 4)};

        if (f->q[0]->ctx->dev->props.arg_offset_align > 1) {
            assert_int_equal(weft__drv_launch(f->q[0], k, &g, args, 3),
                             WEFT_EINVAL);
            assert_non_null(strstr(weft_last_error(), "alignment"));
        } else {
            OK(weft__drv_launch(f->q[0], k, &g, args, 3));
            OK(weft__drv_queue_sync(f->q[0]));
        }
    }
    OK(weft__drv_mem_free(m));
    free(out);
}

/*
 * Queue 1 (device 1) waits on an event of queue 0 (device 0): a user event
 * bridges the contexts. Queue 0 is held by a gate, so queue 1's work cannot
 * have run before the gate opens.
 */
static void cross_context_wait(void **state)
{
    fixture *f = *state;
    enum { N = 4096 };
    static int src[N], out[N];
    weft__mem *m1;
    weft__event *ev0, *ev1;
    gate g;

    need_two(f);
    gate_init(&g);
    for (int i = 0; i < N; i++)
        src[i] = i * 3;
    memset(out, 0, sizeof out);
    OK(weft__drv_mem_alloc(f->ctx[1], sizeof src, &m1));
    OK(weft__drv_event_create(f->ctx[0], 0, &ev0));
    OK(weft__drv_event_create(f->ctx[1], 0, &ev1));
    /* an event never recorded is no wait at all */
    OK(weft__drv_queue_wait_event(f->q[1], ev0));

    OK(weft__drv_host_fn(f->q[0], gate_fn, &g));
    OK(weft__drv_event_record(ev0, f->q[0]));
    OK(weft__drv_queue_wait_event(f->q[1], ev0));
    OK(weft__drv_copy_h2d(f->q[1], m1, 0, src, sizeof src));
    OK(weft__drv_copy_d2h(f->q[1], out, m1, 0, sizeof out));
    OK(weft__drv_event_record(ev1, f->q[1]));

    assert_int_equal(weft__drv_event_query(ev0), WEFT_ENOTREADY);
    assert_int_equal(weft__drv_event_query(ev1), WEFT_ENOTREADY);
    assert_int_equal(out[N - 1], 0);
    gate_open(&g);
    OK(weft__drv_event_sync(ev1));
    assert_int_equal(g.passed, 1);
    OK(weft__drv_event_query(ev0));
    for (int i = 0; i < N; i++)
        assert_int_equal(out[i], i * 3);
    /* a completed event costs nothing to wait on */
    OK(weft__drv_queue_wait_event(f->q[1], ev0));
    OK(weft__drv_queue_sync(f->q[1]));

    OK(weft__drv_event_destroy(ev0));
    OK(weft__drv_event_destroy(ev1));
    OK(weft__drv_mem_free(m1));
    gate_destroy(&g);
}

/*
 * Peer copies through the bounce buffer, issued on either device's queue,
 * of sizes below and above the smallest bounce buffer, at odd offsets. The
 * issuing queue is held by a gate: until it opens, a probe queue of device
 * 1 still sees the old bytes; once the issuing queue is synchronised, the
 * copy is complete, also when its last step ran on another queue.
 */
static void peer_copy(void **state)
{
    fixture *f = *state;
    const size_t sizes[] = {1, 4099, (size_t)300 << 10};
    const size_t cap = ((size_t)300 << 10) + 64;
    unsigned char *host = malloc(cap), *back = malloc(cap);
    weft__queue *probe;
    weft__mem *m[2];
    unsigned char zero = 0, seen[64];

    need_two(f);
    assert_true(host && back);
    for (size_t i = 0; i < cap; i++)
        host[i] = (unsigned char)(i * 7 + 1);
    OK(weft__drv_queue_create(f->ctx[1], NULL, &probe));
    OK(weft__drv_mem_alloc(f->ctx[0], cap, &m[0]));
    OK(weft__drv_mem_alloc(f->ctx[1], cap, &m[1]));
    OK(weft__drv_copy_h2d(f->q[0], m[0], 0, host, cap));
    OK(weft__drv_queue_sync(f->q[0]));

    for (size_t s = 0; s < WEFT__COUNTOF(sizes); s++)
        for (int on = 0; on < 2; on++) {
            size_t size = sizes[s], look = size < 64 ? size : 64;
            gate g;

            gate_init(&g);
            OK(weft__drv_fill(f->q[1], m[1], 0, &zero, 1, cap));
            OK(weft__drv_queue_sync(f->q[1]));
            /* device 0 -> device 1, issued on the queue of device `on` */
            OK(weft__drv_host_fn(f->q[on], gate_fn, &g));
            OK(weft__drv_copy_peer(f->q[on], m[1], 33, m[0], 5, size));
            memset(seen, 0xff, sizeof seen);
            OK(weft__drv_copy_d2h(probe, seen, m[1], 33, look));
            OK(weft__drv_queue_sync(probe));
            for (size_t i = 0; i < look; i++)
                assert_int_equal(seen[i], 0);
            assert_int_equal(g.passed, 0);
            gate_open(&g);
            OK(weft__drv_queue_sync(f->q[on]));
            assert_int_equal(g.passed, 1);
            OK(weft__drv_copy_d2h(probe, back, m[1], 33, size));
            OK(weft__drv_queue_sync(probe));
            assert_memory_equal(back, host + 5, size);
            gate_destroy(&g);
        }

    /* and back, device 1 -> device 0, on either queue */
    for (int on = 0; on < 2; on++) {
        OK(weft__drv_copy_peer(f->q[on], m[0], 100, m[1], 33, 4099));
        OK(weft__drv_queue_sync(f->q[on]));
        OK(weft__drv_copy_d2h(f->q[0], back, m[0], 100, 4099));
        OK(weft__drv_queue_sync(f->q[0]));
        assert_memory_equal(back, host + 5, 4099);
    }

    OK(weft__drv_mem_free(m[0]));
    OK(weft__drv_mem_free(m[1]));
    OK(weft__drv_queue_destroy(probe));
    free(host);
    free(back);
}

static void set_flag(void *user)
{
    __atomic_store_n((int *)user, 1, __ATOMIC_RELEASE);
}

/* The failure carried past a gate or bridge, as event and queue syncs say. */
static void carried(int rc)
{
    assert_int_equal(rc, WEFT_EDEVMEM);
    if (!strstr(weft_last_error(), "passed on by a gate or a bridge"))
        fail_msg("unexpected detail: %s", weft_last_error());
}

/*
 * Failures made up at a gate's or a bridge's completion ('!' fault sites):
 * the host function after a failed gate does not run; the events recorded
 * after the failure, and the queue's next sync, report it (the sync once);
 * the work issued after the report is clean. A peer copy, issued on either
 * device's queue, carries a failure of any of its bridges to the issuing
 * queue. The user events complete (CL_COMPLETE) all the same: nothing
 * hangs.
 */
static void failures_carried(void **state)
{
    fixture *f = *state;
    enum { N = 4096 };
    static unsigned char host[N], back[N];
    weft__mem *m[2];
    weft__event *ev;
    int ran = 0;

    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 5 + 3);
    OK(weft__drv_event_create(f->ctx[0], 0, &ev));

    /* a gate */
    weft__fault_arm(1, "!opencl.failed.gate");
    OK(weft__drv_host_fn(f->q[0], set_flag, &ran));
    OK(weft__drv_event_record(ev, f->q[0]));
    carried(weft__drv_event_sync(ev));
    assert_true(weft__fault_fired());
    weft__fault_disarm();
    assert_int_equal(__atomic_load_n(&ran, __ATOMIC_ACQUIRE), 0);
    carried(weft__drv_event_query(ev));
    carried(weft__drv_queue_sync(f->q[0]));
    OK(weft__drv_queue_sync(f->q[0])); /* reported once */
    OK(weft__drv_host_fn(f->q[0], set_flag, &ran));
    OK(weft__drv_event_record(ev, f->q[0]));
    OK(weft__drv_event_sync(ev));
    assert_int_equal(__atomic_load_n(&ran, __ATOMIC_ACQUIRE), 1);
    OK(weft__drv_queue_sync(f->q[0]));

    if (f->ndev < 2) {
        OK(weft__drv_event_destroy(ev));
        return;
    }
    /* the bridges of a peer copy, issued on either device's queue */
    OK(weft__drv_mem_alloc(f->ctx[0], N, &m[0]));
    OK(weft__drv_mem_alloc(f->ctx[1], N, &m[1]));
    OK(weft__drv_copy_h2d(f->q[0], m[0], 0, host, N));
    OK(weft__drv_queue_sync(f->q[0]));
    for (int on = 0; on < 2; on++) {
        weft__event *e;

        OK(weft__drv_event_create(f->ctx[on], 0, &e));
        weft__fault_arm(1, "!opencl.failed.bridge");
        OK(weft__drv_copy_peer(f->q[on], m[1], 0, m[0], 0, N));
        OK(weft__drv_event_record(e, f->q[on]));
        carried(weft__drv_event_sync(e));
        assert_true(weft__fault_fired());
        weft__fault_disarm();
        carried(weft__drv_queue_sync(f->q[on]));
        memset(back, 0, sizeof back);
        OK(weft__drv_copy_peer(f->q[on], m[1], 0, m[0], 0, N));
        OK(weft__drv_event_record(e, f->q[on]));
        OK(weft__drv_event_sync(e));
        OK(weft__drv_copy_d2h(f->q[1], back, m[1], 0, N));
        OK(weft__drv_queue_sync(f->q[1]));
        assert_memory_equal(back, host, N);
        OK(weft__drv_event_destroy(e));
    }
    OK(weft__drv_mem_free(m[0]));
    OK(weft__drv_mem_free(m[1]));
    OK(weft__drv_event_destroy(ev));
}

static void pinned_and_registered(void **state)
{
    fixture *f = *state;
    enum { N = 1 << 16 };
    weft__mem *pin, *reg, *dev;
    unsigned char *user = malloc(N);

    assert_non_null(user);
    OK(weft__drv_host_alloc(f->ctx[0], N, &pin));
    assert_non_null(pin->host);
    OK(weft__drv_host_register(f->ctx[0], user, N, &reg));
    assert_ptr_equal(reg->host, user);
    OK(weft__drv_mem_alloc(f->ctx[0], N, &dev));
    for (int i = 0; i < N; i++)
        ((unsigned char *)pin->host)[i] = (unsigned char)(i ^ 0x5a);
    OK(weft__drv_copy_h2d(f->q[0], dev, 0, pin->host, N));
    OK(weft__drv_copy_d2h(f->q[0], user, dev, 0, N));
    OK(weft__drv_queue_sync(f->q[0]));
    assert_memory_equal(user, pin->host, N);
    OK(weft__drv_mem_free(dev));
    OK(weft__drv_mem_free(reg));
    OK(weft__drv_mem_free(pin));
    free(user);
}

static void timing_events(void **state)
{
    fixture *f = *state;
    weft__event *a, *b;
    weft__mem *m;
    uint64_t ns = 1;
    unsigned char v = 1;

    if (!f->dev[0]->props.timing_events)
        skip();
    OK(weft__drv_event_create(f->ctx[0], WEFT__EVENT_TIMING, &a));
    OK(weft__drv_event_create(f->ctx[0], WEFT__EVENT_TIMING, &b));
    assert_int_equal(weft__drv_event_elapsed(a, b, &ns), WEFT_EINVAL);
    OK(weft__drv_mem_alloc(f->ctx[0], 1 << 20, &m));
    OK(weft__drv_event_record(a, f->q[0]));
    OK(weft__drv_fill(f->q[0], m, 0, &v, 1, 1 << 20));
    OK(weft__drv_event_record(b, f->q[0]));
    OK(weft__drv_event_sync(b));
    OK(weft__drv_event_elapsed(a, b, &ns));
    assert_true(ns < 10ull * 1000 * 1000 * 1000);
    /* recording again re-targets the event */
    OK(weft__drv_event_record(a, f->q[0]));
    OK(weft__drv_event_sync(a));
    OK(weft__drv_event_elapsed(b, a, &ns));
    OK(weft__drv_event_destroy(a));
    OK(weft__drv_event_destroy(b));
    OK(weft__drv_mem_free(m));
}

/* ---- native graphs (cl_khr_command_buffer) ---------------------------- */

static const weft__driver *const drv = &weft__driver_opencl;

/* Whether device 0 can make native graphs; says so where it cannot. */
static int have_cmdbuf(const fixture *f)
{
    if (drv->graph_supported(f->dev[0]))
        return 1;
    print_message("skipped: %s has no usable cl_khr_command_buffer\n",
                  f->dev[0]->name);
    return 0;
}

enum { CB_N = 256 };

typedef struct cb_scene {
    weft__queue *qa, *qb;
    weft__kernel *iota, *plus;
    weft__mem *a, *b, *c, *d;
    weft__event *fork, *join;
} cb_scene;

static int cb_scene_open(fixture *f, cb_scene *s)
{
    unsigned char ff = 0xff;
    int rc;

    memset(s, 0, sizeof *s);
    s->qa = f->q[0];
    if ((rc = weft__drv_queue_create(f->ctx[0], NULL, &s->qb)) < 0 ||
        (rc = weft__drv_kernel_get(f->mod[0], "iota", &s->iota)) < 0 ||
        (rc = weft__drv_kernel_get(f->mod[0], "plus", &s->plus)) < 0 ||
        (rc = weft__drv_mem_alloc(f->ctx[0], CB_N * sizeof(int), &s->a)) < 0 ||
        (rc = weft__drv_mem_alloc(f->ctx[0], CB_N * sizeof(int), &s->b)) < 0 ||
        (rc = weft__drv_mem_alloc(f->ctx[0], CB_N * sizeof(int), &s->c)) < 0 ||
        (rc = weft__drv_mem_alloc(f->ctx[0], CB_N * sizeof(int), &s->d)) < 0 ||
        (rc = weft__drv_event_create(f->ctx[0], 0, &s->fork)) < 0 ||
        (rc = weft__drv_event_create(f->ctx[0], 0, &s->join)) < 0)
        return rc;
    /* every byte 0xff: what the graph writes shows */
    if ((rc = weft__drv_fill(s->qa, s->a, 0, &ff, 1, CB_N * sizeof(int))) < 0 ||
        (rc = weft__drv_fill(s->qa, s->b, 0, &ff, 1, CB_N * sizeof(int))) < 0 ||
        (rc = weft__drv_fill(s->qa, s->c, 0, &ff, 1, CB_N * sizeof(int))) < 0 ||
        (rc = weft__drv_fill(s->qa, s->d, 0, &ff, 1, CB_N * sizeof(int))) < 0)
        return rc;
    return weft__drv_queue_sync(s->qa);
}

static void cb_scene_close(cb_scene *s)
{
    weft__mem *m[] = {s->a, s->b, s->c, s->d};

    if (s->qa)
        weft__drv_queue_sync(s->qa);
    if (s->qb)
        weft__drv_queue_sync(s->qb);
    for (size_t i = 0; i < WEFT__COUNTOF(m); i++)
        if (m[i])
            weft__drv_mem_free(m[i]);
    if (s->fork)
        weft__drv_event_destroy(s->fork);
    if (s->join)
        weft__drv_event_destroy(s->join);
    if (s->qb)
        weft__drv_queue_destroy(s->qb);
}

/*
 * The work of the graph, on two queues of one context: queue A writes a
 * (iota from base) and fills d with 5; queue B, after A's event, makes
 * b = a + 100 and copies b to c; A, after B's event, copies the first half
 * of b over the second half of d.
 */
static int cb_record(cb_scene *s, int base)
{
    unsigned n = CB_N;
    int add = 100, five = 5, rc;
    weft__grid g = grid1(CB_N / 16, 16);
    weft__karg ia[] = {arg_buf(s->a, 0), arg_val(WEFT_PARAM_I32, &base, 4),
                       arg_val(WEFT_PARAM_U32, &n, 4)};
    weft__karg pa[] = {arg_buf(s->b, 0), arg_buf(s->a, 0),
                       arg_val(WEFT_PARAM_I32, &add, 4),
                       arg_val(WEFT_PARAM_U32, &n, 4)};

    if ((rc = weft__drv_launch(s->qa, s->iota, &g, ia, 3)) < 0 ||
        (rc = weft__drv_fill(s->qa, s->d, 0, &five, 4, CB_N * sizeof(int))) <
            0 ||
        (rc = weft__drv_event_record(s->fork, s->qa)) < 0 ||
        (rc = weft__drv_queue_wait_event(s->qb, s->fork)) < 0 ||
        (rc = weft__drv_launch(s->qb, s->plus, &g, pa, 4)) < 0 ||
        (rc = weft__drv_copy_d2d(s->qb, s->c, 0, s->b, 0, CB_N * sizeof(int))) <
            0 ||
        (rc = weft__drv_event_record(s->join, s->qb)) < 0 ||
        (rc = weft__drv_queue_wait_event(s->qa, s->join)) < 0)
        return rc;
    return weft__drv_copy_d2d(s->qa, s->d, CB_N / 2 * sizeof(int), s->b, 0,
                              CB_N / 2 * sizeof(int));
}

/* Read back through the usual path; 1 if the bytes are the graph's. */
static int cb_check(cb_scene *s, int base)
{
    static int a[CB_N], b[CB_N], c[CB_N], d[CB_N];

    if (weft__drv_copy_d2h(s->qa, a, s->a, 0, sizeof a) < 0 ||
        weft__drv_copy_d2h(s->qa, b, s->b, 0, sizeof b) < 0 ||
        weft__drv_copy_d2h(s->qa, c, s->c, 0, sizeof c) < 0 ||
        weft__drv_copy_d2h(s->qa, d, s->d, 0, sizeof d) < 0 ||
        weft__drv_queue_sync(s->qa) < 0)
        return 0;
    for (int i = 0; i < CB_N; i++)
        if (a[i] != base + i || b[i] != base + i + 100 || c[i] != b[i] ||
            d[i] != (i < CB_N / 2 ? 5 : b[i - CB_N / 2]))
            return 0;
    return 1;
}

/*
 * Capture on two queues joined by events, end, launch twice (the bytes are
 * spoiled in between through the usual path), then the old path of
 * graph_end: a second capture replaces the first graph.
 */
static void command_buffer_graph(void **state)
{
    fixture *f = *state;
    unsigned char ff = 0xff;
    void *graph = NULL, *again = NULL;
    int updated = -1, seen;
    cb_scene s;

    if (!have_cmdbuf(f))
        skip();
    OK(cb_scene_open(f, &s));
    OK(drv->graph_begin(s.qa));
    OK(cb_record(&s, 7));
    OK(drv->graph_end(s.qa, NULL, &graph, &updated));
    assert_non_null(graph);
    assert_int_equal(updated, 0);
    /* recorded, not run: a still holds the bytes from before */
    OK(weft__drv_copy_d2h(s.qa, &seen, s.a, 0, sizeof seen));
    OK(weft__drv_queue_sync(s.qa));
    assert_int_equal(seen, -1);

    for (int l = 0; l < 2; l++) {
        OK(drv->graph_launch(graph, s.qa));
        OK(weft__drv_queue_sync(s.qa));
        assert_true(cb_check(&s, 7));
        OK(weft__drv_fill(s.qb, s.b, 0, &ff, 1, CB_N * sizeof(int)));
        OK(weft__drv_fill(s.qb, s.d, 0, &ff, 1, CB_N * sizeof(int)));
        OK(weft__drv_queue_sync(s.qb));
    }

    /* the same work with another base: a new graph in place of the old */
    OK(drv->graph_begin(s.qa));
    OK(cb_record(&s, -40));
    OK(drv->graph_end(s.qa, graph, &again, &updated));
    assert_non_null(again);
    assert_int_equal(updated, 0);
    OK(drv->graph_launch(again, s.qa));
    OK(weft__drv_queue_sync(s.qa));
    assert_true(cb_check(&s, -40));
    drv->graph_destroy(again);
    cb_scene_close(&s);
}

/*
 * What a command buffer cannot hold fails the capture with WEFT_ENOTSUP;
 * the capture ends cleanly and the queues work as before.
 */
static void command_buffer_refuses(void **state)
{
    fixture *f = *state;
    int one = 1, back = 0;
    void *graph = NULL;
    cb_scene s;

    if (!have_cmdbuf(f))
        skip();
    OK(cb_scene_open(f, &s));
    /* a copy from host memory, then end without a graph */
    OK(drv->graph_begin(s.qa));
    OK(cb_record(&s, 3));
    assert_int_equal(weft__drv_copy_h2d(s.qb, s.a, 0, &one, sizeof one),
                     WEFT_ENOTSUP);
    assert_non_null(strstr(weft_last_error(), "command buffer"));
    OK(drv->graph_end(s.qa, NULL, NULL, NULL));
    /* a host function, then end asking for a graph: none */
    OK(drv->graph_begin(s.qa));
    assert_int_equal(weft__drv_host_fn(s.qa, gate_fn, NULL), WEFT_ENOTSUP);
    assert_int_equal(drv->graph_end(s.qa, NULL, &graph, NULL), WEFT_ENOTSUP);
    assert_null(graph);
    /* both queues run as usual again, events too */
    OK(weft__drv_copy_h2d(s.qb, s.a, 0, &one, sizeof one));
    OK(weft__drv_event_record(s.join, s.qb));
    OK(weft__drv_queue_wait_event(s.qa, s.join));
    OK(weft__drv_copy_d2h(s.qa, &back, s.a, 0, sizeof back));
    OK(weft__drv_queue_sync(s.qa));
    assert_int_equal(back, 1);
    OK(weft__drv_queue_sync(s.qb));
    cb_scene_close(&s);
}

/*
 * Failure injection over capture, end and launch: whatever fails, the
 * capture ends, nothing leaks, and a graph that was made is right.
 */
static int cb_attempt(fixture *f, int *data_ok)
{
    void *graph = NULL;
    cb_scene s;
    int rc, erc;

    *data_ok = 1;
    if ((rc = cb_scene_open(f, &s)) < 0)
        goto out;
    if ((rc = drv->graph_begin(s.qa)) < 0)
        goto out;
    rc = cb_record(&s, 11);
    erc = drv->graph_end(s.qa, NULL, rc == 0 ? &graph : NULL, NULL);
    if (rc == 0)
        rc = erc;
    if (rc == 0 && (rc = drv->graph_launch(graph, s.qa)) == 0 &&
        (rc = weft__drv_queue_sync(s.qa)) == 0) {
        weft__fault_disarm();
        *data_ok = cb_check(&s, 11);
    }
out:
    weft__fault_disarm();
    if (graph)
        drv->graph_destroy(graph);
    cb_scene_close(&s);
    return rc;
}

static void command_buffer_failures(void **state)
{
    fixture *f = *state;
    const char *filters[] = {"opencl.", "malloc"};
    int data_ok;

    if (!have_cmdbuf(f))
        skip();
    for (size_t fi = 0; fi < WEFT__COUNTOF(filters); fi++) {
        long n;

        for (n = 1; n < 10000; n++) {
            int rc;

            weft__fault_arm(n, filters[fi]);
            rc = cb_attempt(f, &data_ok);
            if (!weft__fault_fired()) {
                OK(rc);
                break;
            }
            if (rc == 0)
                assert_true(data_ok);
            else
                assert_true(rc < 0 && weft_last_error()[0]);
        }
        assert_true(n > 5 && n < 10000);
        print_message("%ld failure points (%s) over a capture\n", n - 1,
                      filters[fi]);
    }
    OK(cb_attempt(f, &data_ok));
    assert_true(data_ok);
}

/*
 * Failure injection over the OpenCL-specific paths (module build, kernel
 * lookup, sub-buffers, peer copy, host function, cross-context wait): the
 * n-th check fails, for every n until the scenario runs clean. A failing
 * call must leave nothing behind (the sanitizer build checks leaks) and the
 * context must still be destroyable; a call that succeeds despite a failed
 * check (the driver had a fallback) must still have done its work.
 */
static int scenario(fixture *f, int *data_ok)
{
    weft__module_source s = cl_source(kernels_src, "again.cl");
    weft__module *mod = NULL;
    weft__kernel *k;
    weft__mem *m0 = NULL, *m1 = NULL;
    weft__event *ev = NULL;
    int out[32] = {0}, base = 11, rc;
    unsigned n = 32;
    gate g;

    gate_init(&g);
    g.open = 1;
    *data_ok = 1;
    if ((rc = weft__drv_module_create(f->ctx[0], &s, &mod)) < 0 ||
        (rc = weft__drv_kernel_get(mod, "iota", &k)) < 0 ||
        (rc = weft__drv_mem_alloc(f->ctx[0], 8192, &m0)) < 0 ||
        (rc = weft__drv_mem_alloc(f->ctx[1], 4096, &m1)) < 0 ||
        (rc = weft__drv_event_create(f->ctx[0], 0, &ev)) < 0)
        goto out;
    {
        weft__karg args[] = {arg_buf(m0, 4096),
                             arg_val(WEFT_PARAM_I32, &base, 4),
                             arg_val(WEFT_PARAM_U32, &n, 4)};
        weft__grid grid = grid1(4, 8);

        if ((rc = weft__drv_launch(f->q[0], k, &grid, args, 3)) < 0)
            goto out;
    }
    if ((rc = weft__drv_host_fn(f->q[0], gate_fn, &g)) < 0 ||
        (rc = weft__drv_event_record(ev, f->q[0])) < 0 ||
        (rc = weft__drv_queue_wait_event(f->q[1], ev)) < 0 ||
        (rc = weft__drv_copy_peer(f->q[1], m1, 0, m0, 4096, sizeof out)) < 0 ||
        (rc = weft__drv_copy_d2h(f->q[1], out, m1, 0, sizeof out)) < 0 ||
        (rc = weft__drv_queue_sync(f->q[1])) < 0)
        goto out;
    for (int i = 0; i < 32; i++)
        if (out[i] != 11 + i)
            *data_ok = 0;
out:
    weft__fault_disarm();
    trace("scenario", rc);
    /* whatever was queued must finish before its memory goes */
    weft__drv_queue_sync(f->q[0]);
    trace("sync 0", 0);
    weft__drv_queue_sync(f->q[1]);
    trace("sync 1", 0);
    if (ev)
        weft__drv_event_destroy(ev);
    trace("event destroyed", 0);
    if (m0)
        weft__drv_mem_free(m0);
    if (m1)
        weft__drv_mem_free(m1);
    trace("memory freed", 0);
    if (mod)
        weft__drv_module_destroy(mod);
    gate_destroy(&g);
    trace("gate destroyed", 0);
    return rc;
}

static void failure_injection(void **state)
{
    fixture *f = *state;
    const char *filters[] = {"opencl.", "malloc"};
    const char *only = getenv("WT_FAULT_FILTER");
    int data_ok;

    need_two(f);
    if (scenario(f, &data_ok) < 0)
        fail_msg("scenario: %s", weft_last_error());
    assert_true(data_ok);
    for (size_t fi = 0; fi < WEFT__COUNTOF(filters); fi++) {
        long n;

        if (only && strcmp(only, filters[fi]) != 0)
            continue;
        for (n = 1; n < 10000; n++) {
            int rc, fired;

            weft__fault_arm(n, filters[fi]);
            trace(filters[fi], (int)n);
            rc = scenario(f, &data_ok);
            fired = weft__fault_fired();
            if (!fired) {
                OK(rc);
                break;
            }
            if (rc == 0)
                assert_true(data_ok);
            else
                assert_true(rc < 0 && weft_last_error()[0]);
        }
        assert_true(n > 5 && n < 10000);
    }
    /* the contexts are still whole */
    OK(scenario(f, &data_ok));
    assert_true(data_ok);
}

int main(int argc, char **argv)
{
    fixture *f = &the_fixture;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_properties),
        cmocka_unit_test(kernel_runs),
        cmocka_unit_test(build_failure_has_log),
        cmocka_unit_test(missing_kernel_is_not_found),
        cmocka_unit_test(other_source_kinds),
        cmocka_unit_test(binary_save_and_reload),
        cmocka_unit_test(argument_info),
        cmocka_unit_test(typed_arguments_arrive),
        cmocka_unit_test(local_scratch),
        cmocka_unit_test(sub_buffer_offsets),
        cmocka_unit_test(pinned_and_registered),
        cmocka_unit_test(timing_events),
        cmocka_unit_test(cross_context_wait),
        cmocka_unit_test(peer_copy),
        cmocka_unit_test(failures_carried),
        cmocka_unit_test(failure_injection),
        cmocka_unit_test(argument_count_checked),
        cmocka_unit_test(command_buffer_graph),
        cmocka_unit_test(command_buffer_refuses),
        cmocka_unit_test(command_buffer_failures),
    };
    weft__driver_config cfg = {NULL, 0, 0, 0};
    int rc;

    if (getenv("WT_TRACE"))
        weft_log_set_level(WEFT_LOG_DEBUG);
    rc =
        weft__driver_opencl.platforms_open(&cfg, &f->platforms, &f->nplatforms);
    if (rc == WEFT_ENOTSUP) {
        printf("skipped: %s\n", weft_last_error());
        return 77;
    }
    if (rc < 0) {
        fprintf(stderr, "opencl discovery: %s\n", weft_last_error());
        return 1;
    }
    for (unsigned p = 0; p < f->nplatforms && f->ndev < 2; p++)
        for (unsigned d = 0; d < f->platforms[p]->ndevices && f->ndev < 2; d++)
            f->dev[f->ndev++] = f->platforms[p]->devices[d];
    rc = wt_run_group(argc, argv, tests, setup, teardown);
    weft__driver_opencl.platforms_close(f->platforms, f->nplatforms);
    trace("closed", rc);
    return rc;
}
