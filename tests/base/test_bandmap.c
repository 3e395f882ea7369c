/*
 * The band map (base/bandmap.h) against a plain model: one value per
 * byte, random ranges and 2-D blocks of several pitches.
 */
#include "wt_test.h"

#include "base/bandmap.h"

#include <string.h>

enum { SIZE = 2000 };

static uint64_t model[SIZE];
static unsigned char seen[SIZE];
static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static size_t below(size_t n)
{
    return (size_t)(next() % n);
}

static int in_region(const weft__region *r, size_t x)
{
    if (x < r->off)
        return 0;
    if (r->h == 1)
        return x < r->off + r->w;
    size_t i = (x - r->off) / r->p;

    return i < r->h && x - r->off - i * r->p < r->w;
}

/* A random region: a range, or a block of one of a few pitches. */
static weft__region random_region(void)
{
    static const size_t pitches[] = {40, 40, 40, 64, 100};
    weft__region r;

    if (below(4) == 0) {
        r.off = below(SIZE);
        r.w = 1 + below(SIZE - r.off);
        if (r.w > 300)
            r.w = 1 + below(300);
        r.h = 1;
        r.p = 0;
        return r;
    }
    r.p = pitches[below(5)];
    r.w = 1 + below(r.p);
    r.h = 1 + below(12);
    r.off = below(SIZE);
    while (r.off + (r.h - 1) * r.p + r.w > SIZE) {
        if (r.h > 1)
            r.h--;
        else
            r.off /= 2;
    }
    if (r.h == 1)
        r.p = 0;
    return r;
}

typedef struct visit_state {
    const weft__region *r;
    size_t bytes;
} visit_state;

static int check_piece(const weft__region *piece, uint64_t v, void *user)
{
    visit_state *s = user;

    assert_true(piece->w > 0 && piece->h > 0);
    for (size_t i = 0; i < piece->h; i++)
        for (size_t b = 0; b < piece->w; b++) {
            size_t x = piece->off + i * piece->p + b;

            assert_true(x < SIZE);
            assert_true(in_region(s->r, x));
            assert_int_equal(seen[x], 0);
            seen[x] = 1;
            assert_true(model[x] == v);
            s->bytes++;
        }
    return 0;
}

/* Visiting r gives each of its bytes once, with the model's value. */
static void check_visit(const weft__bandmap *m, const weft__region *r)
{
    visit_state s = {r, 0};
    size_t want = 0;

    memset(seen, 0, sizeof seen);
    assert_int_equal(weft__bandmap_visit(m, r, check_piece, &s), 0);
    for (size_t x = 0; x < SIZE; x++)
        want += (size_t)in_region(r, x);
    assert_int_equal(s.bytes, want);
}

/* 1 if each entry lies wholly inside r or wholly outside (brute force). */
static int split_for(const weft__bandmap *m, const weft__region *r)
{
    for (size_t i = 0; i < m->n; i++) {
        const weft__band_entry *e = &m->e[i];
        size_t in = 0, all = 0;

        for (size_t row = e->lo; row < e->hi; row += e->p ? e->p : e->hi)
            for (size_t x = row + e->c0; x < (e->p ? row + e->c1 : e->hi);
                 x++, all++)
                in += (size_t)in_region(r, x);
        if (in != 0 && in != all)
            return 0;
    }
    return 1;
}

/* After split(r), each entry lies wholly inside r or wholly outside. */
static void check_split(const weft__bandmap *m, const weft__region *r)
{
    assert_true(weft__bandmap_is_split(m, r));
    for (size_t i = 0; i < m->n; i++) {
        const weft__band_entry *e = &m->e[i];
        size_t in = 0, all = 0;

        if (!e->p) {
            for (size_t x = e->lo; x < e->hi; x++, all++)
                in += (size_t)in_region(r, x);
        } else {
            for (size_t row = e->lo; row < e->hi; row += e->p)
                for (size_t x = row + e->c0; x < row + e->c1; x++, all++)
                    in += (size_t)in_region(r, x);
        }
        if (in != 0 && in != all)
            fail_msg("entry %zu [%zu, %zu) p %zu [%zu, %zu): %zu of %zu "
                     "bytes in region %zu %zux%zu p %zu",
                     i, e->lo, e->hi, e->p, e->c0, e->c1, in, all, r->off, r->h,
                     r->w, r->p);
    }
}

static uint64_t set_to(uint64_t v, void *user)
{
    (void)v;
    return *(uint64_t *)user;
}

static uint64_t or_with(uint64_t v, void *user)
{
    return v | *(uint64_t *)user;
}

static void model_apply(const weft__region *r, int or, uint64_t v)
{
    for (size_t x = 0; x < SIZE; x++)
        if (in_region(r, x))
            model[x] = or ? model[x] | v : v;
}

