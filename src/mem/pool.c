/*
 * The device memory pool (see pool.h).
 *
 * Each slab (one driver allocation) is cut into extents, kept in address
 * order in a doubly linked list that covers the slab exactly: a block is
 * an extent in use, the rest are free. Two free extents are never
 * neighbours (freeing coalesces), so a slab with no block is one free
 * extent.
 *
 * Free extents are also in bins by size: bin b holds the sizes in
 * [2^b, 2^(b+1)), unordered, and bit b of nonempty says whether bin b has
 * any. An allocation takes the smallest free extent that fits from the
 * lowest bin that has one (best fit within a bin, good fit across) and
 * splits off what it does not need as a new free extent.
 *
 * Everything below is guarded by pool->lock.
 */
#include "pool.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define WEFT__POOL_SLAB      ((size_t)64 << 20)
#define WEFT__POOL_MIN_ALIGN ((size_t)256)
#define WEFT__POOL_NBINS     64

typedef struct weft__pool_slab weft__pool_slab;

struct weft__pool_extent {
    weft__pool_slab *slab;
    size_t offset, size;
    weft__pool_extent *prev, *next;         /* in the slab, by address */
    weft__pool_extent *bin_prev, *bin_next; /* in its bin, while free */
    unsigned free;
};

struct weft__pool_slab {
    weft__mem *mem;
    size_t size;
    size_t used; /* bytes in blocks */
    weft__pool_extent *first;
    weft__pool_slab *prev, *next;
};

struct weft__pool {
    weft__context *ctx;
    pthread_mutex_t lock;
    size_t align, slab;
    weft__pool_slab *slabs;
    weft__pool_extent *bins[WEFT__POOL_NBINS];
    uint64_t nonempty;
    weft__pool_stats st; /* st.limit and st.align are the pool's settings */
};

static unsigned weft__pool_bin(size_t size)
{
    return 63u - (unsigned)__builtin_clzll((unsigned long long)size);
}

static void weft__pool_bin_insert(weft__pool *p, weft__pool_extent *e)
{
    unsigned b = weft__pool_bin(e->size);

    e->bin_prev = NULL;
    e->bin_next = p->bins[b];
    if (e->bin_next)
        e->bin_next->bin_prev = e;
    p->bins[b] = e;
    p->nonempty |= (uint64_t)1 << b;
}

static void weft__pool_bin_remove(weft__pool *p, weft__pool_extent *e)
{
    unsigned b = weft__pool_bin(e->size);

    if (e->bin_prev)
        e->bin_prev->bin_next = e->bin_next;
    else
        p->bins[b] = e->bin_next;
    if (e->bin_next)
        e->bin_next->bin_prev = e->bin_prev;
    if (!p->bins[b])
        p->nonempty &= ~((uint64_t)1 << b);
    e->bin_prev = e->bin_next = NULL;
}

/* The free extent that serves size bytes best, or NULL. */
static weft__pool_extent *weft__pool_fit(weft__pool *p, size_t size)
{
    unsigned b = weft__pool_bin(size);
    uint64_t bins = p->nonempty & (~(uint64_t)0 << b);

    while (bins) {
        weft__pool_extent *best = NULL, *e;

        b = (unsigned)__builtin_ctzll(bins);
        for (e = p->bins[b]; e; e = e->bin_next) {
            if (e->size >= size && (!best || e->size < best->size)) {
                best = e;
                if (e->size == size)
                    break;
            }
        }
        if (best)
            return best;
        bins &= bins - 1;
    }
    return NULL;
}

/* Insert n after e in e's slab. */
static void weft__pool_link_after(weft__pool_extent *e, weft__pool_extent *n)
{
    n->prev = e;
    n->next = e->next;
    if (e->next)
        e->next->prev = n;
    e->next = n;
}

static void weft__pool_unlink(weft__pool_extent *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        e->slab->first = e->next;
    if (e->next)
        e->next->prev = e->prev;
}

static void weft__pool_lock(weft__pool *p)
{
    int rc = pthread_mutex_lock(&p->lock);

    weft__assert(rc == 0);
}

static void weft__pool_unlock(weft__pool *p)
{
    int rc = pthread_mutex_unlock(&p->lock);

    weft__assert(rc == 0);
}

