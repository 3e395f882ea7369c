/*
 * Buffers: roots, views, the lanes, and the synchronous helpers; the
 * copies themselves are in replica.c. See buffer.h for the invariants and
 * the lock protocol.
 */
#include "buffer.h"
#include "../base/os.h"

#include <stdio.h>
#include <string.h>

/* ---- lanes ------------------------------------------------------------- */

void weft__lanes_init(weft__lanes *l, weft_runtime *rt)
{
    weft__coherence_transfers tr = WEFT__COH_LIST_INIT;
    weft__coherence_ranges ranges = WEFT__COH_LIST_INIT;

    l->rt = rt;
    l->queues = NULL;
    l->tr = tr;
    l->ranges = ranges;
    l->hooks = NULL;
    l->set = NULL;
    l->sink = NULL;
    l->host_effects = 0;
    l->submit = NULL;
}

int weft__lanes_queue(weft__lanes *l, unsigned device, weft__queue **q)
{
    weft__context *ctx;
    int rc;

    if (!l->queues) {
        l->queues = weft__calloc(l->rt->ndevices, sizeof *l->queues);
        if (!l->queues)
            return weft__error(WEFT_ENOMEM, "transfer queues: out of memory");
    }
    if (!l->queues[device]) {
        rc = weft__runtime_context(l->rt, device, &ctx);
        if (rc == 0)
            rc = weft__drv_queue_create(ctx, NULL, &l->queues[device]);
        if (rc < 0)
            return weft__error_prefix(rc, "queue on device %u (%s)", device,
                                      l->rt->devices[device]->name);
    }
    *q = l->queues[device];
    return 0;
}

int weft__lanes_sync(const weft__submit *s, weft__queue *q)
{
    int rc = weft__submit_queue_sync(s, q);

    /*
     * A failed sync may have returned before the work did, and the work
     * touches memory the caller is about to reuse (its host pointers, the
     * buffer's copies): wait again, so that a failed call is over when it
     * returns. Should this fail too, the device is gone anyway.
     */
    if (rc < 0) {
        char keep[512];

        weft__strlcpy(keep, weft_last_error(), sizeof keep);
        if (weft__submit_queue_sync(s, q) < 0)
            weft__warn("mem", "queue of %s does not drain: %s",
                       q->ctx->dev->name, weft_last_error());
        weft__error(rc, "%s", keep);
    }
    return rc;
}

int weft__lanes_get(weft__lanes *l, unsigned device, weft__queue_role role,
                    weft__queue **q)
{
    if (l->hooks)
        return l->hooks->queue(l->set, device, role, q);
    return weft__lanes_queue(l, device, q);
}

int weft__lanes_issued(weft__lanes *l, weft__queue *q, weft_buffer *root,
                       unsigned where, size_t off, size_t len)
{
    if (l->hooks)
        return l->hooks->issued(l->set, q, root, where, off, len);
    return weft__lanes_sync(l->submit, q);
}

void weft__lanes_moved(weft__lanes *l, size_t bytes)
{
    if (l->hooks && l->hooks->moved)
        l->hooks->moved(l->set, bytes);
}

void weft__lanes_settle(weft__lanes *l, weft__queue *q)
{
    /* Asynchronous lanes: what went before is ordered, and waited for by
     * the plan's drain; the failed enqueue itself had no effect. */
    if (!l->hooks && q)
        weft__lanes_sync(l->submit, q);
}

int weft__lanes_after(weft__lanes *l, weft__queue *q, weft_buffer *root,
                      unsigned where, size_t off, size_t len)
{
    return l->hooks ? l->hooks->after(l->set, q, root, where, off, len) : 0;
}

int weft__lanes_drain(weft__lanes *l)
{
    return l->hooks ? l->hooks->drain(l->set) : 0;
}

void weft__lanes_source(weft__lanes *l, weft_buffer *root, int from_host)
{
    if (l->hooks && l->hooks->source)
        l->hooks->source(l->set, root, from_host);
}

int weft__lanes_fence_wait(weft__lanes *l, weft_buffer *root)
{
    int rc;

    if (!root->fence_owner || root->fence_owner == (const void *)l)
        return 0;
    if (!root->fence)
        return 1;
    rc = weft__submit_event_sync(l->submit, root->fence);
    if (rc < 0)
        return weft__error_prefix(rc, "waiting for another graph's work on "
                                      "a buffer");
    root->fence = NULL;
    root->fence_owner = NULL;
    return 0;
}

