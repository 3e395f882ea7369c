/*
 * The tape: tape.h.
 */
#include "tape_named.h"

#include "../base/map.h"
#include "../base/options.h"

#include <string.h>

enum { WEFT__TAPE_MAX_QUEUES = 128 };

int weft__tape_supported(const weft__device *dev, int want)
{
    bool env = false, set = weft__opt_bool(WEFT__OPT_NATIVE_GRAPHS, &env);
    int force = want == WEFT_NATIVE_GRAPHS_ON || (set && env);

    if (want == WEFT_NATIVE_GRAPHS_OFF || (set && !env))
        return 0;
    if (!weft__drv_graph_supported(dev))
        return 0;
    /*
     * A CPU device's submission costs little: PoCL 3.1 replays a command
     * buffer several times slower than it runs the same commands one by
     * one (bench/RESULTS.md). On only where asked for, or where the driver
     * says its graphs pay there too (the host driver's).
     */
    return force || dev->props.type != WEFT_DEVICE_CPU ||
           dev->drv->graphs_on_cpu;
}

int weft__tape_joins_devices(const weft__driver *drv)
{
    return drv->graph_record_external && drv->graph_wait_external;
}

static void weft__tape_drop_graph(weft__tape *t)
{
    for (unsigned i = 0; i < t->nsegs; i++) {
        weft__drv_graph_destroy(t->ctx, t->segs[i].graph);
        t->segs[i].graph = NULL;
    }
    t->built = 0;
    t->recorded = 0;
}

static void weft__tape_clear(weft__tape *t)
{
    t->n = t->pos = t->nargs = t->nbytes = 0;
    t->unfit = 0;
    t->moves = 0;
    t->changed = 0;
    t->ctx = NULL;
}

static const weft__submit weft__tape_submit;

const weft__submit *weft__tape_begin(weft__tape *t)
{
    t->pos = 0;
    t->changed = 0;
    t->matched = 0;
    if ((t->built || t->recorded) && !t->broken) {
        t->mode = WEFT__TAPE_DEFER_MODE;
    } else if (t->broken) {
        /* Off, as it is: its graphs may still run (weft__tape_launch),
         * and are released with it. */
        t->mode = WEFT__TAPE_OFF;
    } else {
        weft__tape_drop_graph(t);
        weft__tape_clear(t);
        t->mode = WEFT__TAPE_RECORD_MODE;
    }
    if (t->mode == WEFT__TAPE_OFF)
        return NULL;
    t->submit = weft__tape_submit;
    t->submit.self = t;
    return &t->submit;
}

const weft__submit *weft__tape_capture_begin(weft__tape *t, size_t launches,
                                             size_t args)
{
    if (t->broken)
        return NULL;
    t->pos = 0;
    t->changed = 0;
    t->matched = 0;
    weft__tape_drop_graph(t);
    weft__tape_clear(t);
    /* A launch is one op; the records and waits between lanes, a few more
     * (+ 1: weft__tape_append grows to one past what it stores). */
    if (weft__grow(&t->ops, &t->cap, launches + launches / 8 + 16,
                   sizeof *t->ops) < 0 ||
        weft__grow(&t->args, &t->cap_args, args + 1, sizeof *t->args) < 0)
        weft_clear_error();
    t->mode = WEFT__TAPE_CAPTURE_MODE;
    t->submit = weft__tape_submit;
    t->submit.self = t;
    return &t->submit;
}

/* Run one taped operation now, through the checked entry points. */
static int weft__tape_run(weft__tape *t, const weft__tape_op *o)
{
    switch (o->kind) {
    case WEFT__TAPE_LAUNCH:
        return weft__drv_launch(o->q, o->k, &o->grid, &t->args[o->arg_first],
                                o->nargs);
    case WEFT__TAPE_H2D:
        return weft__drv_copy_h2d(o->q, o->dst, o->dst_off, o->host, o->size);
    case WEFT__TAPE_D2H:
        return weft__drv_copy_d2h(o->q, o->host, o->src, o->src_off, o->size);
    case WEFT__TAPE_D2D:
        return weft__drv_copy_d2d(o->q, o->dst, o->dst_off, o->src, o->src_off,
                                  o->size);
    case WEFT__TAPE_PEER:
        return weft__drv_copy_peer(o->q, o->dst, o->dst_off, o->src, o->src_off,
                                   o->size);
    case WEFT__TAPE_FILL:
        return weft__drv_fill(o->q, o->dst, o->dst_off, &t->bytes[o->arg_first],
                              o->nargs, o->size);
    case WEFT__TAPE_RECORD:
        return weft__drv_event_record(o->ev, o->q);
    case WEFT__TAPE_WAIT:
        return weft__drv_queue_wait_event(o->q, o->ev);
    case WEFT__TAPE_HOST_FN:
        return weft__drv_host_fn(o->q, o->fn, o->user);
    case WEFT__TAPE_NATIVE:
        return weft__drv_native_call(o->q, o->nfn, &t->bytes[o->arg_first]);
    case WEFT__TAPE_H2D_RECT:
        return weft__drv_copy_h2d_rect(o->q, o->dst, o->host, &o->rect);
    case WEFT__TAPE_D2H_RECT:
        return weft__drv_copy_d2h_rect(o->q, o->host, o->src, &o->rect);
    case WEFT__TAPE_D2D_RECT:
        return weft__drv_copy_d2d_rect(o->q, o->dst, o->src, &o->rect);
    case WEFT__TAPE_PEER_RECT:
        return weft__drv_copy_peer_rect(o->q, o->dst, o->src, &o->rect);
    }
    return weft__error(WEFT_EINVAL, "tape: operation %d", (int)o->kind);
}

/*
 * Leave DEFER: what was deferred runs now, in order; the graph is dropped
 * and the launch goes on op by op (nothing more taped).
 */
static int weft__tape_flush(weft__tape *t)
{
    int rc = 0;

    for (size_t i = 0; i < t->pos && rc == 0; i++)
        rc = weft__tape_run(t, &t->ops[i]);
    t->mode = WEFT__TAPE_OFF;
    weft__tape_drop_graph(t);
    weft__tape_clear(t);
    t->matched = 0;
    weft__debug("tape", "launch left its native graph");
    return rc;
}

