/*
 * The coherence tracker, against a byte-level model: every memory holds a
 * version number per byte, the truth holds the latest version written;
 * transfers the tracker asks for are applied to the model's bytes, so a
 * transfer from a stale copy or a missed byte shows up as a wrong version.
 */
#include "wt_test.h"

#include "mem/coherence.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t rnd_below(size_t n)
{
    return (size_t)(rnd() % n);
}

/* Costs from a table: cost[src][dst]. */
typedef struct cost_table {
    double cost[8][8];
} cost_table;

static double table_cost(unsigned src, unsigned dst, void *user)
{
    const cost_table *t = user;

    return t->cost[src][dst];
}

/* Each byte's holders, to check that a failed call changed nothing. */
typedef struct snapshot {
    size_t n;
    uint64_t holders[1024];
} snapshot;

static void snap(const weft__coherence *c, snapshot *s)
{
    assert_true(c->size <= WEFT__COUNTOF(s->holders));
    s->n = c->size;
    for (size_t b = 0; b < c->size; b++)
        s->holders[b] = weft__coherence_holders(c, b, 1);
}

static void assert_unchanged(const weft__coherence *c, const snapshot *s)
{
    assert_int_equal(c->size, s->n);
    for (size_t b = 0; b < s->n; b++)
        assert_int_equal(weft__coherence_holders(c, b, 1), s->holders[b]);
}

/*
 * The tracker's entries once equal neighbours are joined (settled), read
 * as segments: the specific cases below use ranges only.
 */
typedef struct seg_view {
    size_t off;
    uint64_t valid;
    unsigned flags; /* DIRTY: the host copy is stale */
} seg_view;

enum { DIRTY = 1 };

static size_t nsegs(weft__coherence *c)
{
    weft__coherence_settle(c, 0, c->size);
    return weft__coherence_entries(c);
}

static seg_view seg(weft__coherence *c, size_t i)
{
    const weft__band_entry *e;

    assert_true(i < nsegs(c));
    e = &c->map.e[i];
    assert_int_equal(e->p, 0);
    return (seg_view){e->lo, e->v, (e->v & 1) ? 0u : (unsigned)DIRTY};
}

static void assert_sound(const weft__coherence *c)
{
    const char *why = weft__coherence_check(c);

    if (why)
        fail_msg("tracker broken: %s", why);
}

/* ---- the model --------------------------------------------------------- */

#define MODEL_MEMS  5
#define MODEL_BYTES 192

typedef struct model {
    size_t size;
    unsigned nmem;
    unsigned char valid[MODEL_MEMS][MODEL_BYTES];
    uint32_t data[MODEL_MEMS][MODEL_BYTES];
    uint32_t truth[MODEL_BYTES];
    uint32_t version;
} model;

static uint64_t model_mask(const model *md, size_t b)
{
    uint64_t mask = 0;

    for (unsigned m = 0; m < md->nmem; m++)
        if (md->valid[m][b])
            mask |= (uint64_t)1 << m;
    return mask;
}

/* The source the tracker must pick for byte b: cheapest, then lowest. */
static unsigned model_source(const model *md, size_t b, unsigned dst,
                             const cost_table *t)
{
    unsigned best = UINT32_MAX;
    double best_cost = 0;

    for (unsigned m = 0; m < md->nmem; m++) {
        double x;

        if (!md->valid[m][b])
            continue;
        x = t ? t->cost[m][dst] : 0.0;
        if (isnan(x))
            x = INFINITY;
        if (best == UINT32_MAX || x < best_cost) {
            best = m;
            best_cost = x;
        }
    }
    return best;
}

/* Everything the tracker answers per byte agrees with the model. */
static void model_compare(const weft__coherence *c, const model *md)
{
    assert_sound(c);
    for (size_t b = 0; b < md->size; b++) {
        uint64_t mask = model_mask(md, b);

        assert_int_not_equal(mask, 0);
        assert_int_equal(weft__coherence_holders(c, b, 1), mask);
        for (unsigned m = 0; m < md->nmem; m++) {
            assert_int_equal(weft__coherence_is_valid(c, m, b, 1),
                             md->valid[m][b]);
            /* every valid copy holds the latest bytes */
            if (md->valid[m][b])
                assert_int_equal(md->data[m][b], md->truth[b]);
        }
    }
}

static void model_range(const model *md, size_t *off, size_t *len)
{
    /* small ranges most of the time, so that segments pile up */
    *off = rnd_below(md->size);
    if (rnd_below(4) == 0)
        *len = 1 + rnd_below(md->size - *off);
    else
        *len = 1 + rnd_below(WEFT__MIN(md->size - *off, (size_t)24));
    if (rnd_below(16) == 0)
        *len = 0;
}

