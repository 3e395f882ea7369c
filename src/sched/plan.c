/*
 * The lowered plan: lanes, vector clocks, events, and the hooks through
 * which the buffer layer's transfers join it. plan.h has the model.
 *
 * The plan's other files: plan_time.c (timed launches, traces, kernel
 * times) and plan_launch.c (launches, steps, native graphs); the types
 * they share, and the threads that use a plan, are in plan_internal.h.
 */
#include "plan_internal.h"

#include "../base/options.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- clocks and lanes ---------------------------------------------------- */

unsigned weft__plan_compute_lanes(const weft__device *dev)
{
    unsigned n = dev->props.compute_units;

    if (dev->props.type != WEFT_DEVICE_CPU || !dev->props.concurrent_kernels)
        return WEFT__GPU_COMPUTE_LANES;
    return WEFT__MIN(WEFT__MAX(n, WEFT__GPU_COMPUTE_LANES), WEFT__HIGH_LANE);
}

/* The slot of a role on device: copy lanes as the copy engines allow. */
static unsigned weft__slot(const weft__plan *p, unsigned device,
                           weft__queue_role role, unsigned compute)
{
    unsigned ce = p->rt->devices[device]->props.copy_engines;

    switch (role) {
    case WEFT__QUEUE_COMPUTE:
        return compute;
    case WEFT__QUEUE_H2D:
        return WEFT__COMPUTE_LANES;
    case WEFT__QUEUE_D2H:
        return WEFT__COMPUTE_LANES + (ce >= 2);
    case WEFT__QUEUE_PEER:
        return ce >= 3 ? WEFT__COMPUTE_LANES + 2
                       : WEFT__COMPUTE_LANES + (ce >= 2);
    }
    return compute;
}

static int weft__lane_open(weft__plan *p, weft__lane *ln)
{
    static const weft__queue_role roles[] = {WEFT__QUEUE_H2D, WEFT__QUEUE_D2H,
                                             WEFT__QUEUE_PEER};
    weft__queue_desc desc = {WEFT__QUEUE_COMPUTE, 0, 0};
    weft__context *ctx;
    int rc;

    if (ln->q)
        return 0;
    if (ln->slot >= WEFT__COMPUTE_LANES)
        desc.role = roles[ln->slot - WEFT__COMPUTE_LANES];
    rc = weft__runtime_context(p->rt, ln->device, &ctx);
    /* After the context: CUDA fills in the range with its first one. */
    if (rc == 0 &&
        (p->priority == WEFT_PRIORITY_HIGH || ln->slot == WEFT__HIGH_LANE))
        desc.priority = ctx->dev->props.queue_priority_high;
    if (rc == 0)
        rc = weft__drv_queue_create(ctx, &desc, &ln->q);
    if (rc < 0)
        return weft__error_prefix(rc, "lane %u of device %u (%s)", ln->slot,
                                  ln->device, p->rt->devices[ln->device]->name);
    p->counts.lanes_used++;
    if (p->timed)
        weft__plan_time_origin(p, ln);
    return 0;
}

/* A device's lanes besides its normal compute lanes: high, h2d, d2h, peer. */
enum { WEFT__LANE_EXTRA = WEFT__LANE_SLOTS - WEFT__HIGH_LANE };

/* The normal compute lanes of device d in p. */
static unsigned weft__dev_compute(const weft__plan *p, unsigned d)
{
    return p->lane_base[d + 1] - p->lane_base[d] - WEFT__LANE_EXTRA;
}

/*
 * The lane of (device, slot). A device's lanes lie side by side from
 * lane_base[device]: its normal compute lanes, the high lane, then h2d,
 * d2h and peer, so that a GPU has 6 and a CPU device of P compute units
 * P + 4, not WEFT__LANE_SLOTS each: the clocks and stamps are nlanes wide.
 */
static unsigned weft__lane_slot_index(const weft__plan *p, unsigned device,
                                      unsigned slot)
{
    unsigned nc = weft__dev_compute(p, device);

    if (slot < nc)
        return p->lane_base[device] + slot;
    if (slot < WEFT__COMPUTE_LANES) /* the high lane */
        return p->lane_base[device] + nc;
    return p->lane_base[device] + nc + 1 + (slot - WEFT__COMPUTE_LANES);
}

