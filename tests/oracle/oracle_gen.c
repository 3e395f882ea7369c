/*
 * The generator of random cases. Everything comes from one 64-bit seed and
 * the runtime's limits, so that a seed replays the same case on the same
 * machine configuration.
 *
 * Dependencies are what the oracle tests, so the generator aims at them:
 * writes land on bytes that recent nodes read (write-after-read, the
 * hazard a scheduler forgets most easily) or wrote, reads land on bytes
 * that recent nodes wrote, and ranges of one buffer overlap often but not
 * always, through the root or through views.
 */
#include "oracle.h"

#include <stdlib.h>
#include <string.h>

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    /* splitmix64: every seed, even 0, gives a good stream */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n is 0. */
static size_t below(rng *r, size_t n)
{
    return n ? (size_t)(next(r) % n) : 0;
}

static int chance(rng *r, unsigned percent)
{
    return below(r, 100) < percent;
}

/* In [1, max], small values much likelier than large ones. */
static size_t skewed(rng *r, size_t max)
{
    size_t cap = max;

    if (max == 0)
        return 0;
    switch (below(r, 8)) {
    case 0:
    case 1:
    case 2:
    case 3:
        cap = max < 16 ? max : 16;
        break;
    case 4:
    case 5:
    case 6:
        cap = max < 512 ? max : 512;
        break;
    default:
        break;
    }
    return 1 + below(r, cap);
}

/* A byte range or block of a root that a recent node read or wrote. */
typedef struct span {
    unsigned root;
    or_access a; /* a.handle unused */
} span;

enum { RECENT = 8 };

typedef struct gen {
    or_case *c;
    const or_limits *lim;
    rng r;
    span reads[RECENT], writes[RECENT];
    unsigned nreads, nwrites; /* pushed so far (the rings keep RECENT) */
    size_t src_cap;
    /* --blocks: each root seen as a matrix of rows pitch[root] bytes
     * apart, cut into tiles of tile_w bytes x tile_h rows */
    size_t pitch[OR_MAX_HANDLES], tile_w[OR_MAX_HANDLES];
    size_t tile_h[OR_MAX_HANDLES];
} gen;

static void remember_acc(span *ring, unsigned *count, unsigned root,
                         const or_access *a)
{
    span s;

    s.root = root;
    s.a = *a;
    ring[*count % RECENT] = s;
    (*count)++;
}

static void remember(span *ring, unsigned *count, unsigned root, size_t off,
                     size_t size)
{
    or_access a = {0, off, size, WEFT_READ, 0, 0, 0, 0};

    remember_acc(ring, count, root, &a);
}

static const span *recent(gen *g, const span *ring, unsigned count)
{
    if (!count)
        return NULL;
    return &ring[below(&g->r, count < RECENT ? count : RECENT)];
}

static size_t root_size(const gen *g, unsigned root)
{
    return g->c->handles[root].size;
}

/* A byte of the span, at random (one draw for a range). */
static size_t span_byte(gen *g, const span *h)
{
    size_t k = h->a.rows ? below(&g->r, or_acc_runs(&h->a)) : 0;

    return or_acc_run(&h->a, k) + below(&g->r, h->a.size);
}

/*
 * Does the run [x, x + w) meet a byte of b? Solved per slice of b for the
 * rows that could, so that the cost is b's slices, not its rows.
 */
static int run_meets(size_t x, size_t w, const or_access *b)
{
    size_t nr = b->rows ? b->rows : 1, ns = b->rows ? b->slices : 1;
    size_t p = nr > 1 ? b->pitch : 1;

    for (size_t sl = 0; sl < ns; sl++) {
        size_t base = b->off + sl * b->spitch, lo, hi;

        if (x + w <= base)
            break; /* this slice and later ones start after the run */
        /* rows r with base + r p < x + w and base + r p + size > x */
        lo = x + 1 > base + b->size ? (x + 1 - base - b->size + p - 1) / p : 0;
        hi = (x + w - 1 - base) / p;
        if (hi > nr - 1)
            hi = nr - 1;
        if (lo <= hi)
            return 1;
    }
    return 0;
}

int or_acc_overlap(unsigned ra, const or_access *a, unsigned rb,
                   const or_access *b)
{
    if (ra != rb || a->off >= or_acc_end(b) || b->off >= or_acc_end(a))
        return 0;
    if (!a->rows && !b->rows)
        return 1;
    if (or_acc_runs(a) > or_acc_runs(b)) { /* walk the one of fewer runs */
        const or_access *t = a;

        a = b;
        b = t;
    }
    for (size_t k = 0; k < or_acc_runs(a); k++)
        if (run_meets(or_acc_run(a, k), a->size, b))
            return 1;
    return 0;
}

/*
 * A range [*off, *off + *size) of root with the offset a multiple of oa,
 * the size a multiple of su and at most max; overlapping hint when one is
 * given (and of this root). -1 if the root is too small.
 */
