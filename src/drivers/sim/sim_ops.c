/*
 * The operations a sim queue takes: copies, fills, launches, host functions
 * and events. Each is prepared outside the lock (a sim_prep: a kernel's
 * cost function is the caller's code), then submitted under it; on a queue
 * that takes part in a capture it becomes a node instead (sim_graph.c).
 */
#include "sim_internal.h"

#include <string.h>

/* ---- preparing and submitting ------------------------------------------ */

/* Note that pr touches [lo, lo + len) (check=1; nothing if lo is NULL). */
static void sim_prep_access(sim_prep *pr, const unsigned char *lo, size_t len,
                            unsigned write)
{
    if (!lo || !len || pr->nacc == SIM_MAX_ACCESS)
        return;
    pr->acc[pr->nacc].lo = lo;
    pr->acc[pr->nacc].len = len;
    pr->acc[pr->nacc].write = write;
    pr->nacc++;
}

/* Lock, submit, unlock; frees the item on failure. */
static int sim_enqueue(sim_queue *q, sim_prep *pr)
{
    sim_platform *p = sim_ctx_platform(q->base.ctx);
    int rc;

    sim_lock(p);
    rc = weft__sim_submit(q, &pr->op, pr->dur, pr->first, pr->count, pr->w,
                          pr->acc, pr->nacc);
    sim_unlock(p);
    if (rc < 0)
        weft__free(pr->w);
    return rc;
}

/* The copy engines for a direction (sim.c, "Time model"). */
static void sim_copy_engines(const sim_config *c, weft__sim_op_kind kind,
                             unsigned *first, unsigned *count)
{
    *count = 1;
    if (c->copy_engines == 0)
        *first = WEFT__SIM_ENGINE_COMPUTE;
    else if (c->copy_engines == 1 || kind == WEFT__SIM_H2D)
        *first = 1;
    else if (c->copy_engines == 2 || kind == WEFT__SIM_D2H)
        *first = 2;
    else {
        *first = 3;
        *count = c->copy_engines - 2;
    }
}

/* ---- copies and fills -------------------------------------------------- */

/* A work item for a data effect, or NULL with *rc = 0 if there is none. */
static sim_work *sim_data_work(unsigned char *dst, const unsigned char *src,
                               size_t size, int *rc)
{
    sim_work *w;

    *rc = 0;
    if (!dst || !src)
        return NULL;
    w = weft__calloc(1, sizeof *w);
    if (!w) {
        *rc = weft__error(WEFT_ENOMEM, "sim: out of memory for a copy");
        return NULL;
    }
    w->dst = dst;
    w->src = src;
    w->size = size;
    return w;
}

/* A copy on a queue of platform p's devices. */
static int sim_copy_prep(const sim_platform *p, weft__sim_op_kind kind,
                         unsigned char *dst, const unsigned char *src,
                         size_t size, int src_dev, int dst_dev, sim_prep *pr)
{
    const sim_config *c = &p->cfg;
    int rc;

    memset(pr, 0, sizeof *pr);
    pr->w = sim_data_work(dst, src, size, &rc);
    if (rc < 0)
        return rc;
    if (p->log) {
        sim_prep_access(pr, src, size, 0);
        sim_prep_access(pr, dst, size, 1);
    }
    pr->op.kind = kind;
    pr->op.bytes = size;
    pr->op.src_device = src_dev;
    pr->op.dst_device = dst_dev;
    pr->op.event_device = WEFT__SIM_HOST;
    switch (kind) {
    case WEFT__SIM_H2D:
        pr->dur = sim_xfer_ns(c->h2d_lat, c->h2d_bw, size);
        break;
    case WEFT__SIM_D2H:
        pr->dur = sim_xfer_ns(c->d2h_lat, c->d2h_bw, size);
        break;
    case WEFT__SIM_PEER:
        pr->dur = sim_xfer_ns(c->peer_lat, c->peer_bw, size);
        break;
    default:
        pr->dur = sim_xfer_ns(c->launch_lat, c->d2d_bw, size);
        break;
    }
    if (kind == WEFT__SIM_D2D) {
        pr->first = WEFT__SIM_ENGINE_COMPUTE;
        pr->count = 1;
    } else {
        sim_copy_engines(c, kind, &pr->first, &pr->count);
    }
    return 0;
}

