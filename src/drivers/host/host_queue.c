/*
 * Host queues and events. A queue is one worker thread that runs its FIFO
 * of operations in order; an event points at the signal of its latest
 * record, which the worker raises when it reaches the record operation,
 * i.e. once everything enqueued before it has run.
 */
#include "host_internal.h"

#include <errno.h>
#include <string.h>

/*
 * One lock and one condition for every signal of the process. A signal
 * raised wakes every thread waiting on any signal; host queues are few, and
 * this keeps a signal a plain refcounted struct that cannot fail to set up.
 */
static pthread_mutex_t signal_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t signal_raised = PTHREAD_COND_INITIALIZER;

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

static void op_run(weft__host_queue *hq, weft__host_op *op)
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
    }
}

/*
 * The worker leaves only when asked to stop and its FIFO is empty, so that
 * queue_release first drains the queue.
 */
static void *worker_main(void *arg)
{
    weft__host_queue *hq = arg;

    pthread_mutex_lock(&hq->lock);
    for (;;) {
        while (!hq->head && !hq->stopping)
            pthread_cond_wait(&hq->work, &hq->lock);
        weft__host_op *op = hq->head;
        if (!op)
            break;
        hq->head = op->next;
        if (!hq->head)
            hq->tail = &hq->head;
        pthread_mutex_unlock(&hq->lock);

        op_run(hq, op);
        weft__free(op);

        pthread_mutex_lock(&hq->lock);
        if (++hq->completed == hq->submitted)
            pthread_cond_broadcast(&hq->idle);
    }
    pthread_mutex_unlock(&hq->lock);
    return NULL;
}

void weft__host_queue_push(weft__queue *q, weft__host_op *op)
{
    weft__host_queue *hq = host_queue(q);

    op->next = NULL;
    pthread_mutex_lock(&hq->lock);
    *hq->tail = op;
    hq->tail = &op->next;
    hq->submitted++;
    pthread_cond_signal(&hq->work);
    pthread_mutex_unlock(&hq->lock);
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
        hq->tail = &hq->head;
        if (weft__fault("host.pthread_create"))
            rc = EAGAIN;
        else
            rc = pthread_create(&hq->worker, NULL, worker_main, hq);
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

int weft__host_queue_sync(weft__queue *q)
{
    weft__host_queue *hq = host_queue(q);

    pthread_mutex_lock(&hq->lock);
    while (hq->completed != hq->submitted)
        pthread_cond_wait(&hq->idle, &hq->lock);
    pthread_mutex_unlock(&hq->lock);
    return 0;
}

void weft__host_queue_release(weft__queue *q)
{
    weft__host_queue *hq = host_queue(q);

    pthread_mutex_lock(&hq->lock);
    hq->stopping = 1;
    pthread_cond_signal(&hq->work);
    pthread_mutex_unlock(&hq->lock);
    pthread_join(hq->worker, NULL);
    weft__assert(hq->head == NULL && hq->completed == hq->submitted);
    pthread_cond_destroy(&hq->idle);
    pthread_cond_destroy(&hq->work);
    pthread_mutex_destroy(&hq->lock);
}

/* ---- copies, fill, host functions -------------------------------------- */

static weft__host_op *op_new(weft__host_op_kind kind, const char *what)
{
    weft__host_op *op = weft__malloc(sizeof *op);

    if (!op) {
        weft__error(WEFT_ENOMEM, "host: no memory to enqueue %s", what);
        return NULL;
    }
    memset(op, 0, sizeof *op);
    op->kind = kind;
    return op;
}

static int copy_push(weft__queue *q, void *dst, const void *src, size_t size,
                     const char *what)
{
    weft__host_op *op = op_new(WEFT__HOST_OP_COPY, what);

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
    op = op_new(WEFT__HOST_OP_FILL, "a fill");
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
    weft__host_op *op = op_new(WEFT__HOST_OP_HOST_FN, "a host function");

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
    weft__host_signal *s = weft__malloc(sizeof *s), *old;
    weft__host_op *op =
        s ? op_new(WEFT__HOST_OP_RECORD, "an event record") : NULL;

    if (!op) {
        weft__free(s);
        return weft__error(WEFT_ENOMEM, "host: no memory to record an event");
    }
    s->refs = 2; /* the event's and the record operation's */
    s->done = 0;
    s->time_ns = 0;
    op->u.signal = s;
    /*
     * Enqueue first: a wait that picks up the new signal must find its
     * record already queued, or a queue could wait on work not yet asked.
     */
    weft__host_queue_push(q, op);
    pthread_mutex_lock(&signal_lock);
    old = he->signal;
    he->signal = s;
    pthread_mutex_unlock(&signal_lock);
    signal_release(old);
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

int weft__host_queue_wait_event(weft__queue *q, weft__event *ev)
{
    weft__host_signal *s = event_signal(host_event(ev));
    weft__host_op *op;

    if (!s || __atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
        /* Never recorded or already complete: nothing to wait for. */
        signal_release(s);
        return 0;
    }
    op = op_new(WEFT__HOST_OP_WAIT, "an event wait");
    if (!op) {
        signal_release(s);
        return WEFT_ENOMEM;
    }
    op->u.signal = s; /* the reference passes to the operation */
    weft__host_queue_push(q, op);
    return 0;
}

int weft__host_event_query(weft__event *ev)
{
    weft__host_event *he = host_event(ev);
    int rc;

    pthread_mutex_lock(&signal_lock);
    rc = !he->signal || he->signal->done ? 0 : WEFT_ENOTREADY;
    pthread_mutex_unlock(&signal_lock);
    return rc;
}

int weft__host_event_sync(weft__event *ev)
{
    weft__host_signal *s = event_signal(host_event(ev));

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

    /* Pending records and waits keep their own references. */
    pthread_mutex_lock(&signal_lock);
    s = he->signal;
    he->signal = NULL;
    pthread_mutex_unlock(&signal_lock);
    signal_release(s);
    weft__free(he);
}
