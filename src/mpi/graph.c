/*
 * Building a weft_mpi graph: which rank runs each node, where each range's
 * current bytes are (the tracks), and the transfers between ranks.
 *
 * Every rank runs this code on the same calls, so every rank computes the
 * same ranks, tracks and transfer tags; only the nodes a rank adds to its
 * local graph differ.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define WM_NO_NODE UINT32_MAX

static int grow(void **arr, unsigned *cap, unsigned need, size_t elem)
{
    unsigned c = *cap ? *cap : 8;
    void *p;

    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    p = realloc(*arr, c * elem);
    if (!p)
        return WEFT_ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

int weft_mpi_graph_create(weft_mpi *mpi, weft_mpi_graph **g)
{
    weft_mpi_graph *mg;
    int rc;

    if (!mpi || !g)
        return wm_error(WEFT_EINVAL, "weft_mpi_graph_create: %s is NULL",
                        !mpi ? "mpi" : "g");
    mg = calloc(1, sizeof *mg);
    if (!mg)
        return wm_error(WEFT_ENOMEM, "weft_mpi_graph_create: out of memory");
    rc = weft_graph_create(mpi->rt, &mg->local);
    if (rc < 0) {
        free(mg);
        return wm_weft_error(rc, "weft_mpi_graph_create");
    }
    mg->mpi = mpi;
    mpi->graphs++;
    *g = mg;
    return 0;
}

int weft_mpi_graph_destroy(weft_mpi_graph *g)
{
    if (!g)
        return 0;
    if (g->exec)
        return wm_error(WEFT_EBUSY,
                        "weft_mpi_graph_destroy: an exec made from g lives");
    weft_graph_destroy(g->local);
    for (unsigned i = 0; i < g->ntracks; i++) {
        wm_track *t = &g->tracks[i];

        t->reg->users--;
        wm_track_free(t);
    }
    for (unsigned i = 0; i < g->neps; i++)
        free(g->eps[i]);
    for (unsigned i = 0; i < g->nwraps; i++)
        free(g->wraps[i]);
    free(g->tracks);
    free(g->eps);
    free(g->wraps);
    free(g->node_rank);
    free(g->node_local);
    free(g->since);
    free(g->touch);
    free(g->open);
    free(g->pending);
    g->mpi->graphs--;
    free(g);
    return 0;
}

/* Send n was added: the next receive runs after it. */
static int note_send(weft_mpi_graph *g, weft_node n)
{
    if (grow((void **)&g->since, &g->scap, g->nsince + 1, sizeof *g->since))
        return WEFT_ENOMEM;
    g->since[g->nsince++] = n;
    return 0;
}

/* An access of at in reg (a range, or a 2-D block). */
static weft_access_desc access_of(wm_reg *reg, wm_region at, weft_access mode)
{
    if (at.rows > 1)
        return weft_access_block(
            reg->buf, weft_block2(at.origin, at.row_bytes, at.rows, at.pitch),
            mode);
    return weft_access_range(reg->buf, at.origin, at.row_bytes, mode);
}

/* This rank touches at of reg (wrote: a node writes it); *seq its place. */
static int note_touch(weft_mpi_graph *g, wm_reg *reg, wm_region at, int wrote,
                      unsigned *seq)
{
    if (grow((void **)&g->touch, &g->thcap, g->ntouch + 1, sizeof *g->touch))
        return WEFT_ENOMEM;
    g->touch[g->ntouch++] = (wm_touch){reg, at, g->seq, wrote};
    if (seq)
        *seq = g->seq;
    g->seq++;
    return 0;
}

/*
 * The next node of this rank writes at of reg: each open send of any of
 * its bytes gets a completion task first (reading the send's bytes, after
 * the send's task), which the writer then follows (write after read), as
 * does every later writer of those bytes, by weft's own inference. A
 * device send's (aware) task reads nothing on the host, where its bytes
 * are not, so weft infers nothing from it: the send stays open, and this
 * writer and every later one of any of its bytes get an edge from its one
 * completion task (pending).
 */
