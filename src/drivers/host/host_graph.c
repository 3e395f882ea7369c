/*
 * Native graphs on the host driver.
 *
 * A host graph is the list of operations a capture took in, in the order
 * they were enqueued, each with the nodes it waits for (its queue's nodes
 * before it, or those graph_order named, and the nodes before the records
 * its queue waited for), and a launch is one operation on the launching
 * queue whose owner starts each node once its predecessors have finished:
 * one hand-off between threads per launch instead of one per operation,
 * which is what makes a replayed graph of small tasks cheap
 * (bench/task_overhead). Every
 * operation runs as it would op by op; kernels and native calls go to the
 * context's pool, so that those of different queues run side by side as
 * they would have on their queues (weft__host_graph_run). As on a GPU, a
 * kernel must not wait for one that no edge orders before it: with one
 * thread per device, they may run one after the other. The first native
 * call that fails in a launch is kept in the graph's failed and handed to
 * the launching queue at the launch's end (its next sync returns it).
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
 *
 * External nodes. graph_record_external(ev, q) makes a node that records
 * ev at each launch; graph_wait_external(q, ev) one that waits, at each
 * launch, for the record of ev that was latest when that launch was
 * enqueued, as a queue wait does when it is enqueued. graph_launch
 * resolves both on the calling thread, so a graph launched after this one
 * that waits for ev waits for this launch's record. A wait node whose
 * record has not run parks the queue as a queue wait does (no runner
 * blocks): the launch resumes at that node once the record is raised.
 *
 * A graph runs one launch at a time (its kernel nodes keep the state of
 * their spread over the pool): graph_launch fails with WEFT_EBUSY while an
 * earlier launch of the same graph has not finished, and graph_end with it
 * as old, or graph_destroy, must not come before that launch has finished
 * (the tape waits for every launch it makes).
 */
#include "host_internal.h"

#include <sched.h>
#include <stdint.h>
#include <string.h>

enum { NO_NODE = UINT32_MAX };

/*
 * A node's predecessors not finished in a launch, a cache line each: the
 * threads that finish its predecessors count it down while others count
 * down their neighbours' (a node's successors are often another's too).
 */
struct node_pending {
    _Alignas(WEFT__CACHE_LINE) unsigned n; /* atomic */
};

typedef struct weft__host_graph {
    weft__context *ctx;
    weft__host_op **nodes; /* capture order; the graph's (weft__free) */
    size_t n, cap;
    /* Node i waits for nodes deps[dep_first[i] .. dep_first[i + 1]). */
    uint32_t *dep_first; /* n + 1 entries once a node is in */
    uint32_t *deps;
    size_t cap_first, ndeps, cap_deps;
    /* Node i's successors: succs[succ_first[i] .. succ_first[i + 1]). */
    uint32_t *succ_first, *succs;
    /*
     * A launch's state (weft__host_graph_run). Read by every thread:
     * pending (per node, its predecessors not finished; atomic) and link
     * (the stack's links). The runner's own, on lines of their own:
     * ready[rhead .. rtail) (to start), blocked (external waits whose
     * record has not run).
     */
    struct node_pending *pending;
    uint32_t *link, *ready, *blocked;
    char pad0[64];
    /*
     * Written by every thread of a launch, a line of its own. count
     * (atomic): the nodes not finished << 32 | those in flight (started,
     * by the runner or by whoever made a kernel ready, and not finished):
     * a node's finish and the start of the successor its thread runs next
     * are one add. stack (atomic): nodes made ready by other threads for
     * the runner, linked through link.
     */
    uint64_t count;
    uint32_t stack;
    char pad1[64];
    size_t rhead, rtail, nblocked;
    char pad2[64];
    unsigned joined;  /* pool threads inside its launches' jobs; pool lock */
    unsigned next;    /* external nodes: each has a slot in a launch */
    unsigned running; /* atomic: a launch enqueued and not finished */
    /* The first failure of its native nodes in the launch that runs; the
     * runner hands it to the launching queue at the launch's end. */
    weft__host_fail failed;
    /*
     * Kernels and native calls of one group that wait for nothing: where
     * more than the pool has threads, a launch posts them as one job
     * whose groups they are (roots_job, on lines of its own), so that the
     * pool's threads claim them a few at a time, instead of the runner
     * handing each to the pool.
     */
    uint32_t *roots;
    size_t nroots;
    uint64_t roots_posted; /* over all launches (the runner's; tests) */
    char pad3[64];
    weft__host_job roots_job;
    char pad4[64];
} weft__host_graph;

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

