/*
 * Modules through the public API: one portable kernel built for every
 * device present (CUDA, OpenCL, and host and sim through the C compiler)
 * gives the same result on each; variants are chosen per device; errors
 * name the device and the kernel.
 */
#include "wt_test.h"

#include "runtime.h"

#include <stdio.h>
#include <string.h>

static weft_runtime *rt;
static unsigned ngpu_like; /* CUDA + OpenCL devices */

static const char portable_src[] =
    "WEFT_FUNC float twice(float v) { return v + v; }\n"
    "WEFT_KERNEL void saxpy(WEFT_GLOBAL float *y, WEFT_GLOBAL const float *x,\n"
    "                       float a, long n)\n"
    "{\n"
    "    WEFT_LOCAL float tile[64];\n"
    "    long i = weft_global_id(0);\n"
    "    long l = weft_local_id(0);\n"
    "    tile[l] = i < n ? x[i] : 0.0f;\n"
    "    weft_barrier();\n"
    "    /* read a neighbour's element through group-local memory */\n"
    "    float nb = tile[(l + 1) % weft_local_size(0)];\n"
    "    if (i < n) y[i] = a * twice(tile[l]) + y[i] + nb * 0.0f +\n"
    "                      (float)weft_group_id(0);\n"
    "}\n";

static void host_saxpy(const weft_host_group *g, void *const *args)
{
    float *y = args[0];
    const float *x = args[1];
    float a = *(const float *)args[2];
    long n = *(const long *)args[3];

    for (uint32_t l = 0; l < g->group_size[0]; l++) {
        long i = (long)g->group[0] * g->group_size[0] + l;
        if (i < n)
            y[i] = a * (x[i] + x[i]) + y[i] + (float)g->group[0];
    }
}

static const weft_param_type saxpy_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_F32, WEFT_PARAM_I64};
static const weft_host_kernel host_table[] = {
    {"saxpy", host_saxpy, 4, saxpy_params, NULL, NULL, NULL},
};

static int setup(void **state)
{
    (void)state;
    if (weft_runtime_create(&rt, NULL) < 0) {
        fprintf(stderr, "%s\n", weft_last_error());
        return -1;
    }
    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++) {
        const char *d = weft__runtime_device(rt, i)->drv->name;
        if (!strcmp(d, "cuda") || !strcmp(d, "opencl"))
            ngpu_like++;
    }
    printf("# %u devices, %u of them CUDA or OpenCL\n",
           weft_runtime_device_count(rt), ngpu_like);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return weft_runtime_destroy(rt);
}

enum { N = 1000, GROUP = 64 };

/* Run kernel k on device i over N items; y comes back in y. */
static void run_on(const weft_kernel *k, unsigned i, float *y)
{
    weft__kernel *impl = weft__kernel_impl(k, i);
    weft__context *ctx;
    weft__queue *q;
    weft__mem *dy, *dx;
    float x[N], a = 0.5f;
    long n = N;

    assert_non_null(impl);
    for (int j = 0; j < N; j++) {
        x[j] = (float)j;
        y[j] = 1.0f;
    }
    assert_int_equal(weft__runtime_context(rt, i, &ctx), 0);
    assert_int_equal(weft__drv_queue_create(ctx, NULL, &q), 0);
    assert_int_equal(weft__drv_mem_alloc(ctx, sizeof x, &dx), 0);
    assert_int_equal(weft__drv_mem_alloc(ctx, sizeof x, &dy), 0);
    assert_int_equal(weft__drv_copy_h2d(q, dx, 0, x, sizeof x), 0);
    assert_int_equal(weft__drv_copy_h2d(q, dy, 0, y, sizeof x), 0);
    weft__karg args[4] = {
        {.type = WEFT_PARAM_BUFFER, .u.buf = {dy, 0}},
        {.type = WEFT_PARAM_BUFFER, .u.buf = {dx, 0}},
        {.type = WEFT_PARAM_F32, .size = 4, .u.value = &a},
        {.type = WEFT_PARAM_I64, .size = 8, .u.value = &n},
    };
    weft__grid grid = {{(N + GROUP - 1) / GROUP, 1, 1}, {GROUP, 1, 1}, 0};
    assert_int_equal(weft__drv_launch(q, impl, &grid, args, 4), 0);
    assert_int_equal(weft__drv_copy_d2h(q, y, dy, 0, sizeof x), 0);
    assert_int_equal(weft__drv_queue_sync(q), 0);
    assert_int_equal(weft__drv_mem_free(dx), 0);
    assert_int_equal(weft__drv_mem_free(dy), 0);
    assert_int_equal(weft__drv_queue_destroy(q), 0);
}

