/*
 * The device memory pool on a real driver (the device WEFT_DEVICES names
 * first: host or sim in CTest). Driver allocations are counted outside the
 * pool, through failure injection's count of "<driver>.mem_alloc" checks,
 * and live driver memory through the context's count of live objects, so
 * the pool's own statistics are checked against the driver, not against
 * themselves.
 */
#include "wt_test.h"

#include "mem/pool.h"
#include "runtime.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

typedef struct fixture {
    weft_runtime *rt;
    weft__context *ctx;
    long live0; /* the context's live objects before the test */
} fixture;

static long live_mems(const fixture *f)
{
    return __atomic_load_n(&f->ctx->live, __ATOMIC_RELAXED) - f->live0;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);

    if (!f)
        return -1;
    if (weft_runtime_create(&f->rt, NULL) < 0 ||
        weft__runtime_context(f->rt, 0, &f->ctx) < 0) {
        fprintf(stderr, "no device: %s\n", weft_last_error());
        if (f->rt)
            weft_runtime_destroy(f->rt);
        free(f);
        return -1;
    }
    f->live0 = __atomic_load_n(&f->ctx->live, __ATOMIC_RELAXED);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    /* every test gives back all it took from the driver */
    int leaked = live_mems(f) != 0;

    weft__fault_disarm();
    weft_runtime_destroy(f->rt);
    free(f);
    return leaked ? -1 : 0;
}

/* Count driver allocations from now on (nothing fails). */
static void count_driver_allocs(void)
{
    weft__fault_arm(LONG_MAX, ".mem_alloc");
}

static long driver_allocs(void)
{
    return weft__fault_seen();
}

static void assert_pool_sound(weft__pool *p)
{
    const char *why = weft__pool_check(p);

    if (why)
        fail_msg("pool broken: %s", why);
}

static weft__pool *make_pool(fixture *f, uint64_t limit, size_t slab,
                             size_t align)
{
    weft__pool_options o = WEFT__POOL_OPTIONS_INIT;
    weft__pool *p = NULL;

    o.limit = limit;
    o.slab = slab;
    o.align = align;
    assert_int_equal(weft__pool_create(f->ctx, &o, &p), 0);
    return p;
}

/* No two live blocks share a byte, and each lies inside its memory. */
static int by_place(const void *a, const void *b)
{
    const weft__pool_block *x = a, *y = b;

    if (x->mem != y->mem)
        return (uintptr_t)x->mem < (uintptr_t)y->mem ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void assert_disjoint(const weft__pool_block *blocks, size_t n,
                            size_t align)
{
    weft__pool_block *v = malloc((n ? n : 1) * sizeof *v);

    assert_non_null(v);
    memcpy(v, blocks, n * sizeof *v);
    qsort(v, n, sizeof *v, by_place);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(v[i].offset % align, 0);
        assert_int_equal(v[i].size % align, 0);
        assert_true(v[i].offset + v[i].size <= v[i].mem->size);
        if (i > 0 && v[i].mem == v[i - 1].mem)
            assert_true(v[i - 1].offset + v[i - 1].size <= v[i].offset);
    }
    free(v);
}

/* ---- tests ------------------------------------------------------------- */

static const size_t round_sizes[] = {
    1,         100,     256,       257,       4 * KiB, 1000,     64 * KiB,
    300 * KiB, 3 * MiB, 17,        128 * KiB, 1 * MiB, 5000,     12 * MiB,
    2 * MiB,   333,     700 * KiB, 40 * KiB,  8,       96 * MiB,
};

static void one_round(weft__pool *p, weft__pool_block *blocks)
{
    size_t n = WEFT__COUNTOF(round_sizes), i;

    for (i = 0; i < n; i++) {
        assert_int_equal(weft__pool_alloc(p, round_sizes[i], &blocks[i]), 0);
        assert_true(blocks[i].size >= round_sizes[i]);
    }
    assert_disjoint(blocks, n, 256);
    /* free in another order than allocated */
    for (i = 0; i < n; i++)
        weft__pool_free(p, &blocks[(i * 7) % n]);
}

