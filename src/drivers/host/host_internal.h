/*
 * The host driver: devices are the CPU, queues are worker threads, kernels
 * are C functions run once per work-group on a per-context thread pool.
 *
 * Each host device has memory of its own (separate allocations), so that
 * copies between host devices are real copies and the layers above see the
 * same protocol as with discrete GPUs.
 *
 * Locks. There are four kinds and no code path holds two at once:
 * - host_queue.lock: a queue worker's sleep, syncs and stop (the FIFO
 *   itself is lock-free: see weft__host_queue).
 * - host_pool.lock: the pool's list of open launches and their counts.
 * - the signal lock (host_queue.c): every signal's state and every event's
 *   current signal pointer.
 * - the capture lock (host_graph.c): every capture, and the cap pointers
 *   of queues and events.
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

struct weft__host_capture;
struct weft__host_graph;

typedef struct weft__host_event {
    weft__event base;
    weft__host_signal *signal; /* NULL until recorded; signal lock */
    /* The capture it was last recorded in while that capture lasts, else
     * NULL; written under the capture lock, read atomically. */
    struct weft__host_capture *cap;
} weft__host_event;

typedef enum weft__host_op_kind {
    WEFT__HOST_OP_COPY = 1,
    WEFT__HOST_OP_FILL,
    WEFT__HOST_OP_LAUNCH,
    WEFT__HOST_OP_RECORD,
    WEFT__HOST_OP_WAIT,
    WEFT__HOST_OP_HOST_FN,
    WEFT__HOST_OP_GRAPH,      /* a launch of a native graph (host_graph.c) */
    WEFT__HOST_OP_RECORD_EXT, /* graph nodes: an external event record */
    WEFT__HOST_OP_WAIT_EXT,   /* ... and wait (graph_*_external) */
} weft__host_op_kind;

/*
 * One queued operation; a launch carries its arguments after it. Ops are
 * recycled by their queue (weft__host_op_alloc): cap says how many bytes
 * this one has room for.
 */
typedef struct weft__host_op {
    struct weft__host_op *next;
    size_t cap;
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
        struct {
            struct weft__host_graph *graph;
            /* Per external node (by slot): the signal it raises or waits
             * for in this launch; a wait's may be NULL (nothing to wait). */
            weft__host_signal **signals;
        } graph;
        struct {
            weft__host_event *ev;
            unsigned slot; /* in the launch's signals */
        } ext;
    } u;
} weft__host_op;

/*
 * A queue: a FIFO of operations that one worker thread runs in order.
 *
 * FIFO. An intrusive lock-free list with many producers and one consumer
 * (D. Vyukov's): producers swap themselves into tail (atomic exchange),
 * then link the previous tail's next to themselves (release). The worker
 * alone moves head, which is the last op it took (stub at first): it
 * takes head's next once linked, and that op becomes the head, while it
 * runs and after, until the op after it is taken. So the worker never
 * writes tail, and an op is recycled only once no producer can still link
 * after it. Between a producer's exchange and its link the list looks cut
 * there: the worker waits for the link. Every next of an op in the list is
 * accessed atomically.
 *
 * Counts. submitted: ops pushed (bumped before a producer's exchange,
 * seq_cst, so that every op ahead of a given one in the FIFO is counted
 * once that one is); taken: ops the worker took off (<= submitted);
 * completed: ops run (seq_cst, after running, so that a sync that sees it
 * sees their effects). A sync waits for completed to reach submitted as
 * it found it.
 *
 * Sleeping. A worker that finds nothing spins a while, then, under lock,
 * sets sleeping (seq_cst) and sleeps on work while submitted == taken;
 * push bumps submitted, then reads sleeping (both seq_cst) and, if set,
 * signals work under lock: one of the two sees the other, so no wake-up
 * is lost, and a queue kept busy costs no lock and no system call per op.
 * (A worker that sees submitted > taken but no link yet spins for it.)
 * Syncs are the same with syncers, completed and idle.
 *
 * Recycling. The worker keeps the ops it is done with on spare, its own
 * (up to WEFT__HOST_SPARE; it frees the rest), and hands the whole list
 * over in ready when ready is empty (a batch at a time while busy,
 * whatever it has when idle). weft__host_op_alloc takes ops from cache,
 * refilled with all of ready at once (one atomic exchange per batch);
 * cache belongs to the allocating thread that holds cache_busy (atomic
 * exchange), and a thread that finds it held allocates. So the enqueueing
 * thread neither locks nor calls malloc in the usual case, and the lines
 * the two sides write are apart.
 */