static void model_read(weft__coherence *c, model *md, unsigned m, size_t off,
                       size_t len, const cost_table *t,
                       weft__coherence_transfers *tr)
{
    unsigned char covered[MODEL_BYTES] = {0};
    size_t i, b, prev_end = off;

    assert_int_equal(weft__coherence_read(c, m, off, len, t ? table_cost : NULL,
                                          (void *)t, tr),
                     0);
    for (i = 0; i < tr->count; i++) {
        const weft__coherence_transfer *x = &tr->items[i];

        assert_int_equal(x->dst, m);
        assert_true(x->src < md->nmem);
        assert_int_not_equal(x->src, m);
        assert_true(x->len > 0);
        /* in order, inside the range, not overlapping */
        assert_true(x->off >= prev_end);
        assert_true(x->off + x->len <= off + len);
        /* the same source on touching transfers would have been merged */
        if (i > 0 && x->off == prev_end)
            assert_int_not_equal(x->src, tr->items[i - 1].src);
        for (b = x->off; b < x->off + x->len; b++) {
            assert_true(md->valid[x->src][b]);
            assert_int_equal(x->src, model_source(md, b, m, t));
            covered[b] = 1;
        }
        prev_end = x->off + x->len;
    }
    /* exactly the bytes not yet valid on m */
    for (b = off; b < off + len; b++)
        assert_int_equal(covered[b], !md->valid[m][b]);
    for (i = 0; i < tr->count; i++)
        for (b = tr->items[i].off; b < tr->items[i].off + tr->items[i].len; b++)
            md->data[m][b] = md->data[tr->items[i].src][b];
    /* mark per transfer or the whole range: both are what a caller does */
    if (rnd_below(2)) {
        for (i = 0; i < tr->count; i++)
            assert_int_equal(weft__coherence_mark_valid(c, m, tr->items[i].off,
                                                        tr->items[i].len),
                             0);
    } else {
        assert_int_equal(weft__coherence_mark_valid(c, m, off, len), 0);
    }
    for (b = off; b < off + len; b++) {
        md->valid[m][b] = 1;
        assert_int_equal(md->data[m][b], md->truth[b]);
    }
}

static void model_write(weft__coherence *c, model *md, unsigned m, size_t off,
                        size_t len)
{
    assert_int_equal(weft__coherence_write(c, m, off, len), 0);
    md->version++;
    for (size_t b = off; b < off + len; b++) {
        for (unsigned k = 0; k < md->nmem; k++)
            md->valid[k][b] = 0;
        md->valid[m][b] = 1;
        md->data[m][b] = md->truth[b] = md->version;
    }
}

static void model_drop(weft__coherence *c, model *md, unsigned m, size_t off,
                       size_t len)
{
    uint64_t bit = (uint64_t)1 << m;
    int sole = 0, rc;
    snapshot before;

    for (size_t b = off; b < off + len; b++)
        if (model_mask(md, b) == bit)
            sole = 1;
    snap(c, &before);
    rc = weft__coherence_drop(c, m, off, len);
    if (sole) {
        assert_int_equal(rc, WEFT_EBUSY);
        assert_unchanged(c, &before);
        return;
    }
    assert_int_equal(rc, 0);
    for (size_t b = off; b < off + len; b++)
        md->valid[m][b] = 0;
}

static void model_sole(const weft__coherence *c, const model *md, unsigned m,
                       size_t off, size_t len, weft__coherence_ranges *r)
{
    unsigned char sole[MODEL_BYTES] = {0};
    size_t i, b, prev_end = 0;

    assert_int_equal(weft__coherence_sole_ranges(c, m, off, len, r), 0);
    for (i = 0; i < r->count; i++) {
        assert_true(r->items[i].len > 0);
        assert_true(r->items[i].off >= off);
        assert_true(r->items[i].off + r->items[i].len <= off + len);
        /* sorted and merged: a gap between any two */
        if (i > 0)
            assert_true(r->items[i].off > prev_end);
        for (b = r->items[i].off; b < r->items[i].off + r->items[i].len; b++)
            sole[b] = 1;
        prev_end = r->items[i].off + r->items[i].len;
    }
    for (b = off; b < off + len; b++)
        assert_int_equal(sole[b], model_mask(md, b) == (uint64_t)1 << m);
}

static void random_run(uint64_t seed, unsigned nmem, size_t size, int steps)
{
    weft__coherence c;
    weft__coherence_transfers tr = WEFT__COH_LIST_INIT;
    weft__coherence_ranges r = WEFT__COH_LIST_INIT;
    static model md;
    cost_table t;
    uint64_t init;
    size_t off, len;
    unsigned m;

    rng_state = seed;
    memset(&md, 0, sizeof md);
    md.size = size;
    md.nmem = nmem;
    init = 1 + rnd_below(((uint64_t)1 << nmem) - 1);
    for (m = 0; m < nmem; m++)
        for (size_t b = 0; b < size; b++)
            md.valid[m][b] = (init >> m) & 1;
    assert_int_equal(weft__coherence_init(&c, size, nmem, init), 0);
    for (int step = 0; step < steps; step++) {
        /* a new cost table now and then: ties, NaN, asymmetric links */
        if (step % 64 == 0)
            for (unsigned a = 0; a < nmem; a++)
                for (unsigned d = 0; d < nmem; d++)
                    t.cost[a][d] =
                        rnd_below(12) == 0 ? NAN : (double)rnd_below(4);
        m = (unsigned)rnd_below(nmem);
        model_range(&md, &off, &len);
        switch (rnd_below(10)) {
        case 0:
        case 1:
        case 2:
        case 3:
            model_read(&c, &md, m, off, len, rnd_below(5) ? &t : NULL, &tr);
            break;
        case 4:
        case 5:
        case 6:
            model_write(&c, &md, m, off, len);
            break;
        case 7:
        case 8:
            model_drop(&c, &md, m, off, len);
            break;
        default:
            model_sole(&c, &md, m, off, len, &r);
            break;
        }
        model_compare(&c, &md);
        /* holders over a range is the intersection over its bytes */
        model_range(&md, &off, &len);
        {
            uint64_t want = ((uint64_t)1 << nmem) - 1;

            for (size_t b = off; b < off + len; b++)
                want &= model_mask(&md, b);
            assert_int_equal(weft__coherence_holders(&c, off, len), want);
        }
    }
    weft__coherence_transfers_fini(&tr);
    weft__coherence_ranges_fini(&r);
    weft__coherence_fini(&c);
}

