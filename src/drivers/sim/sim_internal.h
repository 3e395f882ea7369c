/*
 * The sim driver's objects and the functions its files share: sim.c
 * (the model, discovery, memory, modules, the record), sim_config.c (the
 * configuration keys), sim_queue.c (engines in virtual time, workers,
 * submission, the host's clock), sim_ops.c (copies, fills, launches, host
 * functions, events) and sim_graph.c (captures and native graphs).
 *
 * Locks: one mutex per platform guards all its state (engines, queues'
 * times and pending lists, events and markers, the record, memory counts).
 * Workers take it to pick up and retire items, never while running an
 * effect. done_cv is broadcast whenever an item retires; syncs and waiting
 * workers wait on it.
 */
#ifndef WEFT_SIM_INTERNAL_H
#define WEFT_SIM_INTERNAL_H

#include "sim.h"

#include "../hostcc.h"

#include <pthread.h>
#include <string.h>

#define SIM_SPANS       128 /* busy spans kept per engine for backfilling */
#define SIM_ALIGN       16  /* alignment of kernel argument values */
#define SIM_ALIGN_UP(n) (((n) + SIM_ALIGN - 1) & ~(size_t)(SIM_ALIGN - 1))

typedef struct sim_config {
    unsigned devices;
    char name[64];
    uint64_t mem;
    unsigned copy_engines;
    double h2d_bw, d2h_bw, peer_bw, d2d_bw;
    double h2d_lat, d2h_lat, peer_lat, launch_lat, host_fn_ns;
    double item_ns;
    unsigned peer, peer_group, compute_units, real_data, graphs, check;
} sim_config;

typedef struct sim_span {
    uint64_t start, end;
} sim_span;

/*
 * The busy spans of one engine: sorted, disjoint, never touching (touching
 * spans are merged), all at or after floor, before which nothing may start.
 */
typedef struct sim_engine {
    uint64_t floor;
    unsigned n;
    sim_span span[SIM_SPANS];
} sim_engine;

/* Set once the work recorded before it has completed; platform lock. */
typedef struct sim_marker {
    unsigned refs;
    unsigned done;
} sim_marker;

/*
 * One item for a queue's worker: an effect, or a record (sets marker) or
 * a wait (blocks until marker is set) that holds a reference to marker.
 */
typedef struct sim_work {
    struct sim_work *next;
    uint64_t seq;
    weft__sim_op_kind kind;
    sim_marker *marker;
    unsigned char *dst;
    const unsigned char *src;
    size_t size;
    /* a block copy (rect_on): dst and src are the bases, size unused */
    weft__rect rect;
    unsigned rect_on;
    unsigned char pattern[4];
    size_t pattern_size;
    weft__host_fn *fn;
    void *user;
    weft_host_kernel_fn *kfn;
    weft__grid grid;
    void **argv;
} sim_work;

typedef struct sim_mem sim_mem;
typedef struct sim_queue sim_queue;
typedef struct sim_capture sim_capture;

/*
 * What an operation reads or writes (check=1): host addresses, which with
 * real_data=1 are the device memory's too; and, in the log, when.
 */
typedef struct sim_access {
    const unsigned char *lo;
    size_t len; /* from lo to one past the last byte */
    /* a block's rows (height * depth > 1), else 0s: every byte of len */
    size_t width, height, depth, row_pitch, slice_pitch;
    unsigned write;
    uint64_t start, end, seq; /* the log's */
    uint64_t thread;          /* the log's: who submitted it */
} sim_access;

enum { SIM_MAX_ACCESS = 16, SIM_LOG = 2048 };

typedef struct sim_platform {
    weft__platform base;
    sim_config cfg;
    sim_mem *pinned; /* PINNED memory alive, for host_is_pinned */
    pthread_mutex_t lock;
    pthread_cond_t done_cv; /* broadcast whenever a queue retires an item */
    unsigned inited;        /* SIM_INIT_* bits: what platform_free undoes */
    uint64_t seq;           /* last sequence number handed out */
    weft__sim_op *record;
    size_t nrecord, caprecord;
    uint64_t horizon; /* latest virtual end so far */
    uint64_t id;      /* unique in the process, for the host's clock */
    unsigned next_queue, next_event;
    sim_capture *captures; /* in progress */
    uint64_t next_capture; /* last capture id handed out; 0 is none */
    /* check=1: the last SIM_LOG accesses (a ring), and the hazards. */
    sim_access *log;
    size_t nlog;
    uint64_t hazards;
    /* real_data=0: set (atomic) once a read-back was warned about. */
    unsigned warned_uncomputed;
} sim_platform;

enum {
    SIM_INIT_LOCK = 1,
    SIM_INIT_DONE_CV = 2,
};

typedef struct sim_device {
    weft__device base;
    uint64_t mem_used; /* platform lock */
    unsigned nengines; /* 1 + copy_engines */
    sim_engine engine[];
} sim_device;

