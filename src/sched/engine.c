/*
 * The progress engine (engine.h).
 *
 * State under eng->lock: the FIFO (head, tail, queued), the threads
 * started (nthreads) and those waiting for a job (idle), and stop. A
 * submit starts a thread when more jobs are queued than threads are idle,
 * so a queued job never waits for a thread that is running another job
 * while the engine is below its size. Lock order: a caller's own lock
 * (an executable graph's) before eng->lock; no job runs under eng->lock.
 */
#include "engine.h"

#include "../base/options.h"
#include "../base/os.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

struct weft__engine {
    pthread_mutex_t lock;
    pthread_cond_t work;
    weft__engine_job *head, *tail;
    unsigned long queued;
    unsigned size;     /* the most threads */
    unsigned nthreads; /* started; threads[0, nthreads) to join */
    unsigned idle;
    unsigned stop;
    pthread_t *threads;
};

static void *weft__engine_main(void *arg)
{
    weft__engine *eng = arg;

    pthread_mutex_lock(&eng->lock);
    for (;;) {
        weft__engine_job *job;

        while (!eng->head && !eng->stop) {
            eng->idle++;
            pthread_cond_wait(&eng->work, &eng->lock);
            eng->idle--;
        }
        if (!eng->head)
            break;
        job = eng->head;
        eng->head = job->next;
        if (!eng->head)
            eng->tail = NULL;
        eng->queued--;
        pthread_mutex_unlock(&eng->lock);
        job->run(job);
        pthread_mutex_lock(&eng->lock);
    }
    pthread_mutex_unlock(&eng->lock);
    return NULL;
}

static unsigned weft__engine_size(const weft_runtime *rt)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = 4;

    if (weft__opt_uint(WEFT__OPT_ENGINE_THREADS, &n))
        return n;
    if (cores > 0 && (unsigned long)cores > n)
        n = (unsigned)WEFT__MIN((unsigned long)cores, 1024UL);
    if (2 * rt->ndevices > n)
        n = 2 * rt->ndevices;
    return n;
}

static weft__engine *weft__engine_get(weft_runtime *rt)
{
    weft__engine *eng = __atomic_load_n(&rt->sched->engine, __ATOMIC_ACQUIRE);

    if (eng)
        return eng;
    pthread_mutex_lock(&rt->sched->lock);
    if (!rt->sched->engine) {
        unsigned size = weft__engine_size(rt);

        eng = weft__calloc(1, sizeof *eng);
        if (eng && !(eng->threads = weft__calloc(size, sizeof *eng->threads))) {
            weft__free(eng);
            eng = NULL;
        }
        if (eng) {
            pthread_mutex_init(&eng->lock, NULL);
            pthread_cond_init(&eng->work, NULL);
            eng->size = size;
            __atomic_store_n(&rt->sched->engine, eng, __ATOMIC_RELEASE);
        }
    }
    eng = rt->sched->engine;
    pthread_mutex_unlock(&rt->sched->lock);
    return eng;
}

int weft__engine_submit(weft_runtime *rt, weft__engine_job *job)
{
    weft__engine *eng = weft__engine_get(rt);
    int err = 0;

    if (!eng)
        return weft__error(WEFT_ENOMEM, "the progress engine: out of memory");
    pthread_mutex_lock(&eng->lock);
    if (eng->queued + 1 > eng->idle && eng->nthreads < eng->size) {
        err =
            weft__thread_start(&eng->threads[eng->nthreads], "weft-engine",
                               "engine.pthread_create", weft__engine_main, eng);
        if (!err)
            eng->nthreads++;
        else if (eng->nthreads == 0) {
            pthread_mutex_unlock(&eng->lock);
            return weft__error(WEFT_ENOMEM,
                               "the progress engine: cannot start a thread "
                               "(error %d)",
                               err);
        }
        /* Else the threads there are take the job in turn. */
    }
    job->next = NULL;
    if (eng->tail)
        eng->tail->next = job;
    else
        eng->head = job;
    eng->tail = job;
    eng->queued++;
    if (eng->idle)
        pthread_cond_signal(&eng->work);
    pthread_mutex_unlock(&eng->lock);
    return 0;
}

int weft__engine_take(weft_runtime *rt, weft__engine_job *job)
{
    weft__engine *eng = __atomic_load_n(&rt->sched->engine, __ATOMIC_ACQUIRE);
    weft__engine_job *prev = NULL, *at;

    if (!eng)
        return 0;
    pthread_mutex_lock(&eng->lock);
    for (at = eng->head; at && at != job; at = at->next)
        prev = at;
    if (at) {
        if (prev)
            prev->next = job->next;
        else
            eng->head = job->next;
        if (eng->tail == job)
            eng->tail = prev;
        eng->queued--;
    }
    pthread_mutex_unlock(&eng->lock);
    return at != NULL;
}

unsigned weft__engine_threads(weft_runtime *rt)
{
    weft__engine *eng = __atomic_load_n(&rt->sched->engine, __ATOMIC_ACQUIRE);
    unsigned n;

    if (!eng)
        return 0;
    pthread_mutex_lock(&eng->lock);
    n = eng->nthreads;
    pthread_mutex_unlock(&eng->lock);
    return n;
}

void weft__engine_destroy(weft_runtime *rt)
{
    weft__engine *eng = rt->sched->engine;

    if (!eng)
        return;
    pthread_mutex_lock(&eng->lock);
    weft__assert(!eng->head);
    eng->stop = 1;
    pthread_cond_broadcast(&eng->work);
    pthread_mutex_unlock(&eng->lock);
    for (unsigned i = 0; i < eng->nthreads; i++)
        pthread_join(eng->threads[i], NULL);
    pthread_cond_destroy(&eng->work);
    pthread_mutex_destroy(&eng->lock);
    weft__free(eng->threads);
    weft__free(eng);
    rt->sched->engine = NULL;
}
