/*
 * Read nodes: how the bytes of a chunked pipeline (write, kernel, read per
 * chunk) come home, asserted on the sim driver's record in virtual time
 * and on the runtime's statistics.
 *
 * - Into pinned memory (the sim's host_alloc, which it reports pinned):
 *   one copy from the device straight into the destination on the D2H
 *   lane, nothing through staging or the buffer's host copy, and the copy
 *   out of chunk i runs while chunk i + 1 computes.
 * - Into pageable memory: through the stager without the issuing thread
 *   waiting for it, so the copies out overlap the kernels too.
 * - Through the host copy (a read whose range the host copy holds part
 *   of): the staged copy into the host copy is waited for by whoever
 *   reads those host bytes next.
 *
 * Runs with WEFT_DEVICES=sim WEFT_SIM=devices=1,real_data=1.
 */
#include "wt_test.h"

#include "drivers/sim/sim.h"
#include "mem/buffer.h"
#include "mem/staging.h"
#include "wt_devices.h"
#include "wt_kernels.h"

#include <stdlib.h>
#include <string.h>

enum {
    CHUNKS = 8,
    /* Floats per chunk: 256 KiB, over the 64 KiB from which pageable
     * copies are staged; about 6.8 us on the sim's link. */
    CHUNK = 1 << 16,
    /*
     * Plus the launch latency: 9 us, a little longer than a copy out (6.8
     * us, and 2 us more for a staged one: the copy out of the pinned
     * buffer, after which the D2H lane goes on), so that the copies out
     * keep up with the kernels.
     */
    KERNEL_NS = 6000,
};

#define BYTES ((size_t)CHUNK * sizeof(float))
#define TOTAL ((size_t)CHUNKS * BYTES)

static wt_devices devs;
static weft_module *mod;
static weft_kernel *k_work;
static weft__context *ctx;

static uint64_t work_cost(uint64_t items, void *const *args, void *user)
{
    (void)items;
    (void)args;
    (void)user;
    return KERNEL_NS;
}

static const weft_host_kernel kernels[] = {
    {"work", wt_host_affine, 3, wt_affine_params, NULL, work_cost, NULL},
};

static int setup(void **state)
{
    weft_module_source src = {WEFT_SOURCE_HOST, kernels, 1, NULL, "readback"};

    (void)state;
    wt_devices_open(&devs);
    wt_devices_need(&devs, "sim", 1, "needs a sim device (WEFT_DEVICES=sim)");
    check(weft_module_create(devs.rt, &src, 1, &mod));
    check(weft_module_get_kernel(mod, "work", &k_work));
    check(weft__runtime_context(devs.rt, 0, &ctx));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    weft_module_destroy(mod);
    wt_devices_close(&devs);
    return 0;
}

static weft__device *sim0(void)
{
    return wt_device(&devs, 0);
}

/* Host memory: pinned by the sim driver (*mem), or pageable (NULL). */
static float *host_memory(int pinned, weft__mem **mem)
{
    float *p;

    *mem = NULL;
    if (!pinned) {
        p = malloc(TOTAL);
        assert_non_null(p);
        return p;
    }
    check(weft__drv_host_alloc(ctx, TOTAL, mem));
    return (*mem)->host;
}

static void host_memory_free(float *p, weft__mem *mem)
{
    if (mem)
        check(weft__drv_mem_free(mem));
    else
        free(p);
}

/* The i-th operation of kind in the record, or NULL. */
static const weft__sim_op *nth_op(weft__sim_op_kind kind, size_t i)
{
    size_t n;
    const weft__sim_op *r = weft__sim_record(sim0(), &n);

    for (size_t k = 0; k < n; k++)
        if (r[k].kind == kind && i-- == 0)
            return &r[k];
    return NULL;
}

static size_t count_ops(weft__sim_op_kind kind)
{
    size_t n, k = 0;
    const weft__sim_op *r = weft__sim_record(sim0(), &n);

    for (size_t i = 0; i < n; i++)
        k += r[i].kind == kind;
    return k;
}

