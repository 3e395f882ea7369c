/*
 * The sim as a program finds it: with no configuration it computes (a
 * kernel's result read back is right), and with real_data=0 (timing only)
 * the first bytes read back from a device say, in one warning, that they
 * were not computed.
 */
#include "wt_test.h"

#include "wt_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { M = 1024 };

static unsigned warnings;
static char last[512];

static void sink(weft_log_level level, const char *subsystem,
                 const char *message, void *user)
{
    (void)user;
    if (level == WEFT_LOG_WARN && !strcmp(subsystem, "sim")) {
        warnings++;
        snprintf(last, sizeof last, "%s", message);
    }
}

/* twice(y, x) on the sim device, x = i; y read back into out. */
static void run_twice(const char *sim_config, uint32_t *out)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    static uint32_t x0[M];
    weft_runtime *rt;
    weft_module *mod;
    weft_kernel *k;
    weft_buffer *x, *y;
    weft_graph *g;
    weft_exec *e;

    for (uint32_t i = 0; i < M; i++)
        x0[i] = i;
    o.devices = "sim";
    o.sim_config = sim_config;
    check(weft_runtime_create(&rt, &o));
    if (wt_kernels_module(rt, &mod) < 0)
        fail_msg("kernels: %s", weft_last_error());
    check(weft_module_get_kernel(mod, "twice", &k));
    check(weft_buffer_create(rt, sizeof x0, &x));
    check(weft_buffer_write(x, 0, x0, sizeof x0));
    check(weft_buffer_create(rt, sizeof x0, &y));
    check(weft_buffer_fill(y, 0, WEFT_WHOLE, &(uint32_t){7}, 4));
    check(weft_graph_create(rt, &g));
    {
        weft_arg a[] = {weft_arg_buffer(y, 0, WEFT_WHOLE, WEFT_WRITE),
                        weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ),
                        weft_arg_i64(M)};

        check(weft_graph_add_kernel(g, k, weft_dims1(M), a, 3, NULL));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_buffer_read(y, 0, out, sizeof x0));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_module_destroy(mod));
    check(weft_runtime_destroy(rt));
}

static void computes_by_default(void **state)
{
    static uint32_t out[M];

    (void)state;
    unsetenv("WEFT_SIM");
    warnings = 0;
    run_twice(NULL, out);
    for (uint32_t i = 0; i < M; i++)
        if (out[i] != 2 * i)
            fail_msg("y[%u] = %u, want %u", i, out[i], 2 * i);
    assert_int_equal(warnings, 0);
    run_twice("devices=1,real_data=1", out);
    assert_int_equal(out[M - 1], 2 * (M - 1));
}

static void timing_only_warns_once(void **state)
{
    static uint32_t out[M];

    (void)state;
    unsetenv("WEFT_SIM");
    warnings = 0;
    run_twice("devices=1,real_data=0", out);
    printf("# %s\n", last);
    assert_int_equal(warnings, 1);
    assert_non_null(strstr(last, "were not computed"));
    assert_non_null(strstr(last, "real_data=0"));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(computes_by_default),
        cmocka_unit_test(timing_only_warns_once),
    };

    weft_log_set_sink(sink, NULL);
    return wt_run_group(argc, argv, tests, NULL, NULL);
}
