/*
 * The runtime's machine and memory state: the per-device arrays, contexts,
 * pools and stagers made on first use.
 */
#include "machine.h"

#include "../base/os.h"

#include "pool.h"
#include "staging.h"

int weft__machine_init(weft_runtime *rt, unsigned n)
{
    rt->devices = weft__calloc(n ? n : 1, sizeof *rt->devices);
    rt->contexts = weft__calloc(n ? n : 1, sizeof *rt->contexts);
    rt->devmem = weft__calloc(n ? n : 1, sizeof *rt->devmem);
    rt->peer = weft__calloc((size_t)n * n + 1, 1);
    if (!rt->devices || !rt->contexts || !rt->devmem || !rt->peer) {
        weft__free(rt->peer);
        weft__free(rt->devmem);
        weft__free(rt->contexts);
        weft__free(rt->devices);
        rt->devices = NULL;
        rt->contexts = NULL;
        rt->devmem = NULL;
        rt->peer = NULL;
        return weft__error(WEFT_ENOMEM, "weft_runtime_create: out of memory");
    }
    for (unsigned i = 0; i < n; i++)
        pthread_mutex_init(&rt->devmem[i].lock, NULL);
    pthread_mutex_init(&rt->lock, NULL);
    return 0;
}

void weft__machine_fini(weft_runtime *rt)
{
    if (!rt->devmem)
        return;
    weft__machine_settle(rt);
    for (unsigned i = 0; i < rt->ndevices; i++) {
        weft__devmem *dm = &rt->devmem[i];

        weft__stager_destroy(dm->stager);
        if (dm->pool && weft__pool_destroy(dm->pool) < 0)
            weft__warn("runtime", "pool of %s: %s", rt->devices[i]->name,
                       weft_last_error());
    }
    for (unsigned i = 0; i < rt->ndevices; i++)
        if (rt->contexts[i] && weft__drv_context_destroy(rt->contexts[i]) < 0)
            weft__warn("runtime", "context of %s: %s", rt->devices[i]->name,
                       weft_last_error());
    for (unsigned i = 0; i < rt->ndevices; i++)
        pthread_mutex_destroy(&rt->devmem[i].lock);
    pthread_mutex_destroy(&rt->lock);
    weft__free(rt->peer);
    weft__free(rt->devmem);
    weft__free(rt->contexts);
    weft__free(rt->devices);
    rt->peer = NULL;
    rt->devmem = NULL;
    rt->contexts = NULL;
    rt->devices = NULL;
}

typedef struct weft__warm_arg {
    weft_runtime *rt;
    unsigned index;
} weft__warm_arg;

/*
 * Pinned buffers made ahead on a GPU: what the stager grows to in a
 * program's first launches from pageable memory (bench/overlap: 18 of
 * 8 MiB for a 1 GiB pipeline), made while nothing else runs, since a
 * pinned allocation also holds up the device's other calls meanwhile.
 */
enum { WEFT__WARM_SLOTS = 16 };

static void *weft__warm_main(void *arg)
{
    weft__warm_arg a = *(weft__warm_arg *)arg;
    weft__stager *s;

    weft__free(arg);
    if ((s = weft__runtime_stager(a.rt, a.index)))
        weft__stager_warm(s, WEFT__WARM_SLOTS);
    return NULL;
}

/*
 * A GPU's stager is made in the background as soon as its context is
 * (usually at weft_module_create): the pinned buffers take milliseconds
 * each, which a first launch from pageable memory would otherwise wait
 * for. Not while failures are being injected (tests count them). Under
 * rt->lock.
 */
static void weft__warm_start(weft_runtime *rt, unsigned index)
{
    weft__device *dev = rt->devices[index];
    weft__warm_arg *a;

    if (dev->props.type != WEFT_DEVICE_GPU || dev->drv->memory_is_host ||
        !dev->props.pinned_host ||
        __atomic_load_n(&weft__fault_armed, __ATOMIC_RELAXED) ||
        rt->devmem[index].warm_started || !(a = weft__malloc(sizeof *a)))
        return;
    a->rt = rt;
    a->index = index;
    if (weft__thread_start(&rt->devmem[index].warm, "weft-staging-warm",
                           "staging.pthread_create", weft__warm_main, a) == 0)
        rt->devmem[index].warm_started = 1;
    else
        weft__free(a);
}

