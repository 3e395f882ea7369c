/*
 * Eviction: room on a device for a new extent, made by writing back and
 * freeing the extents that are needed least (buffer.h has the lock
 * protocol; replica.h what this shares with replica.c).
 */
#include "replica.h"

#include <stdlib.h>

/*
 * Extents evicted together: taken off their roots and devices as each is
 * chosen, their blocks given back to the pool only after one wait for the
 * work in flight (the batch's write-backs among it). A batch costs two
 * drains of the lanes, whatever the number of extents in it, so eviction
 * frees more than the one allocation needs (WEFT__EVICT_AHEAD) and the
 * allocations after it find room without waiting for the devices.
 */
typedef struct weft__evicted {
    weft__extent **x;
    size_t n, cap;
    size_t bytes;        /* of the blocks of x */
    unsigned long wrote; /* extents whose bytes were written back */
} weft__evicted;

/* One batch frees at least this part of the device's pool limit. */
#define WEFT__EVICT_AHEAD 16

/*
 * Take extent x of a root this thread holds into batch b: the bytes only
 * it holds go back to the host copy first (enqueued, not waited for), then
 * the tracker forgets them there. The lanes were drained when the batch
 * began, so nothing in flight writes x's bytes; another graph's work is
 * waited for through the root's fence.
 */
static int weft__extent_evict(weft_buffer *root, weft__extent *x,
                              weft__lanes *l, weft__evicted *b)
{
    weft_runtime *rt = root->rt;
    unsigned m = 1 + x->device;
    int rc;

    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        weft__extent **xs = weft__realloc(b->x, cap * sizeof *xs);

        if (!xs)
            return weft__error(WEFT_ENOMEM, "eviction: out of memory");
        b->x = xs;
        b->cap = cap;
    }
    if ((rc = weft__lanes_fence_wait(l, root)) < 0)
        return rc;
    rc = weft__coherence_sole_ranges(&root->coh, m, x->lo, x->hi - x->lo,
                                     &l->ranges);
    for (size_t i = 0; rc == 0 && i < l->ranges.count; i++) {
        const weft__coherence_range *r = &l->ranges.items[i];
        weft__region g = weft__coherence_range_region(r);

        if (g.h > 1)
            rc = weft__replica_d2h_block(root, x->device, &g, WEFT__CAUSE_EVICT,
                                         l);
        else
            rc = weft__replica_d2h(root, x->device, x->blk.mem,
                                   x->blk.offset + (g.off - x->lo), g.off, g.w,
                                   WEFT__CAUSE_EVICT, l);
        if (rc == 0)
            rc = weft__coherence_mark_valid_region(&root->coh, WEFT__COH_HOST,
                                                   &g);
    }
    if (rc == 0)
        rc = weft__coherence_reserve(&root->coh, 4);
    if (rc == 0)
        rc = weft__coherence_drop(&root->coh, m, x->lo, x->hi - x->lo);
    if (rc < 0)
        return rc;
    weft__debug("mem", "evicting [%zu, %zu) of buffer %p from %s%s", x->lo,
                x->hi, (void *)root, rt->devices[x->device]->name,
                l->ranges.count ? " after writing it back" : "");
    b->wrote += l->ranges.count > 0;
    weft__extent_detach(root, x);
    b->x[b->n++] = x;
    b->bytes += x->blk.size;
    return 0;
}

/*
 * Evict one extent of device d into batch b, if any may go: not pinned by
 * the work in progress (unless force), not of a root another thread holds
 * or one that is mapped.
 * Clean extents (valid elsewhere too) go before modified ones, and among
 * equals the one whose root the graphs use furthest in the future (the
 * executor's order says when), then the least recently used. Returns 1
 * when one went, 0 when none may.
 */
