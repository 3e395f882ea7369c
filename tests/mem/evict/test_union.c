/*
 * The device memory limit as the README states it: a node needs, on its
 * device, the union of the byte ranges it touches in each root buffer
 * (overlapping or adjacent ranges, through views or not, counted once,
 * each run widened to whole 256-byte granules), not their sum; only a
 * node whose own need passes the limit fails, with WEFT_EDEVMEM naming the
 * node, its need and the limit. The runtime is made here with a limit of
 * 12 KiB, on the devices of WEFT_DEVICES.
 */
#include "wt_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LIMIT = 12 << 10 };

static weft_runtime *rt;
static weft_module *mod;
static weft_kernel *k_sum3, *k_acc2;

/* sum3(out, a, b, c, n): out[i] = a[i] + b[i] + c[i] */
static void host_sum3(const weft_host_group *g, void *const *args)
{
    uint32_t *out = args[0];
    const uint32_t *a = args[1], *b = args[2], *c = args[3];
    int64_t n = *(const int64_t *)args[4];

    for (uint32_t l = 0; l < g->group_size[0]; l++) {
        int64_t i = (int64_t)g->group[0] * g->group_size[0] + l;

        if (i < n)
            out[i] = a[i] + b[i] + c[i];
    }
}

/* acc2(out, a, b, n): out[i] = a[i] + b[i] */
static void host_acc2(const weft_host_group *g, void *const *args)
{
    uint32_t *out = args[0];
    const uint32_t *a = args[1], *b = args[2];
    int64_t n = *(const int64_t *)args[3];

    for (uint32_t l = 0; l < g->group_size[0]; l++) {
        int64_t i = (int64_t)g->group[0] * g->group_size[0] + l;

        if (i < n)
            out[i] = a[i] + b[i];
    }
}

static const weft_param_type sum3_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER,
    WEFT_PARAM_I64};
static const weft_param_type acc2_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_I64};

static const weft_host_kernel host_kernels[] = {
    {"sum3", host_sum3, 5, sum3_params, NULL, NULL, NULL},
    {"acc2", host_acc2, 4, acc2_params, NULL, NULL, NULL},
};

static const char portable[] =
    "WEFT_KERNEL void sum3(WEFT_GLOBAL unsigned int *o,\n"
    "    WEFT_GLOBAL const unsigned int *a,\n"
    "    WEFT_GLOBAL const unsigned int *b,\n"
    "    WEFT_GLOBAL const unsigned int *c, long n)\n"
    "{ long i = weft_global_id(0); if (i < n) o[i] = a[i] + b[i] + c[i]; }\n"
    "WEFT_KERNEL void acc2(WEFT_GLOBAL unsigned int *o,\n"
    "    WEFT_GLOBAL const unsigned int *a,\n"
    "    WEFT_GLOBAL const unsigned int *b,\n"
    "    long n)\n"
    "{ long i = weft_global_id(0); if (i < n) o[i] = a[i] + b[i]; }\n";

static int setup(void **state)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    const weft_module_source v[] = {
        {WEFT_SOURCE_HOST, host_kernels, 2, NULL, "union"},
        {WEFT_SOURCE_PORTABLE, portable, 0, NULL, "union"},
    };

    (void)state;
    o.device_mem_limit = LIMIT;
    if (weft_runtime_create(&rt, &o) < 0) {
        fprintf(stderr, "setup: %s\n", weft_last_error());
        return -1;
    }
    if (weft_runtime_device_count(rt) == 0) {
        printf("skipped: no device\n");
        exit(77);
    }
    if (weft_module_create(rt, v, 2, &mod) < 0 ||
        weft_module_get_kernel(mod, "sum3", &k_sum3) < 0 ||
        weft_module_get_kernel(mod, "acc2", &k_acc2) < 0) {
        fprintf(stderr, "setup: %s\n", weft_last_error());
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    weft_module_destroy(mod);
    return weft_runtime_destroy(rt);
}

static weft_device *dev(unsigned i)
{
    return weft_runtime_device(rt, i % weft_runtime_device_count(rt));
}

/* An element argument: elements [at, at + n) of b, as bytes. */
static weft_arg elems(weft_buffer *b, size_t at, size_t n, weft_access mode)
{
    return weft_arg_buffer(b, at * 4, n * 4, mode);
}

static void launch_and_wait(weft_graph *g, int launches)
{
    weft_exec *e;

    check(weft_graph_instantiate(g, NULL, &e));
    for (int i = 0; i < launches; i++) {
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
    }
    check(weft_exec_destroy(e));
}