/* Whether a launch argument equals the taped one. */
static int weft__karg_equal(const weft__karg *a, const weft__karg *b)
{
    if (a->type != b->type || a->size != b->size)
        return 0;
    if (a->type == WEFT_PARAM_BUFFER)
        return a->u.buf.mem == b->u.buf.mem &&
               a->u.buf.offset == b->u.buf.offset;
    if (a->type == WEFT_PARAM_LOCAL)
        return 1;
    return !a->size || !memcmp(a->u.value, b->u.value, a->size);
}

/* How an operation compares with the taped one at its place. */
enum { WEFT__OP_DIFFERS, WEFT__OP_PARAMS, WEFT__OP_EQUAL };

/*
 * EQUAL: the same operation (same queue, kernel, grid, argument bytes,
 * memory and offsets, events, host function). PARAMS: it differs only
 * where a native graph can be updated in place: a launch's argument values
 * and buffers (argument types and sizes the same), a fill's or a device
 * copy's memory and offsets, a host copy's pointer (pinned). Else DIFFERS.
 */
static int weft__op_match(const weft__tape *t, const weft__tape_op *a,
                          const weft__tape_op *b, const weft__karg *args,
                          const void *pattern)
{
    int same = 1;

    if (a->kind != b->kind || a->q != b->q)
        return WEFT__OP_DIFFERS;
    switch (a->kind) {
    case WEFT__TAPE_LAUNCH:
        if (a->k != b->k || a->nargs != b->nargs ||
            memcmp(&a->grid, &b->grid, sizeof a->grid))
            return WEFT__OP_DIFFERS;
        for (uint32_t i = 0; i < a->nargs; i++) {
            const weft__karg *x = &args[i], *y = &t->args[b->arg_first + i];

            if (x->type != y->type || x->size != y->size)
                return WEFT__OP_DIFFERS;
            same = same && weft__karg_equal(x, y);
        }
        return same ? WEFT__OP_EQUAL : WEFT__OP_PARAMS;
    case WEFT__TAPE_FILL:
        if (a->size != b->size || a->nargs != b->nargs)
            return WEFT__OP_DIFFERS;
        return a->dst == b->dst && a->dst_off == b->dst_off &&
                       !memcmp(pattern, &t->bytes[b->arg_first], a->nargs)
                   ? WEFT__OP_EQUAL
                   : WEFT__OP_PARAMS;
    case WEFT__TAPE_H2D:
    case WEFT__TAPE_D2H:
    case WEFT__TAPE_D2D:
    case WEFT__TAPE_PEER:
        if (a->size != b->size)
            return WEFT__OP_DIFFERS;
        if (a->dst == b->dst && a->src == b->src && a->dst_off == b->dst_off &&
            a->src_off == b->src_off && a->host == b->host)
            return WEFT__OP_EQUAL;
        if (a->kind == WEFT__TAPE_PEER ||
            (a->kind != WEFT__TAPE_D2D &&
             weft__drv_host_is_pinned(a->q->ctx, a->host, a->size) != 1))
            return WEFT__OP_DIFFERS;
        return WEFT__OP_PARAMS;
    case WEFT__TAPE_RECORD:
    case WEFT__TAPE_WAIT:
        return a->ev == b->ev ? WEFT__OP_EQUAL : WEFT__OP_DIFFERS;
    case WEFT__TAPE_HOST_FN:
        return a->fn == b->fn && a->user == b->user ? WEFT__OP_EQUAL
                                                    : WEFT__OP_DIFFERS;
    case WEFT__TAPE_H2D_RECT:
    case WEFT__TAPE_D2H_RECT:
    case WEFT__TAPE_D2D_RECT:
    case WEFT__TAPE_PEER_RECT:
        return a->dst == b->dst && a->src == b->src && a->host == b->host &&
                       !memcmp(&a->rect, &b->rect, sizeof a->rect)
                   ? WEFT__OP_EQUAL
                   : WEFT__OP_DIFFERS;
    case WEFT__TAPE_NATIVE:
        /* Another call (other addresses, say) is captured again anew. */
        if (a->nfn != b->nfn || a->nargs != b->nargs)
            return WEFT__OP_DIFFERS;
        return !memcmp(pattern, &t->bytes[b->arg_first], a->nargs)
                   ? WEFT__OP_EQUAL
                   : WEFT__OP_PARAMS;
    }
    return WEFT__OP_DIFFERS;
}

/* Take a's parameters into the taped b (weft__op_match said PARAMS). */
static void weft__op_update(weft__tape *t, const weft__tape_op *a,
                            weft__tape_op *b, const weft__karg *args,
                            const void *pattern)
{
    if (a->kind == WEFT__TAPE_LAUNCH) {
        for (uint32_t i = 0; i < a->nargs; i++) {
            weft__karg *y = &t->args[b->arg_first + i];

            if (y->type == WEFT_PARAM_BUFFER)
                y->u.buf = args[i].u.buf;
            else if (y->type != WEFT_PARAM_LOCAL && y->size)
                memcpy((void *)(uintptr_t)y->u.value, args[i].u.value, y->size);
        }
        return;
    }
    if (a->kind == WEFT__TAPE_NATIVE) {
        if (pattern && a->nargs)
            memcpy(&t->bytes[b->arg_first], pattern, a->nargs);
        return;
    }
    if (a->kind == WEFT__TAPE_FILL && pattern)
        memcpy(&t->bytes[b->arg_first], pattern, a->nargs);
    b->dst = a->dst;
    b->src = a->src;
    b->dst_off = a->dst_off;
    b->src_off = a->src_off;
    b->host = a->host;
}

