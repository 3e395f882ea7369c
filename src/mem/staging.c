/* Pinned staging (see staging.h). */
#include "staging.h"

#include "../base/os.h"

#include <pthread.h>
#include <string.h>

typedef struct weft__crew weft__crew;
typedef struct weft__slot weft__slot;

/* What a worker is told at start: its crew and its part of each job. */
typedef struct weft__crew_start {
    weft__crew *crew;
    unsigned index;
} weft__crew_start;

/*
 * The copy crew: threads - 1 workers plus the calling thread split each
 * chunk. A job is published by bumping generation under lock; each worker
 * takes part `index` of it, and the last one done signals done_cond. One
 * job at a time: `use` is held by the thread whose job it is (a caller of
 * the stager, or a host function copying out of a pinned buffer) for the
 * whole job, and for nothing else, so that it never waits on a device
 * while held.
 */
struct weft__crew {
    pthread_mutex_t use;
    pthread_mutex_t lock;
    pthread_cond_t work_cond, done_cond;
    unsigned long generation;
    unsigned nthreads, running, stop;
    /* the job: rows of width bytes, dpitch and spitch apart */
    char *dst;
    const char *src;
    size_t width, rows, dpitch, spitch;
    pthread_t *tids;
    hwloc_topology_t topology;
    hwloc_bitmap_t cpuset; /* NULL: do not bind */
    weft__crew_start starts[64];
};

/*
 * One pinned buffer. ev is recorded after each use of it (the device's
 * copy of an upload, the host function of an asynchronous download);
 * pending: ev was recorded and not yet seen complete. held: a synchronous
 * download has filled it and not yet copied it out. copied, dst, size: an
 * asynchronous download's event after the device's copy into the buffer,
 * and where its host function copies the bytes (set by the caller under
 * the stager's lock before the host function is enqueued, read by it;
 * not changed again until ev completes).
 */
struct weft__slot {
    weft__stager *s;
    weft__slot *next_spare; /* on the grower's list of spares */
    weft__mem *mem;
    weft__event *ev, *copied;
    int pending, held;
    uint64_t taken; /* s->taken when last handed out: the oldest is waited */
    char *dst;      /* where the copy out puts its rows */
    size_t pitch, width, rows; /* their pitch there; the packed rows */
};

