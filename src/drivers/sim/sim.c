/*
 * The sim driver: simulated GPUs in virtual time.
 *
 * A sim platform is one configured machine ("weft sim") of identical
 * devices of type WEFT_DEVICE_SIMULATED, named "sim <name> #<i>". It lets
 * the scheduler be tested without hardware and on machines larger than any
 * we own. Every operation gets a virtual start and end when it is enqueued
 * and is appended to the platform's record (sim.h), which tests read.
 *
 * Configuration: "key=value" pairs separated by commas (weft_runtime_options
 * .sim_config, or WEFT_SIM). Sizes take binary suffixes (K M G T: 2^10...),
 * rates and times take decimal ones (k M G T: 10^3...). Keys:
 *
 *   devices=N        simulated GPUs, 1..1024 (default 2)
 *   name=TEXT        model name in device names (default H200)
 *   mem=SIZE         memory per device (default 141G)
 *   copy_engines=N   copy engines per device, 0..16 (default 3)
 *   h2d_bw=RATE      host-to-device bytes/s (default 55e9; 55G is the same)
 *   d2h_bw=RATE      device-to-host bytes/s (default 55e9)
 *   h2d_lat=NS       host-to-device latency per copy (default 2000)
 *   d2h_lat=NS       device-to-host latency per copy (default 2000)
 *   peer_bw=RATE     device-to-device bytes/s between GPUs (default 390e9)
 *   peer_lat=NS      latency per peer copy (default 2000)
 *   peer=0|1         1: devices can access their peers (default 1); with 0
 *                    copy_peer fails with WEFT_ENOTSUP and the layers above
 *                    must stage through host memory
 *   peer_group=N     with peer=1, only devices i, j with i/N == j/N are
 *                    peers (islands of N GPUs); 0 = all pairs (default 0)
 *   d2d_bw=RATE      bytes/s of copies and fills within one device
 *                    (default 2e12: HBM read plus write)
 *   launch_lat=NS    fixed cost of a kernel, a fill or a local copy
 *                    (default 3000)
 *   item_ns=NS       virtual ns per work item of a kernel without a cost
 *                    function; fractional (default 0.01: 1M items take 10 us,
 *                    about a streaming kernel on a large GPU)
 *   host_fn_ns=NS    virtual duration of a host function (default 2000)
 *   compute_units=N  reported compute units (default 132)
 *   real_data=0|1    1: device memory is real and copies, fills and kernels
 *                    run (default: weft__driver_config.sim_real_data, else 0)
 *   check=0|1        with real_data=1: 1 checks that every two operations
 *                    touching the same bytes, one of them writing, are
 *                    ordered in virtual time (weft__sim_hazards; default 0)
 *   graphs=0|1       1: the devices make native graphs (graph_supported says
 *                    yes), so that the tape runs on the sim (default 0; see
 *                    "Native graphs" below)
 *
 * Time model. A device has one compute engine (engine 0: kernels, fills and
 * copies within the device, one at a time) and copy_engines copy engines
 * (1..copy_engines). Copies pick engines by direction:
 *   0 engines: every copy runs on the compute engine;
 *   1 engine:  every copy on engine 1 (all copies serialise);
 *   2 engines: H2D on 1, D2H and peer on 2;
 *   3 or more: H2D on 1, D2H on 2, peer copies on whichever of 3.. can start
 *              first (the lowest on a tie).
 * A peer copy uses the engine of the queue's device. Each engine runs one
 * operation at a time; different engines overlap. An operation starts at
 * the earliest time >= its queue's ready time at which its engine is idle
 * for its whole duration: an engine backfills idle gaps left by operations
 * that wait, keeping the last 128 busy spans (older gaps are closed). A
 * queue is in order: its ready time becomes the operation's end.
 * queue_wait_event moves the queue's ready time to the event's, if later;
 * an event's time is its queue's ready time when recorded. Durations:
 *   copy:    latency + bytes / bandwidth (rounded to the nearest ns);
 *   kernel:  launch_lat + sim_cost(items, args, user) when the kernel has a
 *            cost function (buffer arguments are NULL unless real_data=1),
 *            else launch_lat + items * item_ns (rounded);
 *   fill, local copy: launch_lat + bytes / d2d_bw;
 *   host function: host_fn_ns, on no engine.
 * All of it is computed at enqueue time under the platform lock, so the same
 * submission order always gives the same record.
 *
 * The host's clock. Enqueueing takes no virtual time, but a thread that
 * blocks learns when work completes: queue_sync and event_sync (and
 * queue_release, which syncs) move the calling thread's clock to the
 * virtual time of what it waited for, and nothing that thread enqueues
 * afterwards starts earlier, as on a real machine where the host submits
 * only once the wait has returned. The clock is per thread so that a
 * progress thread that waits does not hold back, by a race, what another
 * thread submits; event_query moves no clock, since a poll has no virtual
 * time of its own, and answers as of the calling thread's clock: an event
 * whose virtual time is later is not complete yet (so a host that polls
 * before it waits sees what a real one would). A thread keeps the clock of the
 * last platform it waited on.
 *
 * Data. With real_data=0 device memory is only counted against mem (beyond
 * it mem_alloc fails with WEFT_EDEVMEM), copies move nothing and kernels do
 * not run. With real_data=1 device memory is host memory and effects run.
 * Pinned memory and host functions are always real. host_is_pinned says
 * 1 for ranges inside pinned memory of the platform (host_alloc), as CUDA
 * does for memory from cuMemHostAlloc, so that the layers above copy from
 * and into it in place.
 *
 * Execution. Effects run asynchronously, in order, on a worker thread of
 * their queue, started when the queue first has something to run (in
 * counted mode only host functions and waits for unfinished work do), so
 * that a blocked queue holds back only what depends on it. A record whose
 * queue still has unfinished work makes a marker that the queue's worker
 * sets on reaching it; a wait on an unfinished marker becomes an item that
 * blocks its queue's worker until the marker is set. Markers are counted
 * references shared by the event and the items that name them, so that an
 * event may be recorded again or destroyed while work still refers to its
 * old marker.
 *
 * Locks: one mutex per platform guards all its state (engines, queues'
 * times and pending lists, events and markers, the record, memory counts).
 * Workers take it to pick up and retire items, never while running an
 * effect. done_cv is broadcast whenever an item retires; syncs and waiting
 * workers wait on it.
 *
 * Native graphs (graphs=1), as CUDA's stream capture in relaxed mode.
 * graph_begin(q) starts a capture on q. An event recorded on a queue in the
 * capture becomes a capture event (its earlier record is forgotten); a
 * queue of any device of the platform that waits on a capture event joins
 * the capture. What a queue in the capture enqueues (launches with their
 * argument values copied, copies, fills with their pattern, host functions,
 * records and waits) becomes a node of the capture's graph, in order, and
 * neither runs nor enters the record. A wait there on an event outside any
 * capture records nothing if the event's work has completed, and fails
 * with WEFT_EINVAL if not (the dependency would cross the capture's
 * boundary), as does a wait on another capture's event; a sync of a queue
 * in the capture, or a query or sync of a capture event, fails with
 * WEFT_EINVAL too, and changes nothing. graph_end(q) takes every queue out;
 * each queue that joined must have been joined back (its last node comes
 * before q's last one, through waits), or the capture is discarded with
 * WEFT_EINVAL, like CUDA's "unjoined" error. Once the capture has ended, an
 * event last recorded in it reads as never recorded.
 *
 * A graph keeps its nodes (queues, memory by handle and offset, values
 * copied) and one private event per record node. graph_launch(q) enqueues,
 * as one step under the lock (all items prepared first, so that a launch
 * that fails has no effect): a fork (a record on q, a wait on it by each
 * other queue of the graph), every node on its own queue in capture order
 * (records and waits on the private events, so that the order across
 * queues holds), and a join (a record on each other queue, a wait on each
 * by q). So a launch enters the record and runs like the same operations
 * enqueued by hand, and a sync of q waits for all of it. An update in place
 * (graph_end with old) gives old the new capture's nodes: every change is
 * taken, the sim has no topology to keep.
 */
#include "sim.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_SPANS       128 /* busy spans kept per engine for backfilling */
#define SIM_ALIGN       16  /* alignment of kernel argument values */
#define SIM_ALIGN_UP(n) (((n) + SIM_ALIGN - 1) & ~(size_t)(SIM_ALIGN - 1))

/* ---- objects ----------------------------------------------------------- */

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
    size_t len;
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
};

typedef struct sim_kernel {
    weft__kernel base;
    weft_host_kernel hk; /* name and params point into the module */
} sim_kernel;

