/* The runtime object: drivers, devices and the machine's topology. */
#ifndef WEFT_RUNTIME_H
#define WEFT_RUNTIME_H

#include "drivers/driver.h"

#include <hwloc.h>
#include <pthread.h>

/* The drivers weft knows, in discovery order. */
enum { WEFT__NDRIVERS = 4 };

typedef struct weft__runtime_driver {
    const weft__driver *drv;
    unsigned wanted;  /* selected by the device list */
    unsigned opened;  /* platforms_open succeeded */
    int status;       /* 0, or why it has no devices */
    char reason[256]; /* the detail of status */
    weft__platform **platforms;
    unsigned nplatforms;
    unsigned ndevices; /* devices found, before selection */
    unsigned all;      /* DRIVER or DRIVER:* was given */
    uint64_t indices;  /* DRIVER:N entries, as a bit set (N < 64) */
} weft__runtime_driver;

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
    weft__extent *extents;  /* every extent on the device (dprev/dnext) */
} weft__devmem;

struct weft_runtime {
    weft__driver_config cfg;
    weft__runtime_driver drivers[WEFT__NDRIVERS];
    weft__device **devices; /* the selected devices, in order */
    unsigned ndevices;
    hwloc_topology_t topology;
    /*
     * One context per device, created on first use (weft__runtime_context)
     * under lock; destroyed with the runtime.
     */
    pthread_mutex_t lock;
    weft__context **contexts;
    long live; /* modules (and later buffers, graphs) alive; atomic */

    /* Memory (src/mem/). */
    weft__devmem *devmem;      /* ndevices entries */
    unsigned char *peer;       /* ndevices^2: [a * n + b] a can copy to b */
    uint64_t device_mem_limit; /* option or WEFT_DEVICE_MEM_LIMIT; 0: none */
    uint64_t tick;             /* node runs so far, for eviction; atomic */
    weft_stats stats;          /* counters, each updated atomically */

    /* The scheduler (src/sched/). */
    int place_policy;          /* weft_place_policy, never DEFAULT */
    int place_scope;           /* weft_place_scope, never DEFAULT */
    struct weft__trace *trace; /* NULL: tracing off */
    char *trace_file;          /* where the trace goes at destroy */
    /* Made on first use (placing.c): the link model (links_state 0 not
     * loaded, 1 loaded, -1 failed) and the learned kernel times. */
    int links_state;
    struct weft__links *links;
    struct weft__ktime *ktime;
    /* Host workers for maps and host tasks (hostwork.h): made on first use
     * under lock, read with an acquire load; hostwork_off: not to be made.
     * host_workers: WEFT_HOST_WORKERS, or UINT_MAX for the default. */
    struct weft__hostwork *hostwork;
    unsigned hostwork_off;
    unsigned host_workers;
    /* The progress engine (engine.h): made on first use under lock, read
     * with an acquire load. */
    struct weft__engine *engine;
};

/* The link model and the kernel time model of rt, loaded on first use
 * (links NULL if they cannot be had: the caller uses a default). */
struct weft__links *weft__runtime_links(weft_runtime *rt);
struct weft__ktime *weft__runtime_ktime(weft_runtime *rt);

/*
 * The pool and the stager of device index, created on first use. The
 * stager answers NULL (and 0) where staging is not worth it or could not
 * be set up: the caller then copies directly.
 */
int weft__runtime_pool(weft_runtime *rt, unsigned index, weft__pool **pool);
weft__stager *weft__runtime_stager(weft_runtime *rt, unsigned index);
/*
 * Where a thread also counts what it adds to one runtime's statistics:
 * an executable graph's issuing thread, so that a launch that replays a
 * native graph without an issue counts what the issue would have.
 */
typedef struct weft__stat_sink {
    const weft_stats *of; /* the runtime's counters */
    weft_stats add;       /* what this thread added to them */
} weft__stat_sink;
extern _Thread_local weft__stat_sink *weft__stat_sink_cur;

/*
 * Host-side work done on the calling thread (or set off by it) while it
 * issues a launch: bytes moved or filled in host memory by the thread or
 * by staging threads, a map or host task run. A native graph holds device
 * work only, so a launch that did any of it is never replayed.
 */
extern _Thread_local unsigned long weft__host_effects;
static inline void weft__host_effect(void)
{
    weft__host_effects++;
}

/* Add n to a statistics counter (a field of rt->stats). */
static inline void weft__stat_add(uint64_t *counter, uint64_t n)
{
    weft__stat_sink *s = weft__stat_sink_cur;

    __atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
    if (s && (const char *)counter >= (const char *)s->of &&
        (const char *)counter < (const char *)(s->of + 1))
        *(uint64_t *)((char *)&s->add +
                      ((const char *)counter - (const char *)s->of)) += n;
}

/* The context of device index, created on first use. */
int weft__runtime_context(weft_runtime *rt, unsigned index,
                          weft__context **ctx);
/* Count an object of rt in (+1) or out (-1). */
void weft__runtime_live(weft_runtime *rt, long d);

/* The index-th selected device (NULL if out of range). */
weft__device *weft__runtime_device(const weft_runtime *rt, unsigned index);
/* The internal device behind a public handle. */
static inline weft__device *weft__device_of(const weft_device *dev)
{
    return (weft__device *)(void *)dev;
}

/* The implementation of kernel k on device index, NULL if none. */
weft__kernel *weft__kernel_impl(const weft_kernel *k, unsigned index);

#endif /* WEFT_RUNTIME_H */
