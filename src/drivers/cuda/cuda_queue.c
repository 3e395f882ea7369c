/*
 * Queues (one non-blocking CUDA stream each), events and host functions
 * of the cuda driver.
 */
#include "internal.h"

/* ---- queues ------------------------------------------------------------ */

int weft__cuda_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                            weft__queue **out)
{
    cuda_queue *q;
    CUresult res;
    int rc;

    if (!(q = weft__calloc(1, sizeof *q)))
        return weft__error(WEFT_ENOMEM, "cuda queue");
    if ((rc = weft__cuda_enter(ctx)) < 0) {
        weft__free(q);
        return rc;
    }
    pthread_mutex_init(&q->stage_lock, NULL);
    res = weft__fault("cuda.cuStreamCreateWithPriority")
              ? CUDA_ERROR_OUT_OF_MEMORY
              : weft__cu.StreamCreateWithPriority(
                    &q->stream, CU_STREAM_NON_BLOCKING, desc->priority);
    if (res != CUDA_SUCCESS) {
        pthread_mutex_destroy(&q->stage_lock);
        weft__free(q);
        return weft__cuda_fail(res, 0, "cuStreamCreateWithPriority: GPU %d",
                               cuda_ctx(ctx)->ordinal);
    }
    q->base.drv = &weft__driver_cuda;
    q->base.ctx = ctx;
    q->base.desc = *desc;
    *out = &q->base;
    return 0;
}

int weft__cuda_queue_sync(weft__queue *q)
{
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuStreamSynchronize")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.StreamSynchronize(cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuStreamSynchronize: GPU %d",
                               cuda_ctx(q->ctx)->ordinal);
    return 0;
}

void weft__cuda_queue_release(weft__queue *q)
{
    CUresult res;

    /*
     * Nothing to report to: errors are logged. The stream is destroyed
     * even if the context cannot be made current (CUDA then finds it by
     * the stream).
     */
    if (weft__cuda_enter(q->ctx) < 0)
        weft__warn("cuda", "queue release: %s", weft_last_error());
    res = weft__cu.StreamSynchronize(cuda_stream(q));
    if (res != CUDA_SUCCESS)
        weft__warn("cuda", "cuStreamSynchronize at queue release: error %d",
                   (int)res);
    res = weft__cu.StreamDestroy(cuda_stream(q));
    if (res != CUDA_SUCCESS)
        weft__warn("cuda", "cuStreamDestroy: error %d", (int)res);
    ((cuda_queue *)q)->stream = NULL;
    for (int i = 0; i < 2; i++) {
        if (((cuda_queue *)q)->stage[i])
            weft__cu.MemFreeHost(((cuda_queue *)q)->stage[i]);
        if (((cuda_queue *)q)->stage_old[i])
            weft__cu.MemFreeHost(((cuda_queue *)q)->stage_old[i]);
    }
    pthread_mutex_destroy(&((cuda_queue *)q)->stage_lock);
}

/* ---- events ------------------------------------------------------------ */

int weft__cuda_event_create(weft__context *ctx, unsigned flags,
                            weft__event **out)
{
    cuda_event *e;
    CUresult res;
    int rc;

    if (!(e = weft__calloc(1, sizeof *e)))
        return weft__error(WEFT_ENOMEM, "cuda event");
    if ((rc = weft__cuda_enter(ctx)) < 0) {
        weft__free(e);
        return rc;
    }
    /* Timing costs a timestamp write per record: only where asked for. */
    res = weft__fault("cuda.cuEventCreate")
              ? CUDA_ERROR_OUT_OF_MEMORY
              : weft__cu.EventCreate(&e->cu, (flags & WEFT__EVENT_TIMING)
                                                 ? CU_EVENT_DEFAULT
                                                 : CU_EVENT_DISABLE_TIMING);
    if (res != CUDA_SUCCESS) {
        weft__free(e);
        return weft__cuda_fail(res, 0, "cuEventCreate: GPU %d",
                               cuda_ctx(ctx)->ordinal);
    }
    e->base.drv = &weft__driver_cuda;
    e->base.ctx = ctx;
    e->base.flags = flags;
    *out = &e->base;
    return 0;
}

/*
 * Record ev on q's stream (record 1), or make the stream wait for it:
 * weft's events and the program's alike. what names the event in the
 * message, and ev_gpu its GPU where weft knows it (else -1).
 */
