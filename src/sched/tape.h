/*
 * The tape: what one launch of an executable graph enqueued, so that the
 * next launch can hand the same work to the device as one native graph.
 *
 * A plan (src/sched/plan.c) that may lower to a native graph begins its
 * tape before it issues a launch and gets the tape's submission
 * (weft__submit, src/drivers/submit.h), which it passes down with the
 * launch (its own enqueues, and the memory layer's through weft__lanes):
 * every enqueue and every wait of the host during the issue comes to the
 * tape that way, and the tape hands it on to the checked driver entry
 * points (dispatch.c) as its mode says:
 *
 *   RECORD  the operation runs and is appended. A wait by the host (queue
 *           or event sync, a query, an elapsed time), a copy from or to
 *           memory that is not pinned, or work on a device of a driver
 *           whose graphs cannot wait for each other's events (see
 *           "Several devices" below) marks the tape unfit for a native
 *           graph.
 *   DEFER   the operation is compared with the next one on the tape; equal
 *           (same queue, kernel, grid, argument bytes, memory and offsets,
 *           events, host function), it is not run now. The first that
 *           differs, and any wait by the host, flushes: the operations
 *           deferred so far run now, in order, and the rest of the launch
 *           runs as usual (the tape's graph is then dropped). An
 *           operation that differs only in parameters (a launch's argument
 *           values or buffers, a fill's or device copy's memory, a pinned
 *           host copy's pointer) is taken into the tape and deferred too;
 *           at the end the graph is captured again from the tape and the
 *           driver updates the old one in place (cuGraphExecUpdate), or
 *           makes a new one where it cannot.
 *
 *   CAPTURE the operation is appended and not run (a host wait, which
 *           has nothing of this issue to wait for, returns at once and
 *           marks the tape unfit): an issue made only to record the graph
 *           that a later launch replays (weft__tape_capture_begin). The
 *           issuer must know that the issue moves no bytes (exec.c,
 *           weft__lookahead): the trackers take the issue as done.
 *
 * An operation that fails its checks (weft__drv_check_<op>) is neither
 * taped nor run: its error is returned, as the entry point would. After a
 * flush, and once the issue has ended, the submission passes everything
 * straight to the entry points.
 *
 * After the issue (weft__tape_end), a DEFER launch that matched the whole
 * tape launches the native graphs instead, and waits for them (a graph
 * runs every lane's work of its device on one queue, which the plan's
 * drain, counting per lane, would not know). The graphs are built by
 * capturing the tape's operations on their queues (weft__drv_graph_begin
 * and _end, with events forking the device's other queues off the first
 * and joining them back): a CAPTURE issue's at its end, a RECORD launch's
 * (fit for them) only when a later launch needs them (weft__tape_ready:
 * a replay, or a DEFER launch that matched the whole tape), so that a
 * graph launched once never pays for making them. So the executor still does
 * all of its bookkeeping (the trackers end exactly as after a launch that
 * ran op by op) and only the submission is replaced, never the decisions.
 *
 * Several devices. One capture cannot take in queues of two devices
 * (CUDA invalidates it), so the tape is cut into segments, each the work
 * of one device captured into one graph, and launched in an order that
 * keeps every dependency: a wait for an event recorded by another device
 * becomes an event wait node (graph_wait_external) and its record an
 * event record node (graph_record_external, on an event of the tape's
 * own). Such a wait waits for the record that was latest when its graph
 * was launched, so the recording graph is launched first; where that
 * would need a device's graph both before and after another's (work going
 * from A to B and back), A's work is cut in two segments, launched on the
 * same queue one after the other. A wait for an event recorded by an
 * earlier segment of the same device is kept by that queue's order and
 * taken out. A wait for a record made before the launch (by a launch
 * before, or work outside the graph) is an event wait node on the event
 * itself: at each graph launch it waits for that event's latest record,
 * as the wait would have when issued (a capture cannot wait for work
 * outside it: CUDA invalidates it). Most plans need one segment per
 * device.
 *
 * Native nodes. A plan with a native node gets a tape only where every
 * native node is capturable (weft_graph_set_native_capture) and its
 * driver has native_capture (plan.c). The node's call comes through the
 * submission (native_call) as a NATIVE op that holds a copy of the call
 * (exec_run.c's weft__native_call: the function, the node, its queue
 * and the native addresses of its ranges). RECORD runs it and appends
 * it; the capture calls the driver's native_call again on the capturing
 * queue with the tape's copy (CUDA and the sim capture what the function
 * enqueues; the host driver makes a node that calls it at each graph
 * launch, so the copy stays where it is while the graph lives); DEFER
 * defers an equal call, and takes a call that differs (other addresses)
 * as a parameter change: the graph is captured again, calling the
 * function with the new copy. What the function enqueues is never seen
 * by the tape, so a NATIVE op counts as one that moves bytes.
 *
 * Only devices whose driver has graph operations get a tape (CUDA; OpenCL
 * where the device has cl_khr_command_buffer; the host driver; the sim
 * with graphs=1), and not CPU devices unless WEFT_NATIVE_GRAPHS=1 asks for
 * it or the driver says its graphs pay there (graphs_on_cpu: the host
 * driver's, whose launch is one hand-off to a worker; PoCL replays command
 * buffers slower than it runs the commands); WEFT_NATIVE_GRAPHS=0 turns it
 * off everywhere.
 */
