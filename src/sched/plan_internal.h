/*
 * The plan's own types and the functions its files share (plan.c: lanes,
 * order, hooks, lowering; plan_time.c: timed launches, traces and kernel
 * times; plan_launch.c: launches, steps, host steps, native graphs). Not
 * for use outside src/sched/plan*.c.
 *
 * Threads: a plan is used by its executor's worker alone (the hooks run on
 * that thread, inside the buffer calls it makes), except the host
 * functions it enqueues, which touch only their own weft__plan_memcpy, and
 * the host workers, which only wait for the events of a ticket.
 */
#ifndef WEFT_SCHED_PLAN_INTERNAL_H
#define WEFT_SCHED_PLAN_INTERNAL_H

#include "plan.h"

#include "../base/trace.h"
#include "tape.h"

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

/*
 * The pending copies of one hash bucket of (root, where), sorted by off,
 * so that a lookup of a range visits only those that may overlap it (a
 * first launch queues a copy per node, often all into one buffer).
 * maxlen bounds every len in v (since the last launch), so the entries
 * that may reach off start at the first with off > off - maxlen. Entries
 * the host lane knows complete are dropped when n doubles past kept, the
 * count the last such pass left, and are skipped by lookups meanwhile.
 */
typedef struct weft__pend_list {
    weft__pending *v;
    size_t n, cap, kept, maxlen;
} weft__pend_list;

static inline unsigned weft__pend_bucket(const weft_buffer *root,
                                         unsigned where)
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
    unsigned *lane_base; /* ndev + 1: device d's lanes from lane_base[d] */
    uint64_t *vcs;       /* nlanes * nlanes, the lanes' clocks */
    weft__event_pool *pools;

    uint32_t n;
    const weft__node *nodes;
    const unsigned *node_dev;
    const uint32_t *pred_first, *preds;
    uint32_t *succ_first, *succs;
    uint32_t *plan_lane; /* kernels and copies: the lowered lane, else NO */
    weft__stamp *stamps;
    uint64_t *stamp_vc; /* n * nlanes */

    /* Pending copies per hash of (root, where) (weft__pend_list). */
    weft__pend_list pend[WEFT__PEND_BUCKETS];

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
    int priority;   /* weft_priority of every queue the plan makes */
    /* weft_exec_enable_timings: time every launch and keep, per node, its
     * first start, last end and busy time (node_time: 3 * n, made on
     * first use; node_timed: the last launch filled it). */
    unsigned timings;
    unsigned node_timed;
    uint64_t *node_time;
    unsigned id; /* names the host track */
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
    size_t moved;                /* hooks.moved: the next issued copy's
                                    bytes, where fewer than its range */

    /* The step in progress. */
    uint64_t stepno;
    /* The lanes it marked (mark == stepno), in order of index: what the
     * step's passes over its lanes visit, not every lane of the plan. */
    uint32_t *used;
    unsigned nused;
    uint32_t node;
    uint32_t last_lane; /* the lane last handed out, or NO */

    weft__plan_counts counts;
};

/* ---- shared by the plan's files ------------------------------------------ */

/* Mark lane l used by the step (its index into p->used, in order). */
static inline void weft__lane_mark(weft__plan *p, weft__lane *l)
{
    uint32_t i = (uint32_t)(l - p->lanes), k;

    if (l->mark == p->stepno)
        return;
    l->mark = p->stepno;
    for (k = p->nused; k > 0 && p->used[k - 1] > i; k--)
        p->used[k] = p->used[k - 1];
    p->used[k] = i;
    p->nused++;
}

/* to = the later of a and b, lane by lane (to may be a or b). */
static inline void weft__vc_max(weft__plan *p, uint64_t *to, const uint64_t *a,
                                const uint64_t *b)
{
    /* (no branch, no condition on the store: the loop vectorises) */
    for (unsigned i = 0; i < p->nlanes; i++)
        to[i] = a[i] > b[i] ? a[i] : b[i];
}

static inline void weft__vc_merge(weft__plan *p, uint64_t *to,
                                  const uint64_t *from)
{
    weft__vc_max(p, to, to, from);
}

static inline weft__lane *weft__host_lane(weft__plan *p)
{
    return &p->lanes[p->host];
}

static inline uint32_t weft__lane_index(const weft__plan *p,
                                        const weft__lane *ln)
{
    return (uint32_t)(ln - p->lanes);
}

/* An operation went onto ln. */
static inline void weft__lane_bump(weft__lane *ln, uint32_t self)
{
    ln->seq++;
    ln->vc[self] = ln->seq;
}

/* plan.c */
/* An event of a device's pool (pools: p->pools or p->tpools). */
int weft__plan_pool_take(weft__plan *p, weft__event_pool *pools,
                         unsigned device, unsigned flags, weft__event **ev);
/* An event after everything enqueued on ln so far. */
int weft__plan_record(weft__plan *p, weft__lane *ln, weft__event **ev);
/*
 * The host waits for everything on x (a fallback, or the host's own need):
 * from then on every lane may take x's clock as complete.
 */
int weft__plan_host_sync_lane(weft__plan *p, weft__lane *x);
/* Lane l after predecessor edge e, noting how it was kept. */
int weft__plan_after_edge(weft__plan *p, weft__lane *l, uint32_t e);
/* Ready lane l for the step: its queue, then after every predecessor. */
int weft__plan_ready(weft__plan *p, weft__lane *l);
/* Lane f after the step's work on every other lane it used. */
int weft__plan_join(weft__plan *p, weft__lane *f);
/*
 * The pending copies into [off, off + len) of root's copy `where` that the
 * host lane does not know complete, in order of off: the first after
 * `after` (NULL: the first of all), or NULL.
 */
const weft__pending *weft__pend_first(weft__plan *p, const weft_buffer *root,
                                      unsigned where, size_t off, size_t len,
                                      const weft__pending *after);
/* The after hook of weft__plan_hooks (set: the plan). */
int weft__plan_hook_after(void *set, weft__queue *q, weft_buffer *root,
                          unsigned where, size_t off, size_t len);

/* plan_time.c, for timed launches (p->timed). */
/* ln's device's origin for this launch, on ln, which has nothing in flight. */
void weft__plan_time_origin(weft__plan *p, weft__lane *ln);
/* l's next operation waits for x's latest (a flow in the trace). */
void weft__plan_time_flow(weft__plan *p, weft__lane *l, const weft__lane *x);
/* Before an operation on l: its start event. */
void weft__plan_time_start(weft__plan *p, weft__lane *l);
/* After it: its end event and record (bytes moved; has_root: a copy of a
 * buffer's). */
void weft__plan_time_end(weft__plan *p, weft__lane *l, uint64_t bytes,
                         int has_root);

#endif /* WEFT_SCHED_PLAN_INTERNAL_H */
