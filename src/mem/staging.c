/* Pinned staging (see staging.h). */
#include "staging.h"

#include <pthread.h>
#include <string.h>

/*
 * One pinned buffer of the ring. pending: an event was recorded after the
 * copy that uses the buffer, and has not been waited for.
 */
typedef struct weft__slot {
    weft__mem *mem;
    weft__event *ev;
    int pending;
} weft__slot;

typedef struct weft__crew weft__crew;

/* What a worker is told at start: its crew and its part of each job. */
typedef struct weft__crew_start {
    weft__crew *crew;
    unsigned index;
} weft__crew_start;

/*
 * The copy crew: threads - 1 workers plus the calling thread split each
 * chunk. A job is published by bumping generation under lock; each worker
 * takes part `index` of it, and the last one done signals done_cond.
 */
struct weft__crew {
    pthread_mutex_t lock;
    pthread_cond_t work_cond, done_cond;
    unsigned long generation;
    unsigned nthreads, running, stop;
    char *dst;
    const char *src;
    size_t size;
    pthread_t *tids;
    hwloc_topology_t topology;
    hwloc_bitmap_t cpuset; /* NULL: do not bind */
    weft__crew_start starts[64];
};

struct weft__stager {
    weft__context *ctx;
    pthread_mutex_t lock; /* one copy at a time through the ring */
    size_t chunk;
    unsigned nslots, next;
    weft__slot *slots;
    weft__crew crew;
    weft__stager_stats stats;
};

/* Part p of n of [0, size), on 64-byte boundaries. */
static void weft__part(size_t size, unsigned p, unsigned n, size_t *off,
                       size_t *len)
{
    size_t per = (size / n + 63) & ~(size_t)63;
    size_t a = WEFT__MIN((size_t)p * per, size);
    size_t b = WEFT__MIN(a + per, size);

    *off = a;
    *len = p + 1 == n ? size - a : b - a;
}

