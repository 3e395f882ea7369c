/*
 * The host driver: devices are the CPU, queues are serial FIFOs of
 * operations that a bounded set of runner threads per platform runs
 * (weft__host_runners), kernels are C functions run once per work-group on
 * a per-context thread pool.
 *
 * Each host device has memory of its own (separate allocations), so that
 * copies between host devices are real copies and the layers above see the
 * same protocol as with discrete GPUs.
 *
 * Locks. There are six kinds and no code path holds two at once:
 * - host_queue.lock: syncs and the queue's stop (the FIFO itself is
 *   lock-free, and so is a busy queue's scheduling: see weft__host_queue).
 * - host_runners.lock: the runnable list, the runners' sleep and start.
 * - host_pool.idle.lock: the pool's list of open launches and their
 *   counts, and its idle helpers' sleep.
 * - the signal lock (host_queue.c): every signal's state, its parked
 *   queues, and every event's current signal pointer.
 * - the capture lock (host_graph.c): every capture, and the cap pointers
 *   of queues and events.
 * - the graph wait lock (host_graph.c): a graph's runner asleep until a
 *   node finishes.
 * Because none nests (a raise collects the queues it unparks under the
 * signal lock and posts them after it), there is no lock order to get
 * wrong; keep it so.
 */
#ifndef WEFT_HOST_INTERNAL_H
#define WEFT_HOST_INTERNAL_H

#include "../driver.h"
#include "../hostcc.h"
#include "../../base/deque.h"
#include "../../base/idle.h"
#include "../../base/ring.h"

#include <pthread.h>

#define WEFT__HOST_ALIGN 64 /* alignment of every memory allocation */

typedef struct weft__host_device {
    weft__device base;
    unsigned nthreads; /* threads that run one launch, its runner included */
} weft__host_device;

/*
 * One launch being spread over a pool. It lives inside the launch operation
 * of the queue whose runner owns it; helpers touch it only while counted in
 * active, and the owner does not return before active is 0 and the job is
 * off the list.
 */
/*
 * The first failure of native calls that ran on several threads: the
 * first to claim it (claimed, atomic exchange) writes msg, then code
 * (release); the reader (a queue_sync, or a graph's runner at the end of
 * its launch, once no call runs) reads code (acquire), then msg, and
 * clears both.
 */
typedef struct weft__host_fail {
    int code; /* weft code; 0: none */
    unsigned claimed;
    char msg[256];
} weft__host_fail;

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
    /*
     * A posted job (weft__host_pool_post; NULL done: one run by its
     * owner): finished counts the groups run (atomic), and whoever runs
     * the last one calls done(job), and runs the job of one group it
     * returns (a successor it made ready), if any. Its slots are 0..nslots-1,
     * all taken by joiners; owner names who posted it (weft__host_pool_reap).
     */
    struct weft__host_job *(*done)(struct weft__host_job *job);
    /*
     * A native call (WEFT__HOST_OP_NATIVE: fn NULL, one group): running
     * its group calls native(NULL queue, native_user), and a non-zero
     * return goes to *failed (weft__host_native_run).
     */
    weft__native_fn *native;
    void *native_user;
    struct weft__host_fail *failed;
    const void *owner;
    unsigned *joined; /* the owner's count of threads inside; pool lock */
    uint64_t finished;
    uint32_t node; /* the owner's, for done */
    /*
     * Where not NULL, the job's groups are not a kernel's: group id runs
     * each(job, id) (a native graph's launch hands out its first nodes
     * so, host_graph.c).
     */
    void (*each)(const struct weft__host_job *job, uint64_t id);
} weft__host_job;

struct weft__host_pool;

/* A helper thread of a pool. */
typedef struct weft__host_helper {
    /*
     * The jobs of one group it made ready (a done's successors): it pops
     * them itself, newest first, and idle threads steal them, oldest first.
     */
    weft__deque own;
    struct weft__host_pool *pool;
    /* A job of the list its idle look joined, and its slot there. */
    weft__host_job *shared;
    unsigned slot;
    pthread_t tid;
} weft__host_helper;

typedef struct weft__host_pool {
    /*
     * Idle helpers (base/idle.h); its lock is the pool lock too: the list
     * of jobs and their counts. drained: owners wait on it for a job's
     * (or their graph's) helpers to leave.
     */
    weft__idle idle;
    pthread_cond_t drained;
    /*
     * Posted jobs of one group from threads other than helpers, which one
     * thread runs whole: taken from a lock-free ring, with no slot and no
     * count (whoever takes one touches it no more once its done has
     * stamped it).
     */
    weft__ring single;
    weft__host_job *jobs;
    unsigned nhelpers;      /* started */
    unsigned nhelpers_made; /* with their deques */
    weft__host_helper *helpers;
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
    weft__hostcc_lib *lib; /* a portable module's shared object, or NULL */
} weft__host_module;