void weft__buffer_wait_owner(weft_buffer *root, const void *owner)
{
    pthread_mutex_lock(&root->lock);
    while (root->fence_owner == owner && !root->fence)
        pthread_cond_wait(&root->idle, &root->lock);
    pthread_mutex_unlock(&root->lock);
}

void weft__lanes_release(weft__lanes *l)
{
    weft__coherence_transfers_fini(&l->tr);
    weft__coherence_ranges_fini(&l->ranges);
    if (!l->queues)
        return;
    for (unsigned i = 0; i < l->rt->ndevices; i++)
        if (l->queues[i])
            weft__drv_queue_destroy(l->queues[i]);
    weft__free(l->queues);
    l->queues = NULL;
}

/* ---- counts for the executor ------------------------------------------- */

void weft__buffer_graph_ref(weft_buffer *buf, long d)
{
    __atomic_add_fetch(&buf->graphs, d, __ATOMIC_ACQ_REL);
}

void weft__buffer_exec_ref(weft_buffer *buf, long d)
{
    __atomic_add_fetch(&buf->execs, d, __ATOMIC_ACQ_REL);
}

void weft__buffer_root_execs(weft_buffer *root, long d)
{
    __atomic_add_fetch(&root->root_execs, d, __ATOMIC_ACQ_REL);
}

/* Addresses handed out before are void from now on: extents may go. */
static void weft__buffer_unexport(weft_buffer *root)
{
    if (!root->exported)
        return;
    for (unsigned d = 0; d < root->rt->ndevices; d++)
        for (size_t i = 0; i < root->replicas[d].nextents; i++)
            __atomic_store_n(&root->replicas[d].extents[i]->exported, 0,
                             __ATOMIC_RELAXED);
    root->exported = 0;
}

int weft__buffer_launch_begin(weft_buffer *root)
{
    int rc = 0;

    weft__buffer_lock(root);
    if (root->mapped_by) {
        char what[96];

        weft__buffer_describe(root, what, sizeof what);
        rc = weft__error(WEFT_EBUSY,
                         "%s is mapped; unmap it before launching a graph "
                         "that uses it",
                         what);
    } else {
        root->inflight++;
        weft__buffer_unexport(root);
    }
    weft__buffer_unlock(root);
    return rc;
}

void weft__buffer_launch_end(weft_buffer *root, const void *owner)
{
    int wake;

    weft__buffer_lock(root);
    weft__assert(root->inflight > 0);
    /* The owner's work is over: nobody need wait for its fence. */
    wake = owner && root->fence_owner == owner;
    if (wake) {
        root->fence = NULL;
        root->fence_owner = NULL;
    }
    if (--root->inflight == 0 || wake)
        pthread_cond_broadcast(&root->idle);
    weft__buffer_unlock(root);
}

void weft__buffer_describe(const weft_buffer *buf, char *out, size_t size)
{
    if (buf->root == buf)
        snprintf(out, size, "buffer %p (%zu bytes)", (const void *)buf,
                 buf->size);
    else
        snprintf(out, size, "view %p [%zu, %zu) of buffer %p (%zu bytes)",
                 (const void *)buf, buf->offset, buf->offset + buf->size,
                 (const void *)buf->root, buf->root->size);
}

/* ---- the public API ---------------------------------------------------- */

