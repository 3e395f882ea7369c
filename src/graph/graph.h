/*
 * Graphs (src/graph/): nodes, their buffer accesses, and the edges inferred
 * from those accesses or added explicitly.
 *
 * Storage. Everything a node owns lives in a few growing arrays of the
 * graph, addressed by index: accesses, kernel arguments, the bytes of
 * BYTES arguments. A node is a small fixed record; adding one allocates
 * nothing in the common case, and an executable graph copies the arrays
 * whole.
 *
 * Inference. Per root buffer the graph keeps a band map (base/bandmap.h)
 * of the root's bytes: for each byte the last node that wrote it and the
 * nodes that read it since (weft__dep_value). Accesses are ranges or
 * blocks, a block's slices one region each, so the tiles of a matrix are
 * one cell each and tiles that share no byte never meet. A node that
 * reads a byte depends on its writer (RAW); a node that writes it depends
 * on its readers (WAR), or on its writer when there are none (WAW: with
 * readers, the writer is an ancestor of each of them). An edge's lo and
 * hi are the bounding range of the bytes that made it.
 *
 * Inferred edges always go from an earlier node to a later one and are
 * stored per target node, contiguously: node n's are edges[in_first, +nin).
 * Candidates that a path through the others implies are dropped when the
 * node is added (transitive reduction of the inferred edges). Explicit
 * edges are kept apart and may point backwards; instantiate sorts them out.
 *
 * Adding a node has two passes: the first only looks (it cuts the band
 * maps' entries at its regions, which changes no byte's value, finds the
 * candidate edges and reserves all memory the second needs), the second
 * cannot fail (it applies the new values, then merges equal neighbours).
 * So a failing add changes nothing.
 */
#ifndef WEFT_GRAPH_GRAPH_H
#define WEFT_GRAPH_GRAPH_H

#include "../base/bandmap.h"
#include "../base/map.h"
#include "../mem/buffer.h"
#include "kernel.h"

#define WEFT__NONE UINT32_MAX

typedef enum weft__node_kind {
    WEFT__NODE_KERNEL = 1,
    WEFT__NODE_WRITE,
    WEFT__NODE_READ,
    WEFT__NODE_COPY,
    WEFT__NODE_FILL,
    WEFT__NODE_MAP,
    WEFT__NODE_HOST,
    WEFT__NODE_EMPTY,
    WEFT__NODE_NATIVE,
} weft__node_kind;

typedef enum weft__hazard {
    WEFT__RAW = 1,
    WEFT__WAR,
    WEFT__WAW,
    WEFT__EXPLICIT,
} weft__hazard;

/*
 * A buffer access as the user gave it: the handle (a root or a view) and
 * the range or block in it. root is the graph's index of the root buffer.
 * A range has rows = slices = 1 (pitches 0) and size bytes from offset; a
 * block has rows x slices rows of size bytes, row r of slice s at offset +
 * s * slice_pitch + r * row_pitch (weft.h's weft_block), checked when
 * added. A block keeps the shape it was given (a transfer's host side
 * follows it row by row), except that one row of one slice is a range and
 * one slice has slice_pitch 0.
 */
typedef struct weft__access {
    weft_buffer *buf;
    size_t offset, size;
    uint32_t root;
    weft_access mode;
    size_t rows, slices, row_pitch, slice_pitch;
} weft__access;

/* Accesses that name one buffer (weft_graph's runs). */
enum { WEFT__RUNS_LOOK = 4 };
typedef struct weft__acc_run {
    weft_buffer *buf;
    uint64_t n;
} weft__acc_run;