static int pick_range(gen *g, unsigned root, size_t oa, size_t su, size_t max,
                      const span *hint, size_t *off, size_t *size)
{
    size_t rs = root_size(g, root);

    if (rs < su || max < su)
        return -1;
    for (int tries = 0; tries < 8; tries++) {
        size_t o, s, lim, room;

        if (hint && hint->root == root) {
            /* cover one byte of the hint, starting a little before it */
            size_t p = span_byte(g, hint);
            size_t back = skewed(&g->r, max) - 1;

            o = (p - (back < p ? back : p)) / oa * oa;
            s = (p - o + 1 + su - 1) / su * su;
            if (o + s > rs || s > max)
                continue;
            lim = rs - o < max ? rs - o : max;
            /* and beyond it, by any amount or more often a small one */
            room = (lim - s) / su;
            s += (chance(&g->r, 50) ? below(&g->r, room + 1)
                                    : skewed(&g->r, room + 1) - 1) *
                 su;
        } else {
            o = below(&g->r, (rs - su) / oa + 1) * oa;
            lim = rs - o < max ? rs - o : max;
            if (lim < su)
                continue;
            s = skewed(&g->r, lim / su) * su;
        }
        *off = o;
        *size = s;
        return 0;
    }
    return -1;
}

/*
 * A handle through which [off, off + size) of root can be reached, whose
 * own offset is a multiple of ha; views are preferred when some fit.
 */
static unsigned pick_handle(gen *g, unsigned root, size_t off, size_t size,
                            size_t ha)
{
    unsigned fit[OR_MAX_HANDLES], n = 0;

    for (unsigned h = g->c->nroots; h < g->c->nhandles; h++) {
        const or_handle *v = &g->c->handles[h];

        if (v->root == root && v->off <= off &&
            off + size <= v->off + v->size && v->off % ha == 0)
            fit[n++] = h;
    }
    if (n && chance(&g->r, 60))
        return fit[below(&g->r, n)];
    return root;
}

/* Does a meet a write of n (an access of root)? */
static int clashes_acc(const gen *g, const or_node *n, unsigned root,
                       const or_access *a)
{
    for (unsigned i = 0; i < n->nacc; i++)
        if ((n->acc[i].mode & WEFT_WRITE) &&
            or_acc_overlap(g->c->handles[n->acc[i].handle].root, &n->acc[i],
                           root, a))
            return 1;
    return 0;
}

/*
 * Would a read of [off, off + size) of root overlap what n writes? Within
 * one node only reads may overlap: the items of a kernel run in any order.
 */
static int clashes(const gen *g, const or_node *n, unsigned root, size_t off,
                   size_t size)
{
    or_access a = {0, off, size, WEFT_READ, 0, 0, 0, 0};

    return clashes_acc(g, n, root, &a);
}

/* A root for a write, and the hint that makes the write a hazard. */
static const span *write_target(gen *g, unsigned *root)
{
    const span *h = NULL;
    unsigned p = (unsigned)below(&g->r, 100);

    if (p < 55)
        h = recent(g, g->reads, g->nreads); /* WAR */
    else if (p < 75)
        h = recent(g, g->writes, g->nwrites); /* WAW */
    *root = h ? h->root : (unsigned)below(&g->r, g->c->nroots);
    return h;
}

static const span *read_target(gen *g, unsigned *root)
{
    const span *h = chance(&g->r, 60) ? recent(g, g->writes, g->nwrites) : NULL;

    *root = h ? h->root : (unsigned)below(&g->r, g->c->nroots);
    return h;
}

static void add_block_access(gen *g, or_node *n, unsigned handle,
                             const or_access *x)
{
    or_access *a = &n->acc[n->nacc++];
    unsigned root = g->c->handles[handle].root;

    *a = *x;
    a->handle = handle;
    if (a->mode & WEFT_READ)
        remember_acc(g->reads, &g->nreads, root, a);
    if (a->mode & WEFT_WRITE)
        remember_acc(g->writes, &g->nwrites, root, a);
}

static void add_access(gen *g, or_node *n, unsigned handle, size_t off,
                       size_t size, weft_access mode)
{
    or_access a = {handle, off, size, mode, 0, 0, 0, 0};

    add_block_access(g, n, handle, &a);
}

/* A read range of whole uint32s for a kernel, disjoint from n's writes. */
static int kernel_read_range(gen *g, or_node *n, size_t elems, size_t *off,
                             unsigned *root)
{
    const size_t A = g->lim->align;

    for (int tries = 0; tries < 16; tries++) {
        const span *h = read_target(g, root);
        size_t size;

        if (elems) {
            size_t rs = root_size(g, *root);

            if (rs < elems * 4)
                continue;
            *off = below(&g->r, (rs - elems * 4) / A + 1) * A;
            size = elems * 4;
        } else if (pick_range(g, *root, A, 4, 4096 * 4, h, off, &size) < 0) {
            continue;
        }
        if (!clashes(g, n, *root, *off, size))
            return (int)(size / 4);
    }
    return -1;
}