/* Append op (RECORD); a tape that cannot hold it is unfit. */
static void weft__tape_append(weft__tape *t, const weft__tape_op *op,
                              const weft__karg *args, const void *pattern)
{
    weft__tape_op *o;

    if (t->unfit)
        return;
    if (!t->ctx)
        t->ctx = op->q->ctx;
    /* One device, or devices of one driver whose graphs wait for each
     * other; copies only between them and pinned memory. */
    if ((op->q->ctx != t->ctx && (op->q->ctx->drv != t->ctx->drv ||
                                  !weft__tape_joins_devices(t->ctx->drv))) ||
        ((op->kind == WEFT__TAPE_H2D || op->kind == WEFT__TAPE_D2H) &&
         weft__drv_host_is_pinned(op->q->ctx, op->host, op->size) != 1) ||
        (op->kind == WEFT__TAPE_H2D_RECT &&
         weft__drv_host_is_pinned(
             op->q->ctx, (const char *)op->host + op->rect.src.off,
             weft__rect_span(&op->rect, &op->rect.src)) != 1) ||
        (op->kind == WEFT__TAPE_D2H_RECT &&
         weft__drv_host_is_pinned(
             op->q->ctx, (const char *)op->host + op->rect.dst.off,
             weft__rect_span(&op->rect, &op->rect.dst)) != 1) ||
        (op->kind == WEFT__TAPE_NATIVE && !op->q->ctx->drv->native_capture) ||
        weft__grow(&t->ops, &t->cap, t->n + 1, sizeof *t->ops) < 0) {
        weft_clear_error();
        t->unfit = 1;
        weft__debug("tape",
                    "no native graph: operation %zu (kind %d on %s) "
                    "is on another driver, copies unpinned memory, calls a "
                    "native function the driver cannot capture, or finds no "
                    "memory",
                    t->n, (int)op->kind, op->q->ctx->dev->name);
        return;
    }
    o = &t->ops[t->n];
    *o = *op;
    o->node = t->node;
    if (op->kind != WEFT__TAPE_LAUNCH && op->kind != WEFT__TAPE_RECORD &&
        op->kind != WEFT__TAPE_WAIT)
        t->moves++;
    if (op->kind == WEFT__TAPE_LAUNCH) {
        size_t need = 0;

        for (uint32_t i = 0; i < op->nargs; i++)
            if (args[i].type != WEFT_PARAM_BUFFER &&
                args[i].type != WEFT_PARAM_LOCAL)
                need += args[i].size;
        if (weft__grow(&t->args, &t->cap_args, t->nargs + op->nargs + 1,
                       sizeof *t->args) < 0 ||
            weft__grow(&t->bytes, &t->cap_bytes, t->nbytes + need + 1, 1) < 0) {
            weft_clear_error();
            t->unfit = 1;
            return;
        }
        o->arg_first = (uint32_t)t->nargs;
        for (uint32_t i = 0; i < op->nargs; i++) {
            weft__karg *a = &t->args[t->nargs++];

            *a = args[i];
            if (a->type != WEFT_PARAM_BUFFER && a->type != WEFT_PARAM_LOCAL &&
                a->size) {
                memcpy(&t->bytes[t->nbytes], args[i].u.value, a->size);
                /* An offset until weft__tape_rebase: bytes may move. */
                a->u.value = (const void *)(uintptr_t)t->nbytes;
                t->nbytes += a->size;
            }
        }
    } else if (op->kind == WEFT__TAPE_FILL) {
        if (weft__grow(&t->bytes, &t->cap_bytes, t->nbytes + op->nargs + 1, 1) <
            0) {
            weft_clear_error();
            t->unfit = 1;
            return;
        }
        o->arg_first = (uint32_t)t->nbytes;
        memcpy(&t->bytes[t->nbytes], pattern, op->nargs);
        t->nbytes += op->nargs;
    } else if (op->kind == WEFT__TAPE_NATIVE) {
        /* The call is read as a struct where it lies: aligned. */
        size_t at = (t->nbytes + 15) & ~(size_t)15;

        if (weft__grow(&t->bytes, &t->cap_bytes, at + op->nargs + 1, 1) < 0) {
            weft_clear_error();
            t->unfit = 1;
            return;
        }
        o->arg_first = (uint32_t)at;
        memcpy(&t->bytes[at], pattern, op->nargs);
        t->nbytes = at + op->nargs;
    }
    t->n++;
}

/* Scalar arguments point into bytes once the tape is complete. */
static void weft__tape_rebase(weft__tape *t)
{
    for (size_t i = 0; i < t->nargs; i++) {
        weft__karg *a = &t->args[i];

        if (a->type != WEFT_PARAM_BUFFER && a->type != WEFT_PARAM_LOCAL &&
            a->size)
            a->u.value = &t->bytes[(uintptr_t)a->u.value];
    }
}

/*
 * An enqueue op about to run: 1 if it was deferred (not to be run now), 0
 * to run it, < 0 on error (a flushed operation failed).
 */
static int weft__tape_enqueue(weft__tape *t, const weft__tape_op *op,
                              const weft__karg *args, const void *pattern)
{
    int match;

    if (t->mode == WEFT__TAPE_RECORD_MODE) {
        weft__tape_append(t, op, args, pattern);
        return 0;
    }
    if (t->mode == WEFT__TAPE_CAPTURE_MODE) {
        weft__tape_append(t, op, args, pattern);
        return 1;
    }
    if (t->mode != WEFT__TAPE_DEFER_MODE)
        return 0;
    match = t->pos < t->n
                ? weft__op_match(t, op, &t->ops[t->pos], args, pattern)
                : WEFT__OP_DIFFERS;
    if (match == WEFT__OP_PARAMS) {
        weft__op_update(t, op, &t->ops[t->pos], args, pattern);
        t->changed = 1;
    }
    if (match != WEFT__OP_DIFFERS) {
        t->pos++;
        return 1;
    }
    return weft__tape_flush(t);
}

int weft__tape_host_waits(weft__tape *t)
{
    if (t->mode == WEFT__TAPE_RECORD_MODE) {
        if (!t->unfit)
            weft__debug("tape",
                        "no native graph: the host waits after "
                        "operation %zu",
                        t->n);
        t->unfit = 1;
        return 0;
    }
    if (t->mode == WEFT__TAPE_DEFER_MODE)
        return weft__tape_flush(t);
    if (t->mode == WEFT__TAPE_CAPTURE_MODE) {
        /* Nothing of this issue ran: there is nothing to wait for. */
        t->unfit = 1;
        return 1;
    }
    return 0;
}

/* ---- the submission ------------------------------------------------------
 * Enqueues: the entry point's checks first (an operation that fails them
 * is neither taped nor run), then the tape, then the entry point itself
 * unless the tape deferred the operation. Host waits: the checks, the
 * tape, the entry point.
 */

/* checked: the weft__drv_check_<op> result; as weft__tape_enqueue. */
static int weft__tape_take(void *self, int checked, const weft__tape_op *op,
                           const weft__karg *args, const void *pattern)
{
    if (checked != 0)
        return checked < 0 ? checked : 1; /* 1: nothing to enqueue */
    return weft__tape_enqueue(self, op, args, pattern);
}

/* The entry point's call, unless rc (from weft__tape_take) says not. */
#define WEFT__TAPE_PASS(rc, call) ((rc) != 0 ? ((rc) > 0 ? 0 : (rc)) : (call))