static void check_result(const float *y, const char *where)
{
    for (int j = 0; j < N; j++) {
        float want = 0.5f * (2.0f * (float)j) + 1.0f + (float)(j / GROUP);
        if (y[j] != want)
            fail_msg("%s: y[%d] = %g, expected %g", where, j, (double)y[j],
                     (double)want);
    }
}

/*
 * One portable source, with a barrier and group-local memory: the same
 * bytes from every device, host and sim (real_data=1) included.
 */
static void portable_kernel_same_everywhere(void **state)
{
    weft_module *m;
    weft_kernel *k;
    float y[N];
    (void)state;

    assert_int_equal(weft_module_create_portable(rt, portable_src, NULL, &m),
                     0);
    assert_int_equal(weft_module_get_kernel(m, "saxpy", &k), 0);
    assert_string_equal(weft_kernel_name(k), "saxpy");
    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++) {
        weft__device *d = weft__runtime_device(rt, i);

        assert_true(weft_kernel_supports(k, weft_runtime_device(rt, i)));
        run_on(k, i, y);
        check_result(y, d->name);
        printf("# portable saxpy on %s:%u (%s): ok\n", d->drv->name,
               d->driver_index, d->name);
    }
    assert_int_equal(weft_module_destroy(m), 0);
}

/*
 * A per-group reduction: a tree in group-local memory with a barrier in a
 * loop, and a 2-D grid. Every device (host and sim through the C compiler,
 * PoCL, CUDA) gives the same sums.
 */
static const char reduce_src[] =
    "#define GROUP 64\n"
    "WEFT_FUNC void sync_items(void) { weft_barrier(); }\n"
    "WEFT_KERNEL void group_sum(WEFT_GLOBAL const int *x,\n"
    "                           WEFT_GLOBAL int *sums, int n)\n"
    "{\n"
    "    WEFT_LOCAL int part[GROUP];\n"
    "    long l = weft_local_id(0);\n"
    "    long i = weft_global_id(1) * weft_global_size(0) +\n"
    "             weft_global_id(0);\n"
    "    int mine = i < n ? x[i] : 0; /* private, kept across barriers */\n"
    "    part[l] = mine;\n"
    "    sync_items();\n"
    "    for (long s = weft_local_size(0) / 2; s > 0; s /= 2) {\n"
    "        if (l < s)\n"
    "            part[l] += part[l + s];\n"
    "        weft_barrier();\n"
    "    }\n"
    "    if (l == 0)\n"
    "        sums[weft_group_id(1) * weft_num_groups(0) +\n"
    "             weft_group_id(0)] = part[0] * 1000 + mine;\n"
    "}\n";

enum { RN = 1500, RGX = 8, RGY = 3 };

static void reduction_same_everywhere(void **state)
{
    weft_module *m;
    weft_kernel *k;
    int x[RN], want[RGX * RGY];
    int n = RN;
    (void)state;

    for (int j = 0; j < RN; j++)
        x[j] = (j * 7919) % 97 - 40;
    for (int g = 0; g < RGX * RGY; g++) {
        int sum = 0;
        for (int l = 0; l < 64; l++)
            sum += g * 64 + l < RN ? x[g * 64 + l] : 0;
        want[g] = sum * 1000 + (g * 64 < RN ? x[g * 64] : 0);
    }
    assert_int_equal(weft_module_create_portable(rt, reduce_src, NULL, &m), 0);
    assert_int_equal(weft_module_get_kernel(m, "group_sum", &k), 0);
    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++) {
        weft__device *d = weft__runtime_device(rt, i);
        weft__kernel *impl = weft__kernel_impl(k, i);
        weft__context *ctx;
        weft__queue *q;
        weft__mem *dx, *ds;
        int sums[RGX * RGY];

        assert_non_null(impl);
        assert_int_equal(weft__runtime_context(rt, i, &ctx), 0);
        assert_int_equal(weft__drv_queue_create(ctx, NULL, &q), 0);
        assert_int_equal(weft__drv_mem_alloc(ctx, sizeof x, &dx), 0);
        assert_int_equal(weft__drv_mem_alloc(ctx, sizeof sums, &ds), 0);
        assert_int_equal(weft__drv_copy_h2d(q, dx, 0, x, sizeof x), 0);
        weft__karg args[3] = {
            {.type = WEFT_PARAM_BUFFER, .u.buf = {dx, 0}},
            {.type = WEFT_PARAM_BUFFER, .u.buf = {ds, 0}},
            {.type = WEFT_PARAM_I32, .size = 4, .u.value = &n},
        };
        weft__grid grid = {{RGX, RGY, 1}, {64, 1, 1}, 0};
        assert_int_equal(weft__drv_launch(q, impl, &grid, args, 3), 0);
        assert_int_equal(weft__drv_copy_d2h(q, sums, ds, 0, sizeof sums), 0);
        assert_int_equal(weft__drv_queue_sync(q), 0);
        for (int g = 0; g < RGX * RGY; g++)
            if (sums[g] != want[g])
                fail_msg("%s: group %d sums to %d, expected %d", d->name, g,
                         sums[g], want[g]);
        printf("# group sums on %s:%u (%s): ok\n", d->drv->name,
               d->driver_index, d->name);
        assert_int_equal(weft__drv_mem_free(dx), 0);
        assert_int_equal(weft__drv_mem_free(ds), 0);
        assert_int_equal(weft__drv_queue_destroy(q), 0);
    }
    assert_int_equal(weft_module_destroy(m), 0);
}

