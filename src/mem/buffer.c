/*
 * Buffers: roots, views, the host copy and per-device replicas with
 * whole-buffer validity flags, and the synchronous helpers. See buffer.h
 * for the invariants and the lock protocol.
 */
#include "buffer.h"

#include <stdio.h>
#include <string.h>

/* ---- lanes ------------------------------------------------------------- */

void weft__lanes_init(weft__lanes *l, weft_runtime *rt)
{
    l->rt = rt;
    l->queues = NULL;
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

int weft__lanes_sync(weft__queue *q)
{
    int rc = weft__drv_queue_sync(q);

    /*
     * A failed sync may have returned before the work did, and the work
     * touches memory the caller is about to reuse (its host pointers, the
     * buffer's copies): wait again, so that a failed call is over when it
     * returns. Should this fail too, the device is gone anyway.
     */
    if (rc < 0) {
        char keep[512];

        weft__strlcpy(keep, weft_last_error(), sizeof keep);
        if (weft__drv_queue_sync(q) < 0)
            weft__warn("mem", "queue of %s does not drain: %s",
                       q->ctx->dev->name, weft_last_error());
        weft__error(rc, "%s", keep);
    }
    return rc;
}

void weft__lanes_release(weft__lanes *l)
{
    if (!l->queues)
        return;
    for (unsigned i = 0; i < l->rt->ndevices; i++)
        if (l->queues[i])
            weft__drv_queue_destroy(l->queues[i]);
    weft__free(l->queues);
    l->queues = NULL;
}

/* ---- copies ------------------------------------------------------------ */

void weft__buffer_lock(weft_buffer *root)
{
    pthread_mutex_lock(&root->lock);
}

void weft__buffer_unlock(weft_buffer *root)
{
    pthread_mutex_unlock(&root->lock);
}

void *weft__buffer_host(weft_buffer *root, size_t off)
{
    return root->host + off;
}

weft__mem *weft__buffer_replica(weft_buffer *root, unsigned device)
{
    return root->replicas[device].mem;
}

static unsigned weft__valid_device(const weft_buffer *root)
{
    for (unsigned i = 0; i < root->rt->ndevices; i++)
        if (root->replicas[i].valid)
            return i;
    return WEFT__HOST;
}

static unsigned weft__valid_copies(const weft_buffer *root)
{
    unsigned n = root->host_valid;

    for (unsigned i = 0; i < root->rt->ndevices; i++)
        n += root->replicas[i].valid;
    return n;
}

/* Bring the whole host copy up to date from a device that holds it. */
static int weft__download(weft_buffer *root, weft__lanes *l)
{
    unsigned d = weft__valid_device(root);
    weft__queue *q = NULL;
    int rc;

    weft__assert(d != WEFT__HOST);
    if ((rc = weft__lanes_queue(l, d, &q)) < 0)
        return rc;
    rc =
        weft__drv_copy_d2h(q, root->host, root->replicas[d].mem, 0, root->size);
    if (rc == 0)
        rc = weft__lanes_sync(q);
    if (rc < 0)
        return rc;
    root->host_valid = 1;
    return 0;
}

int weft__buffer_make_valid(weft_buffer *root, unsigned where, size_t off,
                            size_t size, weft__lanes *l)
{
    weft__replica *r;
    weft__context *ctx;
    weft__queue *q = NULL;
    int rc;

    (void)off; /* whole-buffer flags: the range is the whole buffer */
    (void)size;
    if (where == WEFT__HOST)
        return root->host_valid ? 0 : weft__download(root, l);
    r = &root->replicas[where];
    if (r->valid)
        return 0;
    if (!r->mem) {
        rc = weft__runtime_context(root->rt, where, &ctx);
        if (rc == 0)
            rc = weft__drv_mem_alloc(ctx, root->size, &r->mem);
        if (rc < 0) {
            r->mem = NULL;
            return rc;
        }
    }
    /* Device to device goes through the host copy for now. */
    if (!root->host_valid && (rc = weft__download(root, l)) < 0)
        return rc;
    if ((rc = weft__lanes_queue(l, where, &q)) < 0)
        return rc;
    rc = weft__drv_copy_h2d(q, r->mem, 0, root->host, root->size);
    if (rc == 0)
        rc = weft__lanes_sync(q);
    if (rc < 0)
        return rc;
    r->valid = 1;
    return 0;
}

void weft__buffer_written(weft_buffer *root, unsigned where, size_t off,
                          size_t size)
{
    (void)off;
    (void)size;
    root->host_valid = where == WEFT__HOST;
    for (unsigned i = 0; i < root->rt->ndevices; i++)
        root->replicas[i].valid = i == where;
}

void weft__buffer_discard(weft_buffer *root, unsigned where, size_t off,
                          size_t size)
{
    (void)off;
    (void)size;
    if (weft__valid_copies(root) < 2)
        return;
    if (where == WEFT__HOST)
        root->host_valid = 0;
    else
        root->replicas[where].valid = 0;
}

/*
 * Devices first, the host last: only a device write can fail. When one
 * does, the devices already written hold new bytes, the ones not tried yet
 * and the host the old ones, and the failed one either (its copy may have
 * run before its sync failed). If a copy surely holds the old bytes, the
 * others go and the buffer is as it was; else the new bytes stay.
 */
static int weft__store_or_fill(weft_buffer *root, size_t off, size_t size,
                               const void *src, const void *pattern,
                               size_t pattern_size, weft__lanes *l)
{
    unsigned n = root->rt->ndevices, d;
    weft__queue *q = NULL;
    int rc = 0;

    if (size == 0)
        return 0;
    if (!src && off % pattern_size) {
        /*
         * A fill through a view can start off the pattern's alignment in
         * the root buffer, which device fills refuse: write the bytes.
         */
        unsigned char *tmp = weft__malloc(size);

        if (!tmp)
            return weft__error(WEFT_ENOMEM, "fill of %zu bytes", size);
        for (size_t i = 0; i < size; i += pattern_size)
            memcpy(tmp + i, pattern, pattern_size);
        rc = weft__store_or_fill(root, off, size, tmp, NULL, 0, l);
        weft__free(tmp);
        return rc;
    }
    for (d = 0; d < n && rc == 0; d++) {
        weft__replica *r = &root->replicas[d];

        if (!r->valid)
            continue;
        rc = weft__lanes_queue(l, d, &q);
        if (rc == 0)
            rc = src ? weft__drv_copy_h2d(q, r->mem, off, src, size)
                     : weft__drv_fill(q, r->mem, off, pattern, pattern_size,
                                      size);
        if (rc == 0)
            rc = weft__lanes_sync(q);
    }
    if (rc < 0) {
        unsigned failed = d - 1, old = root->host_valid, newer = 0;

        for (unsigned i = d; i < n; i++)
            old |= root->replicas[i].valid;
        for (unsigned i = 0; i < failed; i++)
            newer |= root->replicas[i].valid;
        /* Keep the old bytes if a copy surely has them, else the new. */
        for (unsigned i = 0; i <= failed; i++)
            if (old || (i == failed && newer))
                root->replicas[i].valid = 0;
        return rc;
    }
    if (root->host_valid) {
        unsigned char *h = root->host + off;

        if (src) {
            memmove(h, src, size);
        } else if (pattern_size == 1) {
            memset(h, *(const unsigned char *)pattern, size);
        } else {
            for (size_t i = 0; i < size; i += pattern_size)
                memcpy(h + i, pattern, pattern_size);
        }
    }
    return 0;
}

int weft__buffer_store(weft_buffer *root, size_t off, const void *src,
                       size_t size, weft__lanes *l)
{
    return weft__store_or_fill(root, off, size, src, NULL, 0, l);
}

int weft__buffer_fill_range(weft_buffer *root, size_t off, size_t size,
                            const void *pattern, size_t pattern_size,
                            weft__lanes *l)
{
    return weft__store_or_fill(root, off, size, NULL, pattern, pattern_size, l);
}

int weft__buffer_load(weft_buffer *root, size_t off, void *dst, size_t size,
                      weft__lanes *l)
{
    unsigned d;
    weft__queue *q = NULL;
    int rc;

    if (size == 0)
        return 0;
    if (root->host_valid) {
        memmove(dst, root->host + off, size);
        return 0;
    }
    d = weft__valid_device(root);
    if ((rc = weft__lanes_queue(l, d, &q)) < 0)
        return rc;
    rc = weft__drv_copy_d2h(q, dst, root->replicas[d].mem, off, size);
    if (rc == 0)
        rc = weft__lanes_sync(q);
    return rc;
}

/* ---- counts for the executor ------------------------------------------- */

void weft__buffer_exec_ref(weft_buffer *buf, long d)
{
    __atomic_add_fetch(&buf->execs, d, __ATOMIC_ACQ_REL);
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
    }
    weft__buffer_unlock(root);
    return rc;
}