static int cuda_stream_event(weft__queue *q, CUevent ev, int record,
                             const char *what, int ev_gpu)
{
    const char *call = record ? "cuEventRecord" : "cuStreamWaitEvent";
    int gpu = cuda_ctx(q->ctx)->ordinal;
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    if (weft__fault(record ? "cuda.cuEventRecord" : "cuda.cuStreamWaitEvent"))
        res = CUDA_ERROR_UNKNOWN;
    else if (record)
        res = weft__cu.EventRecord(ev, cuda_stream(q));
    else
        res = weft__cu.StreamWaitEvent(cuda_stream(q), ev, 0);
    if (res == CUDA_SUCCESS)
        return 0;
    if (ev_gpu >= 0)
        return weft__cuda_fail(res, 0, "%s: queue of GPU %d, %s of GPU %d",
                               call, gpu, what, ev_gpu);
    return weft__cuda_fail(res, 0, "%s: queue of GPU %d, %s", call, gpu, what);
}

int weft__cuda_event_record(weft__event *ev, weft__queue *q)
{
    if (ev->ctx->dev != q->ctx->dev)
        return weft__error(
            WEFT_EINVAL, "event of GPU %d recorded on a queue of GPU %d",
            cuda_ctx(ev->ctx)->ordinal, cuda_ctx(q->ctx)->ordinal);
    return cuda_stream_event(q, cuda_ev(ev), 1, "an event",
                             cuda_ctx(ev->ctx)->ordinal);
}

int weft__cuda_queue_wait_event(weft__queue *q, weft__event *ev)
{
    return cuda_stream_event(q, cuda_ev(ev), 0, "an event",
                             cuda_ctx(ev->ctx)->ordinal);
}

int weft__cuda_event_query(weft__event *ev)
{
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(ev->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuEventQuery") ? CUDA_ERROR_UNKNOWN
                                           : weft__cu.EventQuery(cuda_ev(ev));
    if (res == CUDA_ERROR_NOT_READY)
        return WEFT_ENOTREADY; /* not a failure: no detail */
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuEventQuery: GPU %d",
                               cuda_ctx(ev->ctx)->ordinal);
    return 0;
}

int weft__cuda_event_sync(weft__event *ev)
{
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(ev->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuEventSynchronize")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.EventSynchronize(cuda_ev(ev));
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuEventSynchronize: GPU %d",
                               cuda_ctx(ev->ctx)->ordinal);
    return 0;
}

int weft__cuda_event_elapsed(weft__event *start, weft__event *end, uint64_t *ns)
{
    float ms = 0;
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(end->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuEventElapsedTime")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.EventElapsedTime(&ms, cuda_ev(start), cuda_ev(end));
    if (res == CUDA_ERROR_NOT_READY)
        return weft__error(WEFT_ENOTREADY, "timing events not complete yet");
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuEventElapsedTime: GPU %d and GPU %d",
                               cuda_ctx(start->ctx)->ordinal,
                               cuda_ctx(end->ctx)->ordinal);
    /* Resolution is about 0.5 us; a negative time is an order mix-up. */
    *ns = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
    return 0;
}

void weft__cuda_event_destroy(weft__event *ev)
{
    CUresult res;

    if (weft__cuda_enter(ev->ctx) < 0)
        weft__warn("cuda", "event release: %s", weft_last_error());
    res = weft__cu.EventDestroy(cuda_ev(ev));
    if (res != CUDA_SUCCESS)
        weft__warn("cuda", "cuEventDestroy: error %d", (int)res);
    weft__free(ev);
}

int weft__cuda_host_fn(weft__queue *q, weft__host_fn *fn, void *user)
{
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuLaunchHostFunc")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.LaunchHostFunc(cuda_stream(q), fn, user);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuLaunchHostFunc: GPU %d",
                               cuda_ctx(q->ctx)->ordinal);
    return 0;
}

/* ---- native nodes -------------------------------------------------------- */

/*
 * The context is made current before the call (cuBLAS and the program's
 * own launches use the current one); the function's work goes on the
 * stream, and weft's records after it cover it. Weft's own calls make
 * their context current again wherever the function left another.
 *
 * On a stream in a capture (the tape's, driver.h) the function's work on
 * the stream is captured into the graph: nothing here waits or queries
 * (either would end or invalidate the capture). A capture that is no
 * longer active after the call (the function synchronised, queried the
 * stream, or enqueued work a graph cannot hold) fails the call, and so
 * the capture, which the tape then gives up.
 */