#ifndef WEFT_SCHED_TAPE_H
#define WEFT_SCHED_TAPE_H

#include "../drivers/submit.h"

typedef enum weft__tape_kind {
    WEFT__TAPE_LAUNCH = 1,
    WEFT__TAPE_H2D,
    WEFT__TAPE_D2H,
    WEFT__TAPE_D2D,
    WEFT__TAPE_PEER,
    WEFT__TAPE_FILL,
    WEFT__TAPE_RECORD,
    WEFT__TAPE_WAIT,
    WEFT__TAPE_HOST_FN,
    WEFT__TAPE_NATIVE,
    /* block copies (weft__rect): replayed as taped, no parameter change */
    WEFT__TAPE_H2D_RECT,
    WEFT__TAPE_D2H_RECT,
    WEFT__TAPE_D2D_RECT,
    WEFT__TAPE_PEER_RECT,
} weft__tape_kind;

typedef struct weft__tape_op {
    weft__tape_kind kind;
    weft__queue *q;
    weft__kernel *k;
    weft__grid grid;
    /* launch: in args; fill: pattern in bytes; native: the call in bytes
     * (16-byte aligned) */
    uint32_t arg_first, nargs;
    weft__mem *dst, *src;
    size_t dst_off, src_off, size;
    void *host; /* h2d source, d2h destination */
    weft__event *ev;
    weft__host_fn *fn;
    void *user;
    weft__native_fn *nfn; /* native: the driver calls it with the call */
    weft__rect rect;      /* block copies: host is the host side's base */
    /* Set when the graphs are built (weft__tape_build): */
    uint32_t seg;  /* the segment it belongs to */
    uint32_t xev;  /* external record or wait: the tape's event (in xev) */
    uint8_t how;   /* record, wait: WEFT__TAPE_INTERNAL and so on */
    uint32_t node; /* the plan's node whose step enqueued it, or
                      WEFT__TAPE_NO_NODE */
    uint32_t rec;  /* wait: the op of its record in the tape, or
                      WEFT__TAPE_NO_NODE (set with seg) */
} weft__tape_op;

enum { WEFT__TAPE_NO_NODE = UINT32_MAX };

/* How a record or wait is captured (weft__tape_op.how). */
enum {
    WEFT__TAPE_INTERNAL = 1, /* record: waited for in its segment */
    WEFT__TAPE_EXTERNAL = 2, /* record: by another device; wait: for one */
    WEFT__TAPE_SKIP = 4,     /* wait: an earlier segment of its queue's */
    WEFT__TAPE_BEFORE = 8,   /* wait: for a record made before the launch */
};

/* The work of one device between waits for another's: one graph. */
typedef struct weft__tape_seg {
    weft__queue *q; /* its graph launches here: the device's first queue */
    void *graph;    /* the driver's instantiated graph, or NULL */
} weft__tape_seg;

enum {
    WEFT__TAPE_OFF = 0,
    WEFT__TAPE_RECORD_MODE,
    WEFT__TAPE_DEFER_MODE,
    WEFT__TAPE_CAPTURE_MODE,
};

typedef struct weft__tape {
    int mode;
    int unfit;  /* this recording cannot become a graph */
    int moves;  /* ops taped other than launches, records and waits */
    int broken; /* capture failed once: no more tries */
    weft__tape_op *ops;
    size_t n, cap, pos;
    weft__karg *args; /* launch arguments, values in bytes */
    size_t nargs, cap_args;
    unsigned char *bytes;
    size_t nbytes, cap_bytes;
    weft__context *ctx;   /* the first operation's (all: its driver's) */
    weft__tape_seg *segs; /* in launch order */
    unsigned nsegs;
    unsigned built; /* 1 when every segment has its graph */
    /* 1: a RECORD launch fit for graphs ended and they are not built yet
     * (weft__tape_ready builds them when a launch needs them). */
    unsigned recorded;
    weft__event **join; /* fork and join events, two per other queue */
    unsigned njoin;
    weft__event **xev; /* events of records waited for by other devices */
    unsigned nxev;
    uint64_t launches; /* native graph launches, for statistics */
    uint64_t updates;  /* graphs updated in place (parameters changed) */
    uint64_t rebuilds; /* ... that the driver could not update: made anew */
    int changed;       /* DEFER: a parameter differed from the tape's */
    /* The last launch's issue is what the graphs hold: it ran them
     * (updated or not), or it was recorded into them. */
    int matched;
    weft__submit submit; /* its submission, self = the tape (tape_begin) */
    /* Named edges (weft__tape_set_dag): the plan's node whose step
     * enqueues now (WEFT__TAPE_NO_NODE between steps), and its graph. */
    uint32_t node;
    uint32_t nnodes;
    const uint32_t *pred_first, *preds;
} weft__tape;

