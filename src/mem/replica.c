/*
 * The copies of a root buffer: device extents from the pools and the moves
 * the coherence tracker asks for (peer, staged, registered or direct);
 * eviction is in evict.c, stores and fills in store.c. buffer.h has the
 * invariants and the lock protocol.
 */
#include "replica.h"
#include "staging.h"
#include "../base/os.h"

#include <string.h>

/*
 * Extents start and end on multiples of this (or at the end of the root),
 * so that neighbouring small ranges share one extent instead of many.
 */
#define WEFT__EXTENT_ALIGN ((size_t)256)
/* Roots of at most this many bytes are one extent (weft__extent_whole). */
#define WEFT__EXTENT_WHOLE ((size_t)1 << 20)
/*
 * A first read of at most WEFT__WIDEN_RANGE bytes of a root of at most
 * WEFT__WIDEN_ROOT on a device brings the whole root (weft__ready): about
 * what a PCIe link moves in the fixed cost of one copy, a few us.
 */
#define WEFT__WIDEN_RANGE ((size_t)1 << 10)
#define WEFT__WIDEN_ROOT  ((size_t)256 << 10)

/* Who holds a root's lock: the address of this, one per thread. */
static _Thread_local char weft__me;

void weft__buffer_lock(weft_buffer *root)
{
    pthread_mutex_lock(&root->lock);
    __atomic_store_n(&root->holder, (const void *)&weft__me, __ATOMIC_RELAXED);
    root->epoch++;
}

int weft__buffer_trylock(weft_buffer *root)
{
    if (pthread_mutex_trylock(&root->lock) != 0)
        return 0;
    __atomic_store_n(&root->holder, (const void *)&weft__me, __ATOMIC_RELAXED);
    root->epoch++;
    return 1;
}

void weft__buffer_unlock(weft_buffer *root)
{
    __atomic_store_n(&root->holder, NULL, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&root->lock);
}

/* The holder is only ever this thread's own token or another's, so a
 * relaxed load answers exactly. */
int weft__buffer_held(const weft_buffer *root)
{
    return __atomic_load_n(&root->holder, __ATOMIC_RELAXED) ==
           (const void *)&weft__me;
}

static unsigned weft__mem_index(unsigned where)
{
    return where == WEFT__HOST ? WEFT__COH_HOST : where + 1;
}

/*
 * The tracker's cost of a byte from src to dst: a peer copy (NVLink or
 * PCIe peer-to-peer) before the host's link, and a device the source
 * cannot reach costs both of its trips through the host.
 */
static double weft__cost(unsigned src, unsigned dst, void *user)
{
    const weft_runtime *rt = user;

    if (src == dst)
        return 0;
    if (src == WEFT__COH_HOST || dst == WEFT__COH_HOST)
        return 2;
    return rt->peer[(src - 1) * rt->ndevices + (dst - 1)] ? 1 : 4;
}

int weft__buffer_reserve(weft_buffer *root, unsigned n)
{
    return weft__coherence_reserve(&root->coh, 2 * (size_t)n + 2);
}

int weft__buffer_is_valid(const weft_buffer *root, unsigned where, size_t off,
                          size_t size)
{
    return weft__coherence_is_valid(&root->coh, weft__mem_index(where), off,
                                    size);
}

void *weft__buffer_host(weft_buffer *root, size_t off)
{
    return root->host + off;
}

/* ---- extents ------------------------------------------------------------ */

/*
 * The index of the last extent of r with lo <= off, or r->nextents if there
 * is none.
 */
