/*
 * Placement policies over a DAG description (place.h).
 *
 * Every policy walks the nodes in a topological order (the executor's
 * issue order where known; HEFT by rank first), picks a device for each
 * and books it into one simulated state: the kernels on each compute
 * lane of each device and those that fill a device, each in the order the
 * executor issues them, when each node's inputs are there and when it
 * finishes, and where each buffer is valid. The same evaluation gives the
 * makespan estimate of every policy, so that policies can be compared on
 * one scale; HEFT also uses it to choose.
 *
 * Booking. A lane runs its kernels in issue order, as the executor's
 * in-order queue does, whatever order a policy places them in: a kernel
 * placed on a lane starts after the kernels already booked there that are
 * issued before it, and those issued after it move back behind it (the
 * rest of the device's timeline is recomputed from it on, in issue order).
 * Kernels that fill a device are booked the same way on the device, which
 * starts their blocks in the order they were issued. A moved kernel's
 * successors already placed keep the start they were placed with until
 * the end, where the whole timeline is replayed in issue order from the
 * final booking: that gives the estimate.
 */
#include "place.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Kernels booked on one resource of a device, in issue order. */
typedef struct weft__chain {
    unsigned *node;
    unsigned n, cap;
} weft__chain;

/*
 * A device's chains: its compute lanes 0 .. lanes-1, then these. The
 * chain of turns holds the kernels that took a lane in turn (the
 * executor's round-robin, place.h).
 */
enum { WEFT__CHAIN_FILL, WEFT__CHAIN_TURN, WEFT__CHAIN_ALL, WEFT__CHAINS };

/* Where kernel (or host node) i would go on one memory, and when. */
typedef struct weft__booking {
    double ready;   /* its inputs there: predecessors done, then copies */
    double xfer;    /* the copies' part of ready */
    double finish;  /* estimated */
    uint64_t moved; /* bytes the copies move */
    unsigned lane;  /* kernels: the compute lane */
    int turn;       /* kernels: the lane was taken in turn */
} weft__booking;

typedef struct weft__place_state {
    const weft__place_input *in;
    unsigned nmem;          /* ndevices + 1: memory 0 is the host */
    unsigned lanes;         /* compute lanes per device, >= 1 */
    unsigned nchains;       /* per device: lanes + WEFT__CHAINS */
    unsigned char *valid;   /* nbuffers * nmem */
    weft__chain *chain;     /* ndevices * nchains */
    double *lane_free;      /* lanes: scratch of weft__place_push */
    unsigned char *dirty;   /* lanes: scratch of weft__place_push */
    unsigned *pos;          /* nnodes: issue position */
    int *dev;               /* nnodes: a booked kernel's device, else -1 */
    unsigned *lane;         /* nnodes: a booked kernel's lane */
    double *ready;          /* nnodes: when its inputs are there */
    double *xfer;           /* nnodes: the copies' part of ready */
    double *cost;           /* nnodes: a booked kernel's time */
    double *finish;         /* nnodes */
    unsigned *order;        /* nnodes: a topological order */
    unsigned *succ_start;   /* nnodes + 1 (CSR of successors) */
    unsigned *succ;         /* sum of npreds */
    double *rank;           /* nnodes, HEFT only */
    unsigned char *counted; /* nbuffers: buffers already seen by one node */
    uint64_t bytes_moved;
} weft__place_state;

static unsigned char *weft__valid(weft__place_state *s, unsigned buffer, int m)
{
    return &s->valid[(size_t)buffer * s->nmem + (unsigned)(m + 1)];
}

static int weft__node_capable(const weft__place_node *n, unsigned d)
{
    return !n->capable || n->capable[d];
}

