/*
 * The executor (src/sched/): a launch of an executable graph runs on one
 * of the runtime's engine threads (engine.h), which issues the nodes in a
 * topological order, each kernel node on its placed device
 * (weft_graph_set_device) or the exec's default one, through the lowered
 * plan (plan.h): kernels on compute lanes, the transfers the coherence
 * tracker asks for on copy lanes, events between lanes where an edge needs
 * one, and the host waiting only where it touches the bytes itself. A
 * launch ends when everything it enqueued has completed (the plan's
 * drain), so that the buffers' trackers describe finished work between
 * launches.
 *
 * An executable graph owns copies of everything it needs from its graph
 * (nodes, accesses, arguments, the bytes of BYTES arguments, the order and
 * each node's predecessors), so the graph may be destroyed first.
 *
 * Launch protocol, under e->lock: launch counts the launch in `pending`
 * (and in each root's `inflight`) and, unless the graph's job is queued
 * or running already, queues it on the engine. The job runs one launch,
 * then ends the roots' inflight counts, decrements `pending`, broadcasts
 * `done`, and queues itself again while launches are pending (behind
 * other graphs' jobs), so a graph's launches run one at a time in the
 * order they came. Errors of
 * a run go to last_err (what status reports) and, if none is pending
 * report yet, to first_err (what the next wait reports, then forgets).
 *
 * Sharing roots with other graphs. The trackers count a transfer as done
 * once it is enqueued, so another graph touching a root between two of
 * this one's nodes must first wait for the work this one left on it: a
 * node leaves, under the root's lock, fence_owner = &e->lanes and (when
 * the root is named by several graphs) fence = an event after its work;
 * the end of the launch clears both. Lock order: a node's roots in address
 * order (then a device's extent list, in eviction); e->lock is never held
 * with a root's. A node that meets another graph's unfenced work (the
 * root was not shared when it was left) drops all its root locks and waits
 * on that root's idle condition for the other launch to end: that launch
 * needs none of this one's locks to finish, so the wait ends.
 *
 * Host nodes (maps, host tasks) run on the runtime's host workers
 * (hostwork.h) while the thread that carries the launch issues the nodes
 * that do not depend on them: at a host node, it readies the host copy
 * under the node's root locks as for any step (make_valid enqueues the
 * copies into it), marks what the node writes as written there at once
 * (so that no write-back or read of other bytes touches those host bytes
 * while the node runs: see weft_buffer.host_writers), and hands a host
 * worker the events the plan would have waited for (a ticket, plan.h).
 * The node is then in flight: weft__exec_pick treats it as not done, so its
 * successors wait. Finished nodes are noted by the carrying thread between
 * steps (the plan is the launch's alone, one thread at a time).
 *
 * Carrying a launch. An engine thread starts it, or a thread in
 * weft_exec_wait that takes the graph's job back from the engine before
 * any engine thread took it (so that launch and wait of a replay run on
 * the program's thread with no hand-off); when nothing can be
 * issued before a host node in flight finishes, that thread parks the
 * launch and goes back to the engine, and the host worker that finishes
 * the next node carries the launch on itself (weft__exec_advance): no
 * thread waits, and no hand-off goes through an issuing thread. A host
 * worker carrying a launch runs a host node itself, with no hand-off at
 * all, where no other host node is in flight (a chain of host tasks runs
 * on one thread). Host-side order moves with the launch (weft__exec_leave,
 * weft__exec_take, and the tokens of launch, wait and each host job), for
 * drivers that model the host per thread (the sim's virtual clock).
 *
 * A host node whose roots other graphs name runs on the carrying thread.
 * In a timed launch a host worker's steps go on a trace track of that
 * worker's own. If the wait for a handed-over node's inputs fails (device
 * work failed), the bytes it was to write stay marked written on the host
 * though the function never ran: the launch reports the failure, and
 * those bytes are undefined.
 */
#ifndef WEFT_SCHED_EXEC_H
#define WEFT_SCHED_EXEC_H

#include "../graph/graph.h"
#include "engine.h"
#include "hostwork.h"
#include "plan.h"

enum { WEFT__EXEC_MSG = 1024 };

/*
 * The state of a launch between the threads that carry it: when it began,
 * whether it is timed and had a snapshot for replays, its first failure
 * and that failure's detail, the next position in the order, the host-side
 * work count at its start, and its statistics sink.
 */