static weft__lane *weft__lane_at(weft__plan *p, unsigned device, unsigned slot)
{
    return &p->lanes[weft__lane_slot_index(p, device, slot)];
}

/* The lane of a queue of this plan (the one last handed out, usually). */
static weft__lane *weft__lane_of(weft__plan *p, const weft__queue *q)
{
    if (p->last_lane != WEFT__NO_LANE && p->lanes[p->last_lane].q == q)
        return &p->lanes[p->last_lane];
    for (unsigned i = 0; i < p->host; i++)
        if (p->lanes[i].q == q)
            return &p->lanes[i];
    return NULL;
}

void weft__plan_set_priority(weft__plan *p, int priority)
{
    p->priority = priority;
}

/* An event of a device's pool (pools: p->pools or p->tpools). */
int weft__plan_pool_take(weft__plan *p, weft__event_pool *pools,
                         unsigned device, unsigned flags, weft__event **ev)
{
    weft__event_pool *pool = &pools[device];
    weft__context *ctx;
    int rc;

    if (pool->used == pool->n) {
        if (pool->n == pool->cap) {
            unsigned cap = pool->cap ? 2 * pool->cap : 8;
            weft__event **grown = weft__realloc(pool->ev, cap * sizeof *grown);

            if (!grown)
                return weft__error(WEFT_ENOMEM,
                                   "plan: out of memory for events");
            pool->ev = grown;
            pool->cap = cap;
        }
        rc = weft__runtime_context(p->rt, device, &ctx);
        if (rc == 0)
            rc = weft__drv_event_create(ctx, flags, &pool->ev[pool->n]);
        if (rc < 0)
            return rc;
        pool->n++;
    }
    *ev = pool->ev[pool->used++];
    return 0;
}

static int weft__event_take(weft__plan *p, unsigned device, weft__event **ev)
{
    return weft__plan_pool_take(p, p->pools, device, 0, ev);
}

/* An event after everything enqueued on ln so far. */
int weft__plan_record(weft__plan *p, weft__lane *ln, weft__event **ev)
{
    int rc = weft__event_take(p, ln->device, ev);

    if (rc == 0)
        rc = weft__submit_event_record(p->sub, *ev, ln->q);
    if (rc == 0) {
        p->counts.events++;
        ln->tail_ev = *ev;
        ln->tail_seq = ln->seq;
    }
    return rc;
}

/*
 * The host waits for everything on x (a fallback, or the host's own need):
 * from then on every lane may take x's clock as complete.
 */
int weft__plan_host_sync_lane(weft__plan *p, weft__lane *x)
{
    int rc = weft__lanes_sync(p->sub, x->q);

    if (rc < 0)
        return rc;
    p->counts.host_syncs++;
    weft__vc_merge(p, weft__host_lane(p)->vc, x->vc);
    return 0;
}

/*
 * The host, for a step handed to a worker, after x's first upto operations
 * (clock xvc, event ev as in order_after): noted in the ticket, the host's
 * wait counted as if it had waited. A stamp's event will do; else an
 * event after x's tail, recorded by host_end, which covers x's clock.
 */
static int weft__defer_after(weft__plan *p, weft__lane *x, uint64_t upto,
                             const uint64_t *xvc, weft__event *ev)
{
    weft__plan_ticket *t = p->defer;
    uint32_t xi = weft__lane_index(p, x);

    if (t->vc[xi] >= upto) {
        if (xvc)
            weft__vc_merge(p, t->vc, xvc);
        return 0;
    }
    p->counts.host_syncs++;
    if (ev && xvc) {
        if (t->up[xi] < upto) {
            t->up[xi] = upto;
            t->ev[xi] = ev;
        }
        weft__vc_merge(p, t->vc, xvc);
    } else {
        t->up[xi] = UINT64_MAX;
        t->ev[xi] = NULL;
        weft__vc_merge(p, t->vc, x->vc);
    }
    return 0;
}

/*
 * Lane l's later work after x's first `upto` operations, whose clock is
 * xvc (NULL: unknown, only what x knows now may be learnt, and only by
 * waiting for x's tail); ev is an event recorded after them (NULL: record
 * one now, on x's tail). *made receives a recorded event.
 */