static void graph_clear(weft__host_graph *g)
{
    for (size_t i = 0; i < g->n; i++)
        weft__free(g->nodes[i]);
    weft__free(g->nodes);
    weft__free(g->dep_first);
    weft__free(g->deps);
    weft__free(g->succ_first);
    weft__free(g->succs);
    weft__free(g->pending);
    weft__free(g->link);
    weft__free(g->ready);
    weft__free(g->blocked);
    weft__free(g->roots);
    g->roots = NULL;
    g->nroots = 0;
    g->succ_first = g->succs = NULL;
    g->pending = NULL;
    g->link = g->ready = g->blocked = NULL;
    g->nodes = NULL;
    g->dep_first = g->deps = NULL;
    g->n = g->cap = g->cap_first = g->ndeps = g->cap_deps = 0;
    g->next = 0;
}

void weft__host_graph_destroy(void *graph)
{
    weft__host_graph *g = graph;

    if (!g)
        return;
    weft__assert(!__atomic_load_n(&g->running, __ATOMIC_ACQUIRE) &&
                 "host graph destroyed while a launch of it runs");
    graph_clear(g);
    weft__free(g);
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

/* The successors and a launch's arrays of g, once captured; -1: no memory. */
static int graph_prepare(weft__host_graph *g)
{
    size_t n = g->n;

    g->succ_first = weft__calloc(n + 1, sizeof *g->succ_first);
    g->succs = weft__calloc(g->ndeps ? g->ndeps : 1, sizeof *g->succs);
    g->pending =
        weft__calloc_aligned(n ? n : 1, sizeof *g->pending, WEFT__CACHE_LINE);
    g->link = weft__calloc(n, sizeof *g->link);
    g->ready = weft__calloc(n, sizeof *g->ready);
    g->blocked = weft__calloc(n, sizeof *g->blocked);
    g->roots = weft__calloc(n ? n : 1, sizeof *g->roots);
    /* (scratch for the reverse; ready is not used before a launch) */
    if (!g->succ_first || !g->succs || !g->pending || !g->link || !g->ready ||
        !g->blocked || !g->roots)
        return -1;
    weft__lists_reverse((uint32_t)n, g->dep_first, g->deps, g->succ_first,
                        g->succs, g->ready);
    return 0;
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
    if (g->n && graph_prepare(g) < 0) {
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

size_t weft__host_graph_nodes(const void *graph)
{
    return ((const weft__host_graph *)graph)->n;
}

size_t weft__host_graph_edges(const void *graph)
{
    return ((const weft__host_graph *)graph)->ndeps;
}

const uint32_t *weft__host_graph_deps(const void *graph, size_t i, size_t *n)
{
    const weft__host_graph *g = graph;

    weft__assert(i < g->n);
    *n = g->dep_first[i + 1] - g->dep_first[i];
    return g->deps + g->dep_first[i];
}

uint64_t weft__host_graph_roots_posted(const void *graph)
{
    return ((const weft__host_graph *)graph)->roots_posted;
}

int weft__host_graph_reaches(const void *graph, uint32_t from, uint32_t to)
{
    const weft__host_graph *g = graph;
    uint32_t *stack;
    unsigned char *seen;
    size_t top = 0;
    int found = 0;

    if (from >= g->n || to >= g->n)
        return 0;
    stack = weft__calloc(g->n, sizeof *stack);
    seen = weft__calloc(g->n, 1);
    if (!stack || !seen) {
        weft__free(stack);
        weft__free(seen);
        return 0;
    }
    stack[top++] = from;
    seen[from] = 1;
    while (top && !found) {
        uint32_t i = stack[--top];

        for (uint32_t k = g->succ_first[i]; k < g->succ_first[i + 1]; k++) {
            uint32_t s = g->succs[k];

            if (s == to)
                found = 1;
            if (!seen[s]) {
                seen[s] = 1;
                stack[top++] = s;
            }
        }
    }
    weft__free(stack);
    weft__free(seen);
    return found;
}

int weft__host_graph_launch(void *graph, weft__queue *q)
{
    weft__host_graph *g = graph;
    weft__host_queue *hq = (weft__host_queue *)q;
    weft__host_signal **sig;
    weft__host_op *op;
    int rc = 0;

    if (q->ctx != g->ctx)
        return weft__error(WEFT_EINVAL, "graph_launch: a graph of another "
                                        "device");
    if (__atomic_load_n(&hq->cap, __ATOMIC_ACQUIRE))
        return weft__error(WEFT_EINVAL, "graph_launch: on a queue that takes "
                                        "part in a capture");
    op = weft__host_op_alloc(q, sizeof *op + (size_t)g->next * sizeof *sig,
                             WEFT__HOST_OP_GRAPH);
    if (!op)
        return weft__error(WEFT_ENOMEM, "host: no memory to launch a graph");
    sig = (weft__host_signal **)(op + 1);
    op->u.graph.graph = g;
    op->u.graph.signals = sig;
    memset(sig, 0, (size_t)g->next * sizeof *sig);
    /* Every record's signal first, so that a launch that fails does nothing:
     * the event's reference and the node's. */
    for (size_t i = 0; i < g->n && rc == 0; i++) {
        const weft__host_op *n = g->nodes[i];

        if (n->kind == WEFT__HOST_OP_RECORD_EXT &&
            !(sig[n->u.ext.slot] = weft__host_signal_new(2)))
            rc = weft__error(WEFT_ENOMEM, "host: no memory to launch a graph");
    }
    if (rc == 0 && __atomic_exchange_n(&g->running, 1, __ATOMIC_ACQ_REL))
        rc = weft__error(WEFT_EBUSY, "graph_launch: the graph's last launch "
                                     "has not finished (a host graph runs "
                                     "one launch at a time)");
    if (rc < 0) {
        for (size_t i = 0; i < g->n; i++)
            if (g->nodes[i]->kind == WEFT__HOST_OP_RECORD_EXT)
                weft__free(sig[g->nodes[i]->u.ext.slot]);
        weft__free(op);
        return rc;
    }
    /*
     * In capture order, as the operations would have been enqueued: a wait
     * takes the record latest there (one of this launch's, if an earlier
     * node made it: it runs first), a record becomes its event's latest.
     * A record's signal is the event's before its launch is in the FIFO,
     * which cannot fail now: a waiter that takes it early waits longer.
     */
    for (size_t i = 0; i < g->n; i++) {
        const weft__host_op *n = g->nodes[i];

        if (n->kind == WEFT__HOST_OP_WAIT_EXT)
            sig[n->u.ext.slot] = weft__host_event_pending(n->u.ext.ev);
        else if (n->kind == WEFT__HOST_OP_RECORD_EXT)
            weft__host_event_set(n->u.ext.ev, sig[n->u.ext.slot]);
    }
    /* Not into a capture q may have joined since the check above. */
    weft__host_queue_push_now(q, op);
    return 0;
}

/*
 * Running a launch. A node starts once its predecessors have finished:
 * whoever finishes a node (the runner, or a pool thread that ran a
 * kernel's last group) counts down its successors' pending, and pushes
 * each that reaches zero onto the graph's stack. The launching queue's
 * runner takes the ready nodes and starts them: kernels and native calls
 * (a job of one group) go to the context's pool, which runs those that no
 * edge orders side by side as their queues would have, except that the
 * runner keeps the last ready job of one group for itself (a chain of
 * them then runs on the runner with no hand-off); other operations run
 * on the runner. With nothing to start, the runner works on the pool's
 * open jobs, or sleeps until a node finishes; an external wait whose
 * record has not run parks the queue (as a queue wait does) once nothing
 * else is in flight.
 */
static pthread_mutex_t graph_wait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t graph_wait_cond = PTHREAD_COND_INITIALIZER;
static unsigned graph_waiters; /* atomic; threads asleep on the cond */

/* One node not finished, in a graph's count. */
#define COUNT_ONE_LEFT ((uint64_t)1 << 32)

/* Nodes of g's launch not finished. */
static uint32_t graph_left(weft__host_graph *g)
{
    return (uint32_t)(__atomic_load_n(&g->count, __ATOMIC_SEQ_CST) >> 32);
}

static weft__host_job *node_job_done(weft__host_job *job);

/*
 * Nodes that run as pool jobs: kernels, and native calls (one group, so
 * that independent ones run side by side on the pool's threads, as they
 * would have on their queues' runners).
 */
static int node_is_job(const weft__host_op *n)
{
    return n->kind == WEFT__HOST_OP_LAUNCH || n->kind == WEFT__HOST_OP_NATIVE;
}

/* Kernel or native node i's job, ready to post or run (its predecessors
 * finished). */
static weft__host_job *node_job(weft__host_graph *g, uint32_t i)
{
    weft__host_job *job = &g->nodes[i]->u.job;

    /* The spread's state of the last launch starts over. */
    job->next = NULL;
    job->claimed = 0;
    job->slots_taken = 0;
    job->active = 0;
    job->finished = 0;
    job->done = node_job_done;
    job->owner = g;
    job->joined = &g->joined;
    job->node = i;
    return job;
}

/* Onto the stack of nodes the runner is to start. */
static void node_push(weft__host_graph *g, uint32_t s)
{
    uint32_t top = __atomic_load_n(&g->stack, __ATOMIC_RELAXED);

    do
        __atomic_store_n(&g->link[s], top, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&g->stack, &top, s, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

/*
 * The calling thread's finishes not yet in their graph's count: a finish
 * that hands back the next node of a chain for this thread to run changes
 * only the count of nodes left, by one, and the chain's last finish adds
 * them all (the count is a line that every thread of the launch writes).
 * Until then the launch cannot end, so g stays. The runner flushes before
 * it waits (graph_progress) or parks.
 */
static _Thread_local struct {
    weft__host_graph *g;
    uint64_t left; /* in COUNT_ONE_LEFT */
} chain_done;

/* The calling thread's finishes not yet in their graph's count: in it. */
static void chain_flush(void)
{
    if (chain_done.g)
        __atomic_sub_fetch(&chain_done.g->count, chain_done.left,
                           __ATOMIC_SEQ_CST);
    chain_done.g = NULL;
    chain_done.left = 0;
}

/*
 * Node i of g finished: its successors' pending counted down. Those that
 * reach zero start from here: a kernel of one group comes back for the
 * caller to run next (the first; others are posted), larger kernels are
 * posted, other operations go to the runner (node_push). The add to
 * count for its finish (with those of the chain before it, chain_done) is
 * the last touch of g: once no node is left the launch may end and g go
 * (a pool thread may still be in here, past it).
 */
static weft__host_job *node_finish(weft__host_graph *g, uint32_t i)
{
    weft__host_pool *pool = &((weft__host_context *)g->ctx)->pool;
    weft__host_job *next = NULL;
    uint64_t left = COUNT_ONE_LEFT;
    int pushed = 0;

    for (uint32_t k = g->succ_first[i]; k < g->succ_first[i + 1]; k++) {
        uint32_t s = g->succs[k];
        weft__host_job *job;

        if (__atomic_sub_fetch(&g->pending[s].n, 1, __ATOMIC_ACQ_REL) != 0)
            continue;
        if (!node_is_job(g->nodes[s])) {
            node_push(g, s);
            pushed = 1;
            continue;
        }
        job = node_job(g, s);
        if (job->total == 1 && !next) {
            next = job;
            continue;
        }
        /* In flight before another thread can finish it. */
        __atomic_add_fetch(&g->count, 1, __ATOMIC_SEQ_CST);
        weft__host_pool_post(pool, job);
    }
    if (chain_done.g && chain_done.g != g)
        chain_flush(); /* (another graph's: not expected) */
    if (next && !pushed) {
        /* Left one less, in flight as it was (next takes i's place): to
         * the count with the chain's last finish. A push is for the
         * runner, who watches the count: no waiting for the chain then. */
        chain_done.g = g;
        chain_done.left += COUNT_ONE_LEFT;
        return next;
    }
    left += chain_done.left;
    chain_done.g = NULL;
    chain_done.left = 0;
    /* Its finish (and the chain's), and next's start (nobody else can
     * finish next). */
    __atomic_add_fetch(&g->count, (next ? 1 : 0) - left - 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&graph_waiters, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&graph_wait_lock);
        pthread_cond_broadcast(&graph_wait_cond);
        pthread_mutex_unlock(&graph_wait_lock);
    }
    return next;
}

/* The pool's call when a kernel node's last group has run. */
static weft__host_job *node_job_done(weft__host_job *job)
{
    return node_finish((weft__host_graph *)(uintptr_t)job->owner, job->node);
}

/* The runner: what other threads made ready joins its ready list. */
static void graph_take_ready(weft__host_graph *g)
{
    uint32_t top = __atomic_exchange_n(&g->stack, NO_NODE, __ATOMIC_ACQUIRE);

    while (top != NO_NODE) {
        g->ready[g->rtail++] = top;
        top = __atomic_load_n(&g->link[top], __ATOMIC_RELAXED);
    }
}

/*
 * Until a node of g finishes (its nodes left move from `seen`): work on
 * the pool's open jobs, else poll, yielding the core, for up to
 * WEFT__IDLE_BUSY_NS (a launch runs: its nodes come within about a node's
 * time, as they do for the pool's helpers), then sleep.
 */
static void graph_progress(weft__host_pool *pool, weft__host_graph *g,
                           uint32_t seen)
{
    chain_flush();
    for (uint64_t t0 = weft__now_ns(); graph_left(g) == seen;) {
        if (weft__host_pool_help(pool))
            return;
        if (weft__now_ns() - t0 < (uint64_t)WEFT__IDLE_BUSY_NS) {
            sched_yield();
            continue;
        }
        /* Not under the wait lock: the host driver's locks never nest. A
         * kernel posted after this look has its own thread to run it. */
        if (weft__host_pool_open(pool))
            continue;
        pthread_mutex_lock(&graph_wait_lock);
        __atomic_add_fetch(&graph_waiters, 1, __ATOMIC_SEQ_CST);
        if (graph_left(g) == seen)
            pthread_cond_wait(&graph_wait_cond, &graph_wait_lock);
        __atomic_sub_fetch(&graph_waiters, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_unlock(&graph_wait_lock);
        t0 = weft__now_ns();
    }
}

/*
 * Start node i (its predecessors finished): 1 if it finished already, 2
 * for a kernel made ready to post (whoever runs its last group finishes
 * it).
 */
static int node_start(weft__host_queue *hq, weft__host_graph *g,
                      weft__host_signal **sig, uint32_t i)
{
    weft__host_op *n = g->nodes[i];

    switch (n->kind) {
    case WEFT__HOST_OP_RECORD_EXT:
        weft__host_signal_raise(sig[n->u.ext.slot]);
        weft__host_signal_release(sig[n->u.ext.slot]);
        return 1;
    case WEFT__HOST_OP_WAIT_EXT: /* its signal is up, or there is none */
        if (sig[n->u.ext.slot])
            weft__host_signal_release(sig[n->u.ext.slot]);
        sig[n->u.ext.slot] = NULL;
        return 1;
    case WEFT__HOST_OP_LAUNCH:
    case WEFT__HOST_OP_NATIVE:
        node_job(g, i);
        return 2;
    default: /* no node waits: records and waits make none */
        if (weft__host_op_run(hq, n))
            weft__assert(!"a graph node parked");
        return 1;
    }
}

/* An external wait whose record has not run yet. */
static int wait_blocked(const weft__host_graph *g, weft__host_signal **sig,
                        uint32_t i)
{
    const weft__host_op *n = g->nodes[i];

    return n->kind == WEFT__HOST_OP_WAIT_EXT && sig[n->u.ext.slot] &&
           !__atomic_load_n(&sig[n->u.ext.slot]->done, __ATOMIC_ACQUIRE);
}

/*
 * The runner lets a kernel of one group go to the pool's threads, or runs
 * it here when their ring is full (they have plenty to do then, and
 * posting more would only lengthen the pool's list).
 */
static void graph_hand_off(weft__host_pool *pool, weft__host_job *job)
{
    if (!weft__host_pool_offer(pool, job))
        weft__host_pool_run_here(job);
}

/* Nothing started is unfinished (whoever starts a node counts it before
 * it counts its own finish, or in the same add). */
static int graph_idle(weft__host_graph *g)
{
    return (uint32_t)__atomic_load_n(&g->count, __ATOMIC_SEQ_CST) == 0;
}

/* Group id of a launch's roots job: that node, and the chain it starts. */
static void root_run(const weft__host_job *job, uint64_t id)
{
    weft__host_graph *g = (weft__host_graph *)(uintptr_t)job->owner;

    weft__host_pool_run_here(node_job(g, g->roots[id]));
}

static weft__host_job *roots_done(weft__host_job *job)
{
    (void)job;
    return NULL;
}

/*
 * A launch's state from the start; the nodes that wait for nothing ready,
 * or, those of one group where there are many, g->roots for the roots
 * job (counted as in flight from the start).
 */
static void graph_launch_begin(weft__host_graph *g, const weft__host_pool *pool)
{
    unsigned threads = pool->nhelpers + 1;

    g->rhead = g->rtail = g->nblocked = 0;
    g->nroots = 0;
    __atomic_store_n(&g->stack, NO_NODE, __ATOMIC_RELAXED);
    for (size_t i = 0; i < g->n; i++) {
        uint32_t nd = g->dep_first[i + 1] - g->dep_first[i];
        const weft__host_op *n = g->nodes[i];

        if (n->kind == WEFT__HOST_OP_NATIVE)
            g->nodes[i]->u.job.failed = &g->failed;

        __atomic_store_n(&g->pending[i].n, nd, __ATOMIC_RELAXED);
        if (nd != 0)
            continue;
        if (node_is_job(n) && n->u.job.total == 1)
            g->roots[g->nroots++] = (uint32_t)i;
        else
            g->ready[g->rtail++] = (uint32_t)i;
    }
    if (g->nroots <= threads) { /* few: the runner hands them out */
        for (size_t k = 0; k < g->nroots; k++)
            g->ready[g->rtail++] = g->roots[k];
        g->nroots = 0;
    }
    __atomic_store_n(&g->count, (uint64_t)g->n << 32 | g->nroots,
                     __ATOMIC_RELAXED);
    if (g->nroots) {
        weft__host_job *job = &g->roots_job;

        g->roots_posted += g->nroots;
        memset(job, 0, sizeof *job);
        job->total = g->nroots;
        /* A few at a time where there are many (less contention on the
         * claims), one by one where they are few (balance). */
        job->chunk = WEFT__MIN(8, WEFT__MAX(1, g->nroots / (64 * threads)));
        job->nslots = threads + 1;
        job->each = root_run;
        job->done = roots_done;
        job->owner = g;
        job->joined = &g->joined;
    }
}

int weft__host_graph_run(weft__host_queue *hq, weft__host_op *op)
{
    weft__host_graph *g = op->u.graph.graph;
    weft__host_signal **sig = op->u.graph.signals;
    weft__host_pool *pool = &((weft__host_context *)hq->base.ctx)->pool;

    weft__assert(__atomic_load_n(&g->running, __ATOMIC_ACQUIRE) &&
                 "a host graph run without its launch");
    if (!op->u.graph.begun) { /* not a resume after a park */
        op->u.graph.begun = 1;
        graph_launch_begin(g, pool);
        /* Until its end (parks included), idle helpers poll for it. */
        weft__host_pool_busy(pool, 1);
        if (g->nroots)
            weft__host_pool_post(pool, &g->roots_job);
    }
    for (;;) {
        uint32_t seen = graph_left(g);
        weft__host_job *held = NULL;
        int started = 0;

        graph_take_ready(g);
        while (g->rhead < g->rtail) {
            uint32_t i = g->ready[g->rhead++];

            if (wait_blocked(g, sig, i)) {
                g->blocked[g->nblocked++] = i;
                continue;
            }
            started = 1;
            __atomic_add_fetch(&g->count, 1, __ATOMIC_SEQ_CST);
            switch (node_start(hq, g, sig, i)) {
            case 1: {
                weft__host_job *next = node_finish(g, i);

                if (next) {
                    if (held)
                        graph_hand_off(pool, held);
                    held = next;
                }
                graph_take_ready(g);
                break;
            }
            case 2: {
                weft__host_job *job = &g->nodes[i]->u.job;

                /* Work first: the runner keeps the last kernel of one
                 * group it finds for itself; the others go to the pool. */
                if (job->total == 1) {
                    if (held)
                        graph_hand_off(pool, held);
                    held = job;
                } else {
                    weft__host_pool_post(pool, job);
                }
                break;
            }
            }
        }
        /* Empty: from the start again (a node is on it at most once). */
        g->rhead = g->rtail = 0;
        if (held) {
            weft__host_pool_run_here(held);
            continue;
        }
        if (started)
            continue;
        if (graph_left(g) == 0)
            break;
        /* External waits whose record has run since go on. */
        for (size_t b = 0; b < g->nblocked;)
            if (!wait_blocked(g, sig, g->blocked[b])) {
                g->ready[g->rtail++] = g->blocked[b];
                g->blocked[b] = g->blocked[--g->nblocked];
            } else {
                b++;
            }
        if (g->rhead < g->rtail ||
            __atomic_load_n(&g->stack, __ATOMIC_ACQUIRE) != NO_NODE)
            continue;
        if (g->nblocked && graph_idle(g)) {
            /* Nothing in flight, nothing else can start: the queue waits
             * for the record, and the launch resumes here. */
            const weft__host_op *n = g->nodes[g->blocked[0]];

            chain_flush();
            if (weft__host_queue_park(hq, op, sig[n->u.ext.slot]))
                return 1;
            continue; /* raised meanwhile */
        }
        graph_progress(pool, g, seen);
    }
    /* No pool thread inside one of its kernels any more. */
    weft__host_pool_reap(pool, g, &g->joined);
    weft__host_pool_busy(pool, -1);
    /* Its native nodes' first failure is the queue's (for its next sync). */
    if (__atomic_load_n(&g->failed.code, __ATOMIC_ACQUIRE)) {
        if (!__atomic_exchange_n(&hq->failed.claimed, 1, __ATOMIC_ACQ_REL)) {
            memcpy(hq->failed.msg, g->failed.msg, sizeof hq->failed.msg);
            __atomic_store_n(&hq->failed.code, g->failed.code,
                             __ATOMIC_RELEASE);
        }
        __atomic_store_n(&g->failed.code, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&g->failed.claimed, 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&g->running, 0, __ATOMIC_RELEASE);
    return 0;
}