static void second_round_calls_no_driver(void **state)
{
    fixture *f = *state;
    weft__pool_block blocks[WEFT__COUNTOF(round_sizes)];
    weft__pool_stats st;
    weft__pool *p = make_pool(f, 0, 0, 0);
    long first, live;

    count_driver_allocs();
    one_round(p, blocks);
    first = driver_allocs();
    live = live_mems(f);
    weft__pool_get_stats(p, &st);
    /* a 64 MiB slab for the small ones, one of its own for 96 MiB */
    assert_int_equal(first, 2);
    assert_int_equal(st.driver_allocs, first);
    assert_int_equal(st.misses, first);
    assert_int_equal(st.hits, WEFT__COUNTOF(round_sizes) - first);
    assert_int_equal(st.slabs, live);
    assert_int_equal(st.blocks, 0);
    assert_int_equal(st.in_use, 0);
    assert_true(st.peak >= 96 * MiB + 12 * MiB);
    assert_int_equal(st.driver_frees, 0);

    count_driver_allocs();
    one_round(p, blocks);
    assert_int_equal(driver_allocs(), 0);
    /* nothing went back to the driver either */
    assert_int_equal(live_mems(f), live);
    weft__pool_get_stats(p, &st);
    assert_int_equal(st.driver_allocs, first);
    assert_int_equal(st.hits, 2 * WEFT__COUNTOF(round_sizes) - (uint64_t)first);
    weft__fault_disarm();
    assert_pool_sound(p);

    assert_int_equal(weft__pool_trim(p), st.driver_bytes);
    assert_int_equal(live_mems(f), 0);
    weft__pool_get_stats(p, &st);
    assert_int_equal(st.driver_bytes, 0);
    assert_int_equal(st.driver_frees, first);
    assert_int_equal(weft__pool_destroy(p), 0);
}

static void limit_refuses_without_the_driver(void **state)
{
    fixture *f = *state;
    weft__pool_block b[4], extra;
    weft__pool_stats st;
    weft__pool *p;
    const weft_device_info *props = &f->ctx->dev->props;

    /* the default limit is the device's memory */
    p = make_pool(f, 0, 0, 0);
    weft__pool_get_stats(p, &st);
    assert_int_equal(st.limit, props->global_mem);
    assert_int_equal(weft__pool_destroy(p), 0);

    p = make_pool(f, 2 * MiB + 512 * KiB, 1 * MiB, 0);
    assert_int_equal(weft__pool_alloc(p, 1 * MiB, &b[0]), 0);
    assert_int_equal(weft__pool_alloc(p, 1 * MiB, &b[1]), 0);
    /* the last half mebibyte: a slab of just what is left */
    assert_int_equal(weft__pool_alloc(p, 256 * KiB, &b[2]), 0);
    assert_int_equal(b[2].mem->size, 512 * KiB);
    weft__pool_get_stats(p, &st);
    assert_int_equal(st.driver_bytes, st.limit);

    count_driver_allocs();
    memset(&extra, 0xab, sizeof extra);
    assert_int_equal(weft__pool_alloc(p, 512 * KiB, &extra), WEFT_EDEVMEM);
    assert_non_null(strstr(weft_last_error(), "limit"));
    assert_int_equal(weft__pool_alloc(p, 64 * MiB, &extra), WEFT_EDEVMEM);
    assert_int_equal(driver_allocs(), 0);
    /* a failed allocation leaves the block alone */
    assert_int_equal(extra.offset, (size_t)0xababababababababull);
    /* what is left fits */
    assert_int_equal(weft__pool_alloc(p, 256 * KiB, &b[3]), 0);
    assert_int_equal(driver_allocs(), 0);
    weft__fault_disarm();
    weft__pool_get_stats(p, &st);
    assert_int_equal(st.failures, 2);
    assert_int_equal(st.misses, 3);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.in_use, st.limit);

    /* freeing makes room again without the driver */
    weft__pool_free(p, &b[0]);
    count_driver_allocs();
    assert_int_equal(weft__pool_alloc(p, 1 * MiB, &b[0]), 0);
    assert_int_equal(driver_allocs(), 0);
    weft__fault_disarm();

    /*
     * A request larger than any free extent but within the limit once the
     * empty slabs are trimmed: refused until the caller trims.
     */
    weft__pool_free(p, &b[0]);
    weft__pool_free(p, &b[1]);
    assert_int_equal(weft__pool_alloc(p, 2 * MiB, &extra), WEFT_EDEVMEM);
    assert_int_equal(weft__pool_trim(p), 2 * MiB);
    assert_int_equal(weft__pool_alloc(p, 2 * MiB, &extra), 0);
    assert_int_equal(extra.mem->size, 2 * MiB);
    weft__pool_free(p, &extra);
    weft__pool_free(p, &b[2]);
    weft__pool_free(p, &b[3]);
    assert_pool_sound(p);
    assert_int_equal(weft__pool_destroy(p), 0);
}

