/* Idle threads of a pool: idle.h has the policy. */
#include "idle.h"

#include "os.h"

#include <sched.h>
#include <stdint.h>
#include <string.h>

int weft__idle_init(weft__idle *id)
{
    memset(id, 0, sizeof *id);
    if (pthread_mutex_init(&id->lock, NULL) != 0)
        return WEFT_ENOMEM;
    if (pthread_cond_init(&id->work, NULL) != 0) {
        pthread_mutex_destroy(&id->lock);
        return WEFT_ENOMEM;
    }
    return 0;
}

void weft__idle_fini(weft__idle *id)
{
    pthread_cond_destroy(&id->work);
    pthread_mutex_destroy(&id->lock);
}

/* A sleeper up, if there is one. */
static void idle_wake_one(weft__idle *id)
{
    pthread_mutex_lock(&id->lock);
    pthread_cond_signal(&id->work);
    pthread_mutex_unlock(&id->lock);
}

/*
 * A thread that took work: if more waits and no thread is awake to take
 * it, one more is woken (so that a burst of submits, which wake nobody
 * while a thread polls, still spreads over the pool).
 */
static void idle_wake_more(weft__idle *id, const weft__idle_ops *ops, void *ctx)
{
    /* (the look at the queues last: while a launch runs, seldom needed) */
    if (__atomic_load_n(&id->sleepers, __ATOMIC_SEQ_CST) &&
        !__atomic_load_n(&id->pollers, __ATOMIC_SEQ_CST) && ops->pending(ctx))
        idle_wake_one(id);
}

void *weft__idle_wait(weft__idle *id, const weft__idle_ops *ops, void *ctx)
{
    void *w;

    for (;;) {
        unsigned gen = __atomic_load_n(&id->busy_gen, __ATOMIC_ACQUIRE);

        /* The spin, not counted as polling (reads only). */
        for (uint64_t t0 = weft__now_ns();
             weft__now_ns() - t0 < (uint64_t)WEFT__IDLE_SPIN_NS;) {
            for (unsigned k = 0; k < 16; k++)
                weft__cpu_pause();
            if (ops->pending(ctx))
                break;
        }
        if ((w = ops->take(ctx, 0))) {
            idle_wake_more(id, ops, ctx);
            return w;
        }
        __atomic_add_fetch(&id->pollers, 1, __ATOMIC_SEQ_CST);
        for (uint64_t i = 0, t0 = 0;; i++) {
            if (i >= WEFT__IDLE_POLLS) {
                /* Past the polls: on while a launch runs, for a while. */
                uint64_t now = weft__now_ns();

                if (!__atomic_load_n(&id->busy, __ATOMIC_RELAXED))
                    break;
                if (!t0)
                    t0 = now;
                else if (now - t0 >= (uint64_t)WEFT__IDLE_BUSY_NS)
                    break;
            }
            if ((w = ops->take(ctx, 0))) {
                __atomic_sub_fetch(&id->pollers, 1, __ATOMIC_SEQ_CST);
                idle_wake_more(id, ops, ctx);
                return w;
            }
            if (weft__idle_stopping(id)) {
                __atomic_sub_fetch(&id->pollers, 1, __ATOMIC_SEQ_CST);
                return NULL;
            }
            sched_yield();
        }
        __atomic_add_fetch(&id->sleepers, 1, __ATOMIC_SEQ_CST);
        __atomic_sub_fetch(&id->pollers, 1, __ATOMIC_SEQ_CST);
#if !defined(__SANITIZE_THREAD__)
        /*
         * The last look's reads of the queues (relaxed hints) after the
         * changes above, as a submit's fence orders its push before its
         * reads of them: x86's locked instructions order them anyway, a
         * store-release (Arm) does not.
         */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
        w = ops->take(ctx, 0);
        if (!w) {
            /* Up for work, the stop, or a launch's start (busy_gen). */
            pthread_mutex_lock(&id->lock);
            while (!(w = ops->take(ctx, 1)) && !weft__idle_stopping(id) &&
                   __atomic_load_n(&id->busy_gen, __ATOMIC_RELAXED) == gen)
                pthread_cond_wait(&id->work, &id->lock);
            pthread_mutex_unlock(&id->lock);
        }
        __atomic_sub_fetch(&id->sleepers, 1, __ATOMIC_SEQ_CST);
        if (w)
            idle_wake_more(id, ops, ctx);
        if (w || weft__idle_stopping(id))
            return w;
        __atomic_add_fetch(&id->launch_wakes, 1, __ATOMIC_RELAXED);
    }
}

/*
 * After a push: a sleeper up if no thread polls. A sequentially consistent
 * fence between the push and the loads of pollers and sleepers: it is
 * ordered with a sleeping thread's read-modify-write of sleepers (and a
 * poller's of pollers) before its last look, so either this sees the
 * thread, or the thread, after it, sees the push. (Read-modify-writes
 * here would do the same, but take the line every idle thread changes
 * for every push.)
 */
void weft__idle_submitted(weft__idle *id)
{
#if defined(__SANITIZE_THREAD__)
    /* The thread sanitizer does not model fences: the same order by the
     * read-modify-writes. */
    if (!__atomic_fetch_add(&id->pollers, 0, __ATOMIC_SEQ_CST) &&
        __atomic_fetch_add(&id->sleepers, 0, __ATOMIC_SEQ_CST))
        idle_wake_one(id);
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&id->pollers, __ATOMIC_RELAXED) &&
        __atomic_load_n(&id->sleepers, __ATOMIC_RELAXED))
        idle_wake_one(id);
#endif
}

void weft__idle_wake_locked(weft__idle *id, int all)
{
    if (all)
        pthread_cond_broadcast(&id->work);
    else
        pthread_cond_signal(&id->work);
}

void weft__idle_busy(weft__idle *id, int delta)
{
    if (__atomic_fetch_add(&id->busy, (unsigned)delta, __ATOMIC_SEQ_CST) ||
        delta < 0 || !__atomic_load_n(&id->sleepers, __ATOMIC_SEQ_CST))
        return;
    /*
     * The first: every sleeper up at once, to poll for the launch's work,
     * not one by one as it comes. (A thread that went to sleep after the
     * look at sleepers above is woken by the work, as between launches.)
     */
    pthread_mutex_lock(&id->lock);
    __atomic_add_fetch(&id->busy_gen, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&id->work);
    pthread_mutex_unlock(&id->lock);
}

void weft__idle_stop(weft__idle *id)
{
    pthread_mutex_lock(&id->lock);
    __atomic_store_n(&id->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&id->work);
    pthread_mutex_unlock(&id->lock);
}

void weft__idle_counts(weft__idle *id, unsigned *sleepers,
                       unsigned *launch_wakes)
{
    *sleepers = __atomic_load_n(&id->sleepers, __ATOMIC_SEQ_CST);
    *launch_wakes = __atomic_load_n(&id->launch_wakes, __ATOMIC_RELAXED);
}
