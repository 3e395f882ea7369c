/*
 * Native graphs (graphs=1), as CUDA's stream capture in relaxed mode.
 * graph_begin(q) starts a capture on q. An event recorded on a queue in the
 * capture becomes a capture event (its earlier record is forgotten); a
 * queue of any device of the platform that waits on a capture event joins
 * the capture. What a queue in the capture enqueues (launches with their
 * argument values copied, copies, fills with their pattern, host functions,
 * records and waits) becomes a node of the capture's graph, in order, and
 * neither runs nor enters the record. A wait there on an event outside any
 * capture records nothing if the event's work has completed, and fails
 * with WEFT_EINVAL if not (the dependency would cross the capture's
 * boundary), as does a wait on another capture's event; a sync of a queue
 * in the capture, or a query or sync of a capture event, fails with
 * WEFT_EINVAL too, and changes nothing. graph_end(q) takes every queue out;
 * each queue that joined must have been joined back (its last node comes
 * before q's last one, through waits), or the capture is discarded with
 * WEFT_EINVAL, like CUDA's "unjoined" error. Once the capture has ended, an
 * event last recorded in it reads as never recorded.
 *
 * A graph keeps its nodes (queues, memory by handle and offset, values
 * copied) and one private event per record node. graph_launch(q) enqueues,
 * as one step under the lock (all items prepared first, so that a launch
 * that fails has no effect): a fork (a record on q, a wait on it by each
 * other queue of the graph), every node on its own queue in capture order
 * (records and waits on the private events, so that the order across
 * queues holds), and a join (a record on each other queue, a wait on each
 * by q). So a launch enters the record and runs like the same operations
 * enqueued by hand, and a sync of q waits for all of it. An update in place
 * (graph_end with old) gives old the new capture's nodes: every change is
 * taken, the sim has no topology to keep.
 */
#include "sim_internal.h"

#include <string.h>

/* ---- captures ---------------------------------------------------------- */

/* Under the lock: the capture in progress with id (not 0), or NULL. */
static sim_capture *sim_capture_find(const sim_platform *p, uint64_t id)
{
    sim_capture *c = p->captures;

    while (c && c->id != id)
        c = c->next;
    return c;
}

/* Under the lock: the capture in progress that e was last recorded in. */
sim_capture *weft__sim_event_capture(const sim_platform *p, const sim_event *e)
{
    return e->cap_id ? sim_capture_find(p, e->cap_id) : NULL;
}

/* A launch's arguments with their values, in one allocation; or NULL. */
static weft__karg *sim_args_copy(const weft__karg *args, unsigned nargs)
{
    size_t bytes = SIM_ALIGN_UP(nargs * sizeof *args);
    unsigned char *blob, *val;
    weft__karg *copy;

    for (unsigned i = 0; i < nargs; i++)
        if (args[i].type != WEFT_PARAM_BUFFER &&
            args[i].type != WEFT_PARAM_LOCAL)
            bytes += SIM_ALIGN_UP(args[i].size);
    if (!(blob = weft__malloc(bytes)))
        return NULL;
    copy = (weft__karg *)(void *)blob;
    val = blob + SIM_ALIGN_UP(nargs * sizeof *args);
    for (unsigned i = 0; i < nargs; i++) {
        copy[i] = args[i];
        if (args[i].type != WEFT_PARAM_BUFFER &&
            args[i].type != WEFT_PARAM_LOCAL) {
            if (args[i].size)
                memcpy(val, args[i].u.value, args[i].size);
            copy[i].u.value = val;
            val += SIM_ALIGN_UP(args[i].size);
        }
    }
    return copy;
}

/*
 * Under the lock, q in a capture: append node (a launch's arguments are
 * copied) as q's next. Its index, or < 0 on error (nothing changed).
 */
long weft__sim_capture_add(sim_queue *q, const sim_node *node)
{
    sim_graph *g = q->cap->g;
    weft__karg *args = NULL;
    sim_node *n;

    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        sim_node *grown = weft__realloc(g->nodes, cap * sizeof *grown);

        if (!grown)
            return weft__error(WEFT_ENOMEM, "sim: out of memory for a node "
                                            "of a capture");
        g->nodes = grown;
        g->cap = cap;
    }
    if (node->kind == WEFT__SIM_KERNEL && node->nargs &&
        !(args = sim_args_copy(node->args, node->nargs)))
        return weft__error(WEFT_ENOMEM, "sim: out of memory for the "
                                        "arguments of a captured launch");
    n = &g->nodes[g->n];
    *n = *node;
    n->q = q;
    n->args = args;
    n->prev = q->cap_last;
    q->cap_last = (long)g->n;
    return (long)g->n++;
}

