/* A byte map kept small under 2-D blocks (see bandmap.h). */
#include "bandmap.h"

#include <stdio.h>
#include <string.h>

typedef weft__band_entry weft__be;

static int weft__inside(const weft__be *e, const weft__region *r);
static int weft__meets(const weft__be *e, const weft__region *r);

/* Rows of a band entry (a uniform entry: 1). */
static size_t weft__be_rows(const weft__be *e)
{
    return e->p ? (e->hi - e->lo) / e->p : 1;
}

/* Entries [i, *j) are one group: a uniform entry or one band's cells. */
static size_t weft__group_end(const weft__bandmap *m, size_t i)
{
    size_t lo = i + 1, hi, step = 1, at = m->e[i].lo;

    if (!m->e[i].p)
        return lo;
    /*
     * A group's entries are the only ones that start at its first byte
     * (entries are in order and cover disjoint bytes): the first entry
     * past i that starts later, found by doubling steps, then halving (a
     * band of many cells is a long group).
     */
    for (hi = lo; hi < m->n && m->e[hi].lo == at; step *= 2) {
        lo = hi + 1;
        hi = lo + step < m->n ? lo + step : m->n;
    }
    /* e[lo - 1].lo == at, and hi == n or e[hi].lo > at */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (m->e[mid].lo == at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The entries' bounds change: no span kept holds. */
static void weft__spans_forget(weft__bandmap *m)
{
    m->nspans = m->next_span = 0;
}

/* The first entry of the group holding byte off (off < size). */
static size_t weft__find(const weft__bandmap *m, size_t off)
{
    size_t lo = 0, n = m->n;

    /*
     * A map filled in address order (a loop over a buffer's chunks) is
     * mostly asked about its last two entries: tried first.
     */
    if (m->e[n - 1].lo <= off) {
        lo = n - 1;
    } else if (n > 2 && m->e[n - 2].lo <= off) {
        lo = n - 2;
    } else {
        /*
         * The last entry that starts at or before off: halving with a
         * conditional move, not a branch (a graph's lookups jump about a
         * map of a hundred entries, and a mispredicted branch a step cost
         * more than the step).
         */
        for (size_t len = n; len > 1;) {
            size_t half = len / 2;

            lo = m->e[lo + half].lo <= off ? lo + half : lo;
            len -= half;
        }
    }
    /* the group's first entry: the first that starts where e[lo] does */
    if (lo > 0 && m->e[lo - 1].lo == m->e[lo].lo) {
        size_t a = 0, b = lo, at = m->e[lo].lo;

        while (a < b) {
            size_t mid = a + (b - a) / 2;

            if (m->e[mid].lo < at)
                a = mid + 1;
            else
                b = mid;
        }
        lo = a;
    }
    return lo;
}

int weft__bandmap_init(weft__bandmap *m, size_t size, uint64_t v)
{
    memset(m, 0, sizeof *m);
    if (size == 0)
        return weft__error(WEFT_EINVAL, "band map: size 0");
    m->e = weft__malloc(8 * sizeof *m->e);
    if (!m->e)
        return weft__error(WEFT_ENOMEM, "band map: out of memory");
    m->cap = 8;
    m->n = 1;
    m->size = size;
    m->e[0] = (weft__be){0, size, 0, 0, 0, v};
    return 0;
}

void weft__bandmap_fini(weft__bandmap *m)
{
    if (!m)
        return;
    weft__free(m->e);
    weft__free(m->tmp);
    memset(m, 0, sizeof *m);
}

int weft__bandmap_check_region(const weft__bandmap *m, const weft__region *r,
                               const char *caller)
{
    if (r->w == 0 || r->h == 0)
        return weft__error(WEFT_ERANGE, "%s: an empty region", caller);
    if (r->h > 1 && r->p < r->w)
        return weft__error(WEFT_ERANGE,
                           "%s: rows of %zu bytes %zu bytes apart overlap",
                           caller, r->w, r->p);
    if (r->off >= m->size ||
        (r->h > 1 && r->h - 1 > (m->size - r->off) / r->p) ||
        weft__region_end(r) > m->size || weft__region_end(r) <= r->off)
        return weft__error(WEFT_ERANGE,
                           "%s: region at %zu (%zu x %zu bytes, pitch %zu) "
                           "past the %zu bytes",
                           caller, r->off, r->h, r->w, r->p, m->size);
    return 0;
}

/* ---- split ------------------------------------------------------------ */

/* Scratch entries, grown on demand (split's only allocation). */
static int weft__emit(weft__bandmap *m, size_t *nt, weft__be e)
{
    if (*nt == m->tmp_cap) {
        size_t cap = m->tmp_cap ? 2 * m->tmp_cap : 16;
        weft__be *t = weft__realloc(m->tmp, cap * sizeof *t);

        if (!t)
            return weft__error(WEFT_ENOMEM, "band map: out of memory");
        m->tmp = t;
        m->tmp_cap = cap;
    }
    m->tmp[(*nt)++] = e;
    return 0;
}

/* Sorted cut points, deduplicated, within an open interval. */
typedef struct weft__cuts {
    size_t *at;
    size_t n, cap;
    size_t inline_at[8];
} weft__cuts;

static void weft__cuts_init(weft__cuts *c)
{
    c->at = c->inline_at;
    c->n = 0;
    c->cap = 8;
}

static void weft__cuts_fini(weft__cuts *c)
{
    if (c->at != c->inline_at)
        weft__free(c->at);
}

/* Cuts arrive in increasing order; lo < x < hi keeps x. */
static int weft__cut(weft__cuts *c, size_t x, size_t lo, size_t hi)
{
    if (x <= lo || x >= hi || (c->n && c->at[c->n - 1] >= x))
        return 0;
    if (c->n == c->cap) {
        size_t cap = 2 * c->cap;
        size_t *a = c->at == c->inline_at
                        ? weft__malloc(cap * sizeof *a)
                        : weft__realloc(c->at, cap * sizeof *a);

        if (!a)
            return weft__error(WEFT_ENOMEM, "band map: out of memory");
        if (c->at == c->inline_at)
            memcpy(a, c->inline_at, sizeof c->inline_at);
        c->at = a;
        c->cap = cap;
    }
    c->at[c->n++] = x;
    return 0;
}

/* Block r's rows that meet [x, y) cut it at their ends (absolute). */
static int weft__row_cuts(const weft__region *r, size_t x, size_t y,
                          weft__cuts *c)
{
    size_t i = 0;
    int rc = 0;

    if (r->h > 1 && x > r->off)
        i = WEFT__MIN((x - r->off) / r->p, r->h - 1);
    for (; i < r->h && rc == 0; i++) {
        size_t s = r->off + i * r->p;

        if (s >= y)
            break;
        if (s + r->w <= x)
            continue;
        if ((rc = weft__cut(c, s, x, y)) == 0)
            rc = weft__cut(c, s + r->w, x, y);
    }
    return rc;
}

/* [lo, hi) holding v, cut at c's points. */
static int weft__emit_cut(weft__bandmap *m, size_t *nt, size_t lo, size_t hi,
                          uint64_t v, const weft__cuts *c)
{
    size_t at = lo;
    int rc = 0;

    for (size_t i = 0; i <= c->n && rc == 0; i++) {
        size_t end = i < c->n ? c->at[i] : hi;

        if (end > at)
            rc = weft__emit(m, nt, (weft__be){at, end, 0, 0, 0, v});
        at = end;
    }
    return rc;
}

/*
 * Rows [r0, r1) of the band whose cells are g[0, k), as a band of their
 * own, its cells cut at the columns in c (relative to the row).
 */
static int weft__emit_rows(weft__bandmap *m, size_t *nt, const weft__be *g,
                           size_t k, size_t r0, size_t r1, const weft__cuts *c)
{
    size_t lo = g[0].lo + r0 * g[0].p, hi = g[0].lo + r1 * g[0].p, ci = 0;
    int rc = 0;

    if (r0 >= r1)
        return 0;
    for (size_t i = 0; i < k && rc == 0; i++) {
        size_t at = g[i].c0;

        while (ci < (c ? c->n : 0) && c->at[ci] <= at)
            ci++;
        while (rc == 0 && ci < (c ? c->n : 0) && c->at[ci] < g[i].c1) {
            rc = weft__emit(m, nt,
                            (weft__be){lo, hi, g[0].p, at, c->at[ci], g[i].v});
            at = c->at[ci++];
        }
        if (rc == 0)
            rc = weft__emit(m, nt,
                            (weft__be){lo, hi, g[0].p, at, g[i].c1, g[i].v});
    }
    return rc;
}

/* A flat [a, b) cutting the band g[0, k). */
static int weft__split_band_flat(weft__bandmap *m, size_t *nt,
                                 const weft__be *g, size_t k, size_t a,
                                 size_t b)
{
    size_t lo = g[0].lo, p = g[0].p, n = weft__be_rows(g);
    size_t A = WEFT__MAX(a, lo), B = WEFT__MIN(b, g[0].hi);
    size_t ra = (A - lo) / p, ca = (A - lo) % p;
    size_t rb = (B - lo) / p, cb = (B - lo) % p;
    weft__cuts c;
    int rc;

    weft__cuts_init(&c);
    if ((rc = weft__emit_rows(m, nt, g, k, 0, ra, NULL)) < 0)
        goto out;
    if (ra == rb) { /* within one row: cb > ca */
        weft__cut(&c, ca, 0, p);
        weft__cut(&c, cb, 0, p);
        if ((rc = weft__emit_rows(m, nt, g, k, ra, ra + 1, &c)) == 0)
            rc = weft__emit_rows(m, nt, g, k, ra + 1, n, NULL);
        goto out;
    }
    if (ca) {
        weft__cut(&c, ca, 0, p);
        if ((rc = weft__emit_rows(m, nt, g, k, ra, ra + 1, &c)) < 0)
            goto out;
        ra++;
    }
    if ((rc = weft__emit_rows(m, nt, g, k, ra, rb, NULL)) < 0)
        goto out;
    c.n = 0;
    if (cb) {
        weft__cut(&c, cb, 0, p);
        if ((rc = weft__emit_rows(m, nt, g, k, rb, rb + 1, &c)) < 0)
            goto out;
        rb++;
    }
    rc = weft__emit_rows(m, nt, g, k, rb, n, NULL);
out:
    weft__cuts_fini(&c);
    return rc;
}

/* The column of block r in a band of its pitch starting at lo. */
static size_t weft__col(const weft__region *r, size_t lo)
{
    return (r->off % r->p + r->p - lo % r->p) % r->p;
}

/*
 * 1 if block r lies in the columns of bands of its pitch starting at lo
 * (its rows do not wrap there).
 */
static int weft__fits(const weft__region *r, size_t lo)
{
    return weft__col(r, lo) + r->w <= r->p;
}

/* A band of r's pitch in which r fits, adjacent to [lo, hi), or NULL. */
static const weft__be *weft__neighbour(const weft__bandmap *m,
                                       const weft__region *r, size_t i0,
                                       size_t i1)
{
    if (i0 > 0 && m->e[i0 - 1].p == r->p && weft__fits(r, m->e[i0 - 1].lo))
        return &m->e[i0 - 1];
    if (i1 < m->n && m->e[i1].p == r->p && weft__fits(r, m->e[i1].lo))
        return &m->e[i1];
    return NULL;
}

/*
 * Block r cutting the uniform entry u: the rows of r whose whole band row
 * (phase from a neighbouring band, else u's start, else r's own column)
 * lies in u become a band with r's columns; the rest is cut flat.
 */
static int weft__split_uniform_block(weft__bandmap *m, size_t *nt,
                                     const weft__be *u, const weft__region *r,
                                     const weft__be *nb)
{
    size_t P = r->p, c, iA, iB;
    long long base, lo = (long long)u->lo, hi = (long long)u->hi;
    weft__cuts cuts;
    int rc = 0;

    if (nb)
        c = weft__col(r, nb->lo);
    else if (weft__fits(r, u->lo))
        c = weft__col(r, u->lo);
    else
        c = 0;
    base = (long long)r->off - (long long)c; /* row 0's band row start */
    /* Rows i with [base + iP, + P) inside [u->lo, u->hi). */
    iA = lo <= base ? 0
                    : (size_t)((lo - base + (long long)P - 1) / (long long)P);
    iB = hi < base + (long long)P ? 0 : (size_t)((hi - base) / (long long)P);
    iB = WEFT__MIN(iB, r->h);
    weft__cuts_init(&cuts);
    if (iA >= iB) {
        if ((rc = weft__row_cuts(r, u->lo, u->hi, &cuts)) == 0)
            rc = weft__emit_cut(m, nt, u->lo, u->hi, u->v, &cuts);
    } else {
        size_t s = (size_t)(base + (long long)(iA * P));
        size_t e = (size_t)(base + (long long)(iB * P));

        if ((rc = weft__row_cuts(r, u->lo, s, &cuts)) == 0)
            rc = weft__emit_cut(m, nt, u->lo, s, u->v, &cuts);
        if (rc == 0 && c)
            rc = weft__emit(m, nt, (weft__be){s, e, P, 0, c, u->v});
        if (rc == 0)
            rc = weft__emit(m, nt, (weft__be){s, e, P, c, c + r->w, u->v});
        if (rc == 0 && c + r->w < P)
            rc = weft__emit(m, nt, (weft__be){s, e, P, c + r->w, P, u->v});
        cuts.n = 0;
        if (rc == 0 && (rc = weft__row_cuts(r, e, u->hi, &cuts)) == 0)
            rc = weft__emit_cut(m, nt, e, u->hi, u->v, &cuts);
    }
    weft__cuts_fini(&cuts);
    return rc;
}

/* Block r cutting the band g[0, k) (one row, or r's pitch and fitting). */
static int weft__split_band_block(weft__bandmap *m, size_t *nt,
                                  const weft__be *g, size_t k,
                                  const weft__region *r)
{
    size_t lo = g[0].lo, n = weft__be_rows(g);
    weft__cuts c;
    int rc;

    weft__cuts_init(&c);
    if (g[0].p == r->p && weft__fits(r, lo)) {
        size_t cb = weft__col(r, lo);
        /* band row of r's row 0: (r->off - cb - lo) / p, maybe negative */
        long long d = ((long long)r->off - (long long)cb - (long long)lo) /
                      (long long)r->p;
        long long a = d < 0 ? 0 : d, b = d + (long long)r->h;
        size_t kA = (size_t)a, kB = b > (long long)n ? n : (size_t)b;

        if (b <= 0 || kA >= kB) {
            rc = weft__emit_rows(m, nt, g, k, 0, n, NULL);
        } else {
            weft__cut(&c, cb, 0, r->p);
            weft__cut(&c, cb + r->w, 0, r->p);
            if ((rc = weft__emit_rows(m, nt, g, k, 0, kA, NULL)) == 0 &&
                (rc = weft__emit_rows(m, nt, g, k, kA, kB, &c)) == 0)
                rc = weft__emit_rows(m, nt, g, k, kB, n, NULL);
        }
    } else {
        /* One row (the caller saw to it): cut at r's rows in it. */
        weft__assert(n == 1);
        weft__cuts abs;

        weft__cuts_init(&abs);
        rc = weft__row_cuts(r, lo, g[0].hi, &abs);
        for (size_t i = 0; rc == 0 && i < abs.n; i++)
            rc = weft__cut(&c, abs.at[i] - lo, 0, g[0].p);
        weft__cuts_fini(&abs);
        if (rc == 0)
            rc = weft__emit_rows(m, nt, g, k, 0, 1, &c);
    }
    weft__cuts_fini(&c);
    return rc;
}

/* Put tmp[0, nt) in the place of entries [i0, i1). */
static int weft__splice(weft__bandmap *m, size_t i0, size_t i1, size_t nt)
{
    size_t n = m->n - (i1 - i0) + nt;

    weft__spans_forget(m);
    if (n > m->cap) {
        size_t cap = WEFT__MAX(2 * m->cap, n);
        weft__be *e = weft__realloc(m->e, cap * sizeof *e);

        if (!e)
            return weft__error(WEFT_ENOMEM, "band map: out of memory");
        m->e = e;
        m->cap = cap;
    }
    memmove(&m->e[i0 + nt], &m->e[i1], (m->n - i1) * sizeof *m->e);
    memcpy(&m->e[i0], m->tmp, nt * sizeof *m->e);
    m->n = n;
    return 0;
}

/* The groups [*i0, *i1) that meet [lo, hi). */
static void weft__span(const weft__bandmap *m, size_t lo, size_t hi, size_t *i0,
                       size_t *i1)
{
    size_t i;

    if (m->keep_spans)
        for (unsigned k = 0; k < m->nspans; k++)
            if (m->spans[k].lo == lo && m->spans[k].hi == hi) {
                *i0 = m->spans[k].i0;
                *i1 = m->spans[k].i1;
                return;
            }
    i = weft__find(m, lo);
    *i0 = i;
    while (i < m->n && m->e[i].lo < hi)
        i = weft__group_end(m, i);
    *i1 = i;
    if (m->keep_spans) {
        /* (the const is the entries': keep_spans maps are one thread's) */
        weft__bandmap *w = (weft__bandmap *)m;
        unsigned k = w->next_span;

        w->spans[k] = (struct weft__band_span){lo, hi, *i0, i};
        w->next_span = (k + 1) % WEFT__COUNTOF(w->spans);
        if (w->nspans < WEFT__COUNTOF(w->spans))
            w->nspans++;
    }
}

void weft__bandmap_keep_spans(weft__bandmap *m)
{
    m->keep_spans = 1;
    weft__spans_forget(m);
}

static int weft__split_flat(weft__bandmap *m, size_t a, size_t b)
{
    size_t i0, i1, nt = 0;
    int rc = 0;

    weft__span(m, a, b, &i0, &i1);
    for (size_t i = i0; i < i1 && rc == 0;) {
        size_t j = weft__group_end(m, i);
        const weft__be *g = &m->e[i];

        if (g->p) {
            rc = weft__split_band_flat(m, &nt, g, j - i, a, b);
        } else {
            weft__cuts c;

            weft__cuts_init(&c);
            weft__cut(&c, a, g->lo, g->hi);
            weft__cut(&c, b, g->lo, g->hi);
            rc = weft__emit_cut(m, &nt, g->lo, g->hi, g->v, &c);
            weft__cuts_fini(&c);
        }
        i = j;
    }
    return rc < 0 ? rc : weft__splice(m, i0, i1, nt);
}

/*
 * A band of several rows that block r cannot be cut in as a band (another
 * pitch, or r's rows would wrap): cut at each row of r that meets it, so
 * that only single rows of it meet r.
 */
static int weft__split_foreign(weft__bandmap *m, const weft__region *r)
{
    size_t end = weft__region_end(r), i0, i1, i;
    int rc = 0, any = 0;

    weft__span(m, r->off, end, &i0, &i1);
    for (i = i0; i < i1 && !any; i = weft__group_end(m, i))
        any = m->e[i].p && weft__be_rows(&m->e[i]) > 1 &&
              !(m->e[i].p == r->p && weft__fits(r, m->e[i].lo));
    if (!any)
        return 0;
    for (size_t row = 0; row < r->h && rc == 0; row++) {
        size_t s = r->off + row * r->p;
        size_t g = weft__find(m, s);

        if (m->e[g].p && weft__be_rows(&m->e[g]) > 1 &&
            !(m->e[g].p == r->p && weft__fits(r, m->e[g].lo)))
            rc = weft__split_flat(m, s, s + r->w);
        /* a row may cross into the next group */
        else if (m->e[g].hi < s + r->w)
            rc = weft__split_flat(m, s, s + r->w);
    }
    return rc;
}

int weft__bandmap_split(weft__bandmap *m, const weft__region *r)
{
    size_t end = weft__region_end(r), i0, i1, nt = 0;
    const weft__be *nb;
    int rc;

    /* Cut already (a node's write after its read): nothing to allocate. */
    if (weft__bandmap_is_split(m, r))
        return 0;
    if (r->h == 1)
        return weft__split_flat(m, r->off, r->off + r->w);
    if ((rc = weft__split_foreign(m, r)) < 0)
        return rc;
    weft__span(m, r->off, end, &i0, &i1);
    nb = weft__neighbour(m, r, i0, i1);
    for (size_t i = i0; i < i1 && rc == 0;) {
        size_t j = weft__group_end(m, i);
        const weft__be *g = &m->e[i];

        if (!g->p)
            rc = weft__split_uniform_block(m, &nt, g, r, nb);
        else if (g->p == r->p && weft__fits(r, g->lo))
            rc = weft__split_band_block(m, &nt, g, j - i, r);
        else if (weft__be_rows(g) == 1)
            rc = weft__split_band_block(m, &nt, g, j - i, r);
        else /* meets no row of r (split_foreign) */
            for (size_t x = i; x < j && rc == 0; x++)
                rc = weft__emit(m, &nt, m->e[x]);
        i = j;
    }
    return rc < 0 ? rc : weft__splice(m, i0, i1, nt);
}

/* ---- intersections ------------------------------------------------------ */

/*
 * The pieces of a flat run [x, y) cut by block r (or range r): pieces
 * wholly inside r call fn.
 */
static int weft__flat_pieces(size_t x, size_t y, const weft__region *r,
                             uint64_t v, weft__bandmap_visit_fn *fn, void *user)
{
    if (r->h == 1) {
        size_t a = WEFT__MAX(x, r->off), b = WEFT__MIN(y, r->off + r->w);
        weft__region piece = weft__region_range(a, b - a);

        return a < b ? fn(&piece, v, user) : 0;
    }
    /* Rows of r meeting [x, y): a partial head row, whole rows, a tail. */
    size_t P = r->p;
    size_t i = x <= r->off ? 0 : (x - r->off) / P;
    int rc = 0;

    while (i < r->h && rc == 0) {
        size_t s = r->off + i * P;

        if (s >= y)
            break;
        if (s + r->w <= x) {
            i++;
            continue;
        }
        if (s >= x && s + r->w <= y) {
            /* rows i.. wholly inside [x, y): one block */
            size_t last = (y - r->off - r->w) / P; /* s_last + w <= y */
            size_t nrow = WEFT__MIN(last + 1, r->h) - i;
            weft__region piece = {s, r->w, nrow, P};

            if (nrow == 1)
                piece.p = 0;
            rc = fn(&piece, v, user);
            i += nrow;
        } else {
            size_t a = WEFT__MAX(x, s), b = WEFT__MIN(y, s + r->w);
            weft__region piece = weft__region_range(a, b - a);

            rc = fn(&piece, v, user);
            i++;
        }
    }
    return rc;
}

/* The pieces of cell e (a band of several rows) inside r. */
static int weft__cell_pieces(const weft__be *e, const weft__region *r,
                             weft__bandmap_visit_fn *fn, void *user)
{
    size_t n = weft__be_rows(e), p = e->p, w = e->c1 - e->c0;
    int rc = 0;

    if (r->h > 1 && r->p == p && weft__fits(r, e->lo)) {
        size_t cb = weft__col(r, e->lo);
        long long d = ((long long)r->off - (long long)cb - (long long)e->lo) /
                      (long long)p;
        long long a = d < 0 ? 0 : d, b = d + (long long)r->h;
        size_t kA = (size_t)a, kB = b > (long long)n ? n : (size_t)b;
        size_t c0 = WEFT__MAX(e->c0, cb), c1 = WEFT__MIN(e->c1, cb + r->w);

        if (b > 0 && kA < kB && c0 < c1) {
            weft__region piece = {e->lo + kA * p + c0, c1 - c0, kB - kA, p};

            if (piece.h == 1)
                piece.p = 0;
            rc = fn(&piece, e->v, user);
        }
        return rc;
    }
    if (r->h == 1) {
        /* rows of the cell: partial head, whole rows as one block, tail */
        size_t a = r->off, b = r->off + r->w;
        size_t k = a <= e->lo ? 0 : (a - e->lo) / p;

        while (k < n && rc == 0) {
            size_t s = e->lo + k * p + e->c0;

            if (s >= b)
                break;
            if (s + w <= a) {
                k++;
                continue;
            }
            if (s >= a && s + w <= b) {
                size_t last = (b - e->lo - e->c0 - w) / p;
                size_t nrow = WEFT__MIN(last + 1, n) - k;
                weft__region piece = {s, w, nrow, nrow > 1 ? p : 0};

                rc = fn(&piece, e->v, user);
                k += nrow;
            } else {
                rc = weft__flat_pieces(s, s + w, r, e->v, fn, user);
                k++;
            }
        }
        return rc;
    }
    /* another pitch: row by row */
    size_t end = weft__region_end(r);
    size_t k = r->off <= e->lo ? 0 : (r->off - e->lo) / p;

    for (; k < n && rc == 0; k++) {
        size_t s = e->lo + k * p + e->c0;

        if (s >= end)
            break;
        rc = weft__flat_pieces(s, s + w, r, e->v, fn, user);
    }
    return rc;
}

int weft__bandmap_visit(const weft__bandmap *m, const weft__region *r,
                        weft__bandmap_visit_fn *fn, void *user)
{
    size_t end = weft__region_end(r), i0, i1;
    int rc = 0;

    weft__span(m, r->off, end, &i0, &i1);
    for (size_t i = i0; i < i1 && rc == 0; i++) {
        const weft__be *e = &m->e[i];

        if (!e->p)
            rc = weft__flat_pieces(e->lo, e->hi, r, e->v, fn, user);
        else if (weft__be_rows(e) == 1)
            rc = weft__flat_pieces(e->lo + e->c0, e->lo + e->c1, r, e->v, fn,
                                   user);
        else
            rc = weft__cell_pieces(e, r, fn, user);
    }
    return rc;
}

/* ---- apply ------------------------------------------------------------- */

/* 1 if every byte of the flat run [x, y) lies in r. */
static int weft__flat_inside(size_t x, size_t y, const weft__region *r)
{
    size_t i;

    if (x < r->off)
        return 0;
    /* a range, or a block whose rows touch: one run */
    if (r->h == 1 || r->w >= r->p)
        return y <= weft__region_end(r);
    i = (x - r->off) / r->p;
    return i < r->h && y <= r->off + i * r->p + r->w;
}

static int weft__inside(const weft__be *e, const weft__region *r)
{
    size_t n = weft__be_rows(e);

    if (!e->p)
        return weft__flat_inside(e->lo, e->hi, r);
    /* the cell's first to last byte in one run of r */
    if (weft__flat_inside(e->lo + e->c0, e->lo + (n - 1) * e->p + e->c1, r))
        return 1;
    if (n == 1 || r->h == 1)
        return 0;
    if (e->p == r->p && weft__fits(r, e->lo))
        return weft__flat_inside(e->lo + e->c0, e->lo + e->c1, r) &&
               weft__flat_inside(e->lo + (n - 1) * e->p + e->c0,
                                 e->lo + (n - 1) * e->p + e->c1, r);
    for (size_t k = 0; k < n; k++)
        if (!weft__flat_inside(e->lo + k * e->p + e->c0,
                               e->lo + k * e->p + e->c1, r))
            return 0;
    return 1;
}

static int weft__stop(const weft__region *piece, uint64_t v, void *user)
{
    (void)piece;
    (void)v;
    (void)user;
    return 1;
}

/* 1 if entry e shares a byte with r. */
static int weft__meets(const weft__be *e, const weft__region *r)
{
    if (!e->p)
        return weft__flat_pieces(e->lo, e->hi, r, 0, weft__stop, NULL);
    if (weft__be_rows(e) == 1)
        return weft__flat_pieces(e->lo + e->c0, e->lo + e->c1, r, 0, weft__stop,
                                 NULL);
    return weft__cell_pieces(e, r, weft__stop, NULL);
}

int weft__bandmap_is_split(const weft__bandmap *m, const weft__region *r)
{
    size_t end = weft__region_end(r), i0, i1;

    weft__span(m, r->off, end, &i0, &i1);
    for (size_t i = i0; i < i1; i++)
        if (!weft__inside(&m->e[i], r) && weft__meets(&m->e[i], r))
            return 0;
    return 1;
}

void weft__bandmap_apply(weft__bandmap *m, const weft__region *r,
                         weft__bandmap_fn *f, void *user)
{
    size_t end = weft__region_end(r), i0, i1;

    weft__span(m, r->off, end, &i0, &i1);
    for (size_t i = i0; i < i1; i++)
        if (weft__inside(&m->e[i], r))
            m->e[i].v = f(m->e[i].v, user);
}

/* ---- merge ------------------------------------------------------------- */

/* Bands g[0, k) and h[0, k) hold the same columns and values. */
static int weft__same_cells(const weft__be *g, const weft__be *h, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (g[i].c0 != h[i].c0 || g[i].c1 != h[i].c1 || g[i].v != h[i].v)
            return 0;
    return 1;
}

/* Join neighbouring uniform entries of equal value in [i0, *w). */
static void weft__join_uniform(weft__bandmap *m, size_t i0, size_t *w)
{
    size_t out = i0;

    for (size_t i = i0; i < *w; i++) {
        if (out > i0 && !m->e[i].p && !m->e[out - 1].p &&
            m->e[out - 1].v == m->e[i].v && m->e[out - 1].hi == m->e[i].lo)
            m->e[out - 1].hi = m->e[i].hi;
        else
            m->e[out++] = m->e[i];
    }
    memmove(&m->e[out], &m->e[*w], (m->n - *w) * sizeof *m->e);
    m->n -= *w - out;
    *w = out;
}

void weft__bandmap_merge(weft__bandmap *m, size_t lo, size_t hi)
{
    size_t i0, i1, w, i, out;

    if (lo >= m->size)
        return;
    hi = WEFT__MIN(WEFT__MAX(hi, lo + 1), m->size);
    weft__span(m, lo, hi, &i0, &i1);
    /*
     * Nothing to join where every entry from the one before to the one
     * after is uniform and valued unlike the next (the common case: a
     * node's cell among cells of other nodes): the steps below would
     * change nothing.
     */
    {
        size_t a = i0 > 0 ? i0 - 1 : 0, b = i1 < m->n ? i1 + 1 : m->n, x;

        for (x = a; x < b && !m->e[x].p; x++)
            if (x > a && m->e[x - 1].v == m->e[x].v)
                break;
        if (x == b)
            return;
    }
    weft__spans_forget(m);
    /* one group more on each side */
    if (i0 > 0)
        i0 = weft__find(m, m->e[i0 - 1].lo);
    if (i1 < m->n)
        i1 = weft__group_end(m, i1);
    /*
     * 1. Each band's neighbouring cells of equal value joined; a band of
     * one cell made uniform. In place (w <= i).
     */
    w = i0;
    for (i = i0; i < i1;) {
        size_t j = weft__group_end(m, i), start = w;

        if (!m->e[i].p) {
            m->e[w++] = m->e[i];
        } else {
            for (size_t x = i; x < j; x++) {
                if (w > start && m->e[w - 1].v == m->e[x].v)
                    m->e[w - 1].c1 = m->e[x].c1;
                else
                    m->e[w++] = m->e[x];
            }
            if (w - start == 1)
                m->e[start].p = m->e[start].c0 = m->e[start].c1 = 0;
        }
        i = j;
    }
    if (w < i1) {
        memmove(&m->e[w], &m->e[i1], (m->n - i1) * sizeof *m->e);
        m->n -= i1 - w;
    }
    /* 2. Neighbouring uniform entries, and bands of one pitch whose cells
     * match, joined (a band split at a row boundary is whole again). */
    out = i0;
    for (i = i0; i < w;) {
        size_t j = weft__group_end(m, i), k = j - i, prev = SIZE_MAX;

        if (out > i0) {
            prev = out - 1;
            while (prev > i0 && m->e[prev - 1].lo == m->e[out - 1].lo)
                prev--;
        }
        if (prev != SIZE_MAX && !m->e[i].p && !m->e[prev].p &&
            m->e[prev].v == m->e[i].v) {
            m->e[prev].hi = m->e[i].hi;
        } else if (prev != SIZE_MAX && m->e[i].p && m->e[prev].p == m->e[i].p &&
                   out - prev == k && m->e[prev].hi == m->e[i].lo &&
                   weft__same_cells(&m->e[prev], &m->e[i], k)) {
            for (size_t x = prev; x < out; x++)
                m->e[x].hi = m->e[i].hi;
        } else {
            memmove(&m->e[out], &m->e[i], k * sizeof *m->e);
            out += k;
        }
        i = j;
    }
    if (out < w) {
        memmove(&m->e[out], &m->e[w], (m->n - w) * sizeof *m->e);
        m->n -= w - out;
        w = out;
    }
    /* 3. A band of one row left is its cells as uniform entries. */
    for (i = i0; i < w; i++)
        if (m->e[i].p && m->e[i].hi - m->e[i].lo == m->e[i].p) {
            size_t base = m->e[i].lo;

            m->e[i].lo = base + m->e[i].c0;
            m->e[i].hi = base + m->e[i].c1;
            m->e[i].p = m->e[i].c0 = m->e[i].c1 = 0;
        }
    weft__join_uniform(m, i0, &w);
}

int weft__bandmap_set(weft__bandmap *m, const weft__region *r,
                      weft__bandmap_fn *f, void *user)
{
    int rc = weft__bandmap_split(m, r);

    if (rc < 0)
        return rc;
    weft__bandmap_apply(m, r, f, user);
    weft__bandmap_merge(m, r->off, weft__region_end(r));
    return 0;
}

/* ---- check ------------------------------------------------------------- */

const char *weft__bandmap_check(const weft__bandmap *m)
{
    static _Thread_local char msg[200];
    size_t at = 0;

    if (!m->e || m->n == 0 || m->n > m->cap)
        return "no entries";
    for (size_t i = 0; i < m->n;) {
        size_t j = weft__group_end(m, i);
        const weft__be *g = &m->e[i];

        if (g->lo != at) {
            snprintf(msg, sizeof msg, "entry %zu starts at %zu, not %zu", i,
                     g->lo, at);
            return msg;
        }
        if (g->hi <= g->lo || g->hi > m->size) {
            snprintf(msg, sizeof msg, "entry %zu: [%zu, %zu) of %zu bytes", i,
                     g->lo, g->hi, m->size);
            return msg;
        }
        if (g->p) {
            size_t col = 0;

            if ((g->hi - g->lo) % g->p) {
                snprintf(msg, sizeof msg,
                         "band %zu: [%zu, %zu) not whole rows of %zu", i, g->lo,
                         g->hi, g->p);
                return msg;
            }
            for (size_t x = i; x < j; x++) {
                if (m->e[x].hi != g->hi || m->e[x].c0 != col ||
                    m->e[x].c1 <= m->e[x].c0 || m->e[x].c1 > g->p) {
                    snprintf(msg, sizeof msg,
                             "band %zu cell %zu: columns [%zu, %zu) after %zu",
                             i, x, m->e[x].c0, m->e[x].c1, col);
                    return msg;
                }
                col = m->e[x].c1;
            }
            if (col != g->p) {
                snprintf(msg, sizeof msg, "band %zu: columns end at %zu of %zu",
                         i, col, g->p);
                return msg;
            }
        } else if (g->c0 || g->c1) {
            snprintf(msg, sizeof msg, "uniform entry %zu has columns", i);
            return msg;
        }
        at = g->hi;
        i = j;
    }
    if (at != m->size) {
        snprintf(msg, sizeof msg, "entries end at %zu of %zu", at, m->size);
        return msg;
    }
    return NULL;
}