/* valid: the memories (tracker indices) that hold the first bytes. */
static int weft__buffer_new(weft_runtime *rt, void *host, size_t size,
                            uint64_t valid, weft_buffer **out, const char *fn)
{
    weft_buffer *b;

    if (!rt || !out)
        return weft__error(WEFT_EINVAL, "%s: %s is NULL", fn,
                           rt ? "result" : "runtime");
    if (size == 0)
        return weft__error(WEFT_EINVAL, "%s: size 0", fn);
    /* No allocation (nor any array of wrapped memory) is larger. */
    if (size > PTRDIFF_MAX)
        return weft__error(WEFT_ENOMEM,
                           "%s: size %zu is more than any "
                           "allocation can hold",
                           fn, size);
    if (rt->ndevices + 1 > WEFT__COH_MAX_MEMS)
        return weft__error(WEFT_ENOTSUP,
                           "%s: %u devices; buffers track at most %u", fn,
                           rt->ndevices, WEFT__COH_MAX_MEMS - 1);
    b = weft__calloc(1, sizeof *b);
    if (!b)
        return weft__error(WEFT_ENOMEM, "%s: out of memory", fn);
    b->replicas =
        weft__calloc(rt->ndevices ? rt->ndevices : 1, sizeof *b->replicas);
    if (!b->replicas)
        goto nomem;
    if (weft__coherence_init(&b->coh, size, rt->ndevices + 1, valid) < 0)
        goto nomem;
    if (host) {
        b->host = host;
    } else {
        b->host = weft__malloc(size);
        if (!b->host)
            goto nomem;
        b->owned = 1;
    }
    b->rt = rt;
    b->root = b;
    b->size = size;
    if (host)
        b->host_block = (unsigned)weft__host_block_use(rt, host, size, 1);
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->idle, NULL);
    weft__runtime_live(rt, 1);
    *out = b;
    return 0;
nomem:
    weft__coherence_fini(&b->coh);
    weft__free(b->replicas);
    weft__free(b);
    return weft__error(WEFT_ENOMEM, "%s: out of memory for %zu bytes", fn,
                       size);
}

int weft_buffer_create(weft_runtime *rt, size_t size, weft_buffer **buf)
{
    return weft__buffer_new(rt, NULL, size, (uint64_t)1 << WEFT__COH_HOST, buf,
                            "weft_buffer_create");
}

int weft_buffer_wrap(weft_runtime *rt, void *host, size_t size,
                     weft_buffer **buf)
{
    if (!host)
        return weft__error(WEFT_EINVAL, "weft_buffer_wrap: host memory is "
                                        "NULL");
    return weft__buffer_new(rt, host, size, (uint64_t)1 << WEFT__COH_HOST, buf,
                            "weft_buffer_wrap");
}

int weft__device_index(const weft_runtime *rt, const weft_device *dev,
                       unsigned *d, const char *fn)
{
    if (!dev)
        return weft__error(WEFT_EINVAL, "%s: device is NULL", fn);
    for (unsigned i = 0; i < rt->ndevices; i++)
        if (rt->devices[i] == weft__device_of(dev)) {
            *d = i;
            return 0;
        }
    return weft__error(WEFT_EINVAL,
                       "%s: device %p is not a device of the runtime", fn,
                       (const void *)dev);
}

int weft_buffer_wrap_device(weft_runtime *rt, const weft_device *dev,
                            uint64_t handle, size_t offset, size_t size,
                            weft_buffer **buf)
{
    static const char fn[] = "weft_buffer_wrap_device";
    weft__context *ctx;
    weft__extent *x = NULL;
    weft__extent **xs = NULL;
    weft__mem *mem = NULL;
    weft_buffer *b = NULL;
    size_t moff = 0, align;
    unsigned d = 0;
    int rc;

    if (!rt || !buf)
        return weft__error(WEFT_EINVAL, "%s: %s is NULL", fn,
                           rt ? "result" : "runtime");
    if ((rc = weft__device_index(rt, dev, &d, fn)) < 0)
        return rc;
    if (!handle)
        return weft__error(WEFT_EINVAL, "%s: the handle is 0", fn);
    if (size == 0 || size == WEFT_WHOLE)
        return weft__error(WEFT_EINVAL, "%s: size %s", fn,
                           size ? "WEFT_WHOLE (give the bytes)" : "0");
    /* Kernel arguments in the memory start where the device allows. */
    align = rt->devices[d]->props.arg_offset_align;
    if (align > 1 && offset % align)
        return weft__error(WEFT_EINVAL,
                           "%s: offset %zu is not a multiple of %zu bytes, "
                           "the argument alignment of %s",
                           fn, offset, align, rt->devices[d]->name);
    if ((rc = weft__runtime_context(rt, d, &ctx)) < 0 ||
        (rc = weft__drv_mem_wrap(ctx, handle, offset, size, &mem, &moff)) < 0)
        return weft__error_prefix(rc, "%s on %s", fn, rt->devices[d]->name);
    x = weft__calloc(1, sizeof *x);
    xs = weft__malloc(sizeof *xs);
    if (!x || !xs)
        rc = weft__error(WEFT_ENOMEM, "%s: out of memory", fn);
    else
        rc = weft__buffer_new(rt, NULL, size, (uint64_t)1 << (1 + d), &b, fn);
    if (rc < 0) {
        weft__free(x);
        weft__free(xs);
        weft__drv_mem_free(mem);
        return rc;
    }
    x->root = b;
    x->device = d;
    x->lo = 0;
    x->hi = size;
    x->blk.mem = mem;
    x->blk.offset = moff;
    x->blk.size = size;
    xs[0] = x;
    b->replicas[d].extents = xs;
    b->replicas[d].nextents = b->replicas[d].cap = 1;
    b->replicas[d].wrapped = 1;
    *buf = b;
    return 0;
}