static int weft__evict_one(weft_runtime *rt, unsigned d, int force,
                           weft__lanes *l, weft__evicted *b)
{
    weft__devmem *dm = &rt->devmem[d];
    weft__extent *best = NULL;
    int best_dirty = 0, tries, rc;
    uint64_t best_next = 0, best_last = 0;
    weft_buffer *root;
    int held;

    for (tries = 0; tries < 8; tries++) {
        pthread_mutex_lock(&dm->lock);
        best = NULL;
        /*
         * The device lock keeps every listed extent alive while it is held
         * (freeing one unlinks it first); a root is only try-locked, as
         * the usual order is root first.
         */
        for (weft__extent *x = dm->extents; x; x = x->dnext) {
            weft__coherence_ranges *sole = &l->ranges;
            uint64_t next;
            int dirty;

            root = x->root;
            held = weft__buffer_held(root);
            /* The program holds its address (an export, for this process
             * or another): it stays. */
            if (__atomic_load_n(&x->exported, __ATOMIC_RELAXED) ||
                __atomic_load_n(&x->ipc, __ATOMIC_RELAXED))
                continue;
            if (held ? !force && x->pin == root->epoch
                     : !weft__buffer_trylock(root))
                continue;
            /* Another graph's work in flight that no fence says the end
             * of may still use the extent: not a candidate. */
            if (!root->mapped_by &&
                !(root->fence_owner && root->fence_owner != (const void *)l &&
                  !root->fence)) {
                dirty = weft__coherence_sole_ranges(&root->coh, 1 + d, x->lo,
                                                    x->hi - x->lo, sole) < 0 ||
                        sole->count > 0;
                next = root->next_use ? root->next_use : UINT64_MAX;
                if (!best || dirty < best_dirty ||
                    (dirty == best_dirty &&
                     (next > best_next ||
                      (next == best_next && x->last_use < best_last)))) {
                    best = x;
                    best_dirty = dirty;
                    best_next = next;
                    best_last = x->last_use;
                }
            }
            if (!held)
                weft__buffer_unlock(root);
        }
        if (!best) {
            pthread_mutex_unlock(&dm->lock);
            weft_clear_error();
            return 0;
        }
        root = best->root;
        held = weft__buffer_held(root);
        if (!held && !weft__buffer_trylock(root)) {
            /* Taken between the look and now: look again. */
            pthread_mutex_unlock(&dm->lock);
            continue;
        }
        /* The root's lock keeps best alive from here. */
        pthread_mutex_unlock(&dm->lock);
        rc = weft__extent_evict(root, best, l, b);
        if (!held)
            weft__buffer_unlock(root);
        return rc < 0 ? rc : 1;
    }
    return 0;
}

/*
 * Evict extents of device d until at least want bytes went or none more
 * may go (force: pinned ones too): one drain of the lanes before (nothing
 * in flight may still use an extent or write its bytes), one after the
 * write-backs (they read the extents about to be freed). Returns the
 * number of extents that went.
 */
static long weft__evict_some(weft_runtime *rt, unsigned d, size_t want,
                             int force, weft__lanes *l)
{
    weft__evicted b = {NULL, 0, 0, 0, 0};
    int rc, drc = 0;
    long n;

    if ((rc = weft__lanes_drain(l)) < 0)
        return rc;
    while (b.bytes < want && (rc = weft__evict_one(rt, d, force, l, &b)) > 0)
        ;
    if (b.wrote) {
        char keep[512];

        /* The write-backs enqueued read the blocks about to go back. */
        if (rc < 0)
            weft__strlcpy(keep, weft_last_error(), sizeof keep);
        drc = weft__lanes_drain(l);
        if (rc < 0)
            weft__error(rc, "%s", keep);
        else
            rc = drc;
        if (drc == 0)
            weft__lanes_stat(l, &rt->stats.writebacks, b.wrote);
    }
    /*
     * A drain that failed leaves the work on the blocks unknown: they are
     * kept off the pool (lost until the runtime goes) rather than handed
     * out again under it.
     */
    for (size_t i = 0; i < b.n; i++)
        if (drc == 0)
            weft__extent_drop(rt, b.x[i]);
        else
            weft__free(b.x[i]);
    if (b.n) {
        weft__lanes_stat(l, &rt->stats.evictions, b.n);
        weft__lanes_stat(l, &rt->stats.evict_rounds, 1);
    }
    n = (long)b.n;
    weft__free(b.x);
    return rc < 0 ? rc : n;
}

int weft__buffer_evict_all(weft_runtime *rt, unsigned device, weft__lanes *l)
{
    long rc = weft__evict_some(rt, device, SIZE_MAX, 1, l);

    return rc < 0 ? (int)rc : 0;
}

int weft__block_alloc(weft_runtime *rt, unsigned d, size_t size, weft__lanes *l,
                      weft__pool_block *blk)
{
    weft__pool *pool;
    char why[512];
    uint64_t limit;
    size_t align, want;
    long went;
    int rc;

    if ((rc = weft__runtime_pool(rt, d, &pool)) < 0)
        return rc;
    weft__pool_get_limit(pool, &limit, &align);
    want = WEFT__MAX(size, (size_t)(limit / WEFT__EVICT_AHEAD));
    for (;;) {
        rc = weft__pool_alloc(pool, size, blk);
        if (rc != WEFT_EDEVMEM)
            return rc;
        weft__strlcpy(why, weft_last_error(), sizeof why);
        if (weft__pool_trim(pool) > 0) {
            rc = weft__pool_alloc(pool, size, blk);
            if (rc != WEFT_EDEVMEM)
                return rc;
        }
        went = weft__evict_some(rt, d, want, 0, l);
        if (went < 0)
            return (int)went;
        if (went == 0)
            return weft__error(WEFT_EDEVMEM,
                               "%zu bytes on %s: nothing more can be evicted "
                               "(%s)",
                               size, rt->devices[d]->name, why);
    }
}