static int weft__place_check(const weft__place_input *in)
{
    if (in->links && in->links->n != in->ndevices)
        return weft__error(WEFT_EINVAL,
                           "placement: a link model of %u devices for %u",
                           in->links->n, in->ndevices);
    for (unsigned i = 0; i < in->nnodes; i++) {
        const weft__place_node *n = &in->nodes[i];
        unsigned any = 0;

        for (unsigned p = 0; p < n->npreds; p++)
            if (n->preds[p] >= in->nnodes || n->preds[p] == i)
                return weft__error(WEFT_EINVAL,
                                   "placement: node %u waits for node %u", i,
                                   n->preds[p]);
        for (unsigned a = 0; a < n->naccess; a++)
            if (n->access[a].buffer >= in->nbuffers ||
                !(n->access[a].mode & WEFT__ACC_RW))
                return weft__error(WEFT_EINVAL,
                                   "placement: node %u: access %u names buffer "
                                   "%u (of %u) with mode %u",
                                   i, a, n->access[a].buffer, in->nbuffers,
                                   n->access[a].mode);
        if (n->kind != WEFT__PNODE_KERNEL)
            continue;
        if (n->device >= 0) {
            if ((unsigned)n->device >= in->ndevices ||
                !weft__node_capable(n, (unsigned)n->device))
                return weft__error(WEFT_EINVAL,
                                   "placement: node %u (%s) asks for device "
                                   "%d, which cannot run it (no "
                                   "implementation, or its group size or "
                                   "buffer offsets do not fit)",
                                   i, n->kernel ? n->kernel : "?", n->device);
            continue;
        }
        for (unsigned d = 0; d < in->ndevices && !any; d++)
            any = weft__node_capable(n, d);
        if (!any)
            return weft__error(WEFT_EINVAL,
                               "placement: node %u (%s): no device can run "
                               "it (an implementation that fits its group "
                               "size and buffer offsets)",
                               i, n->kernel ? n->kernel : "?");
    }
    if (in->buffer_home)
        for (unsigned b = 0; b < in->nbuffers; b++)
            if (in->buffer_home[b] < WEFT__MEM_HOST ||
                in->buffer_home[b] >= (int)in->ndevices)
                return weft__error(WEFT_EINVAL,
                                   "placement: buffer %u starts on memory %d",
                                   b, in->buffer_home[b]);
    return 0;
}

/* Issue positions: a permutation of the nodes, predecessors first. */
static int weft__place_check_issue(const weft__place_input *in)
{
    const unsigned *pos = in->issue_pos;
    unsigned char *seen;
    int rc = 0;

    if (!pos)
        return 0;
    seen = weft__calloc(in->nnodes ? in->nnodes : 1, 1);
    if (!seen)
        return weft__error(WEFT_ENOMEM, "placement: out of memory");
    for (unsigned i = 0; i < in->nnodes && rc == 0; i++) {
        const weft__place_node *n = &in->nodes[i];

        if (pos[i] >= in->nnodes || seen[pos[i]]) {
            rc = weft__error(WEFT_EINVAL,
                             "placement: node %u has issue position %u, "
                             "out of range or taken",
                             i, pos[i]);
            break;
        }
        seen[pos[i]] = 1;
        for (unsigned p = 0; p < n->npreds; p++)
            if (pos[n->preds[p]] > pos[i])
                rc = weft__error(WEFT_EINVAL,
                                 "placement: node %u is issued at %u, before "
                                 "its predecessor %u (at %u)",
                                 i, pos[i], n->preds[p], pos[n->preds[p]]);
    }
    weft__free(seen);
    return rc;
}

static void weft__place_state_free(weft__place_state *s)
{
    for (size_t c = 0; s->chain && c < (size_t)s->in->ndevices * s->nchains;
         c++)
        weft__free(s->chain[c].node);
    weft__free(s->chain);
    weft__free(s->valid);
    weft__free(s->lane_free);
    weft__free(s->dirty);
    weft__free(s->pos);
    weft__free(s->dev);
    weft__free(s->lane);
    weft__free(s->ready);
    weft__free(s->xfer);
    weft__free(s->cost);
    weft__free(s->finish);
    weft__free(s->order);
    weft__free(s->succ_start);
    weft__free(s->succ);
    weft__free(s->rank);
    weft__free(s->counted);
}

/*
 * Successor lists and a topological order (Kahn's algorithm, taking ready
 * nodes in index order so that a graph given in program order keeps it).
 */