static size_t weft__extent_index(const weft__replica *r, size_t off)
{
    size_t lo = 0, hi = r->nextents;

    /* extents[i]->lo <= off for every i < lo, > off for every i >= hi */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (r->extents[mid]->lo <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : r->nextents;
}

/* The index of r's extent holding byte off, or r->nextents. */
static size_t weft__extent_find(const weft__replica *r, size_t off)
{
    size_t h = r->hint, i;

    /* The last hit, or the one after it (nodes walking a root in order). */
    for (i = h; i < r->nextents && i <= h + 1; i++)
        if (r->extents[i]->lo <= off && off < r->extents[i]->hi)
            return i;
    i = weft__extent_index(r, off);
    return i < r->nextents && off < r->extents[i]->hi ? i : r->nextents;
}

/* The extent of device d holding byte off, or NULL. */
static weft__extent *weft__extent_at(weft_buffer *root, unsigned d, size_t off)
{
    weft__replica *r = &root->replicas[d];
    size_t i = weft__extent_find(r, off);

    if (i == r->nextents)
        return NULL;
    r->hint = i;
    return r->extents[i];
}

weft__extent *weft__extent_covering(weft_buffer *root, unsigned d, size_t off,
                                    size_t size)
{
    weft__extent *x = weft__extent_at(root, d, off);

    return x && off + size <= x->hi ? x : NULL;
}

void weft__buffer_device_ptr(weft_buffer *root, unsigned device, size_t off,
                             weft__mem **mem, size_t *moff)
{
    /* A range of 0 bytes at the very end points just past the last. */
    weft__extent *x =
        weft__extent_at(root, device, off < root->size ? off : root->size - 1);

    weft__assert(x);
    *mem = x->blk.mem;
    *moff = x->blk.offset + (off - x->lo);
}

int weft__buffer_device_find(weft_buffer *root, unsigned device, size_t off,
                             size_t size, weft__mem **mem, size_t *moff)
{
    weft__extent *x;

    if (!root->replicas || !root->size)
        return 0;
    if (off >= root->size) { /* 0 bytes at the very end, as device_ptr */
        off = root->size - 1;
        size = 1;
    }
    x = weft__extent_covering(root, device, off, size);
    if (!x)
        return 0;
    *mem = x->blk.mem;
    *moff = x->blk.offset + (off - x->lo);
    return 1;
}

void weft__buffer_export(weft_buffer *root, unsigned device, size_t off,
                         size_t size)
{
    weft__extent *x = weft__extent_covering(
        root, device, off < root->size ? off : root->size - 1, size ? size : 1);

    weft__assert(x);
    __atomic_store_n(&x->exported, 1, __ATOMIC_RELAXED);
    root->exported = 1;
}

int weft__buffer_ipc_hold(weft_buffer *root, unsigned device, size_t off,
                          size_t size, int delta, weft__mem **mem, size_t *moff)
{
    weft__extent *x = root->replicas && root->size
                          ? weft__extent_covering(root, device, off, size)
                          : NULL;

    if (!x || (delta < 0 && x->ipc == 0))
        return weft__error(WEFT_ESTATE,
                           "no export of [%zu, %zu + %zu) is held on %s", off,
                           off, size, root->rt->devices[device]->name);
    __atomic_store_n(&x->ipc, x->ipc + (unsigned)delta, __ATOMIC_RELAXED);
    root->ipc_exports += delta;
    if (mem)
        *mem = x->blk.mem;
    if (moff)
        *moff = x->blk.offset + (off - x->lo);
    return 0;
}

static void weft__dev_link(weft_runtime *rt, weft__extent *x)
{
    weft__devmem *dm = &rt->devmem[x->device];

    pthread_mutex_lock(&dm->lock);
    x->dprev = NULL;
    x->dnext = dm->extents;
    if (dm->extents)
        dm->extents->dprev = x;
    dm->extents = x;
    pthread_mutex_unlock(&dm->lock);
}

static void weft__dev_unlink(weft_runtime *rt, weft__extent *x)
{
    weft__devmem *dm = &rt->devmem[x->device];

    pthread_mutex_lock(&dm->lock);
    if (x->dprev)
        x->dprev->dnext = x->dnext;
    else
        dm->extents = x->dnext;
    if (x->dnext)
        x->dnext->dprev = x->dprev;
    pthread_mutex_unlock(&dm->lock);
}

/* Take x off the device's list and free its block and x. */
static void weft__extent_release(weft_runtime *rt, weft__extent *x)
{
    weft__dev_unlink(rt, x);
    weft__pool_free(rt->devmem[x->device].pool, &x->blk);
    weft__free(x);
}

void weft__extent_detach(weft_buffer *root, weft__extent *x)
{
    weft__replica *r = &root->replicas[x->device];
    size_t i = weft__extent_index(r, x->lo);

    weft__assert(i < r->nextents && r->extents[i] == x);
    memmove(&r->extents[i], &r->extents[i + 1],
            (r->nextents - i - 1) * sizeof *r->extents);
    r->nextents--;
    weft__dev_unlink(root->rt, x);
}

void weft__extent_drop(weft_runtime *rt, weft__extent *x)
{
    weft__pool_free(rt->devmem[x->device].pool, &x->blk);
    weft__free(x);
}

void weft__extent_free(weft_buffer *root, weft__extent *x)
{
    weft__extent_detach(root, x);
    weft__extent_drop(root->rt, x);
}

void weft__buffer_free_replicas(weft_buffer *root)
{
    weft_runtime *rt = root->rt;

    for (unsigned d = 0; d < rt->ndevices; d++) {
        weft__replica *r = &root->replicas[d];

        if (r->wrapped) {
            /* The program's memory: weft's handle goes, the bytes stay. */
            weft__drv_mem_free(r->extents[0]->blk.mem);
            weft__free(r->extents[0]);
            r->nextents = 0;
            r->wrapped = 0;
        }
        while (r->nextents)
            weft__extent_release(rt, r->extents[--r->nextents]);
        weft__free(r->extents);
        r->extents = NULL;
        r->cap = 0;
        r->hint = 0;
        if (r->reg_busy) {
            pthread_join(r->reg_thread, NULL);
            r->reg_busy = 0;
        }
        if (r->reg && weft__drv_mem_free(r->reg) < 0)
            weft__warn("mem", "unregistering %zu bytes from %s: %s", root->size,
                       rt->devices[d]->name, weft_last_error());
        r->reg = NULL;
    }
}

/* ---- host side of copies ------------------------------------------------ */

/* The host copy's registration with d: 0, or a failure (reported). */
static int weft__register(weft_buffer *root, unsigned d, weft__context *ctx,
                          weft__mem **reg)
{
    weft_runtime *rt = root->rt;
    int rc = weft__drv_host_register(ctx, root->host, root->size, reg);

    if (rc < 0) {
        *reg = NULL;
        __atomic_store_n(&root->replicas[d].reg_failed, 1, __ATOMIC_RELEASE);
        weft__info("mem", "%zu bytes of user memory stay staged for %s: %s",
                   root->size, rt->devices[d]->name, weft_last_error());
        weft_clear_error();
        return rc;
    }
    return 0;
}

typedef struct weft__reg_job {
    weft_buffer *root;
    unsigned d;
    weft__context *ctx;
} weft__reg_job;

/*
 * A registering thread: the registration, published for the next copy
 * that looks (until then copies stage, as before). The root outlives it:
 * its replicas join this thread before they go.
 */
static void *weft__register_main(void *arg)
{
    weft__reg_job *j = arg;
    weft_buffer *root = j->root;
    weft__mem *reg;

    if (weft__register(root, j->d, j->ctx, &reg) == 0) {
        __atomic_store_n(&root->replicas[j->d].reg, reg, __ATOMIC_RELEASE);
        weft__stat_add(NULL, &root->rt->stats.registered_buffers, 1);
        weft__stat_add(NULL, &root->rt->stats.registered_bytes, root->size);
        weft__debug("mem", "%zu bytes of user memory registered for %s",
                    root->size, root->rt->devices[j->d]->name);
    }
    weft__free(j);
    return NULL;
}

/*
 * A wrapped buffer that crosses between its host memory and device d a
 * second time (more than its size moved, counted over every copy: a
 * launch that streams it in chunks crosses once) is registered with d
 * once: from then on its copies run at pinned speed without staging.
 * Refusal is not an error: it stays staged.
 * Registering pins every page, about 65 ms a GiB on an H100, and holds
 * up the device's other calls meanwhile (CUDA): a root of
 * WEFT__REGISTER_AHEAD bytes or more is registered by a thread of its own
 * while its copies go on staging; a smaller one here, at once.
 */
static void weft__maybe_register(weft_buffer *root, unsigned d, size_t len,
                                 weft__lanes *l)
{
    weft_runtime *rt = root->rt;
    weft__replica *r = &root->replicas[d];
    weft__device *dev = rt->devices[d];
    weft__context *ctx;
    weft__reg_job *j;
    weft__mem *reg;
    int rc;

    if (root->owned || r->reg_busy ||
        __atomic_load_n(&r->reg, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&r->reg_failed, __ATOMIC_ACQUIRE) ||
        (r->host_moved += len) <= root->size)
        return;
    /* Where device memory is host memory, registering buys nothing; memory
     * already pinned for d (weft_host_alloc's) needs none. */
    if (dev->drv->memory_is_host || !dev->props.host_register ||
        weft__host_block_pinned(rt, d, root->host, root->size)) {
        r->reg_failed = 1;
        return;
    }
    rc = weft__runtime_context(rt, d, &ctx);
    if (rc == 0 && weft__drv_host_is_pinned(ctx, root->host, root->size)) {
        r->reg_failed = 1;
        return;
    }
    if (rc < 0) {
        r->reg_failed = 1;
        weft_clear_error();
        return;
    }
    if (root->size >= WEFT__REGISTER_AHEAD && (j = weft__malloc(sizeof *j))) {
        *j = (weft__reg_job){root, d, ctx};
        if (weft__thread_start(&r->reg_thread, "weft-register",
                               "mem.register_thread", weft__register_main,
                               j) == 0) {
            r->reg_busy = 1;
            return;
        }
        weft__free(j); /* no thread: here, then */
    }
    weft_clear_error();
    if (weft__register(root, d, ctx, &reg) < 0)
        return;
    __atomic_store_n(&r->reg, reg, __ATOMIC_RELEASE);
    weft__lanes_stat(l, &rt->stats.registered_buffers, 1);
    weft__lanes_stat(l, &rt->stats.registered_bytes, root->size);
}

static void weft__count(weft__lanes *l, uint64_t *link, uint64_t *copies,
                        enum weft__cause cause, size_t len)
{
    weft_runtime *rt = l->rt;

    weft__lanes_stat(l, link, len);
    weft__lanes_stat(l, copies, 1);
    weft__lanes_stat(l,
                     cause == WEFT__CAUSE_READ   ? &rt->stats.read_bytes
                     : cause == WEFT__CAUSE_HOST ? &rt->stats.host_bytes
                                                 : &rt->stats.evict_bytes,
                     len);
}

int weft__replica_h2d(weft_buffer *root, unsigned d, weft__mem *dst,
                      size_t doff, size_t roff, const void *src, size_t len,
                      int from_copy, enum weft__cause cause, weft__lanes *l,
                      weft__queue **used)
{
    weft_runtime *rt = root->rt;
    weft__stager *s = NULL;
    weft__queue *q = NULL;
    int pinned, rc;

    if (from_copy)
        weft__maybe_register(root, d, len, l);
    pinned = (from_copy &&
              __atomic_load_n(&root->replicas[d].reg, __ATOMIC_ACQUIRE)) ||
             weft__drv_host_is_pinned(dst->ctx, src, len) ||
             weft__host_block_pinned(rt, d, src, len);
    if (!pinned && len >= WEFT__STAGE_MIN)
        s = weft__runtime_stager(rt, d);
    if ((rc = weft__lanes_get(l, d, WEFT__QUEUE_H2D, &q)) < 0)
        return rc;
    /*
     * The host copy may still be on its way in from another device: the
     * copy waits for it on q, or the host does where the stager reads the
     * bytes now, on this thread.
     */
    if (from_copy && (rc = weft__lanes_after(l, s ? NULL : q, root, WEFT__HOST,
                                             roff, len)) < 0)
        return rc;
    if (pinned) {
        rc = weft__submit_copy_h2d(l->submit, q, dst, doff, src, len);
        if (rc == 0)
            weft__lanes_stat(l, &rt->stats.pinned_bytes, len);
    } else if (s) {
        weft__lanes_host_effect(l);
        rc = weft__stager_h2d(s, l->submit, q, dst, doff, src, len);
        if (rc == 0)
            weft__lanes_stat(l, &rt->stats.staged_bytes, len);
    } else {
        rc = weft__submit_copy_h2d(l->submit, q, dst, doff, src, len);
    }
    /* Also after a failure: the chunks before it may still be running. */
    if (rc == 0)
        rc = weft__lanes_issued(l, q, root, d, roff, len);
    else
        weft__lanes_settle(l, q);
    if (rc == 0)
        weft__count(l, &rt->stats.h2d_bytes, &rt->stats.h2d_copies, cause, len);
    if (rc == 0 && used)
        *used = q;
    return rc;
}

/*
 * len bytes of (src, soff) on device d into host memory `to`, on q: in
 * place where the device copies into `to` directly (pinned: registered
 * with d, or memory the driver says is page-locked), else large copies
 * through the stager (without waiting, with asynchronous lanes: q's later
 * work runs once the bytes are in `to`), else directly (the driver deals
 * with pageable memory itself). A failure leaves nothing in flight that
 * the caller does not know of: q's earlier work, or nothing.
 */
static int weft__d2h_to(weft_runtime *rt, unsigned d, weft__queue *q, void *to,
                        int pinned, weft__mem *src, size_t soff, size_t len,
                        weft__lanes *l)
{
    weft__stager *s = NULL;
    int rc;

    if (pinned || weft__drv_host_is_pinned(src->ctx, to, len) ||
        weft__host_block_pinned(rt, d, to, len)) {
        rc = weft__submit_copy_d2h(l->submit, q, to, src, soff, len);
        if (rc == 0)
            weft__lanes_stat(l, &rt->stats.pinned_bytes, len);
    } else if (len >= WEFT__STAGE_MIN && (s = weft__runtime_stager(rt, d))) {
        weft__lanes_host_effect(l);
        rc = l->hooks
                 ? weft__stager_d2h_async(s, l->submit, q, to, src, soff, len)
                 : weft__stager_d2h(s, l->submit, q, to, src, soff, len);
        if (rc == 0)
            weft__lanes_stat(l, &rt->stats.staged_bytes, len);
    } else {
        rc = weft__submit_copy_d2h(l->submit, q, to, src, soff, len);
    }
    return rc;
}

int weft__replica_d2h(weft_buffer *root, unsigned d, weft__mem *src,
                      size_t soff, size_t off, size_t len,
                      enum weft__cause cause, weft__lanes *l)
{
    weft_runtime *rt = root->rt;
    weft__queue *q = NULL;
    int rc;

    weft__maybe_register(root, d, len, l);
    if ((rc = weft__lanes_get(l, d, WEFT__QUEUE_D2H, &q)) < 0 ||
        (rc = weft__lanes_after(l, q, root, d, off, len)) < 0 ||
        (rc = weft__lanes_after(l, q, root, WEFT__HOST, off, len)) < 0)
        return rc;
    rc = weft__d2h_to(
        rt, d, q, root->host + off,
        __atomic_load_n(&root->replicas[d].reg, __ATOMIC_ACQUIRE) != NULL, src,
        soff, len, l);
    /* Pending on q's lane until known complete: later readers of these
     * host bytes are ordered after it. */
    if (rc == 0)
        rc = weft__lanes_issued(l, q, root, WEFT__HOST, off, len);
    else
        weft__lanes_settle(l, q);
    if (rc == 0)
        weft__count(l, &rt->stats.d2h_bytes, &rt->stats.d2h_copies, cause, len);
    return rc;
}

/*
 * The bytes [off, off + len) valid on device d (they lie in its extents,
 * maybe several adjacent ones) into the host copy.
 */
static int weft__device_to_host(weft_buffer *root, unsigned d, size_t off,
                                size_t len, enum weft__cause cause,
                                weft__lanes *l)
{
    size_t end = off + len;

    while (off < end) {
        weft__extent *x = weft__extent_at(root, d, off);
        size_t piece;
        int rc;

        weft__assert(x);
        piece = WEFT__MIN(end, x->hi) - off;
        rc = weft__replica_d2h(root, d, x->blk.mem,
                               x->blk.offset + (off - x->lo), off, piece, cause,
                               l);
        if (rc < 0)
            return rc;
        off += piece;
    }
    return 0;
}

/* ---- moves -------------------------------------------------------------- */

/*
 * Carry out one transfer of the tracker into the range's extent on the
 * destination (which the caller made). Does not update the tracker, except
 * that a move between devices that cannot reach each other leaves the
 * bytes valid in the host copy it went through. h2d, unless NULL: the
 * queue of a copy from the host copy (src the host). Called by
 * weft__ready only, with the lanes' source set to root.
 */
static int weft__move(weft_buffer *root, const weft__coherence_transfer *t,
                      enum weft__cause cause, weft__lanes *l, weft__queue **h2d)
{
    weft_runtime *rt = root->rt;
    unsigned sd = t->src - 1, dd = t->dst - 1;
    weft__extent *y;
    int rc;

    if (t->dst == WEFT__COH_HOST)
        return weft__device_to_host(root, sd, t->off, t->len, cause, l);
    y = weft__extent_covering(root, dd, t->off, t->len);
    weft__assert(y);
    if (t->src != WEFT__COH_HOST && !rt->peer[sd * rt->ndevices + dd]) {
        rc = weft__device_to_host(root, sd, t->off, t->len, cause, l);
        if (rc == 0 && weft__coherence_reserve(&root->coh, 4) == 0)
            weft__coherence_mark_valid(&root->coh, WEFT__COH_HOST, t->off,
                                       t->len);
        if (rc < 0)
            return rc;
    }
    if (t->src == WEFT__COH_HOST || !rt->peer[sd * rt->ndevices + dd]) {
        /* (Through the host: the second leg's source is the host copy,
         * whose bytes the first leg brings; it waits for that copy.) */
        if (t->src != WEFT__COH_HOST)
            weft__lanes_source(l, root, 1);
        rc = weft__replica_h2d(root, dd, y->blk.mem,
                               y->blk.offset + (t->off - y->lo), t->off,
                               root->host + t->off, t->len, 1, cause, l,
                               t->src == WEFT__COH_HOST ? h2d : NULL);
        if (t->src != WEFT__COH_HOST)
            weft__lanes_source(l, root, 0);
        return rc;
    }
    for (size_t off = t->off, end = t->off + t->len; off < end;) {
        weft__extent *x = weft__extent_at(root, sd, off);
        weft__queue *q = NULL;
        size_t piece;

        weft__assert(x);
        piece = WEFT__MIN(end, x->hi) - off;
        rc = weft__lanes_get(l, dd, WEFT__QUEUE_PEER, &q);
        if (rc == 0)
            rc = weft__lanes_after(l, q, root, sd, off, piece);
        if (rc == 0)
            rc = weft__submit_copy_peer(
                l->submit, q, y->blk.mem, y->blk.offset + (off - y->lo),
                x->blk.mem, x->blk.offset + (off - x->lo), piece);
        if (rc == 0)
            rc = weft__lanes_issued(l, q, root, dd, off, piece);
        if (rc < 0)
            return rc;
        weft__count(l, &rt->stats.peer_bytes, &rt->stats.peer_copies, cause,
                    piece);
        off += piece;
    }
    return 0;
}

/*
 * 1 if root gets one extent on device d, the whole root, rather than the
 * aligned ranges its nodes touch: it is small, for the device and in
 * itself (an eighth of the memory at most, so that eviction still has
 * room to work with). Then every lookup hits the one extent, and the first
 * node that needs the root there brings all of it over at once.
 */
static int weft__extent_whole(const weft_buffer *root, unsigned d)
{
    const weft_runtime *rt = root->rt;
    uint64_t mem = rt->devices[d]->props.global_mem;

    if (rt->device_mem_limit && (!mem || rt->device_mem_limit < mem))
        mem = rt->device_mem_limit;
    return root->size <= WEFT__EXTENT_WHOLE && root->size <= mem / 8;
}

void weft__extent_bounds(const weft_buffer *root, unsigned d, size_t off,
                         size_t size, size_t *lo, size_t *hi)
{
    if (weft__extent_whole(root, d)) {
        *lo = 0;
        *hi = root->size;
    } else {
        *lo = off - off % WEFT__EXTENT_ALIGN;
        *hi = off + size;
        *hi = *hi > root->size - root->size % WEFT__EXTENT_ALIGN
                  ? root->size
                  : (*hi + WEFT__EXTENT_ALIGN - 1) / WEFT__EXTENT_ALIGN *
                        WEFT__EXTENT_ALIGN;
    }
}

/*
 * The extents of r that [lo, hi) touches: [return, *i1) (disjoint and
 * sorted, so the first and the last of them say how far they reach).
 */
static size_t weft__extent_span(const weft__replica *r, size_t lo, size_t hi,
                                size_t *i1)
{
    size_t i0 = weft__extent_index(r, lo);

    i0 = i0 == r->nextents ? 0 : i0 + (r->extents[i0]->hi <= lo);
    for (*i1 = i0; *i1 < r->nextents && r->extents[*i1]->lo < hi; ++*i1)
        ;
    return i0;
}

/*
 * The bytes of extents [i0, i1) of device d's replica into new extent n
 * (which covers them), once the work in flight that may use them has
 * ended; waits for the copies. The extents stay as they were.
 */
static int weft__extent_absorb(weft_buffer *root, unsigned d, weft__extent *n,
                               size_t i0, size_t i1, weft__lanes *l)
{
    weft__replica *r = &root->replicas[d];
    weft__queue *q = NULL;
    int rc = 0;

    for (size_t i = i0; i < i1; i++) {
        weft__extent *x = r->extents[i];

        /* Work in flight may still use the extents that go: let it end. */
        if (!q)
            rc = weft__lanes_drain(l);
        if (rc == 0)
            rc = weft__lanes_get(l, d, WEFT__QUEUE_COMPUTE, &q);
        if (rc == 0)
            rc = weft__submit_copy_d2d(
                l->submit, q, n->blk.mem, n->blk.offset + (x->lo - n->lo),
                x->blk.mem, x->blk.offset, x->hi - x->lo);
        if (rc < 0)
            break;
    }
    if (rc == 0 && q)
        rc = weft__lanes_sync(l->submit, q);
    return rc;
}

int weft__extent_ensure(weft_buffer *root, unsigned d, size_t off, size_t size,
                        weft__lanes *l, weft__extent **out, int *made)
{
    weft_runtime *rt = root->rt;
    weft__replica *r = &root->replicas[d];
    weft__extent *x, *n;
    size_t lo, hi, i0, i1, i;
    int rc = 0;

    *made = 0;
    if (size == 0) {
        off = off < root->size ? off : root->size - 1;
        size = 1;
    }
    if ((x = weft__extent_covering(root, d, off, size))) {
        x->pin = root->epoch;
        x->last_use = __atomic_load_n(&rt->tick, __ATOMIC_RELAXED);
        *made = x->made == root->epoch;
        *out = x;
        return 0;
    }
    /* Room for the new extent's entry first: nothing fails after the
     * copies below. */
    if (r->nextents == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 4;
        weft__extent **xs = weft__realloc(r->extents, cap * sizeof *xs);

        if (!xs)
            return weft__error(WEFT_ENOMEM, "an extent: out of memory");
        r->extents = xs;
        r->cap = cap;
    }
    weft__extent_bounds(root, d, off, size, &lo, &hi);
    /*
     * Widen over the extents it touches, [i0, i1); pin them, so that
     * eviction keeps their bytes for the copy below.
     */
    i0 = weft__extent_span(r, lo, hi, &i1);
    for (i = i0; i < i1; i++)
        if (r->extents[i]->ipc)
            return weft__error(
                WEFT_EBUSY,
                "[%zu, %zu + %zu) on %s needs the extent [%zu, %zu) moved into "
                "a wider one, but another process may write it (an export, "
                "weft_buffer_export, holds it there)",
                off, off, size, rt->devices[d]->name, r->extents[i]->lo,
                r->extents[i]->hi);
    for (i = i0; i < i1; i++)
        r->extents[i]->pin = root->epoch;
    if (i1 > i0) {
        lo = WEFT__MIN(lo, r->extents[i0]->lo);
        hi = WEFT__MAX(hi, r->extents[i1 - 1]->hi);
    }
    n = weft__calloc(1, sizeof *n);
    if (!n)
        return weft__error(WEFT_ENOMEM, "an extent: out of memory");
    if ((rc = weft__block_alloc(rt, d, hi - lo, l, &n->blk)) < 0) {
        weft__free(n);
        return rc;
    }
    /* Eviction for the block above may have freed unpinned extents. */
    i0 = weft__extent_span(r, lo, hi, &i1);
    n->root = root;
    n->device = d;
    n->lo = lo;
    n->hi = hi;
    if ((rc = weft__extent_absorb(root, d, n, i0, i1, l)) < 0) {
        weft__pool_free(rt->devmem[d].pool, &n->blk);
        weft__free(n);
        return rc;
    }
    for (i = i0; i < i1; i++)
        weft__extent_release(rt, r->extents[i]);
    /* n takes the place of [i0, i1): one entry, reserved above. */
    memmove(&r->extents[i0 + 1], &r->extents[i1],
            (r->nextents - i1) * sizeof *r->extents);
    r->extents[i0] = n;
    r->nextents = r->nextents - (i1 - i0) + 1;
    r->hint = i0;
    weft__dev_link(rt, n);
    n->pin = n->made = root->epoch;
    n->last_use = __atomic_load_n(&rt->tick, __ATOMIC_RELAXED);
    *out = n;
    *made = 1;
    return 0;
}

/* ---- the interface --------------------------------------------------------
 */

/*
 * Block copies: rows runs of len bytes, pitch apart, from off of the root,
 * in one 2-D copy of the driver's (a submission without one copies them
 * row by row). Both sides keep the root's layout, so the pitches are the
 * block's on both. Lane bookkeeping (after, issued) covers the block's
 * span, a superset of its bytes: a later copy of bytes between its rows
 * may wait for it, never the reverse.
 */
static weft__rect weft__block_rect(size_t doff, size_t soff, size_t len,
                                   size_t rows, size_t pitch)
{
    weft__rect r = {{doff, pitch, 0}, {soff, pitch, 0}, len, rows, 1};
    return r;
}

static size_t weft__block_span(const weft__coherence_transfer *t)
{
    return (t->rows - 1) * t->pitch + t->len;
}

/*
 * How a block moves between the host copy and device d (weft__host_mode):
 * directly from pinned memory, directly from memory the driver copies
 * as it is, or packed through the stager's pinned buffers.
 */
enum weft__host_mode {
    WEFT__HOST_STAGED,
    WEFT__HOST_DIRECT,
    WEFT__HOST_PINNED
};

static int weft__h2d_block(weft_buffer *root, unsigned d, weft__extent *y,
                           const weft__coherence_transfer *t,
                           enum weft__host_mode mode, enum weft__cause cause,
                           weft__lanes *l)
{
    weft_runtime *rt = root->rt;
    size_t span = weft__block_span(t), bytes = t->len * t->rows;
    weft__rect r = weft__block_rect(y->blk.offset + (t->off - y->lo), t->off,
                                    t->len, t->rows, t->pitch);
    weft__stager *s =
        mode == WEFT__HOST_STAGED ? weft__runtime_stager(rt, d) : NULL;
    weft__queue *q = NULL;
    int rc;

    /* The stager reads the host copy now, on this thread: it waits here
     * for bytes still on their way into it (see weft__replica_h2d). */
    if ((rc = weft__lanes_get(l, d, WEFT__QUEUE_H2D, &q)) < 0 ||
        (rc = weft__lanes_after(l, s ? NULL : q, root, WEFT__HOST, t->off,
                                span)) < 0)
        return rc;
    if (s) {
        weft__lanes_host_effect(l);
        rc = weft__stager_h2d_rect(s, l->submit, q, y->blk.mem, root->host, &r);
    } else {
        rc = weft__submit_copy_h2d_rect(l->submit, q, y->blk.mem, root->host,
                                        &r);
    }
    if (rc == 0) {
        weft__lanes_moved(l, bytes);
        rc = weft__lanes_issued(l, q, root, d, t->off, span);
    } else {
        weft__lanes_settle(l, q);
    }
    if (rc == 0) {
        if (mode == WEFT__HOST_PINNED)
            weft__lanes_stat(l, &rt->stats.pinned_bytes, bytes);
        else if (s)
            weft__lanes_stat(l, &rt->stats.staged_bytes, bytes);
        weft__count(l, &rt->stats.h2d_bytes, &rt->stats.h2d_copies, cause,
                    bytes);
    }
    return rc;
}

static int weft__d2h_block(weft_buffer *root, unsigned d, weft__extent *x,
                           const weft__coherence_transfer *t,
                           enum weft__host_mode mode, enum weft__cause cause,
                           weft__lanes *l)
{
    weft_runtime *rt = root->rt;
    size_t span = weft__block_span(t), bytes = t->len * t->rows;
    weft__rect r = weft__block_rect(t->off, x->blk.offset + (t->off - x->lo),
                                    t->len, t->rows, t->pitch);
    weft__stager *s =
        mode == WEFT__HOST_STAGED ? weft__runtime_stager(rt, d) : NULL;
    weft__queue *q = NULL;
    int rc;

    if ((rc = weft__lanes_get(l, d, WEFT__QUEUE_D2H, &q)) < 0 ||
        (rc = weft__lanes_after(l, q, root, d, t->off, span)) < 0 ||
        (rc = weft__lanes_after(l, q, root, WEFT__HOST, t->off, span)) < 0)
        return rc;
    if (s) {
        /* as weft__d2h_to: without waiting where the lanes are
         * asynchronous */
        weft__lanes_host_effect(l);
        rc = weft__stager_d2h_rect(s, l->submit, q, root->host, x->blk.mem, &r,
                                   l->hooks != NULL);
    } else {
        rc = weft__submit_copy_d2h_rect(l->submit, q, root->host, x->blk.mem,
                                        &r);
    }
    if (rc == 0) {
        weft__lanes_moved(l, bytes);
        rc = weft__lanes_issued(l, q, root, WEFT__HOST, t->off, span);
    } else {
        weft__lanes_settle(l, q);
    }
    if (rc == 0) {
        if (mode == WEFT__HOST_PINNED)
            weft__lanes_stat(l, &rt->stats.pinned_bytes, bytes);
        else if (s)
            weft__lanes_stat(l, &rt->stats.staged_bytes, bytes);
        weft__count(l, &rt->stats.d2h_bytes, &rt->stats.d2h_copies, cause,
                    bytes);
    }
    return rc;
}

static int weft__peer_block(weft_buffer *root, unsigned sd, weft__extent *x,
                            unsigned dd, weft__extent *y,
                            const weft__coherence_transfer *t,
                            enum weft__cause cause, weft__lanes *l)
{
    weft_runtime *rt = root->rt;
    size_t span = weft__block_span(t), bytes = t->len * t->rows;
    weft__rect r = weft__block_rect(y->blk.offset + (t->off - y->lo),
                                    x->blk.offset + (t->off - x->lo), t->len,
                                    t->rows, t->pitch);
    weft__queue *q = NULL;
    int rc;

    if ((rc = weft__lanes_get(l, dd, WEFT__QUEUE_PEER, &q)) < 0 ||
        (rc = weft__lanes_after(l, q, root, sd, t->off, span)) < 0)
        return rc;
    rc = weft__submit_copy_peer_rect(l->submit, q, y->blk.mem, x->blk.mem, &r);
    if (rc == 0) {
        weft__lanes_moved(l, bytes);
        rc = weft__lanes_issued(l, q, root, dd, t->off, span);
    }
    if (rc == 0)
        weft__count(l, &rt->stats.peer_bytes, &rt->stats.peer_copies, cause,
                    bytes);
    return rc;
}

/*
 * How d moves a block from and into the root's host copy, or -1 where it
 * goes row by row: pinned (registered, or memory the driver or
 * weft_host_alloc says is page-locked); directly where the device reaches
 * host memory as it is (the host and sim drivers) or the span is too
 * small to stage (the driver deals with pageable memory itself, as for
 * ranges); else through the device's stager (a pageable 2-D copy of the
 * driver's runs far below the link's speed: tiles of 16 KiB rows at
 * well under 1 GB/s on an H100); without one, directly where rows are short,
 * else rows.
 */
static int weft__host_mode_for(weft_buffer *root, unsigned d, size_t off,
                               size_t span, size_t row, weft__mem *mem)
{
    weft_runtime *rt = root->rt;

    if (__atomic_load_n(&root->replicas[d].reg, __ATOMIC_ACQUIRE) ||
        weft__drv_host_is_pinned(mem->ctx, root->host + off, span) ||
        weft__host_block_pinned(rt, d, root->host + off, span))
        return WEFT__HOST_PINNED;
    if (span < WEFT__STAGE_MIN || rt->devices[d]->drv->memory_is_host)
        return WEFT__HOST_DIRECT;
    if (weft__runtime_stager(rt, d))
        return WEFT__HOST_STAGED;
    return row < WEFT__STAGE_MIN ? WEFT__HOST_DIRECT : -1;
}

/*
 * The rows of block t, from its first, whose span lies in one extent on
 * each device side (0 where the first row itself does not).
 */
static size_t weft__block_rows_held(weft_buffer *root,
                                    const weft__coherence_transfer *t)
{
    size_t k = t->rows;

    for (int side = 0; side < 2; side++) {
        unsigned m = side ? t->dst : t->src;
        weft__extent *x;

        if (m == WEFT__COH_HOST)
            continue;
        x = weft__extent_at(root, m - 1, t->off);
        if (!x || t->off + t->len > x->hi)
            return 0;
        k = WEFT__MIN(k, (x->hi - t->off - t->len) / t->pitch + 1);
    }
    return k;
}

/*
 * A transfer of the tracker, a range or a block. A block moves as a
 * block where its span lies in one extent on each device side: by one
 * 2-D copy of the driver's, or where the host copy takes part and is
 * pageable, packed through the stager (weft__host_mode_for); else row by
 * row through weft__move.
 * Devices without a peer path go through the host copy, a block each way.
 */
static int weft__move_any(weft_buffer *root, const weft__coherence_transfer *t,
                          enum weft__cause cause, weft__lanes *l,
                          weft__queue **h2d)
{
    weft_runtime *rt = root->rt;
    weft__coherence_transfer row = *t;
    size_t span, k;
    int rc = 0;

    if (t->rows <= 1)
        return weft__move(root, t, cause, l, h2d);
    /*
     * A block whose rows lie in several extents of a device (tiles of
     * one column valid there from different times, joined by the
     * tracker) goes as the blocks each extent holds, one after another
     * (a row that itself straddles two goes as a range).
     */
    if ((k = weft__block_rows_held(root, t)) < t->rows) {
        weft__coherence_transfer rest = *t;

        while (rc == 0 && rest.rows) {
            weft__coherence_transfer head = rest;

            k = weft__block_rows_held(root, &rest);
            head.rows = k ? k : 1;
            if (k == rest.rows)
                return weft__move_any(root, &rest, cause, l, h2d);
            if (k) {
                rc = weft__move_any(root, &head, cause, l, h2d);
            } else {
                head.pitch = 0;
                rc = weft__move(root, &head, cause, l, h2d);
            }
            rest.rows -= head.rows;
            rest.off += head.rows * rest.pitch;
        }
        return rc;
    }
    span = weft__block_span(t);
    if (t->src == WEFT__COH_HOST) {
        weft__extent *y = weft__extent_covering(root, t->dst - 1, t->off, span);
        int mode;

        weft__maybe_register(root, t->dst - 1, t->len * t->rows, l);
        if (y && !h2d &&
            (mode = weft__host_mode_for(root, t->dst - 1, t->off, span, t->len,
                                        y->blk.mem)) >= 0)
            return weft__h2d_block(root, t->dst - 1, y, t, mode, cause, l);
    } else if (t->dst == WEFT__COH_HOST) {
        weft__extent *x = weft__extent_covering(root, t->src - 1, t->off, span);
        int mode;

        weft__maybe_register(root, t->src - 1, t->len * t->rows, l);
        if (x && (mode = weft__host_mode_for(root, t->src - 1, t->off, span,
                                             t->len, x->blk.mem)) >= 0)
            return weft__d2h_block(root, t->src - 1, x, t, mode, cause, l);
    } else if (rt->peer[(t->src - 1) * rt->ndevices + t->dst - 1]) {
        weft__extent *x = weft__extent_covering(root, t->src - 1, t->off, span);
        weft__extent *y = weft__extent_covering(root, t->dst - 1, t->off, span);

        if (x && y)
            return weft__peer_block(root, t->src - 1, x, t->dst - 1, y, t,
                                    cause, l);
    } else {
        /*
         * No path between the devices: through the host copy, as a block
         * each way (the bytes are valid there after the first leg; the
         * second waits for them, as weft__move's range does).
         */
        weft__coherence_transfer leg = *t;
        weft__region g = {t->off, t->len, t->rows, t->pitch};

        leg.dst = WEFT__COH_HOST;
        rc = weft__move_any(root, &leg, cause, l, NULL);
        if (rc == 0)
            rc = weft__coherence_mark_valid_region(&root->coh, WEFT__COH_HOST,
                                                   &g);
        if (rc < 0)
            return rc;
        leg = *t;
        leg.src = WEFT__COH_HOST;
        weft__lanes_source(l, root, 1);
        rc = weft__move_any(root, &leg, cause, l, h2d);
        weft__lanes_source(l, root, 0);
        return rc;
    }
    row.rows = 1;
    row.pitch = 0;
    for (size_t i = 0; i < t->rows && rc == 0; i++) {
        row.off = t->off + i * t->pitch;
        rc = weft__move(root, &row, cause, l, h2d);
    }
    return rc;
}

int weft__replica_d2h_block(weft_buffer *root, unsigned d,
                            const weft__region *g, enum weft__cause cause,
                            weft__lanes *l)
{
    weft__coherence_transfer t = {1 + d, WEFT__COH_HOST, g->off,
                                  g->w,  g->h,           g->p};

    return weft__move_any(root, &t, cause, l, NULL);
}

static weft__region weft__transfer_region(const weft__coherence_transfer *t)
{
    weft__region g = {t->off, t->len, t->rows ? t->rows : 1,
                      t->rows > 1 ? t->pitch : 0};
    return g;
}

/* Moves what read asked for, marking each valid on m once it went. */
/*
 * host_only (the widened read of a whole small root): the copies from the
 * host copy only, and wide gets the queue of one that goes beyond [lo, hi).
 */
static int weft__move_all(weft_buffer *root, unsigned m, enum weft__cause cause,
                          weft__lanes *l, weft__queue **wide, int host_only,
                          size_t lo, size_t hi)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < l->tr.count; i++) {
        weft__coherence_transfer t = l->tr.items[i];
        weft__region g = weft__transfer_region(&t);

        if (host_only && t.src != WEFT__COH_HOST)
            continue;
        /* A copy of bytes the node reads: it waits for their writers
         * only (see weft__lane_hooks.source). */
        weft__lanes_source(l, root, t.src == WEFT__COH_HOST);
        rc = weft__move_any(
            root, &t, cause, l,
            host_only && (g.off < lo || weft__region_end(&g) > hi) ? wide
                                                                   : NULL);
        if (rc == 0)
            rc = weft__coherence_mark_valid_region(&root->coh, m, &g);
    }
    weft__lanes_source(l, NULL, 0);
    return rc;
}

