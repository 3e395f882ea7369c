/*
 * Eviction: a device memory limit of 1 MiB and a graph whose data is
 * several times that, checked against a host reference; and a node that
 * alone needs more than the limit, which fails cleanly naming the node.
 * The runtime is made here with the limit as an option, on the devices of
 * WEFT_DEVICES.
 */
#include "wt_test.h"

#include "wt_kernels.h"
#include "wt_devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LIMIT = 1 << 20, NB = 16, BM = 1 << 16, BN = BM * 4 };

static weft_runtime *rt;
static weft_module *mod;
static weft_kernel *k_advance, *k_twice;

static int setup(void **state)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;

    (void)state;
    o.device_mem_limit = LIMIT;
    if (weft_runtime_create(&rt, &o) < 0 || wt_kernels_module(rt, &mod) < 0 ||
        weft_module_get_kernel(mod, "advance", &k_advance) < 0 ||
        weft_module_get_kernel(mod, "twice", &k_twice) < 0) {
        fprintf(stderr, "setup: %s\n", weft_last_error());
        return -1;
    }
    if (weft_runtime_device_count(rt) == 0) {
        printf("skipped: no device\n");
        exit(WT_SKIP);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    weft_module_destroy(mod);
    return weft_runtime_destroy(rt);
}

/*
 * 16 buffers of 256 KiB (4 MiB, four times the limit; a node needs at most
 * two, 512 KiB): each advanced on the devices in turn, then each doubled
 * into its neighbour, twice over, so that modified replicas must be
 * written back and clean ones dropped, launch after launch.
 */
static void test_working_set_beyond_limit(void **state)
{
    static uint32_t data[NB][BM], ref[NB][BM];
    unsigned nd = weft_runtime_device_count(rt);
    weft_buffer *b[NB];
    weft_graph *g;
    weft_exec *e;
    weft_stats s = {.size = sizeof s};

    (void)state;
    for (int i = 0; i < NB; i++)
        for (uint32_t j = 0; j < BM; j++)
            ref[i][j] = data[i][j] = (uint32_t)i * 1000003u + j;
    check(weft_graph_create(rt, &g));
    for (int i = 0; i < NB; i++)
        check(weft_buffer_wrap(rt, data[i], BN, &b[i]));
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < NB; i++) {
            weft_arg a[] = {weft_arg_buffer(b[i], 0, BN, WEFT_READ_WRITE),
                            weft_arg_u32((uint32_t)(pass + 1)),
                            weft_arg_i64(BM)};
            weft_node n;

            check(
                weft_graph_add_kernel(g, k_advance, weft_dims1(BM), a, 3, &n));
            check(weft_graph_set_device(
                g, n, weft_runtime_device(rt, (unsigned)i % nd)));
        }
        for (int i = 0; i + 1 < NB; i += 2) {
            weft_arg a[] = {weft_arg_buffer(b[i + 1], 0, BN, WEFT_WRITE),
                            weft_arg_buffer(b[i], 0, BN, WEFT_READ),
                            weft_arg_i64(BM)};

            check(
                weft_graph_add_kernel(g, k_twice, weft_dims1(BM), a, 3, NULL));
        }
    }
    check(weft_graph_instantiate(g, NULL, &e));
    for (int launch = 0; launch < 2; launch++) {
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < NB; i++)
                for (uint32_t j = 0; j < BM; j++)
                    ref[i][j] =
                        wt_advance_value(ref[i][j], (uint32_t)(pass + 1));
            for (int i = 0; i + 1 < NB; i += 2)
                for (uint32_t j = 0; j < BM; j++)
                    ref[i + 1][j] = 2 * ref[i][j];
        }
    }
    check(weft_runtime_get_stats(rt, &s));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    for (int i = 0; i < NB; i++) {
        check(weft_buffer_destroy(b[i]));
        for (uint32_t j = 0; j < BM; j++)
            if (data[i][j] != ref[i][j])
                fail_msg("buffer %d element %u is %u, want %u", i, j,
                         data[i][j], ref[i][j]);
    }
    printf("# %llu evictions, %llu write-backs, %llu bytes written back\n",
           (unsigned long long)s.evictions, (unsigned long long)s.writebacks,
           (unsigned long long)s.evict_bytes);
    assert_true(s.evictions > 0);
    assert_true(s.writebacks > 0);
    assert_true(s.writebacks <= s.evictions);
    assert_true(s.pool_bytes <= (uint64_t)LIMIT * nd);
}