typedef struct sim_context {
    weft__context base;
} sim_context;

struct sim_queue {
    weft__queue base;
    unsigned id;
    uint64_t ready;    /* virtual time at which the next op may start */
    uint64_t last_seq; /* sequence number of the last op; 0 if none */
    /*
     * Items not yet complete, in order; the head is running or next. Ops
     * without items are not listed: an op of this queue with sequence
     * number s is complete iff pending is empty or s < pending->seq.
     */
    sim_work *pending, *pending_tail;
    pthread_cond_t work_cv; /* the worker waits for an item or stop */
    pthread_t worker;
    unsigned started; /* the worker runs */
    unsigned stop;    /* the worker should exit once pending is empty */
    sim_capture *cap; /* the capture q takes part in, or NULL */
    long cap_last;    /* index of q's last node in cap, or -1 */
};

struct sim_mem {
    weft__mem base;
    unsigned char *data; /* the bytes, or NULL for counted device memory */
    unsigned owned;      /* data was allocated here */
    sim_mem *next;       /* PINNED: the platform's list (platform lock) */
    size_t pinned_len;   /* PINNED: its size, as the list's readers see it
                            (base is finished by the caller after it is
                            listed) */
};

typedef struct sim_kernel {
    weft__kernel base;
    weft_host_kernel hk; /* name and params point into the module */
} sim_kernel;

typedef struct sim_module {
    weft__module base;
    unsigned nkernels;
    sim_kernel *kernels;   /* in the same allocation */
    weft__hostcc_lib *lib; /* a portable module's shared object, or NULL */
} sim_module;

typedef struct sim_event {
    weft__event base;
    unsigned id;
    sim_marker *marker; /* of the last record; NULL if never recorded */
    int device;         /* where it was last recorded */
    uint64_t time;      /* virtual time when recorded */
    uint64_t cap_id;    /* the capture of the last record, or 0 */
    long cap_node;      /* that record's node in the capture */
} sim_event;

/*
 * A node of a native graph: one operation as enqueued during the capture.
 * kind is that of the record entry it makes when the graph launches.
 */
typedef struct sim_node {
    weft__sim_op_kind kind;
    sim_queue *q;
    long prev;      /* q's node before this one in the capture, or -1 */
    long dep;       /* a wait: the record node it waits for; else -1 */
    unsigned event; /* record, wait: the graph's private event */
    sim_event *ext; /* an external record or wait: the event (not private) */
    weft__mem *dst, *src;
    size_t dst_off, src_off, size;
    void *host; /* h2d: the source; d2h: the destination */
    unsigned char pattern[4];
    size_t pattern_size;
    const weft__kernel *k;
    weft__grid grid;
    weft__karg *args; /* nargs, then the values (one allocation) */
    unsigned nargs;
    weft__host_fn *fn;
    void *user;
} sim_node;

/*
 * A graph (made by a capture). queues[0] is the queue the capture began
 * on. events holds nevents private events for the record nodes, then one
 * to fork a launch and one per queue to join it (graph_end makes them).
 */
typedef struct sim_graph {
    sim_platform *p;
    sim_node *nodes;
    size_t n, cap;
    sim_queue **queues;
    unsigned nqueues, cap_queues;
    sim_event *events;
    unsigned nevents;
} sim_graph;

/* A capture in progress: in its platform's list, under the lock. */
struct sim_capture {
    sim_capture *next;
    uint64_t id;
    sim_graph *g;
    const char *broken; /* why no graph can come of it, or NULL */
};

/*
 * An operation ready to submit (weft__sim_submit's arguments): prepared outside
 * the lock, where the kernel's cost function may run.
 */
typedef struct sim_prep {
    weft__sim_op op;
    uint64_t dur;
    unsigned first, count;
    sim_work *w; /* or NULL */
    sim_access acc[SIM_MAX_ACCESS];
    unsigned nacc;
} sim_prep;

static inline sim_platform *sim_platform_of(weft__device *dev)
{
    weft__assert(dev && dev->drv == &weft__driver_sim);
    return (sim_platform *)dev->platform;
}

static inline sim_platform *sim_ctx_platform(weft__context *ctx)
{
    return sim_platform_of(ctx->dev);
}

static inline sim_device *sim_dev(weft__device *dev)
{
    return (sim_device *)dev;
}

static inline void sim_lock(sim_platform *p)
{
    int rc = pthread_mutex_lock(&p->lock);

    weft__assert(rc == 0);
}

static inline void sim_unlock(sim_platform *p)
{
    int rc = pthread_mutex_unlock(&p->lock);

    weft__assert(rc == 0);
}

/* Round to whole ns; saturate far below overflow so that sums stay exact. */
static inline uint64_t sim_ns(double ns)
{
    if (!(ns > 0))
        return 0;
    if (ns >= 0x1p62)
        return (uint64_t)1 << 62;
    return (uint64_t)(ns + 0.5);
}