static int sim_copy(weft__queue *wq, weft__sim_op_kind kind, unsigned char *dst,
                    const unsigned char *src, size_t size, int src_dev,
                    int dst_dev)
{
    sim_prep pr;
    int rc = sim_copy_prep(sim_ctx_platform(wq->ctx), kind, dst, src, size,
                           src_dev, dst_dev, &pr);

    return rc < 0 ? rc : sim_enqueue((sim_queue *)wq, &pr);
}

/*
 * A copy on q: recorded if q is capturing (> 0), else 0 to run it; < 0 on
 * error. host is the host side of an h2d or d2h.
 */
static int sim_capture_copy(weft__queue *q, weft__sim_op_kind kind,
                            weft__mem *dst, size_t dst_off, weft__mem *src,
                            size_t src_off, const void *host, size_t size)
{
    sim_node n = sim_node_of(kind);

    n.dst = dst;
    n.dst_off = dst_off;
    n.src = src;
    n.src_off = src_off;
    n.host = (void *)(uintptr_t)host;
    n.size = size;
    return weft__sim_capture_try(q, &n);
}

int weft__sim_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                       const void *src, size_t size)
{
    int rc =
        sim_capture_copy(q, WEFT__SIM_H2D, dst, dst_off, NULL, 0, src, size);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    return sim_copy(q, WEFT__SIM_H2D, sim_bytes(dst, dst_off), src, size,
                    WEFT__SIM_HOST, sim_dev_index(dst));
}

/*
 * With real_data=0 device memory holds nothing: bytes read back to the
 * host were not computed. Said once per simulated machine, loudly, at the
 * first such copy (the program's destination is left as it was).
 */
static void sim_warn_uncomputed(weft__queue *q, size_t size)
{
    sim_platform *p = sim_ctx_platform(q->ctx);

    if (p->cfg.real_data ||
        __atomic_exchange_n(&p->warned_uncomputed, 1, __ATOMIC_RELAXED))
        return;
    weft__warn("sim",
               "%zu bytes read back from %s were not computed: the "
               "simulated machine runs with real_data=0 (timing only), so "
               "device memory holds nothing and kernels do not run; leave "
               "real_data out of WEFT_SIM (or set real_data=1) to compute "
               "them (said once per simulated machine)",
               size, q->ctx->dev->name);
}

int weft__sim_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                       size_t src_off, size_t size)
{
    int rc;

    if (src->kind != WEFT__MEM_PINNED)
        sim_warn_uncomputed(q, size);
    rc = sim_capture_copy(q, WEFT__SIM_D2H, NULL, 0, src, src_off, dst, size);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    return sim_copy(q, WEFT__SIM_D2H, dst, sim_bytes(src, src_off), size,
                    sim_dev_index(src), WEFT__SIM_HOST);
}

int weft__sim_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                       weft__mem *src, size_t src_off, size_t size)
{
    int rc = sim_capture_copy(q, WEFT__SIM_D2D, dst, dst_off, src, src_off,
                              NULL, size);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    return sim_copy(q, WEFT__SIM_D2D, sim_bytes(dst, dst_off),
                    sim_bytes(src, src_off), size, sim_dev_index(src),
                    sim_dev_index(dst));
}

/* A peer copy from src to dst on q: 0 if the machine has it, else < 0. */
static int sim_peer_check(weft__queue *q, weft__mem *dst, weft__mem *src)
{
    weft__device *sd = src->ctx->dev, *dd = dst->ctx->dev;
    sim_platform *p = sim_ctx_platform(q->ctx);

    if (sd->platform != &p->base || dd->platform != &p->base)
        return weft__error(WEFT_EINVAL,
                           "sim: copy_peer between %s and %s: not devices of "
                           "one simulated machine",
                           sd->name, dd->name);
    if (!weft__sim_peers(p, sd, dd))
        return weft__driver_error(WEFT_ENOTSUP, "sim", 0, "no peer access",
                                  "sim: %s cannot access %s (peer=%u, "
                                  "peer_group=%u): stage through the host",
                                  dd->name, sd->name, p->cfg.peer,
                                  p->cfg.peer_group);
    return 0;
}

