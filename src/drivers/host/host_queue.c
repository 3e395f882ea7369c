/*
 * Host queues and events. A queue is one worker thread that runs its FIFO
 * of operations in order; an event points at the signal of its latest
 * record, which the worker raises when it reaches the record operation,
 * i.e. once everything enqueued before it has run.
 */
#include "host_internal.h"

#include "../../base/os.h"

#include <sched.h>
#include <string.h>

/*
 * One lock and one condition for every signal of the process. A signal
 * raised wakes every thread waiting on any signal; host queues are few, and
 * this keeps a signal a plain refcounted struct that cannot fail to set up.
 */
static pthread_mutex_t signal_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t signal_raised = PTHREAD_COND_INITIALIZER;

/* Ops a worker keeps for reuse; more are freed as they complete. */
#define WEFT__HOST_SPARE 256
/* Spare ops handed to the enqueueing side at once, in a busy queue. */
#define WEFT__HOST_BATCH 8
/*
 * Op sizes: at least WEFT__HOST_OP_MIN, rounded up to a power of two, so
 * that a queue's ops fit each other's uses (where one does not, it is
 * freed and a larger one made: a queue's ops grow to the size it needs).
 * Ops larger than WEFT__HOST_OP_KEEP (launches with much group-local
 * scratch, say) are not kept.
 */
#define WEFT__HOST_OP_MIN  ((size_t)256)
#define WEFT__HOST_OP_KEEP ((size_t)4096)
/*
 * How long a worker that ran out of operations watches for the next one
 * before it sleeps: long enough to ride out an enqueueing thread's pauses
 * between operations (a lock, a node that waits for the host), short
 * enough not to matter to an idle process; it yields the core meanwhile.
 */
#define WEFT__HOST_SPIN_NS 100000
/* Pauses before the watch starts yielding (worker_next). */
#define WEFT__HOST_PAUSES 64

static weft__host_queue *host_queue(weft__queue *q)
{
    return (weft__host_queue *)q;
}

static void *mem_at(weft__mem *m, size_t off)
{
    return (char *)((weft__host_mem *)m)->data + off;
}

static void signal_retain(weft__host_signal *s)
{
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

static void signal_release(weft__host_signal *s)
{
    if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0)
        weft__free(s);
}

static void signal_raise(weft__host_signal *s)
{
    uint64_t now = weft__now_ns();

    pthread_mutex_lock(&signal_lock);
    s->time_ns = now;
    __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&signal_raised);
    pthread_mutex_unlock(&signal_lock);
}

static void signal_wait(weft__host_signal *s)
{
    pthread_mutex_lock(&signal_lock);
    while (!s->done)
        pthread_cond_wait(&signal_raised, &signal_lock);
    pthread_mutex_unlock(&signal_lock);
}

static void fill_run(weft__host_op *op)
{
    unsigned char *p = op->u.fill.dst;
    size_t n = op->u.fill.size, ps = op->u.fill.pattern_size;

    if (ps == 1) {
        memset(p, op->u.fill.pattern[0], n);
        return;
    }
    /* Seed one pattern, then double what is written: O(log n) memcpys. */
    memcpy(p, op->u.fill.pattern, ps);
    for (size_t done = ps; done < n;) {
        size_t step = WEFT__MIN(done, n - done);
        memcpy(p + done, p, step);
        done += step;
    }
}

weft__host_signal *weft__host_signal_new(long refs)
{
    weft__host_signal *s = weft__malloc(sizeof *s);

    if (s) {
        s->refs = refs;
        s->done = 0;
        s->time_ns = 0;
    }
    return s;
}

void weft__host_signal_release(weft__host_signal *s)
{
    signal_release(s);
}

void weft__host_signal_raise(weft__host_signal *s)
{
    signal_raise(s);
}

void weft__host_signal_wait(weft__host_signal *s)
{
    signal_wait(s);
}

