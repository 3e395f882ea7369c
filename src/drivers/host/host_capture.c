/*
 * Capture of host native graphs (host_graph.h; launched by host_graph.c).
 *
 * Capture, as the sim's (after CUDA's stream capture in relaxed mode).
 * graph_begin(q) starts a capture on q. What a queue in the capture
 * enqueues becomes a node and does not run. An event recorded on a queue
 * in the capture becomes a capture event: its earlier record is
 * forgotten, and once the capture ends it reads as never recorded. A
 * queue of the same context that waits for a capture event joins the
 * capture. Records and waits inside the capture make no nodes, only
 * edges: capture order is a topological order of the work (a wait can
 * only name a record enqueued before it, and a queue's nodes keep their
 * order). A wait in the capture for an event outside
 * any capture passes if that event's work has completed and fails with
 * WEFT_EINVAL if not (the dependency would cross the capture's boundary:
 * graph_wait_external is the way); so do a wait on another capture's
 * event, a queue of another context joining, and a sync of a queue in the
 * capture or of a capture event. graph_end(q) takes every queue out.
 * Queues that joined need not be joined back: the graph runs on q alone.
 * With an old graph, graph_end gives old the new capture's nodes (the
 * host keeps no topology, so every change can be taken in place).
 */
#include "host_graph.h"

#include <string.h>

/* Nodes a node waits for, as the capture collects them. */
typedef struct dep_list {
    uint32_t *v;
    size_t n, cap;
} dep_list;

/*
 * A queue's front: its nodes that no later node of the queue waits for.
 * Past FRONT_SCAN of them (nodes that graph_order gave edges of their
 * own, none to the others: many independent kernels), in[v] says whether
 * node v is in it, and a node leaving it is marked and left in list
 * (dropped when list is next compacted), so that each change costs O(1),
 * not a search: live counts the nodes in it.
 */
typedef struct cap_front {
    dep_list list;
    unsigned char *in; /* NULL until list outgrew FRONT_SCAN */
    size_t in_cap, live;
} cap_front;

enum { FRONT_SCAN = 16 };

/*
 * A queue in a capture. front: what a record, and a node in queue order,
 * come after (one node, unless graph_order gave nodes their own edges).
 * pend: what its next node waits for besides (the records of the events
 * it waited for since). order: set by graph_order for its next node only
 * (ordered), the nodes that node waits for instead of the front. last:
 * its latest node.
 */
typedef struct cap_queue {
    weft__host_queue *q;
    cap_front front;
    dep_list pend;
    dep_list order;
    int ordered;
    uint32_t last; /* NO_NODE: none yet */
    /* Its latest external wait node (NO_NODE: none): every later node of
     * the queue waits for it, ordered or not (it stands for work outside
     * the graph, which no edge of the caller's names). */
    uint32_t ext;
} cap_queue;

/* An event recorded in a capture: the nodes its record comes after. */
typedef struct cap_event {
    weft__host_event *e;
    dep_list deps;
} cap_event;

typedef struct weft__host_capture {
    weft__host_graph *g;
    cap_queue *queues; /* [0]: the queue it began on */
    size_t nqueues, cap_queues;
    cap_event *events; /* recorded in it */
    size_t nevents, cap_events;
    const char *broken; /* why no graph can come of it, or NULL */
    /* Each node's stamp: a list being made holds it if its stamp is that
     * list's (stamp_begin), so that a node joins a list once in O(1). */
    uint32_t *stamp;
    size_t stamp_cap;
    uint32_t token;
} weft__host_capture;

/*
 * Guards every capture and the cap pointers of queues and events (which
 * are stored under it and read atomically outside it). Captures are rare
 * (the tape makes one per graph it builds), so one lock serves all.
 */
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;

/* Room for one more in *arr (n used of *cap); -1 when out of memory. */
static int room(void **arr, size_t *cap, size_t n, size_t elem)
{
    size_t want;
    void *p;

    if (n < *cap)
        return 0;
    want = *cap ? 2 * *cap : 8;
    if (!(p = weft__realloc(*arr, want * elem)))
        return -1;
    *arr = p;
    *cap = want;
    return 0;
}

/*
 * Under the capture lock: a new stamp for a list being made (see
 * weft__host_capture.stamp), with a stamp for every node of c's graph and
 * the one being added. 0 when out of memory.
 */