/*
 * Blocks that add up to the limit, in a pool of slabs smaller than some of
 * them: allocated one by one from an empty pool, the first slab's rest is
 * too small for the next block; after reserving their sum, all fit in one
 * slab, to the byte of the limit.
 */
static void reserve_takes_blocks_up_to_the_limit(void **state)
{
    fixture *f = *state;
    const size_t sizes[] = {1 * MiB + 256 * KiB, 1 * MiB + 256 * KiB,
                            512 * KiB};
    weft__pool_block b[WEFT__COUNTOF(sizes)];
    weft__pool_stats st;
    weft__pool *p = make_pool(f, 3 * MiB, 2 * MiB, 0);

    assert_int_equal(weft__pool_alloc(p, sizes[0], &b[0]), 0);
    /* the second fits the limit, but neither the first slab's rest nor
     * the room left for another slab */
    assert_int_equal(weft__pool_alloc(p, sizes[1], &b[1]), WEFT_EDEVMEM);
    weft__pool_free(p, &b[0]);
    assert_int_equal(weft__pool_trim(p), 2 * MiB);

    assert_int_equal(weft__pool_reserve(p, 3 * MiB), 0);
    weft__pool_get_stats(p, &st);
    assert_int_equal(st.driver_bytes, 3 * MiB);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.slabs, 1);
    /* reserved room is there already: no driver call */
    assert_int_equal(weft__pool_reserve(p, 1 * MiB), 0);
    count_driver_allocs();
    for (size_t i = 0; i < WEFT__COUNTOF(sizes); i++)
        assert_int_equal(weft__pool_alloc(p, sizes[i], &b[i]), 0);
    assert_int_equal(driver_allocs(), 0);
    weft__fault_disarm();
    weft__pool_get_stats(p, &st);
    assert_int_equal(st.in_use, 3 * MiB);
    assert_pool_sound(p);
    /* beyond the limit: refused, nothing changes */
    assert_int_equal(weft__pool_reserve(p, 256), WEFT_EDEVMEM);
    for (size_t i = 0; i < WEFT__COUNTOF(sizes); i++)
        weft__pool_free(p, &b[i]);
    assert_pool_sound(p);
    assert_int_equal(weft__pool_destroy(p), 0);
}

