/*
 * The lowered plan: lanes, vector clocks, events, and the hooks through
 * which the buffer layer's transfers join it. plan.h has the model.
 *
 * Threads: a plan is used by its executor's worker alone (the hooks run on
 * that thread, inside the buffer calls it makes), except the host
 * functions it enqueues, which touch only their own weft__plan_memcpy, and
 * the host workers, which only wait for the events of a ticket.
 */
#include "plan.h"

#include "../base/trace.h"
#include "cost.h"
#include "tape.h"

#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define WEFT__NO_LANE UINT32_MAX

typedef struct weft__lane {
    weft__queue *q; /* NULL until first used; none for the host lane */
    unsigned device;
    unsigned slot;
    uint64_t seq;         /* operations enqueued, waits included */
    uint64_t *vc;         /* nlanes: see plan.h; vc[self] == seq */
    uint64_t mark;        /* the step that last used the lane */
    weft__event *tail_ev; /* recorded when seq was tail_seq (this launch) */
    uint64_t tail_seq;
    uint64_t full;  /* the step that last put it after all its preds */
    uint64_t seq0;  /* seq when the launch began */
    uint64_t nodes; /* steps that ended on the lane, this launch */
    uint64_t busy_ns, first_ns, last_ns; /* timed launches */
    /* Timed launches: the lane's latest operation record, and records on
     * other lanes its next one waited for (flows). */
    uint32_t last_top;
    uint32_t flow_from[4];
    unsigned nflow;
} weft__lane;

/*
 * One timed operation of a launch: device work between two timing events,
 * or a host step between two readings of the host clock.
 */
typedef struct weft__top {
    uint32_t lane, node;
    uint32_t worker; /* host steps: the host worker's index + 1, or 0 */
    weft__event *start, *end; /* device work; NULL for host steps */
    uint64_t t0, t1;          /* host steps: the host clock */
    uint64_t bytes;
    weft__trace_kind kind;
    uint32_t flow_from[4]; /* earlier records this one waited for */
    unsigned nflow;
} weft__top;

/* A copy into [off, off + len) of root's copy `where`, op seq of lane. */
typedef struct weft__pending {
    weft_buffer *root;
    unsigned where;
    size_t off, len;
    uint32_t lane;
    uint64_t seq;
} weft__pending;

enum { WEFT__PEND_BUCKETS = 64 };

static unsigned weft__pend_bucket(const weft_buffer *root, unsigned where)
{
    uint64_t h = ((uintptr_t)root >> 4) * 0x9e3779b97f4a7c15ull + where;

    return (unsigned)(h >> 58) % WEFT__PEND_BUCKETS;
}

typedef struct weft__event_pool {
    weft__event **ev;
    unsigned n, used, cap; /* made; handed out since the last drain */
} weft__event_pool;

typedef struct weft__stamp {
    uint32_t lane; /* WEFT__NO_LANE: not issued */
    weft__event *ev;
    /* A host step that a worker finished and the host lane has not learnt
     * from yet (host_done, step_begin). */
    weft__plan_ticket *held;
} weft__stamp;

struct weft__plan {
    weft_runtime *rt;
    unsigned ndev, nlanes, host; /* host: the host lane's index */
    weft__lane *lanes;
    uint64_t *vcs; /* nlanes * nlanes, the lanes' clocks */
    weft__event_pool *pools;

    uint32_t n;
    const weft__node *nodes;
    const unsigned *node_dev;
    const uint32_t *pred_first, *preds;
    uint32_t *succ_first, *succs;
    uint32_t *plan_lane; /* kernels and copies: the lowered lane, else NO */
    weft__stamp *stamps;
    uint64_t *stamp_vc; /* n * nlanes */

    weft__pending *pending;
    size_t npending, cap_pending;
    /* Pending entries per hash of (root, where): a lookup for a pair
     * with none skips the scan (first launches queue a copy per node). */
    uint32_t pend_count[WEFT__PEND_BUCKETS];

    /* What the last launch did, for DOT and traces. */
    unsigned char *edge_kind; /* pred_first[n]: see weft__plan_edge_kind */
    struct weft__plan_xfer {
        uint64_t bytes[3];
        uint32_t copies[3];
    } * xfer;                  /* n */
    weft__queue_role cur_role; /* of the queue last handed out */

    /*
     * Timing (trace.h, and the kernel time model): a launch is timed when
     * the runtime traces, or while learning (its first launches). Every
     * device operation is then bracketed by two timing events; a device's
     * times are placed on the host clock by an origin event recorded on an
     * idle lane and waited for.
     */
    weft__trace *trace;
    unsigned learn; /* launches still to time for the kernel times */
    unsigned timed; /* this launch */
    unsigned stats; /* WEFT_STATS: time every launch */
    unsigned id;    /* names the host track */
    weft__event_pool *tpools;
    weft__event **origin;   /* ndev: this launch's, or NULL */
    uint64_t *origin_ns;    /* ndev: its host time */
    weft__event *cur_start; /* recorded by the last queue hook */
    uint32_t cur_start_lane;
    weft__top *tops;
    size_t ntops, cap_tops;
    uint32_t *tracks;     /* nlanes: trace track, or UINT32_MAX */
    uint32_t wtracks[64]; /* host workers' trace tracks + 1, or 0 */

    /* Native graphs (tape.h): for a plan whose device work is all on
     * devices of one driver that has them. sub: where this launch's
     * enqueues and host waits go (the tape's submission while the launch
     * is taped, else NULL: the driver entry points). */
    weft__tape tape;
    unsigned tape_ok;  /* the plan could use one */
    unsigned tape_now; /* this launch taped */
    const weft__submit *sub;

    /* A host step being handed to a worker (host_begin to host_end), and
     * the tickets of those not done yet, whose events stay recorded. */
    weft__plan_ticket *defer;
    unsigned tickets;
    unsigned held; /* stamps with held set, at most */

    /* The writers each node reads from (graph.h) and the roots they name. */
    const weft__raw *raws;
    weft_buffer *const *roots;
    const weft_buffer *src_root; /* hooks.source: transfers for a read */
    int src_host;                /* ... from the host copy */

    /* The step in progress. */
    uint64_t stepno;
    uint32_t node;
    uint32_t last_lane; /* the lane last handed out, or NO */

    weft__plan_counts counts;
};

/* ---- clocks and lanes ---------------------------------------------------- */

static void weft__vc_merge(weft__plan *p, uint64_t *to, const uint64_t *from)
{
    for (unsigned i = 0; i < p->nlanes; i++)
        if (from[i] > to[i])
            to[i] = from[i];
}

