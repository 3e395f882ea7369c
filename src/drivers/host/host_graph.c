/*
 * Native graphs on the host driver: their launches (the capture that makes
 * them: host_capture.c; the graph itself: host_graph.h).
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
#include "host_graph.h"

#include <sched.h>
#include <stdint.h>
#include <string.h>

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

int weft__host_graph_prepare(weft__host_graph *g)
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