static void randomized_against_model(void **state)
{
    (void)state;
    for (unsigned nmem = 1; nmem <= MODEL_MEMS; nmem++)
        for (uint64_t seed = 1; seed <= 40; seed++) {
            size_t size = seed % 4 == 0 ? 7 : MODEL_BYTES - seed;

            random_run(seed * 1000 + nmem, nmem, size, 400);
        }
}

/* ---- blocks against a model ------------------------------------------- */

enum { BM_SIZE = 1200, BM_MEMS = 3 };

static unsigned char bm_valid[BM_MEMS][BM_SIZE];

static int bm_in(const weft__region *r, size_t x)
{
    size_t i;

    if (x < r->off)
        return 0;
    if (r->h == 1)
        return x < r->off + r->w;
    i = (x - r->off) / r->p;
    return i < r->h && x - r->off - i * r->p < r->w;
}

/* A range, or a block of one of a few pitches (tiles of one matrix). */
static weft__region bm_region(void)
{
    static const size_t pitches[] = {48, 48, 48, 80};
    weft__region r;

    if (rnd_below(4) == 0) {
        r.off = rnd_below(BM_SIZE);
        r.w = 1 + rnd_below(WEFT__MIN((size_t)200, BM_SIZE - r.off));
        r.h = 1;
        r.p = 0;
        return r;
    }
    r.p = pitches[rnd_below(4)];
    r.w = 1 + rnd_below(r.p);
    r.h = 2 + rnd_below(10);
    r.off = rnd_below(BM_SIZE / 2);
    while (r.off + (r.h - 1) * r.p + r.w > BM_SIZE)
        r.h--;
    if (r.h < 2) {
        r.h = 1;
        r.p = 0;
    }
    return r;
}

static uint64_t bm_mask(size_t b)
{
    uint64_t m = 0;

    for (unsigned k = 0; k < BM_MEMS; k++)
        m |= (uint64_t)bm_valid[k][b] << k;
    return m;
}

/*
 * Reads, writes, drops and sole regions of random ranges and blocks, each
 * checked byte by byte: a read's transfers cover exactly the bytes the
 * memory lacks, from a memory that holds them, inside the region.
 */