static int weft__ready(weft_buffer *root, unsigned where, const weft__region *r,
                       int need, weft__lanes *l)
{
    weft_runtime *rt = root->rt;
    unsigned m = weft__mem_index(where);
    enum weft__cause cause =
        where == WEFT__HOST ? WEFT__CAUSE_HOST : WEFT__CAUSE_READ;
    weft__extent *x;
    weft__queue *wide = NULL;
    size_t off = r->off, end = weft__region_end(r);
    uint64_t moved = 0, size = weft__region_bytes(r);
    int rc, made = 0, whole;

    /* The block's whole span in one extent: it keeps the root's layout. */
    if (where != WEFT__HOST &&
        (rc = weft__extent_ensure(root, where, off, end - off, l, &x, &made)) <
            0)
        return rc;
    /*
     * A tiny range of a small root, which a new extent of the whole root
     * is made for (the root's first use on the device): every byte of the
     * root that the device lacks and whose cheapest source is the host
     * copy comes over with it, in one copy. A copy this small costs its
     * fixed price, not its bytes, and a root touched in tiny ranges would
     * pay it once per range; the whole of a root this small costs about
     * one such price more, once (see WEFT__WIDEN_*). Larger ranges move
     * only what they lack, so that they overlap the kernels before them.
     * Only from the host copy: its bytes are current once the copies still
     * on their way into it land (h2d orders after those), whereas a
     * device's may still be written by work this node is not ordered
     * after; the range's own bytes from other memories come after, by a
     * read of the range alone. And waited for (wide): no node is ordered
     * after this read of the bytes beyond the range, so a later writer of
     * them (in the host copy, or on the device, say by a peer copy) would
     * not wait for it. The wait is once per root and device, and the lane
     * it waits for has little on it at a root's first use, as a rule.
     */
    whole = made && need && size && r->h == 1 && size <= WEFT__WIDEN_RANGE &&
            root->size <= WEFT__WIDEN_ROOT && x->lo == 0 &&
            x->hi == root->size &&
            !__atomic_load_n(&root->host_writers, __ATOMIC_ACQUIRE);
    if (need && size) {
        /* The range's missing bytes, whichever copy brings them. */
        rc = weft__coherence_read_region(&root->coh, m, r, weft__cost, rt,
                                         &l->tr);
        for (size_t i = 0; rc == 0 && i < l->tr.count; i++)
            moved += (uint64_t)l->tr.items[i].len *
                     (l->tr.items[i].rows ? l->tr.items[i].rows : 1);
        if (rc == 0 && whole) {
            weft__region all = weft__region_range(0, root->size);

            rc = weft__coherence_read_region(&root->coh, m, &all, weft__cost,
                                             rt, &l->tr);
            if (rc == 0)
                rc = weft__move_all(root, m, cause, l, &wide, 1, off, end);
            if (rc == 0)
                rc = weft__coherence_read_region(&root->coh, m, r, weft__cost,
                                                 rt, &l->tr);
        }
        if (rc == 0)
            rc = weft__move_all(root, m, cause, l, NULL, 0, off, end);
        /* Synchronous lanes waited already. */
        if (wide && l->hooks) {
            int wrc = weft__lanes_sync(l->submit, wide);

            if (rc == 0)
                rc = wrc;
        }
        if (rc < 0)
            return rc;
        weft__lanes_stat(l, &rt->stats.cached_bytes, size - moved);
    }
    /* The node's later write of the region needs no memory (coherence.h). */
    if ((rc = weft__coherence_cut(&root->coh, r)) < 0)
        return rc;
    return weft__coherence_reserve(&root->coh, 4);
}

