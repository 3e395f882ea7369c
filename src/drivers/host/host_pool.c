/*
 * Kernel launches on the host: a launch is a job of work-groups that the
 * queue's runner posts to its context's pool and then works on itself,
 * next to the pool's helper threads. Threads claim groups in chunks with
 * one atomic add, so the pool lock is taken only to join and leave a job.
 * Jobs of several queues may be open at once; helpers take the oldest.
 *
 * A native graph's launch posts its kernels and native calls (jobs of one
 * group whose group calls the native function) instead
 * (weft__host_pool_post) and goes on: whoever runs a posted job's last
 * group calls its done. A posted job of one group is taken whole by one
 * thread with no lock at all: a helper keeps those it makes ready (the
 * successors a done hands out) in its own work-stealing deque
 * (base/deque.h), newest first, and idle threads steal the oldest; other
 * threads' go through a lock-free ring. Idle helpers look, poll and sleep
 * as base/idle.h says, polling on while a native graph's launch runs
 * (weft__host_pool_busy).
 */
#include "host_internal.h"

#include "../../base/deque.h"
#include "../../base/os.h"

#include <sched.h>
#include <string.h>

/* Bits of the launch operation's tail are aligned so; a power of two. */
#define VALUE_ALIGN    16
#define ALIGN_UP(n, a) (((n) + ((a)-1)) & ~(size_t)((a)-1))

/* Run groups [first, end) of job with slot's arguments. */
static void job_groups(const weft__host_job *job, unsigned slot, uint64_t first,
                       uint64_t end)
{
    /* (no arguments: none kept; the roots job, each, has none either) */
    void *const *args =
        job->slot_args ? job->slot_args + (size_t)slot * job->nargs : NULL;
    weft_host_group g;
    uint64_t plane = (uint64_t)job->groups[0] * job->groups[1];

    if (job->native) { /* a native call: its one group */
        weft__host_native_run(job);
        return;
    }
    if (job->each) {
        for (uint64_t id = first; id < end; id++)
            job->each(job, id);
        return;
    }
    memcpy(g.group_size, job->group_size, sizeof g.group_size);
    memcpy(g.groups, job->groups, sizeof g.groups);
    for (uint64_t id = first; id < end; id++) {
        g.group[0] = (uint32_t)(id % job->groups[0]);
        g.group[1] = (uint32_t)(id / job->groups[0] % job->groups[1]);
        g.group[2] = (uint32_t)(id / plane);
        job->fn(&g, args);
    }
}

/*
 * Posted jobs of one group (or none): each run whole, then done, which may
 * hand back a successor to run here next (a chain then stays on this
 * thread, with no hand-off). A job is not touched after its done.
 */
static void single_run(weft__host_job *job)
{
    while (job) {
        job_groups(job, 0, 0, job->total);
        job = job->done(job);
    }
}

/* Run claimed chunks of job until none is left, with slot's arguments. */
static void job_work(weft__host_job *job, unsigned slot)
{
    for (;;) {
        uint64_t first =
            __atomic_fetch_add(&job->claimed, job->chunk, __ATOMIC_RELAXED);
        uint64_t end = WEFT__MIN(first + job->chunk, job->total);

        if (first >= job->total)
            return;
        job_groups(job, slot, first, end);
        /* Release: the groups' writes, for whoever learns of the end. */
        if (job->done && __atomic_add_fetch(&job->finished, end - first,
                                            __ATOMIC_ACQ_REL) == job->total)
            single_run(job->done(job));
    }
}

static int job_open(const weft__host_job *job)
{
    return __atomic_load_n(&job->claimed, __ATOMIC_RELAXED) < job->total;
}

/*
 * Under the pool lock: a link of the list. weft__host_pool_help peeks at
 * the head without the lock, so links are stored atomically.
 */