static void blocks_are_aligned(void **state)
{
    fixture *f = *state;
    const size_t sizes[] = {1, 3, 255, 256, 257, 1000, 4097, 65537};
    weft__pool_block b[WEFT__COUNTOF(sizes)];
    weft__pool_options o = WEFT__POOL_OPTIONS_INIT;
    weft__pool_stats st;
    weft__pool *p;
    size_t align, i;
    unsigned dev_align = f->ctx->dev->props.arg_offset_align;

    for (align = 0; align <= 4096; align = align ? align * 16 : 1) {
        p = make_pool(f, 0, 1 * MiB, align);
        weft__pool_get_stats(p, &st);
        assert_true(st.align >= 256);
        assert_true(align == 0 || st.align % align == 0);
        assert_true(dev_align <= 1 || st.align % dev_align == 0);
        for (i = 0; i < WEFT__COUNTOF(sizes); i++) {
            assert_int_equal(weft__pool_alloc(p, sizes[i], &b[i]), 0);
            assert_int_equal(b[i].offset % st.align, 0);
            assert_int_equal(b[i].size % st.align, 0);
            assert_true(b[i].size >= sizes[i]);
            assert_true(b[i].size < sizes[i] + st.align);
        }
        assert_disjoint(b, WEFT__COUNTOF(sizes), st.align);
        for (i = 0; i < WEFT__COUNTOF(sizes); i++)
            weft__pool_free(p, &b[i]);
        assert_int_equal(weft__pool_destroy(p), 0);
    }

    o.align = 3000;
    p = NULL;
    assert_int_equal(weft__pool_create(f->ctx, &o, &p), WEFT_EINVAL);
    assert_null(p);
    o.align = 0;
    o.size = sizeof o + 8;
    assert_int_equal(weft__pool_create(f->ctx, &o, &p), WEFT_EINVAL);
    assert_int_equal(weft__pool_create(NULL, NULL, &p), WEFT_EINVAL);
    p = make_pool(f, 0, 0, 0);
    assert_int_equal(weft__pool_alloc(p, 0, &b[0]), WEFT_EINVAL);
    assert_int_equal(weft__pool_alloc(p, SIZE_MAX, &b[0]), WEFT_EDEVMEM);
    assert_int_equal(weft__pool_destroy(p), 0);
    assert_int_equal(weft__pool_destroy(NULL), 0);
}

static void freed_neighbours_coalesce(void **state)
{
    fixture *f = *state;
    weft__pool_block a, b, c, d, big;
    weft__pool_stats st;
    weft__pool *p = make_pool(f, 0, 1 * MiB, 0);

    /* one slab, cut in four quarters, in address order */
    assert_int_equal(weft__pool_alloc(p, 256 * KiB, &a), 0);
    assert_int_equal(weft__pool_alloc(p, 256 * KiB, &b), 0);
    assert_int_equal(weft__pool_alloc(p, 256 * KiB, &c), 0);
    assert_int_equal(weft__pool_alloc(p, 256 * KiB, &d), 0);
    assert_ptr_equal(a.mem, d.mem);
    assert_int_equal(a.offset, 0);
    assert_int_equal(b.offset, 256 * KiB);
    assert_int_equal(c.offset, 512 * KiB);
    assert_int_equal(d.offset, 768 * KiB);

    /* a and c free, b between them: 512 KiB fits nowhere in the slab */
    weft__pool_free(p, &a);
    weft__pool_free(p, &c);
    assert_pool_sound(p);
    count_driver_allocs();
    assert_int_equal(weft__pool_alloc(p, 512 * KiB, &big), 0);
    assert_int_equal(driver_allocs(), 1);
    assert_ptr_not_equal(big.mem, a.mem);
    weft__pool_free(p, &big);

    /* b freed: a, b and c become one free extent of 768 KiB at 0 */
    weft__pool_free(p, &b);
    assert_pool_sound(p);
    count_driver_allocs();
    assert_int_equal(weft__pool_alloc(p, 768 * KiB, &big), 0);
    assert_int_equal(driver_allocs(), 0);
    assert_ptr_equal(big.mem, a.mem);
    assert_int_equal(big.offset, 0);
    weft__fault_disarm();

    /* best fit: 256 KiB comes from the exact hole, not the empty slab */
    weft__pool_free(p, &big);
    assert_int_equal(weft__pool_alloc(p, 512 * KiB, &a), 0);
    assert_int_equal(weft__pool_alloc(p, 256 * KiB, &b), 0);
    assert_ptr_equal(b.mem, d.mem);
    assert_int_equal(b.offset, 512 * KiB);

    /* trim gives back only the slab that holds no block */
    weft__pool_get_stats(p, &st);
    assert_int_equal(st.slabs, 2);
    assert_int_equal(live_mems(f), 2);
    assert_int_equal(weft__pool_trim(p), 1 * MiB);
    assert_int_equal(live_mems(f), 1);
    assert_int_equal(weft__pool_destroy(p), WEFT_EBUSY);
    assert_non_null(strstr(weft_last_error(), "3 blocks"));
    weft__pool_free(p, &a);
    weft__pool_free(p, &b);
    weft__pool_free(p, &d);
    weft__pool_get_stats(p, &st);
    assert_int_equal(st.blocks, 0);
    assert_int_equal(st.slabs, 1);
    assert_pool_sound(p);
    assert_int_equal(weft__pool_destroy(p), 0);
    assert_int_equal(live_mems(f), 0);
}

