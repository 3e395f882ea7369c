/*
 * Queues of the sim driver: engines in virtual time, the worker threads
 * that run effects, submission (an operation placed in virtual time and
 * appended to the record) and the host's clock. sim.c describes the model.
 */
#include "sim_internal.h"

#include "../../base/os.h"

#include <errno.h>
#include <string.h>

/* ---- virtual time ------------------------------------------------------ */

#if WEFT_DEBUG >= 2
static int sim_engine_valid(const sim_engine *e)
{
    for (unsigned i = 0; i < e->n; i++) {
        if (e->span[i].start >= e->span[i].end || e->span[i].start < e->floor)
            return 0;
        if (i && e->span[i - 1].end >= e->span[i].start)
            return 0;
    }
    return e->n <= SIM_SPANS;
}
#endif

/* First span that ends after t (ends increase along the array). */
static unsigned sim_engine_after(const sim_engine *e, uint64_t t)
{
    unsigned lo = 0, hi = e->n;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;

        if (e->span[mid].end <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * Make room for one more span by forgetting the older half: their gaps can
 * no longer be backfilled, so nothing may start before the last one's end.
 */
static void sim_engine_compact(sim_engine *e)
{
    unsigned drop = SIM_SPANS / 2;

    if (e->n < SIM_SPANS)
        return;
    e->floor = e->span[drop - 1].end;
    memmove(e->span, e->span + drop, (e->n - drop) * sizeof e->span[0]);
    e->n -= drop;
}

/* Earliest start >= ready at which e is idle for dur. */
static uint64_t sim_engine_fit(const sim_engine *e, uint64_t ready,
                               uint64_t dur)
{
    uint64_t t = WEFT__MAX(ready, e->floor);

    for (unsigned i = sim_engine_after(e, t); i < e->n; i++) {
        if (e->span[i].start >= t + dur)
            break;
        t = e->span[i].end;
    }
    return t;
}

/* Mark [start, end) busy; it lies in a gap that sim_engine_fit found. */
static void sim_engine_take(sim_engine *e, uint64_t start, uint64_t end)
{
    unsigned i;

    if (end == start)
        return;
    weft__assert_internal(e->n < SIM_SPANS);
    i = sim_engine_after(e, start);
    weft__assert_internal(i == e->n || e->span[i].start >= end);
    if (i > 0 && e->span[i - 1].end == start) {
        e->span[i - 1].end = end;
        if (i < e->n && e->span[i].start == end) {
            e->span[i - 1].end = e->span[i].end;
            memmove(e->span + i, e->span + i + 1,
                    (e->n - i - 1) * sizeof e->span[0]);
            e->n--;
        }
    } else if (i < e->n && e->span[i].start == end) {
        e->span[i].start = start;
    } else {
        memmove(e->span + i + 1, e->span + i, (e->n - i) * sizeof e->span[0]);
        e->span[i].start = start;
        e->span[i].end = end;
        e->n++;
    }
    weft__assert_expensive(sim_engine_valid(e));
}

/* ---- the worker -------------------------------------------------------- */

static void sim_work_run(sim_work *w)
{
    weft_host_group g;

    switch (w->kind) {
    case WEFT__SIM_H2D:
    case WEFT__SIM_D2H:
    case WEFT__SIM_PEER:
    case WEFT__SIM_D2D:
        if (w->rect_on) { /* the sides are disjoint (rect.c) */
            const weft__rect *r = &w->rect;

            for (size_t z = 0; z < r->depth; z++)
                for (size_t y = 0; y < r->height; y++)
                    memcpy(w->dst + r->dst.off + z * r->dst.slice_pitch +
                               y * r->dst.row_pitch,
                           w->src + r->src.off + z * r->src.slice_pitch +
                               y * r->src.row_pitch,
                           r->width);
        } else if (w->kind == WEFT__SIM_D2D) {
            memmove(w->dst, w->src, w->size);
        } else {
            memcpy(w->dst, w->src, w->size);
        }
        break;
    case WEFT__SIM_FILL:
        if (w->pattern_size == 1)
            memset(w->dst, w->pattern[0], w->size);
        else
            for (size_t i = 0; i < w->size; i += w->pattern_size)
                memcpy(w->dst + i, w->pattern, w->pattern_size);
        break;
    case WEFT__SIM_KERNEL:
        memcpy(g.groups, w->grid.groups, sizeof g.groups);
        memcpy(g.group_size, w->grid.group_size, sizeof g.group_size);
        for (uint32_t z = 0; z < g.groups[2]; z++)
            for (uint32_t y = 0; y < g.groups[1]; y++)
                for (uint32_t x = 0; x < g.groups[0]; x++) {
                    g.group[0] = x;
                    g.group[1] = y;
                    g.group[2] = z;
                    w->kfn(&g, w->argv);
                }
        break;
    case WEFT__SIM_HOST_FN:
        w->fn(w->user);
        break;
    case WEFT__SIM_EVENT_RECORD:
    case WEFT__SIM_EVENT_WAIT:
        break;
    }
}

/* Under the lock: has q's operation with sequence number seq completed? */
static int sim_queue_done(const sim_queue *q, uint64_t seq)
{
    return !q->pending || seq < q->pending->seq;
}

static void *sim_worker(void *arg)
{
    sim_queue *q = arg;
    sim_platform *p = sim_ctx_platform(q->base.ctx);
    sim_work *w;

    sim_lock(p);
    for (;;) {
        while (!q->pending && !q->stop)
            pthread_cond_wait(&q->work_cv, &p->lock);
        w = q->pending;
        if (!w)
            break;
        if (w->kind == WEFT__SIM_EVENT_WAIT) {
            while (!w->marker->done)
                pthread_cond_wait(&p->done_cv, &p->lock);
        } else if (w->kind == WEFT__SIM_EVENT_RECORD) {
            w->marker->done = 1;
        } else {
            /* Only this worker removes the head, so w stays put unlocked. */
            sim_unlock(p);
            sim_work_run(w);
            sim_lock(p);
        }
        sim_marker_unref(w->marker);
        q->pending = w->next;
        if (!q->pending)
            q->pending_tail = NULL;
        pthread_cond_broadcast(&p->done_cv);
        weft__free(w);
    }
    sim_unlock(p);
    return NULL;
}

/* ---- the host's clock -------------------------------------------------- */

/*
 * The calling thread as the model sees it: the driver interface names no
 * calling thread, yet each has a clock of its own (sim.c, "The host's
 * clock"). platform, ns: the platform it last waited on, by id rather than
 * address so that a platform later made at the same address starts
 * afresh, and the virtual time it saw there. tag: its name in the check's
 * log (check=1), unique in the process, given at its first checked
 * operation (0 until then).
 */
static _Thread_local struct {
    uint64_t platform;
    uint64_t ns;
    uint64_t tag;
} sim_host;
static uint64_t sim_host_tags; /* atomic: the last tag handed out */

uint64_t weft__sim_host_now(const sim_platform *p)
{
    return sim_host.platform == p->id ? sim_host.ns : 0;
}

/* The calling thread has seen virtual time t pass on p. */
void weft__sim_host_saw(const sim_platform *p, uint64_t t)
{
    if (sim_host.platform != p->id) {
        sim_host.platform = p->id;
        sim_host.ns = 0;
    }
    sim_host.ns = WEFT__MAX(sim_host.ns, t);
}

uint64_t weft__sim_host_seen(const weft__device *dev)
{
    return weft__sim_host_now((const sim_platform *)dev->platform);
}

void weft__sim_host_join(const weft__device *dev, uint64_t seen)
{
    weft__sim_host_saw((const sim_platform *)dev->platform, seen);
}

/* ---- submission -------------------------------------------------------- */

/* Under the lock: room in the record for n more entries. */
int weft__sim_record_reserve(sim_platform *p, size_t n)
{
    size_t cap = p->caprecord ? p->caprecord : 256;
    weft__sim_op *r;

    if (p->nrecord + n <= p->caprecord)
        return 0;
    while (cap < p->nrecord + n)
        cap *= 2;
    r = weft__realloc(p->record, cap * sizeof *r);
    if (!r)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for the record");
    p->record = r;
    p->caprecord = cap;
    return 0;
}

/* Under the lock: start q's worker if it does not run yet. */
int weft__sim_queue_start(sim_queue *q)
{
    int e;

    if (q->started)
        return 0;
    e = weft__thread_start(&q->worker, "weft-sim-queue", "sim.pthread_create",
                           sim_worker, q);
    if (e)
        return weft__sim_pthread_fail("pthread_create", e);
    q->started = 1;
    return 0;
}

static weft__block sim_access_block(const sim_access *a)
{
    weft__block b = {(uintptr_t)a->lo, a->len, 1, 1, a->len, a->len};

    if (a->height * a->depth > 1) {
        b.width = a->width;
        b.height = a->height;
        b.depth = a->depth;
        b.row_pitch = a->row_pitch;
        b.slice_pitch = a->slice_pitch;
    }
    return b;
}

/* Bounding ranges that meet: do the bytes (a block's rows) meet? */
static int sim_access_overlap(const sim_access *x, const sim_access *y)
{
    weft__block a, b;

    if (x->height * x->depth <= 1 && y->height * y->depth <= 1)
        return 1;
    a = sim_access_block(x);
    b = sim_access_block(y);
    return weft__block_overlap(&a, &b);
}

/*
 * check=1, under the lock: op, running [start, end) in virtual time,
 * touches acc. An access that conflicts with an earlier one (the same
 * bytes, one of them a write) must start after that one ended: every
 * dependency moves a queue's ready time past the end of what it waits
 * for, so a conflicting operation that starts before the earlier one
 * ends was ordered after it by nothing. Each such pair is a hazard:
 * counted, and the first ones logged. Only operations one thread submitted
 * are compared: each thread has a clock of its own, and an order made on
 * the host between threads (a lock, a join) is not seen here.
 */
static void sim_check(sim_platform *p, const weft__sim_op *op,
                      const sim_access *acc, unsigned nacc)
{
    size_t n = WEFT__MIN(p->nlog, (size_t)SIM_LOG);
    uint64_t self;

    if (!sim_host.tag)
        sim_host.tag = __atomic_add_fetch(&sim_host_tags, 1, __ATOMIC_RELAXED);
    self = sim_host.tag;

    for (unsigned a = 0; a < nacc; a++) {
        const sim_access *x = &acc[a];

        for (size_t i = 0; i < n; i++) {
            const sim_access *y = &p->log[i];

            if (y->thread != self || op->start_ns >= y->end ||
                (!x->write && !y->write) || x->lo >= y->lo + y->len ||
                y->lo >= x->lo + x->len || !sim_access_overlap(x, y))
                continue;
            if (p->hazards++ < 8)
                weft__warn(
                    "sim",
                    "hazard: operation %llu (%s) %s bytes that "
                    "operation %llu %s, from %llu ns, before that "
                    "ended at %llu ns: nothing orders them",
                    (unsigned long long)op->seq, weft__sim_op_name(op->kind),
                    x->write ? "writes" : "reads", (unsigned long long)y->seq,
                    y->write ? "writes" : "reads",
                    (unsigned long long)op->start_ns,
                    (unsigned long long)y->end);
            break;
        }
    }
    for (unsigned a = 0; a < nacc; a++) {
        sim_access *y = &p->log[p->nlog++ % SIM_LOG];

        *y = acc[a];
        y->start = op->start_ns;
        y->end = op->end_ns;
        y->seq = op->seq;
        y->thread = self;
    }
}

/*
 * Under the lock: place op (kind and op-specific fields set) of duration dur
 * on q, on the earliest of engines [first, first + count) (count 0: no
 * engine), append it to the record and w (if any) to q's pending items,
 * starting q's worker if need be; op->seq gets the sequence number. On
 * failure nothing changed.
 */
int weft__sim_submit(sim_queue *q, weft__sim_op *op, uint64_t dur,
                     unsigned first, unsigned count, sim_work *w,
                     const sim_access *acc, unsigned nacc)
{
    sim_platform *p = sim_ctx_platform(q->base.ctx);
    sim_device *d = sim_dev(q->base.ctx->dev);
    sim_engine *best = NULL;
    uint64_t ready = WEFT__MAX(q->ready, weft__sim_host_now(p)), start = ready;
    int rc;

    if ((rc = weft__sim_record_reserve(p, 1)) < 0 ||
        (w && (rc = weft__sim_queue_start(q)) < 0))
        return rc;
    for (unsigned i = first; i < first + count; i++) {
        sim_engine *e = &d->engine[i];
        uint64_t t;

        sim_engine_compact(e);
        t = sim_engine_fit(e, ready, dur);
        if (!best || t < start) {
            best = e;
            start = t;
            op->engine = (int)i;
        }
    }
    if (best)
        sim_engine_take(best, start, start + dur);
    else
        op->engine = WEFT__SIM_ENGINE_NONE;
    op->seq = ++p->seq;
    op->device = (int)q->base.ctx->dev->driver_index;
    op->queue = q->id;
    op->role = q->base.desc.role;
    op->priority = q->base.desc.priority;
    op->ready_ns = ready;
    op->start_ns = start;
    op->end_ns = start + dur;
    q->ready = op->end_ns;
    q->last_seq = op->seq;
    p->horizon = WEFT__MAX(p->horizon, op->end_ns);
    p->record[p->nrecord++] = *op;
    if (p->log && nacc)
        sim_check(p, op, acc, nacc);
    if (w) {
        w->seq = op->seq;
        w->kind = op->kind;
        w->next = NULL;
        if (q->pending_tail)
            q->pending_tail->next = w;
        else
            q->pending = w;
        q->pending_tail = w;
        pthread_cond_signal(&q->work_cv);
    }
    return 0;
}

/* ---- queues ------------------------------------------------------------ */

int weft__sim_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                           weft__queue **out)
{
    sim_platform *p = sim_ctx_platform(ctx);
    sim_queue *q = weft__calloc(1, sizeof *q);
    int e;

    if (!q)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a queue");
    e = weft__fault("sim.pthread_cond_init")
            ? ENOMEM
            : pthread_cond_init(&q->work_cv, NULL);
    if (e) {
        weft__free(q);
        return weft__sim_pthread_fail("pthread_cond_init", e);
    }
    sim_lock(p);
    q->id = ++p->next_queue;
    sim_unlock(p);
    *out = &q->base;
    return 0;
}

/* Wait for what q has enqueued; the lock is held and is released. */
static void sim_queue_drain(sim_platform *p, sim_queue *q)
{
    uint64_t seq, t;

    seq = q->last_seq;
    t = q->ready;
    while (!sim_queue_done(q, seq))
        pthread_cond_wait(&p->done_cv, &p->lock);
    sim_unlock(p);
    weft__sim_host_saw(p, t);
}

int weft__sim_queue_sync(weft__queue *wq)
{
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);

    sim_lock(p);
    if (q->cap) {
        sim_unlock(p);
        return weft__error(WEFT_EINVAL,
                           "sim: queue_sync of a queue on %s that takes part "
                           "in a capture (its work is recorded, not run)",
                           wq->ctx->dev->name);
    }
    sim_queue_drain(p, q);
    return 0;
}

void weft__sim_queue_release(weft__queue *wq)
{
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);

    sim_lock(p);
    if (q->cap)
        weft__sim_capture_forget(p, q);
    sim_queue_drain(p, q);
    if (q->started) {
        sim_lock(p);
        q->stop = 1;
        pthread_cond_signal(&q->work_cv);
        sim_unlock(p);
        pthread_join(q->worker, NULL);
    }
    weft__assert(!q->pending);
    pthread_cond_destroy(&q->work_cv);
}