struct weft__host_capture;
struct weft__host_graph;
struct weft__host_queue;

/*
 * The completion of one record: shared by the event (until re-recorded or
 * destroyed), the record operation (until it has run) and every wait on it
 * (until it has waited). refs is atomic; done, time_ns and parked are
 * written under the signal lock, and done is read atomically by queries.
 */
typedef struct weft__host_signal {
    long refs;
    int done;
    uint64_t time_ns; /* weft__now_ns() when the recorded work completed */
    /* Queues whose next operation waits for it, linked by park_next; the
     * raise posts them to their runners. */
    struct weft__host_queue *parked;
} weft__host_signal;

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
    WEFT__HOST_OP_STOP,       /* a queue's last (queue_release) */
    WEFT__HOST_OP_NATIVE,     /* a native call (native_enqueue), in u.job */
    WEFT__HOST_OP_COPY_RECT,  /* a block, row by row */
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
            unsigned char *dst; /* the bases; offsets in rect */
            const unsigned char *src;
            weft__rect rect;
        } rect;
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
            /* 1 once the launch has begun: a run after a park resumes */
            unsigned begun;
        } graph;
        struct {
            weft__host_event *ev;
            unsigned slot; /* in the launch's signals */
        } ext;
    } u;
} weft__host_op;

/*
 * The runners of a platform: threads, shared by every queue of its
 * devices, that run the queues with work. A queue with work and no runner
 * is on the runnable list (FIFO, except that a queue of high priority,
 * desc.priority -1, goes behind the high ones at its head); a runner
 * takes the first, runs its
 * operations in order, and gives it back when its FIFO is empty (after
 * watching it a while, see weft__host_queue), when its next operation
 * waits for a signal not raised yet (the queue parks on the signal, whose
 * raise posts it again: no runner blocks on a wait, so no extra thread is
 * ever needed to make progress), or, when other queues wait on the list,
 * after a quantum (WEFT__HOST_QUANTUM_OPS operations or
 * WEFT__HOST_QUANTUM_NS), behind them.
 *
 * Size: max(2, threads per device, 2 x devices), all started by the
 * platform's first queue_create (a queue_create that cannot start them
 * fails; those started stay and the next tries again), joined by
 * platforms_close. So threads do not grow with queues, nor with load
 * after the first queue. A host function, kernel or native function
 * (native_enqueue runs it as its queue's operation) that blocks holds its
 * runner: at least two runners let two queues' work overlap (a kernel on
 * one queue that waits for a host function of another), and a host
 * function must not wait for work of more queues than that.
 *
 * Waking. nlooking counts the runners that will look at the list before
 * they sleep: a runner whose watch of its empty queue has begun to
 * yield (queue_run), or one about to take from the list. A post (under lock)
 * appends, bumps nrunnable, and wakes a sleeper only if none is looking
 * (nrunnable and nlooking are seq_cst on both sides): a runner that stops
 * looking because its own queue got work reads nrunnable after its decrement
 * and, if a queue waits, passes the wake-up on. So no post is left without a
 * runner to take it, and a queue posted while runners spin costs no system
 * call. wakeups counts wake-ups given and not yet taken, so that one sleeper is
 * not woken twice for two posts.
 */
typedef struct weft__host_runners {
    /* Written by posts and takes; nrunnable is read by every owner. */
    pthread_mutex_t lock;
    pthread_cond_t wake; /* sleepers wait for a wake-up or stop */
    struct weft__host_queue *first, *last; /* runnable list; lock */
    unsigned nrunnable; /* on the list; atomic, written under lock */
    unsigned nsleeping; /* lock */
    unsigned wakeups;   /* lock */
    unsigned stopping;  /* lock */
    unsigned size;      /* threads to start */
    unsigned nthreads;  /* started; lock */
    pthread_t *threads; /* size of them */
    char pad0[64];
    /* Written as runners start and stop looking. */
    unsigned nlooking; /* atomic */
    char pad1[64];
} weft__host_runners;

typedef struct weft__host_platform {
    weft__platform base;
    weft__host_runners runners;
} weft__host_platform;