/*
 * Group-local scratch sized at launch (a WEFT_LOCAL pointer parameter): on
 * host, sim and OpenCL; CUDA has no such parameter, so not where a CUDA
 * device would have to build it.
 */
static void local_parameter(void **state)
{
    static const char src[] =
        "WEFT_KERNEL void rev(WEFT_GLOBAL int *x, WEFT_LOCAL int *t)\n"
        "{\n"
        "    long l = weft_local_id(0), n = weft_local_size(0);\n"
        "    t[l] = (int)x[weft_global_id(0)];\n"
        "    weft_barrier();\n"
        "    x[weft_global_id(0)] = t[n - 1 - l];\n"
        "}\n";
    weft_module *m;
    weft_kernel *k;
    (void)state;

    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++)
        if (!strcmp(weft__runtime_device(rt, i)->drv->name, "cuda")) {
            printf("skipped: local_parameter: a CUDA device\n");
            skip();
        }
    assert_int_equal(weft_module_create_portable(rt, src, NULL, &m), 0);
    assert_int_equal(weft_module_get_kernel(m, "rev", &k), 0);
    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++) {
        weft__device *d = weft__runtime_device(rt, i);
        weft__kernel *impl = weft__kernel_impl(k, i);
        weft__context *ctx;
        weft__queue *q;
        weft__mem *dx;
        int x[128];

        for (int j = 0; j < 128; j++)
            x[j] = j;
        assert_int_equal(weft__runtime_context(rt, i, &ctx), 0);
        assert_int_equal(weft__drv_queue_create(ctx, NULL, &q), 0);
        assert_int_equal(weft__drv_mem_alloc(ctx, sizeof x, &dx), 0);
        assert_int_equal(weft__drv_copy_h2d(q, dx, 0, x, sizeof x), 0);
        weft__karg args[2] = {
            {.type = WEFT_PARAM_BUFFER, .u.buf = {dx, 0}},
            {.type = WEFT_PARAM_LOCAL, .size = 32 * sizeof(int)},
        };
        weft__grid grid = {{4, 1, 1}, {32, 1, 1}, 0};
        assert_int_equal(weft__drv_launch(q, impl, &grid, args, 2), 0);
        assert_int_equal(weft__drv_copy_d2h(q, x, dx, 0, sizeof x), 0);
        assert_int_equal(weft__drv_queue_sync(q), 0);
        for (int j = 0; j < 128; j++)
            if (x[j] != j / 32 * 32 + 31 - j % 32)
                fail_msg("%s: x[%d] = %d", d->name, j, x[j]);
        assert_int_equal(weft__drv_mem_free(dx), 0);
        assert_int_equal(weft__drv_queue_destroy(q), 0);
    }
    assert_int_equal(weft_module_destroy(m), 0);
}

/* Host devices take the C variant; CUDA/OpenCL the portable one. */
static void variants_by_device(void **state)
{
    const weft_module_source v[] = {
        {WEFT_SOURCE_HOST, host_table, 1, NULL, "host saxpy"},
        {WEFT_SOURCE_PORTABLE, portable_src, 0, NULL, "portable saxpy"},
    };
    weft_module *m;
    weft_kernel *k, *k2;
    float y[N];
    (void)state;

    assert_int_equal(weft_module_create(rt, v, 2, &m), 0);
    assert_int_equal(weft_module_get_kernel(m, "saxpy", &k), 0);
    assert_int_equal(weft_module_get_kernel(m, "saxpy", &k2), 0);
    assert_ptr_equal(k, k2); /* looked up once */
    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++) {
        weft__device *d = weft__runtime_device(rt, i);

        assert_true(weft_kernel_supports(k, weft_runtime_device(rt, i)));
        run_on(k, i, y);
        check_result(y, d->name);
    }
    assert_int_equal(weft_module_destroy(m), 0);
}