static int gen_kernel(gen *g, or_node *n)
{
    const size_t A = g->lim->align;
    unsigned root, k = (unsigned)below(&g->r, 100);
    const span *h = write_target(g, &root);
    size_t off, size;
    or_access *w = &n->acc[0];

    n->kind = OR_KERNEL;
    n->kernel = k < 30   ? OR_K_AFFINE
                : k < 60 ? OR_K_GATHER
                : k < 85 ? OR_K_MIX
                         : OR_K_SET;
    if (pick_range(g, root, A, 4, 4096 * 4, h, &off, &size) < 0)
        return -1;
    w->handle = pick_handle(g, root, off, size, A);
    w->off = off;
    w->size = size;
    w->mode = n->kernel == OR_K_AFFINE || n->kernel == OR_K_GATHER
                  ? WEFT_READ_WRITE
                  : WEFT_WRITE;
    n->nacc = 1;
    for (unsigned b = 1; b < or_kernel_nbufs[n->kernel]; b++) {
        size_t roff;
        unsigned rroot;
        /* mix's a has as many elements as its output; the others any */
        int e = kernel_read_range(
            g, n, n->kernel == OR_K_MIX && b == 1 ? size / 4 : 0, &roff,
            &rroot);

        if (e < 0)
            return -1;
        add_access(g, n, pick_handle(g, rroot, roff, (size_t)e * 4, A), roff,
                   (size_t)e * 4, WEFT_READ);
    }
    /* only now, so that the reads above were not steered onto it */
    if (w->mode & WEFT_READ)
        remember(g->reads, &g->nreads, root, off, size);
    remember(g->writes, &g->nwrites, root, off, size);
    n->key = (uint32_t)next(&g->r);
    n->mul = (uint32_t)next(&g->r) | 1u;
    if (chance(&g->r, 30)) {
        static const uint32_t sizes[] = {1, 3, 16, 64, 256};
        uint32_t gs = sizes[below(&g->r, 5)];

        n->group = gs <= g->lim->max_group ? gs : 0;
    }
    return 0;
}

static int gen_write(gen *g, or_node *n)
{
    unsigned root;
    const span *h = write_target(g, &root);
    size_t off, size, su = chance(&g->r, 70) ? 4 : 1;

    if (pick_range(g, root, su, 1, 8192, h, &off, &size) < 0)
        return -1;
    n->kind = OR_WRITE;
    add_access(g, n, pick_handle(g, root, off, size, 1), off, size, WEFT_WRITE);
    n->host_off = g->c->src_size;
    g->c->src_size += size;
    return 0;
}

static int gen_read(gen *g, or_node *n)
{
    unsigned root;
    const span *h = read_target(g, &root);
    size_t off, size, su = chance(&g->r, 70) ? 4 : 1;

    if (pick_range(g, root, su, 1, 8192, h, &off, &size) < 0)
        return -1;
    n->kind = OR_READ;
    add_access(g, n, pick_handle(g, root, off, size, 1), off, size, WEFT_READ);
    n->host_off = g->c->dst_size;
    g->c->dst_size += size;
    return 0;
}

static int gen_copy(gen *g, or_node *n)
{
    unsigned droot, sroot;
    const span *h = write_target(g, &droot);
    size_t doff, soff, size, su = chance(&g->r, 70) ? 4 : 1;

    if (pick_range(g, droot, su, 1, 8192, h, &doff, &size) < 0)
        return -1;
    n->kind = OR_COPY;
    n->acc[0].off = doff;
    n->acc[0].size = size;
    n->acc[0].handle = droot;
    n->acc[0].mode = WEFT_WRITE;
    n->nacc = 1;
    for (int tries = 0; tries < 16; tries++) {
        const span *rh = read_target(g, &sroot);
        size_t rs = root_size(g, sroot);

        if (rs < size)
            continue;
        if (rh && rh->root == sroot && chance(&g->r, 70)) {
            /* start inside the recent write when it leaves room */
            soff = span_byte(g, rh);
            if (soff + size > rs)
                soff = rs - size;
        } else {
            soff = below(&g->r, rs - size + 1);
        }
        if (su == 4)
            soff &= ~(size_t)3;
        if (clashes(g, n, sroot, soff, size))
            continue;
        n->nacc = 0;
        add_access(g, n, pick_handle(g, droot, doff, size, 1), doff, size,
                   WEFT_WRITE);
        add_access(g, n, pick_handle(g, sroot, soff, size, 1), soff, size,
                   WEFT_READ);
        return 0;
    }
    return -1;
}

static int gen_fill(gen *g, or_node *n)
{
    static const unsigned psizes[] = {1, 2, 4};
    unsigned root, ps = psizes[below(&g->r, 3)];
    const span *h = write_target(g, &root);
    size_t off, size, rel, end;
    unsigned handle;

    if (pick_range(g, root, 1, 1, 8192, h, &off, &size) < 0)
        return -1;
    /* the pattern repeats from the start of the range, relative to the
     * handle: align within the handle, which a view may shift */
    handle = pick_handle(g, root, off, size, 1);
    rel = off - g->c->handles[handle].off;
    end = rel + size;
    rel = (rel + ps - 1) / ps * ps;
    end = end / ps * ps;
    if (end <= rel)
        return -1;
    n->kind = OR_FILL;
    n->pattern_size = ps;
    for (unsigned i = 0; i < 4; i++)
        n->pattern[i] = (uint8_t)next(&g->r);
    add_access(g, n, handle, g->c->handles[handle].off + rel, end - rel,
               WEFT_WRITE);
    return 0;
}

static weft_access random_mode(gen *g)
{
    static const weft_access modes[] = {WEFT_READ, WEFT_WRITE, WEFT_READ_WRITE};

    return modes[below(&g->r, 3)];
}