int weft__buffer_make_valid(weft_buffer *root, unsigned where, size_t off,
                            size_t size, weft__lanes *l)
{
    weft__region r = weft__region_range(off, size);

    return weft__ready(root, where, &r, 1, l);
}

int weft__buffer_prepare(weft_buffer *root, unsigned where, size_t off,
                         size_t size, weft__lanes *l)
{
    weft__region r = weft__region_range(off, size);

    return weft__ready(root, where, &r, 0, l);
}

int weft__buffer_make_valid_region(weft_buffer *root, unsigned where,
                                   const weft__region *r, weft__lanes *l)
{
    return weft__ready(root, where, r, 1, l);
}

int weft__buffer_prepare_region(weft_buffer *root, unsigned where,
                                const weft__region *r, weft__lanes *l)
{
    return weft__ready(root, where, r, 0, l);
}

void weft__buffer_written_region(weft_buffer *root, unsigned where,
                                 const weft__region *r)
{
    int rc;

    if (weft__region_bytes(r) == 0)
        return;
    rc = weft__coherence_write_region(&root->coh, weft__mem_index(where), r);
    weft__assert(rc == 0);
    (void)rc;
}

int weft__buffer_cut_region(weft_buffer *root, const weft__region *r)
{
    return weft__coherence_cut(&root->coh, r);
}

