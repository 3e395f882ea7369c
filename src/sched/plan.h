/*
 * The lowered plan of an executable graph (src/sched/): lanes, the order
 * between them, and the events that carry it.
 *
 * Lanes. Each device has compute lanes (weft__plan_compute_lanes: two, or
 * on a CPU device that runs kernels side by side one per compute unit, up
 * to WEFT__COMPUTE_LANES - 1), a high-priority compute lane
 * (WEFT__HIGH_LANE), an H2D lane, a D2H lane and a peer lane, each one
 * driver queue (in order), created when first used and kept for the life
 * of the executable graph. A device with one copy engine (or none) copies
 * on one lane for every direction; with two, D2H and peer copies share
 * one. One more lane stands for the host thread that issues the plan (it
 * has no queue). A device's lanes lie side by side in the plan (a GPU has
 * 6, a CPU device of P compute units P + 4), so that the vector clocks
 * below, nlanes wide, hold only lanes that exist; readers outside the
 * plan name a lane device * WEFT__LANE_SLOTS + slot.
 *
 * Lowering, at instantiate: every kernel and device copy node gets a
 * compute lane of its device: a node of high priority the high lane, any
 * other a normal one. A normal node that can continue the chain of a
 * same-device predecessor (the latest first) whose normal lane it would
 * follow directly keeps that lane; any other takes the normal lane whose
 * last node came earliest (an empty one first), so that independent
 * kernels overlap, a chain costs no event, and the order of a lane (an
 * edge of a native graph) rarely holds a node behind one of its own step.
 * Predecessor lists are sorted latest first, so that waiting for the
 * latest one makes the older ones implied.
 *
 * Issue, on the executor's worker, one node (a step) at a time in the
 * graph's order: the transfers the coherence tracker asks for go to the
 * copy lanes of the device they fill (through the buffer layer's lane
 * hooks), the kernel to its compute lane, and nothing waits on the host
 * unless the host itself needs the bytes (a map, a host task, a write
 * into the host copy) or a failure leaves no other way.
 *
 * Order. Every lane L keeps a vector clock vc_L: vc_L[X] = s means work
 * enqueued on L from now on is known to run after the first s operations
 * of lane X (waits count as operations). A node's stamp is its final lane
 * and that lane's clock after it. Before a lane does work for a node it
 * needs each predecessor's stamp: nothing if the lane is the stamp's own
 * (in-order) or its clock (or the host's) already covers it (the edge is
 * implied: the transitive reduction, counting the lane order), else one
 * queue_wait_event on the stamp's event. A node records its event right
 * after its work when the plan says a successor lies on another lane;
 * otherwise on demand, when first needed. The work of one node spread
 * over several lanes (copies, then a kernel) joins on its final lane the
 * same way. Events come from a pool per device, reused once a drain has
 * seen everything complete.
 *
 * Copies into the host copy of a buffer (D2H) stay pending by range until
 * known complete, so that a later reader of those host bytes (an H2D copy
 * on some lane, or the host) is ordered after them.
 */
#ifndef WEFT_SCHED_PLAN_H
#define WEFT_SCHED_PLAN_H

#include "../graph/graph.h"

/*
 * WEFT__COMPUTE_LANES: the compute slots of a device (the slots of a
 * device's lanes are its compute lanes, then H2D, D2H, peer); a GPU has
 * WEFT__GPU_COMPUTE_LANES normal ones, a CPU device at most
 * WEFT__COMPUTE_LANES - 1. The last compute slot, WEFT__HIGH_LANE, is the
 * high-priority lane: the nodes of WEFT_PRIORITY_HIGH
 * (weft_graph_set_priority) go there, in issue order, and its queue has
 * the device's highest priority.
 */
enum {
    WEFT__COMPUTE_LANES = 64,
    WEFT__HIGH_LANE = WEFT__COMPUTE_LANES - 1,
    WEFT__GPU_COMPUTE_LANES = 2,
    WEFT__LANE_SLOTS = WEFT__COMPUTE_LANES + 3
};

/*
 * The compute lanes of dev: a CPU device whose kernels run side by side
 * (the host driver's, a CPU OpenCL device) gets one per compute unit, from
 * 2 to WEFT__COMPUTE_LANES - 1, so that independent kernels of one work-group
 * each keep a core busy; any other WEFT__GPU_COMPUTE_LANES.
 */