int weft__sim_copy_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                        weft__mem *src, size_t src_off, size_t size)
{
    int rc;

    if ((rc = sim_peer_check(q, dst, src)) < 0)
        return rc;
    if ((rc = sim_capture_copy(q, WEFT__SIM_PEER, dst, dst_off, src, src_off,
                               NULL, size)) != 0)
        return rc < 0 ? rc : 0;
    return sim_copy(q, WEFT__SIM_PEER, sim_bytes(dst, dst_off),
                    sim_bytes(src, src_off), size, sim_dev_index(src),
                    sim_dev_index(dst));
}

/* ---- block copies ------------------------------------------------------ */

/* Note that pr touches side s of block r from base (check=1). */
static void sim_prep_block(sim_prep *pr, const unsigned char *base,
                           const weft__rect *r, const weft__rect_side *s,
                           unsigned write)
{
    unsigned n = pr->nacc;
    sim_access *a;

    sim_prep_access(pr, base ? base + s->off : NULL, weft__rect_span(r, s),
                    write);
    if (pr->nacc == n)
        return;
    a = &pr->acc[n];
    a->width = r->width;
    a->height = r->height;
    a->depth = r->depth;
    a->row_pitch = s->row_pitch;
    a->slice_pitch = s->slice_pitch;
}

/*
 * One operation that moves the block's bytes, in the time of that many
 * bytes; with real data, its rows. A queue in a capture declines (1): the
 * rows come one by one, as 1-D copies, which the capture takes.
 */
static int sim_copy_rect(weft__queue *wq, weft__sim_op_kind kind,
                         unsigned char *dst, const unsigned char *src,
                         const weft__rect *r, int src_dev, int dst_dev)
{
    sim_platform *p = sim_ctx_platform(wq->ctx);
    sim_queue *q = (sim_queue *)wq;
    sim_prep pr;
    int in, rc;

    sim_lock(p);
    in = q->cap != NULL;
    sim_unlock(p);
    if (in)
        return 1;
    rc = sim_copy_prep(p, kind, NULL, NULL, (size_t)weft__rect_bytes(r),
                       src_dev, dst_dev, &pr);
    if (rc < 0)
        return rc;
    if (dst && src) {
        sim_work *w = weft__calloc(1, sizeof *w);

        if (!w)
            return weft__error(WEFT_ENOMEM, "sim: out of memory for a copy");
        w->dst = dst;
        w->src = src;
        w->rect = *r;
        w->rect_on = 1;
        pr.w = w;
        if (p->log) {
            sim_prep_block(&pr, src, r, &r->src, 0);
            sim_prep_block(&pr, dst, r, &r->dst, 1);
        }
    }
    return sim_enqueue(q, &pr);
}

int weft__sim_copy_h2d_rect(weft__queue *q, weft__mem *dst, const void *src,
                            const weft__rect *r)
{
    return sim_copy_rect(q, WEFT__SIM_H2D, sim_bytes(dst, 0), src, r,
                         WEFT__SIM_HOST, sim_dev_index(dst));
}

int weft__sim_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                            const weft__rect *r)
{
    return sim_copy_rect(q, WEFT__SIM_D2H, dst, sim_bytes(src, 0), r,
                         sim_dev_index(src), WEFT__SIM_HOST);
}

int weft__sim_copy_d2d_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                            const weft__rect *r)
{
    return sim_copy_rect(q, WEFT__SIM_D2D, sim_bytes(dst, 0), sim_bytes(src, 0),
                         r, sim_dev_index(src), sim_dev_index(dst));
}

int weft__sim_copy_peer_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                             const weft__rect *r)
{
    int rc = sim_peer_check(q, dst, src);

    if (rc < 0)
        return rc;
    return sim_copy_rect(q, WEFT__SIM_PEER, sim_bytes(dst, 0),
                         sim_bytes(src, 0), r, sim_dev_index(src),
                         sim_dev_index(dst));
}

static int sim_fill_prep(const sim_platform *p, weft__mem *dst, size_t off,
                         const void *pattern, size_t pattern_size, size_t size,
                         sim_prep *pr)
{
    const sim_config *c = &p->cfg;
    unsigned char *bytes = sim_bytes(dst, off);

    memset(pr, 0, sizeof *pr);
    if (bytes) {
        sim_work *w = weft__calloc(1, sizeof *w);

        if (!w)
            return weft__error(WEFT_ENOMEM, "sim: out of memory for a fill");
        w->dst = bytes;
        w->size = size;
        w->pattern_size = pattern_size;
        memcpy(w->pattern, pattern, pattern_size);
        pr->w = w;
        if (p->log)
            sim_prep_access(pr, bytes, size, 1);
    }
    pr->op.kind = WEFT__SIM_FILL;
    pr->op.bytes = size;
    pr->op.src_device = WEFT__SIM_HOST;
    pr->op.dst_device = sim_dev_index(dst);
    pr->op.event_device = WEFT__SIM_HOST;
    pr->dur = sim_xfer_ns(c->launch_lat, c->d2d_bw, size);
    pr->first = WEFT__SIM_ENGINE_COMPUTE;
    pr->count = 1;
    return 0;
}

