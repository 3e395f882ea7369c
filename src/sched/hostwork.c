/* The host workers: hostwork.h has the model. */
#include "hostwork.h"

#include "../base/deque.h"
#include "../base/idle.h"
#include "../base/os.h"
#include "../base/ring.h"

#include <sched.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

enum { WEFT__MAX_HOST_WORKERS = 64 };

/* Tasks a group's ring holds; a submit that finds it full yields. */
enum { WEFT__HOST_RING = 1024 };
/* Tasks a worker's own deque holds; past them its submits go to a ring. */
enum { WEFT__HOST_DEQUE = 256 };
/*
 * An idle worker looks, polls and sleeps as base/idle.h says: while a
 * launch with host tasks runs (weft__hostwork_busy) it polls on rather
 * than sleep.
 */

/* Workers near one set of cores (NULL: unbound) and the tasks for them. */
typedef struct weft__host_group {
    hwloc_bitmap_t cpuset;
    weft__ring tasks;
} weft__host_group;

typedef struct weft__host_worker {
    /*
     * What this worker submits while it runs a task (the successors it
     * makes ready): it pops them itself, newest first, and idle workers
     * steal them, oldest first.
     */
    weft__deque own;
    weft__hostwork *pool;
    unsigned group;
    pthread_t tid;
} weft__host_worker;

struct weft__hostwork {
    hwloc_topology_t topology;
    /* Only for sleeping and waking: the rings need no lock. */
    weft__idle idle;
    weft__host_group *groups;
    unsigned ngroups;
    int *dev_group; /* per device: its group */
    unsigned ndevices;
    weft__host_worker *workers;
    unsigned nworkers; /* started */
    /* With their deques, before any started (what workers look at). */
    unsigned nworkers_made;
    /*
     * Poll tasks that said "not yet" (weft__hostwork_repoll): a FIFO
     * through the tasks' next, under poll_lock; npolls (atomic) is what
     * idle workers look at before they take the lock.
     */
    pthread_mutex_t poll_lock;
    weft__host_task *poll_head, *poll_tail;
    unsigned npolls;
};

/* The calling thread's worker in its pool (NULL: not a worker). */
static _Thread_local weft__host_worker *weft__self_worker;

/*
 * The next task for worker w: its own deque's newest, else group g's
 * ring, else any group's, else one stolen from another worker (the
 * workers after w first); NULL if none.
 */
static weft__host_task *weft__take(weft__hostwork *hw, weft__host_worker *w,
                                   unsigned g)
{
    weft__host_task *t;

    if ((t = weft__deque_pop(&w->own)))
        return t;
    for (unsigned k = 0; k < hw->ngroups; k++)
        if ((t = weft__ring_pop(&hw->groups[(g + k) % hw->ngroups].tasks)))
            return t;
    for (unsigned k = 1, i = (unsigned)(w - hw->workers); k < hw->nworkers_made;
         k++) {
        weft__host_worker *v = &hw->workers[(i + k) % hw->nworkers_made];

        /* (a lost race for v's top: v is looked at once more) */
        while (weft__deque_nonempty_hint(&v->own))
            if ((t = weft__deque_steal(&v->own)))
                return t;
    }
    return NULL;
}

/* Whether some ring or worker's deque holds a task (a hint: reads only). */
static int weft__queued(weft__hostwork *hw)
{
    for (unsigned k = 0; k < hw->ngroups; k++)
        if (weft__ring_count_hint(&hw->groups[k].tasks))
            return 1;
    for (unsigned i = 0; i < hw->nworkers_made; i++)
        if (weft__deque_nonempty_hint(&hw->workers[i].own))
            return 1;
    return 0;
}

/* Whether a poll task waits for its next call (a hint). */
static int weft__polls(weft__hostwork *hw)
{
    return __atomic_load_n(&hw->npolls, __ATOMIC_RELAXED) != 0;
}

