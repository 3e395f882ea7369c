/*
 * Stores and fills of a range of a root: every device copy that holds it
 * is written, then the host copy where it should be (buffer.h says which);
 * the moves they use are replica.c's.
 */
#include "replica.h"

#include <string.h>

static int weft__store_or_fill(weft_buffer *root, size_t off, size_t size,
                               const void *src, const void *pattern,
                               size_t pattern_size, unsigned prefer,
                               weft__lanes *l);

/*
 * A fill through a view can start off the pattern's alignment in the root
 * buffer, which device fills refuse: write the bytes, from a temporary
 * copy of the pattern, freed once the copies from it have landed.
 */
static int weft__fill_unaligned(weft_buffer *root, size_t off, size_t size,
                                const void *pattern, size_t pattern_size,
                                unsigned prefer, weft__lanes *l)
{
    unsigned char *tmp = weft__malloc(size);
    int rc, drc;

    if (!tmp)
        return weft__error(WEFT_ENOMEM, "fill of %zu bytes", size);
    for (size_t i = 0; i < size; i += pattern_size)
        memcpy(tmp + i, pattern, pattern_size);
    rc = weft__store_or_fill(root, off, size, tmp, NULL, 0, prefer, l);
    /* Copies from tmp may still be on their way: let them land. */
    drc = weft__lanes_drain(l);
    if (rc == 0)
        rc = drc;
    weft__free(tmp);
    return rc;
}

/*
 * The devices a store or fill of [off, off + size) writes, into targets;
 * returns how many. holders: the tracker's holders of the range. May make
 * an extent on prefer (for which the tracker has room).
 */
static unsigned weft__store_targets(weft_buffer *root, size_t off, size_t size,
                                    uint64_t holders, unsigned prefer,
                                    unsigned *targets, weft__lanes *l)
{
    weft_runtime *rt = root->rt;
    unsigned n = 0;

    for (unsigned d = 0; d < rt->ndevices; d++)
        if ((holders >> (d + 1) & 1) &&
            weft__extent_covering(root, d, off, size))
            targets[n++] = d;
    for (unsigned i = 0; i < n; i++)
        if (targets[i] == prefer) {
            targets[0] = prefer;
            n = 1;
            break;
        }
    /*
     * The reader's device holds none of the range (no device does yet, an
     * earlier graph left it elsewhere, or the placement changed): the
     * bytes go to the reader, into an extent made for them with nothing
     * fetched, and other copies go stale, rather than into the host copy
     * (a copy on the issuing thread, then an upload from it) or into the
     * old copies and over a link afterwards. Where the device has no
     * room, as before.
     */
    if (prefer < rt->ndevices && (n == 0 || targets[0] != prefer)) {
        if (weft__buffer_prepare(root, prefer, off, size, l) == 0 &&
            weft__extent_covering(root, prefer, off, size)) {
            targets[0] = prefer;
            n = 1;
        } else {
            weft_clear_error();
        }
    }
    return n;
}

/*
 * Write the range (src, else the pattern) into the extents of devices
 * targets[0, n), in order. When device f fails, those before it hold the
 * new bytes, the others the old, f either: the tracker is left saying so
 * (see weft__store_or_fill), and the failure returned.
 */