static void link_set(weft__host_job **p, weft__host_job *v)
{
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/*
 * Under the pool lock: whether another thread may join job. An owned
 * job's slot 0 is its owner's, helpers get 1..; a posted job's are all
 * for joiners. Threads that wait for a graph's nodes help too, so a job
 * may find more joiners than slots: the late ones leave it alone.
 */
static int job_slot_free(const weft__host_job *job)
{
    return job->slots_taken + (job->done ? 0 : 1) < job->nslots;
}

/*
 * Under the pool lock: the first open job with a slot free, posted ones that
 * are exhausted taken off the list on the way (their owners reap them
 * otherwise).
 */
static weft__host_job *job_find(weft__host_pool *pool)
{
    weft__host_job **p = &pool->jobs;

    while (*p) {
        weft__host_job *job = *p;

        if (job_open(job) && job_slot_free(job))
            return job;
        if (job->done)
            link_set(p, job->next);
        else
            p = &job->next;
    }
    return NULL;
}

/*
 * Under the pool lock, job_slot_free(job): join job, with a slot of one's
 * own. A thread joins a job at most once: when it leaves, the job is
 * exhausted and job_open() skips it.
 */
static unsigned job_join(weft__host_job *job)
{
    unsigned slot = job->done ? job->slots_taken++ : ++job->slots_taken;

    weft__assert(slot < job->nslots);
    job->active++;
    if (job->joined)
        ++*job->joined;
    return slot;
}

/* Under the pool lock: leave job; the owner may free it after this. */
static void job_leave(weft__host_pool *pool, weft__host_job *job)
{
    int idle = --job->active == 0;

    if (job->joined && --*job->joined == 0)
        idle = 1;
    if (idle)
        pthread_cond_broadcast(&pool->drained);
}

void weft__host_pool_run_here(weft__host_job *job)
{
    weft__assert(job->done && job->total == 1);
    single_run(job);
}

/* Single jobs a helper's deque holds; past them its offers go to the ring. */
enum { POOL_DEQUE = 256 };

/* The calling thread's helper (NULL: not a helper of any pool). */
static _Thread_local weft__host_helper *pool_self;

/*
 * A posted job of one group for any thread: the ring's, else the oldest of
 * a helper's deque (those after index `after` first; nhelpers_made: none is
 * skipped); NULL if none.
 */
static weft__host_job *single_take(weft__host_pool *pool, unsigned after)
{
    weft__host_job *job;
    /* (every helper's deque is made before any helper starts) */
    unsigned n = pool->nhelpers_made;

    if ((job = weft__ring_pop(&pool->single)))
        return job;
    for (unsigned k = 1; k <= n; k++) {
        weft__host_helper *v = &pool->helpers[(after + k) % n];

        if (v == pool_self)
            continue;
        /* (a lost race for v's top: v is looked at once more) */
        while (weft__deque_nonempty_hint(&v->own))
            if ((job = weft__deque_steal(&v->own)))
                return job;
    }
    return NULL;
}

/* Whether a job of one group seems to wait (a hint: reads only). */
static int single_queued(weft__host_pool *pool)
{
    if (weft__ring_count_hint(&pool->single))
        return 1;
    for (unsigned i = 0; i < pool->nhelpers_made; i++)
        if (weft__deque_nonempty_hint(&pool->helpers[i].own))
            return 1;
    return 0;
}

/*
 * A helper's idle look: its own deque's newest, a job of one group from
 * the ring or another helper, else an open job of the list, joined (the
 * helper's shared and slot say so).
 */
static void *helper_take(void *ctx, int locked)
{
    weft__host_helper *h = ctx;
    weft__host_pool *pool = h->pool;
    weft__host_job *job;

    if ((job = weft__deque_pop(&h->own)) ||
        (job = single_take(pool, (unsigned)(h - pool->helpers))))
        return job;
    if (!__atomic_load_n(&pool->jobs, __ATOMIC_RELAXED))
        return NULL;
    if (!locked)
        pthread_mutex_lock(&pool->idle.lock);
    if ((job = job_find(pool))) {
        h->slot = job_join(job);
        h->shared = job;
    }
    if (!locked)
        pthread_mutex_unlock(&pool->idle.lock);
    return job;
}

static int helper_pending(void *ctx)
{
    weft__host_pool *pool = ((weft__host_helper *)ctx)->pool;

    return single_queued(pool) ||
           __atomic_load_n(&pool->jobs, __ATOMIC_RELAXED) != NULL;
}

static const weft__idle_ops helper_idle = {helper_take, helper_pending};

/* Job joined (slot), the pool lock not held: run groups of it, leave it. */
static void job_share(weft__host_pool *pool, weft__host_job *job, unsigned slot)
{
    job_work(job, slot);
    pthread_mutex_lock(&pool->idle.lock);
    job_leave(pool, job);
    pthread_mutex_unlock(&pool->idle.lock);
}

static void *helper_main(void *arg)
{
    weft__host_helper *h = arg;
    weft__host_pool *pool = h->pool;

    pool_self = h;
    for (;;) {
        weft__host_job *job = weft__deque_pop(&h->own);

        if (!job && !(job = weft__idle_wait(&pool->idle, &helper_idle, h)))
            break; /* stopped */
        if (job != h->shared) {
            single_run(job);
            continue;
        }
        h->shared = NULL;
        job_share(pool, job, h->slot);
    }
    return NULL;
}

void weft__host_pool_post(weft__host_pool *pool, weft__host_job *job)
{
    weft__host_job **p;

    weft__assert(job->done);
    job->next = NULL;
    if (job->total == 1 && weft__host_pool_offer(pool, job))
        return;
    pthread_mutex_lock(&pool->idle.lock);
    for (p = &pool->jobs; *p; p = &(*p)->next)
        ;
    link_set(p, job);
    if (pool->nhelpers)
        weft__idle_wake_locked(&pool->idle, job->total > job->chunk);
    pthread_mutex_unlock(&pool->idle.lock);
}

int weft__host_pool_offer(weft__host_pool *pool, weft__host_job *job)
{
    weft__host_helper *self = pool_self;

    weft__assert(job->done && job->total == 1);
    /* A helper keeps what it makes ready: no line every thread writes. */
    if (!(self && self->pool == pool && weft__deque_push(&self->own, job)) &&
        !weft__ring_push(&pool->single, job))
        return 0;
    weft__idle_submitted(&pool->idle);
    return 1;
}

void weft__host_pool_busy(weft__host_pool *pool, int delta)
{
    weft__idle_busy(&pool->idle, delta);
}

int weft__host_pool_help(weft__host_pool *pool)
{
    weft__host_job *job;
    unsigned slot;

    if ((job = single_take(pool, pool->nhelpers_made))) {
        single_run(job);
        return 1;
    }
    if (!__atomic_load_n(&pool->jobs, __ATOMIC_RELAXED))
        return 0;
    pthread_mutex_lock(&pool->idle.lock);
    if (!(job = job_find(pool))) {
        pthread_mutex_unlock(&pool->idle.lock);
        return 0;
    }
    slot = job_join(job);
    pthread_mutex_unlock(&pool->idle.lock);
    job_share(pool, job, slot);
    return 1;
}

void weft__host_pool_reap(weft__host_pool *pool, const void *owner,
                          const unsigned *joined)
{
    pthread_mutex_lock(&pool->idle.lock);
    for (weft__host_job **p = &pool->jobs; *p;)
        if ((*p)->done && (*p)->owner == owner)
            link_set(p, (*p)->next);
        else
            p = &(*p)->next;
    while (*joined)
        pthread_cond_wait(&pool->drained, &pool->idle.lock);
    pthread_mutex_unlock(&pool->idle.lock);
}

int weft__host_pool_open(weft__host_pool *pool)
{
    int open = 0;

    if (single_queued(pool))
        return 1;
    pthread_mutex_lock(&pool->idle.lock);
    open = job_find(pool) != NULL;
    pthread_mutex_unlock(&pool->idle.lock);
    return open;
}

void weft__host_pool_run(weft__host_pool *pool, weft__host_job *job)
{
    weft__host_job **p;

    /* Alone: no claims, and no write to the job (whose memory the
     * enqueueing thread reuses next). */
    if (pool->nhelpers == 0 || job->total <= job->chunk) {
        job_groups(job, 0, 0, job->total);
        return;
    }
    pthread_mutex_lock(&pool->idle.lock);
    for (p = &pool->jobs; *p; p = &(*p)->next)
        ;
    job->next = NULL;
    link_set(p, job);
    weft__idle_wake_locked(&pool->idle, 1);
    pthread_mutex_unlock(&pool->idle.lock);

    job_work(job, 0);

    /* Every group is claimed; wait for the helpers still running some. */
    pthread_mutex_lock(&pool->idle.lock);
    for (p = &pool->jobs; *p != job; p = &(*p)->next)
        ;
    link_set(p, job->next);
    while (job->active)
        pthread_cond_wait(&pool->drained, &pool->idle.lock);
    pthread_mutex_unlock(&pool->idle.lock);
}

/* The helpers stopped (those started), then everything else made. */
static void pool_free(weft__host_pool *pool)
{
    weft__idle_stop(&pool->idle);
    for (unsigned i = 0; i < pool->nhelpers; i++)
        pthread_join(pool->helpers[i].tid, NULL);
    for (unsigned i = 0; i < pool->nhelpers_made; i++) {
        weft__assert(!weft__deque_pop(&pool->helpers[i].own));
        weft__deque_fini(&pool->helpers[i].own);
    }
    weft__free(pool->helpers);
    weft__assert(!weft__ring_pop(&pool->single));
    weft__ring_fini(&pool->single);
    pthread_cond_destroy(&pool->drained);
    weft__idle_fini(&pool->idle);
}

void weft__host_pool_stop(weft__host_pool *pool)
{
    pthread_mutex_lock(&pool->idle.lock);
    weft__assert(pool->jobs == NULL);
    pthread_mutex_unlock(&pool->idle.lock);
    pool_free(pool);
}

int weft__host_pool_start(weft__host_pool *pool, unsigned nhelpers)
{
    int rc;

    memset(pool, 0, sizeof *pool);
    if (nhelpers) {
        pool->helpers = weft__calloc(nhelpers, sizeof *pool->helpers);
        if (!pool->helpers)
            return weft__error(WEFT_ENOMEM,
                               "host: no memory for a pool of %u threads",
                               nhelpers);
    }
    if (weft__ring_init(&pool->single, 1024) < 0) {
        weft__free(pool->helpers);
        return weft__error(WEFT_ENOMEM, "host: no memory for a pool's ring");
    }
    if (weft__idle_init(&pool->idle) < 0) {
        weft__ring_fini(&pool->single);
        weft__free(pool->helpers);
        return weft__error(WEFT_ENOMEM, "host: no memory for a pool's lock");
    }
    if ((rc = pthread_cond_init(&pool->drained, NULL)) != 0) {
        weft__idle_fini(&pool->idle);
        weft__ring_fini(&pool->single);
        weft__free(pool->helpers);
        return weft__host_os_error(WEFT_ENOMEM, rc,
                                   "setting up a thread pool's lock");
    }
    /* Every helper's deque before any helper starts (they steal from all). */
    for (; pool->nhelpers_made < nhelpers; pool->nhelpers_made++) {
        weft__host_helper *h = &pool->helpers[pool->nhelpers_made];

        h->pool = pool;
        if (weft__deque_init(&h->own, POOL_DEQUE) < 0) {
            pool_free(pool);
            return weft__error(WEFT_ENOMEM,
                               "host: no memory for a pool thread's deque");
        }
    }
    while (pool->nhelpers < nhelpers) {
        rc = weft__thread_start(&pool->helpers[pool->nhelpers].tid,
                                "weft-host-pool", "host.pthread_create",
                                helper_main, &pool->helpers[pool->nhelpers]);
        if (rc != 0) {
            pool_free(pool); /* joins those started */
            return weft__host_os_error(WEFT_ENOMEM, rc,
                                       "starting a pool thread");
        }
        pool->nhelpers++;
    }
    return 0;
}

/* ---- launch ------------------------------------------------------------ */

static int arg_check(const weft__kernel *k, const weft__karg *a, unsigned i)
{
    /*
     * Scalars of the same size pass (an i32 for a u32), as dispatch.c lets
     * them; the kernel reads the bytes.
     */
    if ((a->type == WEFT_PARAM_BUFFER) != (k->params[i] == WEFT_PARAM_BUFFER) ||
        (a->type == WEFT_PARAM_LOCAL) != (k->params[i] == WEFT_PARAM_LOCAL))
        return weft__error(WEFT_EARGS,
                           "host: argument %u of %s is %s, the kernel takes %s",
                           i, k->name, weft_param_type_name(a->type),
                           weft_param_type_name(k->params[i]));
    switch (a->type) {
    case WEFT_PARAM_BUFFER:
        if (!a->u.buf.mem || a->u.buf.mem->drv != &weft__driver_host)
            return weft__error(WEFT_EARGS,
                               "host: argument %u of %s is not host memory", i,
                               k->name);
        return 0;
    case WEFT_PARAM_LOCAL:
        if (a->size > (size_t)1 << 30) /* keeps the sums below from wrapping */
            return weft__error(WEFT_EINVAL,
                               "host: argument %u of %s asks for %zu bytes of "
                               "group-local memory",
                               i, k->name, a->size);
        return 0;
    default:
        if (a->size != k->param_sizes[i] || !a->u.value)
            return weft__error(WEFT_EARGS,
                               "host: argument %u of %s has %zu bytes, the "
                               "kernel takes %zu",
                               i, k->name, a->size, k->param_sizes[i]);
        return 0;
    }
}

/* a * b + c, or SIZE_MAX if it overflows. */
static size_t size_mad(size_t a, size_t b, size_t c)
{
    size_t r;

    if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r))
        return SIZE_MAX;
    return r;
}