static void *weft__crew_main(void *arg)
{
    weft__crew_start *st = arg;
    weft__crew *c = st->crew;
    unsigned index = st->index;
    unsigned long seen = 0;

    if (c->cpuset)
        hwloc_set_cpubind(c->topology, c->cpuset, HWLOC_CPUBIND_THREAD);
    pthread_mutex_lock(&c->lock);
    for (;;) {
        size_t off, len;

        while (c->generation == seen && !c->stop)
            pthread_cond_wait(&c->work_cond, &c->lock);
        if (c->stop)
            break;
        seen = c->generation;
        weft__part(c->size, index, c->nthreads, &off, &len);
        pthread_mutex_unlock(&c->lock);
        memcpy(c->dst + off, c->src + off, len);
        pthread_mutex_lock(&c->lock);
        if (--c->running == 0)
            pthread_cond_signal(&c->done_cond);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* Copy size bytes with every thread of the crew; returns when done. */
static void weft__crew_copy(weft__crew *c, void *dst, const void *src,
                            size_t size)
{
    size_t off, len;

    if (c->nthreads == 1 || size < (256u << 10)) {
        memcpy(dst, src, size);
        return;
    }
    pthread_mutex_lock(&c->lock);
    c->dst = dst;
    c->src = src;
    c->size = size;
    c->running = c->nthreads - 1;
    c->generation++;
    pthread_cond_broadcast(&c->work_cond);
    pthread_mutex_unlock(&c->lock);
    weft__part(size, 0, c->nthreads, &off, &len);
    memcpy((char *)dst + off, (const char *)src + off, len);
    pthread_mutex_lock(&c->lock);
    while (c->running)
        pthread_cond_wait(&c->done_cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

static void weft__crew_stop(weft__crew *c, unsigned started)
{
    pthread_mutex_lock(&c->lock);
    c->stop = 1;
    pthread_cond_broadcast(&c->work_cond);
    pthread_mutex_unlock(&c->lock);
    for (unsigned i = 0; i < started; i++)
        pthread_join(c->tids[i], NULL);
    weft__free(c->tids);
    pthread_cond_destroy(&c->work_cond);
    pthread_cond_destroy(&c->done_cond);
    pthread_mutex_destroy(&c->lock);
}

static int weft__crew_start_threads(weft__crew *c)
{
    unsigned i;

    c->tids = weft__calloc(c->nthreads, sizeof *c->tids);
    if (!c->tids)
        return weft__error(WEFT_ENOMEM, "staging: copy threads");
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->work_cond, NULL);
    pthread_cond_init(&c->done_cond, NULL);
    for (i = 1; i < c->nthreads; i++) {
        c->starts[i].crew = c;
        c->starts[i].index = i;
        if (weft__fault("staging.pthread_create") ||
            pthread_create(&c->tids[i - 1], NULL, weft__crew_main,
                           &c->starts[i]) != 0) {
            weft__crew_stop(c, i - 1);
            return weft__error(WEFT_ENOMEM, "staging: cannot start a copy "
                                            "thread");
        }
    }
    return 0;
}

/*
 * Bind the calling thread near the device while its pinned memory is
 * allocated, so that the pages land on the device's NUMA node; *old gets
 * the binding to restore (NULL if none was changed).
 */
static void weft__bind_near(weft__crew *c, hwloc_bitmap_t *old)
{
    *old = NULL;
    if (!c->cpuset)
        return;
    *old = hwloc_bitmap_alloc();
    if (*old &&
        hwloc_get_cpubind(c->topology, *old, HWLOC_CPUBIND_THREAD) < 0) {
        hwloc_bitmap_free(*old);
        *old = NULL;
        return;
    }
    hwloc_set_cpubind(c->topology, c->cpuset, HWLOC_CPUBIND_THREAD);
}

static void weft__unbind(weft__crew *c, hwloc_bitmap_t old)
{
    if (!old)
        return;
    hwloc_set_cpubind(c->topology, old, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(old);
}

void weft__stager_destroy(weft__stager *s)
{
    if (!s)
        return;
    for (unsigned i = 0; s->slots && i < s->nslots; i++) {
        if (s->slots[i].pending)
            weft__drv_event_sync(s->slots[i].ev);
        if (s->slots[i].ev)
            weft__drv_event_destroy(s->slots[i].ev);
        if (s->slots[i].mem)
            weft__drv_mem_free(s->slots[i].mem);
    }
    weft__free(s->slots);
    if (s->crew.tids)
        weft__crew_stop(&s->crew, s->crew.nthreads - 1);
    if (s->crew.cpuset)
        hwloc_bitmap_free(s->crew.cpuset);
    pthread_mutex_destroy(&s->lock);
    weft__free(s);
}

int weft__stager_create(weft__context *ctx, const weft__stager_options *opts,
                        weft__stager **out)
{
    weft__stager_options o = {0};
    weft__stager *s;
    hwloc_bitmap_t old;
    int rc = 0;

    if (opts)
        o = *opts;
    s = weft__calloc(1, sizeof *s);
    if (!s)
        return weft__error(WEFT_ENOMEM, "staging: out of memory");
    pthread_mutex_init(&s->lock, NULL);
    s->ctx = ctx;
    s->chunk = o.chunk ? o.chunk : (size_t)8 << 20;
    s->nslots = o.slots ? o.slots : 3;
    s->crew.topology = o.topology;
    /*
     * Bind only where it helps: a device nearer some cores than others.
     * Binding to the whole machine gains nothing and costs a system call.
     */
    if (o.topology && o.cpuset && *o.cpuset) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();

        if (set && hwloc_bitmap_list_sscanf(set, o.cpuset) == 0 &&
            !hwloc_bitmap_isequal(
                set, hwloc_topology_get_topology_cpuset(o.topology)))
            s->crew.cpuset = set;
        else if (set)
            hwloc_bitmap_free(set);
    }
    /*
     * Threads: on the H200 machine one thread copies about 10 GB/s into
     * pinned memory and eight keep the copy engine (55 GB/s) nearly busy
     * (bench/RESULTS.md); more than the cores near the device only contend.
     */
    if (o.threads) {
        s->crew.nthreads = WEFT__MIN(o.threads, 64u);
    } else {
        int pus = 0;

        if (o.topology)
            pus = hwloc_bitmap_weight(
                s->crew.cpuset
                    ? s->crew.cpuset
                    : hwloc_topology_get_topology_cpuset(o.topology));
        s->crew.nthreads = pus > 0 ? (unsigned)WEFT__MIN(pus, 8) : 4;
    }
    s->slots = weft__calloc(s->nslots, sizeof *s->slots);
    if (!s->slots) {
        rc = weft__error(WEFT_ENOMEM, "staging: out of memory");
        goto fail;
    }
    weft__bind_near(&s->crew, &old);
    for (unsigned i = 0; i < s->nslots && rc == 0; i++) {
        rc = weft__drv_host_alloc(ctx, s->chunk, &s->slots[i].mem);
        if (rc == 0)
            rc = weft__drv_event_create(ctx, 0, &s->slots[i].ev);
    }
    weft__unbind(&s->crew, old);
    if (rc < 0)
        goto fail;
    if (s->crew.nthreads > 1 && (rc = weft__crew_start_threads(&s->crew)) < 0) {
        s->crew.tids = NULL;
        goto fail;
    }
    *out = s;
    return 0;
fail:
    weft__stager_destroy(s);
    return rc;
}

/* The next slot of the ring, once the copy that last used it is done. */
static int weft__next_slot(weft__stager *s, weft__slot **out)
{
    weft__slot *slot = &s->slots[s->next];
    int rc;

    s->next = (s->next + 1) % s->nslots;
    if (slot->pending) {
        if (weft__drv_event_query(slot->ev) == WEFT_ENOTREADY)
            s->stats.waits++;
        if ((rc = weft__drv_event_sync(slot->ev)) < 0)
            return rc;
        slot->pending = 0;
    }
    *out = slot;
    return 0;
}

int weft__stager_h2d(weft__stager *s, weft__queue *q, weft__mem *dst,
                     size_t off, const void *src, size_t size)
{
    size_t done = 0;
    int rc = 0;

    pthread_mutex_lock(&s->lock);
    while (done < size) {
        size_t n = WEFT__MIN(s->chunk, size - done);
        weft__slot *slot;

        if ((rc = weft__next_slot(s, &slot)) < 0)
            break;
        weft__crew_copy(&s->crew, slot->mem->host, (const char *)src + done, n);
        if ((rc = weft__drv_copy_h2d(q, dst, off + done, slot->mem->host, n)) <
            0)
            break;
        if ((rc = weft__drv_event_record(slot->ev, q)) < 0) {
            /* the copy is queued but nothing marks its end: drain */
            weft__drv_queue_sync(q);
            break;
        }
        slot->pending = 1;
        done += n;
        s->stats.chunks++;
    }
    s->stats.h2d_bytes += done;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int weft__stager_d2h(weft__stager *s, weft__queue *q, void *dst, weft__mem *src,
                     size_t off, size_t size)
{
    /* chunk i lives in slots[(first + i) % nslots] */
    size_t nchunks = (size + s->chunk - 1) / s->chunk, issued = 0;
    unsigned first;
    int rc = 0;

    pthread_mutex_lock(&s->lock);
    first = s->next;
    for (size_t i = 0; i < nchunks && rc == 0; i++) {
        weft__slot *slot;

        /* keep the ring full: copies of later chunks run meanwhile */
        while (issued < nchunks && issued < i + s->nslots) {
            size_t o = issued * s->chunk;
            size_t n = WEFT__MIN(s->chunk, size - o);

            if ((rc = weft__next_slot(s, &slot)) < 0 ||
                (rc = weft__drv_copy_d2h(q, slot->mem->host, src, off + o, n)) <
                    0)
                break;
            if ((rc = weft__drv_event_record(slot->ev, q)) < 0) {
                weft__drv_queue_sync(q); /* as in h2d */
                break;
            }
            slot->pending = 1;
            issued++;
        }
        if (rc < 0)
            break;
        slot = &s->slots[(first + i) % s->nslots];
        if ((rc = weft__drv_event_sync(slot->ev)) < 0)
            break;
        slot->pending = 0;
        weft__crew_copy(&s->crew, (char *)dst + i * s->chunk, slot->mem->host,
                        WEFT__MIN(s->chunk, size - i * s->chunk));
        s->stats.d2h_bytes += WEFT__MIN(s->chunk, size - i * s->chunk);
        s->stats.chunks++;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void weft__stager_get_stats(weft__stager *s, weft__stager_stats *st)
{
    pthread_mutex_lock(&s->lock);
    *st = s->stats;
    pthread_mutex_unlock(&s->lock);
}