static int weft__tape_copy_h2d(void *self, weft__queue *q, weft__mem *dst,
                               size_t dst_off, const void *src, size_t size)
{
    weft__tape_op op = {.kind = WEFT__TAPE_H2D,
                        .q = q,
                        .dst = dst,
                        .dst_off = dst_off,
                        .host = (void *)(uintptr_t)src,
                        .size = size};
    int rc = weft__tape_take(
        self, weft__drv_check_copy_h2d(q, dst, dst_off, src, size), &op, NULL,
        NULL);

    return WEFT__TAPE_PASS(rc, weft__drv_copy_h2d(q, dst, dst_off, src, size));
}

static int weft__tape_copy_d2h(void *self, weft__queue *q, void *dst,
                               weft__mem *src, size_t src_off, size_t size)
{
    weft__tape_op op = {.kind = WEFT__TAPE_D2H,
                        .q = q,
                        .src = src,
                        .src_off = src_off,
                        .host = dst,
                        .size = size};
    int rc = weft__tape_take(
        self, weft__drv_check_copy_d2h(q, dst, src, src_off, size), &op, NULL,
        NULL);

    return WEFT__TAPE_PASS(rc, weft__drv_copy_d2h(q, dst, src, src_off, size));
}

static int weft__tape_copy_d2d(void *self, weft__queue *q, weft__mem *dst,
                               size_t dst_off, weft__mem *src, size_t src_off,
                               size_t size)
{
    weft__tape_op op = {.kind = WEFT__TAPE_D2D,
                        .q = q,
                        .dst = dst,
                        .dst_off = dst_off,
                        .src = src,
                        .src_off = src_off,
                        .size = size};
    int rc = weft__tape_take(
        self, weft__drv_check_copy_d2d(q, dst, dst_off, src, src_off, size),
        &op, NULL, NULL);

    return WEFT__TAPE_PASS(
        rc, weft__drv_copy_d2d(q, dst, dst_off, src, src_off, size));
}

static int weft__tape_copy_peer(void *self, weft__queue *q, weft__mem *dst,
                                size_t dst_off, weft__mem *src, size_t src_off,
                                size_t size)
{
    weft__tape_op op = {.kind = WEFT__TAPE_PEER,
                        .q = q,
                        .dst = dst,
                        .dst_off = dst_off,
                        .src = src,
                        .src_off = src_off,
                        .size = size};
    int rc = weft__tape_take(
        self, weft__drv_check_copy_peer(q, dst, dst_off, src, src_off, size),
        &op, NULL, NULL);

    return WEFT__TAPE_PASS(
        rc, weft__drv_copy_peer(q, dst, dst_off, src, src_off, size));
}

static int weft__tape_fill(void *self, weft__queue *q, weft__mem *dst,
                           size_t off, const void *pattern, size_t pattern_size,
                           size_t size)
{
    weft__tape_op op = {.kind = WEFT__TAPE_FILL,
                        .q = q,
                        .dst = dst,
                        .dst_off = off,
                        .size = size,
                        .nargs = (uint32_t)pattern_size};
    int rc = weft__tape_take(
        self, weft__drv_check_fill(q, dst, off, pattern, pattern_size, size),
        &op, NULL, pattern);

    return WEFT__TAPE_PASS(
        rc, weft__drv_fill(q, dst, off, pattern, pattern_size, size));
}

static int weft__tape_launch_op(void *self, weft__queue *q, weft__kernel *k,
                                const weft__grid *grid, const weft__karg *args,
                                unsigned nargs)
{
    int rc = weft__drv_check_launch(q, k, grid, args, nargs);

    if (rc == 0) {
        weft__tape_op op = {.kind = WEFT__TAPE_LAUNCH,
                            .q = q,
                            .k = k,
                            .grid = *grid,
                            .nargs = nargs};

        rc = weft__tape_enqueue(self, &op, args, NULL);
    }
    return WEFT__TAPE_PASS(rc, weft__drv_launch(q, k, grid, args, nargs));
}

static int weft__tape_event_record(void *self, weft__event *ev, weft__queue *q)
{
    weft__tape_op op = {.kind = WEFT__TAPE_RECORD, .q = q, .ev = ev};
    int rc = weft__tape_take(self, weft__drv_check_event_record(ev, q), &op,
                             NULL, NULL);

    return WEFT__TAPE_PASS(rc, weft__drv_event_record(ev, q));
}

static int weft__tape_queue_wait_event(void *self, weft__queue *q,
                                       weft__event *ev)
{
    weft__tape_op op = {.kind = WEFT__TAPE_WAIT, .q = q, .ev = ev};
    int rc = weft__tape_take(self, weft__drv_check_queue_wait_event(q, ev), &op,
                             NULL, NULL);

    return WEFT__TAPE_PASS(rc, weft__drv_queue_wait_event(q, ev));
}

static int weft__tape_host_fn(void *self, weft__queue *q, weft__host_fn *fn,
                              void *user)
{
    weft__tape_op op = {
        .kind = WEFT__TAPE_HOST_FN, .q = q, .fn = fn, .user = user};
    int rc = weft__tape_take(self, weft__drv_check_host_fn(q, fn, user), &op,
                             NULL, NULL);

    return WEFT__TAPE_PASS(rc, weft__drv_host_fn(q, fn, user));
}

/* Taken and not run (deferred, captured): 1 (submit.h). */
static int weft__tape_native_call(void *self, weft__queue *q,
                                  weft__native_fn *fn, void *call, size_t size,
                                  int enqueue)
{
    weft__tape_op op = {
        .kind = WEFT__TAPE_NATIVE, .q = q, .nfn = fn, .nargs = (uint32_t)size};
    int rc = weft__tape_take(self, weft__drv_check_native_call(q, fn, call),
                             &op, NULL, call);

    if (rc != 0)
        return rc > 0 ? 1 : rc;
    return enqueue ? weft__drv_native_enqueue(q, fn, call)
                   : weft__drv_native_call(q, fn, call);
}

/* A host wait: checked, told to the tape (which may flush), then made. */
#define WEFT__TAPE_HOST_WAIT(self, check, call)                                \
    do {                                                                       \
        int rc_ = (check);                                                     \
                                                                               \
        if (rc_ == 0)                                                          \
            rc_ = weft__tape_host_waits(self);                                 \
        return rc_ < 0 ? rc_ : rc_ > 0 ? 0 : (call);                           \
    } while (0)

static int weft__tape_queue_sync(void *self, weft__queue *q)
{
    WEFT__TAPE_HOST_WAIT(self, weft__drv_check_queue_sync(q),
                         weft__drv_queue_sync(q));
}

