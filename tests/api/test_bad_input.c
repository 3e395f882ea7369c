/*
 * Bad input to every public function (include/weft.h): NULL handles and
 * out-pointers, ranges and sizes, objects of another runtime, scalar types,
 * dims, node indices and enum values. Each case checks the exact code, that
 * weft_last_error() names the argument (and the node and types where there
 * are some), and that the object the call failed on still works: the
 * fixture graph still instantiates and computes the right result, the
 * buffer still holds its bytes.
 *
 * test_every_function_covered reads weft.h (the path comes from CMake) and
 * fails on a WEFT_API function that the table `covered` below does not
 * name, so that a function added to the header needs a case here.
 *
 * The runtime comes from the environment (WEFT_DEVICES: host, sim, opencl);
 * a second runtime of the same devices supplies the foreign objects.
 */
#include "wt_test.h"

#include "graph/kernel.h"
#include "sched/exec.h"
#include "wt_devices.h"
#include "wt_kernels.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef WT_WEFT_H
#error "WT_WEFT_H: the path of include/weft.h, from CMake"
#endif

enum { N = 64, K = 5 };

static wt_devices devs;
static weft_runtime *rt, *rt_b;
static weft_module *mod, *mod_b;
static weft_kernel *k_advance, *k_scale, *k_advance_b;

/*
 * The fixture of every case: x (N u32 of rt), xb (N u32 of rt_b), and g,
 * which writes init to x and runs advance(x, K, N): x[i] = 3 * i + K.
 */
static struct {
    weft_buffer *x, *xb;
    weft_graph *g;
    uint32_t init[N];
} fx;

/* ---- checking ---------------------------------------------------------- */

/*
 * rc must be want, and weft_last_error() (and the detail's message) must
 * contain every string of the NULL-terminated list.
 */