typedef struct sim_module {
    weft__module base;
    unsigned nkernels;
    sim_kernel *kernels; /* in the same allocation */
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

static sim_platform *sim_platform_of(weft__device *dev)
{
    weft__assert(dev && dev->drv == &weft__driver_sim);
    return (sim_platform *)dev->platform;
}

static sim_platform *sim_ctx_platform(weft__context *ctx)
{
    return sim_platform_of(ctx->dev);
}

static sim_device *sim_dev(weft__device *dev)
{
    return (sim_device *)dev;
}

static void sim_lock(sim_platform *p)
{
    int rc = pthread_mutex_lock(&p->lock);

    weft__assert(rc == 0);
}

static void sim_unlock(sim_platform *p)
{
    int rc = pthread_mutex_unlock(&p->lock);

    weft__assert(rc == 0);
}

/* ---- configuration ----------------------------------------------------- */

typedef enum sim_key_type {
    SIM_KEY_UINT,   /* unsigned, within [min, max] */
    SIM_KEY_SIZE,   /* bytes with binary suffix, >= min */
    SIM_KEY_DOUBLE, /* double with SI suffix, >= min (> min if max < 0) */
    SIM_KEY_NAME,
} sim_key_type;

typedef struct sim_key {
    const char *key;
    sim_key_type type;
    size_t offset;
    double min, max;
} sim_key;

#define SIM_KEY(k, t, lo, hi)                                                  \
    {                                                                          \
#k, t, offsetof(sim_config, k), lo, hi                                 \
    }
/* max < 0 on a DOUBLE means "strictly greater than min". */
static const sim_key sim_keys[] = {
    SIM_KEY(devices, SIM_KEY_UINT, 1, 1024),
    SIM_KEY(name, SIM_KEY_NAME, 0, 0),
    SIM_KEY(mem, SIM_KEY_SIZE, 1, 0),
    SIM_KEY(copy_engines, SIM_KEY_UINT, 0, 16),
    SIM_KEY(h2d_bw, SIM_KEY_DOUBLE, 0, -1),
    SIM_KEY(d2h_bw, SIM_KEY_DOUBLE, 0, -1),
    SIM_KEY(h2d_lat, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(d2h_lat, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(peer_bw, SIM_KEY_DOUBLE, 0, -1),
    SIM_KEY(peer_lat, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(peer, SIM_KEY_UINT, 0, 1),
    SIM_KEY(peer_group, SIM_KEY_UINT, 0, 1024),
    SIM_KEY(d2d_bw, SIM_KEY_DOUBLE, 0, -1),
    SIM_KEY(launch_lat, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(item_ns, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(host_fn_ns, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(compute_units, SIM_KEY_UINT, 1, 65536),
    SIM_KEY(real_data, SIM_KEY_UINT, 0, 1),
    SIM_KEY(graphs, SIM_KEY_UINT, 0, 1),
    SIM_KEY(check, SIM_KEY_UINT, 0, 1),
};
#undef SIM_KEY

static void sim_config_default(sim_config *c, unsigned real_data)
{
    memset(c, 0, sizeof *c);
    c->devices = 2;
    weft__strlcpy(c->name, "H200", sizeof c->name);
    c->mem = (uint64_t)141 << 30;
    c->copy_engines = 3;
    c->h2d_bw = c->d2h_bw = 55e9;
    c->h2d_lat = c->d2h_lat = c->peer_lat = 2000;
    c->peer_bw = 390e9;
    c->peer = 1;
    c->d2d_bw = 2e12;
    c->launch_lat = 3000;
    c->item_ns = 0.01;
    c->host_fn_ns = 2000;
    c->compute_units = 132;
    c->real_data = real_data ? 1 : 0;
}

static char *sim_trim(char *s)
{
    char *e;

    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        *--e = '\0';
    return s;
}

static int sim_config_set(sim_config *c, const char *key, const char *value)
{
    const sim_key *k = NULL;
    char *field, *end;
    unsigned long u;
    uint64_t size;
    double d;

    for (size_t i = 0; i < WEFT__COUNTOF(sim_keys); i++)
        if (!strcmp(sim_keys[i].key, key))
            k = &sim_keys[i];
    if (!k)
        return weft__error(
            WEFT_EINVAL,
            "sim config: unknown key '%s' (known: devices, "
            "name, mem, copy_engines, h2d_bw, d2h_bw, "
            "h2d_lat, d2h_lat, peer_bw, peer_lat, peer, "
            "peer_group, d2d_bw, launch_lat, item_ns, "
            "host_fn_ns, compute_units, real_data, graphs, check)",
            key);
    field = (char *)c + k->offset;
    switch (k->type) {
    case SIM_KEY_UINT:
        errno = 0;
        u = strtoul(value, &end, 10);
        if (errno || end == value || *end || value[0] == '-' ||
            u < (unsigned long)k->min || u > (unsigned long)k->max)
            return weft__error(WEFT_EINVAL,
                               "sim config: %s=%s: expected an integer from "
                               "%.0f to %.0f",
                               key, value, k->min, k->max);
        *(unsigned *)(void *)field = (unsigned)u;
        return 0;
    case SIM_KEY_SIZE:
        if (weft__parse_size(value, &size) < 0 || (double)size < k->min)
            return weft__error(WEFT_EINVAL,
                               "sim config: %s=%s: expected a size of at "
                               "least %.0f byte (e.g. 80G)",
                               key, value, k->min);
        *(uint64_t *)(void *)field = size;
        return 0;
    case SIM_KEY_DOUBLE:
        if (weft__parse_double(value, &d) < 0 || d < k->min ||
            (k->max < 0 && d <= k->min) || (k->max >= 0 && d > k->max))
            return weft__error(WEFT_EINVAL,
                               "sim config: %s=%s: expected a number %s %g "
                               "(suffixes k M G T)",
                               key, value, k->max < 0 ? ">" : ">=", k->min);
        *(double *)(void *)field = d;
        return 0;
    case SIM_KEY_NAME:
        if (!*value || strlen(value) >= sizeof c->name)
            return weft__error(WEFT_EINVAL,
                               "sim config: name=%s: expected 1 to %zu "
                               "characters",
                               value, sizeof c->name - 1);
        weft__strlcpy(c->name, value, sizeof c->name);
        return 0;
    }
    return weft__error(WEFT_EINTERNAL, "sim config: key type %d", (int)k->type);
}

/*
 * Parse text into c over the defaults. Empty items are skipped, so that
 * "devices=4," is fine; a later key overrides an earlier one.
 */
static int sim_config_parse(const char *text, unsigned real_data, sim_config *c)
{
    char *copy, *item, *next, *eq;
    int rc = 0;

    sim_config_default(c, real_data);
    if (!text || !*text)
        return 0;
    copy = weft__strdup(text);
    if (!copy)
        return weft__error(WEFT_ENOMEM, "sim config: out of memory");
    for (item = copy; item && rc == 0; item = next) {
        next = strchr(item, ',');
        if (next)
            *next++ = '\0';
        item = sim_trim(item);
        if (!*item)
            continue;
        eq = strchr(item, '=');
        if (!eq) {
            rc = weft__error(WEFT_EINVAL, "sim config: '%s' is not key=value",
                             item);
            break;
        }
        *eq = '\0';
        rc = sim_config_set(c, sim_trim(item), sim_trim(eq + 1));
    }
    weft__free(copy);
    return rc;
}

/* ---- virtual time ------------------------------------------------------ */

/* Round to whole ns; saturate far below overflow so that sums stay exact. */
static uint64_t sim_ns(double ns)
{
    if (!(ns > 0))
        return 0;
    if (ns >= 0x1p62)
        return (uint64_t)1 << 62;
    return (uint64_t)(ns + 0.5);
}

static uint64_t sim_xfer_ns(double lat, double bw, uint64_t bytes)
{
    return sim_ns(lat) + sim_ns((double)bytes * 1e9 / bw);
}

#if WEFT_DEBUG >= 2
static int sim_engine_valid(const sim_engine *e)
{
    for (unsigned i = 0; i < e->n; i++) {
        if (e->span[i].start >= e->span[i].end || e->span[i].start < e->floor)
            return 0;
        if (i && e->span[i - 1].end >= e->span[i].start)
            return 0;
    }
    return e->n <= SIM_SPANS;
}
#endif

/* First span that ends after t (ends increase along the array). */
static unsigned sim_engine_after(const sim_engine *e, uint64_t t)
{
    unsigned lo = 0, hi = e->n;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;

        if (e->span[mid].end <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * Make room for one more span by forgetting the older half: their gaps can
 * no longer be backfilled, so nothing may start before the last one's end.
 */
static void sim_engine_compact(sim_engine *e)
{
    unsigned drop = SIM_SPANS / 2;

    if (e->n < SIM_SPANS)
        return;
    e->floor = e->span[drop - 1].end;
    memmove(e->span, e->span + drop, (e->n - drop) * sizeof e->span[0]);
    e->n -= drop;
}

/* Earliest start >= ready at which e is idle for dur. */
static uint64_t sim_engine_fit(const sim_engine *e, uint64_t ready,
                               uint64_t dur)
{
    uint64_t t = WEFT__MAX(ready, e->floor);

    for (unsigned i = sim_engine_after(e, t); i < e->n; i++) {
        if (e->span[i].start >= t + dur)
            break;
        t = e->span[i].end;
    }
    return t;
}

/* Mark [start, end) busy; it lies in a gap that sim_engine_fit found. */
static void sim_engine_take(sim_engine *e, uint64_t start, uint64_t end)
{
    unsigned i;

    if (end == start)
        return;
    weft__assert_internal(e->n < SIM_SPANS);
    i = sim_engine_after(e, start);
    weft__assert_internal(i == e->n || e->span[i].start >= end);
    if (i > 0 && e->span[i - 1].end == start) {
        e->span[i - 1].end = end;
        if (i < e->n && e->span[i].start == end) {
            e->span[i - 1].end = e->span[i].end;
            memmove(e->span + i, e->span + i + 1,
                    (e->n - i - 1) * sizeof e->span[0]);
            e->n--;
        }
    } else if (i < e->n && e->span[i].start == end) {
        e->span[i].start = start;
    } else {
        memmove(e->span + i + 1, e->span + i, (e->n - i) * sizeof e->span[0]);
        e->span[i].start = start;
        e->span[i].end = end;
        e->n++;
    }
    weft__assert_expensive(sim_engine_valid(e));
}

/* ---- the worker -------------------------------------------------------- */

static void sim_work_run(sim_work *w)
{
    weft_host_group g;

    switch (w->kind) {
    case WEFT__SIM_H2D:
    case WEFT__SIM_D2H:
    case WEFT__SIM_PEER:
        memcpy(w->dst, w->src, w->size);
        break;
    case WEFT__SIM_D2D:
        memmove(w->dst, w->src, w->size);
        break;
    case WEFT__SIM_FILL:
        if (w->pattern_size == 1)
            memset(w->dst, w->pattern[0], w->size);
        else
            for (size_t i = 0; i < w->size; i += w->pattern_size)
                memcpy(w->dst + i, w->pattern, w->pattern_size);
        break;
    case WEFT__SIM_KERNEL:
        memcpy(g.groups, w->grid.groups, sizeof g.groups);
        memcpy(g.group_size, w->grid.group_size, sizeof g.group_size);
        for (uint32_t z = 0; z < g.groups[2]; z++)
            for (uint32_t y = 0; y < g.groups[1]; y++)
                for (uint32_t x = 0; x < g.groups[0]; x++) {
                    g.group[0] = x;
                    g.group[1] = y;
                    g.group[2] = z;
                    w->kfn(&g, w->argv);
                }
        break;
    case WEFT__SIM_HOST_FN:
        w->fn(w->user);
        break;
    case WEFT__SIM_EVENT_RECORD:
    case WEFT__SIM_EVENT_WAIT:
        break;
    }
}

static void sim_marker_unref(sim_marker *m)
{
    if (m && --m->refs == 0)
        weft__free(m);
}

/* Under the lock: has q's operation with sequence number seq completed? */
static int sim_queue_done(const sim_queue *q, uint64_t seq)
{
    return !q->pending || seq < q->pending->seq;
}

static void *sim_worker(void *arg)
{
    sim_queue *q = arg;
    sim_platform *p = sim_ctx_platform(q->base.ctx);
    sim_work *w;

    sim_lock(p);
    for (;;) {
        while (!q->pending && !q->stop)
            pthread_cond_wait(&q->work_cv, &p->lock);
        w = q->pending;
        if (!w)
            break;
        if (w->kind == WEFT__SIM_EVENT_WAIT) {
            while (!w->marker->done)
                pthread_cond_wait(&p->done_cv, &p->lock);
        } else if (w->kind == WEFT__SIM_EVENT_RECORD) {
            w->marker->done = 1;
        } else {
            /* Only this worker removes the head, so w stays put unlocked. */
            sim_unlock(p);
            sim_work_run(w);
            sim_lock(p);
        }
        sim_marker_unref(w->marker);
        q->pending = w->next;
        if (!q->pending)
            q->pending_tail = NULL;
        pthread_cond_broadcast(&p->done_cv);
        weft__free(w);
    }
    sim_unlock(p);
    return NULL;
}

/*
 * The calling thread's clock (see "The host's clock"): the platform it last
 * waited on, by id rather than address so that a platform later made at the
 * same address starts afresh, and the virtual time it saw there.
 */
static _Thread_local struct {
    uint64_t platform;
    uint64_t ns;
} sim_host_clock;
static uint64_t sim_platform_ids; /* atomic; last id handed out */

static uint64_t sim_host_now(const sim_platform *p)
{
    return sim_host_clock.platform == p->id ? sim_host_clock.ns : 0;
}

/* The calling thread has seen virtual time t pass on p. */
static void sim_host_saw(const sim_platform *p, uint64_t t)
{
    if (sim_host_clock.platform != p->id) {
        sim_host_clock.platform = p->id;
        sim_host_clock.ns = 0;
    }
    sim_host_clock.ns = WEFT__MAX(sim_host_clock.ns, t);
}

static int sim_pthread_fail(const char *call, int e)
{
    return weft__driver_error(WEFT_ENOMEM, "sim", e, weft__errno_name(e),
                              "sim: %s failed: %s", call, strerror(e));
}

/* ---- submission -------------------------------------------------------- */

/*
 * Under the lock: place op (kind and op-specific fields set) of duration dur
 * on q, on the earliest of engines [first, first + count) (count 0: no
 * engine), append it to the record and w (if any) to q's pending items,
 * starting q's worker if need be; op->seq gets the sequence number. On
 * failure nothing changed.
 */
/* Under the lock: room in the record for n more entries. */
static int sim_record_reserve(sim_platform *p, size_t n)
{
    size_t cap = p->caprecord ? p->caprecord : 256;
    weft__sim_op *r;

    if (p->nrecord + n <= p->caprecord)
        return 0;
    while (cap < p->nrecord + n)
        cap *= 2;
    r = weft__realloc(p->record, cap * sizeof *r);
    if (!r)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for the record");
    p->record = r;
    p->caprecord = cap;
    return 0;
}

/* Under the lock: start q's worker if it does not run yet. */
static int sim_queue_start(sim_queue *q)
{
    int e;

    if (q->started)
        return 0;
    e = weft__fault("sim.pthread_create")
            ? EAGAIN
            : pthread_create(&q->worker, NULL, sim_worker, q);
    if (e)
        return sim_pthread_fail("pthread_create", e);
    q->started = 1;
    return 0;
}

/*
 * check=1, under the lock: op, running [start, end) in virtual time,
 * touches acc. An access that conflicts with an earlier one (the same
 * bytes, one of them a write) must start after that one ended: every
 * dependency moves a queue's ready time past the end of what it waits
 * for, so a conflicting operation that starts before the earlier one
 * ends was ordered after it by nothing. Each such pair is a hazard:
 * counted, and the first ones logged. Only operations one thread submitted
 * are compared: each thread has a clock of its own, and an order made on
 * the host between threads (a lock, a join) is not seen here.
 */
static void sim_check(sim_platform *p, const weft__sim_op *op,
                      const sim_access *acc, unsigned nacc)
{
    static uint64_t threads; /* atomic: the last tag handed out */
    static _Thread_local uint64_t self;
    size_t n = WEFT__MIN(p->nlog, (size_t)SIM_LOG);

    if (!self)
        self = __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);

    for (unsigned a = 0; a < nacc; a++) {
        const sim_access *x = &acc[a];

        for (size_t i = 0; i < n; i++) {
            const sim_access *y = &p->log[i];

            if (y->thread != self || op->start_ns >= y->end ||
                (!x->write && !y->write) || x->lo >= y->lo + y->len ||
                y->lo >= x->lo + x->len)
                continue;
            if (p->hazards++ < 8)
                weft__warn(
                    "sim",
                    "hazard: operation %llu (%s) %s bytes that "
                    "operation %llu %s, from %llu ns, before that "
                    "ended at %llu ns: nothing orders them",
                    (unsigned long long)op->seq, weft__sim_op_name(op->kind),
                    x->write ? "writes" : "reads", (unsigned long long)y->seq,
                    y->write ? "writes" : "reads",
                    (unsigned long long)op->start_ns,
                    (unsigned long long)y->end);
            break;
        }
    }
    for (unsigned a = 0; a < nacc; a++) {
        sim_access *y = &p->log[p->nlog++ % SIM_LOG];

        *y = acc[a];
        y->start = op->start_ns;
        y->end = op->end_ns;
        y->seq = op->seq;
        y->thread = self;
    }
}

static int sim_submit(sim_queue *q, weft__sim_op *op, uint64_t dur,
                      unsigned first, unsigned count, sim_work *w,
                      const sim_access *acc, unsigned nacc)
{
    sim_platform *p = sim_ctx_platform(q->base.ctx);
    sim_device *d = sim_dev(q->base.ctx->dev);
    sim_engine *best = NULL;
    uint64_t ready = WEFT__MAX(q->ready, sim_host_now(p)), start = ready;
    int rc;

    if ((rc = sim_record_reserve(p, 1)) < 0 ||
        (w && (rc = sim_queue_start(q)) < 0))
        return rc;
    for (unsigned i = first; i < first + count; i++) {
        sim_engine *e = &d->engine[i];
        uint64_t t;

        sim_engine_compact(e);
        t = sim_engine_fit(e, ready, dur);
        if (!best || t < start) {
            best = e;
            start = t;
            op->engine = (int)i;
        }
    }
    if (best)
        sim_engine_take(best, start, start + dur);
    else
        op->engine = WEFT__SIM_ENGINE_NONE;
    op->seq = ++p->seq;
    op->device = (int)q->base.ctx->dev->driver_index;
    op->queue = q->id;
    op->role = q->base.desc.role;
    op->ready_ns = ready;
    op->start_ns = start;
    op->end_ns = start + dur;
    q->ready = op->end_ns;
    q->last_seq = op->seq;
    p->horizon = WEFT__MAX(p->horizon, op->end_ns);
    p->record[p->nrecord++] = *op;
    if (p->log && nacc)
        sim_check(p, op, acc, nacc);
    if (w) {
        w->seq = op->seq;
        w->kind = op->kind;
        w->next = NULL;
        if (q->pending_tail)
            q->pending_tail->next = w;
        else
            q->pending = w;
        q->pending_tail = w;
        pthread_cond_signal(&q->work_cv);
    }
    return 0;
}

/*
 * An operation ready to submit (sim_submit's arguments): prepared outside
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

/* Note that pr touches [lo, lo + len) (check=1; nothing if lo is NULL). */
static void sim_prep_access(sim_prep *pr, const unsigned char *lo, size_t len,
                            unsigned write)
{
    if (!lo || !len || pr->nacc == SIM_MAX_ACCESS)
        return;
    pr->acc[pr->nacc].lo = lo;
    pr->acc[pr->nacc].len = len;
    pr->acc[pr->nacc].write = write;
    pr->nacc++;
}

/* Lock, submit, unlock; frees the item on failure. */
static int sim_enqueue(sim_queue *q, sim_prep *pr)
{
    sim_platform *p = sim_ctx_platform(q->base.ctx);
    int rc;

    sim_lock(p);
    rc = sim_submit(q, &pr->op, pr->dur, pr->first, pr->count, pr->w, pr->acc,
                    pr->nacc);
    sim_unlock(p);
    if (rc < 0)
        weft__free(pr->w);
    return rc;
}

/* The copy engines for a direction (see the comment at the top). */
static void sim_copy_engines(const sim_config *c, weft__sim_op_kind kind,
                             unsigned *first, unsigned *count)
{
    *count = 1;
    if (c->copy_engines == 0)
        *first = WEFT__SIM_ENGINE_COMPUTE;
    else if (c->copy_engines == 1 || kind == WEFT__SIM_H2D)
        *first = 1;
    else if (c->copy_engines == 2 || kind == WEFT__SIM_D2H)
        *first = 2;
    else {
        *first = 3;
        *count = c->copy_engines - 2;
    }
}

/* A work item for a data effect, or NULL with *rc = 0 if there is none. */
static sim_work *sim_data_work(unsigned char *dst, const unsigned char *src,
                               size_t size, int *rc)
{
    sim_work *w;

    *rc = 0;
    if (!dst || !src)
        return NULL;
    w = weft__calloc(1, sizeof *w);
    if (!w) {
        *rc = weft__error(WEFT_ENOMEM, "sim: out of memory for a copy");
        return NULL;
    }
    w->dst = dst;
    w->src = src;
    w->size = size;
    return w;
}

/* A copy on a queue of platform p's devices. */
static int sim_copy_prep(const sim_platform *p, weft__sim_op_kind kind,
                         unsigned char *dst, const unsigned char *src,
                         size_t size, int src_dev, int dst_dev, sim_prep *pr)
{
    const sim_config *c = &p->cfg;
    int rc;

    memset(pr, 0, sizeof *pr);
    pr->w = sim_data_work(dst, src, size, &rc);
    if (rc < 0)
        return rc;
    if (p->log) {
        sim_prep_access(pr, src, size, 0);
        sim_prep_access(pr, dst, size, 1);
    }
    pr->op.kind = kind;
    pr->op.bytes = size;
    pr->op.src_device = src_dev;
    pr->op.dst_device = dst_dev;
    pr->op.event_device = WEFT__SIM_HOST;
    switch (kind) {
    case WEFT__SIM_H2D:
        pr->dur = sim_xfer_ns(c->h2d_lat, c->h2d_bw, size);
        break;
    case WEFT__SIM_D2H:
        pr->dur = sim_xfer_ns(c->d2h_lat, c->d2h_bw, size);
        break;
    case WEFT__SIM_PEER:
        pr->dur = sim_xfer_ns(c->peer_lat, c->peer_bw, size);
        break;
    default:
        pr->dur = sim_xfer_ns(c->launch_lat, c->d2d_bw, size);
        break;
    }
    if (kind == WEFT__SIM_D2D) {
        pr->first = WEFT__SIM_ENGINE_COMPUTE;
        pr->count = 1;
    } else {
        sim_copy_engines(c, kind, &pr->first, &pr->count);
    }
    return 0;
}

static int sim_copy(weft__queue *wq, weft__sim_op_kind kind, unsigned char *dst,
                    const unsigned char *src, size_t size, int src_dev,
                    int dst_dev)
{
    sim_prep pr;
    int rc = sim_copy_prep(sim_ctx_platform(wq->ctx), kind, dst, src, size,
                           src_dev, dst_dev, &pr);

    return rc < 0 ? rc : sim_enqueue((sim_queue *)wq, &pr);
}

static int sim_dev_index(const weft__mem *m)
{
    return (int)m->ctx->dev->driver_index;
}

/* ---- discovery --------------------------------------------------------- */

/* Every queue has been released (so every worker has exited). */
static void sim_platform_free(sim_platform *p)
{
    if (p->inited & SIM_INIT_DONE_CV)
        pthread_cond_destroy(&p->done_cv);
    if (p->inited & SIM_INIT_LOCK)
        pthread_mutex_destroy(&p->lock);
    if (p->base.devices)
        for (unsigned i = 0; i < p->base.ndevices; i++)
            weft__free(p->base.devices[i]);
    weft__free(p->base.devices);
    weft__free(p->record);
    weft__free(p->log);
    weft__free(p);
}

static int sim_platform_start(sim_platform *p)
{
    int e;

    e = weft__fault("sim.pthread_mutex_init")
            ? ENOMEM
            : pthread_mutex_init(&p->lock, NULL);
    if (e)
        return sim_pthread_fail("pthread_mutex_init", e);
    p->inited |= SIM_INIT_LOCK;
    e = weft__fault("sim.pthread_cond_init")
            ? ENOMEM
            : pthread_cond_init(&p->done_cv, NULL);
    if (e)
        return sim_pthread_fail("pthread_cond_init", e);
    p->inited |= SIM_INIT_DONE_CV;
    return 0;
}

static void sim_device_init(sim_platform *p, sim_device *d, unsigned i)
{
    const sim_config *c = &p->cfg;
    weft__device *b = &d->base;
    weft_device_info *info = &b->props;

    b->drv = &weft__driver_sim;
    b->platform = &p->base;
    b->driver_index = i;
    snprintf(b->name, sizeof b->name, "sim %s #%u", c->name, i);
    weft__strlcpy(b->vendor, "weft", sizeof b->vendor);
    snprintf(b->driver_version, sizeof b->driver_version, "weft sim %s",
             weft_version());
    d->nengines = 1 + c->copy_engines;
    info->size = sizeof *info;
    info->driver = "sim";
    info->driver_index = i;
    info->type = WEFT_DEVICE_SIMULATED;
    info->name = b->name;
    info->vendor = b->vendor;
    info->platform = p->base.name;
    info->driver_version = b->driver_version;
    info->global_mem = c->mem;
    info->max_alloc = c->mem;
    info->local_mem = 48 << 10;
    info->compute_units = c->compute_units;
    info->max_group_size = 1024;
    info->copy_engines = c->copy_engines;
    info->concurrent_kernels = 0; /* one compute engine */
    info->timing_events = 1;
    info->pinned_host = 1;
    info->host_register = 1;
    info->pci_bus_id = b->pci_bus_id;
    info->numa_node = -1;
    info->cpuset = b->cpuset;
}

static int sim_platforms_open(const weft__driver_config *cfg,
                              weft__platform ***platforms, unsigned *nplatforms)
{
    weft__platform **list;
    sim_platform *p;
    sim_config c;
    int rc;

    rc = sim_config_parse(cfg ? cfg->sim_config : NULL,
                          cfg ? cfg->sim_real_data : 0, &c);
    if (rc < 0)
        return rc;
    list = weft__calloc(1, sizeof *list);
    p = weft__calloc(1, sizeof *p);
    if (!list || !p) {
        weft__free(list);
        weft__free(p);
        return weft__error(WEFT_ENOMEM, "sim: out of memory for the platform");
    }
    p->cfg = c;
    if (c.check && c.real_data &&
        !(p->log = weft__calloc(SIM_LOG, sizeof *p->log))) {
        weft__free(list);
        weft__free(p);
        return weft__error(WEFT_ENOMEM, "sim: out of memory for the check");
    }
    p->id = __atomic_add_fetch(&sim_platform_ids, 1, __ATOMIC_RELAXED);
    p->base.drv = &weft__driver_sim;
    weft__strlcpy(p->base.name, "weft sim", sizeof p->base.name);
    weft__strlcpy(p->base.vendor, "weft", sizeof p->base.vendor);
    weft__strlcpy(p->base.version, weft_version(), sizeof p->base.version);
    p->base.devices = weft__calloc(c.devices, sizeof *p->base.devices);
    if (!p->base.devices) {
        rc = weft__error(WEFT_ENOMEM, "sim: out of memory for %u devices",
                         c.devices);
        goto fail;
    }
    for (unsigned i = 0; i < c.devices; i++) {
        sim_device *d = weft__calloc(1, sizeof *d + (1 + c.copy_engines) *
                                                        sizeof d->engine[0]);

        if (!d) {
            rc =
                weft__error(WEFT_ENOMEM, "sim: out of memory for device %u", i);
            goto fail;
        }
        p->base.devices[i] = &d->base;
        p->base.ndevices = i + 1;
        sim_device_init(p, d, i);
    }
    rc = sim_platform_start(p);
    if (rc < 0)
        goto fail;
    list[0] = &p->base;
    *platforms = list;
    *nplatforms = 1;
    weft__debug("sim", "%u simulated %s devices, %u copy engines each%s",
                c.devices, c.name, c.copy_engines,
                c.real_data ? ", real data" : "");
    return 0;
fail:
    sim_platform_free(p);
    weft__free(list);
    return rc;
}

static void sim_platforms_close(weft__platform **platforms, unsigned nplatforms)
{
    for (unsigned i = 0; i < nplatforms; i++)
        sim_platform_free((sim_platform *)platforms[i]);
    weft__free(platforms);
}

static int sim_peers(const sim_platform *p, const weft__device *a,
                     const weft__device *b)
{
    unsigned g = p->cfg.peer_group;

    if (a->platform != b->platform)
        return 0;
    if (a == b)
        return 1;
    if (!p->cfg.peer)
        return 0;
    return !g || a->driver_index / g == b->driver_index / g;
}

static int sim_can_access_peer(weft__device *a, weft__device *b, int *can)
{
    *can = sim_peers(sim_platform_of(a), a, b);
    return 0;
}

/* ---- contexts and queues ----------------------------------------------- */

static int sim_context_create(weft__device *dev, weft__context **ctx)
{
    sim_context *c = weft__calloc(1, sizeof *c);

    if (!c)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a context");
    *ctx = &c->base;
    return 0;
}

static void sim_context_destroy(weft__context *ctx)
{
    weft__free(ctx);
}

static int sim_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                            weft__queue **out)
{
    sim_platform *p = sim_ctx_platform(ctx);
    sim_queue *q = weft__calloc(1, sizeof *q);
    int e;

    if (!q)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a queue");
    e = weft__fault("sim.pthread_cond_init")
            ? ENOMEM
            : pthread_cond_init(&q->work_cv, NULL);
    if (e) {
        weft__free(q);
        return sim_pthread_fail("pthread_cond_init", e);
    }
    sim_lock(p);
    q->id = ++p->next_queue;
    sim_unlock(p);
    *out = &q->base;
    return 0;
}

/* Under the lock: take q out of its capture, which it does not outlive. */
static void sim_capture_forget(sim_platform *p, sim_queue *q);

/* Wait for what q has enqueued; the lock is held and is released. */
static void sim_queue_drain(sim_platform *p, sim_queue *q)
{
    uint64_t seq, t;

    seq = q->last_seq;
    t = q->ready;
    while (!sim_queue_done(q, seq))
        pthread_cond_wait(&p->done_cv, &p->lock);
    sim_unlock(p);
    sim_host_saw(p, t);
}

static int sim_queue_sync(weft__queue *wq)
{
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);

    sim_lock(p);
    if (q->cap) {
        sim_unlock(p);
        return weft__error(WEFT_EINVAL,
                           "sim: queue_sync of a queue on %s that takes part "
                           "in a capture (its work is recorded, not run)",
                           wq->ctx->dev->name);
    }
    sim_queue_drain(p, q);
    return 0;
}

static void sim_queue_release(weft__queue *wq)
{
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);

    sim_lock(p);
    if (q->cap)
        sim_capture_forget(p, q);
    sim_queue_drain(p, q);
    if (q->started) {
        sim_lock(p);
        q->stop = 1;
        pthread_cond_signal(&q->work_cv);
        sim_unlock(p);
        pthread_join(q->worker, NULL);
    }
    weft__assert(!q->pending);
    pthread_cond_destroy(&q->work_cv);
}

/* ---- memory ------------------------------------------------------------ */

static int sim_mem_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    sim_platform *p = sim_ctx_platform(ctx);
    sim_device *d = sim_dev(ctx->dev);
    sim_mem *m = weft__calloc(1, sizeof *m);
    uint64_t used;
    int rc = 0;

    if (!m)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a mem");
    sim_lock(p);
    used = d->mem_used;
    if (size > p->cfg.mem - used)
        rc = WEFT_EDEVMEM;
    else
        d->mem_used += size;
    sim_unlock(p);
    if (rc < 0) {
        weft__free(m);
        return weft__driver_error(
            WEFT_EDEVMEM, "sim", 0, "out of device memory",
            "sim: %zu bytes do not fit on %s (%llu of %llu bytes in use)", size,
            ctx->dev->name, (unsigned long long)used,
            (unsigned long long)p->cfg.mem);
    }
    if (p->cfg.real_data) {
        m->data = weft__malloc(size);
        if (!m->data) {
            sim_lock(p);
            d->mem_used -= size;
            sim_unlock(p);
            weft__free(m);
            return weft__error(WEFT_ENOMEM,
                               "sim: cannot allocate %zu bytes of host memory "
                               "for device memory of %s (real_data=1)",
                               size, ctx->dev->name);
        }
        m->owned = 1;
    }
    m->base.kind = WEFT__MEM_DEVICE;
    m->base.size = size;
    *out = &m->base;
    return 0;
}

static int sim_host_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    sim_platform *p = sim_ctx_platform(ctx);
    sim_mem *m = weft__calloc(1, sizeof *m);

    if (m)
        m->data = weft__malloc(size);
    if (!m || !m->data) {
        weft__free(m);
        return weft__error(WEFT_ENOMEM,
                           "sim: cannot allocate %zu bytes of pinned memory",
                           size);
    }
    m->owned = 1;
    m->base.kind = WEFT__MEM_PINNED;
    m->base.size = size;
    m->base.host = m->data;
    sim_lock(p);
    m->next = p->pinned;
    p->pinned = m;
    sim_unlock(p);
    *out = &m->base;
    return 0;
}

static int sim_host_is_pinned(weft__context *ctx, const void *ptr, size_t size)
{
    sim_platform *p = sim_ctx_platform(ctx);
    const unsigned char *a = ptr;
    int in = 0;

    sim_lock(p);
    for (sim_mem *m = p->pinned; m && !in; m = m->next)
        in = a >= m->data && size <= m->base.size &&
             (size_t)(a - m->data) <= m->base.size - size;
    sim_unlock(p);
    return in;
}

static int sim_host_register(weft__context *ctx, void *ptr, size_t size,
                             weft__mem **out)
{
    sim_mem *m = weft__calloc(1, sizeof *m);

    if (!m)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a mem");
    m->data = ptr;
    m->base.kind = WEFT__MEM_REGISTERED;
    m->base.size = size;
    m->base.host = ptr;
    *out = &m->base;
    return 0;
}

static void sim_mem_free(weft__mem *wm)
{
    sim_mem *m = (sim_mem *)wm;

    if (wm->kind == WEFT__MEM_DEVICE) {
        sim_platform *p = sim_ctx_platform(wm->ctx);
        sim_device *d = sim_dev(wm->ctx->dev);

        sim_lock(p);
        weft__assert(d->mem_used >= wm->size);
        d->mem_used -= wm->size;
        sim_unlock(p);
    }
    if (wm->kind == WEFT__MEM_PINNED) {
        sim_platform *p = sim_ctx_platform(wm->ctx);
        sim_mem **pp;

        sim_lock(p);
        for (pp = &p->pinned; *pp != m; pp = &(*pp)->next)
            ;
        *pp = m->next;
        sim_unlock(p);
    }
    if (m->owned)
        weft__free(m->data);
    weft__free(m);
}

/* The bytes of m at off, or NULL when m is counted device memory. */
static unsigned char *sim_bytes(weft__mem *wm, size_t off)
{
    sim_mem *m = (sim_mem *)wm;

    return m->data ? m->data + off : NULL;
}

/* ---- captures ---------------------------------------------------------- */

/* Under the lock: the capture in progress with id (not 0), or NULL. */
static sim_capture *sim_capture_find(const sim_platform *p, uint64_t id)
{
    sim_capture *c = p->captures;

    while (c && c->id != id)
        c = c->next;
    return c;
}

/* Under the lock: the capture in progress that e was last recorded in. */
static sim_capture *sim_event_capture(const sim_platform *p, const sim_event *e)
{
    return e->cap_id ? sim_capture_find(p, e->cap_id) : NULL;
}

/* A node of kind with nothing else set. */
static sim_node sim_node_of(weft__sim_op_kind kind)
{
    sim_node n;

    memset(&n, 0, sizeof n);
    n.kind = kind;
    n.prev = n.dep = -1;
    return n;
}

/* A launch's arguments with their values, in one allocation; or NULL. */
static weft__karg *sim_args_copy(const weft__karg *args, unsigned nargs)
{
    size_t bytes = SIM_ALIGN_UP(nargs * sizeof *args);
    unsigned char *blob, *val;
    weft__karg *copy;

    for (unsigned i = 0; i < nargs; i++)
        if (args[i].type != WEFT_PARAM_BUFFER &&
            args[i].type != WEFT_PARAM_LOCAL)
            bytes += SIM_ALIGN_UP(args[i].size);
    if (!(blob = weft__malloc(bytes)))
        return NULL;
    copy = (weft__karg *)(void *)blob;
    val = blob + SIM_ALIGN_UP(nargs * sizeof *args);
    for (unsigned i = 0; i < nargs; i++) {
        copy[i] = args[i];
        if (args[i].type != WEFT_PARAM_BUFFER &&
            args[i].type != WEFT_PARAM_LOCAL) {
            if (args[i].size)
                memcpy(val, args[i].u.value, args[i].size);
            copy[i].u.value = val;
            val += SIM_ALIGN_UP(args[i].size);
        }
    }
    return copy;
}

/*
 * Under the lock, q in a capture: append node (a launch's arguments are
 * copied) as q's next. Its index, or < 0 on error (nothing changed).
 */
static long sim_capture_add(sim_queue *q, const sim_node *node)
{
    sim_graph *g = q->cap->g;
    weft__karg *args = NULL;
    sim_node *n;

    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        sim_node *grown = weft__realloc(g->nodes, cap * sizeof *grown);

        if (!grown)
            return weft__error(WEFT_ENOMEM, "sim: out of memory for a node "
                                            "of a capture");
        g->nodes = grown;
        g->cap = cap;
    }
    if (node->kind == WEFT__SIM_KERNEL && node->nargs &&
        !(args = sim_args_copy(node->args, node->nargs)))
        return weft__error(WEFT_ENOMEM, "sim: out of memory for the "
                                        "arguments of a captured launch");
    n = &g->nodes[g->n];
    *n = *node;
    n->q = q;
    n->args = args;
    n->prev = q->cap_last;
    q->cap_last = (long)g->n;
    return (long)g->n++;
}

/*
 * If q takes part in a capture, append node to it instead of running it:
 * 1 if so, 0 if q is not capturing, < 0 on error.
 */
static int sim_capture_try(weft__queue *wq, const sim_node *node)
{
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    long rc = 0;
    int in;

    sim_lock(p);
    in = q->cap != NULL;
    if (in)
        rc = sim_capture_add(q, node);
    sim_unlock(p);
    if (!in)
        return 0;
    return rc < 0 ? (int)rc : 1;
}

/* ---- copies and fills -------------------------------------------------- */

/*
 * A copy on q: recorded if q is capturing (> 0), else 0 to run it; < 0 on
 * error. host is the host side of an h2d or d2h.
 */
static int sim_capture_copy(weft__queue *q, weft__sim_op_kind kind,
                            weft__mem *dst, size_t dst_off, weft__mem *src,
                            size_t src_off, const void *host, size_t size)
{
    sim_node n = sim_node_of(kind);

    n.dst = dst;
    n.dst_off = dst_off;
    n.src = src;
    n.src_off = src_off;
    n.host = (void *)(uintptr_t)host;
    n.size = size;
    return sim_capture_try(q, &n);
}

static int sim_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        const void *src, size_t size)
{
    int rc =
        sim_capture_copy(q, WEFT__SIM_H2D, dst, dst_off, NULL, 0, src, size);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    return sim_copy(q, WEFT__SIM_H2D, sim_bytes(dst, dst_off), src, size,
                    WEFT__SIM_HOST, sim_dev_index(dst));
}

static int sim_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                        size_t src_off, size_t size)
{
    int rc =
        sim_capture_copy(q, WEFT__SIM_D2H, NULL, 0, src, src_off, dst, size);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    return sim_copy(q, WEFT__SIM_D2H, dst, sim_bytes(src, src_off), size,
                    sim_dev_index(src), WEFT__SIM_HOST);
}