static int weft__tape_event_sync(void *self, weft__event *ev)
{
    WEFT__TAPE_HOST_WAIT(self, weft__drv_check_event_sync(ev),
                         weft__drv_event_sync(ev));
}

static int weft__tape_event_query(void *self, weft__event *ev)
{
    WEFT__TAPE_HOST_WAIT(self, weft__drv_check_event_query(ev),
                         weft__drv_event_query(ev));
}

static int weft__tape_event_elapsed(void *self, weft__event *start,
                                    weft__event *end, uint64_t *ns)
{
    WEFT__TAPE_HOST_WAIT(self, weft__drv_check_event_elapsed(start, end, ns),
                         weft__drv_event_elapsed(start, end, ns));
}

/* ---- block copies: taped whole, so that a replay makes one 2-D copy */

static int weft__tape_copy_h2d_rect(void *self, weft__queue *q, weft__mem *dst,
                                    const void *src, const weft__rect *r)
{
    weft__tape_op op = {.kind = WEFT__TAPE_H2D_RECT,
                        .q = q,
                        .dst = dst,
                        .host = (void *)(uintptr_t)src,
                        .size = (size_t)weft__rect_bytes(r),
                        .rect = *r};
    int rc = weft__tape_take(
        self, weft__drv_check_copy_h2d_rect(q, dst, src, r, NULL), &op, NULL,
        NULL);

    return WEFT__TAPE_PASS(rc, weft__drv_copy_h2d_rect(q, dst, src, r));
}

static int weft__tape_copy_d2h_rect(void *self, weft__queue *q, void *dst,
                                    weft__mem *src, const weft__rect *r)
{
    weft__tape_op op = {.kind = WEFT__TAPE_D2H_RECT,
                        .q = q,
                        .src = src,
                        .host = dst,
                        .size = (size_t)weft__rect_bytes(r),
                        .rect = *r};
    int rc = weft__tape_take(
        self, weft__drv_check_copy_d2h_rect(q, dst, src, r, NULL), &op, NULL,
        NULL);

    return WEFT__TAPE_PASS(rc, weft__drv_copy_d2h_rect(q, dst, src, r));
}

static int weft__tape_copy_d2d_rect(void *self, weft__queue *q, weft__mem *dst,
                                    weft__mem *src, const weft__rect *r)
{
    weft__tape_op op = {.kind = WEFT__TAPE_D2D_RECT,
                        .q = q,
                        .dst = dst,
                        .src = src,
                        .size = (size_t)weft__rect_bytes(r),
                        .rect = *r};
    int rc = weft__tape_take(
        self, weft__drv_check_copy_d2d_rect(q, dst, src, r, NULL), &op, NULL,
        NULL);

    return WEFT__TAPE_PASS(rc, weft__drv_copy_d2d_rect(q, dst, src, r));
}

static int weft__tape_copy_peer_rect(void *self, weft__queue *q, weft__mem *dst,
                                     weft__mem *src, const weft__rect *r)
{
    weft__tape_op op = {.kind = WEFT__TAPE_PEER_RECT,
                        .q = q,
                        .dst = dst,
                        .src = src,
                        .size = (size_t)weft__rect_bytes(r),
                        .rect = *r};
    int rc = weft__tape_take(
        self, weft__drv_check_copy_peer_rect(q, dst, src, r, NULL), &op, NULL,
        NULL);

    return WEFT__TAPE_PASS(rc, weft__drv_copy_peer_rect(q, dst, src, r));
}

static const weft__submit weft__tape_submit = {
    .copy_h2d_rect = weft__tape_copy_h2d_rect,
    .copy_d2h_rect = weft__tape_copy_d2h_rect,
    .copy_d2d_rect = weft__tape_copy_d2d_rect,
    .copy_peer_rect = weft__tape_copy_peer_rect,
    .copy_h2d = weft__tape_copy_h2d,
    .copy_d2h = weft__tape_copy_d2h,
    .copy_d2d = weft__tape_copy_d2d,
    .copy_peer = weft__tape_copy_peer,
    .fill = weft__tape_fill,
    .launch = weft__tape_launch_op,
    .event_record = weft__tape_event_record,
    .queue_wait_event = weft__tape_queue_wait_event,
    .host_fn = weft__tape_host_fn,
    .native_call = weft__tape_native_call,
    .queue_sync = weft__tape_queue_sync,
    .event_sync = weft__tape_event_sync,
    .event_query = weft__tape_event_query,
    .event_elapsed = weft__tape_event_elapsed,
};

/* Room for n more of size each (weft__grow, for unsigned counts). */
static int weft__tape_room(void *arr, unsigned *cap, unsigned used, unsigned n,
                           size_t size)
{
    size_t c = *cap;
    int rc = weft__grow(arr, &c, (size_t)used + n, size);

    *cap = (unsigned)c;
    return rc;
}

/* What weft__tape_segment works with; freed by weft__tape_cut_free. */
typedef struct weft__tape_cut {
    weft__context *ctx[WEFT__TAPE_MAX_QUEUES]; /* devices, first seen first */
    weft__queue *q[WEFT__TAPE_MAX_QUEUES];     /* each one's first queue */
    unsigned cur[WEFT__TAPE_MAX_QUEUES];       /* each one's last segment */
    unsigned nctx;
    unsigned *seg_ctx; /* per segment (in the order made): its device */
    unsigned nseg, cap_seg;
    unsigned *from, *to; /* edges between segments: from before to */
    unsigned nedge, cap_edge, cap_to;
    weft__map records;   /* event -> the op of its latest record */
    unsigned char *seen; /* per segment, for searches */
    unsigned *stack;
} weft__tape_cut;

static void weft__tape_cut_free(weft__tape_cut *c)
{
    weft__free(c->seg_ctx);
    weft__free(c->from);
    weft__free(c->to);
    weft__map_fini(&c->records);
    weft__free(c->seen);
    weft__free(c->stack);
}

static bool weft__tape_record_of(uintptr_t op, const void *ev, const void *t)
{
    return ((const weft__tape *)t)->ops[op].ev == ev;
}

static int weft__tape_edge(weft__tape_cut *c, unsigned from, unsigned to)
{
    int rc = weft__tape_room((void **)&c->from, &c->cap_edge, c->nedge, 1,
                             sizeof *c->from);

    if (rc == 0)
        rc = weft__tape_room((void **)&c->to, &c->cap_to, c->nedge, 1,
                             sizeof *c->to);
    if (rc < 0)
        return rc;
    c->from[c->nedge] = from;
    c->to[c->nedge++] = to;
    return 0;
}

