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

/* ---- blocks ------------------------------------------------------------ */

/* Slice s of b as a region. */
static weft__region weft__block_slice(const weft__buffer_block *b, size_t s)
{
    weft__region r = b->r;

    r.off += s * b->slice_pitch;
    return r;
}

/* ready (make_valid or prepare) every slice of b in copy where. */
static int weft__block_ready(weft_buffer *root, const weft__buffer_block *b,
                             unsigned where, int need, weft__lanes *l)
{
    int rc = 0;

    for (size_t s = 0; s < b->slices && rc == 0; s++) {
        weft__region r = weft__block_slice(b, s);

        rc = need ? weft__buffer_make_valid_region(root, where, &r, l)
                  : weft__buffer_prepare_region(root, where, &r, l);
    }
    return rc;
}

/* written (ok) or discard of every slice of b in copy where. */
static void weft__block_written(weft_buffer *root, const weft__buffer_block *b,
                                unsigned where, int ok)
{
    for (size_t s = 0; s < b->slices; s++) {
        weft__region r = weft__block_slice(b, s);

        if (ok)
            weft__buffer_written_region(root, where, &r);
        else
            weft__buffer_discard_region(root, where, &r);
    }
}

/*
 * The side of a rect for b at byte moff of its memory (or host address
 * 0 for a host pointer at its first byte).
 */
static weft__rect_side weft__block_side(const weft__buffer_block *b,
                                        size_t moff)
{
    weft__rect_side s = {moff, b->r.h > 1 ? b->r.p : b->r.w,
                         b->slices > 1 ? b->slice_pitch : 0};

    return s;
}

static weft__rect weft__block_rect(const weft__buffer_block *b,
                                   weft__rect_side dst, weft__rect_side src)
{
    weft__rect r = {dst, src, b->r.w, b->r.h, b->slices};

    return r;
}

/* A block copy over a link counted as replica.c counts its copies. */
static void weft__block_count(weft__lanes *l, uint64_t *link, uint64_t *copies,
                              uint64_t *cause, uint64_t n)
{
    weft__lanes_stat(l, link, n);
    weft__lanes_stat(l, copies, 1);
    weft__lanes_stat(l, cause, n);
}

/* Host pitches: 0 packed. */
static weft__rect_side weft__host_side(const weft__buffer_block *b,
                                       size_t row_pitch, size_t slice_pitch)
{
    weft__rect_side s = {0, row_pitch ? row_pitch : b->r.w, 0};

    s.slice_pitch = slice_pitch ? slice_pitch : s.row_pitch * b->r.h;
    return s;
}

unsigned weft__buffer_block_holder(weft_buffer *root,
                                   const weft__buffer_block *b)
{
    size_t lo = b->r.off, end = weft__buffer_block_end(b);

    for (unsigned d = 0; d < root->rt->ndevices; d++) {
        weft__mem *m;
        size_t mo;
        int ok;

        if (!weft__buffer_device_find(root, d, lo, end - lo, &m, &mo))
            continue;
        ok = 1;
        for (size_t s = 0; s < b->slices && ok; s++) {
            weft__region r = weft__block_slice(b, s);

            ok = weft__coherence_is_valid_region(&root->coh, 1 + d, &r);
        }
        if (ok)
            return d;
    }
    return WEFT__HOST;
}

/* Row y of slice s of host memory with side hs. */
static size_t weft__host_row(const weft__rect_side *hs, size_t s, size_t y)
{
    return s * hs->slice_pitch + y * hs->row_pitch;
}

int weft__buffer_store_block(weft_buffer *root, const weft__buffer_block *b,
                             const void *src, size_t row_pitch,
                             size_t slice_pitch, unsigned device,
                             weft__lanes *l)
{
    size_t lo = b->r.off, end = weft__buffer_block_end(b);
    weft__rect_side hs = weft__host_side(b, row_pitch, slice_pitch);
    weft__span span = {root, lo, end - lo};
    weft__queue *q = NULL;
    weft__mem *m;
    size_t mo;
    weft__rect r;
    int rc;

    if (device == WEFT__HOST) {
        if ((rc = weft__lanes_after(l, NULL, root, WEFT__HOST, lo, end - lo)) <
            0)
            return rc;
        weft__lanes_host_effect(l);
        for (size_t s = 0; s < b->slices; s++)
            for (size_t y = 0; y < b->r.h; y++)
                memmove(root->host + lo + s * b->slice_pitch + y * b->r.p,
                        (const char *)src + weft__host_row(&hs, s, y), b->r.w);
        weft__block_written(root, b, WEFT__HOST, 1);
        return 0;
    }
    if ((rc = weft__buffer_hold(&span, 1, device, l)) != 0 ||
        (rc = weft__block_ready(root, b, device, 0, l)) != 0)
        return rc;
    weft__buffer_device_ptr(root, device, lo, &m, &mo);
    r = weft__block_rect(b, weft__block_side(b, mo), hs);
    rc = weft__lanes_get(l, device, WEFT__QUEUE_H2D, &q);
    if (rc == 0)
        rc = weft__lanes_after(l, q, root, device, lo, end - lo);
    if (rc == 0)
        rc = weft__submit_copy_h2d_rect(l->submit, q, m, src, &r);
    /* Also after a failure: rows before it may still be running. */
    if (rc == 0)
        rc = weft__lanes_issued(l, q, root, device, lo, end - lo);
    else if (q)
        weft__lanes_settle(l, q);
    if (rc == 0)
        weft__block_count(l, &root->rt->stats.h2d_bytes,
                          &root->rt->stats.h2d_copies,
                          &root->rt->stats.read_bytes, weft__rect_bytes(&r));
    weft__block_written(root, b, device, rc == 0);
    return rc;
}