static int weft__order_after(weft__plan *p, weft__lane *l, weft__lane *x,
                             uint64_t upto, const uint64_t *xvc,
                             weft__event *ev, weft__event **made)
{
    uint32_t xi = weft__lane_index(p, x), li = weft__lane_index(p, l);
    weft__lane *h = weft__host_lane(p);
    int rc = 0;

    if (x == l || l->vc[xi] >= upto || h->vc[xi] >= upto || x == h) {
        if (xvc)
            weft__vc_merge(p, l->vc, xvc);
        return 0;
    }
    if (l == h && p->defer)
        return weft__defer_after(p, x, upto, xvc, ev);
    weft__plan_time_flow(p, l, x);
    if (l == h) {
        if (!ev || weft__submit_event_sync(p->sub, ev) < 0) {
            weft_clear_error();
            return weft__plan_host_sync_lane(p, x);
        }
        p->counts.host_syncs++;
        if (xvc)
            weft__vc_merge(p, h->vc, xvc);
        return 0;
    }
    if (!ev && x->tail_ev && x->tail_seq == x->seq) {
        /* An event already marks x's tail: no second one. */
        ev = x->tail_ev;
        xvc = x->vc;
    } else if (!ev) {
        rc = weft__plan_record(p, x, &ev);
        if (rc == 0 && made)
            *made = ev;
        if (rc == 0)
            xvc = x->vc; /* the event covers x's whole tail */
    }
    if (rc == 0)
        rc = weft__submit_queue_wait_event(p->sub, l->q, ev);
    if (rc < 0) {
        /* The device cannot wait for it: the host does, then it is done. */
        weft_clear_error();
        return weft__plan_host_sync_lane(p, x);
    }
    p->counts.waits++;
    weft__lane_bump(l, li);
    if (xvc)
        weft__vc_merge(p, l->vc, xvc);
    return 0;
}

/* Lane l after predecessor node j of the step. */
static int weft__after_node(weft__plan *p, weft__lane *l, uint32_t j)
{
    weft__stamp *st = &p->stamps[j];
    const uint64_t *svc = &p->stamp_vc[(size_t)j * p->nlanes];
    weft__event *made = NULL;
    int rc;

    if (st->lane == WEFT__NO_LANE)
        return 0; /* canceled or failed: its successors do not run */
    rc = weft__order_after(p, l, &p->lanes[st->lane], svc[st->lane], svc,
                           st->ev, &made);
    if (made)
        st->ev = made;
    return rc;
}

/* weft__after_node for predecessor edge e, noting how it was kept. */
int weft__plan_after_edge(weft__plan *p, weft__lane *l, uint32_t e)
{
    uint64_t w = p->counts.waits, h = p->counts.host_syncs;
    int rc = weft__after_node(p, l, p->preds[e]);

    if (p->counts.host_syncs > h)
        p->edge_kind[e] = 2;
    else if (p->counts.waits > w && p->edge_kind[e] == 0)
        p->edge_kind[e] = 1;
    return rc;
}

/* Ready lane l for the step: its queue, then after every predecessor. */
int weft__plan_ready(weft__plan *p, weft__lane *l)
{
    int rc = weft__lane_open(p, l);

    if (rc < 0 || l->full == p->stepno)
        return rc;
    weft__lane_mark(p, l);
    l->full = p->stepno;
    for (uint32_t e = p->pred_first[p->node];
         e < p->pred_first[p->node + 1] && rc == 0; e++)
        rc = weft__plan_after_edge(p, l, e);
    return rc;
}

/*
 * Ready lane l for a transfer of root's bytes that the step's node reads:
 * after the nodes that wrote them (graph.h, weft__raw), the transfer's
 * only sources, whether or not they are predecessors still (the reduction
 * may have left only a path to them); from the host copy, after none (its
 * bytes are complete once the copies on their way in land, and host work
 * is done before what follows it is issued). Copies still on their way
 * into the bytes are the buffer layer's to order (hooks.after). The
 * compute lane of the step joins l later, and itself waits for all
 * predecessors. A transfer's destination needs no more: bytes a device
 * lacks were written after whoever read its old copy, and that writer
 * waited for them.
 */
