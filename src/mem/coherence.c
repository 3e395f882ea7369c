/* The coherence tracker: valid masks per byte, in a band map (coherence.h). */
#include "coherence.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static uint64_t weft__coh_all(unsigned nmem)
{
    return nmem >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << nmem) - 1;
}

static int weft__coh_check_region(const weft__coherence *c, unsigned m,
                                  const weft__region *r, const char *op)
{
    if (!c || !c->map.e)
        return weft__error(WEFT_EINVAL, "coherence %s: no tracker", op);
    if (m >= c->nmem)
        return weft__error(WEFT_EINVAL,
                           "coherence %s: memory %u of a buffer tracked on %u",
                           op, m, c->nmem);
    if (r->off > c->size || r->w > c->size - r->off)
        return weft__error(WEFT_ERANGE,
                           "coherence %s: range [%zu, +%zu) outside the "
                           "buffer's %zu bytes",
                           op, r->off, r->w, c->size);
    if (r->h > 1 && weft__bandmap_check_region(&c->map, r, "coherence") < 0)
        return weft__error_prefix(WEFT_ERANGE, "coherence %s: ", op);
    return 0;
}

/* An empty range (w 0) is checked, then asks for nothing. */
static int weft__coh_empty(const weft__region *r)
{
    return r->w == 0 || r->h == 0;
}

int weft__coherence_init(weft__coherence *c, size_t size, unsigned nmem,
                         uint64_t initial_valid)
{
    if (!c)
        return weft__error(WEFT_EINVAL, "coherence init: no tracker");
    memset(c, 0, sizeof *c);
    if (size == 0)
        return weft__error(WEFT_EINVAL, "coherence init: size 0");
    if (nmem == 0 || nmem > WEFT__COH_MAX_MEMS)
        return weft__error(WEFT_EINVAL, "coherence init: %u memories (1 to %u)",
                           nmem, WEFT__COH_MAX_MEMS);
    if (!initial_valid || (initial_valid & ~weft__coh_all(nmem)))
        return weft__error(WEFT_EINVAL,
                           "coherence init: initial valid mask %#llx is not "
                           "a non-empty set of the %u memories",
                           (unsigned long long)initial_valid, nmem);
    if (weft__bandmap_init(&c->map, size, initial_valid) < 0)
        return weft__error(WEFT_ENOMEM, "coherence init: out of memory");
    c->size = size;
    c->nmem = nmem;
    weft__assert_expensive(weft__coherence_validate(c));
    return 0;
}

void weft__coherence_fini(weft__coherence *c)
{
    if (!c)
        return;
    weft__bandmap_fini(&c->map);
    memset(c, 0, sizeof *c);
}

void weft__coherence_transfers_fini(weft__coherence_transfers *t)
{
    weft__free(t->items);
    t->items = NULL;
    t->count = t->cap = 0;
}

void weft__coherence_ranges_fini(weft__coherence_ranges *r)
{
    weft__free(r->items);
    r->items = NULL;
    r->count = r->cap = 0;
}

/* ---- updates ----------------------------------------------------------- */

int weft__coherence_reserve(weft__coherence *c, size_t extra)
{
    weft__band_entry *e;
    size_t cap;

    /* a cut's scratch (bandmap.c) holds at most the entries it makes */
    if (c->map.tmp_cap < c->map.n + extra) {
        cap = WEFT__MAX(c->map.tmp_cap * 2, c->map.n + extra);
        e = weft__realloc(c->map.tmp, cap * sizeof *e);
        if (!e)
            return weft__error(WEFT_ENOMEM,
                               "coherence: out of memory for %zu entries", cap);
        c->map.tmp = e;
        c->map.tmp_cap = cap;
    }
    if (c->map.cap - c->map.n >= extra)
        return 0;
    cap = WEFT__MAX(c->map.cap * 2, c->map.n + extra);
    e = weft__realloc(c->map.e, cap * sizeof *e);
    if (!e)
        return weft__error(WEFT_ENOMEM,
                           "coherence: out of memory for %zu entries", cap);
    c->map.e = e;
    c->map.cap = cap;
    return 0;
}