/* The oldest poll task; NULL if none. */
static weft__host_task *weft__take_poll(weft__hostwork *hw)
{
    weft__host_task *t;

    if (!weft__polls(hw))
        return NULL;
    pthread_mutex_lock(&hw->poll_lock);
    if ((t = hw->poll_head)) {
        hw->poll_head = t->next;
        if (!hw->poll_head)
            hw->poll_tail = NULL;
        __atomic_sub_fetch(&hw->npolls, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&hw->poll_lock);
    return t;
}

/*
 * A task of the rings (group g's first), else a poll task; NULL if none.
 * Before a poll task's next call the core is yielded, for whatever
 * thread (of this process or another) the poll waits for.
 */
static weft__host_task *weft__take_any(weft__hostwork *hw, weft__host_worker *w,
                                       unsigned g)
{
    weft__host_task *t = weft__take(hw, w, g);

    if (t || !weft__polls(hw))
        return t;
    sched_yield();
    return weft__take_poll(hw);
}

/* Idle looks: any task (locked: none that yields first). */
static void *weft__worker_take(void *ctx, int locked)
{
    weft__host_worker *w = ctx;
    weft__hostwork *hw = w->pool;
    weft__host_task *t;

    if (!locked)
        return weft__take_any(hw, w, w->group);
    if ((t = weft__take(hw, w, w->group)))
        return t;
    return weft__take_poll(hw);
}

static int weft__worker_pending(void *ctx)
{
    weft__hostwork *hw = ((weft__host_worker *)ctx)->pool;

    return weft__queued(hw) || weft__polls(hw);
}

static const weft__idle_ops weft__worker_idle = {weft__worker_take,
                                                 weft__worker_pending};

/*
 * The next task for worker w: its own deque's, else from the rings and
 * the other deques (weft__take), looking, polling and sleeping as
 * base/idle.h says; NULL once the pool stops. Poll tasks come after the
 * rings' tasks, and a worker about to sleep takes one instead: while one
 * waits, a worker stays up.
 */
static weft__host_task *weft__next(weft__hostwork *hw, weft__host_worker *w)
{
    weft__host_task *t;

    /* (its own newest first, with no look at anything shared) */
    if ((t = weft__deque_pop(&w->own)))
        return t;
    return weft__idle_wait(&hw->idle, &weft__worker_idle, w);
}

_Thread_local int weft__hostwork_self = -1;

static void *weft__host_worker_main(void *arg)
{
    weft__host_worker *w = arg;
    weft__hostwork *hw = w->pool;
    hwloc_bitmap_t set = hw->groups[w->group].cpuset;

    weft__hostwork_self = (int)(w - hw->workers);
    weft__self_worker = w;
    weft__thread_bind(hw->topology, set);
    for (weft__host_task *t; (t = weft__next(hw, w));)
        t->run(t);
    return NULL;
}

static void weft__hostwork_free(weft__hostwork *hw)
{
    weft__idle_stop(&hw->idle);
    for (unsigned i = 0; i < hw->nworkers; i++)
        pthread_join(hw->workers[i].tid, NULL);
    /* Every worker's deque made (all, before any worker started). */
    for (unsigned i = 0; hw->workers && i < hw->nworkers_made; i++)
        weft__deque_fini(&hw->workers[i].own);
    /* Every group made (ndevices + 1 of them), used or not. */
    for (unsigned g = 0; hw->groups && g <= hw->ndevices; g++) {
        if (hw->groups[g].cpuset)
            hwloc_bitmap_free(hw->groups[g].cpuset);
        weft__ring_fini(&hw->groups[g].tasks);
    }
    weft__idle_fini(&hw->idle);
    pthread_mutex_destroy(&hw->poll_lock);
    weft__free(hw->groups);
    weft__free(hw->dev_group);
    weft__free(hw->workers);
    weft__free(hw);
}

/* How many workers: WEFT_HOST_WORKERS, else one per core (at most 64). */
static unsigned weft__worker_count(const weft_runtime *rt)
{
    unsigned n;

    if (rt->sched->host_workers != UINT_MAX)
        return WEFT__MIN(rt->sched->host_workers,
                         (unsigned)WEFT__MAX_HOST_WORKERS);
    n = weft__cpuset_count(rt->topology, NULL);
    return n ? WEFT__MIN(n, (unsigned)WEFT__MAX_HOST_WORKERS) : 1;
}

/* The pool: groups by the devices' near cores, then the workers. */
static int weft__hostwork_make(weft_runtime *rt, weft__hostwork **out)
{
    unsigned n = weft__worker_count(rt), nd = rt->ndevices;
    weft__hostwork *hw;

    if (n == 0)
        return WEFT_ENOTSUP;
    hw = weft__calloc(1, sizeof *hw);
    if (!hw)
        return WEFT_ENOMEM;
    if (weft__idle_init(&hw->idle) < 0) {
        weft__free(hw);
        return WEFT_ENOMEM;
    }
    pthread_mutex_init(&hw->poll_lock, NULL);
    hw->topology = rt->topology;
    hw->ndevices = nd;
    /* Group 0 is the unbound one: devices with no locality, and any. */
    hw->groups = weft__calloc((size_t)nd + 1, sizeof *hw->groups);
    hw->dev_group = weft__calloc((size_t)nd + 1, sizeof *hw->dev_group);
    hw->workers = weft__calloc(n, sizeof *hw->workers);
    if (!hw->groups || !hw->dev_group || !hw->workers) {
        weft__hostwork_free(hw);
        return WEFT_ENOMEM;
    }
    for (unsigned g = 0; g <= nd; g++)
        if (weft__ring_init(&hw->groups[g].tasks, WEFT__HOST_RING) < 0) {
            weft__hostwork_free(hw);
            return WEFT_ENOMEM;
        }
    hw->ngroups = 1;
    for (unsigned d = 0; d < nd; d++) {
        hwloc_bitmap_t set =
            weft__cpuset_near(rt->topology, rt->devices[d]->props.cpuset);
        unsigned g;

        for (g = 1; set && g < hw->ngroups; g++)
            if (hwloc_bitmap_isequal(set, hw->groups[g].cpuset))
                break;
        if (!set) {
            g = 0;
        } else if (g < hw->ngroups) {
            hwloc_bitmap_free(set);
        } else {
            hw->groups[g].cpuset = set;
            hw->ngroups++;
        }
        hw->dev_group[d] = (int)g;
    }
    /* Every worker's deque before any worker starts (they steal from all). */
    for (; hw->nworkers_made < n; hw->nworkers_made++)
        if (weft__deque_init(&hw->workers[hw->nworkers_made].own,
                             WEFT__HOST_DEQUE) < 0) {
            weft__hostwork_free(hw);
            return WEFT_ENOMEM;
        }
    /*
     * Workers round the bound groups (the unbound one serves the rest by
     * taking from every queue); with no bound group, all unbound.
     */
    for (unsigned i = 0; i < n; i++) {
        weft__host_worker *w = &hw->workers[i];
        int err;

        w->pool = hw;
        w->group = hw->ngroups > 1 ? 1 + i % (hw->ngroups - 1) : 0;
        err = weft__thread_start(&w->tid, "weft-hostwork",
                                 "hostwork.pthread_create",
                                 weft__host_worker_main, w);
        if (err)
            break;
        hw->nworkers++;
    }
    if (!hw->nworkers) {
        weft__hostwork_free(hw);
        return WEFT_ENOMEM;
    }
    weft__debug("sched", "%u host workers in %u groups", hw->nworkers,
                hw->ngroups);
    *out = hw;
    return 0;
}

weft__hostwork *weft__hostwork_get(weft_runtime *rt)
{
    weft__sched *s = rt->sched;
    weft__hostwork *hw = __atomic_load_n(&s->hostwork, __ATOMIC_ACQUIRE);
    int rc = 0;

    if (hw || __atomic_load_n(&s->hostwork_off, __ATOMIC_RELAXED))
        return hw;
    pthread_mutex_lock(&s->lock);
    if (!s->hostwork && !s->hostwork_off) {
        rc = weft__hostwork_make(rt, &hw);
        if (rc == 0)
            __atomic_store_n(&s->hostwork, hw, __ATOMIC_RELEASE);
        else
            __atomic_store_n(&s->hostwork_off, 1, __ATOMIC_RELAXED);
    }
    hw = s->hostwork;
    pthread_mutex_unlock(&s->lock);
    if (rc < 0 && rc != WEFT_ENOTSUP)
        weft__info("sched",
                   "no host workers (%s): host nodes run on the issuing "
                   "thread",
                   weft_strerror(rc));
    return hw;
}

void weft__hostwork_submit(weft__hostwork *hw, int device, weft__host_task *t)
{
    unsigned gi = device >= 0 && (unsigned)device < hw->ndevices
                      ? (unsigned)hw->dev_group[device]
                      : 0;
    weft__host_group *g = &hw->groups[gi];
    weft__host_worker *self = weft__self_worker;

    t->next = NULL;
    /*
     * A worker of this pool keeps what it submits (for any device, or for
     * its own group's), unless its deque is full: no line that every
     * worker writes is touched, and it runs the task next unless an idle
     * worker steals it first.
     */
    if (self && self->pool == hw && (gi == 0 || gi == self->group) &&
        weft__deque_push(&self->own, t)) {
        weft__idle_submitted(&hw->idle);
        return;
    }
    /*
     * Full: the workers are taking from it; wait for room. A worker that
     * submits (it carries a launch on, exec.h) runs the task itself
     * instead: every worker could be submitting at once.
     */
    while (!weft__ring_push(&g->tasks, t)) {
        if (weft__hostwork_self >= 0) {
            t->run(t);
            return;
        }
        sched_yield();
    }
    weft__idle_submitted(&hw->idle);
}

void weft__hostwork_busy(weft__hostwork *hw, int delta)
{
    weft__idle_busy(&hw->idle, delta);
}

void weft__hostwork_counts(weft__hostwork *hw, unsigned *sleepers,
                           unsigned *launch_wakes)
{
    weft__idle_counts(&hw->idle, sleepers, launch_wakes);
}

void weft__hostwork_repoll(weft__hostwork *hw, weft__host_task *t)
{
    t->next = NULL;
    pthread_mutex_lock(&hw->poll_lock);
    if (hw->poll_tail)
        hw->poll_tail->next = t;
    else
        hw->poll_head = t;
    hw->poll_tail = t;
    __atomic_add_fetch(&hw->npolls, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&hw->poll_lock);
    /* Called from a worker, which looks for work next: no wake-up. */
}

unsigned weft__hostwork_workers(const weft__hostwork *hw)
{
    return hw->nworkers;
}

/*
 * A weft__hostwork_for: the calls are claimed through next; done counts
 * those returned, which the caller waits for. Each helper task holds a
 * reference (refs, with the caller's), so that one that starts after the
 * caller has returned still finds the job; the last reference frees it.
 */
typedef struct weft__for_job {
    void (*fn)(void *ctx, unsigned k);
    void *ctx;
    unsigned n;
    _Alignas(WEFT__CACHE_LINE) unsigned next;
    _Alignas(WEFT__CACHE_LINE) unsigned done;
    unsigned refs;
    struct weft__for_helper *tasks; /* the helpers' */
} weft__for_job;

typedef struct weft__for_helper {
    weft__host_task task;
    weft__for_job *job;
} weft__for_helper;

static void weft__for_drop(weft__for_job *j)
{
    if (__atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL))
        return;
    weft__free(j->tasks);
    weft__free(j);
}