static int weft__ready_source(weft__plan *p, weft__lane *l,
                              const weft_buffer *root)
{
    const weft__node *nd = &p->nodes[p->node];
    int rc = weft__lane_open(p, l);

    if (rc < 0 || l->full == p->stepno)
        return rc;
    weft__lane_mark(p, l);
    for (uint32_t k = 0; !p->src_host && k < nd->nraw && rc == 0; k++) {
        const weft__raw *w = &p->raws[nd->raw_first + k];

        if (p->roots[w->root] == root)
            rc = weft__after_node(p, l, w->from);
    }
    return rc;
}

/* Whether another lane the step used has waited for all of lane i. */
static int weft__known_by_other(const weft__plan *p, const weft__lane *f,
                                unsigned i)
{
    for (unsigned k = 0; k < p->nused; k++) {
        unsigned j = p->used[k];
        const weft__lane *v = &p->lanes[j];

        if (j != i && v != f && v->q && v->vc[i] >= p->lanes[i].seq)
            return 1;
    }
    return 0;
}

/*
 * Lane f after the step's work on every other lane it used: first the
 * lanes no other used lane has waited for entirely (say the H2D lane of a
 * copy through the host), then the rest, which the first imply as a rule
 * (the D2H lane it waited for) and then cost nothing.
 */
int weft__plan_join(weft__plan *p, weft__lane *f)
{
    int rc = 0;

    for (int pass = 0; pass < 2; pass++)
        for (unsigned k = 0; k < p->nused && rc == 0; k++) {
            unsigned i = p->used[k];
            weft__lane *u = &p->lanes[i];

            if (u == f || i >= p->host || !u->q ||
                weft__known_by_other(p, f, i) != pass)
                continue;
            rc = weft__order_after(p, f, u, u->seq, u->vc, NULL, NULL);
        }
    return rc;
}

/* ---- the hooks -------------------------------------------------------------
 */

static int weft__hook_queue(void *set, unsigned device, weft__queue_role role,
                            weft__queue **q)
{
    weft__plan *p = set;
    unsigned compute = 0;
    weft__lane *l;
    int rc;

    if (p->node < p->n && p->plan_lane[p->node] != WEFT__NO_LANE)
        compute = p->lanes[p->plan_lane[p->node]].slot;
    l = weft__lane_at(p, device, weft__slot(p, device, role, compute));
    /*
     * The step's own work on a compute lane follows its transfers: joined
     * first, so that the predecessors those transfers already waited for
     * are implied on this lane and cost no second wait.
     */
    rc = weft__lane_open(p, l);
    if (rc == 0 && role == WEFT__QUEUE_COMPUTE)
        rc = weft__plan_join(p, l);
    if (rc == 0)
        rc = role != WEFT__QUEUE_COMPUTE && p->src_root && p->node < p->n
                 ? weft__ready_source(p, l, p->src_root)
                 : weft__plan_ready(p, l);
    if (rc < 0)
        return rc;
    p->last_lane = weft__lane_index(p, l);
    p->cur_role = role;
    if (p->timed)
        weft__plan_time_start(p, l);
    *q = l->q;
    return 0;
}

static void weft__pend_prune(weft__plan *p, weft__pend_list *pl);