int weft__cuda_native_call(weft__queue *q, weft__native_fn *fn, void *user)
{
    cuda_context *c = cuda_ctx(q->ctx);
    weft__native_queue nq = {
        c->cu, (void *)(uintptr_t)cuda_dev(q->ctx->dev)->cu, cuda_stream(q)};
    int before = CU_STREAM_CAPTURE_STATUS_NONE;
    int after = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult res = CUDA_SUCCESS;
    int rc;

    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    if (weft__cu.StreamIsCapturing) {
        res = weft__fault("cuda.cuStreamIsCapturing")
                  ? CUDA_ERROR_UNKNOWN
                  : weft__cu.StreamIsCapturing(cuda_stream(q), &before);
        if (res != CUDA_SUCCESS)
            return weft__cuda_fail(res, 0, "cuStreamIsCapturing: GPU %d",
                                   c->ordinal);
    }
    rc = fn(&nq, user);
    if (before != CU_STREAM_CAPTURE_STATUS_ACTIVE || rc != 0)
        return rc;
    res = weft__cu.StreamIsCapturing(cuda_stream(q), &after);
    if (res != CUDA_SUCCESS && res != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        return weft__cuda_fail(res, 0,
                               "cuStreamIsCapturing after a native function: "
                               "GPU %d",
                               c->ordinal);
    if (res != CUDA_SUCCESS || after != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return weft__error(WEFT_ENOTSUP,
                           "cuda: GPU %d: the native function's work ended or "
                           "invalidated the stream capture (it synchronised, "
                           "queried the stream, or enqueued work a CUDA graph "
                           "cannot hold): it is not capturable",
                           c->ordinal);
    return 0;
}

void weft__cuda_native_context(weft__context *ctx, weft__native_queue *out)
{
    out->context = cuda_ctx(ctx)->cu;
    out->device = (void *)(uintptr_t)cuda_dev(ctx->dev)->cu;
}

void weft__cuda_native_mem(weft__mem *m, size_t off, weft__native_mem *out)
{
    out->address = (uint64_t)cuda_mm(m)->ptr + off;
}

/* ---- external events ----------------------------------------------------- */

int weft__cuda_external_wait(weft__queue *q, void *ev)
{
    return cuda_stream_event(q, (CUevent)ev, 0, "the program's event", -1);
}

/* The event must be of the stream's context (the primary one). */
int weft__cuda_external_record(weft__queue *q, void *ev)
{
    return cuda_stream_event(q, (CUevent)ev, 1,
                             "the program's event (it must belong to the "
                             "device's primary context)",
                             -1);
}

/* A marker of a program's stream: an event of the stream's context. */
typedef struct cuda_mark {
    CUevent ev;
    CUcontext ctx;
} cuda_mark;

/*
 * On the program's thread: its current context is put back as it was. A
 * NULL stream is the default stream of the current context.
 */
int weft__cuda_external_mark(void *queue, void **out)
{
    CUstream s = queue;
    CUcontext old = NULL, ctx = NULL;
    cuda_mark *m;
    CUresult res;

    if (weft__cu.CtxGetCurrent(&old) != CUDA_SUCCESS)
        old = NULL;
    res = s && weft__cu.StreamGetCtx ? weft__cu.StreamGetCtx(s, &ctx)
                                     : CUDA_SUCCESS;
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuStreamGetCtx: the program's stream");
    if (!ctx)
        ctx = old;
    if (!ctx)
        return weft__error(WEFT_EINVAL,
                           "cuda: no context for the program's stream (a "
                           "default stream needs a current context)");
    if (!(m = weft__calloc(1, sizeof *m)))
        return weft__error(WEFT_ENOMEM, "cuda: stream marker");
    m->ctx = ctx;
    res = ctx != old ? weft__cu.CtxSetCurrent(ctx) : CUDA_SUCCESS;
    if (res == CUDA_SUCCESS)
        res = weft__cu.EventCreate(&m->ev, CU_EVENT_DISABLE_TIMING);
    if (res == CUDA_SUCCESS &&
        (res = weft__cu.EventRecord(m->ev, s)) != CUDA_SUCCESS)
        weft__cu.EventDestroy(m->ev);
    if (ctx != old)
        weft__cu.CtxSetCurrent(old);
    if (res != CUDA_SUCCESS) {
        weft__free(m);
        return weft__cuda_fail(res, 0,
                               "cuEventRecord: a marker of the program's "
                               "stream");
    }
    *out = m;
    return 0;
}

int weft__cuda_external_mark_end(void *mark, int wait)
{
    cuda_mark *m = mark;
    CUresult res = CUDA_SUCCESS;

    weft__cu.CtxSetCurrent(m->ctx);
    if (wait)
        res = weft__cu.EventSynchronize(m->ev);
    weft__cu.EventDestroy(m->ev);
    weft__free(m);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0,
                               "cuEventSynchronize: the program's stream");
    return 0;
}