/* Calls claimed one at a time until none is left. */
static void weft__for_work(weft__for_job *j)
{
    for (;;) {
        unsigned k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);

        if (k >= j->n)
            return;
        j->fn(j->ctx, k);
        __atomic_add_fetch(&j->done, 1, __ATOMIC_RELEASE);
    }
}

static void weft__for_task(weft__host_task *t)
{
    weft__for_job *j = ((weft__for_helper *)(void *)t)->job;

    weft__for_work(j);
    weft__for_drop(j);
}

void weft__hostwork_for(weft__hostwork *hw, unsigned n,
                        void (*fn)(void *ctx, unsigned k), void *ctx)
{
    /* On a worker, every call here: waiting for the pool could wait on
     * this very worker. */
    unsigned helpers =
        weft__hostwork_self >= 0 ? 0 : WEFT__MIN(hw->nworkers, n ? n - 1 : 0);
    weft__for_job *j;

    j = helpers ? weft__calloc_aligned(1, sizeof *j, WEFT__CACHE_LINE) : NULL;
    if (j && !(j->tasks = weft__calloc(helpers, sizeof *j->tasks))) {
        weft__free(j);
        j = NULL;
    }
    if (!j) {
        for (unsigned k = 0; k < n; k++)
            fn(ctx, k);
        return;
    }
    j->fn = fn;
    j->ctx = ctx;
    j->n = n;
    j->refs = helpers + 1;
    for (unsigned h = 0; h < helpers; h++) {
        j->tasks[h].task.run = weft__for_task;
        j->tasks[h].job = j;
        weft__hostwork_submit(hw, -1, &j->tasks[h].task);
    }
    weft__for_work(j);
    /* The calls others claimed: short ones, by workers that run. */
    while (__atomic_load_n(&j->done, __ATOMIC_ACQUIRE) < n)
        weft__cpu_pause();
    weft__for_drop(j);
}

void weft__hostwork_destroy(weft_runtime *rt)
{
    weft__sched *s = rt->sched;

    if (s->hostwork)
        weft__hostwork_free(s->hostwork);
    s->hostwork = NULL;
}