/*
 * A queue: a FIFO of operations that runners run in order, one runner at
 * a time (the queue's owner).
 *
 * FIFO. An intrusive lock-free list with many producers and one consumer
 * (D. Vyukov's): producers swap themselves into tail (atomic exchange),
 * then link the previous tail's next to themselves (release). The owner
 * alone moves head, which is the last op taken (stub at first): it takes
 * head's next once linked, and that op becomes the head, while it runs
 * and after, until the op after it is taken. So the owner never writes
 * tail, and an op is recycled only once no producer can still link after
 * it. Between a producer's exchange and its link the list looks cut
 * there: the owner waits for the link. Every next of an op in the list is
 * accessed atomically.
 *
 * Scheduling. sched holds submitted << 1 | active. submitted: ops pushed
 * (bumped before a producer's exchange, so that every op ahead of a given
 * one in the FIFO is counted once that one is). active: some runner is
 * responsible for the queue (it is on the runnable list, owned, or parked
 * on a signal). A push adds 2 (seq_cst) and links; if the value it
 * replaced had active clear, it sets it (fetch_or) and the one that set
 * it posts the queue. An owner gives the queue up with one compare-and-
 * swap from taken << 1 | 1 to taken << 1: it fails if a push came since
 * (the owner runs it), and once it succeeds the owner touches the queue
 * no more. Both are read-modify-writes of one word, so a push and a
 * release cannot miss each other, and there is no window between "idle"
 * and "re-check". (acq_rel: the next owner, through the pusher and the
 * list lock, sees what the last one wrote.) Fields marked owner pass from
 * one owner to the next that way, through the list lock, or through the
 * signal lock of a park.
 *
 * Counts. taken: ops the owner took off (<= submitted); completed: ops
 * run (seq_cst, after running, so that a sync that sees it sees their
 * effects). A sync waits for completed to reach submitted as it found it.
 * Syncs sleep under lock with syncers set (seq_cst); the owner, after
 * each op, reads syncers (seq_cst) and, if set, wakes them under lock.
 *
 * Watching. An owner whose FIFO is empty pauses, then yields the core,
 * watching the FIFO for up to WEFT__HOST_SPIN_NS before giving the queue
 * up (a queue kept busy costs no lock and no system call per op). When
 * other queues wait on the runnable list it wakes a sleeping runner for
 * each and watches on, so that runners stay with the queues they ran
 * (independent kernels spread over many queues cost no post per op);
 * with no sleeper to wake, it serves them first.
 *
 * Stop. queue_release pushes stop (the queue's last op) and waits under
 * lock for stopped; the owner that takes it sets stopped under lock and
 * leaves the queue active and alone.
 *
 * Recycling. The owner keeps the ops it is done with on spare (up to
 * WEFT__HOST_SPARE; it frees the rest), and hands the whole list over in
 * ready when ready is empty (a batch at a time while busy, whatever it
 * has when idle). weft__host_op_alloc takes ops from cache, refilled with
 * all of ready at once (one atomic exchange per batch); cache belongs to
 * the allocating thread that holds cache_busy (atomic exchange), and a
 * thread that finds it held allocates. So the enqueueing thread neither
 * locks nor calls malloc in the usual case, and the lines the two sides
 * write are apart.
 */
