/*
 * Timed launches of a plan (plan.h): every device operation between two
 * timing events, host steps by the host clock; after the drain, the
 * launch's operations go to the runtime's trace and its kernels' times to
 * the kernel time model (cost.h).
 */
#include "plan_internal.h"

#include "cost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- timing the operations --------------------------------------------- */

/*
 * Device d's origin for this launch, on lane ln, which has nothing in
 * flight (a new queue, or any lane at the start of a launch): waited for
 * at once, so that its time on the device is the host's time now. A
 * device that cannot give one is not timed in this launch.
 */
void weft__plan_time_origin(weft__plan *p, weft__lane *ln)
{
    weft__event *ev = NULL;

    if (p->origin[ln->device])
        return;
    if (weft__plan_pool_take(p, p->tpools, ln->device, WEFT__EVENT_TIMING,
                             &ev) < 0 ||
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
void weft__plan_time_flow(weft__plan *p, weft__lane *l, const weft__lane *x)
{
    if (p->timed && x->last_top != UINT32_MAX &&
        l->nflow < WEFT__COUNTOF(l->flow_from))
        l->flow_from[l->nflow++] = x->last_top;
}

/* The start of the operation about to go onto l. */
void weft__plan_time_start(weft__plan *p, weft__lane *l)
{
    weft__event *ev = NULL;

    p->cur_start = NULL;
    if (!p->origin[l->device])
        return;
    if (weft__plan_pool_take(p, p->tpools, l->device, WEFT__EVENT_TIMING, &ev) <
            0 ||
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
void weft__plan_time_end(weft__plan *p, weft__lane *l, uint64_t bytes,
                         int has_root)
{
    uint32_t li = weft__lane_index(p, l);
    weft__event *ev = NULL;
    weft__top *t;

    if (!p->cur_start || p->cur_start_lane != li)
        return;
    if (weft__plan_pool_take(p, p->tpools, l->device, WEFT__EVENT_TIMING, &ev) <
            0 ||
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

/* ---- the launch's times: trace and kernel time model -------------------- */

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

void weft__plan_set_timings(weft__plan *p, int on)
{
    p->timings = on != 0;
}

int weft__plan_node_timed(const weft__plan *p)
{
    return p->node_timed != 0;
}

int weft__plan_node_time(const weft__plan *p, uint32_t i, uint64_t t[3])
{
    t[0] = t[1] = t[2] = 0;
    if (!p->node_timed || i >= p->n || !p->node_time[3 * (size_t)i + 1])
        return 0;
    memcpy(t, &p->node_time[3 * (size_t)i], 3 * sizeof *t);
    return 1;
}

/* Each node's span and busy time from the launch's records (ok[k]). */
static void weft__keep_node_times(weft__plan *p, const unsigned char *ok)
{
    if (!p->node_time) {
        p->node_time = weft__malloc((3 * (size_t)p->n + 1) * sizeof(uint64_t));
        if (!p->node_time) {
            weft_clear_error();
            return;
        }
    }
    memset(p->node_time, 0, 3 * (size_t)p->n * sizeof(uint64_t));
    for (size_t k = 0; k < p->ntops; k++) {
        const weft__top *t = &p->tops[k];
        uint64_t *nt;

        if (!ok[k] || t->node >= p->n)
            continue;
        nt = &p->node_time[3 * (size_t)t->node];
        if (!nt[1] || t->t0 < nt[0])
            nt[0] = t->t0;
        if (t->t1 > nt[1])
            nt[1] = t->t1;
        nt[2] += t->t1 - t->t0;
    }
    p->node_timed = 1;
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
        if (weft__node_placed(nd))
            snprintf(buf, n, "read by %s on %s, not valid there", label,
                     p->rt->devices[d]->name);
        else
            snprintf(buf, n, "for %s on %s", label, p->rt->devices[d]->name);
        break;
    case WEFT__TRACE_D2H:
        if (weft__node_placed(nd) || nd->kind == WEFT__NODE_COPY)
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
    if (p->timings)
        weft__keep_node_times(p, ok);
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