static inline uint64_t sim_xfer_ns(double lat, double bw, uint64_t bytes)
{
    return sim_ns(lat) + sim_ns((double)bytes * 1e9 / bw);
}

/* Under the lock: drop a reference to m (NULL: none). */
static inline void sim_marker_unref(sim_marker *m)
{
    if (m && --m->refs == 0)
        weft__free(m);
}

static inline int sim_dev_index(const weft__mem *m)
{
    return (int)m->ctx->dev->driver_index;
}

/* The bytes of m at off, or NULL when m is counted device memory. */
static inline unsigned char *sim_bytes(weft__mem *wm, size_t off)
{
    sim_mem *m = (sim_mem *)wm;

    return m->data ? m->data + off : NULL;
}

/* A node of kind with nothing else set. */
static inline sim_node sim_node_of(weft__sim_op_kind kind)
{
    sim_node n;

    memset(&n, 0, sizeof n);
    n.kind = kind;
    n.prev = n.dep = -1;
    return n;
}

/* sim.c */
int weft__sim_pthread_fail(const char *call, int e);
int weft__sim_peers(const sim_platform *p, const weft__device *a,
                    const weft__device *b);

/* sim_config.c */
int weft__sim_config_parse(const char *text, unsigned real_data, sim_config *c);

/* sim_queue.c */
uint64_t weft__sim_host_now(const sim_platform *p);
void weft__sim_host_saw(const sim_platform *p, uint64_t t);
/* The table's host_seen and host_join: the calling thread's clock. */
uint64_t weft__sim_host_seen(const weft__device *dev);
void weft__sim_host_join(const weft__device *dev, uint64_t seen);
int weft__sim_record_reserve(sim_platform *p, size_t n);
int weft__sim_queue_start(sim_queue *q);
int weft__sim_submit(sim_queue *q, weft__sim_op *op, uint64_t dur,
                     unsigned first, unsigned count, sim_work *w,
                     const sim_access *acc, unsigned nacc);
int weft__sim_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                           weft__queue **out);
int weft__sim_queue_sync(weft__queue *wq);
void weft__sim_queue_release(weft__queue *wq);

/* sim_ops.c */
int weft__sim_node_prep(const sim_platform *p, const sim_node *n, sim_prep *pr);
int weft__sim_record_submit(sim_event *e, sim_queue *q, sim_marker *m,
                            sim_work *w);
int weft__sim_wait_submit(sim_platform *p, sim_event *e, sim_queue *q,
                          sim_work *w);
int weft__sim_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                       const void *src, size_t size);
int weft__sim_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                       size_t src_off, size_t size);
int weft__sim_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                       weft__mem *src, size_t src_off, size_t size);
int weft__sim_copy_h2d_rect(weft__queue *q, weft__mem *dst, const void *src,
                            const weft__rect *r);
int weft__sim_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                            const weft__rect *r);
int weft__sim_copy_d2d_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                            const weft__rect *r);
int weft__sim_copy_peer_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                             const weft__rect *r);
int weft__sim_copy_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                        weft__mem *src, size_t src_off, size_t size);
int weft__sim_fill(weft__queue *wq, weft__mem *dst, size_t off,
                   const void *pattern, size_t pattern_size, size_t size);
int weft__sim_launch(weft__queue *wq, weft__kernel *wk, const weft__grid *grid,
                     const weft__karg *args, unsigned nargs);
int weft__sim_host_fn(weft__queue *wq, weft__host_fn *fn, void *user);
int weft__sim_event_create(weft__context *ctx, unsigned flags,
                           weft__event **out);
int weft__sim_event_record(weft__event *we, weft__queue *wq);
int weft__sim_queue_wait_event(weft__queue *wq, weft__event *we);
int weft__sim_event_query(weft__event *we);
int weft__sim_event_sync(weft__event *we);
int weft__sim_event_elapsed(weft__event *ws, weft__event *we, uint64_t *ns);
void weft__sim_event_destroy(weft__event *we);

/* sim_graph.c */
sim_capture *weft__sim_event_capture(const sim_platform *p, const sim_event *e);
long weft__sim_capture_add(sim_queue *q, const sim_node *node);
int weft__sim_capture_try(weft__queue *wq, const sim_node *node);
int weft__sim_capture_wait(sim_queue *q, sim_event *e, sim_capture *ec);
void weft__sim_capture_forget(sim_platform *p, sim_queue *q);
int weft__sim_graph_supported(const weft__device *dev);
int weft__sim_graph_begin(weft__queue *wq);
int weft__sim_graph_end(weft__queue *wq, void *old, void **graph, int *updated);
int weft__sim_graph_launch(void *graph, weft__queue *wq);
void weft__sim_graph_destroy(void *graph);
int weft__sim_graph_record_external(weft__event *we, weft__queue *wq);
int weft__sim_graph_wait_external(weft__queue *wq, weft__event *we);

#endif /* WEFT_SIM_INTERNAL_H */