unsigned weft__plan_compute_lanes(const weft__device *dev);

/* What a plan did, over one launch. */
typedef struct weft__plan_counts {
    uint64_t events;     /* events recorded to order work across lanes */
    uint64_t waits;      /* queue_wait_event calls */
    uint64_t host_syncs; /* waits by the host for device work */
    uint64_t fences;     /* events recorded for other graphs sharing a root */
    uint64_t steps;      /* nodes issued */
    uint32_t lanes_used; /* lanes with a queue, over the plan's life */
} weft__plan_counts;

typedef struct weft__plan weft__plan;

/* The hooks that the buffer layer calls back on a plan's weft__lanes. */
extern const weft__lane_hooks weft__plan_hooks;

/*
 * Lower: nodes n (kinds and devices), predecessors in CSR form (sorted
 * here, latest in order first), order the issue order; raws (the writers
 * each node reads from, graph.h) with roots (the graph's root buffers, as
 * weft__raw.root indexes them). The plan keeps pointers to pred_first,
 * preds, raws and roots, which must outlive it.
 */
int weft__plan_create(weft_runtime *rt, const weft__node *nodes, uint32_t n,
                      const unsigned *node_dev, const uint32_t *order,
                      const uint32_t *pred_first, uint32_t *preds,
                      const struct weft__raw *raws, weft_buffer *const *roots,
                      int native, weft__plan **out);
/* Drain and free (NULL is ignored). */
void weft__plan_destroy(weft__plan *p);

/*
 * The weft_priority of the queues the plan makes from now on (before its
 * first: every queue of the plan has it). HIGH: the device's highest
 * queue priority (weft_device_info.queue_priority_high).
 */
void weft__plan_set_priority(weft__plan *p, int priority);

/* The compute lane node i was lowered to on device: its queue, made now. */
int weft__plan_lane_queue(weft__plan *p, unsigned device, unsigned slot,
                          weft__queue **q);

/*
 * One launch: whether it is timed (weft__plan_timed), said first and all a
 * replay needs (launch_timed); then, for a launch that issues, counters
 * back to 0 (begin); wait for everything (drain). A replay leaves the
 * per-node state as the last issue left it. ahead: the issue is a
 * lookahead's (exec.c), which moves nothing: the copies each node of the
 * last launch made (weft__plan_node_copies) are kept.
 */
void weft__plan_launch_timed(weft__plan *p);
void weft__plan_launch_begin(weft__plan *p, int ahead);
int weft__plan_drain(weft__plan *p);
/*
 * After the launch's drain: its timed operations go to the runtime's trace
 * (slices and flows, see trace.h) and its kernels' times to the kernel
 * time model (cost.h). Nothing for an untimed launch.
 */
void weft__plan_launch_end(weft__plan *p);
/*
 * Native graphs (tape.h), around the issue of one launch (after
 * launch_begin, before the drain): allow is 0 when another graph shares a
 * buffer of this one (whose fences must be real events). begin returns the
 * submission (src/drivers/submit.h) that every enqueue and host wait of
 * the issue goes through until end (the executor puts it in its
 * weft__lanes), NULL for the driver's entry points. end launches the
 * native graph (built first from the last launch's recording where that
 * launch left it unbuilt), or flushes, or keeps this launch's recording
 * for the launch that needs its graph (weft__plan_native_ready); it
 * returns the launch's error. native_launches: how many launches ran as one
 * native graph so far.
 */
const weft__submit *weft__plan_native_begin(weft__plan *p, int allow);
/*
 * An issue only recorded into the native graph, nothing of it run
 * (tape.h, CAPTURE): its submission, or NULL where the tape is off.
 * native_end builds the graph.
 */
