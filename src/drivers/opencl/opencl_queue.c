/*
 * Contexts, queues, events and host functions of the OpenCL driver, and
 * the bridges that order work across contexts.
 */
#include "opencl_internal.h"

#include "../../base/os.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- contexts and queues ----------------------------------------------- */

static int ocl_signaller_join(const char *devname);
static void ocl_signaller_leave(void);
static void ocl_failure_forget(uint64_t queue, uint64_t ctx);

/* Ids of contexts and queues in failure notes; 0 is none. */
static uint64_t ocl_next_id;

static uint64_t ocl_new_id(void)
{
    return __atomic_add_fetch(&ocl_next_id, 1, __ATOMIC_RELAXED);
}

/* ---- failures past gates and bridges (opencl_internal.h) --------------- */

/*
 * One note per queue that met a failure: the context's ticks from `from`
 * up to `until` (UINT64_MAX: not cleared) are covered. Notes are made by
 * the threads that complete gates and bridges (a queue's host-function
 * worker, the signaller) before they complete the user event, so a command
 * that waited on it finds the note once it is complete. Ids, not pointers:
 * a note may outlive its context. `count` (notes held) is the only word
 * the common path reads, with acquire; the rest is guarded by lock.
 */
typedef struct ocl_failure {
    struct ocl_failure *next;
    uint64_t ctx, queue;
    uint64_t from, until;
    cl_int status;
} ocl_failure;

static struct {
    pthread_mutex_t lock;
    ocl_failure *head;
    unsigned count;
} ocl_fail = {.lock = PTHREAD_MUTEX_INITIALIZER};

ocl_mark weft__ocl_tick(ocl_queue *q)
{
    ocl_context *c = ocl_ctx(q->base.ctx);
    ocl_mark m = {c->id, q->id, 0};

    m.tick = __atomic_add_fetch(&c->ticks, 1, __ATOMIC_RELAXED);
    q->tick = m.tick;
    return m;
}

/* A failure (status < 0) reached at m: noted, or logged if it cannot be. */
static void ocl_failure_note(const ocl_mark *m, cl_int status)
{
    ocl_failure *f;

    pthread_mutex_lock(&ocl_fail.lock);
    for (f = ocl_fail.head; f && f->queue != m->queue; f = f->next)
        ;
    if (!f && (f = weft__calloc(1, sizeof *f)) != NULL) {
        f->ctx = m->ctx;
        f->queue = m->queue;
        f->until = 0;
        f->next = ocl_fail.head;
        ocl_fail.head = f;
        __atomic_add_fetch(&ocl_fail.count, 1, __ATOMIC_RELEASE);
    }
    if (f && f->until != UINT64_MAX) {
        /* none, or cleared: a new failure */
        f->from = m->tick;
        f->until = UINT64_MAX;
        f->status = status;
    } else if (f && m->tick < f->from) {
        f->from = m->tick;
    }
    pthread_mutex_unlock(&ocl_fail.lock);
    if (!f)
        weft__warn("opencl",
                   "a failure (%d) past a gate cannot be noted: out of "
                   "memory; the work after it may be reported complete",
                   (int)status);
}

