/*
 * Native graphs of the OpenCL driver: captures into command buffers
 * (cl_khr_command_buffer), their launches, and the recording of copies,
 * fills, launches, events and waits while a queue captures.
 */
#include "opencl_internal.h"

#include <stdio.h>
#include <string.h>

/*
 * A capture (graph_begin .. graph_end) records what its queues enqueue
 * into one command buffer, made for the queue it began on: the base
 * extension has exactly one queue per command buffer, and every queue of
 * the capture maps onto it through sync points (ocl_queue). A queue takes
 * part once it waits for an event recorded in the capture (as CUDA's
 * stream capture), so other threads' work on other queues of the same
 * context keeps running as usual while one thread captures.
 *
 * What a command buffer cannot hold (copies from or to host memory, host
 * functions, peer copies, waits for events from outside the capture that
 * are not complete) fails with WEFT_ENOTSUP and marks the capture failed;
 * graph_end then makes no graph of it.
 *
 * The context's list of captures in progress (under its lock) lets a
 * queue that waits for a captured event find the capture to join, and
 * tells a stale event (its capture ended) from a live one.
 */
/* What a command buffer's recorded commands use, held for its life. */
typedef struct ocl_held {
    cl_mem *keep; /* one-off sub-buffers of recorded launches */
    unsigned nkeep, cap_keep;
    cl_kernel *kernels; /* of recorded launches (weft__ocl_capture_kernel) */
    unsigned nkernels, cap_kernels;
} ocl_held;

static void ocl_held_release(ocl_held *h)
{
    for (unsigned i = 0; i < h->nkeep; i++)
        ocl_release_memobject(h->keep[i]);
    for (unsigned i = 0; i < h->nkernels; i++)
        ocl_release_kernel(h->kernels[i]);
    weft__free(h->keep);
    weft__free(h->kernels);
    memset(h, 0, sizeof *h);
}

typedef struct ocl_capture {
    struct ocl_capture *next; /* in the context's list */
    uint64_t id;              /* never 0 */
    ocl_context *ctx;
    const ocl_device *dev;
    cl_command_buffer_khr cb;
    ocl_queue **queues; /* taking part, the first one first */
    unsigned nqueues, cap_queues;
    ocl_held held;
    int failed; /* the first failure (a weft code), or 0 */
} ocl_capture;

/* A graph: a finalized command buffer and what its commands use. */
typedef struct ocl_graph {
    weft__context *ctx;
    const ocl_device *dev;
    cl_command_buffer_khr cb;
    ocl_held held; /* the capture's */
    cl_event done; /* of the last launch, or NULL */
} ocl_graph;

static uint64_t ocl_capture_ids; /* atomic: the last id given */

int weft__ocl_graph_supported(const weft__device *dev)
{
    return ((const ocl_device *)dev)->cmdbuf != NULL;
}

/* Room for one more element of size in *arr of *cap (used n); 0 or -1. */
static int ocl_grow(void **arr, unsigned *cap, unsigned n, size_t size)
{
    unsigned c = *cap ? *cap * 2 : 8;
    void *p;

    if (n < *cap)
        return 0;
    if (!(p = weft__realloc(*arr, (size_t)c * size)))
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}

/* Mark q's capture failed with err (a weft code, detail set); err. */
static int ocl_capture_fail(ocl_queue *q, int err)
{
    if (q->cap && !q->cap->failed)
        q->cap->failed = err;
    return err;
}

/* An operation a command buffer cannot hold, enqueued on a capturing q. */
int weft__ocl_capture_refuse(ocl_queue *q, const char *what)
{
    return ocl_capture_fail(
        q, weft__error(WEFT_ENOTSUP,
                       "opencl: %s cannot be recorded in a command buffer "
                       "(cl_khr_command_buffer), and a queue on %s is "
                       "capturing one",
                       what, q->base.ctx->dev->name));
}

/*
 * The sync points q's next command waits for: its waits and its last
 * command. They stay valid until the next call on q.
 */
static int ocl_capture_deps(ocl_queue *q, const cl_sync_point_khr **list,
                            cl_uint *n)
{
    if (ocl_grow((void **)&q->waits, &q->cap_waits, q->nwaits,
                 sizeof *q->waits) < 0)
        return ocl_capture_fail(
            q, weft__error(WEFT_ENOMEM, "opencl: recording a command"));
    *n = q->nwaits;
    if (q->has_last)
        q->waits[(*n)++] = q->last;
    *list = *n ? q->waits : NULL;
    return 0;
}