typedef struct weft__exec_run {
    uint64_t t0;
    int timed, have_snap, first;
    uint32_t next;
    int busy; /* told the host workers it runs (weft__hostwork_busy) */
    unsigned long effects0;
    weft__stat_sink sink;
    /* Per runtime device: what the thread that last carried the launch had
     * seen complete there (weft__drv_host_seen), for the next to join. */
    uint64_t *seen;
    char msg[WEFT__EXEC_MSG];
} weft__exec_run;

/* A buffer argument's device address in the last issue of its node. */
typedef struct weft__arg_at {
    weft__mem *mem;
    size_t off;
} weft__arg_at;

/*
 * One call of a native node's function, as the driver's native_call is
 * handed it (exec_run.c): what weft_native_ctx is made of. It holds no
 * pointer into itself, so that a submission may copy it and compare two
 * (tape.h): the call of a capturable node is made again with the copy.
 */
typedef struct weft__native_call {
    weft_native_fn *fn;
    void *user;
    const char *driver;
    const weft_device *device;
    const char *dev_name;
    const weft__access *acc; /* the executable graph's: n of them */
    weft__queue *q;
    uint32_t node, n, what, dev;
    /* The node's job where the call was enqueued to run on a driver's
     * thread (weft__run_native), else NULL. */
    struct weft__host_job *report;
    weft__native_mem mem[]; /* n */
} weft__native_call;

struct weft_exec {
    weft_runtime *rt;
    unsigned device;    /* the default device */
    unsigned *node_dev; /* per node: where a kernel or copy node runs */
    /* per node: for a write or fill node, where its first kernel after it
     * runs (the copy it writes), else WEFT__HOST */
    unsigned *write_dev;
    int policy;            /* weft_place_policy used, 0 if a device given */
    unsigned devices_used; /* by placement, 0 if all on the default */
    unsigned replace;      /* place again once the kernel times are learned */
    int native;            /* weft_exec_options.native_graphs */
    int priority;          /* weft_exec_options.priority */
    int scope;             /* placement's weft_place_scope, not DEFAULT */

    /*
     * The graph's nodes and accesses: its arrays themselves where share is
     * set (read only: the graph copies them before it changes them), else
     * copies of them.
     */
    const weft__node *nodes;
    uint32_t nnodes;
    const weft__access *acc;
    uint32_t nacc;
    weft__acc_run *runs; /* the accesses' runs of one buffer (graph.h) */
    uint32_t nruns;
    weft__graph_share *share;
    weft_arg *args;
    unsigned char *bytes;
    weft__raw *raws;      /* per node: the writers it reads from (graph.h) */
    uint32_t *order;      /* a topological order of the nodes */
    uint32_t *pred_first; /* nnodes + 1: preds[pred_first[i], [i + 1]) */
    uint32_t *preds;
    uint32_t *lock_first; /* nnodes + 1: the roots a node locks, sorted */
    uint32_t *locks;      /* ... by address, as indices into roots */
    /* Parallel to locks: how many nodes later in the order (wrapping into
     * the next launch) the root is used again; eviction keeps the near. */
    uint32_t *lock_next;
    uint32_t *root_first; /* nroots: a root's first use in the order */
    int issue_state;      /* the four above made (weft__exec_issue_state) */
    int host_only;  /* every node may go with no issue (graph's nissued 0) */
    int host_tasks; /* some node runs on the host workers (host, map) */
    weft_buffer **roots;
    uint32_t nroots;