static uint32_t stamp_begin(weft__host_capture *c)
{
    size_t need = c->g->n + 1;

    if (need > c->stamp_cap) {
        size_t cap = c->stamp_cap ? c->stamp_cap : 64;
        uint32_t *p;

        while (cap < need)
            cap *= 2;
        if (!(p = weft__realloc(c->stamp, cap * sizeof *p)))
            return 0;
        memset(p + c->stamp_cap, 0, (cap - c->stamp_cap) * sizeof *p);
        c->stamp = p;
        c->stamp_cap = cap;
    }
    if (++c->token == 0) { /* wrapped: no old stamp may look current */
        memset(c->stamp, 0, c->stamp_cap * sizeof *c->stamp);
        c->token = 1;
    }
    return c->token;
}

/* v joins l unless l holds it (stamped tok); -1 when out of memory. */
static int dep_add(weft__host_capture *c, dep_list *l, uint32_t v, uint32_t tok)
{
    if (v == NO_NODE || c->stamp[v] == tok)
        return 0;
    if (room((void **)&l->v, &l->cap, l->n, sizeof *l->v) < 0)
        return -1;
    c->stamp[v] = tok;
    l->v[l->n++] = v;
    return 0;
}

/* Every node of from joins to (once); -1 when out of memory. */
static int dep_merge(weft__host_capture *c, dep_list *to, const dep_list *from)
{
    uint32_t tok = stamp_begin(c);

    if (!tok)
        return -1;
    for (size_t i = 0; i < to->n; i++)
        c->stamp[to->v[i]] = tok;
    for (size_t i = 0; i < from->n; i++)
        if (dep_add(c, to, from->v[i], tok) < 0)
            return -1;
    return 0;
}

/* Whether entry v of f's list is in f (not dropped since). */
static int front_live(const cap_front *f, uint32_t v)
{
    return !f->in || f->in[v];
}

/* Whether f holds v. */
static int front_holds(const cap_front *f, uint32_t v)
{
    if (f->in)
        return v < f->in_cap && f->in[v];
    for (size_t i = 0; i < f->list.n; i++)
        if (f->list.v[i] == v)
            return 1;
    return 0;
}

/* f's in for nodes below need; -1 when out of memory (f unchanged). */
static int front_in_room(cap_front *f, size_t need)
{
    size_t cap = f->in_cap ? f->in_cap : 64;
    unsigned char *p;

    if (need <= f->in_cap)
        return 0;
    while (cap < need)
        cap *= 2;
    if (!(p = weft__realloc(f->in, cap)))
        return -1;
    memset(p + f->in_cap, 0, cap - f->in_cap);
    f->in = p;
    f->in_cap = cap;
    return 0;
}

/*
 * f's list (with marks: f->in) down to the nodes in f, each once: a kept
 * node is marked 2 while the list is walked, so that a second entry of it
 * is dropped; no memory needed.
 */
static void front_compact(cap_front *f)
{
    size_t k = 0;

    if (!f->in)
        return; /* (no dropped entries, no repeats: nothing to do) */
    for (size_t i = 0; i < f->list.n; i++) {
        uint32_t v = f->list.v[i];

        if (f->in[v] == 1) {
            f->in[v] = 2;
            f->list.v[k++] = v;
        }
    }
    f->list.n = k;
    for (size_t i = 0; i < k; i++)
        f->in[f->list.v[i]] = 1;
}

/* v joins f (once); -1 when out of memory. */
static int front_add(weft__host_capture *c, cap_front *f, uint32_t v)
{
    if (v == NO_NODE || front_holds(f, v))
        return 0;
    if (room((void **)&f->list.v, &f->list.cap, f->list.n, sizeof *f->list.v) <
        0)
        return -1;
    if (f->in && front_in_room(f, (size_t)v + 1) < 0) {
        /* No room to mark it: back to searching the list. */
        front_compact(f);
        weft__free(f->in);
        f->in = NULL;
        f->in_cap = 0;
    }
    f->list.v[f->list.n++] = v;
    f->live++;
    if (f->in) {
        f->in[v] = 1;
    } else if (f->list.n > FRONT_SCAN &&
               front_in_room(f, WEFT__MAX((size_t)v, c->g->n) + 1) == 0) {
        /* Large: marks from now on (without room, the list is searched). */
        for (size_t i = 0; i < f->list.n; i++)
            f->in[f->list.v[i]] = 1;
    }
    return 0;
}