static int weft__place_topo(weft__place_state *s)
{
    const weft__place_input *in = s->in;
    unsigned n = in->nnodes, head = 0, tail = 0, *fill, *indeg;
    size_t nedges = 0;
    int rc = 0;

    for (unsigned i = 0; i < n; i++)
        nedges += in->nodes[i].npreds;
    s->succ_start = weft__calloc((size_t)n + 1, sizeof *s->succ_start);
    s->succ = weft__calloc(nedges ? nedges : 1, sizeof *s->succ);
    s->order = weft__calloc(n ? n : 1, sizeof *s->order);
    fill = weft__calloc(n ? n : 1, sizeof *fill);
    indeg = weft__calloc(n ? n : 1, sizeof *indeg);
    if (!s->succ_start || !s->succ || !s->order || !fill || !indeg) {
        rc = weft__error(WEFT_ENOMEM, "placement: out of memory");
        goto out;
    }
    for (unsigned i = 0; i < n; i++)
        for (unsigned p = 0; p < in->nodes[i].npreds; p++)
            s->succ_start[in->nodes[i].preds[p] + 1]++;
    for (unsigned i = 0; i < n; i++)
        s->succ_start[i + 1] += s->succ_start[i];
    for (unsigned i = 0; i < n; i++) {
        indeg[i] = in->nodes[i].npreds;
        for (unsigned p = 0; p < in->nodes[i].npreds; p++) {
            unsigned q = in->nodes[i].preds[p];

            s->succ[s->succ_start[q] + fill[q]++] = i;
        }
    }
    /* The order array doubles as the queue: [head, tail) is ready. */
    for (unsigned i = 0; i < n; i++)
        if (!indeg[i])
            s->order[tail++] = i;
    while (head < tail) {
        unsigned i = s->order[head++];

        for (unsigned k = s->succ_start[i]; k < s->succ_start[i + 1]; k++)
            if (--indeg[s->succ[k]] == 0)
                s->order[tail++] = s->succ[k];
    }
    if (tail != n)
        rc = weft__error(WEFT_EINVAL,
                         "placement: the graph has a cycle (%u of %u nodes "
                         "ordered)",
                         tail, n);
out:
    weft__free(fill);
    weft__free(indeg);
    return rc;
}

static int weft__place_state_init(weft__place_state *s,
                                  const weft__place_input *in)
{
    size_t n = in->nnodes ? in->nnodes : 1;
    int rc;

    memset(s, 0, sizeof *s);
    s->in = in;
    s->nmem = in->ndevices + 1;
    s->lanes = in->compute_lanes ? in->compute_lanes : 1;
    s->nchains = s->lanes + WEFT__CHAINS;
    s->valid =
        weft__calloc(in->nbuffers ? (size_t)in->nbuffers * s->nmem : 1, 1);
    s->chain = weft__calloc(
        in->ndevices ? (size_t)in->ndevices * s->nchains : 1, sizeof *s->chain);
    s->lane_free = weft__calloc(s->lanes, sizeof *s->lane_free);
    s->dirty = weft__calloc(s->lanes, 1);
    s->pos = weft__calloc(n, sizeof *s->pos);
    s->dev = weft__calloc(n, sizeof *s->dev);
    s->lane = weft__calloc(n, sizeof *s->lane);
    s->ready = weft__calloc(n, sizeof *s->ready);
    s->xfer = weft__calloc(n, sizeof *s->xfer);
    s->cost = weft__calloc(n, sizeof *s->cost);
    s->finish = weft__calloc(n, sizeof *s->finish);
    s->counted = weft__calloc(in->nbuffers ? in->nbuffers : 1, 1);
    if (!s->valid || !s->chain || !s->lane_free || !s->dirty || !s->pos ||
        !s->dev || !s->lane || !s->ready || !s->xfer || !s->cost ||
        !s->finish || !s->counted)
        return weft__error(WEFT_ENOMEM, "placement: out of memory");
    for (unsigned i = 0; i < in->nnodes; i++)
        s->dev[i] = -1;
    for (unsigned b = 0; b < in->nbuffers; b++)
        *weft__valid(s, b,
                     in->buffer_home ? in->buffer_home[b] : WEFT__MEM_HOST) = 1;
    rc = weft__place_topo(s);
    /*
     * Policies walk the nodes in issue order where it is known (HEFT: among
     * equal ranks), so that nodes alike are booked one after the other at
     * the end of their lane: a node booked before the ones it is issued
     * after would look free on every device, however much it delays them.
     */
    if (rc == 0 && in->issue_pos)
        for (unsigned i = 0; i < in->nnodes; i++)
            s->order[in->issue_pos[i]] = i;
    return rc;
}

/*
 * Issue positions: the executor's, else the order the policy places the
 * nodes in (s->order, final), so that every node is booked after those
 * placed before it.
 */
static void weft__place_positions(weft__place_state *s)
{
    for (unsigned k = 0; k < s->in->nnodes; k++)
        if (s->in->issue_pos)
            s->pos[k] = s->in->issue_pos[k];
        else
            s->pos[s->order[k]] = k;
}

