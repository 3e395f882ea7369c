/*
 * Pinned staging: moving pageable host memory to and from a device at
 * close to the speed of pinned memory. Chunks go through a ring of pinned
 * buffers; several host threads (near the device, by hwloc) copy each
 * chunk into its pinned buffer while the device's copy engine moves the
 * previous one.
 */
#ifndef WEFT_MEM_STAGING_H
#define WEFT_MEM_STAGING_H

#include "../drivers/driver.h"

#include <hwloc.h>

typedef struct weft__stager weft__stager;

typedef struct weft__stager_options {
    size_t chunk;     /* bytes per pinned buffer; 0: 8 MiB */
    unsigned slots;   /* pinned buffers in the ring; 0: 3 */
    unsigned threads; /* host threads copying each chunk; 0: the cores
                         near the device, at most 8 */
    /* Where to put threads and pinned memory: the machine's topology and
     * the device's nearest cores (NULL: anywhere). */
    hwloc_topology_t topology;
    const char *cpuset;
} weft__stager_options;

typedef struct weft__stager_stats {
    uint64_t h2d_bytes, d2h_bytes; /* moved through the stager */
    uint64_t chunks;
    uint64_t waits; /* times a chunk waited for its pinned buffer */
} weft__stager_stats;

/* A stager for the device of ctx. opts may be NULL. */
int weft__stager_create(weft__context *ctx, const weft__stager_options *opts,
                        weft__stager **out);
/* Wait for the stager's copies in flight, then free it. NULL is ignored. */
void weft__stager_destroy(weft__stager *s);

/*
 * Copy size bytes of host memory src into dst at off, on queue q (of the
 * stager's context). src is read before this returns, so it may be reused
 * then; the device side completes in q's order (record an event on q to
 * wait for it). A failure part-way leaves the chunks before it copied.
 */
int weft__stager_h2d(weft__stager *s, weft__queue *q, weft__mem *dst,
                     size_t off, const void *src, size_t size);
/*
 * Copy size bytes of src at off into host memory dst, after the work
 * before it on q. Returns when dst holds the bytes.
 */
int weft__stager_d2h(weft__stager *s, weft__queue *q, void *dst, weft__mem *src,
                     size_t off, size_t size);

void weft__stager_get_stats(weft__stager *s, weft__stager_stats *st);

#endif /* WEFT_MEM_STAGING_H */
