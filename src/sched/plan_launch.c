/*
 * Launches and steps of a plan (plan.h): a launch's beginning and drain,
 * its native graph (tape.h), the steps of nodes and of host steps handed
 * to workers, host copies and fences, and what the last launch did.
 */
#include "plan_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- launches and steps ------------------------------------------------- */

void weft__plan_launch_timed(weft__plan *p)
{
    p->timed = p->trace != NULL || p->learn > 0 || p->stats || p->timings;
    p->node_timed = 0;
    p->tape_now = 0;
    p->sub = NULL;
}

void weft__plan_launch_begin(weft__plan *p, int ahead)
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
    if (!ahead)
        memset(p->xfer, 0, (size_t)p->n * sizeof *p->xfer);
    weft__plan_launch_timed(p);
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
            weft__plan_time_origin(p, &p->lanes[i]);
}

const weft__submit *weft__plan_native_begin(weft__plan *p, int allow)
{
    /* Timed launches need every operation to run as it is issued. */
    p->tape_now = allow && p->tape_ok && !p->timed;
    p->sub = p->tape_now ? weft__tape_begin(&p->tape) : NULL;
    return p->sub;
}

const weft__submit *weft__plan_native_capture(weft__plan *p)
{
    size_t launches = 0, args = 0;

    for (uint32_t i = 0; i < p->n; i++)
        if (p->nodes[i].kind == WEFT__NODE_KERNEL) {
            launches++;
            args += p->nodes[i].u.kernel.nargs;
        }
    p->tape_now = p->tape_ok && !p->timed;
    p->sub =
        p->tape_now ? weft__tape_capture_begin(&p->tape, launches, args) : NULL;
    p->tape_now = p->sub != NULL;
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
    return p->tape_ok && (p->tape.built || p->tape.recorded) && !p->tape.broken;
}

int weft__plan_native_ready(weft__plan *p)
{
    return p->tape_ok && weft__tape_ready(&p->tape);
}

int weft__plan_native_kernels_only(const weft__plan *p)
{
    return weft__plan_native_possible(p) && weft__tape_kernels_only(&p->tape);
}

int weft__plan_native_able(const weft__plan *p)
{
    return p->tape_ok && !p->tape.broken;
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

/* ---- what the last launch did, the drain, steps ------------------------- */

/* A lane's index as the plan's readers know it: device *
 * WEFT__LANE_SLOTS + slot (plan.h), whatever the lanes' own layout. */
static uint32_t weft__lane_named(const weft__plan *p, uint32_t l)
{
    if (l == WEFT__NO_LANE)
        return l;
    if (l == p->host)
        return p->ndev * WEFT__LANE_SLOTS;
    return p->lanes[l].device * WEFT__LANE_SLOTS + p->lanes[l].slot;
}

uint32_t weft__plan_node_final(const weft__plan *p, uint32_t i)
{
    return weft__lane_named(p, i < p->n ? p->stamps[i].lane : WEFT__NO_LANE);
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
        out[k].priority = l->q->desc.priority;
        out[k].first_ns = l->first_ns;
        out[k].last_ns = l->last_ns;
        k++;
    }
    return k;
}

static char weft__compute_names[WEFT__COMPUTE_LANES][16];
static pthread_once_t weft__compute_names_once = PTHREAD_ONCE_INIT;

static void weft__compute_names_init(void)
{
    for (unsigned i = 0; i < WEFT__COMPUTE_LANES; i++)
        snprintf(weft__compute_names[i], sizeof weft__compute_names[i],
                 "compute%u", i);
}

const char *weft__plan_slot_name(unsigned slot)
{
    static const char *const copies[] = {"h2d", "d2h", "peer"};

    if (slot == WEFT__HIGH_LANE)
        return "high";
    if (slot < WEFT__COMPUTE_LANES) {
        pthread_once(&weft__compute_names_once, weft__compute_names_init);
        return weft__compute_names[slot];
    }
    return slot < WEFT__LANE_SLOTS ? copies[slot - WEFT__COMPUTE_LANES]
                                   : "host";
}