static int weft__hook_issued(void *set, weft__queue *q, weft_buffer *root,
                             unsigned where, size_t off, size_t len)
{
    weft__plan *p = set;
    weft__lane *l = weft__lane_of(p, q);
    weft__pend_list *pl;
    weft__pending *pd;
    size_t at;
    size_t bytes = p->moved && p->moved < len ? p->moved : len;

    weft__assert(l);
    p->moved = 0;
    if (p->timed)
        weft__plan_time_end(p, l, bytes, root != NULL);
    weft__lane_bump(l, weft__lane_index(p, l));
    if (len && p->node < p->n && p->cur_role != WEFT__QUEUE_COMPUTE &&
        p->nodes[p->node].kind != WEFT__NODE_FILL &&
        l->slot >= WEFT__COMPUTE_LANES) {
        unsigned k = p->cur_role == WEFT__QUEUE_H2D   ? 0
                     : p->cur_role == WEFT__QUEUE_D2H ? 1
                                                      : 2;

        p->xfer[p->node].bytes[k] += bytes;
        p->xfer[p->node].copies[k]++;
    }
    if (!root || !len)
        return 0;
    pl = &p->pend[weft__pend_bucket(root, where)];
    if (pl->n == pl->cap) {
        size_t cap = pl->cap ? 2 * pl->cap : 16;

        pd = weft__realloc(pl->v, cap * sizeof *pd);
        if (!pd) {
            /* The copy is queued; with no room to remember it, wait. */
            weft_clear_error();
            return weft__plan_host_sync_lane(p, l);
        }
        pl->v = pd;
        pl->cap = cap;
    }
    /* In order of off: at the end, as a first launch's copies mostly go. */
    at = pl->n;
    if (at && pl->v[at - 1].off > off) {
        size_t lo = 0;

        while (lo < at) {
            size_t mid = lo + (at - lo) / 2;

            if (pl->v[mid].off > off)
                at = mid;
            else
                lo = mid + 1;
        }
    }
    memmove(&pl->v[at + 1], &pl->v[at], (pl->n - at) * sizeof *pl->v);
    pl->n++;
    pd = &pl->v[at];
    pd->root = root;
    pd->where = where;
    pd->off = off;
    pd->len = len;
    pd->lane = weft__lane_index(p, l);
    pd->seq = l->seq;
    if (len > pl->maxlen)
        pl->maxlen = len;
    weft__pend_prune(p, pl);
    return 0;
}

/* Drop what the host lane knows complete, once pl has doubled since. */
static void weft__pend_prune(weft__plan *p, weft__pend_list *pl)
{
    const weft__lane *h = weft__host_lane(p);
    size_t k = 0;

    if (pl->n < 2 * pl->kept + 16)
        return;
    for (size_t i = 0; i < pl->n; i++)
        if (h->vc[pl->v[i].lane] < pl->v[i].seq)
            pl->v[k++] = pl->v[i];
    pl->n = pl->kept = k;
}

const weft__pending *weft__pend_first(weft__plan *p, const weft_buffer *root,
                                      unsigned where, size_t off, size_t len,
                                      const weft__pending *after)
{
    weft__pend_list *pl = &p->pend[weft__pend_bucket(root, where)];
    const weft__lane *h = weft__host_lane(p);
    size_t i;

    if (!pl->n)
        return NULL;
    if (after) {
        i = (size_t)(after - pl->v) + 1;
    } else {
        /* the first whose off + maxlen passes off: those before end first */
        size_t lo = 0, hi = pl->n;

        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;

            if (pl->v[mid].off + pl->maxlen > off)
                hi = mid;
            else
                lo = mid + 1;
        }
        i = lo;
    }
    for (; i < pl->n && pl->v[i].off < off + len; i++) {
        const weft__pending *pd = &pl->v[i];

        if (pd->root == root && pd->where == where && off < pd->off + pd->len &&
            h->vc[pd->lane] < pd->seq)
            return pd;
    }
    return NULL;
}

int weft__plan_hook_after(void *set, weft__queue *q, weft_buffer *root,
                          unsigned where, size_t off, size_t len)
{
    weft__plan *p = set;
    weft__lane *l = q ? weft__lane_of(p, q) : weft__host_lane(p);
    int rc = 0;

    weft__assert(l);
    /* (what the host knows complete needs no order: it is done) */
    for (const weft__pending *pd =
             weft__pend_first(p, root, where, off, len, NULL);
         pd && rc == 0; pd = weft__pend_first(p, root, where, off, len, pd))
        rc = weft__order_after(p, l, &p->lanes[pd->lane], pd->seq, NULL, NULL,
                               NULL);
    weft__pend_prune(p, &p->pend[weft__pend_bucket(root, where)]);
    return rc;
}

static int weft__hook_drain(void *set)
{
    return weft__plan_drain(set);
}

static void weft__hook_source(void *set, weft_buffer *root, int from_host)
{
    weft__plan *p = set;

    p->src_root = root;
    p->src_host = from_host;
}

static void weft__hook_moved(void *set, size_t bytes)
{
    ((weft__plan *)set)->moved = bytes;
}

const weft__lane_hooks weft__plan_hooks = {
    weft__hook_queue, weft__hook_issued, weft__plan_hook_after,
    weft__hook_drain, weft__hook_source, weft__hook_moved,
};