/* keep: with the spans of the last looks kept (a graph's maps). */
static void against_model(int keep)
{
    weft__bandmap m;

    for (int round = 0; round < 100; round++) {
        assert_int_equal(weft__bandmap_init(&m, SIZE, 1), 0);
        if (keep)
            weft__bandmap_keep_spans(&m);
        for (size_t x = 0; x < SIZE; x++)
            model[x] = 1;
        for (int step = 0; step < 150; step++) {
            /* one or two regions split, then applied, then merged */
            weft__region r[2] = {random_region(), random_region()};
            uint64_t v[2] = {1 + below(4), (uint64_t)1 << below(3)};
            int two = below(3) == 0;
            const char *bad;

            assert_int_equal(weft__bandmap_check_region(&m, &r[0], "t"), 0);
            assert_int_equal(weft__bandmap_split(&m, &r[0]), 0);
            check_split(&m, &r[0]);
            if (two) {
                assert_int_equal(weft__bandmap_split(&m, &r[1]), 0);
                check_split(&m, &r[1]);
                check_split(&m, &r[0]);
            }
            assert_null(weft__bandmap_check(&m));
            weft__bandmap_apply(&m, &r[0], set_to, &v[0]);
            model_apply(&r[0], 0, v[0]);
            if (two) {
                weft__bandmap_apply(&m, &r[1], or_with, &v[1]);
                model_apply(&r[1], 1, v[1]);
            }
            check_visit(&m, &r[0]);
            weft__bandmap_merge(&m, r[0].off, weft__region_end(&r[0]));
            if (two)
                weft__bandmap_merge(&m, r[1].off, weft__region_end(&r[1]));
            if ((bad = weft__bandmap_check(&m)))
                fail_msg("round %d step %d: %s", round, step, bad);
            weft__region all = weft__region_range(0, SIZE);
            weft__region any = random_region();

            check_visit(&m, &all);
            check_visit(&m, &any);
            assert_int_equal(weft__bandmap_is_split(&m, &any),
                             split_for(&m, &any));
        }
        weft__bandmap_fini(&m);
    }
}

static void random_against_model(void **state)
{
    (void)state;
    against_model(0);
}

/* The same with kept spans: none may outlive a change of the entries. */
static void random_against_model_spans(void **state)
{
    (void)state;
    against_model(1);
}

/*
 * A 32 x 32 matrix of 8-byte elements written tile by tile (8 x 8 tiles,
 * in a buffer of its own) stays one cell per tile, and a tile's visit is
 * one piece.
 */
static void tiles_stay_small(void **state)
{
    enum { N = 32, T = 8, E = 8, P = N * E };
    weft__bandmap m;
    uint64_t v = 0;
    (void)state;

    assert_int_equal(weft__bandmap_init(&m, N * P, 0), 0);
    for (size_t ti = 0; ti < N / T; ti++)
        for (size_t tj = 0; tj < N / T; tj++) {
            weft__region r = {ti * T * P + tj * T * E, T * E, T, P};

            v++;
            assert_int_equal(weft__bandmap_set(&m, &r, set_to, &v), 0);
            assert_null(weft__bandmap_check(&m));
        }
    assert_int_equal(m.n, (N / T) * (N / T));
    for (size_t ti = 0; ti < N / T; ti++)
        for (size_t tj = 0; tj < N / T; tj++) {
            weft__region r = {ti * T * P + tj * T * E, T * E, T, P};
            int pieces = 0;

            for (size_t i = 0; i < m.n; i++)
                pieces += m.e[i].v == 1 + ti * (N / T) + tj;
            assert_int_equal(pieces, 1);
            memset(seen, 0, sizeof seen);
            (void)r;
        }
    /* The whole matrix set again: one entry. */
    weft__region all = weft__region_range(0, N * P);

    v = 99;
    assert_int_equal(weft__bandmap_set(&m, &all, set_to, &v), 0);
    assert_int_equal(m.n, 1);
    weft__bandmap_fini(&m);
}

static int count_pieces(const weft__region *piece, uint64_t v, void *user)
{
    (void)piece;
    (void)v;
    ++*(int *)user;
    return 0;
}

/*
 * The right tile of a matrix that starts at a row of the buffer, then
 * its left neighbour: the second lies in the first's band rows, one
 * piece. (A matrix that starts mid-row is correct too, and may cost a
 * flat row more where its first tile written wraps at the buffer's
 * phase.)
 */
static void tiles_of_a_view(void **state)
{
    enum { P = 400, OFF = 3 * P };
    weft__bandmap m;
    uint64_t v = 5;
    int n = 0;
    (void)state;

    assert_int_equal(weft__bandmap_init(&m, 50 * P, 0), 0);
    weft__region a = {OFF + 10 * P + 200, 200, 10, P};
    weft__region b = {OFF + 10 * P, 200, 10, P};

    assert_int_equal(weft__bandmap_set(&m, &a, set_to, &v), 0);
    v = 6;
    assert_int_equal(weft__bandmap_set(&m, &b, set_to, &v), 0);
    assert_null(weft__bandmap_check(&m));
    assert_int_equal(weft__bandmap_visit(&m, &b, count_pieces, &n), 0);
    assert_int_equal(n, 1);
    assert_true(m.n <= 6);
    weft__bandmap_fini(&m);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_against_model),
        cmocka_unit_test(random_against_model_spans),
        cmocka_unit_test(tiles_stay_small),
        cmocka_unit_test(tiles_of_a_view),
    };
    return wt_run_group(argc, argv, tests, NULL, NULL);
}
