/*
 * Pinned staging: bytes survive the trip through the ring whatever the
 * sizes and offsets (both ways, and down without waiting), the pipeline
 * reuses its buffers and makes more only up to its limit, and every
 * failure point fails cleanly.
 */
#include "wt_test.h"

#include "mem/staging.h"
#include "runtime.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_runtime *rt;
static weft__context *ctx;
static weft__device *dev;

static int setup(void **state)
{
    (void)state;
    if (weft_runtime_create(&rt, NULL) < 0)
        return -1;
    if (!weft_runtime_device_count(rt)) {
        printf("skipped: no device for WEFT_DEVICES=%s\n",
               getenv("WEFT_DEVICES") ? getenv("WEFT_DEVICES") : "");
        weft_runtime_destroy(rt);
        exit(77);
    }
    dev = weft__runtime_device(rt, 0);
    printf("# staging on %s:%u (%s)\n", dev->drv->name, dev->driver_index,
           dev->name);
    return weft__runtime_context(rt, 0, &ctx);
}

static int teardown(void **state)
{
    (void)state;
    return weft_runtime_destroy(rt);
}

static void fill_random(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (unsigned char)(seed >> 16);
    }
}

/* Up through the stager, down through it, compare; sizes and offsets vary. */
static void round_trips(void **state)
{
    static const size_t sizes[] = {1, 4095, 1 << 20, (3 << 20) + 17,
                                   (11 << 20) + 5};
    const size_t cap = 12 << 20;
    weft__stager_options o = {.chunk = 1 << 20, .slots = 3, .threads = 3};
    weft__stager_stats st;
    weft__stager *s;
    weft__queue *q;
    weft__mem *m;
    unsigned char *src = malloc(cap), *back = malloc(cap);
    (void)state;

    assert_non_null(src);
    assert_non_null(back);
    o.topology = rt->topology;
    o.cpuset = dev->props.cpuset;
    assert_int_equal(weft__stager_create(ctx, &o, &s), 0);
    assert_int_equal(weft__drv_queue_create(ctx, NULL, &q), 0);
    assert_int_equal(weft__drv_mem_alloc(ctx, cap + 4096, &m), 0);
    for (unsigned i = 0; i < WEFT__COUNTOF(sizes); i++) {
        size_t off = i * 1000 + 3;

        fill_random(src, sizes[i], i + 1);
        memset(back, 0xee, sizes[i]);
        assert_int_equal(weft__stager_h2d(s, NULL, q, m, off, src, sizes[i]),
                         0);
        /* the source may be reused at once: spoil it */
        memset(src, 0, sizes[i]);
        assert_int_equal(weft__stager_d2h(s, NULL, q, back, m, off, sizes[i]),
                         0);
        fill_random(src, sizes[i], i + 1);
        assert_memory_equal(back, src, sizes[i]);
        /* down again without waiting: the bytes are there once q is done */
        memset(back, 0xee, sizes[i]);
        assert_int_equal(
            weft__stager_d2h_async(s, NULL, q, back, m, off, sizes[i]), 0);
        assert_int_equal(weft__drv_queue_sync(q), 0);
        assert_memory_equal(back, src, sizes[i]);
    }
    weft__stager_get_stats(s, &st);
    assert_true(st.chunks >= 3 * (1 + 1 + 1 + 4 + 12));
    assert_true(2 * st.h2d_bytes == st.d2h_bytes);
    assert_true(st.slots >= 3);
    printf("# %llu chunks, %llu bytes each way, %llu waits for a buffer\n",
           (unsigned long long)st.chunks, (unsigned long long)st.h2d_bytes,
           (unsigned long long)st.waits);
    assert_int_equal(weft__drv_mem_free(m), 0);
    assert_int_equal(weft__drv_queue_destroy(q), 0);
    weft__stager_destroy(s);
    free(src);
    free(back);
}

/*
 * 2-D blocks up and down (h2d_rect, d2h_rect waiting and not): rows
 * packed several to a buffer, one row a buffer, and rows longer than a
 * buffer; the bytes between the rows are left alone on both sides.
 */