static void blocks_against_model(void **state)
{
    weft__coherence c;
    weft__coherence_transfers tr = WEFT__COH_LIST_INIT;
    weft__coherence_ranges sr = WEFT__COH_LIST_INIT;
    static unsigned char seen[BM_SIZE];
    (void)state;

    rng_state = 4242;
    for (int round = 0; round < 30; round++) {
        memset(bm_valid, 0, sizeof bm_valid);
        memset(bm_valid[0], 1, sizeof bm_valid[0]);
        assert_int_equal(weft__coherence_init(&c, BM_SIZE, BM_MEMS, 1), 0);
        for (int step = 0; step < 120; step++) {
            weft__region r = bm_region();
            unsigned m = (unsigned)rnd_below(BM_MEMS);
            int op = (int)rnd_below(5);

            if (op == 0) { /* read: the transfers, then mark each */
                assert_int_equal(
                    weft__coherence_read_region(&c, m, &r, NULL, NULL, &tr), 0);
                memset(seen, 0, sizeof seen);
                for (size_t i = 0; i < tr.count; i++) {
                    const weft__coherence_transfer *t = &tr.items[i];
                    weft__region g =
                        weft__coherence_range_region(&(weft__coherence_range){
                            t->off, t->len, t->rows, t->pitch});

                    assert_int_equal(t->dst, m);
                    for (size_t x = 0; x < BM_SIZE; x++) {
                        if (!bm_in(&g, x))
                            continue;
                        assert_true(bm_in(&r, x));
                        assert_int_equal(seen[x], 0);
                        seen[x] = 1;
                        assert_true(bm_valid[t->src][x]);
                        assert_false(bm_valid[m][x]);
                    }
                    assert_int_equal(
                        weft__coherence_mark_valid_region(&c, m, &g), 0);
                }
                for (size_t x = 0; x < BM_SIZE; x++) {
                    if (bm_in(&r, x))
                        assert_int_equal(seen[x], !bm_valid[m][x]);
                    if (bm_in(&r, x))
                        bm_valid[m][x] = 1;
                }
            } else if (op == 1) { /* write */
                assert_int_equal(weft__coherence_write_region(&c, m, &r), 0);
                for (size_t x = 0; x < BM_SIZE; x++)
                    if (bm_in(&r, x))
                        for (unsigned k = 0; k < BM_MEMS; k++)
                            bm_valid[k][x] = k == m;
            } else if (op == 2) { /* drop: refused where m holds a byte alone */
                int sole = 0, rc;

                for (size_t x = 0; x < BM_SIZE; x++)
                    sole |= bm_in(&r, x) && bm_mask(x) == (1u << m);
                rc = weft__coherence_drop_region(&c, m, &r);
                assert_int_equal(rc, sole ? WEFT_EBUSY : 0);
                for (size_t x = 0; !sole && x < BM_SIZE; x++)
                    if (bm_in(&r, x))
                        bm_valid[m][x] = 0;
            } else if (op == 3) { /* drop where shared */
                assert_int_equal(weft__coherence_drop_shared(&c, m, &r), 0);
                for (size_t x = 0; x < BM_SIZE; x++)
                    if (bm_in(&r, x) && bm_mask(x) != (1u << m))
                        bm_valid[m][x] = 0;
            } else { /* the bytes m holds alone */
                assert_int_equal(weft__coherence_sole_regions(&c, m, &r, &sr),
                                 0);
                memset(seen, 0, sizeof seen);
                for (size_t i = 0; i < sr.count; i++) {
                    weft__region g = weft__coherence_range_region(&sr.items[i]);

                    for (size_t x = 0; x < BM_SIZE; x++)
                        if (bm_in(&g, x)) {
                            assert_true(bm_in(&r, x));
                            assert_int_equal(seen[x], 0);
                            seen[x] = 1;
                        }
                }
                for (size_t x = 0; x < BM_SIZE; x++)
                    assert_int_equal(seen[x],
                                     bm_in(&r, x) && bm_mask(x) == (1u << m));
            }
            if (rnd_below(8) == 0)
                weft__coherence_settle(&c, 0, BM_SIZE);
            assert_sound(&c);
            for (size_t x = 0; x < BM_SIZE; x++)
                assert_int_equal(weft__coherence_holders(&c, x, 1), bm_mask(x));
        }
        weft__coherence_fini(&c);
    }
    weft__coherence_transfers_fini(&tr);
    weft__coherence_ranges_fini(&sr);
}

/* ---- specific cases ---------------------------------------------------- */

enum { HOST = 0, GPU1 = 1, GPU2 = 2 };

static void read_only_input_crosses_once(void **state)
{
    weft__coherence c;
    weft__coherence_transfers tr = WEFT__COH_LIST_INIT;
    (void)state;

    assert_int_equal(weft__coherence_init(&c, 1 << 20, 3, 1u << HOST), 0);
    assert_int_equal(
        weft__coherence_read(&c, GPU1, 0, 1 << 20, NULL, NULL, &tr), 0);
    assert_int_equal(tr.count, 1);
    assert_int_equal(tr.items[0].src, HOST);
    assert_int_equal(tr.items[0].dst, GPU1);
    assert_int_equal(tr.items[0].off, 0);
    assert_int_equal(tr.items[0].len, 1 << 20);
    assert_int_equal(weft__coherence_mark_valid(&c, GPU1, 0, 1 << 20), 0);
    /* the second read of the input, and any part of it, moves nothing */
    assert_int_equal(
        weft__coherence_read(&c, GPU1, 0, 1 << 20, NULL, NULL, &tr), 0);
    assert_int_equal(tr.count, 0);
    assert_int_equal(weft__coherence_read(&c, GPU1, 4096, 100, NULL, NULL, &tr),
                     0);
    assert_int_equal(tr.count, 0);
    /* shared: both hold it, the host is clean */
    assert_int_equal(weft__coherence_holders(&c, 0, 1 << 20),
                     (1u << HOST) | (1u << GPU1));
    assert_int_equal(nsegs(&c), 1);
    assert_int_equal(seg(&c, 0).flags, 0);
    weft__coherence_transfers_fini(&tr);
    weft__coherence_fini(&c);
}

/* held_alone: every byte of the range on m and no byte anywhere else. */
static void held_alone_means_no_other_copy(void **state)
{
    weft__coherence c;
    (void)state;

    assert_int_equal(weft__coherence_init(&c, 1 << 16, 3, 1u << HOST), 0);
    assert_true(weft__coherence_held_alone(&c, HOST, 0, 1 << 16));
    assert_false(weft__coherence_held_alone(&c, GPU1, 0, 1 << 16));
    /* a GPU copy of [4096, 8192): the host no longer holds it alone */
    assert_int_equal(weft__coherence_mark_valid(&c, GPU1, 4096, 4096), 0);
    assert_false(weft__coherence_held_alone(&c, HOST, 0, 1 << 16));
    assert_false(weft__coherence_held_alone(&c, HOST, 8000, 100));
    assert_true(weft__coherence_held_alone(&c, HOST, 0, 4096));
    assert_true(weft__coherence_held_alone(&c, HOST, 8192, 1000));
    /* the GPU writes [4096, 4200): the host lacks those bytes */
    assert_int_equal(weft__coherence_write(&c, GPU1, 4096, 104), 0);
    assert_false(weft__coherence_held_alone(&c, HOST, 4000, 200));
    assert_true(weft__coherence_held_alone(&c, GPU1, 4096, 104));
    assert_false(weft__coherence_held_alone(&c, GPU1, 4096, 105));
    /* the host writes it all back: alone again */
    assert_int_equal(weft__coherence_write(&c, HOST, 0, 1 << 16), 0);
    assert_true(weft__coherence_held_alone(&c, HOST, 0, 1 << 16));
    /* bad ranges and memories */
    assert_false(weft__coherence_held_alone(&c, HOST, 0, 0));
    assert_false(weft__coherence_held_alone(&c, HOST, 1 << 16, 1));
    assert_false(weft__coherence_held_alone(&c, 3, 0, 1));
    weft__coherence_fini(&c);
}

