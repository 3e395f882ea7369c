/*
 * Where the bytes of a buffer are while a weft_mpi graph is built: its
 * track, a sorted list of disjoint pieces (ranges and 2-D blocks), each
 * with the rank holding its current bytes and the ranks holding a copy.
 *
 * An access whose region is a piece already, or overlaps no piece, moves
 * as one transfer: a tiled program's blocks, accessed as the same tiles
 * every time, stay one piece each. Ranges are split and joined as their
 * accesses cut them. A block that cuts across other pieces is handled row
 * by row (its rows and the blocks it overlaps become ranges): correct,
 * but one transfer per row.
 *
 * Every rank runs this on the same calls and computes the same pieces.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static unsigned words(const weft_mpi *mpi)
{
    return (unsigned)((mpi->size + 63) / 64);
}

static int has(const uint64_t *v, int r)
{
    return (int)((v[r / 64] >> (r % 64)) & 1);
}

static void set(uint64_t *v, int r)
{
    v[r / 64] |= (uint64_t)1 << (r % 64);
}

/* One past the last byte of a. */
static size_t end_of(const wm_region *a)
{
    return a->origin + (a->rows - 1) * a->pitch + a->row_bytes;
}

/* Whether some row of b shares a byte with [x, + w). */
static int row_hits(const wm_region *b, size_t x, size_t w)
{
    size_t jmin = 0, jmax;

    if (x + w <= b->origin || end_of(b) <= x)
        return 0;
    if (b->rows == 1)
        return 1;
    jmax = (x + w - 1 - b->origin) / b->pitch;
    if (jmax >= b->rows)
        jmax = b->rows - 1;
    if (x + 1 > b->origin + b->row_bytes)
        jmin = (x + 1 - b->origin - b->row_bytes + b->pitch - 1) / b->pitch;
    return jmin <= jmax;
}

/* Whether a and b share a byte. */
int wm_overlap(const wm_region *a, const wm_region *b)
{
    if (end_of(a) <= b->origin || end_of(b) <= a->origin)
        return 0;
    if (a->rows == 1 || b->rows == 1)
        return a->rows == 1 ? row_hits(b, a->origin, a->row_bytes)
                            : row_hits(a, b->origin, b->row_bytes);
    if (a->pitch == b->pitch) {
        size_t p = a->pitch, ca = a->origin % p, cb = b->origin % p;

        /* rows that do not run into the next line: rows x columns */
        if (ca + a->row_bytes <= p && cb + b->row_bytes <= p) {
            size_t ra = a->origin / p, rb = b->origin / p;

            return ra < rb + b->rows && rb < ra + a->rows &&
                   ca < cb + b->row_bytes && cb < ca + a->row_bytes;
        }
    }
    if (a->rows > b->rows) {
        const wm_region *c = a;

        a = b;
        b = c;
    }
    for (size_t i = 0; i < a->rows; i++)
        if (row_hits(b, a->origin + i * a->pitch, a->row_bytes))
            return 1;
    return 0;
}

static int same(const wm_region *a, const wm_region *b)
{
    return a->origin == b->origin && a->row_bytes == b->row_bytes &&
           a->rows == b->rows && (a->rows == 1 || a->pitch == b->pitch);
}

static int by_origin(const void *x, const void *y)
{
    const wm_piece *a = x, *b = y;

    return a->at.origin < b->at.origin ? -1 : a->at.origin > b->at.origin;
}

/*
 * Sort t, whose pieces [0, sorted) are sorted: a few appended ones are
 * moved into place (O(n) each), more sort it all.
 */
static void sort_from(wm_track *t, unsigned sorted)
{
    if (t->n - sorted > 8) {
        qsort(t->p, t->n, sizeof *t->p, by_origin);
        return;
    }
    for (unsigned i = sorted; i < t->n; i++) {
        wm_piece x = t->p[i];
        unsigned at = i;

        while (at > 0 && t->p[at - 1].at.origin > x.at.origin)
            at--;
        memmove(&t->p[at + 1], &t->p[at], (i - at) * sizeof *t->p);
        t->p[at] = x;
    }
}