static int sim_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        weft__mem *src, size_t src_off, size_t size)
{
    int rc = sim_capture_copy(q, WEFT__SIM_D2D, dst, dst_off, src, src_off,
                              NULL, size);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    return sim_copy(q, WEFT__SIM_D2D, sim_bytes(dst, dst_off),
                    sim_bytes(src, src_off), size, sim_dev_index(src),
                    sim_dev_index(dst));
}

static int sim_copy_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                         weft__mem *src, size_t src_off, size_t size)
{
    weft__device *sd = src->ctx->dev, *dd = dst->ctx->dev;
    sim_platform *p = sim_ctx_platform(q->ctx);
    int rc;

    if (sd->platform != &p->base || dd->platform != &p->base)
        return weft__error(WEFT_EINVAL,
                           "sim: copy_peer between %s and %s: not devices of "
                           "one simulated machine",
                           sd->name, dd->name);
    if (!sim_peers(p, sd, dd))
        return weft__driver_error(WEFT_ENOTSUP, "sim", 0, "no peer access",
                                  "sim: %s cannot access %s (peer=%u, "
                                  "peer_group=%u): stage through the host",
                                  dd->name, sd->name, p->cfg.peer,
                                  p->cfg.peer_group);
    if ((rc = sim_capture_copy(q, WEFT__SIM_PEER, dst, dst_off, src, src_off,
                               NULL, size)) != 0)
        return rc < 0 ? rc : 0;
    return sim_copy(q, WEFT__SIM_PEER, sim_bytes(dst, dst_off),
                    sim_bytes(src, src_off), size, sim_dev_index(src),
                    sim_dev_index(dst));
}

