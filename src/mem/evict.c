/*
 * Eviction: room on a device for a new extent, made by writing back and
 * freeing the extents that are needed least (buffer.h has the lock
 * protocol; replica.h what this shares with replica.c).
 */
#include "replica.h"

/*
 * Free extent x of a root this thread holds: the bytes only it holds go
 * back to the host copy first, then the tracker forgets them there.
 */
static int weft__extent_evict(weft_buffer *root, weft__extent *x,
                              weft__lanes *l)
{
    weft_runtime *rt = root->rt;
    unsigned m = 1 + x->device;
    int rc;

    /* Nothing in flight may still use the extent or write its bytes. */
    if ((rc = weft__lanes_drain(l)) < 0 ||
        (rc = weft__lanes_fence_wait(l, root)) < 0)
        return rc;
    rc = weft__coherence_sole_ranges(&root->coh, m, x->lo, x->hi - x->lo,
                                     &l->ranges);
    for (size_t i = 0; rc == 0 && i < l->ranges.count; i++) {
        const weft__coherence_range *r = &l->ranges.items[i];

        rc = weft__replica_d2h(root, x->device, x->blk.mem,
                               x->blk.offset + (r->off - x->lo), r->off, r->len,
                               WEFT__CAUSE_EVICT, l);
        if (rc == 0)
            rc = weft__coherence_reserve(&root->coh, 4);
        if (rc == 0)
            rc = weft__coherence_mark_valid(&root->coh, WEFT__COH_HOST, r->off,
                                            r->len);
    }
    /* The write-backs read the extent about to be freed. */
    if (rc == 0 && l->ranges.count)
        rc = weft__lanes_drain(l);
    if (rc == 0 && l->ranges.count)
        weft__lanes_stat(l, &rt->stats.writebacks, 1);
    if (rc == 0)
        rc = weft__coherence_reserve(&root->coh, 4);
    if (rc == 0)
        rc = weft__coherence_drop(&root->coh, m, x->lo, x->hi - x->lo);
    if (rc < 0)
        return rc;
    weft__debug("mem", "evicted [%zu, %zu) of buffer %p from %s%s", x->lo,
                x->hi, (void *)root, rt->devices[x->device]->name,
                l->ranges.count ? " after writing it back" : "");
    weft__extent_free(root, x);
    weft__lanes_stat(l, &rt->stats.evictions, 1);
    return 0;
}

/*
 * Evict one extent of device d, if any may go: not pinned by the work in
 * progress (unless force), not of a root another thread holds or one that
 * is mapped.
 * Clean extents (valid elsewhere too) go before modified ones, and among
 * equals the one whose root the graphs use furthest in the future (the
 * executor's order says when), then the least recently used. Returns 1
 * when one went, 0 when none may.
 */
static int weft__evict_one(weft_runtime *rt, unsigned d, int force,
                           weft__lanes *l)
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
        rc = weft__extent_evict(root, best, l);
        if (!held)
            weft__buffer_unlock(root);
        return rc < 0 ? rc : 1;
    }
    return 0;
}

int weft__buffer_evict_all(weft_runtime *rt, unsigned device, weft__lanes *l)
{
    int rc;

    while ((rc = weft__evict_one(rt, device, 1, l)) > 0)
        ;
    return rc;
}

int weft__block_alloc(weft_runtime *rt, unsigned d, size_t size, weft__lanes *l,
                      weft__pool_block *blk)
{
    weft__pool *pool;
    char why[512];
    int rc;

    if ((rc = weft__runtime_pool(rt, d, &pool)) < 0)
        return rc;
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
        rc = weft__evict_one(rt, d, 0, l);
        if (rc < 0)
            return rc;
        if (rc == 0)
            return weft__error(WEFT_EDEVMEM,
                               "%zu bytes on %s: nothing more can be evicted "
                               "(%s)",
                               size, rt->devices[d]->name, why);
    }
}
