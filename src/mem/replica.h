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
/* Wrapped roots at least this large are registered by a thread of their
 * own (replica.c, weft__maybe_register). */
#define WEFT__REGISTER_AHEAD ((size_t)8 << 20)

/* The extent of device d holding the whole range, or NULL. */
weft__extent *weft__extent_covering(weft_buffer *root, unsigned d, size_t off,
                                    size_t size);
/*
 * The bounds [*lo, *hi) of a new extent of device d for [off, off + size)
 * (size > 0): the whole root where it is small (at most 1 MiB and an
 * eighth of the device's memory or limit), else the range widened to
 * multiples of 256 bytes (or to the root's end).
 */
void weft__extent_bounds(const weft_buffer *root, unsigned d, size_t off,
                         size_t size, size_t *lo, size_t *hi);
/*
 * The extent of device d that holds [off, off + size), made if need be:
 * a new extent takes over the ones it overlaps (their bytes copied into
 * it, so that for a while both are held). Pinned for the lock holder.
 * *made: 1 if it is new, or was made by this lock holder.
 */
int weft__extent_ensure(weft_buffer *root, unsigned d, size_t off, size_t size,
                        weft__lanes *l, weft__extent **out, int *made);
/* Take x off its root's replica, then off its device's list, and free its
 * block and x. */
void weft__extent_free(weft_buffer *root, weft__extent *x);
/*
 * weft__extent_free in two steps: detach takes x off its root's replica
 * and its device's list (no one finds it from then on; root locked), drop
 * gives its block back to the pool and frees x (no lock needed), once no
 * work in flight uses the block.
 */
void weft__extent_detach(weft_buffer *root, weft__extent *x);
void weft__extent_drop(weft_runtime *rt, weft__extent *x);
/*
 * len bytes from host memory src to (dst, doff) on device d, and wait.
 * from_copy: src is the root's host copy (which may be registered). used,
 * unless NULL: the queue of the copy.
 */
int weft__replica_h2d(weft_buffer *root, unsigned d, weft__mem *dst,
                      size_t doff, size_t roff, const void *src, size_t len,
                      int from_copy, enum weft__cause cause, weft__lanes *l,
                      weft__queue **used);
/*
 * The rows of block g of device d's copy (in one extent there) into the
 * host copy, as a block (weft__move_any: one 2-D copy, or packed through
 * the stager from and into pageable memory).
 */
int weft__replica_d2h_block(weft_buffer *root, unsigned d,
                            const weft__region *g, enum weft__cause cause,
                            weft__lanes *l);
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