static int sim_fill_prep(const sim_platform *p, weft__mem *dst, size_t off,
                         const void *pattern, size_t pattern_size, size_t size,
                         sim_prep *pr)
{
    const sim_config *c = &p->cfg;
    unsigned char *bytes = sim_bytes(dst, off);

    memset(pr, 0, sizeof *pr);
    if (bytes) {
        sim_work *w = weft__calloc(1, sizeof *w);

        if (!w)
            return weft__error(WEFT_ENOMEM, "sim: out of memory for a fill");
        w->dst = bytes;
        w->size = size;
        w->pattern_size = pattern_size;
        memcpy(w->pattern, pattern, pattern_size);
        pr->w = w;
        if (p->log)
            sim_prep_access(pr, bytes, size, 1);
    }
    pr->op.kind = WEFT__SIM_FILL;
    pr->op.bytes = size;
    pr->op.src_device = WEFT__SIM_HOST;
    pr->op.dst_device = sim_dev_index(dst);
    pr->op.event_device = WEFT__SIM_HOST;
    pr->dur = sim_xfer_ns(c->launch_lat, c->d2d_bw, size);
    pr->first = WEFT__SIM_ENGINE_COMPUTE;
    pr->count = 1;
    return 0;
}

static int sim_fill(weft__queue *wq, weft__mem *dst, size_t off,
                    const void *pattern, size_t pattern_size, size_t size)
{
    sim_node n = sim_node_of(WEFT__SIM_FILL);
    sim_prep pr;
    int rc;

    n.dst = dst;
    n.dst_off = off;
    n.size = size;
    n.pattern_size = pattern_size;
    memcpy(n.pattern, pattern, pattern_size);
    if ((rc = sim_capture_try(wq, &n)) != 0)
        return rc < 0 ? rc : 0;
    rc = sim_fill_prep(sim_ctx_platform(wq->ctx), dst, off, pattern,
                       pattern_size, size, &pr);
    return rc < 0 ? rc : sim_enqueue((sim_queue *)wq, &pr);
}

