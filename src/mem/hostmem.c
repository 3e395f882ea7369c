/*
 * Page-locked host memory for the program (weft_host_alloc): made by the
 * first device whose driver pins host memory (its PINNED memory), else
 * plain aligned memory, then made pinned for every other device that has
 * a notion of it: nothing to do where its driver already recognises the
 * memory (host_is_pinned: CUDA's portable allocations, the sim's own
 * platform), else registered with it (host_register: another OpenCL
 * device's context, another driver). The runtime keeps the blocks in a
 * list so that copies recognise them (weft__host_block_pinned) and
 * buffers that wrap them hold them (weft__host_block_use).
 *
 * Locking: rt->host_blocks and every block's fields are guarded by
 * rt->lock, a leaf: nothing is called with it held but list walks.
 * rt->nhost_blocks (atomic) lets a copy skip the lock while there is none.
 */
#include "machine.h"

#include <stdlib.h>
#include <string.h>

/* Plain host memory is aligned to a page, as pinned memory is. */
#define WEFT__HOST_BLOCK_ALIGN 4096

struct weft__host_block {
    struct weft__host_block *next;
    unsigned char *ptr;
    size_t size;
    weft__mem *mem;  /* PINNED memory of device `device`, or NULL: plain */
    unsigned device; /* the device whose context made mem */
    long buffers;    /* live buffers that wrap bytes of it */
    /* Per device of the runtime: its copies take the block as pinned;
     * the REGISTERED memory that made it so, or NULL. */
    unsigned char *pinned;
    weft__mem **reg;
};

/* Free what b holds (its registrations first) and b. */
static void weft__block_free(weft_runtime *rt, weft__host_block *b)
{
    for (unsigned d = 0; b->reg && d < rt->ndevices; d++)
        if (b->reg[d] && weft__drv_mem_free(b->reg[d]) < 0)
            weft__warn("mem", "weft_host_free: %s", weft_last_error());
    if (b->mem) {
        if (weft__drv_mem_free(b->mem) < 0)
            weft__warn("mem", "weft_host_free: %s", weft_last_error());
    } else {
        free(b->ptr);
    }
    weft__free(b->pinned);
    weft__free(b->reg);
    weft__free(b);
}

/*
 * Make b pinned for every device with a notion of pinned memory, besides
 * the one that made it: what the device's driver recognises as it is,
 * else a registration. The first failure is returned (b->reg keeps what
 * was registered, for weft__block_free).
 */
static int weft__block_pin_all(weft_runtime *rt, weft__host_block *b)
{
    for (unsigned d = 0; d < rt->ndevices; d++) {
        weft__device *dev = rt->devices[d];
        weft__context *ctx;
        int rc;

        if (b->mem && d == b->device) {
            b->pinned[d] = 1;
            continue;
        }
        if (dev->drv->memory_is_host || !dev->props.host_register)
            continue; /* copies there are memcpy, or no notion of it */
        if ((rc = weft__runtime_context(rt, d, &ctx)) < 0)
            return weft__error_prefix(rc, "weft_host_alloc: %s", dev->name);
        if (!weft__drv_host_is_pinned(ctx, b->ptr, b->size) &&
            (rc = weft__drv_host_register(ctx, b->ptr, b->size, &b->reg[d])) <
                0)
            return weft__error_prefix(rc,
                                      "weft_host_alloc: registering %zu "
                                      "bytes with %s",
                                      b->size, dev->name);
        b->pinned[d] = 1;
    }
    return 0;
}

/* The block holding [ptr, ptr + size), under rt->lock; NULL if none. */
static weft__host_block *weft__block_find(weft_runtime *rt, const void *ptr,
                                          size_t size)
{
    const unsigned char *a = ptr;

    for (weft__host_block *b = rt->host_blocks; b; b = b->next)
        if (a >= b->ptr && size <= b->size &&
            (size_t)(a - b->ptr) <= b->size - size)
            return b;
    return NULL;
}

/* The device that pins host memory for the others, or UINT_MAX. */
static unsigned weft__pinning_device(const weft_runtime *rt)
{
    for (unsigned d = 0; d < rt->ndevices; d++)
        if (!rt->devices[d]->drv->memory_is_host &&
            rt->devices[d]->props.pinned_host)
            return d;
    return UINT32_MAX;
}