static weft__lane *weft__host_lane(weft__plan *p)
{
    return &p->lanes[p->host];
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

static void weft__time_origin(weft__plan *p, weft__lane *ln);

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
    if (rc == 0)
        rc = weft__drv_queue_create(ctx, &desc, &ln->q);
    if (rc < 0)
        return weft__error_prefix(rc, "lane %u of device %u (%s)", ln->slot,
                                  ln->device, p->rt->devices[ln->device]->name);
    p->counts.lanes_used++;
    if (p->timed)
        weft__time_origin(p, ln);
    return 0;
}

static weft__lane *weft__lane_at(weft__plan *p, unsigned device, unsigned slot)
{
    return &p->lanes[device * WEFT__LANE_SLOTS + slot];
}

static uint32_t weft__lane_index(const weft__plan *p, const weft__lane *ln)
{
    return (uint32_t)(ln - p->lanes);
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

/* An operation went onto ln. */
static void weft__lane_bump(weft__lane *ln, uint32_t self)
{
    ln->seq++;
    ln->vc[self] = ln->seq;
}

static int weft__pool_take(weft__plan *p, weft__event_pool *pools,
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
    return weft__pool_take(p, p->pools, device, 0, ev);
}

/* ---- timing ------------------------------------------------------------ */

/*
 * Device d's origin for this launch, on lane ln, which has nothing in
 * flight (a new queue, or any lane at the start of a launch): waited for
 * at once, so that its time on the device is the host's time now. A
 * device that cannot give one is not timed in this launch.
 */
static void weft__time_origin(weft__plan *p, weft__lane *ln)
{
    weft__event *ev = NULL;

    if (p->origin[ln->device])
        return;
    if (weft__pool_take(p, p->tpools, ln->device, WEFT__EVENT_TIMING, &ev) <
            0 ||
        weft__submit_event_record(p->sub, ev, ln->q) < 0 ||
        weft__submit_event_sync(p->sub, ev) < 0) {
        weft__debug("sched", "no timing on device %u: %s", ln->device,
                    weft_last_error());
        weft_clear_error();
        return;
    }
    p->origin[ln->device] = ev;
    p->origin_ns[ln->device] = weft__now_ns();
}

/* Room for one more record, zeroed; NULL if there is none. */
static weft__top *weft__top_alloc(weft__plan *p, uint32_t lane)
{
    weft__top *t;

    if (p->ntops == p->cap_tops) {
        size_t cap = p->cap_tops ? 2 * p->cap_tops : 256;

        t = weft__realloc(p->tops, cap * sizeof *t);
        if (!t) {
            weft_clear_error();
            return NULL;
        }
        p->tops = t;
        p->cap_tops = cap;
    }
    t = &p->tops[p->ntops++];
    memset(t, 0, sizeof *t);
    t->lane = lane;
    t->node = p->node;
    return t;
}

/* A record that is lane's latest, with the arrows lane had pending. */
static weft__top *weft__top_push(weft__plan *p, uint32_t lane)
{
    weft__lane *l = &p->lanes[lane];
    weft__top *t = weft__top_alloc(p, lane);

    if (!t)
        return NULL;
    memcpy(t->flow_from, l->flow_from, sizeof t->flow_from);
    t->nflow = l->nflow;
    l->nflow = 0;
    l->last_top = (uint32_t)(p->ntops - 1);
    return t;
}

/* Lane l now waits for x's work so far: a flow from x's latest record. */
static void weft__time_flow(weft__plan *p, weft__lane *l, const weft__lane *x)
{
    if (p->timed && x->last_top != UINT32_MAX &&
        l->nflow < WEFT__COUNTOF(l->flow_from))
        l->flow_from[l->nflow++] = x->last_top;
}

/* The start of the operation about to go onto l. */
static void weft__time_start(weft__plan *p, weft__lane *l)
{
    weft__event *ev = NULL;

    p->cur_start = NULL;
    if (!p->origin[l->device])
        return;
    if (weft__pool_take(p, p->tpools, l->device, WEFT__EVENT_TIMING, &ev) < 0 ||
        weft__submit_event_record(p->sub, ev, l->q) < 0) {
        weft_clear_error();
        return;
    }
    p->cur_start = ev;
    p->cur_start_lane = weft__lane_index(p, l);
}

/* What the operation just issued for the step is, for the trace. */
static weft__trace_kind weft__op_kind(const weft__plan *p, int has_root)
{
    if (has_root && p->nodes[p->node].kind == WEFT__NODE_FILL)
        return WEFT__TRACE_FILL; /* on whichever lane it ran */
    switch (p->cur_role) {
    case WEFT__QUEUE_H2D:
        return WEFT__TRACE_H2D;
    case WEFT__QUEUE_D2H:
        return WEFT__TRACE_D2H;
    case WEFT__QUEUE_PEER:
        return WEFT__TRACE_PEER;
    default:
        /* With bytes on a compute lane: a copy inside the device, no link. */
        return has_root ? WEFT__TRACE_OTHER : WEFT__TRACE_KERNEL;
    }
}

/* The end of what went onto l since its start: one record. */
static void weft__time_end(weft__plan *p, weft__lane *l, uint64_t bytes,
                           int has_root)
{
    uint32_t li = weft__lane_index(p, l);
    weft__event *ev = NULL;
    weft__top *t;

    if (!p->cur_start || p->cur_start_lane != li)
        return;
    if (weft__pool_take(p, p->tpools, l->device, WEFT__EVENT_TIMING, &ev) < 0 ||
        weft__submit_event_record(p->sub, ev, l->q) < 0 ||
        !(t = weft__top_push(p, li))) {
        weft_clear_error();
        p->cur_start = NULL;
        return;
    }
    t->start = p->cur_start;
    t->end = ev;
    t->bytes = bytes;
    t->kind = weft__op_kind(p, has_root);
    p->cur_start = NULL;
}

/* An event after everything enqueued on ln so far. */
static int weft__record(weft__plan *p, weft__lane *ln, weft__event **ev)
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
static int weft__host_sync_lane(weft__plan *p, weft__lane *x)
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
    weft__time_flow(p, l, x);
    if (l == h) {
        if (!ev || weft__submit_event_sync(p->sub, ev) < 0) {
            weft_clear_error();
            return weft__host_sync_lane(p, x);
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
        rc = weft__record(p, x, &ev);
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
        return weft__host_sync_lane(p, x);
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
static int weft__after_edge(weft__plan *p, weft__lane *l, uint32_t e)
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
static int weft__ready(weft__plan *p, weft__lane *l)
{
    int rc = weft__lane_open(p, l);

    if (rc < 0 || l->full == p->stepno)
        return rc;
    l->mark = l->full = p->stepno;
    for (uint32_t e = p->pred_first[p->node];
         e < p->pred_first[p->node + 1] && rc == 0; e++)
        rc = weft__after_edge(p, l, e);
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
    l->mark = p->stepno;
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
    for (unsigned j = 0; j < p->host; j++) {
        const weft__lane *v = &p->lanes[j];

        if (j != i && v != f && v->mark == p->stepno && v->q &&
            v->vc[i] >= p->lanes[i].seq)
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
static int weft__join(weft__plan *p, weft__lane *f)
{
    int rc = 0;

    for (int pass = 0; pass < 2; pass++)
        for (unsigned i = 0; i < p->host && rc == 0; i++) {
            weft__lane *u = &p->lanes[i];

            if (u == f || u->mark != p->stepno || !u->q ||
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
        compute = p->plan_lane[p->node] % WEFT__LANE_SLOTS;
    l = weft__lane_at(p, device, weft__slot(p, device, role, compute));
    /*
     * The step's own work on a compute lane follows its transfers: joined
     * first, so that the predecessors those transfers already waited for
     * are implied on this lane and cost no second wait.
     */
    rc = weft__lane_open(p, l);
    if (rc == 0 && role == WEFT__QUEUE_COMPUTE)
        rc = weft__join(p, l);
    if (rc == 0)
        rc = role != WEFT__QUEUE_COMPUTE && p->src_root && p->node < p->n
                 ? weft__ready_source(p, l, p->src_root)
                 : weft__ready(p, l);
    if (rc < 0)
        return rc;
    p->last_lane = weft__lane_index(p, l);
    p->cur_role = role;
    if (p->timed)
        weft__time_start(p, l);
    *q = l->q;
    return 0;
}

static int weft__hook_issued(void *set, weft__queue *q, weft_buffer *root,
                             unsigned where, size_t off, size_t len)
{
    weft__plan *p = set;
    weft__lane *l = weft__lane_of(p, q);
    weft__pending *pd;

    weft__assert(l);
    if (p->timed)
        weft__time_end(p, l, len, root != NULL);
    weft__lane_bump(l, weft__lane_index(p, l));
    if (len && p->node < p->n && p->cur_role != WEFT__QUEUE_COMPUTE &&
        p->nodes[p->node].kind != WEFT__NODE_FILL &&
        l->slot >= WEFT__COMPUTE_LANES) {
        unsigned k = p->cur_role == WEFT__QUEUE_H2D   ? 0
                     : p->cur_role == WEFT__QUEUE_D2H ? 1
                                                      : 2;

        p->xfer[p->node].bytes[k] += len;
        p->xfer[p->node].copies[k]++;
    }
    if (!root || !len)
        return 0;
    if (p->npending == p->cap_pending) {
        size_t cap = p->cap_pending ? 2 * p->cap_pending : 16;

        pd = weft__realloc(p->pending, cap * sizeof *pd);
        if (!pd) {
            /* The copy is queued; with no room to remember it, wait. */
            weft_clear_error();
            return weft__host_sync_lane(p, l);
        }
        p->pending = pd;
        p->cap_pending = cap;
    }
    pd = &p->pending[p->npending++];
    pd->root = root;
    pd->where = where;
    pd->off = off;
    pd->len = len;
    pd->lane = weft__lane_index(p, l);
    pd->seq = l->seq;
    p->pend_count[weft__pend_bucket(root, where)]++;
    return 0;
}

static int weft__hook_after(void *set, weft__queue *q, weft_buffer *root,
                            unsigned where, size_t off, size_t len)
{
    weft__plan *p = set;
    weft__lane *l = q ? weft__lane_of(p, q) : weft__host_lane(p);
    weft__lane *h = weft__host_lane(p);
    size_t k = 0;
    int rc = 0;

    weft__assert(l);
    if (!p->pend_count[weft__pend_bucket(root, where)])
        return 0;
    for (size_t i = 0; i < p->npending && rc == 0; i++) {
        weft__pending *pd = &p->pending[i];
        weft__lane *x = &p->lanes[pd->lane];

        if (pd->root == root && pd->where == where && pd->off < off + len &&
            off < pd->off + pd->len)
            rc = weft__order_after(p, l, x, pd->seq, NULL, NULL, NULL);
    }
    /* Forget what the host now knows complete. */
    for (size_t i = 0; i < p->npending; i++)
        if (h->vc[p->pending[i].lane] < p->pending[i].seq)
            p->pending[k++] = p->pending[i];
        else
            p->pend_count[weft__pend_bucket(p->pending[i].root,
                                            p->pending[i].where)]--;
    p->npending = k;
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

const weft__lane_hooks weft__plan_hooks = {
    weft__hook_queue, weft__hook_issued, weft__hook_after,
    weft__hook_drain, weft__hook_source,
};

/* ---- lowering -------------------------------------------------------------
 */

static int weft__is_device_node(const weft__node *nd)
{
    return nd->kind == WEFT__NODE_KERNEL || nd->kind == WEFT__NODE_COPY;
}

static int weft__lower(weft__plan *p, const uint32_t *order, uint32_t *preds)
{
    uint32_t n = p->n, *pos, *last, *rr;
    int rc = 0;

    pos = weft__malloc(((size_t)n + 1) * sizeof *pos);
    last = weft__malloc(((size_t)p->ndev * WEFT__COMPUTE_LANES + 1) *
                        sizeof *last);
    rr = weft__calloc((size_t)p->ndev + 1, sizeof *rr);
    if (!pos || !last || !rr) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < n; k++)
        pos[order[k]] = k;
    for (uint32_t i = 0; i < (uint32_t)p->ndev * WEFT__COMPUTE_LANES; i++)
        last[i] = WEFT__NO_LANE;
    /* Latest first (insertion sort: lists are short), duplicates kept. */
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t a = p->pred_first[i] + 1; a < p->pred_first[i + 1]; a++)
            for (uint32_t b = a;
                 b > p->pred_first[i] && pos[preds[b - 1]] < pos[preds[b]];
                 b--) {
                uint32_t t = preds[b];

                preds[b] = preds[b - 1];
                preds[b - 1] = t;
            }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = order[k], slot = WEFT__NO_LANE;
        unsigned d = p->node_dev[i];

        p->plan_lane[i] = WEFT__NO_LANE;
        if (!weft__is_device_node(&p->nodes[i]) || d >= p->ndev)
            continue;
        /* Continue the chain of the latest predecessor on this device. */
        for (uint32_t e = p->pred_first[i]; e < p->pred_first[i + 1]; e++) {
            uint32_t j = preds[e], pl = p->plan_lane[j];

            if (pl == WEFT__NO_LANE || pl / WEFT__LANE_SLOTS != d)
                continue;
            if (last[d * WEFT__COMPUTE_LANES + pl % WEFT__LANE_SLOTS] == j)
                slot = pl % WEFT__LANE_SLOTS;
            break;
        }
        if (slot == WEFT__NO_LANE)
            slot = rr[d]++ % WEFT__COMPUTE_LANES;
        last[d * WEFT__COMPUTE_LANES + slot] = i;
        p->plan_lane[i] = d * WEFT__LANE_SLOTS + slot;
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
    weft__free(rr);
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
    p->host = p->ndev * WEFT__LANE_SLOTS;
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
    p->vcs = weft__calloc(nl * nl, sizeof *p->vcs);
    p->pools = weft__calloc((size_t)p->ndev + 1, sizeof *p->pools);
    p->succ_first = weft__calloc((size_t)n + 2, sizeof *p->succ_first);
    p->succs = weft__malloc(((size_t)pred_first[n] + 1) * sizeof *p->succs);
    p->plan_lane = weft__malloc(((size_t)n + 1) * sizeof *p->plan_lane);
    p->stamps = weft__calloc((size_t)n + 1, sizeof *p->stamps);
    p->stamp_vc = weft__calloc((size_t)n * nl + 1, sizeof *p->stamp_vc);
    p->edge_kind = weft__calloc((size_t)pred_first[n] + 1, 1);
    p->xfer = weft__calloc((size_t)n + 1, sizeof *p->xfer);
    p->tpools = weft__calloc((size_t)p->ndev + 1, sizeof *p->tpools);
    p->origin = weft__calloc((size_t)p->ndev + 1, sizeof *p->origin);
    p->origin_ns = weft__calloc((size_t)p->ndev + 1, sizeof *p->origin_ns);
    p->tracks = weft__malloc(nl * sizeof *p->tracks);
    p->trace = rt->trace;
    {
        const char *v = weft__env("WEFT_STATS");

        p->stats = v && strcmp(v, "0") != 0;
    }
    {
        static unsigned ids;

        p->id = __atomic_fetch_add(&ids, 1, __ATOMIC_RELAXED);
    }
    if (!p->lanes || !p->vcs || !p->pools || !p->succ_first || !p->succs ||
        !p->plan_lane || !p->stamps || !p->stamp_vc || !p->edge_kind ||
        !p->xfer || !p->tpools || !p->origin || !p->origin_ns || !p->tracks) {
        weft__plan_destroy(p);
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    }
    for (unsigned i = 0; i < nl; i++) {
        p->tracks[i] = UINT32_MAX;
        p->lanes[i].last_top = UINT32_MAX;
        p->lanes[i].vc = &p->vcs[(size_t)i * nl];
        p->lanes[i].device = i / WEFT__LANE_SLOTS;
        p->lanes[i].slot = i % WEFT__LANE_SLOTS;
    }
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
    }
    *out = p;
    return 0;
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
    weft__free(p->tracks);
    weft__free(p->pools);
    weft__free(p->lanes);
    weft__free(p->vcs);
    weft__free(p->succ_first);
    weft__free(p->succs);
    weft__free(p->plan_lane);
    weft__free(p->stamps);
    weft__free(p->stamp_vc);
    weft__free(p->edge_kind);
    weft__free(p->xfer);
    weft__free(p->pending);
    weft__free(p);
}

int weft__plan_lane_queue(weft__plan *p, unsigned device, unsigned slot,
                          weft__queue **q)
{
    weft__lane *l = weft__lane_at(p, device, slot % WEFT__COMPUTE_LANES);
    int rc = weft__lane_open(p, l);

    if (rc == 0)
        *q = l->q;
    return rc;
}

/* ---- launches and steps ------------------------------------------------- */

void weft__plan_launch_begin(weft__plan *p)
{
    memset(&p->counts.events, 0,
           offsetof(weft__plan_counts, lanes_used) -
               offsetof(weft__plan_counts, events));
    for (uint32_t i = 0; i < p->n; i++) {
        p->stamps[i].lane = WEFT__NO_LANE;
        p->stamps[i].ev = NULL;
        p->stamps[i].held = NULL;
    }
    for (unsigned i = 0; i < p->nlanes; i++) {
        p->lanes[i].seq0 = p->lanes[i].seq;
        p->lanes[i].nodes = 0;
        p->lanes[i].busy_ns = p->lanes[i].first_ns = p->lanes[i].last_ns = 0;
    }
    memset(p->edge_kind, 0, p->pred_first[p->n]);
    memset(p->xfer, 0, (size_t)p->n * sizeof *p->xfer);
    p->timed = p->trace != NULL || p->learn > 0 || p->stats;
    p->ntops = 0;
    p->cur_start = NULL;
    for (unsigned i = 0; i < p->nlanes; i++) {
        p->lanes[i].last_top = UINT32_MAX;
        p->lanes[i].nflow = 0;
    }
    for (unsigned d = 0; d < p->ndev; d++) {
        p->origin[d] = NULL;
        p->tpools[d].used = 0;
    }
    /* Every lane is idle between launches: an origin on any of them. */
    for (unsigned i = 0; p->timed && i < p->host; i++)
        if (p->lanes[i].q)
            weft__time_origin(p, &p->lanes[i]);
    p->tape_now = 0;
    p->sub = NULL;
}

const weft__submit *weft__plan_native_begin(weft__plan *p, int allow)
{
    /* Timed launches need every operation to run as it is issued. */
    p->tape_now = allow && p->tape_ok && !p->timed;
    p->sub = p->tape_now ? weft__tape_begin(&p->tape) : NULL;
    return p->sub;
}

int weft__plan_native_end(weft__plan *p)
{
    if (!p->tape_now)
        return 0;
    p->tape_now = 0;
    p->sub = NULL;
    return weft__tape_end(&p->tape);
}

uint64_t weft__plan_native_launches(const weft__plan *p)
{
    return p->tape.launches;
}

uint64_t weft__plan_native_updates(const weft__plan *p)
{
    return p->tape.updates + p->tape.rebuilds;
}

unsigned weft__plan_native_graphs(const weft__plan *p)
{
    return p->tape_ok && p->tape.built && !p->tape.broken ? p->tape.nsegs : 0;
}

int weft__plan_native_possible(const weft__plan *p)
{
    return p->tape_ok && p->tape.built && !p->tape.broken;
}

int weft__plan_native_matched(const weft__plan *p)
{
    return weft__plan_native_possible(p) && p->tape.matched;
}

int weft__plan_native_replay(weft__plan *p)
{
    int rc = weft__tape_replay(&p->tape);

    if (rc < 0)
        p->tape.matched = 0;
    return rc;
}

unsigned weft__plan_learning(const weft__plan *p)
{
    return p->learn;
}

void weft__plan_set_learn(weft__plan *p, unsigned n)
{
    p->learn = n;
}

int weft__plan_timed(const weft__plan *p)
{
    return p->timed != 0;
}

void weft__plan_time_host(weft__plan *p, int kind, uint64_t t0, uint64_t t1,
                          uint64_t bytes)
{
    weft__top *t;

    if (!p->timed || !(t = weft__top_push(p, p->host)))
        return;
    t->t0 = t0;
    t->t1 = t1 < t0 ? t0 : t1;
    t->bytes = bytes;
    t->kind = (weft__trace_kind)kind;
}

void weft__plan_time_worker(weft__plan *p, uint32_t node, int worker, int kind,
                            uint64_t t0, uint64_t t1, uint64_t bytes)
{
    weft__top *t;

    /* Not the issuing thread's record: its arrows and latest stay. */
    if (!p->timed || !(t = weft__top_alloc(p, p->host)))
        return;
    t->node = node;
    t->worker = worker >= 0 ? (uint32_t)worker + 1 : 0;
    t->t0 = t0;
    t->t1 = t1 < t0 ? t0 : t1;
    t->bytes = bytes;
    t->kind = (weft__trace_kind)kind;
}

/* Why the copy of record t was made, for the trace. */
static void weft__top_cause(const weft__plan *p, const weft__top *t, char *buf,
                            size_t n)
{
    const weft__node *nd = &p->nodes[t->node];
    char label[128];
    unsigned d = p->lanes[t->lane].device;

    weft__node_label(nd, label, sizeof label);
    switch (t->kind) {
    case WEFT__TRACE_H2D:
    case WEFT__TRACE_PEER:
        if (nd->kind == WEFT__NODE_KERNEL)
            snprintf(buf, n, "read by %s on %s, not valid there", label,
                     p->rt->devices[d]->name);
        else
            snprintf(buf, n, "for %s on %s", label, p->rt->devices[d]->name);
        break;
    case WEFT__TRACE_D2H:
        if (nd->kind == WEFT__NODE_KERNEL || nd->kind == WEFT__NODE_COPY)
            snprintf(buf, n, "evicted from %s (write-back) to make room for %s",
                     p->rt->devices[d]->name, label);
        else if (nd->kind == WEFT__NODE_MAP)
            snprintf(buf, n, "for %s: the host maps bytes valid only on %s",
                     label, p->rt->devices[d]->name);
        else
            snprintf(buf, n, "for %s: the host needs bytes valid only on %s",
                     label, p->rt->devices[d]->name);
        break;
    default:
        buf[0] = '\0';
        break;
    }
}

/* The trace track of lane li, registered on first use. */
static uint32_t weft__lane_track(weft__plan *p, uint32_t li)
{
    char proc[300], name[340];

    if (p->tracks[li] != UINT32_MAX)
        return p->tracks[li];
    if (li == p->host) {
        snprintf(proc, sizeof proc, "host");
        snprintf(name, sizeof name, "graph %u worker", p->id);
    } else {
        unsigned d = p->lanes[li].device;

        snprintf(proc, sizeof proc, "dev%u %s", d, p->rt->devices[d]->name);
        snprintf(name, sizeof name, "dev%u %s", d,
                 weft__plan_slot_name(p->lanes[li].slot));
    }
    if (weft__trace_track(p->trace, proc, name, &p->tracks[li]) < 0) {
        weft_clear_error();
        p->tracks[li] = UINT32_MAX;
    }
    return p->tracks[li];
}

/* The trace track of host worker w (its index + 1), on first use. */
static uint32_t weft__worker_track(weft__plan *p, uint32_t w)
{
    char name[64];
    uint32_t id;

    if (w > WEFT__COUNTOF(p->wtracks))
        return weft__lane_track(p, p->host);
    if (p->wtracks[w - 1])
        return p->wtracks[w - 1] - 1;
    snprintf(name, sizeof name, "graph %u host worker %u", p->id, w - 1);
    if (weft__trace_track(p->trace, "host", name, &id) < 0) {
        weft_clear_error();
        return UINT32_MAX;
    }
    p->wtracks[w - 1] = id + 1;
    return id;
}

/* A kernel record of one device, sorted by end time. */
typedef struct weft__kend {
    uint64_t end;
    uint32_t top;
} weft__kend;

static int weft__cmp_kend(const void *x, const void *y)
{
    const weft__kend *a = x, *b = y;

    return (a->end > b->end) - (a->end < b->end);
}

/*
 * Kernel times for the model: a kernel's time on its device is from its
 * end back to the later of its start event and the end of the kernel
 * before it on the device, so that time spent queued behind another
 * compute lane's kernel is not counted as its own.
 */
static void weft__learn_kernels(weft__plan *p, const unsigned char *ok)
{
    weft__ktime *kt = weft__runtime_ktime(p->rt);
    weft__kend *ks = weft__malloc((p->ntops + 1) * sizeof *ks);

    if (!kt || !ks) {
        weft__free(ks);
        weft_clear_error();
        return;
    }
    for (unsigned d = 0; d < p->ndev; d++) {
        uint32_t m = 0;
        uint64_t prev = 0;

        for (size_t k = 0; k < p->ntops; k++)
            if (ok[k] && p->tops[k].kind == WEFT__TRACE_KERNEL &&
                p->lanes[p->tops[k].lane].device == d &&
                p->nodes[p->tops[k].node].kind == WEFT__NODE_KERNEL) {
                ks[m].end = p->tops[k].t1;
                ks[m++].top = (uint32_t)k;
            }
        qsort(ks, m, sizeof *ks, weft__cmp_kend);
        for (uint32_t j = 0; j < m; j++) {
            const weft__top *t = &p->tops[ks[j].top];
            const weft__node *nd = &p->nodes[t->node];
            uint64_t from = WEFT__MAX(t->t0, prev);

            weft__ktime_record(kt, weft_kernel_name(nd->u.kernel.k), d,
                               (uint64_t)nd->u.kernel.dims.items[0] *
                                   WEFT__MAX(nd->u.kernel.dims.items[1], 1u) *
                                   WEFT__MAX(nd->u.kernel.dims.items[2], 1u),
                               t->t1 > from ? t->t1 - from : 0);
            prev = WEFT__MAX(prev, t->t1);
        }
    }
    weft__free(ks);
}

void weft__plan_launch_end(weft__plan *p)
{
    unsigned char *ok;
    uint64_t *ids = NULL;

    if (!p->timed)
        return;
    ok = weft__calloc(p->ntops + 1, 1);
    if (!ok) {
        weft_clear_error();
        p->ntops = 0;
        return;
    }
    /* Device records onto the host clock. */
    for (size_t k = 0; k < p->ntops; k++) {
        weft__top *t = &p->tops[k];
        unsigned d = p->lanes[t->lane].device;
        uint64_t a = 0, b = 0;

        ok[k] = 1;
        if (!t->start)
            continue;
        if (!p->origin[d] ||
            weft__submit_event_elapsed(p->sub, p->origin[d], t->start, &a) <
                0 ||
            weft__submit_event_elapsed(p->sub, p->origin[d], t->end, &b) < 0) {
            weft_clear_error();
            ok[k] = 0;
            continue;
        }
        t->t0 = p->origin_ns[d] + a;
        t->t1 = p->origin_ns[d] + (b < a ? a : b);
    }
    /* Busy time per lane: its records do not overlap (in order); the host
     * workers' steps overlap, and are no part of the issuing thread's. */
    for (size_t k = 0; k < p->ntops; k++) {
        weft__top *t = &p->tops[k];
        weft__lane *l = &p->lanes[t->lane];

        if (!ok[k] || t->worker)
            continue;
        l->busy_ns += t->t1 - t->t0;
        if (!l->first_ns || t->t0 < l->first_ns)
            l->first_ns = t->t0;
        if (t->t1 > l->last_ns)
            l->last_ns = t->t1;
    }
    if (p->learn) {
        p->learn--;
        weft__learn_kernels(p, ok);
    }
    if (p->ntops && p->trace) {
        ids = weft__malloc(p->ntops * sizeof *ids);
        if (!ids)
            weft_clear_error();
        /* Rows in device and lane order, the host's last. */
        for (uint32_t li = 0; ids && li < p->nlanes; li++)
            for (size_t k = 0; k < p->ntops; k++)
                if (p->tops[k].lane == li) {
                    weft__lane_track(p, li);
                    break;
                }
    }
    for (size_t k = 0; ids && k < p->ntops; k++) {
        weft__top *t = &p->tops[k];
        const weft__node *nd = &p->nodes[t->node];
        weft__trace_slice sl;
        char name[160], cause[700];

        ids[k] = UINT64_MAX;
        if (!ok[k])
            continue;
        memset(&sl, 0, sizeof sl);
        sl.track = t->worker ? weft__worker_track(p, t->worker)
                             : weft__lane_track(p, t->lane);
        if (sl.track == UINT32_MAX)
            continue;
        sl.kind = t->kind;
        weft__node_label(nd, name, sizeof name);
        sl.name = nd->kind == WEFT__NODE_KERNEL && t->kind == WEFT__TRACE_KERNEL
                      ? weft_kernel_name(nd->u.kernel.k)
                      : name;
        sl.start_ns = t->t0;
        sl.end_ns = t->t1;
        sl.bytes = t->bytes;
        sl.node = (long)t->node;
        sl.kernel = nd->kind == WEFT__NODE_KERNEL
                        ? weft_kernel_name(nd->u.kernel.k)
                        : NULL;
        weft__top_cause(p, t, cause, sizeof cause);
        sl.cause = cause[0] ? cause : NULL;
        if (weft__trace_add_slice(p->trace, &sl, &ids[k]) < 0) {
            weft_clear_error();
            ids[k] = UINT64_MAX;
            continue;
        }
        for (unsigned f = 0; f < t->nflow; f++)
            if (t->flow_from[f] < k && ids[t->flow_from[f]] != UINT64_MAX &&
                weft__trace_add_flow(p->trace, ids[t->flow_from[f]], ids[k]) <
                    0)
                weft_clear_error();
    }
    weft__free(ids);
    weft__free(ok);
    p->ntops = 0;
}

uint32_t weft__plan_node_final(const weft__plan *p, uint32_t i)
{
    return i < p->n ? p->stamps[i].lane : WEFT__NO_LANE;
}

unsigned weft__plan_edge_kind(const weft__plan *p, uint32_t e)
{
    return e < p->pred_first[p->n] ? p->edge_kind[e] : 0;
}

void weft__plan_node_copies(const weft__plan *p, uint32_t i, uint64_t bytes[3],
                            uint32_t copies[3])
{
    for (int k = 0; k < 3; k++) {
        bytes[k] = i < p->n ? p->xfer[i].bytes[k] : 0;
        copies[k] = i < p->n ? p->xfer[i].copies[k] : 0;
    }
}

unsigned weft__plan_lane_counts(const weft__plan *p, weft__plan_lane_count *out,
                                unsigned max)
{
    unsigned k = 0;

    for (unsigned i = 0; i < p->host && k < max; i++) {
        const weft__lane *l = &p->lanes[i];

        if (!l->q)
            continue;
        out[k].device = l->device;
        out[k].slot = l->slot;
        out[k].ops = l->seq - l->seq0;
        out[k].nodes = l->nodes;
        out[k].busy_ns = l->busy_ns;
        out[k].first_ns = l->first_ns;
        out[k].last_ns = l->last_ns;
        k++;
    }
    return k;
}

const char *weft__plan_slot_name(unsigned slot)
{
    static const char *const names[WEFT__LANE_SLOTS] = {
        "compute0", "compute1", "h2d", "d2h", "peer",
    };

    return slot < WEFT__LANE_SLOTS ? names[slot] : "host";
}

uint32_t weft__plan_node_lane(const weft__plan *p, uint32_t i)
{
    return i < p->n ? p->plan_lane[i] : WEFT__NO_LANE;
}

/*
 * A failure that the device reports only when waited for (a kernel that
 * faulted) belongs to work still in flight, which on most drivers cannot
 * be told apart: err, then the device nodes that were in flight when the
 * host learnt of it, the culprit among them.
 */
static void weft__in_flight(const weft__plan *p, const char *err, char *msg,
                            size_t size)
{
    const weft__lane *h = &p->lanes[p->host];
    size_t len = (size_t)snprintf(msg, size, "%s", err);
    unsigned shown = 0, more = 0;

    for (uint32_t j = 0; j < p->n && len < size; j++) {
        const weft__stamp *st = &p->stamps[j];
        char label[128];

        if (st->lane == WEFT__NO_LANE || st->lane == p->host ||
            h->vc[st->lane] >= p->stamp_vc[(size_t)j * p->nlanes + st->lane])
            continue;
        if (shown == 4) {
            more++;
            continue;
        }
        len += (size_t)snprintf(
            msg + len, size - len, "%s node %u (%s)",
            shown ? "," : "; in flight then:", j,
            weft__node_label(&p->nodes[j], label, sizeof label));
        shown++;
    }
    if (more && len < size)
        snprintf(msg + len, size - len, " and %u more", more);
}

int weft__plan_drain(weft__plan *p)
{
    weft__lane *h = weft__host_lane(p);
    int first = 0;
    char msg[1024] = "";

    for (unsigned i = 0; i < p->host; i++) {
        weft__lane *x = &p->lanes[i];
        int rc;

        if (!x->q || h->vc[i] >= x->seq)
            continue;
        rc = weft__lanes_sync(p->sub, x->q);
        if (rc < 0 && !first) {
            first = rc;
            weft__in_flight(p, weft_last_error(), msg, sizeof msg);
        }
        weft__vc_merge(p, h->vc, x->vc);
    }
    /*
     * Everything has completed: the events may be recorded again, unless
     * a host worker may still be waiting on some (it would wait for later
     * work: harmless, but for nothing).
     */
    for (unsigned d = 0; d < p->ndev && !p->tickets; d++)
        p->pools[d].used = 0;
    for (unsigned i = 0; i < p->nlanes; i++)
        p->lanes[i].tail_ev = NULL;
    /* What the finished host steps waited for, the host now knows. */
    for (uint32_t i = 0; i < p->n && p->held && !p->tickets; i++)
        p->stamps[i].held = NULL;
    if (!p->tickets)
        p->held = 0;
    p->npending = 0;
    memset(p->pend_count, 0, sizeof p->pend_count);
    return first < 0 ? weft__error(first, "%s", msg) : 0;
}

void weft__plan_counts_get(const weft__plan *p, weft__plan_counts *c)
{
    *c = p->counts;
}

void weft__plan_step_begin(weft__plan *p, uint32_t node)
{
    weft__lane *h = weft__host_lane(p);

    /*
     * After a host step that a worker finished: the host learns now what
     * the worker waited for (its events are complete: the syncs return at
     * once), so that the lanes ordered after it need no wait; only now, so
     * that a driver whose host clock is per thread (the sim's virtual time)
     * holds back only the work that follows the host step, as a real
     * machine would.
     */
    for (uint32_t e = p->pred_first[node];
         p->held && e < p->pred_first[node + 1]; e++) {
        weft__stamp *st = &p->stamps[p->preds[e]];

        if (!st->held)
            continue;
        for (unsigned k = 0; k < st->held->nev; k++)
            if (weft__submit_event_sync(p->sub, st->held->ev[k]) < 0)
                weft_clear_error();
        weft__vc_merge(p, h->vc, st->held->vc);
        st->held = NULL;
    }
    p->stepno++;
    p->node = node;
    p->counts.steps++;
}

int weft__plan_host_wait(weft__plan *p)
{
    weft__lane *h = weft__host_lane(p);
    int rc = 0;

    for (uint32_t e = p->pred_first[p->node];
         e < p->pred_first[p->node + 1] && rc == 0; e++)
        rc = weft__after_edge(p, h, e);
    return rc;
}

int weft__plan_preds_done(weft__plan *p, uint32_t i)
{
    weft__lane *h = weft__host_lane(p);

    for (uint32_t e = p->pred_first[i]; e < p->pred_first[i + 1]; e++) {
        uint32_t j = p->preds[e];
        const weft__stamp *st = &p->stamps[j];

        if (st->lane == WEFT__NO_LANE || st->lane == p->host ||
            h->vc[st->lane] >= p->stamp_vc[(size_t)j * p->nlanes + st->lane])
            continue;
        if (!st->ev)
            return 0; /* no event says when: only a wait will tell */
        if (weft__submit_event_query(p->sub, st->ev) == WEFT_ENOTREADY)
            return 0;
        /* Complete, or failed: the host step's wait will say which. */
        weft_clear_error();
    }
    return 1;
}

/* Whether a successor of node i is lowered to a lane other than f. */
static int weft__needs_event(const weft__plan *p, uint32_t i, uint32_t f)
{
    for (uint32_t e = p->succ_first[i]; e < p->succ_first[i + 1]; e++)
        if (p->plan_lane[p->succs[e]] != f)
            return 1;
    return 0;
}

int weft__plan_step_end(weft__plan *p)
{
    weft__lane *h = weft__host_lane(p), *f = NULL;
    weft__stamp *st = &p->stamps[p->node];
    uint64_t *svc = &p->stamp_vc[(size_t)p->node * p->nlanes];
    uint32_t fi;
    int rc = 0;

    /* The final lane: the compute lane if used, else the last one used. */
    if (p->last_lane != WEFT__NO_LANE &&
        p->lanes[p->last_lane].mark == p->stepno)
        f = &p->lanes[p->last_lane];
    for (unsigned i = 0; i < p->host; i++)
        if (p->lanes[i].mark == p->stepno && p->lanes[i].q &&
            p->lanes[i].slot < WEFT__COMPUTE_LANES)
            f = &p->lanes[i];
    if (!f) {
        /* A host step: done, and after its predecessors (host_wait). */
        weft__lane_bump(h, p->host);
        h->nodes++;
        st->lane = p->host;
        st->ev = NULL;
        memcpy(svc, h->vc, p->nlanes * sizeof *svc);
        p->last_lane = WEFT__NO_LANE;
        return 0;
    }
    rc = weft__join(p, f);
    fi = weft__lane_index(p, f);
    f->nodes++;
    st->lane = fi;
    st->ev = NULL;
    memcpy(svc, f->vc, p->nlanes * sizeof *svc);
    /* What the host step part did is done: it counts as known. */
    weft__vc_merge(p, svc, h->vc);
    if (rc == 0 && weft__needs_event(p, p->node, fi) &&
        weft__record(p, f, &st->ev) < 0) {
        weft_clear_error();
        st->ev = NULL;
        rc = weft__host_sync_lane(p, f);
    }
    p->last_lane = fi;
    return rc;
}

void weft__plan_step_end_failed(weft__plan *p)
{
    p->stamps[p->node].lane = WEFT__NO_LANE;
    p->last_lane = WEFT__NO_LANE;
}

int weft__plan_ticket_init(const weft__plan *p, weft__plan_ticket *t)
{
    memset(t, 0, sizeof *t);
    t->ev = weft__calloc(p->nlanes, sizeof *t->ev);
    t->up = weft__calloc(p->nlanes, sizeof *t->up);
    t->vc = weft__calloc(p->nlanes, sizeof *t->vc);
    if (!t->ev || !t->up || !t->vc) {
        weft__plan_ticket_fini(t);
        return weft__error(WEFT_ENOMEM, "plan: out of memory");
    }
    return 0;
}

void weft__plan_ticket_fini(weft__plan_ticket *t)
{
    weft__free(t->ev);
    weft__free(t->up);
    weft__free(t->vc);
    memset(t, 0, sizeof *t);
}

void weft__plan_host_begin(weft__plan *p, weft__plan_ticket *t)
{
    memset(t->ev, 0, p->nlanes * sizeof *t->ev);
    memset(t->up, 0, p->nlanes * sizeof *t->up);
    memcpy(t->vc, weft__host_lane(p)->vc, p->nlanes * sizeof *t->vc);
    t->nev = 0;
    p->defer = t;
}

int weft__plan_host_end(weft__plan *p, int rc)
{
    weft__plan_ticket *t = p->defer;
    weft__lane *h = weft__host_lane(p);
    int any = 0;

    p->defer = NULL;
    if (rc < 0)
        return rc;
    /* The step's own copies (into the host copy) are waited for too. */
    for (unsigned i = 0; i < p->host; i++)
        if (p->lanes[i].mark == p->stepno && p->lanes[i].q &&
            h->vc[i] < p->lanes[i].seq)
            t->up[i] = UINT64_MAX;
    for (unsigned i = 0; i < p->host; i++)
        any |= t->up[i] > h->vc[i];
    /*
     * A native graph's deferred work must be submitted before anything is
     * waited for (by the worker, which waits outside the submission).
     */
    if (any && p->sub && (rc = weft__tape_host_waits(&p->tape)) < 0)
        return rc;
    for (unsigned i = 0; i < p->host && rc == 0; i++) {
        weft__lane *x = &p->lanes[i];
        weft__event *ev = t->ev[i];

        if (t->up[i] <= h->vc[i])
            continue;
        if (t->up[i] == UINT64_MAX) {
            if (weft__record(p, x, &ev) < 0) {
                /* No event: the host waits now, as it did inline. */
                weft_clear_error();
                rc = weft__host_sync_lane(p, x);
                continue;
            }
            weft__vc_merge(p, t->vc, x->vc);
        }
        t->ev[t->nev++] = ev;
    }
    if (rc < 0)
        return rc;
    p->last_lane = WEFT__NO_LANE;
    p->tickets++;
    return 0;
}

void weft__plan_host_done(weft__plan *p, uint32_t node, weft__plan_ticket *t,
                          int ok)
{
    weft__lane *h = weft__host_lane(p);
    weft__stamp *st = &p->stamps[node];

    weft__assert(p->tickets > 0);
    p->tickets--;
    if (!ok) {
        st->lane = WEFT__NO_LANE;
        return;
    }
    /* Done on the host lane; what the worker waited for is learnt by the
     * first step after it (step_begin). */
    weft__lane_bump(h, p->host);
    h->nodes++;
    st->lane = p->host;
    st->ev = NULL;
    st->held = t;
    p->held++;
    memcpy(&p->stamp_vc[(size_t)node * p->nlanes], h->vc,
           p->nlanes * sizeof *h->vc);
    weft__vc_merge(p, &p->stamp_vc[(size_t)node * p->nlanes], t->vc);
}

static void weft__memcpy_fn(void *user)
{
    weft__plan_memcpy *m = user;

    memmove(m->dst, m->src, m->size);
}

int weft__plan_host_copy(weft__plan *p, weft_buffer *root, size_t off,
                         void *dst, size_t size, weft__plan_memcpy *arg)
{
    weft__lane *h = weft__host_lane(p), *f = NULL;
    int rc;

    for (unsigned i = 0; size && i < p->host; i++)
        if (p->lanes[i].mark == p->stepno && p->lanes[i].q)
            f = &p->lanes[i];
    for (size_t i = 0;
         size && !f && p->pend_count[weft__pend_bucket(root, WEFT__HOST)] &&
         i < p->npending;
         i++) {
        weft__pending *pd = &p->pending[i];

        if (pd->root == root && pd->where == WEFT__HOST &&
            pd->off < off + size && off < pd->off + pd->len &&
            h->vc[pd->lane] < pd->seq)
            f = &p->lanes[pd->lane];
    }
    if (!f) {
        /* Now, by the host: so after the node's predecessors, as a host
         * step's successors take for granted. */
        if ((rc = weft__plan_host_wait(p)) < 0)
            return rc;
        if (size) {
            weft__host_effect();
            memmove(dst, root->host + off, size);
        }
        return 0;
    }
    /* On a lane, after the copies into the host copy: no host wait. */
    p->last_lane = weft__lane_index(p, f);
    if ((rc = weft__ready(p, f)) < 0 || (rc = weft__join(p, f)) < 0 ||
        (rc = weft__hook_after(p, f->q, root, WEFT__HOST, off, size)) < 0)
        return rc;
    arg->dst = dst;
    arg->src = root->host + off;
    arg->size = size;
    rc = weft__submit_host_fn(p->sub, f->q, weft__memcpy_fn, arg);
    if (rc == 0)
        weft__lane_bump(f, weft__lane_index(p, f));
    return rc;
}

int weft__plan_fence(weft__plan *p, weft_buffer *root, weft__event **evs,
                     const void *owner)
{
    weft__stamp *st = &p->stamps[p->node];
    weft__event **ev;
    weft__lane *f;
    weft__context *ctx;
    int rc;

    if (st->lane == WEFT__NO_LANE || st->lane == p->host)
        return 0;
    f = &p->lanes[st->lane];
    ev = &evs[f->device];
    if (!*ev) {
        rc = weft__runtime_context(p->rt, f->device, &ctx);
        if (rc == 0)
            rc = weft__drv_event_create(ctx, 0, ev);
        if (rc < 0)
            return rc;
    }
    if ((rc = weft__submit_event_record(p->sub, *ev, f->q)) < 0)
        return rc;
    p->counts.fences++;
    root->fence = *ev;
    root->fence_owner = owner;
    return 0;
}