const weft__submit *weft__plan_native_capture(weft__plan *p);
int weft__plan_native_end(weft__plan *p);
uint64_t weft__plan_native_launches(const weft__plan *p);
/* Native graphs updated or made again because parameters changed. */
uint64_t weft__plan_native_updates(const weft__plan *p);
/* The driver graphs a native launch runs (tape.h's segments), or 0. */
unsigned weft__plan_native_graphs(const weft__plan *p);
/*
 * Whether the last launch issued exactly what the native graph holds (it
 * ran the graph with nothing changed, or was recorded into it), and
 * weft__plan_native_replay may run it again without an issue (the caller
 * checks that the launch would issue the same: the trackers' state and
 * the arguments are those the last launch began with).
 */
int weft__plan_native_matched(const weft__plan *p);
/* Whether the next launch may run as the native graph (it has one, or a
 * recording to build it from). */
int weft__plan_native_possible(const weft__plan *p);
/*
 * Whether the native graph is built, building it now from the last
 * launch's recording where it is not (a RECORD launch leaves that to the
 * launch that needs it: weft__tape_ready). Called before
 * weft__plan_native_replay; 0 (the error logged and cleared) where it
 * could not be built.
 */
int weft__plan_native_ready(weft__plan *p);
/* Whether the native graph launches kernels only (weft__tape_kernels_only). */
int weft__plan_native_kernels_only(const weft__plan *p);
/* Whether the next launch may record or run a native graph at all. */
int weft__plan_native_able(const weft__plan *p);
int weft__plan_native_replay(weft__plan *p);
/* Time the next n launches to learn kernel times (0 by default). */
/*
 * A host step that host worker worker (its pool index, or -1) ran for node
 * from t0 to t1 on the host clock (timed launches): on the worker's own
 * trace track. Called by the issuing thread once the step finished.
 */
void weft__plan_time_worker(weft__plan *p, uint32_t node, int worker, int kind,
                            uint64_t t0, uint64_t t1, uint64_t bytes);
/* Launches still to be timed for the kernel time model. */
unsigned weft__plan_learning(const weft__plan *p);
void weft__plan_set_learn(weft__plan *p, unsigned n);
/*
 * weft_exec_enable_timings: on, every launch from the next is timed and
 * its end keeps each node's times (weft__plan_node_time).
 */
void weft__plan_set_timings(weft__plan *p, int on);
/*
 * Node i's operations in the last launch, if it kept node times (else 0):
 * the first start and last end on the host clock (weft__now_ns) and the
 * sum of their own times, in *t (3 values). 1 if the node had timed
 * operations, 0 if it had none (an empty node; all zeros then).
 */
int weft__plan_node_time(const weft__plan *p, uint32_t i, uint64_t t[3]);
/* Whether the last launch kept node times. */
int weft__plan_node_timed(const weft__plan *p);
/* Whether this launch is timed (tracing, learning kernel times, timings). */
int weft__plan_timed(const weft__plan *p);
/* A host step of the current node took [t0, t1] (weft__now_ns). */
void weft__plan_time_host(weft__plan *p, int kind, uint64_t t0, uint64_t t1,
                          uint64_t bytes);
void weft__plan_counts_get(const weft__plan *p, weft__plan_counts *c);

/* What one lane did over the launch so far. */
typedef struct weft__plan_lane_count {
    unsigned device;
    unsigned slot;  /* < WEFT__LANE_SLOTS: compute lanes, then h2d, d2h, peer */
    uint64_t ops;   /* operations enqueued, waits and records included */
    uint64_t nodes; /* steps whose work ended on the lane */
    uint64_t busy_ns, first_ns, last_ns; /* timed launches, else 0 */
    int priority;                        /* of its queue (weft__queue_desc) */
} weft__plan_lane_count;
/* The lanes with a queue, up to max of them into out; returns how many. */
unsigned weft__plan_lane_counts(const weft__plan *p, weft__plan_lane_count *out,
                                unsigned max);
/* The name of a lane slot: "compute0", ..., "high", "h2d", "d2h", "peer". */
const char *weft__plan_slot_name(unsigned slot);
/*
 * After a launch, for DOT and traces. The final lane of node i in the last
 * launch (as weft__plan_node_lane; UINT32_MAX: canceled, failed or not
 * run; host steps give the host lane, ndevices * WEFT__LANE_SLOTS); how
 * predecessor edge e (an index into preds) was enforced: 0 by lane order
 * or implied by others, 1 by a device-side wait, 2 by the host waiting;
 * and the bytes and copies the step of node i put on copy lanes, by role
 * (0 h2d, 1 d2h, 2 peer).
 */
