/*
 * A bounded ring of pointers for any number of producers and consumers,
 * without a lock: each cell carries a sequence number that says whose turn
 * it is (the producer of lap k, then its consumer), and the two indices
 * are claimed with a compare-and-swap. A pointer is published by a
 * release store of its cell's sequence and taken after an acquire load of
 * it, so what the producer wrote before enqueueing is visible to the
 * consumer (and to the thread sanitizer, which sees the C11 atomics).
 *
 * concurrencykit's ck_ring does the same, but even with
 * CK_USE_CC_BUILTINS=1 its loads and stores are volatile accesses ordered
 * by __sync_synchronize, which ThreadSanitizer does not take for
 * synchronisation: every hand-off through it reads as a data race there
 * (bench/containers.c; docs/architecture.md), and weft's TSan build must
 * stay clean.
 */
#ifndef WEFT_BASE_RING_H
#define WEFT_BASE_RING_H

#include "base.h"

#include <stdint.h>

typedef struct weft__ring_cell {
    uint64_t seq;
    void *data;
} weft__ring_cell;

typedef struct weft__ring {
    weft__ring_cell *cells;
    uint64_t mask;              /* capacity - 1, a power of two minus one */
    _Alignas(64) uint64_t head; /* next to enqueue */
    _Alignas(64) uint64_t tail; /* next to dequeue */
} weft__ring;

/* capacity: a power of two >= 2. 0, or WEFT_ENOMEM. */
static inline int weft__ring_init(weft__ring *r, uint64_t capacity)
{
    r->cells = weft__calloc(capacity, sizeof *r->cells);
    if (!r->cells)
        return WEFT_ENOMEM;
    for (uint64_t i = 0; i < capacity; i++)
        r->cells[i].seq = i;
    r->mask = capacity - 1;
    r->head = r->tail = 0;
    return 0;
}

static inline void weft__ring_fini(weft__ring *r)
{
    weft__free(r->cells);
    r->cells = NULL;
}

/* 1 if v went in, 0 if the ring is full. */
static inline int weft__ring_push(weft__ring *r, void *v)
{
    uint64_t pos = __atomic_load_n(&r->head, __ATOMIC_RELAXED);

    for (;;) {
        weft__ring_cell *c = &r->cells[pos & r->mask];
        uint64_t seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
        int64_t dif = (int64_t)(seq - pos);

        if (dif == 0) {
            if (__atomic_compare_exchange_n(&r->head, &pos, pos + 1, 1,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                break;
        } else if (dif < 0) {
            return 0;
        } else {
            pos = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
        }
    }
    r->cells[pos & r->mask].data = v;
    __atomic_store_n(&r->cells[pos & r->mask].seq, pos + 1, __ATOMIC_RELEASE);
    return 1;
}

/* About how many pointers the ring holds (racy: a hint). */
static inline uint64_t weft__ring_count_hint(weft__ring *r)
{
    uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

    return head > tail ? head - tail : 0;
}

/* The oldest pointer, or NULL if the ring is empty. */
static inline void *weft__ring_pop(weft__ring *r)
{
    uint64_t pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
    void *v;

    for (;;) {
        weft__ring_cell *c = &r->cells[pos & r->mask];
        uint64_t seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
        int64_t dif = (int64_t)(seq - (pos + 1));

        if (dif == 0) {
            if (__atomic_compare_exchange_n(&r->tail, &pos, pos + 1, 1,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                break;
        } else if (dif < 0) {
            return NULL;
        } else {
            pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
        }
    }
    v = r->cells[pos & r->mask].data;
    __atomic_store_n(&r->cells[pos & r->mask].seq, pos + r->mask + 1,
                     __ATOMIC_RELEASE);
    return v;
}

#endif /* WEFT_BASE_RING_H */