    /* The running launch's own: */
    weft__karg *kargs;        /* max kernel arguments */
    weft__arg_at *arg_at;     /* per argument, as args */
    weft__span *spans;        /* max kernel arguments or node accesses */
    void **ptrs;              /* max host-task accesses */
    weft__native_call *ncall; /* with max node accesses' mem */
    unsigned char *state;     /* per node, during a run */
    weft__lanes lanes;        /* with the plan's hooks */
    weft__plan *plan;
    weft__plan_memcpy *copies; /* per node: a read node's host function */
    weft__event **fences;      /* nroots * ndevices, see weft_buffer.fence */
    /*
     * Replays: every root's tracker state (weft__buffer_state) at the start
     * of the last launch (snap), and after the last launch that ran as its
     * native graph unchanged and ended in the state it began in (steady,
     * valid when steady_ok). A launch that finds the roots in the steady
     * state would issue exactly that graph again: it replays it instead.
     */
    unsigned char *snap, *steady;
    size_t snap_len, snap_cap, steady_len, steady_cap;
    int steady_ok;
    /* The next launch begins with a lookahead (exec.c); the steady state
     * came from a lookahead not replayed yet; lookaheads whose launch did
     * not replay (none are made after one). */
    int ahead_want;
    int ahead;
    unsigned ahead_missed;
    weft_stats replay_stats; /* what the steady launch added to rt->stats */
    /*
     * Maps and host tasks on the host workers (hostwork.h): a job per such
     * node, made when first handed over (NULL until then); host_out of
     * them not finished yet (the issuer's count). A host worker that has
     * finished one pushes it on `finished` under host_lock; the issuer
     * takes the list (an atomic load peeks at it). parked (host_lock): the
     * issuer left the launch with nothing to issue before a host node
     * finishes; the worker that pushes next clears it and carries the
     * launch on itself (weft__exec_advance). host_done is broadcast at
     * every push (for an issuer that waits for them all: wait_room).
     * Native nodes whose calls run on a driver's thread (native_enqueue)
     * are in flight the same way, counted in host_out, their jobs pushed
     * by that thread; where it finds the launch parked, it hands the
     * launch on to a host worker (a driver's thread must not block).
     */
    struct weft__host_job **jobs;
    uint32_t host_out;
    struct weft__host_job *finished;
    struct weft__host_job *inline_job; /* the issuer runs it next */
    unsigned parked;
    /* The step being issued enqueued its native call (weft__run_native):
     * the node is in flight once the step ends; native_out of host_out
     * are such nodes. The issuer's. */
    unsigned native_sent;
    uint32_t native_out;
    pthread_mutex_t host_lock;
    pthread_cond_t host_done;
    /*
     * Launches of a graph of host tasks, maps and empty nodes alone whose
     * bytes are where they must be (weft__exec_fast): no issue at all.
     * fast: 0 not known yet, -1 never, 1 the graph's nodes allow it. Per
     * node: its task and pending count, a cache line each; per
     * access its host address; remaining (atomic) nodes not finished;
     * successors: the plan's lists (weft__plan_succs), taken at each
     * launch.
     */
    int fast;
    struct weft__fast_task *fast_tasks;
    void **fast_ptrs;
    const uint32_t *fast_succ_first, *fast_succs;
    /*
     * The roots, which runners (fast_runners, one per worker at most) claim
     * in chunks from fast_next_root rather than each going through the
     * pool: a launch's nodes plus its runners are what fast_remaining
     * counts down.
     */
    uint32_t *fast_roots, fast_nroots, fast_chunk;
    /*
     * What a launch claims, per root the nodes touch (made with the
     * tasks, weft__fast_prepare): the union of the bytes read and of
     * those written, so that a launch checks and marks a few regions per
     * root, not every access; past WEFT__FAST_CLAIM_MAX regions a side
     * is its hull instead (exec_fast.c). fast_claims is NULL where memory
     * ran out: the claim goes access by access then.
     */
    struct weft__fast_union *fast_claims;
    uint32_t fast_nclaims;
    struct weft__fast_task *fast_runners;
    unsigned fast_nrunners;
    /* Lines of their own: every worker changes them (e is so aligned). */
    _Alignas(WEFT__CACHE_LINE) uint32_t fast_next_root;
    _Alignas(WEFT__CACHE_LINE) uint32_t fast_remaining;
    _Alignas(WEFT__CACHE_LINE) uint64_t fast_launches; /* e->lock: launches
                                                          that went so */
    /* The launch in progress (weft__exec_job, weft__exec_advance). */
    weft__exec_run run;
    /* e->lock: what the threads that launched had seen, per device, for
     * the thread that starts the launch (weft__exec_take's tokens). */
    uint64_t *launch_seen;

