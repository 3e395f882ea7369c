/*
 * The progress engine: one set of threads per runtime that runs the
 * launches of every executable graph, in place of a thread per graph.
 *
 * A job is queued in FIFO order and run once by some engine thread; the
 * caller owns its memory, which must stay valid until run() has been
 * called (run() may free it). Threads are started on demand, one whenever
 * a job is queued and no thread is idle, up to the engine's size:
 * max(4, cores, 2 x devices), or WEFT_ENGINE_THREADS. A launch holds its
 * thread while it issues, and through its drain where the thread carries
 * it to the end; one that awaits a host node gives the thread back and is
 * carried on by a host worker (exec.h). So the size bounds how many
 * launches of different graphs issue at once; launches beyond it wait
 * their turn in the queue. Nothing a launch waits for needs a queued job:
 * it waits for device work and for another graph's launch already running
 * (exec.h), never for one still queued.
 *
 * Engine threads are not bound: each serves every device in turn, and the
 * host bytes of a node are touched by the host workers, which are.
 */
#ifndef WEFT_SCHED_ENGINE_H
#define WEFT_SCHED_ENGINE_H

#include "sched.h"

typedef struct weft__engine weft__engine;
typedef struct weft__engine_job weft__engine_job;

struct weft__engine_job {
    void (*run)(weft__engine_job *job);
    weft__engine_job *next; /* the engine's */
};

/*
 * Queue job on rt's engine (made on first use). WEFT_ENOMEM when the
 * engine has no thread and none can be started: the job is not queued.
 */
int weft__engine_submit(weft_runtime *rt, weft__engine_job *job);
/*
 * Take job back if no thread has taken it yet: 1 if it was still queued
 * (it is the caller's again, to run itself), else 0 (a thread runs it or
 * ran it).
 */
int weft__engine_take(weft_runtime *rt, weft__engine_job *job);
/* Threads started so far (statistics, tests). */
unsigned weft__engine_threads(weft_runtime *rt);
/* Stop and join the threads (the runtime's destroy; nothing queued). */
void weft__engine_destroy(weft_runtime *rt);

#endif /* WEFT_SCHED_ENGINE_H */
