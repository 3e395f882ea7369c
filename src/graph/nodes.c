/*
 * Nodes of blocks and of declared accesses: block transfers and fills,
 * host tasks, native nodes and the event nodes built on them.
 */
#include "graph_internal.h"

#include <string.h>

/* ---- block transfers --------------------------------------------------- */

/* *blk of b (named by buf and "blk" in messages) as an access of mode. */
static int weft__block_access(const weft_graph *g, weft_buffer *b,
                              const char *buf, const weft_block *blk,
                              const char *what, weft_access mode,
                              weft__access *out)
{
    int rc;

    if ((rc = weft__buffer_arg(g, b, 0, 0, buf)) < 0)
        return rc;
    if (!blk)
        return weft__error(WEFT_EINVAL, "%s is NULL", what);
    if ((rc = weft__block_arg(g, b, blk->origin, blk->row_bytes, blk->rows,
                              blk->slices, blk->row_pitch, blk->slice_pitch,
                              what)) < 0)
        return rc;
    *out = weft__access_block_make(b, blk->origin, blk->row_bytes, blk->rows,
                                   blk->slices, blk->row_pitch,
                                   blk->slice_pitch, mode);
    return 0;
}

/*
 * The host side's pitches of a block transfer of *a (named row and slice in
 * messages): 0 packed, else at least the block's row and slice. One row of
 * one slice looks at neither.
 */
static int weft__host_pitches(const weft__access *a, size_t *row_pitch,
                              size_t *slice_pitch, const char *row,
                              const char *slice)
{
    size_t rp = *row_pitch ? *row_pitch : a->size;

    if (!weft__access_is_block(a)) {
        *row_pitch = *slice_pitch = 0;
        return 0;
    }
    if (rp < a->size)
        return weft__error(WEFT_EINVAL,
                           "%s %zu is below the block's row_bytes %zu", row, rp,
                           a->size);
    if (a->slices > 1 && *slice_pitch && *slice_pitch / rp < a->rows)
        return weft__error(WEFT_EINVAL, "%s %zu is below rows * %s (%zu x %zu)",
                           slice, *slice_pitch, row, a->rows, rp);
    if (a->slices > 1 && !*slice_pitch &&
        __builtin_mul_overflow(rp, a->rows, slice_pitch))
        return weft__error(WEFT_EINVAL, "%s %zu x %zu rows overflows", row, rp,
                           a->rows);
    if (a->slices == 1)
        *slice_pitch = 0;
    *row_pitch = rp;
    return 0;
}