static size_t weft__pool_gcd(size_t a, size_t b)
{
    while (b) {
        size_t t = a % b;

        a = b;
        b = t;
    }
    return a;
}

static size_t weft__pool_lcm(size_t a, size_t b)
{
    return a / weft__pool_gcd(a, b) * b;
}

/* ---- the validator ----------------------------------------------------- */

static _Thread_local char weft__pool_why[200];

#define WEFT__POOL_BROKEN(...)                                                 \
    (snprintf(weft__pool_why, sizeof weft__pool_why, __VA_ARGS__),             \
     weft__pool_why)

static const char *weft__pool_check_locked(const weft__pool *p)
{
    uint64_t bytes = 0, used = 0, blocks = 0, slabs = 0, nfree = 0, binned = 0;
    const weft__pool_slab *s;
    const weft__pool_extent *e;
    unsigned b;

    for (s = p->slabs; s; s = s->next) {
        size_t at = 0, slab_used = 0;

        if (s->next && s->next->prev != s)
            return "slab list links broken";
        if (!s->mem || s->mem->size != s->size)
            return WEFT__POOL_BROKEN("slab of %zu bytes has memory of %zu",
                                     s->size, s->mem ? s->mem->size : 0);
        for (e = s->first; e; e = e->next) {
            if (e->slab != s)
                return "extent in the wrong slab";
            if (e->next && e->next->prev != e)
                return "extent list links broken";
            if (e->offset != at)
                return WEFT__POOL_BROKEN("extent at %zu where %zu was expected",
                                         e->offset, at);
            if (e->size == 0 || e->size % p->align || e->offset % p->align)
                return WEFT__POOL_BROKEN("extent [%zu, +%zu) not aligned to "
                                         "%zu",
                                         e->offset, e->size, p->align);
            if (e->free && e->next && e->next->free)
                return WEFT__POOL_BROKEN("free extents at %zu and %zu are not "
                                         "coalesced",
                                         e->offset, e->next->offset);
            if (e->free)
                nfree++;
            else {
                slab_used += e->size;
                blocks++;
            }
            at += e->size;
        }
        if (at != s->size)
            return WEFT__POOL_BROKEN("extents cover %zu of a slab of %zu", at,
                                     s->size);
        if (slab_used != s->used)
            return WEFT__POOL_BROKEN("slab counts %zu bytes used, its blocks "
                                     "%zu",
                                     s->used, slab_used);
        bytes += s->size;
        used += slab_used;
        slabs++;
    }
    for (b = 0; b < WEFT__POOL_NBINS; b++) {
        if (!!(p->nonempty & ((uint64_t)1 << b)) != !!p->bins[b])
            return WEFT__POOL_BROKEN("bin %u and its non-empty bit disagree",
                                     b);
        for (e = p->bins[b]; e; e = e->bin_next) {
            if (!e->free || weft__pool_bin(e->size) != b)
                return WEFT__POOL_BROKEN("extent of %zu bytes (%s) in bin %u",
                                         e->size, e->free ? "free" : "used", b);
            if (e->bin_next && e->bin_next->bin_prev != e)
                return "bin links broken";
            binned++;
        }
    }
    if (binned != nfree)
        return WEFT__POOL_BROKEN("%llu free extents, %llu in bins",
                                 (unsigned long long)nfree,
                                 (unsigned long long)binned);
    if (bytes != p->st.driver_bytes || slabs != p->st.slabs)
        return "driver byte or slab count disagrees with the slabs";
    if (used != p->st.in_use || blocks != p->st.blocks)
        return "bytes or blocks in use disagree with the slabs";
    if (p->st.driver_bytes > p->st.limit)
        return "more driver memory held than the limit";
    if (p->st.peak < p->st.in_use)
        return "peak below the bytes in use";
    return NULL;
}

const char *weft__pool_check(weft__pool *pool)
{
    const char *why;

    if (!pool)
        return "no pool";
    weft__pool_lock(pool);
    why = weft__pool_check_locked(pool);
    weft__pool_unlock(pool);
    return why;
}