/* Whether segment b must come after a already (a path of edges a..b). */
static int weft__tape_reaches(weft__tape_cut *c, unsigned a, unsigned b)
{
    unsigned top = 0;

    memset(c->seen, 0, c->nseg);
    c->stack[top++] = a;
    c->seen[a] = 1;
    while (top) {
        unsigned s = c->stack[--top];

        if (s == b)
            return 1;
        for (unsigned e = 0; e < c->nedge; e++)
            if (c->from[e] == s && !c->seen[c->to[e]]) {
                c->seen[c->to[e]] = 1;
                c->stack[top++] = c->to[e];
            }
    }
    return 0;
}

/* A new segment of device d, after its last one if it has one. */
static int weft__tape_new_seg(weft__tape_cut *c, unsigned d)
{
    unsigned s = c->nseg;
    int rc = weft__tape_room((void **)&c->seg_ctx, &c->cap_seg, c->nseg, 1,
                             sizeof *c->seg_ctx);
    unsigned char *seen;
    unsigned *stack;

    if (rc < 0)
        return rc;
    seen = weft__realloc(c->seen, s + 1);
    if (seen)
        c->seen = seen;
    stack = seen ? weft__realloc(c->stack, (s + 1) * sizeof *stack) : NULL;
    if (!stack)
        return weft__error(WEFT_ENOMEM, "tape: out of memory");
    c->stack = stack;
    c->seg_ctx[c->nseg++] = d;
    if (c->cur[d] != UINT32_MAX && (rc = weft__tape_edge(c, c->cur[d], s)) < 0)
        return rc;
    c->cur[d] = s;
    return 0;
}

/*
 * Op i of the cut (weft__tape_segment) on device d: its segment, and for
 * a wait its way of capture (and its record's). *nx counts the records
 * waited for by other devices.
 */
static int weft__tape_cut_op(weft__tape *t, weft__tape_cut *c, size_t i,
                             unsigned d, unsigned *nx)
{
    weft__tape_op *o = &t->ops[i];
    int rc;

    o->how = 0;
    o->xev = 0;
    o->rec = WEFT__TAPE_NO_NODE;
    if (o->kind == WEFT__TAPE_WAIT) {
        uintptr_t *at = weft__map_find(&c->records, weft__hash_ptr(o->ev),
                                       o->ev, weft__tape_record_of, t);
        weft__tape_op *r = at ? &t->ops[*at] : NULL;

        if (at)
            o->rec = (uint32_t)*at;
        if (!r) {
            o->how = WEFT__TAPE_BEFORE;
        } else if (r->q->ctx == o->q->ctx) {
            if (r->seg == c->cur[d])
                r->how |= WEFT__TAPE_INTERNAL;
            else
                o->how = WEFT__TAPE_SKIP;
        } else {
            /* After the record's segment; a new one if this device's
             * last must come before that one. */
            if (weft__tape_reaches(c, c->cur[d], r->seg) &&
                (rc = weft__tape_new_seg(c, d)) < 0)
                return rc;
            if ((rc = weft__tape_edge(c, r->seg, c->cur[d])) < 0)
                return rc;
            if (!(r->how & WEFT__TAPE_EXTERNAL)) {
                r->how |= WEFT__TAPE_EXTERNAL;
                r->xev = (*nx)++;
            }
            o->how = WEFT__TAPE_EXTERNAL;
            o->xev = r->xev;
        }
    }
    o->seg = c->cur[d];
    if (o->kind == WEFT__TAPE_RECORD) {
        uintptr_t *at = NULL;
        /* Room was reserved for every op: this cannot fail. */
        int added = weft__map_put(&c->records, weft__hash_ptr(o->ev), o->ev, i,
                                  weft__tape_record_of, t, &at);

        weft__assert(added >= 0 && at);
        *at = i;
    }
    return 0;
}

/*
 * The launch order of the cut's segments: the edges' (Kahn's), the first
 * made first; t->segs get it (with their queues) and the ops their
 * segments renumbered in it.
 */
static int weft__tape_order(weft__tape *t, weft__tape_cut *c)
{
    unsigned *rank = weft__calloc(c->nseg, sizeof *rank);
    unsigned *indeg = weft__calloc(c->nseg, sizeof *indeg);
    int rc = 0;

    if (!rank || !indeg)
        rc = weft__error(WEFT_ENOMEM, "tape: out of memory");
    if (rc == 0 && c->nseg != t->nsegs) {
        weft__tape_seg *segs;

        weft__tape_drop_graph(t); /* another cut: no graph to update */
        segs = weft__realloc(t->segs, c->nseg * sizeof *segs);
        if (!segs) {
            rc = weft__error(WEFT_ENOMEM, "tape: out of memory");
        } else {
            t->segs = segs;
            for (unsigned s = t->nsegs; s < c->nseg; s++)
                t->segs[s] = (weft__tape_seg){NULL, NULL};
            t->nsegs = c->nseg;
        }
    }
    /* seen (left as the last search made it, or as realloc gave it where
     * none was made) now marks the segments already ranked. */
    if (rc == 0)
        memset(c->seen, 0, c->nseg);
    for (unsigned e = 0; rc == 0 && e < c->nedge; e++)
        indeg[c->to[e]]++;
    for (unsigned k = 0; rc == 0 && k < c->nseg; k++) {
        unsigned s = 0;

        while (s < c->nseg && (indeg[s] || c->seen[s] == 2))
            s++;
        if (s == c->nseg) {
            rc = weft__error(WEFT_EINTERNAL, "tape: segments in a cycle");
            break;
        }
        c->seen[s] = 2;
        rank[s] = k;
        if (t->segs[k].q != c->q[c->seg_ctx[s]] && t->segs[k].graph) {
            weft__drv_graph_destroy(t->ctx, t->segs[k].graph);
            t->segs[k].graph = NULL;
        }
        t->segs[k].q = c->q[c->seg_ctx[s]];
        for (unsigned e = 0; e < c->nedge; e++)
            if (c->from[e] == s)
                indeg[c->to[e]]--;
    }
    for (size_t i = 0; rc == 0 && i < t->n; i++)
        t->ops[i].seg = rank[t->ops[i].seg];
    weft__free(rank);
    weft__free(indeg);
    return rc;
}