    /*
     * Launches: `pending` counted by launch, uncounted when one ends;
     * `queued` while the job is on the engine or running (one launch at a
     * time: the job queues itself again while launches are pending).
     * `waiters`: threads inside weft_exec_wait or weft_exec_set_arg, which
     * weft_exec_destroy lets leave before it frees e (each broadcasts
     * `done` as it leaves).
     */
    pthread_mutex_t lock;
    pthread_cond_t done;
    /*
     * e->lock: launches made (weft_exec_launch counts them) and started
     * (the job counts them), and the marks of programs' queues that
     * launches wait for before their issue (weft_exec_launch_after), in
     * launch order.
     */
    uint64_t made, started;
    struct weft__exec_after *after, *after_tail;
    weft__engine_job job;
    unsigned queued;
    unsigned waiters;
    unsigned long pending;
    int first_err, last_err;
    weft__plan_counts counts;              /* of the last launch that ended */
    weft__plan_lane_count lane_counts[64]; /* ... and its lanes */
    unsigned nlane_counts;
    uint64_t launches;        /* that ended */
    uint64_t last_ns;         /* the last one's host time, issue to end */
    uint64_t native_launches; /* that ran as one native graph */
    uint64_t replays;         /* ... of which with no issue at all */
    uint64_t native_updates;  /* native graphs updated for new parameters */
    unsigned native_graphs;   /* driver graphs of a native launch */
    unsigned timed;           /* the last launch was */
    /*
     * weft_exec_enable_timings: `timings` (atomic) is read at each
     * launch's start. Under e->lock: node_times (4 per node: first start
     * and last end, from the launch's start, busy time, and 1 if timed; made by
     * the first enable), filled by the end of a launch that kept node times,
     * which sets times_valid (any other end clears it).
     */
    unsigned timings;
    uint64_t *node_times;
    unsigned times_valid;
    char first_msg[WEFT__EXEC_MSG], last_msg[WEFT__EXEC_MSG];
};

/* ---- shared by exec*.c ------------------------------------------------- */

enum {
    WEFT__NODE_PENDING = 0,
    WEFT__NODE_DONE,
    WEFT__NODE_FAILED,
    WEFT__NODE_CANCELED,
    WEFT__NODE_INFLIGHT, /* a host node on a host worker */
};

/* run_node: the node went to a host worker. */
enum { WEFT__HANDED_OVER = 1 };

/*
 * A map or host node handed to a host worker, or a native node whose call
 * runs on a driver's thread: the task first (the pool's link). Set by the
 * exec's worker before the hand-over, read by the thread that runs it; rc
 * and msg set by that thread, read after `finished`. A native node's task
 * carries the launch on, on a host worker, where its report found the
 * launch parked.
 */
typedef struct weft__host_job {
    weft__host_task task;
    weft_exec *e;
    uint32_t node;
    int rc;
    weft__plan_ticket ticket;
    void **ptrs;      /* the node's accesses in the host copy */
    uint64_t t0, t1;  /* the host clock around the function */
    int worker;       /* the worker that ran it */
    unsigned polling; /* a poll task between its calls (its worker's) */
    uint64_t *seen;   /* per device: what its worker had seen at the end */
    struct weft__host_job *next;
    /*
     * A native node whose call runs on a thread of its driver
     * (native_enqueue, weft__run_native): its call (no ticket, no ptrs),
     * and armed (atomic) from the enqueue until the call reports (the
     * first call of it that finds armed set, and clears it, reports).
     */
    weft__native_call *call;
    unsigned armed;
    unsigned native;
    char msg[256];
} weft__host_job;

/* Instantiate's clean-up, also destroy's (exec_build.c). */
void weft__exec_free(weft_exec *e);
/* Free the host jobs (their tickets are sized for the plan). */
void weft__exec_free_jobs(weft_exec *e);
/*
 * e->write_dev from node_dev: a write or fill node stores into the device
 * of the first kernel that follows it by an edge.
 */
void weft__exec_build_write_dev(weft_exec *e, const unsigned *node_dev);
/*
 * What only issued launches read: each node's roots to lock in order
 * (lock_first, locks), their next uses (lock_next, root_first) and
 * write_dev. Instantiate makes it unless every node may go with no issue
 * (weft_graph's nissued); then the first launch that is issued makes it.
 * 0 or WEFT_ENOMEM.
 */
int weft__exec_issue_state(weft_exec *e);
/*
 * Issue node i (exec_run.c): 0, a weft error, or WEFT__HANDED_OVER when a
 * host worker runs it. Where the node's device memory is held by other
 * launches' work in flight, it waits for them (weft__exec_wait_room).
 */