int weft__sim_fill(weft__queue *wq, weft__mem *dst, size_t off,
                   const void *pattern, size_t pattern_size, size_t size)
{
    sim_node n = sim_node_of(WEFT__SIM_FILL);
    sim_prep pr;
    int rc;

    n.dst = dst;
    n.dst_off = off;
    n.size = size;
    n.pattern_size = pattern_size;
    memcpy(n.pattern, pattern, pattern_size);
    if ((rc = weft__sim_capture_try(wq, &n)) != 0)
        return rc < 0 ? rc : 0;
    rc = sim_fill_prep(sim_ctx_platform(wq->ctx), dst, off, pattern,
                       pattern_size, size, &pr);
    return rc < 0 ? rc : sim_enqueue((sim_queue *)wq, &pr);
}

/* ---- launches ---------------------------------------------------------- */

/*
 * A work item with the launch's argument vector and copies of the values,
 * laid out as [sim_work | argv | values...]. Buffers point at real bytes
 * (NULL in counted memory); local scratch exists only if the kernel will
 * run.
 */
static sim_work *sim_launch_work(const weft__karg *args, unsigned nargs,
                                 int run)
{
    size_t argv_off = SIM_ALIGN_UP(sizeof(sim_work));
    size_t val_off = SIM_ALIGN_UP(argv_off + nargs * sizeof(void *));
    size_t bytes = val_off;
    unsigned char *blob, *val;
    sim_work *w;

    for (unsigned i = 0; i < nargs; i++)
        if (args[i].type != WEFT_PARAM_BUFFER &&
            (args[i].type != WEFT_PARAM_LOCAL || run))
            bytes += SIM_ALIGN_UP(args[i].size);
    blob = weft__calloc(1, bytes);
    if (!blob)
        return NULL;
    w = (sim_work *)(void *)blob;
    w->argv = (void **)(void *)(blob + argv_off);
    val = blob + val_off;
    for (unsigned i = 0; i < nargs; i++) {
        const weft__karg *a = &args[i];

        if (a->type == WEFT_PARAM_BUFFER) {
            w->argv[i] = sim_bytes(a->u.buf.mem, a->u.buf.offset);
        } else if (a->type == WEFT_PARAM_LOCAL) {
            if (run) {
                w->argv[i] = val;
                val += SIM_ALIGN_UP(a->size);
            }
        } else {
            memcpy(val, a->u.value, a->size);
            w->argv[i] = val;
            val += SIM_ALIGN_UP(a->size);
        }
    }
    return w;
}

static int sim_launch_prep(const sim_platform *p, const sim_kernel *k,
                           const weft__grid *grid, const weft__karg *args,
                           unsigned nargs, sim_prep *pr)
{
    const sim_config *c = &p->cfg;
    uint64_t items = weft__grid_items(grid), cost;
    int run = c->real_data && k->hk.fn;
    sim_work *w;

    memset(pr, 0, sizeof *pr);
    w = sim_launch_work(args, nargs, run);
    if (!w)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a launch of %s",
                           k->hk.name);
    /* The cost function is the caller's code: call it outside the lock. */
    if (k->hk.sim_cost)
        cost = k->hk.sim_cost(items, w->argv, k->hk.sim_cost_user);
    else
        cost = sim_ns((double)items * c->item_ns);
    for (unsigned i = 0; p->log && i < nargs; i++) {
        const weft__karg *a = &args[i];
        size_t room;

        if (a->type != WEFT_PARAM_BUFFER || !a->u.buf.mem)
            continue;
        room = a->u.buf.mem->size - a->u.buf.offset;
        if (a->rows * a->slices > 1 && a->size && a->size <= room) {
            /* a block: its rows, as a block copy's side */
            weft__rect r = {{0, a->row_pitch, a->slice_pitch},
                            {0, a->row_pitch, a->slice_pitch},
                            a->width,
                            a->rows,
                            a->slices};

            sim_prep_block(pr, sim_bytes(a->u.buf.mem, a->u.buf.offset), &r,
                           &r.dst, !a->access || (a->access & WEFT_WRITE));
            continue;
        }
        sim_prep_access(pr, sim_bytes(a->u.buf.mem, a->u.buf.offset),
                        a->size && a->size < room ? a->size : room,
                        !a->access || (a->access & WEFT_WRITE));
        /* Read and written: a read access too, for the pairs it makes. */
    }
    if (run) {
        w->kfn = k->hk.fn;
        w->grid = *grid;
        pr->w = w;
    } else {
        weft__free(w);
    }
    pr->op.kind = WEFT__SIM_KERNEL;
    pr->op.items = items;
    pr->op.src_device = pr->op.dst_device = pr->op.event_device =
        WEFT__SIM_HOST;
    weft__strlcpy(pr->op.kernel, k->hk.name, sizeof pr->op.kernel);
    pr->dur = sim_ns(c->launch_lat) + cost;
    pr->first = WEFT__SIM_ENGINE_COMPUTE;
    pr->count = 1;
    return 0;
}