void weft__host_op_run(weft__host_queue *hq, weft__host_op *op)
{
    weft__host_context *hctx = (weft__host_context *)hq->base.ctx;

    switch (op->kind) {
    case WEFT__HOST_OP_COPY:
        /* memmove: a copy within one allocation may overlap. */
        memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.size);
        break;
    case WEFT__HOST_OP_FILL:
        fill_run(op);
        break;
    case WEFT__HOST_OP_LAUNCH:
        weft__host_pool_run(&hctx->pool, &op->u.job);
        break;
    case WEFT__HOST_OP_RECORD:
        signal_raise(op->u.signal);
        signal_release(op->u.signal);
        break;
    case WEFT__HOST_OP_WAIT:
        signal_wait(op->u.signal);
        signal_release(op->u.signal);
        break;
    case WEFT__HOST_OP_HOST_FN:
        op->u.host.fn(op->u.host.user);
        break;
    case WEFT__HOST_OP_GRAPH:
        weft__host_graph_run(hq, op);
        break;
    case WEFT__HOST_OP_RECORD_EXT:
    case WEFT__HOST_OP_WAIT_EXT:
        weft__assert(!"a graph node run outside its graph");
        break;
    }
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#else
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

/* ---- the FIFO (see weft__host_queue) ----------------------------------- */

/* Hand spare to ready, if ready is empty. Worker only. */
static void worker_hand_over(weft__host_queue *hq)
{
    weft__host_op *expect = NULL;

    if (hq->spare && !__atomic_load_n(&hq->ready, __ATOMIC_RELAXED) &&
        __atomic_compare_exchange_n(&hq->ready, &expect, hq->spare, 0,
                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
        hq->spare = NULL;
        hq->nspare = 0;
    }
}

/*
 * Keep op (run, and no longer the FIFO's head) for reuse, or free it.
 * Worker only.
 */
static void worker_recycle(weft__host_queue *hq, weft__host_op *op)
{
    if (hq->nspare >= WEFT__HOST_SPARE || op->cap > WEFT__HOST_OP_KEEP) {
        weft__free(op);
        return;
    }
    op->next = hq->spare;
    hq->spare = op;
    if (++hq->nspare >= WEFT__HOST_BATCH)
        worker_hand_over(hq);
}

/*
 * The op after the head, which becomes the head, or NULL if none is linked
 * yet (none came, or its producer is between exchange and link). The old
 * head is done with: the FIFO no longer holds it. Worker only.
 */
static weft__host_op *fifo_take(weft__host_queue *hq)
{
    weft__host_op *h = hq->head;
    weft__host_op *next = __atomic_load_n(&h->next, __ATOMIC_ACQUIRE);

    if (!next)
        return NULL;
    hq->head = next;
    if (h != &hq->stub)
        worker_recycle(hq, h);
    return next;
}

/*
 * Sleep until an op may have come or the queue stops. 1 if the worker
 * is to leave: stopping, and every op linked has been taken.
 */
static int worker_sleep(weft__host_queue *hq)
{
    int stop;

    pthread_mutex_lock(&hq->lock);
    __atomic_store_n(&hq->sleeping, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&hq->submitted, __ATOMIC_SEQ_CST) == hq->taken &&
           !hq->stopping)
        pthread_cond_wait(&hq->work, &hq->lock);
    __atomic_store_n(&hq->sleeping, 0, __ATOMIC_RELAXED);
    stop = hq->stopping &&
           __atomic_load_n(&hq->submitted, __ATOMIC_SEQ_CST) == hq->taken;
    pthread_mutex_unlock(&hq->lock);
    return stop;
}

/*
 * The next op to run: taken at once, else after watching the FIFO for up
 * to WEFT__HOST_SPIN_NS, else after sleeping. NULL: leave. The watch
 * pauses a little, then yields the core between looks: where threads
 * outnumber cores (the enqueuer, and a worker per busy queue), a watching
 * worker must not take the core of the thread it waits for.
 */