/* v leaves f, if in it. */
static void front_drop(cap_front *f, uint32_t v)
{
    if (f->in) {
        if (v < f->in_cap && f->in[v]) {
            f->in[v] = 0;
            f->live--;
        }
        return;
    }
    for (size_t i = 0; i < f->list.n; i++)
        if (f->list.v[i] == v) {
            memmove(&f->list.v[i], &f->list.v[i + 1],
                    (f->list.n - i - 1) * sizeof *f->list.v);
            f->list.n--;
            f->live--;
            return;
        }
}

/* Every node leaves f. */
static void front_clear(cap_front *f)
{
    if (f->in)
        for (size_t i = 0; i < f->list.n; i++)
            f->in[f->list.v[i]] = 0;
    f->list.n = 0;
    f->live = 0;
}

/* Under the capture lock: every queue and event leaves c. */
static void capture_close(weft__host_capture *c)
{
    for (size_t i = 0; i < c->nqueues; i++)
        __atomic_store_n(&c->queues[i].q->cap, NULL, __ATOMIC_RELEASE);
    for (size_t i = 0; i < c->nevents; i++)
        __atomic_store_n(&c->events[i].e->cap, NULL, __ATOMIC_RELEASE);
}

static void cap_queue_free(cap_queue *cq)
{
    weft__free(cq->front.list.v);
    weft__free(cq->front.in);
    weft__free(cq->pend.v);
    weft__free(cq->order.v);
}

/* After capture_close: c and its graph (unless taken) are freed. */
static void capture_free(weft__host_capture *c)
{
    weft__host_graph_destroy(c->g);
    for (size_t i = 0; i < c->nqueues; i++)
        cap_queue_free(&c->queues[i]);
    for (size_t i = 0; i < c->nevents; i++)
        weft__free(c->events[i].deps.v);
    weft__free(c->queues);
    weft__free(c->events);
    weft__free(c->stamp);
    weft__free(c);
}

/* Under the capture lock: hq's entry in c (it takes part in c). */
static cap_queue *capture_queue(weft__host_capture *c,
                                const weft__host_queue *hq)
{
    for (size_t i = 0; i < c->nqueues; i++)
        if (c->queues[i].q == hq)
            return &c->queues[i];
    weft__assert(!"a queue of a capture missing from it");
    return NULL;
}

/* Under the capture lock: hq joins c, waiting for what deps holds. */
static int capture_join(weft__host_capture *c, weft__host_queue *hq,
                        const dep_list *deps)
{
    cap_queue *cq;

    if (room((void **)&c->queues, &c->cap_queues, c->nqueues,
             sizeof *c->queues) < 0)
        return -1;
    cq = &c->queues[c->nqueues];
    memset(cq, 0, sizeof *cq);
    cq->q = hq;
    cq->last = NO_NODE;
    cq->ext = NO_NODE;
    if (deps && dep_merge(c, &cq->pend, deps) < 0) {
        cap_queue_free(cq);
        return -1;
    }
    c->nqueues++;
    __atomic_store_n(&hq->cap, c, __ATOMIC_RELEASE);
    return 0;
}

/* v onto the deps of g's node being added, once (stamped tok). */
static void dep_put(weft__host_capture *c, uint32_t v, uint32_t tok)
{
    weft__host_graph *g = c->g;

    if (c->stamp[v] == tok)
        return;
    c->stamp[v] = tok;
    g->deps[g->ndeps++] = v;
}

/* A barrier node's work: none (it only joins edges). */
static void barrier_fn(void *user)
{
    (void)user;
}

/*
 * Under the capture lock, before a record on cq's queue whose front is
 * wide (past FRONT_SCAN nodes): a node that waits for the whole front and
 * does nothing becomes the front alone, so that the record, and each node
 * of another queue that waits for it, takes one edge and not one per
 * front node (each node of a wide front is joined once, not at every
 * record). It takes nothing of pend: the queue's next node still waits
 * for that itself. -1 when out of memory or past the graph's limits.
 */
