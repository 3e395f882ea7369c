/*
 * The tape: what one launch of an executable graph enqueued, so that the
 * next launch can hand the same work to the device as one native graph.
 *
 * A plan (src/sched/plan.c) that may lower to a native graph sets the
 * calling thread's tape (weft__tape_cur) while it issues a launch. The
 * checked driver entry points (dispatch.c) then show it every enqueue:
 *
 *   RECORD  the operation runs and is appended. A wait by the host (queue
 *           or event sync, a query, an elapsed time), a copy from or to
 *           memory that is not pinned, or work on a second device marks
 *           the tape unfit for a native graph, unless the driver's
 *           captures span devices (graph_spans_devices: the sim's), when
 *           one graph takes in every device's work.
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
 * After the issue (weft__tape_end), a DEFER launch that matched the whole
 * tape launches the native graph instead, and waits for it (the graph
 * runs every lane's work on one queue, which the plan's drain, counting
 * per lane, would not know); a RECORD launch fit for one
 * builds it by capturing the tape's operations on its queues (the driver's
 * graph_begin/graph_end, with events forking the other queues off the
 * first and joining them back). So the executor still does all of its
 * bookkeeping (the trackers end exactly as after a launch that ran op by
 * op) and only the submission is replaced, never the decisions.
 *
 * Only devices whose driver has graph operations get a tape (CUDA; OpenCL
 * where the device has cl_khr_command_buffer; the sim with graphs=1), and
 * not CPU devices unless
 * WEFT_NATIVE_GRAPHS=1 asks for it (their submission costs little, and
 * PoCL replays command buffers slower than it runs the commands);
 * WEFT_NATIVE_GRAPHS=0 turns it off everywhere.
 */
#ifndef WEFT_DRIVERS_TAPE_H
#define WEFT_DRIVERS_TAPE_H

#include "driver.h"

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
} weft__tape_kind;

typedef struct weft__tape_op {
    weft__tape_kind kind;
    weft__queue *q;
    weft__kernel *k;
    weft__grid grid;
    uint32_t arg_first, nargs; /* launch: in args; fill: pattern in bytes */
    weft__mem *dst, *src;
    size_t dst_off, src_off, size;
    void *host; /* h2d source, d2h destination */
    weft__event *ev;
    weft__host_fn *fn;
    void *user;
} weft__tape_op;

enum { WEFT__TAPE_OFF = 0, WEFT__TAPE_RECORD_MODE, WEFT__TAPE_DEFER_MODE };

typedef struct weft__tape {
    int mode;
    int unfit;  /* this recording cannot become a graph */
    int broken; /* capture failed once: no more tries */
    weft__tape_op *ops;
    size_t n, cap, pos;
    weft__karg *args; /* launch arguments, values in bytes */
    size_t nargs, cap_args;
    unsigned char *bytes;
    size_t nbytes, cap_bytes;
    weft__context *ctx; /* the first operation's (all: its driver's) */
    void *graph;        /* the driver's instantiated graph, or NULL */
    weft__queue *gq;    /* the queue the graph launches on */
    weft__event **join; /* fork and join events, one per other queue */
    unsigned njoin;
    uint64_t launches; /* native graph launches, for statistics */
    uint64_t updates;  /* graphs updated in place (parameters changed) */
    uint64_t rebuilds; /* ... that the driver could not update: made anew */
    int changed;       /* DEFER: a parameter differed from the tape's */
    int matched;       /* the last launch ran the graph (updated or not) */
} weft__tape;

/* The calling thread's tape, or NULL (dispatch.c looks at it). */
extern _Thread_local weft__tape *weft__tape_cur;

/* Whether dev's driver can run tapes as native graphs (and not disabled). */
int weft__tape_supported(const weft__device *dev);

/* Start a launch: DEFER if the tape has a graph, else RECORD anew. */
void weft__tape_begin(weft__tape *t);
/*
 * End the issue of a launch (the calling thread's tape is cleared): run
 * the graph, or flush, or build the graph from a fit recording (errors in
 * building are logged and the tape marked broken, never returned).
 * Returns the launch's own error, if the graph launch or a flushed
 * operation failed.
 */
int weft__tape_end(weft__tape *t);
/*
 * Run the graph again with no issue at all (t->matched said the last
 * launch ran it unchanged, and the caller knows this launch would issue
 * the same): launch it and wait for it.
 */
int weft__tape_replay(weft__tape *t);
/* Free what the tape holds (its graph included). */
void weft__tape_release(weft__tape *t);

/*
 * For dispatch.c: an enqueue op about to run; returns 1 if it was deferred
 * (the caller returns 0 without running it), 0 to run it, < 0 on error
 * (a flushed operation failed).
 */
int weft__tape_enqueue(weft__tape *t, const weft__tape_op *op,
                       const weft__karg *args, const void *pattern);
/* For dispatch.c: the host is about to wait for, or ask about, work. */
int weft__tape_host_waits(weft__tape *t);

#endif /* WEFT_DRIVERS_TAPE_H */