void weft__machine_settle(weft_runtime *rt)
{
    for (unsigned i = 0; i < rt->ndevices; i++) {
        weft__devmem *dm = &rt->devmem[i];
        int join;

        pthread_mutex_lock(&rt->lock);
        join = dm->warm_started == 1;
        if (join)
            dm->warm_started = 2; /* joined below, by this thread only */
        pthread_mutex_unlock(&rt->lock);
        if (join)
            pthread_join(dm->warm, NULL);
    }
}

int weft__runtime_context(weft_runtime *rt, unsigned index, weft__context **ctx)
{
    int rc = 0, made = 0;

    if (index >= rt->ndevices)
        return weft__error(WEFT_ENODEV, "no device %u (%u devices)", index,
                           rt->ndevices);
    pthread_mutex_lock(&rt->lock);
    if (!rt->contexts[index]) {
        rc = weft__drv_context_create(rt->devices[index], &rt->contexts[index]);
        made = rc == 0;
    }
    if (rc == 0)
        *ctx = rt->contexts[index];
    if (made)
        weft__warm_start(rt, index);
    pthread_mutex_unlock(&rt->lock);
    return rc;
}

int weft__runtime_pool(weft_runtime *rt, unsigned index, weft__pool **pool)
{
    weft__devmem *dm = &rt->devmem[index];
    weft__context *ctx = NULL;
    int rc = 0;

    pthread_mutex_lock(&dm->lock);
    if (!dm->pool) {
        weft__pool_options o = WEFT__POOL_OPTIONS_INIT;
        uint64_t mem = rt->devices[index]->props.global_mem;

        o.limit = rt->device_mem_limit;
        if (mem && (!o.limit || o.limit > mem))
            o.limit = mem;
        /* Under a limit of a few slabs, one slab of the whole limit: the
         * free space of several would fragment between the blocks that a
         * node pins, and a large block would find room in none. */
        if (o.limit && o.limit < ((uint64_t)64 << 20) * 4)
            o.slab = (size_t)o.limit;
        rc = weft__runtime_context(rt, index, &ctx);
        if (rc == 0)
            rc = weft__pool_create(ctx, &o, &dm->pool);
    }
    if (rc == 0)
        *pool = dm->pool;
    pthread_mutex_unlock(&dm->lock);
    return rc;
}

weft__stager *weft__runtime_stager(weft_runtime *rt, unsigned index)
{
    weft__devmem *dm = &rt->devmem[index];
    weft__device *dev = rt->devices[index];
    weft__stager *s;

    /* Where device memory is host memory, staging would copy twice. */
    if (dev->drv->memory_is_host || !dev->props.pinned_host)
        return NULL;
    pthread_mutex_lock(&dm->lock);
    if (!dm->stager && !dm->stager_failed) {
        weft__stager_options o = {0};
        weft__context *ctx = NULL;
        int rc;

        o.topology = rt->topology;
        o.cpuset = dev->props.cpuset;
        rc = weft__runtime_context(rt, index, &ctx);
        if (rc == 0)
            rc = weft__stager_create(ctx, &o, &dm->stager);
        if (rc < 0) {
            dm->stager = NULL;
            dm->stager_failed = 1;
            weft__info("mem", "no staging for %s, copying directly: %s",
                       dev->name, weft_last_error());
            weft_clear_error();
        }
    }
    s = dm->stager;
    pthread_mutex_unlock(&dm->lock);
    return s;
}

void weft__runtime_live(weft_runtime *rt, long d)
{
    __atomic_add_fetch(&rt->live, d, __ATOMIC_RELAXED);
}

weft__device *weft__runtime_device(const weft_runtime *rt, unsigned index)
{
    return rt && index < rt->ndevices ? rt->devices[index] : NULL;
}

weft_device *weft_runtime_device(const weft_runtime *rt, unsigned index)
{
    if (!rt || index >= rt->ndevices) {
        if (rt)
            weft__error(WEFT_EINVAL,
                        "weft_runtime_device: index %u is out of range (%u "
                        "devices)",
                        index, rt->ndevices);
        else
            weft__error(WEFT_EINVAL, "weft_runtime_device: runtime is NULL");
        return NULL;
    }
    return (weft_device *)(void *)rt->devices[index];
}