/* The status of the failure covering tick of context ctx, or 0. */
static cl_int ocl_failure_covers(uint64_t ctx, uint64_t tick)
{
    cl_int status = 0;

    if (!ctx || !__atomic_load_n(&ocl_fail.count, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&ocl_fail.lock);
    for (ocl_failure *f = ocl_fail.head; f && !status; f = f->next)
        if (f->ctx == ctx && f->from <= tick && tick < f->until)
            status = f->status;
    pthread_mutex_unlock(&ocl_fail.lock);
    return status;
}

/*
 * The failure covering a command of queue (tick: its tick, or the queue's
 * last) as the weft error it maps to, the detail naming what (fmt, ...);
 * 0 if none. A report through the noted queue clears its note from the
 * context's next tick on.
 */
static int ocl_failure_report(ocl_context *c, uint64_t queue, uint64_t tick,
                              const char *fmt, ...) WEFT__PRINTF(4, 5);
static int ocl_failure_report(ocl_context *c, uint64_t queue, uint64_t tick,
                              const char *fmt, ...)
{
    cl_int status = 0;
    char what[256];
    va_list ap;

    if (!tick || !__atomic_load_n(&ocl_fail.count, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&ocl_fail.lock);
    for (ocl_failure *f = ocl_fail.head; f; f = f->next) {
        if (f->ctx != c->id || tick < f->from || tick >= f->until)
            continue;
        if (!status)
            status = f->status;
        if (f->queue == queue)
            f->until = __atomic_add_fetch(&c->ticks, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&ocl_fail.lock);
    if (!status)
        return 0;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return weft__ocl_fail(status,
                          "%s: work it comes after failed on %s (status %d, "
                          "passed on by a gate or a bridge)",
                          what, c->base.dev->name, (int)status);
}

/*
 * The notes of a queue (id queue) or of a context (id ctx; queue 0) that
 * is released: nothing of it is waited for now.
 */
static void ocl_failure_forget(uint64_t queue, uint64_t ctx)
{
    ocl_failure **pf = &ocl_fail.head, *gone = NULL;

    if (!__atomic_load_n(&ocl_fail.count, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&ocl_fail.lock);
    while (*pf) {
        ocl_failure *f = *pf;

        if (queue ? f->queue == queue : f->ctx == ctx) {
            *pf = f->next;
            f->next = gone;
            gone = f;
            __atomic_sub_fetch(&ocl_fail.count, 1, __ATOMIC_RELEASE);
        } else {
            pf = &f->next;
        }
    }
    pthread_mutex_unlock(&ocl_fail.lock);
    while (gone) {
        ocl_failure *next = gone->next;

        weft__free(gone);
        gone = next;
    }
}

/*
 * A status for what completes at src: its own (an implementation's
 * failure), else a failure noted before it (from), else injected by a
 * test at site; CL_COMPLETE otherwise.
 */
static cl_int ocl_failure_of(cl_int status, const ocl_mark *from,
                             const char *site)
{
    if (status >= 0 && from)
        status = ocl_failure_covers(from->ctx, from->tick);
    if (status >= 0 && weft__fault(site))
        status = CL_OUT_OF_RESOURCES;
    return status < 0 ? status : CL_COMPLETE;
}

static void CL_CALLBACK ocl_context_notify(const char *info, const void *priv,
                                           size_t cb, void *user)
{
    (void)priv;
    (void)cb;
    weft__warn("opencl", "%s: %s", ((ocl_device *)user)->base.name, info);
}

/*
 * An in-order queue. priority is -1 (high) or 0 (default) where the device
 * has priority hints.
 */
static cl_command_queue ocl_new_queue(ocl_device *d, cl_context ctx,
                                      cl_command_queue_properties props,
                                      int priority, cl_int *rc)
{
    if (d->new_queues) {
        cl_queue_properties p[5];
        unsigned i = 0;

        p[i++] = CL_QUEUE_PROPERTIES;
        p[i++] = props;
        if (priority < 0 && d->priorities) {
            p[i++] = CL_QUEUE_PRIORITY_KHR;
            p[i++] = CL_QUEUE_PRIORITY_HIGH_KHR;
        }
        p[i] = 0;
        return OCL_NEW(
            "clCreateCommandQueueWithProperties", *rc,
            weft__cl.CreateCommandQueueWithProperties(ctx, d->id, p, rc));
    }
    return OCL_NEW("clCreateCommandQueue", *rc,
                   weft__cl.CreateCommandQueue(ctx, d->id, props, rc));
}

int weft__ocl_context_create(weft__device *dev, weft__context **out)
{
    ocl_device *d = ocl_dev(dev);
    ocl_platform *p = (ocl_platform *)dev->platform;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     (cl_context_properties)p->id, 0};
    ocl_context *c;
    cl_int rc;
    int err;

    if (!(c = weft__calloc(1, sizeof *c)))
        return weft__error(WEFT_ENOMEM, "opencl: context");
    if ((err = weft__ocl_mutex_init(&c->lock)) < 0) {
        weft__free(c);
        return err;
    }
    if (weft__fault("opencl.pthread_cond_init") ||
        pthread_cond_init(&c->idle, NULL) != 0) {
        pthread_mutex_destroy(&c->lock);
        weft__free(c);
        return weft__error(WEFT_ENOMEM, "opencl: pthread_cond_init failed");
    }
    if ((err = ocl_signaller_join(dev->name)) < 0) {
        pthread_cond_destroy(&c->idle);
        pthread_mutex_destroy(&c->lock);
        weft__free(c);
        return err;
    }
    c->dev = d->id;
    c->id = ocl_new_id();
    c->cl = OCL_NEW(
        "clCreateContext", rc,
        weft__cl.CreateContext(props, 1, &d->id, ocl_context_notify, d, &rc));
    if (!c->cl) {
        err = weft__ocl_fail(rc, "clCreateContext: on %s", dev->name);
        goto fail;
    }
    if (!(c->mapq = ocl_new_queue(d, c->cl, 0, 0, &rc)) ||
        !(c->aux = ocl_new_queue(d, c->cl, 0, 0, &rc))) {
        err = weft__ocl_fail(rc, "clCreateCommandQueue: internal queue on %s",
                             dev->name);
        goto fail;
    }
    *out = &c->base;
    return 0;
fail:
    if (c->mapq)
        ocl_release_commandqueue(c->mapq);
    if (c->cl)
        ocl_release_context(c->cl);
    ocl_signaller_leave();
    pthread_cond_destroy(&c->idle);
    pthread_mutex_destroy(&c->lock);
    weft__free(c);
    return err;
}

void weft__ocl_context_destroy(weft__context *ctx)
{
    ocl_context *c = ocl_ctx(ctx);
    ocl_bounce *b;

    /*
     * The halves of peer copies on aux are done once it is finished; their
     * completion callbacks may still be returning bounce buffers.
     */
    weft__cl.Finish(c->aux);
    pthread_mutex_lock(&c->lock);
    if (c->bounce_out > 0)
        weft__debug("opencl", "%s: waiting for %ld bounce buffers",
                    ctx->dev->name, c->bounce_out);
    while (c->bounce_out > 0)
        pthread_cond_wait(&c->idle, &c->lock);
    b = c->bounce_free;
    c->bounce_free = NULL;
    c->nbounce_free = 0;
    pthread_mutex_unlock(&c->lock);
    while (b) {
        ocl_bounce *next = b->next;

        weft__ocl_bounce_drop(c, b);
        b = next;
    }
    weft__debug("opencl", "%s: finishing the map queue", ctx->dev->name);
    weft__cl.Finish(c->mapq);
    ocl_release_commandqueue(c->aux);
    ocl_release_commandqueue(c->mapq);
    weft__debug("opencl", "%s: releasing the context", ctx->dev->name);
    ocl_release_context(c->cl);
    ocl_failure_forget(0, c->id);
    weft__debug("opencl", "%s: leaving the event thread", ctx->dev->name);
    ocl_signaller_leave();
    weft__debug("opencl", "%s: context released", ctx->dev->name);
    pthread_cond_destroy(&c->idle);
    pthread_mutex_destroy(&c->lock);
    weft__free(c);
}

/*
 * Queues profile whenever the device can: timing is then available on every
 * queue, as on CUDA, and the cost (a timestamp per command) is small next to
 * a command's launch cost on the implementations weft knows.
 */
int weft__ocl_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                           weft__queue **out)
{
    ocl_device *d = ocl_ctx_dev(ctx);
    ocl_queue *q;
    cl_int rc;

    int err;

    if (!(q = weft__calloc(1, sizeof *q)))
        return weft__error(WEFT_ENOMEM, "opencl: queue");
    if ((err = weft__ocl_mutex_init(&q->lock)) < 0) {
        weft__free(q);
        return err;
    }
    q->cl = ocl_new_queue(d, ocl_ctx(ctx)->cl,
                          d->profiling ? CL_QUEUE_PROFILING_ENABLE : 0,
                          desc ? desc->priority : 0, &rc);
    if (!q->cl) {
        pthread_mutex_destroy(&q->lock);
        weft__free(q);
        return weft__ocl_fail(rc, "clCreateCommandQueue: on %s",
                              ctx->dev->name);
    }
    q->id = ocl_new_id();
    *out = &q->base;
    return 0;
}

/*
 * Host functions run on weft's worker threads and the thread that waits
 * learns of their end through the OpenCL implementation, whose own
 * synchronisation the memory model (and ThreadSanitizer) cannot see. Each
 * worker bumps this counter with release after a host function returns,
 * and every wait that can observe a host function's end loads it with
 * acquire: what the function wrote is then ordered before the waiter's
 * next reads.
 */
static unsigned long ocl_host_epoch;

static void ocl_host_acquire(void)
{
    (void)__atomic_load_n(&ocl_host_epoch, __ATOMIC_ACQUIRE);
}

/*
 * The failure that q's work up to its last ticked command comes after,
 * reported once: a sync with nothing ticked since the one that reported
 * it (a second wait for the same work) finds nothing new.
 */
static int ocl_queue_failure(ocl_queue *q)
{
    int err;

    if (q->tick == q->told)
        return 0;
    err = ocl_failure_report(ocl_ctx(q->base.ctx), q->id, q->tick,
                             "queue on %s", ocl_qname(&q->base));
    if (err < 0)
        q->told = q->tick;
    return err;
}

int weft__ocl_queue_sync(weft__queue *q)
{
    cl_int rc;

    /* What a capture recorded has not run: there is nothing to wait for. */
    if (((ocl_queue *)q)->cap)
        return weft__ocl_capture_refuse((ocl_queue *)q, "a wait by the host");
    rc = OCL("clFinish", weft__cl.Finish(((ocl_queue *)q)->cl));

    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clFinish: queue on %s", ocl_qname(q));
    ocl_host_acquire();
    return ocl_queue_failure((ocl_queue *)q);
}

static void ocl_worker_stop(ocl_host_worker *w);

/*
 * After clFinish every host function has run (each one gates the queue),
 * so the worker has nothing left but to exit.
 */
void weft__ocl_queue_release(weft__queue *q)
{
    ocl_queue *oq = (ocl_queue *)q;

    weft__cl.Finish(oq->cl);
    if (oq->worker)
        ocl_worker_stop(oq->worker);
    oq->worker = NULL;
    ocl_release_commandqueue(oq->cl);
    oq->cl = NULL;
    weft__free(oq->waits);
    oq->waits = NULL;
    oq->nwaits = oq->cap_waits = 0;
    ocl_failure_forget(oq->id, 0);
    pthread_mutex_destroy(&oq->lock);
}

/*
 * Submit what is queued on q. Implementations may hold commands back until
 * a flush (NVIDIA's does), and an event only completes once its command
 * was submitted: every event that another queue, a callback or a polling
 * host depends on must have its queue flushed. The commands are queued
 * already, so a failed flush is only reported in the log.
 */
void weft__ocl_flush(cl_command_queue q)
{
    cl_int rc = weft__cl.Flush(q);

    if (rc != CL_SUCCESS)
        weft__warn("opencl", "clFlush failed (%d)", (int)rc);
}

/* ---- bridges between contexts ------------------------------------------ */

/*
 * Bridge completions are delivered by one driver thread, the signaller:
 * the callback on the source event only queues them. Setting a user event
 * may run dependent work, and its callbacks, inline in the calling thread;
 * done from a callback, that would nest one implementation's callback in
 * another's (or in its own), which implementations do not all survive (a
 * hang was seen between NVIDIA's and PoCL's). The signaller runs while any
 * context lives; it exits once none does and no bridge is pending.
 */
typedef struct ocl_signal {
    struct ocl_signal *next;
    cl_event user; /* the bridge's reference */
    cl_int status;
    unsigned has_from, has_into; /* from and into are set */
    ocl_mark from, into;         /* as weft__ocl_bridge's */
    struct ocl_signal *armed;    /* the program's events: the armed list */
} ocl_signal;

static struct {
    pthread_mutex_t life; /* serialises starting and stopping the thread */
    pthread_mutex_t lock; /* guards the rest */
    pthread_cond_t cond;
    ocl_signal *head, *tail;
    ocl_signal *armed; /* the program's events armed and not yet set */
    long pending;      /* bridges made and not yet delivered */
    unsigned users;    /* live contexts */
    int running, stop;
    pthread_t thread;
} ocl_sig = {.life = PTHREAD_MUTEX_INITIALIZER,
             .lock = PTHREAD_MUTEX_INITIALIZER,
             .cond = PTHREAD_COND_INITIALIZER};

static void *ocl_signaller_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&ocl_sig.lock);
    for (;;) {
        ocl_signal *sig = ocl_sig.head;

        if (!sig) {
            if (ocl_sig.stop && ocl_sig.pending == 0)
                break;
            pthread_cond_wait(&ocl_sig.cond, &ocl_sig.lock);
            continue;
        }
        ocl_sig.head = sig->next;
        if (!ocl_sig.head)
            ocl_sig.tail = NULL;
        pthread_mutex_unlock(&ocl_sig.lock);
        /* A failure is noted before the event completes (ocl_failure_note). */
        if (sig->has_into) {
            cl_int st =
                ocl_failure_of(sig->status, sig->has_from ? &sig->from : NULL,
                               "!opencl.failed.bridge");

            if (st < 0)
                ocl_failure_note(&sig->into, st);
        }
        weft__cl.SetUserEventStatus(sig->user, CL_COMPLETE);
        pthread_mutex_lock(&ocl_sig.lock);
        for (ocl_signal **a = &ocl_sig.armed; *a; a = &(*a)->armed)
            if (*a == sig) {
                *a = sig->armed;
                break;
            }
        pthread_mutex_unlock(&ocl_sig.lock);
        ocl_release_event(sig->user);
        weft__free(sig);
        pthread_mutex_lock(&ocl_sig.lock);
        ocl_sig.pending--;
    }
    pthread_mutex_unlock(&ocl_sig.lock);
    return NULL;
}

