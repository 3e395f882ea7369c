/*
 * What the copies (replica.c), eviction (evict.c) and stores (store.c)
 * share; internal to src/mem/. Every function takes a root whose lock the
 * caller holds, except the lock functions themselves.
 */
#ifndef WEFT_MEM_REPLICA_H
#define WEFT_MEM_REPLICA_H

#include "buffer.h"

/* Why bytes move: the statistic (rt->stats) their bytes count in. */
enum weft__cause { WEFT__CAUSE_READ, WEFT__CAUSE_HOST, WEFT__CAUSE_EVICT };

/* weft__buffer_lock if root's lock is free now (1), else nothing (0). */
int weft__buffer_trylock(weft_buffer *root);
/* 1 if this thread holds root's lock. */
int weft__buffer_held(const weft_buffer *root);

/* Pageable copies smaller than this go directly: staging would not pay. */
#define WEFT__STAGE_MIN ((size_t)64 << 10)

/* The extent of device d holding the whole range, or NULL. */
weft__extent *weft__extent_covering(weft_buffer *root, unsigned d, size_t off,
                                    size_t size);
/* Take x off its root's replica, then off its device's list, and free its
 * block and x. */
void weft__extent_free(weft_buffer *root, weft__extent *x);
/*
 * len bytes from host memory src to (dst, doff) on device d, and wait.
 * from_copy: src is the root's host copy (which may be registered). used,
 * unless NULL: the queue of the copy.
 */
int weft__replica_h2d(weft_buffer *root, unsigned d, weft__mem *dst,
                      size_t doff, size_t roff, const void *src, size_t len,
                      int from_copy, enum weft__cause cause, weft__lanes *l,
                      weft__queue **used);
/* len bytes of (src, soff) on device d into the host copy at off. */
int weft__replica_d2h(weft_buffer *root, unsigned d, weft__mem *src,
                      size_t soff, size_t off, size_t len,
                      enum weft__cause cause, weft__lanes *l);

/*
 * A block of size bytes on device d: from the pool, else after giving
 * back empty slabs, else after evicting (evict.c), until nothing more may
 * go: then WEFT_EDEVMEM.
 */
int weft__block_alloc(weft_runtime *rt, unsigned d, size_t size, weft__lanes *l,
                      weft__pool_block *blk);

#endif /* WEFT_MEM_REPLICA_H */
