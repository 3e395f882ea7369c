/*
 * Host queues and events. A queue is a FIFO of operations that its
 * platform's runners run in order (see weft__host_runners and
 * weft__host_queue in host_internal.h); an event points at the signal of
 * its latest record, which the queue's owner raises when it reaches the
 * record operation, i.e. once everything enqueued before it has run.
 */
#include "host_internal.h"

#include "../../base/os.h"

#include <sched.h>
#include <string.h>

/*
 * One lock and one condition for every signal of the process. A signal
 * raised wakes every thread waiting on any signal (event syncs: queues
 * park instead); this keeps a signal a plain refcounted struct that
 * cannot fail to set up.
 */
static pthread_mutex_t signal_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t signal_raised = PTHREAD_COND_INITIALIZER;

/* Ops an owner keeps for reuse; more are freed as they complete. */
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
 * How long an owner whose queue ran out of operations watches for the
 * next one before it gives the queue up: long enough to ride out an
 * enqueueing thread's pauses between operations (a lock, a node that
 * waits for the host), short enough not to matter to an idle process; it
 * yields the core meanwhile.
 */
#define WEFT__HOST_SPIN_NS 100000
/* Pauses before the watch starts yielding (queue_run). */
#define WEFT__HOST_PAUSES 64
/*
 * The quantum: once other queues wait on the runnable list, an owner
 * gives its queue up behind them after this many more operations or this
 * long, whichever comes first.
 */
#define WEFT__HOST_QUANTUM_OPS 64
#define WEFT__HOST_QUANTUM_NS  1000000

static void runners_post(weft__host_runners *r, weft__host_queue *hq);

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
    weft__host_queue *parked;

    pthread_mutex_lock(&signal_lock);
    s->time_ns = now;
    __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
    parked = s->parked;
    s->parked = NULL;
    pthread_cond_broadcast(&signal_raised);
    pthread_mutex_unlock(&signal_lock);
    /*
     * Posted after the signal lock (no lock nests). A parked queue is
     * touched by nobody else until posted: read its link first, as its
     * next owner may park it again at once.
     */
    while (parked) {
        weft__host_queue *hq = parked;

        parked = hq->park_next;
        runners_post(hq->runners, hq);
    }
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

/* The two sides of a block never share a byte (rect.c checks). */
static void rect_run(weft__host_op *op)
{
    const weft__rect *r = &op->u.rect.rect;

    for (size_t z = 0; z < r->depth; z++)
        for (size_t y = 0; y < r->height; y++)
            memcpy(op->u.rect.dst + r->dst.off + z * r->dst.slice_pitch +
                       y * r->dst.row_pitch,
                   op->u.rect.src + r->src.off + z * r->src.slice_pitch +
                       y * r->src.row_pitch,
                   r->width);
}

weft__host_signal *weft__host_signal_new(long refs)
{
    weft__host_signal *s = weft__malloc(sizeof *s);

    if (s) {
        s->refs = refs;
        s->done = 0;
        s->time_ns = 0;
        s->parked = NULL;
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

int weft__host_queue_park(weft__host_queue *hq, weft__host_op *op,
                          weft__host_signal *s)
{
    int parked = 0;

    if (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE))
        return 0;
    /* Set before the park is seen: the raise may post hq at once. */
    hq->pending = op;
    pthread_mutex_lock(&signal_lock);
    if (!s->done) {
        hq->park_next = s->parked;
        s->parked = hq;
        parked = 1;
    }
    pthread_mutex_unlock(&signal_lock);
    if (!parked)
        hq->pending = NULL;
    return parked;
}

/*
 * A native call (weft__host_native_enqueue), on the thread that runs it:
 * a non-zero return is kept in job->failed, with the detail it set on
 * this thread, for whoever reads that (a sync: a queue or a graph has no
 * other way to report).
 */
void weft__host_native_run(const weft__host_job *job)
{
    weft__native_queue nq = {NULL, NULL, NULL};
    weft__host_fail *f = job->failed;
    int ret = job->native(&nq, job->native_user);

    if (ret == 0)
        return;
    if (!__atomic_exchange_n(&f->claimed, 1, __ATOMIC_ACQ_REL)) {
        weft__strlcpy(f->msg, weft_last_error(), sizeof f->msg);
        __atomic_store_n(&f->code, ret < 0 ? ret : WEFT_EIO, __ATOMIC_RELEASE);
    }
    weft_clear_error();
}

int weft__host_fail_take(weft__host_fail *f)
{
    int rc;

    if (!__atomic_load_n(&f->code, __ATOMIC_ACQUIRE))
        return 0;
    rc = weft__error(__atomic_load_n(&f->code, __ATOMIC_RELAXED), "%s", f->msg);
    __atomic_store_n(&f->code, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&f->claimed, 0, __ATOMIC_RELEASE);
    return rc;
}

int weft__host_op_run(weft__host_queue *hq, weft__host_op *op)
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
    case WEFT__HOST_OP_COPY_RECT:
        rect_run(op);
        break;
    case WEFT__HOST_OP_LAUNCH:
        weft__host_pool_run(&hctx->pool, &op->u.job);
        break;
    case WEFT__HOST_OP_RECORD:
        signal_raise(op->u.signal);
        signal_release(op->u.signal);
        break;
    case WEFT__HOST_OP_WAIT:
        if (weft__host_queue_park(hq, op, op->u.signal))
            return 1;
        signal_release(op->u.signal);
        break;
    case WEFT__HOST_OP_HOST_FN:
        op->u.host.fn(op->u.host.user);
        break;
    case WEFT__HOST_OP_NATIVE:
        weft__host_native_run(&op->u.job);
        break;
    case WEFT__HOST_OP_GRAPH:
        return weft__host_graph_run(hq, op);
    case WEFT__HOST_OP_RECORD_EXT:
    case WEFT__HOST_OP_WAIT_EXT:
    case WEFT__HOST_OP_STOP:
        weft__assert(!"a graph node run outside its graph, or a stop");
        break;
    }
    return 0;
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

