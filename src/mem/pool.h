/*
 * The device memory pool: allocations of one device context carved out of
 * a few large driver allocations (slabs), because a driver allocation
 * costs about 100 us (cuMemAlloc) and a graph allocates replicas all the
 * time.
 *
 * A block is a range (mem, offset, size) of a slab. Freed blocks go back
 * to the pool's free lists, coalesced with free neighbours in the same
 * slab, and serve later allocations; memory goes back to the driver only
 * in weft__pool_trim (the slabs that hold no block) and weft__pool_destroy.
 * So an allocation pattern repeated after its frees calls no driver at all.
 *
 * Offsets and sizes of blocks are multiples of the pool's alignment: at
 * least 256 bytes and the device's arg_offset_align, so that a block can
 * be a kernel argument (an OpenCL sub-buffer) as it is.
 *
 * Limit. The pool never holds more than its limit of driver memory (the
 * device's memory by default): an allocation that would need more fails
 * with WEFT_EDEVMEM without calling the driver. The caller (eviction) frees
 * blocks and trims, then tries again.
 *
 * Threads. Every function may be called from any thread; one mutex guards
 * the pool. It is held across the driver call of a miss, so that two
 * threads missing at once do not both allocate a slab that one would do
 * for.
 */
#ifndef WEFT_MEM_POOL_H
#define WEFT_MEM_POOL_H

#include "../drivers/driver.h"

typedef struct weft__pool weft__pool;
typedef struct weft__pool_extent weft__pool_extent;

/* Start from WEFT__POOL_OPTIONS_INIT so that fields added later default. */
typedef struct weft__pool_options {
    size_t size;    /* sizeof(weft__pool_options) */
    uint64_t limit; /* driver bytes at most; 0: the device's global_mem */
    size_t slab;    /* bytes per driver allocation; 0: 64 MiB */
    size_t align;   /* block alignment, a power of two; 0: 256 */
} weft__pool_options;

#define WEFT__POOL_OPTIONS_INIT                                                \
    {                                                                          \
        sizeof(weft__pool_options), 0, 0, 0                                    \
    }

/*
 * An allocation: size bytes (the request rounded up to the alignment) at
 * offset in mem. extent is the pool's own record of it; the caller passes
 * the block back unchanged to weft__pool_free.
 */
typedef struct weft__pool_block {
    weft__mem *mem;
    size_t offset;
    size_t size;
    weft__pool_extent *extent;
} weft__pool_block;

typedef struct weft__pool_stats {
    uint64_t driver_allocs; /* successful driver allocations, ever */
    uint64_t driver_frees;  /* driver frees, ever */
    uint64_t driver_bytes;  /* bytes held from the driver now */
    uint64_t slabs;         /* driver allocations held now */
    uint64_t hits;          /* allocations served without the driver */
    uint64_t misses;        /* allocations that took a new slab */
    uint64_t failures;      /* allocations refused (limit, driver, memory) */
    uint64_t blocks;        /* blocks allocated and not yet freed */
    uint64_t in_use;        /* bytes of those blocks */
    uint64_t peak;          /* largest in_use seen */
    uint64_t limit;         /* the limit on driver_bytes */
    size_t align;           /* of every block's offset and size */
} weft__pool_stats;

/*
 * A pool for the device of ctx; opts may be NULL. WEFT_EINVAL for bad
 * options (an alignment that is not a power of two), WEFT_ENOMEM. The pool
 * allocates nothing from the driver until the first allocation.
 */
int weft__pool_create(weft__context *ctx, const weft__pool_options *opts,
                      weft__pool **out);
/*
 * Give every slab back to the driver and free the pool. WEFT_EBUSY (and
 * nothing done) while blocks are allocated. NULL is ignored.
 */
int weft__pool_destroy(weft__pool *pool);

/*
 * Allocate size bytes (> 0). WEFT_EDEVMEM if the pool's limit or the device
 * cannot take it, WEFT_ENOMEM; on failure *block is untouched.
 */
int weft__pool_alloc(weft__pool *pool, size_t size, weft__pool_block *block);
/*
 * Return a block to the pool (not to the driver). The block must be live:
 * freeing one twice aborts in debug builds. The memory must not be in use
 * by queued work.
 */
void weft__pool_free(weft__pool *pool, const weft__pool_block *block);

/*
 * Room for size bytes in one piece: a free range of at least size bytes
 * (rounded to the alignment), or else a new slab of at least size bytes
 * (more where the usual slab is larger and the limit leaves room), so that
 * allocations of sizes that add up to size then all fit. WEFT_EDEVMEM if
 * the limit or the device cannot take it, WEFT_ENOMEM.
 */
int weft__pool_reserve(weft__pool *pool, size_t size);

/* Give the slabs that hold no block back to the driver; returns bytes. */
uint64_t weft__pool_trim(weft__pool *pool);

void weft__pool_get_stats(weft__pool *pool, weft__pool_stats *st);
/* The pool's limit and alignment (fixed at creation: no lock). */
void weft__pool_get_limit(const weft__pool *pool, uint64_t *limit,
                          size_t *align);

/*
 * The first broken invariant of the pool, as a sentence (thread-local
 * buffer), or NULL if it is sound. Takes the pool's lock.
 */
const char *weft__pool_check(weft__pool *pool);

#endif /* WEFT_MEM_POOL_H */
