/*
 * A map from every byte of [0, size) to a 64-bit value that stays small
 * when the bytes are set in 2-D blocks: the graph's dependency map and the
 * coherence tracker both keep their state in one.
 *
 * Regions. A region is a range of bytes (h == 1: [off, off + w)) or a 2-D
 * block: h rows of w bytes, p bytes apart (w <= p), the rows being
 * [off + i * p, + w) for i < h. A 3-D block is its slices, one region each.
 *
 * Entries. The map is a sorted array of entries. An entry is either
 * uniform, [lo, hi) holding one value (p == 0), or a cell of a band: the
 * band [lo, hi) is rows of p bytes starting at lo ((hi - lo) % p == 0),
 * each row cut into the same columns, and the cell is column [c0, c1) of
 * every row (0 <= c0 < c1 <= p). A band's cells are consecutive entries
 * with the same lo, hi and p, by c0, and its columns cover [0, p). Entries
 * (uniform ones and bands) are disjoint and cover [0, size), sorted by lo.
 *
 * So a matrix written tile by tile is held as one band per row of tiles
 * and one cell per tile, whatever the number of rows: setting a block of
 * the band's pitch touches only the cells it covers. A block whose pitch
 * is another band's (or a range crossing a band's rows) is cut into rows
 * there, so mixing pitches on the same bytes is correct but costs a row
 * each.
 *
 * Changing values takes three steps, so that the caller can reserve in
 * one pass and change in another that cannot fail:
 *   weft__bandmap_split(m, r)   cut entries so that each lies wholly
 *                               inside r or wholly outside it; the
 *                               values do not change (may allocate,
 *                               unless r is split already);
 *   weft__bandmap_apply(m, r, f, user)  v = f(v, user) for every entry
 *                               inside r; r must have been split and
 *                               nothing split or merged since (never
 *                               fails, allocates nothing);
 *   weft__bandmap_merge(m, lo, hi)  join neighbours with equal values
 *                               among the entries meeting [lo, hi)
 *                               (never fails).
 * Several splits may come before their applies (a node's accesses), as
 * long as no merge comes in between. weft__bandmap_set does the three.
 *
 * Reading: weft__bandmap_visit calls fn for each piece of a region that
 * one entry holds (the intersection of the region with the entry), in
 * entry order: a range, or a 2-D block of rows of the entry's cell (or of
 * the region where the entry is uniform).
 *
 * Failure. A split that fails (WEFT_ENOMEM) may have cut some entries but
 * changed no value. Threads: none; the owner serializes calls.
 */
#ifndef WEFT_BASE_BANDMAP_H
#define WEFT_BASE_BANDMAP_H

#include "base.h"

typedef struct weft__region {
    size_t off; /* first byte */
    size_t w;   /* bytes per row (h == 1: the range's length) */
    size_t h;   /* rows, >= 1 */
    size_t p;   /* bytes from one row to the next (h > 1: >= w) */
} weft__region;

static inline weft__region weft__region_range(size_t off, size_t len)
{
    weft__region r = {off, len, 1, 0};
    return r;
}
/* One past the region's last byte. */
static inline size_t weft__region_end(const weft__region *r)
{
    return r->off + (r->h - 1) * r->p + r->w;
}
static inline uint64_t weft__region_bytes(const weft__region *r)
{
    return (uint64_t)r->w * r->h;
}

typedef struct weft__band_entry {
    size_t lo, hi; /* the entry's (uniform) or its band's bytes */
    size_t p;      /* 0: uniform; else the band's row pitch */
    size_t c0, c1; /* a cell's columns (uniform: 0, 0) */
    uint64_t v;
} weft__band_entry;

typedef struct weft__bandmap {
    size_t size; /* bytes mapped, > 0 */
    weft__band_entry *e;
    size_t n, cap;
    weft__band_entry *tmp; /* scratch of split */
    size_t tmp_cap;
    /*
     * With weft__bandmap_keep_spans: the entries that the last looks found
     * for their byte ranges (a graph's node looks at each of its ranges a
     * few times: cut, visit, apply, merge), forgotten at every change of
     * the entries' bounds. Such a map is not for threads that look at once:
     * the looks write here.
     */
    int keep_spans;
    unsigned nspans, next_span;
    struct weft__band_span {
        size_t lo, hi, i0, i1;
    } spans[8];
} weft__bandmap;

/* [0, size) holding v. WEFT_EINVAL for size 0, WEFT_ENOMEM. */
int weft__bandmap_init(weft__bandmap *m, size_t size, uint64_t v);
void weft__bandmap_fini(weft__bandmap *m);
/* Keep the last looks' spans (see keep_spans): for one thread's maps. */
void weft__bandmap_keep_spans(weft__bandmap *m);

/* WEFT_ERANGE (naming caller) if r is empty, malformed or past the end. */
int weft__bandmap_check_region(const weft__bandmap *m, const weft__region *r,
                               const char *caller);

int weft__bandmap_split(weft__bandmap *m, const weft__region *r);
typedef uint64_t weft__bandmap_fn(uint64_t v, void *user);
void weft__bandmap_apply(weft__bandmap *m, const weft__region *r,
                         weft__bandmap_fn *f, void *user);
void weft__bandmap_merge(weft__bandmap *m, size_t lo, size_t hi);
/* 1 if every entry lies wholly inside r or wholly outside (split did). */
int weft__bandmap_is_split(const weft__bandmap *m, const weft__region *r);
/* split, apply, merge; WEFT_ENOMEM changes no value. */
int weft__bandmap_set(weft__bandmap *m, const weft__region *r,
                      weft__bandmap_fn *f, void *user);

/*
 * fn(piece, value, user) for each piece of r, in entry order; a non-zero
 * return stops the walk and is returned.
 */
typedef int weft__bandmap_visit_fn(const weft__region *piece, uint64_t v,
                                   void *user);
int weft__bandmap_visit(const weft__bandmap *m, const weft__region *r,
                        weft__bandmap_visit_fn *fn, void *user);

/* The first broken invariant as a sentence (thread-local), or NULL. */
const char *weft__bandmap_check(const weft__bandmap *m);

#endif /* WEFT_BASE_BANDMAP_H */