/* Hand spare to ready, if ready is empty. Owner only. */
static void owner_hand_over(weft__host_queue *hq)
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
 * Owner only.
 */
static void owner_recycle(weft__host_queue *hq, weft__host_op *op)
{
    if (hq->nspare >= WEFT__HOST_SPARE || op->cap > WEFT__HOST_OP_KEEP) {
        weft__free(op);
        return;
    }
    op->next = hq->spare;
    hq->spare = op;
    if (++hq->nspare >= WEFT__HOST_BATCH)
        owner_hand_over(hq);
}

/*
 * The op after the head, which becomes the head, or NULL if none is linked
 * yet (none came, or its producer is between exchange and link). The old
 * head is done with: the FIFO no longer holds it. Owner only.
 */
static weft__host_op *fifo_take(weft__host_queue *hq)
{
    weft__host_op *h = hq->head;
    weft__host_op *next = __atomic_load_n(&h->next, __ATOMIC_ACQUIRE);

    if (!next)
        return NULL;
    hq->head = next;
    if (h != &hq->stub)
        owner_recycle(hq, h);
    return next;
}

/*
 * Give hq up: 1 once it is idle (the caller touches it no more), 0 if an
 * op was pushed since the last taken (hq stays the caller's). Owner only.
 */
static int queue_release(weft__host_queue *hq)
{
    uint64_t expect = hq->taken << 1 | 1;

    return __atomic_compare_exchange_n(&hq->sched, &expect, hq->taken << 1, 0,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* ---- the runners (see weft__host_runners) ------------------------------ */

/* Under the lock: wake a sleeper if a queue waits and no runner looks. */
static void runners_wake(weft__host_runners *r)
{
    if (r->first && !__atomic_load_n(&r->nlooking, __ATOMIC_SEQ_CST) &&
        r->nsleeping > r->wakeups) {
        r->wakeups++;
        pthread_cond_signal(&r->wake);
    }
}

/*
 * Under the lock: hq goes to the end of the runnable list, or, for a queue
 * of high priority (desc.priority < 0), behind the high ones at its head.
 */
static void runners_append(weft__host_runners *r, weft__host_queue *hq)
{
    weft__host_queue *at = NULL;

    if (hq->base.desc.priority < 0)
        for (weft__host_queue *x = r->first; x && x->base.desc.priority < 0;
             x = x->run_next)
            at = x;
    if (hq->base.desc.priority < 0 && at != r->last) {
        hq->run_next = at ? at->run_next : r->first;
        if (at)
            at->run_next = hq;
        else
            r->first = hq;
    } else {
        hq->run_next = NULL;
        if (r->last)
            r->last->run_next = hq;
        else
            r->first = hq;
        r->last = hq;
    }
    __atomic_add_fetch(&r->nrunnable, 1, __ATOMIC_SEQ_CST);
}

/*
 * For an owner watching its empty FIFO while queues wait on the list: a
 * sleeping runner woken for each waiting queue that none is coming for
 * yet; whether every one has a runner coming (then the owner keeps its
 * queue), or none waits any more.
 */
static int runners_hand_on(weft__host_runners *r)
{
    int covered;

    pthread_mutex_lock(&r->lock);
    while (r->first && r->wakeups < r->nrunnable && r->nsleeping > r->wakeups) {
        r->wakeups++;
        pthread_cond_signal(&r->wake);
    }
    covered = !r->first || r->wakeups >= r->nrunnable;
    pthread_mutex_unlock(&r->lock);
    return covered;
}

/* hq (active, no runner's) becomes runnable. Any thread. */
static void runners_post(weft__host_runners *r, weft__host_queue *hq)
{
    pthread_mutex_lock(&r->lock);
    runners_append(r, hq);
    runners_wake(r);
    pthread_mutex_unlock(&r->lock);
}

/* A runner starts looking for work (see weft__host_runners). */
static void look_begin(weft__host_runners *r)
{
    __atomic_add_fetch(&r->nlooking, 1, __ATOMIC_SEQ_CST);
}

/*
 * A runner stops looking: it has an op to run. A post that found it
 * looking woke nobody: pass the wake-up on.
 */
static void look_end(weft__host_runners *r)
{
    __atomic_sub_fetch(&r->nlooking, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&r->nrunnable, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&r->lock);
        runners_wake(r);
        pthread_mutex_unlock(&r->lock);
    }
}

/*
 * The next queue for a looking runner: behind requeue (its own, still
 * active, or NULL), the first on the runnable list; it sleeps while there
 * is none. NULL: the runners stop.
 */
static weft__host_queue *runners_take(weft__host_runners *r,
                                      weft__host_queue *requeue)
{
    weft__host_queue *hq;

    pthread_mutex_lock(&r->lock);
    if (requeue)
        runners_append(r, requeue); /* no wake: this runner takes one */
    for (;;) {
        if ((hq = r->first)) {
            r->first = hq->run_next;
            if (!r->first)
                r->last = NULL;
            __atomic_sub_fetch(&r->nrunnable, 1, __ATOMIC_SEQ_CST);
            break;
        }
        if (r->stopping)
            break;
        __atomic_sub_fetch(&r->nlooking, 1, __ATOMIC_SEQ_CST);
        r->nsleeping++;
        while (!r->wakeups && !r->stopping)
            pthread_cond_wait(&r->wake, &r->lock);
        if (r->wakeups)
            r->wakeups--;
        r->nsleeping--;
        __atomic_add_fetch(&r->nlooking, 1, __ATOMIC_SEQ_CST);
    }
    pthread_mutex_unlock(&r->lock);
    return hq;
}

/* The owner took hq's stop: queue_release may go on. */
static void queue_stopped(weft__host_queue *hq)
{
    pthread_mutex_lock(&hq->lock);
    hq->stopped = 1;
    pthread_cond_broadcast(&hq->idle);
    pthread_mutex_unlock(&hq->lock);
}

/* The quantum (WEFT__HOST_QUANTUM_*) is over; counted while others wait. */
static int quantum_over(unsigned *ran, uint64_t *since)
{
    uint64_t now;

    if (++*ran >= WEFT__HOST_QUANTUM_OPS)
        return 1;
    now = weft__now_ns();
    if (!*since)
        *since = now;
    return now - *since >= WEFT__HOST_QUANTUM_NS;
}

/*
 * Run hq's ops, for the runner that took it (looking, and looking again
 * on return), until hq is given up: idle (NULL returned), parked on a
 * signal or stopped (NULL), or to go behind the queues that wait (hq
 * returned). The watch of an empty FIFO pauses a little, then yields the
 * core between looks: where threads outnumber cores, a watching runner
 * must not take the core of the thread it waits for. It counts as
 * looking from the yields on: an owner that catches up with its producer
 * for a few pauses writes nothing shared.
 */
static weft__host_queue *queue_run(weft__host_runners *r, weft__host_queue *hq)
{
    int looking = 1;
    unsigned idle = 0, ran = 0, handing = 0;
    uint64_t until = 0, since = 0;

    for (;;) {
        weft__host_op *op = hq->pending;

        if (op)
            hq->pending = NULL;
        else if ((op = fifo_take(hq)))
            hq->taken++;
        if (op) {
            if (looking)
                look_end(r);
            looking = 0;
            idle = 0;
            until = 0;
            handing = 0;
            if (op->kind == WEFT__HOST_OP_STOP) {
                look_begin(r);
                queue_stopped(hq);
                return NULL;
            }
            if (weft__host_op_run(hq, op)) {
                look_begin(r);
                return NULL; /* parked: the raise posts it */
            }
            __atomic_add_fetch(&hq->completed, 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&hq->syncers, __ATOMIC_SEQ_CST)) {
                pthread_mutex_lock(&hq->lock);
                pthread_cond_broadcast(&hq->idle);
                pthread_mutex_unlock(&hq->lock);
            }
            if (__atomic_load_n(&r->nrunnable, __ATOMIC_RELAXED) &&
                quantum_over(&ran, &since)) {
                look_begin(r);
                return queue_release(hq) ? NULL : hq;
            }
            continue;
        }
        /*
         * Others wait: a sleeping runner is woken for each while this one
         * watches on (looked at again every WEFT__HOST_PAUSES turns), so
         * that a runner stays with the queue it ran; with none asleep to
         * come, they are served rather than an empty FIFO watched.
         */
        if (__atomic_load_n(&r->nrunnable, __ATOMIC_SEQ_CST) &&
            (handing == 0 || ++handing > WEFT__HOST_PAUSES)) {
            handing = 1;
            if (!runners_hand_on(r)) {
                if (!looking)
                    look_begin(r);
                return queue_release(hq) ? NULL : hq;
            }
        }
        if (idle < WEFT__HOST_PAUSES) {
            idle++;
            cpu_relax();
            continue;
        }
        if (!looking)
            look_begin(r);
        looking = 1;
        /* Idle: the enqueuer may want what is spare now. */
        if (idle++ == WEFT__HOST_PAUSES)
            owner_hand_over(hq);
        uint64_t now = weft__now_ns();
        if (!until) {
            until = now + WEFT__HOST_SPIN_NS;
        } else if (now >= until) {
            if (queue_release(hq))
                return NULL;
            until = 0; /* an op came: watch on */
            idle = 0;
            continue;
        }
        sched_yield();
    }
}