/* ---- chains -------------------------------------------------------------
 */

static weft__chain *weft__chain_of(const weft__place_state *s, unsigned d,
                                   unsigned which)
{
    return &s->chain[(size_t)d * s->nchains + which];
}

/* The entries of c issued before position p. */
static unsigned weft__chain_before(const weft__place_state *s,
                                   const weft__chain *c, unsigned p)
{
    unsigned lo = 0, hi = c->n;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;

        if (s->pos[c->node[mid]] < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * When the entries of c issued before position p are done (0 if none): a
 * chain runs in order, so when the last of them finishes.
 */
static double weft__chain_free(const weft__place_state *s, const weft__chain *c,
                               unsigned p)
{
    unsigned k = weft__chain_before(s, c, p);

    return k ? s->finish[c->node[k - 1]] : 0;
}

static int weft__chain_insert(weft__place_state *s, weft__chain *c, unsigned i)
{
    unsigned k;

    if (c->n == c->cap) {
        unsigned cap = c->cap ? 2 * c->cap : 16;
        unsigned *node = weft__realloc(c->node, (size_t)cap * sizeof *node);

        if (!node)
            return weft__error(WEFT_ENOMEM, "placement: out of memory");
        c->node = node;
        c->cap = cap;
    }
    k = weft__chain_before(s, c, s->pos[i]);
    memmove(&c->node[k + 1], &c->node[k], (c->n - k) * sizeof *c->node);
    c->node[k] = i;
    c->n++;
    return 0;
}

static double weft__kernel_ns(const weft__place_input *in,
                              const weft__place_node *n, unsigned d)
{
    if (!in->ktime || !n->kernel)
        return 0;
    return weft__ktime_estimate(in->ktime, n->kernel, d, n->items, NULL);
}

/* Copy time and bytes to make buffer b valid on memory m (0 if it is). */
static double weft__fetch_ns(weft__place_state *s, unsigned b, int m,
                             uint64_t bytes, uint64_t *moved)
{
    double best = INFINITY;

    if (*weft__valid(s, b, m))
        return 0;
    *moved += bytes;
    if (!s->in->links)
        return 0;
    for (int src = WEFT__MEM_HOST; src < (int)s->in->ndevices; src++)
        if (*weft__valid(s, b, src))
            best = WEFT__MIN(best,
                             weft__links_copy_ns(s->in->links, src, m, bytes));
    /* A buffer valid nowhere (never written) costs nothing to "fetch". */
    return isfinite(best) ? best : 0;
}

/* Whether kernel n fills device d, leaving no room for another beside. */
static int weft__place_fills(const weft__place_input *in,
                             const weft__place_node *n, unsigned d)
{
    return !in->resident_items || n->items >= in->resident_items[d];
}

/*
 * The compute lane of device d that kernel i takes, its inputs there at
 * ready (and, where it fills d, d free of the kernels filling it issued
 * before); *turn is set where it takes the lane in turn.
 *
 * With the executor's issue positions, the executor's rule (plan.h): the
 * lane of i's latest predecessor on d, where that one is still the last
 * kernel issued on its lane; else the next lane in turn, after as many
 * turns as kernels of d issued before i took. Nodes not placed yet count
 * for neither: they may take a turn, or a place between, later.
 *
 * Without: of the lanes free by ready, the one free last, so that an
 * earlier gap stays for a node ready sooner; else the one free first.
 */
static unsigned weft__place_lane(const weft__place_state *s, unsigned i,
                                 unsigned d, double ready, int *turn)
{
    const weft__place_node *n = &s->in->nodes[i];
    unsigned p = s->pos[i], best = 0, latest = UINT_MAX;
    double best_free;

    *turn = 0;
    if (s->lanes == 1)
        return 0;
    if (s->in->issue_pos) {
        for (unsigned k = 0; k < n->npreds; k++) {
            unsigned j = n->preds[k];

            if (s->dev[j] == (int)d &&
                (latest == UINT_MAX || s->pos[j] > s->pos[latest]))
                latest = j;
        }
        if (latest != UINT_MAX) {
            const weft__chain *c = weft__chain_of(s, d, s->lane[latest]);
            unsigned k = weft__chain_before(s, c, p);

            if (k && c->node[k - 1] == latest)
                return s->lane[latest];
        }
        *turn = 1;
        return weft__chain_before(
                   s, weft__chain_of(s, d, s->lanes + WEFT__CHAIN_TURN), p) %
               s->lanes;
    }
    best_free = weft__chain_free(s, weft__chain_of(s, d, 0), p);
    for (unsigned k = 1; k < s->lanes; k++) {
        double f = weft__chain_free(s, weft__chain_of(s, d, k), p);
        int fits = f <= ready, best_fits = best_free <= ready;

        if (fits != best_fits ? fits : fits ? f > best_free : f < best_free) {
            best = k;
            best_free = f;
        }
    }
    return best;
}

/* The earliest kernel i could start on device d, its inputs aside. */
static double weft__place_free(const weft__place_state *s, unsigned i,
                               unsigned d)
{
    unsigned p = s->pos[i];
    double t = weft__chain_free(s, weft__chain_of(s, d, 0), p);

    for (unsigned k = 1; k < s->lanes; k++)
        t = WEFT__MIN(t, weft__chain_free(s, weft__chain_of(s, d, k), p));
    if (weft__place_fills(s->in, &s->in->nodes[i], d))
        t = WEFT__MAX(
            t, weft__chain_free(
                   s, weft__chain_of(s, d, s->lanes + WEFT__CHAIN_FILL), p));
    return t;
}

/*
 * Where node i would finish on memory m (a device, or WEFT__MEM_HOST for
 * host and empty nodes), how many bytes it would move there, and for a
 * kernel the compute lane of m it would take: after the kernels issued
 * before it on that lane (and, if it fills m, on m).
 */
static void weft__place_eval(weft__place_state *s, unsigned i, int m,
                             weft__booking *b)
{
    const weft__place_node *n = &s->in->nodes[i];
    double ready = 0, start;

    memset(b, 0, sizeof *b);
    for (unsigned p = 0; p < n->npreds; p++)
        ready = WEFT__MAX(ready, s->finish[n->preds[p]]);
    b->ready = b->finish = ready;
    if (n->kind == WEFT__PNODE_EMPTY)
        return;
    /* A buffer read twice by one node moves once, the larger extent. */
    for (unsigned a = 0; a < n->naccess; a++) {
        const weft__place_access *x = &n->access[a];
        uint64_t bytes = x->bytes;

        if (!(x->mode & WEFT__ACC_READ) || s->counted[x->buffer])
            continue;
        s->counted[x->buffer] = 1;
        for (unsigned k = a + 1; k < n->naccess; k++)
            if (n->access[k].buffer == x->buffer &&
                (n->access[k].mode & WEFT__ACC_READ))
                bytes = WEFT__MAX(bytes, n->access[k].bytes);
        b->xfer += weft__fetch_ns(s, x->buffer, m, bytes, &b->moved);
    }
    for (unsigned a = 0; a < n->naccess; a++)
        s->counted[n->access[a].buffer] = 0;
    b->ready = b->finish = ready + b->xfer;
    if (n->kind == WEFT__PNODE_HOST)
        return;
    start = b->ready;
    if (weft__place_fills(s->in, n, (unsigned)m))
        start = WEFT__MAX(
            start,
            weft__chain_free(
                s, weft__chain_of(s, (unsigned)m, s->lanes + WEFT__CHAIN_FILL),
                s->pos[i]));
    b->lane = weft__place_lane(s, i, (unsigned)m, start, &b->turn);
    start = WEFT__MAX(
        start, weft__chain_free(s, weft__chain_of(s, (unsigned)m, b->lane),
                                s->pos[i]));
    b->finish = start + weft__kernel_ns(s->in, n, (unsigned)m);
}

/*
 * Kernel i, just booked on device d, delays the kernels of d issued after
 * it that share its lane or, both filling d, the device: the timeline of
 * d from i on, in issue order, each kernel after its inputs (as it was
 * booked with), the kernel before it on its lane and, if it fills d, the
 * one before it filling d. It stops where nothing moves any more.
 */
static void weft__place_push(weft__place_state *s, unsigned i, unsigned d)
{
    const weft__chain *all = weft__chain_of(s, d, s->lanes + WEFT__CHAIN_ALL);
    const weft__chain *fill = weft__chain_of(s, d, s->lanes + WEFT__CHAIN_FILL);
    unsigned ndirty = 0, k = weft__chain_before(s, all, s->pos[i]);
    double fill_free = weft__chain_free(s, fill, s->pos[i]);
    int fill_dirty = 0;

    weft__assert_internal(k < all->n && all->node[k] == i);
    for (unsigned l = 0; l < s->lanes; l++) {
        s->lane_free[l] =
            weft__chain_free(s, weft__chain_of(s, d, l), s->pos[i]);
        s->dirty[l] = 0;
    }
    for (; k < all->n; k++) {
        unsigned j = all->node[k], l = s->lane[j];
        int fills = weft__place_fills(s->in, &s->in->nodes[j], d);
        int moved = j == i;

        if (!moved && (s->dirty[l] || (fills && fill_dirty))) {
            double start = WEFT__MAX(s->ready[j], s->lane_free[l]);

            if (fills)
                start = WEFT__MAX(start, fill_free);
            moved = start + s->cost[j] != s->finish[j];
            s->finish[j] = start + s->cost[j];
        }
        s->lane_free[l] = s->finish[j];
        if (moved != s->dirty[l])
            ndirty = moved ? ndirty + 1 : ndirty - 1;
        s->dirty[l] = (unsigned char)moved;
        if (fills) {
            fill_free = s->finish[j];
            fill_dirty = moved;
        }
        if (!ndirty && !fill_dirty)
            break;
    }
}

static int weft__place_commit(weft__place_state *s, unsigned i, int m,
                              const weft__booking *b)
{
    const weft__place_node *n = &s->in->nodes[i];
    int rc = 0;

    s->finish[i] = b->finish;
    s->ready[i] = b->ready;
    s->xfer[i] = b->xfer;
    s->bytes_moved += b->moved;
    if (n->kind == WEFT__PNODE_KERNEL) {
        unsigned d = (unsigned)m;

        s->dev[i] = m;
        s->lane[i] = b->lane;
        s->cost[i] = weft__kernel_ns(s->in, n, d);
        rc = weft__chain_insert(s, weft__chain_of(s, d, b->lane), i);
        if (rc == 0 && weft__place_fills(s->in, n, d))
            rc = weft__chain_insert(
                s, weft__chain_of(s, d, s->lanes + WEFT__CHAIN_FILL), i);
        if (rc == 0 && b->turn)
            rc = weft__chain_insert(
                s, weft__chain_of(s, d, s->lanes + WEFT__CHAIN_TURN), i);
        if (rc == 0)
            rc = weft__chain_insert(
                s, weft__chain_of(s, d, s->lanes + WEFT__CHAIN_ALL), i);
        if (rc < 0)
            return rc;
        weft__place_push(s, i, d);
    }
    if (n->kind == WEFT__PNODE_EMPTY)
        return 0;
    for (unsigned a = 0; a < n->naccess; a++) {
        const weft__place_access *x = &n->access[a];

        if (x->mode & WEFT__ACC_WRITE)
            memset(weft__valid(s, x->buffer, WEFT__MEM_HOST), 0, s->nmem);
    }
    for (unsigned a = 0; a < n->naccess; a++)
        *weft__valid(s, n->access[a].buffer, m) = 1;
    return 0;
}

/*
 * The estimate: the timeline replayed in issue order from the final
 * booking (devices, lanes, copy times), every node after its
 * predecessors' final finish. Placing booked each node after its
 * predecessors as they were then; a kernel moved back since then delays
 * its successors only here. The makespan: the last finish.
 */
static int weft__place_replay(weft__place_state *s, double *makespan)
{
    const weft__place_input *in = s->in;
    size_t nfree = (size_t)in->ndevices * (s->lanes + 1);
    unsigned *at = weft__malloc((in->nnodes ? in->nnodes : 1) * sizeof *at);
    double *free_at = weft__calloc(nfree ? nfree : 1, sizeof *free_at);

    *makespan = 0;
    if (!at || !free_at) {
        weft__free(at);
        weft__free(free_at);
        return weft__error(WEFT_ENOMEM, "placement: out of memory");
    }
    for (unsigned i = 0; i < in->nnodes; i++)
        at[s->pos[i]] = i;
    for (unsigned k = 0; k < in->nnodes; k++) {
        unsigned i = at[k];
        const weft__place_node *n = &in->nodes[i];
        double t = 0;

        for (unsigned p = 0; p < n->npreds; p++)
            t = WEFT__MAX(t, s->finish[n->preds[p]]);
        t += s->xfer[i];
        if (n->kind == WEFT__PNODE_KERNEL) {
            /* The device's lanes, then the end of its last filling kernel. */
            double *f = &free_at[(size_t)s->dev[i] * (s->lanes + 1)];
            int fills = weft__place_fills(in, n, (unsigned)s->dev[i]);

            t = WEFT__MAX(t, f[s->lane[i]]);
            if (fills)
                t = WEFT__MAX(t, f[s->lanes]);
            t += s->cost[i];
            f[s->lane[i]] = t;
            if (fills)
                f[s->lanes] = t;
        }
        s->finish[i] = t;
        *makespan = WEFT__MAX(*makespan, t);
    }
    weft__free(at);
    weft__free(free_at);
    return 0;
}

/* Bytes that s reads of what p writes: what the edge p -> s carries. */
static uint64_t weft__edge_bytes(const weft__place_node *p,
                                 const weft__place_node *s)
{
    uint64_t bytes = 0;

    for (unsigned a = 0; a < s->naccess; a++) {
        if (!(s->access[a].mode & WEFT__ACC_READ))
            continue;
        for (unsigned k = 0; k < p->naccess; k++)
            if (p->access[k].buffer == s->access[a].buffer &&
                (p->access[k].mode & WEFT__ACC_WRITE)) {
                bytes += s->access[a].bytes;
                break;
            }
    }
    return bytes;
}

/*
 * HEFT's upward rank: a node's mean time plus the longest path of mean
 * times and mean edge costs below it. Means over the devices that can run
 * the node, and over every ordered pair of distinct devices for edges
 * (latency averaged, bandwidth harmonically, as times add).
 */
static int weft__place_rank(weft__place_state *s)
{
    const weft__place_input *in = s->in;
    double lat = 0, inv_bw = 0;
    unsigned npairs = 0;

    s->rank = weft__calloc(in->nnodes ? in->nnodes : 1, sizeof *s->rank);
    if (!s->rank)
        return weft__error(WEFT_ENOMEM, "placement: out of memory");
    if (in->links)
        for (unsigned a = 0; a < in->ndevices; a++)
            for (unsigned b = 0; b < in->ndevices; b++) {
                const weft__link *k =
                    &in->links->peer[(size_t)a * in->ndevices + b];

                if (a == b)
                    continue;
                lat += k->lat_ns;
                inv_bw += 1.0 / k->bw;
                npairs++;
            }
    if (npairs) {
        lat /= npairs;
        inv_bw /= npairs;
    }
    for (unsigned k = in->nnodes; k-- > 0;) {
        unsigned i = s->order[k], nd = 0;
        const weft__place_node *n = &in->nodes[i];
        double w = 0, below = 0;

        if (n->kind == WEFT__PNODE_KERNEL) {
            for (unsigned d = 0; d < in->ndevices; d++)
                if (n->device >= 0 ? (int)d == n->device
                                   : weft__node_capable(n, d)) {
                    w += weft__kernel_ns(in, n, d);
                    nd++;
                }
            w = nd ? w / nd : 0;
        }
        for (unsigned e = s->succ_start[i]; e < s->succ_start[i + 1]; e++) {
            unsigned j = s->succ[e];
            uint64_t bytes = weft__edge_bytes(n, &in->nodes[j]);
            double c = bytes && npairs ? lat + (double)bytes * inv_bw * 1e9 : 0;

            below = WEFT__MAX(below, c + s->rank[j]);
        }
        s->rank[i] = w + below;
    }
    return 0;
}

typedef struct weft__ranked {
    double rank;
    unsigned pos, node;
} weft__ranked;

/*
 * Rank descending, then position in s->order (the issue order, where
 * known): a predecessor's rank is at least its successor's, so ties broken
 * by a topological position keep the order valid.
 */
static int weft__cmp_ranked(const void *a, const void *b)
{
    const weft__ranked *x = a, *y = b;

    if (x->rank != y->rank)
        return x->rank > y->rank ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int weft__place_heft_order(weft__place_state *s)
{
    unsigned n = s->in->nnodes;
    weft__ranked *r;

    r = weft__calloc(n ? n : 1, sizeof *r);
    if (!r)
        return weft__error(WEFT_ENOMEM, "placement: out of memory");
    for (unsigned k = 0; k < n; k++) {
        r[k].rank = s->rank[s->order[k]];
        r[k].pos = k;
        r[k].node = s->order[k];
    }
    qsort(r, n, sizeof *r, weft__cmp_ranked);
    for (unsigned k = 0; k < n; k++)
        s->order[k] = r[k].node;
    weft__free(r);
    return 0;
}

const char *weft__place_policy_name(weft__place_policy policy)
{
    switch (policy) {
    case WEFT__PLACE_EXPLICIT:
        return "explicit";
    case WEFT__PLACE_ROUND_ROBIN:
        return "round-robin";
    case WEFT__PLACE_LOCALITY:
        return "locality";
    case WEFT__PLACE_HEFT:
        return "heft";
    }
    return "?";
}

/* The device policy picks for kernel node i, and its booking there. */
static int weft__place_pick(weft__place_state *s, weft__place_policy policy,
                            unsigned i, unsigned *rr, weft__booking *best_b)
{
    const weft__place_input *in = s->in;
    const weft__place_node *n = &in->nodes[i];
    weft__booking b;
    int best = -1;

    if (n->device >= 0) {
        weft__place_eval(s, i, n->device, best_b);
        return n->device;
    }
    switch (policy) {
    case WEFT__PLACE_EXPLICIT:
    case WEFT__PLACE_ROUND_ROBIN:
        for (unsigned k = 0; k < in->ndevices && best < 0; k++) {
            unsigned d =
                policy == WEFT__PLACE_EXPLICIT ? k : (*rr + k) % in->ndevices;

            if (weft__node_capable(n, d))
                best = (int)d;
        }
        if (policy == WEFT__PLACE_ROUND_ROBIN)
            *rr = ((unsigned)best + 1) % in->ndevices;
        weft__place_eval(s, i, best, best_b);
        return best;
    case WEFT__PLACE_LOCALITY:
        /*
         * Fewest bytes; among equals the device free first, so that
         * independent nodes with nothing to move still spread out.
         */
        for (unsigned d = 0; d < in->ndevices; d++) {
            if (!weft__node_capable(n, d))
                continue;
            weft__place_eval(s, i, (int)d, &b);
            if (best < 0 || b.moved < best_b->moved ||
                (b.moved == best_b->moved &&
                 weft__place_free(s, i, d) <
                     weft__place_free(s, i, (unsigned)best))) {
                best = (int)d;
                *best_b = b;
            }
        }
        break;
    case WEFT__PLACE_HEFT:
        for (unsigned d = 0; d < in->ndevices; d++) {
            if (!weft__node_capable(n, d))
                continue;
            weft__place_eval(s, i, (int)d, &b);
            if (best < 0 || b.finish < best_b->finish) {
                best = (int)d;
                *best_b = b;
            }
        }
        break;
    }
    weft__assert(best >= 0);
    return best;
}

int weft__place(const weft__place_input *in, weft__place_policy policy,
                weft__place_output *out)
{
    weft__place_state s;
    unsigned rr = 0;
    double makespan = 0;
    int rc;

    if ((unsigned)policy > WEFT__PLACE_HEFT)
        return weft__error(WEFT_EINVAL, "placement: policy %d", (int)policy);
    rc = weft__place_check(in);
    if (rc == 0)
        rc = weft__place_check_issue(in);
    if (rc < 0)
        return rc;
    rc = weft__place_state_init(&s, in);
    if (rc == 0 && policy == WEFT__PLACE_HEFT) {
        rc = weft__place_rank(&s);
        if (rc == 0)
            rc = weft__place_heft_order(&s);
    }
    if (rc == 0)
        weft__place_positions(&s);
    for (unsigned k = 0; rc == 0 && k < in->nnodes; k++) {
        unsigned i = s.order[k];
        const weft__place_node *n = &in->nodes[i];
        weft__booking b;
        int m = WEFT__MEM_HOST;

        if (n->kind == WEFT__PNODE_KERNEL)
            m = weft__place_pick(&s, policy, i, &rr, &b);
        else
            weft__place_eval(&s, i, m, &b);
        rc = weft__place_commit(&s, i, m, &b);
        out->device[i] = n->kind == WEFT__PNODE_KERNEL ? m : -1;
    }
    if (rc == 0)
        rc = weft__place_replay(&s, &makespan);
    if (rc == 0) {
        out->makespan_ns = makespan;
        out->bytes_moved = s.bytes_moved;
    }
    weft__place_state_free(&s);
    return rc;
}