/* sp is q's last command now; what it waited for is behind it. */
static void ocl_capture_then(ocl_queue *q, cl_sync_point_khr sp)
{
    q->last = sp;
    q->has_last = 1;
    q->nwaits = 0;
}

/*
 * After recording one command (rc; its sync point sp): q's last command,
 * or the capture fails, the message saying which command (fmt, ...).
 */
static int ocl_capture_recorded(ocl_queue *q, cl_int rc, cl_sync_point_khr sp,
                                const char *fmt, ...) WEFT__PRINTF(4, 5);
static int ocl_capture_recorded(ocl_queue *q, cl_int rc, cl_sync_point_khr sp,
                                const char *fmt, ...)
{
    char what[256];
    va_list ap;

    if (rc == CL_SUCCESS) {
        ocl_capture_then(q, sp);
        return 0;
    }
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ocl_capture_fail(
        q, weft__ocl_fail(rc, "%s on %s", what, q->cap->dev->base.name));
}

/* Take q out of whatever capture it took part in. */
static void ocl_capture_leave(ocl_queue *q)
{
    q->cap = NULL;
    q->has_last = 0;
    q->nwaits = 0;
}

/* Join q to c, after the commands of c so far that sp names (has_sp). */
static int ocl_capture_join(ocl_capture *c, ocl_queue *q, unsigned has_sp,
                            cl_sync_point_khr sp)
{
    if (ocl_grow((void **)&c->queues, &c->cap_queues, c->nqueues,
                 sizeof *c->queues) < 0 ||
        (has_sp &&
         ocl_grow((void **)&q->waits, &q->cap_waits, 0, sizeof *q->waits) < 0))
        return weft__error(WEFT_ENOMEM, "opencl: a queue joining a capture");
    c->queues[c->nqueues++] = q;
    ocl_capture_leave(q);
    q->cap = c;
    if (has_sp)
        q->waits[q->nwaits++] = sp;
    return 0;
}

/* Record a copy between buffers on capturing q. */
int weft__ocl_capture_copy(ocl_queue *q, cl_mem src, size_t src_off, cl_mem dst,
                           size_t dst_off, size_t size)
{
    ocl_capture *c = q->cap;
    const ocl_device *d = c->dev;
    const cl_sync_point_khr *w = NULL;
    cl_sync_point_khr sp = 0;
    cl_uint n = 0;
    cl_int rc;
    int err;

    if ((err = ocl_capture_deps(q, &w, &n)) < 0)
        return err;
    if (OCL_FAULT("clCommandCopyBufferKHR"))
        rc = CL_OUT_OF_HOST_MEMORY;
    else if (d->cmdbuf_v5)
        rc = ((ocl_cmd_copy_v5)d->cmdbuf->copy)(c->cb, NULL, NULL, src, dst,
                                                src_off, dst_off, size, n, w,
                                                &sp, NULL);
    else
        rc = ((clCommandCopyBufferKHR_fn)d->cmdbuf->copy)(
            c->cb, NULL, src, dst, src_off, dst_off, size, n, w, &sp, NULL);
    return ocl_capture_recorded(q, rc, sp, "clCommandCopyBufferKHR: %zu bytes",
                                size);
}

int weft__ocl_capture_fill(ocl_queue *q, cl_mem dst, size_t off,
                           const void *pattern, size_t pattern_size,
                           size_t size)
{
    ocl_capture *c = q->cap;
    const ocl_device *d = c->dev;
    const cl_sync_point_khr *w = NULL;
    cl_sync_point_khr sp = 0;
    cl_uint n = 0;
    cl_int rc;
    int err;

    if ((err = ocl_capture_deps(q, &w, &n)) < 0)
        return err;
    if (OCL_FAULT("clCommandFillBufferKHR"))
        rc = CL_OUT_OF_HOST_MEMORY;
    else if (d->cmdbuf_v5)
        rc = ((ocl_cmd_fill_v5)d->cmdbuf->fill)(c->cb, NULL, NULL, dst, pattern,
                                                pattern_size, off, size, n, w,
                                                &sp, NULL);
    else
        rc = ((clCommandFillBufferKHR_fn)d->cmdbuf->fill)(
            c->cb, NULL, dst, pattern, pattern_size, off, size, n, w, &sp,
            NULL);
    return ocl_capture_recorded(q, rc, sp, "clCommandFillBufferKHR: %zu bytes",
                                size);
}

/*
 * Make q's waits and last command one sync point (a barrier), so that an
 * event recorded now can name them all.
 */