static int capture_barrier(weft__host_capture *c, cap_queue *cq)
{
    weft__host_graph *g = c->g;
    size_t need = cq->front.list.n;
    uint32_t self = (uint32_t)g->n, tok;
    weft__host_op *op;

    if (g->n + 1 >= NO_NODE || g->ndeps + need >= NO_NODE)
        return -1;
    if (!(op = weft__host_op_alloc(&cq->q->base, sizeof *op,
                                   WEFT__HOST_OP_HOST_FN)))
        return -1;
    if (room((void **)&g->nodes, &g->cap, g->n, sizeof op) < 0 ||
        room((void **)&g->dep_first, &g->cap_first, g->n + 1,
             sizeof *g->dep_first) < 0 ||
        weft__grow(&g->deps, &g->cap_deps, g->ndeps + need, sizeof *g->deps) ||
        !(tok = stamp_begin(c))) {
        weft__free(op);
        return -1;
    }
    op->u.host.fn = barrier_fn;
    op->u.host.user = NULL;
    g->dep_first[g->n] = (uint32_t)g->ndeps;
    for (size_t i = 0; i < cq->front.list.n; i++)
        if (front_live(&cq->front, cq->front.list.v[i]))
            dep_put(c, cq->front.list.v[i], tok);
    front_clear(&cq->front);
    g->nodes[g->n++] = op;
    g->dep_first[g->n] = (uint32_t)g->ndeps;
    /* (the list keeps its room: this cannot fail but where marks must
     * grow, and then it searches the list instead) */
    return front_add(c, &cq->front, self);
}

/*
 * Under the capture lock: op, enqueued on hq, becomes c's next node, or c
 * breaks. It waits for hq's front (queue order), or for the nodes
 * graph_order gave it, and for the records hq waited for since: the edges
 * a launch runs it by (weft__host_graph_run). It joins the front, which
 * loses the nodes it waits for.
 */
static void capture_append(weft__host_capture *c, weft__host_queue *hq,
                           weft__host_op *op)
{
    weft__host_graph *g = c->g;
    cap_queue *cq = capture_queue(c, hq);
    const dep_list *on = cq->ordered ? &cq->order : &cq->front.list;
    size_t need = on->n + cq->pend.n + 1; /* (+ 1: the external wait) */
    uint32_t self = (uint32_t)g->n, tok = 0;

    /* Nodes and edges are named by 32 bits (NO_NODE is none); a launch
     * counts its nodes in 32 (weft__host_graph_run). */
    if (!c->broken && (g->n + 1 >= NO_NODE || g->ndeps + need >= NO_NODE))
        c->broken = "too many nodes or edges for a host graph (2^32 - 2)";
    if (!c->broken && (room((void **)&g->nodes, &g->cap, g->n, sizeof op) < 0 ||
                       room((void **)&g->dep_first, &g->cap_first, g->n + 1,
                            sizeof *g->dep_first) < 0))
        c->broken = "out of memory for a node";
    if (!c->broken &&
        (weft__grow(&g->deps, &g->cap_deps, g->ndeps + need, sizeof *g->deps) ||
         !(tok = stamp_begin(c))))
        c->broken = "out of memory for a node's edges";
    if (c->broken) {
        weft__free(op);
        return;
    }
    g->dep_first[g->n] = (uint32_t)g->ndeps;
    for (size_t i = 0; i < on->n; i++)
        if (cq->ordered || front_live(&cq->front, on->v[i]))
            dep_put(c, on->v[i], tok);
    for (size_t i = 0; i < cq->pend.n; i++)
        dep_put(c, cq->pend.v[i], tok);
    if (cq->ext != NO_NODE)
        dep_put(c, cq->ext, tok);
    if (op->kind == WEFT__HOST_OP_WAIT_EXT)
        cq->ext = self;
    if (!cq->ordered) {
        front_clear(&cq->front);
    } else {
        /* The front keeps what the node does not wait for. */
        for (size_t i = 0; i < cq->order.n; i++)
            front_drop(&cq->front, cq->order.v[i]);
        if (cq->front.in && cq->front.list.n > 2 * cq->front.live + FRONT_SCAN)
            front_compact(&cq->front);
    }
    if (front_add(c, &cq->front, self) < 0)
        c->broken = "out of memory for a queue's edges";
    cq->pend.n = 0;
    cq->order.n = 0;
    cq->ordered = 0;
    cq->last = self;
    g->nodes[g->n++] = op;
    g->dep_first[g->n] = (uint32_t)g->ndeps;
}

void weft__host_capture_push(weft__host_queue *hq, weft__host_op *op)
{
    pthread_mutex_lock(&capture_lock);
    if (hq->cap) {
        capture_append(hq->cap, hq, op);
        op = NULL;
    }
    pthread_mutex_unlock(&capture_lock);
    if (op) /* the capture ended meanwhile: the op runs as usual */
        weft__host_queue_push_now(&hq->base, op);
}