static int weft__span_cmp(const void *a, const void *b)
{
    const weft__span *x = a, *y = b;

    if (x->root != y->root)
        return (uintptr_t)x->root < (uintptr_t)y->root ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * s[0, n), sorted, to the runs of their union, in place, each widened to
 * the bounds of an extent of device d and runs that then overlap or touch
 * merged: the extents the node needs. *runs: how many; *bytes: the
 * union's bytes before widening; returns the blocks' bytes (the need).
 */
static size_t weft__span_merge(weft__span *s, size_t n, unsigned d,
                               size_t align, size_t *runs, size_t *bytes)
{
    size_t k = 0, need = 0, lo, hi;

    *bytes = 0;
    /* The union: a range of 0 bytes is its first byte (or the root's last),
     * as for extent_ensure. */
    for (size_t i = 0; i < n; i++) {
        weft__span r = s[i];

        if (r.size == 0) {
            r.off = r.off < r.root->size ? r.off : r.root->size - 1;
            r.size = 1;
        }
        if (k && s[k - 1].root == r.root &&
            r.off <= s[k - 1].off + s[k - 1].size) {
            size_t end =
                WEFT__MAX(s[k - 1].off + s[k - 1].size, r.off + r.size);

            s[k - 1].size = end - s[k - 1].off;
        } else {
            s[k++] = r;
        }
    }
    for (size_t i = 0; i < k; i++)
        *bytes += s[i].size;
    /* The extents: widened runs, merged again. */
    n = k;
    k = 0;
    for (size_t i = 0; i < n; i++) {
        weft__extent_bounds(s[i].root, d, s[i].off, s[i].size, &lo, &hi);
        if (k && s[k - 1].root == s[i].root &&
            lo <= s[k - 1].off + s[k - 1].size) {
            s[k - 1].size =
                WEFT__MAX(s[k - 1].off + s[k - 1].size, hi) - s[k - 1].off;
        } else {
            s[k].root = s[i].root;
            s[k].off = lo;
            s[k].size = hi - lo;
            k++;
        }
    }
    for (size_t i = 0; i < k; i++)
        need += (s[i].size + align - 1) / align * align;
    *runs = k;
    return need;
}

/* Extents for the runs s[0, n): pinned, made where missing. */
static int weft__span_ensure(const weft__span *s, size_t n, unsigned d,
                             weft__lanes *l)
{
    int rc = 0;

    for (size_t i = 0; i < n && rc == 0; i++) {
        weft__extent *x;
        int made;

        rc = weft__extent_ensure(s[i].root, d, s[i].off, s[i].size, l, &x,
                                 &made);
    }
    return rc;
}

int weft__buffer_hold(weft__span *s, size_t n, unsigned d, weft__lanes *l)
{
    weft_runtime *rt = l->rt;
    weft__pool_stats st;
    weft__pool *pool;
    size_t runs, bytes, need, align;
    uint64_t limit;
    char why[512];
    int rc;

    /* Roots whose replica on d is the program's memory need no room. */
    for (size_t i = runs = 0; i < n; i++)
        if (!s[i].root->replicas[d].wrapped)
            s[runs++] = s[i];
    n = runs;
    if (n == 0)
        return 0;
    if ((rc = weft__runtime_pool(rt, d, &pool)) < 0)
        return rc;
    weft__pool_get_limit(pool, &limit, &align);
    if (n > 1)
        qsort(s, n, sizeof *s, weft__span_cmp);
    need = weft__span_merge(s, n, d, align, &runs, &bytes);
    if (need > limit - limit % align)
        return weft__error(WEFT_EDEVMEM,
                           "needs %zu bytes of memory on %s (the union of its "
                           "ranges, %zu bytes, in extents of whole %zu-byte "
                           "granules), more than the limit of %llu bytes",
                           need, rt->devices[d]->name, bytes, align,
                           (unsigned long long)limit);
    rc = weft__span_ensure(s, runs, d, l);
    if (rc != WEFT_EDEVMEM)
        return rc;
    /*
     * The room left between the blocks pinned (the node's own, and the
     * old extents a new one takes over, which it copies from) is cut up
     * or too small: once more from an empty device, in one piece.
     */
    weft__strlcpy(why, weft_last_error(), sizeof why);
    if ((rc = weft__buffer_evict_all(rt, d, l)) < 0)
        return rc;
    weft__pool_trim(pool);
    /* (Without one piece that large, the extents may still fit apart.) */
    if (weft__pool_reserve(pool, need) < 0)
        weft_clear_error();
    rc = weft__span_ensure(s, runs, d, l);
    if (rc == WEFT_EDEVMEM) {
        weft__pool_get_stats(pool, &st);
        weft__error(WEFT_EDEVMEM,
                    "needs %zu bytes of memory on %s, of its limit of %llu "
                    "bytes, but %llu bytes are held by what cannot be "
                    "evicted now (other launches' work in flight, buffers "
                    "that other threads use or that are mapped): %s",
                    need, rt->devices[d]->name, (unsigned long long)limit,
                    (unsigned long long)st.in_use, why);
        return WEFT__NO_ROOM;
    }
    return rc;
}
