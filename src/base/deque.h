/*
 * A bounded work-stealing deque of pointers: one owner thread pushes and
 * pops at the bottom (last in, first out), any other thread steals at the
 * top (first in, first out), without a lock. The owner's push is a plain
 * store and a release store; its pop a sequentially consistent store and
 * load, and a compare-and-swap only when one pointer is left (it may race
 * a thief for it), with no store at all when the deque is empty; a steal is two
 * sequentially consistent loads and a compare-and-swap. (The scheme is Chase
 * and Lev's, 2005, with a fixed array: the owner's push reports full instead of
 * growing it.)
 *
 * Every access of the indices and the cells is a C11 atomic, and the
 * orderings that the scheme needs between them are those of sequentially
 * consistent operations (no standalone fence, which the thread sanitizer
 * does not model), so that its hand-offs read as such there. A pointer
 * pushed by the owner is published by its release store of bottom and
 * taken after a thief's acquire (sequentially consistent) load of it: what
 * the owner wrote before the push is visible to the thief.
 */
#ifndef WEFT_BASE_DEQUE_H
#define WEFT_BASE_DEQUE_H

#include "base.h"

#include <stdint.h>

typedef struct weft__deque {
    _Alignas(64) int64_t top;    /* next to steal (thieves' compare-and-swap) */
    _Alignas(64) int64_t bottom; /* next to push (the owner's) */
    int64_t mask;                /* capacity - 1 */
    void **cells;
} weft__deque;

/* capacity: a power of two >= 2. 0, or WEFT_ENOMEM. */
static inline int weft__deque_init(weft__deque *d, int64_t capacity)
{
    d->cells = weft__calloc((size_t)capacity, sizeof *d->cells);
    if (!d->cells)
        return WEFT_ENOMEM;
    d->mask = capacity - 1;
    d->top = d->bottom = 0;
    return 0;
}

static inline void weft__deque_fini(weft__deque *d)
{
    weft__free(d->cells);
    d->cells = NULL;
}

/*
 * The owner: v at the bottom; 1, or 0 when the deque is full. (A thief
 * that has not yet moved top past a cell keeps it from being written: the
 * owner counts from the top it last saw, never from one ahead of it.)
 */
static inline int weft__deque_push(weft__deque *d, void *v)
{
    int64_t b = __atomic_load_n(&d->bottom, __ATOMIC_RELAXED);
    int64_t t = __atomic_load_n(&d->top, __ATOMIC_ACQUIRE);

    if (b - t > d->mask)
        return 0;
    __atomic_store_n(&d->cells[b & d->mask], v, __ATOMIC_RELAXED);
    __atomic_store_n(&d->bottom, b + 1, __ATOMIC_RELEASE);
    return 1;
}

/*
 * The owner: the bottom pointer, or NULL when none is left. Bottom is
 * moved down before top is read (both sequentially consistent): a thief
 * that read the old bottom either moved top first, which this sees, or
 * takes nothing; for the last pointer both race with a compare-and-swap
 * of top.
 */
static inline void *weft__deque_pop(weft__deque *d)
{
    int64_t b = __atomic_load_n(&d->bottom, __ATOMIC_RELAXED) - 1;
    int64_t t;
    void *v;

    /*
     * Empty as the owner sees it (top only grows, and only the owner moves
     * bottom): nothing written, so that an idle owner's looks do not take
     * the line of bottom from the thieves that read it.
     */
    if (b < __atomic_load_n(&d->top, __ATOMIC_RELAXED))
        return NULL;

    __atomic_store_n(&d->bottom, b, __ATOMIC_SEQ_CST);
    t = __atomic_load_n(&d->top, __ATOMIC_SEQ_CST);
    if (t > b) { /* empty */
        __atomic_store_n(&d->bottom, b + 1, __ATOMIC_RELAXED);
        return NULL;
    }
    v = __atomic_load_n(&d->cells[b & d->mask], __ATOMIC_RELAXED);
    if (t == b) { /* the last one: the owner or a thief */
        if (!__atomic_compare_exchange_n(&d->top, &t, t + 1, 0,
                                         __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
            v = NULL;
        __atomic_store_n(&d->bottom, b + 1, __ATOMIC_RELAXED);
    }
    return v;
}

/*
 * Any thread but the owner: the top pointer, or NULL when none is left or
 * another thread took it first (the caller may look again).
 */
static inline void *weft__deque_steal(weft__deque *d)
{
    int64_t t = __atomic_load_n(&d->top, __ATOMIC_SEQ_CST);
    int64_t b = __atomic_load_n(&d->bottom, __ATOMIC_SEQ_CST);
    void *v;

    if (t >= b)
        return NULL;
    v = __atomic_load_n(&d->cells[t & d->mask], __ATOMIC_RELAXED);
    if (!__atomic_compare_exchange_n(&d->top, &t, t + 1, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_RELAXED))
        return NULL;
    return v;
}

/* Whether the deque seems to hold a pointer (racy: a hint; reads only). */
static inline int weft__deque_nonempty_hint(const weft__deque *d)
{
    return __atomic_load_n(&d->bottom, __ATOMIC_RELAXED) >
           __atomic_load_n(&d->top, __ATOMIC_RELAXED);
}

#endif /* WEFT_BASE_DEQUE_H */