static int settle_open(weft_mpi_graph *g, wm_reg *reg, wm_region at)
{
    unsigned k = 0;
    int rc = 0;

    for (unsigned i = 0; i < g->nopen; i++) {
        wm_endpoint *ep = g->open[i];

        if (rc == 0 && ep->dev && ep->has_settled && ep->reg == reg &&
            wm_overlap(&ep->at, &at)) {
            unsigned p = 0;

            while (p < g->npending && g->pending[p] != ep->settled)
                p++; /* (a node may write its bytes through two uses) */
            if (p == g->npending &&
                (rc = grow((void **)&g->pending, &g->pcap, g->npending + 1,
                           sizeof *g->pending)) == 0)
                g->pending[g->npending++] = ep->settled;
            g->open[k++] = ep;
            continue;
        }
        if (rc == 0 && ep->reg == reg && wm_overlap(&ep->at, &at)) {
            weft_access_desc acc = access_of(reg, ep->at, WEFT_READ);
            weft_node n;

            rc = weft_graph_add_host_poll(g->local, wm_sent_task, ep,
                                          ep->dev ? NULL : &acc, !ep->dev, &n);
            if (rc == 0)
                rc = weft_graph_add_edge(g->local, ep->node, n);
            if (rc == 0 && ep->dev &&
                (rc = grow((void **)&g->pending, &g->pcap, g->npending + 1,
                           sizeof *g->pending)) == 0) {
                g->pending[g->npending++] = n;
                ep->settled = n;
                ep->has_settled = 1;
                g->open[k++] = ep; /* later writers follow n too */
            }
            if (rc == 0)
                continue;
        }
        g->open[k++] = ep;
    }
    g->nopen = k;
    return rc;
}

/* Node n (just added) follows the completion tasks settle_open left. */
static int follow_pending(weft_mpi_graph *g, weft_node n)
{
    int rc = 0;

    for (unsigned i = 0; rc == 0 && i < g->npending; i++)
        rc = weft_graph_add_edge(g->local, g->pending[i], n);
    g->npending = 0;
    return rc;
}

/*
 * The native node of a device endpoint (acc: its access, on the bytes
 * moved), on this rank's GPU. Not capturable: what it enqueues changes
 * at the second launch (wm_ipc_setup).
 */
static int add_copy_node(weft_mpi_graph *g, wm_endpoint *ep, weft_native_fn *fn,
                         const weft_access_desc *acc)
{
    weft_native_impl impl = {"cuda", (weft_device_type)0, fn};
    int rc;

    rc = weft_graph_add_native(g->local, &impl, 1, acc, 1, ep, &ep->copy_node);
    if (rc == 0)
        rc = weft_graph_set_device(g->local, ep->copy_node, g->mpi->gpu);
    return rc;
}

