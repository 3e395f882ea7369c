/*
 * The host workers (src/sched/): a pool of threads per runtime that run
 * the host side of graph nodes (maps and host tasks) off the thread that
 * issues a launch, so that it keeps issuing device work meanwhile.
 *
 * The pool is made on first use: WEFT_HOST_WORKERS threads (default: the
 * machine's cores, at most 64; 0 turns the pool off and host nodes run on
 * the issuing thread). Workers are grouped by the cores nearest a device
 * (weft__cpuset_near): a task for device d goes to the group of d's cores,
 * whose workers bind themselves there (each its own thread, so that a
 * binding that is slow holds back no caller). A submit wakes one sleeping
 * worker, of any group, unless a worker is awake and polling (it will take
 * the task); a worker that takes a task wakes one more if tasks still wait
 * and none polls. A worker takes a task of its own group first, else any
 * other group's. Without locality (or on a
 * machine of 2 cores or fewer) there is one group, unbound.
 *
 * No lock on the way in or out: each group's tasks are a lock-free ring
 * (src/base/ring.h) that submits push to and workers pop from, any group
 * when their own is empty. A worker's own submits (the successors it makes
 * ready, for any device or its own group's) go to its own work-stealing
 * deque (src/base/deque.h) instead: it takes the newest of them first,
 * before the rings, and a worker that finds the rings empty steals the
 * oldest of another's. A worker with nothing to do spins on the rings and
 * deques (reads only) a few microseconds, then polls them yielding its
 * core a while, then sleeps on the pool's condition (src/base/idle.h, the
 * policy the host driver's kernel helpers follow too); the pool's mutex is
 * taken only to sleep and to wake a sleeper (a submit that sees one).
 */
#ifndef WEFT_SCHED_HOSTWORK_H
#define WEFT_SCHED_HOSTWORK_H

#include "sched.h"

typedef struct weft__host_task weft__host_task;

/* A task: run() is called once, on a worker; the caller owns the memory. */
struct weft__host_task {
    void (*run)(weft__host_task *t);
    weft__host_task *next; /* the pool's */
};

typedef struct weft__hostwork weft__hostwork;

/*
 * The runtime's pool, made on first use; NULL when it is off or could not
 * be made: the caller runs the work itself.
 */
weft__hostwork *weft__hostwork_get(weft_runtime *rt);
/*
 * Queue t for a worker near device (a runtime device index; -1: any). On a
 * worker, a task that finds its group's ring full runs at once, on the
 * calling thread.
 */
void weft__hostwork_submit(weft__hostwork *hw, int device, weft__host_task *t);
/*
 * On a worker: queue poll task t (its last call said "not yet") for its
 * next call. Poll tasks run after the rings' tasks, in turn; a worker
 * with nothing else to do calls them instead of sleeping.
 */
void weft__hostwork_repoll(weft__hostwork *hw, weft__host_task *t);
/*
 * A launch with host tasks starts (delta 1) or ends (-1). While one runs,
 * idle workers poll for its tasks rather than sleep (up to
 * WEFT__IDLE_BUSY_NS each, base/idle.h); the first start wakes every
 * sleeping worker at once.
 */
void weft__hostwork_busy(weft__hostwork *hw, int delta);
/*
 * For tests: the workers asleep now, and how many times a sleeping worker
 * was woken by a launch's start (not by a task) so far.
 */
void weft__hostwork_counts(weft__hostwork *hw, unsigned *sleepers,
                           unsigned *launch_wakes);
/* The pool's workers. */
unsigned weft__hostwork_workers(const weft__hostwork *hw);
/*
 * fn(ctx, k) for every k in [0, n), spread over the pool's workers with
 * the calling thread taking its share; returns once every call has
 * returned. Workers that are busy elsewhere simply come late (the caller
 * may run every call itself), and those that come after the last call
 * find nothing to do. On a worker (which would wait for its own pool),
 * or without memory, the caller runs them all.
 */
void weft__hostwork_for(weft__hostwork *hw, unsigned n,
                        void (*fn)(void *ctx, unsigned k), void *ctx);
/* On a worker: its index in the pool (traces name its track); else -1. */
extern _Thread_local int weft__hostwork_self;
/* Stop and join the workers (the runtime's destroy; nothing queued). */
void weft__hostwork_destroy(weft_runtime *rt);

#endif /* WEFT_SCHED_HOSTWORK_H */