int weft__buffer_is_valid_region(const weft_buffer *root, unsigned where,
                                 const weft__region *r)
{
    return weft__coherence_is_valid_region(&root->coh, weft__mem_index(where),
                                           r);
}

int weft__buffer_held_alone_region(const weft_buffer *root, unsigned where,
                                   const weft__region *r)
{
    return r->h == 1 && weft__coherence_held_alone(
                            &root->coh, weft__mem_index(where), r->off, r->w);
}

void weft__buffer_written(weft_buffer *root, unsigned where, size_t off,
                          size_t size)
{
    weft__region r = weft__region_range(off, size);

    weft__buffer_written_region(root, where, &r);
}

void weft__buffer_discard_region(weft_buffer *root, unsigned where,
                                 const weft__region *r)
{
    /* What m holds alone stays: there is nothing better to keep. */
    if (weft__region_bytes(r) &&
        weft__coherence_drop_shared(&root->coh, weft__mem_index(where), r) < 0)
        weft__warn("mem", "failed write of [%zu, +%zu): %s", r->off, r->w,
                   weft_last_error());
}

void weft__buffer_discard(weft_buffer *root, unsigned where, size_t off,
                          size_t size)
{
    weft__region r = weft__region_range(off, size);

    weft__buffer_discard_region(root, where, &r);
}