/*
 * [off, off + *size) inside buf, resolving WEFT_WHOLE; else WEFT_ERANGE
 * (weft.h, "Ranges"; the graph's adds say the same).
 */
static int weft__range(const weft_buffer *buf, size_t off, size_t *size,
                       const char *fn)
{
    char what[96];

    if (*size == WEFT_WHOLE && off <= buf->size)
        *size = buf->size - off;
    if (off <= buf->size && *size <= buf->size - off)
        return 0;
    weft__buffer_describe(buf, what, sizeof what);
    if (off > buf->size)
        return weft__error(WEFT_ERANGE, "%s: offset %zu is past the end of %s",
                           fn, off, what);
    return weft__error(WEFT_ERANGE, "%s: range [%zu, %zu + %zu) is outside %s",
                       fn, off, off, *size, what);
}

int weft_buffer_view(weft_buffer *parent, size_t offset, size_t size,
                     weft_buffer **view)
{
    weft_buffer *v, *root;
    int rc;

    if (!parent || !view)
        return weft__error(WEFT_EINVAL, "weft_buffer_view: %s is NULL",
                           parent ? "result" : "parent");
    if ((rc = weft__range(parent, offset, &size, "weft_buffer_view")) < 0)
        return rc;
    if (size == 0)
        return weft__error(
            WEFT_EINVAL, "weft_buffer_view: empty view at offset %zu", offset);
    v = weft__calloc(1, sizeof *v);
    if (!v)
        return weft__error(WEFT_ENOMEM, "weft_buffer_view: out of memory");
    root = parent->root;
    v->rt = parent->rt;
    v->root = root;
    v->parent = parent;
    v->offset = parent->offset + offset;
    v->size = size;
    weft__buffer_lock(root);
    parent->views++;
    weft__buffer_unlock(root);
    weft__runtime_live(v->rt, 1);
    *view = v;
    return 0;
}

size_t weft_buffer_size(const weft_buffer *buf)
{
    return buf ? buf->size : 0;
}

/* Wait, with the root locked, until no launch that uses it is in flight. */
static void weft__wait_idle(weft_buffer *root)
{
    while (root->inflight > 0)
        pthread_cond_wait(&root->idle, &root->lock);
}

/* The device whose replica is the program's memory, or WEFT__HOST. */
static unsigned weft__wrapped_device(const weft_buffer *root)
{
    for (unsigned d = 0; d < root->rt->ndevices; d++)
        if (root->replicas[d].wrapped)
            return d;
    return WEFT__HOST;
}