static int weft__store_devices(weft_buffer *root, size_t off, size_t size,
                               const void *src, const void *pattern,
                               size_t pattern_size, uint64_t holders,
                               const unsigned *targets, unsigned n,
                               weft__lanes *l)
{
    unsigned f;
    int rc = 0;

    for (f = 0; f < n && rc == 0; f++) {
        weft__extent *x = weft__extent_covering(root, targets[f], off, size);
        size_t xo = x->blk.offset + (off - x->lo);
        weft__queue *q = NULL;

        if (src) {
            rc = weft__replica_h2d(root, targets[f], x->blk.mem, xo, off, src,
                                   size, 0, WEFT__CAUSE_READ, l, NULL);
        } else {
            rc = weft__lanes_get(l, targets[f], WEFT__QUEUE_H2D, &q);
            if (rc == 0)
                rc = weft__submit_fill(l->submit, q, x->blk.mem, xo, pattern,
                                       pattern_size, size);
            if (rc == 0)
                rc = weft__lanes_issued(l, q, root, targets[f], off, size);
        }
    }
    if (rc < 0) {
        unsigned failed = f - 1;

        /* The host copy is written last, if at all: it has the old bytes. */
        if ((holders & 1) || failed + 1 < n) {
            for (unsigned i = 0; i <= failed; i++)
                weft__coherence_drop(&root->coh, 1 + targets[i], off, size);
        } else if (failed > 0) {
            weft__coherence_write(&root->coh, 1 + targets[0], off, size);
            for (unsigned i = 1; i < failed; i++)
                weft__coherence_mark_valid(&root->coh, 1 + targets[i], off,
                                           size);
        }
    }
    return rc;
}

/* size bytes of src, else of the pattern repeated, into host memory h. */
static void weft__host_write(unsigned char *h, size_t size, const void *src,
                             const void *pattern, size_t pattern_size)
{
    if (src) {
        memmove(h, src, size);
    } else if (pattern_size == 1) {
        memset(h, *(const unsigned char *)pattern, size);
    } else {
        for (size_t i = 0; i < size; i += pattern_size)
            memcpy(h + i, pattern, pattern_size);
    }
}

/*
 * Devices first, the host last: only a device write can fail. When device
 * f fails, those before it hold the new bytes, the others the old, f
 * either: if a copy surely holds the old bytes the written ones stop being
 * valid and the buffer is as it was, else the new bytes stay.
 */
static int weft__store_or_fill(weft_buffer *root, size_t off, size_t size,
                               const void *src, const void *pattern,
                               size_t pattern_size, unsigned prefer,
                               weft__lanes *l)
{
    uint64_t holders;
    unsigned targets[WEFT__COH_MAX_MEMS], n, host;
    weft__region r;
    int rc;

    if (size == 0)
        return 0;
    if (!src && off % pattern_size)
        return weft__fill_unaligned(root, off, size, pattern, pattern_size,
                                    prefer, l);
    /* Cut at the range's edges: the updates below then need no memory. */
    r = weft__region_range(off, size);
    if ((rc = weft__coherence_cut(&root->coh, &r)) < 0)
        return rc;
    holders = weft__coherence_holders(&root->coh, off, size);
    n = weft__store_targets(root, off, size, holders, prefer, targets, l);
    /*
     * The host copy too where it holds the range, unless that is a large
     * range a device holds as well: its bytes would be copied on this
     * thread, the one that issues every node, and only a later host
     * reader would gain (it copies them back then).
     */
    host = n == 0 || ((holders & 1) && size < WEFT__STAGE_MIN);
    if ((rc = weft__store_devices(root, off, size, src, pattern, pattern_size,
                                  holders, targets, n, l)) < 0)
        return rc;
    if (host &&
        (rc = weft__lanes_after(l, NULL, root, WEFT__HOST, off, size)) < 0)
        return rc;
    if (host) {
        weft__lanes_host_effect(l);
        weft__host_write(root->host + off, size, src, pattern, pattern_size);
    }
    weft__coherence_write(&root->coh, host ? WEFT__COH_HOST : 1 + targets[0],
                          off, size);
    for (unsigned i = host ? 0 : 1; i < n; i++)
        weft__coherence_mark_valid(&root->coh, 1 + targets[i], off, size);
    return 0;
}

int weft__buffer_store(weft_buffer *root, size_t off, const void *src,
                       size_t size, unsigned prefer, weft__lanes *l)
{
    return weft__store_or_fill(root, off, size, src, NULL, 0, prefer, l);
}

int weft__buffer_fill_range(weft_buffer *root, size_t off, size_t size,
                            const void *pattern, size_t pattern_size,
                            unsigned prefer, weft__lanes *l)
{
    return weft__store_or_fill(root, off, size, NULL, pattern, pattern_size,
                               prefer, l);
}
