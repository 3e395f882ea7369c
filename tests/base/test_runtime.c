/* Device discovery and selection through the public API. */
#include "wt_test.h"

#include <weft.h>

#include <stdlib.h>
#include <string.h>

static weft_runtime *make(const char *devices, const char *sim, int *rc)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_runtime *rt = NULL;

    o.devices = devices;
    o.sim_config = sim;
    *rc = weft_runtime_create(&rt, &o);
    return rt;
}

static weft_device_info info_of(weft_runtime *rt, unsigned i)
{
    weft_device_info info;

    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    assert_int_equal(weft_device_get_info(weft_runtime_device(rt, i), &info),
                     0);
    return info;
}

static void unknown_driver_is_einval(void **state)
{
    int rc;
    (void)state;

    assert_null(make("gpu", NULL, &rc));
    assert_int_equal(rc, WEFT_EINVAL);
    assert_non_null(strstr(weft_last_error(), "unknown driver 'gpu'"));
    assert_null(make("host:x", NULL, &rc));
    assert_int_equal(rc, WEFT_EINVAL);
}

static void missing_index_is_enodev(void **state)
{
    int rc;
    (void)state;

    assert_null(make("sim:7", "devices=2", &rc));
    assert_int_equal(rc, WEFT_ENODEV);
    assert_non_null(strstr(weft_last_error(), "sim:7"));
}

static void sim_selection_and_config(void **state)
{
    weft_runtime *rt;
    weft_device_info info;
    int rc;
    (void)state;

    rt = make("sim", "devices=3", &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(weft_runtime_device_count(rt), 3);
    for (unsigned i = 0; i < 3; i++) {
        info = info_of(rt, i);
        assert_string_equal(info.driver, "sim");
        assert_int_equal(info.index, i);
        assert_int_equal(info.driver_index, i);
        assert_int_equal(info.type, WEFT_DEVICE_SIMULATED);
        assert_true(info.global_mem > 0);
        assert_true(strlen(info.cpuset) > 0);
        assert_true(info.ncores > 0);
    }
    weft_runtime_destroy(rt);

    rt = make("sim:1", "devices=3", &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(weft_runtime_device_count(rt), 1);
    assert_int_equal(info_of(rt, 0).driver_index, 1);
    weft_runtime_destroy(rt);

    assert_null(make("sim", "devices=banana", &rc));
    assert_int_equal(rc, WEFT_EINVAL);
    assert_non_null(strstr(weft_last_error(), "devices"));
}

static void drivers_in_order_and_peers(void **state)
{
    weft_runtime *rt;
    unsigned n, nsim = 0, nhost = 0;
    int rc, can = 1;
    (void)state;

    rt = make("sim,host", "devices=2", &rc);
    assert_int_equal(rc, 0);
    n = weft_runtime_device_count(rt);
    assert_true(n >= 3);
    /* host devices come before sim devices, whatever the list's order */
    assert_string_equal(info_of(rt, 0).driver, "host");
    assert_string_equal(info_of(rt, n - 1).driver, "sim");
    for (unsigned i = 0; i < n; i++) {
        weft_device_info info = info_of(rt, i);

        nsim += strcmp(info.driver, "sim") == 0;
        nhost += strcmp(info.driver, "host") == 0;
    }
    assert_int_equal(nsim, 2);
    assert_int_equal(nhost, n - 2);
    /* devices of different drivers never copy peer-to-peer */
    assert_int_equal(weft_device_can_access_peer(weft_runtime_device(rt, 0),
                                                 weft_runtime_device(rt, n - 1),
                                                 &can),
                     0);
    assert_int_equal(can, 0);
    assert_int_equal(weft_device_can_access_peer(weft_runtime_device(rt, n - 2),
                                                 weft_runtime_device(rt, n - 1),
                                                 &can),
                     0);
    assert_int_equal(can, 1); /* the default sim machine has peer access */
    weft_runtime_destroy(rt);
}

static void environment_overrides_options(void **state)
{
    weft_runtime *rt;
    int rc;
    (void)state;

    setenv("WEFT_DEVICES", "sim", 1);
    setenv("WEFT_SIM", "devices=4", 1);
    rt = make("host", "devices=1", &rc);
    unsetenv("WEFT_DEVICES");
    unsetenv("WEFT_SIM");
    assert_int_equal(rc, 0);
    assert_int_equal(weft_runtime_device_count(rt), 4);
    assert_string_equal(info_of(rt, 0).driver, "sim");
    weft_runtime_destroy(rt);
}

static void absent_driver_says_why(void **state)
{
    weft_runtime *rt;
    const char *name, *reason;
    unsigned nd = 0;
    int rc, status = 0, found = 0;
    (void)state;

    rt = make("cuda,opencl,host", NULL, &rc);
    assert_int_equal(rc, 0);
    for (unsigned d = 0; d < weft_runtime_driver_count(rt); d++) {
        assert_int_equal(
            weft_runtime_driver(rt, d, &name, &nd, &status, &reason), 0);
        if (strcmp(name, "sim") == 0) {
            assert_int_equal(nd, 0); /* not selected */
            assert_non_null(strstr(reason, "not selected"));
        }
        if (strcmp(name, "host") == 0) {
            found = 1;
            assert_true(nd >= 1);
        }
        if (nd == 0) /* e.g. cuda on a machine without libcuda */
            assert_true(strlen(reason) > 0);
    }
    assert_true(found);
    weft_runtime_destroy(rt);
}

static void bad_options_and_info_size(void **state)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_runtime *rt = NULL;
    weft_device_info info;
    int rc;
    (void)state;

    o.size = 3;
    assert_int_equal(weft_runtime_create(&rt, &o), WEFT_EINVAL);
    assert_int_equal(weft_runtime_create(NULL, NULL), WEFT_EINVAL);
    rt = make("sim:0", NULL, &rc);
    assert_int_equal(rc, 0);
    info.size = 1;
    assert_int_equal(weft_device_get_info(weft_runtime_device(rt, 0), &info),
                     WEFT_EINVAL);
    assert_null(weft_runtime_device(rt, 5));
    {
        weft_stats st = {.size = sizeof st};

        /* NULL runtime or result: refused, nothing read (UBSan watches). */
        assert_int_equal(weft_runtime_get_stats(NULL, &st), WEFT_EINVAL);
        assert_non_null(strstr(weft_last_error(), "runtime is NULL"));
        assert_int_equal(weft_runtime_get_stats(rt, NULL), WEFT_EINVAL);
        assert_int_equal(weft_runtime_get_stats(rt, &st), 0);
    }
    assert_int_equal(weft_runtime_destroy(rt), 0);
    assert_int_equal(weft_runtime_destroy(NULL), 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unknown_driver_is_einval),
        cmocka_unit_test(missing_index_is_enodev),
        cmocka_unit_test(sim_selection_and_config),
        cmocka_unit_test(drivers_in_order_and_peers),
        cmocka_unit_test(environment_overrides_options),
        cmocka_unit_test(absent_driver_says_why),
        cmocka_unit_test(bad_options_and_info_size),
    };
    return wt_run_group(argc, argv, tests, NULL, NULL);
}