/*
 * The case: three arguments of sum3 overlapping inside one buffer
 * of 4,804 bytes (elements [0, 689), [256, 945), [512, 1201): union 4,804
 * bytes, sum 8,268), the result in a second buffer; on each device, twice.
 * (Offsets here are multiples of 512 bytes, which OpenCL devices ask of
 * arguments: PoCL 128, NVIDIA 512.) The extents made one argument at a
 * time, each new one taking over the last while that stayed held, needed
 * more than 12 KiB.
 */
static void test_three_overlapping_args(void **state)
{
    enum { N = 689, X = 1201 };
    uint32_t x[X], y[N];
    weft_buffer *bx, *by;
    weft_graph *g;

    (void)state;
    for (uint32_t i = 0; i < X; i++)
        x[i] = i * 7u + 1;
    memset(y, 0, sizeof y);
    check(weft_buffer_wrap(rt, x, sizeof x, &bx));
    check(weft_buffer_wrap(rt, y, sizeof y, &by));
    check(weft_graph_create(rt, &g));
    for (unsigned d = 0; d < 2; d++) {
        weft_arg a[] = {elems(by, 0, N, WEFT_WRITE), elems(bx, 0, N, WEFT_READ),
                        elems(bx, 256, N, WEFT_READ),
                        elems(bx, 512, N, WEFT_READ), weft_arg_i64(N)};
        weft_node n;

        check(weft_graph_add_kernel(g, k_sum3, weft_dims1(N), a, 5, &n));
        check(weft_graph_set_device(g, n, dev(d)));
    }
    launch_and_wait(g, 2);
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(by));
    check(weft_buffer_destroy(bx));
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(y[i], x[i] + x[i + 256] + x[i + 512]);
}

/*
 * Three arguments in one buffer, all of them there: two reads that
 * overlap, and the result right after them (adjacent: one run of 3,584
 * bytes of a buffer of 4,804), written by nodes on every device in turn.
 * (Offsets are multiples of 512 bytes, which NVIDIA's OpenCL asks.)
 */
static void test_overlap_with_result_in_place(void **state)
{
    enum { N = 384, X = 1201 };
    uint32_t x[X], ref[X];
    weft_buffer *bx;
    weft_graph *g;

    (void)state;
    for (uint32_t i = 0; i < X; i++)
        ref[i] = x[i] = i * 3u + 5;
    check(weft_buffer_wrap(rt, x, sizeof x, &bx));
    check(weft_graph_create(rt, &g));
    for (unsigned d = 0; d < 4; d++) {
        /* out [512, 896), a [0, 384), b [128, 512) */
        weft_arg a[] = {elems(bx, 512, N, WEFT_WRITE),
                        elems(bx, 0, N, WEFT_READ),
                        elems(bx, 128, N, WEFT_READ), weft_arg_i64(N)};
        weft_node n;

        check(weft_graph_add_kernel(g, k_acc2, weft_dims1(N), a, 4, &n));
        check(weft_graph_set_device(g, n, dev(d)));
    }
    launch_and_wait(g, 1);
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(bx));
    for (uint32_t i = 0; i < N; i++)
        ref[512 + i] = ref[i] + ref[128 + i];
    assert_memory_equal(x, ref, sizeof x);
}

/*
 * A view and its parent in one node: the view's range lies inside the
 * parent's, so the node needs the parent's range once.
 */
static void test_view_and_parent(void **state)
{
    enum { N = 1024, X = 2560 };
    uint32_t *x = malloc(X * 4), *ref = malloc(X * 4);
    weft_buffer *bx, *v;
    weft_graph *g;

    (void)state;
    assert_non_null(x);
    assert_non_null(ref);
    for (uint32_t i = 0; i < X; i++)
        ref[i] = x[i] = i ^ 0x5a5au;
    check(weft_buffer_wrap(rt, x, X * 4, &bx));
    /* v: elements [512, 2560) of x */
    check(weft_buffer_view(bx, 512 * 4, 2048 * 4, &v));
    check(weft_graph_create(rt, &g));
    for (unsigned d = 0; d < 2; d++) {
        /* out: x [1536, 2560) through v; a: x [0, 1024); b: x [512, 1536)
         * through v: union 10,240 bytes, sum 12,288 */
        weft_arg a[] = {elems(v, 1024, N, WEFT_WRITE),
                        elems(bx, 0, N, WEFT_READ), elems(v, 0, N, WEFT_READ),
                        weft_arg_i64(N)};
        weft_node n;

        check(weft_graph_add_kernel(g, k_acc2, weft_dims1(N), a, 4, &n));
        check(weft_graph_set_device(g, n, dev(d)));
    }
    launch_and_wait(g, 1);
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(v));
    check(weft_buffer_destroy(bx));
    for (unsigned d = 0; d < 2; d++)
        for (uint32_t i = 0; i < N; i++)
            ref[1536 + i] = ref[i] + ref[512 + i];
    assert_memory_equal(x, ref, X * 4);
    free(x);
    free(ref);
}