#define expect(call, want, ...)                                                \
    wt_expect((call), (want), #call, __FILE__, __LINE__, __VA_ARGS__, NULL)

static void wt_expect(int rc, int want, const char *call, const char *file,
                      int line, ...)
{
    const weft_error_detail *d = weft_last_error_detail();
    const char *s;
    va_list ap;

    if (rc != want) {
        print_error("%s: got %s (%s), wanted %s\n", call, weft_err_name(rc),
                    weft_last_error(), weft_err_name(want));
        _fail(file, line);
    }
    if (want < 0 && (d->code != want || strcmp(d->message, weft_last_error())))
        fail_msg("%s: the detail says %s \"%s\"", call, weft_err_name(d->code),
                 d->message);
    va_start(ap, line);
    while ((s = va_arg(ap, const char *)) != NULL)
        if (!strstr(weft_last_error(), s)) {
            va_end(ap);
            print_error("%s: \"%s\" not in \"%s\"\n", call, s,
                        weft_last_error());
            _fail(file, line);
        }
    va_end(ap);
}

/* A call that returns a pointer: NULL, with a message naming the cause. */
#define expect_null(call, ...)                                                 \
    do {                                                                       \
        weft_clear_error();                                                    \
        assert_null(call);                                                     \
        wt_expect(WEFT_EINVAL, WEFT_EINVAL, #call, __FILE__, __LINE__,         \
                  __VA_ARGS__, NULL);                                          \
    } while (0)

/* The fixture graph is as it was: 2 nodes, and it computes x. */
static void graph_works(void)
{
    uint32_t out[N];
    weft_exec *e;

    assert_int_equal(weft_graph_node_count(fx.g), 2);
    memset(out, 0xee, sizeof out);
    check(weft_buffer_write(fx.x, 0, out, sizeof out));
    check(weft_graph_instantiate(fx.g, NULL, &e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_exec_destroy(e));
    check(weft_buffer_read(fx.x, 0, out, sizeof out));
    for (unsigned i = 0; i < N; i++)
        assert_int_equal(out[i], wt_advance_value(i, K));
}

/* b (N u32) holds 7 * i + seed; it still reads and writes. */
static void fill_pattern(weft_buffer *b, uint32_t seed)
{
    uint32_t v[N];

    for (unsigned i = 0; i < N; i++)
        v[i] = 7 * i + seed;
    check(weft_buffer_write(b, 0, v, sizeof v));
}

static void buffer_holds(weft_buffer *b, uint32_t seed)
{
    uint32_t v[N];

    memset(v, 0, sizeof v);
    check(weft_buffer_read(b, 0, v, sizeof v));
    for (unsigned i = 0; i < N; i++)
        assert_int_equal(v[i], 7 * i + seed);
}

static weft_arg advance_args(weft_buffer *b)
{
    return weft_arg_buffer(b, 0, N * sizeof(uint32_t), WEFT_READ_WRITE);
}

/* Whether k's implementation on device 0 knows its parameter types. */
static int types_known(const weft_kernel *k)
{
    const weft__kernel *impl = weft__kernel_impl(k, 0);

    return impl && impl->params_known && impl->params;
}

/* ---- fixtures ---------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    wt_devices_open(&devs);
    rt = devs.rt;
    if (weft_runtime_create(&rt_b, NULL) < 0 ||
        wt_kernels_module(rt, &mod) < 0 ||
        wt_kernels_module(rt_b, &mod_b) < 0 ||
        weft_module_get_kernel(mod, "advance", &k_advance) < 0 ||
        weft_module_get_kernel(mod, "scale", &k_scale) < 0 ||
        weft_module_get_kernel(mod_b, "advance", &k_advance_b) < 0) {
        fprintf(stderr, "setup: %s\n", weft_last_error());
        return -1;
    }
    printf("# device 0: %s (%s)\n", wt_device(&devs, 0)->name,
           wt_device(&devs, 0)->drv->name);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    weft_module_destroy(mod_b);
    weft_module_destroy(mod);
    if (weft_runtime_destroy(rt_b) < 0)
        return -1;
    return weft_runtime_destroy(rt);
}

static int setup(void **state)
{
    weft_arg a[3];

    (void)state;
    for (unsigned i = 0; i < N; i++)
        fx.init[i] = i;
    a[0] = advance_args(NULL);
    a[1] = weft_arg_u32(K);
    a[2] = weft_arg_i64(N);
    if (weft_buffer_create(rt, N * sizeof(uint32_t), &fx.x) < 0 ||
        weft_buffer_create(rt_b, N * sizeof(uint32_t), &fx.xb) < 0 ||
        weft_graph_create(rt, &fx.g) < 0 ||
        weft_graph_add_write(fx.g, fx.x, 0, fx.init, sizeof fx.init, NULL) < 0)
        goto fail;
    a[0].buffer = fx.x;
    if (weft_graph_add_kernel(fx.g, k_advance, weft_dims1(N), a, 3, NULL) < 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, "setup: %s\n", weft_last_error());
    return -1;
}

static int teardown(void **state)
{
    (void)state;
    weft_graph_destroy(fx.g);
    if (weft_buffer_destroy(fx.xb) < 0 || weft_buffer_destroy(fx.x) < 0) {
        fprintf(stderr, "teardown: %s\n", weft_last_error());
        return -1;
    }
    memset(&fx, 0, sizeof fx);
    return 0;
}

/* ---- errors, logging, names -------------------------------------------- */

static void test_errors_and_names(void **state)
{
    const weft_error_detail *d;

    (void)state;
    assert_string_equal(weft_version(), "0.1.0");
    assert_string_equal(weft_strerror(0), "success");
    assert_string_equal(weft_strerror(WEFT_EARGS),
                        "kernel arguments do not match the kernel");
    assert_string_equal(weft_strerror(1), "unknown error");
    assert_string_equal(weft_strerror(INT_MIN), "unknown error");
    assert_string_equal(weft_err_name(WEFT_EBUSY), "WEFT_EBUSY");
    assert_non_null(weft_err_name(-999));
    assert_string_not_equal(weft_err_name(-999), "WEFT_OK");
    assert_non_null(weft_err_name(INT_MAX));

    /* The detail follows the last failure; clearing forgets it. */
    expect(weft_graph_create(NULL, NULL), WEFT_EINVAL, "weft_graph_create",
           "runtime is NULL");
    d = weft_last_error_detail();
    assert_int_equal(d->code, WEFT_EINVAL);
    assert_null(d->driver);
    weft_clear_error();
    assert_string_equal(weft_last_error(), "");
    assert_int_equal(weft_last_error_detail()->code, 0);

    /* Levels that are none of weft_log_level are taken as WEFT_LOG_WARN. */
    weft_log_set_level((weft_log_level)99);
    assert_int_equal(weft_log_get_level(), WEFT_LOG_WARN);
    weft_log_set_level((weft_log_level)-1);
    assert_int_equal(weft_log_get_level(), WEFT_LOG_WARN);
    weft_log_set_level(WEFT_LOG_ERROR);
    assert_int_equal(weft_log_get_level(), WEFT_LOG_ERROR);
    weft_log_set_level(WEFT_LOG_WARN);
    weft_log_set_sink(NULL, NULL); /* the default */

    assert_int_equal(weft_param_type_size((weft_param_type)0), 0);
    assert_int_equal(weft_param_type_size((weft_param_type)99), 0);
    assert_int_equal(weft_param_type_size(WEFT_PARAM_BUFFER), 0);
    assert_int_equal(weft_param_type_size(WEFT_PARAM_F64), 8);
    assert_string_equal(weft_param_type_name((weft_param_type)0), "unknown");
    assert_string_equal(weft_param_type_name((weft_param_type)99), "unknown");
    assert_string_equal(weft_param_type_name(WEFT_PARAM_U32), "u32");
    assert_null(weft_place_policy_name((weft_place_policy)99));
    assert_null(weft_place_policy_name((weft_place_policy)-1));
    assert_string_equal(weft_place_policy_name(WEFT_PLACE_HEFT), "heft");
    graph_works();
}

/* ---- runtime and devices ----------------------------------------------- */

static void test_runtime_bad_input(void **state)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_runtime *r = NULL;
    weft_stats st;
    const char *name = NULL, *reason = NULL;
    unsigned nd = 0;
    int status = 1;

    (void)state;
    expect(weft_runtime_create(NULL, NULL), WEFT_EINVAL, "weft_runtime_create",
           "result is NULL");
    o.size = 0;
    expect(weft_runtime_create(&r, &o), WEFT_EINVAL, "weft_runtime_create",
           "options size 0");
    o.size = sizeof o + 8;
    expect(weft_runtime_create(&r, &o), WEFT_EINVAL, "options size");
    assert_null(r);

    o = (weft_runtime_options)WEFT_RUNTIME_OPTIONS_INIT;
    o.place_policy = 99;
    if (!getenv("WEFT_PLACE"))
        expect(weft_runtime_create(&r, &o), WEFT_EINVAL, "placement policy 99");
    assert_null(r);

    assert_int_equal(weft_runtime_destroy(NULL), 0);
    /* Objects live: refused, and the runtime goes on. */
    expect(weft_runtime_destroy(rt), WEFT_EBUSY, "weft_runtime_destroy",
           "still live");

    assert_int_equal(weft_runtime_driver_count(NULL), 0);
    assert_true(weft_runtime_driver_count(rt) > 0);
    expect(weft_runtime_driver(NULL, 0, &name, &nd, &status, &reason),
           WEFT_EINVAL, "weft_runtime_driver", "runtime is NULL");
    expect(weft_runtime_driver(rt, weft_runtime_driver_count(rt), &name, &nd,
                               &status, &reason),
           WEFT_EINVAL, "weft_runtime_driver", "index");
    expect(weft_runtime_driver(rt, UINT_MAX, NULL, NULL, NULL, NULL),
           WEFT_EINVAL, "index");
    /* Every out-pointer may be NULL. */
    check(weft_runtime_driver(rt, 0, NULL, NULL, NULL, NULL));
    check(weft_runtime_driver(rt, 0, &name, &nd, &status, &reason));
    assert_non_null(name);
    assert_non_null(reason);

    assert_int_equal(weft_runtime_device_count(NULL), 0);
    assert_int_equal(weft_runtime_device_count(rt), devs.n);
    expect_null(weft_runtime_device(NULL, 0), "weft_runtime_device",
                "runtime is NULL");
    expect_null(weft_runtime_device(rt, devs.n), "weft_runtime_device",
                "index");
    expect_null(weft_runtime_device(rt, UINT_MAX), "out of range");

    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    expect(weft_runtime_get_stats(NULL, &st), WEFT_EINVAL,
           "weft_runtime_get_stats", "runtime is NULL");
    expect(weft_runtime_get_stats(rt, NULL), WEFT_EINVAL,
           "weft_runtime_get_stats", "stats is NULL");
    st.size = 0;
    expect(weft_runtime_get_stats(rt, &st), WEFT_EINVAL, "stats->size 0");
    st.size = SIZE_MAX;
    expect(weft_runtime_get_stats(rt, &st), WEFT_EINVAL, "stats->size");
    st.size = sizeof st;
    check(weft_runtime_get_stats(rt, &st));
    graph_works();
}

static void test_device_bad_input(void **state)
{
    weft_device *dev = weft_runtime_device(rt, 0);
    weft_device *dev_b = weft_runtime_device(rt_b, 0);
    weft_device_info info;
    int can = 7;

    (void)state;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    expect(weft_device_get_info(NULL, &info), WEFT_EINVAL,
           "weft_device_get_info", "device is NULL");
    expect(weft_device_get_info(dev, NULL), WEFT_EINVAL, "info is NULL");
    info.size = 0;
    expect(weft_device_get_info(dev, &info), WEFT_EINVAL, "info->size 0");
    info.size = sizeof info + 1;
    expect(weft_device_get_info(dev, &info), WEFT_EINVAL, "info->size");
    info.size = sizeof info;
    check(weft_device_get_info(dev, &info));
    assert_int_equal(info.index, 0);

    expect(weft_device_can_access_peer(NULL, dev, &can), WEFT_EINVAL,
           "weft_device_can_access_peer", "dev is NULL");
    expect(weft_device_can_access_peer(dev, NULL, &can), WEFT_EINVAL,
           "peer is NULL");
    expect(weft_device_can_access_peer(dev, dev, NULL), WEFT_EINVAL,
           "can is NULL");
    assert_int_equal(can, 7); /* untouched by the failed calls */
    check(weft_device_can_access_peer(dev, dev, &can));
    assert_int_equal(can, 0);
    /* A device of another runtime is another device: no error. */
    check(weft_device_can_access_peer(dev, dev_b, &can));
    graph_works();
}

/* ---- modules and kernels ----------------------------------------------- */

static void test_module_bad_input(void **state)
{
    weft_module_source v = {WEFT_SOURCE_PORTABLE, "x", 0, NULL, "v.cl"};
    weft_module *m = NULL;
    weft_kernel *k = NULL;

    (void)state;
    expect(weft_module_create(NULL, &v, 1, &m), WEFT_EINVAL,
           "weft_module_create", "runtime is NULL");
    expect(weft_module_create(rt, NULL, 1, &m), WEFT_EINVAL,
           "variants is NULL");
    expect(weft_module_create(rt, &v, 0, &m), WEFT_EINVAL, "nvariants is 0");
    expect(weft_module_create(rt, &v, 1, NULL), WEFT_EINVAL, "result is NULL");
    v.kind = (weft_source_kind)99;
    expect(weft_module_create(rt, &v, 1, &m), WEFT_EINVAL, "variant 0",
           "unknown kind 99");
    v.kind = (weft_source_kind)0;
    expect(weft_module_create(rt, &v, 1, &m), WEFT_EINVAL, "unknown kind 0");
    v.kind = WEFT_SOURCE_PORTABLE;
    v.data = NULL;
    expect(weft_module_create(rt, &v, 1, &m), WEFT_EINVAL, "variant 0 (v.cl)",
           "no data");
    v.kind = WEFT_SOURCE_HOST;
    v.data = &v;
    v.size = 0;
    expect(weft_module_create(rt, &v, 1, &m), WEFT_EINVAL, "variant 0",
           "length in size");
    assert_null(m);
    expect(weft_module_create_portable(rt, NULL, NULL, &m), WEFT_EINVAL,
           "weft_module_create_portable", "source is NULL");
    expect(weft_module_create_portable(NULL, "x", NULL, &m), WEFT_EINVAL,
           "runtime is NULL");
    assert_null(m);
    assert_int_equal(weft_module_destroy(NULL), 0);

    /* Host kernel tables: the host and sim drivers check them. */
    {
        static const weft_param_type bad_type[] = {WEFT_PARAM_BUFFER,
                                                   (weft_param_type)42};
        static const weft_param_type bytes_type[] = {WEFT_PARAM_BYTES};
        weft_host_kernel t = {"bad", wt_host_addone, 2,   bad_type,
                              NULL,  NULL,           NULL};
        weft_module_source hv = {WEFT_SOURCE_HOST, &t, 1, NULL, "table"};

        if (strcmp(wt_device(&devs, 0)->drv->name, "opencl") == 0) {
            expect(weft_module_create(rt, &hv, 1, &m), WEFT_ENODEV,
                   "weft_module_create: none of the 1 variants fits");
        } else {
            expect(weft_module_create(rt, &hv, 1, &m), WEFT_EINVAL, "table",
                   "parameter 1 of bad has an unknown type 42");
            t.params = NULL;
            expect(weft_module_create(rt, &hv, 1, &m), WEFT_EINVAL,
                   "bad has 2 parameters but no types");
            t.params = bytes_type;
            t.nparams = 1;
            expect(weft_module_create(rt, &hv, 1, &m), WEFT_EINVAL,
                   "parameter 0 of bad is BYTES without a size");
        }
        assert_null(m);
    }

    expect(weft_module_get_kernel(NULL, "advance", &k), WEFT_EINVAL,
           "weft_module_get_kernel", "module is NULL");
    expect(weft_module_get_kernel(mod, NULL, &k), WEFT_EINVAL, "name is NULL");
    expect(weft_module_get_kernel(mod, "advance", NULL), WEFT_EINVAL,
           "result is NULL");
    expect(weft_module_get_kernel(mod, "nosuch", &k), WEFT_ENOTFOUND,
           "'nosuch'");
    expect(weft_module_get_kernel(mod, "", &k), WEFT_EINVAL,
           "weft_module_get_kernel: name is empty");
    assert_null(k);
    check(weft_module_get_kernel(mod, "advance", &k));
    assert_ptr_equal(k, k_advance);

    assert_int_equal(weft_kernel_supports(NULL, weft_runtime_device(rt, 0)), 0);
    assert_int_equal(weft_kernel_supports(k_advance, NULL), 0);
    assert_int_equal(
        weft_kernel_supports(k_advance, weft_runtime_device(rt_b, 0)), 0);
    assert_int_equal(
        weft_kernel_supports(k_advance, weft_runtime_device(rt, 0)), 1);
    assert_null(weft_kernel_name(NULL));
    assert_string_equal(weft_kernel_name(k_advance), "advance");
    {
        weft_param_info info = {WEFT_PARAM_F64, 5};
        unsigned n = 7;

        expect(weft_kernel_param_count(NULL, &n), WEFT_EINVAL,
               "weft_kernel_param_count: kernel is NULL");
        expect(weft_kernel_param_count(k_advance, NULL), WEFT_EINVAL,
               "count is NULL");
        assert_int_equal(n, 7);
        expect(weft_kernel_param_info(NULL, 0, &info), WEFT_EINVAL,
               "weft_kernel_param_info: kernel is NULL");
        expect(weft_kernel_param_info(k_advance, 0, NULL), WEFT_EINVAL,
               "info is NULL");
        check(weft_kernel_param_count(k_advance, &n));
        expect(weft_kernel_param_info(k_advance, n, &info), WEFT_ERANGE,
               "advance");
        assert_int_equal(info.type, WEFT_PARAM_F64);
        assert_int_equal(info.size, 5);
        check(weft_kernel_param_info(k_advance, 0, &info));
        assert_int_not_equal(info.type, WEFT_PARAM_F64);
    }
    graph_works();
}

/* ---- buffers ----------------------------------------------------------- */

static void test_buffer_bad_input(void **state)
{
    weft_buffer *b = NULL, *v = NULL, *w = NULL;
    uint32_t host[N];

    (void)state;
    fill_pattern(fx.x, 3);
    expect(weft_buffer_create(NULL, 64, &b), WEFT_EINVAL, "weft_buffer_create",
           "runtime is NULL");
    expect(weft_buffer_create(rt, 64, NULL), WEFT_EINVAL, "weft_buffer_create",
           "result is NULL");
    expect(weft_buffer_create(rt, 0, &b), WEFT_EINVAL, "weft_buffer_create",
           "size 0");
    expect(weft_buffer_create(rt, SIZE_MAX, &b), WEFT_ENOMEM,
           "weft_buffer_create", "more than any allocation");
    expect(weft_buffer_wrap(rt, host, SIZE_MAX / 2 + 1, &b), WEFT_ENOMEM,
           "weft_buffer_wrap", "more than any allocation");
    expect(weft_buffer_wrap(rt, NULL, 64, &b), WEFT_EINVAL, "weft_buffer_wrap",
           "host memory is NULL");
    expect(weft_buffer_wrap(rt, host, 0, &b), WEFT_EINVAL, "size 0");
    expect(weft_buffer_wrap(NULL, host, 64, &b), WEFT_EINVAL,
           "runtime is NULL");
    expect(weft_buffer_wrap(rt, host, 64, NULL), WEFT_EINVAL, "result is NULL");
    assert_null(b);

    expect(weft_buffer_view(NULL, 0, 4, &v), WEFT_EINVAL, "weft_buffer_view",
           "parent is NULL");
    expect(weft_buffer_view(fx.x, 0, 4, NULL), WEFT_EINVAL, "result is NULL");
    expect(weft_buffer_view(fx.x, N * 4 + 1, 0, &v), WEFT_ERANGE,
           "weft_buffer_view", "past the end");
    expect(weft_buffer_view(fx.x, SIZE_MAX, 4, &v), WEFT_ERANGE,
           "weft_buffer_view");
    expect(weft_buffer_view(fx.x, SIZE_MAX, WEFT_WHOLE, &v), WEFT_ERANGE,
           "past the end");
    expect(weft_buffer_view(fx.x, 8, SIZE_MAX - 4, &v), WEFT_ERANGE, "outside");
    expect(weft_buffer_view(fx.x, 0, N * 4 + 1, &v), WEFT_ERANGE, "outside");
    expect(weft_buffer_view(fx.x, 8, 0, &v), WEFT_EINVAL, "empty view");
    expect(weft_buffer_view(fx.x, N * 4, WEFT_WHOLE, &v), WEFT_EINVAL,
           "empty view");
    assert_null(v);
    /* The fixture graph names x: destroying it is refused (weft.h). */
    expect(weft_buffer_destroy(fx.x), WEFT_EBUSY, "weft_buffer_destroy",
           "is used by 2 accesses of live graphs");
    check(weft_buffer_view(fx.x, 16, WEFT_WHOLE, &v));
    assert_int_equal(weft_buffer_size(v), N * 4 - 16);
    /* A view's range is checked against the view. */
    expect(weft_buffer_view(v, N * 4 - 8, 4, &w), WEFT_ERANGE, "view");
    expect(weft_buffer_destroy(fx.x), WEFT_EBUSY, "weft_buffer_destroy",
           "live views");
    check(weft_buffer_destroy(v));
    assert_int_equal(weft_buffer_destroy(NULL), 0);
    assert_int_equal(weft_buffer_size(NULL), 0);
    buffer_holds(fx.x, 3);
    graph_works();
}

/* Device memory of the program's: wrapping, addresses, marks. */
static void test_devmem_bad_input(void **state)
{
    const weft_device *d = weft_runtime_device(rt, 0);
    const weft_device *other = weft_runtime_device(rt_b, 0);
    weft_device_address a;
    weft_buffer *b = NULL;
    uint32_t host[N];
    void *p;

    (void)state;
    fill_pattern(fx.x, 5);
    expect(weft_device_native(NULL, d, &p, NULL), WEFT_EINVAL,
           "weft_device_native", "runtime is NULL");
    expect(weft_device_native(rt, NULL, &p, NULL), WEFT_EINVAL,
           "device is NULL");
    expect(weft_device_native(rt, d, NULL, NULL), WEFT_EINVAL, "both NULL");
    expect(weft_device_native(rt, other, &p, NULL), WEFT_EINVAL,
           "not a device of the runtime");
    check(weft_device_native(rt, d, &p, NULL)); /* and it still works */
    expect(weft_buffer_wrap_device(NULL, d, 1, 0, 64, &b), WEFT_EINVAL,
           "weft_buffer_wrap_device", "runtime is NULL");
    expect(weft_buffer_wrap_device(rt, d, 1, 0, 64, NULL), WEFT_EINVAL,
           "result is NULL");
    expect(weft_buffer_wrap_device(rt, NULL, 1, 0, 64, &b), WEFT_EINVAL,
           "device is NULL");
    expect(weft_buffer_wrap_device(rt, other, 1, 0, 64, &b), WEFT_EINVAL,
           "not a device of the runtime");
    expect(weft_buffer_wrap_device(rt, d, 0, 0, 64, &b), WEFT_EINVAL,
           "the handle is 0");
    expect(weft_buffer_wrap_device(rt, d, (uintptr_t)host, 0, 0, &b),
           WEFT_EINVAL, "size 0");
    expect(weft_buffer_wrap_device(rt, d, (uintptr_t)host, 0, WEFT_WHOLE, &b),
           WEFT_EINVAL, "WEFT_WHOLE");
    assert_null(b);

    expect(weft_buffer_device_address(fx.x, d, 0, 4, NULL), WEFT_EINVAL,
           "weft_buffer_device_address", "result is NULL");
    expect(weft_buffer_device_address(NULL, d, 0, 4, &a), WEFT_EINVAL,
           "buffer is NULL");
    expect(weft_buffer_device_address(fx.x, NULL, 0, 4, &a), WEFT_EINVAL,
           "device is NULL");
    expect(weft_buffer_device_address(fx.x, other, 0, 4, &a), WEFT_EINVAL,
           "not a device");
    expect(weft_buffer_device_address(fx.x, d, N * 4 + 1, 0, &a), WEFT_ERANGE,
           "past the end");
    expect(weft_buffer_device_address(fx.x, d, 8, SIZE_MAX - 4, &a),
           WEFT_ERANGE, "outside");
    check(weft_buffer_map(fx.x, 0, 4, WEFT_READ, &p));
    expect(weft_buffer_device_address(fx.x, d, 0, 4, &a), WEFT_EBUSY, "mapped");
    expect(weft_buffer_mark_device_written(fx.x, d, 0, 4), WEFT_EBUSY,
           "mapped");
    check(weft_buffer_unmap(fx.x, p));

    expect(weft_buffer_mark_device_written(NULL, d, 0, 4), WEFT_EINVAL,
           "weft_buffer_mark_device_written", "buffer is NULL");
    expect(weft_buffer_mark_device_written(fx.x, NULL, 0, 4), WEFT_EINVAL,
           "device is NULL");
    expect(weft_buffer_mark_device_written(fx.x, other, 0, 4), WEFT_EINVAL,
           "not a device");
    expect(weft_buffer_mark_device_written(fx.x, d, 4, N * 4), WEFT_ERANGE,
           "outside");
    check(weft_buffer_create(rt, 4096, &b));
    expect(weft_buffer_mark_device_written(b, d, 0, 64), WEFT_ESTATE,
           "no copy of [0, 0 + 64) is held");
    check(weft_buffer_destroy(b));
    /* None of it touched x; the calls that work, work. */
    buffer_holds(fx.x, 5);
    check(weft_buffer_device_address(fx.x, d, 4, WEFT_WHOLE, &a));
    check(weft_buffer_mark_device_written(fx.x, d, 4, 0));
    (void)host;
    buffer_holds(fx.x, 5);
    graph_works();
}

/*
 * Memory shared between processes: bad arguments first, then WEFT_ENOTSUP
 * on every driver this test runs on (host, sim, OpenCL); nothing changes.
 */
static void test_ipc_bad_input(void **state)
{
    const weft_device *d = weft_runtime_device(rt, 0);
    const weft_device *other = weft_runtime_device(rt_b, 0);
    weft_ipc_handle h;
    uint64_t addr = 0;

    (void)state;
    fill_pattern(fx.x, 6);
    memset(&h, 0, sizeof h);
    expect(weft_buffer_export(fx.x, d, 0, 4, WEFT_READ, NULL), WEFT_EINVAL,
           "weft_buffer_export", "result is NULL");
    expect(weft_buffer_export(NULL, d, 0, 4, WEFT_READ, &h), WEFT_EINVAL,
           "buffer is NULL");
    expect(weft_buffer_export(fx.x, NULL, 0, 4, WEFT_READ, &h), WEFT_EINVAL,
           "device is NULL");
    expect(weft_buffer_export(fx.x, other, 0, 4, WEFT_READ, &h), WEFT_EINVAL,
           "not a device");
    expect(weft_buffer_export(fx.x, d, 0, 4, (weft_access)9, &h), WEFT_EINVAL,
           "unknown mode 9");
    expect(weft_buffer_export(fx.x, d, 0, 0, WEFT_WRITE, &h), WEFT_EINVAL,
           "size is 0");
    expect(weft_buffer_export(fx.x, d, 0, 4, WEFT_READ, &h), WEFT_ENOTSUP,
           "weft_buffer_export", "shares no memory between processes");
    expect(weft_buffer_export_release(NULL, d, 0, 4), WEFT_EINVAL,
           "weft_buffer_export_release", "buffer is NULL");
    expect(weft_buffer_export_release(fx.x, NULL, 0, 4), WEFT_EINVAL,
           "device is NULL");
    expect(weft_buffer_export_release(fx.x, other, 0, 4), WEFT_EINVAL,
           "not a device");
    expect(weft_buffer_export_release(fx.x, d, 0, 4), WEFT_ENOTSUP,
           "shares no memory between processes");

    expect(weft_ipc_open(NULL, d, &h, &addr), WEFT_EINVAL, "weft_ipc_open",
           "runtime is NULL");
    expect(weft_ipc_open(rt, d, NULL, &addr), WEFT_EINVAL, "handle is NULL");
    expect(weft_ipc_open(rt, d, &h, NULL), WEFT_EINVAL, "address is NULL");
    expect(weft_ipc_open(rt, NULL, &h, &addr), WEFT_EINVAL, "device is NULL");
    expect(weft_ipc_open(rt, other, &h, &addr), WEFT_EINVAL, "not a device");
    expect(weft_ipc_open(rt, d, &h, &addr), WEFT_ENOTSUP,
           "shares no memory between processes");
    assert_int_equal(addr, 0);
    expect(weft_ipc_close(NULL, d, 1), WEFT_EINVAL, "weft_ipc_close",
           "runtime is NULL");
    expect(weft_ipc_close(rt, NULL, 1), WEFT_EINVAL, "device is NULL");
    expect(weft_ipc_close(rt, other, 1), WEFT_EINVAL, "not a device");
    expect(weft_ipc_close(rt, d, 1), WEFT_EINVAL,
           "no address that weft_ipc_open returned");
    /* None of it touched x. */
    buffer_holds(fx.x, 6);
    graph_works();
}

/* Every (offset, size) of the synchronous helpers, by one rule (weft.h). */
static void test_buffer_ranges(void **state)
{
    const size_t size = N * sizeof(uint32_t);
    uint32_t tmp[N + 4], pat = 0xabababab;
    void *p = NULL, *q = NULL;
    weft_buffer *w;

    (void)state;
    fill_pattern(fx.x, 11);
    memset(tmp, 0, sizeof tmp);

    /* NULL handles and pointers. */
    expect(weft_buffer_write(NULL, 0, tmp, 4), WEFT_EINVAL, "weft_buffer_write",
           "buffer is NULL");
    expect(weft_buffer_write(fx.x, 0, NULL, 4), WEFT_EINVAL,
           "weft_buffer_write", "source is NULL");
    expect(weft_buffer_read(NULL, 0, tmp, 4), WEFT_EINVAL, "weft_buffer_read",
           "buffer is NULL");
    expect(weft_buffer_read(fx.x, 0, NULL, 4), WEFT_EINVAL,
           "destination is NULL");
    expect(weft_buffer_fill(NULL, 0, 4, &pat, 4), WEFT_EINVAL,
           "weft_buffer_fill", "buffer is NULL");
    expect(weft_buffer_fill(fx.x, 0, 4, NULL, 4), WEFT_EINVAL,
           "pattern is NULL");
    expect(weft_buffer_map(NULL, 0, 4, WEFT_READ, &p), WEFT_EINVAL,
           "weft_buffer_map", "buffer is NULL");
    expect(weft_buffer_map(fx.x, 0, 4, WEFT_READ, NULL), WEFT_EINVAL,
           "result is NULL");
    expect(weft_buffer_unmap(NULL, p), WEFT_EINVAL, "weft_buffer_unmap",
           "buffer is NULL");
    expect(weft_buffer_sync_host(NULL), WEFT_EINVAL, "weft_buffer_sync_host",
           "buffer is NULL");
    expect(weft_buffer_invalidate(NULL, 0, 4), WEFT_EINVAL,
           "weft_buffer_invalidate", "buffer is NULL");

    /* Offsets past the end, SIZE_MAX, overflowing sums. */
    expect(weft_buffer_write(fx.x, size + 1, tmp, 0), WEFT_ERANGE,
           "weft_buffer_write", "past the end");
    expect(weft_buffer_write(fx.x, size - 4, tmp, 8), WEFT_ERANGE,
           "weft_buffer_write", "outside");
    expect(weft_buffer_write(fx.x, SIZE_MAX, tmp, 4), WEFT_ERANGE,
           "weft_buffer_write");
    expect(weft_buffer_write(fx.x, 8, tmp, SIZE_MAX - 4), WEFT_ERANGE,
           "weft_buffer_write");
    expect(weft_buffer_read(fx.x, size, tmp, 4), WEFT_ERANGE,
           "weft_buffer_read", "outside");
    expect(weft_buffer_read(fx.x, SIZE_MAX, tmp, WEFT_WHOLE), WEFT_ERANGE,
           "weft_buffer_read", "past the end");
    expect(weft_buffer_read(fx.x, 4, tmp, SIZE_MAX - 1), WEFT_ERANGE,
           "weft_buffer_read");
    expect(weft_buffer_fill(fx.x, size, 4, &pat, 4), WEFT_ERANGE,
           "weft_buffer_fill");
    expect(weft_buffer_fill(fx.x, SIZE_MAX - 3, 4, &pat, 4), WEFT_ERANGE,
           "weft_buffer_fill");
    expect(weft_buffer_fill(fx.x, SIZE_MAX - 3, WEFT_WHOLE, &pat, 4),
           WEFT_ERANGE, "weft_buffer_fill", "past the end");
    expect(weft_buffer_map(fx.x, size + 4, 0, WEFT_READ, &p), WEFT_ERANGE,
           "weft_buffer_map");
    expect(weft_buffer_map(fx.x, 4, SIZE_MAX - 1, WEFT_READ, &p), WEFT_ERANGE,
           "weft_buffer_map", "range [4, 4 + ");
    expect(weft_buffer_invalidate(fx.x, 0, 4), WEFT_EINVAL,
           "does not wrap user memory");

    /* Fill patterns and alignment; map modes. */
    expect(weft_buffer_fill(fx.x, 0, 4, &pat, 3), WEFT_EINVAL,
           "weft_buffer_fill", "pattern of 3 bytes");
    expect(weft_buffer_fill(fx.x, 0, 4, &pat, 0), WEFT_EINVAL,
           "pattern of 0 bytes");
    expect(weft_buffer_fill(fx.x, 2, 4, &pat, 4), WEFT_EINVAL,
           "offset 2 and size 4 are not multiples");
    expect(weft_buffer_fill(fx.x, 0, 6, &pat, 4), WEFT_EINVAL, "not multiples");
    expect(weft_buffer_map(fx.x, 0, 4, (weft_access)0, &p), WEFT_EINVAL,
           "weft_buffer_map", "unknown mode 0");
    expect(weft_buffer_map(fx.x, 0, 4, (weft_access)4, &p), WEFT_EINVAL,
           "unknown mode 4");
    assert_null(p);
    buffer_holds(fx.x, 11);

    /* Zero sizes are empty ranges, at any offset up to the end. */
    check(weft_buffer_write(fx.x, size, NULL, 0));
    check(weft_buffer_read(fx.x, 0, NULL, 0));
    check(weft_buffer_fill(fx.x, size, 0, &pat, 4));
    check(weft_buffer_map(fx.x, size, 0, WEFT_READ_WRITE, &p));
    check(weft_buffer_unmap(fx.x, p));
    p = NULL;
    buffer_holds(fx.x, 11);

    /* WEFT_WHOLE: from the offset to the end, everywhere. */
    memset(tmp, 0, sizeof tmp);
    check(weft_buffer_read(fx.x, 8, tmp, WEFT_WHOLE));
    assert_int_equal(tmp[0], 7 * 2 + 11);
    assert_int_equal(tmp[N - 3], 7 * (N - 1) + 11);
    assert_int_equal(tmp[N - 2], 0); /* size - 8 bytes, no more */
    check(weft_buffer_write(fx.x, 8, tmp, WEFT_WHOLE));
    check(weft_buffer_read(fx.x, size, tmp, WEFT_WHOLE)); /* 0 bytes */
    buffer_holds(fx.x, 11);

    /* One map at a time; unmap by the handle and pointer that mapped. */
    check(weft_buffer_map(fx.x, 4, WEFT_WHOLE, WEFT_READ, &p));
    assert_int_equal(*(uint32_t *)p, 7 + 11);
    expect(weft_buffer_map(fx.x, 0, 4, WEFT_READ, &q), WEFT_EBUSY,
           "weft_buffer_map", "one map at a time");
    assert_null(q);
    {
        weft_buffer *m;
        void *mp;

        check(weft_buffer_create(rt, 16, &m));
        check(weft_buffer_map(m, 0, WEFT_WHOLE, WEFT_WRITE, &mp));
        expect(weft_buffer_destroy(m), WEFT_EBUSY, "weft_buffer_destroy",
               "is mapped");
        check(weft_buffer_unmap(m, mp));
        check(weft_buffer_destroy(m));
    }
    expect(weft_buffer_unmap(fx.x, tmp), WEFT_EINVAL, "weft_buffer_unmap",
           "not the mapped pointer");
    expect(weft_buffer_unmap(fx.xb, p), WEFT_ESTATE, "not mapped");
    check(weft_buffer_unmap(fx.x, p));
    expect(weft_buffer_unmap(fx.x, p), WEFT_ESTATE, "not mapped");
    check(weft_buffer_sync_host(fx.x));
    buffer_holds(fx.x, 11);

    /* invalidate: the same rule on a wrapped buffer. */
    check(weft_buffer_wrap(rt, tmp, size, &w));
    expect(weft_buffer_invalidate(w, size + 1, 0), WEFT_ERANGE,
           "weft_buffer_invalidate", "past the end");
    expect(weft_buffer_invalidate(w, 4, SIZE_MAX - 2), WEFT_ERANGE,
           "weft_buffer_invalidate");
    check(weft_buffer_invalidate(w, 4, WEFT_WHOLE));
    check(weft_buffer_invalidate(w, size, 0));
    check(weft_buffer_destroy(w));
    graph_works();
}

/* ---- graphs ------------------------------------------------------------ */

static void test_graph_bad_input(void **state)
{
    weft_graph *g = NULL;

    (void)state;
    expect(weft_graph_create(NULL, &g), WEFT_EINVAL, "weft_graph_create",
           "runtime is NULL");
    expect(weft_graph_create(rt, NULL), WEFT_EINVAL, "weft_graph_create",
           "result is NULL");
    assert_null(g);
    assert_int_equal(weft_graph_destroy(NULL), 0);
    assert_int_equal(weft_graph_node_count(NULL), 0);
    assert_int_equal(weft_graph_edge_count(NULL), 0);
    assert_int_equal(weft_graph_edge_count(fx.g), 1);
    expect(weft_graph_write_dot(NULL, stdout), WEFT_EINVAL,
           "weft_graph_write_dot", "graph is NULL");
    expect(weft_graph_write_dot(fx.g, NULL), WEFT_EINVAL,
           "weft_graph_write_dot", "file is NULL");
    graph_works();
}

static void test_add_kernel_bad_input(void **state)
{
    const size_t size = N * sizeof(uint32_t);
    weft_arg a[4] = {advance_args(fx.x), weft_arg_u32(K), weft_arg_i64(N),
                     weft_arg_u32(0)};
    weft_arg b[3];
    weft_node node = 77;
    uint64_t blob = 0;

#define ADD(args, n)                                                           \
    weft_graph_add_kernel(fx.g, k_advance, weft_dims1(N), args, n, &node)
#define RESET() memcpy(b, a, sizeof b)
    (void)state;
    RESET();
    expect(weft_graph_add_kernel(NULL, k_advance, weft_dims1(N), b, 3, &node),
           WEFT_EINVAL, "weft_graph_add_kernel: graph is NULL");
    /* No node exists yet to be named: the message names none. */
    {
        weft_graph *g;

        check(weft_graph_create(rt, &g));
        expect(weft_graph_add_kernel(g, NULL, weft_dims1(N), b, 3, &node),
               WEFT_EINVAL, "weft_graph_add_kernel: kernel is NULL");
        assert_null(strstr(weft_last_error(), "node 0"));
        expect(weft_graph_add_kernel(g, k_advance, weft_dims1(0), b, 3, &node),
               WEFT_EINVAL,
               "weft_graph_add_kernel: the node being added (kernel "
               "advance): dims: empty grid");
        assert_null(strstr(weft_last_error(), "node 0"));
        assert_int_equal(weft_graph_node_count(g), 0);
        weft_graph_destroy(g);
    }
    expect(weft_graph_add_kernel(fx.g, NULL, weft_dims1(N), b, 3, &node),
           WEFT_EINVAL, "weft_graph_add_kernel: kernel is NULL");
    assert_null(strstr(weft_last_error(), "node 2"));
    expect(ADD(NULL, 3), WEFT_EINVAL, "(kernel advance)",
           "3 arguments but the array is NULL");

    /* Dims: any dimension empty. */
    expect(
        weft_graph_add_kernel(fx.g, k_advance, weft_dims2(N, 0), b, 3, &node),
        WEFT_EINVAL, "dims: empty grid of 64x0x1 items");
    expect(weft_graph_add_kernel(fx.g, k_advance, weft_dims3(N, 1, 0), b, 3,
                                 &node),
           WEFT_EINVAL, "empty grid of 64x1x0");

    /* Counts, kinds and types of the arguments. */
    expect(ADD(b, 2), WEFT_EARGS, "(kernel advance)",
           "2 arguments given, kernel advance takes 3");
    expect(ADD(a, 4), WEFT_EARGS, "4 arguments given");
    b[1] = weft_arg_f32(5.0f);
    if (types_known(k_advance))
        expect(ADD(b, 3), WEFT_EARGS,
               "weft_graph_add_kernel: the node being added (kernel advance)",
               "argument 1 is f32, parameter 1 of advance takes u32");
    else
        printf("# types of advance unknown on this device: f32 for u32 "
               "not checked\n");
    RESET();
    b[1] = weft_arg_i32(5);
    if (types_known(k_advance))
        expect(ADD(b, 3), WEFT_EARGS, "argument 1 is i32",
               "parameter 1 of advance takes u32");
    RESET();
    b[2] = weft_arg_u64(N);
    if (types_known(k_advance))
        expect(ADD(b, 3), WEFT_EARGS, "argument 2 is u64", "takes i64");
    RESET();
    b[2] = weft_arg_f64(N);
    if (types_known(k_advance))
        expect(ADD(b, 3), WEFT_EARGS, "argument 2 is f64", "takes i64");
    RESET();
    b[2] = weft_arg_u32(N);
    expect(ADD(b, 3), WEFT_EARGS, "argument 2");
    RESET();
    b[1] = weft_arg_bytes(&blob, 4);
    expect(ADD(b, 3), WEFT_EARGS, "argument 1");
    RESET();
    b[1] = weft_arg_i64(K); /* 8 bytes for 4 */
    expect(ADD(b, 3), WEFT_EARGS, "argument 1");
    RESET();
    b[0] = weft_arg_u64(0); /* a value for a buffer */
    expect(ADD(b, 3), WEFT_EARGS, "argument 0 is a u64",
           "parameter 0 of advance a buffer");
    RESET();
    b[1] = advance_args(fx.x); /* a buffer for a value */
    expect(ADD(b, 3), WEFT_EARGS, "argument 1 is a buffer");
    RESET();
    b[1] = weft_arg_local(16);
    expect(ADD(b, 3), WEFT_EARGS, "argument 1 is a local");
    RESET();
    b[1].type = (weft_param_type)99;
    expect(ADD(b, 3), WEFT_EARGS, "argument 1 has unknown type 99");
    RESET();
    b[1].type = (weft_param_type)0;
    expect(ADD(b, 3), WEFT_EARGS, "argument 1 has unknown type 0");
    RESET();
    b[1] = weft_arg_u32(K);
    b[1].size = 2; /* a scalar whose size is not its type's */
    expect(ADD(b, 3), WEFT_EARGS, "argument 1 is u32 but has 2 bytes");
    RESET();
    b[1] = weft_arg_bytes(NULL, 4);
    expect(ADD(b, 3), WEFT_EINVAL, "argument 1: bytes pointer is NULL");
    RESET();
    b[1] = weft_arg_bytes(&blob, 0);
    expect(ADD(b, 3), WEFT_EARGS, "argument 1: bytes of size 0");
    RESET();
    b[1] = weft_arg_local(0);
    expect(ADD(b, 3), WEFT_EARGS, "argument 1: local scratch of 0 bytes");

    /* Buffer arguments: NULL, access modes, ranges. */
    RESET();
    b[0].buffer = NULL;
    expect(ADD(b, 3), WEFT_EINVAL,
           "(kernel advance): argument 0: buffer is "
           "NULL");
    RESET();
    b[0].access = (weft_access)0;
    expect(ADD(b, 3), WEFT_EINVAL, "argument 0: unknown access mode 0");
    RESET();
    b[0].access = (weft_access)7;
    expect(ADD(b, 3), WEFT_EINVAL, "argument 0: unknown access mode 7");
    RESET();
    b[0].offset = size + 4;
    b[0].size = 0;
    expect(ADD(b, 3), WEFT_ERANGE,
           "(kernel advance): argument 0: offset 260 is past the end");
    RESET();
    b[0].offset = SIZE_MAX;
    b[0].size = WEFT_WHOLE;
    expect(ADD(b, 3), WEFT_ERANGE, "argument 0: offset", "past the end");
    RESET();
    b[0].offset = 8;
    b[0].size = SIZE_MAX - 4;
    expect(ADD(b, 3), WEFT_ERANGE, "argument 0: range [8, 8 + ");
    RESET();
    b[0].offset = 4;
    b[0].size = size;
    expect(ADD(b, 3), WEFT_ERANGE, "argument 0: range [4, 4 + 256)",
           "outside buffer");
    assert_int_equal(node, 77); /* no failed call wrote it */
    graph_works();

    /* WEFT_WHOLE is the whole buffer; node gets the new node's index. */
    RESET();
    b[0].size = WEFT_WHOLE;
    check(ADD(b, 3));
    assert_int_equal(node, 2);
#undef ADD
#undef RESET
}

/*
 * weft_graph_add_kernels: a refused node (each of add_kernel's checks)
 * fails the call naming its position and adds none of the nodes; valid
 * ones are added in order.
 */
static void test_add_kernels_bad_input(void **state)
{
    weft_arg a[3] = {advance_args(fx.x), weft_arg_u32(K), weft_arg_i64(N)};
    weft_arg bad[3] = {advance_args(fx.x), weft_arg_u32(K), weft_arg_i64(N)};
    weft_kernel_node nodes[3] = {
        {a, 3, k_advance, weft_dims1(N)},
        {a, 3, k_advance, weft_dims1(N)},
        {a, 3, k_advance, weft_dims1(N)},
    };
    unsigned added = 77;

    (void)state;
    expect(weft_graph_add_kernels(NULL, nodes, 3, 0, &added), WEFT_EINVAL,
           "weft_graph_add_kernels: graph is NULL");
    assert_int_equal(added, 0);
    added = 77;
    expect(weft_graph_add_kernels(fx.g, NULL, 3, 0, &added), WEFT_EINVAL,
           "weft_graph_add_kernels: 3 nodes but the array is NULL");
    assert_int_equal(added, 0);
    expect(weft_graph_add_kernels(fx.g, nodes, 3, sizeof nodes[0] - 8, &added),
           WEFT_EINVAL,
           "weft_graph_add_kernels: stride 40 is below the 48 "
           "bytes of a weft_kernel_node");
    expect(weft_graph_add_kernels(fx.g, nodes, 3, sizeof nodes[0] + 4, &added),
           WEFT_EINVAL, "stride 52", "no multiple of its alignment 8");
    nodes[1].kernel = NULL;
    expect(weft_graph_add_kernels(fx.g, nodes, 3, 0, &added), WEFT_EINVAL,
           "weft_graph_add_kernels: nodes[1]: kernel is NULL");
    nodes[1].kernel = k_advance_b;
    expect(weft_graph_add_kernels(fx.g, nodes, 3, 0, &added), WEFT_EINVAL,
           "weft_graph_add_kernels: nodes[1]: the node being added (kernel "
           "advance): the kernel belongs to another runtime");
    nodes[1].kernel = k_advance;
    nodes[2].dims = weft_dims2(N, 0);
    expect(weft_graph_add_kernels(fx.g, nodes, 3, 0, &added), WEFT_EINVAL,
           "nodes[2]: the node being added (kernel advance): dims: empty "
           "grid of 64x0x1 items");
    nodes[2].dims = weft_dims1(N);
    nodes[2].args = NULL;
    expect(weft_graph_add_kernels(fx.g, nodes, 3, 0, NULL), WEFT_EINVAL,
           "nodes[2]", "3 arguments but the array is NULL");
    nodes[2].args = bad;
    nodes[2].nargs = 2;
    expect(weft_graph_add_kernels(fx.g, nodes, 3, 0, NULL), WEFT_EARGS,
           "nodes[2]", "2 arguments given, kernel advance takes 3");
    nodes[2].nargs = 3;
    bad[0].offset = 4;
    expect(weft_graph_add_kernels(fx.g, nodes, 3, 0, NULL), WEFT_ERANGE,
           "weft_graph_add_kernels: nodes[2]: the node being added (kernel "
           "advance): argument 0: range [4, 4 + 256)");
    bad[0] = advance_args(fx.xb);
    expect(weft_graph_add_kernels(fx.g, nodes, 3, 0, NULL), WEFT_EINVAL,
           "nodes[2]", "argument 0: the buffer belongs to another runtime");
    bad[0] = advance_args(fx.x);
    bad[1] = weft_arg_local(0);
    expect(weft_graph_add_kernels(fx.g, nodes, 3, 0, &added), WEFT_EARGS,
           "nodes[2]", "argument 1: local scratch of 0 bytes");
    assert_int_equal(added, 0);
    graph_works(); /* none of the nodes was added */

    /* n 0 adds nothing; valid nodes are the graph's next ones. */
    check(weft_graph_add_kernels(fx.g, NULL, 0, 0, &added));
    assert_int_equal(added, 0);
    bad[1] = weft_arg_u32(K);
    check(weft_graph_add_kernels(fx.g, nodes, 3, 0, &added));
    assert_int_equal(added, 3);
    assert_int_equal(weft_graph_node_count(fx.g), 5);
}

static void host_task(void *const *ptrs, void *user)
{
    (void)ptrs;
    (void)user;
}

static int host_status(void *const *ptrs, void *user)
{
    (void)ptrs;
    (void)user;
    return 0;
}

static void map_fn(void *ptr, size_t size, void *user)
{
    (void)ptr;
    (void)size;
    (void)user;
}

static void test_add_node_bad_input(void **state)
{
    const size_t size = N * sizeof(uint32_t);
    weft_access_desc acc[2] = {weft_access_range(fx.x, 0, 4, WEFT_READ),
                               weft_access_range(fx.x, 0, 4, WEFT_READ)};
    uint32_t host[N], pat = 0;
    weft_buffer *other;
    weft_node node = 77;

    (void)state;
    check(weft_buffer_create(rt, size, &other));
    expect(weft_graph_add_write(NULL, fx.x, 0, host, 4, &node), WEFT_EINVAL,
           "weft_graph_add_write: graph is NULL");
    expect(weft_graph_add_write(fx.g, NULL, 0, host, 4, &node), WEFT_EINVAL,
           "weft_graph_add_write: the node being added (write): dst: buffer "
           "is NULL");
    expect(weft_graph_add_write(fx.g, fx.x, size + 1, host, 0, &node),
           WEFT_ERANGE, "weft_graph_add_write",
           "dst: offset 257 is past the end");
    expect(weft_graph_add_write(fx.g, fx.x, SIZE_MAX, host, WEFT_WHOLE, &node),
           WEFT_ERANGE, "dst: offset", "past the end");
    expect(weft_graph_add_write(fx.g, fx.x, 16, host, SIZE_MAX - 8, &node),
           WEFT_ERANGE, "dst: range [16, 16 + ");

    expect(weft_graph_add_read(NULL, fx.x, 0, host, 4, &node), WEFT_EINVAL,
           "weft_graph_add_read: graph is NULL");
    expect(weft_graph_add_read(fx.g, NULL, 0, host, 4, &node), WEFT_EINVAL,
           "weft_graph_add_read: the node being added (read): src: buffer "
           "is NULL");
    expect(weft_graph_add_read(fx.g, fx.x, 4, host, size, &node), WEFT_ERANGE,
           "weft_graph_add_read", "src: range [4, 4 + 256)");

    expect(weft_graph_add_copy(NULL, other, 0, fx.x, 0, 4, &node), WEFT_EINVAL,
           "weft_graph_add_copy: graph is NULL");
    expect(weft_graph_add_copy(fx.g, NULL, 0, fx.x, 0, 4, &node), WEFT_EINVAL,
           "weft_graph_add_copy: the node being added (copy): dst: buffer is "
           "NULL");
    expect(weft_graph_add_copy(fx.g, other, 0, NULL, 0, 4, &node), WEFT_EINVAL,
           "(copy): src: buffer is NULL");
    expect(weft_graph_add_copy(fx.g, other, 0, fx.x, 0, WEFT_WHOLE, &node),
           WEFT_EINVAL, "(copy): size: a copy needs an explicit size");
    expect(weft_graph_add_copy(fx.g, other, size - 4, fx.x, 0, 8, &node),
           WEFT_ERANGE, "(copy): dst: range");
    expect(weft_graph_add_copy(fx.g, other, 0, fx.x, SIZE_MAX, 8, &node),
           WEFT_ERANGE, "(copy): src: offset");
    expect(weft_graph_add_copy(fx.g, fx.x, 0, fx.x, 8, 16, &node), WEFT_EINVAL,
           "(copy): source [8, 24) and destination [0, 16) overlap");

    expect(weft_graph_add_fill(NULL, fx.x, 0, 4, &pat, 4, &node), WEFT_EINVAL,
           "weft_graph_add_fill: graph is NULL");
    expect(weft_graph_add_fill(fx.g, NULL, 0, WEFT_WHOLE, &pat, 4, &node),
           WEFT_EINVAL,
           "weft_graph_add_fill: the node being added (fill): "
           "dst: buffer is NULL");
    expect(weft_graph_add_fill(fx.g, fx.x, 0, 4, NULL, 4, &node), WEFT_EINVAL,
           "(fill): fill: pattern is NULL");
    expect(weft_graph_add_fill(fx.g, fx.x, 0, 4, &pat, 8, &node), WEFT_EINVAL,
           "pattern of 8 bytes");
    expect(weft_graph_add_fill(fx.g, fx.x, 2, 4, &pat, 4, &node), WEFT_EINVAL,
           "not multiples");
    expect(weft_graph_add_fill(fx.g, fx.x, size, 4, &pat, 4, &node),
           WEFT_ERANGE, "(fill): dst: range");
    expect(weft_graph_add_fill(fx.g, fx.x, SIZE_MAX - 3, WEFT_WHOLE, &pat, 4,
                               &node),
           WEFT_ERANGE, "(fill): dst: offset");

    expect(weft_graph_add_map(NULL, fx.x, 0, 4, WEFT_READ, map_fn, NULL, &node),
           WEFT_EINVAL, "weft_graph_add_map: graph is NULL");
    expect(weft_graph_add_map(fx.g, NULL, 0, 4, WEFT_READ, map_fn, NULL, &node),
           WEFT_EINVAL,
           "weft_graph_add_map: the node being added (map): "
           "buf: buffer is NULL");
    expect(weft_graph_add_map(fx.g, fx.x, 0, 4, WEFT_READ, NULL, NULL, &node),
           WEFT_EINVAL, "(map): fn is NULL");
    expect(weft_graph_add_map(fx.g, fx.x, 0, 4, (weft_access)0, map_fn, NULL,
                              &node),
           WEFT_EINVAL, "(map): mode: unknown access mode 0");
    expect(weft_graph_add_map(fx.g, fx.x, 0, 4, (weft_access)-1, map_fn, NULL,
                              &node),
           WEFT_EINVAL, "unknown access mode -1");
    expect(
        weft_graph_add_map(fx.g, fx.x, size, 1, WEFT_READ, map_fn, NULL, &node),
        WEFT_ERANGE, "(map): buf: range");

    expect(weft_graph_add_host(NULL, host_task, NULL, acc, 2, &node),
           WEFT_EINVAL, "weft_graph_add_host: graph is NULL");
    expect(weft_graph_add_host(fx.g, NULL, NULL, acc, 2, &node), WEFT_EINVAL,
           "weft_graph_add_host: the node being added (host): fn is NULL");
    expect(weft_graph_add_host(fx.g, host_task, NULL, NULL, 2, &node),
           WEFT_EINVAL, "(host): 2 accesses but the array is NULL");
    acc[1].buffer = NULL;
    expect(weft_graph_add_host(fx.g, host_task, NULL, acc, 2, &node),
           WEFT_EINVAL, "(host): access 1: buffer is NULL");
    acc[1].buffer = fx.x;
    acc[1].mode = (weft_access)9;
    expect(weft_graph_add_host(fx.g, host_task, NULL, acc, 2, &node),
           WEFT_EINVAL, "(host): access 1: unknown mode 9");
    acc[1].mode = WEFT_WRITE;
    acc[1].offset = SIZE_MAX;
    expect(weft_graph_add_host(fx.g, host_task, NULL, acc, 2, &node),
           WEFT_ERANGE, "(host): access 1: offset");
    acc[1].offset = 0;
    acc[1].size = size + 1;
    expect(weft_graph_add_host(fx.g, host_task, NULL, acc, 2, &node),
           WEFT_ERANGE, "(host): access 1: range [0, 0 + 257)");
    expect(weft_graph_add_host_status(NULL, host_status, NULL, acc, 2, &node),
           WEFT_EINVAL, "weft_graph_add_host_status: graph is NULL");
    expect(weft_graph_add_host_status(fx.g, NULL, NULL, acc, 2, &node),
           WEFT_EINVAL,
           "weft_graph_add_host_status: the node being added (host): fn is "
           "NULL");
    expect(weft_graph_add_host_status(fx.g, host_status, NULL, NULL, 2, &node),
           WEFT_EINVAL, "(host): 2 accesses but the array is NULL");
    expect(weft_graph_add_host_status(fx.g, host_status, NULL, acc, 2, &node),
           WEFT_ERANGE, "weft_graph_add_host_status",
           "(host): access 1: range [0, 0 + 257)");
    expect(weft_graph_add_host_poll(NULL, host_status, NULL, acc, 2, &node),
           WEFT_EINVAL, "weft_graph_add_host_poll: graph is NULL");
    expect(weft_graph_add_host_poll(fx.g, NULL, NULL, acc, 2, &node),
           WEFT_EINVAL,
           "weft_graph_add_host_poll: the node being added (host): fn is "
           "NULL");
    expect(weft_graph_add_host_poll(fx.g, host_status, NULL, NULL, 2, &node),
           WEFT_EINVAL, "(host): 2 accesses but the array is NULL");
    expect(weft_graph_add_host_poll(fx.g, host_status, NULL, acc, 2, &node),
           WEFT_ERANGE, "weft_graph_add_host_poll",
           "(host): access 1: range [0, 0 + 257)");
    expect(weft_graph_add_empty(NULL, &node), WEFT_EINVAL,
           "weft_graph_add_empty: graph is NULL");
    assert_int_equal(node, 77);
    assert_int_equal(weft_graph_edge_count(fx.g), 1);
    graph_works();

    /* Zero sizes and WEFT_WHOLE are accepted where the rule says. */
    {
        weft_graph *g;
        weft_exec *e;

        check(weft_graph_create(rt, &g));
        check(weft_graph_add_write(g, fx.x, size, NULL, 0, NULL));
        check(weft_graph_add_fill(g, fx.x, 0, WEFT_WHOLE, &pat, 4, NULL));
        check(weft_graph_add_read(g, fx.x, 4, host, WEFT_WHOLE, NULL));
        check(weft_graph_add_copy(g, other, 0, fx.x, 0, 0, NULL));
        acc[1].size = WEFT_WHOLE;
        check(weft_graph_add_host(g, host_task, NULL, acc, 2, NULL));
        check(weft_graph_add_map(g, fx.x, size, 0, WEFT_READ, map_fn, NULL,
                                 NULL));
        check(weft_graph_add_empty(g, &node));
        assert_int_equal(node, 6);
        host[N - 1] = 12345;
        check(weft_graph_instantiate(g, NULL, &e));
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        check(weft_exec_destroy(e));
        assert_int_equal(host[0], 0);
        assert_int_equal(host[N - 2], 0);
        assert_int_equal(host[N - 1], 12345); /* size - 4 bytes were read */
        weft_graph_destroy(g);
    }
    check(weft_buffer_destroy(other));
}

static int native_probe(const weft_native_ctx *c, void *user);

/*
 * Blocks: the four block transfer nodes, and bad blocks wherever a block
 * is given (kernel arguments, host task and native node accesses). x is
 * seen as 16 rows of 16 bytes.
 */
static void test_add_block_bad_input(void **state)
{
    const size_t size = N * sizeof(uint32_t);
    weft_block ok = weft_block2(4, 8, 4, 16), bad;
    weft_native_impl im = {"host", 0, native_probe};
    weft_access_desc acc[2] = {weft_access_range(fx.x, 0, 4, WEFT_READ),
                               weft_access_block(fx.x, ok, WEFT_WRITE)};
    weft_arg a[3] = {weft_arg_block(fx.x, ok, WEFT_READ_WRITE), weft_arg_u32(K),
                     weft_arg_i64(N)};
    unsigned nodes = weft_graph_node_count(fx.g);
    unsigned char host[512];
    uint32_t pat = 0;
    weft_node node = 77;

    (void)state;
    memset(host, 0, sizeof host);
    /* write_block */
    expect(weft_graph_add_write_block(NULL, fx.x, &ok, host, 0, 0, &node),
           WEFT_EINVAL, "weft_graph_add_write_block: graph is NULL");
    expect(weft_graph_add_write_block(fx.g, NULL, &ok, host, 0, 0, &node),
           WEFT_EINVAL,
           "weft_graph_add_write_block: the node being added (write): dst: "
           "buffer is NULL");
    expect(weft_graph_add_write_block(fx.g, fx.xb, &ok, host, 0, 0, &node),
           WEFT_EINVAL, "(write): dst: the buffer belongs to another");
    expect(weft_graph_add_write_block(fx.g, fx.x, NULL, host, 0, 0, &node),
           WEFT_EINVAL, "(write): blk is NULL");
    bad = ok;
    bad.row_bytes = 0;
    expect(weft_graph_add_write_block(fx.g, fx.x, &bad, host, 0, 0, &node),
           WEFT_EINVAL, "(write): blk: row_bytes is 0");
    bad = ok;
    bad.rows = 0;
    expect(weft_graph_add_write_block(fx.g, fx.x, &bad, host, 0, 0, &node),
           WEFT_EINVAL, "(write): blk: rows is 0");
    bad = ok;
    bad.slices = 0;
    expect(weft_graph_add_write_block(fx.g, fx.x, &bad, host, 0, 0, &node),
           WEFT_EINVAL, "(write): blk: slices is 0");
    bad = ok;
    bad.row_pitch = 7;
    expect(weft_graph_add_write_block(fx.g, fx.x, &bad, host, 0, 0, &node),
           WEFT_EINVAL, "blk: row_pitch 7 is below row_bytes 8");
    bad = weft_block3(0, 8, 2, 2, 16, 40);
    expect(weft_graph_add_write_block(fx.g, fx.x, &bad, host, 0, 0, &node),
           WEFT_EINVAL, "blk: slice_pitch 40 is no multiple of row_pitch 16");
    bad = weft_block3(0, 8, 3, 2, 16, 32);
    expect(weft_graph_add_write_block(fx.g, fx.x, &bad, host, 0, 0, &node),
           WEFT_EINVAL, "blk: slice_pitch 32 is below rows * row_pitch");
    bad = weft_block2(size - 16 + 4, 16, 1, 16);
    expect(weft_graph_add_write_block(fx.g, fx.x, &bad, host, 0, 0, &node),
           WEFT_ERANGE, "(write): blk: range [244, 244 + 16)");
    bad = weft_block2(16, 8, 16, 16); /* its last byte is 263 */
    expect(weft_graph_add_write_block(fx.g, fx.x, &bad, host, 0, 0, &node),
           WEFT_ERANGE, "blk: block at origin 16 (16 rows of 8 bytes",
           "ends past the end");
    bad = weft_block2(0, 8, 2, SIZE_MAX / 2 + 1);
    expect(weft_graph_add_write_block(fx.g, fx.x, &bad, host, 0, 0, &node),
           WEFT_ERANGE, "blk: block at origin 0");
    expect(weft_graph_add_write_block(fx.g, fx.x, &ok, host, 4, 0, &node),
           WEFT_EINVAL,
           "(write): src_row_pitch 4 is below the block's "
           "row_bytes 8");
    bad = weft_block3(0, 8, 2, 2, 16, 32);
    expect(weft_graph_add_write_block(fx.g, fx.x, &bad, host, 8, 8, &node),
           WEFT_EINVAL, "src_slice_pitch 8 is below rows * src_row_pitch");
    /* read_block */
    expect(weft_graph_add_read_block(NULL, fx.x, &ok, host, 0, 0, &node),
           WEFT_EINVAL, "weft_graph_add_read_block: graph is NULL");
    expect(weft_graph_add_read_block(fx.g, NULL, &ok, host, 0, 0, &node),
           WEFT_EINVAL,
           "weft_graph_add_read_block: the node being added (read): src: "
           "buffer is NULL");
    expect(weft_graph_add_read_block(fx.g, fx.x, NULL, host, 0, 0, &node),
           WEFT_EINVAL, "(read): blk is NULL");
    expect(weft_graph_add_read_block(fx.g, fx.x, &ok, host, 2, 0, &node),
           WEFT_EINVAL, "(read): dst_row_pitch 2 is below");
    /* copy_block */
    bad = weft_block2(128, 8, 4, 16);
    expect(weft_graph_add_copy_block(NULL, fx.x, &bad, fx.x, &ok, &node),
           WEFT_EINVAL, "weft_graph_add_copy_block: graph is NULL");
    expect(weft_graph_add_copy_block(fx.g, NULL, &bad, fx.x, &ok, &node),
           WEFT_EINVAL,
           "weft_graph_add_copy_block: the node being added (copy): dst: "
           "buffer is NULL");
    expect(weft_graph_add_copy_block(fx.g, fx.x, &bad, NULL, &ok, &node),
           WEFT_EINVAL, "(copy): src: buffer is NULL");
    expect(weft_graph_add_copy_block(fx.g, fx.x, NULL, fx.x, &ok, &node),
           WEFT_EINVAL, "(copy): dblk is NULL");
    expect(weft_graph_add_copy_block(fx.g, fx.x, &bad, fx.x, NULL, &node),
           WEFT_EINVAL, "(copy): sblk is NULL");
    bad.rows = 3;
    expect(weft_graph_add_copy_block(fx.g, fx.x, &bad, fx.x, &ok, &node),
           WEFT_EINVAL,
           "(copy): dblk (3 rows of 8 bytes x 1 slices) and sblk "
           "(4 rows of 8 bytes x 1 slices) differ");
    /* Interleaved rows: [12, 20) of each 16 share bytes with [4, 12)? No;
     * [8, 16) does. */
    bad = weft_block2(8, 8, 4, 16);
    expect(weft_graph_add_copy_block(fx.g, fx.x, &bad, fx.x, &ok, &node),
           WEFT_EINVAL, "(copy): the source and destination blocks share");
    /* dependent on the row layout, not the bounding ranges: accepted */
    bad = weft_block2(12, 4, 4, 16);
    {
        weft_block src = weft_block2(4, 4, 4, 16);
        weft_graph *g;

        check(weft_graph_create(rt, &g));
        check(weft_graph_add_copy_block(g, fx.x, &bad, fx.x, &src, NULL));
        weft_graph_destroy(g);
    }
    /* fill_block */
    expect(weft_graph_add_fill_block(NULL, fx.x, &ok, &pat, 4, &node),
           WEFT_EINVAL, "weft_graph_add_fill_block: graph is NULL");
    expect(weft_graph_add_fill_block(fx.g, NULL, &ok, &pat, 4, &node),
           WEFT_EINVAL,
           "weft_graph_add_fill_block: the node being added (fill): dst: "
           "buffer is NULL");
    expect(weft_graph_add_fill_block(fx.g, fx.x, NULL, &pat, 4, &node),
           WEFT_EINVAL, "(fill): blk is NULL");
    expect(weft_graph_add_fill_block(fx.g, fx.x, &ok, NULL, 4, &node),
           WEFT_EINVAL, "(fill): fill: pattern is NULL");
    bad = weft_block2(2, 8, 4, 16);
    expect(weft_graph_add_fill_block(fx.g, fx.x, &bad, &pat, 4, &node),
           WEFT_EINVAL, "(fill): fill: offset 2 and size 8 are not multiples");
    /* kernel arguments */
    a[0].row_pitch = 4;
    expect(weft_graph_add_kernel(fx.g, k_advance, weft_dims1(N), a, 3, &node),
           WEFT_EINVAL,
           "weft_graph_add_kernel: the node being added (kernel advance): "
           "argument 0: row_pitch 4 is below row_bytes 8");
    a[0].row_pitch = 16;
    a[0].slices = 0;
    expect(weft_graph_add_kernel(fx.g, k_advance, weft_dims1(N), a, 3, &node),
           WEFT_EINVAL, "argument 0: slices is 0");
    a[0].slices = 1;
    a[0].rows = 17;
    expect(weft_graph_add_kernel(fx.g, k_advance, weft_dims1(N), a, 3, &node),
           WEFT_ERANGE, "argument 0: block at origin 4");
    /* host tasks and native nodes */
    acc[1].row_pitch = 3;
    expect(weft_graph_add_host(fx.g, host_task, NULL, acc, 2, &node),
           WEFT_EINVAL,
           "weft_graph_add_host: the node being added (host): access 1: "
           "row_pitch 3 is below row_bytes 8");
    expect(weft_graph_add_host_status(fx.g, host_status, NULL, acc, 2, &node),
           WEFT_EINVAL, "(host): access 1: row_pitch 3");
    expect(weft_graph_add_native(fx.g, &im, 1, acc, 2, NULL, &node),
           WEFT_EINVAL, "(native): access 1: row_pitch 3");
    acc[1].row_pitch = 16;
    acc[1].rows = 40;
    expect(weft_graph_add_host(fx.g, host_task, NULL, acc, 2, &node),
           WEFT_ERANGE, "(host): access 1: block at origin 4");
    /* One row of one slice is a range: its pitches are not looked at. */
    acc[1].rows = 1;
    acc[1].row_pitch = 0;
    acc[1].slice_pitch = 1;
    {
        weft_graph *g;

        check(weft_graph_create(rt, &g));
        check(weft_graph_add_host(g, host_task, NULL, acc, 2, NULL));
        bad = weft_block3(0, 4, 1, 1, 0, 0);
        check(weft_graph_add_write_block(g, fx.x, &bad, host, 0, 0, NULL));
        weft_graph_destroy(g);
    }
    assert_int_equal(node, 77);
    assert_int_equal(weft_graph_node_count(fx.g), nodes);
    graph_works();
}

/* Objects of another runtime, at every add, set_device and instantiate. */
static void test_other_runtime(void **state)
{
    weft_arg a[3] = {advance_args(fx.xb), weft_arg_u32(K), weft_arg_i64(N)};
    weft_access_desc acc[2] = {weft_access_range(fx.x, 0, 4, WEFT_READ),
                               weft_access_range(fx.xb, 0, 4, WEFT_READ)};
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    uint32_t host[N], pat = 0;
    weft_buffer *vb;
    weft_exec *e = NULL;
    weft_node node = 77;

    (void)state;
    check(weft_buffer_view(fx.xb, 0, 16, &vb));
    expect(weft_graph_add_kernel(fx.g, k_advance, weft_dims1(N), a, 3, &node),
           WEFT_EINVAL,
           "weft_graph_add_kernel: the node being added (kernel "
           "advance): argument 0: the buffer belongs to another "
           "runtime");
    a[0].buffer = vb;
    expect(weft_graph_add_kernel(fx.g, k_advance, weft_dims1(N), a, 3, &node),
           WEFT_EINVAL, "argument 0: the buffer belongs to another runtime");
    a[0].buffer = fx.x;
    expect(weft_graph_add_kernel(fx.g, k_advance_b, weft_dims1(N), a, 3, &node),
           WEFT_EINVAL,
           "(kernel advance): the kernel belongs to another runtime");
    expect(weft_graph_add_write(fx.g, fx.xb, 0, host, 4, &node), WEFT_EINVAL,
           "weft_graph_add_write", "dst: the buffer belongs to another");
    expect(weft_graph_add_read(fx.g, vb, 0, host, 4, &node), WEFT_EINVAL,
           "weft_graph_add_read", "src: the buffer belongs to another");
    expect(weft_graph_add_copy(fx.g, fx.xb, 0, fx.x, 0, 4, &node), WEFT_EINVAL,
           "weft_graph_add_copy", "dst: the buffer belongs to another");
    expect(weft_graph_add_copy(fx.g, fx.x, 0, fx.xb, 0, 4, &node), WEFT_EINVAL,
           "weft_graph_add_copy", "src: the buffer belongs to another");
    expect(weft_graph_add_fill(fx.g, fx.xb, 0, 4, &pat, 4, &node), WEFT_EINVAL,
           "weft_graph_add_fill", "dst: the buffer belongs to another");
    expect(
        weft_graph_add_map(fx.g, fx.xb, 0, 4, WEFT_READ, map_fn, NULL, &node),
        WEFT_EINVAL, "weft_graph_add_map", "buf: the buffer belongs to");
    expect(weft_graph_add_host(fx.g, host_task, NULL, acc, 2, &node),
           WEFT_EINVAL, "weft_graph_add_host",
           "access 1: the buffer belongs to another");
    expect(weft_graph_set_device(fx.g, 1, weft_runtime_device(rt_b, 0)),
           WEFT_EINVAL, "node 1 (kernel advance)",
           "not one of the graph's runtime");
    o.device = weft_runtime_device(rt_b, 0);
    expect(weft_graph_instantiate(fx.g, &o, &e), WEFT_EINVAL,
           "weft_graph_instantiate: opts->device is not one of the graph's "
           "runtime");
    assert_null(e);
    assert_int_equal(node, 77);
    check(weft_buffer_destroy(vb));
    graph_works();
}

/* ---- edges, placement, node indices ------------------------------------ */

static void test_nodes_and_edges(void **state)
{
    weft_device *dev = weft_runtime_device(rt, 0);
    weft_node e0;

    (void)state;
    expect(weft_graph_add_edge(NULL, 0, 1), WEFT_EINVAL,
           "weft_graph_add_edge: graph is NULL");
    expect(weft_graph_add_edge(fx.g, 0, 2), WEFT_EINVAL,
           "weft_graph_add_edge: node 2 does not exist (2 nodes)");
    expect(weft_graph_add_edge(fx.g, UINT32_MAX, 1), WEFT_EINVAL,
           "node 4294967295 does not exist");
    expect(weft_graph_add_edge(fx.g, 1, 1), WEFT_ECYCLE,
           "node 1 (kernel advance): an edge from the node to itself");
    expect(weft_graph_add_edge(fx.g, 1, 0), WEFT_ECYCLE,
           "node 0 already runs before node 1");
    check(weft_graph_add_edge(fx.g, 0, 1)); /* inferred already: nothing */
    assert_int_equal(weft_graph_edge_count(fx.g), 1);

    expect(weft_graph_set_device(NULL, 1, dev), WEFT_EINVAL,
           "weft_graph_set_device: graph is NULL");
    expect(weft_graph_set_device(fx.g, 2, dev), WEFT_EINVAL,
           "weft_graph_set_device: node 2 does not exist (2 nodes)");
    expect(weft_graph_set_device(fx.g, UINT32_MAX, dev), WEFT_EINVAL,
           "does not exist");
    expect(weft_graph_set_device(fx.g, 1, NULL), WEFT_EINVAL,
           "node 1 (kernel advance): the device is NULL");
    expect(weft_graph_set_device(fx.g, 0, dev), WEFT_EINVAL,
           "node 0 (write): only kernel and native nodes are placed");
    check(weft_graph_set_device(fx.g, 1, dev));
    graph_works();

    expect(weft_graph_set_priority(NULL, 1, WEFT_PRIORITY_HIGH), WEFT_EINVAL,
           "weft_graph_set_priority: graph is NULL");
    expect(weft_graph_set_priority(fx.g, 2, WEFT_PRIORITY_HIGH), WEFT_EINVAL,
           "weft_graph_set_priority: node 2 does not exist (2 nodes)");
    expect(weft_graph_set_priority(fx.g, 1, (weft_priority)7), WEFT_EINVAL,
           "node 1 (kernel advance): priority 7 is none of weft_priority");
    expect(weft_graph_set_priority(fx.g, 1, (weft_priority)-1), WEFT_EINVAL,
           "priority -1 is none of weft_priority");
    check(weft_graph_set_priority(fx.g, 1, WEFT_PRIORITY_HIGH));
    graph_works();
    check(weft_graph_set_priority(fx.g, 1, WEFT_PRIORITY_DEFAULT));

    /* An edge to a node added later, and back: refused, graph unchanged. */
    check(weft_graph_add_empty(fx.g, &e0));
    check(weft_graph_add_edge(fx.g, 1, e0));
    expect(weft_graph_add_edge(fx.g, e0, 0), WEFT_ECYCLE,
           "an edge from node 2 to node 0 would close a cycle");
    assert_int_equal(weft_graph_edge_count(fx.g), 2);
}

static void test_instantiate_bad_input(void **state)
{
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    weft_exec *e = NULL;

    (void)state;
    expect(weft_graph_instantiate(NULL, NULL, &e), WEFT_EINVAL,
           "weft_graph_instantiate: graph is NULL");
    expect(weft_graph_instantiate(fx.g, NULL, NULL), WEFT_EINVAL,
           "weft_graph_instantiate: result is NULL");
    o.size = 0;
    expect(weft_graph_instantiate(fx.g, &o, &e), WEFT_EINVAL,
           "weft_graph_instantiate: options size 0");
    o.size = sizeof o * 2;
    expect(weft_graph_instantiate(fx.g, &o, &e), WEFT_EINVAL, "options size");
    o.size = sizeof o;
    o.policy = (weft_place_policy)99;
    expect(weft_graph_instantiate(fx.g, &o, &e), WEFT_EINVAL,
           "opts->policy 99 is none of weft_place_policy");
    o.device = weft_runtime_device(rt, 0); /* a device does not hide it */
    expect(weft_graph_instantiate(fx.g, &o, &e), WEFT_EINVAL,
           "opts->policy 99");
    o.policy = (weft_place_policy)-1;
    expect(weft_graph_instantiate(fx.g, &o, &e), WEFT_EINVAL,
           "opts->policy -1");
    o.policy = WEFT_PLACE_DEFAULT;
    o.place_scope = (weft_place_scope)3;
    expect(weft_graph_instantiate(fx.g, &o, &e), WEFT_EINVAL,
           "opts->place_scope 3 is none of weft_place_scope");
    o.place_scope = WEFT_PLACE_SCOPE_DEFAULT;
    o.native_graphs = (weft_native_graphs)3;
    expect(weft_graph_instantiate(fx.g, &o, &e), WEFT_EINVAL,
           "opts->native_graphs 3 is none of weft_native_graphs");
    assert_null(e);
    graph_works();

    /* Host pointers are checked at instantiate, naming the node. */
    {
        weft_graph *g;

        check(weft_graph_create(rt, &g));
        check(weft_graph_add_empty(g, NULL));
        check(weft_graph_add_write(g, fx.x, 0, NULL, 16, NULL));
        expect(weft_graph_instantiate(g, NULL, &e), WEFT_EINVAL,
               "node 1 (write): the host source pointer is NULL");
        weft_graph_destroy(g);
        check(weft_graph_create(rt, &g));
        check(weft_graph_add_read(g, fx.x, 8, NULL, WEFT_WHOLE, NULL));
        expect(weft_graph_instantiate(g, NULL, &e), WEFT_EINVAL,
               "node 0 (read): the host destination pointer is NULL");
        assert_null(e);
        weft_graph_destroy(g);
    }

    /* Bad dims found against the device: a group too large. */
    {
        weft_arg a[3] = {advance_args(fx.x), weft_arg_u32(K), weft_arg_i64(N)};
        weft_dims d = weft_dims1(N);
        weft_graph *g;

        d.group[0] = UINT32_MAX;
        d.group[1] = 2;
        check(weft_graph_create(rt, &g));
        check(weft_graph_add_kernel(g, k_advance, d, a, 3, NULL));
        /* Found by placement (sim) or against the default device (host). */
        expect(weft_graph_instantiate(g, NULL, &e), WEFT_EINVAL, "node 0 (",
               "advance", "group");
        assert_null(e);
        weft_graph_destroy(g);
    }
}

static void test_exec_bad_input(void **state)
{
    weft_exec_stats st;
    weft_exec *e;
    weft_arg big = weft_arg_i64(K);

    (void)state;
    expect(weft_exec_launch(NULL), WEFT_EINVAL,
           "weft_exec_launch: exec is NULL");
    expect(weft_exec_wait(NULL), WEFT_EINVAL, "weft_exec_wait: exec is NULL");
    expect(weft_exec_status(NULL), WEFT_EINVAL,
           "weft_exec_status: exec is NULL");
    assert_int_equal(weft_exec_destroy(NULL), 0);
    expect(weft_exec_set_arg(NULL, 1, 1, weft_arg_u32(1)), WEFT_EINVAL,
           "weft_exec_set_arg: exec is NULL");
    expect_null(weft_exec_node_device(NULL, 0),
                "weft_exec_node_device: exec is NULL");
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    expect(weft_exec_get_stats(NULL, &st), WEFT_EINVAL,
           "weft_exec_get_stats: exec is NULL");
    expect(weft_exec_write_dot(NULL, stdout), WEFT_EINVAL,
           "weft_exec_write_dot", "exec is NULL");

    check(weft_graph_instantiate(fx.g, NULL, &e));
    expect(weft_exec_set_arg(e, 2, 1, weft_arg_u32(1)), WEFT_EINVAL,
           "weft_exec_set_arg: node 2 is not a kernel node (of 2 nodes)");
    expect(weft_exec_set_arg(e, UINT_MAX, 1, weft_arg_u32(1)), WEFT_EINVAL,
           "node 4294967295 is not a kernel node");
    expect(weft_exec_set_arg(e, 0, 0, weft_arg_u32(1)), WEFT_EINVAL,
           "node 0 is not a kernel node");
    expect(weft_exec_set_arg(e, 1, 3, weft_arg_u32(1)), WEFT_EARGS,
           "weft_exec_set_arg: node 1 has 3 arguments, not 4");
    expect(weft_exec_set_arg(e, 1, 0, weft_arg_u32(1)), WEFT_EARGS,
           "node 1 argument 0 is a buffer");
    expect(weft_exec_set_arg(e, 1, 1, weft_arg_f32(1.0f)), WEFT_EARGS,
           "node 1 argument 1: a f32 value of 4 bytes replaces a u32");
    expect(weft_exec_set_arg(e, 1, 1, big), WEFT_EARGS,
           "a i64 value of 8 bytes replaces a u32");
    big = weft_arg_u32(K);
    big.size = 8;
    expect(weft_exec_set_arg(e, 1, 1, big), WEFT_EARGS,
           "a u32 value of 8 bytes");
    expect(weft_exec_set_arg(e, 1, 2, weft_arg_bytes(NULL, 8)), WEFT_EARGS,
           "node 1 argument 2");
    expect_null(weft_exec_node_device(e, 2), "weft_exec_node_device",
                "no such node");
    expect_null(weft_exec_node_device(e, UINT_MAX), "no such node");
    assert_true(weft_kernel_supports(k_advance, weft_exec_node_device(e, 1)));
    expect(weft_exec_get_stats(e, NULL), WEFT_EINVAL,
           "weft_exec_get_stats: stats is NULL");
    st.size = 0;
    expect(weft_exec_get_stats(e, &st), WEFT_EINVAL, "stats->size 0");
    st.size = sizeof st + 1;
    expect(weft_exec_get_stats(e, &st), WEFT_EINVAL, "stats->size");
    expect(weft_exec_write_dot(e, NULL), WEFT_EINVAL, "weft_exec_write_dot",
           "file is NULL");
    /* The exec still runs, with its own value of k. */
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_exec_status(e));
    st.size = sizeof st;
    check(weft_exec_get_stats(e, &st));
    assert_int_equal(st.launches, 1);
    check(weft_exec_destroy(e));
    graph_works();
}