#if WEFT_DEBUG >= 2
static bool weft__pool_valid(const weft__pool *p)
{
    const char *why = weft__pool_check_locked(p);

    if (why)
        weft__warn("pool", "broken pool: %s", why);
    return why == NULL;
}
#endif

/* ---- create and destroy ------------------------------------------------ */

int weft__pool_create(weft__context *ctx, const weft__pool_options *opts,
                      weft__pool **out)
{
    weft__pool_options o = WEFT__POOL_OPTIONS_INIT;
    const weft_device_info *props;
    weft__pool *p;
    size_t align;
    int rc;

    if (!ctx || !out)
        return weft__error(WEFT_EINVAL, "pool create: %s is NULL",
                           ctx ? "result" : "context");
    if (opts) {
        if (opts->size < sizeof(size_t) || opts->size > sizeof o)
            return weft__error(WEFT_EINVAL,
                               "pool create: options size %zu is not that of "
                               "weft__pool_options (%zu)",
                               opts->size, sizeof o);
        memcpy(&o, opts, opts->size);
    }
    if (o.slab > SIZE_MAX / 2)
        return weft__error(WEFT_EINVAL, "pool create: slab of %zu bytes",
                           o.slab);
    if (o.align & (o.align - 1) || o.align > SIZE_MAX / 4)
        return weft__error(WEFT_EINVAL,
                           "pool create: alignment %zu is not a power of two",
                           o.align);
    props = &ctx->dev->props;
    /* a multiple of every constraint, whether or not each is a power of 2 */
    align = weft__pool_lcm(WEFT__POOL_MIN_ALIGN, o.align ? o.align : 1);
    if (props->arg_offset_align > 1)
        align = weft__pool_lcm(align, props->arg_offset_align);
    p = weft__calloc(1, sizeof *p);
    if (!p)
        return weft__error(WEFT_ENOMEM, "pool create: out of memory");
    if ((rc = pthread_mutex_init(&p->lock, NULL)) != 0) {
        weft__free(p);
        return weft__error(WEFT_ENOMEM, "pool create: mutex: %s",
                           weft__errno_name(rc));
    }
    p->ctx = ctx;
    p->align = align;
    p->slab = o.slab ? o.slab : WEFT__POOL_SLAB;
    p->slab = (p->slab + align - 1) / align * align;
    p->st.limit = o.limit             ? o.limit
                  : props->global_mem ? props->global_mem
                                      : UINT64_MAX;
    p->st.align = align;
    *out = p;
    return 0;
}

/* Give back the slabs that hold no block; returns their bytes. */
static uint64_t weft__pool_trim_locked(weft__pool *p)
{
    weft__pool_slab *s, *next;
    uint64_t bytes = 0;

    for (s = p->slabs; s; s = next) {
        next = s->next;
        if (s->used)
            continue;
        weft__assert_internal(s->first && s->first->free && !s->first->next);
        weft__pool_bin_remove(p, s->first);
        weft__free(s->first);
        if (s->prev)
            s->prev->next = s->next;
        else
            p->slabs = s->next;
        if (s->next)
            s->next->prev = s->prev;
        if (weft__drv_mem_free(s->mem) < 0)
            weft__warn("pool", "freeing a slab of %zu bytes: %s", s->size,
                       weft_last_error());
        bytes += s->size;
        p->st.driver_bytes -= s->size;
        p->st.driver_frees++;
        p->st.slabs--;
        weft__free(s);
    }
    weft__assert_expensive(weft__pool_valid(p));
    return bytes;
}

uint64_t weft__pool_trim(weft__pool *pool)
{
    uint64_t bytes;

    if (!pool)
        return 0;
    weft__pool_lock(pool);
    bytes = weft__pool_trim_locked(pool);
    weft__pool_unlock(pool);
    return bytes;
}

int weft__pool_destroy(weft__pool *pool)
{
    uint64_t blocks;

    if (!pool)
        return 0;
    weft__pool_lock(pool);
    blocks = pool->st.blocks;
    if (!blocks)
        weft__pool_trim_locked(pool);
    weft__pool_unlock(pool);
    if (blocks)
        return weft__error(WEFT_EBUSY,
                           "pool destroy: %llu blocks of device %s still "
                           "allocated",
                           (unsigned long long)blocks, pool->ctx->dev->name);
    weft__assert_internal(!pool->slabs);
    pthread_mutex_destroy(&pool->lock);
    weft__free(pool);
    return 0;
}