static weft__host_op *worker_next(weft__host_queue *hq)
{
    uint64_t until = 0;

    for (unsigned i = 1;; i++) {
        weft__host_op *op = fifo_take(hq);

        if (op) {
            hq->taken++;
            return op;
        }
        if (i < WEFT__HOST_PAUSES) {
            cpu_relax();
            continue;
        }
        /* Idle: the enqueuer may want what is spare now. */
        if (i == WEFT__HOST_PAUSES)
            worker_hand_over(hq);
        uint64_t now = weft__now_ns();
        if (!until) {
            until = now + WEFT__HOST_SPIN_NS;
        } else if (now >= until ||
                   __atomic_load_n(&hq->stopping, __ATOMIC_RELAXED)) {
            if (worker_sleep(hq))
                return NULL;
            until = 0;
            i = 0;
            continue;
        }
        sched_yield();
    }
}

/*
 * The worker leaves only when asked to stop and its FIFO is empty, so that
 * queue_release first drains the queue.
 */
static void *worker_main(void *arg)
{
    weft__host_queue *hq = arg;
    weft__host_op *op;

    while ((op = worker_next(hq))) {
        weft__host_op_run(hq, op);
        __atomic_add_fetch(&hq->completed, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&hq->syncers, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&hq->lock);
            pthread_cond_broadcast(&hq->idle);
            pthread_mutex_unlock(&hq->lock);
        }
    }
    return NULL;
}

/* Free a list of ops linked by next. */
static void ops_free(weft__host_op *op)
{
    while (op) {
        weft__host_op *next = op->next;

        weft__free(op);
        op = next;
    }
}

weft__host_op *weft__host_op_alloc(weft__queue *q, size_t bytes,
                                   weft__host_op_kind kind)
{
    weft__host_queue *hq = host_queue(q);
    weft__host_op *op = NULL;
    size_t cap;

    /* The cache is one thread's at a time; another allocates. */
    if (!__atomic_exchange_n(&hq->cache_busy, 1, __ATOMIC_ACQUIRE)) {
        if (!hq->cache)
            hq->cache = __atomic_exchange_n(&hq->ready, NULL, __ATOMIC_ACQUIRE);
        if ((op = hq->cache))
            hq->cache = op->next;
        __atomic_store_n(&hq->cache_busy, 0, __ATOMIC_RELEASE);
    }
    if (op && op->cap < bytes) {
        weft__free(op);
        op = NULL;
    }
    if (op) {
        cap = op->cap;
    } else {
        if (bytes > WEFT__HOST_OP_KEEP)
            cap = bytes;
        else
            for (cap = WEFT__HOST_OP_MIN; cap < bytes;)
                cap *= 2;
        if (!(op = weft__malloc(cap)))
            return NULL;
    }
    memset(op, 0, sizeof *op);
    op->cap = cap;
    op->kind = kind;
    return op;
}

void weft__host_queue_push(weft__queue *q, weft__host_op *op)
{
    if (__atomic_load_n(&host_queue(q)->cap, __ATOMIC_ACQUIRE))
        weft__host_capture_push(host_queue(q), op);
    else
        weft__host_queue_push_now(q, op);
}

void weft__host_queue_push_now(weft__queue *q, weft__host_op *op)
{
    weft__host_queue *hq = host_queue(q);
    weft__host_op *prev;

    /*
     * Counted first: before the exchange, so that whatever precedes op in
     * the FIFO was counted before it (a sync's target covers it), and
     * before the link, so that the link (a store to a line the worker is
     * likely reading) need not complete before the check of sleeping
     * below, which only has to follow the count. A worker that sees the
     * count before the link waits for the link.
     */
    __atomic_add_fetch(&hq->submitted, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&op->next, NULL, __ATOMIC_RELAXED);
    prev = __atomic_exchange_n(&hq->tail, op, __ATOMIC_ACQ_REL);
    __atomic_store_n(&prev->next, op, __ATOMIC_RELEASE);
    if (__atomic_load_n(&hq->sleeping, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&hq->lock);
        pthread_cond_signal(&hq->work);
        pthread_mutex_unlock(&hq->lock);
    }
}