unsigned weft__buffer_device_holding(const weft_buffer *root, size_t off,
                                     size_t size)
{
    uint64_t h = weft__coherence_holders(&root->coh, off, size);

    for (unsigned d = 0; d < root->rt->ndevices; d++) {
        const weft__replica *r = &root->replicas[d];
        size_t i;

        if (!(h >> (d + 1) & 1))
            continue;
        i = weft__extent_find(r, off);
        if (i < r->nextents && off + size <= r->extents[i]->hi)
            return d;
    }
    return WEFT__HOST;
}

int weft__buffer_load(weft_buffer *root, size_t off, void *dst, size_t size,
                      weft__lanes *l)
{
    int rc;

    if (size == 0)
        return 0;
    if ((rc = weft__buffer_make_valid(root, WEFT__HOST, off, size, l)) < 0 ||
        (rc = weft__lanes_after(l, NULL, root, WEFT__HOST, off, size)) < 0)
        return rc;
    weft__lanes_host_effect(l);
    memmove(dst, root->host + off, size);
    return 0;
}

int weft__buffer_load_direct(weft_buffer *root, size_t off, void *dst,
                             size_t size, weft__lanes *l)
{
    weft_runtime *rt = root->rt;
    weft__queue *q = NULL;
    weft__extent *x;
    unsigned d;
    int rc;

    /* Bytes the host copy holds are copied from there, the cheapest. */
    if (size == 0 || weft__buffer_is_valid(root, WEFT__HOST, off, size))
        return 0;
    if ((d = weft__buffer_device_holding(root, off, size)) == WEFT__HOST)
        return 0;
    x = weft__extent_covering(root, d, off, size);
    x->pin = root->epoch;
    x->last_use = __atomic_load_n(&rt->tick, __ATOMIC_RELAXED);
    if ((rc = weft__lanes_get(l, d, WEFT__QUEUE_D2H, &q)) < 0 ||
        (rc = weft__lanes_after(l, q, root, d, off, size)) < 0)
        return rc;
    rc = weft__d2h_to(rt, d, q, dst, 0, x->blk.mem,
                      x->blk.offset + (off - x->lo), size, l);
    /* The caller's memory is no copy of the root's: nothing pending (no
     * root), only the bytes, for the plan's counts and traces. */
    if (rc == 0)
        rc = weft__lanes_issued(l, q, NULL, WEFT__HOST, 0, size);
    else
        weft__lanes_settle(l, q);
    if (rc < 0)
        return rc;
    weft__count(l, &rt->stats.d2h_bytes, &rt->stats.d2h_copies,
                WEFT__CAUSE_HOST, size);
    return 1;
}