/* A context begins to use the signaller, which starts if needed. */
static int ocl_signaller_join(const char *devname)
{
    int rc = 0;

    pthread_mutex_lock(&ocl_sig.life);
    if (!ocl_sig.running) {
        rc = weft__thread_start(&ocl_sig.thread, "weft-ocl-signal",
                                "opencl.pthread_create", ocl_signaller_main,
                                NULL);
        ocl_sig.running = rc == 0;
    }
    if (rc == 0)
        ocl_sig.users++;
    pthread_mutex_unlock(&ocl_sig.life);
    if (rc)
        return weft__error(WEFT_ENOMEM,
                           "opencl: starting the event thread for %s: %s",
                           devname, strerror(rc));
    return 0;
}

/*
 * A context is done with the signaller; the last one stops it, after the
 * bridges still pending (their sources are queued work, which completes).
 */
static void ocl_signaller_leave(void)
{
    pthread_mutex_lock(&ocl_sig.life);
    if (--ocl_sig.users == 0) {
        pthread_mutex_lock(&ocl_sig.lock);
        ocl_sig.stop = 1;
        pthread_cond_signal(&ocl_sig.cond);
        pthread_mutex_unlock(&ocl_sig.lock);
        pthread_join(ocl_sig.thread, NULL);
        ocl_sig.stop = 0;
        ocl_sig.running = 0;
    }
    pthread_mutex_unlock(&ocl_sig.life);
}