/* ---- modules and kernels ----------------------------------------------- */

static int sim_module_create(weft__context *ctx, const weft__module_source *src,
                             weft__module **out)
{
    const weft_host_kernel *table = src->data;
    size_t n = src->size, bytes, off;
    sim_module *m;
    char *blob;

    if (src->kind != WEFT__SRC_HOST_TABLE)
        return weft__error(WEFT_ENOTSUP,
                           "sim: %s: a simulated device takes only host "
                           "kernel tables",
                           src->name ? src->name : "module");
    if (n > UINT32_MAX)
        return weft__error(WEFT_EINVAL, "sim: %zu kernels in one module", n);
    /*
     * Everything in one allocation, so that the module does not depend on
     * the caller's table: the module, its kernels, each kernel's parameter
     * types and names. Every piece is rounded to SIM_ALIGN.
     */
    bytes = SIM_ALIGN_UP(sizeof *m) + SIM_ALIGN_UP(n * sizeof(sim_kernel));
    for (size_t i = 0; i < n; i++) {
        if (!table[i].name || !*table[i].name)
            return weft__error(WEFT_EINVAL, "sim: %s: kernel %zu has no name",
                               src->name ? src->name : "module", i);
        if (table[i].nparams && !table[i].params)
            return weft__error(WEFT_EINVAL,
                               "sim: %s: kernel %s has %u parameters but no "
                               "types",
                               src->name ? src->name : "module", table[i].name,
                               table[i].nparams);
        bytes += SIM_ALIGN_UP(table[i].nparams * sizeof(size_t)) +
                 SIM_ALIGN_UP(table[i].nparams * sizeof(weft_param_type)) +
                 SIM_ALIGN_UP(strlen(table[i].name) + 1);
    }
    blob = weft__calloc(1, bytes);
    if (!blob)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a module");
    m = (sim_module *)(void *)blob;
    off = SIM_ALIGN_UP(sizeof *m);
    m->kernels = (sim_kernel *)(void *)(blob + off);
    m->nkernels = (unsigned)n;
    off += SIM_ALIGN_UP(n * sizeof(sim_kernel));
    for (size_t i = 0; i < n; i++) {
        const weft_host_kernel *h = &table[i];
        sim_kernel *k = &m->kernels[i];
        size_t *sizes = (size_t *)(void *)(blob + off);
        weft_param_type *types;
        char *name;

        off += SIM_ALIGN_UP(h->nparams * sizeof(size_t));
        types = (weft_param_type *)(void *)(blob + off);
        off += SIM_ALIGN_UP(h->nparams * sizeof(weft_param_type));
        name = blob + off;
        off += SIM_ALIGN_UP(strlen(h->name) + 1);
        memcpy(name, h->name, strlen(h->name) + 1);
        for (unsigned j = 0; j < h->nparams; j++) {
            types[j] = h->params[j];
            if (h->params[j] == WEFT_PARAM_BUFFER)
                sizes[j] = sizeof(uint64_t);
            else if (h->params[j] == WEFT_PARAM_BYTES)
                sizes[j] = h->param_sizes ? h->param_sizes[j] : 0;
            else
                sizes[j] = weft_param_type_size(h->params[j]);
        }
        k->hk = *h;
        k->hk.name = name;
        k->hk.params = types;
        k->hk.param_sizes = sizes;
        k->base.name = name;
        k->base.params_known = 1;
        k->base.nparams = h->nparams;
        k->base.params = types;
        k->base.param_sizes = sizes;
    }
    weft__assert_internal(off == bytes);
    *out = &m->base;
    return 0;
}

static void sim_module_destroy(weft__module *mod)
{
    weft__free(mod);
}

static int sim_kernel_get(weft__module *mod, const char *name,
                          weft__kernel **out)
{
    sim_module *m = (sim_module *)mod;

    for (unsigned i = 0; i < m->nkernels; i++)
        if (!strcmp(m->kernels[i].hk.name, name)) {
            *out = &m->kernels[i].base;
            return 0;
        }
    return weft__error(WEFT_ENOTFOUND, "sim: no kernel named '%s' in module",
                       name);
}

/*
 * A work item with the launch's argument vector and copies of the values,
 * laid out as [sim_work | argv | values...]. Buffers point at real bytes
 * (NULL in counted memory); local scratch exists only if the kernel will
 * run.
 */