static void peer_preferred_when_cheaper(void **state)
{
    weft__coherence c;
    weft__coherence_transfers tr = WEFT__COH_LIST_INIT;
    cost_table t;
    (void)state;

    for (unsigned a = 0; a < 3; a++)
        for (unsigned d = 0; d < 3; d++)
            t.cost[a][d] = 1.0 / 25e9;                     /* PCIe */
    t.cost[GPU1][GPU2] = t.cost[GPU2][GPU1] = 1.0 / 300e9; /* NVLink */
    assert_int_equal(weft__coherence_init(&c, 4096, 3, 1u << HOST), 0);
    assert_int_equal(weft__coherence_mark_valid(&c, GPU1, 0, 4096), 0);

    assert_int_equal(
        weft__coherence_read(&c, GPU2, 0, 4096, table_cost, &t, &tr), 0);
    assert_int_equal(tr.count, 1);
    assert_int_equal(tr.items[0].src, GPU1);
    /* equal costs: the lowest index, the host */
    t.cost[GPU1][GPU2] = t.cost[HOST][GPU2];
    assert_int_equal(
        weft__coherence_read(&c, GPU2, 0, 4096, table_cost, &t, &tr), 0);
    assert_int_equal(tr.items[0].src, HOST);
    /* no cost function: all equal */
    assert_int_equal(weft__coherence_read(&c, GPU2, 0, 4096, NULL, NULL, &tr),
                     0);
    assert_int_equal(tr.items[0].src, HOST);
    /* no path (NaN) loses to any path */
    t.cost[HOST][GPU2] = NAN;
    assert_int_equal(
        weft__coherence_read(&c, GPU2, 0, 4096, table_cost, &t, &tr), 0);
    assert_int_equal(tr.items[0].src, GPU1);
    weft__coherence_transfers_fini(&tr);
    weft__coherence_fini(&c);
}

static void partial_write_moves_only_written_part(void **state)
{
    weft__coherence c;
    weft__coherence_transfers tr = WEFT__COH_LIST_INIT;
    (void)state;

    assert_int_equal(weft__coherence_init(&c, 4096, 3, 1u << HOST), 0);
    assert_int_equal(weft__coherence_mark_valid(&c, GPU1, 0, 4096), 0);
    assert_int_equal(weft__coherence_mark_valid(&c, GPU2, 0, 4096), 0);
    assert_int_equal(weft__coherence_write(&c, GPU1, 1024, 1024), 0);
    assert_int_equal(nsegs(&c), 3);
    assert_int_equal(seg(&c, 1).flags, DIRTY);
    assert_false(weft__coherence_is_valid(&c, HOST, 0, 4096));
    assert_true(weft__coherence_is_valid(&c, HOST, 0, 1024));
    assert_true(weft__coherence_is_valid(&c, HOST, 2048, 2048));

    /* the host reading all of it fetches the kilobyte GPU1 wrote, no more */
    assert_int_equal(weft__coherence_read(&c, HOST, 0, 4096, NULL, NULL, &tr),
                     0);
    assert_int_equal(tr.count, 1);
    assert_int_equal(tr.items[0].src, GPU1);
    assert_int_equal(tr.items[0].off, 1024);
    assert_int_equal(tr.items[0].len, 1024);
    /* so does GPU2 */
    assert_int_equal(weft__coherence_read(&c, GPU2, 0, 4096, NULL, NULL, &tr),
                     0);
    assert_int_equal(tr.count, 1);
    assert_int_equal(tr.items[0].src, GPU1);
    assert_int_equal(tr.items[0].off, 1024);
    assert_int_equal(tr.items[0].len, 1024);
    /* a read of the part outside the write needs nothing */
    assert_int_equal(
        weft__coherence_read(&c, GPU2, 2048, 2048, NULL, NULL, &tr), 0);
    assert_int_equal(tr.count, 0);
    weft__coherence_transfers_fini(&tr);
    weft__coherence_fini(&c);
}