/*
 * acc2 over elements out [0, 1280), a [1280, 2560), b [1792, 3072) of a
 * 64 KiB buffer, b's range extra bytes longer: a union of 12,288 + extra
 * bytes. An earlier node on the same device leaves an extent of the
 * buffer that the boundary node's range overlaps.
 */
static int run_boundary(size_t extra, uint32_t *x, size_t nx)
{
    enum { N = 1280 };
    weft_buffer *bx;
    weft_graph *g;
    weft_exec *e;
    weft_node n;
    int rc;

    check(weft_buffer_wrap(rt, x, nx * 4, &bx));
    check(weft_graph_create(rt, &g));
    {
        weft_arg a[] = {elems(bx, 2048, 512, WEFT_WRITE),
                        elems(bx, 1024, 512, WEFT_READ),
                        elems(bx, 1536, 512, WEFT_READ), weft_arg_i64(512)};

        check(weft_graph_add_kernel(g, k_acc2, weft_dims1(512), a, 4, &n));
        check(weft_graph_set_device(g, n, dev(0)));
    }
    {
        weft_arg a[] = {elems(bx, 0, N, WEFT_WRITE), elems(bx, N, N, WEFT_READ),
                        weft_arg_buffer(bx, 1792 * 4, N * 4 + extra, WEFT_READ),
                        weft_arg_i64(N)};

        check(weft_graph_add_kernel(g, k_acc2, weft_dims1(N), a, 4, &n));
        check(weft_graph_set_device(g, n, dev(0)));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    rc = weft_exec_wait(e);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(bx));
    return rc;
}

static void test_boundary(void **state)
{
    enum { X = 16384 };
    uint32_t *x = malloc(X * 4), *ref = malloc(X * 4);
    int rc;

    (void)state;
    assert_non_null(x);
    assert_non_null(ref);
    for (uint32_t i = 0; i < X; i++)
        ref[i] = x[i] = i * 2654435761u;
    /* union == limit: runs */
    check(run_boundary(0, x, X));
    for (uint32_t i = 0; i < 512; i++)
        ref[2048 + i] = ref[1024 + i] + ref[1536 + i];
    for (uint32_t i = 0; i < 1280; i++)
        ref[i] = ref[1280 + i] + ref[1792 + i];
    assert_memory_equal(x, ref, X * 4);
    /* union == limit + 1: the second node fails, naming itself, what it
     * needs and the limit; the first node's result stands, nothing else
     * changes */
    rc = run_boundary(1, x, X);
    assert_int_equal(rc, WEFT_EDEVMEM);
    printf("# %s\n", weft_last_error());
    if (!strstr(weft_last_error(), "node 1 (kernel acc2)") ||
        !strstr(weft_last_error(), "12289 bytes") ||
        !strstr(weft_last_error(), "limit of 12288 bytes"))
        fail_msg("the error does not name the node, its need and the limit: "
                 "%s",
                 weft_last_error());
    for (uint32_t i = 0; i < 512; i++)
        ref[2048 + i] = ref[1024 + i] + ref[1536 + i];
    assert_memory_equal(x, ref, X * 4);
    free(x);
    free(ref);
}

/*
 * Two chains of nodes over two buffers of 128 KiB each (21 times the limit
 * together), each node needing 10 KiB: node j of a chain writes chunk
 * j + 1 from chunk j and the half chunk before it, on device j % 2; the
 * chains interleave, so that nodes of one are in flight while the other's
 * make room on the same device. Twice, against a host reference.
 */