static sim_work *sim_launch_work(const weft__karg *args, unsigned nargs,
                                 int run)
{
    size_t argv_off = SIM_ALIGN_UP(sizeof(sim_work));
    size_t val_off = SIM_ALIGN_UP(argv_off + nargs * sizeof(void *));
    size_t bytes = val_off;
    unsigned char *blob, *val;
    sim_work *w;

    for (unsigned i = 0; i < nargs; i++)
        if (args[i].type != WEFT_PARAM_BUFFER &&
            (args[i].type != WEFT_PARAM_LOCAL || run))
            bytes += SIM_ALIGN_UP(args[i].size);
    blob = weft__calloc(1, bytes);
    if (!blob)
        return NULL;
    w = (sim_work *)(void *)blob;
    w->argv = (void **)(void *)(blob + argv_off);
    val = blob + val_off;
    for (unsigned i = 0; i < nargs; i++) {
        const weft__karg *a = &args[i];

        if (a->type == WEFT_PARAM_BUFFER) {
            w->argv[i] = sim_bytes(a->u.buf.mem, a->u.buf.offset);
        } else if (a->type == WEFT_PARAM_LOCAL) {
            if (run) {
                w->argv[i] = val;
                val += SIM_ALIGN_UP(a->size);
            }
        } else {
            memcpy(val, a->u.value, a->size);
            w->argv[i] = val;
            val += SIM_ALIGN_UP(a->size);
        }
    }
    return w;
}

static int sim_launch_prep(const sim_platform *p, const sim_kernel *k,
                           const weft__grid *grid, const weft__karg *args,
                           unsigned nargs, sim_prep *pr)
{
    const sim_config *c = &p->cfg;
    uint64_t items = weft__grid_items(grid), cost;
    int run = c->real_data && k->hk.fn;
    sim_work *w;

    memset(pr, 0, sizeof *pr);
    w = sim_launch_work(args, nargs, run);
    if (!w)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a launch of %s",
                           k->hk.name);
    /* The cost function is the caller's code: call it outside the lock. */
    if (k->hk.sim_cost)
        cost = k->hk.sim_cost(items, w->argv, k->hk.sim_cost_user);
    else
        cost = sim_ns((double)items * c->item_ns);
    for (unsigned i = 0; p->log && i < nargs; i++) {
        const weft__karg *a = &args[i];
        size_t room;

        if (a->type != WEFT_PARAM_BUFFER || !a->u.buf.mem)
            continue;
        room = a->u.buf.mem->size - a->u.buf.offset;
        sim_prep_access(pr, sim_bytes(a->u.buf.mem, a->u.buf.offset),
                        a->size && a->size < room ? a->size : room,
                        !a->access || (a->access & WEFT_WRITE));
        /* Read and written: a read access too, for the pairs it makes. */
    }
    if (run) {
        w->kfn = k->hk.fn;
        w->grid = *grid;
        pr->w = w;
    } else {
        weft__free(w);
    }
    pr->op.kind = WEFT__SIM_KERNEL;
    pr->op.items = items;
    pr->op.src_device = pr->op.dst_device = pr->op.event_device =
        WEFT__SIM_HOST;
    weft__strlcpy(pr->op.kernel, k->hk.name, sizeof pr->op.kernel);
    pr->dur = sim_ns(c->launch_lat) + cost;
    pr->first = WEFT__SIM_ENGINE_COMPUTE;
    pr->count = 1;
    return 0;
}

static int sim_launch(weft__queue *wq, weft__kernel *wk, const weft__grid *grid,
                      const weft__karg *args, unsigned nargs)
{
    sim_node n = sim_node_of(WEFT__SIM_KERNEL);
    sim_prep pr;
    int rc;

    n.k = wk;
    n.grid = *grid;
    n.args = (weft__karg *)(uintptr_t)args; /* copied by sim_capture_add */
    n.nargs = nargs;
    if ((rc = sim_capture_try(wq, &n)) != 0)
        return rc < 0 ? rc : 0;
    rc = sim_launch_prep(sim_ctx_platform(wq->ctx), (const sim_kernel *)wk,
                         grid, args, nargs, &pr);
    return rc < 0 ? rc : sim_enqueue((sim_queue *)wq, &pr);
}

/* ---- events and host functions ----------------------------------------- */

static int sim_event_create(weft__context *ctx, unsigned flags,
                            weft__event **out)
{
    sim_platform *p = sim_ctx_platform(ctx);
    sim_event *e = weft__calloc(1, sizeof *e);

    if (!e)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for an event");
    sim_lock(p);
    e->id = ++p->next_event;
    sim_unlock(p);
    e->device = WEFT__SIM_HOST;
    *out = &e->base;
    return 0;
}

/*
 * Under the lock: record e on q, with a new marker m and an item w for it
 * (both allocated; both taken, kept or freed, whatever the outcome).
 */
static int sim_record_submit(sim_event *e, sim_queue *q, sim_marker *m,
                             sim_work *w)
{
    weft__sim_op op = {0};
    int rc;

    op.kind = WEFT__SIM_EVENT_RECORD;
    op.src_device = op.dst_device = WEFT__SIM_HOST;
    op.event = e->id;
    op.event_device = (int)q->base.ctx->dev->driver_index;
    /* With nothing unfinished on q the marker is set at once. */
    m->refs = 1;
    m->done = 0;
    if (q->pending) {
        m->refs++;
        w->marker = m;
    } else {
        m->done = 1;
        weft__free(w);
        w = NULL;
    }
    rc = sim_submit(q, &op, 0, 0, 0, w, NULL, 0);
    if (rc < 0) {
        weft__free(w);
        weft__free(m);
        return rc;
    }
    sim_marker_unref(e->marker);
    e->marker = m;
    e->time = op.end_ns;
    e->device = op.device;
    e->cap_id = 0;
    return 0;
}

/* Under the lock: q waits for e; the item w (allocated) is taken. */
static int sim_wait_submit(sim_platform *p, sim_event *e, sim_queue *q,
                           sim_work *w)
{
    weft__sim_op op = {0};
    uint64_t delay, ready;
    int rc;

    op.kind = WEFT__SIM_EVENT_WAIT;
    op.src_device = op.dst_device = WEFT__SIM_HOST;
    op.event = e->id;
    op.event_device = e->device;
    /* From when the wait itself can start (sim_submit's ready time), so
     * that it ends at the event's time and not past it. */
    ready = WEFT__MAX(q->ready, sim_host_now(p));
    delay = e->marker && e->time > ready ? e->time - ready : 0;
    /* Only unfinished work needs the worker to wait. */
    if (e->marker && !e->marker->done) {
        w->marker = e->marker;
        e->marker->refs++;
    } else {
        weft__free(w);
        w = NULL;
    }
    rc = sim_submit(q, &op, delay, 0, 0, w, NULL, 0);
    if (rc < 0 && w) {
        e->marker->refs--; /* still referenced by e: never reaches 0 */
        weft__free(w);
    }
    return rc;
}

static int sim_event_record(weft__event *we, weft__queue *wq)
{
    sim_event *e = (sim_event *)we;
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    sim_marker *m = weft__calloc(1, sizeof *m);
    sim_work *w = weft__calloc(1, sizeof *w);
    int rc;

    if (!m || !w) {
        weft__free(m);
        weft__free(w);
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a record");
    }
    sim_lock(p);
    if (q->cap) {
        /* A capture event: what it names is the node, not a marker. */
        sim_node n = sim_node_of(WEFT__SIM_EVENT_RECORD);
        long i;

        n.event = q->cap->g->nevents;
        i = sim_capture_add(q, &n);
        if (i >= 0) {
            q->cap->g->nevents++;
            sim_marker_unref(e->marker);
            e->marker = NULL;
            e->device = (int)wq->ctx->dev->driver_index;
            e->cap_id = q->cap->id;
            e->cap_node = i;
        }
        sim_unlock(p);
        weft__free(m);
        weft__free(w);
        return i < 0 ? (int)i : 0;
    }
    rc = sim_record_submit(e, q, m, w);
    sim_unlock(p);
    return rc;
}

/*
 * Under the lock: q, in a capture or waiting on an event of capture ec (or
 * both), waits for e. See "Native graphs" at the top.
 */
static int sim_capture_wait(sim_queue *q, sim_event *e, sim_capture *ec)
{
    const char *dev = q->base.ctx->dev->name;
    sim_node n = sim_node_of(WEFT__SIM_EVENT_WAIT);
    sim_graph *g;
    long i;

    if (!ec) {
        if (e->marker && !e->marker->done)
            return weft__error(WEFT_EINVAL,
                               "sim: a queue on %s in a capture waits for an "
                               "event of unfinished work outside the capture "
                               "(the dependency would cross the capture's "
                               "boundary)",
                               dev);
        return 0; /* complete, or never recorded: nothing to wait for */
    }
    if (q->cap && q->cap != ec)
        return weft__error(WEFT_EINVAL,
                           "sim: a queue on %s in one capture waits for an "
                           "event recorded in another capture",
                           dev);
    g = ec->g;
    n.dep = e->cap_node;
    n.event = g->nodes[e->cap_node].event;
    if (q->cap)
        return (i = sim_capture_add(q, &n)) < 0 ? (int)i : 0;
    /* q joins the capture with this wait. */
    if (g->nqueues == g->cap_queues) {
        unsigned cap = g->cap_queues * 2;
        sim_queue **grown = weft__realloc(g->queues, cap * sizeof *grown);

        if (!grown)
            return weft__error(WEFT_ENOMEM,
                               "sim: out of memory for a queue joining a "
                               "capture");
        g->queues = grown;
        g->cap_queues = cap;
    }
    q->cap = ec;
    q->cap_last = -1;
    if ((i = sim_capture_add(q, &n)) < 0) {
        q->cap = NULL;
        return (int)i;
    }
    g->queues[g->nqueues++] = q;
    return 0;
}

static int sim_queue_wait_event(weft__queue *wq, weft__event *we)
{
    sim_event *e = (sim_event *)we;
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    sim_capture *ec;
    sim_work *w;
    int rc;

    if (we->ctx->dev->platform != &p->base)
        return weft__error(WEFT_EINVAL,
                           "sim: queue on %s cannot wait on an event of %s: "
                           "not one simulated machine",
                           wq->ctx->dev->name, we->ctx->dev->name);
    w = weft__calloc(1, sizeof *w);
    if (!w)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a wait");
    sim_lock(p);
    ec = sim_event_capture(p, e);
    if (ec || q->cap) {
        rc = sim_capture_wait(q, e, ec);
        weft__free(w);
    } else {
        rc = sim_wait_submit(p, e, q, w);
    }
    sim_unlock(p);
    return rc;
}

/* The refusal of a host's wait for, or query of, a capture event. */
static int sim_captured_event(const char *op, const weft__event *we)
{
    return weft__error(WEFT_EINVAL,
                       "sim: %s of an event of %s recorded in a capture in "
                       "progress (its work has not been enqueued to run)",
                       op, we->ctx->dev->name);
}

static int sim_event_query(weft__event *we)
{
    sim_event *e = (sim_event *)we;
    sim_platform *p = sim_ctx_platform(we->ctx);
    int done, captured;

    sim_lock(p);
    captured = sim_event_capture(p, e) != NULL;
    done = !e->marker || (e->marker->done && e->time <= sim_host_now(p));
    sim_unlock(p);
    if (captured)
        return sim_captured_event("event_query", we);
    return done ? 0 : WEFT_ENOTREADY;
}

static int sim_event_sync(weft__event *we)
{
    sim_event *e = (sim_event *)we;
    sim_platform *p = sim_ctx_platform(we->ctx);
    sim_marker *m;
    uint64_t t;

    sim_lock(p);
    if (sim_event_capture(p, e)) {
        sim_unlock(p);
        return sim_captured_event("event_sync", we);
    }
    m = e->marker;
    t = e->time;
    /* The caller keeps e (and so m) alive while it waits. */
    while (m && !m->done)
        pthread_cond_wait(&p->done_cv, &p->lock);
    sim_unlock(p);
    if (m)
        sim_host_saw(p, t);
    return 0;
}