static int ocl_capture_barrier(ocl_queue *q)
{
    ocl_capture *c = q->cap;
    const ocl_device *d = c->dev;
    const cl_sync_point_khr *w = NULL;
    cl_sync_point_khr sp = 0;
    cl_uint n = 0;
    cl_int rc;
    int err;

    if ((err = ocl_capture_deps(q, &w, &n)) < 0)
        return err;
    if (OCL_FAULT("clCommandBarrierWithWaitListKHR"))
        rc = CL_OUT_OF_HOST_MEMORY;
    else if (d->cmdbuf_v5)
        rc = ((ocl_cmd_barrier_v5)d->cmdbuf->barrier)(c->cb, NULL, NULL, n, w,
                                                      &sp, NULL);
    else
        rc = ((clCommandBarrierWithWaitListKHR_fn)d->cmdbuf->barrier)(
            c->cb, NULL, n, w, &sp, NULL);
    return ocl_capture_recorded(q, rc, sp, "clCommandBarrierWithWaitListKHR");
}

/* Free what a capture holds that did not go to a graph. */
static void ocl_capture_free(ocl_capture *c)
{
    if (c->cb && c->dev->cmdbuf->release(c->cb) != CL_SUCCESS)
        weft__warn("opencl", "a command buffer of %s was not released",
                   c->dev->base.name);
    ocl_held_release(&c->held);
    weft__free(c->queues);
    weft__free(c);
}

void weft__ocl_graph_destroy(void *graph)
{
    ocl_graph *g = graph;

    if (!g)
        return;
    if (g->done)
        ocl_release_event(g->done);
    if (g->dev->cmdbuf->release(g->cb) != CL_SUCCESS)
        weft__warn("opencl", "a command buffer of %s was not released",
                   g->dev->base.name);
    ocl_held_release(&g->held);
    weft__free(g);
}