int wm_add_transfer(weft_mpi_graph *g, wm_reg *reg, wm_region at, int from,
                    int to)
{
    weft_mpi *mpi = g->mpi;
    int tag = 1 + (int)g->ntransfers++;
    wm_endpoint *ep;
    weft_access_desc acc;
    weft_node n;
    int rc;

    if (mpi->rank != from && mpi->rank != to)
        return 0;
    if (grow((void **)&g->eps, &g->ecap, g->neps + 1, sizeof *g->eps))
        return WEFT_ENOMEM;
    ep = calloc(1, sizeof *ep);
    if (!ep)
        return WEFT_ENOMEM;
    ep->g = g;
    ep->reg = reg;
    ep->send = mpi->rank == from;
    ep->peer = ep->send ? to : from;
    ep->tag = tag;
    ep->at = at;
    ep->size = at.rows * at.row_bytes;
    ep->aware = wm_aware_pair(mpi, from, to);
    ep->dev = ep->aware || wm_ipc_pair(mpi, from, to);
    ep->packed = ep->send && !ep->dev && ep->size < WM_DIRECT_MIN;
    ep->req = ep->direct = ep->fill = MPI_REQUEST_NULL;
    ep->type = MPI_DATATYPE_NULL;
    acc = access_of(reg, at, ep->send ? WEFT_READ : WEFT_WRITE);
    if (!ep->send && ep->dev) {
        /* the condition to export it: no earlier touch of this rank */
        ep->ipc_first = 1;
        for (unsigned k = 0; k < g->ntouch; k++)
            if (g->touch[k].reg == reg && wm_overlap(&g->touch[k].at, &at))
                ep->ipc_first = 0;
    }
    if (ep->send && ep->dev) {
        rc = add_copy_node(g, ep, wm_copy_out, &acc);
        if (rc == 0)
            rc = weft_graph_add_host_status(g->local, wm_send_task, ep, NULL, 0,
                                            &n);
        if (rc == 0)
            rc = weft_graph_add_edge(g->local, ep->copy_node, n);
    } else if (ep->send) {
        rc =
            weft_graph_add_host_status(g->local, wm_send_task, ep, &acc, 1, &n);
    } else {
        rc = settle_open(g, reg, at);
        if (rc == 0)
            rc = weft_graph_add_host_poll(g->local, wm_recv_task, ep,
                                          ep->dev ? NULL : &acc,
                                          ep->dev ? 0 : 1, &n);
        if (rc == 0)
            rc = follow_pending(g, n);
        if (rc == 0 && g->have_recv)
            rc = weft_graph_add_edge(g->local, g->last_recv, n);
        for (unsigned i = 0; rc == 0 && i < g->nsince; i++)
            rc = weft_graph_add_edge(g->local, g->since[i], n);
        if (rc == 0 && ep->dev)
            rc = add_copy_node(g, ep, wm_copy_in, &acc);
        if (rc == 0 && ep->dev)
            rc = weft_graph_add_edge(g->local, n, ep->copy_node);
        if (rc == 0) {
            g->have_recv = 1;
            g->last_recv = n;
            g->nsince = 0;
        }
    }
    if (rc == 0)
        rc = note_touch(g, reg, at, 0, &ep->seq);
    if (rc == 0 && ep->send)
        rc = note_send(g, n);
    if (rc == 0 && ep->send && !ep->packed && (!ep->dev || ep->aware) &&
        grow((void **)&g->open, &g->ocap, g->nopen + 1, sizeof *g->open))
        rc = WEFT_ENOMEM;
    if (rc < 0) {
        free(ep);
        return rc;
    }
    ep->node = n;
    /* an IPC pair's send has its native node copy the bytes out before
     * anything after it writes them; a CUDA-aware MPI reads them on the
     * device until the send completes */
    if (ep->send && !ep->packed && (!ep->dev || ep->aware))
        g->open[g->nopen++] = ep;
    g->eps[g->neps++] = ep;
    return 0;
}

/*
 * A node's buffer access, resolved: a registered buffer and a region, or
 * slices regions slice_pitch apart (3-D blocks).
 */
typedef struct wm_use {
    wm_reg *reg;
    wm_region at;
    size_t slices, slice_pitch;
    weft_access mode;
} wm_use;

/*
 * Check one access (a range, or a block where a->rows is above 0) and
 * resolve it into *u, as weft would check it: every rank must refuse
 * alike. WEFT_WHOLE sizes of ranges run to the end.
 */
static int resolve(weft_mpi_graph *g, const char *fn, unsigned i,
                   const weft_access_desc *a, wm_use *u)
{
    wm_reg *reg = a->buffer ? wm_find(g->mpi, a->buffer) : NULL;
    size_t size = a->size, offset = a->offset, last;
    size_t rows = a->rows ? a->rows : 1, slices = a->rows ? a->slices : 1;
    size_t pitch = rows > 1 ? a->row_pitch : size;
    size_t spitch = slices > 1 ? a->slice_pitch : 0;

    if (!reg)
        return wm_error(WEFT_EINVAL, "%s: access %u: %s", fn, i,
                        a->buffer ? "the buffer is not registered with weft_mpi"
                                  : "the buffer is NULL");
    if (a->mode != WEFT_READ && a->mode != WEFT_WRITE &&
        a->mode != WEFT_READ_WRITE)
        return wm_error(WEFT_EINVAL, "%s: access %u: unknown access mode %d",
                        fn, i, (int)a->mode);
    if (a->rows == 0 && size == WEFT_WHOLE)
        size = pitch = offset <= reg->size ? reg->size - offset : 0;
    if (a->rows > 0 &&
        (size == 0 || slices == 0 || (rows > 1 && pitch < size) ||
         (slices > 1 && (spitch % pitch || spitch < rows * pitch))))
        return wm_error(WEFT_EINVAL,
                        "%s: access %u: not a block (row_bytes %zu, rows %zu, "
                        "slices %zu, row_pitch %zu, slice_pitch %zu)",
                        fn, i, size, rows, slices, a->row_pitch,
                        a->slice_pitch);
    last = size ? (slices - 1) * spitch + (rows - 1) * pitch + size : 0;
    if (offset > reg->size || last > reg->size - offset ||
        (size && size > reg->size) || (rows > 1 && pitch > reg->size) ||
        (slices > 1 && spitch > reg->size))
        return wm_error(WEFT_ERANGE,
                        "%s: access %u: %zu bytes from offset %zu: outside "
                        "the buffer of %zu bytes",
                        fn, i, last, offset, reg->size);
    *u = (wm_use){reg, {offset, size, rows, pitch}, slices, spitch, a->mode};
    return 0;
}

