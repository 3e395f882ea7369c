/*
 * Loading the OpenCL ICD loader at run time (opencl_lib.c):
 * - missing_library: with WEFT_OPENCL_LIBRARY naming a file that does not
 *   exist (CTest sets it), a runtime still opens with its other drivers and
 *   the opencl driver has no devices, WEFT_ENOTSUP, and a detail naming the
 *   library.
 * - load_failures: a failure injected at each dlopen and dlsym site in turn
 *   makes discovery fail with WEFT_ENOTSUP and a detail, holds nothing (the
 *   handle is closed; the sanitizer build checks leaks), and the next load
 *   works in full.
 * - last_runtime_closes: the handle stays open while any runtime uses the
 *   driver and is closed with the last one.
 * WEFT_OPENCL_LIBRARY set runs the first, else the other two, which need
 * an OpenCL device (PoCL in CI) and exit 77 without one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "drivers/opencl/opencl_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OK(call) assert_int_equal((call), 0)

/* The opencl driver's entry in rt: its status and reason. */
static void opencl_status(weft_runtime *rt, unsigned *ndevices, int *status,
                          const char **reason)
{
    for (unsigned i = 0; i < weft_runtime_driver_count(rt); i++) {
        const char *name;

        OK(weft_runtime_driver(rt, i, &name, ndevices, status, reason));
        if (strcmp(name, "opencl") == 0)
            return;
    }
    fail_msg("the runtime lists no opencl driver");
}

static int runtime_open(weft_runtime **rt)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;

    o.devices = "opencl,host,sim";
    return weft_runtime_create(rt, &o);
}

static int opencl_present(void)
{
    weft__driver_config cfg = {NULL, 0, 0, 0};
    weft__platform **p;
    unsigned n;

    if (weft__driver_opencl.platforms_open(&cfg, &p, &n) < 0)
        return 0;
    weft__driver_opencl.platforms_close(p, n);
    return 1;
}

static void missing_library(void **state)
{
    const char *path = getenv("WEFT_OPENCL_LIBRARY");
    weft__driver_config cfg = {NULL, 0, 0, 0};
    weft__platform *none, **p = &none;
    weft_runtime *rt;
    const char *reason;
    unsigned n = 1, nd;
    int st;

    (void)state;
    assert_int_equal(weft__driver_opencl.platforms_open(&cfg, &p, &n),
                     WEFT_ENOTSUP);
    assert_null(p);
    assert_int_equal(n, 0);
    assert_non_null(strstr(weft_last_error(), path));
    assert_null(weft__cl.lib);

    OK(runtime_open(&rt));
    assert_true(weft_runtime_device_count(rt) > 0);
    opencl_status(rt, &nd, &st, &reason);
    assert_int_equal(nd, 0);
    assert_int_equal(st, WEFT_ENOTSUP);
    assert_non_null(strstr(reason, path));
    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++) {
        weft_device_info info = {.size = sizeof info};

        OK(weft_device_get_info(weft_runtime_device(rt, i), &info));
        assert_string_not_equal(info.driver, "opencl");
    }
    OK(weft_runtime_destroy(rt));
}

/* A loaded driver works in full: a fill and a copy back on device 0. */
static void check_works(void)
{
    weft__driver_config cfg = {NULL, 0, 0, 0};
    weft__platform **p;
    weft__context *ctx;
    weft__queue *q;
    weft__mem *m;
    const uint32_t pattern = 0x5eed;
    uint32_t out[64];
    unsigned n;

    OK(weft__driver_opencl.platforms_open(&cfg, &p, &n));
    assert_non_null(weft__cl.lib);
    OK(weft__drv_context_create(p[0]->devices[0], &ctx));
    OK(weft__drv_queue_create(ctx, NULL, &q));
    OK(weft__drv_mem_alloc(ctx, sizeof out, &m));
    OK(weft__drv_fill(q, m, 0, &pattern, sizeof pattern, sizeof out));
    OK(weft__drv_copy_d2h(q, out, m, 0, sizeof out));
    OK(weft__drv_queue_sync(q));
    for (size_t i = 0; i < WEFT__COUNTOF(out); i++)
        assert_int_equal(out[i], pattern);
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_mem_free(m));
    OK(weft__drv_context_destroy(ctx));
    weft__driver_opencl.platforms_close(p, n);
    assert_null(weft__cl.lib);
}

static void load_failures(void **state)
{
    weft__driver_config cfg = {NULL, 0, 0, 0};
    long n, failed = 0;

    (void)state;
    for (n = 1; n < 1000; n++) {
        weft__platform **p = NULL;
        weft_runtime *rt;
        const char *reason;
        unsigned np = 0, nd;
        int rc, st, fired;

        /* the driver alone */
        weft__fault_arm(n, "opencl.dl");
        rc = weft__driver_opencl.platforms_open(&cfg, &p, &np);
        fired = weft__fault_fired();
        weft__fault_disarm();
        if (!fired) {
            OK(rc);
            weft__driver_opencl.platforms_close(p, np);
            break;
        }
        if (rc == 0) {
            /* an optional entry point: the driver does without it */
            weft__driver_opencl.platforms_close(p, np);
        } else {
            failed++;
            assert_int_equal(rc, WEFT_ENOTSUP);
            assert_null(p);
            assert_int_equal(np, 0);
            assert_non_null(strstr(weft_last_error(), "libOpenCL"));
        }
        assert_null(weft__cl.lib);

        /* through a runtime, which keeps its other devices */
        weft__fault_arm(n, "opencl.dl");
        rc = runtime_open(&rt);
        weft__fault_disarm();
        OK(rc);
        assert_true(weft_runtime_device_count(rt) > 0);
        opencl_status(rt, &nd, &st, &reason);
        if (st < 0) {
            assert_int_equal(nd, 0);
            assert_int_equal(st, WEFT_ENOTSUP);
            assert_non_null(strstr(reason, "libOpenCL"));
        } else {
            assert_true(nd > 0);
        }
        OK(weft_runtime_destroy(rt));
        assert_null(weft__cl.lib);
    }
    /* dlopen and every required symbol failed once */
    assert_true(failed > 10 && n < 1000);
    print_message("%ld load failure points, %ld failed the load\n", n - 1,
                  failed);
    check_works();
}

static void last_runtime_closes(void **state)
{
    weft_runtime *a, *b;

    (void)state;
    assert_null(weft__cl.lib);
    OK(runtime_open(&a));
    assert_non_null(weft__cl.lib);
    OK(runtime_open(&b));
    OK(weft_runtime_destroy(a));
    assert_non_null(weft__cl.lib);
    OK(weft_runtime_destroy(b));
    assert_null(weft__cl.lib);
    check_works();
}

int main(void)
{
    const struct CMUnitTest without[] = {
        cmocka_unit_test(missing_library),
    };
    const struct CMUnitTest with[] = {
        cmocka_unit_test(load_failures),
        cmocka_unit_test(last_runtime_closes),
    };
    const char *path = getenv("WEFT_OPENCL_LIBRARY");

    if (path && path[0])
        return cmocka_run_group_tests(without, NULL, NULL);
    if (!opencl_present()) {
        printf("skipped: %s\n", weft_last_error());
        return 77;
    }
    return cmocka_run_group_tests(with, NULL, NULL);
}