static int overlaps(const weft__sim_op *a, const weft__sim_op *b)
{
    return a->start_ns < b->end_ns && b->start_ns < a->end_ns;
}

/* The bytes the stager has moved device to host, over its life. */
static uint64_t stager_d2h_bytes(void)
{
    weft__stager *s = weft__runtime_stager(devs.rt, 0);
    weft__stager_stats st;

    if (!s)
        return 0;
    weft__stager_get_stats(s, &st);
    return st.d2h_bytes;
}

/* What one launch of the pipeline did. */
typedef struct pipeline_run {
    weft_stats moved;         /* the launch's share of the counters */
    uint64_t makespan, parts; /* virtual ns: first start to last end,
                                 and the sum of the copies and kernels */
    unsigned overlapped;      /* chunks whose copy out ran while the next
                                 chunk's kernel did */
    uint64_t stager_d2h;      /* bytes the stager moved out */
    size_t host_fns;          /* host functions that ran on a lane */
} pipeline_run;

/*
 * CHUNKS chains of write (in -> x), kernel (y = 2 x + 1), read (y -> out)
 * on device 0, launched twice; the second launch (buffers' device copies
 * in place, as in a relaunched pipeline) is measured into *run. out is
 * cleared before each launch: the wait must not return before the reads
 * have landed.
 */
static void run_pipeline(float *in, float *out, pipeline_run *run)
{
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    weft_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
    weft_buffer *x, *y;
    weft_graph *g;
    weft_exec *e;
    uint64_t first = UINT64_MAX, last = 0, d0;
    size_t n;
    const weft__sim_op *r;

    for (size_t i = 0; i < CHUNKS * (size_t)CHUNK; i++)
        in[i] = (float)(i % 1000);
    check(weft_buffer_create(devs.rt, TOTAL, &x));
    check(weft_buffer_create(devs.rt, TOTAL, &y));
    check(weft_graph_create(devs.rt, &g));
    for (size_t c = 0; c < CHUNKS; c++) {
        weft_arg a[] = {weft_arg_buffer(y, c * BYTES, BYTES, WEFT_WRITE),
                        weft_arg_buffer(x, c * BYTES, BYTES, WEFT_READ),
                        weft_arg_i64(CHUNK)};

        check(
            weft_graph_add_write(g, x, c * BYTES, in + c * CHUNK, BYTES, NULL));
        check(weft_graph_add_kernel(g, k_work, weft_dims1(CHUNK), a, 3, NULL));
        check(
            weft_graph_add_read(g, y, c * BYTES, out + c * CHUNK, BYTES, NULL));
    }
    o.device = weft_runtime_device(devs.rt, 0);
    check(weft_graph_instantiate(g, &o, &e));
    for (int launch = 0; launch < 2; launch++) {
        memset(out, 0, TOTAL);
        check(weft_runtime_get_stats(devs.rt, &s0));
        d0 = stager_d2h_bytes();
        weft__sim_record_clear(sim0());
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        check(weft_runtime_get_stats(devs.rt, &s1));
        for (size_t i = 0; i < CHUNKS * (size_t)CHUNK; i++)
            if (out[i] != 2 * in[i] + 1)
                fail_msg("launch %d: out[%zu] = %g, want %g", launch, i,
                         (double)out[i], (double)(2 * in[i] + 1));
    }
    run->stager_d2h = stager_d2h_bytes() - d0;
    memset(&run->moved, 0, sizeof run->moved);
#define MOVED(f) run->moved.f = s1.f - s0.f
    MOVED(h2d_bytes);
    MOVED(d2h_bytes);
    MOVED(d2h_copies);
    MOVED(host_bytes);
    MOVED(staged_bytes);
    MOVED(pinned_bytes);
#undef MOVED

    /* The second launch's record. */
    assert_int_equal(count_ops(WEFT__SIM_KERNEL), CHUNKS);
    assert_int_equal(count_ops(WEFT__SIM_H2D), CHUNKS);
    r = weft__sim_record(sim0(), &n);
    run->parts = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].kind != WEFT__SIM_H2D && r[i].kind != WEFT__SIM_D2H &&
            r[i].kind != WEFT__SIM_KERNEL)
            continue;
        first = r[i].start_ns < first ? r[i].start_ns : first;
        last = r[i].end_ns > last ? r[i].end_ns : last;
        run->parts += r[i].end_ns - r[i].start_ns;
    }
    run->makespan = last - first;
    run->host_fns = count_ops(WEFT__SIM_HOST_FN);
    /* Chunks are issued in order, so the k-th copy out is chunk k's (a
     * staged one is several copies: its last one ends it). */
    run->overlapped = 0;
    for (size_t c = 0; c + 1 < CHUNKS; c++) {
        size_t per = count_ops(WEFT__SIM_D2H) / CHUNKS;
        const weft__sim_op *k = nth_op(WEFT__SIM_KERNEL, c + 1);

        for (size_t j = 0; j < per; j++)
            if (overlaps(nth_op(WEFT__SIM_D2H, c * per + j), k)) {
                run->overlapped++;
                break;
            }
    }
    printf("# makespan %llu ns, parts %llu ns, %u of %u copies out "
           "overlap the next kernel\n",
           (unsigned long long)run->makespan, (unsigned long long)run->parts,
           run->overlapped, CHUNKS - 1);

    /* The reads did not make y's host copy valid: the tracker says so,
     * and the helper still reads the right bytes (from the device). */
    assert_false(weft__buffer_is_valid(y->root, WEFT__HOST, 0, TOTAL));
    memset(out, 0, TOTAL);
    check(weft_buffer_read(y, 0, out, TOTAL));
    for (size_t i = 0; i < CHUNKS * (size_t)CHUNK; i += 997)
        assert_true(out[i] == 2 * in[i] + 1);

    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
}

