/*
 * The scheduler's state of one runtime (src/sched/), behind rt->sched:
 * the placement defaults, the models placement reads (made on first use,
 * placing.c), the host workers (hostwork.h) and the progress engine
 * (engine.h), both made on first use.
 */
#ifndef WEFT_SCHED_SCHED_H
#define WEFT_SCHED_SCHED_H

#include "../mem/machine.h"

struct weft__links;
struct weft__ktime;
struct weft__hostwork;
struct weft__engine;

typedef struct weft__sched {
    int place_policy; /* weft_place_policy, never DEFAULT */
    int place_scope;  /* weft_place_scope, never DEFAULT */
    /* The link model (links_state 0 not loaded, 1 loaded, -1 failed) and
     * the learned kernel times, made on first use under placing.c's lock. */
    int links_state;
    struct weft__links *links;
    struct weft__ktime *ktime;
    /* Host workers: made on first use under lock, read with an acquire
     * load; hostwork_off: not to be made. host_workers: how many
     * (WEFT_HOST_WORKERS), or UINT_MAX for the default. */
    pthread_mutex_t lock;
    struct weft__hostwork *hostwork;
    unsigned hostwork_off;
    unsigned host_workers;
    /* The progress engine (engine.h): made on first use under lock, read
     * with an acquire load. */
    struct weft__engine *engine;
    /*
     * Launches and device memory (exec_run.c, weft__exec_wait_room): how
     * many launches have started and not ended (running) and how many of
     * them wait for room that others hold (waiting); mem_gen counts up
     * when a launch ends or a waiting one lets go of its own memory. All
     * three are sequentially consistent atomics; waiting changes and
     * waiters sleep under mem_lock, and mem_cond is broadcast under it
     * when mem_gen moves while one waits, and when one more launch waits.
     */
    pthread_mutex_t mem_lock;
    pthread_cond_t mem_cond;
    uint64_t mem_gen;
    unsigned running, waiting;
    /*
     * Device memory link calibrations used (calibrate.c), freed by
     * weft__sched_destroy: a free of device memory waits for the device to
     * be idle, holding the driver's lock, which work of the program's (a
     * stream held by its own host function) may keep it from being for as
     * long as the program likes. Under lock.
     */
    struct weft__cal_held *cal_held;
} weft__sched;

/*
 * Make rt->sched: policy and scope (never DEFAULT, see placing.h's
 * parsers), host_workers as above.
 */
int weft__sched_create(weft_runtime *rt, int policy, int scope,
                       unsigned host_workers);
/* Free rt->sched and what it made (no graph is left); NULL is a no-op. */
void weft__sched_destroy(weft_runtime *rt);

#endif /* WEFT_SCHED_SCHED_H */