int weft__buffer_copy(weft_buffer *dst, size_t doff, weft_buffer *src,
                      size_t soff, size_t size, unsigned device, weft__lanes *l)
{
    weft__mem *dm, *sm;
    size_t dmo, smo;
    weft__queue *q = NULL;
    int rc;

    if (size == 0)
        return 0;
    if (device == WEFT__HOST) {
        rc = weft__buffer_make_valid(src, WEFT__HOST, soff, size, l);
        if (rc == 0)
            rc = weft__lanes_after(l, NULL, src, WEFT__HOST, soff, size);
        return rc < 0 ? rc
                      : weft__buffer_store(dst, doff, src->host + soff, size,
                                           WEFT__HOST, l);
    }
    {
        /* Room for both ranges at once (they may share a root). */
        weft__span spans[2] = {{src, soff, size}, {dst, doff, size}};

        rc = weft__buffer_hold(spans, 2, device, l);
    }
    if (rc == 0)
        rc = weft__buffer_make_valid(src, device, soff, size, l);
    if (rc == 0)
        rc = weft__buffer_prepare(dst, device, doff, size, l);
    if (rc != 0)
        return rc;
    /* After both: readying dst may have merged src's extent. */
    weft__buffer_device_ptr(src, device, soff, &sm, &smo);
    weft__buffer_device_ptr(dst, device, doff, &dm, &dmo);
    rc = weft__lanes_get(l, device, WEFT__QUEUE_COMPUTE, &q);
    if (rc == 0)
        rc = weft__lanes_after(l, q, src, device, soff, size);
    if (rc == 0)
        rc = weft__lanes_after(l, q, dst, device, doff, size);
    if (rc == 0)
        rc = weft__submit_copy_d2d(l->submit, q, dm, dmo, sm, smo, size);
    if (rc == 0)
        rc = weft__lanes_issued(l, q, dst, device, doff, size);
    if (rc == 0)
        weft__buffer_written(dst, device, doff, size);
    else
        weft__buffer_discard(dst, device, doff, size);
    return rc;
}