/* ---- alloc and free ---------------------------------------------------- */

/*
 * Make the front size bytes of free extent e a block; the rest, if any,
 * stays free as a new extent.
 */
static int weft__pool_take(weft__pool *p, weft__pool_extent *e, size_t size)
{
    weft__pool_extent *rest = NULL;

    if (e->size > size) {
        rest = weft__calloc(1, sizeof *rest);
        if (!rest)
            return weft__error(WEFT_ENOMEM, "pool: out of memory for an "
                                            "extent");
    }
    weft__pool_bin_remove(p, e);
    if (rest) {
        rest->slab = e->slab;
        rest->offset = e->offset + size;
        rest->size = e->size - size;
        rest->free = 1;
        weft__pool_link_after(e, rest);
        weft__pool_bin_insert(p, rest);
        e->size = size;
    }
    e->free = 0;
    e->slab->used += size;
    return 0;
}

/* A new slab for a block of size bytes; *out is that block's extent. */
static int weft__pool_grow(weft__pool *p, size_t size, weft__pool_extent **out)
{
    const weft_device_info *props = &p->ctx->dev->props;
    uint64_t room;
    size_t bytes;
    weft__pool_slab *s;
    weft__pool_extent *e, *rest = NULL;
    int rc;

    room = p->st.limit - p->st.driver_bytes;
    room -= room % p->align;
    if (size > room)
        return weft__error(
            WEFT_EDEVMEM,
            "pool of device %s: %zu bytes would pass its limit (%llu of "
            "%llu bytes held, %llu of them in blocks)",
            p->ctx->dev->name, size, (unsigned long long)p->st.driver_bytes,
            (unsigned long long)p->st.limit, (unsigned long long)p->st.in_use);
    bytes = p->slab;
    if (bytes > room)
        bytes = (size_t)room;
    if (props->max_alloc && bytes > props->max_alloc)
        bytes = (size_t)(props->max_alloc - props->max_alloc % p->align);
    if (bytes < size)
        bytes = size;

    s = weft__calloc(1, sizeof *s);
    e = weft__calloc(1, sizeof *e);
    if (s && e && bytes > size)
        rest = weft__calloc(1, sizeof *rest);
    if (!s || !e || (bytes > size && !rest)) {
        weft__free(s);
        weft__free(e);
        weft__free(rest);
        return weft__error(WEFT_ENOMEM, "pool: out of memory for a slab");
    }
    if ((rc = weft__drv_mem_alloc(p->ctx, bytes, &s->mem)) < 0) {
        weft__free(s);
        weft__free(e);
        weft__free(rest);
        return weft__error_prefix(rc, "pool of device %s: a slab of %zu bytes",
                                  p->ctx->dev->name, bytes);
    }
    s->size = bytes;
    s->used = size;
    s->first = e;
    s->next = p->slabs;
    if (s->next)
        s->next->prev = s;
    p->slabs = s;
    e->slab = s;
    e->size = size;
    if (rest) {
        rest->slab = s;
        rest->offset = size;
        rest->size = bytes - size;
        rest->free = 1;
        weft__pool_link_after(e, rest);
        weft__pool_bin_insert(p, rest);
    }
    p->st.driver_allocs++;
    p->st.driver_bytes += bytes;
    p->st.slabs++;
    *out = e;
    return 0;
}