/* The node's rank: named, else the first writer's owner, ... */
static int choose_rank(const weft_mpi_graph *g, const wm_use *u, unsigned n,
                       int rank)
{
    if (rank != WEFT_MPI_AUTO)
        return rank;
    for (unsigned i = 0; i < n; i++)
        if (u[i].mode & WEFT_WRITE)
            return wm_owner_at(u[i].reg, u[i].at.origin);
    for (unsigned i = 0; i < n; i++)
        return wm_owner_at(u[i].reg, u[i].at.origin);
    (void)g;
    return 0;
}

/* What a node adds, beside its accesses. */
typedef enum wm_kind {
    WM_KERNEL,
    WM_HOST,
    WM_HOST_STATUS,
    WM_WRITE,
    WM_READ,
    WM_NATIVE
} wm_kind;

typedef struct wm_node_desc {
    wm_kind kind;
    weft_kernel *k;
    weft_dims dims;
    const weft_arg *args;
    unsigned nargs;
    weft_host_task_fn *fn;
    weft_host_status_fn *sfn;
    void *user;
    const weft_access_desc *acc;
    unsigned nacc;
    weft_buffer *buf;
    size_t offset, size;
    void *host;
    const weft_native_impl *impls;
    unsigned nimpls;
} wm_node_desc;

static int status_trampoline(void *const *ptrs, void *user)
{
    wm_wrap *w = user;
    int rc = w->fn(ptrs, w->user);

    if (rc != 0 && w->g->exec)
        wm_abort(w->g->exec, WEFT_EIO);
    return rc;
}

static int add_local(weft_mpi_graph *g, const wm_node_desc *d, weft_node *n)
{
    wm_wrap *w;
    int rc;

    switch (d->kind) {
    case WM_KERNEL:
        return weft_graph_add_kernel(g->local, d->k, d->dims, d->args, d->nargs,
                                     n);
    case WM_HOST:
        return weft_graph_add_host(g->local, d->fn, d->user, d->acc, d->nacc,
                                   n);
    case WM_HOST_STATUS:
        if (grow((void **)&g->wraps, &g->wcap, g->nwraps + 1, sizeof *g->wraps))
            return WEFT_ENOMEM;
        w = malloc(sizeof *w);
        if (!w)
            return WEFT_ENOMEM;
        *w = (wm_wrap){g, d->sfn, d->user};
        rc = weft_graph_add_host_status(g->local, status_trampoline, w, d->acc,
                                        d->nacc, n);
        if (rc < 0)
            free(w);
        else
            g->wraps[g->nwraps++] = w;
        return rc;
    case WM_WRITE:
        return weft_graph_add_write(g->local, d->buf, d->offset, d->host,
                                    d->size, n);
    case WM_READ:
        return weft_graph_add_read(g->local, d->buf, d->offset, d->host,
                                   d->size, n);
    case WM_NATIVE:
        return weft_graph_add_native(g->local, d->impls, d->nimpls, d->acc,
                                     d->nacc, d->user, n);
    }
    return WEFT_EINTERNAL;
}