/* Under the capture lock: he leaves the capture it is in. */
static void event_leave(weft__host_event *he)
{
    weft__host_capture *c = he->cap;

    for (size_t i = 0; c && i < c->nevents; i++)
        if (c->events[i].e == he) {
            weft__free(c->events[i].deps.v);
            c->events[i] = c->events[--c->nevents];
            break;
        }
    __atomic_store_n(&he->cap, NULL, __ATOMIC_RELEASE);
}

/* Under the capture lock: he's entry in the capture it is in. */
static cap_event *capture_event(weft__host_capture *c,
                                const weft__host_event *he)
{
    for (size_t i = 0; i < c->nevents; i++)
        if (c->events[i].e == he)
            return &c->events[i];
    weft__assert(!"an event of a capture missing from it");
    return NULL;
}

int weft__host_capture_record(weft__host_event *he, weft__host_queue *hq)
{
    weft__host_capture *c;

    pthread_mutex_lock(&capture_lock);
    if (!(c = hq->cap)) {
        if (he->cap) /* recorded outside its capture: no longer of it */
            event_leave(he);
        pthread_mutex_unlock(&capture_lock);
        return 0;
    }
    if (he->cap != c) {
        if (room((void **)&c->events, &c->cap_events, c->nevents,
                 sizeof *c->events) < 0) {
            pthread_mutex_unlock(&capture_lock);
            return weft__error(WEFT_ENOMEM,
                               "host: no memory to record an event in a "
                               "capture");
        }
        if (he->cap)
            event_leave(he);
        memset(&c->events[c->nevents], 0, sizeof *c->events);
        c->events[c->nevents++].e = he;
        __atomic_store_n(&he->cap, c, __ATOMIC_RELEASE);
    }
    /* The record comes after hq's last node and what hq waited for. */
    {
        cap_queue *cq = capture_queue(c, hq);
        cap_event *ce = capture_event(c, he);
        uint32_t tok;

        if (cq->front.live > FRONT_SCAN && !c->broken &&
            capture_barrier(c, cq) < 0)
            c->broken = "out of memory for a queue's edges";
        tok = stamp_begin(c);
        ce->deps.n = 0;
        for (size_t i = 0; tok && i < cq->front.list.n; i++)
            if (front_live(&cq->front, cq->front.list.v[i]) &&
                dep_add(c, &ce->deps, cq->front.list.v[i], tok) < 0)
                tok = 0;
        for (size_t i = 0; tok && i < cq->pend.n; i++)
            if (dep_add(c, &ce->deps, cq->pend.v[i], tok) < 0)
                tok = 0;
        if (!tok)
            c->broken = "out of memory for an event's edges";
    }
    pthread_mutex_unlock(&capture_lock);
    /* Its earlier record is forgotten (not under the capture lock). */
    weft__host_event_set(he, NULL);
    return 1;
}

int weft__host_capture_wait(weft__host_queue *hq, weft__host_event *he)
{
    weft__host_capture *qc, *ec;
    weft__host_signal *s;

    pthread_mutex_lock(&capture_lock);
    qc = hq->cap;
    ec = he->cap;
    if (!qc && !ec) {
        pthread_mutex_unlock(&capture_lock);
        return 0;
    }
    if (ec) {
        const char *why = NULL;

        if (qc == ec) {
            /* hq's next node waits for the nodes before the record. */
            if (dep_merge(qc, &capture_queue(qc, hq)->pend,
                          &capture_event(ec, he)->deps) < 0)
                qc->broken = "out of memory for a node's edges";
        } else if (qc) {
            why = "a queue in one capture waits for an event of another";
        } else if (hq->base.ctx != ec->queues[0].q->base.ctx) {
            why = "a capture takes in queues of one device only";
        } else if (capture_join(ec, hq, &capture_event(ec, he)->deps) < 0) {
            pthread_mutex_unlock(&capture_lock);
            return weft__error(WEFT_ENOMEM,
                               "host: no memory for a queue joining a "
                               "capture");
        }
        pthread_mutex_unlock(&capture_lock);
        if (why)
            return weft__error(WEFT_EINVAL, "host: %s", why);
        return 1;
    }
    pthread_mutex_unlock(&capture_lock);
    /* A queue in a capture waits for an event outside any. */
    if (!(s = weft__host_event_pending(he)))
        return 1; /* complete or never recorded: nothing to wait for */
    weft__host_signal_release(s);
    return weft__error(WEFT_EINVAL,
                       "host: a queue in a capture waits for work outside "
                       "it that has not completed (the dependency would "
                       "cross the capture's boundary)");
}