int weft__host_launch(weft__queue *q, weft__kernel *k, const weft__grid *grid,
                      const weft__karg *args, unsigned nargs)
{
    weft__host_context *hctx = (weft__host_context *)q->ctx;
    unsigned nslots = hctx->pool.nhelpers + 1;
    size_t head = ALIGN_UP(sizeof(weft__host_op), VALUE_ALIGN);
    size_t values = 0, local = 0, bytes;
    uint64_t total;
    weft__host_op *op;
    int rc;

    if (nargs != k->nparams)
        return weft__error(WEFT_EARGS, "host: %s takes %u arguments, not %u",
                           k->name, k->nparams, nargs);
    for (unsigned i = 0; i < nargs; i++) {
        if ((rc = arg_check(k, &args[i], i)) < 0)
            return rc;
        if (args[i].type == WEFT_PARAM_LOCAL)
            local =
                size_mad(1, ALIGN_UP(args[i].size, WEFT__HOST_ALIGN), local);
        else if (args[i].type != WEFT_PARAM_BUFFER)
            values = size_mad(1, ALIGN_UP(args[i].size, VALUE_ALIGN), values);
    }
    if (local > q->ctx->dev->props.local_mem)
        return weft__error(WEFT_EINVAL,
                           "host: launch of %s needs %zu bytes of group-local "
                           "memory, the device has %llu",
                           k->name, local,
                           (unsigned long long)q->ctx->dev->props.local_mem);
    if (weft__grid_items(grid) == 0)
        return 0; /* nothing to run, and nothing for later work to wait on */
    total = (uint64_t)grid->groups[0] * grid->groups[1];
    if (__builtin_mul_overflow(total, grid->groups[2], &total) ||
        total >= (uint64_t)1 << 62)
        return weft__error(WEFT_EINVAL,
                           "host: launch of %s with too many "
                           "work-groups",
                           k->name);
    /* The op, then each slot's argument array, values, scratch. */
    bytes = size_mad((size_t)nslots * nargs, sizeof(void *), head);
    bytes = size_mad(1, bytes, values);
    if (local)
        bytes = size_mad(nslots, local, size_mad(1, bytes, WEFT__HOST_ALIGN));
    if (bytes == SIZE_MAX ||
        !(op = weft__host_op_alloc(q, bytes, WEFT__HOST_OP_LAUNCH)))
        return weft__error(WEFT_ENOMEM, "host: no memory to launch %s",
                           k->name);

    weft__host_job *job = &op->u.job;
    void **slot_args = (void **)((char *)op + head);
    char *value = (char *)(slot_args + (size_t)nslots * nargs);
    char *scratch =
        (char *)ALIGN_UP((uintptr_t)(value + values), WEFT__HOST_ALIGN);

    job->fn = ((weft__host_kernel *)k)->fn;
    job->slot_args = slot_args;
    job->nargs = nargs;
    job->nslots = nslots;
    memcpy(job->groups, grid->groups, sizeof job->groups);
    memcpy(job->group_size, grid->group_size, sizeof job->group_size);
    job->total = total;
    job->chunk = WEFT__MAX(total / ((uint64_t)nslots * 4), 1);
    /*
     * grid->shared_bytes is not passed: a host kernel has no parameter for
     * dynamic group memory; LOCAL parameters are the host's way.
     */
    for (unsigned i = 0; i < nargs; i++) {
        const weft__karg *a = &args[i];
        void *arg = NULL;

        if (a->type == WEFT_PARAM_BUFFER) {
            arg = (char *)((weft__host_mem *)a->u.buf.mem)->data +
                  a->u.buf.offset;
        } else if (a->type != WEFT_PARAM_LOCAL) {
            /* The caller's values die with its stack: keep a copy. */
            memcpy(value, a->u.value, a->size);
            arg = value;
            value += ALIGN_UP(a->size, VALUE_ALIGN);
        }
        for (unsigned s = 0; s < nslots; s++)
            slot_args[(size_t)s * nargs + i] = arg;
    }
    /* Each slot's LOCAL arguments get scratch of their own. */
    for (unsigned s = 0; s < nslots && local; s++) {
        char *p = scratch + (size_t)s * local;
        for (unsigned i = 0; i < nargs; i++) {
            if (args[i].type != WEFT_PARAM_LOCAL)
                continue;
            slot_args[(size_t)s * nargs + i] = p;
            p += ALIGN_UP(args[i].size, WEFT__HOST_ALIGN);
        }
    }
    weft__host_queue_push(q, op);
    return 0;
}