static int gen_map(gen *g, or_node *n)
{
    weft_access mode = random_mode(g);
    unsigned root;
    const span *h =
        mode == WEFT_READ ? read_target(g, &root) : write_target(g, &root);
    size_t off, size;

    if (pick_range(g, root, 1, 1, 4096, h, &off, &size) < 0)
        return -1;
    n->kind = OR_MAP;
    n->key = (uint32_t)next(&g->r);
    add_access(g, n, pick_handle(g, root, off, size, 1), off, size, mode);
    return 0;
}

static int gen_host(gen *g, or_node *n)
{
    unsigned want = (unsigned)below(&g->r, OR_MAX_ACC + 1);

    n->kind = OR_HOST;
    n->key = (uint32_t)next(&g->r);
    for (unsigned i = 0; i < want; i++) {
        weft_access mode = random_mode(g);
        unsigned root;
        const span *h =
            mode == WEFT_READ ? read_target(g, &root) : write_target(g, &root);
        size_t off, size;
        int clash = 0;

        if (pick_range(g, root, 1, 1, 4096, h, &off, &size) < 0)
            continue;
        /* within one node only reads may overlap each other */
        for (unsigned a = 0; a < n->nacc; a++) {
            or_access x = {0, off, size, mode, 0, 0, 0, 0};

            if (or_acc_overlap(g->c->handles[n->acc[a].handle].root, &n->acc[a],
                               root, &x) &&
                (mode != WEFT_READ || n->acc[a].mode != WEFT_READ))
                clash = 1;
        }
        if (!clash)
            add_access(g, n, pick_handle(g, root, off, size, 1), off, size,
                       mode);
    }
    return 0;
}

/* A copy made by the driver, and a fill of a third range apart from both. */
static int gen_native(gen *g, or_node *n)
{
    unsigned root;
    const span *h;
    size_t off, size;

    if (gen_copy(g, n) < 0)
        return -1;
    n->kind = OR_NATIVE;
    n->key = (uint32_t)next(&g->r);
    n->capture = (n->key >> 8) % 100 < g->lim->capture;
    h = write_target(g, &root);
    if (pick_range(g, root, 1, 1, 4096, h, &off, &size) < 0)
        return 0;
    for (unsigned a = 0; a < n->nacc; a++) {
        or_access x = {0, off, size, WEFT_WRITE, 0, 0, 0, 0};

        if (or_acc_overlap(g->c->handles[n->acc[a].handle].root, &n->acc[a],
                           root, &x))
            return 0;
    }
    add_access(g, n, pick_handle(g, root, off, size, 1), off, size, WEFT_WRITE);
    return 0;
}

/* ---- blocks (--blocks) ----------------------------------------------------
 */

/* The largest extent of a block: three fit the eviction tests' 64K. */
enum { BLOCK_SPAN = 16384 };

/*
 * A block of root into *a (mode unset): origin a multiple of oa, row bytes
 * and pitches multiples of wu; covering a byte of hint when one is given
 * (and of this root), else, half the time, a tile of the root's matrix
 * (tiles of one root are disjoint), else anywhere. Its runs never overlap
 * each other. -1 if nothing fitted.
 */
static int pick_block(gen *g, unsigned root, size_t oa, size_t wu,
                      const span *hint, or_access *a)
{
    size_t rs = root_size(g, root), P = g->pitch[root];

    for (int tries = 0; tries < 16; tries++) {
        size_t pitch, w, rows, slices = 1, spitch = 0, ext, o;
        int tile = !hint && chance(&g->r, 50);

        if (tile) {
            size_t tw = g->tile_w[root], th = g->tile_h[root];
            size_t nti = rs / P / th, ntj = P / tw, ti, tj;

            if (!nti || !ntj)
                continue;
            ti = below(&g->r, nti);
            tj = below(&g->r, ntj);
            pitch = P;
            w = tw;
            rows = th;
            o = ti * th * P + tj * tw;
            if (o % oa || w % wu || pitch % wu)
                continue;
        } else {
            size_t maxw, maxr;

            if (P % wu == 0 && P <= rs / 2 && chance(&g->r, 65))
                pitch = P;
            else
                pitch = wu * (1 + below(&g->r,
                                        (rs / 2 < 1024 ? rs / 2 : 1024) / wu));
            if (pitch < wu)
                continue;
            maxw = pitch < 512 ? pitch : 512;
            w = wu * skewed(&g->r, maxw / wu);
            maxr = (BLOCK_SPAN - w) / pitch + 1;
            rows = skewed(&g->r, maxr < 48 ? maxr : 48);
            if (chance(&g->r, 15)) {
                slices = 2 + below(&g->r, 3);
                /* a multiple of the pitch, at least rows of it */
                spitch = pitch * (rows + below(&g->r, 3));
            }
            ext = (slices - 1) * spitch + (rows - 1) * pitch + w;
            if (ext > rs || ext > BLOCK_SPAN)
                continue;
            if (hint && hint->root == root) {
                size_t p = span_byte(g, hint);
                size_t back = below(&g->r, slices) * spitch +
                              below(&g->r, rows) * pitch + below(&g->r, w);

                if (back > p)
                    continue;
                o = (p - back) / oa * oa;
            } else {
                o = below(&g->r, (rs - ext) / oa + 1) * oa;
            }
        }
        ext = (slices - 1) * spitch + (rows - 1) * pitch + w;
        if (o + ext > rs)
            continue;
        a->off = o;
        a->size = w;
        a->rows = rows;
        a->slices = slices;
        a->pitch = pitch;
        a->spitch = spitch;
        return 0;
    }
    return -1;
}