/* The sim calls its own pinned memory pinned, and nothing else. */
static void test_sim_reports_pinned(void **state)
{
    weft__mem *m;
    char *heap = malloc(4096);

    (void)state;
    assert_non_null(heap);
    check(weft__drv_host_alloc(ctx, 4096, &m));
    assert_int_equal(weft__drv_host_is_pinned(ctx, m->host, 4096), 1);
    assert_int_equal(weft__drv_host_is_pinned(ctx, (char *)m->host + 4000, 96),
                     1);
    assert_int_equal(weft__drv_host_is_pinned(ctx, (char *)m->host + 4000, 97),
                     0);
    assert_int_equal(weft__drv_host_is_pinned(ctx, heap, 4096), 0);
    check(weft__drv_mem_free(m));
    free(heap);
}

/*
 * Pinned source and destination: every byte moves once each way, in place
 * (nothing staged, no host function copying out of the host copy), and
 * the copy out of chunk i overlaps the kernel of chunk i + 1.
 */
static void test_pinned_dst_direct(void **state)
{
    weft__mem *min, *mout;
    float *in = host_memory(1, &min), *out = host_memory(1, &mout);
    pipeline_run run;

    (void)state;
    run_pipeline(in, out, &run);
    assert_int_equal(run.moved.staged_bytes, 0);
    assert_int_equal(run.stager_d2h, 0);
    assert_int_equal(run.moved.pinned_bytes, 2 * TOTAL);
    assert_int_equal(run.moved.d2h_bytes, TOTAL);
    assert_int_equal(run.moved.d2h_copies, CHUNKS);
    assert_int_equal(run.moved.host_bytes, TOTAL);
    assert_int_equal(run.host_fns, 0); /* no copy out of a host copy */
    assert_int_equal(run.overlapped, CHUNKS - 1);
    assert_true(run.makespan * 10 < run.parts * 7);
    host_memory_free(in, min);
    host_memory_free(out, mout);
}