static void sort(wm_track *t)
{
    sort_from(t, 0);
}

/*
 * Append a piece at held by holder (valid there alone, or copied from
 * like); t->p may move.
 */
static int add_piece(weft_mpi_graph *g, wm_track *t, wm_region at, int holder,
                     int home, const uint64_t *like)
{
    unsigned w = words(g->mpi);
    uint64_t *valid;

    if (t->n == t->cap) {
        unsigned cap = t->cap ? 2 * t->cap : 8;
        wm_piece *p = realloc(t->p, cap * sizeof *p);

        if (!p)
            return WEFT_ENOMEM;
        t->p = p;
        t->cap = cap;
    }
    valid = calloc(w, sizeof *valid);
    if (!valid)
        return WEFT_ENOMEM;
    if (like)
        memcpy(valid, like, w * sizeof *valid);
    else
        set(valid, holder);
    t->p[t->n++] = (wm_piece){at, holder, home, valid};
    if (end_of(&at) - at.origin > t->maxspan)
        t->maxspan = end_of(&at) - at.origin;
    return 0;
}

int wm_track_of(weft_mpi_graph *g, wm_reg *reg, wm_track **out)
{
    wm_track *t;

    for (unsigned i = 0; i < g->ntracks; i++)
        if (g->tracks[i].reg == reg) {
            *out = &g->tracks[i];
            return 0;
        }
    if (g->ntracks == g->tcap) {
        unsigned cap = g->tcap ? 2 * g->tcap : 8;
        wm_track *p = realloc(g->tracks, cap * sizeof *p);

        if (!p)
            return WEFT_ENOMEM;
        g->tracks = p;
        g->tcap = cap;
    }
    t = &g->tracks[g->ntracks];
    memset(t, 0, sizeof *t);
    t->reg = reg;
    t->owner = reg->owner;
    if (reg->tiled) {
        const weft_matrix *m = &reg->m;
        size_t mt = (m->rows + reg->tr - 1) / reg->tr;
        size_t nt = (m->cols + reg->tc - 1) / reg->tc;

        for (size_t i = 0; i < mt; i++)
            for (size_t j = 0; j < nt; j++) {
                weft_block b = weft_matrix_tile(*m, reg->tr, reg->tc, i, j);
                wm_region at = {b.origin, b.row_bytes, b.rows,
                                b.rows > 1 ? b.row_pitch : b.row_bytes};
                int home = weft_mpi_block_cyclic(i, j, reg->p, reg->q);

                if (add_piece(g, t, at, home, home, NULL) < 0) {
                    wm_track_free(t);
                    return WEFT_ENOMEM;
                }
            }
        sort(t);
    }
    g->ntracks++;
    reg->users++;
    *out = t;
    return 0;
}

void wm_track_free(wm_track *t)
{
    for (unsigned i = 0; i < t->n; i++)
        free(t->p[i].valid);
    free(t->p);
    t->p = NULL;
    t->n = t->cap = 0;
}

/* Piece i, a block, becomes its rows (ranges); unsorted after. */
static int explode(weft_mpi_graph *g, wm_track *t, unsigned i)
{
    wm_region at = t->p[i].at;

    for (size_t r = 1; r < at.rows; r++) {
        wm_region row = {at.origin + r * at.pitch, at.row_bytes, 1,
                         at.row_bytes};
        int rc =
            add_piece(g, t, row, t->p[i].holder, t->p[i].home, t->p[i].valid);

        if (rc < 0)
            return rc;
    }
    t->p[i].at.rows = 1;
    t->p[i].at.pitch = at.row_bytes;
    return 0;
}