/* ---- driver-level features ---------------------------------------------- */

static void test_features_bad_input(void **state)
{
    weft_node_timing t;
    weft_exec *e;

    (void)state;
    memset(&t, 0, sizeof t);
    t.size = sizeof t;
    expect(weft_exec_enable_timings(NULL, 1), WEFT_EINVAL,
           "weft_exec_enable_timings: exec is NULL");
    expect(weft_exec_node_timing(NULL, 0, &t), WEFT_EINVAL,
           "weft_exec_node_timing: exec is NULL");
    check(weft_graph_instantiate(fx.g, NULL, &e));
    expect(weft_exec_enable_timings(e, 2), WEFT_EINVAL,
           "weft_exec_enable_timings: on is 2, not 0 or 1");
    expect(weft_exec_node_timing(e, 0, NULL), WEFT_EINVAL,
           "weft_exec_node_timing: timing is NULL");
    expect(weft_exec_node_timing(e, 0, &t), WEFT_ENOTFOUND,
           "weft_exec_node_timing: the last finished launch was not timed");
    check(weft_exec_enable_timings(e, 1));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    expect(weft_exec_node_timing(e, 2, &t), WEFT_EINVAL,
           "weft_exec_node_timing: node 2 of 2 nodes");
    t.size = 0;
    expect(weft_exec_node_timing(e, 1, &t), WEFT_EINVAL, "timing->size 0");
    t.size = sizeof t + 1;
    expect(weft_exec_node_timing(e, 1, &t), WEFT_EINVAL, "timing->size");
    t.size = sizeof t;
    check(weft_exec_node_timing(e, 1, &t));
    assert_int_equal(t.timed, 1);
    check(weft_exec_destroy(e));
    {
        weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;

        o.priority = (weft_priority)7;
        expect(weft_graph_instantiate(fx.g, &o, &e), WEFT_EINVAL,
               "weft_graph_instantiate: opts->priority 7 is none of "
               "weft_priority");
        o.priority = WEFT_PRIORITY_HIGH;
        check(weft_graph_instantiate(fx.g, &o, &e));
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        check(weft_exec_destroy(e));
    }
    {
        void *p = NULL, *stack[4];

        expect(weft_host_alloc(NULL, 64, &p), WEFT_EINVAL,
               "weft_host_alloc: runtime is NULL");
        expect(weft_host_alloc(rt, 64, NULL), WEFT_EINVAL,
               "weft_host_alloc: ptr is NULL");
        expect(weft_host_alloc(rt, 0, &p), WEFT_EINVAL,
               "weft_host_alloc: size 0");
        expect(weft_host_alloc(rt, SIZE_MAX, &p), WEFT_ENOMEM,
               "weft_host_alloc: size");
        assert_null(p);
        expect(weft_host_free(NULL, stack), WEFT_EINVAL,
               "weft_host_free: runtime is NULL");
        expect(weft_host_free(rt, stack), WEFT_EINVAL,
               "is not memory that weft_host_alloc of this runtime returned");
        check(weft_host_free(rt, NULL));
        check(weft_host_alloc(rt, 64, &p));
        expect(weft_host_free(rt, (char *)p + 8), WEFT_EINVAL,
               "weft_host_free");
        expect(weft_runtime_destroy(rt), WEFT_EBUSY, "weft_host_alloc memory");
        check(weft_host_free(rt, p));
        expect(weft_host_free(rt, p), WEFT_EINVAL, "weft_host_free");
    }
    {
        char buf[16];
        size_t len = 99;

        expect_null(weft_module_name(NULL), "weft_module_name: module is NULL");
        assert_non_null(weft_module_name(mod));
        expect(weft_module_build_log(NULL, weft_runtime_device(rt, 0), buf,
                                     sizeof buf, &len),
               WEFT_EINVAL, "weft_module_build_log: module is NULL");
        expect(weft_module_build_log(mod, NULL, buf, sizeof buf, &len),
               WEFT_EINVAL, "weft_module_build_log: device is NULL");
        expect(weft_module_build_log(mod, weft_runtime_device(rt, 0), NULL, 4,
                                     &len),
               WEFT_EINVAL, "weft_module_build_log: buf is NULL with size 4");
        expect(weft_module_build_log(mod, weft_runtime_device(rt_b, 0), buf,
                                     sizeof buf, &len),
               WEFT_EINVAL, "is not a device of the module's runtime");
        assert_int_equal(len, 99);
        check(weft_module_build_log(mod, weft_runtime_device(rt, 0), NULL, 0,
                                    &len));
        check(weft_module_build_log(mod, weft_runtime_device(rt, 0), buf,
                                    sizeof buf, NULL));
        assert_true(strlen(buf) < sizeof buf);
    }
    {
        const weft_device *cand[4];
        weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
        unsigned n = 99;

        expect(weft_graph_candidate_devices(NULL, 0, NULL, cand, 4, &n),
               WEFT_EINVAL, "weft_graph_candidate_devices: graph is NULL");
        expect(weft_graph_candidate_devices(fx.g, 1, NULL, cand, 4, NULL),
               WEFT_EINVAL, "weft_graph_candidate_devices: count is NULL");
        expect(weft_graph_candidate_devices(fx.g, 1, NULL, NULL, 4, &n),
               WEFT_EINVAL, "devs is NULL with max 4");
        expect(weft_graph_candidate_devices(fx.g, 2, NULL, cand, 4, &n),
               WEFT_EINVAL, "weft_graph_candidate_devices: node 2 of 2 nodes");
        o.policy = (weft_place_policy)42;
        expect(weft_graph_candidate_devices(fx.g, 1, &o, cand, 4, &n),
               WEFT_EINVAL, "weft_graph_candidate_devices", "opts->policy 42");
        o = (weft_exec_options)WEFT_EXEC_OPTIONS_INIT;
        o.device = weft_runtime_device(rt_b, 0);
        expect(weft_graph_candidate_devices(fx.g, 1, &o, cand, 4, &n),
               WEFT_EINVAL, "opts->device is not one of the graph's runtime");
        assert_int_equal(n, 99);
        check(weft_graph_candidate_devices(fx.g, 1, NULL, cand, 4, &n));
        assert_true(n >= 1);
        assert_true(weft_kernel_supports(k_advance, cand[0]));
        check(weft_graph_candidate_devices(fx.g, 0, NULL, NULL, 0, &n));
        assert_int_equal(n, 0);
    }
    graph_works();
}