uint32_t weft__plan_node_final(const weft__plan *p, uint32_t i);
unsigned weft__plan_edge_kind(const weft__plan *p, uint32_t e);
void weft__plan_node_copies(const weft__plan *p, uint32_t i, uint64_t bytes[3],
                            uint32_t copies[3]);
/*
 * The successors of every node as CSR lists, succs[first[i], first[i + 1]),
 * each in increasing order (the reverse of the preds the plan was made
 * with); the plan's own, valid while it lives.
 */
void weft__plan_succs(const weft__plan *p, const uint32_t **first,
                      const uint32_t **succs);
/* The lowered lane of node i: device * WEFT__LANE_SLOTS + slot, or
 * UINT32_MAX for nodes that run on the host. */
uint32_t weft__plan_node_lane(const weft__plan *p, uint32_t i);

/*
 * One step (a node): begin before its first transfer, end after its last
 * enqueue. host_wait: the host waits for every predecessor (a step that
 * touches host memory itself). A step that failed ends with end_failed:
 * its successors are canceled, so nothing waits for it.
 */
void weft__plan_step_begin(weft__plan *p, uint32_t node);
int weft__plan_host_wait(weft__plan *p);
/*
 * Whether every issued predecessor of node i is known complete (by the
 * host's clock, or its event queried now): then a host step for i would
 * not wait. Between steps only.
 */
int weft__plan_preds_done(weft__plan *p, uint32_t i);
int weft__plan_step_end(weft__plan *p);
void weft__plan_step_end_failed(weft__plan *p);

/*
 * A host step handed to another thread (a host worker, hostwork.h): what
 * the host would wait for goes into a ticket instead, events that the
 * worker waits for. Between host_begin and host_end of the step the host
 * lane's waits (host_wait, and the buffer layer's after hooks on the host
 * copy) only note what they need; host_end records an event after each
 * lane that needs one and ends the step, whose node stays unstamped (its
 * successors must not be issued) until host_done, on the issuing thread,
 * once the worker has finished: then the node is done on the host lane
 * (ok), or failed, and the first step after it makes the host learn the
 * ticket's events complete. The plan records the ticket's events again
 * only after the launch's drain; the ticket must live until then.
 */
typedef struct weft__plan_ticket {
    weft__event **ev; /* the events to wait for: nev of them */
    unsigned nev;
    uint64_t *up; /* per lane, while collecting (UINT64_MAX: its tail) */
    uint64_t *vc; /* per lane: what the host knows once they completed */
} weft__plan_ticket;
int weft__plan_ticket_init(const weft__plan *p, weft__plan_ticket *t);
void weft__plan_ticket_fini(weft__plan_ticket *t);
void weft__plan_host_begin(weft__plan *p, weft__plan_ticket *t);
/*
 * rc: the step's status so far (< 0: nothing is recorded and rc returned).
 * On failure the step is still open: end it with step_end_failed.
 */
int weft__plan_host_end(weft__plan *p, int rc);
void weft__plan_host_done(weft__plan *p, uint32_t node, weft__plan_ticket *t,
                          int ok);
/*
 * size bytes of root's host copy at off into dst, for a node that read
 * them: after the copies of this step and any still on their way into
 * that range, on a lane (a host function) if some are in flight, else
 * now. arg is storage for the host function that lives until the drain.
 * 1 if the calling thread copied now (host-side work), 0 if queued.
 */
typedef struct weft__plan_memcpy {
    void *dst;
    const void *src;
    size_t size;
} weft__plan_memcpy;
int weft__plan_host_copy(weft__plan *p, weft_buffer *root, size_t off,
                         void *dst, size_t size, weft__plan_memcpy *arg);
/*
 * After a step, for a root it touched, under the root's lock: when other
 * graphs name the root, fence it with an event after the step's work.
 * evs: the executor's events for the root, one per device, made here when
 * NULL. Nothing for a step that left no work in flight.
 */
int weft__plan_fence(weft__plan *p, weft_buffer *root, weft__event **evs,
                     const void *owner);

#endif /* WEFT_SCHED_PLAN_H */