static int sim_event_elapsed(weft__event *ws, weft__event *we, uint64_t *ns)
{
    sim_event *s = (sim_event *)ws, *e = (sim_event *)we;
    sim_platform *p = sim_ctx_platform(ws->ctx);
    int rc = 0;

    if (we->ctx->dev->platform != &p->base)
        return weft__error(WEFT_EINVAL,
                           "sim: event_elapsed: events of two simulated "
                           "machines");
    sim_lock(p);
    if (!s->marker || !e->marker)
        rc = WEFT_EINVAL;
    else if (!s->marker->done || !e->marker->done)
        rc = WEFT_ENOTREADY;
    else if (e->time < s->time)
        rc = WEFT_ERANGE;
    else
        *ns = e->time - s->time;
    sim_unlock(p);
    if (rc == WEFT_EINVAL)
        return weft__error(rc,
                           "sim: event_elapsed: the %s event was never "
                           "recorded (or last in a capture)",
                           s->marker ? "end" : "start");
    if (rc == WEFT_ENOTREADY)
        return weft__error(rc, "sim: event_elapsed: events not complete");
    if (rc == WEFT_ERANGE)
        return weft__error(rc,
                           "sim: event_elapsed: the end event is earlier in "
                           "virtual time than the start event");
    return 0;
}

static void sim_event_destroy(weft__event *we)
{
    sim_event *e = (sim_event *)we;
    sim_platform *p = sim_ctx_platform(we->ctx);

    sim_lock(p);
    sim_marker_unref(e->marker);
    sim_unlock(p);
    weft__free(e);
}

static int sim_host_fn_prep(const sim_platform *p, weft__host_fn *fn,
                            void *user, sim_prep *pr)
{
    sim_work *w = weft__calloc(1, sizeof *w);

    memset(pr, 0, sizeof *pr);
    if (!w)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a host fn");
    w->fn = fn;
    w->user = user;
    pr->w = w;
    pr->op.kind = WEFT__SIM_HOST_FN;
    pr->op.src_device = pr->op.dst_device = pr->op.event_device =
        WEFT__SIM_HOST;
    pr->dur = sim_ns(p->cfg.host_fn_ns);
    return 0;
}

static int sim_host_fn(weft__queue *wq, weft__host_fn *fn, void *user)
{
    sim_node n = sim_node_of(WEFT__SIM_HOST_FN);
    sim_prep pr;
    int rc;

    n.fn = fn;
    n.user = user;
    if ((rc = sim_capture_try(wq, &n)) != 0)
        return rc < 0 ? rc : 0;
    rc = sim_host_fn_prep(sim_ctx_platform(wq->ctx), fn, user, &pr);
    return rc < 0 ? rc : sim_enqueue((sim_queue *)wq, &pr);
}

/* ---- native graphs ----------------------------------------------------- */

static int sim_graph_supported(const weft__device *dev)
{
    return sim_platform_of((weft__device *)(uintptr_t)dev)->cfg.graphs != 0;
}

/* Free what g holds; under the lock once g has events (markers). */
static void sim_graph_clear(sim_graph *g)
{
    for (size_t i = 0; i < g->n; i++)
        weft__free(g->nodes[i].args);
    if (g->events)
        for (unsigned i = 0; i < g->nevents + 1 + g->nqueues; i++)
            sim_marker_unref(g->events[i].marker);
    weft__free(g->nodes);
    weft__free(g->queues);
    weft__free(g->events);
    memset(g, 0, sizeof *g);
}

/* Under the lock: c is no longer in progress; its queues leave it. */
static void sim_capture_unlink(sim_platform *p, sim_capture *c)
{
    sim_capture **link;

    for (link = &p->captures; *link != c; link = &(*link)->next)
        ;
    *link = c->next;
    for (unsigned i = 0; i < c->g->nqueues; i++) {
        c->g->queues[i]->cap = NULL;
        c->g->queues[i]->cap_last = -1;
    }
}

/* Under the lock: free a capture that has been unlinked. */
static void sim_capture_free(sim_capture *c)
{
    sim_graph_clear(c->g);
    weft__free(c->g);
    weft__free(c);
}

static void sim_capture_forget(sim_platform *p, sim_queue *q)
{
    sim_capture *c = q->cap;
    sim_graph *g = c->g;

    if (g->queues[0] == q) {
        /* The capture's own queue: nothing can end it any more. */
        sim_capture_unlink(p, c);
        sim_capture_free(c);
        return;
    }
    c->broken = "a queue that took part in it was destroyed";
    for (unsigned i = 1; i < g->nqueues; i++)
        if (g->queues[i] == q) {
            memmove(g->queues + i, g->queues + i + 1,
                    (g->nqueues - i - 1) * sizeof *g->queues);
            g->nqueues--;
            break;
        }
    q->cap = NULL;
    q->cap_last = -1;
}

/*
 * Under the lock, before the queues leave: the first queue of g that was
 * not joined back (its last node does not come before queues[0]'s last
 * one, in queue order and through waits), or NULL; *rc < 0 when out of
 * memory.
 */
static sim_queue *sim_graph_unjoined(const sim_graph *g, int *rc)
{
    unsigned char *seen;
    long *stack;
    size_t top = 0;
    sim_queue *bad = NULL;

    *rc = 0;
    if (g->nqueues < 2 || g->n == 0)
        return NULL;
    seen = weft__calloc(g->n, 1);
    /* Each node is expanded once and pushes at most two others. */
    stack = weft__malloc((2 * g->n + 1) * sizeof *stack);
    if (!seen || !stack) {
        weft__free(seen);
        weft__free(stack);
        *rc = weft__error(WEFT_ENOMEM, "sim: out of memory ending a capture");
        return NULL;
    }
    if (g->queues[0]->cap_last >= 0)
        stack[top++] = g->queues[0]->cap_last;
    while (top) {
        long i = stack[--top];
        const sim_node *n = &g->nodes[i];

        if (seen[i])
            continue;
        seen[i] = 1;
        if (n->prev >= 0 && !seen[n->prev])
            stack[top++] = n->prev;
        if (n->dep >= 0 && !seen[n->dep])
            stack[top++] = n->dep;
    }
    for (unsigned k = 1; k < g->nqueues && !bad; k++)
        if (g->queues[k]->cap_last >= 0 && !seen[g->queues[k]->cap_last])
            bad = g->queues[k];
    weft__free(seen);
    weft__free(stack);
    return bad;
}

static void sim_graph_destroy(void *graph)
{
    sim_graph *g = graph;
    sim_platform *p;

    if (!g)
        return;
    p = g->p;
    sim_lock(p);
    sim_graph_clear(g);
    sim_unlock(p);
    weft__free(g);
}

static int sim_graph_begin(weft__queue *wq)
{
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    sim_capture *c;
    sim_graph *g;

    if (!p->cfg.graphs)
        return weft__error(WEFT_ENOTSUP,
                           "sim: %s makes no native graphs (sim config "
                           "graphs=1 turns them on)",
                           wq->ctx->dev->name);
    c = weft__calloc(1, sizeof *c);
    g = weft__calloc(1, sizeof *g);
    if (g)
        g->queues = weft__calloc(4, sizeof *g->queues);
    if (!c || !g || !g->queues) {
        if (g)
            weft__free(g->queues);
        weft__free(g);
        weft__free(c);
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a capture");
    }
    g->p = p;
    g->cap_queues = 4;
    sim_lock(p);
    if (q->cap) {
        sim_unlock(p);
        weft__free(g->queues);
        weft__free(g);
        weft__free(c);
        return weft__error(WEFT_EINVAL,
                           "graph_begin: a queue on %s takes part in a "
                           "capture already",
                           wq->ctx->dev->name);
    }
    c->id = ++p->next_capture;
    c->g = g;
    g->queues[g->nqueues++] = q;
    q->cap = c;
    q->cap_last = -1;
    c->next = p->captures;
    p->captures = c;
    sim_unlock(p);
    return 0;
}

static int sim_graph_end(weft__queue *wq, void *old, void **graph, int *updated)
{
    sim_queue *q = (sim_queue *)wq, *bad = NULL;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    const char *broken;
    unsigned bad_id = 0;
    int bad_dev = 0, rc = 0;
    sim_capture *c;
    sim_graph *g;

    if (updated)
        *updated = 0;
    sim_lock(p);
    c = q->cap;
    if (!c || c->g->queues[0] != q) {
        sim_unlock(p);
        sim_graph_destroy(old); /* the driver's, as the interface says */
        return weft__error(WEFT_EINVAL,
                           "graph_end: no capture began on this queue of %s",
                           wq->ctx->dev->name);
    }
    g = c->g;
    broken = c->broken;
    if (graph && !broken) {
        bad = sim_graph_unjoined(g, &rc);
        if (bad) {
            bad_id = bad->id;
            bad_dev = (int)bad->base.ctx->dev->driver_index;
        }
    }
    if (graph && !broken && !bad && rc == 0) {
        unsigned ne = g->nevents + 1 + g->nqueues;

        if (!(g->events = weft__calloc(ne, sizeof *g->events)))
            rc = weft__error(WEFT_ENOMEM, "sim: out of memory for a graph");
        for (unsigned i = 0; g->events && i < ne; i++) {
            g->events[i].id = ++p->next_event;
            g->events[i].device = WEFT__SIM_HOST;
        }
    }
    sim_capture_unlink(p, c);
    if (!graph || broken || bad || rc < 0) {
        sim_capture_free(c); /* no events yet: nothing to unref */
        sim_unlock(p);
        sim_graph_destroy(old);
        if (broken && graph)
            return weft__error(WEFT_EINVAL,
                               "graph_end: the capture on %s failed: %s",
                               wq->ctx->dev->name, broken);
        if (bad)
            return weft__error(WEFT_EINVAL,
                               "graph_end: the capture on %s (queue %u) has a "
                               "queue that was not joined back (queue %u on "
                               "device %d): record an event on it and make a "
                               "queue of the capture wait for it before the "
                               "end (unjoined)",
                               wq->ctx->dev->name, q->id, bad_id, bad_dev);
        return rc;
    }
    sim_unlock(p);
    weft__free(c);
    weft__debug("sim", "a graph of %zu operations on %u queues%s", g->n,
                g->nqueues, old ? ", updating the last one" : "");
    if (old) {
        /* An update in place: old takes the new nodes and events. */
        sim_graph *o = old, t = *o;

        weft__assert(o->p == p);
        *o = *g;
        *g = t;
        sim_graph_destroy(g);
        g = o;
        if (updated)
            *updated = 1;
    }
    *graph = g;
    return 0;
}

/*
 * An external record or wait in q's capture (driver.h): a node that, at
 * each launch, records ev on q, or makes q wait for ev's latest record at
 * the time of the launch (its steps are enqueued then, in order).
 */
static int sim_graph_external(weft__queue *wq, weft__event *we,
                              weft__sim_op_kind kind)
{
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    sim_node n = sim_node_of(kind);
    long i = 0;
    int in;

    if (we->ctx->dev->platform != &p->base)
        return weft__error(WEFT_EINVAL,
                           "sim: an external %s on %s of an event of %s: not "
                           "one simulated machine",
                           kind == WEFT__SIM_EVENT_RECORD ? "record" : "wait",
                           wq->ctx->dev->name, we->ctx->dev->name);
    n.ext = (sim_event *)we;
    sim_lock(p);
    in = q->cap != NULL;
    if (in)
        i = sim_capture_add(q, &n);
    sim_unlock(p);
    if (!in)
        return weft__error(WEFT_EINVAL,
                           "sim: an external %s on a queue of %s that takes "
                           "part in no capture",
                           kind == WEFT__SIM_EVENT_RECORD ? "record" : "wait",
                           wq->ctx->dev->name);
    return i < 0 ? (int)i : 0;
}