static void errors_name_what_was_wrong(void **state)
{
    const weft_module_source host_only = {WEFT_SOURCE_HOST, host_table, 1, NULL,
                                          "host saxpy"};
    weft_module *m;
    weft_kernel *k;
    int host_code = 0;
    (void)state;

    /* host C runs on host and sim devices only */
    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++) {
        const char *d = weft__runtime_device(rt, i)->drv->name;

        host_code |= !strcmp(d, "host") || !strcmp(d, "sim");
    }
    if (!host_code) {
        assert_int_equal(weft_module_create(rt, &host_only, 1, &m),
                         WEFT_ENODEV);
        printf("# host code on this runtime: %s\n", weft_last_error());
    } else {
        assert_int_equal(weft_module_create(rt, &host_only, 1, &m), 0);
        assert_int_equal(weft_module_get_kernel(m, "nosuch", &k),
                         WEFT_ENOTFOUND);
        assert_non_null(strstr(weft_last_error(), "nosuch"));
        /* a live module keeps the runtime */
        assert_int_equal(weft_runtime_destroy(rt), WEFT_EBUSY);
        assert_int_equal(weft_module_destroy(m), 0);
    }

    assert_int_equal(weft_module_create(rt, NULL, 0, &m), WEFT_EINVAL);
    {
        const weft_module_source bad = {WEFT_SOURCE_HOST, host_table, 0, NULL,
                                        NULL};
        assert_int_equal(weft_module_create(rt, &bad, 1, &m), WEFT_EINVAL);
    }
    {
        int rc = weft_module_create_portable(
            rt,
            "WEFT_KERNEL void broken(WEFT_GLOBAL float *x) { x[0] = "
            "undeclared_name; }\n",
            NULL, &m);
        assert_int_equal(rc, WEFT_EBUILD);
        assert_non_null(strstr(weft_last_error(), "device"));
        assert_non_null(strstr(weft_last_error(), "undeclared_name"));
        printf("# build error reads: %.200s\n", weft_last_error());
    }
}

/*
 * weft_kernel_param_count and _info: what each driver's build tells of a
 * portable kernel's parameters (checked on each device's implementation),
 * and the public view, the most any build tells, on this runtime's mix.
 */
static const char params_src[] =
    "typedef struct { int a; int b; } pair;\n"
    "WEFT_KERNEL void probe(WEFT_GLOBAL float *y, weft_u32 n, float a,\n"
    "                       long m, WEFT_LOCAL float *t, pair p,\n"
    "                       WEFT_GLOBAL const double *x)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    t[weft_local_id(0)] = a;\n"
    "    if (i < n && i < m) y[i] = t[weft_local_id(0)] + p.a + p.b + x[i];\n"
    "}\n";
/* The same where a CUDA device is (WEFT_LOCAL pointer parameters do not
 * build there, see local_parameter): t in global memory. */
static const char params_src_global_t[] =
    "typedef struct { int a; int b; } pair;\n"
    "WEFT_KERNEL void probe(WEFT_GLOBAL float *y, weft_u32 n, float a,\n"
    "                       long m, WEFT_GLOBAL float *t, pair p,\n"
    "                       WEFT_GLOBAL const double *x)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    t[weft_local_id(0)] = a;\n"
    "    if (i < n && i < m) y[i] = t[weft_local_id(0)] + p.a + p.b + x[i];\n"
    "}\n";

