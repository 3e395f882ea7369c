/*
 * What a thread of a pool does when it finds no work: one policy for the
 * host workers (src/sched/hostwork.c) and the host driver's kernel pool
 * (src/drivers/host/host_pool.c), whose work waits in lock-free queues
 * (rings, work-stealing deques) that the pool's own take looks at.
 *
 * An idle thread spins on the queues (reads only, while they are empty)
 * for WEFT__IDLE_SPIN_NS, so that a hand-off between the threads of a
 * fine-grained launch costs no system call and writes no shared line,
 * then polls them yielding the core WEFT__IDLE_POLLS times, then sleeps on
 * the condition. While a
 * launch runs (weft__idle_busy) it polls on for up to WEFT__IDLE_BUSY_NS
 * since it began to look: a task of that launch becomes ready within
 * about a task's time, and a thread woken from sleep comes late (a futex
 * wake, and in a virtual machine an idle virtual CPU to be scheduled
 * again: with 1 ms tasks on the GPU machine's 32 cores a ready task waited
 * 54-70 us on average and up to 2 ms, bench/metg --latency), where a
 * polling one takes it within a microsecond or two. The first launch's
 * start wakes every sleeper at once.
 *
 * Sleeping is announced (sleepers) before the last look at the queues,
 * and a submit looks at sleepers after its push (weft__idle_submitted),
 * with a sequentially consistent order between the two on both sides: one
 * of them sees the other, so no work is left with every thread asleep. A
 * submit wakes nobody while a thread polls (pollers, read the same way):
 * a poller stops counting itself only before a last look at the queues
 * (or once it has work, after which it wakes one more where work still
 * waits and nobody polls). A thread in its spin does not count: a submit
 * may then wake a sleeper it did not need (not while a launch keeps the
 * threads up), and the hand-offs of a fine-grained launch, whose threads
 * are idle for microseconds, change no counter. The mutex is taken only
 * to sleep and to wake.
 *
 * All three times may be set at compile time (tests/gpu/host_spin.sh
 * compares settings on one machine).
 */
#ifndef WEFT_BASE_IDLE_H
#define WEFT_BASE_IDLE_H

#include "base.h"

#include <pthread.h>

#ifndef WEFT__IDLE_SPIN_NS
#define WEFT__IDLE_SPIN_NS 4000
#endif
#ifndef WEFT__IDLE_POLLS
#define WEFT__IDLE_POLLS 200
#endif
#ifndef WEFT__IDLE_BUSY_NS
#define WEFT__IDLE_BUSY_NS 20000000
#endif

typedef struct weft__idle {
    /*
     * For sleeping and waking; a pool may guard state of its own with it
     * too (take is then called with it held, see weft__idle_ops).
     */
    pthread_mutex_t lock;
    pthread_cond_t work;
    /* Read by every look and submit, changed seldom while a launch runs. */
    unsigned stop;         /* atomic; set under lock */
    unsigned sleepers;     /* threads asleep or about to be (atomic) */
    unsigned busy;         /* launches running (atomic) */
    unsigned busy_gen;     /* busy's rises from 0 (changed under lock) */
    unsigned launch_wakes; /* sleepers woken by a rise (atomic; tests) */
    /*
     * Threads awake and polling (atomic): past their spin, so changed
     * only by threads idle for more than WEFT__IDLE_SPIN_NS. A line of
     * its own (the padding: no alignment asked of the pool's memory).
     */
    char pad0[WEFT__CACHE_LINE];
    unsigned pollers;
    char pad1[WEFT__CACHE_LINE - sizeof(unsigned)];
} weft__idle;

typedef struct weft__idle_ops {
    /*
     * Work for the calling thread, or NULL. locked: the idle lock is held
     * (take must not block, nor take that lock); not locked, it may yield
     * the core before work that waits for another thread (a poll).
     */
    void *(*take)(void *ctx, int locked);
    /* Whether work seems to wait (a hint: reads only, no lock). */
    int (*pending)(void *ctx);
} weft__idle_ops;

/* 0, or WEFT_ENOMEM (the mutex or condition could not be made). */
int weft__idle_init(weft__idle *id);
void weft__idle_fini(weft__idle *id);
/*
 * The calling thread's next work, by ops's take: looking, polling, then
 * asleep until a submit, a wake or a launch's start; NULL once stopped.
 */
void *weft__idle_wait(weft__idle *id, const weft__idle_ops *ops, void *ctx);
/* After work was pushed where take finds it: a sleeper up if none polls. */
void weft__idle_submitted(weft__idle *id);
/* Under the idle lock: a sleeper up, or every one (all). */
void weft__idle_wake_locked(weft__idle *id, int all);
/*
 * A launch starts (delta 1) or ends (-1). While one runs, idle threads
 * poll rather than sleep (up to WEFT__IDLE_BUSY_NS each); the first start
 * wakes every sleeper at once.
 */
void weft__idle_busy(weft__idle *id, int delta);
/* Stop: every thread's weft__idle_wait returns NULL from now on. */
void weft__idle_stop(weft__idle *id);
static inline int weft__idle_stopping(const weft__idle *id)
{
    return (int)__atomic_load_n(&id->stop, __ATOMIC_ACQUIRE);
}
/* For tests: threads asleep now, and wakes by a launch's start so far. */
void weft__idle_counts(weft__idle *id, unsigned *sleepers,
                       unsigned *launch_wakes);

#endif /* WEFT_BASE_IDLE_H */