static int sim_graph_record_external(weft__event *we, weft__queue *wq)
{
    if (we->ctx != wq->ctx)
        return weft__error(WEFT_EINVAL,
                           "sim: an external record of an event of %s on a "
                           "queue of %s",
                           we->ctx->dev->name, wq->ctx->dev->name);
    return sim_graph_external(wq, we, WEFT__SIM_EVENT_RECORD);
}

static int sim_graph_wait_external(weft__queue *wq, weft__event *we)
{
    return sim_graph_external(wq, we, WEFT__SIM_EVENT_WAIT);
}

/* A step of a launch: a node, or a record or wait of the fork or join. */
typedef struct sim_step {
    sim_queue *q;
    sim_event *ev; /* record, wait: one of the graph's events */
    sim_marker *m; /* record: its new marker */
    sim_prep pr;   /* pr.op.kind says what the step is */
} sim_step;

/* Outside the lock: what node asks for, ready to submit (sim_step). */
static int sim_node_prep(const sim_platform *p, const sim_node *n, sim_prep *pr)
{
    switch (n->kind) {
    case WEFT__SIM_H2D:
        return sim_copy_prep(p, n->kind, sim_bytes(n->dst, n->dst_off), n->host,
                             n->size, WEFT__SIM_HOST, sim_dev_index(n->dst),
                             pr);
    case WEFT__SIM_D2H:
        return sim_copy_prep(p, n->kind, n->host, sim_bytes(n->src, n->src_off),
                             n->size, sim_dev_index(n->src), WEFT__SIM_HOST,
                             pr);
    case WEFT__SIM_D2D:
    case WEFT__SIM_PEER:
        return sim_copy_prep(p, n->kind, sim_bytes(n->dst, n->dst_off),
                             sim_bytes(n->src, n->src_off), n->size,
                             sim_dev_index(n->src), sim_dev_index(n->dst), pr);
    case WEFT__SIM_FILL:
        return sim_fill_prep(p, n->dst, n->dst_off, n->pattern, n->pattern_size,
                             n->size, pr);
    case WEFT__SIM_KERNEL:
        return sim_launch_prep(p, (const sim_kernel *)n->k, &n->grid, n->args,
                               n->nargs, pr);
    case WEFT__SIM_HOST_FN:
        return sim_host_fn_prep(p, n->fn, n->user, pr);
    case WEFT__SIM_EVENT_RECORD:
    case WEFT__SIM_EVENT_WAIT:
        break;
    }
    return weft__error(WEFT_EINTERNAL, "sim: a node of kind %d", (int)n->kind);
}

/* Outside the lock: the items of a record (marker and work) or a wait. */
static int sim_step_prep(sim_step *st)
{
    weft__sim_op_kind kind = st->pr.op.kind;

    if (kind != WEFT__SIM_EVENT_RECORD && kind != WEFT__SIM_EVENT_WAIT)
        return 0; /* a node: sim_node_prep did it */
    if ((kind == WEFT__SIM_EVENT_RECORD &&
         !(st->m = weft__calloc(1, sizeof *st->m))) ||
        !(st->pr.w = weft__calloc(1, sizeof *st->pr.w)))
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a launch");
    return 0;
}

static int sim_graph_launch(void *graph, weft__queue *wq)
{
    sim_graph *g = graph;
    sim_queue *q = (sim_queue *)wq;
    sim_platform *p = sim_ctx_platform(wq->ctx);
    sim_event *fork, *join;
    sim_step *steps;
    size_t n = 0, max;
    int rc = 0;

    if (g->p != p)
        return weft__error(WEFT_EINVAL,
                           "graph_launch: a graph of another simulated "
                           "machine on a queue of %s",
                           wq->ctx->dev->name);
    for (unsigned i = 0; i < g->nqueues; i++)
        if (__atomic_load_n(&g->queues[i]->base.destroyed, __ATOMIC_ACQUIRE))
            return weft__error(WEFT_EDESTROYED,
                               "graph_launch: a queue of the graph (on %s) "
                               "was destroyed",
                               g->queues[i]->base.ctx->dev->name);
    fork = &g->events[g->nevents];
    join = fork + 1;
    max = 1 + 3 * (size_t)g->nqueues + g->n;
    if (!(steps = weft__calloc(max, sizeof *steps)))
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a launch");
    /* Fork: every other queue of the graph waits for what q had. */
    steps[n].q = q;
    steps[n].ev = fork;
    steps[n++].pr.op.kind = WEFT__SIM_EVENT_RECORD;
    for (unsigned i = 0; i < g->nqueues; i++)
        if (g->queues[i] != q) {
            steps[n].q = g->queues[i];
            steps[n].ev = fork;
            steps[n++].pr.op.kind = WEFT__SIM_EVENT_WAIT;
        }
    for (size_t i = 0; i < g->n && rc == 0; i++) {
        const sim_node *nd = &g->nodes[i];

        steps[n].q = nd->q;
        if (nd->kind == WEFT__SIM_EVENT_RECORD ||
            nd->kind == WEFT__SIM_EVENT_WAIT) {
            steps[n].ev = nd->ext ? nd->ext : &g->events[nd->event];
            steps[n].pr.op.kind = nd->kind;
        } else {
            rc = sim_node_prep(p, nd, &steps[n].pr);
        }
        n++;
    }
    /* Join: q waits for every other queue's part. */
    for (unsigned i = 0; i < g->nqueues; i++)
        if (g->queues[i] != q) {
            steps[n].q = g->queues[i];
            steps[n].ev = &join[i];
            steps[n++].pr.op.kind = WEFT__SIM_EVENT_RECORD;
            steps[n].q = q;
            steps[n].ev = &join[i];
            steps[n++].pr.op.kind = WEFT__SIM_EVENT_WAIT;
        }
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = sim_step_prep(&steps[i]);
    sim_lock(p);
    /* Nothing of what follows may fail once the first step is in. */
    for (unsigned i = 0; i <= g->nqueues && rc == 0; i++) {
        sim_queue *gq = i < g->nqueues ? g->queues[i] : q;

        if (gq->cap)
            rc = weft__error(WEFT_EINVAL,
                             "graph_launch: a queue on %s takes part in a "
                             "capture",
                             gq->base.ctx->dev->name);
        else
            rc = sim_queue_start(gq);
    }
    if (rc == 0)
        rc = sim_record_reserve(p, n);
    for (size_t i = 0; i < n && rc == 0; i++) {
        sim_step *st = &steps[i];
        int src;

        if (st->pr.op.kind == WEFT__SIM_EVENT_RECORD)
            src = sim_record_submit(st->ev, st->q, st->m, st->pr.w);
        else if (st->pr.op.kind == WEFT__SIM_EVENT_WAIT)
            src = sim_wait_submit(p, st->ev, st->q, st->pr.w);
        else
            src = sim_submit(st->q, &st->pr.op, st->pr.dur, st->pr.first,
                             st->pr.count, st->pr.w, st->pr.acc, st->pr.nacc);
        weft__assert(src == 0);
        st->m = NULL;
        st->pr.w = NULL;
    }
    sim_unlock(p);
    for (size_t i = 0; i < n; i++) {
        weft__free(steps[i].m);
        weft__free(steps[i].pr.w);
    }
    weft__free(steps);
    return rc;
}

/* ---- the record (sim.h) ------------------------------------------------ */

uint64_t weft__sim_hazards(weft__device *dev)
{
    sim_platform *p = sim_platform_of(dev);
    uint64_t n;

    sim_lock(p);
    n = p->hazards;
    sim_unlock(p);
    return n;
}

const weft__sim_op *weft__sim_record(weft__device *dev, size_t *count)
{
    sim_platform *p = sim_platform_of(dev);
    const weft__sim_op *r;

    sim_lock(p);
    r = p->record;
    *count = p->nrecord;
    sim_unlock(p);
    return r;
}

void weft__sim_record_clear(weft__device *dev)
{
    sim_platform *p = sim_platform_of(dev);

    sim_lock(p);
    p->nrecord = 0;
    sim_unlock(p);
}

uint64_t weft__sim_now(weft__device *dev)
{
    sim_platform *p = sim_platform_of(dev);
    uint64_t t;

    sim_lock(p);
    t = p->horizon;
    sim_unlock(p);
    return t;
}

uint64_t weft__sim_bytes(weft__device *dev, weft__sim_op_kind kind, int src,
                         int dst)
{
    sim_platform *p = sim_platform_of(dev);
    uint64_t bytes = 0;

    sim_lock(p);
    for (size_t i = 0; i < p->nrecord; i++) {
        const weft__sim_op *op = &p->record[i];

        if (op->kind == kind && op->src_device == src && op->dst_device == dst)
            bytes += op->bytes;
    }
    sim_unlock(p);
    return bytes;
}

const char *weft__sim_op_name(weft__sim_op_kind kind)
{
    switch (kind) {
    case WEFT__SIM_H2D:
        return "h2d";
    case WEFT__SIM_D2H:
        return "d2h";
    case WEFT__SIM_D2D:
        return "d2d";
    case WEFT__SIM_PEER:
        return "peer";
    case WEFT__SIM_FILL:
        return "fill";
    case WEFT__SIM_KERNEL:
        return "kernel";
    case WEFT__SIM_HOST_FN:
        return "host_fn";
    case WEFT__SIM_EVENT_RECORD:
        return "record";
    case WEFT__SIM_EVENT_WAIT:
        return "wait";
    }
    return "unknown";
}

const weft__driver weft__driver_sim = {
    .name = "sim",
    .virtual_time = 1,
    .source_kinds = (const weft_source_kind[]){WEFT_SOURCE_HOST, 0},
    .platforms_open = sim_platforms_open,
    .platforms_close = sim_platforms_close,
    .can_access_peer = sim_can_access_peer,
    .context_create = sim_context_create,
    .context_destroy = sim_context_destroy,
    .queue_create = sim_queue_create,
    .queue_sync = sim_queue_sync,
    .queue_release = sim_queue_release,
    .mem_alloc = sim_mem_alloc,
    .host_alloc = sim_host_alloc,
    .host_register = sim_host_register,
    .host_is_pinned = sim_host_is_pinned,
    .mem_free = sim_mem_free,
    .copy_h2d = sim_copy_h2d,
    .copy_d2h = sim_copy_d2h,
    .copy_d2d = sim_copy_d2d,
    .copy_peer = sim_copy_peer,
    .fill = sim_fill,
    .module_create = sim_module_create,
    .module_destroy = sim_module_destroy,
    .kernel_get = sim_kernel_get,
    .launch = sim_launch,
    .event_create = sim_event_create,
    .event_record = sim_event_record,
    .queue_wait_event = sim_queue_wait_event,
    .event_query = sim_event_query,
    .event_sync = sim_event_sync,
    .event_elapsed = sim_event_elapsed,
    .event_destroy = sim_event_destroy,
    .host_fn = sim_host_fn,
    .graph_record_external = sim_graph_record_external,
    .graph_wait_external = sim_graph_wait_external,
    .graph_supported = sim_graph_supported,
    .graph_begin = sim_graph_begin,
    .graph_end = sim_graph_end,
    .graph_launch = sim_graph_launch,
    .graph_destroy = sim_graph_destroy,
};
