/*
 * Submission: how the work of a launch reaches the drivers.
 *
 * Everything a launch enqueues (copies, fills, kernels, event records and
 * waits, host functions) and every wait of the host for device work goes
 * through a weft__submit that the caller is handed by the layer above it
 * (the scheduler hands its plan's to the memory layer in weft__lanes).
 * NULL is the default: the checked entry points of dispatch.c, called
 * directly. A submission that is not NULL is the scheduler's (its tape,
 * src/sched/tape.h, which records or defers what a launch enqueues and
 * learns of the host's waits): the layers below reach it only through
 * these pointers, never by name.
 *
 * Each operation has the arguments and meaning of its weft__drv_*
 * namesake; self is the submission's own. A submission that takes an
 * operation over (defers it) returns 0 as if it had been enqueued, and
 * must run it, in order, before any later one on its queue completes.
 */
#ifndef WEFT_DRIVERS_SUBMIT_H
#define WEFT_DRIVERS_SUBMIT_H

#include "driver.h"

/* X(op, parameters, arguments): every operation of a submission. */
#define WEFT__SUBMIT_OPS(X)                                                    \
    X(copy_h2d,                                                                \
      (weft__queue * q, weft__mem * dst, size_t dst_off, const void *src,      \
       size_t size),                                                           \
      (q, dst, dst_off, src, size))                                            \
    X(copy_d2h,                                                                \
      (weft__queue * q, void *dst, weft__mem *src, size_t src_off,             \
       size_t size),                                                           \
      (q, dst, src, src_off, size))                                            \
    X(copy_d2d,                                                                \
      (weft__queue * q, weft__mem * dst, size_t dst_off, weft__mem * src,      \
       size_t src_off, size_t size),                                           \
      (q, dst, dst_off, src, src_off, size))                                   \
    X(copy_peer,                                                               \
      (weft__queue * q, weft__mem * dst, size_t dst_off, weft__mem * src,      \
       size_t src_off, size_t size),                                           \
      (q, dst, dst_off, src, src_off, size))                                   \
    X(fill,                                                                    \
      (weft__queue * q, weft__mem * dst, size_t off, const void *pattern,      \
       size_t pattern_size, size_t size),                                      \
      (q, dst, off, pattern, pattern_size, size))                              \
    X(launch,                                                                  \
      (weft__queue * q, weft__kernel * k, const weft__grid *grid,              \
       const weft__karg *args, unsigned nargs),                                \
      (q, k, grid, args, nargs))                                               \
    X(event_record, (weft__event * ev, weft__queue * q), (ev, q))              \
    X(queue_wait_event, (weft__queue * q, weft__event * ev), (q, ev))          \
    X(host_fn, (weft__queue * q, weft__host_fn * fn, void *user),              \
      (q, fn, user))                                                           \
    X(queue_sync, (weft__queue * q), (q))                                      \
    X(event_sync, (weft__event * ev), (ev))                                    \
    X(event_query, (weft__event * ev), (ev))                                   \
    X(event_elapsed, (weft__event * start, weft__event * end, uint64_t * ns),  \
      (start, end, ns))

#define WEFT__SUBMIT_SELF_PARAMS(...) (void *self, __VA_ARGS__)
#define WEFT__SUBMIT_SELF_ARGS(...)   (s->self, __VA_ARGS__)

typedef struct weft__submit {
#define WEFT__SUBMIT_FIELD(op, params, args)                                   \
    int(*op) WEFT__SUBMIT_SELF_PARAMS params;
    WEFT__SUBMIT_OPS(WEFT__SUBMIT_FIELD)
#undef WEFT__SUBMIT_FIELD
    /*
     * A capturable native node's call (weft__drv_native_call(q, fn,
     * call), or where enqueue is 1 weft__drv_native_enqueue): call is
     * size bytes that hold no pointer into themselves, which the
     * submission may copy, compare with an earlier call's, and hand to fn
     * again later (when it captures or flushes the call, through
     * native_call) in place of the caller's. Returns 1 where the
     * submission took the call without running it now (fn is not called
     * with the caller's call).
     */
    int (*native_call)(void *self, weft__queue *q, weft__native_fn *fn,
                       void *call, size_t size, int enqueue);
    /*
     * Block copies (weft__drv_copy_<dir>_rect), optional: a submission
     * that leaves one NULL gets the block as one 1-D copy per contiguous
     * row, through its own 1-D operation (weft__submit_copy_<dir>_rect).
     */
    int (*copy_h2d_rect)(void *self, weft__queue *q, weft__mem *dst,
                         const void *src, const weft__rect *r);
    int (*copy_d2h_rect)(void *self, weft__queue *q, void *dst, weft__mem *src,
                         const weft__rect *r);
    int (*copy_d2d_rect)(void *self, weft__queue *q, weft__mem *dst,
                         weft__mem *src, const weft__rect *r);
    int (*copy_peer_rect)(void *self, weft__queue *q, weft__mem *dst,
                          weft__mem *src, const weft__rect *r);
    void *self;
} weft__submit;

/* weft__submit_<op>(s, ...): op through s, or the driver's when s is NULL. */
#define WEFT__SUBMIT_S_PARAMS(...) (const weft__submit *s, __VA_ARGS__)
#define WEFT__SUBMIT_CALL(op, params, args)                                    \
    static inline int weft__submit_##op WEFT__SUBMIT_S_PARAMS params           \
    {                                                                          \
        return WEFT__UNLIKELY(s != NULL) ? s->op WEFT__SUBMIT_SELF_ARGS args   \
                                         : weft__drv_##op args;                \
    }
WEFT__SUBMIT_OPS(WEFT__SUBMIT_CALL)
#undef WEFT__SUBMIT_CALL

static inline int weft__submit_native_call(const weft__submit *s,
                                           weft__queue *q, weft__native_fn *fn,
                                           void *call, size_t size, int enqueue)
{
    if (WEFT__UNLIKELY(s != NULL))
        return s->native_call(s->self, q, fn, call, size, enqueue);
    return enqueue ? weft__drv_native_enqueue(q, fn, call)
                   : weft__drv_native_call(q, fn, call);
}

/*
 * Block copies through s (rect.c): the driver's entry point where s is
 * NULL, s's block operation where it has one, else the block checked and
 * folded as the entry point does and handed to s one row at a time.
 */
int weft__submit_copy_h2d_rect(const weft__submit *s, weft__queue *q,
                               weft__mem *dst, const void *src,
                               const weft__rect *r);
int weft__submit_copy_d2h_rect(const weft__submit *s, weft__queue *q, void *dst,
                               weft__mem *src, const weft__rect *r);
int weft__submit_copy_d2d_rect(const weft__submit *s, weft__queue *q,
                               weft__mem *dst, weft__mem *src,
                               const weft__rect *r);
int weft__submit_copy_peer_rect(const weft__submit *s, weft__queue *q,
                                weft__mem *dst, weft__mem *src,
                                const weft__rect *r);

#endif /* WEFT_DRIVERS_SUBMIT_H */