static void test_chain_two_devices(void **state)
{
    enum { C = 1024, CHUNKS = 32, X = C * CHUNKS };
    uint32_t *x[2], *ref[2];
    weft_buffer *b[2];
    weft_graph *g;
    weft_stats s = {.size = sizeof s};

    (void)state;
    for (int k = 0; k < 2; k++) {
        x[k] = malloc(X * 4);
        ref[k] = malloc(X * 4);
        assert_non_null(x[k]);
        assert_non_null(ref[k]);
        for (uint32_t i = 0; i < X; i++)
            ref[k][i] = x[k][i] = i * (k ? 31u : 17u) + 3;
        check(weft_buffer_wrap(rt, x[k], X * 4, &b[k]));
    }
    check(weft_graph_create(rt, &g));
    for (unsigned j = 1; j + 1 < CHUNKS; j++)
        for (int k = 0; k < 2; k++) {
            weft_arg a[] = {elems(b[k], (j + 1) * C, C, WEFT_WRITE),
                            elems(b[k], j * C, C, WEFT_READ),
                            elems(b[k], j * C - C / 2, C, WEFT_READ),
                            weft_arg_i64(C)};
            weft_node n;

            check(weft_graph_add_kernel(g, k_acc2, weft_dims1(C), a, 4, &n));
            check(weft_graph_set_device(g, n, dev(j + (unsigned)k)));
        }
    launch_and_wait(g, 2);
    check(weft_runtime_get_stats(rt, &s));
    check(weft_graph_destroy(g));
    for (int k = 0; k < 2; k++) {
        check(weft_buffer_destroy(b[k]));
        for (int launch = 0; launch < 2; launch++)
            for (uint32_t j = 1; j + 1 < CHUNKS; j++)
                for (uint32_t i = 0; i < C; i++)
                    ref[k][(j + 1) * C + i] =
                        ref[k][j * C + i] + ref[k][j * C - C / 2 + i];
        assert_memory_equal(x[k], ref[k], X * 4);
        free(x[k]);
        free(ref[k]);
    }
    printf("# %llu evictions, %llu write-backs\n",
           (unsigned long long)s.evictions, (unsigned long long)s.writebacks);
    assert_true(s.evictions > 0);
    assert_true(s.pool_bytes <=
                (uint64_t)LIMIT * weft_runtime_device_count(rt));
}

/* A map node's function: every element of the range plus one. */
static void add_one(void *ptr, size_t size, void *user)
{
    uint32_t *v = ptr;

    (void)user;
    for (size_t i = 0; i < size / 4; i++)
        v[i]++;
}

/*
 * Three executable graphs launched together, each a chain over its own
 * buffer on device 0 (each node needing 10 KiB of the 12 KiB), the third
 * with a map node on the host after each kernel, and maps of a counter
 * of its own that no kernel waits for (on the host workers while its
 * kernels wait for room): a node of one finds the device full of the
 * others' extents, which their work in flight may still use; it waits for
 * them rather than fail. Several rounds, against a host reference.
 */
static void test_graphs_share_one_device(void **state)
{
    enum { K = 3, C = 1024, CHUNKS = 8, X = C * CHUNKS, ROUNDS = 20 };
    uint32_t *x[K], *ref[K];
    weft_buffer *b[K];
    weft_graph *g[K];
    weft_exec *e[K];
    uint32_t count = 0;
    weft_buffer *bc;

    (void)state;
    check(weft_buffer_wrap(rt, &count, sizeof count, &bc));
    for (int k = 0; k < K; k++) {
        x[k] = malloc(X * 4);
        ref[k] = malloc(X * 4);
        assert_non_null(x[k]);
        assert_non_null(ref[k]);
        for (uint32_t i = 0; i < X; i++)
            ref[k][i] = x[k][i] = i * (11u + 2 * (uint32_t)k) + 1;
        check(weft_buffer_wrap(rt, x[k], X * 4, &b[k]));
        check(weft_graph_create(rt, &g[k]));
        for (unsigned j = 1; j + 1 < CHUNKS; j++) {
            weft_arg a[] = {elems(b[k], (j + 1) * C, C, WEFT_WRITE),
                            elems(b[k], j * C, C, WEFT_READ),
                            elems(b[k], j * C - C / 2, C, WEFT_READ),
                            weft_arg_i64(C)};
            weft_node n;

            if (k == K - 1)
                check(weft_graph_add_map(g[k], bc, 0, sizeof count,
                                         WEFT_READ_WRITE, add_one, NULL, NULL));
            check(weft_graph_add_kernel(g[k], k_acc2, weft_dims1(C), a, 4, &n));
            check(weft_graph_set_device(g[k], n, dev(0)));
            if (k == K - 1)
                check(weft_graph_add_map(g[k], b[k], (j + 1) * C * 4, C * 4,
                                         WEFT_READ_WRITE, add_one, NULL, NULL));
        }
        check(weft_graph_instantiate(g[k], NULL, &e[k]));
    }
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < K; k++)
            check(weft_exec_launch(e[k]));
        for (int k = 0; k < K; k++)
            check(weft_exec_wait(e[k]));
    }
    for (int k = 0; k < K; k++) {
        check(weft_exec_destroy(e[k]));
        check(weft_graph_destroy(g[k]));
        check(weft_buffer_destroy(b[k]));
        for (int r = 0; r < ROUNDS; r++)
            for (uint32_t j = 1; j + 1 < CHUNKS; j++)
                for (uint32_t i = 0; i < C; i++)
                    ref[k][(j + 1) * C + i] = ref[k][j * C + i] +
                                              ref[k][j * C - C / 2 + i] +
                                              (k == K - 1);
        assert_memory_equal(x[k], ref[k], X * 4);
        free(x[k]);
        free(ref[k]);
    }
    check(weft_buffer_destroy(bc));
    assert_int_equal(count, ROUNDS * (CHUNKS - 2));
}