/*
 * Release a user event that weft made and will not complete otherwise
 * (a failure path): it is completed first. NVIDIA's OpenCL waits in
 * clReleaseContext, forever, for user events released without a status.
 */
static void ocl_user_event_drop(cl_event user)
{
    cl_int rc = weft__cl.SetUserEventStatus(user, CL_COMPLETE);

    if (rc != CL_SUCCESS && rc != CL_INVALID_OPERATION)
        weft__warn("opencl", "clSetUserEventStatus failed (%d)", (int)rc);
    ocl_release_event(user);
}

static void CL_CALLBACK ocl_bridge_fire(cl_event src, cl_int status, void *user)
{
    ocl_signal *sig = user;

    (void)src;
    sig->status = status;
    pthread_mutex_lock(&ocl_sig.lock);
    if (ocl_sig.tail)
        ocl_sig.tail->next = sig;
    else
        ocl_sig.head = sig;
    ocl_sig.tail = sig;
    pthread_cond_signal(&ocl_sig.cond);
    pthread_mutex_unlock(&ocl_sig.lock);
}

/*
 * sig delivered by the signaller once src completes: counted as pending
 * (the signaller outlives it), and uncounted again if the callback cannot
 * be set. The callback may fire at once, in this thread.
 */
static cl_int ocl_signal_arm(cl_event src, ocl_signal *sig)
{
    cl_int rc;

    pthread_mutex_lock(&ocl_sig.lock);
    ocl_sig.pending++;
    pthread_mutex_unlock(&ocl_sig.lock);
    rc = OCL("clSetEventCallback",
             weft__cl.SetEventCallback(src, CL_COMPLETE, ocl_bridge_fire, sig));
    if (rc != CL_SUCCESS) {
        pthread_mutex_lock(&ocl_sig.lock);
        ocl_sig.pending--;
        pthread_mutex_unlock(&ocl_sig.lock);
    }
    return rc;
}

int weft__ocl_bridge(cl_event src, const ocl_mark *from, ocl_context *to,
                     const ocl_mark *into, cl_event *out)
{
    ocl_signal *sig;
    cl_int rc;

    if (!(sig = weft__calloc(1, sizeof *sig)))
        return weft__error(WEFT_ENOMEM, "opencl: event bridge");
    if ((sig->has_from = from != NULL) != 0)
        sig->from = *from;
    if ((sig->has_into = into != NULL) != 0)
        sig->into = *into;
    sig->user =
        OCL_NEW("clCreateUserEvent", rc, weft__cl.CreateUserEvent(to->cl, &rc));
    if (!sig->user) {
        weft__free(sig);
        return weft__ocl_fail(rc, "clCreateUserEvent: on %s",
                              to->base.dev->name);
    }
    rc = OCL("clRetainEvent", weft__cl.RetainEvent(sig->user));
    if (rc != CL_SUCCESS) {
        ocl_user_event_drop(sig->user);
        weft__free(sig);
        return weft__ocl_fail(rc, "clRetainEvent: on %s", to->base.dev->name);
    }
    *out = sig->user;
    /* may fire at once, in this thread: *out stays valid, ours */
    if ((rc = ocl_signal_arm(src, sig)) != CL_SUCCESS) {
        ocl_release_event(sig->user);
        ocl_user_event_drop(sig->user);
        weft__free(sig);
        return weft__ocl_fail(rc, "clSetEventCallback: waiting from %s",
                              to->base.dev->name);
    }
    return 0;
}

/* A claim given back: the event is left as it was. */
static void ocl_signal_unclaim(ocl_signal *sig)
{
    pthread_mutex_lock(&ocl_sig.lock);
    for (ocl_signal **a = &ocl_sig.armed; *a; a = &(*a)->armed)
        if (*a == sig) {
            *a = sig->armed;
            break;
        }
    pthread_mutex_unlock(&ocl_sig.lock);
    weft__free(sig);
}