struct weft__stager {
    weft__context *ctx;
    pthread_mutex_t lock; /* one call at a time through the buffers */
    size_t chunk;
    unsigned nslots, maxslots;
    unsigned window;    /* buffers a synchronous download fills ahead */
    weft__slot **slots; /* maxslots entries, nslots made (pointers: the
                           host functions in flight hold theirs) */
    weft__slot **ahead; /* window entries, for the synchronous download */
    uint64_t taken;
    /* Host functions of asynchronous downloads, made on first use. */
    weft__queue *hostq;
    weft__crew crew;
    weft__stager_stats stats;
    /*
     * The grower: a thread that makes the buffers asked for beyond the
     * first ones, so that a caller never waits for a pinned allocation
     * (milliseconds each) where a buffer in use frees up sooner; it waits
     * for the oldest instead. Under grow_lock: asked (buffers asked for
     * and not yet made), spare (made, not yet taken into slots), stop,
     * failed (an allocation failed: no more are asked for). nslots +
     * nspare + asked never exceeds maxslots.
     */
    pthread_mutex_t grow_lock;
    pthread_cond_t grow_cond;
    pthread_t grow_tid;
    int grow_started, grow_stop, grow_failed;
    unsigned asked, nspare;
    weft__slot *spare;
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

/*
 * Part p of n of a job: of its bytes where it is one row, else of its
 * rows (whole rows each).
 */
static void weft__crew_part(const weft__crew *c, unsigned p, unsigned n)
{
    size_t off, len;

    if (c->rows == 1) {
        weft__part(c->width, p, n, &off, &len);
        memcpy(c->dst + off, c->src + off, len);
        return;
    }
    off = c->rows * p / n;
    len = c->rows * (p + 1) / n - off;
    for (size_t i = off; i < off + len; i++)
        memcpy(c->dst + i * c->dpitch, c->src + i * c->spitch, c->width);
}

static void *weft__crew_main(void *arg)
{
    weft__crew_start *st = arg;
    weft__crew *c = st->crew;
    unsigned index = st->index;
    unsigned long seen = 0;

    weft__thread_bind(c->topology, c->cpuset);
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (c->generation == seen && !c->stop)
            pthread_cond_wait(&c->work_cond, &c->lock);
        if (c->stop)
            break;
        seen = c->generation;
        pthread_mutex_unlock(&c->lock);
        weft__crew_part(c, index, c->nthreads);
        pthread_mutex_lock(&c->lock);
        if (--c->running == 0)
            pthread_cond_signal(&c->done_cond);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/*
 * Copy rows of width bytes (dpitch and spitch apart) with every thread of
 * the crew; returns when done.
 */
static void weft__crew_copy2d(weft__crew *c, void *dst, size_t dpitch,
                              const void *src, size_t spitch, size_t width,
                              size_t rows)
{
    if (c->nthreads == 1 || !c->tids || width * rows < (256u << 10)) {
        for (size_t i = 0; i < rows; i++)
            memcpy((char *)dst + i * dpitch, (const char *)src + i * spitch,
                   width);
        return;
    }
    pthread_mutex_lock(&c->use);
    pthread_mutex_lock(&c->lock);
    c->dst = dst;
    c->src = src;
    c->width = width;
    c->rows = rows;
    c->dpitch = dpitch;
    c->spitch = spitch;
    c->running = c->nthreads - 1;
    c->generation++;
    pthread_cond_broadcast(&c->work_cond);
    pthread_mutex_unlock(&c->lock);
    weft__crew_part(c, 0, c->nthreads);
    pthread_mutex_lock(&c->lock);
    while (c->running)
        pthread_cond_wait(&c->done_cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_unlock(&c->use);
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
    c->tids = NULL;
    pthread_cond_destroy(&c->work_cond);
    pthread_cond_destroy(&c->done_cond);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->use);
}

static int weft__crew_start_threads(weft__crew *c)
{
    unsigned i;

    c->tids = weft__calloc(c->nthreads, sizeof *c->tids);
    if (!c->tids)
        return weft__error(WEFT_ENOMEM, "staging: copy threads");
    pthread_mutex_init(&c->use, NULL);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->work_cond, NULL);
    pthread_cond_init(&c->done_cond, NULL);
    for (i = 1; i < c->nthreads; i++) {
        c->starts[i].crew = c;
        c->starts[i].index = i;
        if (weft__thread_start(&c->tids[i - 1], "weft-staging",
                               "staging.pthread_create", weft__crew_main,
                               &c->starts[i]) != 0) {
            weft__crew_stop(c, i - 1);
            return weft__error(WEFT_ENOMEM, "staging: cannot start a copy "
                                            "thread");
        }
    }
    return 0;
}

/* Free a buffer that no work in flight uses any more. */
static void weft__slot_free(weft__slot *slot)
{
    if (slot->ev)
        weft__drv_event_destroy(slot->ev);
    if (slot->copied)
        weft__drv_event_destroy(slot->copied);
    if (slot->mem)
        weft__drv_mem_free(slot->mem);
    weft__free(slot);
}

/* A new pinned buffer, near the device; touches nothing of s's state. */
static int weft__slot_make(weft__stager *s, weft__slot **out)
{
    weft__slot *slot = weft__calloc(1, sizeof *slot);
    hwloc_bitmap_t old;
    int rc;

    if (!slot)
        return weft__error(WEFT_ENOMEM, "staging: out of memory");
    slot->s = s;
    /* Allocated from near the device: the pages land on its NUMA node. */
    old = weft__thread_bind_save(s->crew.topology, s->crew.cpuset);
    rc = weft__drv_host_alloc(s->ctx, s->chunk, &slot->mem);
    weft__thread_rebind(s->crew.topology, old);
    if (rc == 0)
        rc = weft__drv_event_create(s->ctx, 0, &slot->ev);
    if (rc == 0)
        rc = weft__drv_event_create(s->ctx, 0, &slot->copied);
    if (rc < 0) {
        weft__slot_free(slot);
        return rc;
    }
    *out = slot;
    return 0;
}

/* One more pinned buffer, made on this thread (under s->lock). */
static int weft__slot_add(weft__stager *s, weft__slot **out)
{
    uint64_t t0 = weft__now_ns();
    int rc = weft__slot_make(s, out);

    s->stats.alloc_ns += weft__now_ns() - t0;
    if (rc < 0)
        return rc;
    s->slots[s->nslots++] = *out;
    s->stats.slots = s->nslots;
    return 0;
}

static void *weft__grower_main(void *arg)
{
    weft__stager *s = arg;

    pthread_mutex_lock(&s->grow_lock);
    for (;;) {
        weft__slot *slot = NULL;
        uint64_t t0;
        int rc;

        while (!s->asked && !s->grow_stop)
            pthread_cond_wait(&s->grow_cond, &s->grow_lock);
        if (s->grow_stop)
            break;
        pthread_mutex_unlock(&s->grow_lock);
        t0 = weft__now_ns();
        rc = weft__slot_make(s, &slot);
        pthread_mutex_lock(&s->grow_lock);
        s->stats.grow_ns += weft__now_ns() - t0;
        s->asked--;
        if (rc < 0) {
            /* The stager stays at the buffers it has. */
            weft__info("mem", "staging: no more pinned buffers: %s",
                       weft_last_error());
            weft_clear_error();
            s->grow_failed = 1;
            s->asked = 0;
            pthread_cond_broadcast(&s->grow_cond);
            continue;
        }
        slot->next_spare = s->spare;
        s->spare = slot;
        s->nspare++;
        if (!s->asked) /* weft__stager_get_stats may wait for it */
            pthread_cond_broadcast(&s->grow_cond);
    }
    pthread_mutex_unlock(&s->grow_lock);
    return NULL;
}

/*
 * The buffers the grower has made join slots; one more is asked for if
 * there is room (the grower starts on the first ask). Under s->lock.
 * Returns whether the grower can make buffers (else the caller makes one).
 */
static int weft__stager_grow(weft__stager *s, int ask)
{
    int can;

    pthread_mutex_lock(&s->grow_lock);
    while (s->spare) {
        weft__slot *slot = s->spare;

        s->spare = slot->next_spare;
        s->nspare--;
        s->slots[s->nslots++] = slot;
    }
    s->stats.slots = s->nslots;
    if (ask && !s->grow_failed && !s->grow_started &&
        s->nslots + s->asked < s->maxslots) {
        s->grow_started = weft__thread_start(&s->grow_tid, "weft-staging-grow",
                                             "staging.pthread_create",
                                             weft__grower_main, s) == 0;
        if (!s->grow_started)
            s->grow_failed = 1;
    }
    can = s->grow_started && !s->grow_failed;
    if (ask && can && s->nslots + s->asked < s->maxslots) {
        s->asked++;
        pthread_cond_broadcast(&s->grow_cond);
    }
    pthread_mutex_unlock(&s->grow_lock);
    return can;
}

void weft__stager_destroy(weft__stager *s)
{
    if (!s)
        return;
    if (s->grow_started) {
        pthread_mutex_lock(&s->grow_lock);
        s->grow_stop = 1;
        pthread_cond_broadcast(&s->grow_cond);
        pthread_mutex_unlock(&s->grow_lock);
        pthread_join(s->grow_tid, NULL);
    }
    while (s->spare) {
        weft__slot *slot = s->spare;

        s->spare = slot->next_spare;
        weft__slot_free(slot);
    }
    weft__debug("mem",
                "staging: %u pinned buffers; %.1f ms allocating them on the "
                "callers' threads, %.1f ms in the background; %llu waits "
                "for a buffer",
                s->nslots, (double)s->stats.alloc_ns / 1e6,
                (double)s->stats.grow_ns / 1e6,
                (unsigned long long)s->stats.waits);
    /* Its host functions copy out of the buffers with the crew: first. */
    if (s->hostq)
        weft__drv_queue_destroy(s->hostq);
    for (unsigned i = 0; i < s->nslots; i++) {
        if (s->slots[i]->pending)
            weft__drv_event_sync(s->slots[i]->ev);
        weft__slot_free(s->slots[i]);
    }
    weft__free(s->slots);
    weft__free(s->ahead);
    if (s->crew.tids)
        weft__crew_stop(&s->crew, s->crew.nthreads - 1);
    if (s->crew.cpuset)
        hwloc_bitmap_free(s->crew.cpuset);
    pthread_cond_destroy(&s->grow_cond);
    pthread_mutex_destroy(&s->grow_lock);
    pthread_mutex_destroy(&s->lock);
    weft__free(s);
}

int weft__stager_create(weft__context *ctx, const weft__stager_options *opts,
                        weft__stager **out)
{
    weft__stager_options o = {0};
    weft__stager *s;
    weft__slot *slot;
    int rc = 0;

    if (opts)
        o = *opts;
    s = weft__calloc(1, sizeof *s);
    if (!s)
        return weft__error(WEFT_ENOMEM, "staging: out of memory");
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->grow_lock, NULL);
    pthread_cond_init(&s->grow_cond, NULL);
    s->ctx = ctx;
    s->chunk = o.chunk ? o.chunk : (size_t)8 << 20;
    s->window = o.slots ? o.slots : 3;
    /* 256 MiB of buffers by default: a few large downloads in flight. */
    s->maxslots =
        o.max_slots ? o.max_slots
                    : (unsigned)WEFT__MIN(((size_t)256 << 20) / s->chunk, 1024);
    s->maxslots = WEFT__MAX(s->maxslots, s->window);
    s->crew.topology = o.topology;
    /* Bind only where it helps: a device nearer some cores than others. */
    s->crew.cpuset = weft__cpuset_near(o.topology, o.cpuset);
    /*
     * Threads: on the H200 machine one thread copies about 10 GB/s into
     * pinned memory and eight keep the copy engine (55 GB/s) nearly busy
     * (bench/RESULTS.md); more than the cores near the device only contend.
     */
    if (o.threads) {
        s->crew.nthreads = WEFT__MIN(o.threads, 64u);
    } else {
        unsigned pus =
            o.topology ? weft__cpuset_count(o.topology, s->crew.cpuset) : 0;

        s->crew.nthreads = pus ? WEFT__MIN(pus, 8u) : 4;
    }
    s->slots = weft__calloc(s->maxslots, sizeof *s->slots);
    s->ahead = weft__calloc(s->window, sizeof *s->ahead);
    if (!s->slots || !s->ahead) {
        rc = weft__error(WEFT_ENOMEM, "staging: out of memory");
        goto fail;
    }
    for (unsigned i = 0; i < s->window && rc == 0; i++)
        rc = weft__slot_add(s, &slot);
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

/*
 * A buffer for the next chunk: a free one (not held, its last use over),
 * else a new one (grow, below max_slots), else the one in use the longest
 * once its last use is over. Making one that fails is no error: the
 * stager stays at the buffers it has.
 */
static int weft__next_slot(weft__stager *s, const weft__submit *sub, int grow,
                           weft__slot **out)
{
    weft__slot *slot = NULL, *oldest = NULL;
    int rc;

    if (s->grow_started)
        weft__stager_grow(s, 0);
    for (unsigned i = 0; i < s->nslots && !slot; i++) {
        weft__slot *x = s->slots[i];

        if (x->held)
            continue;
        if (x->pending && weft__submit_event_query(sub, x->ev) == 0)
            x->pending = 0;
        if (!x->pending)
            slot = x;
        else if (!oldest || x->taken < oldest->taken)
            oldest = x;
    }
    /*
     * None free: the grower makes one for later calls while this one
     * waits for the oldest (a chunk's copy, far shorter than a pinned
     * allocation); without a grower, one is made here.
     */
    if (!slot && grow && !weft__stager_grow(s, 1) && s->nslots < s->maxslots &&
        weft__slot_add(s, &slot) < 0) {
        weft__info("mem", "staging: %u pinned buffers, no more: %s", s->nslots,
                   weft_last_error());
        weft_clear_error();
        s->maxslots = s->nslots;
        slot = NULL;
    }
    if (!slot) {
        /* Fewer than window buffers are ever held (see d2h). */
        weft__assert(oldest);
        s->stats.waits++;
        if ((rc = weft__submit_event_sync(sub, oldest->ev)) < 0)
            return rc;
        oldest->pending = 0;
        slot = oldest;
    }
    slot->taken = ++s->taken;
    *out = slot;
    return 0;
}

/*
 * The pieces a block goes through the buffers in: rows of width bytes,
 * hpitch apart on the host and dpitch apart on the device. Rows up to a
 * chunk go as many whole rows as a buffer holds, packed (pitch = width);
 * a longer row goes in pieces of a chunk (a range is one such row).
 */
typedef struct weft__shape {
    size_t width, rows, hpitch, doff, dpitch;
} weft__shape;

typedef struct weft__piece {
    size_t row, n;   /* rows [row, row + n) */
    size_t col, len; /* bytes [col, col + len) of each */
} weft__piece;

static size_t weft__pieces(const weft__stager *s, const weft__shape *b)
{
    if (b->width > s->chunk)
        return b->rows * ((b->width + s->chunk - 1) / s->chunk);
    return (b->rows + s->chunk / b->width - 1) / (s->chunk / b->width);
}

static weft__piece weft__piece_at(const weft__stager *s, const weft__shape *b,
                                  size_t i)
{
    weft__piece p;

    if (b->width > s->chunk) {
        size_t per = (b->width + s->chunk - 1) / s->chunk;

        p.row = i / per;
        p.n = 1;
        p.col = (i % per) * s->chunk;
        p.len = WEFT__MIN(s->chunk, b->width - p.col);
    } else {
        size_t per = s->chunk / b->width;

        p.row = i * per;
        p.n = WEFT__MIN(per, b->rows - p.row);
        p.col = 0;
        p.len = b->width;
    }
    return p;
}

/* The device side of piece p: where its first byte goes or comes from. */
static size_t weft__piece_doff(const weft__shape *b, const weft__piece *p)
{
    return b->doff + p->row * b->dpitch + p->col;
}

/* Piece p between a buffer's packed bytes and the device, on q. */
static int weft__piece_copy(const weft__submit *sub, weft__queue *q, int h2d,
                            weft__mem *dev, void *buf, const weft__shape *b,
                            const weft__piece *p)
{
    weft__rect r;
    weft__rect_side dside = {weft__piece_doff(b, p), b->dpitch, 0};
    weft__rect_side bside = {0, p->len, 0};

    if (p->n == 1)
        return h2d ? weft__submit_copy_h2d(sub, q, dev, dside.off, buf, p->len)
                   : weft__submit_copy_d2h(sub, q, buf, dev, dside.off, p->len);
    r.width = p->len;
    r.height = p->n;
    r.depth = 1;
    r.dst = h2d ? dside : bside;
    r.src = h2d ? bside : dside;
    return h2d ? weft__submit_copy_h2d_rect(sub, q, dev, buf, &r)
               : weft__submit_copy_d2h_rect(sub, q, buf, dev, &r);
}

static const char *weft__piece_host(const weft__shape *b, const char *host,
                                    const weft__piece *p)
{
    return host + p->row * b->hpitch + p->col;
}

static int weft__stage_in(weft__stager *s, const weft__submit *sub,
                          weft__queue *q, weft__mem *dst, const char *src,
                          const weft__shape *b)
{
    size_t n = weft__pieces(s, b), done = 0;
    int rc = 0;

    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++) {
        weft__piece p = weft__piece_at(s, b, i);
        weft__slot *slot;

        if ((rc = weft__next_slot(s, sub, 1, &slot)) < 0)
            break;
        weft__crew_copy2d(&s->crew, slot->mem->host, p.len,
                          weft__piece_host(b, src, &p), b->hpitch, p.len, p.n);
        if ((rc = weft__piece_copy(sub, q, 1, dst, slot->mem->host, b, &p)) < 0)
            break;
        if ((rc = weft__submit_event_record(sub, slot->ev, q)) < 0) {
            /* the copy is queued but nothing marks its end: drain */
            weft__submit_queue_sync(sub, q);
            break;
        }
        slot->pending = 1;
        done += p.len * p.n;
        s->stats.chunks++;
    }
    s->stats.h2d_bytes += done;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int weft__stager_h2d(weft__stager *s, const weft__submit *sub, weft__queue *q,
                     weft__mem *dst, size_t off, const void *src, size_t size)
{
    weft__shape b = {size, 1, size, off, size};

    return size ? weft__stage_in(s, sub, q, dst, src, &b) : 0;
}

static int weft__stage_out(weft__stager *s, const weft__submit *sub,
                           weft__queue *q, char *dst, weft__mem *src,
                           const weft__shape *b)
{
    /* piece i is in ahead[i % window], held from its copy to its copy out */
    size_t n = weft__pieces(s, b), issued = 0, i;
    int rc = 0;

    pthread_mutex_lock(&s->lock);
    for (i = 0; i < n; i++) {
        weft__piece p = weft__piece_at(s, b, i);
        weft__slot *slot;

        /* keep the window full: copies of later pieces run meanwhile */
        while (issued < n && issued < i + s->window) {
            weft__piece pi = weft__piece_at(s, b, issued);

            if ((rc = weft__next_slot(s, sub, 0, &slot)) < 0 ||
                (rc = weft__piece_copy(sub, q, 0, src, slot->mem->host, b,
                                       &pi)) < 0)
                break;
            if ((rc = weft__submit_event_record(sub, slot->ev, q)) < 0) {
                weft__submit_queue_sync(sub, q); /* as in h2d */
                break;
            }
            slot->pending = 1;
            slot->held = 1;
            s->ahead[issued % s->window] = slot;
            issued++;
        }
        if (rc < 0)
            break;
        slot = s->ahead[i % s->window];
        if ((rc = weft__submit_event_sync(sub, slot->ev)) < 0)
            break;
        slot->pending = 0;
        weft__crew_copy2d(&s->crew, (char *)weft__piece_host(b, dst, &p),
                          b->hpitch, slot->mem->host, p.len, p.len, p.n);
        slot->held = 0;
        s->stats.d2h_bytes += p.len * p.n;
        s->stats.chunks++;
    }
    /* After a failure the buffers filled ahead are free again (their
     * copies still run: their events say when). */
    for (; i < issued; i++)
        s->ahead[i % s->window]->held = 0;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int weft__stager_d2h(weft__stager *s, const weft__submit *sub, weft__queue *q,
                     void *dst, weft__mem *src, size_t off, size_t size)
{
    weft__shape b = {size, 1, size, off, size};

    return size ? weft__stage_out(s, sub, q, dst, src, &b) : 0;
}

/* A host function of an asynchronous download: one piece, copied out. */
static void weft__slot_copy_out(void *user)
{
    weft__slot *slot = user;

    weft__crew_copy2d(&slot->s->crew, slot->dst, slot->pitch, slot->mem->host,
                      slot->width, slot->width, slot->rows);
}

static int weft__stage_out_async(weft__stager *s, const weft__submit *sub,
                                 weft__queue *q, char *dst, weft__mem *src,
                                 const weft__shape *b)
{
    weft__queue_desc desc = {WEFT__QUEUE_D2H, 0, 0};
    weft__slot *last = NULL;
    size_t n = weft__pieces(s, b);
    int rc = 0;

    pthread_mutex_lock(&s->lock);
    if (!s->hostq)
        rc = weft__drv_queue_create(s->ctx, &desc, &s->hostq);
    /*
     * Per piece: q copies it into a buffer and records `copied`; the host
     * queue waits for that, copies it out and records ev (the buffer is
     * free again then). The buffer is pending from the first enqueue on:
     * should one of them fail, both queues are drained below anyway.
     */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        weft__piece p = weft__piece_at(s, b, i);
        weft__slot *slot;

        if ((rc = weft__next_slot(s, sub, 1, &slot)) < 0)
            break;
        slot->dst = (char *)weft__piece_host(b, dst, &p);
        slot->pitch = b->hpitch;
        slot->width = p.len;
        slot->rows = p.n;
        rc = weft__piece_copy(sub, q, 0, src, slot->mem->host, b, &p);
        if (rc == 0)
            rc = weft__submit_event_record(sub, slot->copied, q);
        if (rc == 0)
            rc = weft__submit_queue_wait_event(sub, s->hostq, slot->copied);
        if (rc == 0)
            rc = weft__submit_host_fn(sub, s->hostq, weft__slot_copy_out, slot);
        if (rc == 0)
            rc = weft__submit_event_record(sub, slot->ev, s->hostq);
        if (rc < 0)
            break;
        slot->pending = 1;
        last = slot;
        s->stats.d2h_bytes += p.len * p.n;
        s->stats.chunks++;
    }
    /* q's later work after the last copy out (the host queue is in order). */
    if (rc == 0 && last)
        rc = weft__submit_queue_wait_event(sub, q, last->ev);
    if (rc < 0) {
        /* What was enqueued writes dst: it lands before the failure says
         * so, and every buffer's last use is then over. */
        char keep[512];

        weft__strlcpy(keep, weft_last_error(), sizeof keep);
        weft__submit_queue_sync(sub, q);
        if (s->hostq)
            weft__submit_queue_sync(sub, s->hostq);
        weft__error(rc, "%s", keep);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int weft__stager_d2h_async(weft__stager *s, const weft__submit *sub,
                           weft__queue *q, void *dst, weft__mem *src,
                           size_t off, size_t size)
{
    weft__shape b = {size, 1, size, off, size};

    return size ? weft__stage_out_async(s, sub, q, dst, src, &b) : 0;
}

/* A block's shape (2-D: depth 1), its host side at host + its offset. */
static int weft__shape_of(const weft__rect *r, int h2d, weft__shape *b)
{
    const weft__rect_side *hs = h2d ? &r->src : &r->dst;
    const weft__rect_side *ds = h2d ? &r->dst : &r->src;

    if (r->depth != 1 || !r->width || !r->height)
        return weft__error(WEFT_EINTERNAL,
                           "staging: a block of %zu x %zu "
                           "x %zu bytes",
                           r->width, r->height, r->depth);
    b->width = r->width;
    b->rows = r->height;
    b->hpitch = hs->row_pitch;
    b->doff = ds->off;
    b->dpitch = ds->row_pitch;
    return 0;
}

int weft__stager_h2d_rect(weft__stager *s, const weft__submit *sub,
                          weft__queue *q, weft__mem *dst, const void *src,
                          const weft__rect *r)
{
    weft__shape b;
    int rc = weft__shape_of(r, 1, &b);

    return rc < 0 ? rc
                  : weft__stage_in(s, sub, q, dst,
                                   (const char *)src + r->src.off, &b);
}

int weft__stager_d2h_rect(weft__stager *s, const weft__submit *sub,
                          weft__queue *q, void *dst, weft__mem *src,
                          const weft__rect *r, int async)
{
    weft__shape b;
    int rc = weft__shape_of(r, 0, &b);

    if (rc < 0)
        return rc;
    return async
               ? weft__stage_out_async(s, sub, q, (char *)dst + r->dst.off, src,
                                       &b)
               : weft__stage_out(s, sub, q, (char *)dst + r->dst.off, src, &b);
}

void weft__stager_warm(weft__stager *s, unsigned n)
{
    pthread_mutex_lock(&s->lock);
    for (;;) {
        unsigned have;

        pthread_mutex_lock(&s->grow_lock);
        have = s->nslots + s->nspare + s->asked;
        pthread_mutex_unlock(&s->grow_lock);
        if (have >= WEFT__MIN(n, s->maxslots) || !weft__stager_grow(s, 1))
            break;
    }
    pthread_mutex_unlock(&s->lock);
}

void weft__stager_get_stats(weft__stager *s, weft__stager_stats *st)
{
    pthread_mutex_lock(&s->lock);
    pthread_mutex_lock(&s->grow_lock);
    while (s->asked && !s->grow_failed)
        pthread_cond_wait(&s->grow_cond, &s->grow_lock);
    *st = s->stats;
    st->slots = s->nslots + s->nspare;
    pthread_mutex_unlock(&s->grow_lock);
    pthread_mutex_unlock(&s->lock);
}