static size_t block_span(const or_access *a)
{
    return or_acc_end(a) - a->off;
}

/* A block kernel: affine, gather or set on blocks (or_at3). */
static int gen_kernel_block(gen *g, or_node *n)
{
    const size_t A = g->lim->align;
    unsigned root, k = (unsigned)below(&g->r, 100);
    const span *h = write_target(g, &root);
    or_access w = {0}, x = {0};

    n->kind = OR_KERNEL;
    n->kernel = k < 35 ? OR_K_BAFFINE : k < 75 ? OR_K_BGATHER : OR_K_BSET;
    if (pick_block(g, root, A, 4, h, &w) < 0)
        return -1;
    w.mode = n->kernel == OR_K_BSET ? WEFT_WRITE : WEFT_READ_WRITE;
    n->nacc = 0;
    /* the written block first (argument 0), remembered after the read */
    n->acc[0] = w;
    n->acc[0].handle = pick_handle(g, root, w.off, block_span(&w), A);
    n->nacc = 1;
    if (n->kernel == OR_K_BGATHER) {
        int found = 0;

        for (int tries = 0; tries < 16 && !found; tries++) {
            unsigned rroot;
            const span *rh = read_target(g, &rroot);

            if (pick_block(g, rroot, A, 4, rh, &x) < 0)
                continue;
            x.mode = WEFT_READ;
            if (clashes_acc(g, n, rroot, &x))
                continue;
            add_block_access(
                g, n, pick_handle(g, rroot, x.off, block_span(&x), A), &x);
            found = 1;
        }
        if (!found)
            return -1;
    }
    if (w.mode & WEFT_READ)
        remember_acc(g->reads, &g->nreads, root, &w);
    remember_acc(g->writes, &g->nwrites, root, &w);
    n->key = (uint32_t)next(&g->r);
    n->mul = (uint32_t)next(&g->r) | 1u;
    if (chance(&g->r, 30)) {
        static const uint32_t sizes[] = {1, 3, 16, 64, 256};
        uint32_t gs = sizes[below(&g->r, 5)];

        n->group = gs <= g->lim->max_group ? gs : 0;
    }
    return 0;
}

/*
 * The host side of a block write or read: pitches as given to weft (0
 * sometimes: packed), and the bytes it spans.
 */
static void host_layout(gen *g, or_node *n, const or_access *a)
{
    size_t hp = a->size + (chance(&g->r, 50) ? 0 : below(&g->r, 24));
    size_t hs = hp * (a->rows + (chance(&g->r, 50) ? 0 : below(&g->r, 3)));

    n->hpitch = chance(&g->r, 25) ? 0 : hp;
    hp = n->hpitch ? n->hpitch : a->size;
    n->hspitch = a->slices > 1 && chance(&g->r, 75) ? hs : 0;
    hs = n->hspitch ? n->hspitch : a->rows * hp;
    n->hspan = (a->slices - 1) * hs + (a->rows - 1) * hp + a->size;
}

static int gen_write_block(gen *g, or_node *n)
{
    unsigned root;
    const span *h = write_target(g, &root);
    size_t u = chance(&g->r, 70) ? 4 : 1;
    or_access a = {0};

    if (pick_block(g, root, u, u, h, &a) < 0)
        return -1;
    a.mode = WEFT_WRITE;
    n->kind = OR_WRITE;
    host_layout(g, n, &a);
    add_block_access(g, n, pick_handle(g, root, a.off, block_span(&a), 1), &a);
    n->host_off = g->c->src_size;
    g->c->src_size += n->hspan;
    return 0;
}

static int gen_read_block(gen *g, or_node *n)
{
    unsigned root;
    const span *h = read_target(g, &root);
    size_t u = chance(&g->r, 70) ? 4 : 1;
    or_access a = {0};

    if (pick_block(g, root, u, u, h, &a) < 0)
        return -1;
    a.mode = WEFT_READ;
    n->kind = OR_READ;
    host_layout(g, n, &a);
    add_block_access(g, n, pick_handle(g, root, a.off, block_span(&a), 1), &a);
    n->host_off = g->c->dst_size;
    g->c->dst_size += n->hspan;
    return 0;
}

/*
 * A block copy: the source of the destination's shape at pitches of its
 * own, anywhere its bytes miss the destination's (their rows may
 * interleave in one root).
 */