/* Among free extents of one size class, the smallest that fits wins. */
static void best_fit_within_a_class(void **state)
{
    fixture *f = *state;
    weft__pool_block a, sep1, b, sep2, got;
    weft__pool *p = make_pool(f, 0, 2 * MiB, 0);

    assert_int_equal(weft__pool_alloc(p, 300 * KiB, &a), 0);
    assert_int_equal(weft__pool_alloc(p, 4 * KiB, &sep1), 0);
    assert_int_equal(weft__pool_alloc(p, 260 * KiB, &b), 0);
    assert_int_equal(weft__pool_alloc(p, 4 * KiB, &sep2), 0);
    /* 300 KiB and 260 KiB holes, the larger freed last */
    weft__pool_free(p, &b);
    weft__pool_free(p, &a);
    assert_int_equal(weft__pool_alloc(p, 256 * KiB, &got), 0);
    assert_ptr_equal(got.mem, b.mem);
    assert_int_equal(got.offset, b.offset);
    assert_int_equal(weft__pool_alloc(p, 290 * KiB, &b), 0);
    assert_int_equal(b.offset, a.offset);
    weft__pool_free(p, &b);
    weft__pool_free(p, &got);
    weft__pool_free(p, &sep1);
    weft__pool_free(p, &sep2);
    assert_pool_sound(p);
    assert_int_equal(weft__pool_destroy(p), 0);
}

/* Random allocations and frees; blocks never overlap, the pool stays sound. */
static void random_alloc_free(void **state)
{
    fixture *f = *state;
    enum { N = 64 };
    weft__pool_block live[N];
    weft__pool_stats st;
    size_t n = 0, total = 0;
    uint64_t x = 12345;
    weft__pool *p = make_pool(f, 16 * MiB, 2 * MiB, 0);

    for (int step = 0; step < 5000; step++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        if (n < N && ((x >> 33) % 3 != 0 || n == 0)) {
            size_t size = 1 + (size_t)((x >> 20) % (3 * MiB / 2));
            int rc = weft__pool_alloc(p, size, &live[n]);

            /* the limit may refuse; then it says so */
            assert_true(rc == 0 || rc == WEFT_EDEVMEM);
            if (rc == 0)
                total += live[n++].size;
        } else {
            size_t i = (size_t)(x >> 40) % n;

            total -= live[i].size;
            weft__pool_free(p, &live[i]);
            live[i] = live[--n];
        }
        if (step % 16 == 0) {
            assert_pool_sound(p);
            assert_disjoint(live, n, 256);
            weft__pool_get_stats(p, &st);
            assert_int_equal(st.in_use, total);
            assert_int_equal(st.blocks, n);
            assert_true(st.driver_bytes <= 16 * MiB);
        }
    }
    while (n)
        weft__pool_free(p, &live[--n]);
    assert_pool_sound(p);
    assert_int_equal(weft__pool_destroy(p), 0);
}