void weft__buffer_launch_end(weft_buffer *root)
{
    weft__buffer_lock(root);
    weft__assert(root->inflight > 0);
    if (--root->inflight == 0)
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

static int weft__buffer_new(weft_runtime *rt, void *host, size_t size,
                            weft_buffer **out, const char *fn)
{
    weft_buffer *b;

    if (!rt || !out)
        return weft__error(WEFT_EINVAL, "%s: %s is NULL", fn,
                           rt ? "result" : "runtime");
    if (size == 0)
        return weft__error(WEFT_EINVAL, "%s: size 0", fn);
    b = weft__calloc(1, sizeof *b);
    if (!b)
        return weft__error(WEFT_ENOMEM, "%s: out of memory", fn);
    b->replicas =
        weft__calloc(rt->ndevices ? rt->ndevices : 1, sizeof *b->replicas);
    if (!b->replicas)
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
    b->host_valid = 1;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->idle, NULL);
    weft__runtime_live(rt, 1);
    *out = b;
    return 0;
nomem:
    weft__free(b->replicas);
    weft__free(b);
    return weft__error(WEFT_ENOMEM, "%s: out of memory for %zu bytes", fn,
                       size);
}

int weft_buffer_create(weft_runtime *rt, size_t size, weft_buffer **buf)
{
    return weft__buffer_new(rt, NULL, size, buf, "weft_buffer_create");
}

