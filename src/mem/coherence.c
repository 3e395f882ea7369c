/* The coherence tracker: valid masks per byte range (see coherence.h). */
#include "coherence.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static uint64_t weft__coh_all(unsigned nmem)
{
    return nmem >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << nmem) - 1;
}

static unsigned weft__coh_flags_of(uint64_t valid)
{
    return (valid & ((uint64_t)1 << WEFT__COH_HOST)) ? 0u : WEFT__COH_DIRTY;
}

static size_t weft__coh_end(const weft__coherence *c, size_t i)
{
    return i + 1 < c->nsegs ? c->segs[i + 1].off : c->size;
}

/* The index of the segment that holds byte off (off < size). */
static size_t weft__coh_find(const weft__coherence *c, size_t off)
{
    size_t lo = 0, hi = c->nsegs;

    /* segs[lo].off <= off < segs[hi].off, with segs[nsegs].off = size */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;

        if (c->segs[mid].off <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int weft__coh_check_args(const weft__coherence *c, unsigned m,
                                size_t off, size_t len, const char *op)
{
    if (!c || !c->segs)
        return weft__error(WEFT_EINVAL, "coherence %s: no tracker", op);
    if (m >= c->nmem)
        return weft__error(WEFT_EINVAL,
                           "coherence %s: memory %u of a buffer tracked on %u",
                           op, m, c->nmem);
    if (off > c->size || len > c->size - off)
        return weft__error(WEFT_ERANGE,
                           "coherence %s: range [%zu, +%zu) outside the "
                           "buffer's %zu bytes",
                           op, off, len, c->size);
    return 0;
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
    c->segs = weft__malloc(4 * sizeof *c->segs);
    if (!c->segs)
        return weft__error(WEFT_ENOMEM, "coherence init: out of memory");
    c->cap = 4;
    c->nsegs = 1;
    c->size = size;
    c->nmem = nmem;
    c->segs[0].off = 0;
    c->segs[0].valid = initial_valid;
    c->segs[0].flags = weft__coh_flags_of(initial_valid);
    weft__assert_expensive(weft__coherence_validate(c));
    return 0;
}

void weft__coherence_fini(weft__coherence *c)
{
    if (!c)
        return;
    weft__free(c->segs);
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
    weft__coherence_seg *segs;
    size_t cap;

    if (c->cap - c->nsegs >= extra)
        return 0;
    cap = c->cap * 2 > c->nsegs + extra ? c->cap * 2 : c->nsegs + extra;
    segs = weft__realloc(c->segs, cap * sizeof *segs);
    if (!segs)
        return weft__error(WEFT_ENOMEM,
                           "coherence: out of memory for %zu segments", cap);
    c->segs = segs;
    c->cap = cap;
    return 0;
}

/*
 * Make a segment start at byte at and return its index (nsegs for at ==
 * size). Room for one more segment must have been reserved.
 */
static size_t weft__coh_split(weft__coherence *c, size_t at)
{
    size_t i;

    if (at >= c->size)
        return c->nsegs;
    i = weft__coh_find(c, at);
    if (c->segs[i].off == at)
        return i;
    weft__assert_internal(c->nsegs < c->cap);
    memmove(&c->segs[i + 2], &c->segs[i + 1],
            (c->nsegs - i - 1) * sizeof *c->segs);
    c->segs[i + 1] = c->segs[i];
    c->segs[i + 1].off = at;
    c->nsegs++;
    return i + 1;
}

static bool weft__coh_same(const weft__coherence_seg *a,
                           const weft__coherence_seg *b)
{
    return a->valid == b->valid && a->flags == b->flags;
}

/*
 * Merge equal neighbours across the boundaries lo..hi (boundary k lies
 * between segments k - 1 and k): the only ones an update can have made
 * equal.
 */
static void weft__coh_merge(weft__coherence *c, size_t lo, size_t hi)
{
    size_t first = lo ? lo : 1, last = WEFT__MIN(hi, c->nsegs - 1), w, k;

    if (first > last)
        return;
    w = first - 1;
    for (k = first; k <= last; k++) {
        if (weft__coh_same(&c->segs[w], &c->segs[k]))
            continue;
        c->segs[++w] = c->segs[k];
    }
    if (last == w)
        return;
    memmove(&c->segs[w + 1], &c->segs[last + 1],
            (c->nsegs - last - 1) * sizeof *c->segs);
    c->nsegs -= last - w;
}

/* valid = (valid & ~clear) | set over [off, off + len); args checked. */
static int weft__coh_update(weft__coherence *c, size_t off, size_t len,
                            uint64_t clear, uint64_t set)
{
    size_t i, j, k;
    int rc;

    if (len == 0)
        return 0;
    /* Within one segment that the update leaves as it is (a node writing
     * again what it wrote at the last launch): nothing to do. */
    i = weft__coh_find(c, off);
    if (off + len <= weft__coh_end(c, i) &&
        ((c->segs[i].valid & ~clear) | set) == c->segs[i].valid)
        return 0;
    /* both splits' room first, so that nothing changes on failure */
    if ((rc = weft__coherence_reserve(c, 2)) < 0)
        return rc;
    i = weft__coh_split(c, off);
    j = weft__coh_split(c, off + len);
    for (k = i; k < j; k++) {
        c->segs[k].valid = (c->segs[k].valid & ~clear) | set;
        c->segs[k].flags = weft__coh_flags_of(c->segs[k].valid);
        weft__assert_internal(c->segs[k].valid != 0);
    }
    weft__coh_merge(c, i, j);
    weft__assert_expensive(weft__coherence_validate(c));
    return 0;
}

int weft__coherence_mark_valid(weft__coherence *c, unsigned m, size_t off,
                               size_t len)
{
    int rc;

    if ((rc = weft__coh_check_args(c, m, off, len, "mark_valid")) < 0)
        return rc;
    return weft__coh_update(c, off, len, 0, (uint64_t)1 << m);
}

int weft__coherence_write(weft__coherence *c, unsigned m, size_t off,
                          size_t len)
{
    int rc;

    if ((rc = weft__coh_check_args(c, m, off, len, "write")) < 0)
        return rc;
    return weft__coh_update(c, off, len, ~(uint64_t)0, (uint64_t)1 << m);
}

int weft__coherence_drop(weft__coherence *c, unsigned m, size_t off, size_t len)
{
    uint64_t bit = (uint64_t)1 << m;
    size_t i, end = off + len;
    int rc;

    if ((rc = weft__coh_check_args(c, m, off, len, "drop")) < 0)
        return rc;
    if (len == 0)
        return 0;
    for (i = weft__coh_find(c, off); i < c->nsegs && c->segs[i].off < end;
         i++) {
        if (c->segs[i].valid == bit)
            return weft__error(
                WEFT_EBUSY,
                "coherence drop: memory %u holds the only valid copy of "
                "[%zu, %zu); write it back before dropping it",
                m, WEFT__MAX(off, c->segs[i].off),
                WEFT__MIN(end, weft__coh_end(c, i)));
    }
    return weft__coh_update(c, off, len, bit, 0);
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
 * One pass of weft__coherence_read: count the transfers (items NULL) or
 * write them. Both passes make the same choices, so the count is exact.
 */
static size_t weft__coh_read_pass(const weft__coherence *c, unsigned m,
                                  size_t off, size_t end, weft__coh_costs *k,
                                  weft__coherence_transfer *items)
{
    uint64_t bit = (uint64_t)1 << m;
    size_t n = 0, i, s, e, last_end = 0;
    unsigned src, last_src = 0;

    for (i = weft__coh_find(c, off); i < c->nsegs && c->segs[i].off < end;
         i++) {
        if (c->segs[i].valid & bit)
            continue;
        s = WEFT__MAX(off, c->segs[i].off);
        e = WEFT__MIN(end, weft__coh_end(c, i));
        src = weft__coh_source(k, c->segs[i].valid);
        if (n && last_end == s && last_src == src) {
            if (items)
                items[n - 1].len = e - items[n - 1].off;
        } else {
            if (items)
                items[n] = (weft__coherence_transfer){
                    .src = src, .dst = m, .off = s, .len = e - s};
            n++;
        }
        last_end = e;
        last_src = src;
    }
    return n;
}

int weft__coherence_read(const weft__coherence *c, unsigned m, size_t off,
                         size_t len, weft__coherence_cost_fn *cost, void *user,
                         weft__coherence_transfers *out)
{
    weft__coh_costs k;
    size_t n;
    int rc;

    if ((rc = weft__coh_check_args(c, m, off, len, "read")) < 0)
        return rc;
    if (!out)
        return weft__error(WEFT_EINVAL, "coherence read: no transfer list");
    k.fn = cost;
    k.user = user;
    k.dst = m;
    k.known = 0;
    n = len ? weft__coh_read_pass(c, m, off, off + len, &k, NULL) : 0;
    if (n > out->cap) {
        weft__coherence_transfer *items =
            weft__realloc(out->items, n * sizeof *items);

        if (!items)
            return weft__error(WEFT_ENOMEM,
                               "coherence read: out of memory for %zu "
                               "transfers",
                               n);
        out->items = items;
        out->cap = n;
    }
    if (n)
        weft__coh_read_pass(c, m, off, off + len, &k, out->items);
    out->count = n;
    return 0;
}

static size_t weft__coh_sole_pass(const weft__coherence *c, unsigned m,
                                  size_t off, size_t end,
                                  weft__coherence_range *items)
{
    uint64_t bit = (uint64_t)1 << m;
    size_t n = 0, i, s, e, last_end = 0;

    for (i = weft__coh_find(c, off); i < c->nsegs && c->segs[i].off < end;
         i++) {
        if (c->segs[i].valid != bit)
            continue;
        s = WEFT__MAX(off, c->segs[i].off);
        e = WEFT__MIN(end, weft__coh_end(c, i));
        /* two such segments are never adjacent: they would be merged */
        weft__assert_internal(!n || last_end < s);
        if (items)
            items[n] = (weft__coherence_range){.off = s, .len = e - s};
        n++;
        last_end = e;
    }
    (void)last_end; /* read by the assertion only */
    return n;
}

int weft__coherence_sole_ranges(const weft__coherence *c, unsigned m,
                                size_t off, size_t len,
                                weft__coherence_ranges *out)
{
    size_t n;
    int rc;

    if ((rc = weft__coh_check_args(c, m, off, len, "sole_ranges")) < 0)
        return rc;
    if (!out)
        return weft__error(WEFT_EINVAL, "coherence sole_ranges: no list");
    n = len ? weft__coh_sole_pass(c, m, off, off + len, NULL) : 0;
    if (n > out->cap) {
        weft__coherence_range *items =
            weft__realloc(out->items, n * sizeof *items);

        if (!items)
            return weft__error(WEFT_ENOMEM,
                               "coherence sole_ranges: out of memory for %zu "
                               "ranges",
                               n);
        out->items = items;
        out->cap = n;
    }
    if (n)
        weft__coh_sole_pass(c, m, off, off + len, out->items);
    out->count = n;
    return 0;
}

uint64_t weft__coherence_holders(const weft__coherence *c, size_t off,
                                 size_t len)
{
    uint64_t mask;
    size_t i, end = off + len;

    if (!c || !c->segs || off > c->size || len > c->size - off)
        return 0;
    mask = weft__coh_all(c->nmem);
    if (len == 0)
        return mask;
    for (i = weft__coh_find(c, off); i < c->nsegs && c->segs[i].off < end; i++)
        mask &= c->segs[i].valid;
    return mask;
}

int weft__coherence_is_valid(const weft__coherence *c, unsigned m, size_t off,
                             size_t len)
{
    if (!c || m >= c->nmem || off > c->size || len > c->size - off)
        return 0;
    return (weft__coherence_holders(c, off, len) >> m) & 1;
}

/* ---- the validator ----------------------------------------------------- */

static _Thread_local char weft__coh_why[200];

#define WEFT__COH_BROKEN(...)                                                  \
    (snprintf(weft__coh_why, sizeof weft__coh_why, __VA_ARGS__), weft__coh_why)

const char *weft__coherence_check(const weft__coherence *c)
{
    uint64_t all;
    size_t i;

    if (!c)
        return "no tracker";
    if (!c->segs || c->nsegs == 0)
        return "no segments";
    if (c->nsegs > c->cap)
        return WEFT__COH_BROKEN("%zu segments in room for %zu", c->nsegs,
                                c->cap);
    if (c->size == 0)
        return "size 0";
    if (c->nmem == 0 || c->nmem > WEFT__COH_MAX_MEMS)
        return WEFT__COH_BROKEN("%u memories", c->nmem);
    if (c->segs[0].off != 0)
        return WEFT__COH_BROKEN("the first segment starts at %zu, not 0",
                                c->segs[0].off);
    all = weft__coh_all(c->nmem);
    for (i = 0; i < c->nsegs; i++) {
        const weft__coherence_seg *s = &c->segs[i];

        if (s->off >= c->size)
            return WEFT__COH_BROKEN("segment %zu starts at %zu, past the "
                                    "end (%zu)",
                                    i, s->off, c->size);
        if (i > 0 && s->off <= c->segs[i - 1].off)
            return WEFT__COH_BROKEN("segment %zu starts at %zu, not after "
                                    "segment %zu (%zu)",
                                    i, s->off, i - 1, c->segs[i - 1].off);
        if (s->valid == 0)
            return WEFT__COH_BROKEN("segment %zu [%zu, %zu) is valid nowhere",
                                    i, s->off, weft__coh_end(c, i));
        if (s->valid & ~all)
            return WEFT__COH_BROKEN("segment %zu is valid on memories %#llx, "
                                    "beyond the %u tracked",
                                    i, (unsigned long long)s->valid, c->nmem);
        if (s->flags & ~(unsigned)WEFT__COH_DIRTY)
            return WEFT__COH_BROKEN("segment %zu has unknown flags %#x", i,
                                    s->flags);
        if (s->flags != weft__coh_flags_of(s->valid))
            return WEFT__COH_BROKEN(
                "segment %zu is %s but the host copy is "
                "%s",
                i, (s->flags & WEFT__COH_DIRTY) ? "dirty" : "clean",
                (s->valid & 1) ? "valid" : "stale");
        if (i > 0 && weft__coh_same(&c->segs[i - 1], s))
            return WEFT__COH_BROKEN("segments %zu and %zu have the same "
                                    "state and are not merged",
                                    i - 1, i);
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