typedef struct weft__coh_mask {
    uint64_t clear, set;
} weft__coh_mask;

static uint64_t weft__coh_masked(uint64_t v, void *user)
{
    const weft__coh_mask *k = user;

    return (v & ~k->clear) | k->set;
}

/* Stops at the first piece the update would change. */
static int weft__coh_changes(const weft__region *piece, uint64_t v, void *user)
{
    (void)piece;
    return weft__coh_masked(v, user) != v;
}

/* valid = (valid & ~clear) | set over r; args checked. */
static int weft__coh_update(weft__coherence *c, const weft__region *r,
                            uint64_t clear, uint64_t set)
{
    weft__coh_mask k = {clear, set};
    int rc;

    if (weft__coh_empty(r))
        return 0;
    /* Nothing changes (a node writing again what it wrote at the last
     * launch): nothing to cut. */
    if (!weft__bandmap_visit(&c->map, r, weft__coh_changes, &k))
        return 0;
    if ((rc = weft__bandmap_split(&c->map, r)) < 0)
        return rc;
    weft__bandmap_apply(&c->map, r, weft__coh_masked, &k);
    weft__assert_expensive(weft__coherence_validate(c));
    return 0;
}

int weft__coherence_mark_valid_region(weft__coherence *c, unsigned m,
                                      const weft__region *r)
{
    int rc;

    if ((rc = weft__coh_check_region(c, m, r, "mark_valid")) < 0)
        return rc;
    return weft__coh_update(c, r, 0, (uint64_t)1 << m);
}

int weft__coherence_write_region(weft__coherence *c, unsigned m,
                                 const weft__region *r)
{
    int rc;

    if ((rc = weft__coh_check_region(c, m, r, "write")) < 0)
        return rc;
    return weft__coh_update(c, r, ~(uint64_t)0, (uint64_t)1 << m);
}

typedef struct weft__coh_sole {
    uint64_t bit;
    weft__region at;
} weft__coh_sole;

static int weft__coh_find_sole(const weft__region *piece, uint64_t v,
                               void *user)
{
    weft__coh_sole *s = user;

    if (v != s->bit)
        return 0;
    s->at = *piece;
    return 1;
}

int weft__coherence_drop_region(weft__coherence *c, unsigned m,
                                const weft__region *r)
{
    weft__coh_sole s = {(uint64_t)1 << m, {0, 0, 1, 0}};
    int rc;

    if ((rc = weft__coh_check_region(c, m, r, "drop")) < 0)
        return rc;
    if (weft__coh_empty(r))
        return 0;
    if (weft__bandmap_visit(&c->map, r, weft__coh_find_sole, &s))
        return weft__error(
            WEFT_EBUSY,
            "coherence drop: memory %u holds the only valid copy of "
            "[%zu, %zu)%s; write it back before dropping it",
            m, s.at.off, s.at.off + s.at.w,
            s.at.h > 1 ? " and rows after it" : "");
    return weft__coh_update(c, r, s.bit, 0);
}

static uint64_t weft__coh_unshare(uint64_t v, void *user)
{
    uint64_t bit = *(const uint64_t *)user;

    return v == bit ? v : v & ~bit;
}

static int weft__coh_shared_on(const weft__region *piece, uint64_t v,
                               void *user)
{
    (void)piece;
    return weft__coh_unshare(v, user) != v;
}

int weft__coherence_drop_shared(weft__coherence *c, unsigned m,
                                const weft__region *r)
{
    uint64_t bit = (uint64_t)1 << m;
    int rc;

    if ((rc = weft__coh_check_region(c, m, r, "drop_shared")) < 0)
        return rc;
    if (weft__coh_empty(r) ||
        !weft__bandmap_visit(&c->map, r, weft__coh_shared_on, &bit))
        return 0;
    if ((rc = weft__bandmap_split(&c->map, r)) < 0)
        return rc;
    weft__bandmap_apply(&c->map, r, weft__coh_unshare, &bit);
    return 0;
}

int weft__coherence_cut(weft__coherence *c, const weft__region *r)
{
    int rc;

    if ((rc = weft__coh_check_region(c, 0, r, "cut")) < 0)
        return rc;
    return weft__coh_empty(r) ? 0 : weft__bandmap_split(&c->map, r);
}

