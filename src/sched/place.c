/*
 * Placement policies over a DAG description (place.h).
 *
 * Every policy walks the nodes in a topological order, picks a device for
 * each and commits it to one simulated state: when each compute lane of
 * each device is free and until when kernels that fill a device hold it,
 * when each node finishes, and where each buffer is valid. The same
 * evaluation gives the makespan estimate of every policy, so that policies
 * can be compared on one scale; HEFT also uses it to choose.
 */
#include "place.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct weft__place_state {
    const weft__place_input *in;
    unsigned nmem;          /* ndevices + 1: memory 0 is the host */
    unsigned lanes;         /* compute lanes per device, >= 1 */
    unsigned char *valid;   /* nbuffers * nmem */
    double *avail;          /* ndevices * lanes: when each lane is free */
    double *full;           /* ndevices: end of the last kernel filling it */
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
                                   "%d, which has no implementation of it",
                                   i, n->kernel ? n->kernel : "?", n->device);
            continue;
        }
        for (unsigned d = 0; d < in->ndevices && !any; d++)
            any = weft__node_capable(n, d);
        if (!any)
            return weft__error(WEFT_EINVAL,
                               "placement: node %u (%s): no device has an "
                               "implementation",
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

static void weft__place_state_free(weft__place_state *s)
{
    weft__free(s->valid);
    weft__free(s->avail);
    weft__free(s->full);
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
    memset(s, 0, sizeof *s);
    s->in = in;
    s->nmem = in->ndevices + 1;
    s->lanes = in->compute_lanes ? in->compute_lanes : 1;
    s->valid =
        weft__calloc(in->nbuffers ? (size_t)in->nbuffers * s->nmem : 1, 1);
    s->avail = weft__calloc(in->ndevices ? (size_t)in->ndevices * s->lanes : 1,
                            sizeof *s->avail);
    s->full = weft__calloc(in->ndevices ? in->ndevices : 1, sizeof *s->full);
    s->finish = weft__calloc(in->nnodes ? in->nnodes : 1, sizeof *s->finish);
    s->counted = weft__calloc(in->nbuffers ? in->nbuffers : 1, 1);
    if (!s->valid || !s->avail || !s->full || !s->finish || !s->counted)
        return weft__error(WEFT_ENOMEM, "placement: out of memory");
    for (unsigned b = 0; b < in->nbuffers; b++)
        *weft__valid(s, b,
                     in->buffer_home ? in->buffer_home[b] : WEFT__MEM_HOST) = 1;
    return weft__place_topo(s);
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

/*
 * The compute lane of device d that a kernel whose inputs are there at
 * ready takes: of the lanes free by then, the one free last, so that an
 * earlier gap stays for a node ready sooner; else the one free first.
 */
static unsigned weft__place_lane(const weft__place_state *s, unsigned d,
                                 double ready)
{
    const double *free_at = &s->avail[(size_t)d * s->lanes];
    unsigned best = 0;

    for (unsigned k = 1; k < s->lanes; k++) {
        int fits = free_at[k] <= ready, best_fits = free_at[best] <= ready;

        if (fits != best_fits ? fits
            : fits            ? free_at[k] > free_at[best]
                              : free_at[k] < free_at[best])
            best = k;
    }
    return best;
}

/* Whether kernel n fills device d, leaving no room for another beside. */
static int weft__place_fills(const weft__place_input *in,
                             const weft__place_node *n, unsigned d)
{
    return !in->resident_items || n->items >= in->resident_items[d];
}

/* The earliest kernel n could start on device d, its inputs aside. */
static double weft__place_free(const weft__place_state *s,
                               const weft__place_node *n, unsigned d)
{
    const double *free_at = &s->avail[(size_t)d * s->lanes];
    double t = free_at[0];

    for (unsigned k = 1; k < s->lanes; k++)
        t = WEFT__MIN(t, free_at[k]);
    return weft__place_fills(s->in, n, d) ? WEFT__MAX(t, s->full[d]) : t;
}

/*
 * Where node i would finish on memory m (a device, or WEFT__MEM_HOST for
 * host and empty nodes), how many bytes it would move there, and for a
 * kernel the compute lane of m it would take.
 */
static double weft__place_eval(weft__place_state *s, unsigned i, int m,
                               uint64_t *moved, unsigned *lane)
{
    const weft__place_node *n = &s->in->nodes[i];
    double ready = 0, xfer = 0;

    *moved = 0;
    *lane = 0;
    for (unsigned p = 0; p < n->npreds; p++)
        ready = WEFT__MAX(ready, s->finish[n->preds[p]]);
    if (n->kind == WEFT__PNODE_EMPTY)
        return ready;
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
        xfer += weft__fetch_ns(s, x->buffer, m, bytes, moved);
    }
    for (unsigned a = 0; a < n->naccess; a++)
        s->counted[n->access[a].buffer] = 0;
    if (n->kind == WEFT__PNODE_HOST)
        return ready + xfer;
    ready += xfer;
    if (weft__place_fills(s->in, n, (unsigned)m))
        ready = WEFT__MAX(ready, s->full[m]);
    *lane = weft__place_lane(s, (unsigned)m, ready);
    return WEFT__MAX(s->avail[(size_t)m * s->lanes + *lane], ready) +
           weft__kernel_ns(s->in, n, (unsigned)m);
}

static void weft__place_commit(weft__place_state *s, unsigned i, int m,
                               unsigned lane, double finish, uint64_t moved)
{
    const weft__place_node *n = &s->in->nodes[i];

    s->finish[i] = finish;
    s->bytes_moved += moved;
    if (n->kind == WEFT__PNODE_KERNEL) {
        s->avail[(size_t)m * s->lanes + lane] = finish;
        if (weft__place_fills(s->in, n, (unsigned)m))
            s->full[m] = finish;
    }
    if (n->kind == WEFT__PNODE_EMPTY)
        return;
    for (unsigned a = 0; a < n->naccess; a++) {
        const weft__place_access *x = &n->access[a];

        if (x->mode & WEFT__ACC_WRITE)
            memset(weft__valid(s, x->buffer, WEFT__MEM_HOST), 0, s->nmem);
    }
    for (unsigned a = 0; a < n->naccess; a++)
        *weft__valid(s, n->access[a].buffer, m) = 1;
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
 * Rank descending, then topological position: a predecessor's rank is at
 * least its successor's, so ties broken by position keep the order valid.
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

/*
 * The device policy picks for kernel node i, with its finish, bytes and
 * compute lane.
 */
static int weft__place_pick(weft__place_state *s, weft__place_policy policy,
                            unsigned i, unsigned *rr, double *finish,
                            uint64_t *moved, unsigned *lane)
{
    const weft__place_input *in = s->in;
    const weft__place_node *n = &in->nodes[i];
    double best_f = INFINITY, f;
    uint64_t best_b = UINT64_MAX, b;
    unsigned best_l = 0, l;
    int best = -1;

    if (n->device >= 0) {
        *finish = weft__place_eval(s, i, n->device, moved, lane);
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
        *finish = weft__place_eval(s, i, best, moved, lane);
        return best;
    case WEFT__PLACE_LOCALITY:
        /*
         * Fewest bytes; among equals the device free first, so that
         * independent nodes with nothing to move still spread out.
         */
        for (unsigned d = 0; d < in->ndevices; d++) {
            if (!weft__node_capable(n, d))
                continue;
            f = weft__place_eval(s, i, (int)d, &b, &l);
            if (b < best_b ||
                (b == best_b && weft__place_free(s, n, d) <
                                    weft__place_free(s, n, (unsigned)best))) {
                best = (int)d;
                best_b = b;
                best_f = f;
                best_l = l;
            }
        }
        break;
    case WEFT__PLACE_HEFT:
        for (unsigned d = 0; d < in->ndevices; d++) {
            if (!weft__node_capable(n, d))
                continue;
            f = weft__place_eval(s, i, (int)d, &b, &l);
            if (f < best_f) {
                best = (int)d;
                best_b = b;
                best_f = f;
                best_l = l;
            }
        }
        break;
    }
    weft__assert(best >= 0);
    *finish = best_f;
    *moved = best_b;
    *lane = best_l;
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
    if (rc < 0)
        return rc;
    rc = weft__place_state_init(&s, in);
    if (rc == 0 && policy == WEFT__PLACE_HEFT) {
        rc = weft__place_rank(&s);
        if (rc == 0)
            rc = weft__place_heft_order(&s);
    }
    for (unsigned k = 0; rc == 0 && k < in->nnodes; k++) {
        unsigned i = s.order[k];
        const weft__place_node *n = &in->nodes[i];
        uint64_t moved;
        unsigned lane;
        double finish;
        int m = WEFT__MEM_HOST;

        if (n->kind == WEFT__PNODE_KERNEL)
            m = weft__place_pick(&s, policy, i, &rr, &finish, &moved, &lane);
        else
            finish = weft__place_eval(&s, i, m, &moved, &lane);
        weft__place_commit(&s, i, m, lane, finish, moved);
        out->device[i] = n->kind == WEFT__PNODE_KERNEL ? m : -1;
        makespan = WEFT__MAX(makespan, finish);
    }
    if (rc == 0) {
        out->makespan_ns = makespan;
        out->bytes_moved = s.bytes_moved;
    }
    weft__place_state_free(&s);
    return rc;
}