int weft__buffer_load_block(weft_buffer *root, const weft__buffer_block *b,
                            void *dst, size_t row_pitch, size_t slice_pitch,
                            unsigned device, weft__lanes *l)
{
    size_t lo = b->r.off, end = weft__buffer_block_end(b);
    weft__rect_side hs = weft__host_side(b, row_pitch, slice_pitch);
    weft__queue *q = NULL;
    weft__extent *x;
    weft__mem *m;
    size_t mo;
    weft__rect r;
    int rc;

    if (device == WEFT__HOST) {
        if ((rc = weft__block_ready(root, b, WEFT__HOST, 1, l)) < 0 ||
            (rc = weft__lanes_after(l, NULL, root, WEFT__HOST, lo, end - lo)) <
                0)
            return rc;
        weft__lanes_host_effect(l);
        for (size_t s = 0; s < b->slices; s++)
            for (size_t y = 0; y < b->r.h; y++)
                memmove((char *)dst + weft__host_row(&hs, s, y),
                        root->host + lo + s * b->slice_pitch + y * b->r.p,
                        b->r.w);
        return 0;
    }
    /* The extent stays while the root is locked (as a direct load's). */
    x = weft__extent_covering(root, device, lo, end - lo);
    x->pin = root->epoch;
    x->last_use = __atomic_load_n(&root->rt->tick, __ATOMIC_RELAXED);
    m = x->blk.mem;
    mo = x->blk.offset + (lo - x->lo);
    r = weft__block_rect(b, hs, weft__block_side(b, mo));
    rc = weft__lanes_get(l, device, WEFT__QUEUE_D2H, &q);
    if (rc == 0)
        rc = weft__lanes_after(l, q, root, device, lo, end - lo);
    if (rc == 0)
        rc = weft__submit_copy_d2h_rect(l->submit, q, dst, m, &r);
    /* The caller's memory is no copy of the root's: nothing pending (no
     * root), only the bytes, for the plan's counts and traces. */
    if (rc == 0)
        rc = weft__lanes_issued(l, q, NULL, WEFT__HOST, 0,
                                (size_t)weft__rect_bytes(&r));
    else if (q)
        weft__lanes_settle(l, q);
    if (rc == 0)
        weft__block_count(l, &root->rt->stats.d2h_bytes,
                          &root->rt->stats.d2h_copies,
                          &root->rt->stats.host_bytes, weft__rect_bytes(&r));
    return rc;
}

int weft__buffer_copy_block(weft_buffer *dst, const weft__buffer_block *db,
                            weft_buffer *src, const weft__buffer_block *sb,
                            unsigned device, weft__lanes *l)
{
    size_t slo = sb->r.off, send = weft__buffer_block_end(sb);
    size_t dlo = db->r.off, dend = weft__buffer_block_end(db);
    weft__queue *q = NULL;
    weft__mem *sm, *dm;
    size_t smo, dmo;
    weft__rect r;
    int rc;

    if (device == WEFT__HOST) {
        if ((rc = weft__block_ready(src, sb, WEFT__HOST, 1, l)) < 0 ||
            (rc = weft__lanes_after(l, NULL, src, WEFT__HOST, slo,
                                    send - slo)) < 0 ||
            (rc = weft__lanes_after(l, NULL, dst, WEFT__HOST, dlo,
                                    dend - dlo)) < 0)
            return rc;
        weft__lanes_host_effect(l);
        for (size_t s = 0; s < sb->slices; s++)
            for (size_t y = 0; y < sb->r.h; y++)
                memmove(dst->host + dlo + s * db->slice_pitch + y * db->r.p,
                        src->host + slo + s * sb->slice_pitch + y * sb->r.p,
                        sb->r.w);
        weft__block_written(dst, db, WEFT__HOST, 1);
        return 0;
    }
    {
        /* Room for both at once (they may share a root). */
        weft__span spans[2] = {{src, slo, send - slo}, {dst, dlo, dend - dlo}};

        rc = weft__buffer_hold(spans, 2, device, l);
    }
    if (rc == 0)
        rc = weft__block_ready(src, sb, device, 1, l);
    if (rc == 0)
        rc = weft__block_ready(dst, db, device, 0, l);
    if (rc != 0)
        return rc;
    /* After both: readying dst may have merged src's extent. */
    weft__buffer_device_ptr(src, device, slo, &sm, &smo);
    weft__buffer_device_ptr(dst, device, dlo, &dm, &dmo);
    r = weft__block_rect(sb, weft__block_side(db, dmo),
                         weft__block_side(sb, smo));
    rc = weft__lanes_get(l, device, WEFT__QUEUE_COMPUTE, &q);
    if (rc == 0)
        rc = weft__lanes_after(l, q, src, device, slo, send - slo);
    if (rc == 0)
        rc = weft__lanes_after(l, q, dst, device, dlo, dend - dlo);
    if (rc == 0)
        rc = weft__submit_copy_d2d_rect(l->submit, q, dm, sm, &r);
    if (rc == 0)
        rc = weft__lanes_issued(l, q, dst, device, dlo, dend - dlo);
    else if (q)
        weft__lanes_settle(l, q);
    weft__block_written(dst, db, device, rc == 0);
    return rc;
}