uint32_t weft__plan_node_lane(const weft__plan *p, uint32_t i)
{
    return weft__lane_named(p, i < p->n ? p->plan_lane[i] : WEFT__NO_LANE);
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
    for (unsigned b = 0; b < WEFT__PEND_BUCKETS; b++)
        p->pend[b].n = p->pend[b].kept = p->pend[b].maxlen = 0;
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
    p->nused = 0;
    p->node = node;
    p->counts.steps++;
    p->tape.node = node; /* what the step enqueues is node's (tape.h) */
}

int weft__plan_host_wait(weft__plan *p)
{
    weft__lane *h = weft__host_lane(p);
    int rc = 0;

    for (uint32_t e = p->pred_first[p->node];
         e < p->pred_first[p->node + 1] && rc == 0; e++)
        rc = weft__plan_after_edge(p, h, e);
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

static int weft__step_end(weft__plan *p);

int weft__plan_step_end(weft__plan *p)
{
    int rc = weft__step_end(p);

    p->tape.node = WEFT__TAPE_NO_NODE;
    return rc;
}

static int weft__step_end(weft__plan *p)
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
    for (unsigned k = 0; k < p->nused; k++) {
        unsigned i = p->used[k];

        if (i < p->host && p->lanes[i].q &&
            p->lanes[i].slot < WEFT__COMPUTE_LANES)
            f = &p->lanes[i];
    }
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
    rc = weft__plan_join(p, f);
    fi = weft__lane_index(p, f);
    f->nodes++;
    st->lane = fi;
    st->ev = NULL;
    /* f's clock, and what the host step part did is done: it counts as
     * known. */
    weft__vc_max(p, svc, f->vc, h->vc);
    if (rc == 0 && weft__needs_event(p, p->node, fi) &&
        weft__plan_record(p, f, &st->ev) < 0) {
        weft_clear_error();
        st->ev = NULL;
        rc = weft__plan_host_sync_lane(p, f);
    }
    p->last_lane = fi;
    return rc;
}

void weft__plan_step_end_failed(weft__plan *p)
{
    p->tape.node = WEFT__TAPE_NO_NODE;
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
    for (unsigned k = 0; k < p->nused; k++) {
        unsigned i = p->used[k];

        if (i < p->host && p->lanes[i].q && h->vc[i] < p->lanes[i].seq)
            t->up[i] = UINT64_MAX;
    }
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
            if (weft__plan_record(p, x, &ev) < 0) {
                /* No event: the host waits now, as it did inline. */
                weft_clear_error();
                rc = weft__plan_host_sync_lane(p, x);
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
    weft__lane *f = NULL;
    int rc;

    for (unsigned k = 0; size && k < p->nused; k++)
        if (p->used[k] < p->host && p->lanes[p->used[k]].q)
            f = &p->lanes[p->used[k]];
    if (size && !f) {
        const weft__pending *pd =
            weft__pend_first(p, root, WEFT__HOST, off, size, NULL);

        f = pd ? &p->lanes[pd->lane] : NULL;
    }
    if (!f) {
        /* Now, by the host: so after the node's predecessors, as a host
         * step's successors take for granted. */
        if ((rc = weft__plan_host_wait(p)) < 0)
            return rc;
        if (size) {
            memmove(dst, root->host + off, size);
            return 1;
        }
        return 0;
    }
    /* On a lane, after the copies into the host copy: no host wait. */
    p->last_lane = weft__lane_index(p, f);
    if ((rc = weft__plan_ready(p, f)) < 0 || (rc = weft__plan_join(p, f)) < 0 ||
        (rc = weft__plan_hook_after(p, f->q, root, WEFT__HOST, off, size)) < 0)
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