/* ---- misuse across threads --------------------------------------------- */

enum { LAUNCHES = 200 };

typedef struct launcher {
    weft_exec *e;
    int n, rc;
} launcher;

static void *launch_loop(void *arg)
{
    launcher *l = arg;

    for (int i = 0; i < l->n && l->rc == 0; i++)
        if ((l->rc = weft_exec_launch(l->e)) == 0 && i % 8 == 7)
            l->rc = weft_exec_wait(l->e);
    if (l->rc == 0)
        l->rc = weft_exec_wait(l->e);
    return NULL;
}

/* x after n launches of advance alone from 0..N-1. */
static void expect_advanced(int n)
{
    uint32_t out[N];

    check(weft_buffer_read(fx.x, 0, out, sizeof out));
    for (unsigned i = 0; i < N; i++) {
        uint32_t v = i;

        for (int j = 0; j < n; j++)
            v = wt_advance_value(v, K);
        assert_int_equal(out[i], v);
    }
}

/* A graph of advance alone over x (so that launches accumulate). */
static weft_exec *advance_exec(weft_graph **g)
{
    weft_arg a[3] = {advance_args(fx.x), weft_arg_u32(K), weft_arg_i64(N)};
    weft_exec *e;

    check(weft_buffer_write(fx.x, 0, fx.init, sizeof fx.init));
    check(weft_graph_create(rt, g));
    check(weft_graph_add_kernel(*g, k_advance, weft_dims1(N), a, 3, NULL));
    check(weft_graph_instantiate(*g, NULL, &e));
    return e;
}