/* The events of external records: the tape's, of their device. */
static int weft__tape_xevents(weft__tape *t)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < t->n; i++) {
        weft__tape_op *o = &t->ops[i];
        weft__event **ev;

        if (o->kind != WEFT__TAPE_RECORD || !(o->how & WEFT__TAPE_EXTERNAL))
            continue;
        if (o->xev >= t->nxev) {
            if ((rc = weft__tape_room((void **)&t->xev, &(unsigned){t->nxev},
                                      t->nxev, o->xev + 1 - t->nxev,
                                      sizeof *t->xev)) < 0)
                break;
            while (t->nxev <= o->xev)
                t->xev[t->nxev++] = NULL;
        }
        ev = &t->xev[o->xev];
        if (*ev && (*ev)->ctx != o->q->ctx) {
            weft__drv_event_destroy(*ev);
            *ev = NULL;
        }
        if (!*ev)
            rc = weft__drv_event_create(o->q->ctx, 0, ev);
    }
    return rc;
}

/*
 * Cut the tape into segments (tape.h, "Several devices"): every op gets
 * its segment and every record and wait its way of capture; t->segs
 * their launch order (with their queues). Segments are numbered in the
 * order they are made, then renumbered in launch order.
 */
static int weft__tape_segment(weft__tape *t)
{
    weft__tape_cut c = {.nctx = 0};
    unsigned nx = 0;
    int rc = 0;

    rc = weft__map_reserve(&c.records, t->n);
    for (size_t i = 0; i < t->n && rc == 0; i++) {
        weft__context *ctx = t->ops[i].q->ctx;
        unsigned d;

        for (d = 0; d < c.nctx && c.ctx[d] != ctx; d++)
            ;
        if (d == c.nctx) {
            if (d == WEFT__TAPE_MAX_QUEUES) {
                rc = weft__error(WEFT_ENOTSUP, "tape: too many devices");
                break;
            }
            c.ctx[d] = ctx;
            c.q[d] = t->ops[i].q;
            c.cur[d] = UINT32_MAX;
            c.nctx++;
            if ((rc = weft__tape_new_seg(&c, d)) < 0)
                break;
        }
        rc = weft__tape_cut_op(t, &c, i, d, &nx);
    }
    if (rc == 0)
        rc = weft__tape_order(t, &c);
    if (rc == 0)
        rc = weft__tape_xevents(t);
    weft__tape_cut_free(&c);
    return rc;
}

/* Run op o of the capture of its segment (a record or wait as cut). */
static int weft__tape_capture_op(weft__tape *t, const weft__tape_op *o)
{
    const weft__driver *drv = t->ctx->drv;
    int rc = 0;

    if (o->kind == WEFT__TAPE_RECORD && (o->how & WEFT__TAPE_EXTERNAL)) {
        rc = weft__drv_graph_record_external(t->xev[o->xev], o->q);
        if (rc < 0 || !(o->how & WEFT__TAPE_INTERNAL))
            return rc;
    } else if (o->kind == WEFT__TAPE_WAIT) {
        if (o->how & WEFT__TAPE_SKIP)
            return 0;
        if (o->how & WEFT__TAPE_EXTERNAL)
            return weft__drv_graph_wait_external(o->q, t->xev[o->xev]);
        if ((o->how & WEFT__TAPE_BEFORE) && drv->graph_wait_external)
            return weft__drv_graph_wait_external(o->q, o->ev);
    }
    return weft__tape_run(t, o);
}

/*
 * Capture segment s into its driver graph: its queue begins, every other
 * queue of its ops forks off it by an event and joins it again at the
 * end. *next is the first of the tape's join events it may use.
 */
static int weft__tape_build_seg(weft__tape *t, unsigned s, unsigned *next,
                                int *updated, weft__tape_named *e)
{
    weft__queue *q0 = t->segs[s].q, *qs[WEFT__TAPE_MAX_QUEUES];
    unsigned nq = 0, j0 = *next;
    int rc, erc;

    for (size_t i = 0; i < t->n; i++) {
        unsigned j;

        if (t->ops[i].seg != s || t->ops[i].q == q0)
            continue;
        for (j = 0; j < nq && qs[j] != t->ops[i].q; j++)
            ;
        if (j == nq) {
            if (nq == WEFT__TAPE_MAX_QUEUES)
                return weft__error(WEFT_ENOTSUP, "tape: too many queues");
            qs[nq++] = t->ops[i].q;
        }
    }
    /* Fork events are q0's, join events their queue's (an event is
     * recorded on a queue of its own context). */
    if (j0 + 2 * nq > t->njoin &&
        (rc =
             weft__tape_room((void **)&t->join, &(unsigned){t->njoin}, t->njoin,
                             j0 + 2 * nq - t->njoin, sizeof *t->join)) < 0)
        return rc;
    while (t->njoin < j0 + 2 * nq)
        t->join[t->njoin++] = NULL;
    *next = j0 + 2 * nq;
    for (unsigned k = 0; k < 2 * nq; k++) {
        weft__context *ctx = k % 2 ? qs[k / 2]->ctx : q0->ctx;
        weft__event **ev = &t->join[j0 + k];

        if (*ev && (*ev)->ctx != ctx) {
            weft__drv_event_destroy(*ev);
            *ev = NULL;
        }
        if (!*ev && (rc = weft__drv_event_create(ctx, 0, ev)) < 0)
            return rc;
    }
    if ((rc = weft__drv_graph_begin(q0)) < 0)
        return rc;
    for (unsigned j = 0; j < nq && rc == 0; j++) {
        rc = weft__drv_event_record(t->join[j0 + 2 * j], q0);
        if (rc == 0)
            rc = weft__drv_queue_wait_event(qs[j], t->join[j0 + 2 * j]);
    }
    for (size_t i = 0; i < t->n && rc == 0; i++) {
        const weft__tape_op *o = &t->ops[i];
        unsigned n;

        if (o->seg != s)
            continue;
        if (weft__tape_named_skip(t, e, i, &rc))
            continue;
        if (weft__tape_named_edges(t, e, i, &n))
            rc = weft__drv_graph_order(o->q, e->ids, n);
        if (rc == 0)
            rc = weft__tape_capture_op(t, o);
        if (rc == 0)
            rc = weft__tape_named_captured(t, e, i);
    }
    for (unsigned j = 0; j < nq && rc == 0; j++) {
        rc = weft__drv_event_record(t->join[j0 + 2 * j + 1], qs[j]);
        if (rc == 0)
            rc = weft__drv_queue_wait_event(q0, t->join[j0 + 2 * j + 1]);
    }
    /* The capture ends either way, so that the queues work again; the
     * error said is the first one (the operation the capture failed at). */
    {
        void *old = rc == 0 ? t->segs[s].graph : NULL;
        char first[256];
        int up = 0;

        if (rc < 0)
            weft__strlcpy(first, weft_last_error(), sizeof first);
        t->segs[s].graph = NULL; /* the driver's now: given back or freed */
        erc = weft__drv_graph_end(q0, old, rc == 0 ? &t->segs[s].graph : NULL,
                                  &up);
        if (updated && !up)
            *updated = 0;
        if (rc < 0)
            return weft__error(rc, "%s", first);
    }
    return erc;
}