static void block_round_trips(void **state)
{
    static const struct {
        size_t width, rows, hpitch, dpitch;
    } shapes[] = {
        {1, 1, 1, 1},
        {1000, 3, 1500, 1024},
        {4096, 700, 8192, 4096 + 64}, /* 256 rows a buffer: 3 pieces */
        {300000, 5, 300001, 400000},  /* 3 rows a buffer */
        {(1 << 20) + 5, 3, (1 << 20) + 9, (1 << 20) + 100}, /* 2 pieces a row */
    };
    const size_t cap = 8 << 20;
    weft__stager_options o = {.chunk = 1 << 20, .slots = 2, .threads = 3};
    weft__stager *s;
    weft__queue *q;
    weft__mem *m;
    unsigned char *src = malloc(cap), *dev_img = malloc(cap),
                  *back = malloc(cap), *want = malloc(cap);
    (void)state;

    assert_non_null(src);
    assert_non_null(dev_img);
    assert_non_null(back);
    assert_non_null(want);
    o.topology = rt->topology;
    o.cpuset = dev->props.cpuset;
    assert_int_equal(weft__stager_create(ctx, &o, &s), 0);
    assert_int_equal(weft__drv_queue_create(ctx, NULL, &q), 0);
    assert_int_equal(weft__drv_mem_alloc(ctx, cap, &m), 0);
    for (unsigned i = 0; i < WEFT__COUNTOF(shapes); i++) {
        size_t w = shapes[i].width, rows = shapes[i].rows;
        size_t hp = shapes[i].hpitch, dp = shapes[i].dpitch;
        size_t hoff = 7 + i, doff = 64 * i + 5;
        size_t hspan = hoff + (rows - 1) * hp + w;
        size_t dspan = doff + (rows - 1) * dp + w;
        weft__rect up = {{doff, dp, 0}, {hoff, hp, 0}, w, rows, 1};
        weft__rect down = {{hoff, hp, 0}, {doff, dp, 0}, w, rows, 1};
        const unsigned char pat = 0x3c;

        assert_true(hspan <= cap && dspan <= cap);
        fill_random(src, hspan, 40 + i);
        /* the device image: the fill, then the block's rows */
        memset(dev_img, pat, dspan);
        for (size_t r = 0; r < rows; r++)
            memcpy(dev_img + doff + r * dp, src + hoff + r * hp, w);
        assert_int_equal(weft__drv_fill(q, m, 0, &pat, 1, dspan), 0);
        assert_int_equal(weft__stager_h2d_rect(s, NULL, q, m, src, &up), 0);
        memset(back, 0xee, dspan);
        assert_int_equal(weft__stager_d2h(s, NULL, q, back, m, 0, dspan), 0);
        assert_memory_equal(back, dev_img, dspan);
        /* down, both ways, into a host image whose gaps must survive */
        for (int async = 0; async < 2; async++) {
            memset(back, 0xee, hspan);
            memset(want, 0xee, hspan);
            for (size_t r = 0; r < rows; r++)
                memcpy(want + hoff + r * hp, src + hoff + r * hp, w);
            assert_int_equal(
                weft__stager_d2h_rect(s, NULL, q, back, m, &down, async), 0);
            if (async)
                assert_int_equal(weft__drv_queue_sync(q), 0);
            assert_memory_equal(back, want, hspan);
        }
    }
    assert_int_equal(weft__drv_mem_free(m), 0);
    assert_int_equal(weft__drv_queue_destroy(q), 0);
    weft__stager_destroy(s);
    free(src);
    free(dev_img);
    free(back);
    free(want);
}