/* The reads (mode WEFT_READ) or writes of a node on rank r, slice by slice. */
static int track(weft_mpi_graph *g, const wm_use *u, unsigned nu, int r,
                 weft_access mode)
{
    for (unsigned i = 0; i < nu; i++) {
        wm_track *t;
        int rc;

        if (!(u[i].mode & mode) || u[i].at.row_bytes == 0)
            continue;
        if ((rc = wm_track_of(g, u[i].reg, &t)) < 0)
            return rc;
        for (size_t s = 0; s < u[i].slices; s++) {
            wm_region at = u[i].at;

            at.origin += s * u[i].slice_pitch;
            rc = mode == WEFT_READ ? wm_track_read(g, t, at, r)
                                   : wm_track_write(g, t, at, r);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

/*
 * A node of this rank's uses: before it is added (settle), the open sends
 * of the bytes it writes get their completion tasks; after, its touches.
 */
static int touch_uses(weft_mpi_graph *g, const wm_use *u, unsigned nu,
                      int settle)
{
    for (unsigned i = 0; i < nu; i++) {
        int wrote = (u[i].mode & WEFT_WRITE) != 0;

        if (u[i].at.row_bytes == 0 || (settle && !wrote))
            continue;
        for (size_t s = 0; s < u[i].slices; s++) {
            wm_region at = u[i].at;
            int rc;

            at.origin += s * u[i].slice_pitch;
            rc = settle ? settle_open(g, u[i].reg, at)
                        : note_touch(g, u[i].reg, at, wrote, NULL);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

static int add_node(weft_mpi_graph *g, const char *fn, const wm_node_desc *d,
                    const wm_use *u, unsigned nu, int rank, uint32_t *node)
{
    weft_mpi *mpi = g->mpi;
    weft_node local = WM_NO_NODE;
    int r, rc;

    if (g->broken)
        return wm_error(WEFT_ESTATE,
                        "%s: an earlier node failed on this rank, so the "
                        "ranks' graphs disagree",
                        fn);
    if (rank != WEFT_MPI_AUTO && (rank < 0 || rank >= mpi->size))
        return wm_error(WEFT_ERANGE, "%s: rank %d is not a rank (0 to %d)", fn,
                        rank, mpi->size - 1);
    if (grow((void **)&g->node_rank, &g->ncap, g->nnodes + 1,
             sizeof *g->node_rank) < 0)
        return wm_error(WEFT_ENOMEM, "%s: out of memory", fn);
    /* node_local shares ncap: grow it to the same capacity */
    {
        weft_node *p = realloc(g->node_local, g->ncap * sizeof *p);

        if (!p)
            return wm_error(WEFT_ENOMEM, "%s: out of memory", fn);
        g->node_local = p;
    }
    r = choose_rank(g, u, nu, rank);
    if ((rc = track(g, u, nu, r, WEFT_READ)) < 0)
        goto broken;
    if (mpi->rank == r && ((rc = touch_uses(g, u, nu, 1)) < 0 ||
                           (rc = add_local(g, d, &local)) < 0 ||
                           (rc = follow_pending(g, local)) < 0 ||
                           (rc = touch_uses(g, u, nu, 0)) < 0))
        goto broken;
    if ((rc = track(g, u, nu, r, WEFT_WRITE)) < 0)
        goto broken;
    g->node_rank[g->nnodes] = r;
    g->node_local[g->nnodes] = local;
    if (node)
        *node = g->nnodes;
    g->nnodes++;
    return 0;
broken:
    g->broken = 1;
    if (rc == WEFT_ENOMEM)
        return wm_error(rc, "%s: out of memory", fn);
    return wm_weft_error(rc, fn);
}

int weft_mpi_graph_add_kernel(weft_mpi_graph *g, weft_kernel *k, weft_dims dims,
                              const weft_arg *args, unsigned nargs, int rank,
                              uint32_t *node)
{
    static const char fn[] = "weft_mpi_graph_add_kernel";
    wm_node_desc d = {
        .kind = WM_KERNEL, .k = k, .dims = dims, .args = args, .nargs = nargs};
    wm_use *u;
    unsigned nu = 0;
    int rc;

    if (!g || !k || (nargs && !args))
        return wm_error(WEFT_EINVAL, "%s: %s is NULL", fn,
                        !g   ? "g"
                        : !k ? "k"
                             : "args");
    u = calloc(nargs ? nargs : 1, sizeof *u);
    if (!u)
        return wm_error(WEFT_ENOMEM, "%s: out of memory", fn);
    for (unsigned i = 0; i < nargs; i++) {
        const weft_arg *a = &args[i];

        if (a->type != WEFT_PARAM_BUFFER)
            continue;
        weft_access_desc acc = {a->buffer,    a->offset,     a->size,
                                a->access,    a->rows,       a->slices,
                                a->row_pitch, a->slice_pitch};

        rc = resolve(g, fn, i, &acc, &u[nu]);
        if (rc < 0) {
            free(u);
            return rc;
        }
        nu++;
    }
    rc = add_node(g, fn, &d, u, nu, rank, node);
    free(u);
    return rc;
}

static int add_host(weft_mpi_graph *g, const char *fn, wm_node_desc *d,
                    int rank, uint32_t *node)
{
    wm_use *u;
    int rc;

    if (!g || !(d->fn || d->sfn || d->impls) || (d->nacc && !d->acc))
        return wm_error(WEFT_EINVAL, "%s: %s is NULL", fn,
                        !g                              ? "g"
                        : (d->fn || d->sfn || d->impls) ? "acc"
                        : d->kind == WM_NATIVE          ? "impls"
                                                        : "fn");
    u = calloc(d->nacc ? d->nacc : 1, sizeof *u);
    if (!u)
        return wm_error(WEFT_ENOMEM, "%s: out of memory", fn);
    for (unsigned i = 0; i < d->nacc; i++) {
        const weft_access_desc *a = &d->acc[i];

        rc = resolve(g, fn, i, a, &u[i]);
        if (rc < 0) {
            free(u);
            return rc;
        }
    }
    rc = add_node(g, fn, d, u, d->nacc, rank, node);
    free(u);
    return rc;
}

int weft_mpi_graph_add_host(weft_mpi_graph *g, weft_host_task_fn *fn,
                            void *user, const weft_access_desc *acc,
                            unsigned nacc, int rank, uint32_t *node)
{
    wm_node_desc d = {
        .kind = WM_HOST, .fn = fn, .user = user, .acc = acc, .nacc = nacc};

    return add_host(g, "weft_mpi_graph_add_host", &d, rank, node);
}

int weft_mpi_graph_add_host_status(weft_mpi_graph *g, weft_host_status_fn *fn,
                                   void *user, const weft_access_desc *acc,
                                   unsigned nacc, int rank, uint32_t *node)
{
    wm_node_desc d = {.kind = WM_HOST_STATUS,
                      .sfn = fn,
                      .user = user,
                      .acc = acc,
                      .nacc = nacc};

    return add_host(g, "weft_mpi_graph_add_host_status", &d, rank, node);
}

int weft_mpi_graph_add_native(weft_mpi_graph *g, const weft_native_impl *impls,
                              unsigned nimpls, const weft_access_desc *acc,
                              unsigned nacc, void *user, int rank,
                              uint32_t *node)
{
    static const char fn[] = "weft_mpi_graph_add_native";
    static const char *const drivers[] = {"cuda", "opencl", "host", "sim"};
    wm_node_desc d = {.kind = WM_NATIVE,
                      .impls = impls,
                      .nimpls = nimpls,
                      .user = user,
                      .acc = acc,
                      .nacc = nacc};

    /* what weft would refuse on the node's rank, refused on every rank */
    if (impls && nimpls == 0)
        return wm_error(WEFT_EINVAL, "%s: nimpls is 0", fn);
    for (unsigned i = 0; impls && i < nimpls; i++) {
        unsigned k = 0;

        while (k < 4 &&
               !(impls[i].driver && !strcmp(impls[i].driver, drivers[k])))
            k++;
        if (!impls[i].fn || k == 4)
            return wm_error(WEFT_EINVAL, "%s: impls[%u]: %s", fn, i,
                            !impls[i].fn ? "fn is NULL"
                                         : "not a driver (cuda, opencl, host, "
                                           "sim)");
    }
    return add_host(g, fn, &d, rank, node);
}

static int add_transfer_node(weft_mpi_graph *g, const char *fn, wm_kind kind,
                             weft_buffer *buf, size_t offset, void *host,
                             size_t size, int rank, uint32_t *node)
{
    wm_node_desc d = {
        .kind = kind, .buf = buf, .offset = offset, .host = host, .size = size};
    weft_access_desc acc = weft_access_range(
        buf, offset, size, kind == WM_WRITE ? WEFT_WRITE : WEFT_READ);
    wm_use u;
    int rc;

    if (!g || !buf || (!host && size))
        return wm_error(WEFT_EINVAL, "%s: %s is NULL", fn,
                        !g     ? "g"
                        : !buf ? "the buffer"
                               : "the host memory");
    rc = resolve(g, fn, 0, &acc, &u);
    if (rc < 0)
        return rc;
    return add_node(g, fn, &d, &u, 1, rank, node);
}

int weft_mpi_graph_add_write(weft_mpi_graph *g, weft_buffer *dst, size_t offset,
                             const void *src, size_t size, int rank,
                             uint32_t *node)
{
    return add_transfer_node(g, "weft_mpi_graph_add_write", WM_WRITE, dst,
                             offset, (void *)src, size, rank, node);
}

int weft_mpi_graph_add_read(weft_mpi_graph *g, weft_buffer *src, size_t offset,
                            void *dst, size_t size, int rank, uint32_t *node)
{
    return add_transfer_node(g, "weft_mpi_graph_add_read", WM_READ, src, offset,
                             dst, size, rank, node);
}

int weft_mpi_graph_node_rank(const weft_mpi_graph *g, uint32_t node)
{
    if (!g || node >= g->nnodes)
        return wm_error(WEFT_EINVAL, "weft_mpi_graph_node_rank: %s",
                        !g ? "g is NULL" : "no such node");
    return g->node_rank[node];
}

int weft_mpi_graph_local_node(const weft_mpi_graph *g, uint32_t node,
                              weft_node *local)
{
    if (!g || !local || node >= g->nnodes)
        return wm_error(WEFT_EINVAL, "weft_mpi_graph_local_node: %s",
                        !g       ? "g is NULL"
                        : !local ? "local is NULL"
                                 : "no such node");
    if (g->node_local[node] == WM_NO_NODE)
        return wm_error(WEFT_ENOTFOUND,
                        "weft_mpi_graph_local_node: node %u runs on rank %d",
                        node, g->node_rank[node]);
    *local = g->node_local[node];
    return 0;
}

weft_graph *weft_mpi_graph_local(weft_mpi_graph *g)
{
    return g ? g->local : NULL;
}

unsigned weft_mpi_graph_transfer_count(const weft_mpi_graph *g)
{
    return g ? g->ntransfers : 0;
}

/*
 * A receive is early where no touch of this rank before it shares a byte
 * with it and no node of this rank writes any of its bytes: between the
 * launch's start and its task, nothing of this rank reads or writes them
 * (every later node that touches them follows the task), and no device of
 * this rank holds bytes of them that weft could write back to the host
 * copy (a node's write on a device would leave such bytes, for the next
 * launch too).
 */
static void mark_early(weft_mpi_graph *g)
{
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (ep->send || ep->dev)
            continue;
        ep->early = 1;
        for (unsigned k = 0; ep->early && k < g->ntouch; k++) {
            const wm_touch *t = &g->touch[k];

            if (t->reg == ep->reg && (t->seq < ep->seq || t->wrote) &&
                wm_overlap(&t->at, &ep->at))
                ep->early = 0;
        }
    }
}

int wm_graph_close(weft_mpi_graph *g)
{
    int rc;

    for (unsigned i = 0; i < g->ntracks; i++)
        if ((rc = wm_track_close(g, &g->tracks[i])) < 0) {
            g->broken = 1;
            return rc;
        }
    mark_early(g);
    return 0;
}