/*
 * If q takes part in a capture, append node to it instead of running it:
 * 1 if so, 0 if q is not capturing, < 0 on error.
 */
int weft__sim_capture_try(weft__queue *wq, const sim_node *node)
{
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    long rc = 0;
    int in;

    sim_lock(p);
    in = q->cap != NULL;
    if (in)
        rc = weft__sim_capture_add(q, node);
    sim_unlock(p);
    if (!in)
        return 0;
    return rc < 0 ? (int)rc : 1;
}

/*
 * Under the lock: q, in a capture or waiting on an event of capture ec (or
 * both), waits for e. See "Native graphs" at the top.
 */
int weft__sim_capture_wait(sim_queue *q, sim_event *e, sim_capture *ec)
{
    const char *dev = q->base.ctx->dev->name;
    sim_node n = sim_node_of(WEFT__SIM_EVENT_WAIT);
    sim_graph *g;
    long i;

    if (!ec) {
        if (e->marker && !e->marker->done)
            return weft__error(WEFT_EINVAL,
                               "sim: a queue on %s in a capture waits for an "
                               "event of unfinished work outside the capture "
                               "(the dependency would cross the capture's "
                               "boundary)",
                               dev);
        return 0; /* complete, or never recorded: nothing to wait for */
    }
    if (q->cap && q->cap != ec)
        return weft__error(WEFT_EINVAL,
                           "sim: a queue on %s in one capture waits for an "
                           "event recorded in another capture",
                           dev);
    g = ec->g;
    n.dep = e->cap_node;
    n.event = g->nodes[e->cap_node].event;
    if (q->cap)
        return (i = weft__sim_capture_add(q, &n)) < 0 ? (int)i : 0;
    /* q joins the capture with this wait. */
    if (g->nqueues == g->cap_queues) {
        unsigned cap = g->cap_queues * 2;
        sim_queue **grown = weft__realloc(g->queues, cap * sizeof *grown);

        if (!grown)
            return weft__error(WEFT_ENOMEM,
                               "sim: out of memory for a queue joining a "
                               "capture");
        g->queues = grown;
        g->cap_queues = cap;
    }
    q->cap = ec;
    q->cap_last = -1;
    if ((i = weft__sim_capture_add(q, &n)) < 0) {
        q->cap = NULL;
        return (int)i;
    }
    g->queues[g->nqueues++] = q;
    return 0;
}

/* ---- native graphs ----------------------------------------------------- */

int weft__sim_graph_supported(const weft__device *dev)
{
    return sim_platform_of((weft__device *)(uintptr_t)dev)->cfg.graphs != 0;
}

/* Free what g holds; under the lock once g has events (markers). */
static void sim_graph_clear(sim_graph *g)
{
    for (size_t i = 0; i < g->n; i++)
        weft__free(g->nodes[i].args);
    if (g->events)
        for (unsigned i = 0; i < g->nevents + 1 + g->nqueues; i++)
            sim_marker_unref(g->events[i].marker);
    weft__free(g->nodes);
    weft__free(g->queues);
    weft__free(g->events);
    memset(g, 0, sizeof *g);
}

/* Under the lock: c is no longer in progress; its queues leave it. */
static void sim_capture_unlink(sim_platform *p, sim_capture *c)
{
    sim_capture **link;

    for (link = &p->captures; *link != c; link = &(*link)->next)
        ;
    *link = c->next;
    for (unsigned i = 0; i < c->g->nqueues; i++) {
        c->g->queues[i]->cap = NULL;
        c->g->queues[i]->cap_last = -1;
    }
}

/* Under the lock: free a capture that has been unlinked. */
static void sim_capture_free(sim_capture *c)
{
    sim_graph_clear(c->g);
    weft__free(c->g);
    weft__free(c);
}

/* Under the lock: take q out of its capture, which it does not outlive. */
void weft__sim_capture_forget(sim_platform *p, sim_queue *q)
{
    sim_capture *c = q->cap;
    sim_graph *g = c->g;

    if (g->queues[0] == q) {
        /* The capture's own queue: nothing can end it any more. */
        sim_capture_unlink(p, c);
        sim_capture_free(c);
        return;
    }
    c->broken = "a queue that took part in it was destroyed";
    for (unsigned i = 1; i < g->nqueues; i++)
        if (g->queues[i] == q) {
            memmove(g->queues + i, g->queues + i + 1,
                    (g->nqueues - i - 1) * sizeof *g->queues);
            g->nqueues--;
            break;
        }
    q->cap = NULL;
    q->cap_last = -1;
}