/* Queue order: a staged upload lands after a fill queued before it. */
static void follows_queue_order(void **state)
{
    weft__stager *s;
    weft__queue *q;
    weft__mem *m;
    const size_t n = (5 << 20) + 3;
    unsigned char *src = malloc(n), *back = malloc(n);
    const unsigned char pat = 0x5a;
    (void)state;

    weft__stager_options o = {.chunk = 1 << 20, .slots = 2, .threads = 2};
    assert_int_equal(weft__stager_create(ctx, &o, &s), 0);
    assert_int_equal(weft__drv_queue_create(ctx, NULL, &q), 0);
    assert_int_equal(weft__drv_mem_alloc(ctx, n + 100, &m), 0);
    fill_random(src, n, 99);
    assert_int_equal(weft__drv_fill(q, m, 0, &pat, 1, n + 100), 0);
    assert_int_equal(weft__stager_h2d(s, NULL, q, m, 50, src, n), 0);
    assert_int_equal(weft__stager_d2h(s, NULL, q, back, m, 50, n), 0);
    assert_memory_equal(back, src, n);
    assert_int_equal(weft__stager_d2h(s, NULL, q, back, m, 0, 50), 0);
    for (int i = 0; i < 50; i++)
        assert_int_equal(back[i], pat);
    assert_int_equal(weft__drv_mem_free(m), 0);
    assert_int_equal(weft__drv_queue_destroy(q), 0);
    weft__stager_destroy(s);
    free(src);
    free(back);
}

/*
 * Downloads without waiting, more of them than there are buffers: the
 * stager makes buffers up to max_slots, then reuses the oldest once its
 * copy out is done; a later upload on the same queue runs after every
 * copy out, and every byte lands where it should.
 */
static void async_downloads_reuse(void **state)
{
    enum { PIECES = 6 };
    const size_t piece = (2 << 20) + 11;
    weft__stager_options o = {
        .chunk = 1 << 20, .slots = 2, .max_slots = 4, .threads = 2};
    weft__stager_stats st;
    weft__stager *s;
    weft__queue *q;
    weft__mem *m;
    unsigned char *src = malloc(PIECES * piece), *back = malloc(PIECES * piece);
    unsigned char *zeros = calloc(1, piece);
    (void)state;

    assert_non_null(src);
    assert_non_null(back);
    assert_non_null(zeros);
    o.topology = rt->topology;
    o.cpuset = dev->props.cpuset;
    assert_int_equal(weft__stager_create(ctx, &o, &s), 0);
    assert_int_equal(weft__drv_queue_create(ctx, NULL, &q), 0);
    assert_int_equal(weft__drv_mem_alloc(ctx, PIECES * piece, &m), 0);
    fill_random(src, PIECES * piece, 5);
    memset(back, 0, PIECES * piece);
    assert_int_equal(weft__stager_h2d(s, NULL, q, m, 0, src, PIECES * piece),
                     0);
    for (unsigned i = 0; i < PIECES; i++)
        assert_int_equal(weft__stager_d2h_async(s, NULL, q, back + i * piece, m,
                                                i * piece, piece),
                         0);
    /* overwrite the device copy after the downloads: they read it first */
    assert_int_equal(weft__stager_h2d(s, NULL, q, m, 0, zeros, piece), 0);
    assert_int_equal(weft__drv_queue_sync(q), 0);
    assert_memory_equal(back, src, PIECES * piece);
    weft__stager_get_stats(s, &st);
    assert_int_equal(st.slots, 4);
    assert_int_equal(st.d2h_bytes, PIECES * piece);
    assert_true(st.waits > 0);
    printf("# %u buffers, %llu waits for one\n", st.slots,
           (unsigned long long)st.waits);
    assert_int_equal(weft__drv_mem_free(m), 0);
    assert_int_equal(weft__drv_queue_destroy(q), 0);
    weft__stager_destroy(s);
    free(src);
    free(back);
    free(zeros);
}

/*
 * Buffers asked for ahead (weft__stager_warm) are made in the background,
 * up to what was asked and never past max_slots; the stager works with
 * them.
 */