int weft_host_alloc(weft_runtime *rt, size_t size, void **ptr)
{
    weft__host_block *b;
    unsigned d;
    int rc;

    if (!rt || !ptr)
        return weft__error(WEFT_EINVAL, "weft_host_alloc: %s is NULL",
                           rt ? "ptr" : "runtime");
    if (size == 0)
        return weft__error(WEFT_EINVAL, "weft_host_alloc: size 0");
    if (size > PTRDIFF_MAX - WEFT__HOST_BLOCK_ALIGN)
        return weft__error(WEFT_ENOMEM,
                           "weft_host_alloc: size %zu is more than any "
                           "allocation can hold",
                           size);
    b = weft__calloc(1, sizeof *b);
    if (b) {
        b->pinned = weft__calloc((size_t)rt->ndevices + 1, 1);
        b->reg = weft__calloc((size_t)rt->ndevices + 1, sizeof *b->reg);
    }
    if (!b || !b->pinned || !b->reg) {
        if (b) {
            weft__free(b->pinned);
            weft__free(b->reg);
        }
        weft__free(b);
        return weft__error(WEFT_ENOMEM, "weft_host_alloc: out of memory");
    }
    b->size = size;
    b->device = d = weft__pinning_device(rt);
    if (d != UINT32_MAX) {
        weft__context *ctx;

        if ((rc = weft__runtime_context(rt, d, &ctx)) < 0 ||
            (rc = weft__drv_host_alloc(ctx, size, &b->mem)) < 0) {
            b->ptr = NULL;
            weft__free(b->pinned);
            weft__free(b->reg);
            weft__free(b);
            return weft__error_prefix(rc, "weft_host_alloc: %zu bytes on %s",
                                      size, rt->devices[d]->name);
        }
        b->ptr = b->mem->host;
    } else {
        void *p = NULL;
        size_t round = (size + WEFT__HOST_BLOCK_ALIGN - 1) &
                       ~(size_t)(WEFT__HOST_BLOCK_ALIGN - 1);

        if (weft__fault("host_alloc.aligned_alloc") ||
            !(p = aligned_alloc(WEFT__HOST_BLOCK_ALIGN, round))) {
            weft__free(b->pinned);
            weft__free(b->reg);
            weft__free(b);
            return weft__error(WEFT_ENOMEM,
                               "weft_host_alloc: out of host memory for %zu "
                               "bytes",
                               size);
        }
        b->ptr = p;
    }
    if ((rc = weft__block_pin_all(rt, b)) < 0) {
        weft__block_free(rt, b);
        return rc;
    }
    pthread_mutex_lock(&rt->lock);
    b->next = rt->host_blocks;
    rt->host_blocks = b;
    __atomic_add_fetch(&rt->nhost_blocks, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&rt->lock);
    weft__runtime_live(rt, 1);
    *ptr = b->ptr;
    return 0;
}

int weft_host_free(weft_runtime *rt, void *ptr)
{
    weft__host_block **at, *b;

    if (!rt)
        return weft__error(WEFT_EINVAL, "weft_host_free: runtime is NULL");
    if (!ptr)
        return 0;
    pthread_mutex_lock(&rt->lock);
    for (at = &rt->host_blocks; *at && (*at)->ptr != ptr; at = &(*at)->next)
        ;
    b = *at;
    if (!b) {
        pthread_mutex_unlock(&rt->lock);
        return weft__error(WEFT_EINVAL,
                           "weft_host_free: %p is not memory that "
                           "weft_host_alloc of this runtime returned (or it "
                           "was freed)",
                           ptr);
    }
    if (b->buffers > 0) {
        long n = b->buffers;

        pthread_mutex_unlock(&rt->lock);
        return weft__error(WEFT_EBUSY,
                           "weft_host_free: %zu bytes at %p are wrapped by %ld "
                           "live buffers; destroy them first",
                           b->size, ptr, n);
    }
    *at = b->next;
    __atomic_sub_fetch(&rt->nhost_blocks, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&rt->lock);
    weft__block_free(rt, b);
    weft__runtime_live(rt, -1);
    return 0;
}

int weft__host_block_pinned(weft_runtime *rt, unsigned d, const void *ptr,
                            size_t size)
{
    const weft__host_block *b;
    int in;

    if (!__atomic_load_n(&rt->nhost_blocks, __ATOMIC_ACQUIRE) || !size)
        return 0;
    pthread_mutex_lock(&rt->lock);
    b = weft__block_find(rt, ptr, size);
    in = b && d < rt->ndevices && b->pinned[d];
    pthread_mutex_unlock(&rt->lock);
    return in;
}

int weft__host_block_use(weft_runtime *rt, const void *ptr, size_t size,
                         long delta)
{
    weft__host_block *b;

    if (!__atomic_load_n(&rt->nhost_blocks, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&rt->lock);
    b = weft__block_find(rt, ptr, size);
    if (b)
        b->buffers += delta;
    pthread_mutex_unlock(&rt->lock);
    return b != NULL;
}