/* One exec launched and waited from two threads at once. */
static void test_threads_launch_wait(void **state)
{
    launcher l[2];
    pthread_t t[2];
    weft_exec_stats st;
    weft_graph *g;
    weft_exec *e = advance_exec(&g);

    (void)state;
    for (int i = 0; i < 2; i++) {
        l[i] = (launcher){e, LAUNCHES / 2, 0};
        assert_int_equal(pthread_create(&t[i], NULL, launch_loop, &l[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(l[i].rc, 0);
    }
    check(weft_exec_wait(e));
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    check(weft_exec_get_stats(e, &st));
    assert_int_equal(st.launches, LAUNCHES);
    check(weft_exec_destroy(e));
    weft_graph_destroy(g);
    expect_advanced(LAUNCHES);
}

/*
 * Destroying a buffer that a graph uses while another thread launches it:
 * refused (WEFT_EBUSY) every time, and the launches are unharmed.
 */
static void test_threads_destroy_buffer(void **state)
{
    launcher l;
    pthread_t t;
    weft_graph *g;
    weft_exec *e = advance_exec(&g);
    int refused = 0;

    (void)state;
    l = (launcher){e, LAUNCHES, 0};
    assert_int_equal(pthread_create(&t, NULL, launch_loop, &l), 0);
    for (int i = 0; i < 50; i++) {
        expect(weft_buffer_destroy(fx.x), WEFT_EBUSY, "weft_buffer_destroy",
               "of live executable graphs");
        refused++;
    }
    pthread_join(t, NULL);
    assert_int_equal(l.rc, 0);
    assert_int_equal(refused, 50);
    check(weft_exec_destroy(e));
    weft_graph_destroy(g);
    expect_advanced(LAUNCHES);
}

/*
 * Destroying the module of a kernel that a graph uses while another thread
 * launches it: refused (WEFT_EBUSY) while the graph lives.
 */
static void test_threads_destroy_module(void **state)
{
    launcher l;
    pthread_t t;
    weft_module *m;
    weft_kernel *k;
    weft_graph *g;
    weft_exec *e;
    weft_arg a[3] = {advance_args(fx.x), weft_arg_u32(K), weft_arg_i64(N)};

    (void)state;
    check(wt_kernels_module(rt, &m));
    check(weft_module_get_kernel(m, "advance", &k));
    check(weft_buffer_write(fx.x, 0, fx.init, sizeof fx.init));
    check(weft_graph_create(rt, &g));
    check(weft_graph_add_kernel(g, k, weft_dims1(N), a, 3, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    l = (launcher){e, LAUNCHES, 0};
    assert_int_equal(pthread_create(&t, NULL, launch_loop, &l), 0);
    for (int i = 0; i < 50; i++)
        expect(weft_module_destroy(m), WEFT_EBUSY,
               "weft_module_destroy: kernel advance is used by 1 nodes of "
               "live graphs and 1 of live executable graphs");
    pthread_join(t, NULL);
    assert_int_equal(l.rc, 0);
    check(weft_exec_destroy(e));
    expect(weft_module_destroy(m), WEFT_EBUSY,
           "kernel advance is used by 1 nodes of live graphs and 0 of live "
           "executable graphs");
    weft_graph_destroy(g);
    check(weft_module_destroy(m));
    expect_advanced(LAUNCHES);
}

typedef struct waiter {
    weft_exec *e;
    int rc;
} waiter;

static void *wait_once(void *arg)
{
    waiter *w = arg;

    w->rc = weft_exec_wait(w->e);
    return NULL;
}

typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;
} gate;

static void gate_task(void *const *ptrs, void *user)
{
    gate *gt = user;

    (void)ptrs;
    pthread_mutex_lock(&gt->lock);
    while (!gt->open)
        pthread_cond_wait(&gt->cond, &gt->lock);
    pthread_mutex_unlock(&gt->lock);
}

/*
 * Destroying an exec while another thread waits on it: destroy waits for
 * the launch and for the waiter to leave, and both return 0.
 */
static void test_threads_destroy_exec(void **state)
{
    gate gt = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    weft_access_desc acc = weft_access_range(fx.x, 0, 4, WEFT_READ_WRITE);
    waiter w;
    pthread_t t;
    weft_graph *g;
    weft_exec *e;

    (void)state;
    check(weft_graph_create(rt, &g));
    check(weft_graph_add_host(g, gate_task, &gt, &acc, 1, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    w = (waiter){e, 1};
    assert_int_equal(pthread_create(&t, NULL, wait_once, &w), 0);
    /* The waiter is inside weft_exec_wait before destroy starts. */
    for (;;) {
        unsigned n;

        pthread_mutex_lock(&e->lock);
        n = e->waiters;
        pthread_mutex_unlock(&e->lock);
        if (n)
            break;
        sched_yield();
    }
    pthread_mutex_lock(&gt.lock);
    gt.open = 1;
    pthread_cond_broadcast(&gt.cond);
    pthread_mutex_unlock(&gt.lock);
    check(weft_exec_destroy(e));
    pthread_join(t, NULL);
    assert_int_equal(w.rc, 0);
    weft_graph_destroy(g);
    graph_works();
}

/* ---- native nodes -------------------------------------------------------- */

/* What a native function saw of the accessors' bad input. */
typedef struct native_seen {
    int calls, ok;
    char msg[256];
} native_seen;

static int native_probe(const weft_native_ctx *c, void *user)
{
    native_seen *s = user;
    size_t off = 99;

    s->calls++;
    s->ok = weft_native_count(c) == 1 && weft_native_size(c, 1) == 0 &&
            weft_native_ptr(c, 1) == NULL && weft_native_address(c, 1) == 0 &&
            weft_native_mem(c, 1, &off) == NULL && off == 0 &&
            weft_native_node(c) == 0 && weft_native_device(c) != NULL &&
            weft_native_driver(c) != NULL && weft_native_size(c, 0) == 16;
    weft_native_size(c, 1);
    weft__strlcpy(s->msg, weft_last_error(), sizeof s->msg);
    /* Queue, context and device handles may be NULL (host): no error. */
    (void)weft_native_queue(c);
    (void)weft_native_context(c);
    (void)weft_native_device_id(c);
    return 0;
}

static void test_native_bad_input(void **state)
{
    weft_native_impl im[4] = {{"host", 0, native_probe},
                              {"sim", 0, native_probe},
                              {"opencl", 0, native_probe},
                              {"cuda", 0, native_probe}};
    weft_access_desc acc[2] = {weft_access_range(fx.x, 0, 16, WEFT_READ),
                               weft_access_range(fx.x, 16, 16, WEFT_WRITE)};
    native_seen seen = {0, 0, ""};
    unsigned nodes = weft_graph_node_count(fx.g);
    weft_node node = 77;
    size_t off = 5;
    weft_graph *g;
    weft_exec *e;

    (void)state;
    expect(weft_graph_add_native(NULL, im, 4, acc, 2, NULL, &node), WEFT_EINVAL,
           "weft_graph_add_native: graph is NULL");
    expect(weft_graph_add_native(fx.g, NULL, 4, acc, 2, NULL, &node),
           WEFT_EINVAL,
           "weft_graph_add_native: the node being added (native): impls is "
           "NULL");
    expect(weft_graph_add_native(fx.g, im, 0, acc, 2, NULL, &node), WEFT_EINVAL,
           "(native): nimpls is 0");
    expect(weft_graph_add_native(fx.g, im, 65, acc, 2, NULL, &node),
           WEFT_EINVAL, "(native): nimpls: 65 implementations");
    im[2].fn = NULL;
    expect(weft_graph_add_native(fx.g, im, 4, acc, 2, NULL, &node), WEFT_EINVAL,
           "(native): impls[2]: fn is NULL");
    im[2].fn = native_probe;
    im[1].driver = NULL;
    expect(weft_graph_add_native(fx.g, im, 4, acc, 2, NULL, &node), WEFT_EINVAL,
           "(native): impls[1]: driver is NULL");
    im[1].driver = "vulkan";
    expect(weft_graph_add_native(fx.g, im, 4, acc, 2, NULL, &node), WEFT_EINVAL,
           "(native): impls[1]: driver \"vulkan\" is none of cuda, opencl, "
           "host, sim");
    im[1].driver = "sim";
    im[3].type = (weft_device_type)9;
    expect(weft_graph_add_native(fx.g, im, 4, acc, 2, NULL, &node), WEFT_EINVAL,
           "(native): impls[3]: type 9 is no weft_device_type");
    im[3].type = WEFT_DEVICE_GPU;
    expect(weft_graph_add_native(fx.g, im, 4, NULL, 2, NULL, &node),
           WEFT_EINVAL, "(native): 2 accesses but the array is NULL");
    acc[1].mode = (weft_access)0;
    expect(weft_graph_add_native(fx.g, im, 4, acc, 2, NULL, &node), WEFT_EINVAL,
           "(native): access 1: unknown mode 0");
    acc[1].mode = WEFT_WRITE;
    acc[1].buffer = fx.xb;
    expect(weft_graph_add_native(fx.g, im, 4, acc, 2, NULL, &node), WEFT_EINVAL,
           "(native): access 1: the buffer belongs to another runtime");
    acc[1].buffer = fx.x;
    acc[1].offset = N * 4;
    expect(weft_graph_add_native(fx.g, im, 4, acc, 2, NULL, &node), WEFT_ERANGE,
           "(native): access 1: range");
    acc[1].offset = 16;
    assert_int_equal(node, 77);
    assert_int_equal(weft_graph_node_count(fx.g), nodes);
    graph_works();

    /* The accessors: a NULL ctx, and an index past the accesses. */
    expect(weft_native_driver(NULL) ? 0 : WEFT_EINVAL, WEFT_EINVAL,
           "weft_native_driver: ctx is NULL");
    expect(weft_native_device(NULL) ? 0 : WEFT_EINVAL, WEFT_EINVAL,
           "weft_native_device: ctx is NULL");
    expect(weft_native_node(NULL) ? 0 : WEFT_EINVAL, WEFT_EINVAL,
           "weft_native_node: ctx is NULL");
    expect(weft_native_context(NULL) ? 0 : WEFT_EINVAL, WEFT_EINVAL,
           "weft_native_context: ctx is NULL");
    expect(weft_native_device_id(NULL) ? 0 : WEFT_EINVAL, WEFT_EINVAL,
           "weft_native_device_id: ctx is NULL");
    expect(weft_native_queue(NULL) ? 0 : WEFT_EINVAL, WEFT_EINVAL,
           "weft_native_queue: ctx is NULL");
    expect(weft_native_count(NULL) ? 0 : WEFT_EINVAL, WEFT_EINVAL,
           "weft_native_count: ctx is NULL");
    expect(weft_native_size(NULL, 0) ? 0 : WEFT_EINVAL, WEFT_EINVAL,
           "weft_native_size: ctx is NULL");
    expect(weft_native_address(NULL, 0) ? 0 : WEFT_EINVAL, WEFT_EINVAL,
           "weft_native_address: ctx is NULL");
    expect(weft_native_mem(NULL, 0, &off) ? 0 : WEFT_EINVAL, WEFT_EINVAL,
           "weft_native_mem: ctx is NULL");
    assert_int_equal(off, 0);
    expect(weft_native_ptr(NULL, 0) ? 0 : WEFT_EINVAL, WEFT_EINVAL,
           "weft_native_ptr: ctx is NULL");
    check(weft_graph_create(rt, &g));
    check(weft_graph_add_native(g, im, 4, acc, 1, &seen, &node));
    assert_int_equal(node, 0);
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    assert_int_equal(seen.calls, 1);
    assert_true(seen.ok);
    assert_non_null(strstr(seen.msg, "weft_native_size: access 1 of a node "
                                     "with 1"));
    check(weft_exec_destroy(e));

    /* Capture: only native nodes of weft_graph_add_native, on 0 or 1. */
    expect(weft_graph_set_native_capture(NULL, 0, 1), WEFT_EINVAL,
           "weft_graph_set_native_capture: graph is NULL");
    expect(weft_graph_set_native_capture(g, 1, 1), WEFT_EINVAL,
           "weft_graph_set_native_capture: node 1 does not exist (1 nodes)");
    expect(weft_graph_set_native_capture(g, 0, 2), WEFT_EINVAL,
           "node 0 (native): weft_graph_set_native_capture: on is 2 (0 or 1)");
    expect(weft_graph_set_native_capture(g, 0, -1), WEFT_EINVAL,
           "on is -1 (0 or 1)");
    expect(weft_graph_set_native_capture(fx.g, 0, 1), WEFT_EINVAL,
           "weft_graph_set_native_capture: only nodes of "
           "weft_graph_add_native are captured");
    check(weft_graph_add_event_wait(
        g, weft__device_of(weft_runtime_device(rt, 0))->drv->name, &seen, NULL,
        0, &node));
    assert_int_equal(node, 1);
    expect(weft_graph_set_native_capture(g, 1, 1), WEFT_EINVAL,
           "node 1 (event wait): weft_graph_set_native_capture: only nodes of "
           "weft_graph_add_native are captured");
    check(weft_graph_set_native_capture(g, 0, 1));
    check(weft_graph_set_native_capture(g, 0, 0));
    weft_graph_destroy(g);
}

/* Event nodes and launches after a program's queue. */
static void test_external_bad_input(void **state)
{
    weft_access_desc acc = weft_access_range(fx.x, 0, 16, WEFT_READ);
    unsigned nodes = weft_graph_node_count(fx.g);
    const char *drv = weft__device_of(weft_runtime_device(rt, 0))->drv->name;
    weft_node node = 77;
    int ev;
    weft_exec *e;

    (void)state;
    expect(weft_graph_add_event_wait(NULL, drv, &ev, NULL, 0, &node),
           WEFT_EINVAL, "weft_graph_add_event_wait: graph is NULL");
    expect(weft_graph_add_event_wait(fx.g, NULL, &ev, NULL, 0, &node),
           WEFT_EINVAL,
           "weft_graph_add_event_wait: the node being added (event wait): "
           "driver is NULL");
    expect(weft_graph_add_event_wait(fx.g, "metal", &ev, NULL, 0, &node),
           WEFT_EINVAL,
           "(event wait): driver \"metal\" is none of cuda, opencl, host, "
           "sim");
    expect(weft_graph_add_event_wait(fx.g, drv, NULL, NULL, 0, &node),
           WEFT_EINVAL, "(event wait): event is NULL");
    expect(weft_graph_add_event_wait(fx.g, drv, &ev, NULL, 1, &node),
           WEFT_EINVAL, "(event wait): 1 accesses but the array is NULL");
    expect(weft_graph_add_event_record(NULL, drv, &ev, &acc, 1, &node),
           WEFT_EINVAL, "weft_graph_add_event_record: graph is NULL");
    expect(weft_graph_add_event_record(fx.g, drv, NULL, &acc, 1, &node),
           WEFT_EINVAL,
           "weft_graph_add_event_record: the node being added (event "
           "record): event is NULL");
    acc.buffer = fx.xb;
    expect(weft_graph_add_event_record(fx.g, drv, &ev, &acc, 1, &node),
           WEFT_EINVAL,
           "(event record): access 0: the buffer belongs to another runtime");
    acc.buffer = fx.x;
    acc.offset = N * 4 + 1;
    expect(weft_graph_add_event_record(fx.g, drv, &ev, &acc, 1, &node),
           WEFT_ERANGE, "(event record): access 0: offset");
    assert_int_equal(node, 77);
    assert_int_equal(weft_graph_node_count(fx.g), nodes);
    graph_works();

    check(weft_graph_instantiate(fx.g, NULL, &e));
    expect(weft_exec_launch_after(NULL, drv, NULL), WEFT_EINVAL,
           "weft_exec_launch_after: exec is NULL");
    expect(weft_exec_launch_after(e, NULL, NULL), WEFT_EINVAL,
           "weft_exec_launch_after: driver is NULL");
    expect(weft_exec_launch_after(e, "metal", NULL), WEFT_EINVAL,
           "weft_exec_launch_after: driver \"metal\" is none of cuda");
    expect(weft_exec_launch_after(e, strcmp(drv, "sim") ? "sim" : "host", NULL),
           WEFT_ENOTSUP, "no device of the runtime has it");
    /* (CUDA's NULL stream is the default one: not on these drivers.) */
    expect(weft_exec_launch_after(e, drv, NULL), WEFT_EINVAL,
           "weft_exec_launch_after:", "queue is NULL");
    /* Nothing was launched: the graph is idle, and launches still work. */
    check(weft_exec_status(e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_exec_destroy(e));
    graph_works();
}

/* ---- every WEFT_API function has a case -------------------------------- */

static const struct {
    const char *fn, *test;
} covered[] = {
    {"weft_version", "test_errors_and_names"},
    {"weft_strerror", "test_errors_and_names"},
    {"weft_err_name", "test_errors_and_names"},
    {"weft_last_error", "test_errors_and_names"},
    {"weft_last_error_detail", "test_errors_and_names"},
    {"weft_clear_error", "test_errors_and_names"},
    {"weft_log_set_sink", "test_errors_and_names"},
    {"weft_log_set_level", "test_errors_and_names"},
    {"weft_log_get_level", "test_errors_and_names"},
    {"weft_param_type_size", "test_errors_and_names"},
    {"weft_param_type_name", "test_errors_and_names"},
    {"weft_place_policy_name", "test_errors_and_names"},
    {"weft_runtime_create", "test_runtime_bad_input"},
    {"weft_runtime_destroy", "test_runtime_bad_input"},
    {"weft_runtime_driver_count", "test_runtime_bad_input"},
    {"weft_runtime_driver", "test_runtime_bad_input"},
    {"weft_runtime_device_count", "test_runtime_bad_input"},
    {"weft_runtime_device", "test_runtime_bad_input"},
    {"weft_runtime_get_stats", "test_runtime_bad_input"},
    {"weft_device_get_info", "test_device_bad_input"},
    {"weft_device_can_access_peer", "test_device_bad_input"},
    {"weft_module_create", "test_module_bad_input"},
    {"weft_module_create_portable", "test_module_bad_input"},
    {"weft_module_destroy", "test_module_bad_input"},
    {"weft_module_get_kernel", "test_module_bad_input"},
    {"weft_kernel_supports", "test_module_bad_input"},
    {"weft_kernel_name", "test_module_bad_input"},
    {"weft_kernel_param_count", "test_module_bad_input"},
    {"weft_kernel_param_info", "test_module_bad_input"},
    {"weft_buffer_create", "test_buffer_bad_input"},
    {"weft_buffer_wrap", "test_buffer_bad_input"},
    {"weft_buffer_view", "test_buffer_bad_input"},
    {"weft_buffer_destroy", "test_buffer_bad_input"},
    {"weft_buffer_size", "test_buffer_bad_input"},
    {"weft_buffer_write", "test_buffer_ranges"},
    {"weft_buffer_read", "test_buffer_ranges"},
    {"weft_buffer_fill", "test_buffer_ranges"},
    {"weft_buffer_map", "test_buffer_ranges"},
    {"weft_buffer_unmap", "test_buffer_ranges"},
    {"weft_buffer_sync_host", "test_buffer_ranges"},
    {"weft_buffer_invalidate", "test_buffer_ranges"},
    {"weft_buffer_wrap_device", "test_devmem_bad_input"},
    {"weft_buffer_device_address", "test_devmem_bad_input"},
    {"weft_buffer_mark_device_written", "test_devmem_bad_input"},
    {"weft_device_native", "test_devmem_bad_input"},
    {"weft_buffer_export", "test_ipc_bad_input"},
    {"weft_buffer_export_release", "test_ipc_bad_input"},
    {"weft_ipc_open", "test_ipc_bad_input"},
    {"weft_ipc_close", "test_ipc_bad_input"},
    {"weft_graph_create", "test_graph_bad_input"},
    {"weft_graph_destroy", "test_graph_bad_input"},
    {"weft_graph_node_count", "test_graph_bad_input"},
    {"weft_graph_edge_count", "test_graph_bad_input"},
    {"weft_graph_write_dot", "test_graph_bad_input"},
    {"weft_graph_add_kernel", "test_add_kernel_bad_input"},
    {"weft_graph_add_kernels", "test_add_kernels_bad_input"},
    {"weft_graph_add_write", "test_add_node_bad_input"},
    {"weft_graph_add_read", "test_add_node_bad_input"},
    {"weft_graph_add_copy", "test_add_node_bad_input"},
    {"weft_graph_add_fill", "test_add_node_bad_input"},
    {"weft_graph_add_write_block", "test_add_block_bad_input"},
    {"weft_graph_add_read_block", "test_add_block_bad_input"},
    {"weft_graph_add_copy_block", "test_add_block_bad_input"},
    {"weft_graph_add_fill_block", "test_add_block_bad_input"},
    {"weft_graph_add_map", "test_add_node_bad_input"},
    {"weft_graph_add_host", "test_add_node_bad_input"},
    {"weft_graph_add_host_status", "test_add_node_bad_input"},
    {"weft_graph_add_host_poll", "test_add_node_bad_input"},
    {"weft_graph_add_empty", "test_add_node_bad_input"},
    {"weft_graph_add_native", "test_native_bad_input"},
    {"weft_native_driver", "test_native_bad_input"},
    {"weft_native_device", "test_native_bad_input"},
    {"weft_native_node", "test_native_bad_input"},
    {"weft_native_context", "test_native_bad_input"},
    {"weft_native_device_id", "test_native_bad_input"},
    {"weft_native_queue", "test_native_bad_input"},
    {"weft_native_count", "test_native_bad_input"},
    {"weft_native_size", "test_native_bad_input"},
    {"weft_native_address", "test_native_bad_input"},
    {"weft_native_mem", "test_native_bad_input"},
    {"weft_native_ptr", "test_native_bad_input"},
    {"weft_graph_add_event_wait", "test_external_bad_input"},
    {"weft_graph_add_event_record", "test_external_bad_input"},
    {"weft_exec_launch_after", "test_external_bad_input"},
    {"weft_graph_add_edge", "test_nodes_and_edges"},
    {"weft_graph_set_device", "test_nodes_and_edges"},
    {"weft_graph_set_native_capture", "test_native_bad_input"},
    {"weft_graph_set_priority", "test_nodes_and_edges"},
    {"weft_graph_instantiate", "test_instantiate_bad_input"},
    {"weft_exec_launch", "test_exec_bad_input"},
    {"weft_exec_wait", "test_exec_bad_input"},
    {"weft_exec_status", "test_exec_bad_input"},
    {"weft_exec_destroy", "test_exec_bad_input"},
    {"weft_exec_set_arg", "test_exec_bad_input"},
    {"weft_exec_node_device", "test_exec_bad_input"},
    {"weft_exec_get_stats", "test_exec_bad_input"},
    {"weft_exec_write_dot", "test_exec_bad_input"},
    {"weft_exec_enable_timings", "test_features_bad_input"},
    {"weft_exec_node_timing", "test_features_bad_input"},
    {"weft_host_alloc", "test_features_bad_input"},
    {"weft_host_free", "test_features_bad_input"},
    {"weft_module_name", "test_features_bad_input"},
    {"weft_module_build_log", "test_features_bad_input"},
    {"weft_graph_candidate_devices", "test_features_bad_input"},
};

/* The group main runs, so that `covered` can name only cases of it. */
static const struct CMUnitTest *all_tests;
static size_t nall_tests;

/* The names of the WEFT_API functions of weft.h, as one string each. */
static unsigned header_functions(char names[][64], unsigned max)
{
    FILE *f = fopen(WT_WEFT_H, "r");
    static char text[1 << 17];
    size_t len;
    unsigned n = 0;
    char *p;

    assert_non_null(f);
    len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    assert_true(len > 0 && len < sizeof text - 1);
    text[len] = 0;
    for (p = text; (p = strstr(p, "WEFT_API")) != NULL; p += 8) {
        char *paren = strchr(p, '('), *line = p, *end, *start;

        while (line > text && line[-1] != '\n')
            line--;
        /* "#define WEFT_API ...": no function follows. */
        if (*line == '#' || !paren || memchr(p, ';', (size_t)(paren - p)))
            continue;
        end = paren;
        while (end > p && end[-1] == ' ')
            end--;
        start = end;
        while (start > p &&
               (start[-1] == '_' || (start[-1] >= 'a' && start[-1] <= 'z') ||
                (start[-1] >= '0' && start[-1] <= '9')))
            start--;
        if (end - start < 6 || strncmp(start, "weft_", 5) != 0)
            continue;
        assert_true(n < max && end - start < 64);
        memcpy(names[n], start, (size_t)(end - start));
        names[n][end - start] = 0;
        n++;
    }
    return n;
}

static void test_every_function_covered(void **state)
{
    static char names[256][64];
    unsigned n = header_functions(names, 256), missing = 0;

    (void)state;
    assert_true(n >= 60);
    for (unsigned i = 0; i < n; i++) {
        unsigned j = 0;

        while (j < WEFT__COUNTOF(covered) && strcmp(covered[j].fn, names[i]))
            j++;
        if (j == WEFT__COUNTOF(covered)) {
            print_error("%s is declared WEFT_API in weft.h but no case of "
                        "tests/api covers it (add it to `covered`)\n",
                        names[i]);
            missing++;
        }
    }
    for (unsigned j = 0; j < WEFT__COUNTOF(covered); j++) {
        size_t c = 0;
        unsigned i = 0;

        while (c < nall_tests && strcmp(covered[j].test, all_tests[c].name))
            c++;
        if (c == nall_tests) {
            print_error("%s: `covered` names %s, which is no case\n",
                        covered[j].fn, covered[j].test);
            missing++;
        }

        while (i < n && strcmp(covered[j].fn, names[i]))
            i++;
        if (i == n) {
            print_error("%s is in `covered` but not in weft.h\n",
                        covered[j].fn);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
    assert_int_equal(n, WEFT__COUNTOF(covered));
}

#define CASE(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        CASE(test_errors_and_names),
        CASE(test_runtime_bad_input),
        CASE(test_device_bad_input),
        CASE(test_module_bad_input),
        CASE(test_buffer_bad_input),
        CASE(test_buffer_ranges),
        CASE(test_devmem_bad_input),
        CASE(test_ipc_bad_input),
        CASE(test_graph_bad_input),
        CASE(test_add_kernel_bad_input),
        CASE(test_add_kernels_bad_input),
        CASE(test_add_node_bad_input),
        CASE(test_add_block_bad_input),
        CASE(test_other_runtime),
        CASE(test_nodes_and_edges),
        CASE(test_instantiate_bad_input),
        CASE(test_exec_bad_input),
        CASE(test_threads_launch_wait),
        CASE(test_threads_destroy_buffer),
        CASE(test_threads_destroy_module),
        CASE(test_threads_destroy_exec),
        CASE(test_native_bad_input),
        CASE(test_external_bad_input),
        CASE(test_features_bad_input),
        cmocka_unit_test(test_every_function_covered),
    };

    all_tests = tests;
    nall_tests = WEFT__COUNTOF(tests);
    return wt_run_group(argc, argv, tests, group_setup, group_teardown);
}