static int gen_copy_block(gen *g, or_node *n)
{
    unsigned droot, sroot;
    const span *h = write_target(g, &droot);
    size_t u = chance(&g->r, 70) ? 4 : 1;
    or_access d = {0}, x;

    if (pick_block(g, droot, u, u, h, &d) < 0)
        return -1;
    d.mode = WEFT_WRITE;
    n->kind = OR_COPY;
    n->acc[0] = d;
    n->acc[0].handle = droot;
    n->nacc = 1;
    for (int tries = 0; tries < 16; tries++) {
        const span *rh = read_target(g, &sroot);
        size_t rs = root_size(g, sroot), P = g->pitch[sroot], ext;

        x = d;
        x.mode = WEFT_READ;
        if (P >= d.size && P % u == 0 && chance(&g->r, 60))
            x.pitch = P;
        else
            x.pitch = d.size + u * below(&g->r, 64);
        x.spitch = d.slices > 1 ? x.pitch * (d.rows + below(&g->r, 3)) : 0;
        ext = block_span(&x);
        if (ext > rs)
            continue;
        if (rh && rh->root == sroot && chance(&g->r, 70)) {
            x.off = span_byte(g, rh) / u * u;
            if (x.off + ext > rs)
                x.off = (rs - ext) / u * u;
        } else {
            x.off = below(&g->r, (rs - ext) / u + 1) * u;
        }
        if (clashes_acc(g, n, sroot, &x))
            continue;
        n->nacc = 0;
        add_block_access(g, n, pick_handle(g, droot, d.off, block_span(&d), 1),
                         &d);
        add_block_access(g, n, pick_handle(g, sroot, x.off, block_span(&x), 1),
                         &x);
        return 0;
    }
    return -1;
}

/* A block fill: origin (in its handle), row bytes and pitches multiples
 * of the pattern, so every run starts the pattern afresh. */
static int gen_fill_block(gen *g, or_node *n)
{
    static const unsigned psizes[] = {1, 2, 4};
    unsigned root, ps = psizes[below(&g->r, 3)], handle;
    const span *h = write_target(g, &root);
    or_access a = {0};
    size_t rel, lift;

    if (pick_block(g, root, 1, ps, h, &a) < 0)
        return -1;
    handle = pick_handle(g, root, a.off, block_span(&a), 1);
    rel = a.off - g->c->handles[handle].off;
    lift = (ps - rel % ps) % ps;
    if (a.size < lift + ps)
        return -1;
    a.off += lift;
    a.size = (a.size - lift) / ps * ps;
    a.mode = WEFT_WRITE;
    n->kind = OR_FILL;
    n->pattern_size = ps;
    for (unsigned i = 0; i < 4; i++)
        n->pattern[i] = (uint8_t)next(&g->r);
    add_block_access(g, n, handle, &a);
    return 0;
}

/* A host task whose accesses are mostly blocks. */
static int gen_host_block(gen *g, or_node *n)
{
    unsigned want = (unsigned)below(&g->r, OR_MAX_ACC + 1);

    n->kind = OR_HOST;
    n->key = (uint32_t)next(&g->r);
    for (unsigned i = 0; i < want; i++) {
        weft_access mode = random_mode(g);
        unsigned root;
        const span *h =
            mode == WEFT_READ ? read_target(g, &root) : write_target(g, &root);
        or_access x = {0};
        int clash = 0;

        if (chance(&g->r, 25)) {
            if (pick_range(g, root, 1, 1, 4096, h, &x.off, &x.size) < 0)
                continue;
        } else if (pick_block(g, root, 1, 1, h, &x) < 0) {
            continue;
        }
        x.mode = mode;
        /* within one node only reads may overlap each other */
        for (unsigned a = 0; a < n->nacc; a++)
            if (or_acc_overlap(g->c->handles[n->acc[a].handle].root, &n->acc[a],
                               root, &x) &&
                (mode != WEFT_READ || n->acc[a].mode != WEFT_READ))
                clash = 1;
        if (!clash)
            add_block_access(
                g, n, pick_handle(g, root, x.off, block_span(&x), 1), &x);
    }
    return 0;
}

/* Each root's matrix: a pitch (a multiple of the kernel alignment, of 4,
 * or any) and a tile. */
static void make_matrices(gen *g)
{
    const size_t A = g->lim->align;

    for (unsigned r = 0; r < g->c->nroots; r++) {
        size_t rs = root_size(g, r), cap = rs / 4 < 1024 ? rs / 4 : 1024;
        unsigned p = (unsigned)below(&g->r, 100);
        size_t unit = p < 50 ? A : p < 85 ? 4 : 1, P;

        if (cap < unit)
            unit = 1;
        P = unit * (1 + below(&g->r, cap / unit));
        g->pitch[r] = P;
        /* tiles of whole uint32s where the pitch allows, aligned for
         * kernels where it is a multiple of the alignment */
        unit = P % A == 0 ? A : P % 4 == 0 ? 4 : 1;
        g->tile_w[r] = unit * (1 + below(&g->r, P / unit < 4 ? P / unit : 4));
        if (g->tile_w[r] > P)
            g->tile_w[r] = P;
        g->tile_h[r] = 1 + below(&g->r, 16);
    }
}

static int add_edge(gen *g, unsigned from, unsigned to, unsigned *cap)
{
    if (g->c->nedges == *cap) {
        unsigned ncap = *cap ? *cap * 2 : 16;
        or_edge *e = realloc(g->c->edges, ncap * sizeof *e);

        if (!e)
            return -1;
        g->c->edges = e;
        *cap = ncap;
    }
    g->c->edges[g->c->nedges].from = from;
    g->c->edges[g->c->nedges].to = to;
    g->c->nedges++;
    return 0;
}

