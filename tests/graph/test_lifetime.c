/*
 * Lifetimes through the public API (the rule in weft.h): destroying a
 * module whose kernel a graph or executable graph names, or a buffer that
 * one names, is WEFT_EBUSY naming what holds it, changes nothing, and
 * succeeds once the holders are gone; also while another thread launches.
 */
#include "wt_test.h"

#include "wt_devices.h"
#include "wt_kernels.h"

#include <pthread.h>
#include <string.h>

#define N 64

static wt_devices devs;

static int setup(void **state)
{
    (void)state;
    wt_devices_open(&devs);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return weft_runtime_destroy(devs.rt);
}

/* A graph: addone over the first N u32 of buf (a handle: root or view). */
static weft_graph *addone_graph(weft_kernel *k, weft_buffer *buf)
{
    weft_arg args[] = {weft_arg_buffer(buf, 0, N * 4, WEFT_READ_WRITE),
                       weft_arg_i64(N)};
    weft_graph *g;

    assert_int_equal(weft_graph_create(devs.rt, &g), 0);
    assert_int_equal(weft_graph_add_kernel(g, k, weft_dims1(N), args, 2, NULL),
                     0);
    return g;
}

static void expect_values(weft_buffer *b, size_t off, uint32_t v)
{
    uint32_t out[N];

    assert_int_equal(weft_buffer_read(b, off, out, sizeof out), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(out[i], v);
}

static void test_module_held(void **state)
{
    weft_module *mod;
    weft_kernel *k;
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;
    uint32_t zero = 0;

    (void)state;
    assert_int_equal(wt_kernels_module(devs.rt, &mod), 0);
    assert_int_equal(weft_module_get_kernel(mod, "addone", &k), 0);
    assert_int_equal(weft_buffer_create(devs.rt, N * 4, &b), 0);
    assert_int_equal(weft_buffer_fill(b, 0, WEFT_WHOLE, &zero, 4), 0);
    g = addone_graph(k, b);
    /* A graph names the kernel: the module stays, and still works. */
    assert_int_equal(weft_module_destroy(mod), WEFT_EBUSY);
    assert_non_null(strstr(weft_last_error(), "kernel addone"));
    assert_non_null(strstr(weft_last_error(), "1 nodes of live graphs"));
    assert_int_equal(weft_module_get_kernel(mod, "addone", &k), 0);
    assert_int_equal(weft_graph_instantiate(g, NULL, &e), 0);
    assert_int_equal(weft_graph_destroy(g), 0);
    /* The executable graph alone holds it now. */
    assert_int_equal(weft_module_destroy(mod), WEFT_EBUSY);
    assert_non_null(strstr(weft_last_error(), "1 of live executable"));
    assert_int_equal(weft_exec_launch(e), 0);
    assert_int_equal(weft_exec_launch(e), 0);
    assert_int_equal(weft_exec_wait(e), 0);
    expect_values(b, 0, 2);
    assert_int_equal(weft_exec_destroy(e), 0);
    assert_int_equal(weft_module_destroy(mod), 0);
    assert_int_equal(weft_buffer_destroy(b), 0);
}

static void test_failed_add_holds_nothing(void **state)
{
    weft_arg bad[] = {weft_arg_i64(N)};
    weft_module *mod;
    weft_kernel *k;
    weft_buffer *b;
    weft_graph *g;

    (void)state;
    assert_int_equal(wt_kernels_module(devs.rt, &mod), 0);
    assert_int_equal(weft_module_get_kernel(mod, "addone", &k), 0);
    assert_int_equal(weft_buffer_create(devs.rt, N * 4, &b), 0);
    assert_int_equal(weft_graph_create(devs.rt, &g), 0);
    assert_int_equal(weft_graph_add_kernel(g, k, weft_dims1(N), bad, 1, NULL),
                     WEFT_EARGS);
    assert_int_equal(weft_graph_add_fill(g, b, 0, N * 4, "\1\2\3", 3, NULL),
                     WEFT_EINVAL);
    /* Neither failed add holds its kernel or buffer. */
    assert_int_equal(weft_module_destroy(mod), 0);
    assert_int_equal(weft_buffer_destroy(b), 0);
    assert_int_equal(weft_graph_destroy(g), 0);
}

static void test_buffer_held(void **state)
{
    weft_module *mod;
    weft_kernel *k;
    weft_buffer *b, *v;
    weft_graph *g;
    weft_exec *e;
    uint32_t seven = 7;

    (void)state;
    assert_int_equal(wt_kernels_module(devs.rt, &mod), 0);
    assert_int_equal(weft_module_get_kernel(mod, "addone", &k), 0);
    assert_int_equal(weft_buffer_create(devs.rt, 2 * N * 4, &b), 0);
    assert_int_equal(weft_buffer_view(b, N * 4, WEFT_WHOLE, &v), 0);
    assert_int_equal(weft_buffer_fill(b, 0, WEFT_WHOLE, &seven, 4), 0);
    /* The graph names the view only. */
    g = addone_graph(k, v);
    assert_int_equal(weft_buffer_destroy(v), WEFT_EBUSY);
    assert_non_null(strstr(weft_last_error(), "1 accesses of live graphs"));
    assert_int_equal(weft_buffer_destroy(b), WEFT_EBUSY);
    assert_non_null(strstr(weft_last_error(), "live views"));
    /* Refused destroys changed nothing: the graph runs as built. */
    assert_int_equal(weft_graph_instantiate(g, NULL, &e), 0);
    assert_int_equal(weft_graph_destroy(g), 0);
    assert_int_equal(weft_buffer_destroy(v), WEFT_EBUSY);
    assert_non_null(strstr(weft_last_error(), "executable graphs"));
    assert_int_equal(weft_exec_launch(e), 0);
    assert_int_equal(weft_exec_wait(e), 0);
    expect_values(b, 0, 7);
    expect_values(b, N * 4, 8);
    assert_int_equal(weft_exec_destroy(e), 0);
    assert_int_equal(weft_buffer_destroy(v), 0);
    assert_int_equal(weft_buffer_destroy(b), 0);
    assert_int_equal(weft_module_destroy(mod), 0);
}

typedef struct launcher {
    weft_exec *e;
    int launches, rc;
} launcher;

static void *launch_loop(void *p)
{
    launcher *l = p;

    for (int i = 0; i < l->launches && l->rc == 0; i++)
        if ((l->rc = weft_exec_launch(l->e)) == 0 && i % 8 == 7)
            l->rc = weft_exec_wait(l->e);
    if (l->rc == 0)
        l->rc = weft_exec_wait(l->e);
    return NULL;
}

/* Destroys from one thread while another launches: all refused. */
static void test_destroy_while_launching(void **state)
{
    launcher l = {NULL, 200, 0};
    weft_module *mod;
    weft_kernel *k;
    weft_buffer *b;
    weft_graph *g;
    pthread_t t;
    uint32_t zero = 0;
    int refused = 0;

    (void)state;
    assert_int_equal(wt_kernels_module(devs.rt, &mod), 0);
    assert_int_equal(weft_module_get_kernel(mod, "addone", &k), 0);
    assert_int_equal(weft_buffer_create(devs.rt, N * 4, &b), 0);
    assert_int_equal(weft_buffer_fill(b, 0, WEFT_WHOLE, &zero, 4), 0);
    g = addone_graph(k, b);
    assert_int_equal(weft_graph_instantiate(g, NULL, &l.e), 0);
    assert_int_equal(weft_graph_destroy(g), 0);
    assert_int_equal(pthread_create(&t, NULL, launch_loop, &l), 0);
    for (int i = 0; i < 50; i++) {
        refused += weft_module_destroy(mod) == WEFT_EBUSY;
        refused += weft_buffer_destroy(b) == WEFT_EBUSY;
        refused += weft_runtime_destroy(devs.rt) == WEFT_EBUSY;
    }
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(l.rc, 0);
    assert_int_equal(refused, 150);
    expect_values(b, 0, 200);
    assert_int_equal(weft_exec_destroy(l.e), 0);
    assert_int_equal(weft_buffer_destroy(b), 0);
    assert_int_equal(weft_module_destroy(mod), 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_module_held),
        cmocka_unit_test(test_failed_add_holds_nothing),
        cmocka_unit_test(test_buffer_held),
        cmocka_unit_test(test_destroy_while_launching),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