int weft__host_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                            weft__queue **q)
{
    weft__host_queue *hq = weft__calloc(1, sizeof *hq);
    int rc, stage = 0;

    if (!hq)
        return weft__error(WEFT_ENOMEM, "host: no memory for a queue");
    rc = pthread_mutex_init(&hq->lock, NULL);
    if (rc == 0) {
        stage = 1;
        rc = pthread_cond_init(&hq->work, NULL);
    }
    if (rc == 0) {
        stage = 2;
        rc = pthread_cond_init(&hq->idle, NULL);
    }
    if (rc == 0) {
        stage = 3;
        hq->base.drv = &weft__driver_host;
        hq->base.ctx = ctx;
        hq->base.desc = *desc;
        hq->head = hq->tail = &hq->stub;
        rc = weft__thread_start(&hq->worker, "weft-host-queue",
                                "host.pthread_create", worker_main, hq);
    }
    if (rc == 0) {
        *q = &hq->base;
        return 0;
    }
    if (stage >= 3)
        pthread_cond_destroy(&hq->idle);
    if (stage >= 2)
        pthread_cond_destroy(&hq->work);
    if (stage >= 1)
        pthread_mutex_destroy(&hq->lock);
    weft__free(hq);
    return weft__host_os_error(WEFT_ENOMEM, rc,
                               stage >= 3 ? "starting a queue's worker thread"
                                          : "setting up a queue's lock");
}

/*
 * Waits for the work enqueued before the call (by any thread): the ops
 * counted in submitted now include every op ahead of this thread's last
 * in the FIFO (push counts before it joins the FIFO), so once completed
 * reaches that count, that op has run.
 */
int weft__host_queue_sync(weft__queue *q)
{
    weft__host_queue *hq = host_queue(q);
    uint64_t target = __atomic_load_n(&hq->submitted, __ATOMIC_ACQUIRE);

    if (__atomic_load_n(&hq->cap, __ATOMIC_ACQUIRE))
        return weft__error(WEFT_EINVAL,
                           "host: sync of a queue that takes part in a "
                           "capture (it runs nothing until the capture ends)");
    if (__atomic_load_n(&hq->completed, __ATOMIC_ACQUIRE) >= target)
        return 0;
    pthread_mutex_lock(&hq->lock);
    __atomic_add_fetch(&hq->syncers, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&hq->completed, __ATOMIC_SEQ_CST) < target)
        pthread_cond_wait(&hq->idle, &hq->lock);
    __atomic_sub_fetch(&hq->syncers, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&hq->lock);
    return 0;
}

void weft__host_queue_release(weft__queue *q)
{
    weft__host_queue *hq = host_queue(q);

    if (__atomic_load_n(&hq->cap, __ATOMIC_ACQUIRE))
        weft__host_capture_queue_gone(hq);
    pthread_mutex_lock(&hq->lock);
    __atomic_store_n(&hq->stopping, 1, __ATOMIC_RELAXED);
    pthread_cond_signal(&hq->work);
    pthread_mutex_unlock(&hq->lock);
    pthread_join(hq->worker, NULL);
    weft__assert(hq->completed == hq->submitted);
    if (hq->head != &hq->stub)
        weft__free(hq->head);
    ops_free(hq->spare);
    ops_free(hq->ready);
    ops_free(hq->cache);
    hq->head = hq->tail = &hq->stub;
    hq->spare = hq->ready = hq->cache = NULL;
    hq->nspare = 0;
    pthread_cond_destroy(&hq->idle);
    pthread_cond_destroy(&hq->work);
    pthread_mutex_destroy(&hq->lock);
}

/* ---- copies, fill, host functions -------------------------------------- */

static weft__host_op *op_new(weft__queue *q, weft__host_op_kind kind,
                             const char *what)
{
    weft__host_op *op = weft__host_op_alloc(q, sizeof *op, kind);

    if (!op)
        weft__error(WEFT_ENOMEM, "host: no memory to enqueue %s", what);
    return op;
}

static int copy_push(weft__queue *q, void *dst, const void *src, size_t size,
                     const char *what)
{
    weft__host_op *op = op_new(q, WEFT__HOST_OP_COPY, what);

    if (!op)
        return WEFT_ENOMEM;
    op->u.copy.dst = dst;
    op->u.copy.src = src;
    op->u.copy.size = size;
    weft__host_queue_push(q, op);
    return 0;
}

int weft__host_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        const void *src, size_t size)
{
    return copy_push(q, mem_at(dst, dst_off), src, size, "a copy");
}