int weft__pool_alloc(weft__pool *pool, size_t size, weft__pool_block *block)
{
    weft__pool_extent *e;
    size_t rounded;
    int rc, hit;

    if (!pool || !block)
        return weft__error(WEFT_EINVAL, "pool alloc: %s is NULL",
                           pool ? "result" : "pool");
    if (size == 0)
        return weft__error(WEFT_EINVAL, "pool alloc: size 0");
    if (size > SIZE_MAX - pool->align)
        return weft__error(WEFT_EDEVMEM, "pool alloc: %zu bytes", size);
    rounded = (size + pool->align - 1) / pool->align * pool->align;

    weft__pool_lock(pool);
    e = weft__pool_fit(pool, rounded);
    hit = e != NULL;
    rc = hit ? weft__pool_take(pool, e, rounded)
             : weft__pool_grow(pool, rounded, &e);
    if (rc < 0) {
        pool->st.failures++;
        weft__pool_unlock(pool);
        return rc;
    }
    if (hit)
        pool->st.hits++;
    else
        pool->st.misses++;
    pool->st.blocks++;
    pool->st.in_use += rounded;
    if (pool->st.in_use > pool->st.peak)
        pool->st.peak = pool->st.in_use;
    block->mem = e->slab->mem;
    block->offset = e->offset;
    block->size = e->size;
    block->extent = e;
    weft__assert_expensive(weft__pool_valid(pool));
    weft__pool_unlock(pool);
    return 0;
}

#if WEFT_DEBUG >= 1
/* 1 if block is one of p's live blocks, as it was handed out. */
static int weft__pool_is_live(const weft__pool *p, const weft__pool_block *b)
{
    const weft__pool_slab *s;
    const weft__pool_extent *e;

    for (s = p->slabs; s; s = s->next) {
        if (s->mem != b->mem)
            continue;
        for (e = s->first; e; e = e->next)
            if (e == b->extent)
                return !e->free && e->offset == b->offset && e->size == b->size;
        return 0;
    }
    return 0;
}
#endif

/* Make block extent e free again, coalesced with its free neighbours. */
static void weft__pool_release(weft__pool *pool, weft__pool_extent *e)
{
    weft__pool_extent *n;

    e->free = 1;
    e->slab->used -= e->size;
    /* coalesce, so that two free extents are never neighbours */
    if (e->prev && e->prev->free) {
        n = e;
        e = e->prev;
        weft__pool_bin_remove(pool, e);
        e->size += n->size;
        weft__pool_unlink(n);
        weft__free(n);
    }
    if (e->next && e->next->free) {
        n = e->next;
        weft__pool_bin_remove(pool, n);
        e->size += n->size;
        weft__pool_unlink(n);
        weft__free(n);
    }
    weft__pool_bin_insert(pool, e);
}

void weft__pool_free(weft__pool *pool, const weft__pool_block *block)
{
    weft__pool_extent *e;

    if (!pool || !block || !block->extent)
        weft__client_crash("weft__pool_free: %s is NULL",
                           !pool ? "the pool" : "the block");
    weft__pool_lock(pool);
#if WEFT_DEBUG >= 1
    if (!weft__pool_is_live(pool, block)) {
        weft__pool_unlock(pool);
        weft__client_crash("weft__pool_free: offset %zu of memory %p is not a "
                           "live block of this pool (freed twice?)",
                           block->offset, (void *)block->mem);
    }
#endif
    e = block->extent;
    pool->st.in_use -= e->size;
    pool->st.blocks--;
    weft__pool_release(pool, e);
    weft__assert_expensive(weft__pool_valid(pool));
    weft__pool_unlock(pool);
}

int weft__pool_reserve(weft__pool *pool, size_t size)
{
    weft__pool_extent *e;
    size_t rounded;
    int rc = 0;

    if (size == 0 || size > SIZE_MAX - pool->align)
        return size ? weft__error(WEFT_EDEVMEM, "pool reserve: %zu bytes", size)
                    : 0;
    rounded = (size + pool->align - 1) / pool->align * pool->align;
    weft__pool_lock(pool);
    if (!weft__pool_fit(pool, rounded) &&
        (rc = weft__pool_grow(pool, rounded, &e)) == 0)
        weft__pool_release(pool, e);
    weft__assert_expensive(weft__pool_valid(pool));
    weft__pool_unlock(pool);
    return rc;
}

void weft__pool_get_stats(weft__pool *pool, weft__pool_stats *st)
{
    if (!pool || !st)
        return;
    weft__pool_lock(pool);
    *st = pool->st;
    weft__pool_unlock(pool);
}

void weft__pool_get_limit(const weft__pool *pool, uint64_t *limit,
                          size_t *align)
{
    *limit = pool->st.limit;
    *align = pool->align;
}