static void adjacent_reads_of_one_source_merge(void **state)
{
    weft__coherence c;
    weft__coherence_transfers tr = WEFT__COH_LIST_INIT;
    (void)state;

    /*
     * [0,100) on GPU1 alone, [100,200) on GPU1 and GPU2: two segments, but
     * GPU1 is the cheapest (lowest) source of both for the host: one copy.
     */
    assert_int_equal(weft__coherence_init(&c, 300, 3, 1u << HOST), 0);
    assert_int_equal(weft__coherence_write(&c, GPU1, 0, 200), 0);
    assert_int_equal(weft__coherence_mark_valid(&c, GPU2, 100, 100), 0);
    assert_int_equal(nsegs(&c), 3);
    assert_int_equal(weft__coherence_read(&c, HOST, 0, 300, NULL, NULL, &tr),
                     0);
    assert_int_equal(tr.count, 1);
    assert_int_equal(tr.items[0].src, GPU1);
    assert_int_equal(tr.items[0].off, 0);
    assert_int_equal(tr.items[0].len, 200);
    weft__coherence_transfers_fini(&tr);
    weft__coherence_fini(&c);
}

static void eviction_write_back_ranges(void **state)
{
    weft__coherence c;
    weft__coherence_ranges r = WEFT__COH_LIST_INIT;
    weft__coherence_transfers tr = WEFT__COH_LIST_INIT;
    snapshot before;
    size_t i;
    (void)state;

    assert_int_equal(weft__coherence_init(&c, 1000, 3, 1u << HOST), 0);
    assert_int_equal(weft__coherence_mark_valid(&c, GPU1, 0, 1000), 0);
    assert_int_equal(weft__coherence_write(&c, GPU1, 0, 100), 0);
    assert_int_equal(weft__coherence_write(&c, GPU1, 200, 100), 0);
    /* GPU2 shares [250, 300): not GPU1's alone any more */
    assert_int_equal(weft__coherence_mark_valid(&c, GPU2, 250, 50), 0);

    assert_int_equal(weft__coherence_sole_ranges(&c, GPU1, 0, 1000, &r), 0);
    assert_int_equal(r.count, 2);
    assert_int_equal(r.items[0].off, 0);
    assert_int_equal(r.items[0].len, 100);
    assert_int_equal(r.items[1].off, 200);
    assert_int_equal(r.items[1].len, 50);
    /* clipped to the range asked */
    assert_int_equal(weft__coherence_sole_ranges(&c, GPU1, 50, 175, &r), 0);
    assert_int_equal(r.count, 2);
    assert_int_equal(r.items[0].off, 50);
    assert_int_equal(r.items[0].len, 50);
    assert_int_equal(r.items[1].off, 200);
    assert_int_equal(r.items[1].len, 25);

    /* dropping GPU1 now would lose bytes: refused, nothing changes */
    snap(&c, &before);
    assert_int_equal(weft__coherence_drop(&c, GPU1, 0, 1000), WEFT_EBUSY);
    assert_non_null(strstr(weft_last_error(), "[0, 100)"));
    assert_unchanged(&c, &before);
    /* a part with no sole bytes can go */
    assert_int_equal(weft__coherence_drop(&c, GPU1, 100, 100), 0);
    assert_false(weft__coherence_is_valid(&c, GPU1, 100, 1));

    /* write back, then evict */
    assert_int_equal(weft__coherence_sole_ranges(&c, GPU1, 0, 1000, &r), 0);
    for (i = 0; i < r.count; i++) {
        assert_int_equal(weft__coherence_read(&c, HOST, r.items[i].off,
                                              r.items[i].len, NULL, NULL, &tr),
                         0);
        assert_int_equal(tr.count, 1);
        assert_int_equal(tr.items[0].src, GPU1);
        assert_int_equal(weft__coherence_mark_valid(&c, HOST, r.items[i].off,
                                                    r.items[i].len),
                         0);
    }
    assert_int_equal(weft__coherence_sole_ranges(&c, GPU1, 0, 1000, &r), 0);
    assert_int_equal(r.count, 0);
    assert_int_equal(weft__coherence_drop(&c, GPU1, 0, 1000), 0);
    assert_int_equal(weft__coherence_holders(&c, 0, 250), 1u << HOST);
    assert_int_equal(weft__coherence_holders(&c, 300, 700), 1u << HOST);
    /* GPU2's shared copy survives GPU1; the host is still stale there */
    assert_int_equal(weft__coherence_holders(&c, 250, 50), 1u << GPU2);
    assert_int_equal(nsegs(&c), 3);
    assert_int_equal(seg(&c, 1).off, 250);
    assert_int_equal(seg(&c, 1).flags, DIRTY);
    assert_int_equal(seg(&c, 0).flags | seg(&c, 2).flags, 0);
    /* which makes GPU2's copy the one to write back now */
    assert_int_equal(weft__coherence_sole_ranges(&c, GPU2, 0, 1000, &r), 0);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.items[0].off, 250);
    assert_int_equal(r.items[0].len, 50);
    weft__coherence_ranges_fini(&r);
    weft__coherence_transfers_fini(&tr);
    weft__coherence_fini(&c);
}