/* A node that alone needs 2 MiB under a 1 MiB limit: WEFT_EDEVMEM, the
 * node named, and the buffers keep their bytes. */
static void test_node_beyond_limit(void **state)
{
    enum { HM = 1 << 19, HN = HM * 4 };
    uint32_t *x = malloc(HN);
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;
    int rc;

    (void)state;
    assert_non_null(x);
    for (uint32_t j = 0; j < HM; j++)
        x[j] = j;
    check(weft_buffer_wrap(rt, x, HN, &b));
    check(weft_graph_create(rt, &g));
    check(weft_graph_add_empty(g, NULL));
    {
        weft_arg a[] = {weft_arg_buffer(b, 0, HN, WEFT_READ_WRITE),
                        weft_arg_u32(1), weft_arg_i64(HM)};

        check(weft_graph_add_kernel(g, k_advance, weft_dims1(HM), a, 3, NULL));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    rc = weft_exec_wait(e);
    assert_int_equal(rc, WEFT_EDEVMEM);
    if (!strstr(weft_last_error(), "node 1 (kernel advance)"))
        fail_msg("the error does not name the node: %s", weft_last_error());
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
    for (uint32_t j = 0; j < HM; j++)
        assert_int_equal(x[j], j);
    free(x);
}

/*
 * 128 buffers of 16 KiB (2 MiB, twice the limit), each advanced by one
 * node on the first device: eviction frees several extents per wait for
 * the device (a sixteenth of the limit, four of these), not one.
 */
static void test_evicts_in_rounds(void **state)
{
    enum { NS = 128, SM = 1 << 12, SN = SM * 4 };
    static uint32_t data[NS][SM];
    weft_buffer *b[NS];
    weft_graph *g;
    weft_exec *e;
    weft_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
    uint64_t ev, rounds;

    (void)state;
    for (int i = 0; i < NS; i++)
        for (uint32_t j = 0; j < SM; j++)
            data[i][j] = (uint32_t)i * 7919u + j;
    check(weft_graph_create(rt, &g));
    for (int i = 0; i < NS; i++) {
        weft_arg a[3];
        weft_node n;

        check(weft_buffer_wrap(rt, data[i], SN, &b[i]));
        a[0] = weft_arg_buffer(b[i], 0, SN, WEFT_READ_WRITE);
        a[1] = weft_arg_u32(3);
        a[2] = weft_arg_i64(SM);
        check(weft_graph_add_kernel(g, k_advance, weft_dims1(SM), a, 3, &n));
        check(weft_graph_set_device(g, n, weft_runtime_device(rt, 0)));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_runtime_get_stats(rt, &s0));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_runtime_get_stats(rt, &s1));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    for (int i = 0; i < NS; i++) {
        check(weft_buffer_destroy(b[i]));
        for (uint32_t j = 0; j < SM; j++)
            if (data[i][j] != wt_advance_value((uint32_t)i * 7919u + j, 3))
                fail_msg("buffer %d element %u is %u", i, j, data[i][j]);
    }
    ev = s1.evictions - s0.evictions;
    rounds = s1.evict_rounds - s0.evict_rounds;
    printf("# %llu evictions in %llu rounds\n", (unsigned long long)ev,
           (unsigned long long)rounds);
    assert_true(rounds > 0);
    assert_true(ev >= 4 * rounds);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_working_set_beyond_limit),
        cmocka_unit_test(test_node_beyond_limit),
        cmocka_unit_test(test_evicts_in_rounds),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