/* ---- lowering -------------------------------------------------------------
 */

static int weft__is_device_node(const weft__node *nd)
{
    return weft__node_placed(nd) || nd->kind == WEFT__NODE_COPY;
}

static int weft__lower(weft__plan *p, const uint32_t *order, uint32_t *preds)
{
    uint32_t n = p->n, *pos, *last;
    unsigned *lanes = NULL;
    int rc = 0;

    pos = weft__malloc(((size_t)n + 1) * sizeof *pos);
    last = weft__malloc(((size_t)p->ndev * WEFT__COMPUTE_LANES + 1) *
                        sizeof *last);
    lanes = weft__calloc((size_t)p->ndev + 1, sizeof *lanes);
    if (!pos || !last || !lanes) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < n; k++)
        pos[order[k]] = k;
    for (uint32_t i = 0; i < (uint32_t)p->ndev * WEFT__COMPUTE_LANES; i++)
        last[i] = WEFT__NO_LANE;
    for (unsigned d = 0; d < p->ndev; d++)
        lanes[d] = weft__plan_compute_lanes(p->rt->devices[d]);
    /*
     * Latest first (insertion sort: lists are short), duplicates kept. A
     * list in issue order (a graph's inferred edges, issued in the order
     * added) is reversed instead.
     */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t f = p->pred_first[i], l = p->pred_first[i + 1], a = f + 1;

        while (a < l && pos[preds[a - 1]] < pos[preds[a]])
            a++;
        if (a == l) {
            for (uint32_t x = f, y = l - 1; x < y; x++, y--) {
                uint32_t t = preds[x];

                preds[x] = preds[y];
                preds[y] = t;
            }
            continue;
        }
        for (a = f + 1; a < l; a++)
            for (uint32_t b = a; b > f && pos[preds[b - 1]] < pos[preds[b]];
                 b--) {
                uint32_t t = preds[b];

                preds[b] = preds[b - 1];
                preds[b - 1] = t;
            }
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = order[k], slot = WEFT__NO_LANE;
        unsigned d = p->node_dev[i];

        p->plan_lane[i] = WEFT__NO_LANE;
        if (!weft__is_device_node(&p->nodes[i]) || d >= p->ndev)
            continue;
        if (p->nodes[i].priority == WEFT_PRIORITY_HIGH)
            slot = WEFT__HIGH_LANE;
        /*
         * Continue the chain of a predecessor on this device (the latest
         * first) whose lane it ends: the lane's order is then an edge the
         * graph has anyway.
         */
        for (uint32_t e = p->pred_first[i];
             slot == WEFT__NO_LANE && e < p->pred_first[i + 1]; e++) {
            uint32_t j = preds[e], pl = p->plan_lane[j];

            if (pl == WEFT__NO_LANE || p->lanes[pl].device != d)
                continue;
            if (last[d * WEFT__COMPUTE_LANES + p->lanes[pl].slot] == j &&
                p->lanes[pl].slot != WEFT__HIGH_LANE)
                slot = p->lanes[pl].slot;
        }
        /*
         * Else the lane whose last node came earliest (an empty one
         * first): the lane's order is an edge the graph lacks, and its
         * oldest end is the one most likely finished when this node is
         * ready. (Round robin could put it behind a node as new as itself:
         * on a CPU device, whose queues' order a native graph keeps, that
         * serialised independent tasks of one step.)
         */
        if (slot == WEFT__NO_LANE) {
            const uint32_t *tail = &last[d * WEFT__COMPUTE_LANES];

            slot = 0;
            for (unsigned s = 1; s < lanes[d] && tail[slot] != WEFT__NO_LANE;
                 s++)
                if (tail[s] == WEFT__NO_LANE || pos[tail[s]] < pos[tail[slot]])
                    slot = s;
        }
        last[d * WEFT__COMPUTE_LANES + slot] = i;
        p->plan_lane[i] = weft__lane_slot_index(p, d, slot);
    }
    /* Successors, for the decision to record an event after a node. */
    for (uint32_t e = 0; e < p->pred_first[n]; e++)
        p->succ_first[preds[e] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        p->succ_first[i + 1] += p->succ_first[i];
    memcpy(pos, p->succ_first, (size_t)n * sizeof *pos);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t e = p->pred_first[i]; e < p->pred_first[i + 1]; e++)
            p->succs[pos[preds[e]]++] = i;