/*
 * Room held by nothing that will end: a mapped buffer's extent (8 KiB of
 * the 12) stays on device 0 while a node that needs 10 KiB there runs.
 * The node waits for no one (no other launch runs) and fails, saying what
 * holds the room; once the buffer is unmapped, the same launch runs.
 */
static void test_room_held_by_a_map(void **state)
{
    enum { N = 1024, X = 2560 };
    uint32_t *x = malloc(X * 4), *m = malloc(2048 * 4);
    weft_buffer *bx, *bm;
    weft_graph *g;
    weft_exec *e;
    weft_node n;
    void *p;
    int rc;

    (void)state;
    assert_non_null(x);
    assert_non_null(m);
    for (uint32_t i = 0; i < X; i++)
        x[i] = i;
    for (uint32_t i = 0; i < 2048; i++)
        m[i] = 7;
    check(weft_buffer_wrap(rt, x, X * 4, &bx));
    check(weft_buffer_wrap(rt, m, 2048 * 4, &bm));
    /* m's 8 KiB onto device 0 */
    check(weft_graph_create(rt, &g));
    {
        weft_arg a[] = {elems(bm, 1024, 1024, WEFT_WRITE),
                        elems(bm, 0, 1024, WEFT_READ),
                        elems(bm, 0, 1024, WEFT_READ), weft_arg_i64(1024)};

        check(weft_graph_add_kernel(g, k_acc2, weft_dims1(1024), a, 4, &n));
        check(weft_graph_set_device(g, n, dev(0)));
    }
    launch_and_wait(g, 1);
    check(weft_graph_destroy(g));
    check(weft_buffer_map(bm, 0, 4, WEFT_READ, &p));
    assert_int_equal(*(uint32_t *)p, 7);

    check(weft_graph_create(rt, &g));
    {
        /* out x [1536, 2560), a x [0, 1024), b x [512, 1536): 10 KiB */
        weft_arg a[] = {elems(bx, 1536, N, WEFT_WRITE),
                        elems(bx, 0, N, WEFT_READ),
                        elems(bx, 512, N, WEFT_READ), weft_arg_i64(N)};

        check(weft_graph_add_kernel(g, k_acc2, weft_dims1(N), a, 4, &n));
        check(weft_graph_set_device(g, n, dev(0)));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    rc = weft_exec_wait(e);
    assert_int_equal(rc, WEFT_EDEVMEM);
    printf("# %s\n", weft_last_error());
    if (!strstr(weft_last_error(), "node 0 (kernel acc2)") ||
        !strstr(weft_last_error(), "mapped"))
        fail_msg("the error does not say what holds the room: %s",
                 weft_last_error());
    check(weft_buffer_unmap(bm, p));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(bx));
    check(weft_buffer_destroy(bm));
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(x[1536 + i], i + (512 + i));
    for (uint32_t i = 0; i < 1024; i++)
        assert_int_equal(m[1024 + i], 14);
    free(x);
    free(m);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_overlapping_args),
        cmocka_unit_test(test_overlap_with_result_in_place),
        cmocka_unit_test(test_view_and_parent),
        cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_chain_two_devices),
        cmocka_unit_test(test_graphs_share_one_device),
        cmocka_unit_test(test_room_held_by_a_map),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