typedef struct worker {
    weft__pool *pool;
    unsigned seed;
    int failures;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    weft__pool_block b[16];
    unsigned x = w->seed;

    for (int round = 0; round < 300; round++) {
        for (int i = 0; i < 16; i++) {
            x = x * 1103515245u + 12345u;
            if (weft__pool_alloc(w->pool, 1 + (x >> 8) % (64 * KiB), &b[i]) <
                0) {
                w->failures++;
                return NULL;
            }
        }
        for (int i = 15; i >= 0; i--)
            weft__pool_free(w->pool, &b[i]);
    }
    return NULL;
}

static void threads_share_a_pool(void **state)
{
    fixture *f = *state;
    enum { T = 4 };
    pthread_t th[T];
    worker w[T];
    weft__pool_stats st;
    weft__pool *p = make_pool(f, 0, 4 * MiB, 0);
    int t;

    for (t = 0; t < T; t++) {
        w[t] = (worker){.pool = p, .seed = 77u + (unsigned)t};
        assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
    }
    for (t = 0; t < T; t++) {
        assert_int_equal(pthread_join(th[t], NULL), 0);
        assert_int_equal(w[t].failures, 0);
    }
    weft__pool_get_stats(p, &st);
    assert_int_equal(st.blocks, 0);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.hits + st.misses, T * 300 * 16);
    assert_int_equal(st.misses, st.driver_allocs);
    assert_int_equal(st.slabs, live_mems(f));
    assert_pool_sound(p);
    assert_int_equal(weft__pool_destroy(p), 0);
}

/*
 * Each failure point (host allocation, driver allocation) fails in turn;
 * every call either succeeds or fails with nothing changed, and at the end
 * everything has gone back (ASan and the context's count check leaks).
 */
static void injected_failures_leak_nothing(void **state)
{
    fixture *f = *state;
    weft__pool_options o = WEFT__POOL_OPTIONS_INIT;
    int failures = 0;

    o.slab = 1 * MiB;
    for (long n = 1;; n++) {
        weft__pool *p = NULL;
        weft__pool_block b[6];
        int have[6] = {0};
        const size_t sizes[6] = {100, 200 * KiB, 3 * MiB, 300, 900 * KiB, 1};
        weft__pool_stats before, after;
        int rc, fired;

        weft__fault_arm(n, NULL);
        rc = weft__pool_create(f->ctx, &o, &p);
        if (rc < 0) {
            assert_int_equal(rc, WEFT_ENOMEM);
            assert_null(p);
        } else {
            for (int i = 0; i < 6; i++) {
                weft__pool_get_stats(p, &before);
                rc = weft__pool_alloc(p, sizes[i], &b[i]);
                weft__pool_get_stats(p, &after);
                if (rc < 0) {
                    assert_true(rc == WEFT_ENOMEM || rc == WEFT_EDEVMEM);
                    /* nothing changed but the count of failures */
                    before.failures++;
                    assert_memory_equal(&before, &after, sizeof before);
                } else {
                    have[i] = 1;
                }
                assert_pool_sound(p);
                if (i == 3 && have[1]) {
                    weft__pool_free(p, &b[1]);
                    have[1] = 0;
                }
            }
            for (int i = 0; i < 6; i++)
                if (have[i])
                    weft__pool_free(p, &b[i]);
            weft__pool_trim(p);
            assert_int_equal(live_mems(f), 0);
            assert_int_equal(weft__pool_destroy(p), 0);
        }
        fired = weft__fault_fired();
        weft__fault_disarm();
        if (!fired)
            break;
        failures++;
    }
    /* create, the slab records, the driver, the split records fail */
    assert_true(failures >= 5);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(second_round_calls_no_driver, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(limit_refuses_without_the_driver, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(reserve_takes_blocks_up_to_the_limit,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(blocks_are_aligned, setup, teardown),
        cmocka_unit_test_setup_teardown(freed_neighbours_coalesce, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(best_fit_within_a_class, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(random_alloc_free, setup, teardown),
        cmocka_unit_test_setup_teardown(threads_share_a_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(injected_failures_leak_nothing, setup,
                                        teardown),
    };

    return wt_run_group(argc, argv, tests, NULL, NULL);
}