out:
    weft__free(pos);
    weft__free(last);
    weft__free(lanes);
    return rc;
}

int weft__plan_create(weft_runtime *rt, const weft__node *nodes, uint32_t n,
                      const unsigned *node_dev, const uint32_t *order,
                      const uint32_t *pred_first, uint32_t *preds,
                      const weft__raw *raws, weft_buffer *const *roots,
                      int native, weft__plan **out)
{
    weft__plan *p = weft__calloc(1, sizeof *p);
    size_t nl;
    int rc;

    if (!p)
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    p->rt = rt;
    p->ndev = rt->ndevices;
    p->lane_base = weft__malloc(((size_t)p->ndev + 1) * sizeof *p->lane_base);
    if (!p->lane_base) {
        weft__free(p);
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    }
    p->lane_base[0] = 0;
    for (unsigned d = 0; d < p->ndev; d++)
        p->lane_base[d + 1] = p->lane_base[d] + WEFT__LANE_EXTRA +
                              weft__plan_compute_lanes(rt->devices[d]);
    p->host = p->lane_base[p->ndev];
    p->nlanes = p->host + 1;
    p->n = n;
    p->nodes = nodes;
    p->node_dev = node_dev;
    p->pred_first = pred_first;
    p->preds = preds;
    p->raws = raws;
    p->roots = roots;
    p->node = UINT32_MAX;
    p->last_lane = WEFT__NO_LANE;
    nl = p->nlanes;
    p->lanes = weft__calloc(nl, sizeof *p->lanes);
    p->used = weft__malloc(nl * sizeof *p->used);
    p->vcs = weft__calloc(nl * nl, sizeof *p->vcs);
    p->pools = weft__calloc((size_t)p->ndev + 1, sizeof *p->pools);
    p->succ_first = weft__calloc((size_t)n + 2, sizeof *p->succ_first);
    p->succs = weft__malloc(((size_t)pred_first[n] + 1) * sizeof *p->succs);
    p->plan_lane = weft__malloc(((size_t)n + 1) * sizeof *p->plan_lane);
    p->stamps = weft__calloc((size_t)n + 1, sizeof *p->stamps);
    /* Not zeroed: a row is written whole before its stamp names a lane
     * (weft__plan_step_end), and rows nobody steps (a launch with no issue)
     * are never touched, so a large plan costs no page until then. */
    p->stamp_vc = weft__malloc(((size_t)n * nl + 1) * sizeof *p->stamp_vc);
    p->edge_kind = weft__calloc((size_t)pred_first[n] + 1, 1);
    p->xfer = weft__calloc((size_t)n + 1, sizeof *p->xfer);
    p->tpools = weft__calloc((size_t)p->ndev + 1, sizeof *p->tpools);
    p->origin = weft__calloc((size_t)p->ndev + 1, sizeof *p->origin);
    p->origin_ns = weft__calloc((size_t)p->ndev + 1, sizeof *p->origin_ns);
    p->tracks = weft__malloc(nl * sizeof *p->tracks);
    p->trace = rt->trace;
    {
        bool stats = false;

        weft__opt_bool(WEFT__OPT_STATS, &stats);
        p->stats = stats;
    }
    {
        static unsigned ids;

        p->id = __atomic_fetch_add(&ids, 1, __ATOMIC_RELAXED);
    }
    if (!p->lanes || !p->used || !p->vcs || !p->pools || !p->succ_first ||
        !p->succs || !p->plan_lane || !p->stamps || !p->stamp_vc ||
        !p->edge_kind || !p->xfer || !p->tpools || !p->origin ||
        !p->origin_ns || !p->tracks) {
        weft__plan_destroy(p);
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    }
    for (unsigned i = 0; i < nl; i++) {
        p->tracks[i] = UINT32_MAX;
        p->lanes[i].last_top = UINT32_MAX;
        p->lanes[i].vc = &p->vcs[(size_t)i * nl];
    }
    for (unsigned d = 0; d < p->ndev; d++)
        for (unsigned slot = 0; slot < WEFT__LANE_SLOTS; slot++)
            if (slot < weft__dev_compute(p, d) || slot >= WEFT__HIGH_LANE) {
                weft__lane *l = weft__lane_at(p, d, slot);

                l->device = d;
                l->slot = slot;
            }
    p->lanes[p->host].device = p->ndev;
    p->lanes[p->host].slot = WEFT__LANE_SLOTS;
    for (uint32_t i = 0; i < n; i++)
        p->stamps[i].lane = WEFT__NO_LANE;
    if ((rc = weft__lower(p, order, preds)) < 0) {
        weft__plan_destroy(p);
        return rc;
    }
    {
        unsigned dev = UINT32_MAX;

        /* Device work on one device, or on devices of one driver whose
         * graphs wait for each other (tape.h), with native graphs. */
        p->tape_ok = 1;
        for (uint32_t i = 0; i < n && p->tape_ok; i++) {
            const weft__driver *drv;

            if (p->plan_lane[i] == WEFT__NO_LANE)
                continue;
            if (dev == UINT32_MAX)
                dev = node_dev[i];
            drv = rt->devices[dev]->drv;
            p->tape_ok =
                (node_dev[i] == dev || (rt->devices[node_dev[i]]->drv == drv &&
                                        weft__tape_joins_devices(drv))) &&
                weft__tape_supported(rt->devices[node_dev[i]], native);
        }
        p->tape_ok = p->tape_ok && dev != UINT32_MAX;
        /* A native node's function is called at every launch, unless the
         * program said its work may be captured and the driver can
         * capture it (tape.h, "Native nodes"). */
        for (uint32_t i = 0; i < n && p->tape_ok; i++)
            p->tape_ok = nodes[i].kind != WEFT__NODE_NATIVE ||
                         (nodes[i].u.native.capture &&
                          rt->devices[node_dev[i]]->drv->native_capture);
    }
    weft__tape_set_dag(&p->tape, n, p->pred_first, p->preds);
    *out = p;
    return 0;
}