typedef struct weft__host_queue {
    weft__queue base;
    /* Written seldom: at start and stop, by sleeps and syncs. */
    pthread_t worker;
    pthread_mutex_t lock; /* for sleeping, syncing and stopping */
    pthread_cond_t work;  /* the worker waits for an operation or stop */
    pthread_cond_t idle;  /* syncs wait for completed to reach theirs */
    unsigned stopping;    /* lock; read atomically by a spinning worker */
    unsigned sleeping;    /* atomic, written under lock */
    unsigned syncers;     /* syncs waiting; atomic, written under lock */
    /* The capture it takes part in, or NULL; written under the capture
     * lock, read atomically (by every push). */
    struct weft__host_capture *cap;
    char pad0[64];
    /* Written by enqueueing threads. */
    weft__host_op *tail;  /* the last op linked or being linked; atomic */
    uint64_t submitted;   /* atomic */
    unsigned cache_busy;  /* atomic */
    weft__host_op *cache; /* ops to allocate; cache_busy */
    char pad1[64];
    /* Written by both, once a batch each. */
    weft__host_op *ready; /* spare ops handed over, or NULL; atomic */
    char pad2[64];
    /* Written by the worker. */
    weft__host_op *head;  /* the last op taken, or stub; worker */
    uint64_t taken;       /* worker */
    uint64_t completed;   /* atomic */
    weft__host_op *spare; /* ops done with, for reuse; worker */
    unsigned nspare;      /* worker */
    char pad3[64];
    weft__host_op stub;
} weft__host_queue;

/* host.c */
int weft__host_os_error(int weft_code, int err, const char *what);

/* host_graph.c: native graphs (see the comment at its top). */
int weft__host_graph_begin(weft__queue *q);
int weft__host_graph_end(weft__queue *q, void *old, void **graph, int *updated);
int weft__host_graph_launch(void *graph, weft__queue *q);
void weft__host_graph_destroy(void *graph);
int weft__host_graph_record_external(weft__event *ev, weft__queue *q);
int weft__host_graph_wait_external(weft__queue *q, weft__event *ev);
/* Run a GRAPH op's nodes, on the worker of the queue it was launched on. */
void weft__host_graph_run(weft__host_queue *hq, weft__host_op *op);
/*
 * For host_queue.c, on a queue or event whose cap it found set (each
 * returns at once where it finds the capture gone): push appends op to
 * the capture; record makes ev a capture event (1), or takes it out of
 * its capture where q is in none (0); wait joins q to ev's
 * capture, or says whether a wait in a capture may pass (0) or must fail
 * (< 0, error set); sync fails (a queue in a capture runs nothing);
 * gone takes a destroyed queue or event out of its capture.
 */
void weft__host_capture_push(weft__host_queue *hq, weft__host_op *op);
int weft__host_capture_record(weft__host_event *he, weft__host_queue *hq);
int weft__host_capture_wait(weft__host_queue *hq, weft__host_event *he);
void weft__host_capture_queue_gone(weft__host_queue *hq);
void weft__host_capture_event_gone(weft__host_event *he);

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
/*
 * An op of at least bytes bytes (>= sizeof(weft__host_op), < SIZE_MAX) for
 * q, its header zeroed and kind set; NULL if out of memory (no error set).
 */
weft__host_op *weft__host_op_alloc(weft__queue *q, size_t bytes,
                                   weft__host_op_kind kind);
/* Append op (from weft__host_op_alloc for q) to q's FIFO; the queue
 * recycles it once it has run. Lock-free; any thread. On a queue that
 * takes part in a capture, op becomes a node of the capture's graph. */
void weft__host_queue_push(weft__queue *q, weft__host_op *op);
/* Append op to q's FIFO whether or not q takes part in a capture: for
 * operations found outside any capture that must not become graph nodes
 * (event records and waits, graph launches), and for capture_push. */
void weft__host_queue_push_now(weft__queue *q, weft__host_op *op);
/* Run op (any kind but RECORD_EXT and WAIT_EXT) on hq's worker. */
void weft__host_op_run(weft__host_queue *hq, weft__host_op *op);

/* Signals (host_queue.c), for host_graph.c. */
weft__host_signal *weft__host_signal_new(long refs);
void weft__host_signal_release(weft__host_signal *s);
void weft__host_signal_raise(weft__host_signal *s);
void weft__host_signal_wait(weft__host_signal *s);
/* ev's current signal with a reference taken, or NULL if never recorded or
 * complete already. */
weft__host_signal *weft__host_event_pending(weft__host_event *he);
/* ev's current signal becomes s (whose reference it takes; NULL: ev reads
 * as never recorded); the old one is released. */
void weft__host_event_set(weft__host_event *he, weft__host_signal *s);
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