/*
 * The program's user event completes once, so a launch may signal it only
 * if no launch did and none will. The claim goes on ocl_sig.armed unless
 * a signal of the event is there already; the event must then still be
 * CL_SUBMITTED. The signaller leaves the list only after setting the
 * event, so of two launches one finds the other's claim or the event set
 * (a claim found with the event set already is reported as the event
 * set: its signaller is only about to leave the list).
 * (Its status is asked with no lock held: OpenCL calls are made outside
 * weft's locks.) *out: the claimed signal.
 */
static int ocl_signal_claim(cl_event user, ocl_signal **out)
{
    ocl_signal *sig, *a;
    cl_int rc, status = CL_SUBMITTED;

    if (!(sig = weft__calloc(1, sizeof *sig)))
        return weft__error(WEFT_ENOMEM, "opencl: event signal");
    pthread_mutex_lock(&ocl_sig.lock);
    for (a = ocl_sig.armed; a && a->user != user; a = a->armed)
        ;
    if (!a) {
        sig->user = user;
        sig->armed = ocl_sig.armed;
        ocl_sig.armed = sig;
    }
    pthread_mutex_unlock(&ocl_sig.lock);
    rc = weft__ocl_event_status(user, &status);
    /* A claim found may be one whose signaller has set the event and not
     * yet left the list (the launch that set it may be over): then the
     * event reads as set. */
    if (a && !(rc == CL_SUCCESS && status != CL_SUBMITTED)) {
        weft__free(sig);
        return weft__error(WEFT_EINVAL,
                           "opencl: the program's user event to signal is to "
                           "be signalled already, by a launch still running: "
                           "a user event completes once, so each launch "
                           "needs a new one (a new graph with a new event)");
    }
    if (!a && rc == CL_SUCCESS && status == CL_SUBMITTED) {
        *out = sig;
        return 0;
    }
    if (a)
        weft__free(sig);
    else
        ocl_signal_unclaim(sig);
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clGetEventInfo: the program's event");
    return weft__error(WEFT_EINVAL,
                       "opencl: the program's user event to signal was set "
                       "already (by an earlier launch, or by the program): "
                       "a user event completes once, so each launch needs "
                       "a new one (a new graph with a new event)");
}

/*
 * The claimed signal armed on src: the program's user event completes
 * when src does, through the signaller as a bridge does, with CL_COMPLETE
 * even if the work before src failed (the launch reports that).
 */
static int ocl_signal_when(cl_event src, ocl_signal *sig)
{
    cl_int rc;

    rc = OCL("clRetainEvent", weft__cl.RetainEvent(sig->user));
    if (rc != CL_SUCCESS) {
        ocl_signal_unclaim(sig);
        return weft__ocl_fail(rc, "clRetainEvent: the program's event");
    }
    if ((rc = ocl_signal_arm(src, sig)) != CL_SUCCESS) {
        ocl_release_event(sig->user);
        ocl_signal_unclaim(sig);
        return weft__ocl_fail(rc, "clSetEventCallback: signalling the "
                                  "program's event");
    }
    return 0;
}

/* ---- events ------------------------------------------------------------ */

static cl_event ocl_event_get_mark(weft__event *ev, ocl_mark *m);

int weft__ocl_event_create(weft__context *ctx, unsigned flags,
                           weft__event **out)
{
    ocl_event *e;
    int err;

    (void)ctx;
    (void)flags;
    if (!(e = weft__calloc(1, sizeof *e)))
        return weft__error(WEFT_ENOMEM, "opencl: event");
    if ((err = weft__ocl_mutex_init(&e->lock)) < 0) {
        weft__free(e);
        return err;
    }
    *out = &e->base;
    return 0;
}

void weft__ocl_event_destroy(weft__event *ev)
{
    ocl_event *e = (ocl_event *)ev;

    if (e->last)
        ocl_release_event(e->last);
    pthread_mutex_destroy(&e->lock);
    weft__free(e);
}

/* The marker of ev's last record with a reference of the caller's; NULL. */
cl_event weft__ocl_event_get(weft__event *ev)
{
    return ocl_event_get_mark(ev, NULL);
}

/* The same, and where it was recorded (m: NULL, or set if not NULL). */
static cl_event ocl_event_get_mark(weft__event *ev, ocl_mark *m)
{
    ocl_event *e = (ocl_event *)ev;
    cl_event cl;

    pthread_mutex_lock(&e->lock);
    cl = e->last;
    if (cl && weft__cl.RetainEvent(cl) != CL_SUCCESS)
        cl = NULL;
    if (m) {
        m->ctx = e->ctx_id;
        m->queue = e->queue_id;
        m->tick = e->tick;
    }
    pthread_mutex_unlock(&e->lock);
    return cl;
}

/* The failure noted before ev's last record, as ocl_failure_report. */
static int ocl_event_failure(weft__event *ev, const ocl_mark *m,
                             const char *what)
{
    return ocl_failure_report(ocl_ctx(ev->ctx), m->queue, m->tick, "%s of %s",
                              what, ev->ctx->dev->name);
}

int weft__ocl_event_record(weft__event *ev, weft__queue *q)
{
    ocl_event *e = (ocl_event *)ev;
    cl_event marker, old;
    ocl_mark m;
    cl_int rc;

    if (((ocl_queue *)q)->cap)
        return weft__ocl_capture_record(e, (ocl_queue *)q);
    m = weft__ocl_tick((ocl_queue *)q);
    rc = OCL("clEnqueueMarkerWithWaitList",
             weft__cl.EnqueueMarkerWithWaitList(ocl_q(q), 0, NULL, &marker));
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clEnqueueMarkerWithWaitList: event on %s",
                              ocl_qname(q));
    weft__ocl_flush(ocl_q(q));
    pthread_mutex_lock(&e->lock);
    old = e->last;
    e->last = marker;
    e->cap_id = 0;
    e->ctx_id = m.ctx;
    e->queue_id = m.queue;
    e->tick = m.tick;
    pthread_mutex_unlock(&e->lock);
    if (old)
        ocl_release_event(old);
    return 0;
}