int weft__sim_launch(weft__queue *wq, weft__kernel *wk, const weft__grid *grid,
                     const weft__karg *args, unsigned nargs)
{
    sim_node n = sim_node_of(WEFT__SIM_KERNEL);
    sim_prep pr;
    int rc;

    n.k = wk;
    n.grid = *grid;
    n.args =
        (weft__karg *)(uintptr_t)args; /* copied by weft__sim_capture_add */
    n.nargs = nargs;
    if ((rc = weft__sim_capture_try(wq, &n)) != 0)
        return rc < 0 ? rc : 0;
    rc = sim_launch_prep(sim_ctx_platform(wq->ctx), (const sim_kernel *)wk,
                         grid, args, nargs, &pr);
    return rc < 0 ? rc : sim_enqueue((sim_queue *)wq, &pr);
}

/* ---- host functions ---------------------------------------------------- */

static int sim_host_fn_prep(const sim_platform *p, weft__host_fn *fn,
                            void *user, sim_prep *pr)
{
    sim_work *w = weft__calloc(1, sizeof *w);

    memset(pr, 0, sizeof *pr);
    if (!w)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a host fn");
    w->fn = fn;
    w->user = user;
    pr->w = w;
    pr->op.kind = WEFT__SIM_HOST_FN;
    pr->op.src_device = pr->op.dst_device = pr->op.event_device =
        WEFT__SIM_HOST;
    pr->dur = sim_ns(p->cfg.host_fn_ns);
    return 0;
}

int weft__sim_host_fn(weft__queue *wq, weft__host_fn *fn, void *user)
{
    sim_node n = sim_node_of(WEFT__SIM_HOST_FN);
    sim_prep pr;
    int rc;

    n.fn = fn;
    n.user = user;
    if ((rc = weft__sim_capture_try(wq, &n)) != 0)
        return rc < 0 ? rc : 0;
    rc = sim_host_fn_prep(sim_ctx_platform(wq->ctx), fn, user, &pr);
    return rc < 0 ? rc : sim_enqueue((sim_queue *)wq, &pr);
}

/* ---- nodes of native graphs -------------------------------------------- */

/* Outside the lock: what node asks for, ready to submit. */
int weft__sim_node_prep(const sim_platform *p, const sim_node *n, sim_prep *pr)
{
    switch (n->kind) {
    case WEFT__SIM_H2D:
        return sim_copy_prep(p, n->kind, sim_bytes(n->dst, n->dst_off), n->host,
                             n->size, WEFT__SIM_HOST, sim_dev_index(n->dst),
                             pr);
    case WEFT__SIM_D2H:
        return sim_copy_prep(p, n->kind, n->host, sim_bytes(n->src, n->src_off),
                             n->size, sim_dev_index(n->src), WEFT__SIM_HOST,
                             pr);
    case WEFT__SIM_D2D:
    case WEFT__SIM_PEER:
        return sim_copy_prep(p, n->kind, sim_bytes(n->dst, n->dst_off),
                             sim_bytes(n->src, n->src_off), n->size,
                             sim_dev_index(n->src), sim_dev_index(n->dst), pr);
    case WEFT__SIM_FILL:
        return sim_fill_prep(p, n->dst, n->dst_off, n->pattern, n->pattern_size,
                             n->size, pr);
    case WEFT__SIM_KERNEL:
        return sim_launch_prep(p, (const sim_kernel *)n->k, &n->grid, n->args,
                               n->nargs, pr);
    case WEFT__SIM_HOST_FN:
        return sim_host_fn_prep(p, n->fn, n->user, pr);
    case WEFT__SIM_EVENT_RECORD:
    case WEFT__SIM_EVENT_WAIT:
        break;
    }
    return weft__error(WEFT_EINTERNAL, "sim: a node of kind %d", (int)n->kind);
}