int weft__host_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                        size_t src_off, size_t size)
{
    return copy_push(q, dst, mem_at(src, src_off), size, "a copy");
}

/* Also copy_peer: every host device's memory is addressable by all. */
int weft__host_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        weft__mem *src, size_t src_off, size_t size)
{
    return copy_push(q, mem_at(dst, dst_off), mem_at(src, src_off), size,
                     "a copy");
}

int weft__host_fill(weft__queue *q, weft__mem *dst, size_t off,
                    const void *pattern, size_t pattern_size, size_t size)
{
    weft__host_op *op;

    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4)
        return weft__error(WEFT_EINVAL,
                           "host: fill pattern of %zu bytes (1, 2 or 4)",
                           pattern_size);
    if (size % pattern_size || off % pattern_size)
        return weft__error(WEFT_EINVAL,
                           "host: fill of %zu bytes at %zu is not a multiple "
                           "of its %zu-byte pattern",
                           size, off, pattern_size);
    op = op_new(q, WEFT__HOST_OP_FILL, "a fill");
    if (!op)
        return WEFT_ENOMEM;
    op->u.fill.dst = mem_at(dst, off);
    op->u.fill.size = size;
    op->u.fill.pattern_size = (unsigned)pattern_size;
    memcpy(op->u.fill.pattern, pattern, pattern_size);
    weft__host_queue_push(q, op);
    return 0;
}

int weft__host_host_fn(weft__queue *q, weft__host_fn *fn, void *user)
{
    weft__host_op *op = op_new(q, WEFT__HOST_OP_HOST_FN, "a host function");

    if (!op)
        return WEFT_ENOMEM;
    op->u.host.fn = fn;
    op->u.host.user = user;
    weft__host_queue_push(q, op);
    return 0;
}

/* ---- events ------------------------------------------------------------ */

static weft__host_event *host_event(weft__event *ev)
{
    return (weft__host_event *)ev;
}

int weft__host_event_create(weft__context *ctx, unsigned flags,
                            weft__event **ev)
{
    weft__host_event *he = weft__calloc(1, sizeof *he);

    if (!he)
        return weft__error(WEFT_ENOMEM, "host: no memory for an event");
    he->base.drv = &weft__driver_host;
    he->base.ctx = ctx;
    he->base.flags = flags;
    *ev = &he->base;
    return 0;
}

int weft__host_event_record(weft__event *ev, weft__queue *q)
{
    weft__host_event *he = host_event(ev);
    weft__host_signal *s;
    weft__host_op *op;
    int rc;

    if ((__atomic_load_n(&host_queue(q)->cap, __ATOMIC_ACQUIRE) ||
         __atomic_load_n(&he->cap, __ATOMIC_ACQUIRE)) &&
        (rc = weft__host_capture_record(he, host_queue(q))) != 0)
        return rc < 0 ? rc : 0;
    /* The event's and the record operation's references. */
    s = weft__host_signal_new(2);
    op = s ? op_new(q, WEFT__HOST_OP_RECORD, "an event record") : NULL;
    if (!op) {
        weft__free(s);
        return weft__error(WEFT_ENOMEM, "host: no memory to record an event");
    }
    op->u.signal = s;
    /*
     * Enqueue first: a wait that picks up the new signal must find its
     * record already queued, or a queue could wait on work not yet asked.
     * Into the FIFO whatever cap says now: the record was found outside
     * any capture above, and a queue joining one since comes after it (a
     * record taken into a graph would raise its one-shot signal at every
     * launch). The same holds for waits and graph launches.
     */
    weft__host_queue_push_now(q, op);
    weft__host_event_set(he, s);
    return 0;
}

/* The event's current signal with a reference taken, or NULL if none. */
static weft__host_signal *event_signal(weft__host_event *he)
{
    weft__host_signal *s;

    pthread_mutex_lock(&signal_lock);
    s = he->signal;
    if (s)
        signal_retain(s);
    pthread_mutex_unlock(&signal_lock);
    return s;
}

weft__host_signal *weft__host_event_pending(weft__host_event *he)
{
    weft__host_signal *s = event_signal(he);

    if (s && __atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
        signal_release(s);
        s = NULL;
    }
    return s;
}

