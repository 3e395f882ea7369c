/*
 * Pinned staging: moving pageable host memory to and from a device at
 * close to the speed of pinned memory. Chunks go through pinned buffers;
 * several host threads (near the device, by hwloc) copy each chunk into
 * or out of its pinned buffer while the device's copy engine moves the
 * next one.
 *
 * The buffers: `slots` made at create, more made on demand (up to
 * max_slots) when every one is in use by copies in flight: by a thread of
 * the stager's own, while the caller waits for the oldest buffer in use
 * (a chunk's copy takes far less than a pinned allocation), so that a
 * first launch is not held up allocating what later launches use. A
 * buffer is reused once the event recorded after its last use has
 * completed.
 */
#ifndef WEFT_MEM_STAGING_H
#define WEFT_MEM_STAGING_H

#include "../drivers/submit.h"

#include <hwloc.h>

typedef struct weft__stager weft__stager;

typedef struct weft__stager_options {
    size_t chunk;       /* bytes per pinned buffer; 0: 8 MiB */
    unsigned slots;     /* pinned buffers made at create; 0: 3 */
    unsigned max_slots; /* at most, made on demand; 0: 256 MiB of them
                           (never fewer than slots) */
    unsigned threads;   /* host threads copying each chunk; 0: the cores
                           near the device, at most 8 */
    /* Where to put threads and pinned memory: the machine's topology and
     * the device's nearest cores (NULL: anywhere). */
    hwloc_topology_t topology;
    const char *cpuset;
} weft__stager_options;

typedef struct weft__stager_stats {
    uint64_t h2d_bytes, d2h_bytes; /* moved through the stager */
    uint64_t chunks;
    uint64_t waits;    /* times a chunk waited for its pinned buffer */
    unsigned slots;    /* pinned buffers made so far */
    uint64_t alloc_ns; /* making buffers on the callers' threads */
    uint64_t grow_ns;  /* making them in the background (the grower) */
} weft__stager_stats;

/* A stager for the device of ctx. opts may be NULL. */
int weft__stager_create(weft__context *ctx, const weft__stager_options *opts,
                        weft__stager **out);
/* Wait for the stager's copies in flight, then free it. NULL is ignored. */
void weft__stager_destroy(weft__stager *s);

/*
 * The copies below enqueue and wait through sub (submit.h; NULL: the
 * driver entry points).
 *
 * Copy size bytes of host memory src into dst at off, on queue q (of the
 * stager's context). src is read before this returns, so it may be reused
 * then; the device side completes in q's order (record an event on q to
 * wait for it). A failure part-way leaves the chunks before it copied.
 */
int weft__stager_h2d(weft__stager *s, const weft__submit *sub, weft__queue *q,
                     weft__mem *dst, size_t off, const void *src, size_t size);
/*
 * Copy size bytes of src at off into host memory dst, after the work
 * before it on q. Returns when dst holds the bytes.
 */
int weft__stager_d2h(weft__stager *s, const weft__submit *sub, weft__queue *q,
                     void *dst, weft__mem *src, size_t off, size_t size);
/*
 * The same without waiting: enqueued on q, whose later work runs once dst
 * holds the bytes (record an event on q, or sync it, to know when). Each
 * chunk is copied by the device into a pinned buffer on q, then out of it
 * by a host function on the stager's own queue (so that q's engine moves
 * the next chunk meanwhile), and q waits for the last of those. The
 * caller blocks only when max_slots buffers are in flight. dst must stay
 * valid until then. A failure waits for what was enqueued before it, so
 * that nothing writes dst after the call returned.
 */
int weft__stager_d2h_async(weft__stager *s, const weft__submit *sub,
                           weft__queue *q, void *dst, weft__mem *src,
                           size_t off, size_t size);

/*
 * The same for a 2-D block (depth 1) of host memory: r's host side is at
 * src (dst) plus its offset, its device side in the device memory. As
 * many whole rows as a buffer holds go through it at once, packed, and
 * move by one 2-D copy of the device (a row longer than a buffer goes in
 * pieces). async: as weft__stager_d2h_async, else as weft__stager_d2h.
 */
int weft__stager_h2d_rect(weft__stager *s, const weft__submit *sub,
                          weft__queue *q, weft__mem *dst, const void *src,
                          const weft__rect *r);
int weft__stager_d2h_rect(weft__stager *s, const weft__submit *sub,
                          weft__queue *q, void *dst, weft__mem *src,
                          const weft__rect *r, int async);

/*
 * Ask for buffers up to n in all (at most max_slots), made in the
 * background; returns at once.
 */
void weft__stager_warm(weft__stager *s, unsigned n);
/* Its figures so far, once the buffers asked of the grower are made. */
void weft__stager_get_stats(weft__stager *s, weft__stager_stats *st);

#endif /* WEFT_MEM_STAGING_H */