/*
 * Under the lock, before the queues leave: the first queue of g that was
 * not joined back (its last node does not come before queues[0]'s last
 * one, in queue order and through waits), or NULL; *rc < 0 when out of
 * memory.
 */
static sim_queue *sim_graph_unjoined(const sim_graph *g, int *rc)
{
    unsigned char *seen;
    long *stack;
    size_t top = 0;
    sim_queue *bad = NULL;

    *rc = 0;
    if (g->nqueues < 2 || g->n == 0)
        return NULL;
    seen = weft__calloc(g->n, 1);
    /* Each node is expanded once and pushes at most two others. */
    stack = weft__malloc((2 * g->n + 1) * sizeof *stack);
    if (!seen || !stack) {
        weft__free(seen);
        weft__free(stack);
        *rc = weft__error(WEFT_ENOMEM, "sim: out of memory ending a capture");
        return NULL;
    }
    if (g->queues[0]->cap_last >= 0)
        stack[top++] = g->queues[0]->cap_last;
    while (top) {
        long i = stack[--top];
        const sim_node *n = &g->nodes[i];

        if (seen[i])
            continue;
        seen[i] = 1;
        if (n->prev >= 0 && !seen[n->prev])
            stack[top++] = n->prev;
        if (n->dep >= 0 && !seen[n->dep])
            stack[top++] = n->dep;
    }
    for (unsigned k = 1; k < g->nqueues && !bad; k++)
        if (g->queues[k]->cap_last >= 0 && !seen[g->queues[k]->cap_last])
            bad = g->queues[k];
    weft__free(seen);
    weft__free(stack);
    return bad;
}

void weft__sim_graph_destroy(void *graph)
{
    sim_graph *g = graph;
    sim_platform *p;

    if (!g)
        return;
    p = g->p;
    sim_lock(p);
    sim_graph_clear(g);
    sim_unlock(p);
    weft__free(g);
}

int weft__sim_graph_begin(weft__queue *wq)
{
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    sim_capture *c;
    sim_graph *g;

    if (!p->cfg.graphs)
        return weft__error(WEFT_ENOTSUP,
                           "sim: %s makes no native graphs (sim config "
                           "graphs=1 turns them on)",
                           wq->ctx->dev->name);
    c = weft__calloc(1, sizeof *c);
    g = weft__calloc(1, sizeof *g);
    if (g)
        g->queues = weft__calloc(4, sizeof *g->queues);
    if (!c || !g || !g->queues) {
        if (g)
            weft__free(g->queues);
        weft__free(g);
        weft__free(c);
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a capture");
    }
    g->p = p;
    g->cap_queues = 4;
    sim_lock(p);
    if (q->cap) {
        sim_unlock(p);
        weft__free(g->queues);
        weft__free(g);
        weft__free(c);
        return weft__error(WEFT_EINVAL,
                           "graph_begin: a queue on %s takes part in a "
                           "capture already",
                           wq->ctx->dev->name);
    }
    c->id = ++p->next_capture;
    c->g = g;
    g->queues[g->nqueues++] = q;
    q->cap = c;
    q->cap_last = -1;
    c->next = p->captures;
    p->captures = c;
    sim_unlock(p);
    return 0;
}