typedef struct weft__node {
    weft__node_kind kind;
    uint32_t acc_first, nacc; /* accesses[acc_first, +nacc) */
    uint32_t in_first, nin;   /* inferred in-edges */
    uint32_t raw_first, nraw; /* the writers it reads from: raws[] */
    uint32_t xin;             /* last explicit in-edge in xedges, or NONE */
    int32_t device;           /* weft_graph_set_device, or -1 */
    uint32_t priority;        /* weft_graph_set_priority: a weft_priority */
    union {
        struct {
            weft_kernel *k;
            weft_dims dims;
            uint32_t arg_first, nargs; /* args[arg_first, +nargs) */
        } kernel;
        struct {
            const void *src;
            size_t row_pitch, slice_pitch; /* blocks: the host side's */
        } write;
        struct {
            void *dst;
            size_t row_pitch, slice_pitch; /* blocks: the host side's */
        } read;
        struct {
            unsigned char pattern[4];
            unsigned size;
        } fill;
        struct {
            weft_map_fn *fn;
            void *user;
        } map;
        struct {
            weft_host_task_fn *fn;       /* one of fn and status */
            weft_host_status_fn *status; /* non-zero fails the node */
            void *user;
            /* 1: status is a poll function (WEFT_HOST_AGAIN: call again) */
            unsigned char poll;
        } host;
        struct {
            uint32_t arg;   /* a BYTES argument: nimpl weft__native_impl */
            uint32_t nimpl; /* >= 1 */
            uint32_t what;  /* WEFT__NATIVE_FN, _WAIT, _RECORD */
            /* 1: its work may be captured into native graphs
             * (weft_graph_set_native_capture) */
            uint32_t capture;
            void *user;
        } native;
    } u;
} weft__node;

typedef struct weft__edge {
    uint32_t from, to;
    weft__hazard hazard;
    uint32_t root; /* graph's root index; WEFT__NONE for explicit edges */
    uint32_t next; /* explicit: the target's previous explicit in-edge */
    size_t lo, hi; /* the bytes of the root that made the edge */
} weft__edge;

/*
 * A node that wrote bytes of root (the graph's index) that a later node
 * reads, whether or not the reduction kept the edge: what a copy of that
 * root's bytes for the later node must wait for, and no more.
 */
typedef struct weft__raw {
    uint32_t from, root;
} weft__raw;

/*
 * The inference's value of a byte of a root (in its band map): the last
 * node that wrote it (high 32 bits) and the head of the list in readers[]
 * of the nodes that read it since (low 32 bits), either WEFT__NONE. Lists
 * are shared between bytes: cutting an entry copies one index, not a list.
 */
static inline uint64_t weft__dep_value(uint32_t writer, uint32_t readers)
{
    return (uint64_t)writer << 32 | readers;
}
static inline uint32_t weft__dep_writer(uint64_t v)
{
    return (uint32_t)(v >> 32);
}
static inline uint32_t weft__dep_readers(uint64_t v)
{
    return (uint32_t)v;
}

typedef struct weft__reader {
    uint32_t node, next;
} weft__reader;

typedef struct weft__root {
    weft_buffer *buf;
    weft__bandmap deps; /* every byte's weft__dep_value */
} weft__root;

/* Per-node scratch of the inference, stamped so that it is never cleared. */
typedef struct weft__mark {
    uint64_t cand_epoch; /* == epoch: the node is a candidate, at cand_slot */
    uint64_t seen_epoch; /* == epoch: reached by the reduction's search */
    uint64_t raw_epoch;  /* == epoch: in rawtmp, for root raw_root */
    uint32_t cand_slot, raw_root;
} weft__mark;

/*
 * A graph's node, access, raw and run arrays as executable graphs share
 * them (weft__graph_share_take): refs (atomic) counts the graph, while they
 * are still its own, and each executable graph holding them. Nothing
 * writes them while shared: the graph copies them before it changes a
 * node or adds one (weft__graph_unshare), and the last to drop frees them.
 */
typedef struct weft__graph_share {
    unsigned refs;
    weft__node *nodes;
    weft__access *acc;
    weft__raw *raws;
    weft__acc_run *runs;
} weft__graph_share;

struct weft_graph {
    weft_runtime *rt;
    weft__graph_share *share; /* NULL: its arrays are the graph's alone */

    weft__node *nodes;
    weft__mark *marks;
    uint32_t nnodes;
    size_t cap_nodes, cap_marks;

    weft__access *acc;
    uint32_t nacc;
    size_t cap_acc;
    /*
     * The accesses counted by buffer (their counts sum to nacc): an
     * access counts in the run of its buffer among the last
     * WEFT__RUNS_LOOK, else in a new one. What references the accesses
     * hold on their buffers, one atomic change per run, without a pass
     * over the accesses.
     */
    weft__acc_run *runs;
    uint32_t nruns;
    size_t cap_runs;
    /* The most accesses, and kernel arguments, of one node */
    uint32_t max_node_acc, max_node_args;
    /*
     * Nodes other than host tasks without a status, maps and empty nodes:
     * with none, every launch may go with no issue (sched/exec_fast.c),
     * and instantiate leaves the issue's own state for a launch that
     * needs it.
     */
    uint32_t nissued;
    weft_arg *args; /* BYTES values: value.u64 is an offset in bytes[] */
    uint32_t nargs;
    size_t cap_args;
    unsigned char *bytes;
    size_t nbytes, cap_bytes;