void weft__coherence_settle(weft__coherence *c, size_t off, size_t len)
{
    if (off < c->size)
        weft__bandmap_merge(
            &c->map, off,
            off + WEFT__MIN(WEFT__MAX(len, (size_t)1), c->size - off));
}

size_t weft__coherence_entries(const weft__coherence *c)
{
    return c->map.n;
}

int weft__coherence_mark_valid(weft__coherence *c, unsigned m, size_t off,
                               size_t len)
{
    weft__region r = weft__region_range(off, len);

    return weft__coherence_mark_valid_region(c, m, &r);
}

int weft__coherence_write(weft__coherence *c, unsigned m, size_t off,
                          size_t len)
{
    weft__region r = weft__region_range(off, len);

    return weft__coherence_write_region(c, m, &r);
}

int weft__coherence_drop(weft__coherence *c, unsigned m, size_t off, size_t len)
{
    weft__region r = weft__region_range(off, len);

    return weft__coherence_drop_region(c, m, &r);
}

/* ---- queries ----------------------------------------------------------- */

/* Costs of copying from each memory to one destination, asked once each. */
typedef struct weft__coh_costs {
    weft__coherence_cost_fn *fn;
    void *user;
    unsigned dst;
    uint64_t known;
    double cost[WEFT__COH_MAX_MEMS];
} weft__coh_costs;

static double weft__coh_cost(weft__coh_costs *k, unsigned src)
{
    if (!(k->known & ((uint64_t)1 << src))) {
        double x = k->fn ? k->fn(src, k->dst, k->user) : 0.0;

        k->cost[src] = isnan(x) ? INFINITY : x;
        k->known |= (uint64_t)1 << src;
    }
    return k->cost[src];
}

/* The cheapest memory of valid (non-empty); ties to the lowest index. */
static unsigned weft__coh_source(weft__coh_costs *k, uint64_t valid)
{
    unsigned best = (unsigned)__builtin_ctzll(valid), src;
    double best_cost = weft__coh_cost(k, best);

    for (valid &= valid - 1; valid; valid &= valid - 1) {
        double x;

        src = (unsigned)__builtin_ctzll(valid);
        x = weft__coh_cost(k, src);
        if (x < best_cost) {
            best = src;
            best_cost = x;
        }
    }
    return best;
}

/*
 * A list of regions being built: pieces that touch the last one with the
 * same source (a range continuing it, rows continuing a block, or the
 * next columns of the same rows) extend it.
 */
typedef struct weft__coh_build {
    weft__coherence_transfer *items;
    size_t count, cap;
    int failed;
} weft__coh_build;

static int weft__coh_extend(weft__coherence_transfer *t, unsigned src,
                            const weft__region *g)
{
    if (t->src != src)
        return 0;
    if (t->rows == 1 && g->h == 1 && t->off + t->len == g->off) {
        t->len += g->w;
        return 1;
    }
    /* a run, then the same columns of the rows after it */
    if (t->rows == 1 && g->h > 1 && g->w == t->len && g->off == t->off + g->p) {
        t->rows = 1 + g->h;
        t->pitch = g->p;
        return 1;
    }
    /* a block, then the same columns of the row after it */
    if (t->rows > 1 && g->h == 1 && g->w == t->len &&
        g->off == t->off + t->rows * t->pitch) {
        t->rows++;
        return 1;
    }
    if (t->rows > 1 && g->h > 1 && g->p == t->pitch) {
        /* the same columns, the rows after */
        if (g->w == t->len && g->off == t->off + t->rows * t->pitch) {
            t->rows += g->h;
            return 1;
        }
        /* the same rows, the columns after */
        if (g->h == t->rows && g->off == t->off + t->len &&
            t->len + g->w <= t->pitch) {
            t->len += g->w;
            return 1;
        }
    }
    return 0;
}