int weft__sim_graph_end(weft__queue *wq, void *old, void **graph, int *updated)
{
    sim_queue *q = (sim_queue *)wq, *bad = NULL;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    const char *broken;
    unsigned bad_id = 0;
    int bad_dev = 0, rc = 0;
    sim_capture *c;
    sim_graph *g;

    if (updated)
        *updated = 0;
    sim_lock(p);
    c = q->cap;
    if (!c || c->g->queues[0] != q) {
        sim_unlock(p);
        weft__sim_graph_destroy(old); /* the driver's, as the interface says */
        return weft__error(WEFT_EINVAL,
                           "graph_end: no capture began on this queue of %s",
                           wq->ctx->dev->name);
    }
    g = c->g;
    broken = c->broken;
    if (graph && !broken) {
        bad = sim_graph_unjoined(g, &rc);
        if (bad) {
            bad_id = bad->id;
            bad_dev = (int)bad->base.ctx->dev->driver_index;
        }
    }
    if (graph && !broken && !bad && rc == 0) {
        unsigned ne = g->nevents + 1 + g->nqueues;

        if (!(g->events = weft__calloc(ne, sizeof *g->events)))
            rc = weft__error(WEFT_ENOMEM, "sim: out of memory for a graph");
        for (unsigned i = 0; g->events && i < ne; i++) {
            g->events[i].id = ++p->next_event;
            g->events[i].device = WEFT__SIM_HOST;
        }
    }
    sim_capture_unlink(p, c);
    if (!graph || broken || bad || rc < 0) {
        sim_capture_free(c); /* no events yet: nothing to unref */
        sim_unlock(p);
        weft__sim_graph_destroy(old);
        if (broken && graph)
            return weft__error(WEFT_EINVAL,
                               "graph_end: the capture on %s failed: %s",
                               wq->ctx->dev->name, broken);
        if (bad)
            return weft__error(WEFT_EINVAL,
                               "graph_end: the capture on %s (queue %u) has a "
                               "queue that was not joined back (queue %u on "
                               "device %d): record an event on it and make a "
                               "queue of the capture wait for it before the "
                               "end (unjoined)",
                               wq->ctx->dev->name, q->id, bad_id, bad_dev);
        return rc;
    }
    sim_unlock(p);
    weft__free(c);
    weft__debug("sim", "a graph of %zu operations on %u queues%s", g->n,
                g->nqueues, old ? ", updating the last one" : "");
    if (old) {
        /* An update in place: old takes the new nodes and events. */
        sim_graph *o = old, t = *o;

        weft__assert(o->p == p);
        *o = *g;
        *g = t;
        weft__sim_graph_destroy(g);
        g = o;
        if (updated)
            *updated = 1;
    }
    *graph = g;
    return 0;
}

/*
 * An external record or wait in q's capture (driver.h): a node that, at
 * each launch, records ev on q, or makes q wait for ev's latest record at
 * the time of the launch (its steps are enqueued then, in order).
 */
static int sim_graph_external(weft__queue *wq, weft__event *we,
                              weft__sim_op_kind kind)
{
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    sim_node n = sim_node_of(kind);
    long i = 0;
    int in;

    if (we->ctx->dev->platform != &p->base)
        return weft__error(WEFT_EINVAL,
                           "sim: an external %s on %s of an event of %s: not "
                           "one simulated machine",
                           kind == WEFT__SIM_EVENT_RECORD ? "record" : "wait",
                           wq->ctx->dev->name, we->ctx->dev->name);
    n.ext = (sim_event *)we;
    sim_lock(p);
    in = q->cap != NULL;
    if (in)
        i = weft__sim_capture_add(q, &n);
    sim_unlock(p);
    if (!in)
        return weft__error(WEFT_EINVAL,
                           "sim: an external %s on a queue of %s that takes "
                           "part in no capture",
                           kind == WEFT__SIM_EVENT_RECORD ? "record" : "wait",
                           wq->ctx->dev->name);
    return i < 0 ? (int)i : 0;
}

int weft__sim_graph_record_external(weft__event *we, weft__queue *wq)
{
    if (we->ctx != wq->ctx)
        return weft__error(WEFT_EINVAL,
                           "sim: an external record of an event of %s on a "
                           "queue of %s",
                           we->ctx->dev->name, wq->ctx->dev->name);
    return sim_graph_external(wq, we, WEFT__SIM_EVENT_RECORD);
}

int weft__sim_graph_wait_external(weft__queue *wq, weft__event *we)
{
    return sim_graph_external(wq, we, WEFT__SIM_EVENT_WAIT);
}

/* A step of a launch: a node, or a record or wait of the fork or join. */
typedef struct sim_step {
    sim_queue *q;
    sim_event *ev; /* record, wait: one of the graph's events */
    sim_marker *m; /* record: its new marker */
    sim_prep pr;   /* pr.op.kind says what the step is */
} sim_step;

/* Outside the lock: the items of a record (marker and work) or a wait. */
static int sim_step_prep(sim_step *st)
{
    weft__sim_op_kind kind = st->pr.op.kind;

    if (kind != WEFT__SIM_EVENT_RECORD && kind != WEFT__SIM_EVENT_WAIT)
        return 0; /* a node: weft__sim_node_prep did it */
    if ((kind == WEFT__SIM_EVENT_RECORD &&
         !(st->m = weft__calloc(1, sizeof *st->m))) ||
        !(st->pr.w = weft__calloc(1, sizeof *st->pr.w)))
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a launch");
    return 0;
}

/*
 * Outside the lock: the steps of a launch of g on q, prepared, into steps
 * (room for 1 + 3 * nqueues + n): the fork, every node in capture order,
 * the join. *count says how many were filled, whether or not it fails;
 * what they hold is the caller's to free.
 */