static void warm_ahead(void **state)
{
    weft__stager_options o = {
        .chunk = 1 << 20, .slots = 2, .max_slots = 6, .threads = 2};
    weft__stager_stats st;
    weft__stager *s;
    weft__queue *q;
    weft__mem *m;
    const size_t n = (5 << 20) + 3;
    unsigned char *src = malloc(n), *back = malloc(n);
    (void)state;

    assert_non_null(src);
    assert_non_null(back);
    o.topology = rt->topology;
    o.cpuset = dev->props.cpuset;
    assert_int_equal(weft__stager_create(ctx, &o, &s), 0);
    weft__stager_warm(s, 5);
    weft__stager_get_stats(s, &st);
    assert_int_equal(st.slots, 5);
    weft__stager_warm(s, 100); /* no more than max_slots */
    weft__stager_get_stats(s, &st);
    assert_int_equal(st.slots, 6);
    assert_int_equal(weft__drv_queue_create(ctx, NULL, &q), 0);
    assert_int_equal(weft__drv_mem_alloc(ctx, n, &m), 0);
    fill_random(src, n, 11);
    assert_int_equal(weft__stager_h2d(s, NULL, q, m, 0, src, n), 0);
    assert_int_equal(weft__stager_d2h(s, NULL, q, back, m, 0, n), 0);
    assert_memory_equal(back, src, n);
    weft__stager_get_stats(s, &st);
    assert_int_equal(st.slots, 6);
    assert_int_equal(weft__drv_mem_free(m), 0);
    assert_int_equal(weft__drv_queue_destroy(q), 0);
    weft__stager_destroy(s);
    free(src);
    free(back);
}

/* Every failure point of create, h2d and d2h: an error, nothing leaked. */
static void failure_points(void **state)
{
    const size_t n = (3 << 20) + 1;
    unsigned char *src = malloc(n), *back = malloc(n);
    weft__queue *q;
    weft__mem *m;
    long i, failed = 0;
    (void)state;

    assert_int_equal(weft__drv_queue_create(ctx, NULL, &q), 0);
    assert_int_equal(weft__drv_mem_alloc(ctx, n, &m), 0);
    fill_random(src, n, 7);
    /* WT_STAGING_FAULTS=FIRST-LAST: only those points (to find one). */
    const char *only = getenv("WT_STAGING_FAULTS");
    long first = 1, last = LONG_MAX;

    if (only && sscanf(only, "%ld-%ld", &first, &last) != 2)
        fail_msg("WT_STAGING_FAULTS=%s: expected FIRST-LAST", only);
    for (i = first; i <= last; i++) {
        weft__stager_options o = {
            .chunk = 1 << 20, .slots = 2, .max_slots = 3, .threads = 2};
        weft__stager *s = NULL;
        int rc, fired;

        weft__fault_arm(i, NULL);
        rc = weft__stager_create(ctx, &o, &s);
        if (rc == 0) {
            rc = weft__stager_h2d(s, NULL, q, m, 0, src, n);
            if (rc == 0)
                rc = weft__stager_d2h(s, NULL, q, back, m, 0, n);
            if (rc == 0) {
                memset(back, 0, n);
                rc = weft__stager_d2h_async(s, NULL, q, back, m, 0, n);
            }
            /* A failed asynchronous download left nothing in flight. */
            if (rc == 0)
                rc = weft__drv_queue_sync(q);
        }
        fired = weft__fault_fired();
        weft__fault_disarm();
        if (s)
            weft__stager_destroy(s);
        if (!fired) {
            assert_int_equal(rc, 0);
            assert_memory_equal(back, src, n);
            break;
        }
        if (rc < 0) {
            failed++;
            assert_true(strlen(weft_last_error()) > 0);
        }
        /* the queue still works after any failure */
        assert_int_equal(weft__drv_queue_sync(q), 0);
    }
    printf("# %ld failure points, %ld reported\n", i - first, failed);
    assert_true(failed > 0 || only);
    assert_int_equal(weft__drv_mem_free(m), 0);
    assert_int_equal(weft__drv_queue_destroy(q), 0);
    free(src);
    free(back);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trips),
        cmocka_unit_test(block_round_trips),
        cmocka_unit_test(follows_queue_order),
        cmocka_unit_test(async_downloads_reuse),
        cmocka_unit_test(warm_ahead),
        cmocka_unit_test(failure_points),
    };
    return wt_run_group(argc, argv, tests, setup, teardown);
}