int weft__exec_run_node(weft_exec *e, uint32_t i);
/*
 * A launch of rt starts (delta 1) or ends (-1, which wakes the launches
 * waiting for room).
 */
void weft__exec_running(weft_runtime *rt, int delta);
/*
 * The next node to issue, from position next of the order: the first whose
 * predecessors are all issued and finished, preferring one that need not
 * wait on the host; WEFT__NONE if every such node waits for a host node
 * in flight.
 */
uint32_t weft__exec_pick(weft_exec *e, uint32_t next);
/*
 * Note the host nodes that finished; the first failure goes to *first and
 * msg.
 */
void weft__exec_host_finished(weft_exec *e, int *first, char *msg, size_t size);
/*
 * Issue the launch in progress on from where it stands, on the calling
 * thread: until every node is issued, then its end (the drain, the errors,
 * the job queued again while launches are pending); or until nothing can
 * be issued before a host node in flight finishes, when it parks the
 * launch and returns. One thread at a time carries a launch: the engine
 * thread that started it, then a host worker that found it parked.
 */
void weft__exec_advance(weft_exec *e);
/*
 * The launch in progress, if it can go without an issue (every node a
 * host task, map or empty node; not timed; no root shared with another
 * executable graph; host workers; every range read valid on the host):
 * the nodes go to the host workers as their predecessors finish, each
 * worker starting the ones its node made ready (the first on itself), and
 * whoever finishes the last ends the launch. 1 if it went so, 0 if the
 * launch must be issued (nothing done).
 */
int weft__exec_fast(weft_exec *e, int shared);
/* The end of a launch that went so (exec.c). */
void weft__exec_fast_end(weft_exec *e);

/* The root's first byte of access a. */
static inline size_t weft__acc_origin(const weft__access *a)
{
    return a->buf->offset + a->offset;
}
/* Tracker updates that weft__acc_written of a makes (for reserve). */
static inline uint64_t weft__acc_updates(const weft__access *a)
{
    return (uint64_t)a->rows * a->slices;
}
/* Access a written in copy where (ok), or its bytes there unknown. */
void weft__acc_written(const weft__access *a, unsigned where, int ok);
/*
 * One root's part of a fast launch's claim: the bytes its nodes read and
 * those they write, each a set of disjoint ranges in address order (h ==
 * 1, merged where they touch) followed by the slices of blocks as they
 * are; updates: what marking the writes costs the tracker (reserve).
 */
/*
 * One side of a root's claim (what its nodes read, or what they write):
 * sorted disjoint ranges v[0, nranges), then block slices up to n; or,
 * past a limit of regions (hull set, exec_fast.c), the one range around
 * them all.
 */
typedef struct weft__fast_side {
    weft__region *v;
    uint32_t n, nranges, cap;
    uint32_t hint; /* the range the last add fell in */
    unsigned hull;
} weft__fast_side;
typedef struct weft__fast_union {
    uint32_t root;
    weft__fast_side rd, wr;
    uint64_t updates;
} weft__fast_union;
/* Free fast_claims (instantiate's clean-up, destroy's). */
void weft__exec_fast_free_claims(weft_exec *e);
/*
 * Each access's buffer referenced (sign 1) or released (-1) by e, one
 * atomic change per run of accesses to the same buffer.
 */
void weft__exec_acc_refs(weft_exec *e, long sign);
/*
 * Hand the launch's host-side order from the thread that carried it
 * (weft__exec_leave, before another thread can take it) to the one that
 * takes it on (weft__exec_take): a driver that models the host per thread
 * (the sim's virtual clock) learns that the second has seen what the
 * first had.
 */
void weft__exec_leave(weft_exec *e);
void weft__exec_take(weft_exec *e);
/* The same for any set of tokens (one per runtime device). */
void weft__exec_seen_save(weft_exec *e, uint64_t *seen);
void weft__exec_seen_join(weft_exec *e, const uint64_t *seen);

/* What the plan did in the last launch that ended (tests, tools). */
void weft__exec_plan_counts(weft_exec *e, weft__plan_counts *c);

#endif /* WEFT_SCHED_EXEC_H */