void weft__host_capture_queue_gone(weft__host_queue *hq)
{
    weft__host_capture *c;

    pthread_mutex_lock(&capture_lock);
    if (!(c = hq->cap)) {
        pthread_mutex_unlock(&capture_lock);
        return;
    }
    if (c->queues[0].q == hq) {
        /* The queue it began on: nothing can end it any more. */
        capture_close(c);
        pthread_mutex_unlock(&capture_lock);
        capture_free(c);
        return;
    }
    for (size_t i = 1; i < c->nqueues; i++)
        if (c->queues[i].q == hq) {
            cap_queue_free(&c->queues[i]);
            c->queues[i] = c->queues[--c->nqueues];
            break;
        }
    c->broken = "a queue that took part in it was destroyed";
    __atomic_store_n(&hq->cap, NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&capture_lock);
}

void weft__host_capture_event_gone(weft__host_event *he)
{
    pthread_mutex_lock(&capture_lock);
    event_leave(he);
    pthread_mutex_unlock(&capture_lock);
}

int weft__host_graph_begin(weft__queue *q)
{
    weft__host_queue *hq = (weft__host_queue *)q;
    weft__host_capture *c = weft__calloc(1, sizeof *c);
    weft__host_graph *g = weft__calloc(1, sizeof *g);

    if (c && g &&
        room((void **)&c->queues, &c->cap_queues, 0, sizeof *c->queues) == 0) {
        g->ctx = q->ctx;
        c->g = g;
        memset(&c->queues[0], 0, sizeof c->queues[0]);
        c->queues[0].q = hq;
        c->queues[0].last = NO_NODE;
        c->queues[0].ext = NO_NODE;
        c->nqueues = 1;
        pthread_mutex_lock(&capture_lock);
        if (!hq->cap) {
            __atomic_store_n(&hq->cap, c, __ATOMIC_RELEASE);
            pthread_mutex_unlock(&capture_lock);
            return 0;
        }
        pthread_mutex_unlock(&capture_lock);
        capture_free(c);
        return weft__error(WEFT_EINVAL,
                           "graph_begin: a queue on %s takes "
                           "part in a capture already",
                           q->ctx->dev->name);
    }
    if (c)
        weft__free(c->queues);
    weft__free(c);
    weft__free(g);
    return weft__error(WEFT_ENOMEM, "host: no memory for a capture");
}

int weft__host_graph_end(weft__queue *q, void *old, void **graph, int *updated)
{
    weft__host_queue *hq = (weft__host_queue *)q;
    weft__host_capture *c;
    weft__host_graph *g, *o = old;
    const char *broken;

    if (updated)
        *updated = 0;
    pthread_mutex_lock(&capture_lock);
    c = hq->cap;
    if (!c || c->queues[0].q != hq) {
        pthread_mutex_unlock(&capture_lock);
        weft__host_graph_destroy(old); /* the driver's, as driver.h says */
        return weft__error(WEFT_EINVAL,
                           "graph_end: no capture began on this queue of %s",
                           q->ctx->dev->name);
    }
    capture_close(c);
    pthread_mutex_unlock(&capture_lock);
    broken = c->broken;
    g = c->g;
    c->g = NULL;
    capture_free(c);
    if (!graph || broken) {
        weft__host_graph_destroy(g);
        weft__host_graph_destroy(old);
        if (graph)
            return weft__error(WEFT_EINVAL,
                               "graph_end: the capture on %s "
                               "failed: %s",
                               q->ctx->dev->name, broken);
        return 0;
    }
    if (g->n && weft__host_graph_prepare(g) < 0) {
        int rc = weft__error(
            WEFT_ENOMEM, "host: no memory for a graph of %zu operations", g->n);

        weft__host_graph_destroy(g);
        weft__host_graph_destroy(old);
        return rc;
    }
    weft__debug("host", "a graph of %zu operations, %zu edges", g->n, g->ndeps);
    if (o) {
        /* In place: old takes the new nodes, the new graph the old ones. */
        weft__host_graph t = *o;

        *o = *g;
        *g = t;
        weft__host_graph_destroy(g); /* asserts no launch of old runs */
        g = o;
        if (updated)
            *updated = 1;
    }
    *graph = g;
    return 0;
}

