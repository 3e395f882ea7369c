/*
 * The host driver: devices are the CPU, queues are worker threads, kernels
 * are C functions run once per work-group on a per-context thread pool.
 *
 * Each host device has memory of its own (separate allocations), so that
 * copies between host devices are real copies and the layers above see the
 * same protocol as with discrete GPUs.
 *
 * Locks. There are three kinds and no code path holds two at once:
 * - host_queue.lock: the queue's FIFO of operations and its counters.
 * - host_pool.lock: the pool's list of open launches and their counts.
 * - the signal lock (host_queue.c): every signal's state and every event's
 *   current signal pointer.
 * Because none nests, there is no lock order to get wrong; keep it so.
 */
#ifndef WEFT_HOST_INTERNAL_H
#define WEFT_HOST_INTERNAL_H

#include "../driver.h"

#include <pthread.h>

#define WEFT__HOST_ALIGN 64 /* alignment of every memory allocation */

typedef struct weft__host_device {
    weft__device base;
    unsigned nthreads; /* threads that run one launch, the worker included */
} weft__host_device;

/*
 * One launch being spread over a pool. It lives inside the launch operation
 * of the queue whose worker owns it; helpers touch it only while counted in
 * active, and the owner does not return before active is 0 and the job is
 * off the list.
 */
typedef struct weft__host_job {
    struct weft__host_job *next; /* pool list; pool lock */
    weft_host_kernel_fn *fn;
    void **slot_args; /* nslots arrays of nargs pointers, one per thread */
    unsigned nargs;
    unsigned nslots;
    uint32_t groups[3];
    uint32_t group_size[3];
    uint64_t total;   /* groups in the launch, < 2^62 */
    uint64_t chunk;   /* groups taken per claim */
    uint64_t claimed; /* next unclaimed group; atomic, may overshoot total */
    unsigned slots_taken; /* helper slots handed out (1..); pool lock */
    unsigned active;      /* helpers running groups of it; pool lock */
} weft__host_job;

typedef struct weft__host_pool {
    pthread_mutex_t lock;
    pthread_cond_t work; /* helpers wait here for an open job or stop */
    pthread_cond_t idle; /* owners wait here for active to drop to 0 */
    weft__host_job *jobs;
    unsigned stopping;
    unsigned nhelpers;
    pthread_t *helpers;
} weft__host_pool;

typedef struct weft__host_context {
    weft__context base;
    weft__host_pool pool;
} weft__host_context;

typedef struct weft__host_mem {
    weft__mem base;
    void *data;     /* the bytes, for every kind */
    unsigned owned; /* 1: allocated here, freed by mem_free */
} weft__host_mem;

typedef struct weft__host_kernel {
    weft__kernel base;
    weft_host_kernel_fn *fn;
} weft__host_kernel;

typedef struct weft__host_module {
    weft__module base;
    unsigned nkernels;
    weft__host_kernel *kernels;
} weft__host_module;

/*
 * The completion of one record: shared by the event (until re-recorded or
 * destroyed), the record operation (until it has run) and every wait on it
 * (until it has waited). refs is atomic; done and time_ns are written under
 * the signal lock, and done is read atomically by queries.
 */
typedef struct weft__host_signal {
    long refs;
    int done;
    uint64_t time_ns; /* weft__now_ns() when the recorded work completed */
} weft__host_signal;

typedef struct weft__host_event {
    weft__event base;
    weft__host_signal *signal; /* NULL until recorded; signal lock */
} weft__host_event;

typedef enum weft__host_op_kind {
    WEFT__HOST_OP_COPY = 1,
    WEFT__HOST_OP_FILL,
    WEFT__HOST_OP_LAUNCH,
    WEFT__HOST_OP_RECORD,
    WEFT__HOST_OP_WAIT,
    WEFT__HOST_OP_HOST_FN,
} weft__host_op_kind;

/* One queued operation; a launch carries its arguments after it. */
typedef struct weft__host_op {
    struct weft__host_op *next;
    weft__host_op_kind kind;
    union {
        struct {
            void *dst;
            const void *src;
            size_t size;
        } copy;
        struct {
            unsigned char *dst;
            size_t size;
            unsigned pattern_size;
            unsigned char pattern[4];
        } fill;
        weft__host_signal *signal; /* RECORD and WAIT */
        struct {
            weft__host_fn *fn;
            void *user;
        } host;
        weft__host_job job;
    } u;
} weft__host_op;

typedef struct weft__host_queue {
    weft__queue base;
    pthread_mutex_t lock;
    pthread_cond_t work; /* the worker waits for an operation or stop */
    pthread_cond_t idle; /* syncs wait for completed == submitted */
    weft__host_op *head;
    weft__host_op **tail;
    uint64_t submitted;
    uint64_t completed;
    unsigned stopping;
    pthread_t worker;
} weft__host_queue;

/* host.c */
int weft__host_os_error(int weft_code, int err, const char *what);

/* host_pool.c */
int weft__host_pool_start(weft__host_pool *pool, unsigned nhelpers);
void weft__host_pool_stop(weft__host_pool *pool);
/* Run every group of job, on the calling thread and the pool's helpers. */
void weft__host_pool_run(weft__host_pool *pool, weft__host_job *job);
int weft__host_launch(weft__queue *q, weft__kernel *k, const weft__grid *grid,
                      const weft__karg *args, unsigned nargs);

/* host_queue.c */
int weft__host_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                            weft__queue **q);
int weft__host_queue_sync(weft__queue *q);
void weft__host_queue_release(weft__queue *q);
/* Append op to q's FIFO; it is freed by the worker once it has run. */
void weft__host_queue_push(weft__queue *q, weft__host_op *op);
int weft__host_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        const void *src, size_t size);
int weft__host_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                        size_t src_off, size_t size);
int weft__host_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        weft__mem *src, size_t src_off, size_t size);
int weft__host_fill(weft__queue *q, weft__mem *dst, size_t off,
                    const void *pattern, size_t pattern_size, size_t size);
int weft__host_event_create(weft__context *ctx, unsigned flags,
                            weft__event **ev);
int weft__host_event_record(weft__event *ev, weft__queue *q);
int weft__host_queue_wait_event(weft__queue *q, weft__event *ev);
int weft__host_event_query(weft__event *ev);
int weft__host_event_sync(weft__event *ev);
int weft__host_event_elapsed(weft__event *start, weft__event *end,
                             uint64_t *ns);
void weft__host_event_destroy(weft__event *ev);
int weft__host_host_fn(weft__queue *q, weft__host_fn *fn, void *user);

#endif /* WEFT_HOST_INTERNAL_H */