static void *runner_main(void *arg)
{
    weft__host_runners *r = arg;
    weft__host_queue *hq, *requeue = NULL;

    look_begin(r);
    while ((hq = runners_take(r, requeue)))
        requeue = queue_run(r, hq);
    __atomic_sub_fetch(&r->nlooking, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

int weft__host_runners_init(weft__host_runners *r, unsigned size)
{
    int rc, stage = 0;

    memset(r, 0, sizeof *r);
    r->size = size;
    if (!(r->threads = weft__calloc(size, sizeof *r->threads)))
        return weft__error(WEFT_ENOMEM, "host: no memory for %u queue runners",
                           size);
    rc = pthread_mutex_init(&r->lock, NULL);
    if (rc == 0) {
        stage = 1;
        rc = pthread_cond_init(&r->wake, NULL);
    }
    if (rc == 0)
        return 0;
    if (stage >= 1)
        pthread_mutex_destroy(&r->lock);
    weft__free(r->threads);
    r->threads = NULL;
    return weft__host_os_error(WEFT_ENOMEM, rc,
                               "setting up the queue runners' lock");
}

/* Start every runner not started yet; those started stay on failure. */
static int runners_start(weft__host_runners *r)
{
    int rc = 0;

    pthread_mutex_lock(&r->lock);
    while (r->nthreads < r->size && rc == 0) {
        rc = weft__thread_start(&r->threads[r->nthreads], "weft-host-runner",
                                "host.pthread_create", runner_main, r);
        if (rc == 0)
            r->nthreads++;
    }
    pthread_mutex_unlock(&r->lock);
    if (rc != 0)
        return weft__host_os_error(WEFT_ENOMEM, rc,
                                   "starting a queue runner thread");
    return 0;
}

void weft__host_runners_fini(weft__host_runners *r)
{
    pthread_mutex_lock(&r->lock);
    weft__assert(!r->first && "host: a queue outlived its platform");
    r->stopping = 1;
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
    for (unsigned i = 0; i < r->nthreads; i++)
        pthread_join(r->threads[i], NULL);
    weft__free(r->threads);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
}

/* ---- queues ------------------------------------------------------------ */

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
    uint64_t was;

    /*
     * Counted first, before the exchange, so that whatever precedes op in
     * the FIFO was counted before it (a sync's target covers it). The
     * count also tells whether a runner has the queue: if not, the push
     * that sets active posts it, after the link (its runner need not wait
     * for it).
     */
    was = __atomic_fetch_add(&hq->sched, 2, __ATOMIC_SEQ_CST);
    __atomic_store_n(&op->next, NULL, __ATOMIC_RELAXED);
    prev = __atomic_exchange_n(&hq->tail, op, __ATOMIC_ACQ_REL);
    __atomic_store_n(&prev->next, op, __ATOMIC_RELEASE);
    if (!(was & 1) && !(__atomic_fetch_or(&hq->sched, 1, __ATOMIC_ACQ_REL) & 1))
        runners_post(hq->runners, hq);
}

int weft__host_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                            weft__queue **q)
{
    weft__host_platform *hp = (weft__host_platform *)ctx->dev->platform;
    weft__host_queue *hq;
    int rc, stage = 0;

    if ((rc = runners_start(&hp->runners)) < 0)
        return rc;
    if (!(hq = weft__calloc(1, sizeof *hq)))
        return weft__error(WEFT_ENOMEM, "host: no memory for a queue");
    rc = pthread_mutex_init(&hq->lock, NULL);
    if (rc == 0) {
        stage = 1;
        rc = pthread_cond_init(&hq->idle, NULL);
    }
    if (rc == 0) {
        hq->base.drv = &weft__driver_host;
        hq->base.ctx = ctx;
        hq->base.desc = *desc;
        hq->runners = &hp->runners;
        hq->head = hq->tail = &hq->stub;
        hq->stop.kind = WEFT__HOST_OP_STOP;
        *q = &hq->base;
        return 0;
    }
    if (stage >= 1)
        pthread_mutex_destroy(&hq->lock);
    weft__free(hq);
    return weft__host_os_error(WEFT_ENOMEM, rc, "setting up a queue's lock");
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
    uint64_t target = __atomic_load_n(&hq->sched, __ATOMIC_ACQUIRE) >> 1;

    if (__atomic_load_n(&hq->cap, __ATOMIC_ACQUIRE))
        return weft__error(WEFT_EINVAL,
                           "host: sync of a queue that takes part in a "
                           "capture (it runs nothing until the capture ends)");
    if (__atomic_load_n(&hq->completed, __ATOMIC_ACQUIRE) >= target)
        return weft__host_fail_take(&hq->failed);
    pthread_mutex_lock(&hq->lock);
    __atomic_add_fetch(&hq->syncers, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&hq->completed, __ATOMIC_SEQ_CST) < target)
        pthread_cond_wait(&hq->idle, &hq->lock);
    __atomic_sub_fetch(&hq->syncers, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&hq->lock);
    return weft__host_fail_take(&hq->failed);
}