/*
 * Pageable source and destination: both ways through the stager; the
 * copies out are enqueued without the issuing thread waiting for them, so
 * they overlap the next chunks' kernels all the same.
 */
static void test_pageable_dst_staged_async(void **state)
{
    weft__mem *min, *mout;
    float *in = host_memory(0, &min), *out = host_memory(0, &mout);
    pipeline_run run;

    (void)state;
    run_pipeline(in, out, &run);
    assert_int_equal(run.moved.staged_bytes, 2 * TOTAL);
    assert_int_equal(run.stager_d2h, TOTAL);
    assert_int_equal(run.moved.pinned_bytes, 0);
    assert_int_equal(run.moved.d2h_bytes, TOTAL);
    /* one copy out of a pinned buffer per read, straight into out */
    assert_int_equal(run.host_fns, CHUNKS);
    assert_int_equal(run.overlapped, CHUNKS - 1);
    assert_true(run.makespan * 10 < run.parts * 7);
    host_memory_free(in, min);
    host_memory_free(out, mout);
}

static void check_twice_plus_one(void *ptr, size_t size, void *user)
{
    const float *y = ptr, *x = user;

    for (size_t i = 0; i < size / sizeof(float); i++)
        if (y[i] != 2 * x[i] + 1)
            fail_msg("map: y[%zu] = %g, want %g", i, (double)y[i],
                     (double)(2 * x[i] + 1));
}

/*
 * Through the host copy: y's first chunk comes from a kernel, its second
 * was written on the host; a read of both is copied out of the host copy
 * once the (staged, asynchronous) copy of the first chunk into it has
 * landed, and a map of the first chunk after it sees those bytes too.
 */
static void test_host_copy_path_ordered(void **state)
{
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    float *in = malloc(2 * BYTES), *out = malloc(2 * BYTES);
    weft_buffer *x, *y;
    weft_graph *g;
    weft_exec *e;
    weft_arg a[3];

    (void)state;
    assert_non_null(in);
    assert_non_null(out);
    for (size_t i = 0; i < 2 * (size_t)CHUNK; i++)
        in[i] = (float)(i % 777);
    check(weft_buffer_create(devs.rt, 2 * BYTES, &x));
    check(weft_buffer_create(devs.rt, 2 * BYTES, &y));
    check(weft_buffer_write(x, 0, in, BYTES));
    check(weft_buffer_write(y, BYTES, in + CHUNK, BYTES));
    check(weft_graph_create(devs.rt, &g));
    a[0] = weft_arg_buffer(y, 0, BYTES, WEFT_WRITE);
    a[1] = weft_arg_buffer(x, 0, BYTES, WEFT_READ);
    a[2] = weft_arg_i64(CHUNK);
    check(weft_graph_add_kernel(g, k_work, weft_dims1(CHUNK), a, 3, NULL));
    check(weft_graph_add_read(g, y, 0, out, 2 * BYTES, NULL));
    check(weft_graph_add_map(g, y, 0, BYTES, WEFT_READ, check_twice_plus_one,
                             in, NULL));
    o.device = weft_runtime_device(devs.rt, 0);
    check(weft_graph_instantiate(g, &o, &e));
    for (int launch = 0; launch < 2; launch++) {
        memset(out, 0, 2 * BYTES);
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        for (size_t i = 0; i < (size_t)CHUNK; i++)
            if (out[i] != 2 * in[i] + 1)
                fail_msg("out[%zu] = %g", i, (double)out[i]);
        assert_memory_equal(out + CHUNK, in + CHUNK, BYTES);
    }
    assert_true(weft__buffer_is_valid(y->root, WEFT__HOST, 0, 2 * BYTES));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_reports_pinned),
        cmocka_unit_test(test_pinned_dst_direct),
        cmocka_unit_test(test_pageable_dst_staged_async),
        cmocka_unit_test(test_host_copy_path_ordered),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