int weft_buffer_destroy(weft_buffer *buf)
{
    weft_buffer *root;
    weft_runtime *rt;
    weft__lanes l;
    char what[96];
    int rc = 0;

    if (!buf)
        return 0;
    root = buf->root;
    rt = buf->rt;
    weft__buffer_describe(buf, what, sizeof what);
    weft__buffer_lock(root);
    if (buf->views > 0)
        rc = weft__error(WEFT_EBUSY,
                         "weft_buffer_destroy: %s has %ld live views", what,
                         buf->views);
    else if (__atomic_load_n(&buf->execs, __ATOMIC_ACQUIRE) > 0)
        rc = weft__error(WEFT_EBUSY,
                         "weft_buffer_destroy: %s is used by %ld accesses "
                         "of live executable graphs; destroy them first",
                         what, __atomic_load_n(&buf->execs, __ATOMIC_ACQUIRE));
    else if (__atomic_load_n(&buf->graphs, __ATOMIC_ACQUIRE) > 0)
        rc = weft__error(WEFT_EBUSY,
                         "weft_buffer_destroy: %s is used by %ld accesses "
                         "of live graphs; destroy them first",
                         what, __atomic_load_n(&buf->graphs, __ATOMIC_ACQUIRE));
    else if (root->mapped_by == buf)
        rc = weft__error(WEFT_EBUSY, "weft_buffer_destroy: %s is mapped", what);
    else if (buf == root && root->ipc_exports > 0)
        rc = weft__error(WEFT_EBUSY,
                         "weft_buffer_destroy: %s has %ld ranges exported to "
                         "other processes (weft_buffer_export); release them "
                         "first",
                         what, root->ipc_exports);
    if (rc < 0 || buf != root) {
        if (rc == 0)
            buf->parent->views--;
        weft__buffer_unlock(root);
        if (rc == 0) {
            weft__free(buf);
            weft__runtime_live(rt, -1);
        }
        return rc;
    }
    weft__wait_idle(root);
    /* The user's memory gets the final bytes; weft's own need not. */
    if (!root->owned || weft__wrapped_device(root) != WEFT__HOST) {
        unsigned where = root->owned ? weft__wrapped_device(root) : WEFT__HOST;

        weft__lanes_init(&l, rt);
        rc = weft__buffer_make_valid(root, where, 0, root->size, &l);
        weft__lanes_release(&l);
        if (rc < 0) {
            weft__buffer_unlock(root);
            return weft__error_prefix(rc,
                                      "weft_buffer_destroy: final bytes "
                                      "of %s",
                                      what);
        }
    }
    /* Under the lock: eviction may be looking at the extents. */
    weft__buffer_free_replicas(root);
    weft__buffer_unlock(root);
    weft__coherence_fini(&root->coh);
    if (root->host_block)
        weft__host_block_use(rt, root->host, root->size, -1);
    if (root->owned)
        weft__free(root->host);
    weft__free(root->replicas);
    pthread_cond_destroy(&root->idle);
    pthread_mutex_destroy(&root->lock);
    weft__free(root);
    weft__runtime_live(rt, -1);
    return 0;
}

/*
 * The common start of every helper: check the buffer and range, lock the
 * root, wait for launches in flight. On success the root is locked.
 */
static int weft__helper_begin(weft_buffer *buf, size_t off, size_t *size,
                              const char *fn)
{
    int rc;

    if (!buf)
        return weft__error(WEFT_EINVAL, "%s: buffer is NULL", fn);
    if ((rc = weft__range(buf, off, size, fn)) < 0)
        return rc;
    weft__buffer_lock(buf->root);
    weft__wait_idle(buf->root);
    return 0;
}

static int weft__helper_end(weft_buffer *buf, weft__lanes *l, int rc,
                            const char *fn)
{
    char what[96];

    weft__buffer_unlock(buf->root);
    weft__lanes_release(l);
    if (rc < 0) {
        weft__buffer_describe(buf, what, sizeof what);
        return weft__error_prefix(rc, "%s of %s", fn, what);
    }
    return 0;
}

int weft_buffer_write(weft_buffer *buf, size_t offset, const void *src,
                      size_t size)
{
    weft__lanes l;
    int rc;

    if (!src && size)
        return weft__error(WEFT_EINVAL, "weft_buffer_write: source is NULL");
    if ((rc = weft__helper_begin(buf, offset, &size, "weft_buffer_write")) < 0)
        return rc;
    weft__lanes_init(&l, buf->rt);
    rc = weft__buffer_store(buf->root, buf->offset + offset, src, size,
                            WEFT__HOST, &l);
    return weft__helper_end(buf, &l, rc, "weft_buffer_write");
}

int weft_buffer_read(weft_buffer *buf, size_t offset, void *dst, size_t size)
{
    weft__lanes l;
    int rc;

    if (!dst && size)
        return weft__error(WEFT_EINVAL,
                           "weft_buffer_read: destination is NULL");
    if ((rc = weft__helper_begin(buf, offset, &size, "weft_buffer_read")) < 0)
        return rc;
    weft__lanes_init(&l, buf->rt);
    /* Through the host copy, which a read brings up to date (weft.h). */
    rc = weft__buffer_load(buf->root, buf->offset + offset, dst, size, &l);
    return weft__helper_end(buf, &l, rc, "weft_buffer_read");
}