static void adjacent_segments_merge(void **state)
{
    weft__coherence c;
    (void)state;

    assert_int_equal(weft__coherence_init(&c, 100, 2, 1u << HOST), 0);
    assert_int_equal(weft__coherence_write(&c, GPU1, 10, 10), 0);
    assert_int_equal(nsegs(&c), 3);
    /* a touching write of the same memory extends the segment */
    assert_int_equal(weft__coherence_write(&c, GPU1, 20, 10), 0);
    assert_int_equal(nsegs(&c), 3);
    assert_int_equal(seg(&c, 1).off, 10);
    assert_int_equal(seg(&c, 2).off, 30);
    /* the host catching up on part of it splits, all of it merges back */
    assert_int_equal(weft__coherence_mark_valid(&c, HOST, 15, 5), 0);
    assert_int_equal(nsegs(&c), 5);
    assert_int_equal(weft__coherence_mark_valid(&c, HOST, 10, 20), 0);
    assert_int_equal(nsegs(&c), 3);
    assert_int_equal(weft__coherence_drop(&c, GPU1, 0, 100), 0);
    assert_int_equal(nsegs(&c), 1);
    assert_int_equal(seg(&c, 0).valid, 1u << HOST);
    /* writes at both ends */
    assert_int_equal(weft__coherence_write(&c, GPU1, 0, 1), 0);
    assert_int_equal(weft__coherence_write(&c, GPU1, 99, 1), 0);
    assert_int_equal(nsegs(&c), 3);
    assert_int_equal(weft__coherence_write(&c, GPU1, 0, 100), 0);
    assert_int_equal(nsegs(&c), 1);
    assert_int_equal(seg(&c, 0).flags, DIRTY);
    assert_sound(&c);
    weft__coherence_fini(&c);
}

static void sixty_four_memories(void **state)
{
    weft__coherence c;
    weft__coherence_transfers tr = WEFT__COH_LIST_INIT;
    (void)state;

    assert_int_equal(weft__coherence_init(&c, 64, 64, ~(uint64_t)0), 0);
    assert_int_equal(weft__coherence_holders(&c, 0, 64), ~(uint64_t)0);
    assert_int_equal(weft__coherence_write(&c, 63, 0, 32), 0);
    assert_int_equal(weft__coherence_holders(&c, 0, 32), (uint64_t)1 << 63);
    assert_int_equal(weft__coherence_read(&c, 0, 0, 64, NULL, NULL, &tr), 0);
    assert_int_equal(tr.count, 1);
    assert_int_equal(tr.items[0].src, 63);
    assert_int_equal(tr.items[0].len, 32);
    assert_int_equal(weft__coherence_drop(&c, 63, 0, 64), WEFT_EBUSY);
    weft__coherence_transfers_fini(&tr);
    weft__coherence_fini(&c);
    assert_int_equal(weft__coherence_init(&c, 64, 65, 1), WEFT_EINVAL);
}

static void bad_arguments(void **state)
{
    weft__coherence c;
    weft__coherence_transfers tr = WEFT__COH_LIST_INIT;
    weft__coherence_ranges r = WEFT__COH_LIST_INIT;
    (void)state;

    assert_int_equal(weft__coherence_init(&c, 0, 2, 1), WEFT_EINVAL);
    assert_int_equal(weft__coherence_init(&c, 10, 0, 1), WEFT_EINVAL);
    assert_int_equal(weft__coherence_init(&c, 10, 2, 0), WEFT_EINVAL);
    assert_int_equal(weft__coherence_init(&c, 10, 2, 4), WEFT_EINVAL);
    weft__coherence_fini(&c);

    assert_int_equal(weft__coherence_init(&c, 10, 2, 1), 0);
    assert_int_equal(weft__coherence_write(&c, 2, 0, 1), WEFT_EINVAL);
    assert_int_equal(weft__coherence_write(&c, 1, 5, 6), WEFT_ERANGE);
    assert_int_equal(weft__coherence_write(&c, 1, 11, 0), WEFT_ERANGE);
    assert_int_equal(weft__coherence_write(&c, 1, 1, SIZE_MAX), WEFT_ERANGE);
    assert_int_equal(weft__coherence_mark_valid(&c, 1, 0, 11), WEFT_ERANGE);
    assert_int_equal(weft__coherence_drop(&c, 5, 0, 1), WEFT_EINVAL);
    assert_int_equal(weft__coherence_read(&c, 1, 0, 11, NULL, NULL, &tr),
                     WEFT_ERANGE);
    assert_int_equal(weft__coherence_read(&c, 1, 0, 1, NULL, NULL, NULL),
                     WEFT_EINVAL);
    assert_int_equal(weft__coherence_sole_ranges(&c, 1, 0, 11, &r),
                     WEFT_ERANGE);
    assert_int_equal(weft__coherence_holders(&c, 0, 11), 0);
    assert_false(weft__coherence_is_valid(&c, 3, 0, 1));
    /* empty ranges are fine and change nothing */
    assert_int_equal(weft__coherence_write(&c, 1, 10, 0), 0);
    assert_int_equal(weft__coherence_read(&c, 1, 3, 0, NULL, NULL, &tr), 0);
    assert_int_equal(tr.count, 0);
    assert_true(weft__coherence_is_valid(&c, 1, 3, 0));
    assert_int_equal(nsegs(&c), 1);
    assert_int_equal(seg(&c, 0).valid, 1);
    weft__coherence_fini(&c);
    weft__coherence_transfers_fini(&tr);
    weft__coherence_ranges_fini(&r);
}