/* ---- events ------------------------------------------------------------ */

int weft__sim_event_create(weft__context *ctx, unsigned flags,
                           weft__event **out)
{
    sim_platform *p = sim_ctx_platform(ctx);
    sim_event *e = weft__calloc(1, sizeof *e);

    if (!e)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for an event");
    sim_lock(p);
    e->id = ++p->next_event;
    sim_unlock(p);
    e->device = WEFT__SIM_HOST;
    *out = &e->base;
    return 0;
}

/*
 * Under the lock: record e on q, with a new marker m and an item w for it
 * (both allocated; both taken, kept or freed, whatever the outcome).
 */
int weft__sim_record_submit(sim_event *e, sim_queue *q, sim_marker *m,
                            sim_work *w)
{
    weft__sim_op op = {0};
    int rc;

    op.kind = WEFT__SIM_EVENT_RECORD;
    op.src_device = op.dst_device = WEFT__SIM_HOST;
    op.event = e->id;
    op.event_device = (int)q->base.ctx->dev->driver_index;
    /* With nothing unfinished on q the marker is set at once. */
    m->refs = 1;
    m->done = 0;
    if (q->pending) {
        m->refs++;
        w->marker = m;
    } else {
        m->done = 1;
        weft__free(w);
        w = NULL;
    }
    rc = weft__sim_submit(q, &op, 0, 0, 0, w, NULL, 0);
    if (rc < 0) {
        weft__free(w);
        weft__free(m);
        return rc;
    }
    sim_marker_unref(e->marker);
    e->marker = m;
    e->time = op.end_ns;
    e->device = op.device;
    e->cap_id = 0;
    return 0;
}

/* Under the lock: q waits for e; the item w (allocated) is taken. */
int weft__sim_wait_submit(sim_platform *p, sim_event *e, sim_queue *q,
                          sim_work *w)
{
    weft__sim_op op = {0};
    uint64_t delay, ready;
    int rc;

    op.kind = WEFT__SIM_EVENT_WAIT;
    op.src_device = op.dst_device = WEFT__SIM_HOST;
    op.event = e->id;
    op.event_device = e->device;
    /* From when the wait itself can start (weft__sim_submit's ready time), so
     * that it ends at the event's time and not past it. */
    ready = WEFT__MAX(q->ready, weft__sim_host_now(p));
    delay = e->marker && e->time > ready ? e->time - ready : 0;
    /* Only unfinished work needs the worker to wait. */
    if (e->marker && !e->marker->done) {
        w->marker = e->marker;
        e->marker->refs++;
    } else {
        weft__free(w);
        w = NULL;
    }
    rc = weft__sim_submit(q, &op, delay, 0, 0, w, NULL, 0);
    if (rc < 0 && w) {
        e->marker->refs--; /* still referenced by e: never reaches 0 */
        weft__free(w);
    }
    return rc;
}

int weft__sim_event_record(weft__event *we, weft__queue *wq)
{
    sim_event *e = (sim_event *)we;
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    sim_marker *m = weft__calloc(1, sizeof *m);
    sim_work *w = weft__calloc(1, sizeof *w);
    int rc;

    if (!m || !w) {
        weft__free(m);
        weft__free(w);
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a record");
    }
    sim_lock(p);
    if (q->cap) {
        /* A capture event: what it names is the node, not a marker. */
        sim_node n = sim_node_of(WEFT__SIM_EVENT_RECORD);
        long i;

        n.event = q->cap->g->nevents;
        i = weft__sim_capture_add(q, &n);
        if (i >= 0) {
            q->cap->g->nevents++;
            sim_marker_unref(e->marker);
            e->marker = NULL;
            e->device = (int)wq->ctx->dev->driver_index;
            e->cap_id = q->cap->id;
            e->cap_node = i;
        }
        sim_unlock(p);
        weft__free(m);
        weft__free(w);
        return i < 0 ? (int)i : 0;
    }
    rc = weft__sim_record_submit(e, q, m, w);
    sim_unlock(p);
    return rc;
}