int weft__fill_check(const void *pattern, size_t pattern_size, size_t offset,
                     size_t size, const char *fn)
{
    if (!pattern)
        return weft__error(WEFT_EINVAL, "%s: pattern is NULL", fn);
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4)
        return weft__error(WEFT_EINVAL,
                           "%s: pattern of %zu bytes (1, 2 or 4 allowed)", fn,
                           pattern_size);
    if (offset % pattern_size || size % pattern_size)
        return weft__error(WEFT_EINVAL,
                           "%s: offset %zu and size %zu are not multiples of "
                           "the %zu-byte pattern",
                           fn, offset, size, pattern_size);
    return 0;
}

int weft_buffer_fill(weft_buffer *buf, size_t offset, size_t size,
                     const void *pattern, size_t pattern_size)
{
    weft__lanes l;
    int rc;

    if (!buf)
        return weft__error(WEFT_EINVAL, "weft_buffer_fill: buffer is NULL");
    if ((rc = weft__range(buf, offset, &size, "weft_buffer_fill")) < 0 ||
        (rc = weft__fill_check(pattern, pattern_size, offset, size,
                               "weft_buffer_fill")) < 0)
        return rc;
    if ((rc = weft__helper_begin(buf, offset, &size, "weft_buffer_fill")) < 0)
        return rc;
    weft__lanes_init(&l, buf->rt);
    rc = weft__buffer_fill_range(buf->root, buf->offset + offset, size, pattern,
                                 pattern_size, WEFT__HOST, &l);
    return weft__helper_end(buf, &l, rc, "weft_buffer_fill");
}

int weft_buffer_map(weft_buffer *buf, size_t offset, size_t size,
                    weft_access mode, void **ptr)
{
    weft_buffer *root;
    weft__lanes l;
    int rc;

    if (!ptr)
        return weft__error(WEFT_EINVAL, "weft_buffer_map: result is NULL");
    if (mode < WEFT_READ || mode > WEFT_READ_WRITE)
        return weft__error(WEFT_EINVAL, "weft_buffer_map: unknown mode %d",
                           (int)mode);
    if ((rc = weft__helper_begin(buf, offset, &size, "weft_buffer_map")) < 0)
        return rc;
    root = buf->root;
    weft__lanes_init(&l, buf->rt);
    if (root->mapped_by) {
        char what[96];

        weft__buffer_describe(root->mapped_by, what, sizeof what);
        weft__buffer_unlock(root);
        return weft__error(WEFT_EBUSY,
                           "weft_buffer_map: the bytes are mapped already "
                           "(through %s); one map at a time",
                           what);
    }
    /* A WEFT_WRITE map overwrites every byte: nothing to bring over. */
    rc = mode & WEFT_READ
             ? weft__buffer_make_valid(root, WEFT__HOST, buf->offset + offset,
                                       size, &l)
             : weft__buffer_reserve(root, 1);
    if (rc == 0) {
        root->mapped_by = buf;
        root->map_mode = mode;
        root->map_off = buf->offset + offset;
        root->map_size = size;
        root->map_ptr = root->host + buf->offset + offset;
        *ptr = root->map_ptr;
    }
    return weft__helper_end(buf, &l, rc, "weft_buffer_map");
}

int weft_buffer_unmap(weft_buffer *buf, void *ptr)
{
    weft_buffer *root;
    int rc = 0;

    if (!buf)
        return weft__error(WEFT_EINVAL, "weft_buffer_unmap: buffer is NULL");
    root = buf->root;
    weft__buffer_lock(root);
    if (root->mapped_by != buf)
        rc = weft__error(WEFT_ESTATE, "weft_buffer_unmap: the buffer is not "
                                      "mapped through this handle");
    else if (ptr != root->map_ptr)
        rc = weft__error(WEFT_EINVAL,
                         "weft_buffer_unmap: %p is not the mapped pointer %p",
                         ptr, root->map_ptr);
    if (rc == 0) {
        /* The map reserved room for this update. */
        if (root->map_mode & WEFT_WRITE)
            weft__buffer_written(root, WEFT__HOST, root->map_off,
                                 root->map_size);
        root->mapped_by = NULL;
        root->map_ptr = NULL;
    }
    weft__buffer_unlock(root);
    return rc;
}