/*
 * The queue drains (its stop runs after everything enqueued before), and
 * its last owner lets go of it, before its ops are freed.
 */
void weft__host_queue_release(weft__queue *q)
{
    weft__host_queue *hq = host_queue(q);

    if (__atomic_load_n(&hq->cap, __ATOMIC_ACQUIRE))
        weft__host_capture_queue_gone(hq);
    weft__host_queue_push_now(q, &hq->stop);
    pthread_mutex_lock(&hq->lock);
    while (!hq->stopped)
        pthread_cond_wait(&hq->idle, &hq->lock);
    pthread_mutex_unlock(&hq->lock);
    weft__assert(hq->head == &hq->stop && !hq->pending);
    weft__assert(hq->completed + 1 == hq->sched >> 1);
    ops_free(hq->spare);
    ops_free(hq->ready);
    ops_free(hq->cache);
    hq->head = hq->tail = &hq->stub;
    hq->spare = hq->ready = hq->cache = NULL;
    hq->nspare = 0;
    pthread_cond_destroy(&hq->idle);
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

static int rect_push(weft__queue *q, void *dst, const void *src,
                     const weft__rect *r)
{
    weft__host_op *op = op_new(q, WEFT__HOST_OP_COPY_RECT, "a block copy");

    if (!op)
        return WEFT_ENOMEM;
    op->u.rect.dst = dst;
    op->u.rect.src = src;
    op->u.rect.rect = *r;
    weft__host_queue_push(q, op);
    return 0;
}

int weft__host_copy_h2d_rect(weft__queue *q, weft__mem *dst, const void *src,
                             const weft__rect *r)
{
    return rect_push(q, mem_at(dst, 0), src, r);
}

int weft__host_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                             const weft__rect *r)
{
    return rect_push(q, dst, mem_at(src, 0), r);
}

/* Also copy_peer_rect, as copy_d2d. */
int weft__host_copy_d2d_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                             const weft__rect *r)
{
    return rect_push(q, mem_at(dst, 0), mem_at(src, 0), r);
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

int weft__host_native_enqueue(weft__queue *q, weft__native_fn *fn, void *user)
{
    weft__host_op *op = op_new(q, WEFT__HOST_OP_NATIVE, "a native call");

    if (!op)
        return WEFT_ENOMEM;
    op->u.job.native = fn;
    op->u.job.native_user = user;
    op->u.job.failed = &host_queue(q)->failed;
    op->u.job.total = 1;
    op->u.job.chunk = 1;
    op->u.job.nslots = 1;
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