/* Split range piece i at x, inside it; unsorted after. */
static int split(weft_mpi_graph *g, wm_track *t, unsigned i, size_t x)
{
    wm_region hi = {x, end_of(&t->p[i].at) - x, 1, 0};
    int rc;

    hi.pitch = hi.row_bytes;
    rc = add_piece(g, t, hi, t->p[i].holder, t->p[i].home, t->p[i].valid);
    if (rc < 0)
        return rc;
    t->p[i].at.row_bytes = x - t->p[i].at.origin;
    t->p[i].at.pitch = t->p[i].at.row_bytes;
    return 0;
}

/* The first piece whose origin is at least x (t sorted). */
static unsigned first_from(const wm_track *t, size_t x)
{
    unsigned lo = 0, hi = t->n;

    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;

        if (t->p[mid].at.origin < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first piece that may share a byte with a region starting at x. */
static unsigned first_near(const wm_track *t, size_t x)
{
    return first_from(t, x > t->maxspan ? x - t->maxspan : 0);
}

/*
 * Make [lo, hi) exactly the pieces [*first, *last) of t: blocks that
 * overlap it become rows, ranges across its ends are split, gaps become
 * pieces of the owner's.
 */
static int cover_range(weft_mpi_graph *g, wm_track *t, size_t lo, size_t hi,
                       unsigned *first, unsigned *last)
{
    wm_region want = {lo, hi - lo, 1, hi - lo};
    unsigned n0 = t->n, a;
    size_t pos = lo;
    int rc;

    /* (t is sorted on entry; explode appends) */
    for (unsigned i = first_near(t, lo); i < n0 && t->p[i].at.origin < hi;
         i++) {
        wm_region *p = &t->p[i].at;

        if (!wm_overlap(p, &want))
            continue;
        if (p->rows > 1 && (rc = explode(g, t, i)) < 0)
            return rc;
    }
    sort_from(t, n0);
    /* ranges across lo or hi split (one across both: twice) */
    n0 = t->n;
    for (unsigned i = first_near(t, lo); i < n0 && t->p[i].at.origin < hi;
         i++) {
        wm_region p = t->p[i].at;

        if (p.rows > 1)
            continue;
        if (p.origin < lo && lo < end_of(&p)) {
            if ((rc = split(g, t, i, lo)) < 0)
                return rc;
            if (hi < end_of(&p) && (rc = split(g, t, t->n - 1, hi)) < 0)
                return rc;
        } else if (p.origin < hi && hi < end_of(&p) &&
                   (rc = split(g, t, i, hi)) < 0) {
            return rc;
        }
    }
    sort_from(t, n0);
    n0 = t->n;
    for (unsigned i = first_from(t, lo); i < n0 && t->p[i].at.origin < hi;
         i++) {
        wm_region p = t->p[i].at;

        if (p.origin > pos &&
            (rc = add_piece(g, t,
                            (wm_region){pos, p.origin - pos, 1, p.origin - pos},
                            t->owner, t->owner, NULL)) < 0)
            return rc;
        pos = end_of(&p);
    }
    if (pos < hi &&
        (rc = add_piece(g, t, (wm_region){pos, hi - pos, 1, hi - pos}, t->owner,
                        t->owner, NULL)) < 0)
        return rc;
    sort_from(t, n0);
    *first = a = first_from(t, lo);
    while (a < t->n && t->p[a].at.origin < hi)
        a++;
    *last = a;
    return 0;
}

/*
 * Rank r reads pieces [first, last) of t: a transfer for each that r
 * lacks, touching ranges of one holder joined into one.
 */
static int read_pieces(weft_mpi_graph *g, wm_track *t, unsigned first,
                       unsigned last, int r)
{
    for (unsigned i = first; i < last; i++) {
        wm_piece *p = &t->p[i];
        wm_region at = p->at;
        int rc;

        if (has(p->valid, r))
            continue;
        set(p->valid, r);
        while (at.rows == 1 && i + 1 < last && t->p[i + 1].at.rows == 1 &&
               t->p[i + 1].at.origin == end_of(&at) &&
               t->p[i + 1].holder == p->holder && !has(t->p[i + 1].valid, r)) {
            i++;
            set(t->p[i].valid, r);
            at.row_bytes += t->p[i].at.row_bytes;
            at.pitch = at.row_bytes;
        }
        if ((rc = wm_add_transfer(g, t->reg, at, p->holder, r)) < 0)
            return rc;
    }
    return 0;
}

/* Pieces [first, last) are written on r. */
static void write_pieces(weft_mpi_graph *g, wm_track *t, unsigned first,
                         unsigned last, int r)
{
    for (unsigned i = first; i < last; i++) {
        t->p[i].holder = r;
        memset(t->p[i].valid, 0, words(g->mpi) * sizeof *t->p[i].valid);
        set(t->p[i].valid, r);
    }
}

/*
 * Drop the pieces of [first, last) that say what no piece says: held by
 * the owner alone, at home there.
 */
static void prune(weft_mpi_graph *g, wm_track *t, unsigned first, unsigned last)
{
    unsigned w = words(g->mpi), k = first;

    for (unsigned i = first; i < last; i++) {
        wm_piece *p = &t->p[i];
        int alone = p->holder == t->owner && p->home == t->owner;

        for (unsigned x = 0; alone && x < w; x++)
            alone = p->valid[x] == (x == (unsigned)t->owner / 64
                                        ? (uint64_t)1 << (t->owner % 64)
                                        : 0);
        if (alone)
            free(p->valid);
        else
            t->p[k++] = *p;
    }
    memmove(&t->p[k], &t->p[last], (t->n - last) * sizeof *t->p);
    t->n -= last - k;
}

/* Apply an access of r to at: a read (transfers) or a write. */
static int access_region(weft_mpi_graph *g, wm_track *t, wm_region at, int r,
                         int write)
{
    unsigned first, last;
    int rc;

    if (at.rows == 1 || at.row_bytes == at.pitch) {
        size_t lo = at.origin, hi = end_of(&at);

        if (lo == hi)
            return 0;
        if ((rc = cover_range(g, t, lo, hi, &first, &last)) < 0)
            return rc;
    } else {
        unsigned hits = 0, hit = 0;

        for (unsigned i = first_near(t, at.origin);
             i < t->n && t->p[i].at.origin < end_of(&at); i++)
            if (wm_overlap(&t->p[i].at, &at)) {
                hits++;
                hit = i;
            }
        if (hits > 1 || (hits == 1 && !same(&t->p[hit].at, &at))) {
            for (size_t row = 0; row < at.rows; row++) {
                wm_region one = {at.origin + row * at.pitch, at.row_bytes, 1,
                                 at.row_bytes};

                if ((rc = access_region(g, t, one, r, write)) < 0)
                    return rc;
            }
            return 0;
        }
        if (hits == 0) {
            if ((rc = add_piece(g, t, at, t->owner, t->owner, NULL)) < 0)
                return rc;
            sort_from(t, t->n - 1);
            hit = first_from(t, at.origin);
        }
        first = hit;
        last = hit + 1;
    }
    if (!write)
        return read_pieces(g, t, first, last, r);
    write_pieces(g, t, first, last, r);
    if (r == t->owner)
        prune(g, t, first, last);
    return 0;
}

int wm_track_read(weft_mpi_graph *g, wm_track *t, wm_region at, int r)
{
    return access_region(g, t, at, r, 0);
}

int wm_track_write(weft_mpi_graph *g, wm_track *t, wm_region at, int r)
{
    return access_region(g, t, at, r, 1);
}

int wm_track_close(weft_mpi_graph *g, wm_track *t)
{
    /* every piece away from home goes back, ranges of one home joined */
    for (unsigned i = 0; i < t->n; i++) {
        unsigned j = i + 1;
        int rc;

        while (j < t->n && t->p[j].home == t->p[i].home &&
               t->p[j].at.rows == 1 && t->p[j - 1].at.rows == 1 &&
               t->p[j].at.origin == end_of(&t->p[j - 1].at))
            j++;
        if ((rc = read_pieces(g, t, i, j, t->p[i].home)) < 0)
            return rc;
        i = j - 1;
    }
    return 0;
}