int weft_graph_add_write_block(weft_graph *g, weft_buffer *dst,
                               const weft_block *blk, const void *src,
                               size_t src_row_pitch, size_t src_slice_pitch,
                               weft_node *node)
{
    static const char fn[] = "weft_graph_add_write_block";
    weft__node p = weft__proto(WEFT__NODE_WRITE);
    weft__access a;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if ((rc = weft__block_access(g, dst, "dst", blk, "blk", WEFT_WRITE, &a)) ==
        0)
        rc = weft__host_pitches(&a, &src_row_pitch, &src_slice_pitch,
                                "src_row_pitch", "src_slice_pitch");
    if (rc < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    p.u.write.src = src; /* NULL is reported by instantiate */
    p.u.write.row_pitch = src_row_pitch;
    p.u.write.slice_pitch = src_slice_pitch;
    rc = weft__add_node(g, &p, &a, 1, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

int weft_graph_add_read_block(weft_graph *g, weft_buffer *src,
                              const weft_block *blk, void *dst,
                              size_t dst_row_pitch, size_t dst_slice_pitch,
                              weft_node *node)
{
    static const char fn[] = "weft_graph_add_read_block";
    weft__node p = weft__proto(WEFT__NODE_READ);
    weft__access a;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if ((rc = weft__block_access(g, src, "src", blk, "blk", WEFT_READ, &a)) ==
        0)
        rc = weft__host_pitches(&a, &dst_row_pitch, &dst_slice_pitch,
                                "dst_row_pitch", "dst_slice_pitch");
    if (rc < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    p.u.read.dst = dst;
    p.u.read.row_pitch = dst_row_pitch;
    p.u.read.slice_pitch = dst_slice_pitch;
    rc = weft__add_node(g, &p, &a, 1, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

/* Access a (of a root) as a block of addresses for weft__block_overlap. */
static weft__block weft__access_addr_block(const weft__access *a)
{
    weft__block b = {a->buf->offset + a->offset,
                     a->size,
                     a->rows,
                     a->slices,
                     a->row_pitch,
                     a->slice_pitch};

    return b;
}

int weft_graph_add_copy_block(weft_graph *g, weft_buffer *dst,
                              const weft_block *dblk, weft_buffer *src,
                              const weft_block *sblk, weft_node *node)
{
    static const char fn[] = "weft_graph_add_copy_block";
    weft__node p = weft__proto(WEFT__NODE_COPY);
    weft__access a[2];
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    /* Accesses: [0] the source, [1] the destination (exec.c relies on it). */
    if ((rc = weft__block_access(g, dst, "dst", dblk, "dblk", WEFT_WRITE,
                                 &a[1])) == 0)
        rc = weft__block_access(g, src, "src", sblk, "sblk", WEFT_READ, &a[0]);
    if (rc == 0 && (dblk->row_bytes != sblk->row_bytes ||
                    dblk->rows != sblk->rows || dblk->slices != sblk->slices))
        rc = weft__error(WEFT_EINVAL,
                         "dblk (%zu rows of %zu bytes x %zu slices) and sblk "
                         "(%zu rows of %zu bytes x %zu slices) differ in "
                         "extent",
                         dblk->rows, dblk->row_bytes, dblk->slices, sblk->rows,
                         sblk->row_bytes, sblk->slices);
    if (rc == 0 && src->root == dst->root) {
        weft__block x = weft__access_addr_block(&a[0]);
        weft__block y = weft__access_addr_block(&a[1]);

        if (weft__block_overlap(&x, &y))
            rc = weft__error(WEFT_EINVAL, "the source and destination blocks "
                                          "share bytes of the same buffer");
    }
    if (rc < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    rc = weft__add_node(g, &p, a, 2, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

int weft_graph_add_fill_block(weft_graph *g, weft_buffer *dst,
                              const weft_block *blk, const void *pattern,
                              size_t pattern_size, weft_node *node)
{
    static const char fn[] = "weft_graph_add_fill_block";
    weft__node p = weft__proto(WEFT__NODE_FILL);
    weft__access a;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if ((rc = weft__block_access(g, dst, "dst", blk, "blk", WEFT_WRITE, &a)) ==
        0)
        rc = weft__fill_check(pattern, pattern_size, blk->origin,
                              blk->row_bytes, "fill");
    if (rc < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    memcpy(p.u.fill.pattern, pattern, pattern_size);
    p.u.fill.size = (unsigned)pattern_size;
    rc = weft__add_node(g, &p, &a, 1, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

/* ---- host tasks -------------------------------------------------------- */

/* The declared accesses of a host task or native node, checked. */
static int weft__desc_check(const weft_graph *g, const weft_access_desc *acc,
                            unsigned nacc)
{
    char what[32];
    int rc = 0;

    if (nacc && !acc)
        return weft__error(WEFT_EINVAL, "%u accesses but the array is NULL",
                           nacc);
    for (unsigned i = 0; rc == 0 && i < nacc; i++) {
        /* "access <i>", by hand: snprintf costs more than the checks. */
        char digits[12];
        size_t nd = 0, at = sizeof "access " - 1;

        /* A range that passes (most): no name made for it. */
        if (acc[i].mode >= WEFT_READ && acc[i].mode <= WEFT_READ_WRITE &&
            acc[i].rows == 0 &&
            weft__buffer_arg_ok(g, acc[i].buffer, acc[i].offset, acc[i].size))
            continue;
        memcpy(what, "access ", at);
        for (unsigned v = i; nd == 0 || v; v /= 10)
            digits[nd++] = (char)('0' + v % 10);
        while (nd)
            what[at++] = digits[--nd];
        what[at] = '\0';
        if (acc[i].mode < WEFT_READ || acc[i].mode > WEFT_READ_WRITE)
            rc = weft__error(WEFT_EINVAL, "access %u: unknown mode %d", i,
                             (int)acc[i].mode);
        else if (acc[i].rows == 0)
            rc = weft__buffer_arg(g, acc[i].buffer, acc[i].offset, acc[i].size,
                                  what);
        else
            rc = weft__block_arg(g, acc[i].buffer, acc[i].offset, acc[i].size,
                                 acc[i].rows, acc[i].slices, acc[i].row_pitch,
                                 acc[i].slice_pitch, what);
    }
    return rc;
}

/* A declared access (checked by weft__desc_check) as the graph keeps it. */
static weft__access weft__access_desc_make(const weft_access_desc *d)
{
    return weft__access_block_make(d->buffer, d->offset, d->size, d->rows,
                                   d->slices, d->row_pitch, d->slice_pitch,
                                   d->mode);
}

/* A host task of any kind (fn or status set, not both; poll: status polls). */
static int weft__add_host(weft_graph *g, const char *name,
                          weft_host_task_fn *fn, weft_host_status_fn *status,
                          int poll, void *user, const weft_access_desc *acc,
                          unsigned nacc, weft_node *node)
{
    weft__access stack_acc[WEFT__STACK_ACC], *a = stack_acc;
    weft__node p = weft__proto(WEFT__NODE_HOST);
    int rc = 0;

    if ((rc = weft__check_graph(g, name)) < 0)
        return rc;
    if (!fn && !status)
        rc = weft__error(WEFT_EINVAL, "fn is NULL");
    else
        rc = weft__desc_check(g, acc, nacc);
    if (rc == 0 && nacc > WEFT__STACK_ACC &&
        !(a = weft__malloc(nacc * sizeof *a)))
        rc = weft__error(WEFT_ENOMEM, "out of memory");
    if (rc < 0)
        return weft__add_error(name, p.kind, NULL, rc);
    for (unsigned i = 0; i < nacc; i++)
        a[i] = weft__access_desc_make(&acc[i]);
    p.u.host.fn = fn;
    p.u.host.status = status;
    p.u.host.poll = (unsigned char)poll;
    p.u.host.user = user;
    rc = weft__add_node(g, &p, a, nacc, NULL, 0, 0, node);
    if (a != stack_acc)
        weft__free(a);
    return rc < 0 ? weft__add_error(name, p.kind, NULL, rc) : 0;
}

int weft_graph_add_host(weft_graph *g, weft_host_task_fn *fn, void *user,
                        const weft_access_desc *acc, unsigned nacc,
                        weft_node *node)
{
    return weft__add_host(g, "weft_graph_add_host", fn, NULL, 0, user, acc,
                          nacc, node);
}

int weft_graph_add_host_status(weft_graph *g, weft_host_status_fn *fn,
                               void *user, const weft_access_desc *acc,
                               unsigned nacc, weft_node *node)
{
    return weft__add_host(g, "weft_graph_add_host_status", NULL, fn, 0, user,
                          acc, nacc, node);
}

int weft_graph_add_host_poll(weft_graph *g, weft_host_status_fn *fn, void *user,
                             const weft_access_desc *acc, unsigned nacc,
                             weft_node *node)
{
    return weft__add_host(g, "weft_graph_add_host_poll", NULL, fn, 1, user, acc,
                          nacc, node);
}

/* ---- native nodes ------------------------------------------------------ */

/* The same for a node whose label needs more than its kind. */
static int weft__add_error_node(const char *fn, const weft__node *n, int rc)
{
    char label[128];

    return weft__error_prefix(rc, "%s: the node being added (%s)", fn,
                              weft__node_label(n, label, sizeof label));
}

void weft__native_impl_at(const weft__node *nd, const weft_arg *args,
                          const unsigned char *bytes, uint32_t k,
                          weft__native_impl *out)
{
    const weft_arg *a = &args[nd->u.native.arg];

    memcpy(out, bytes + a->value.u64 + (size_t)k * sizeof *out, sizeof *out);
}

weft_native_fn *weft__native_fn_for(const weft__node *nd, const weft_arg *args,
                                    const unsigned char *bytes,
                                    const weft__device *dev)
{
    weft__native_impl im;

    if (!weft__drv_native_supported(dev))
        return NULL;
    for (uint32_t k = 0; k < nd->u.native.nimpl; k++) {
        weft__native_impl_at(nd, args, bytes, k, &im);
        if (strcmp(im.driver, dev->drv->name) == 0 &&
            (im.type == 0 || im.type == dev->props.type))
            return im.fn;
    }
    return NULL;
}

int weft__node_runs_on(const weft__node *nd, const weft_arg *args,
                       const unsigned char *bytes, weft_runtime *rt,
                       unsigned dev)
{
    if (dev >= rt->ndevices)
        return 0;
    if (nd->kind == WEFT__NODE_KERNEL)
        return weft__kernel_impl(nd->u.kernel.k, dev) != NULL;
    if (nd->kind == WEFT__NODE_NATIVE)
        return weft__native_fn_for(nd, args, bytes, rt->devices[dev]) != NULL;
    return 0;
}

/* The implementations of weft_graph_add_native, checked. */
static int weft__native_check(const weft_native_impl *impls, unsigned nimpls)
{
    static const char *const drivers[] = {"cuda", "opencl", "host", "sim"};

    if (!impls)
        return weft__error(WEFT_EINVAL, "impls is NULL");
    if (nimpls == 0)
        return weft__error(WEFT_EINVAL, "nimpls is 0: a native node needs "
                                        "an implementation");
    if (nimpls > 64)
        return weft__error(WEFT_EINVAL,
                           "nimpls: %u implementations (at "
                           "most 64)",
                           nimpls);
    for (unsigned i = 0; i < nimpls; i++) {
        unsigned d = 0;

        if (!impls[i].fn)
            return weft__error(WEFT_EINVAL, "impls[%u]: fn is NULL", i);
        if (!impls[i].driver)
            return weft__error(WEFT_EINVAL, "impls[%u]: driver is NULL", i);
        while (d < WEFT__COUNTOF(drivers) &&
               strcmp(impls[i].driver, drivers[d]) != 0)
            d++;
        if (d == WEFT__COUNTOF(drivers))
            return weft__error(WEFT_EINVAL,
                               "impls[%u]: driver \"%.32s\" is none of cuda, "
                               "opencl, host, sim",
                               i, impls[i].driver);
        if ((int)impls[i].type < 0 ||
            (int)impls[i].type > WEFT_DEVICE_SIMULATED)
            return weft__error(WEFT_EINVAL,
                               "impls[%u]: type %d is no weft_device_type", i,
                               (int)impls[i].type);
    }
    return 0;
}

/* A native node of kind what (WEFT__NATIVE_*), for the public adds. */
static int weft__add_native(weft_graph *g, const char *name, uint32_t what,
                            const weft_native_impl *impls, unsigned nimpls,
                            const weft_access_desc *acc, unsigned nacc,
                            void *user, weft_node *node)
{
    weft__access stack_acc[WEFT__STACK_ACC], *a = stack_acc;
    weft__native_impl tab[64];
    weft__node p = weft__proto(WEFT__NODE_NATIVE);
    weft_arg blob;
    int rc;

    p.u.native.what = what;
    if ((rc = weft__check_graph(g, name)) < 0)
        return rc;
    if ((rc = weft__native_check(impls, nimpls)) == 0)
        rc = weft__desc_check(g, acc, nacc);
    if (rc == 0 && nacc > WEFT__STACK_ACC &&
        !(a = weft__malloc(nacc * sizeof *a)))
        rc = weft__error(WEFT_ENOMEM, "out of memory");
    if (rc < 0)
        return weft__add_error_node(name, &p, rc);
    for (unsigned i = 0; i < nacc; i++)
        a[i] = weft__access_desc_make(&acc[i]);
    memset(tab, 0, sizeof tab);
    for (unsigned i = 0; i < nimpls; i++) {
        weft__strlcpy(tab[i].driver, impls[i].driver, sizeof tab[i].driver);
        tab[i].type = impls[i].type;
        tab[i].fn = impls[i].fn;
    }
    /* The table is the node's one argument: bytes copied into the graph. */
    blob = weft_arg_bytes(tab, nimpls * sizeof *tab);
    p.u.native.nimpl = nimpls;
    p.u.native.user = user;
    rc = weft__add_node(g, &p, a, nacc, &blob, 1, blob.size, node);
    if (a != stack_acc)
        weft__free(a);
    return rc < 0 ? weft__add_error_node(name, &p, rc) : 0;
}

int weft_graph_add_native(weft_graph *g, const weft_native_impl *impls,
                          unsigned nimpls, const weft_access_desc *acc,
                          unsigned nacc, void *user, weft_node *node)
{
    return weft__add_native(g, "weft_graph_add_native", WEFT__NATIVE_FN, impls,
                            nimpls, acc, nacc, user, node);
}

int weft__native_event_wait(const weft_native_ctx *ctx, void *event)
{
    return weft__drv_external_wait(ctx->q, event);
}

int weft__native_event_record(const weft_native_ctx *ctx, void *event)
{
    return weft__drv_external_record(ctx->q, event);
}

/* An event node: a native node whose function is weft's own. */
static int weft__add_event(weft_graph *g, const char *name, uint32_t what,
                           const char *driver, void *event,
                           const weft_access_desc *acc, unsigned nacc,
                           weft_node *node)
{
    weft_native_impl impl = {driver, 0,
                             what == WEFT__NATIVE_WAIT
                                 ? weft__native_event_wait
                                 : weft__native_event_record};
    weft__node p = weft__proto(WEFT__NODE_NATIVE);
    int rc;

    p.u.native.what = what;
    if ((rc = weft__check_graph(g, name)) < 0)
        return rc;
    if (!driver)
        rc = weft__error(WEFT_EINVAL, "driver is NULL");
    else if (!event)
        rc = weft__error(WEFT_EINVAL, "event is NULL");
    else if ((rc = weft__native_check(&impl, 1)) < 0)
        rc = weft__error(WEFT_EINVAL,
                         "driver \"%.32s\" is none of cuda, opencl, host, sim",
                         driver);
    if (rc < 0)
        return weft__add_error_node(name, &p, rc);
    return weft__add_native(g, name, what, &impl, 1, acc, nacc, event, node);
}

int weft_graph_add_event_wait(weft_graph *g, const char *driver, void *event,
                              const weft_access_desc *acc, unsigned nacc,
                              weft_node *node)
{
    return weft__add_event(g, "weft_graph_add_event_wait", WEFT__NATIVE_WAIT,
                           driver, event, acc, nacc, node);
}

int weft_graph_add_event_record(weft_graph *g, const char *driver, void *event,
                                const weft_access_desc *acc, unsigned nacc,
                                weft_node *node)
{
    return weft__add_event(g, "weft_graph_add_event_record",
                           WEFT__NATIVE_RECORD, driver, event, acc, nacc, node);
}