static int sim_graph_steps(const sim_platform *p, const sim_graph *g,
                           sim_queue *q, sim_step *steps, size_t *count)
{
    sim_event *fork = &g->events[g->nevents], *join = fork + 1;
    size_t n = 0;
    int rc = 0;

    /* Fork: every other queue of the graph waits for what q had. */
    steps[n].q = q;
    steps[n].ev = fork;
    steps[n++].pr.op.kind = WEFT__SIM_EVENT_RECORD;
    for (unsigned i = 0; i < g->nqueues; i++)
        if (g->queues[i] != q) {
            steps[n].q = g->queues[i];
            steps[n].ev = fork;
            steps[n++].pr.op.kind = WEFT__SIM_EVENT_WAIT;
        }
    for (size_t i = 0; i < g->n && rc == 0; i++) {
        const sim_node *nd = &g->nodes[i];

        steps[n].q = nd->q;
        if (nd->kind == WEFT__SIM_EVENT_RECORD ||
            nd->kind == WEFT__SIM_EVENT_WAIT) {
            steps[n].ev = nd->ext ? nd->ext : &g->events[nd->event];
            steps[n].pr.op.kind = nd->kind;
        } else {
            rc = weft__sim_node_prep(p, nd, &steps[n].pr);
        }
        n++;
    }
    /* Join: q waits for every other queue's part. */
    for (unsigned i = 0; i < g->nqueues; i++)
        if (g->queues[i] != q) {
            steps[n].q = g->queues[i];
            steps[n].ev = &join[i];
            steps[n++].pr.op.kind = WEFT__SIM_EVENT_RECORD;
            steps[n].q = q;
            steps[n].ev = &join[i];
            steps[n++].pr.op.kind = WEFT__SIM_EVENT_WAIT;
        }
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = sim_step_prep(&steps[i]);
    *count = n;
    return rc;
}

/*
 * Under the lock: submit the n prepared steps of a launch of g on q, all
 * or none. Once they are in, their items are taken (set to NULL).
 */
static int sim_graph_submit(sim_platform *p, const sim_graph *g, sim_queue *q,
                            sim_step *steps, size_t n)
{
    int rc = 0;

    /* Nothing of what follows may fail once the first step is in. */
    for (unsigned i = 0; i <= g->nqueues && rc == 0; i++) {
        sim_queue *gq = i < g->nqueues ? g->queues[i] : q;

        if (gq->cap)
            rc = weft__error(WEFT_EINVAL,
                             "graph_launch: a queue on %s takes part in a "
                             "capture",
                             gq->base.ctx->dev->name);
        else
            rc = weft__sim_queue_start(gq);
    }
    if (rc == 0)
        rc = weft__sim_record_reserve(p, n);
    for (size_t i = 0; i < n && rc == 0; i++) {
        sim_step *st = &steps[i];
        int src;

        if (st->pr.op.kind == WEFT__SIM_EVENT_RECORD)
            src = weft__sim_record_submit(st->ev, st->q, st->m, st->pr.w);
        else if (st->pr.op.kind == WEFT__SIM_EVENT_WAIT)
            src = weft__sim_wait_submit(p, st->ev, st->q, st->pr.w);
        else
            src = weft__sim_submit(st->q, &st->pr.op, st->pr.dur, st->pr.first,
                                   st->pr.count, st->pr.w, st->pr.acc,
                                   st->pr.nacc);
        weft__assert(src == 0);
        st->m = NULL;
        st->pr.w = NULL;
    }
    return rc;
}

int weft__sim_graph_launch(void *graph, weft__queue *wq)
{
    sim_graph *g = graph;
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    sim_step *steps;
    size_t n = 0;
    int rc;

    if (g->p != p)
        return weft__error(WEFT_EINVAL,
                           "graph_launch: a graph of another simulated "
                           "machine on a queue of %s",
                           wq->ctx->dev->name);
    for (unsigned i = 0; i < g->nqueues; i++)
        if (__atomic_load_n(&g->queues[i]->base.destroyed, __ATOMIC_ACQUIRE))
            return weft__error(WEFT_EDESTROYED,
                               "graph_launch: a queue of the graph (on %s) "
                               "was destroyed",
                               g->queues[i]->base.ctx->dev->name);
    steps = weft__calloc(1 + 3 * (size_t)g->nqueues + g->n, sizeof *steps);
    if (!steps)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a launch");
    rc = sim_graph_steps(p, g, q, steps, &n);
    sim_lock(p);
    if (rc == 0)
        rc = sim_graph_submit(p, g, q, steps, n);
    sim_unlock(p);
    for (size_t i = 0; i < n; i++) {
        weft__free(steps[i].m);
        weft__free(steps[i].pr.w);
    }
    weft__free(steps);
    return rc;
}