/*
 * Named edges. A driver whose capture takes edges from its caller
 * (graph_order, driver.h: the host driver) need not keep the order of a
 * queue between nodes that do not depend on each other: the plan puts
 * independent kernels of one step on a lane after one another, and a
 * native graph that kept that order would run them one by one on a CPU
 * device's threads, or hold a node back behind an earlier one it does
 * not need. So the plan tells the tape its graph (weft__tape_set_dag) and,
 * in t->node, the node whose step enqueues (every operation is tagged
 * with it). A kernel launch is captured with edges of its own, from the
 * kernels of its node's predecessors, where its node's only work is that
 * launch and so is each predecessor's, in the same segment: the
 * predecessors' launches are then all that the launch needs before it
 * besides the waits enqueued before it on its queue, which the capture
 * keeps, except those for the event a predecessor recorded after its
 * launch (the edge from that launch says it all; the record stands for
 * the predecessor's whole queue). Anything else keeps queue order.
 */
void weft__tape_set_dag(weft__tape *t, uint32_t n, const uint32_t *pred_first,
                        const uint32_t *preds);

/*
 * Whether dev's driver can run tapes as native graphs, and they are wanted
 * there: want is a weft_native_graphs (an executable graph's option), and
 * WEFT_NATIVE_GRAPHS in the environment can turn them off or on.
 */
int weft__tape_supported(const weft__device *dev, int want);

/* Whether drv's graphs of several devices can wait for each other. */
int weft__tape_joins_devices(const weft__driver *drv);

/*
 * Start a launch: DEFER if the tape has its graphs, or a recording to
 * build them from (t->recorded), else RECORD anew.
 * Returns the submission that the launch's enqueues and host waits must
 * go through until weft__tape_end, or NULL where the tape is off (it
 * failed to capture once): then the launch submits directly.
 */
const weft__submit *weft__tape_begin(weft__tape *t);
/*
 * Start an issue in CAPTURE mode (anew, the old graphs dropped): its
 * submission, or NULL where the tape is off. launches and args, where
 * known, are the kernel launches and their arguments: room for
 * them is made at once (a failure to is no error: the tape grows as it
 * goes), so that its ops and arguments are not copied as they double
 * (the arguments' by-value bytes still grow as they go).
 */
const weft__submit *weft__tape_capture_begin(weft__tape *t, size_t launches,
                                             size_t args);
/*
 * End the issue of a launch (its submission passes everything through
 * from now on): run the graph (a DEFER launch that matched the whole
 * tape; built first where the tape held only a recording), or flush, or
 * keep a fit RECORD launch's recording for weft__tape_ready; a CAPTURE
 * issue's graph is built now (errors in building are logged and the tape
 * marked broken, never returned).
 * Returns the launch's own error, if the graph launch or a flushed
 * operation failed.
 */
int weft__tape_end(weft__tape *t);
/*
 * Whether the tape has its graphs, building them now from a RECORD
 * launch's recording that has none yet (t->recorded). A failure to build
 * is logged and marks the tape broken, as in weft__tape_end: 0 then.
 */
int weft__tape_ready(weft__tape *t);
/*
 * Run the graphs again with no issue at all (t->matched said the last
 * launch issued what they hold, and the caller knows this launch would
 * issue the same, and weft__tape_ready said they are built): launch them
 * and wait for them.
 */
int weft__tape_replay(weft__tape *t);
/*
 * Whether the tape holds kernel launches, event records and waits only:
 * the launch it recorded moved, filled and copied no bytes.
 */
int weft__tape_kernels_only(const weft__tape *t);
/* Free what the tape holds (its graphs included). */
void weft__tape_release(weft__tape *t);

/*
 * The host is about to wait for work that the issue handed to a thread of
 * its own (a host worker): as a wait through the submission.
 */
int weft__tape_host_waits(weft__tape *t);

#endif /* WEFT_SCHED_TAPE_H */