    weft__edge *edges; /* inferred, grouped by target */
    uint32_t nedges;
    size_t cap_edges;
    /*
     * The same compact: each inferred edge's source (edges[k].from) and
     * each node's first in-edge (nodes[i].in_first, nnodes of them): the
     * predecessor lists of a graph with no explicit edge, which
     * instantiate copies (weft__graph_preds).
     */
    uint32_t *edge_from, *in_first;
    size_t cap_edge_from, cap_in_first;
    weft__edge *xedges; /* explicit, in the order added */
    uint32_t nxedges;
    size_t cap_xedges;

    weft__root *roots;
    uint32_t nroots;
    size_t cap_roots;
    weft__map root_index; /* buffer -> its index in roots */

    weft__reader *readers;
    uint32_t nreaders;
    size_t cap_readers;

    weft__raw *raws; /* per node: raws[raw_first, +nraw) */
    uint32_t nraws;
    size_t cap_raws;

    weft__edge *cands; /* scratch: candidate in-edges of the node added */
    uint32_t ncands;
    size_t cap_cands;
    weft__raw *rawtmp; /* scratch: the writers the node added reads from */
    uint32_t nrawtmp;
    size_t cap_rawtmp;
    uint32_t *stack; /* scratch: the reduction's search */
    size_t cap_stack;
    uint64_t epoch;
};

/*
 * One implementation of a native node, as the graph keeps it (unaligned,
 * in the bytes of the node's argument: read it with weft__native_impl_at).
 */
typedef struct weft__native_impl {
    char driver[16];       /* "cuda", "opencl", "host", "sim" */
    weft_device_type type; /* 0: any */
    weft_native_fn *fn;
} weft__native_impl;

/* Implementation k of native node nd; args and bytes are its graph's. */
void weft__native_impl_at(const weft__node *nd, const weft_arg *args,
                          const unsigned char *bytes, uint32_t k,
                          weft__native_impl *out);
/*
 * The function of native node nd for dev (the first implementation whose
 * driver and type fit it), or NULL.
 */
weft_native_fn *weft__native_fn_for(const weft__node *nd, const weft_arg *args,
                                    const unsigned char *bytes,
                                    const weft__device *dev);
/*
 * What a native node's function sees (weft.h): filled by the issuing
 * thread (sched/exec_run.c) for one call, on its stack; mem and acc have
 * n entries. The weft_native_* accessors are in sched/native.c.
 */
struct weft_native_ctx {
    const char *driver;
    const weft_device *device;
    weft_node node;
    unsigned n;
    weft__native_queue nq; /* set by the driver's native_call */
    const weft__native_mem *mem;
    const weft__access *acc;
    weft_native_fn *fn;
    void *user;
    weft__queue *q; /* the lane's (weft's own event nodes use it) */
};

/*
 * A native node made by weft_graph_add_event_wait or _record: its function
 * is one of these, its user pointer the program's event, and it returns
 * a weft code (the driver's external_wait or external_record on ctx->q).
 */
enum { WEFT__NATIVE_FN = 0, WEFT__NATIVE_WAIT = 1, WEFT__NATIVE_RECORD = 2 };
int weft__native_event_wait(const weft_native_ctx *ctx, void *event);
int weft__native_event_record(const weft_native_ctx *ctx, void *event);

/* Kernel and native nodes: those that run on a device that placement picks. */
static inline int weft__node_placed(const weft__node *nd)
{
    return nd->kind == WEFT__NODE_KERNEL || nd->kind == WEFT__NODE_NATIVE;
}
/*
 * Whether device index dev of rt can run kernel or native node nd (an
 * implementation there); args and bytes are its graph's.
 */
int weft__node_runs_on(const weft__node *nd, const weft_arg *args,
                       const unsigned char *bytes, weft_runtime *rt,
                       unsigned dev);