static void make_buffers(gen *g)
{
    or_case *c = g->c;
    const size_t A = g->lim->align;

    c->nroots = 1 + (unsigned)below(&g->r, 5);
    for (unsigned r = 0; r < c->nroots; r++) {
        or_handle *h = &c->handles[r];
        size_t size = 2 * A + below(&g->r, chance(&g->r, 10) ? 65536 : 8192);

        if (chance(&g->r, 70))
            size &= ~(size_t)3;
        h->parent = -1;
        h->root = r;
        h->off = 0;
        h->size = size;
        h->wrapped = chance(&g->r, 50);
    }
    c->nhandles = c->nroots;
    for (unsigned v = (unsigned)below(&g->r, 5); v > 0; v--) {
        unsigned p = (unsigned)below(&g->r, c->nhandles);
        const or_handle *ph = &c->handles[p];
        or_handle *h = &c->handles[c->nhandles];
        unsigned a = (unsigned)below(&g->r, 100);
        size_t unit = a < 60 ? A : a < 85 ? 4 : 1, rel;

        /* views of views only sometimes: most cases keep one level */
        if (ph->parent >= 0 && chance(&g->r, 70))
            continue;
        if (ph->size < 2 * unit)
            continue;
        /* aligned in the root, so kernels may go through the view */
        rel = below(&g->r, ph->size / 2 / unit + 1) * unit;
        if ((ph->off + rel) % unit)
            rel += unit - (ph->off + rel) % unit;
        if (rel >= ph->size)
            continue;
        h->parent = (int)p;
        h->root = ph->root;
        h->off = ph->off + rel;
        h->size = chance(&g->r, 30) ? ph->size - rel
                                    : 1 + below(&g->r, ph->size - rel);
        h->wrapped = 0;
        c->nhandles++;
    }
}

int or_case_generate(or_case *c, uint64_t seed, const or_limits *lim)
{
    gen g = {c, lim, {seed}, {{0}}, {{0}}, 0, 0, 0, {0}, {0}, {0}};
    unsigned nnodes, ecap = 0, p = (unsigned)(seed % 100);

    memset(c, 0, sizeof *c);
    c->seed = seed;
    next(&g.r); /* let neighbouring seeds part ways at once */
    make_buffers(&g);
    if (lim->blocks)
        make_matrices(&g);
    p = (unsigned)below(&g.r, 100);
    nnodes = p < 60   ? 5 + (unsigned)below(&g.r, 36)
             : p < 90 ? 40 + (unsigned)below(&g.r, 81)
                      : 120 + (unsigned)below(&g.r, 181);
    if (lim->max_nodes && nnodes > lim->max_nodes)
        nnodes = lim->max_nodes;
    c->nodes = calloc(nnodes, sizeof *c->nodes);
    if (!c->nodes)
        return -1;
    for (unsigned i = 0; i < nnodes; i++) {
        or_node *n = &c->nodes[i];
        unsigned k = (unsigned)below(&g.r, 100);
        int rc;

        memset(n, 0, sizeof *n);
        n->device = -1;
        /* (no draw at all without native nodes: seeds keep their cases) */
        if (lim->device_only) /* what a replay may take over */
            k = k < 93 ? 0 : 99;
        else if (lim->kernels_host)
            k = k < 75 ? 0 : k < 95 ? 90 : 99;
        if (lim->native && chance(&g.r, lim->native))
            rc = gen_native(&g, n);
        else if (lim->blocks && !chance(&g.r, 20))
            rc = k < 40   ? (lim->range_kernels ? gen_kernel(&g, n)
                                                : gen_kernel_block(&g, n))
                 : k < 50 ? gen_write_block(&g, n)
                 : k < 62 ? gen_read_block(&g, n)
                 : k < 72 ? gen_copy_block(&g, n)
                 : k < 79 ? gen_fill_block(&g, n)
                 : k < 88 ? gen_map(&g, n)
                 : k < 97 ? gen_host_block(&g, n)
                          : (n->kind = OR_EMPTY, 0);
        else
            rc = k < 40   ? gen_kernel(&g, n)
                 : k < 50 ? gen_write(&g, n)
                 : k < 62 ? gen_read(&g, n)
                 : k < 72 ? gen_copy(&g, n)
                 : k < 79 ? gen_fill(&g, n)
                 : k < 88 ? gen_map(&g, n)
                 : k < 97 ? gen_host(&g, n)
                          : (n->kind = OR_EMPTY, 0);
        if (rc < 0) {
            /* nothing fitted: an empty node keeps the count */
            memset(n, 0, sizeof *n);
            n->kind = OR_EMPTY;
            n->device = -1;
        }
        c->nnodes = i + 1;
        /* explicit edges: a few at random, more into and out of joins */
        if (i > 0 && (n->kind == OR_EMPTY || chance(&g.r, 4))) {
            for (unsigned e = 1 + (unsigned)below(&g.r, 3); e > 0; e--)
                if (add_edge(&g, (unsigned)below(&g.r, i), i, &ecap) < 0)
                    return -1;
        }
        if (i > 0 && c->nodes[i - 1].kind == OR_EMPTY && chance(&g.r, 50))
            if (add_edge(&g, i - 1, i, &ecap) < 0)
                return -1;
    }
    /* placement by the user, when there is a choice */
    if (lim->ndevices > 1) {
        p = (unsigned)below(&g.r, 100);
        if (p < 30) {
            for (unsigned i = 0; i < c->nnodes; i++)
                if (c->nodes[i].kind == OR_KERNEL && chance(&g.r, 50))
                    c->nodes[i].device = (int)below(&g.r, lim->ndevices);
            c->exec_device = -1;
        } else {
            c->exec_device = p < 50 ? (int)below(&g.r, lim->ndevices) : -1;
        }
    } else {
        c->exec_device = chance(&g.r, 20) ? 0 : -1;
    }
    p = (unsigned)below(&g.r, 100);
    c->launches = p < 65 ? 1 : p < 90 ? 2 : 3;
    for (unsigned l = 0; l + 1 < c->launches; l++) {
        or_between *b = &c->between[l];
        unsigned h = (unsigned)below(&g.r, c->nhandles);

        b->wait_first = chance(&g.r, 50);
        if (!chance(&g.r, 30))
            continue;
        b->write = 1;
        b->handle = h;
        b->size = 1 + below(&g.r, c->handles[h].size);
        b->off =
            c->handles[h].off + below(&g.r, c->handles[h].size - b->size + 1);
        b->src_off = c->src_size;
        c->src_size += b->size;
    }
    c->destroy_graph = chance(&g.r, 30);

    /* initial contents and write sources */
    for (unsigned r = 0; r < c->nroots; r++) {
        c->init[r] = malloc(c->handles[r].size);
        if (!c->init[r])
            return -1;
        for (size_t j = 0; j < c->handles[r].size; j++)
            c->init[r][j] = (uint8_t)next(&g.r);
    }
    c->src = malloc(c->src_size ? c->src_size : 1);
    if (!c->src)
        return -1;
    for (size_t j = 0; j < c->src_size; j++)
        c->src[j] = (uint8_t)next(&g.r);
    return 0;
}