/* An external node of kind on q's capture. */
static int capture_external(weft__queue *q, weft__event *ev,
                            weft__host_op_kind kind)
{
    weft__host_queue *hq = (weft__host_queue *)q;
    weft__host_op *op;
    weft__host_capture *c;

    if (kind == WEFT__HOST_OP_RECORD_EXT && ev->ctx != q->ctx)
        return weft__error(WEFT_EINVAL, "host: an event record node on a "
                                        "queue of another device than the "
                                        "event's");
    if (!(op = weft__host_op_alloc(q, sizeof *op, kind)))
        return weft__error(WEFT_ENOMEM, "host: no memory for a graph node");
    pthread_mutex_lock(&capture_lock);
    if (!(c = hq->cap)) {
        pthread_mutex_unlock(&capture_lock);
        weft__free(op);
        return weft__error(WEFT_EINVAL, "host: an external event node on a "
                                        "queue that takes part in no capture");
    }
    op->u.ext.ev = (weft__host_event *)ev;
    op->u.ext.slot = c->g->next++;
    capture_append(c, hq, op);
    pthread_mutex_unlock(&capture_lock);
    return 0;
}

int weft__host_graph_record_external(weft__event *ev, weft__queue *q)
{
    return capture_external(q, ev, WEFT__HOST_OP_RECORD_EXT);
}

int weft__host_graph_wait_external(weft__queue *q, weft__event *ev)
{
    return capture_external(q, ev, WEFT__HOST_OP_WAIT_EXT);
}

int weft__host_graph_node_last(weft__queue *q, uint32_t *node)
{
    weft__host_queue *hq = (weft__host_queue *)q;
    weft__host_capture *c;
    uint32_t last = NO_NODE;

    pthread_mutex_lock(&capture_lock);
    if ((c = hq->cap))
        last = capture_queue(c, hq)->last;
    pthread_mutex_unlock(&capture_lock);
    if (!c)
        return weft__error(WEFT_EINVAL, "graph_node_last: a queue that takes "
                                        "part in no capture");
    if (last == NO_NODE)
        return weft__error(WEFT_EINVAL, "graph_node_last: no node on this "
                                        "queue in its capture yet");
    *node = last;
    return 0;
}

int weft__host_graph_order(weft__queue *q, const uint32_t *nodes, unsigned n)
{
    weft__host_queue *hq = (weft__host_queue *)q;
    weft__host_capture *c;
    const char *why = NULL;

    pthread_mutex_lock(&capture_lock);
    if (!(c = hq->cap)) {
        why = "a queue that takes part in no capture";
    } else {
        cap_queue *cq = capture_queue(c, hq);
        uint32_t tok = 0;

        cq->order.n = 0;
        cq->ordered = 1;
        for (unsigned i = 0; i < n && !why; i++)
            if (nodes[i] >= c->g->n)
                why = "a node that its capture does not hold";
        if (!why && !(tok = stamp_begin(c)))
            c->broken = "out of memory for a node's edges";
        for (unsigned i = 0; i < n && !why && tok; i++)
            if (dep_add(c, &cq->order, nodes[i], tok) < 0)
                c->broken = "out of memory for a node's edges";
        if (why) {
            cq->order.n = 0;
            cq->ordered = 0;
        }
    }
    pthread_mutex_unlock(&capture_lock);
    if (why)
        return weft__error(WEFT_EINVAL, "graph_order: %s", why);
    return 0;
}

int weft__host_graph_wait_later(weft__queue *q, weft__event *ev)
{
    weft__host_queue *hq = (weft__host_queue *)q;
    weft__host_event *he = (weft__host_event *)ev;
    weft__host_capture *c;
    const char *why = NULL;

    pthread_mutex_lock(&capture_lock);
    if (!(c = hq->cap) || he->cap != c)
        why = "an event not recorded in the queue's capture";
    else {
        cap_queue *cq = capture_queue(c, hq);
        const dep_list *d = &capture_event(c, he)->deps;

        for (size_t i = 0; i < d->n; i++)
            if (front_add(c, &cq->front, d->v[i]) < 0) {
                c->broken = "out of memory for a queue's edges";
                break;
            }
    }
    pthread_mutex_unlock(&capture_lock);
    if (why)
        return weft__error(WEFT_EINVAL, "graph_wait_later: %s", why);
    return 0;
}