int weft__ocl_graph_begin(weft__queue *q)
{
    ocl_queue *oq = (ocl_queue *)q;
    ocl_context *ctx = ocl_ctx(q->ctx);
    const ocl_device *d = ocl_ctx_dev(q->ctx);
    cl_command_buffer_properties_khr props[] = {
        CL_COMMAND_BUFFER_FLAGS_KHR, CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
    ocl_capture *c;
    cl_int rc;

    if (!d->cmdbuf)
        return weft__error(WEFT_ENOTSUP,
                           "opencl: %s has no cl_khr_command_buffer that weft "
                           "can use: no native graphs",
                           d->base.name);
    if (oq->cap)
        return weft__error(WEFT_EINVAL,
                           "graph_begin: a queue on %s is capturing already",
                           d->base.name);
    if (!(c = weft__calloc(1, sizeof *c)) ||
        ocl_grow((void **)&c->queues, &c->cap_queues, 0, sizeof *c->queues) <
            0) {
        weft__free(c);
        return weft__error(WEFT_ENOMEM, "opencl: a capture");
    }
    c->ctx = ctx;
    c->dev = d;
    /*
     * Simultaneous use where the device has it: a launch then never finds
     * the buffer still pending from the launch before (whose completion
     * the implementation may learn after the queue's own).
     */
    c->cb =
        OCL_NEW("clCreateCommandBufferKHR", rc,
                d->cmdbuf->create(1, &oq->cl,
                                  d->cmdbuf_simultaneous ? props : NULL, &rc));
    if (!c->cb) {
        ocl_capture_free(c);
        return weft__ocl_fail(rc, "clCreateCommandBufferKHR: on %s",
                              d->base.name);
    }
    c->id = __atomic_add_fetch(&ocl_capture_ids, 1, __ATOMIC_RELAXED);
    c->queues[c->nqueues++] = oq;
    ocl_capture_leave(oq);
    oq->cap = c;
    pthread_mutex_lock(&ctx->lock);
    c->next = ctx->captures;
    ctx->captures = c;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

/*
 * cl_khr_command_buffer_mutable_dispatch could update old in place; it is
 * rare, so old is always replaced by a new command buffer (*updated = 0).
 */
int weft__ocl_graph_end(weft__queue *q, void *old, void **graph, int *updated)
{
    ocl_queue *oq = (ocl_queue *)q;
    ocl_capture *c = oq->cap, **link;
    ocl_graph *g;
    cl_int rc;
    int err;

    if (updated)
        *updated = 0;
    weft__ocl_graph_destroy(old);
    if (!c || c->queues[0] != oq)
        return weft__error(WEFT_EINVAL,
                           "graph_end: a queue on %s that no capture began on",
                           q->ctx->dev->name);
    pthread_mutex_lock(&c->ctx->lock);
    for (link = &c->ctx->captures; *link != c; link = &(*link)->next)
        ;
    *link = c->next;
    pthread_mutex_unlock(&c->ctx->lock);
    for (unsigned i = 0; i < c->nqueues; i++)
        ocl_capture_leave(c->queues[i]);
    if (!graph || c->failed) {
        err = graph ? weft__error(c->failed,
                                  "graph_end: the capture on %s failed (%s): "
                                  "no graph",
                                  c->dev->base.name, weft_err_name(c->failed))
                    : 0;
        ocl_capture_free(c);
        return err;
    }
    rc = OCL("clFinalizeCommandBufferKHR", c->dev->cmdbuf->finalize(c->cb));
    if (rc != CL_SUCCESS) {
        err = weft__ocl_fail(rc, "clFinalizeCommandBufferKHR: on %s",
                             c->dev->base.name);
        ocl_capture_free(c);
        return err;
    }
    if (!(g = weft__calloc(1, sizeof *g))) {
        ocl_capture_free(c);
        return weft__error(WEFT_ENOMEM, "opencl: a graph");
    }
    g->ctx = q->ctx;
    g->dev = c->dev;
    g->cb = c->cb;
    g->held = c->held;
    c->cb = NULL;
    memset(&c->held, 0, sizeof c->held);
    ocl_capture_free(c);
    *graph = g;
    return 0;
}

int weft__ocl_graph_launch(void *graph, weft__queue *q)
{
    ocl_graph *g = graph;
    ocl_queue *oq = (ocl_queue *)q;
    cl_event done = NULL;
    cl_int rc;

    if (q->ctx != g->ctx)
        return weft__error(WEFT_EINVAL,
                           "graph_launch: a graph of %s on a queue of %s",
                           g->dev->base.name, q->ctx->dev->name);
    if (oq->cap)
        return weft__ocl_capture_refuse(oq, "a command buffer's launch");
    /*
     * Without simultaneous use a pending buffer cannot be enqueued again:
     * the launch before must be over first.
     */
    if (!g->dev->cmdbuf_simultaneous && g->done) {
        rc = OCL("clWaitForEvents", weft__cl.WaitForEvents(1, &g->done));
        if (rc != CL_SUCCESS &&
            rc != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
            return weft__ocl_fail(rc, "clWaitForEvents: a graph's launch on %s",
                                  g->dev->base.name);
    }
    /* An event always: some implementations (PoCL 3) need one. */
    rc = OCL("clEnqueueCommandBufferKHR",
             g->dev->cmdbuf->enqueue(1, &oq->cl, g->cb, 0, NULL, &done));
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clEnqueueCommandBufferKHR: on %s",
                              g->dev->base.name);
    if (g->done)
        ocl_release_event(g->done);
    g->done = done;
    weft__ocl_flush(oq->cl);
    return 0;
}

/*
 * The kernel object that a launch of k recorded on capturing q sets its
 * arguments on: one of its own, which the capture keeps for the graph's
 * life. The extension says that a recorded command takes the argument
 * values as they are when it is recorded, but PoCL 3.1 reads them from
 * the kernel object when the command buffer is enqueued: with k's own
 * object, every recorded launch of k would run with the arguments of the
 * last one set.
 */
int weft__ocl_capture_kernel(ocl_queue *q, ocl_kernel *k, cl_kernel *out)
{
    ocl_capture *c = q->cap;
    ocl_module *m = (ocl_module *)k->base.module;
    cl_kernel own;
    cl_int rc;

    if (ocl_grow((void **)&c->held.kernels, &c->held.cap_kernels,
                 c->held.nkernels, sizeof *c->held.kernels) < 0)
        return ocl_capture_fail(
            q, weft__error(WEFT_ENOMEM, "opencl: recording %s", k->name));
    own = OCL_NEW("clCreateKernel", rc,
                  weft__cl.CreateKernel(m->prog, k->name, &rc));
    if (!own)
        return ocl_capture_fail(
            q, weft__ocl_fail(rc, "clCreateKernel: %s, recorded on %s", k->name,
                              c->dev->base.name));
    c->held.kernels[c->held.nkernels++] = own;
    *out = own;
    return 0;
}

/*
 * Record a launch of k, whose arguments are set on kcl, on capturing q. The
 * one-off sub-buffers go to the capture, which keeps them for the graph's life
 * (*noneoff = 0: the caller releases none).
 */
int weft__ocl_capture_launch(ocl_queue *q, ocl_kernel *k, cl_kernel kcl,
                             cl_uint dims, const size_t *gws, const size_t *lws,
                             cl_mem *oneoff, unsigned *noneoff)
{
    ocl_capture *c = q->cap;
    const cl_sync_point_khr *w = NULL;
    cl_sync_point_khr sp = 0;
    cl_uint n = 0;
    cl_int rc;
    int err;

    while (*noneoff > 0) {
        if (ocl_grow((void **)&c->held.keep, &c->held.cap_keep, c->held.nkeep,
                     sizeof *c->held.keep) < 0)
            return ocl_capture_fail(
                q, weft__error(WEFT_ENOMEM, "opencl: recording %s", k->name));
        c->held.keep[c->held.nkeep++] = oneoff[--*noneoff];
    }
    if ((err = ocl_capture_deps(q, &w, &n)) < 0)
        return err;
    rc = OCL("clCommandNDRangeKernelKHR",
             c->dev->cmdbuf->ndrange(c->cb, NULL, NULL, kcl, dims, NULL, gws,
                                     lws, n, w, &sp, NULL));
    return ocl_capture_recorded(q, rc, sp, "clCommandNDRangeKernelKHR: %s",
                                k->name);
}

/*
 * An event recorded in a capture names its queue's last command, after a
 * barrier that makes the queue's waits part of it where it has any.
 */
int weft__ocl_capture_record(ocl_event *e, ocl_queue *q)
{
    cl_event old;
    int err;

    if (q->base.ctx != e->base.ctx)
        return ocl_capture_fail(
            q, weft__error(WEFT_EINVAL,
                           "event_record: an event of %s on a capturing "
                           "queue of %s",
                           e->base.ctx->dev->name, q->base.ctx->dev->name));
    if (q->nwaits > 0 && (err = ocl_capture_barrier(q)) < 0)
        return err;
    pthread_mutex_lock(&e->lock);
    old = e->last;
    e->last = NULL;
    e->cap_id = q->cap->id;
    e->has_sp = q->has_last;
    e->sp = q->last;
    pthread_mutex_unlock(&e->lock);
    if (old)
        ocl_release_event(old);
    return 0;
}

/*
 * A wait that involves a capture: q is capturing, or ev was recorded in a
 * capture (cap_id, has_sp and sp, read under ev's lock). A wait for an
 * event of q's capture is a dependency between sync points; a queue that
 * is not capturing joins the capture of the event it waits for while that
 * capture is in progress (an event of a capture that has ended stands for
 * nothing, as one never recorded); a capture cannot wait for work outside
 * it that is still to complete.
 */
int weft__ocl_capture_wait(ocl_queue *q, weft__event *ev, uint64_t cap_id,
                           unsigned has_sp, cl_sync_point_khr sp)
{
    ocl_context *ctx = ocl_ctx(ev->ctx);
    ocl_capture *c;
    cl_event e;
    cl_int status;
    int err = 0;

    if (q->cap && cap_id == q->cap->id) {
        if (!has_sp)
            return 0;
        if (ocl_grow((void **)&q->waits, &q->cap_waits, q->nwaits,
                     sizeof *q->waits) < 0)
            return ocl_capture_fail(
                q, weft__error(WEFT_ENOMEM, "opencl: recording a wait"));
        q->waits[q->nwaits++] = sp;
        return 0;
    }
    if (q->cap && cap_id)
        return ocl_capture_fail(
            q, weft__error(WEFT_ENOTSUP,
                           "opencl: a capture on %s waits for an event of "
                           "another capture",
                           q->base.ctx->dev->name));
    if (q->cap) {
        /* Work from before the capture: fine if it is over already. */
        if (!(e = weft__ocl_event_get(ev)))
            return 0;
        if (weft__ocl_event_status(e, &status) != CL_SUCCESS ||
            status != CL_COMPLETE)
            err = weft__ocl_capture_refuse(
                q, "a wait for an event recorded outside the capture and "
                   "not yet complete");
        ocl_release_event(e);
        return err;
    }
    pthread_mutex_lock(&ctx->lock);
    for (c = ctx->captures; c && c->id != cap_id; c = c->next)
        ;
    if (c && q->base.ctx != ev->ctx)
        err = weft__error(WEFT_ENOTSUP,
                          "opencl: a queue on %s waits for an event that a "
                          "capture on %s recorded; a command buffer holds "
                          "the work of one device",
                          q->base.ctx->dev->name, ev->ctx->dev->name);
    else if (c)
        err = ocl_capture_join(c, q, has_sp, sp);
    pthread_mutex_unlock(&ctx->lock);
    return err;
}