int weft__sim_queue_wait_event(weft__queue *wq, weft__event *we)
{
    sim_event *e = (sim_event *)we;
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    sim_capture *ec;
    sim_work *w;
    int rc;

    if (we->ctx->dev->platform != &p->base)
        return weft__error(WEFT_EINVAL,
                           "sim: queue on %s cannot wait on an event of %s: "
                           "not one simulated machine",
                           wq->ctx->dev->name, we->ctx->dev->name);
    w = weft__calloc(1, sizeof *w);
    if (!w)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a wait");
    sim_lock(p);
    ec = weft__sim_event_capture(p, e);
    if (ec || q->cap) {
        rc = weft__sim_capture_wait(q, e, ec);
        weft__free(w);
    } else {
        rc = weft__sim_wait_submit(p, e, q, w);
    }
    sim_unlock(p);
    return rc;
}

/* The refusal of a host's wait for, or query of, a capture event. */
static int sim_captured_event(const char *op, const weft__event *we)
{
    return weft__error(WEFT_EINVAL,
                       "sim: %s of an event of %s recorded in a capture in "
                       "progress (its work has not been enqueued to run)",
                       op, we->ctx->dev->name);
}

int weft__sim_event_query(weft__event *we)
{
    sim_event *e = (sim_event *)we;
    sim_platform *p = sim_ctx_platform(we->ctx);
    int done, captured;

    sim_lock(p);
    captured = weft__sim_event_capture(p, e) != NULL;
    done = !e->marker || (e->marker->done && e->time <= weft__sim_host_now(p));
    sim_unlock(p);
    if (captured)
        return sim_captured_event("event_query", we);
    return done ? 0 : WEFT_ENOTREADY;
}

int weft__sim_event_sync(weft__event *we)
{
    sim_event *e = (sim_event *)we;
    sim_platform *p = sim_ctx_platform(we->ctx);
    sim_marker *m;
    uint64_t t;

    sim_lock(p);
    if (weft__sim_event_capture(p, e)) {
        sim_unlock(p);
        return sim_captured_event("event_sync", we);
    }
    m = e->marker;
    t = e->time;
    /* The caller keeps e (and so m) alive while it waits. */
    while (m && !m->done)
        pthread_cond_wait(&p->done_cv, &p->lock);
    sim_unlock(p);
    if (m)
        weft__sim_host_saw(p, t);
    return 0;
}

int weft__sim_event_elapsed(weft__event *ws, weft__event *we, uint64_t *ns)
{
    sim_event *s = (sim_event *)ws, *e = (sim_event *)we;
    sim_platform *p = sim_ctx_platform(ws->ctx);
    int rc = 0;

    if (we->ctx->dev->platform != &p->base)
        return weft__error(WEFT_EINVAL,
                           "sim: event_elapsed: events of two simulated "
                           "machines");
    sim_lock(p);
    if (!s->marker || !e->marker)
        rc = WEFT_EINVAL;
    else if (!s->marker->done || !e->marker->done)
        rc = WEFT_ENOTREADY;
    else if (e->time < s->time)
        rc = WEFT_ERANGE;
    else
        *ns = e->time - s->time;
    sim_unlock(p);
    if (rc == WEFT_EINVAL)
        return weft__error(rc,
                           "sim: event_elapsed: the %s event was never "
                           "recorded (or last in a capture)",
                           s->marker ? "end" : "start");
    if (rc == WEFT_ENOTREADY)
        return weft__error(rc, "sim: event_elapsed: events not complete");
    if (rc == WEFT_ERANGE)
        return weft__error(rc,
                           "sim: event_elapsed: the end event is earlier in "
                           "virtual time than the start event");
    return 0;
}

void weft__sim_event_destroy(weft__event *we)
{
    sim_event *e = (sim_event *)we;
    sim_platform *p = sim_ctx_platform(we->ctx);

    sim_lock(p);
    sim_marker_unref(e->marker);
    sim_unlock(p);
    weft__free(e);
}