cl_int weft__ocl_event_status(cl_event e, cl_int *status)
{
    return OCL("clGetEventInfo",
               weft__cl.GetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                     sizeof *status, status, NULL));
}

int weft__ocl_queue_wait_event(weft__queue *q, weft__event *ev)
{
    ocl_event *oe = (ocl_event *)ev;
    cl_event e, wait;
    ocl_mark from, into;
    cl_int rc, status;
    uint64_t cap_id;
    unsigned has_sp;
    cl_sync_point_khr sp;
    int err = 0;

    pthread_mutex_lock(&oe->lock);
    cap_id = oe->cap_id;
    has_sp = oe->has_sp;
    sp = oe->sp;
    pthread_mutex_unlock(&oe->lock);
    if (cap_id || ((ocl_queue *)q)->cap)
        return weft__ocl_capture_wait((ocl_queue *)q, ev, cap_id, has_sp, sp);
    if (!(e = ocl_event_get_mark(ev, &from)))
        return 0;
    rc = weft__ocl_event_status(e, &status);
    if (rc == CL_SUCCESS && status == CL_COMPLETE &&
        !ocl_failure_covers(from.ctx, from.tick)) {
        ocl_release_event(e);
        return 0;
    }
    /* Complete but after a failure: the bridge below passes it on. */
    into = weft__ocl_tick((ocl_queue *)q);
    if (ev->ctx == q->ctx) {
        wait = e; /* one clock: its note covers q's later ticks */
    } else if ((err = weft__ocl_bridge(e, &from, ocl_ctx(q->ctx), &into,
                                       &wait)) < 0) {
        ocl_release_event(e);
        return err;
    }
    rc = OCL("clEnqueueBarrierWithWaitList",
             weft__cl.EnqueueBarrierWithWaitList(ocl_q(q), 1, &wait, NULL));
    if (rc != CL_SUCCESS)
        err = weft__ocl_fail(rc,
                             "clEnqueueBarrierWithWaitList: %s waiting on an "
                             "event of %s",
                             ocl_qname(q), ev->ctx->dev->name);
    if (wait != e)
        ocl_release_event(wait);
    ocl_release_event(e);
    return err;
}

int weft__ocl_event_query(weft__event *ev)
{
    ocl_mark m;
    cl_event e = ocl_event_get_mark(ev, &m);
    cl_int rc, status;

    if (!e)
        return 0;
    rc = weft__ocl_event_status(e, &status);
    ocl_release_event(e);
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clGetEventInfo: event of %s",
                              ev->ctx->dev->name);
    if (status < 0)
        return weft__ocl_fail(status,
                              "event of %s: the work it waits for failed",
                              ev->ctx->dev->name);
    if (status != CL_COMPLETE)
        return WEFT_ENOTREADY;
    ocl_host_acquire();
    return ocl_event_failure(ev, &m, "event");
}

int weft__ocl_event_sync(weft__event *ev)
{
    ocl_mark m;
    cl_event e = ocl_event_get_mark(ev, &m);
    cl_int rc, status;

    if (!e)
        return 0;
    rc = OCL("clWaitForEvents", weft__cl.WaitForEvents(1, &e));
    if (rc == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST &&
        weft__ocl_event_status(e, &status) == CL_SUCCESS && status < 0)
        rc = status;
    ocl_release_event(e);
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clWaitForEvents: event of %s",
                              ev->ctx->dev->name);
    ocl_host_acquire();
    return ocl_event_failure(ev, &m, "event");
}

/* Markers complete when the work before them has: their END is the time. */
int weft__ocl_event_elapsed(weft__event *start, weft__event *end, uint64_t *ns)
{
    ocl_mark m[2];
    cl_event ev[2] = {ocl_event_get_mark(start, &m[0]),
                      ocl_event_get_mark(end, &m[1])};
    cl_ulong t[2];
    cl_int rc = CL_SUCCESS, status;
    int err = 0;

    for (int i = 0; i < 2 && err == 0; i++) {
        if (!ev[i])
            err = weft__error(WEFT_EINVAL,
                              "event_elapsed: %s event was "
                              "never recorded",
                              i ? "end" : "start");
        else if ((rc = weft__ocl_event_status(ev[i], &status)) != CL_SUCCESS)
            err = weft__ocl_fail(rc, "clGetEventInfo: elapsed time");
        else if (status < 0)
            err = weft__ocl_fail(status,
                                 "event_elapsed: the work of the %s event "
                                 "failed",
                                 i ? "end" : "start");
        else if (status != CL_COMPLETE)
            err = WEFT_ENOTREADY;
        else if ((err = ocl_event_failure(i ? end : start, &m[i],
                                          "event_elapsed: event")) < 0)
            ;
        else if ((rc = OCL("clGetEventProfilingInfo",
                           weft__cl.GetEventProfilingInfo(
                               ev[i], CL_PROFILING_COMMAND_END, sizeof t[i],
                               &t[i], NULL))) != CL_SUCCESS)
            err = weft__ocl_fail(rc,
                                 "clGetEventProfilingInfo: elapsed time on %s",
                                 start->ctx->dev->name);
    }
    for (int i = 0; i < 2; i++)
        if (ev[i])
            ocl_release_event(ev[i]);
    if (err == 0)
        *ns = t[1] > t[0] ? t[1] - t[0] : 0;
    return err;
}

/* ---- host functions ---------------------------------------------------- */