void or_case_free(or_case *c)
{
    for (unsigned r = 0; r < c->nroots; r++)
        free(c->init[r]);
    free(c->nodes);
    free(c->edges);
    free(c->src);
    memset(c, 0, sizeof *c);
}

const char *or_kind_name(or_kind k)
{
    static const char *const names[] = {"kernel", "write", "read",
                                        "copy",   "fill",  "map",
                                        "host",   "empty", "native"};

    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

static const char *mode_name(weft_access m)
{
    return m == WEFT_READ ? "R" : m == WEFT_WRITE ? "W" : "RW";
}

void or_case_dump(const or_case *c, FILE *f)
{
    fprintf(f,
            "case seed %llu: %u roots, %u views, %u nodes, %u edges, "
            "%u launches, exec device %d%s\n",
            (unsigned long long)c->seed, c->nroots, c->nhandles - c->nroots,
            c->nnodes, c->nedges, c->launches, c->exec_device,
            c->destroy_graph ? ", graph destroyed early" : "");
    for (unsigned h = 0; h < c->nhandles; h++)
        fprintf(f, "  buffer %u: root %u [%zu, +%zu)%s%s\n", h,
                c->handles[h].root, c->handles[h].off, c->handles[h].size,
                c->handles[h].parent < 0 ? "" : " view",
                c->handles[h].wrapped ? " wrapped" : "");
    for (unsigned i = 0; i < c->nnodes; i++) {
        const or_node *n = &c->nodes[i];

        fprintf(f, "  %u %s", i, or_kind_name(n->kind));
        if (n->kind == OR_KERNEL)
            fprintf(f, " %s group %u device %d", or_kernel_names[n->kernel],
                    n->group, n->device);
        if (n->kind == OR_FILL)
            fprintf(f, " pattern %u", n->pattern_size);
        if (n->kind == OR_NATIVE && n->capture)
            fprintf(f, " capture");
        for (unsigned a = 0; a < n->nacc; a++) {
            const or_access *x = &n->acc[a];

            fprintf(f, " %s:b%u(r%u)[%zu,+%zu)", mode_name(x->mode), x->handle,
                    c->handles[x->handle].root, x->off, x->size);
            if (x->rows)
                fprintf(f, "x%zu@%zu", x->rows, x->pitch);
            if (x->rows && x->slices > 1)
                fprintf(f, "x%zu@%zu", x->slices, x->spitch);
        }
        if ((n->kind == OR_WRITE || n->kind == OR_READ) && n->acc[0].rows)
            fprintf(f, " host +%zu pitches %zu %zu", n->host_off, n->hpitch,
                    n->hspitch);
        fputc('\n', f);
    }
    for (unsigned e = 0; e < c->nedges; e++)
        fprintf(f, "  edge %u -> %u\n", c->edges[e].from, c->edges[e].to);
    for (unsigned l = 0; l + 1 < c->launches; l++)
        if (c->between[l].write)
            fprintf(f, "  after launch %u: %sbuffer_write b%u [%zu,+%zu)\n", l,
                    c->between[l].wait_first ? "wait, " : "",
                    c->between[l].handle, c->between[l].off,
                    c->between[l].size);
}