void weft__host_event_set(weft__host_event *he, weft__host_signal *s)
{
    weft__host_signal *old;

    pthread_mutex_lock(&signal_lock);
    old = he->signal;
    he->signal = s;
    pthread_mutex_unlock(&signal_lock);
    signal_release(old);
}

int weft__host_queue_wait_event(weft__queue *q, weft__event *ev)
{
    weft__host_event *he = host_event(ev);
    weft__host_signal *s;
    weft__host_op *op;
    int rc;

    if ((__atomic_load_n(&host_queue(q)->cap, __ATOMIC_ACQUIRE) ||
         __atomic_load_n(&he->cap, __ATOMIC_ACQUIRE)) &&
        (rc = weft__host_capture_wait(host_queue(q), he)) != 0)
        return rc < 0 ? rc : 0;
    if (!(s = weft__host_event_pending(he)))
        return 0; /* never recorded or already complete: nothing to wait */
    op = op_new(q, WEFT__HOST_OP_WAIT, "an event wait");
    if (!op) {
        signal_release(s);
        return WEFT_ENOMEM;
    }
    op->u.signal = s; /* the reference passes to the operation */
    weft__host_queue_push_now(q, op);
    return 0;
}

/* A query or sync of an event recorded in a capture that lasts. */
static int event_captured(weft__host_event *he, const char *what)
{
    if (!__atomic_load_n(&he->cap, __ATOMIC_ACQUIRE))
        return 0;
    return weft__error(WEFT_EINVAL,
                       "host: %s of an event recorded in a capture that has "
                       "not ended",
                       what);
}

int weft__host_event_query(weft__event *ev)
{
    weft__host_event *he = host_event(ev);
    int rc;

    if ((rc = event_captured(he, "query")) < 0)
        return rc;
    pthread_mutex_lock(&signal_lock);
    rc = !he->signal || he->signal->done ? 0 : WEFT_ENOTREADY;
    pthread_mutex_unlock(&signal_lock);
    return rc;
}

int weft__host_event_sync(weft__event *ev)
{
    weft__host_signal *s;
    int rc;

    if ((rc = event_captured(host_event(ev), "sync")) < 0)
        return rc;
    s = event_signal(host_event(ev));
    if (s) {
        signal_wait(s);
        signal_release(s);
    }
    return 0;
}

int weft__host_event_elapsed(weft__event *start, weft__event *end, uint64_t *ns)
{
    weft__host_signal *a, *b;

    if (!(start->flags & WEFT__EVENT_TIMING) ||
        !(end->flags & WEFT__EVENT_TIMING))
        return weft__error(WEFT_EINVAL,
                           "host: elapsed time needs two timing events");
    /* Copy under the lock, report after it. */
    int recorded, done;
    uint64_t ta = 0, tb = 0;
    pthread_mutex_lock(&signal_lock);
    a = host_event(start)->signal;
    b = host_event(end)->signal;
    recorded = a && b;
    done = recorded && a->done && b->done;
    if (done) {
        ta = a->time_ns;
        tb = b->time_ns;
    }
    pthread_mutex_unlock(&signal_lock);
    if (!recorded)
        return weft__error(WEFT_ESTATE, "host: elapsed time of an event that "
                                        "was never recorded");
    if (!done)
        return weft__error(WEFT_ENOTREADY,
                           "host: elapsed time of an event not complete yet");
    if (tb < ta)
        return weft__error(WEFT_EINVAL,
                           "host: the end event completed %llu ns before the "
                           "start event",
                           (unsigned long long)(ta - tb));
    *ns = tb - ta;
    return 0;
}

void weft__host_event_destroy(weft__event *ev)
{
    weft__host_event *he = host_event(ev);
    weft__host_signal *s;

    if (__atomic_load_n(&he->cap, __ATOMIC_ACQUIRE))
        weft__host_capture_event_gone(he);
    /* Pending records and waits keep their own references. */
    pthread_mutex_lock(&signal_lock);
    s = he->signal;
    he->signal = NULL;
    pthread_mutex_unlock(&signal_lock);
    signal_release(s);
    weft__free(he);
}