static void validator_catches_corruption(void **state)
{
    weft__coherence c;
    weft__band_entry saved[5];
    (void)state;

    assert_int_equal(weft__coherence_init(&c, 100, 3, 1u << HOST), 0);
    assert_int_equal(weft__coherence_write(&c, GPU1, 10, 10), 0);
    assert_int_equal(weft__coherence_write(&c, GPU2, 50, 10), 0);
    assert_int_equal(nsegs(&c), 5);
    assert_null(weft__coherence_check(&c));
    assert_true(weft__coherence_validate(&c));
    memcpy(saved, c.map.e, sizeof saved);

#define CORRUPT(stmt, needle)                                                  \
    do {                                                                       \
        const char *why_;                                                      \
        stmt;                                                                  \
        why_ = weft__coherence_check(&c);                                      \
        assert_non_null(why_);                                                 \
        if (!strstr(why_, needle))                                             \
            fail_msg("%s: no '%s' in '%s'", #stmt, needle, why_);              \
        assert_false(weft__coherence_validate(&c));                            \
        memcpy(c.map.e, saved, sizeof saved);                                  \
        assert_null(weft__coherence_check(&c));                                \
    } while (0)

    CORRUPT(c.map.e[0].lo = 1, "starts at");
    CORRUPT(c.map.e[2].lo = 5, "starts at");
    CORRUPT(c.map.e[1].hi = 15, "starts at");
    CORRUPT(c.map.e[1].v = 0, "valid nowhere");
    CORRUPT(c.map.e[1].v |= 1u << 5, "beyond");
    CORRUPT(c.map.e[4].hi = 101, "of 100 bytes");
    CORRUPT(c.map.e[0].c1 = 3, "columns");
    CORRUPT((c.map.e[1].p = 3, c.map.e[1].c1 = 3), "whole rows");
#undef CORRUPT
    {
        size_t n = c.map.n;

        c.map.n = 4;
        assert_non_null(strstr(weft__coherence_check(&c), "end at"));
        c.map.n = n;
    }
    assert_null(weft__coherence_check(&c));
    weft__coherence_fini(&c);
    assert_non_null(weft__coherence_check(&c));
    assert_non_null(weft__coherence_check(NULL));
}

/* Every allocation of every operation fails in turn; nothing changes. */
static void allocation_failures_change_nothing(void **state)
{
    weft__coherence c;
    weft__coherence_transfers tr = WEFT__COH_LIST_INIT;
    weft__coherence_ranges r = WEFT__COH_LIST_INIT;
    snapshot before;
    long n;
    int rc, failures = 0;
    (void)state;

    for (n = 1;; n++) {
        int fired;

        weft__fault_arm(n, NULL);
        rc = weft__coherence_init(&c, 1000, 3, 1u << HOST);
        if (rc == 0) {
            /* many small segments, so that the array must grow */
            for (size_t off = 0; rc == 0 && off < 1000; off += 20)
                rc = weft__coherence_write(&c, GPU1 + (off / 20) % 2, off, 10);
            assert_true(rc == 0 || rc == WEFT_ENOMEM);
            if (rc == 0) {
                snap(&c, &before);
                rc = weft__coherence_read(&c, HOST, 0, 1000, NULL, NULL, &tr);
                if (rc < 0) {
                    assert_int_equal(rc, WEFT_ENOMEM);
                    assert_int_equal(tr.count, 0);
                } else {
                    assert_int_equal(tr.count, 50);
                }
                assert_unchanged(&c, &before);
                rc = weft__coherence_sole_ranges(&c, GPU1, 0, 1000, &r);
                assert_true(rc == 0 || rc == WEFT_ENOMEM);
                assert_int_equal(r.count, rc == 0 ? 25 : 0);
                /* a split in the middle of a full array */
                rc = weft__coherence_mark_valid(&c, HOST, 5, 500);
                assert_true(rc == 0 || rc == WEFT_ENOMEM);
                if (rc < 0)
                    assert_unchanged(&c, &before);
            }
            assert_sound(&c);
            weft__coherence_fini(&c);
        } else {
            assert_int_equal(rc, WEFT_ENOMEM);
            assert_null(c.map.e);
        }
        fired = weft__fault_fired();
        weft__fault_disarm();
        weft__coherence_transfers_fini(&tr);
        weft__coherence_ranges_fini(&r);
        if (!fired)
            break;
        failures++;
    }
    /* the loop reached a run with no failure, after several with one */
    assert_true(failures >= 3);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(read_only_input_crosses_once),
        cmocka_unit_test(held_alone_means_no_other_copy),
        cmocka_unit_test(peer_preferred_when_cheaper),
        cmocka_unit_test(partial_write_moves_only_written_part),
        cmocka_unit_test(adjacent_reads_of_one_source_merge),
        cmocka_unit_test(eviction_write_back_ranges),
        cmocka_unit_test(adjacent_segments_merge),
        cmocka_unit_test(sixty_four_memories),
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(validator_catches_corruption),
        cmocka_unit_test(allocation_failures_change_nothing),
        cmocka_unit_test(randomized_against_model),
        cmocka_unit_test(blocks_against_model),
    };

    return wt_run_group(argc, argv, tests, NULL, NULL);
}