/*
 * Append v's bytes at *pos of out (of cap bytes) where they fit; *pos
 * counts them either way.
 */
static void weft__state_put(unsigned char *out, size_t cap, size_t *pos,
                            const void *v, size_t n)
{
    if (*pos + n <= cap)
        memcpy(out + *pos, v, n);
    *pos += n;
}

size_t weft__buffer_state(weft_buffer *root, unsigned char *out, size_t cap)
{
    size_t pos = 0, n;

    /* The tracker's canonical form: equal neighbours joined. */
    weft__coherence_settle(&root->coh, 0, root->size);
    n = weft__coherence_entries(&root->coh);
    weft__state_put(out, cap, &pos, &root->host, sizeof root->host);
    weft__state_put(out, cap, &pos, &n, sizeof n);
    weft__state_put(out, cap, &pos, root->coh.map.e,
                    n * sizeof *root->coh.map.e);
    for (unsigned d = 0; root->replicas && d < root->rt->ndevices; d++) {
        const weft__replica *r = &root->replicas[d];

        weft__mem *reg = __atomic_load_n(&r->reg, __ATOMIC_ACQUIRE);

        weft__state_put(out, cap, &pos, &r->nextents, sizeof r->nextents);
        weft__state_put(out, cap, &pos, &reg, sizeof reg);
        for (size_t i = 0; i < r->nextents; i++) {
            const weft__extent *x = r->extents[i];

            weft__state_put(out, cap, &pos, &x->lo, sizeof x->lo);
            weft__state_put(out, cap, &pos, &x->hi, sizeof x->hi);
            weft__state_put(out, cap, &pos, &x->blk.mem, sizeof x->blk.mem);
            weft__state_put(out, cap, &pos, &x->blk.offset,
                            sizeof x->blk.offset);
        }
    }
    return pos;
}