static int weft__coh_add(weft__coh_build *b, unsigned src, unsigned dst,
                         const weft__region *g)
{
    if (b->count && weft__coh_extend(&b->items[b->count - 1], src, g))
        return 0;
    if (b->count == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 8;
        weft__coherence_transfer *t = weft__realloc(b->items, cap * sizeof *t);

        if (!t) {
            b->failed = 1;
            return weft__error(
                WEFT_ENOMEM, "coherence: out of memory for %zu transfers", cap);
        }
        b->items = t;
        b->cap = cap;
    }
    b->items[b->count++] = (weft__coherence_transfer){
        src, dst, g->off, g->w, g->h, g->h > 1 ? g->p : 0};
    return 0;
}

typedef struct weft__coh_reading {
    weft__coh_build b;
    weft__coh_costs k;
    uint64_t bit;
} weft__coh_reading;

static int weft__coh_read_piece(const weft__region *g, uint64_t v, void *user)
{
    weft__coh_reading *r = user;

    if (v & r->bit)
        return 0;
    return weft__coh_add(&r->b, weft__coh_source(&r->k, v), r->k.dst, g);
}

int weft__coherence_read_region(const weft__coherence *c, unsigned m,
                                const weft__region *g,
                                weft__coherence_cost_fn *cost, void *user,
                                weft__coherence_transfers *out)
{
    weft__coh_reading r;
    int rc;

    if ((rc = weft__coh_check_region(c, m, g, "read")) < 0)
        return rc;
    if (!out)
        return weft__error(WEFT_EINVAL, "coherence read: no transfer list");
    r.b = (weft__coh_build){out->items, 0, out->cap, 0};
    r.k.fn = cost;
    r.k.user = user;
    r.k.dst = m;
    r.k.known = 0;
    r.bit = (uint64_t)1 << m;
    rc = weft__coh_empty(g)
             ? 0
             : weft__bandmap_visit(&c->map, g, weft__coh_read_piece, &r);
    out->items = r.b.items;
    out->cap = r.b.cap;
    out->count = rc < 0 ? 0 : r.b.count;
    return rc < 0 ? rc : 0;
}

int weft__coherence_read(const weft__coherence *c, unsigned m, size_t off,
                         size_t len, weft__coherence_cost_fn *cost, void *user,
                         weft__coherence_transfers *out)
{
    weft__region g = weft__region_range(off, len);

    return weft__coherence_read_region(c, m, &g, cost, user, out);
}

typedef struct weft__coh_soles {
    weft__coh_build b;
    uint64_t bit;
} weft__coh_soles;

static int weft__coh_sole_piece(const weft__region *g, uint64_t v, void *user)
{
    weft__coh_soles *s = user;

    return v == s->bit ? weft__coh_add(&s->b, 0, 0, g) : 0;
}

int weft__coherence_sole_regions(const weft__coherence *c, unsigned m,
                                 const weft__region *g,
                                 weft__coherence_ranges *out)
{
    weft__coh_soles s = {{NULL, 0, 0, 0}, (uint64_t)1 << m};
    int rc;

    if ((rc = weft__coh_check_region(c, m, g, "sole_ranges")) < 0)
        return rc;
    if (!out)
        return weft__error(WEFT_EINVAL, "coherence sole_ranges: no list");
    rc = weft__coh_empty(g)
             ? 0
             : weft__bandmap_visit(&c->map, g, weft__coh_sole_piece, &s);
    if (rc == 0 && s.b.count > out->cap) {
        weft__coherence_range *items =
            weft__realloc(out->items, s.b.count * sizeof *items);

        if (!items)
            rc = weft__error(WEFT_ENOMEM,
                             "coherence sole_ranges: out of memory for %zu "
                             "ranges",
                             s.b.count);
        else {
            out->items = items;
            out->cap = s.b.count;
        }
    }
    out->count = 0;
    for (size_t i = 0; rc == 0 && i < s.b.count; i++)
        out->items[out->count++] =
            (weft__coherence_range){s.b.items[i].off, s.b.items[i].len,
                                    s.b.items[i].rows, s.b.items[i].pitch};
    weft__free(s.b.items);
    return rc < 0 ? rc : 0;
}

int weft__coherence_sole_ranges(const weft__coherence *c, unsigned m,
                                size_t off, size_t len,
                                weft__coherence_ranges *out)
{
    weft__region g = weft__region_range(off, len);

    return weft__coherence_sole_regions(c, m, &g, out);
}