int weft_buffer_wrap(weft_runtime *rt, void *host, size_t size,
                     weft_buffer **buf)
{
    if (!host)
        return weft__error(WEFT_EINVAL, "weft_buffer_wrap: host memory is "
                                        "NULL");
    return weft__buffer_new(rt, host, size, buf, "weft_buffer_wrap");
}

/* [off, off + *size) inside buf, resolving WEFT_WHOLE; else WEFT_ERANGE. */
static int weft__range(const weft_buffer *buf, size_t off, size_t *size,
                       const char *fn)
{
    char what[96];

    if (*size == WEFT_WHOLE && off <= buf->size)
        *size = buf->size - off;
    if (off <= buf->size && *size <= buf->size - off)
        return 0;
    weft__buffer_describe(buf, what, sizeof what);
    return weft__error(WEFT_ERANGE, "%s: range [%zu, +%zu) is outside %s", fn,
                       off, *size, what);
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
                         "weft_buffer_destroy: %s is used by %ld live "
                         "executable graphs",
                         what, __atomic_load_n(&buf->execs, __ATOMIC_ACQUIRE));
    else if (root->mapped_by == buf)
        rc = weft__error(WEFT_EBUSY, "weft_buffer_destroy: %s is mapped", what);
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
    if (!root->owned && !root->host_valid) {
        weft__lanes_init(&l, rt);
        rc = weft__download(root, &l);
        weft__lanes_release(&l);
        if (rc < 0) {
            weft__buffer_unlock(root);
            return weft__error_prefix(rc,
                                      "weft_buffer_destroy: final bytes "
                                      "of %s",
                                      what);
        }
    }
    weft__buffer_unlock(root);
    for (unsigned i = 0; i < rt->ndevices; i++)
        if (root->replicas[i].mem)
            weft__drv_mem_free(root->replicas[i].mem);
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
    rc = weft__buffer_store(buf->root, buf->offset + offset, src, size, &l);
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
    rc = weft__buffer_load(buf->root, buf->offset + offset, dst, size, &l);
    /* A read makes a wrapped buffer's memory current (weft.h). */
    if (rc == 0 && !buf->root->owned)
        rc = weft__buffer_make_valid(buf->root, WEFT__HOST, 0, buf->root->size,
                                     &l);
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
    if (size == WEFT_WHOLE && offset <= buf->size)
        size = buf->size - offset;
    if ((rc = weft__fill_check(pattern, pattern_size, offset, size,
                               "weft_buffer_fill")) < 0)
        return rc;
    if ((rc = weft__helper_begin(buf, offset, &size, "weft_buffer_fill")) < 0)
        return rc;
    weft__lanes_init(&l, buf->rt);
    rc = weft__buffer_fill_range(buf->root, buf->offset + offset, size, pattern,
                                 pattern_size, &l);
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
    /*
     * The host copy becomes valid even for a WEFT_WRITE map: with one flag
     * per copy, bytes outside the range must be current there too.
     */
    rc = weft__buffer_make_valid(root, WEFT__HOST, 0, root->size, &l);
    if (rc == 0) {
        root->mapped_by = buf;
        root->map_mode = mode;
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
        if (root->map_mode & WEFT_WRITE)
            weft__buffer_written(root, WEFT__HOST, 0, root->size);
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