int weft_buffer_sync_host(weft_buffer *buf)
{
    size_t size = 0;
    weft__lanes l;
    int rc;

    if ((rc = weft__helper_begin(buf, 0, &size, "weft_buffer_sync_host")) < 0)
        return rc;
    weft__lanes_init(&l, buf->rt);
    rc = weft__buffer_make_valid(buf->root, WEFT__HOST, 0, buf->root->size, &l);
    return weft__helper_end(buf, &l, rc, "weft_buffer_sync_host");
}

int weft_buffer_invalidate(weft_buffer *buf, size_t offset, size_t size)
{
    weft__lanes l;
    int rc;

    if (buf && buf->root->owned)
        return weft__error(WEFT_EINVAL,
                           "weft_buffer_invalidate: the buffer does not wrap "
                           "user memory");
    if ((rc = weft__helper_begin(buf, offset, &size,
                                 "weft_buffer_invalidate")) < 0)
        return rc;
    weft__lanes_init(&l, buf->rt);
    rc = weft__buffer_reserve(buf->root, 1);
    if (rc == 0)
        weft__buffer_written(buf->root, WEFT__HOST, buf->offset + offset, size);
    return weft__helper_end(buf, &l, rc, "weft_buffer_invalidate");
}

/*
 * [at, at + size) of root held on device d (and made valid there, where
 * valid), for a program's call: WEFT_EBUSY while the buffer is mapped,
 * WEFT_EDEVMEM where it does not fit.
 */
static int weft__device_range(weft_buffer *root, unsigned d, size_t at,
                              size_t size, int valid, weft__lanes *l,
                              const char *fn)
{
    weft__span span = {root, at, size};
    int rc;

    if (root->mapped_by)
        return weft__error(WEFT_EBUSY, "%s: the buffer is mapped", fn);
    rc = weft__buffer_hold(&span, 1, d, l);
    if (rc == WEFT__NO_ROOM) /* hold said why; nothing here waits for it */
        return WEFT_EDEVMEM;
    if (rc == 0 && valid)
        rc = weft__buffer_make_valid(root, d, at, size, l);
    return rc;
}

int weft_buffer_device_address(weft_buffer *buf, const weft_device *dev,
                               size_t offset, size_t size,
                               weft_device_address *out)
{
    static const char fn[] = "weft_buffer_device_address";
    weft__native_mem nm;
    weft_buffer *root;
    weft__lanes l;
    weft__mem *mem;
    size_t at, moff;
    unsigned d = 0;
    int rc;

    if (!out)
        return weft__error(WEFT_EINVAL, "%s: result is NULL", fn);
    if (buf && (rc = weft__device_index(buf->rt, dev, &d, fn)) < 0)
        return rc;
    if ((rc = weft__helper_begin(buf, offset, &size, fn)) < 0)
        return rc;
    root = buf->root;
    at = buf->offset + offset;
    weft__lanes_init(&l, buf->rt);
    rc = weft__device_range(root, d, at, size, 1, &l, fn);
    if (rc == 0) {
        weft__buffer_device_ptr(root, d, at, &mem, &moff);
        weft__drv_native_mem(mem, moff, &nm);
        out->address = nm.address;
        out->mem = nm.mem;
        out->offset = nm.offset;
        out->ptr = nm.host;
        weft__buffer_export(root, d, at, size);
    }
    return weft__helper_end(buf, &l, rc, fn);
}