typedef struct weft__host_queue {
    weft__queue base;
    /* Written seldom: at create and stop, by syncs, posts and parks. */
    weft__host_runners *runners; /* its platform's */
    pthread_mutex_t lock;        /* for syncing and stopping */
    pthread_cond_t idle;         /* syncs and release wait here */
    unsigned syncers;            /* syncs waiting; atomic, written under lock */
    unsigned stopped;            /* lock */
    struct weft__host_queue *run_next;  /* runnable list; runners' lock */
    struct weft__host_queue *park_next; /* a signal's parked; signal lock */
    /* The capture it takes part in, or NULL; written under the capture
     * lock, read atomically (by every push). */
    struct weft__host_capture *cap;
    char pad0[64];
    /* Written by enqueueing threads. */
    weft__host_op *tail;  /* the last op linked or being linked; atomic */
    uint64_t sched;       /* submitted << 1 | active; atomic */
    unsigned cache_busy;  /* atomic */
    weft__host_op *cache; /* ops to allocate; cache_busy */
    char pad1[64];
    /* Written by both, once a batch each. */
    weft__host_op *ready; /* spare ops handed over, or NULL; atomic */
    char pad2[64];
    /* Written by the owner. */
    weft__host_op *head;    /* the last op taken, or stub; owner */
    weft__host_op *pending; /* taken, parked, to run again; owner */
    uint64_t taken;         /* owner */
    uint64_t completed;     /* atomic */
    weft__host_op *spare;   /* ops done with, for reuse; owner */
    unsigned nspare;        /* owner */
    /* The first native call run here, or in a graph launched here, that
     * failed, for the next queue_sync. */
    weft__host_fail failed;
    char pad3[64];
    weft__host_op stub;
    weft__host_op stop;
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
int weft__host_graph_node_last(weft__queue *q, uint32_t *node);
int weft__host_graph_order(weft__queue *q, const uint32_t *nodes, unsigned n);
int weft__host_graph_wait_later(weft__queue *q, weft__event *ev);
/*
 * The roots a graph's launches posted as their roots jobs, over all its
 * launches so far (read once a launch has been synced: tests).
 */
uint64_t weft__host_graph_roots_posted(const void *graph);
int weft__host_graph_reaches(const void *graph, uint32_t from, uint32_t to);
/* A graph's nodes and edges (tests), and node i's edges: *n nodes it
 * waits for, in the array returned. */
size_t weft__host_graph_nodes(const void *graph);
size_t weft__host_graph_edges(const void *graph);
const uint32_t *weft__host_graph_deps(const void *graph, size_t i, size_t *n);
/*
 * Run a GRAPH op's nodes from op->u.graph.pos, for the owner of the queue
 * it was launched on: 0 when all have run, 1 when the queue parked on a
 * wait node (pos is that node; the op runs again once posted).
 */
int weft__host_graph_run(weft__host_queue *hq, weft__host_op *op);
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
/*
 * Post job (its done set) for the helpers and return: whoever runs its
 * last group calls done. weft__host_pool_help lets the caller work on an
 * open job meanwhile (1 if it did, 0 if none was open). Before the owner
 * reuses or frees its posted jobs, weft__host_pool_reap(pool, owner, ...)
 * takes them off the list and waits until no helper is inside any.
 */
void weft__host_pool_post(weft__host_pool *pool, weft__host_job *job);
int weft__host_pool_help(weft__host_pool *pool);
/* Post job (its done set) of one group if the pool has room (on a helper,
 * its own deque, else the ring): 1 if it did, 0 if not (the caller runs
 * it, weft__host_pool_run_here). */
int weft__host_pool_offer(weft__host_pool *pool, weft__host_job *job);
/* Run a job of one group that would have been posted, here. */
void weft__host_pool_run_here(weft__host_job *job);
void weft__host_pool_reap(weft__host_pool *pool, const void *owner,
                          const unsigned *joined);
/*
 * Whether a job is open for another thread: a hint for one of one group
 * (the ring and the helpers' deques, read with no lock), the list's under
 * the pool lock.
 */
int weft__host_pool_open(weft__host_pool *pool);
/*
 * A native graph's launch starts (delta 1) or ends (-1): while one runs,
 * idle helpers poll for its jobs rather than sleep (base/idle.h).
 */
void weft__host_pool_busy(weft__host_pool *pool, int delta);
int weft__host_launch(weft__queue *q, weft__kernel *k, const weft__grid *grid,
                      const weft__karg *args, unsigned nargs);

/* host_queue.c */
int weft__host_runners_init(weft__host_runners *r, unsigned size);
/* Stop and join the runners (platforms_close: no queue is left). */
void weft__host_runners_fini(weft__host_runners *r);
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
/*
 * Run op (any kind but RECORD_EXT, WAIT_EXT and STOP) for hq's owner: 0
 * once run, 1 when hq parked on a signal (op is to run again).
 */
int weft__host_op_run(weft__host_queue *hq, weft__host_op *op);
/*
 * For hq's owner, before op (taken, a wait or a graph launch) goes on: 0
 * if s is raised, else 1: hq is parked on s, with op to run again once
 * the raise has posted hq; the owner leaves hq at once.
 */
int weft__host_queue_park(weft__host_queue *hq, weft__host_op *op,
                          weft__host_signal *s);

/* Signals (host_queue.c), for host_graph.c. */
weft__host_signal *weft__host_signal_new(long refs);
void weft__host_signal_release(weft__host_signal *s);
/* Raise s: its waiters return, its parked queues are posted. */
void weft__host_signal_raise(weft__host_signal *s);
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
int weft__host_copy_h2d_rect(weft__queue *q, weft__mem *dst, const void *src,
                             const weft__rect *r);
int weft__host_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                             const weft__rect *r);
int weft__host_copy_d2d_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                             const weft__rect *r);
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
/* native_enqueue (driver.h): an op that calls fn, or in a capture a node. */
int weft__host_native_enqueue(weft__queue *q, weft__native_fn *fn, void *user);
/* Run a NATIVE op's job (on any thread): its failure to job->failed. */
void weft__host_native_run(const weft__host_job *job);
/* The first failure f holds as the calling thread's error (f cleared), or 0. */
int weft__host_fail_take(weft__host_fail *f);

#endif /* WEFT_HOST_INTERNAL_H */