static void parameter_info(void **state)
{
    weft_param_type want[] = {
        WEFT_PARAM_BUFFER, WEFT_PARAM_U32,   WEFT_PARAM_F32,   WEFT_PARAM_I64,
        WEFT_PARAM_LOCAL,  WEFT_PARAM_BYTES, WEFT_PARAM_BUFFER};
    static const size_t want_size[] = {0, 4, 4, 8, 0, 8, 0};
    unsigned typed = 0, opencl = 0, cuda = 0, n = 99;
    weft_param_info info = {WEFT_PARAM_UNKNOWN, 0};
    weft_module *m;
    weft_kernel *k;
    (void)state;

    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++)
        if (!strcmp(weft__runtime_device(rt, i)->drv->name, "cuda"))
            want[4] = WEFT_PARAM_BUFFER;
    if (want[4] == WEFT_PARAM_BUFFER)
        printf("# a CUDA device: the probe's t is a global pointer\n");
    check(weft_module_create_portable(
        rt, want[4] == WEFT_PARAM_LOCAL ? params_src : params_src_global_t,
        NULL, &m));
    assert_int_equal(weft_module_get_kernel(m, "probe", &k), 0);
    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++) {
        const weft__kernel *impl = weft__kernel_impl(k, i);
        const char *drv = weft__runtime_device(rt, i)->drv->name;

        assert_non_null(impl);
        if (!strcmp(drv, "host") || !strcmp(drv, "sim")) {
            typed++;
            assert_true(impl->params_known);
            assert_int_equal(impl->nparams, 7);
            for (unsigned j = 0; j < 7; j++)
                assert_int_equal(impl->params[j], want[j]);
        } else if (!strcmp(drv, "opencl")) {
            opencl++;
            /* the struct maps onto no weft type: the others are told */
            assert_true(impl->count_known);
            assert_false(impl->params_known);
            assert_int_equal(impl->nparams, 7);
            assert_non_null(impl->some_params);
            for (unsigned j = 0; j < 7; j++)
                assert_int_equal(impl->some_params[j],
                                 j == 5 ? WEFT_PARAM_UNKNOWN : want[j]);
        } else if (!strcmp(drv, "cuda")) {
            cuda++;
            if (impl->params_known) {
                assert_int_equal(impl->nparams, 7);
                assert_null(impl->params);
            }
        }
    }
    printf("# probe: %u host/sim, %u OpenCL, %u CUDA builds\n", typed, opencl,
           cuda);

    assert_int_equal(weft_kernel_param_count(k, &n), 0);
    assert_int_equal(n, 7);
    /* the portable signature gives every type on every driver */
    for (unsigned j = 0; j < 7; j++) {
        assert_int_equal(weft_kernel_param_info(k, j, &info), 0);
        assert_int_equal(info.type, want[j]);
        /* the struct's size: a host, sim or CUDA build tells it */
        assert_int_equal(info.size,
                         j == 5 && !typed && !cuda ? 0 : want_size[j]);
    }
    /* out of range: *info unchanged */
    info.type = WEFT_PARAM_F64;
    info.size = 77;
    assert_int_equal(weft_kernel_param_info(k, 7, &info), WEFT_ERANGE);
    assert_non_null(strstr(weft_last_error(), "7 parameters"));
    assert_int_equal(info.type, WEFT_PARAM_F64);
    assert_int_equal(info.size, 77);
    assert_string_equal(weft_param_type_name(WEFT_PARAM_UNKNOWN), "unknown");
    assert_int_equal(weft_param_type_size(WEFT_PARAM_UNKNOWN), 0);
    assert_int_equal(weft_module_destroy(m), 0);

    /* OpenCL C alone: the struct's type is not told, nor guessed */
    if (opencl) {
        const weft_module_source cl = {
            WEFT_SOURCE_OPENCL_C,
            "typedef struct { int a; int b; } pair;\n"
            "__kernel void probe_cl(__global float *y, pair p, uint n,\n"
            "                       __local float *t) {\n"
            "    t[0] = p.a; if (get_global_id(0) < n) y[0] = t[0] + p.b;\n"
            "}\n",
            0, NULL, "probe.cl"};
        static const weft_param_type cl_want[] = {
            WEFT_PARAM_BUFFER, WEFT_PARAM_UNKNOWN, WEFT_PARAM_U32,
            WEFT_PARAM_LOCAL};

        assert_int_equal(weft_module_create(rt, &cl, 1, &m), 0);
        assert_int_equal(weft_module_get_kernel(m, "probe_cl", &k), 0);
        assert_int_equal(weft_kernel_param_count(k, &n), 0);
        assert_int_equal(n, 4);
        for (unsigned j = 0; j < 4; j++) {
            assert_int_equal(weft_kernel_param_info(k, j, &info), 0);
            assert_int_equal(info.type, cl_want[j]);
            assert_int_equal(info.size, j == 2 ? 4 : 0);
        }
        assert_int_equal(weft_module_destroy(m), 0);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(portable_kernel_same_everywhere),
        cmocka_unit_test(reduction_same_everywhere),
        cmocka_unit_test(local_parameter),
        cmocka_unit_test(variants_by_device),
        cmocka_unit_test(errors_name_what_was_wrong),
        cmocka_unit_test(parameter_info),
    };
    return wt_run_group(argc, argv, tests, setup, teardown);
}