static int weft__coh_and(const weft__region *g, uint64_t v, void *user)
{
    (void)g;
    *(uint64_t *)user &= v;
    return 0;
}

uint64_t weft__coherence_holders(const weft__coherence *c, size_t off,
                                 size_t len)
{
    weft__region g = weft__region_range(off, len);
    uint64_t mask;

    if (!c || !c->map.e || off > c->size || len > c->size - off)
        return 0;
    mask = weft__coh_all(c->nmem);
    if (len)
        weft__bandmap_visit(&c->map, &g, weft__coh_and, &mask);
    return mask;
}

/* The memories that hold some band of a region, and those that hold all. */
typedef struct weft__coh_span {
    uint64_t any, all;
} weft__coh_span;

static int weft__coh_any_all(const weft__region *g, uint64_t v, void *user)
{
    weft__coh_span *sp = user;

    (void)g;
    sp->any |= v;
    sp->all &= v;
    return 0;
}

int weft__coherence_held_alone(const weft__coherence *c, unsigned m, size_t off,
                               size_t len)
{
    weft__region g = weft__region_range(off, len);
    weft__coh_span sp = {0, ~(uint64_t)0};

    if (!c || !c->map.e || m >= c->nmem || !len || off > c->size ||
        len > c->size - off)
        return 0;
    weft__bandmap_visit(&c->map, &g, weft__coh_any_all, &sp);
    return sp.any == (uint64_t)1 << m && sp.all == sp.any;
}

int weft__coherence_is_valid(const weft__coherence *c, unsigned m, size_t off,
                             size_t len)
{
    if (!c || m >= c->nmem || off > c->size || len > c->size - off)
        return 0;
    return (weft__coherence_holders(c, off, len) >> m) & 1;
}

int weft__coherence_is_valid_region(const weft__coherence *c, unsigned m,
                                    const weft__region *g)
{
    uint64_t mask;

    if (g->h == 1)
        return weft__coherence_is_valid(c, m, g->off, g->w);
    if (!c || m >= c->nmem ||
        weft__bandmap_check_region(&c->map, g, "coherence") < 0) {
        weft_clear_error();
        return 0;
    }
    mask = weft__coh_all(c->nmem);
    weft__bandmap_visit(&c->map, g, weft__coh_and, &mask);
    return (mask >> m) & 1;
}

/* ---- the validator ----------------------------------------------------- */

static _Thread_local char weft__coh_why[200];

#define WEFT__COH_BROKEN(...)                                                  \
    (snprintf(weft__coh_why, sizeof weft__coh_why, __VA_ARGS__), weft__coh_why)

const char *weft__coherence_check(const weft__coherence *c)
{
    const char *why;
    uint64_t all;

    if (!c)
        return "no tracker";
    if (!c->map.e || c->map.n == 0)
        return "no entries";
    if (c->size == 0 || c->map.size != c->size)
        return WEFT__COH_BROKEN("size %zu, map of %zu", c->size, c->map.size);
    if (c->nmem == 0 || c->nmem > WEFT__COH_MAX_MEMS)
        return WEFT__COH_BROKEN("%u memories", c->nmem);
    if ((why = weft__bandmap_check(&c->map)))
        return WEFT__COH_BROKEN("%s", why);
    all = weft__coh_all(c->nmem);
    for (size_t i = 0; i < c->map.n; i++) {
        const weft__band_entry *e = &c->map.e[i];

        if (e->v == 0)
            return WEFT__COH_BROKEN("entry %zu [%zu, %zu) is valid nowhere", i,
                                    e->lo, e->hi);
        if (e->v & ~all)
            return WEFT__COH_BROKEN("entry %zu is valid on memories %#llx, "
                                    "beyond the %u tracked",
                                    i, (unsigned long long)e->v, c->nmem);
    }
    return NULL;
}

bool weft__coherence_validate(const weft__coherence *c)
{
    const char *why = weft__coherence_check(c);

    if (why)
        weft__warn("coherence", "broken tracker: %s", why);
    return why == NULL;
}