int weft_buffer_mark_device_written(weft_buffer *buf, const weft_device *dev,
                                    size_t offset, size_t size)
{
    static const char fn[] = "weft_buffer_mark_device_written";
    weft_buffer *root;
    weft__lanes l;
    weft__mem *mem;
    size_t at, moff;
    unsigned d = 0;
    int rc;

    if (buf && (rc = weft__device_index(buf->rt, dev, &d, fn)) < 0)
        return rc;
    if ((rc = weft__helper_begin(buf, offset, &size, fn)) < 0)
        return rc;
    root = buf->root;
    at = buf->offset + offset;
    weft__lanes_init(&l, buf->rt);
    if (root->mapped_by)
        rc = weft__error(WEFT_EBUSY, "%s: the buffer is mapped", fn);
    else if (!weft__buffer_device_find(root, d, at, size, &mem, &moff))
        rc = weft__error(WEFT_ESTATE,
                         "%s: no copy of [%zu, %zu + %zu) is held on %s; ask "
                         "weft_buffer_device_address for the range first",
                         fn, offset, offset, size, buf->rt->devices[d]->name);
    else
        rc = weft__buffer_reserve(root, 1);
    if (rc == 0)
        weft__buffer_written(root, d, at, size);
    return weft__helper_end(buf, &l, rc, fn);
}

/* WEFT_ENOTSUP where dev's driver shares no memory between processes. */
static int weft__ipc_driver(weft_buffer *buf, unsigned d, const char *fn)
{
    const weft__device *dev = buf->rt->devices[d];

    if (!weft__drv_has_ipc(dev))
        return weft__error(WEFT_ENOTSUP,
                           "%s: %s (the %s driver) shares no memory between "
                           "processes",
                           fn, dev->name, dev->drv->name);
    return 0;
}

int weft_buffer_export(weft_buffer *buf, const weft_device *dev, size_t offset,
                       size_t size, weft_access mode, weft_ipc_handle *out)
{
    static const char fn[] = "weft_buffer_export";
    unsigned char drv[WEFT__IPC_DRV_SIZE];
    weft__ipc_wire w;
    weft_buffer *root;
    weft__lanes l;
    weft__mem *mem;
    size_t at, moff, boff;
    unsigned d = 0;
    int rc;

    if (!out)
        return weft__error(WEFT_EINVAL, "%s: result is NULL", fn);
    if (mode < WEFT_READ || mode > WEFT_READ_WRITE)
        return weft__error(WEFT_EINVAL, "%s: unknown mode %d", fn, (int)mode);
    if (buf && (rc = weft__device_index(buf->rt, dev, &d, fn)) < 0)
        return rc;
    if (buf && size == 0)
        return weft__error(WEFT_EINVAL, "%s: size is 0", fn);
    if (buf && (rc = weft__ipc_driver(buf, d, fn)) < 0)
        return rc;
    if ((rc = weft__helper_begin(buf, offset, &size, fn)) < 0)
        return rc;
    root = buf->root;
    at = buf->offset + offset;
    weft__lanes_init(&l, buf->rt);
    rc = weft__device_range(root, d, at, size, (mode & WEFT_READ) != 0, &l, fn);
    if (rc == 0)
        rc = weft__buffer_ipc_hold(root, d, at, size, 1, &mem, &moff);
    if (rc == 0 && (rc = weft__drv_ipc_export(mem, moff, drv, &boff)) < 0)
        weft__buffer_ipc_hold(root, d, at, size, -1, NULL, NULL);
    if (rc == 0) {
        memset(&w, 0, sizeof w);
        w.magic = WEFT__IPC_MAGIC;
        w.pid = weft__os_pid();
        w.offset = boff;
        w.size = size;
        memcpy(w.drv, drv, sizeof drv);
        memset(out, 0, sizeof *out);
        memcpy(out->bytes, &w, sizeof w);
    }
    return weft__helper_end(buf, &l, rc, fn);
}

int weft_buffer_export_release(weft_buffer *buf, const weft_device *dev,
                               size_t offset, size_t size)
{
    static const char fn[] = "weft_buffer_export_release";
    weft__lanes l;
    unsigned d = 0;
    int rc;

    if (buf && (rc = weft__device_index(buf->rt, dev, &d, fn)) < 0)
        return rc;
    if (buf && size == 0)
        return weft__error(WEFT_EINVAL, "%s: size is 0", fn);
    if (buf && (rc = weft__ipc_driver(buf, d, fn)) < 0)
        return rc;
    if ((rc = weft__helper_begin(buf, offset, &size, fn)) < 0)
        return rc;
    weft__lanes_init(&l, buf->rt);
    rc = weft__buffer_ipc_hold(buf->root, d, buf->offset + offset, size, -1,
                               NULL, NULL);
    return weft__helper_end(buf, &l, rc, fn);
}
