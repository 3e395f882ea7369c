/*
 * The runtime as the memory layer holds it (src/mem/): the selected
 * devices, their contexts, the machine's topology, each device's memory
 * (pool, stager, extents), who copies to whom, the statistics. This is the
 * public handle weft_runtime; the layers above keep their own state
 * elsewhere: the scheduler's behind rt->sched (src/sched/sched.h), the
 * API's (drivers, configuration) around it in src/runtime.h.
 *
 * Lock order: rt->lock (contexts) is a leaf. A root buffer's lock comes
 * before a devmem lock; a devmem lock before rt->lock (a pool or stager
 * made on first use makes the context).
 */
#ifndef WEFT_MEM_MACHINE_H
#define WEFT_MEM_MACHINE_H

#include "../drivers/driver.h"

#include <hwloc.h>
#include <pthread.h>

typedef struct weft__extent weft__extent;
typedef struct weft__pool weft__pool;
typedef struct weft__stager weft__stager;

/*
 * The memory of one device as the runtime holds it: the pool that device
 * replicas come from, the stager for pageable host memory, and every
 * replica extent on the device, for eviction. Pool and stager are created
 * on first use, under lock, and destroyed with the runtime.
 *
 * Lock order: a root buffer's lock before this lock. Eviction, which holds
 * this lock while it looks for a victim, only try-locks roots.
 */
typedef struct weft__devmem {
    pthread_mutex_t lock;
    weft__pool *pool;
    weft__stager *stager;
    unsigned stager_failed; /* creation failed once: copy directly */
    /* makes the stager in the background once the context is made (GPUs):
     * a first launch from pageable memory does not wait for its pinned
     * buffers; joined by weft__machine_fini */
    pthread_t warm;
    unsigned warm_started;
    weft__extent *extents; /* every extent on the device (dprev/dnext) */
} weft__devmem;

struct weft_runtime {
    weft__device **devices; /* the selected devices, in order */
    unsigned ndevices;
    hwloc_topology_t topology; /* NULL until discovery placed the devices */
    /*
     * One context per device, created on first use (weft__runtime_context)
     * under lock; destroyed with the runtime.
     */
    pthread_mutex_t lock;
    weft__context **contexts;
    long live; /* modules, buffers, graphs, executables, host blocks
                  alive; atomic */
    /* weft_host_alloc's blocks (hostmem.c), under lock; their count,
     * atomic, read without it. */
    struct weft__host_block *host_blocks;
    long nhost_blocks;
    /* weft_ipc_open's mappings (ipc.c), under lock. */
    struct weft__ipc_map *ipc_maps;

    weft__devmem *devmem;      /* ndevices entries */
    unsigned char *peer;       /* ndevices^2: [a * n + b] a can copy to b */
    uint64_t device_mem_limit; /* option or WEFT_DEVICE_MEM_LIMIT; 0: none */
    uint64_t tick;             /* node runs so far, for eviction; atomic */
    weft_stats stats;          /* counters, each updated atomically */
    struct weft__trace *trace; /* NULL: tracing off */

    /* The scheduler's state, made and freed by it (src/sched/sched.h). */
    struct weft__sched *sched;
};

/*
 * The arrays of rt for n devices (devices, contexts, devmem, peer), zeroed,
 * and the locks. The caller then fills devices, ndevices and peer.
 */
int weft__machine_init(weft_runtime *rt, unsigned n);
/*
 * Free what weft__machine_init made and what was made on first use (pools,
 * stagers, contexts): every buffer is gone. Safe on a zeroed rt.
 */
void weft__machine_fini(weft_runtime *rt);
/*
 * Wait for the background work begun with the contexts (each GPU's stager
 * warm-up, see machine.c) to have begun what it keeps running: the
 * threads it starts exist from then on (tests count threads).
 */
void weft__machine_settle(weft_runtime *rt);

/* The context of device index, created on first use. */
int weft__runtime_context(weft_runtime *rt, unsigned index,
                          weft__context **ctx);
/*
 * The pool and the stager of device index, created on first use. The
 * stager answers NULL (and 0) where staging is not worth it or could not
 * be set up: the caller then copies directly.
 */
int weft__runtime_pool(weft_runtime *rt, unsigned index, weft__pool **pool);
weft__stager *weft__runtime_stager(weft_runtime *rt, unsigned index);
/*
 * weft_host_alloc's blocks (hostmem.c). pinned: 1 if [ptr, ptr + size)
 * lies in a block that is pinned for device d (made by its context,
 * recognised by its driver or registered with it at weft_host_alloc). use:
 * a buffer that wraps [ptr, ptr + size) starts (delta 1) or ends (-1)
 * holding the block there; 1 if there is one (0: nothing counted).
 */
typedef struct weft__host_block weft__host_block;
int weft__host_block_pinned(weft_runtime *rt, unsigned d, const void *ptr,
                            size_t size);
int weft__host_block_use(weft_runtime *rt, const void *ptr, size_t size,
                         long delta);

/* Count an object of rt in (+1) or out (-1). */
void weft__runtime_live(weft_runtime *rt, long d);

/* The index-th selected device (NULL if out of range). */
weft__device *weft__runtime_device(const weft_runtime *rt, unsigned index);
/* The internal device behind a public handle. */
static inline weft__device *weft__device_of(const weft_device *dev)
{
    return (weft__device *)(void *)dev;
}

/*
 * Where a launch also counts what it adds to its runtime's statistics, so
 * that a launch that replays a native graph without an issue can count
 * what the issue would have. It travels with the launch's lanes
 * (weft__lanes.sink in buffer.h); NULL where nothing is counted aside.
 */
typedef struct weft__stat_sink {
    const weft_stats *of; /* the runtime's counters */
    weft_stats add;       /* what the launch added to them */
} weft__stat_sink;

/* Add n to a statistics counter (a field of rt->stats), and to s. */
static inline void weft__stat_add(weft__stat_sink *s, uint64_t *counter,
                                  uint64_t n)
{
    __atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
    if (s && (const char *)counter >= (const char *)s->of &&
        (const char *)counter < (const char *)(s->of + 1))
        *(uint64_t *)((char *)&s->add +
                      ((const char *)counter - (const char *)s->of)) += n;
}

#endif /* WEFT_MEM_MACHINE_H */