/* "kernel saxpy", "write", ... for messages; buf gets the text. */
const char *weft__node_label(const weft__node *n, char *buf, size_t size);
const char *weft__hazard_name(weft__hazard h);
/* weft__error with "node 12 (kernel saxpy): " in front. */
int weft__node_error(int code, const weft__node *nodes, uint32_t i,
                     const char *fmt, ...) WEFT__PRINTF(4, 5);
/*
 * Check kernel arguments; impl (may be NULL) is an implementation whose
 * parameters are known. The message does not name the node.
 */
int weft__args_match(const weft_kernel *k, const weft__kernel *impl,
                     const weft_arg *args, unsigned nargs);

/* ---- validation (validate.c), as the scheduler takes a graph ---------- */
/*
 * Every access inside its buffer; write and read nodes have their host
 * pointer. WEFT_ERANGE or WEFT_EINVAL naming the node.
 */
int weft__graph_check(const weft_graph *g);
/*
 * The graph's node and access arrays for an executable graph to read for
 * its life (no copy); NULL without memory. weft__graph_share_drop gives
 * them back.
 */
weft__graph_share *weft__graph_share_take(weft_graph *g);
void weft__graph_share_drop(weft__graph_share *s);
/*
 * Before anything changes g's nodes or accesses: its own copies of them
 * where executable graphs share them. WEFT_ENOMEM (nothing changed) or 0.
 */
int weft__graph_unshare(weft_graph *g);
/*
 * Predecessors of every node (inferred and explicit) as CSR arrays:
 * preds[first[i], first[i + 1]). The caller frees both (weft__free).
 */
int weft__graph_preds(const weft_graph *g, uint32_t **first, uint32_t **preds);
/*
 * A topological order of the nodes into order[] (nnodes entries): insertion
 * order where no explicit edge points backwards and no node has a priority.
 * Among the nodes whose predecessors are done, the urgent ones go first: a
 * node of WEFT_PRIORITY_HIGH and every node it depends on, through any
 * path. Within each class, insertion order; with latest, the one added
 * last goes first: as far from insertion order as the edges allow (the
 * tests use it to catch a dependency the graph failed to infer).
 * WEFT_ECYCLE where nodes are left on a cycle, which weft_graph_add_edge
 * prevents.
 */
int weft__graph_order(const weft_graph *g, const uint32_t *first,
                      const uint32_t *preds, int latest, uint32_t *order);

/* A kernel argument's bytes from its first to its last, WEFT_WHOLE
 * resolved (a block: its bounding range). */
static inline size_t weft__arg_span(const weft_arg *ar)
{
    if (ar->rows > 1 || (ar->rows == 1 && ar->slices > 1))
        return (ar->slices - 1) * ar->slice_pitch +
               (ar->rows - 1) * ar->row_pitch + ar->size;
    return ar->size == WEFT_WHOLE ? ar->buffer->size - ar->offset : ar->size;
}

/* Whether access a is a block of several rows (else a range). */
static inline int weft__access_is_block(const weft__access *a)
{
    return a->rows > 1 || a->slices > 1;
}
/* Bytes from a's first byte to one past its last (a range: its size). */
static inline size_t weft__access_span(const weft__access *a)
{
    return (a->slices - 1) * a->slice_pitch + (a->rows - 1) * a->row_pitch +
           a->size;
}
/* Bytes a names. */
static inline uint64_t weft__access_bytes(const weft__access *a)
{
    return (uint64_t)a->size * a->rows * a->slices;
}
/* Slice s of a as a region of its root (a range: the range). */
static inline weft__region weft__access_slice(const weft__access *a, size_t s)
{
    weft__region r = {a->buf->offset + a->offset + s * a->slice_pitch, a->size,
                      a->rows, a->rows > 1 ? a->row_pitch : 0};

    return r;
}

/*
 * The bounding range of access a in its root (a range: the range), clipped
 * to the root.
 */
static inline void weft__access_root_range(const weft__access *a, size_t *lo,
                                           size_t *hi)
{
    size_t bsize = a->buf->size;
    size_t start = WEFT__MIN(a->offset, bsize);

    *lo = a->buf->offset + start;
    *hi = *lo + WEFT__MIN(weft__access_span(a), bsize - start);
}

#endif /* WEFT_GRAPH_GRAPH_H */