/*
 * Capture the tape into one driver graph per segment (tape.h). Where old
 * graphs are there (a DEFER launch that changed parameters), the driver
 * updates each in place if it can; *updated says whether all were.
 */
static int weft__tape_build(weft__tape *t, int *updated)
{
    unsigned next = 0;
    weft__tape_named e;
    int rc = weft__tape_segment(t);

    if (updated)
        *updated = 1;
    if (rc == 0)
        rc = weft__tape_named_init(t, &e);
    else
        memset(&e, 0, sizeof e);
    for (unsigned s = 0; s < t->nsegs && rc == 0; s++) {
        rc = weft__tape_build_seg(t, s, &next, updated, &e);
        if (rc == 0)
            weft__tape_named_check(t, &e, s);
    }
    weft__tape_named_free(&e);
    t->built = rc == 0;
    if (t->built)
        t->recorded = 0;
    return rc;
}

/*
 * Launch the graphs in order and wait for them (see weft__tape_end): a
 * graph that fails to launch drops them all, after those launched before
 * it have been waited for; where a wait fails, they are kept (one may
 * still run) and the tape is broken.
 */
static int weft__tape_launch(weft__tape *t)
{
    unsigned n = 0;
    int rc = 0, waited = 1;

    for (; n < t->nsegs && rc == 0; n++)
        rc = weft__drv_graph_launch(t->segs[n].graph, t->segs[n].q);
    if (rc == 0)
        t->launches++;
    for (unsigned s = 0; s < n; s++) {
        unsigned k;

        for (k = 0; k < s && t->segs[k].q != t->segs[s].q; k++)
            ;
        if (k == s) {
            int src = weft__drv_queue_sync(t->segs[s].q);

            if (src < 0)
                waited = 0;
            if (rc == 0)
                rc = src;
        }
    }
    if (rc < 0 && waited) {
        weft__tape_drop_graph(t);
    } else if (rc < 0) {
        /* A graph whose queue could not be waited for may still run: it
         * is kept, never run again, until the tape is released (after
         * the plan's drain). */
        t->broken = 1;
        t->matched = 0;
    }
    return rc;
}

/* A capture failed (the error is set): no native graph, and no more tries. */
static void weft__tape_no_graph(weft__tape *t)
{
    weft__info("tape", "no native graph for this launch: %s",
               weft_last_error());
    weft_clear_error();
    weft__tape_drop_graph(t);
    t->broken = 1;
}

/*
 * A DEFER launch that matched the tape only up to parameters: the graph is
 * captured again from the updated tape and given to the driver to update
 * in place. Where no graph comes of it, the deferred work runs op by op.
 */
static int weft__tape_rebuild(weft__tape *t)
{
    int updated = 0;

    if (weft__tape_build(t, &updated) == 0) {
        if (updated)
            t->updates++;
        else
            t->rebuilds++;
        weft__debug("tape", "native graph %s",
                    updated ? "updated in place" : "made anew");
        return 0;
    }
    weft__tape_no_graph(t);
    return -1;
}

int weft__tape_ready(weft__tape *t)
{
    if (t->built || !t->recorded || t->broken)
        return (int)t->built;
    /* (built, or dropped as no graph: not recorded any more either way) */
    if (weft__tape_build(t, NULL) < 0) {
        weft__tape_no_graph(t);
        return 0;
    }
    weft__debug("tape", "%zu operations captured", t->n);
    return 1;
}

int weft__tape_end(weft__tape *t)
{
    int rc = 0;

    switch (t->mode) {
    case WEFT__TAPE_DEFER_MODE:
        /* Short, or changed or never built and no graph for it: op by op
         * after all. */
        if (t->pos < t->n ||
            (t->recorded && !t->changed && !weft__tape_ready(t)) ||
            (t->changed && weft__tape_rebuild(t) < 0)) {
            rc = weft__tape_flush(t);
        } else {
            /*
             * The graph holds every lane's work but runs on one queue:
             * the plan, which knows lanes, would sync the others (empty)
             * and take this one as done through their clocks. So the
             * launch ends here, with the graph.
             */
            rc = weft__tape_launch(t);
            t->matched = rc == 0;
        }
        break;
    case WEFT__TAPE_RECORD_MODE:
        weft__tape_rebase(t);
        if (t->unfit || t->n == 0)
            break;
        /* The graphs hold exactly what this launch issued once built:
         * not before a launch needs them (weft__tape_ready). */
        t->recorded = 1;
        t->matched = 1;
        weft__debug("tape", "%zu operations recorded", t->n);
        break;
    case WEFT__TAPE_CAPTURE_MODE:
        weft__tape_rebase(t);
        if (t->unfit || t->n == 0)
            break;
        if (weft__tape_build(t, NULL) < 0) {
            weft__tape_no_graph(t);
        } else {
            /* The graphs hold exactly what this launch issued. */
            t->matched = 1;
            weft__debug("tape", "%zu operations captured", t->n);
        }
        break;
    }
    t->mode = WEFT__TAPE_OFF;
    return rc;
}

int weft__tape_replay(weft__tape *t)
{
    weft__assert(t->built && t->mode == WEFT__TAPE_OFF);
    return weft__tape_launch(t);
}

int weft__tape_kernels_only(const weft__tape *t)
{
    return (t->built || t->recorded) && !t->unfit && !t->moves;
}

void weft__tape_release(weft__tape *t)
{
    weft__tape_drop_graph(t);
    for (unsigned i = 0; i < t->njoin; i++)
        if (t->join[i])
            weft__drv_event_destroy(t->join[i]);
    weft__free(t->join);
    for (unsigned i = 0; i < t->nxev; i++)
        if (t->xev[i])
            weft__drv_event_destroy(t->xev[i]);
    weft__free(t->xev);
    weft__free(t->segs);
    weft__free(t->ops);
    weft__free(t->args);
    weft__free(t->bytes);
    memset(t, 0, sizeof *t);
}