void weft__plan_succs(const weft__plan *p, const uint32_t **first,
                      const uint32_t **succs)
{
    *first = p->succ_first;
    *succs = p->succs;
}

void weft__plan_destroy(weft__plan *p)
{
    if (!p)
        return;
    if (p->lanes && p->lanes[0].vc) {
        if (weft__plan_drain(p) < 0)
            weft__warn("sched", "plan: %s", weft_last_error());
        weft__tape_release(&p->tape);
        for (unsigned i = 0; i < p->host; i++)
            if (p->lanes[i].q)
                weft__drv_queue_destroy(p->lanes[i].q);
    }
    for (unsigned d = 0; p->pools && d < p->ndev; d++) {
        for (unsigned i = 0; i < p->pools[d].n; i++)
            weft__drv_event_destroy(p->pools[d].ev[i]);
        weft__free(p->pools[d].ev);
    }
    for (unsigned d = 0; p->tpools && d < p->ndev; d++) {
        for (unsigned i = 0; i < p->tpools[d].n; i++)
            weft__drv_event_destroy(p->tpools[d].ev[i]);
        weft__free(p->tpools[d].ev);
    }
    weft__free(p->tpools);
    weft__free(p->origin);
    weft__free(p->origin_ns);
    weft__free(p->tops);
    weft__free(p->node_time);
    weft__free(p->tracks);
    weft__free(p->pools);
    weft__free(p->lanes);
    weft__free(p->lane_base);
    weft__free(p->used);
    weft__free(p->vcs);
    weft__free(p->succ_first);
    weft__free(p->succs);
    weft__free(p->plan_lane);
    weft__free(p->stamps);
    weft__free(p->stamp_vc);
    weft__free(p->edge_kind);
    weft__free(p->xfer);
    for (unsigned b = 0; b < WEFT__PEND_BUCKETS; b++)
        weft__free(p->pend[b].v);
    weft__free(p);
}

int weft__plan_lane_queue(weft__plan *p, unsigned device, unsigned slot,
                          weft__queue **q)
{
    weft__lane *l = weft__lane_at(
        p, device, slot % weft__plan_compute_lanes(p->rt->devices[device]));
    int rc = weft__lane_open(p, l);

    if (rc == 0)
        *q = l->q;
    return rc;
}