typedef struct ocl_host_call ocl_host_call;

/*
 * The thread that runs a queue's host functions. Event callbacks only hand
 * calls to it: a callback may run inline in the thread that sets it (when
 * the event is already complete) or on the implementation's own threads,
 * and a host function may block for as long as it likes.
 */
struct ocl_host_worker {
    pthread_t thread;
    pthread_mutex_t lock; /* guards head, tail, stop */
    pthread_cond_t cond;
    ocl_host_call *head, *tail;
    int stop;
};

struct ocl_host_call {
    ocl_host_call *next;
    ocl_host_worker *worker;
    weft__host_fn *fn;
    void *user;
    cl_event gate;       /* holds the queue until fn has returned */
    cl_int status;       /* of the work before, as the marker ended */
    ocl_mark marker, at; /* the ticks of the marker and the gate */
};

/*
 * fn runs only if the work before it did not fail (its marker's status,
 * or a note covering the marker): it reads what that work made. Either
 * way the gate completes with CL_COMPLETE, after the failure is noted at
 * the gate's tick, so that the queue's later events and syncs report it.
 */
static void *ocl_worker_main(void *arg)
{
    ocl_host_worker *w = arg;
    cl_int status;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        ocl_host_call *call = w->head;

        if (!call) {
            if (w->stop)
                break;
            pthread_cond_wait(&w->cond, &w->lock);
            continue;
        }
        w->head = call->next;
        if (!w->head)
            w->tail = NULL;
        pthread_mutex_unlock(&w->lock);
        status =
            ocl_failure_of(call->status, &call->marker, "!opencl.failed.gate");
        if (status < 0)
            ocl_failure_note(&call->at, status);
        else
            call->fn(call->user);
        __atomic_add_fetch(&ocl_host_epoch, 1, __ATOMIC_RELEASE);
        weft__cl.SetUserEventStatus(call->gate, CL_COMPLETE);
        ocl_release_event(call->gate);
        weft__free(call);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void ocl_worker_stop(ocl_host_worker *w)
{
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    weft__free(w);
}

static int ocl_worker_get(ocl_queue *q, ocl_host_worker **out)
{
    ocl_host_worker *w;
    int rc;

    pthread_mutex_lock(&q->lock);
    if ((w = q->worker) != NULL)
        goto done;
    if (!(w = weft__calloc(1, sizeof *w))) {
        pthread_mutex_unlock(&q->lock);
        return weft__error(WEFT_ENOMEM, "opencl: host function thread");
    }
    if ((rc = weft__ocl_mutex_init(&w->lock)) < 0) {
        weft__free(w);
        pthread_mutex_unlock(&q->lock);
        return rc;
    }
    rc = weft__fault("opencl.pthread_cond_init")
             ? 12
             : pthread_cond_init(&w->cond, NULL);
    if (rc == 0) {
        rc = weft__thread_start(&w->thread, "weft-ocl-worker",
                                "opencl.pthread_create", ocl_worker_main, w);
        if (rc)
            pthread_cond_destroy(&w->cond);
    }
    if (rc) {
        pthread_mutex_destroy(&w->lock);
        weft__free(w);
        pthread_mutex_unlock(&q->lock);
        return weft__error(WEFT_ENOMEM,
                           "opencl: starting the host function thread of a "
                           "queue on %s: %s",
                           q->base.ctx->dev->name, strerror(rc));
    }
    q->worker = w;
done:
    pthread_mutex_unlock(&q->lock);
    *out = w;
    return 0;
}

static void CL_CALLBACK ocl_host_call_fire(cl_event marker, cl_int status,
                                           void *user)
{
    ocl_host_call *call = user;
    ocl_host_worker *w = call->worker;

    (void)marker;
    call->status = status;
    pthread_mutex_lock(&w->lock);
    if (w->tail)
        w->tail->next = call;
    else
        w->head = call;
    w->tail = call;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/*
 * A marker (done when the work before it is) whose callback hands fn to
 * the queue's worker, then a barrier on a user event that the worker
 * completes once fn has returned.
 */
int weft__ocl_host_fn(weft__queue *q, weft__host_fn *fn, void *user)
{
    ocl_host_call *call;
    cl_event marker;
    cl_int rc;
    int err;

    if (((ocl_queue *)q)->cap)
        return weft__ocl_capture_refuse((ocl_queue *)q, "a host function");
    if (!(call = weft__calloc(1, sizeof *call)))
        return weft__error(WEFT_ENOMEM, "opencl: host function");
    if ((err = ocl_worker_get((ocl_queue *)q, &call->worker)) < 0) {
        weft__free(call);
        return err;
    }
    call->fn = fn;
    call->user = user;
    call->gate = OCL_NEW("clCreateUserEvent", rc,
                         weft__cl.CreateUserEvent(ocl_ctx(q->ctx)->cl, &rc));
    if (!call->gate) {
        weft__free(call);
        return weft__ocl_fail(rc, "clCreateUserEvent: host function on %s",
                              ocl_qname(q));
    }
    call->marker = weft__ocl_tick((ocl_queue *)q);
    call->at = weft__ocl_tick((ocl_queue *)q);
    rc = OCL("clEnqueueMarkerWithWaitList",
             weft__cl.EnqueueMarkerWithWaitList(ocl_q(q), 0, NULL, &marker));
    if (rc != CL_SUCCESS) {
        err = weft__ocl_fail(rc,
                             "clEnqueueMarkerWithWaitList: host function on %s",
                             ocl_qname(q));
        goto fail;
    }
    rc = OCL(
        "clEnqueueBarrierWithWaitList",
        weft__cl.EnqueueBarrierWithWaitList(ocl_q(q), 1, &call->gate, NULL));
    if (rc != CL_SUCCESS) {
        ocl_release_event(marker);
        err = weft__ocl_fail(rc,
                             "clEnqueueBarrierWithWaitList: host function on "
                             "%s",
                             ocl_qname(q));
        goto fail;
    }
    /*
     * The callback thread gets call through the OpenCL implementation;
     * taking the worker's lock here orders the writes above before the
     * callback's push (which takes the same lock), whatever ordering the
     * implementation's own handoff gives.
     */
    pthread_mutex_lock(&call->worker->lock);
    pthread_mutex_unlock(&call->worker->lock);
    rc = OCL("clSetEventCallback",
             weft__cl.SetEventCallback(marker, CL_COMPLETE, ocl_host_call_fire,
                                       call));
    ocl_release_event(marker);
    weft__ocl_flush(ocl_q(q));
    if (rc != CL_SUCCESS) {
        /* the barrier is queued: the gate opens below, fn never runs */
        err = weft__ocl_fail(rc, "clSetEventCallback: host function on %s",
                             ocl_qname(q));
        goto fail;
    }
    return 0;
fail:
    ocl_user_event_drop(call->gate);
    weft__free(call);
    return err;
}

/* ---- native nodes -------------------------------------------------------- */

/*
 * The program's function enqueues on the queue itself (in order, after
 * the barriers that waits put there); the flush submits what it queued, as
 * an event recorded after it needs (weft__ocl_flush).
 */
int weft__ocl_native_call(weft__queue *q, weft__native_fn *fn, void *user)
{
    ocl_queue *oq = (ocl_queue *)q;
    ocl_context *c = ocl_ctx(q->ctx);
    weft__native_queue nq = {c->cl, c->dev, oq->cl};
    int rc;

    if (oq->cap)
        return weft__ocl_capture_refuse(oq, "a native node");
    rc = fn(&nq, user);
    weft__ocl_flush(oq->cl);
    return rc;
}

void weft__ocl_native_context(weft__context *ctx, weft__native_queue *out)
{
    out->context = ocl_ctx(ctx)->cl;
    out->device = ocl_ctx(ctx)->dev;
}

void weft__ocl_native_mem(weft__mem *m, size_t off, weft__native_mem *out)
{
    out->mem = ocl_cl(m);
    out->offset = off;
}

/* ---- external events ----------------------------------------------------- */

int weft__ocl_external_wait(weft__queue *q, void *ev)
{
    cl_event e = ev, wait = e;
    cl_context ectx = NULL;
    ocl_mark into;
    cl_int rc;
    int err = 0;

    if (((ocl_queue *)q)->cap)
        return weft__ocl_capture_refuse((ocl_queue *)q, "an external event");
    rc = OCL("clGetEventInfo", weft__cl.GetEventInfo(e, CL_EVENT_CONTEXT,
                                                     sizeof ectx, &ectx, NULL));
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clGetEventInfo: the program's event");
    /* An event of another context (the program's own) is bridged. */
    into = weft__ocl_tick((ocl_queue *)q);
    if (ectx != ocl_ctx(q->ctx)->cl &&
        (err = weft__ocl_bridge(e, NULL, ocl_ctx(q->ctx), &into, &wait)) < 0)
        return err;
    rc = OCL("clEnqueueBarrierWithWaitList",
             weft__cl.EnqueueBarrierWithWaitList(ocl_q(q), 1, &wait, NULL));
    if (rc != CL_SUCCESS)
        err = weft__ocl_fail(rc,
                             "clEnqueueBarrierWithWaitList: %s waiting on the "
                             "program's event",
                             ocl_qname(q));
    if (wait != e)
        ocl_release_event(wait);
    weft__ocl_flush(ocl_q(q));
    return err;
}

int weft__ocl_external_record(weft__queue *q, void *ev)
{
    cl_command_type type = 0;
    ocl_signal *sig = NULL;
    cl_event marker;
    cl_int rc;
    int err;

    if (((ocl_queue *)q)->cap)
        return weft__ocl_capture_refuse((ocl_queue *)q, "an external event");
    rc = OCL("clGetEventInfo", weft__cl.GetEventInfo(ev, CL_EVENT_COMMAND_TYPE,
                                                     sizeof type, &type, NULL));
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clGetEventInfo: the program's event");
    if (type != CL_COMMAND_USER)
        return weft__error(WEFT_EINVAL,
                           "opencl: the event to signal is no user event "
                           "(clCreateUserEvent): only those can be set");
    if ((err = ocl_signal_claim(ev, &sig)) < 0)
        return err;
    (void)weft__ocl_tick((ocl_queue *)q);
    rc = OCL("clEnqueueMarkerWithWaitList",
             weft__cl.EnqueueMarkerWithWaitList(ocl_q(q), 0, NULL, &marker));
    if (rc != CL_SUCCESS) {
        ocl_signal_unclaim(sig);
        return weft__ocl_fail(rc, "clEnqueueMarkerWithWaitList: on %s",
                              ocl_qname(q));
    }
    weft__ocl_flush(ocl_q(q));
    err = ocl_signal_when(marker, sig);
    ocl_release_event(marker);
    return err;
}

int weft__ocl_external_mark(void *queue, void **mark)
{
    cl_event marker;
    cl_int rc;

    if (!queue)
        return weft__error(WEFT_EINVAL, "opencl: the queue is NULL");
    rc = OCL("clEnqueueMarkerWithWaitList",
             weft__cl.EnqueueMarkerWithWaitList(queue, 0, NULL, &marker));
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clEnqueueMarkerWithWaitList: on the "
                                  "program's queue");
    weft__ocl_flush(queue);
    *mark = marker;
    return 0;
}

int weft__ocl_external_mark_end(void *mark, int wait)
{
    cl_event marker = mark;
    cl_int rc = CL_SUCCESS;

    if (wait)
        rc = OCL("clWaitForEvents", weft__cl.WaitForEvents(1, &marker));
    ocl_release_event(marker);
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clWaitForEvents: the program's queue");
    return 0;
}
